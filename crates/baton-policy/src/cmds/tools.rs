//! Everyday tools with a validator each: `openssl` (random bytes, digests, keys and
//! certificates for the project; never modules, engines or network), `patch`
//! (applies a diff inside the project) and `sqlite3` (a database file of the
//! project, inside baton's bubblewrap sandbox).

use crate::check::{Checker, Cmd};
use crate::places::{Cwd, Place};

/// `openssl` subcommands that only compute (and write files with `-out`).
const OPENSSL_SUBCOMMANDS: &[&str] = &[
    "rand",
    "dgst",
    "version",
    "sha1",
    "sha256",
    "sha384",
    "sha512",
    "md5",
    "base64",
    "enc",
    "x509",
    "req",
    "genrsa",
    "genpkey",
    "pkey",
    "rsa",
    "ec",
    "ecparam",
    "passwd",
    "prime",
    "list",
    "help",
    "verify",
    "crl",
    "pkcs12",
    "asn1parse",
];

impl Checker<'_> {
    /// `openssl SUB …`: compute-only subcommands; options that load code (`-engine`,
    /// `-provider`, `-provider-path`, `-config`) are refused; `-out`/`-keyout` must
    /// land in the project or a temp dir.
    pub(super) fn openssl(&mut self, c: &Cmd) {
        let sub = c.args.first().and_then(|w| w.literal());
        match sub.as_deref() {
            Some(s) if OPENSSL_SUBCOMMANDS.contains(&s) => {}
            Some(s) => {
                self.refuse(
                    &c.part,
                    format!("openssl {s} is not one of the subcommands baton allows (it may reach the network or load modules)"),
                    "use openssl rand, dgst, enc, req, x509, genpkey or pkey",
                );
                return;
            }
            None => {
                self.refuse(
                    &c.part,
                    "openssl with a computed or missing subcommand",
                    "write the subcommand literally, e.g. openssl rand -hex 32",
                );
                return;
            }
        }
        let mut i = 1;
        while let Some(w) = c.args.get(i) {
            i += 1;
            let Some(l) = w.literal() else { continue };
            match l.as_str() {
                "-engine" | "-provider" | "-provider-path" | "-config" | "-keygen_engine" => {
                    self.refuse(
                        &c.part,
                        format!("openssl {l} loads a module or configuration that can run code"),
                        "use openssl's built-in algorithms without -engine/-provider/-config",
                    );
                }
                "-out" | "-keyout" => {
                    if let Some(target) = c.args.get(i) {
                        self.write_target(target, &c.cwd, &c.part, false);
                    }
                    i += 1;
                }
                _ => {}
            }
        }
    }

    /// `patch`: applies a diff to files under the working directory, which must be
    /// inside the project; options that write elsewhere or run `ed` are refused.
    pub(super) fn patch(&mut self, c: &Cmd) {
        match &c.cwd {
            Cwd::Known(dirs)
                if dirs.iter().all(|d| {
                    matches!(
                        self.policy.places.place(&d.to_string_lossy(), d),
                        Place::Project | Place::ProjectRoot
                    )
                }) => {}
            _ => self.refuse(
                &c.part,
                "patch writes the files its diff names under the working directory, which is not (known to be) inside the project",
                "run patch from the project directory: patch -p1 < fix.patch",
            ),
        }
        let mut it = c.args.iter();
        while let Some(w) = it.next() {
            let Some(l) = w.literal() else {
                if w.may_start_with('-') {
                    self.unknown_option(c, w);
                }
                continue;
            };
            let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
            match name {
                "-e" | "--ed" => self.refuse(
                    &c.part,
                    "patch -e feeds the diff to ed, which can run shell commands",
                    "apply unified diffs: patch -p1 < fix.patch (or git apply)",
                ),
                "-d" | "--directory" | "-B" | "--prefix" | "-Y" | "--basename-prefix" | "-z"
                | "--suffix" => self.refuse(
                    &c.part,
                    format!("patch {name} changes where patch writes"),
                    "run patch from the directory to patch, without -d/-B/-Y/-z",
                ),
                "-o" | "--output" | "-r" | "--reject-file" => {
                    if l.contains('=') {
                        let v = crate::word::Word::quoted(l.split_once('=').map_or("", |x| x.1));
                        self.write_target(&v, &c.cwd, &c.part, false);
                    } else if let Some(v) = it.next() {
                        self.write_target(v, &c.cwd, &c.part, false);
                    }
                }
                _ => {}
            }
        }
    }

    /// `split`: `--filter` runs a shell command for each piece; the output prefix
    /// (the second operand) is where the pieces are written.
    pub(super) fn split(&mut self, c: &Cmd) {
        let mut operands = Vec::new();
        let mut it = c.args.iter();
        while let Some(w) = it.next() {
            let Some(l) = w.literal() else {
                if w.may_start_with('-') {
                    self.unknown_option(c, w);
                }
                operands.push(w);
                continue;
            };
            if l.starts_with("--filter") {
                self.refuse(
                    &c.part,
                    "split --filter runs a shell command for each piece",
                    "split into files, then process them with allowed commands",
                );
            } else if matches!(l.as_str(), "-a" | "-b" | "-C" | "-l" | "-n" | "-t")
                || l == "--additional-suffix"
            {
                it.next();
            } else if !l.starts_with('-') || l == "-" {
                operands.push(w);
            }
        }
        if let Some(prefix) = operands.get(1) {
            self.write_target(prefix, &c.cwd, &c.part, false);
        }
    }
}

