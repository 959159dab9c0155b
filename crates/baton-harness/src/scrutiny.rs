//! What a command shows, read without running it: whether a call only inspects
//! the change (git's history, listings, reading sources) rather than exercising
//! a feature, whether a check only tests that paths exist, and whether it runs a
//! build file's targets. The proof gates and the verifier's judge ask these;
//! what a check really depends on is never read from its text but replayed in
//! clean worlds ([`crate::world`]). See `docs/verification.md`.

use serde_json::Value;

/// git subcommands that only read the repository.
const GIT_READS: &[&str] = &[
    "diff",
    "log",
    "show",
    "status",
    "blame",
    "ls-files",
    "ls-tree",
    "rev-parse",
    "rev-list",
    "shortlog",
    "describe",
    "cat-file",
    "grep",
    "whatchanged",
];

/// Programs that list or describe files without running anything of the project.
const LISTINGS: &[&str] = &[
    "ls", "find", "tree", "stat", "file", "wc", "du", "pwd", "echo", "printf", "true", "realpath",
    "readlink", "basename", "dirname", "which", "sleep", "cat", "head", "tail", "less", "more",
    "sort", "uniq", "nl",
];

/// `test`/`[` flags that ask only whether a path exists (or of what kind it is).
const PATH_TESTS: &[&str] = &[
    "-e", "-f", "-d", "-s", "-r", "-w", "-x", "-L", "-h", "-p", "-S",
];

/// The shell command of a call, for the tools that run one (baton's and Claude
/// Code's `Bash`, Codex's `exec_command`), out of the `bash -lc '…'` Codex wraps
/// its commands in.
pub fn command_of_call(tool: &str, input: &Value) -> Option<String> {
    let command = shell_command(tool, input)?;
    Some(unwrap_shell(&command).unwrap_or(command))
}

/// The script of `bash -c SCRIPT` (or `-lc`, `sh -c`), as the shell would read
/// its words; `None` for any other command.
fn unwrap_shell(command: &str) -> Option<String> {
    let words = split_words(command)?;
    match words.as_slice() {
        [shell, flag, script]
            if matches!(
                shell.rsplit('/').next(),
                Some("bash" | "sh" | "zsh" | "dash")
            ) && matches!(flag.as_str(), "-c" | "-lc" | "-cl") =>
        {
            Some(script.clone())
        }
        _ => None,
    }
}

/// `s` split into words as a POSIX shell quotes them (single quotes, double
/// quotes with their escapes, backslashes); `None` on an unclosed quote.
fn split_words(s: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur: Option<String> = None;
    let mut it = s.chars();
    while let Some(c) = it.next() {
        match c {
            '\'' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match it.next()? {
                        '\'' => break,
                        ch => w.push(ch),
                    }
                }
            }
            '"' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match it.next()? {
                        '"' => break,
                        '\\' => match it.next()? {
                            e @ ('"' | '\\' | '$' | '`') => w.push(e),
                            '\n' => {}
                            e => {
                                w.push('\\');
                                w.push(e);
                            }
                        },
                        ch => w.push(ch),
                    }
                }
            }
            '\\' => {
                if let Some(e) = it.next() {
                    cur.get_or_insert_with(String::new).push(e);
                }
            }
            c if c.is_whitespace() => {
                if let Some(w) = cur.take() {
                    words.push(w);
                }
            }
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(cur);
    Some(words)
}

