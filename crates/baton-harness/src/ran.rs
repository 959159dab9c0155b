//! What a check's run really executed, where its runner can say. A check
//! proves only what it names: Playwright's file arguments are patterns (regular
//! expressions matched against each test file's path), so `npx playwright test
//! tests/f3.spec.js` also runs `tests/f3.spec.js-x/a.spec.js`, and in one runner
//! process one file can make another's result. When baton replays such a check
//! with the work, it asks Playwright's JSON reporter what ran
//! ([`Playwright::observing`]) and reads it back ([`Playwright::judge`]): a run
//! that executed a test file the check does not name, or no test at all,
//! proves nothing.
//!
//! Observed: one Playwright run whose file arguments are each a file or folder
//! of the clean checkout. Other checks (a pipeline, a runner that cannot report,
//! file arguments that are only patterns) are judged by their exit status alone.

use std::path::{Path, PathBuf};

/// The JSON report's name, in the clean checkout the check runs in.
pub const REPORT: &str = ".baton-ran.json";

/// Options of `playwright test` that take a value (the value is not a file).
const VALUED: &[&str] = &[
    "-c",
    "--config",
    "-g",
    "--grep",
    "--grep-invert",
    "-j",
    "--workers",
    "--project",
    "--reporter",
    "--retries",
    "--repeat-each",
    "--timeout",
    "--max-failures",
    "--shard",
    "--output",
    "--global-timeout",
    "--tsconfig",
    "--update-snapshots",
    "--trace",
];

/// A check that is one Playwright run naming test files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Playwright {
    /// The check as written.
    pub command: String,
    /// The file arguments it names, as written (relative to the project).
    pub named: Vec<String>,
}

impl Playwright {
    /// `command` when it is one `playwright test` run (through `npx` or a path
    /// to the runner) with at least one file argument; `None` otherwise.
    pub fn of(command: &str) -> Option<Self> {
        let cmds = baton_policy::simple::commands(command)?;
        let [words] = cmds.as_slice() else {
            return None;
        };
        let mut w = words.iter().map(String::as_str).peekable();
        if w.peek() == Some(&"npx") {
            w.next();
            while w.peek().is_some_and(|a| a.starts_with('-')) {
                w.next();
            }
        }
        let runner = w.next()?;
        if runner != "playwright" && !runner.ends_with("/playwright") {
            return None;
        }
        if w.next()? != "test" {
            return None;
        }
        let mut named = Vec::new();
        while let Some(a) = w.next() {
            if VALUED.contains(&a) {
                w.next();
            } else if !a.starts_with('-') {
                named.push(a.to_string());
            }
        }
        (!named.is_empty()).then(|| Self {
            command: command.to_string(),
            named,
        })
    }

    /// The command that runs the named files only and also writes
    /// Playwright's JSON report to [`REPORT`] in `world` (its list reporter
    /// still prints what it did): each file argument becomes a pattern that
    /// matches that file (or folder) of `world` alone, so no other file is
    /// loaded beside it. `None` when a file argument is not a file or folder of
    /// `world` (a pattern: what it names cannot be told apart from what it
    /// matches) or cannot be found as a word of the command.
    pub fn observing(&self, world: &Path) -> Option<String> {
        let mut command = self.command.clone();
        for n in &self.named {
            let (file, at) = location(n);
            let path = world.join(file);
            if !path.exists() {
                return None;
            }
            let anchored = format!(
                "/^{}{}/{at}",
                escape(path.display().to_string().trim_end_matches('/')),
                if path.is_dir() { "/" } else { "$" }
            );
            command = replace_word(
                &command,
                n,
                &baton_agent::cli_session::shell_quote(&anchored),
            )?;
        }
        let report = world.join(REPORT).display().to_string();
        let q = baton_agent::cli_session::shell_quote(&report);
        Some(format!(
            "PLAYWRIGHT_JSON_OUTPUT_NAME={q} PLAYWRIGHT_JSON_OUTPUT_FILE={q} {command} --reporter=list,json"
        ))
    }

