//! What a command shows, read without running it: whether a call only inspects
//! the change (git's history, listings, reading sources) rather than exercising
//! a feature, whether a check only tests that paths exist, and which of the files
//! a session changed a check runs or reads. The proof gates and the verifier's
//! judge ask these; see `docs/verification.md`.

use globset::{Glob, GlobSet, GlobSetBuilder};
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

/// Programs that run the file they are given (interpreters and test runners):
/// the paths among their arguments are what a check runs.
const RUNNERS: &[&str] = &[
    "bash",
    "sh",
    "zsh",
    "dash",
    "python",
    "python3",
    "node",
    "deno",
    "bun",
    "ruby",
    "perl",
    "php",
    "npx",
    "pytest",
    "jest",
    "vitest",
    "mocha",
    "playwright",
    "tsx",
    "ts-node",
    "source",
    ".",
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

/// A change a session made to one path (`git diff --name-status --no-renames`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// `A`, `M`, `D` or `T`.
    pub status: char,
    /// The path, relative to the project.
    pub path: String,
}

/// What a check reads, beyond the code it tests: the paths its command names,
/// the project's test files and runner configuration, and `[verify] protect`.
pub struct Inputs {
    test_files: GlobSet,
    configs: GlobSet,
    protect: GlobSet,
}

/// Files that are tests by their place or name, in most ecosystems.
const TEST_FILES: &[&str] = &[
    "**/test/**",
    "**/tests/**",
    "**/spec/**",
    "**/specs/**",
    "**/__tests__/**",
    "**/e2e/**",
    "**/cypress/**",
    "**/*.test.*",
    "**/*.spec.*",
    "**/*_test.*",
    "**/*_spec.*",
    "**/test_*.py",
];

/// Test runners' configuration and shared fixtures: a change to one can make any
/// test pass.
const RUNNER_CONFIGS: &[&str] = &[
    "**/playwright.config.*",
    "**/jest.config.*",
    "**/vitest.config.*",
    "**/vitest.workspace.*",
    "**/cypress.config.*",
    "**/karma.conf.*",
    "**/.mocharc*",
    "**/pytest.ini",
    "**/conftest.py",
    "**/tox.ini",
    "**/phpunit.xml*",
    "**/.rspec",
];