fn shell_command(tool: &str, input: &Value) -> Option<String> {
    match tool {
        "Bash" => input["command"].as_str().map(str::to_string),
        "exec_command" => match &input["cmd"] {
            Value::String(s) => Some(s.clone()),
            Value::Array(a) => Some(
                a.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        },
        _ => None,
    }
}

/// Whether a call only inspects (reads code, history or listings) and so is no
/// work on a feature: the file tools, and shell commands every part of which is a
/// read of git, a listing or a path test. A browser call is never inspection.
pub fn is_inspection(tool: &str, input: &Value) -> bool {
    match tool {
        "Read" | "Glob" | "Grep" | "LS" | "TodoWrite" | "view_image" => true,
        t if t.starts_with("mcp__") => false,
        _ => command_of_call(tool, input).is_some_and(|c| inspects(&c)),
    }
}

/// Whether every simple command of `command` reads git, lists files or tests
/// paths (a command that does not parse is not called inspection).
pub fn inspects(command: &str) -> bool {
    every_command(command, |name, args| match name {
        "git" => args
            .iter()
            .find(|a| !a.starts_with('-'))
            .is_some_and(|sub| GIT_READS.contains(&sub.as_str())),
        "test" | "[" | "[[" => path_test(args),
        n => LISTINGS.contains(&n) || n == "cd",
    })
}

/// Whether `command` parses, runs something, and `each` holds for every simple
/// command of it (its program's name and arguments).
fn every_command(command: &str, each: impl Fn(&str, &[String]) -> bool) -> bool {
    let Some(cmds) = baton_policy::simple::commands(command) else {
        return false;
    };
    !cmds.is_empty()
        && cmds.iter().all(|words| {
            let (name, args) = program(words);
            each(name, args)
        })
}

/// Whether `command` only tests that paths exist: every simple command a path
/// test (`test -f`, `[ -d … ]`) or a listing (`ls`, `stat`). Such a check says
/// nothing of behaviour, so it proves no flip.
pub fn existence_only(command: &str) -> bool {
    every_command(command, |name, args| match name {
        "test" | "[" | "[[" => path_test(args),
        "ls" | "stat" | "file" | "realpath" | "readlink" | "true" | "cd" => true,
        _ => false,
    })
}

/// The program of a simple command and its arguments, past `sudo`-free wrappers
/// that only set things up (`env`, `command`, `builtin`).
fn program(words: &[String]) -> (&str, &[String]) {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        match w.as_str() {
            "env" | "command" | "builtin" | "time" | "!" => i += 1,
            w if w.contains('=') && !w.starts_with('-') && i > 0 => i += 1,
            _ => break,
        }
    }
    let name = words
        .get(i)
        .map_or("", |w| w.rsplit('/').next().unwrap_or(w));
    (name, words.get(i + 1..).unwrap_or(&[]))
}

/// Whether a `test`/`[` expression asks only about paths (`-f x`, `! -e y`, `-d z -a -f w`).
fn path_test(args: &[String]) -> bool {
    let mut saw_test = false;
    let mut it = args
        .iter()
        .filter(|a| !matches!(a.as_str(), "]" | "]]" | "!" | "-a" | "-o" | "&&" | "||"));
    while let Some(a) = it.next() {
        if PATH_TESTS.contains(&a.as_str()) {
            saw_test = true;
            it.next();
        } else {
            return false;
        }
    }
    saw_test
}

/// Whether `command` runs a build file's targets (`make`, `just`).
pub fn runs_build(command: &str) -> bool {
    runs_scripts(command)
        .iter()
        .any(|m| !matches!(*m, "package.json"))
}

/// The manifests whose scripts or targets `command` runs.
fn runs_scripts(command: &str) -> Vec<&'static str> {
    let Some(cmds) = baton_policy::simple::commands(command) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for words in &cmds {
        let (name, args) = program(words);
        let m: &[&'static str] = match name {
            "npm" | "yarn" | "pnpm" | "bun" if !args.is_empty() => &["package.json"],
            "make" => &["Makefile", "makefile", "GNUmakefile"],
            "just" => &["justfile", "Justfile"],
            "cargo" if args.first().is_some_and(|a| a == "make") => &["Makefile.toml"],
            _ => &[],
        };
        out.extend_from_slice(m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inspection_is_reading_not_running() {
        let bash = |c: &str| is_inspection("Bash", &json!({ "command": c }));
        assert!(bash("git diff --stat abc HEAD"));
        assert!(bash("git status && git log -3 --oneline | head"));
        assert!(bash("git diff abc HEAD -- src | head -80"));
        assert!(bash("ls -la src && test -f src/x.txt"));
        assert!(is_inspection("Read", &json!({"file_path": "a"})));
        assert!(bash("cat src/x.txt"));
        assert!(!bash("grep -qx 'feature 1' src/feature1.txt"));
        assert!(!bash("./todo add milk && ./todo list"));
        assert!(!bash("git diff && npm test"));
        assert!(!bash("curl -fsS http://127.0.0.1:3000/"));
        assert!(!is_inspection(
            "mcp__playwright__browser_navigate",
            &json!({})
        ));
        assert!(is_inspection(
            "exec_command",
            &json!({"cmd": "git diff --stat"})
        ));
    }

    #[test]
    fn existence_checks_are_told_from_behaviour() {
        assert!(existence_only("test -f src/bye.txt"));
        assert!(existence_only("[ -s out.txt ] && ls dist/index.html"));
        assert!(existence_only("test -e a -a -d b"));
        assert!(!existence_only("grep -q bye src/bye.txt"));
        assert!(!existence_only("test \"$(cat a)\" = b"));
        assert!(!existence_only("bash tests/t4.sh"));
    }
}
