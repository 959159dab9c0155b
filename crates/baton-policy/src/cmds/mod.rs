//! Which program a command runs, and the validator of each program that needs one.
//!
//! Here: how a program is found (`run_path`) and `VALIDATORS`, the one table from
//! program name to validator (a program is validated if and only if it is there).
//! Option parsing is in `args`. The validators live by family: `builtins` (read,
//! let, declarations, trap, command…), `files` (cd, source, rm, cp, ln, chmod, find,
//! mkdir, tee), `wrappers` (xargs, env, nohup, nice, timeout, time, stdbuf),
//! `interpreters` (shells, python, node, perl), `packages` (npm, npx, yarn, pip),
//! `build` (cargo, go, make), `git`, `network` (curl, wget, URLs), `processes`
//! (kill, ps), `archives` (tar, zip, rsync), `text` (sed, awk, sort, rg), `tools`
//! (openssl, patch, split) and `system` (date, hostname).

use std::path::{Path, PathBuf};

use crate::check::{Checker, Cmd, Flow};
use crate::places::{Cwd, Place};
use crate::rules;
use crate::word::{Ch, Dynamic, Word};

mod archives;
mod args;
mod build;
mod builtins;
mod files;
mod git;
mod interpreters;
mod network;
mod packages;
mod processes;
mod system;
mod text;
mod tools;
mod wrappers;

pub(crate) use args::{Arg, parse_args};
pub(crate) use git::configured_remotes;

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