/// `sqlite3` options that take the next word as their value.
const SQLITE_VALUE_OPTS: &[&str] = &[
    "-cmd",
    "-init",
    "-separator",
    "-newline",
    "-nullvalue",
    "-vfs",
    "-maxsize",
    "-mmap",
    "-pagecache",
    "-lookaside",
    "-heap",
    "-escape",
];

impl Checker<'_> {
    /// `sqlite3 [OPTIONS] [FILE] [SQL…]`. A database shell has its own commands to
    /// run programs (`.shell`, `.system`), load code (`.load`) and write files
    /// (`.output`, `.backup`); inside baton's bubblewrap sandbox those reach no
    /// further than a script the agent writes, so the shell is allowed on a
    /// database file of the project (or in memory). Outside it, refused as before;
    /// `[policy] allow = ["sqlite3"]` allows it as it did.
    pub(super) fn sqlite(&mut self, c: &Cmd) {
        if self.policy.user_allow.contains(&c.name) {
            return;
        }
        let instead = "query the database from the project's code or tests; if the project needs the client itself, say so in the progress notes (only a person can add it to [policy] allow)";
        if !self.policy.bubblewrap {
            self.refuse(
                &c.part,
                format!(
                    "{}: database shells have their own commands to run programs and write files; {}",
                    c.name,
                    crate::BUBBLEWRAP_HINT
                ),
                instead,
            );
            return;
        }
        let mut i = 0;
        while let Some(w) = c.args.get(i) {
            i += 1;
            let Some(l) = w.literal() else {
                if w.may_start_with('-') {
                    self.unknown_option(c, w);
                    return;
                }
                break;
            };
            if l == "--" {
                break;
            }
            if !l.starts_with('-') {
                i -= 1;
                break;
            }
            let name = format!("-{}", l.trim_start_matches('-'));
            if SQLITE_VALUE_OPTS.contains(&name.as_str()) {
                i += 1;
            }
        }
        let Some(file) = c.args.get(i) else {
            return;
        };
        match file.literal() {
            Some(f) if f.is_empty() || f == ":memory:" => {}
            Some(_) => {
                if let Some((reason, _)) = self.write_problem(file, &c.cwd, false, false) {
                    self.refuse(
                        &c.part,
                        format!("{}: the database {reason}", c.name),
                        "open a database file inside the project (sqlite3 data/app.db '…')",
                    );
                }
            }
            None => self.refuse(
                &c.part,
                format!(
                    "{}: the database file {} is computed when the command runs",
                    c.name, file.text
                ),
                "write the database file's path literally",
            ),
        }
    }
}
