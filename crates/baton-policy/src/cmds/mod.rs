//! Which program a command runs, and the validator of each program that needs one.
//!
//! Here: how a program is found (`run_path`), wrappers (`xargs`, `env`, `nice`…),
//! option parsing ([`parse_args`]) and [`Checker::validate`], the table from program
//! name to validator. The validators live by family: `files` (cd, source, rm, cp,
//! ln, chmod, find), `interpreters` (shells, python, node, perl), `packages` (npm,
//! npx, yarn, pip), `git`, `network` (curl, wget, URLs), `processes` (kill) and
//! `archives` (tar, zip, rsync), `text` (sed, awk).

use std::path::{Path, PathBuf};

use crate::check::{Checker, Cmd, Flow};
use crate::places::{Cwd, Place};
use crate::rules;
use crate::word::{Ch, Dynamic, Word};

mod archives;
mod files;
mod git;
mod interpreters;
mod network;
mod packages;
mod processes;
mod text;

/// One argument, as a program's option parser would see it.
#[derive(Debug)]
pub(crate) enum Arg<'w> {
    /// An option (`-f`, `--force`), with its value if it takes one.
    Opt {
        name: String,
        value: Option<Value<'w>>,
    },
    /// An operand.
    Pos(&'w Word),
    /// A computed word that may be an option.
    Unknown(&'w Word),
}

/// The value of an option: written inline (`--x=v`, `-ov`) or as the next word.
#[derive(Debug)]
pub(crate) enum Value<'w> {
    Inline(String),
    Next(&'w Word),
}

impl Value<'_> {
    pub fn word(&self) -> Word {
        match self {
            Value::Inline(s) => Word::quoted(s),
            Value::Next(w) => (*w).clone(),
        }
    }
    pub fn literal(&self) -> Option<String> {
        match self {
            Value::Inline(s) => Some(s.clone()),
            Value::Next(w) => w.literal(),
        }
    }
}

/// Split `args` into options and operands. `short_val` lists the short options that
/// take a value; `long_val` the long ones. With `stop`, the first operand ends the
/// options (everything after it is an operand).
pub(crate) fn parse_args<'w>(
    args: &'w [Word],
    short_val: &str,
    long_val: &[&str],
    stop: bool,
) -> Vec<Arg<'w>> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut only_pos = false;
    while i < args.len() {
        let w = &args[i];
        i += 1;
        if only_pos {
            out.push(Arg::Pos(w));
            continue;
        }
        let Some(l) = w.literal() else {
            if w.may_start_with('-') {
                out.push(Arg::Unknown(w));
            } else {
                out.push(Arg::Pos(w));
                only_pos |= stop;
            }
            continue;
        };
        if l == "--" {
            only_pos = true;
            continue;
        }
        if let Some(long) = l.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (long.to_string(), None),
            };
            let value = match inline {
                Some(v) => Some(Value::Inline(v)),
                None if long_val.contains(&name.as_str()) => {
                    let v = args.get(i).map(Value::Next);
                    i += 1;
                    v
                }
                None => None,
            };
            out.push(Arg::Opt {
                name: format!("--{name}"),
                value,
            });
            continue;
        }
        if l.len() > 1 && l.starts_with('-') {
            let chars: Vec<char> = l[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                if short_val.contains(c) {
                    let rest: String = chars[k + 1..].iter().collect();
                    let value = if rest.is_empty() {
                        let v = args.get(i).map(Value::Next);
                        i += 1;
                        v
                    } else {
                        Some(Value::Inline(rest))
                    };
                    out.push(Arg::Opt {
                        name: format!("-{c}"),
                        value,
                    });
                    break;
                }
                out.push(Arg::Opt {
                    name: format!("-{c}"),
                    value: None,
                });
                k += 1;
            }
            continue;
        }
        out.push(Arg::Pos(w));
        only_pos |= stop;
    }
    out
}