    /// Why the run whose JSON `report` was written in `world` proves nothing:
    /// it ran a test file the check does not name, or no test; `None` when it
    /// ran tests of the named files only. A report that is missing or not
    /// Playwright's is itself a reason.
    pub fn judge(&self, world: &Path, report: Option<&[u8]>) -> Option<String> {
        let Some(bytes) = report else {
            return Some(
                "Playwright wrote no report of what it ran, so what passed is not known".into(),
            );
        };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(bytes) else {
            return Some("Playwright's report of what it ran could not be read".into());
        };
        let root = v["config"]["rootDir"]
            .as_str()
            .map(PathBuf::from)
            .unwrap_or_else(|| world.to_path_buf());
        let world = world.canonicalize().unwrap_or_else(|_| world.to_path_buf());
        let ran = collect(&v);
        let named: Vec<PathBuf> = self
            .named
            .iter()
            .map(|n| world.join(location(n).0))
            .collect();
        let mut other: Vec<String> = Vec::new();
        let mut any = false;
        for file in ran {
            let path = root.join(&file);
            let path = path.canonicalize().unwrap_or(path);
            if named.iter().any(|n| path == *n || path.starts_with(n)) {
                any = true;
            } else {
                let shown = path
                    .strip_prefix(&world)
                    .map(|p| p.display().to_string())
                    .unwrap_or(file);
                if !other.contains(&shown) {
                    other.push(shown);
                }
            }
        }
        if !other.is_empty() {
            other.truncate(5);
            return Some(format!(
                "Playwright also ran {}, which the check does not name (its file arguments are patterns, and in one runner one file can make another's result): a check proves only what it names",
                other.join(", ")
            ));
        }
        (!any).then(|| {
            format!(
                "Playwright ran no test of {} (every test skipped or none found), so the pass shows nothing",
                self.named.join(", ")
            )
        })
    }

    /// Work files (paths relative to the project) that the check's file
    /// arguments also match, as Playwright reads them (a pattern inside the
    /// path), other than the named files themselves: a file the runner would
    /// load beside the named one. Compared literally and ignoring case, the
    /// common form of a file argument.
    pub fn also_matched<'a>(&self, work: &'a [String]) -> Vec<&'a str> {
        work.iter()
            .map(String::as_str)
            .filter(|w| {
                let lw = w.to_lowercase();
                self.named.iter().any(|n| {
                    let n = location(n).0.trim_start_matches("./");
                    let ln = n.to_lowercase();
                    lw != ln
                        && !lw.starts_with(&format!("{}/", ln.trim_end_matches('/')))
                        && lw.contains(&ln)
                })
            })
            .collect()
    }
}

/// A file argument split into its file and the `:line` or `:line:column`
/// Playwright reads after it (`""` when there is none).
fn location(arg: &str) -> (&str, &str) {
    let mut file = arg;
    for _ in 0..2 {
        match file.rsplit_once(':') {
            Some((f, n)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => file = f,
            _ => break,
        }
    }
    (file, &arg[file.len()..])
}

/// `s` with the characters a regular expression gives a meaning escaped.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\^$.|?*+()[]{}/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `command` with its first whitespace-delimited word that is `word` (bare or
/// in quotes) replaced by `by`, the rest of its text as it was; `None` when
/// no word is.
fn replace_word(command: &str, word: &str, by: &str) -> Option<String> {
    let quoted = [word.to_string(), format!("'{word}'"), format!("\"{word}\"")];
    let mut start = None;
    for (i, c) in command
        .char_indices()
        .chain(std::iter::once((command.len(), ' ')))
    {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                if quoted.iter().any(|q| q == &command[s..i]) {
                    return Some(format!("{}{by}{}", &command[..s], &command[i..]));
                }
                start = None;
            }
            _ => {}
        }
    }
    None
}