/// A validator: decides on one command of its program, and says where it leaves
/// the working directory.
pub(crate) type Validator = fn(&mut Checker<'_>, &Cmd) -> Flow;

/// A validator that only refuses what it must and never moves the working directory.
macro_rules! keeps_cwd {
    ($method:ident) => {
        |k, c| {
            k.$method(c);
            Flow::same(&c.cwd)
        }
    };
}

/// Every program with a validator of its own, by name. A program is validated if
/// and only if it is here; the rest are plain (`rules::PLAIN`), refused
/// (`rules::never`) or not allowed.
const VALIDATORS: &[(&[&str], Validator)] = &[
    (&["cd", "pushd"], |k, c| k.cd(c)),
    (&["popd"], |k, c| k.popd(c)),
    (&["source", "."], |k, c| k.source_file(c)),
    (&["read"], |k, c| k.read_vars(c)),
    (&["wait"], |k, c| k.wait(c)),
    (&["mapfile", "readarray"], |k, c| k.mapfile(c)),
    (&["let"], |k, c| k.let_arith(c)),
    (
        &["local", "export", "declare", "typeset", "readonly"],
        |k, c| k.declare(c),
    ),
    (&["unset"], |k, c| {
        let names: Vec<(String, Option<String>)> = c
            .args
            .iter()
            .map(|w| (w.text.clone(), w.literal()))
            .collect();
        k.unset_names(&names, &c.part);
        Flow::same(&c.cwd)
    }),
    (&["trap"], |k, c| k.trap(c)),
    (&["hash"], |k, c| k.hash(c)),
    (&["command", "builtin"], |k, c| k.command_builtin(c)),
    (&["history"], |k, c| k.history(c)),
    (&["date"], |k, c| k.date(c)),
    (&["hostname"], |k, c| k.hostname(c)),
    (&["sort"], |k, c| k.sort(c)),
    (&["tee", "truncate"], |k, c| k.tee(c)),
    (&["mkdir", "touch"], |k, c| k.mkdir(c)),
    (&["rm", "rmdir"], keeps_cwd!(rm)),
    (&["cp", "mv", "ln"], keeps_cwd!(copy)),
    (&["chmod"], keeps_cwd!(chmod)),
    (&["find"], keeps_cwd!(find)),
    (&["xargs"], |k, c| k.xargs(c)),
    (&["env"], |k, c| k.env(c)),
    (&["nohup"], |k, c| k.wrapped(c, &c.args, false)),
    (&["nice", "timeout", "stdbuf", "time"], |k, c| k.nice(c)),
    (&["git"], |k, c| k.git(c)),
    (&["node", "nodejs"], keeps_cwd!(node)),
    (&["npm"], keeps_cwd!(npm)),
    (&["npx", "pnpx"], |k, c| {
        k.npx(c, &c.args);
        Flow::same(&c.cwd)
    }),
    (&["yarn", "pnpm"], keeps_cwd!(yarn)),
    (&["python", "python3"], keeps_cwd!(python)),
    (&["perl", "ruby"], keeps_cwd!(perl)),
    (&["bash", "sh", "dash", "zsh"], keeps_cwd!(shell)),
    (&["cargo"], |k, c| k.cargo(c)),
    (&["go"], |k, c| k.go(c)),
    (&["make"], |k, c| k.make(c)),
    (&["rg"], |k, c| k.rg(c)),
    (&["curl"], keeps_cwd!(curl)),
    (&["wget"], keeps_cwd!(wget)),
    (&["kill", "pkill", "killall"], keeps_cwd!(kill)),
    (&["sed"], keeps_cwd!(sed)),
    (&["awk", "gawk", "mawk", "nawk"], keeps_cwd!(awk)),
    (&["tar"], keeps_cwd!(tar)),
    (&["zip", "unzip"], keeps_cwd!(zip)),
    (&["rsync"], keeps_cwd!(rsync)),
    (&["openssl"], keeps_cwd!(openssl)),
    (&["split"], keeps_cwd!(split)),
    (&["patch"], keeps_cwd!(patch)),
    (&["sqlite3"], keeps_cwd!(sqlite)),
    (&["fuser"], keeps_cwd!(fuser)),
    (&["printf"], keeps_cwd!(printf)),
    (&["test", "["], keeps_cwd!(test_builtin)),
    (&["compgen"], keeps_cwd!(compgen)),
    (&["ps"], keeps_cwd!(ps)),
    (
        &["gcc", "cc", "g++", "c++", "clang", "clang++"],
        keeps_cwd!(cc),
    ),
    (&["pip", "pip3"], keeps_cwd!(pip)),
];

/// The validator of the program `name`, if it has one.
pub(crate) fn validator(name: &str) -> Option<Validator> {
    VALIDATORS
        .iter()
        .find(|(names, _)| names.contains(&name))
        .map(|(_, v)| *v)
}

impl Checker<'_> {
    /// Decide on one simple command (also used for the commands wrappers run).
    pub fn run(&mut self, c: &Cmd) -> Flow {
        let name = c.name.as_str();
        if name.contains('/') {
            return self.run_path(c);
        }
        if self.defining.iter().any(|d| d == name) {
            self.refuse(
                &c.part,
                format!("the function {name} calls itself; a recursive function can start processes without end (a fork bomb), which reaches past the run's sandbox"),
                "write the steps as a loop, or as a script file in the project",
            );
            return Flow::same(&c.cwd);
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
                "use another command (only a person can change [policy] deny)",
            );
            return Flow::same(&c.cwd);
        }
        let user_allowed = self.policy.user_allow.contains(name);
        if !user_allowed && let Some((reason, instead)) = rules::never(name) {
            self.refuse(&c.part, format!("{name}: {reason}"), instead);
            return Flow::same(&c.cwd);
        }
        if let Some(v) = validator(name) {
            return v(self, c);
        }
        if rules::PLAIN.contains(&name) || user_allowed {
            return Flow::same(&c.cwd);
        }
        self.refuse(
            &c.part,
            format!("{name} is not on baton's allowlist of commands"),
            "use an allowed command (file inspection, git, node/npm/npx, python/pip, cargo, go, make, curl to localhost, process tools), a script inside the project, and if the project needs this one, say so in the progress notes (only a person can add it to [policy] allow)",
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
        if validator(&base).is_some() && !matches!(base.as_str(), "cd" | "source" | ".") {
            let as_name = Cmd {
                name: base,
                ..c.clone()
            };
            return self.validate(&as_name);
        }
        Flow::same(&c.cwd)
    }

    /// Decide on `c` with the validator of its program (`c.name` is in the table).
    fn validate(&mut self, c: &Cmd) -> Flow {
        match validator(&c.name) {
            Some(v) => v(self, c),
            None => {
                self.refuse(
                    &c.part,
                    format!("{} has no validator", c.name),
                    "use another command",
                );
                Flow::same(&c.cwd)
            }
        }
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

#[cfg(test)]
mod tests {
    use super::network::loopback_url;
    use super::packages::strip_version;
    use super::*;

    /// One table decides which programs are validated: a name in it twice, or also
    /// on the plain list or the refused list, would be a second, silent answer.
    #[test]
    fn every_validated_name_is_in_the_table_once_and_nowhere_else() {
        let mut seen = std::collections::BTreeSet::new();
        for (names, _) in VALIDATORS {
            for n in *names {
                assert!(seen.insert(*n), "{n} is in the table twice");
                assert!(!rules::PLAIN.contains(n), "{n} is also plain");
                assert!(rules::never(n).is_none(), "{n} is also refused");
            }
        }
        assert!(validator("git").is_some() && validator("cat").is_none());
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