/// Standard places for installed programs: a path there is judged by its name.
fn system_bin(path: &Path, home: Option<&Path>) -> bool {
    let dirs = [
        "/usr/bin",
        "/bin",
        "/usr/local/bin",
        "/usr/sbin",
        "/sbin",
        "/usr/local/sbin",
    ];
    let parent = path.parent().unwrap_or(Path::new(""));
    if dirs.iter().any(|d| parent == Path::new(d)) {
        return true;
    }
    if let Some(h) = home {
        for d in [
            ".cargo/bin",
            ".local/bin",
            ".bun/bin",
            ".deno/bin",
            "go/bin",
        ] {
            if parent == h.join(d) {
                return true;
            }
        }
    }
    false
}

const DYN_ARG_NOTE: &str = "write the argument literally";

impl Checker<'_> {
    /// Decide on one simple command (also used for the commands wrappers run).
    pub fn run(&mut self, c: &Cmd) -> Flow {
        let name = c.name.as_str();
        if name.contains('/') {
            return self.run_path(c);
        }
        if let Some(&changes) = self.functions.get(name) {
            return if changes {
                Flow::same(&Cwd::Unknown)
            } else {
                Flow::same(&c.cwd)
            };
        }
        if self.policy.deny.contains(name) {
            self.refuse(
                &c.part,
                format!("{name} is removed from the allowlist by this project's baton.toml ([policy] deny)"),
                "use another command, or ask the user to change [policy] deny",
            );
            return Flow::same(&c.cwd);
        }
        let user_allowed = self.policy.user_allow.contains(name);
        if !user_allowed && let Some((reason, instead)) = rules::never(name) {
            self.refuse(&c.part, format!("{name}: {reason}"), instead);
            return Flow::same(&c.cwd);
        }
        if rules::VALIDATED.contains(&name) {
            return self.validate(c);
        }
        if rules::PLAIN.contains(&name) || user_allowed {
            return Flow::same(&c.cwd);
        }
        self.refuse(
            &c.part,
            format!("{name} is not on baton's allowlist of commands"),
            "use an allowed command (file inspection, git, node/npm/npx, python/pip, cargo, go, make, curl to localhost, process tools), a script inside the project, or ask the user to add it to [policy] allow in baton.toml",
        );
        Flow::same(&c.cwd)
    }

    /// A command given by path: a project file, or an installed program.
    fn run_path(&mut self, c: &Cmd) -> Flow {
        let name = c.name.as_str();
        let base = Path::new(name)
            .file_name()
            .map(|b| b.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dirs: Vec<PathBuf> = match &c.cwd {
            Cwd::Known(v) => v.clone(),
            Cwd::Unknown if name.starts_with('/') => vec![PathBuf::from("/")],
            Cwd::Unknown => {
                self.refuse(
                    &c.part,
                    format!("{name} is relative to a directory baton cannot know here"),
                    "cd to a literal directory first, or give the path from the project directory",
                );
                return Flow::same(&c.cwd);
            }
        };
        let mut project = true;
        let mut system = true;
        for d in &dirs {
            let p = crate::word::unescape(name);
            let abs = if p.starts_with('/') {
                PathBuf::from(&p)
            } else {
                d.join(&p)
            };
            let real = crate::places::real_path(&abs);
            let lexical = match self.policy.places.place(&crate::word::escape(&p), d) {
                Place::Project => true,
                Place::Protected(dir) => {
                    self.refuse(
                        &c.part,
                        format!("{name} runs a file inside {dir}/ (hooks and baton's files are not the agent's to run)"),
                        "run scripts that live in the project's own directories",
                    );
                    return Flow::same(&c.cwd);
                }
                _ => false,
            };
            project &= lexical && self.policy.places.in_project(&real);
            system &= system_bin(&real, self.policy.places.home.as_deref())
                || system_bin(&abs, self.policy.places.home.as_deref());
        }
        if system {
            let as_name = Cmd {
                name: base,
                ..c.clone()
            };
            return self.run(&as_name);
        }
        if !project {
            self.refuse(
                &c.part,
                format!("{name} is a program outside the project and outside the system's program directories"),
                "run programs installed on the system by name, or scripts that live inside the project",
            );
            return Flow::same(&c.cwd);
        }
        // A project script; if it is a copy of an interpreter or a wrapper, the
        // name tells, and its validator applies.
        if rules::VALIDATED.contains(&base.as_str())
            && !matches!(base.as_str(), "cd" | "source" | ".")
        {
            let as_name = Cmd {
                name: base,
                ..c.clone()
            };
            return self.validate(&as_name);
        }
        Flow::same(&c.cwd)
    }

    /// Run the rest of a wrapper's arguments as a command (xargs, env, timeout …).
    fn wrapped(&mut self, c: &Cmd, rest: &[Word], extra_input: bool) -> Flow {
        let Some(first) = rest.first() else {
            return Flow::same(&c.cwd);
        };
        let Some(name) = first.literal() else {
            self.refuse(
                &c.part,
                format!(
                    "{} runs a program whose name is computed when the command runs",
                    c.name
                ),
                "write the wrapped program's name literally",
            );
            return Flow::same(&c.cwd);
        };
        let mut args: Vec<Word> = rest[1..].to_vec();
        if extra_input {
            args.push(Word {
                chars: vec![Ch::Dyn],
                text: format!("(arguments {} reads from its input)", c.name),
                only: Some(Dynamic::Other),
                quoted_dyn_only: false,
            });
        }
        let inner = Cmd {
            name,
            args,
            cwd: c.cwd.clone(),
            part: c.part.clone(),
        };
        self.run(&inner);
        Flow::same(&c.cwd)
    }

    fn validate(&mut self, c: &Cmd) -> Flow {
        let same = Flow::same(&c.cwd);
        match c.name.as_str() {
            "cd" | "pushd" => return self.cd(c),
            "popd" => {
                self.cd_count += 1;
                return Flow {
                    ok: Cwd::Unknown,
                    fail: c.cwd.clone(),
                };
            }
            "source" | "." => return self.source_file(c),
            "read" => {
                for a in parse_args(&c.args, "adinNptu", &[], false) {
                    match a {
                        Arg::Opt {
                            name,
                            value: Some(v),
                        } if name == "-a" => {
                            let n = v.literal().unwrap_or_default();
                            self.assigned_var(&n, None, &c.part);
                        }
                        Arg::Pos(w) | Arg::Unknown(w) => match w.literal() {
                            Some(n) => self.assigned_var(&n, None, &c.part),
                            None => self.refuse(
                                &c.part,
                                "read into a computed variable name",
                                "name the variable literally",
                            ),
                        },
                        Arg::Opt { .. } => {}
                    }
                }
            }
            "mapfile" | "readarray" => {
                for a in parse_args(&c.args, "dnOsuCc", &[], false) {
                    if let Arg::Pos(w) | Arg::Unknown(w) = a {
                        match w.literal() {
                            Some(n) => self.assigned_var(&n, None, &c.part),
                            None => self.refuse(
                                &c.part,
                                "mapfile into a computed variable name",
                                "name the array literally",
                            ),
                        }
                    }
                }
            }
            "let" => {
                for w in &c.args {
                    match w.literal() {
                        Some(e) => {
                            self.arith_text(&e, &c.part, 0);
                            let name: String = e
                                .chars()
                                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                                .collect();
                            if !name.is_empty()
                                && e[name.len()..]
                                    .trim_start()
                                    .starts_with(|c: char| "=+-*/%<>&|^".contains(c))
                            {
                                self.assigned_var(&name, None, &c.part);
                                self.arith_safe.insert(name);
                            }
                        }
                        None => self.refuse(
                            &c.part,
                            "let with a computed expression cannot be checked",
                            "write the arithmetic literally: (( i = i + 1 ))",
                        ),
                    }
                }
            }
            "local" | "export" | "declare" | "typeset" | "readonly" => {
                // Reached only through `command export …` and the like.
                for w in &c.args {
                    match w.literal() {
                        Some(l) if l.starts_with('-') => {
                            if l.contains('n') {
                                self.refuse(
                                    &c.part,
                                    "name references (-n) cannot be followed",
                                    "assign variables directly",
                                );
                            }
                        }
                        Some(l) => {
                            let (n, v) = l
                                .split_once('=')
                                .map_or((l.as_str(), None), |(n, v)| (n, Some(v)));
                            self.assigned_var(n, Some(&Word::quoted(v.unwrap_or(""))), &c.part);
                        }
                        None => self.refuse(
                            &c.part,
                            "a declaration with a computed name cannot be checked",
                            "write it literally",
                        ),
                    }
                }
            }
            "unset" => {}
            "trap" => {
                let args: Vec<&Word> = c.args.iter().collect();
                let first = args.first().and_then(|w| w.literal());
                match first.as_deref() {
                    None if args.is_empty() => {}
                    Some("-l" | "-p" | "-" | "") => {}
                    Some(l) if l.starts_with('-') && l != "--" => {}
                    _ => {
                        let code = if first.as_deref() == Some("--") {
                            args.get(1)
                        } else {
                            args.first()
                        };
                        if let Some(code) = code {
                            self.inline(code, &c.cwd, &c.part, "trap");
                        }
                    }
                }
            }
            "hash" => {
                if c.args.iter().any(|w| {
                    w.literal()
                        .is_none_or(|l| l.starts_with('-') && l.contains('p'))
                }) {
                    self.refuse(
                        &c.part,
                        "hash -p makes a command name run another program",
                        "call programs by their own names",
                    );
                }
            }
            "command" | "builtin" => {
                let parsed = parse_args(&c.args, "", &[], true);
                let lookup = parsed
                    .iter()
                    .any(|a| matches!(a, Arg::Opt { name, .. } if name == "-v" || name == "-V"));
                if lookup {
                    return same;
                }
                let rest: Vec<Word> = c
                    .args
                    .iter()
                    .skip_while(|w| w.literal().is_some_and(|l| l.starts_with('-')))
                    .cloned()
                    .collect();
                return self.wrapped(c, &rest, false);
            }
            "history" => {
                if !c.args.is_empty() {
                    self.refuse(
                        &c.part,
                        "history with options writes or replays shell history",
                        "run the command again directly",
                    );
                }
            }
            "date" => {
                for a in parse_args(&c.args, "dfrI", &["date", "file", "reference"], false) {
                    match a {
                        Arg::Opt { name, .. } if name == "-s" || name == "--set" => self.refuse(
                            &c.part,
                            "date -s sets the system clock",
                            "print dates with date or date +FORMAT",
                        ),
                        Arg::Pos(w) if w.literal().is_some_and(|l| !l.starts_with('+')) => self
                            .refuse(
                                &c.part,
                                "a date operand without + sets the system clock",
                                "print dates with date +FORMAT",
                            ),
                        Arg::Unknown(w) | Arg::Pos(w) if w.literal().is_none() => self.refuse(
                            &c.part,
                            "a computed date operand could set the system clock",
                            "write the +FORMAT literally",
                        ),
                        _ => {}
                    }
                }
            }
            "hostname" => {
                for a in parse_args(&c.args, "F", &["file"], false) {
                    match a {
                        Arg::Opt { name, .. }
                            if !matches!(
                                name.as_str(),
                                "-f" | "-s" | "-i" | "-I" | "-d" | "-A" | "--fqdn" | "--short"
                            ) =>
                        {
                            self.refuse(
                                &c.part,
                                "hostname with this option changes the machine's name",
                                "print it with hostname or hostname -f",
                            )
                        }
                        Arg::Pos(_) | Arg::Unknown(_) => self.refuse(
                            &c.part,
                            "hostname NAME changes the machine's name",
                            "print it with hostname",
                        ),
                        _ => {}
                    }
                }
            }
            "sort" => {
                for a in parse_args(
                    &c.args,
                    "koTtS",
                    &[
                        "key",
                        "output",
                        "temporary-directory",
                        "field-separator",
                        "buffer-size",
                        "compress-program",
                        "files0-from",
                        "parallel",
                        "random-source",
                        "sort",
                    ],
                    false,
                ) {
                    match a {
                        Arg::Opt { name, .. } if name == "--compress-program" => self.refuse(
                            &c.part,
                            "sort --compress-program runs another program",
                            "sort without it",
                        ),
                        Arg::Opt {
                            name,
                            value: Some(v),
                        } if name == "-o" || name == "--output" => {
                            self.write_target(&v.word(), &c.cwd, &c.part, false)
                        }
                        Arg::Unknown(w) => self.unknown_option(c, w),
                        _ => {}
                    }
                }
            }
            "tee" | "truncate" => {
                for a in parse_args(&c.args, "sr", &["size", "reference", "output-error"], false) {
                    match a {
                        Arg::Pos(w) => self.write_target(w, &c.cwd, &c.part, false),
                        Arg::Unknown(w) => self.write_target(w, &c.cwd, &c.part, false),
                        Arg::Opt { .. } => {}
                    }
                }
            }
            "mkdir" | "touch" => {
                for a in parse_args(
                    &c.args,
                    "mdtrA",
                    &["mode", "date", "reference", "time", "context"],
                    false,
                ) {
                    match a {
                        Arg::Pos(w) | Arg::Unknown(w) => {
                            self.write_target(w, &c.cwd, &c.part, true)
                        }
                        Arg::Opt { .. } => {}
                    }
                }
            }
            "rm" | "rmdir" => self.rm(c),
            "cp" | "mv" | "ln" => self.copy(c),
            "chmod" => self.chmod(c),
            "find" => self.find(c),
            "xargs" => {
                let mut i = 0;
                let takes = [
                    "-I",
                    "-n",
                    "-L",
                    "-P",
                    "-s",
                    "-d",
                    "-E",
                    "-a",
                    "--max-args",
                    "--max-lines",
                    "--max-procs",
                    "--delimiter",
                    "--arg-file",
                    "--max-chars",
                    "--eof",
                    "--process-slot-var",
                ];
                while i < c.args.len() {
                    let Some(l) = c.args[i].literal() else {
                        self.refuse(
                            &c.part,
                            "xargs with a computed option or command cannot be checked",
                            "write xargs and its command literally",
                        );
                        return same;
                    };
                    if !l.starts_with('-') || l == "-" {
                        break;
                    }
                    i += 1;
                    if l == "--" {
                        break;
                    }
                    let (name, inline) = l
                        .split_once('=')
                        .map_or((l.as_str(), false), |(n, _)| (n, true));
                    if !inline && takes.contains(&name) {
                        i += 1;
                    }
                }
                let rest: Vec<Word> = c.args[i.min(c.args.len())..].to_vec();
                if rest.is_empty() {
                    return same;
                }
                return self.wrapped(c, &rest, true);
            }
            "env" => {
                let mut i = 0;
                while i < c.args.len() {
                    let Some(l) = c.args[i].literal() else {
                        self.refuse(
                            &c.part,
                            "env with a computed argument cannot be checked",
                            "write env's arguments literally",
                        );
                        return same;
                    };
                    if l.starts_with('-') && l != "-" {
                        if l.starts_with("-S")
                            || l.starts_with("--split-string")
                            || l.starts_with("-C")
                            || l.starts_with("--chdir")
                        {
                            self.refuse(
                                &c.part,
                                "env -S and -C run a command string or move it elsewhere",
                                "write the command directly after env",
                            );
                            return same;
                        }
                        i += if l == "-u" || l == "--unset" { 2 } else { 1 };
                        continue;
                    }
                    if let Some((n, v)) = l.split_once('=') {
                        self.assigned_var(n, Some(&Word::quoted(v)), &c.part);
                        i += 1;
                        continue;
                    }
                    break;
                }
                return self.wrapped(c, &c.args[i.min(c.args.len())..], false);
            }
            "nohup" => return self.wrapped(c, &c.args, false),
            "nice" | "timeout" | "stdbuf" | "time" => {
                let (short, long): (&str, &[&str]) = match c.name.as_str() {
                    "nice" => ("n", &["adjustment"]),
                    "timeout" => ("sk", &["signal", "kill-after"]),
                    "stdbuf" => ("ioe", &["input", "output", "error"]),
                    _ => ("fo", &["format", "output"]),
                };
                let mut i = 0;
                let parsed = parse_args(&c.args, short, long, true);
                let mut positional = 0usize;
                for a in &parsed {
                    match a {
                        Arg::Opt {
                            name,
                            value: Some(v),
                        } if c.name == "time" && (name == "-o" || name == "--output") => {
                            self.write_target(&v.word(), &c.cwd, &c.part, false);
                        }
                        Arg::Pos(_) => positional += 1,
                        Arg::Unknown(_) => {
                            self.refuse(
                                &c.part,
                                format!("{} with a computed option cannot be checked", c.name),
                                DYN_ARG_NOTE,
                            );
                            return same;
                        }
                        _ => {}
                    }
                }
                // The operands are the trailing words; timeout's first is a duration.
                let skip = usize::from(c.name == "timeout");
                if positional > skip {
                    i = c.args.len() - positional + skip;
                }
                if positional == 0 {
                    return same;
                }
                return self.wrapped(c, &c.args[i..], false);
            }
            "git" => return self.git(c),
            "node" | "nodejs" => self.node(c),
            "npm" => self.npm(c),
            "npx" | "pnpx" => self.npx(c, &c.args),
            "yarn" | "pnpm" => self.yarn(c),
            "python" | "python3" => self.python(c),
            "perl" | "ruby" => self.perl(c),
            "bash" | "sh" | "dash" | "zsh" => self.shell(c),
            "cargo" => {
                for w in &c.args {
                    match w.literal() {
                        Some(l) if l == "--" => break,
                        Some(l) if l == "--config" || l.starts_with("--config=") => {
                            self.refuse(&c.part, "cargo --config can set runners and wrappers that run other programs", "put settings in the project's Cargo.toml");
                        }
                        _ => {}
                    }
                }
            }
            "go" => {
                let mut prev = String::new();
                for w in &c.args {
                    let l = w.literal().unwrap_or_default();
                    let flag = l.trim_start_matches('-');
                    if l.starts_with('-')
                        && (flag == "exec"
                            || flag.starts_with("exec=")
                            || flag == "toolexec"
                            || flag.starts_with("toolexec="))
                    {
                        self.refuse(
                            &c.part,
                            "go -exec and -toolexec run other programs",
                            "run go build/test/run without them",
                        );
                    }
                    if prev == "env" && (l == "-w" || l == "-u") {
                        self.refuse(
                            &c.part,
                            "go env -w changes go's settings for every later command",
                            "set variables for one command, e.g. CGO_ENABLED=0 go build",
                        );
                    }
                    prev = l;
                }
            }
            "make" => {
                for a in parse_args(
                    &c.args,
                    "CfIjlWoE",
                    &[
                        "directory",
                        "file",
                        "makefile",
                        "include-dir",
                        "jobs",
                        "load-average",
                        "what-if",
                        "new-file",
                        "old-file",
                        "assume-old",
                        "assume-new",
                        "eval",
                    ],
                    false,
                ) {
                    match a {
                        Arg::Opt { name, .. } if name == "--eval" || name == "-E" => {
                            self.refuse(
                                &c.part,
                                "make --eval runs makefile text given on the command line",
                                "put rules in the project's Makefile",
                            );
                        }
                        Arg::Pos(w) => {
                            if let Some(l) = w.literal()
                                && let Some((var, _)) = l.split_once('=')
                                && matches!(
                                    var.trim_end_matches([':', '+', '?']),
                                    "SHELL" | ".SHELLFLAGS" | "MAKESHELL" | "MAKEFLAGS"
                                )
                            {
                                self.refuse(
                                    &c.part,
                                    format!(
                                        "make {var}=… changes the shell that runs every recipe"
                                    ),
                                    "run make with the project's own settings",
                                );
                            }
                        }
                        _ => {}
                    }
                }
            }
            "rg" => {
                for w in &c.args {
                    match w.literal() {
                        Some(l) if l == "--" => break,
                        Some(l)
                            if l == "--pre"
                                || l.starts_with("--pre=")
                                || l == "--search-zip"
                                || l == "-z" =>
                        {
                            self.refuse(
                                &c.part,
                                "rg --pre and --search-zip run other programs on each file",
                                "search with rg without --pre",
                            );
                        }
                        _ => {}
                    }
                }
            }
            "curl" => self.curl(c),
            "wget" => self.wget(c),
            "kill" | "pkill" | "killall" => self.kill(c),
            "sed" => self.sed(c),
            "awk" | "gawk" | "mawk" | "nawk" => self.awk(c),
            "tar" => self.tar(c),
            "zip" | "unzip" => self.zip(c),
            "rsync" => self.rsync(c),
            "openssl" => self.openssl(c),
            "split" => self.split(c),
            "patch" => self.patch(c),
            "printf" => self.printf(c),
            "test" | "[" => self.test_builtin(c),
            "compgen" => self.compgen(c),
            "ps" => self.ps(c),
            "gcc" | "cc" | "g++" | "c++" | "clang" | "clang++" => self.cc(c),
            "pip" | "pip3" => self.pip(c),
            other => {
                self.refuse(
                    &c.part,
                    format!("{other} has no validator"),
                    "use another command",
                );
            }
        }
        same
    }

    /// Refuse `w`, a computed argument of `c` that could be an option.
    pub(crate) fn unknown_option(&mut self, c: &Cmd, w: &Word) {
        self.refuse(
            &c.part,
            format!("{} gets a computed argument {} that could be an option, so baton cannot check what it does", c.name, w.text),
            "write options literally; put computed file names after --",
        );
    }
}