/// Every test file of Playwright's JSON `report` with a test that ran (a
/// result whose status is not `skipped`).
fn collect(report: &serde_json::Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for suite in report["suites"].as_array().into_iter().flatten() {
        let mut specs = Vec::new();
        crate::batch::playwright_specs(suite, &mut specs);
        for spec in specs {
            let ran = spec["tests"].as_array().into_iter().flatten().any(|t| {
                t["results"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|r| r["status"].as_str() != Some("skipped"))
            });
            if let (true, Some(file)) = (ran, spec["file"].as_str().or(suite["file"].as_str()))
                && !out.iter().any(|f| f == file)
            {
                out.push(file.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_playwright_run_naming_files_is_observed_and_others_are_not() {
        let p =
            Playwright::of("npx playwright test tests/f3.spec.js --workers 1 -g 'adds'").unwrap();
        assert_eq!(p.named, vec!["tests/f3.spec.js"]);
        let p = Playwright::of("node_modules/.bin/playwright test e2e/a.spec.ts:12").unwrap();
        assert_eq!(p.named, vec!["e2e/a.spec.ts:12"]);
        for c in [
            "npx playwright test",
            "npx playwright test && echo ok",
            "npm test",
            "npx jest tests/a.test.js",
            "npx playwright show-report",
        ] {
            assert_eq!(Playwright::of(c), None, "{c}");
        }
    }

    #[test]
    fn a_report_of_other_files_or_of_nothing_proves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path();
        std::fs::create_dir_all(w.join("tests/f3.spec.js-x")).unwrap();
        std::fs::write(w.join("tests/f3.spec.js"), "").unwrap();
        let p = Playwright::of("npx playwright test tests/f3.spec.js").unwrap();
        let observed = p.observing(w).unwrap();
        assert!(observed.contains("--reporter=list,json"), "{observed}");
        let anchored = format!(
            "'/^{}\\/tests\\/f3\\.spec\\.js$/'",
            escape(&w.display().to_string())
        );
        assert!(observed.contains(&anchored), "{observed}");
        assert_eq!(
            Playwright::of("npx playwright test f3")
                .unwrap()
                .observing(w),
            None
        );
        let report = |files: &[(&str, &str)]| {
            let suites: Vec<serde_json::Value> = files
                .iter()
                .map(|(f, status)| {
                    serde_json::json!({"title": f, "file": f, "specs": [
                        {"title": "t", "file": f, "tests": [{"results": [{"status": status}]}]}
                    ], "suites": []})
                })
                .collect();
            serde_json::json!({"config": {"rootDir": w.join("tests")}, "suites": suites})
                .to_string()
                .into_bytes()
        };
        assert_eq!(p.judge(w, Some(&report(&[("f3.spec.js", "passed")]))), None);
        let why = p
            .judge(
                w,
                Some(&report(&[
                    ("f3.spec.js", "passed"),
                    ("f3.spec.js-x/a.spec.js", "passed"),
                ])),
            )
            .unwrap();
        assert!(
            why.contains("also ran tests/f3.spec.js-x/a.spec.js"),
            "{why}"
        );
        let why = p
            .judge(w, Some(&report(&[("f3.spec.js", "skipped")])))
            .unwrap();
        assert!(why.contains("ran no test"), "{why}");
        assert!(p.judge(w, None).unwrap().contains("no report"));
        assert!(
            p.judge(w, Some(b"not json"))
                .unwrap()
                .contains("could not be read")
        );
    }

    #[test]
    fn a_file_argument_keeps_its_line_and_column_apart() {
        assert_eq!(location("e2e/a.spec.ts"), ("e2e/a.spec.ts", ""));
        assert_eq!(location("e2e/a.spec.ts:12"), ("e2e/a.spec.ts", ":12"));
        assert_eq!(location("e2e/a.spec.ts:12:5"), ("e2e/a.spec.ts", ":12:5"));
    }

    #[test]
    fn a_word_is_replaced_in_place() {
        assert_eq!(
            replace_word("PORT=1 npx playwright test  'a.js' -g 'x y'", "a.js", "B").unwrap(),
            "PORT=1 npx playwright test  B -g 'x y'"
        );
        assert_eq!(replace_word("npx playwright test ab.js", "a.js", "B"), None);
    }

    #[test]
    fn work_the_file_argument_also_matches_is_named() {
        let p = Playwright::of("npx playwright test tests/f3.spec.js").unwrap();
        let work = vec![
            "tests/f3.spec.js".to_string(),
            "tests/F3.spec.js-x/a.spec.js".to_string(),
            "app/app.js".to_string(),
        ];
        assert_eq!(p.also_matched(&work), vec!["tests/F3.spec.js-x/a.spec.js"]);
    }
}