fn set(globs: &[&str]) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        if let Ok(g) = Glob::new(g) {
            b.add(g);
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

impl Inputs {
    /// The inputs every check has, plus `protect` (`[verify] protect`, globs
    /// relative to the project; one that does not parse is left out).
    pub fn new(protect: &[String]) -> Self {
        let protect: Vec<&str> = protect.iter().map(String::as_str).collect();
        Self {
            test_files: set(TEST_FILES),
            configs: set(RUNNER_CONFIGS),
            protect: set(&protect),
        }
    }

    /// The changes among `changes` that touch what `command` runs: a script or
    /// test file it runs (an interpreter's or test runner's argument, or the
    /// program itself, changed, added or deleted; an existing file beneath such a
    /// directory, changed or deleted), an existing test file changed or deleted (a
    /// new one changes no existing test), a runner's configuration or a
    /// `protect`ed file in any way, and a package manifest or Makefile when the
    /// command runs its scripts or targets (`npm test`, `make check`). Each with
    /// why. A file the check only reads (the feature's output, a page) is the
    /// work itself, not the check's.
    pub fn touched(&self, command: &str, changes: &[Change]) -> Vec<String> {
        let named = run_paths(command);
        let runs_scripts = runs_scripts(command);
        let mut out = Vec::new();
        for c in changes {
            let p = c.path.as_str();
            let existing = c.status != 'A';
            let why = if named.iter().any(|n| n == p) {
                Some("its command runs it")
            } else if existing
                && named
                    .iter()
                    .any(|n| p.starts_with(&format!("{}/", n.trim_end_matches('/'))))
            {
                Some("it lies in a directory its command runs")
            } else if self.configs.is_match(p) {
                Some("it configures the test runner")
            } else if self.protect.is_match(p) {
                Some("[verify] protect names it")
            } else if existing && self.test_files.is_match(p) {
                Some("it is an existing test")
            } else if runs_scripts.iter().any(|m| file_name(p) == *m) {
                Some("its command runs the scripts it defines")
            } else {
                None
            };
            if let Some(why) = why {
                let verb = match c.status {
                    'A' => "added",
                    'D' => "deleted",
                    _ => "changed",
                };
                out.push(format!("{verb} {p} ({why})"));
            }
        }
        out
    }
}

fn file_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Whether a word reads as a relative path (no expansion, option or scheme).
fn path_like(w: &str) -> Option<String> {
    let ok = !w.is_empty()
        && !w.starts_with('-')
        && !w.starts_with('/')
        && !w.contains(['$', '`', '*', '?', '=', ' ', '\'', '"'])
        && !w.contains("://")
        && (w.contains('/') || w.contains('.'));
    let p = w.trim_start_matches("./").trim_end_matches('/');
    (ok && !p.is_empty() && p != "." && p != "..").then(|| p.to_string())
}

/// The relative paths a command runs: a program given by its path
/// (`./tests/run.sh`), and the path arguments of interpreters and test runners
/// (`bash tests/t4.sh`, `npx playwright test test/a.spec.js`), `./` taken off.
pub fn run_paths(command: &str) -> Vec<String> {
    let Some(cmds) = baton_policy::simple::commands(command) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for words in &cmds {
        let (name, args) = program(words);
        let at = words.len() - args.len() - 1;
        let mut found = Vec::new();
        if words.get(at).is_some_and(|w| w.contains('/')) {
            found.extend(words.get(at).and_then(|w| path_like(w)));
        }
        if RUNNERS.contains(&name) {
            found.extend(args.iter().filter_map(|a| path_like(a)));
        }
        for p in found {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
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

    #[test]
    fn a_check_is_touched_by_its_tests_its_config_and_its_scripts() {
        let inputs = Inputs::new(&["fixtures/**".to_string()]);
        let ch = |status: char, path: &str| Change {
            status,
            path: path.into(),
        };
        let changes = vec![
            ch('M', "tests/t4.sh"),
            ch('M', "src/app.js"),
            ch('A', "tests/t9.sh"),
            ch('M', "playwright.config.ts"),
            ch('A', "fixtures/data.json"),
            ch('M', "package.json"),
        ];
        let t = inputs.touched("bash tests/t4.sh", &changes);
        assert_eq!(
            t,
            vec![
                "changed tests/t4.sh (its command runs it)",
                "changed playwright.config.ts (it configures the test runner)",
                "added fixtures/data.json ([verify] protect names it)",
            ]
        );
        // A new test beside it changes no existing test; `npm test` reads the manifest.
        let t = inputs.touched(
            "npm test",
            &[ch('A', "tests/t9.sh"), ch('M', "package.json")],
        );
        assert_eq!(
            t,
            vec!["changed package.json (its command runs the scripts it defines)"]
        );
        let t = inputs.touched(
            "npx playwright test test/task-3.spec.js",
            &[ch('M', "test/task-3.spec.js"), ch('M', "src/index.html")],
        );
        assert_eq!(t.len(), 1, "{t:?}");
        assert!(
            inputs
                .touched("curl -fsS http://127.0.0.1:3000/", &[ch('M', "src/a.js")])
                .is_empty()
        );
        // What a check only reads is the feature's own output: the work itself.
        assert!(
            inputs
                .touched("grep -qx 'page F01' src/F01.txt", &[ch('A', "src/F01.txt")])
                .is_empty()
        );
        // A test the check runs, planted by the session, is touched.
        let t = inputs.touched("bash checks/t5.sh", &[ch('A', "checks/t5.sh")]);
        assert_eq!(t, vec!["added checks/t5.sh (its command runs it)"]);
    }
}