fn basename_of(w: &Word) -> String {
    w.literal()
        .and_then(|l| {
            Path::new(&l)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| ".".into())
}

/// Words of a command with no shell syntax beyond plain quoting.
fn simple_words(s: &str) -> Option<Vec<String>> {
    if s.chars().any(|c| "|;&<>$`(){}\\\n".contains(c)) {
        return None;
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => cur.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                any = true;
            }
            None if c.is_whitespace() => {
                if !cur.is_empty() || any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            None => cur.push(c),
        }
    }
    if quote.is_some() {
        return None;
    }
    if !cur.is_empty() || any {
        out.push(cur);
    }
    Some(out)
}

impl Checker<'_> {}

#[cfg(test)]
mod tests {
    use super::network::loopback_url;
    use super::packages::strip_version;
    use super::*;

    /// The names in `rules::VALIDATED` and the arms of `validate` are two lists; a
    /// name in the first without an arm would be refused as "has no validator".
    #[test]
    fn every_validated_name_has_a_validator() {
        let Ok(dir) = tempfile::tempdir() else {
            panic!("no temp dir");
        };
        let Ok(policy) = crate::Policy::new(&baton_config::PolicyConfig::default(), dir.path())
        else {
            panic!("no policy");
        };
        for name in rules::VALIDATED {
            let v = policy.check(&format!("{name} --version"));
            assert!(
                !v.message().contains("has no validator"),
                "{name}: {}",
                v.message()
            );
        }
    }

    #[test]
    fn loopback_urls() {
        for ok in [
            "http://localhost:3000/api",
            "localhost:8080",
            "https://127.0.0.1/x",
            "http://[::1]:5173",
            "http://0.0.0.0:8000",
        ] {
            assert!(loopback_url(ok), "{ok}");
        }
        for bad in [
            "http://example.com",
            "http://localhost@evil.com/",
            "http://127.0.0.1.nip.io",
            "file:///etc/passwd",
            "http://0x7f000001",
            "gopher://localhost",
            "http://localhost:99999",
            "http://127.1",
        ] {
            assert!(!loopback_url(bad), "{bad}");
        }
    }

    #[test]
    fn versions_are_stripped() {
        assert_eq!(strip_version("vite@latest"), "vite");
        assert_eq!(strip_version("@playwright/test@1.4"), "@playwright/test");
        assert_eq!(strip_version("tsc"), "tsc");
    }
}
