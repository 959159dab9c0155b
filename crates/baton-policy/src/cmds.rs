//! Which program a command runs, and the validator of each program that needs one.

use std::path::{Path, PathBuf};

use crate::check::{Checker, Cmd, Flow};
use crate::places::{Cwd, Place};
use crate::rules;
use crate::word::{Ch, Dynamic, Word};

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

    fn cd(&mut self, c: &Cmd) -> Flow {
        self.cd_count += 1;
        let ops: Vec<&Word> = c
            .args
            .iter()
            .filter(|w| {
                !w.literal()
                    .is_some_and(|l| matches!(l.as_str(), "-P" | "-L" | "-e" | "-@" | "--"))
            })
            .collect();
        let target = match ops.as_slice() {
            [] => self
                .policy
                .places
                .home
                .as_ref()
                .map(|h| Cwd::Known(vec![h.clone()]))
                .unwrap_or(Cwd::Unknown),
            [w] => match w.literal() {
                Some(l) if l == "-" => Cwd::Unknown,
                Some(l) => self.cd_target(&l, &c.cwd),
                None => match w.patterns() {
                    Some(p) if p.len() == 1 && !crate::word::pattern_has_glob(&p[0]) => {
                        self.cd_target(&crate::word::unescape(&p[0]), &c.cwd)
                    }
                    _ => Cwd::Unknown,
                },
            },
            _ => Cwd::Unknown,
        };
        Flow {
            ok: target,
            fail: c.cwd.clone(),
        }
    }

    fn source_file(&mut self, c: &Cmd) -> Flow {
        self.cd_count += 1;
        let unknown = Flow {
            ok: Cwd::Unknown,
            fail: Cwd::Unknown,
        };
        let Some(file) = c.args.first() else {
            return Flow::same(&c.cwd);
        };
        let Some(l) = file.literal() else {
            self.refuse(
                &c.part,
                format!("{} of a computed file name cannot be checked", c.name),
                "source a literal path inside the project",
            );
            return unknown;
        };
        let home = self.policy.places.home.clone();
        let known_env = home.as_ref().is_some_and(|h| {
            [".cargo/env", ".nvm/nvm.sh"]
                .iter()
                .any(|f| Path::new(&l) == h.join(f))
        });
        if known_env {
            return unknown;
        }
        let dirs = match &c.cwd {
            Cwd::Known(v) => v.clone(),
            Cwd::Unknown => vec![PathBuf::from("/")],
        };
        for d in dirs {
            match self.policy.places.place(&crate::word::escape(&l), &d) {
                Place::Project => {}
                _ => {
                    self.refuse(
                        &c.part,
                        format!("{} runs {l} in this shell, and it is not a file of the project", c.name),
                        "source files inside the project (e.g. . .venv/bin/activate), or ~/.cargo/env and ~/.nvm/nvm.sh",
                    );
                    return unknown;
                }
            }
        }
        unknown
    }

    fn rm(&mut self, c: &Cmd) {
        for a in parse_args(&c.args, "", &[], false) {
            match a {
                Arg::Opt { name, .. } if name == "--no-preserve-root" => {
                    self.refuse(
                        &c.part,
                        "rm --no-preserve-root",
                        "remove files inside the project",
                    );
                }
                Arg::Opt { .. } => {}
                Arg::Pos(w) | Arg::Unknown(w) => {
                    if let Some((reason, instead)) = self.write_problem(w, &c.cwd, true, true) {
                        self.refuse(&c.part, format!("{}: {reason}", c.name), format!("remove only files inside the project (never .git/ or .baton/); {instead}"));
                    }
                }
            }
        }
    }

    fn copy(&mut self, c: &Cmd) {
        let parsed = parse_args(
            &c.args,
            "tSV",
            &[
                "target-directory",
                "suffix",
                "backup",
                "sparse",
                "reflink",
                "preserve",
                "no-preserve",
                "context",
            ],
            false,
        );
        let mut target: Option<Word> = None;
        let mut ops: Vec<&Word> = Vec::new();
        let mut symbolic = false;
        let mut recursive = false;
        for a in &parsed {
            match a {
                Arg::Opt {
                    name,
                    value: Some(v),
                } if name == "-t" || name == "--target-directory" => target = Some(v.word()),
                Arg::Opt { name, .. } => {
                    symbolic |= name == "-s" || name == "--symbolic";
                    recursive |= matches!(
                        name.as_str(),
                        "-r" | "-R" | "-a" | "--recursive" | "--archive"
                    );
                }
                Arg::Pos(w) => ops.push(w),
                Arg::Unknown(w) => {
                    self.unknown_option(c, w);
                    return;
                }
            }
        }
        let (sources, dest): (Vec<&Word>, Option<Word>) = match target {
            Some(t) => (ops.clone(), Some(t)),
            None if ops.len() >= 2 || c.name != "ln" => match ops.split_last() {
                Some((last, rest)) => (rest.to_vec(), Some((*last).clone())),
                None => (Vec::new(), None),
            },
            None => (
                Vec::new(),
                ops.first().map(|w| Word::quoted(&basename_of(w))),
            ),
        };
        if let Some(d) = &dest {
            self.write_target(d, &c.cwd, &c.part, false);
        }
        for s in &sources {
            match c.name.as_str() {
                "mv" => {
                    if let Some((reason, instead)) = self.write_problem(s, &c.cwd, true, true) {
                        self.refuse(&c.part, format!("mv removes its source: {reason}"), instead);
                    }
                }
                "ln" => {
                    self.link_target(c, s, dest.as_ref(), true);
                }
                _ => {
                    if recursive && let Some(what) = self.secret_in(s, &c.cwd, true) {
                        self.refuse(
                            &c.part,
                            format!("copying {} recursively reaches {what}", s.text),
                            "copy files of the project",
                        );
                    }
                }
            }
        }
        if c.name == "ln"
            && sources.is_empty()
            && let Some(first) = ops.first()
        {
            self.link_target(c, first, None, symbolic);
        }
    }

    /// `ln` targets must be inside the project or a temp dir: a link is a path
    /// that reads and writes through to its target.
    fn link_target(&mut self, c: &Cmd, target: &Word, _link: Option<&Word>, _symbolic: bool) {
        if let Some((reason, _)) = self.write_problem(target, &c.cwd, false, false) {
            self.refuse(
                &c.part,
                format!(
                    "a link to {} would reach outside the project ({reason})",
                    target.text
                ),
                "link only to files inside the project",
            );
        }
    }

    fn chmod(&mut self, c: &Cmd) {
        let mut mode_seen = false;
        for w in &c.args {
            let Some(l) = w.literal() else {
                if mode_seen {
                    self.write_target(w, &c.cwd, &c.part, true);
                } else {
                    self.refuse(&c.part, "chmod with a computed mode", "use chmod +x FILE");
                }
                continue;
            };
            if matches!(
                l.as_str(),
                "-R" | "-v"
                    | "-f"
                    | "-c"
                    | "--recursive"
                    | "--verbose"
                    | "--silent"
                    | "--quiet"
                    | "--changes"
            ) {
                continue;
            }
            if !mode_seen {
                mode_seen = true;
                let ok = l.split(',').all(|m| {
                    let who = m.trim_start_matches(['u', 'g', 'o', 'a']);
                    who == "+x"
                });
                if !ok {
                    self.refuse(
                        &c.part,
                        format!("chmod {l}: baton allows only adding execute permission"),
                        "use chmod +x FILE (or u+x) to make a script executable",
                    );
                }
                continue;
            }
            self.write_target(w, &c.cwd, &c.part, true);
        }
    }

    fn find(&mut self, c: &Cmd) {
        let mut i = 0;
        let mut starts: Vec<&Word> = Vec::new();
        while i < c.args.len() {
            let w = &c.args[i];
            let l = w.literal();
            if l.as_deref()
                .is_some_and(|l| l.starts_with('-') || l == "(" || l == "!" || l == ")")
            {
                break;
            }
            if matches!(l.as_deref(), Some("-H" | "-L" | "-P")) {
                i += 1;
                continue;
            }
            starts.push(w);
            i += 1;
        }
        let mut delete = false;
        while i < c.args.len() {
            let w = &c.args[i];
            i += 1;
            let Some(l) = w.literal() else {
                if w.may_start_with('-') {
                    self.unknown_option(c, w);
                }
                continue;
            };
            match l.as_str() {
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = c.args[i..]
                        .iter()
                        .position(|w| matches!(w.literal().as_deref(), Some(";" | "+")))
                        .map_or(c.args.len(), |p| i + p);
                    let inner: Vec<Word> = c.args[i..end]
                        .iter()
                        .map(|w| {
                            if w.literal().as_deref() == Some("{}") {
                                Word {
                                    chars: vec![Ch::Dyn],
                                    text: "{}".into(),
                                    only: Some(Dynamic::Other),
                                    quoted_dyn_only: false,
                                }
                            } else {
                                w.clone()
                            }
                        })
                        .collect();
                    let before = self.refusals.len();
                    self.wrapped(c, &inner, false);
                    if self.refusals.len() > before {
                        self.refuse(
                            &c.part,
                            format!("find {l} runs a command that is refused (above)"),
                            "list the files with find, then act on them with allowed commands and literal paths",
                        );
                    }
                    i = end + 1;
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    if let Some(f) = c.args.get(i) {
                        self.write_target(f, &c.cwd, &c.part, false);
                    }
                    i += if l == "-fprintf" { 2 } else { 1 };
                }
                "-delete" => delete = true,
                _ => {}
            }
        }
        // `find . -name '*.pyc' -delete`: one name pattern of build leftovers that
        // neither git nor baton ever names their files with, and no operator that
        // could widen the match.
        let cleanup = {
            let lits: Vec<Option<String>> = c.args.iter().map(|w| w.literal()).collect();
            let mut names = 0;
            let mut ok = true;
            let mut k = 0;
            while k < lits.len() {
                match lits[k].as_deref() {
                    Some("-name" | "-iname") => {
                        names += 1;
                        ok &= lits
                            .get(k + 1)
                            .and_then(|p| p.as_deref())
                            .is_some_and(|p| CLEANUP_PATTERNS.contains(&p));
                        k += 2;
                        continue;
                    }
                    Some(
                        "-o" | "-or" | "!" | "-not" | "," | "-path" | "-wholename" | "-regex"
                        | "-iregex" | "-ipath" | "-iwholename" | "-lname" | "-ilname",
                    )
                    | None => ok = false,
                    _ => {}
                }
                k += 1;
            }
            ok && names == 1
        };
        if delete {
            let starts: Vec<Word> = if starts.is_empty() {
                vec![Word::quoted(".")]
            } else {
                starts.into_iter().cloned().collect()
            };
            for s in &starts {
                let problem = self.write_problem(s, &c.cwd, false, true);
                let root = s.literal().is_some_and(|l| {
                    let dirs = match &c.cwd {
                        Cwd::Known(v) => v.clone(),
                        Cwd::Unknown => vec![],
                    };
                    dirs.iter().any(|d| {
                        self.policy.places.place(&crate::word::escape(&l), d) == Place::ProjectRoot
                    })
                });
                if root && cleanup {
                    // Build leftovers only; see CLEANUP_PATTERNS.
                } else if let Some((reason, _)) = problem {
                    self.refuse(&c.part, format!("find -delete: {reason}"), "delete inside a subdirectory of the project, e.g. find build -name '*.o' -delete");
                } else if root {
                    self.refuse(
                        &c.part,
                        "find -delete from the project root can reach .git/ and .baton/",
                        "start find in a subdirectory (find src -name '*.pyc' -delete) or remove files with rm and literal paths",
                    );
                }
            }
        }
    }

    fn shell(&mut self, c: &Cmd) {
        let mut i = 0;
        let mut inline = false;
        while i < c.args.len() {
            let w = &c.args[i];
            let Some(l) = w.literal() else {
                if !inline && w.may_start_with('-') {
                    self.unknown_option(c, w);
                }
                break;
            };
            if l == "--" || l == "-" {
                i += 1;
                break;
            }
            if let Some(long) = l.strip_prefix("--") {
                match long {
                    "rcfile" | "init-file" | "login" => {
                        self.refuse(
                            &c.part,
                            format!("{} --{long} runs startup files", c.name),
                            "run the script or command directly",
                        );
                        return;
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            if l.len() > 1 && (l.starts_with('-') || l.starts_with('+')) {
                let flags = &l[1..];
                if flags.contains('c') {
                    inline = true;
                }
                if flags.contains('s') || flags.contains('i') || flags.contains('l') {
                    self.refuse(
                        &c.part,
                        format!(
                            "{} -{flags} reads commands from input or startup files",
                            c.name
                        ),
                        "run a script file or bash -c 'command'",
                    );
                    return;
                }
                if flags.contains('o') || flags.contains('O') {
                    i += 1;
                }
                i += 1;
                continue;
            }
            break;
        }
        if inline {
            match c.args.get(i) {
                Some(code) => self.inline(code, &c.cwd, &c.part, &format!("{} -c", c.name)),
                None => self.refuse(
                    &c.part,
                    format!("{} -c without code", c.name),
                    "give the command",
                ),
            }
            return;
        }
        if c.args.get(i).is_none() {
            self.refuse(
                &c.part,
                format!("{} without a script reads its program from standard input, which baton cannot check", c.name),
                "write the script to a file in the project and run it (bash script.sh), or use bash -c 'command'",
            );
        }
    }

    fn python(&mut self, c: &Cmd) {
        let mut i = 0;
        while i < c.args.len() {
            let w = &c.args[i];
            let Some(l) = w.literal() else {
                if w.may_start_with('-') {
                    self.unknown_option(c, w);
                }
                return;
            };
            if !l.starts_with('-') || l == "-" {
                if l == "-" {
                    break;
                }
                return; // a script file
            }
            i += 1;
            if l.starts_with("--") {
                if matches!(
                    l.as_str(),
                    "--version" | "--help" | "--help-all" | "--help-env" | "--help-xoptions"
                ) {
                    return;
                }
                if l == "--check-hash-based-pycs" {
                    i += 1;
                }
                continue;
            }
            let flags: Vec<char> = l[1..].chars().collect();
            for (k, f) in flags.iter().enumerate() {
                match f {
                    'c' => {
                        self.refuse(
                            &c.part,
                            format!("{} -c runs inline code, which baton cannot check", c.name),
                            "write the code to a .py file in the project and run python file.py",
                        );
                        return;
                    }
                    'm' => {
                        let module = if k + 1 < flags.len() {
                            Some(flags[k + 1..].iter().collect::<String>())
                        } else {
                            c.args.get(i).and_then(|w| w.literal())
                        };
                        let Some(module) = module else {
                            self.refuse(
                                &c.part,
                                "python -m with a computed module name",
                                "write the module name literally",
                            );
                            return;
                        };
                        let root = module.split('.').next().unwrap_or_default();
                        if matches!(
                            root,
                            "code"
                                | "timeit"
                                | "pdb"
                                | "idlelib"
                                | "IPython"
                                | "ipython"
                                | "ptpython"
                                | "runpy"
                                | "asyncio"
                                | "bdb"
                        ) {
                            self.refuse(
                                &c.part,
                                format!(
                                    "python -m {module} runs code given inline or on its input"
                                ),
                                "write the code to a file in the project and run it",
                            );
                        }
                        if module == "pip" {
                            // `python -m pip ARGS` is pip: the same sources rules.
                            let start = if k + 1 < flags.len() { i } else { i + 1 };
                            let pip = Cmd {
                                name: "pip".into(),
                                args: c.args.get(start..).unwrap_or_default().to_vec(),
                                cwd: c.cwd.clone(),
                                part: c.part.clone(),
                            };
                            self.pip(&pip);
                        }
                        return;
                    }
                    'V' | 'h' => return,
                    'W' | 'X' | 'Q' => {
                        if k + 1 == flags.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
        self.refuse(
            &c.part,
            format!("{} without a script reads its program from standard input, which baton cannot check", c.name),
            "write the code to a .py file in the project and run python file.py",
        );
    }

    fn node(&mut self, c: &Cmd) {
        let takes = [
            "-r",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "--input-type",
            "--conditions",
            "-C",
            "--env-file",
            "--title",
            "--stack-size",
            "--max-old-space-size",
            "--inspect-port",
            "--test-reporter",
            "--test-reporter-destination",
            "--test-name-pattern",
            "--watch-path",
        ];
        let mut i = 0;
        while i < c.args.len() {
            let w = &c.args[i];
            let Some(l) = w.literal() else {
                if w.may_start_with('-') {
                    self.unknown_option(c, w);
                }
                return;
            };
            if !l.starts_with('-') {
                return;
            }
            i += 1;
            let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
            match name {
                "-e" | "--eval" | "-p" | "--print" | "-pe" | "-ep" => {
                    self.refuse(
                        &c.part,
                        "node -e/-p runs inline code, which baton cannot check",
                        "write the code to a .js file in the project and run node file.js",
                    );
                    return;
                }
                "-v" | "--version" | "-h" | "--help" | "--test" | "--run" | "--v8-options" => {
                    return;
                }
                "-" => break,
                _ => {}
            }
            if takes.contains(&name) && !l.contains('=') {
                i += 1;
            }
        }
        self.refuse(
            &c.part,
            format!("{} without a script reads its program from standard input, which baton cannot check", c.name),
            "write the code to a .js file in the project and run node file.js",
        );
    }

    fn perl(&mut self, c: &Cmd) {
        for w in &c.args {
            let Some(l) = w.literal() else { return };
            if !l.starts_with('-') || l == "--" {
                return;
            }
            if l.starts_with("--") {
                continue;
            }
            let flags = &l[1..];
            if flags.contains('e') || flags.contains('E') {
                self.refuse(&c.part, format!("{} -e runs inline code, which baton cannot check", c.name), format!("write the code to a file in the project and run {} file; for substitutions in files use sed -i", c.name));
                return;
            }
            if flags == "v" || flags == "V" || flags == "h" || flags == "version" {
                return;
            }
        }
        self.refuse(
            &c.part,
            format!(
                "{} without a script reads its program from standard input",
                c.name
            ),
            "write the code to a file in the project and run it",
        );
    }

    fn npm(&mut self, c: &Cmd) {
        let mut sub: Option<(usize, String)> = None;
        for (i, w) in c.args.iter().enumerate() {
            let Some(l) = w.literal() else {
                if sub.is_none() {
                    self.refuse(
                        &c.part,
                        "npm with a computed subcommand",
                        "write the npm subcommand literally",
                    );
                    return;
                }
                continue;
            };
            if l == "--" {
                break;
            }
            let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
            match name {
                "--registry" | "--@registry" => {
                    self.refuse(
                        &c.part,
                        "npm --registry installs from another registry",
                        "install from the default registry; other sources need [policy] remotes",
                    );
                    return;
                }
                "-g" | "--global" => {
                    self.refuse(
                        &c.part,
                        "npm -g installs outside the project",
                        "install locally (npm install --save-dev PKG) and run it with npx",
                    );
                    return;
                }
                "--location" if l.ends_with("global") => {
                    self.refuse(
                        &c.part,
                        "npm --location=global installs outside the project",
                        "install locally and run it with npx",
                    );
                    return;
                }
                "--script-shell" | "--node-options" | "--userconfig" | "--globalconfig"
                | "--prefix" | "--call" | "-c" => {
                    self.refuse(
                        &c.part,
                        format!("npm {name} changes which programs npm runs or where it installs"),
                        "run npm with the project's settings",
                    );
                    return;
                }
                _ => {}
            }
            if sub.is_none() && !l.starts_with('-') {
                sub = Some((i, l));
            }
        }
        let Some((i, sub)) = sub else { return };
        let rest = &c.args[i + 1..];
        match sub.as_str() {
            "install" | "i" | "add" | "in" | "ins" | "inst" | "insta" | "instal" | "isnt"
            | "isnta" | "isntal" | "isntall" | "update" | "up" | "upgrade" => {
                self.install_sources(c, rest, "npm")
            }
            "exec" | "x" => self.npx(c, rest),
            "config" | "c" => {
                let action = rest.first().and_then(|w| w.literal()).unwrap_or_default();
                if !matches!(action.as_str(), "get" | "list" | "ls") {
                    self.refuse(&c.part, format!("npm config {action} changes npm's settings (they can name the shell and node options npm uses)"), "read settings with npm config get/list; put project settings in package.json");
                }
            }
            "set" | "edit" => self.refuse(
                &c.part,
                format!("npm {sub} changes npm's settings"),
                "put project settings in package.json",
            ),
            "publish" | "unpublish" | "deprecate" | "dist-tag" | "owner" | "access" | "adduser"
            | "login" | "logout" | "token" | "team" | "org" | "hook" | "profile" | "star"
            | "unstar" => self.refuse(
                &c.part,
                format!("npm {sub} acts on the registry or your account"),
                "build and test locally; publishing is for the user",
            ),
            "init" | "create" | "innit" => {
                if let Some(pkg) = rest.iter().find(|w| !w.may_start_with('-')) {
                    self.create_package(c, pkg);
                }
            }
            _ => {}
        }
    }

    fn create_package(&mut self, c: &Cmd, pkg: &Word) {
        let Some(p) = pkg.literal() else {
            self.refuse(
                &c.part,
                "a computed package name",
                "write the package name literally",
            );
            return;
        };
        let p = strip_version(&p);
        let full = match p.split_once('/') {
            Some((scope, name)) => format!("{scope}/create-{name}"),
            None if p.starts_with('@') => format!("{p}/create"),
            None => format!("create-{p}"),
        };
        if !self.policy.npx_packages.contains(&full) && !self.policy.npx_packages.contains(&p) {
            self.refuse(
                &c.part,
                format!("{full} is not on the list of packages baton lets npm/npx download and run"),
                "use a listed initializer (create-vite, create-next-app, create-react-app …), or ask the user to add it to [policy] npx_packages",
            );
        }
    }

    /// `npx PKG …`, `npm exec PKG`, `yarn dlx PKG`, `pnpm dlx PKG`.
    fn npx(&mut self, c: &Cmd, args: &[Word]) {
        let mut packages: Vec<String> = Vec::new();
        let mut i = 0;
        let mut command: Option<String> = None;
        let mut after = args.len();
        while i < args.len() {
            let w = &args[i];
            let Some(l) = w.literal() else {
                self.refuse(
                    &c.part,
                    "npx with a computed package or option",
                    "write the package name literally",
                );
                return;
            };
            i += 1;
            if l == "--" {
                command = args.get(i).and_then(|w| w.literal());
                if command.is_none() && i < args.len() {
                    self.refuse(&c.part, "npx with a computed command", "write it literally");
                    return;
                }
                after = (i + 1).min(args.len());
                break;
            }
            if let Some(v) = l.strip_prefix("--package=") {
                packages.push(v.to_string());
                continue;
            }
            if l == "-p" || l == "--package" {
                match args.get(i).and_then(|w| w.literal()) {
                    Some(v) => packages.push(v),
                    None => {
                        self.refuse(
                            &c.part,
                            "npx -p with a computed package",
                            "write it literally",
                        );
                        return;
                    }
                }
                i += 1;
                continue;
            }
            if l == "-c" || l.starts_with("--call") {
                self.refuse(&c.part, "npx -c runs a shell string with package binaries on PATH, which baton cannot check", "run npx PACKAGE ARGS directly");
                return;
            }
            if l.starts_with('-') {
                continue;
            }
            command = Some(l);
            after = i;
            break;
        }
        // Packages that delete what they are given are judged as `rm -rf` of it
        // (`npm exec -- rimraf /`).
        if let Some(cmd) = &command
            && matches!(
                strip_version(cmd).as_str(),
                "rimraf" | "del" | "del-cli" | "trash" | "trash-cli" | "rm"
            )
        {
            let mut rm_args = vec![Word::quoted("-rf")];
            rm_args.extend(
                args[after..]
                    .iter()
                    .filter(|w| !w.literal().is_some_and(|l| l.starts_with('-')))
                    .cloned(),
            );
            if rm_args.len() == 1 {
                rm_args.push(Word::quoted("."));
            }
            let rm = Cmd {
                name: "rm".into(),
                args: rm_args,
                cwd: c.cwd.clone(),
                part: c.part.clone(),
            };
            self.validate(&rm);
        }
        if packages.is_empty()
            && let Some(cmd) = &command
        {
            packages.push(cmd.clone());
        }
        for p in packages {
            let name = strip_version(&p);
            if !self.policy.npx_packages.contains(&name) {
                self.refuse(
                    &c.part,
                    format!("{name} is not on the list of packages baton lets npx download and run"),
                    "add it as a dev dependency (npm install -D PKG) and run it through an npm script, use a listed tool (vite, tsc, eslint, prettier, jest, vitest, playwright …), or ask the user to add it to [policy] npx_packages",
                );
            }
        }
    }

    fn yarn(&mut self, c: &Cmd) {
        let first = c
            .args
            .iter()
            .position(|w| !w.literal().is_some_and(|l| l.starts_with('-')));
        for w in &c.args {
            if let Some(l) = w.literal()
                && (l == "-g" || l == "--global")
            {
                self.refuse(
                    &c.part,
                    format!("{} -g installs outside the project", c.name),
                    "install locally as a dev dependency",
                );
                return;
            }
        }
        let Some(i) = first else { return };
        let Some(sub) = c.args[i].literal() else {
            self.refuse(
                &c.part,
                format!("{} with a computed subcommand", c.name),
                "write the subcommand literally",
            );
            return;
        };
        let rest = &c.args[i + 1..];
        match sub.as_str() {
            "add" | "install" | "i" | "up" | "upgrade" | "update" => {
                self.install_sources(c, rest, &c.name)
            }
            "dlx" => self.npx(c, rest),
            "exec" => {
                let start = rest
                    .iter()
                    .position(|w| !w.literal().is_some_and(|l| l.starts_with('-')))
                    .unwrap_or(rest.len());
                self.wrapped(c, &rest[start..], false);
            }
            "node" => {
                let inner = Cmd {
                    name: "node".into(),
                    args: rest.to_vec(),
                    cwd: c.cwd.clone(),
                    part: c.part.clone(),
                };
                self.node(&inner);
            }
            "global" => self.refuse(
                &c.part,
                format!("{} global installs outside the project", c.name),
                "install locally as a dev dependency",
            ),
            "config" => {
                let action = rest.first().and_then(|w| w.literal()).unwrap_or_default();
                if !matches!(action.as_str(), "get" | "list") {
                    self.refuse(
                        &c.part,
                        format!(
                            "{} config {action} changes the package manager's settings",
                            c.name
                        ),
                        "put project settings in package.json",
                    );
                }
            }
            "create" => {
                if let Some(pkg) = rest.iter().find(|w| !w.may_start_with('-')) {
                    self.create_package(c, pkg);
                }
            }
            "publish" | "npm" | "login" | "logout" => self.refuse(
                &c.part,
                format!("{} {sub} acts on the registry or your account", c.name),
                "build and test locally",
            ),
            _ => {}
        }
    }

    fn git(&mut self, c: &Cmd) -> Flow {
        let same = Flow::same(&c.cwd);
        let mut i = 0;
        let mut cwd = c.cwd.clone();
        while i < c.args.len() {
            let Some(l) = c.args[i].literal() else {
                self.refuse(
                    &c.part,
                    "git with a computed option or subcommand",
                    "write git's options and subcommand literally",
                );
                return same;
            };
            if !l.starts_with('-') {
                break;
            }
            i += 1;
            let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
            match name {
                _ if l.starts_with("-c") || name == "--config-env" || name == "--config" => {
                    self.refuse(
                        &c.part,
                        "git -c / --config-env sets configuration for this command, and configuration can run programs (core.pager, core.sshCommand, core.fsmonitor, aliases)",
                        "run git without -c; settings that are safe can be made with git config user.name/user.email",
                    );
                    return same;
                }
                "-C" => {
                    match c.args.get(i).and_then(|w| w.literal()) {
                        Some(d) => cwd = self.cd_target(&d, &cwd),
                        None => {
                            self.refuse(
                                &c.part,
                                "git -C with a computed directory",
                                "write the directory literally",
                            );
                            return same;
                        }
                    }
                    i += 1;
                }
                "--exec-path" if l.contains('=') => {
                    self.refuse(
                        &c.part,
                        "git --exec-path=DIR runs git's subcommands from another directory",
                        "run git with its defaults",
                    );
                    return same;
                }
                "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix"
                | "--attr-source" => {
                    self.refuse(
                        &c.part,
                        format!("git {name} points git at another repository or tree"),
                        "run git inside the project (cd or git -C DIR)",
                    );
                    return same;
                }
                "--no-pager"
                | "-P"
                | "--paginate"
                | "-p"
                | "--no-replace-objects"
                | "--literal-pathspecs"
                | "--glob-pathspecs"
                | "--noglob-pathspecs"
                | "--icase-pathspecs"
                | "--no-optional-locks"
                | "--version"
                | "--help"
                | "-h"
                | "--no-advice"
                | "--html-path"
                | "--man-path"
                | "--info-path"
                | "--exec-path"
                | "--bare"
                | "--no-lazy-fetch" => {}
                _ => {
                    self.refuse(
                        &c.part,
                        format!("git option {name} is not one baton knows"),
                        "use git's common options (-C DIR, --no-pager) before the subcommand",
                    );
                    return same;
                }
            }
        }
        let Some(sub) = c.args.get(i).and_then(|w| w.literal()) else {
            return same;
        };
        let rest = &c.args[i + 1..];
        let sc = Cmd {
            name: format!("git {sub}"),
            args: rest.to_vec(),
            cwd,
            part: c.part.clone(),
        };
        crate::scripts::git_sub(self, &sc, &sub);
        same
    }

    fn curl(&mut self, c: &Cmd) {
        let parsed = parse_args(
            &c.args,
            "odHXuAebcFTmwrDxKEYyzCQtU",
            &[
                "output",
                "data",
                "data-raw",
                "data-binary",
                "data-urlencode",
                "data-ascii",
                "header",
                "request",
                "user",
                "user-agent",
                "referer",
                "cookie",
                "cookie-jar",
                "form",
                "form-string",
                "upload-file",
                "max-time",
                "connect-timeout",
                "write-out",
                "retry",
                "retry-delay",
                "retry-max-time",
                "range",
                "dump-header",
                "url",
                "proxy",
                "config",
                "resolve",
                "connect-to",
                "unix-socket",
                "abstract-unix-socket",
                "cacert",
                "capath",
                "cert",
                "key",
                "cert-type",
                "key-type",
                "json",
                "limit-rate",
                "max-redirs",
                "output-dir",
                "time-cond",
                "trace",
                "trace-ascii",
                "stderr",
                "interface",
                "local-port",
                "dns-servers",
                "doh-url",
                "preproxy",
                "proxy-user",
                "keepalive-time",
                "expect100-timeout",
                "max-filesize",
                "speed-limit",
                "speed-time",
                "oauth2-bearer",
                "aws-sigv4",
                "variable",
                "url-query",
                "retry-all-errors-x",
                "ciphers",
                "tls-max",
                "create-file-mode",
                "quote",
                "request-target",
                "socks4",
                "socks4a",
                "socks5",
                "socks5-hostname",
                "proto",
                "proto-redir",
                "proto-default",
                "happy-eyeballs-timeout-ms",
                "mail-from",
                "mail-rcpt",
                "continue-at",
                "netrc-file",
                "krb",
                "pass",
                "pubkey",
                "hostpubmd5",
                "hostpubsha256",
                "engine",
                "egd-file",
                "random-file",
                "ftp-port",
                "telnet-option",
                "tftp-blksize",
                "login-options",
                "sasl-authzid",
                "service-name",
                "unix-socket-x",
            ],
            false,
        );
        let mut urls = 0;
        for a in parsed {
            match a {
                Arg::Opt { name, value } => match name.as_str() {
                    "-o" | "--output" | "-c" | "--cookie-jar" | "-D" | "--dump-header"
                    | "--trace" | "--trace-ascii" | "--stderr" | "--output-dir" => {
                        if let Some(v) = value
                            && v.literal().as_deref() != Some("-")
                        {
                            self.write_target(&v.word(), &c.cwd, &c.part, false);
                        }
                    }
                    "-O"
                    | "--remote-name"
                    | "--remote-name-all"
                    | "-J"
                    | "--remote-header-name" => {
                        self.write_target(&Word::quoted("."), &c.cwd, &c.part, true);
                    }
                    "--url" => {
                        if let Some(v) = value {
                            urls += 1;
                            self.url(c, &v.word());
                        }
                    }
                    "-x"
                    | "--proxy"
                    | "--preproxy"
                    | "--socks4"
                    | "--socks4a"
                    | "--socks5"
                    | "--socks5-hostname"
                    | "--resolve"
                    | "--connect-to"
                    | "--dns-servers"
                    | "--doh-url"
                    | "-K"
                    | "--config"
                    | "--unix-socket"
                    | "--abstract-unix-socket"
                    | "-q"
                    | "--disable"
                    | "--netrc-file"
                    | "--variable"
                    | "--engine" => {
                        self.refuse(&c.part, format!("curl {name} can send the request somewhere other than the URL (or read options from a file)"), "use curl with a plain http://localhost URL");
                    }
                    _ => {}
                },
                Arg::Pos(w) => {
                    urls += 1;
                    self.url(c, w);
                }
                Arg::Unknown(w) => self.unknown_option(c, w),
            }
        }
        let _ = urls;
    }

    fn wget(&mut self, c: &Cmd) {
        let parsed = parse_args(
            &c.args,
            "OoaPeitTwUlQABDIXRY",
            &[
                "output-document",
                "output-file",
                "append-output",
                "directory-prefix",
                "execute",
                "input-file",
                "tries",
                "timeout",
                "wait",
                "user-agent",
                "level",
                "quota",
                "accept",
                "reject",
                "base",
                "domains",
                "include-directories",
                "exclude-directories",
                "header",
                "post-data",
                "post-file",
                "body-data",
                "body-file",
                "method",
                "user",
                "password",
                "http-user",
                "http-password",
                "referer",
                "load-cookies",
                "save-cookies",
                "config",
                "use-askpass",
                "bind-address",
                "limit-rate",
                "ca-certificate",
                "certificate",
                "private-key",
                "dns-timeout",
                "connect-timeout",
                "read-timeout",
                "waitretry",
                "proxy-user",
                "proxy-password",
            ],
            false,
        );
        let mut named_output = false;
        for a in parsed {
            match a {
                Arg::Opt { name, value } => match name.as_str() {
                    "-O" | "--output-document" | "-o" | "--output-file" | "-a"
                    | "--append-output" | "-P" | "--directory-prefix" | "--save-cookies" => {
                        named_output |= matches!(
                            name.as_str(),
                            "-O" | "--output-document" | "-P" | "--directory-prefix"
                        );
                        if let Some(v) = value
                            && v.literal().as_deref() != Some("-")
                        {
                            self.write_target(
                                &v.word(),
                                &c.cwd,
                                &c.part,
                                name == "-P" || name == "--directory-prefix",
                            );
                        }
                    }
                    "-e" | "--execute" | "-i" | "--input-file" | "--config" | "--use-askpass"
                    | "-B" | "--base" | "-Y" => {
                        self.refuse(
                            &c.part,
                            format!("wget {name} reads commands or URLs from elsewhere"),
                            "give wget a plain http://localhost URL",
                        );
                    }
                    _ => {}
                },
                Arg::Pos(w) => self.url(c, w),
                Arg::Unknown(w) => self.unknown_option(c, w),
            }
        }
        // Without -O, wget writes into the current directory.
        if !named_output {
            self.write_target(&Word::quoted("."), &c.cwd, &c.part, true);
        }
    }

    fn url(&mut self, c: &Cmd, w: &Word) {
        match w.static_text() {
            Some(u) if loopback_url(&u) => {}
            Some(u) => self.refuse(
                &c.part,
                format!("{} may fetch only from this machine (localhost, 127.0.0.1, [::1]); {u} is elsewhere", c.name),
                "fetch http://localhost:PORT/… from the app you are running; install packages with npm, pip or cargo",
            ),
            None => self.refuse(
                &c.part,
                format!("the URL {} is computed when the command runs, so baton cannot tell where {} connects", w.text, c.name),
                "write the URL literally, e.g. http://localhost:3000/api",
            ),
        }
    }

    /// `kill PID…` of processes this run started; `pkill`/`killall` are refused.
    fn kill(&mut self, c: &Cmd) {
        let name = c.name.as_str();
        if name == "kill" {
            // kill [-s SIG | -n NUM | -SIG] [--] TARGET...: only the first word may
            // be a signal; every later word is a target (`kill -9 -1` is all processes).
            let mut i = 0;
            if let Some(first) = c.args.first().and_then(|w| w.literal())
                && first.starts_with('-')
                && first != "--"
            {
                if first == "-l" || first == "-L" {
                    return;
                }
                // Signal 0 sends nothing: it only asks whether the processes exist.
                let second = c.args.get(1).and_then(|w| w.literal());
                if first == "-0"
                    || ((first == "-s" || first == "-n") && second.as_deref() == Some("0"))
                {
                    return;
                }
                i = if first == "-s" || first == "-n" { 2 } else { 1 };
            }
            if c.args.get(i).and_then(|w| w.literal()).as_deref() == Some("--") {
                i += 1;
            }
            if i >= c.args.len() {
                return;
            }
            for w in &c.args[i..] {
                self.kill_target(c, w);
            }
            return;
        }
        // pkill and killall choose processes by name: any process whose command
        // line matches, including ones this run did not start.
        self.refuse(
            &c.part,
            format!(
                "{name} picks processes by name, which can reach processes this run did not start"
            ),
            KILL_INSTEAD,
        );
    }

    fn kill_target(&mut self, c: &Cmd, w: &Word) {
        let instead = KILL_INSTEAD;
        if let Some(l) = w.literal() {
            if l.starts_with('%') {
                return;
            }
            if let Some(sig) = l.strip_prefix('-')
                && sig.chars().all(|c| c.is_ascii_alphanumeric())
                && !sig.chars().all(|c| c.is_ascii_digit())
            {
                return;
            }
            match l.parse::<i64>() {
                Ok(p) if p > 1 => {
                    if !self.pid_ok(p as u32, false) {
                        self.refuse(
                            &c.part,
                            format!("process {p} was not started in this run"),
                            instead,
                        );
                    }
                }
                Ok(p) if p < -1 => {
                    if !self.pid_ok((-p) as u32, true) {
                        self.refuse(
                            &c.part,
                            format!("process group {} was not started in this run", -p),
                            instead,
                        );
                    }
                }
                Ok(p) => {
                    self.refuse(
                        &c.part,
                        format!("kill {p} signals every process, this shell's group, or init"),
                        instead,
                    );
                }
                Err(_) => {
                    self.refuse(&c.part, format!("kill {l}: not a process id"), instead);
                }
            }
            return;
        }
        match &w.only {
            Some(Dynamic::LastBackground) => {}
            Some(Dynamic::Substitution(inner)) if self.pid_source_ok(inner, &c.cwd) => {}
            _ => self.refuse(
                &c.part,
                format!("baton cannot tell which processes {} names", w.text),
                instead,
            ),
        }
    }

    /// Whether `pid` (or the group `pid`) belongs to this run: a process group the
    /// tools' [`baton_tools::ProcessRegistry`] owns. Names and command lines are never
    /// enough.
    fn pid_ok(&self, pid: u32, group: bool) -> bool {
        // The pid as baton knows it (the commands may see another, inside their
        // PID namespace).
        let pid = match &self.policy.launcher {
            Some(l) => match l.host_pid(pid) {
                Some(p) => p,
                None => return false,
            },
            None => pid,
        };
        self.policy.processes.as_ref().is_some_and(|reg| {
            let alive = reg.alive();
            if group {
                return alive.contains(&(pid as i32));
            }
            process_group(pid).is_some_and(|g| alive.contains(&g))
        })
    }

    /// `$(jobs -p)`: the jobs of this very shell. Nothing else computes pids baton
    /// can trust: `pgrep`/`pidof`/`lsof` match names and ports of any process, and a
    /// pid file can be rewritten by the command before `kill` reads it.
    fn pid_source_ok(&self, inner: &str, _cwd: &Cwd) -> bool {
        let Some(words) = simple_words(inner) else {
            return false;
        };
        let Some((prog, args)) = words.split_first() else {
            return false;
        };
        prog == "jobs" && args.iter().all(|a| a.starts_with('-'))
    }

    fn tar(&mut self, c: &Cmd) {
        let mut args = c.args.clone();
        if let Some(first) = args.first().and_then(|w| w.literal())
            && !first.starts_with('-')
            && first.chars().all(|c| c.is_ascii_alphabetic())
        {
            args[0] = Word::quoted(&format!("-{first}"));
        }
        let parsed = parse_args(
            &args,
            "fCTXbgHIKLNVF",
            &[
                "file",
                "directory",
                "files-from",
                "exclude-from",
                "blocking-factor",
                "listed-incremental",
                "format",
                "use-compress-program",
                "starting-file",
                "tape-length",
                "newer",
                "label",
                "info-script",
                "new-volume-script",
                "to-command",
                "checkpoint-action",
                "rsh-command",
                "rmt-command",
                "index-file",
                "transform",
                "xform",
                "exclude",
                "owner",
                "group",
                "mode",
                "mtime",
                "strip-components",
                "suffix",
                "volno-file",
                "checkpoint",
                "backup",
                "occurrence",
            ],
            false,
        );
        let mut create = false;
        let mut extract = false;
        let mut file: Option<Word> = None;
        let mut dir: Option<Word> = None;
        let mut members: Vec<&Word> = Vec::new();
        for a in &parsed {
            match a {
                Arg::Opt { name, value } => match name.as_str() {
                    "-c" | "--create" | "-r" | "--append" | "-u" | "--update" => create = true,
                    "-x" | "--extract" | "--get" => extract = true,
                    "-f" | "--file" => file = value.as_ref().map(|v| v.word()),
                    "-C" | "--directory" => dir = value.as_ref().map(|v| v.word()),
                    "-I"
                    | "--use-compress-program"
                    | "--to-command"
                    | "--checkpoint-action"
                    | "-F"
                    | "--info-script"
                    | "--new-volume-script"
                    | "--rsh-command"
                    | "--rmt-command" => {
                        self.refuse(
                            &c.part,
                            format!("tar {name} runs another program"),
                            "use tar -czf / -xzf with its built-in compression (z, j, J)",
                        );
                    }
                    "-P" | "--absolute-names" => self.refuse(
                        &c.part,
                        "tar -P writes members to absolute paths",
                        "extract without -P (into the project)",
                    ),
                    "--index-file" => {
                        if let Some(v) = value {
                            self.write_target(&v.word(), &c.cwd, &c.part, false);
                        }
                    }
                    _ => {}
                },
                Arg::Pos(w) => members.push(w),
                Arg::Unknown(w) => self.unknown_option(c, w),
            }
        }
        if let Some(f) = &file
            && let Some(l) = f.literal()
            && l.split('/').next().is_some_and(|h| h.contains(':'))
        {
            self.refuse(
                &c.part,
                "tar -f HOST:FILE uses a remote shell",
                "use a local archive file",
            );
        }
        if create
            && let Some(f) = &file
            && f.literal().as_deref() != Some("-")
        {
            self.write_target(f, &c.cwd, &c.part, false);
        }
        if create {
            for m in members {
                if let Some(what) = self.secret_in(m, &c.cwd, true) {
                    self.refuse(
                        &c.part,
                        format!("archiving {} reaches {what}", m.text),
                        "archive files of the project",
                    );
                }
            }
        }
        if extract {
            let target = dir.unwrap_or_else(|| Word::quoted("."));
            self.write_target(&target, &c.cwd, &c.part, true);
        }
    }

    fn zip(&mut self, c: &Cmd) {
        if c.name == "unzip" {
            let parsed = parse_args(&c.args, "dxP", &[], false);
            let mut dir = Word::quoted(".");
            for a in parsed {
                if let Arg::Opt {
                    name,
                    value: Some(v),
                } = a
                    && name == "-d"
                {
                    dir = v.word();
                }
            }
            self.write_target(&dir, &c.cwd, &c.part, true);
            return;
        }
        let parsed = parse_args(
            &c.args,
            "bnPtxiOIZ",
            &[
                "unzip-command",
                "temp-path",
                "password",
                "suffixes",
                "exclude",
                "include",
                "output-file",
                "compression-method",
            ],
            false,
        );
        let mut archive = None;
        for a in &parsed {
            match a {
                Arg::Opt { name, .. } if name == "--unzip-command" || name == "-TT" => {
                    self.refuse(
                        &c.part,
                        "zip --unzip-command runs another program",
                        "use zip without it",
                    );
                }
                Arg::Opt {
                    name,
                    value: Some(v),
                } if name == "-O" || name == "--output-file" => {
                    self.write_target(&v.word(), &c.cwd, &c.part, false)
                }
                Arg::Pos(w) => {
                    if archive.is_none() {
                        archive = Some(*w);
                        self.write_target(w, &c.cwd, &c.part, false);
                    } else if let Some(what) = self.secret_in(w, &c.cwd, true) {
                        self.refuse(
                            &c.part,
                            format!("zipping {} reaches {what}", w.text),
                            "zip files of the project",
                        );
                    }
                }
                Arg::Unknown(w) => self.unknown_option(c, w),
                _ => {}
            }
        }
        // -TT is parsed as -T -T; a literal -TT/--unzip-command anywhere is refused.
        if c.args.iter().any(|w| {
            w.literal().is_some_and(|l| {
                l.starts_with("-TT")
                    || (l.starts_with('-') && !l.starts_with("--") && l.matches('T').count() > 1)
            })
        }) {
            self.refuse(
                &c.part,
                "zip -TT runs another program to test the archive",
                "use zip without -TT",
            );
        }
    }

    fn rsync(&mut self, c: &Cmd) {
        let parsed = parse_args(
            &c.args,
            "eBTM",
            &[
                "rsh",
                "rsync-path",
                "exclude",
                "include",
                "exclude-from",
                "include-from",
                "files-from",
                "filter",
                "temp-dir",
                "partial-dir",
                "compare-dest",
                "copy-dest",
                "link-dest",
                "backup-dir",
                "suffix",
                "chmod",
                "chown",
                "usermap",
                "groupmap",
                "log-file",
                "password-file",
                "block-size",
                "timeout",
                "contimeout",
                "port",
                "bwlimit",
                "max-size",
                "min-size",
                "remote-option",
            ],
            false,
        );
        let mut ops: Vec<&Word> = Vec::new();
        for a in &parsed {
            match a {
                Arg::Opt { name, .. }
                    if matches!(
                        name.as_str(),
                        "-e" | "--rsh" | "--rsync-path" | "-M" | "--remote-option"
                    ) =>
                {
                    self.refuse(
                        &c.part,
                        format!("rsync {name} runs another program"),
                        "copy locally with rsync -a SRC DEST or cp -r",
                    );
                }
                Arg::Opt {
                    name,
                    value: Some(v),
                } if name == "--log-file" || name == "--temp-dir" || name == "--backup-dir" => {
                    self.write_target(&v.word(), &c.cwd, &c.part, false)
                }
                Arg::Pos(w) => ops.push(w),
                Arg::Unknown(w) => self.unknown_option(c, w),
                _ => {}
            }
        }
        for w in &ops {
            let remote = w.literal().is_none_or(|l| {
                l.split('/').next().is_some_and(|h| h.contains(':')) || l.starts_with("rsync://")
            });
            if remote {
                self.refuse(
                    &c.part,
                    format!("rsync to or from {} uses a remote shell or daemon", w.text),
                    "copy between local directories",
                );
            }
        }
        if let Some((dest, srcs)) = ops.split_last() {
            self.write_target(dest, &c.cwd, &c.part, false);
            for s in srcs {
                if let Some(what) = self.secret_in(s, &c.cwd, true) {
                    self.refuse(
                        &c.part,
                        format!("copying {} reaches {what}", s.text),
                        "copy files of the project",
                    );
                }
            }
        }
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

/// `pkg@1.2.3` → `pkg`, `@scope/pkg@latest` → `@scope/pkg`.
fn strip_version(p: &str) -> String {
    let (scope, rest) = match p.strip_prefix('@') {
        Some(r) => ("@", r),
        None => ("", p),
    };
    let name = rest.split('@').next().unwrap_or(rest);
    format!("{scope}{name}")
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

fn process_group(pid: u32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Whether a URL points at this machine: http(s) to localhost, 127.x.y.z, [::1] or
/// 0.0.0.0, with an optional port.
pub(crate) fn loopback_url(u: &str) -> bool {
    if u.contains('\\') || u.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let rest = match u.split_once("://") {
        Some((scheme, rest)) => {
            if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
                return false;
            }
            rest
        }
        None => u,
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return false;
    }
    let (host, port) = if let Some(r) = authority.strip_prefix('[') {
        match r.split_once(']') {
            Some((h, p)) => (
                format!("[{h}]"),
                p.strip_prefix(':').unwrap_or(p).to_string(),
            ),
            None => return false,
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h.to_string(), p.to_string()),
            None => (authority.to_string(), String::new()),
        }
    };
    if !port.is_empty() && port.parse::<u16>().is_err() {
        return false;
    }
    let host = host.to_ascii_lowercase();
    if matches!(host.as_str(), "localhost" | "0.0.0.0" | "[::1]") {
        return true;
    }
    let parts: Vec<&str> = host.split('.').collect();
    parts.len() == 4
        && parts[0] == "127"
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.chars().all(|c| c.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
                && !(p.len() > 1 && p.starts_with('0'))
        })
}

/// Name patterns `find PROJECT -name P -delete` may remove from the project root:
/// build leftovers that git's and baton's own files never match.
const CLEANUP_PATTERNS: &[&str] = &[
    "*.pyc",
    "*.pyo",
    "*.o",
    "*.obj",
    "*.class",
    "*.orig",
    "*.rej",
    "*.swp",
    "*~",
    ".DS_Store",
    "*.tsbuildinfo",
];

impl Checker<'_> {
    /// Package operands of `npm install`/`pip install` that name a source other than
    /// the default registry (a URL, `git+…`, `github:…`, `user/repo`): refused unless
    /// `[policy] remotes` allows it.
    fn install_sources(&mut self, c: &Cmd, args: &[Word], tool: &str) {
        let mut skip_next = false;
        for w in args {
            if skip_next {
                skip_next = false;
                continue;
            }
            let Some(l) = w.literal() else { continue };
            if l.starts_with('-') {
                let name = l.split_once('=').map_or(l.as_str(), |(n, _)| n);
                let source_opt = matches!(
                    name,
                    "-i" | "--index-url"
                        | "--extra-index-url"
                        | "-f"
                        | "--find-links"
                        | "--registry"
                );
                if source_opt {
                    let value = match l.split_once('=') {
                        Some((_, v)) => Some(v.to_string()),
                        None => {
                            skip_next = true;
                            None
                        }
                    };
                    let idx = args.iter().position(|x| std::ptr::eq(x, w)).map(|p| p + 1);
                    let value =
                        value.or_else(|| idx.and_then(|p| args.get(p)).and_then(|x| x.literal()));
                    if !value.as_deref().is_some_and(|v| self.remote_allowed(v)) {
                        self.refuse(
                            &c.part,
                            format!("{tool} {name} installs from another index or location"),
                            "install from the default registry; other sources need the user to list them in [policy] remotes",
                        );
                    }
                }
                if matches!(
                    name,
                    "-r" | "--requirement" | "-c" | "--constraint" | "-e" | "--editable"
                ) && !l.contains('=')
                {
                    skip_next = name != "-e" && name != "--editable";
                }
                continue;
            }
            if remote_source(&l)
                && !self.remote_allowed(strip_pkg_name(&l).trim_start_matches("git+"))
            {
                self.refuse(
                    &c.part,
                    format!("{tool} install from {l}: a URL or repository, not the package registry"),
                    "install packages by name from the default registry; other sources need the user to list them in [policy] remotes",
                );
            }
        }
    }

    pub(crate) fn pip(&mut self, c: &Cmd) {
        let sub = c
            .args
            .iter()
            .position(|w| !w.literal().is_some_and(|l| l.starts_with('-')));
        let Some(i) = sub else { return };
        match c.args[i].literal().as_deref() {
            Some("install" | "download" | "wheel") => {
                self.install_sources(c, &c.args[i + 1..], "pip")
            }
            Some(_) => {}
            None => self.refuse(
                &c.part,
                "pip with a computed subcommand",
                "write the pip subcommand literally",
            ),
        }
    }
}

/// Whether a package operand names a source other than the registry.
fn remote_source(l: &str) -> bool {
    let spec = strip_pkg_name(l);
    if spec.contains("://")
        || spec.starts_with("git+")
        || spec.starts_with("git@")
        || ["github:", "gitlab:", "bitbucket:", "gist:", "git:"]
            .iter()
            .any(|p| spec.starts_with(p))
    {
        return true;
    }
    // npm's `user/repo` GitHub shorthand (not `@scope/pkg`, not a path).
    !spec.starts_with('@')
        && !spec.starts_with('.')
        && !spec.starts_with('/')
        && !spec.starts_with("file:")
        && !spec.starts_with('~')
        && spec.contains('/')
        && !spec.contains(".tgz")
        && !spec.ends_with(".whl")
        && !spec.ends_with(".tar.gz")
        && !spec.ends_with(".zip")
        && !spec.contains('[')
}

/// `name@URL` (npm alias or pip direct reference `name @ URL`) → the URL part.
fn strip_pkg_name(l: &str) -> &str {
    match l.split_once('@') {
        Some((name, rest))
            if !name.is_empty()
                && (rest.trim_start().contains("://") || rest.starts_with("git+")) =>
        {
            rest.trim_start()
        }
        _ => l,
    }
}

/// What to do instead of a refused `kill`.
const KILL_INSTEAD: &str = "stop only processes this run started: kill $! or kill %1 right after starting one, kill $(jobs -p), or kill PID / kill -TERM -PID with the number the Bash tool printed for a run_in_background command; servers started in the background are stopped when the session ends";

#[cfg(test)]
mod tests {
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
