//! Checks that share a test runner run as one (`[verify.batch]`): the checks of
//! the shape `check` (`npx playwright test {file}`) run as one `command` over all
//! their files, and the runner's report says which file passed. A Node, a runner
//! and a browser started once instead of once a check.
//!
//! The report decides only passes: a file it reports as passed, with at least
//! one test and no error of the run as a whole, passes. Everything else, a file
//! that failed, one the report does not name or names ambiguously, every file of
//! a batch whose report is missing or unreadable, runs alone as before, for its
//! own verdict and its own output. A failing batch never makes a check pass.

use std::collections::BTreeMap;
use std::path::Path;

use baton_config::{BatchConfig, ReportFormat};
use serde_json::Value;

/// How a checker batches: the shapes it knows (`[verify.batch]` first, then
/// Playwright's) and where their reports go (a directory the checks' sandbox may
/// write).
#[derive(Debug, Clone)]
pub struct Batching {
    /// The batches, tried in order; a check joins the first whose shape it has.
    pub configs: Vec<BatchConfig>,
    /// Where reports are written.
    pub temp: std::path::PathBuf,
}

impl Batching {
    /// `[verify.batch]` if any, then Playwright's shape, reporting into `temp`.
    pub fn of(configured: Option<&BatchConfig>, temp: std::path::PathBuf) -> Self {
        let mut configs: Vec<BatchConfig> = configured.into_iter().cloned().collect();
        let pw = BatchConfig::playwright();
        if !configs.iter().any(|c| c.check == pw.check) {
            configs.push(pw);
        }
        Self { configs, temp }
    }
}

/// The file a check names, when the check has the batch's shape (`check` with
/// `{file}` one plain path: no quote, space or shell character), else `None`.
pub fn file_of(cfg: &BatchConfig, command: &str) -> Option<String> {
    let (before, after) = cfg.check.split_once("{file}")?;
    let file = command.trim().strip_prefix(before)?.strip_suffix(after)?;
    let plain = !file.is_empty()
        && !file.starts_with('-')
        && file
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/-+@".contains(c));
    plain.then(|| file.to_string())
}

/// The batch's command for `files`, writing its report to `report`.
pub fn command_for(cfg: &BatchConfig, files: &[String], report: &Path) -> String {
    cfg.command.replace("{files}", &files.join(" ")).replace(
        "{report}",
        &baton_agent::cli_session::shell_quote(&report.display().to_string()),
    )
}

/// What the report says of each of `files` that it names unambiguously: passed
/// or not, and how long its tests took (ms) when it says. A report that is not
/// JSON, or that names an error of the run as a whole, says nothing.
pub fn results(
    format: ReportFormat,
    text: &str,
    files: &[String],
) -> BTreeMap<String, (bool, Option<u64>)> {
    let Ok(report) = serde_json::from_str::<Value>(text) else {
        return BTreeMap::new();
    };
    let entries = match format {
        ReportFormat::Playwright => playwright(&report),
        ReportFormat::Jest => jest(&report),
    };
    let Some(entries) = entries else {
        return BTreeMap::new();
    };
    let mut out = BTreeMap::new();
    for file in files {
        let named: Vec<&Entry> = entries
            .iter()
            .filter(|e| same_file(&e.file, file))
            .collect();
        // One entry, naming only this file of the batch.
        if let [e] = named.as_slice()
            && files.iter().filter(|f| same_file(&e.file, f)).count() == 1
        {
            out.insert(file.clone(), (e.passed, e.ms));
        }
    }
    out
}

/// The report at `path` (in a directory baton made), read without following a
/// link or blocking on a FIFO in its place; at most 64 MiB.
pub fn read_report(path: &Path) -> Option<String> {
    let bytes =
        baton_records::beneath::read_regular(path, baton_records::beneath::MAX_READ).ok()?;
    String::from_utf8(bytes).ok()
}

/// One file of a report.
struct Entry {
    file: String,
    passed: bool,
    ms: Option<u64>,
}

/// Whether a report's name for a file (relative to the runner's test directory,
/// or absolute) and a check's (relative to the project) are the same file.
fn same_file(reported: &str, checked: &str) -> bool {
    let r = reported.trim_start_matches("./");
    let c = checked.trim_start_matches("./");
    r == c || r.ends_with(&format!("/{c}")) || c.ends_with(&format!("/{r}"))
}

/// Playwright's JSON report: `suites` by file, each with its `specs` (and nested
/// `suites`); a file passes when it has a spec and every spec is `ok`. `None`
/// when the run as a whole reports errors (a config or web server that failed).
fn playwright(report: &Value) -> Option<Vec<Entry>> {
    if report["errors"].as_array().is_some_and(|e| !e.is_empty()) {
        return None;
    }
    let mut entries = Vec::new();
    for suite in report["suites"].as_array()? {
        let Some(file) = suite["file"].as_str() else {
            continue;
        };
        let mut all = Vec::new();
        playwright_specs(suite, &mut all);
        let ms: u64 = all
            .iter()
            .flat_map(|s| s["tests"].as_array().into_iter().flatten())
            .flat_map(|t| t["results"].as_array().into_iter().flatten())
            .filter_map(|r| r["duration"].as_u64())
            .sum();
        entries.push(Entry {
            file: file.to_string(),
            passed: !all.is_empty() && all.iter().all(|s| s["ok"] == Value::Bool(true)),
            ms: Some(ms),
        });
    }
    Some(entries)
}

/// Every spec of `suite` of Playwright's JSON report, its nested suites' too.
pub(crate) fn playwright_specs<'v>(suite: &'v Value, out: &mut Vec<&'v Value>) {
    out.extend(suite["specs"].as_array().into_iter().flatten());
    for s in suite["suites"].as_array().into_iter().flatten() {
        playwright_specs(s, out);
    }
}

/// Jest's (and Vitest's) JSON report: `testResults`, one a file (`name`), each
/// with its `status` and `assertionResults`; a file passes when its status is
/// `passed` and it has a test, every one passed or skipped.
fn jest(report: &Value) -> Option<Vec<Entry>> {
    let mut entries = Vec::new();
    for r in report["testResults"].as_array()? {
        let Some(file) = r["name"].as_str() else {
            continue;
        };
        let tests = r["assertionResults"].as_array();
        let passed = r["status"] == "passed"
            && tests.is_some_and(|t| {
                !t.is_empty()
                    && t.iter().all(|a| {
                        matches!(a["status"].as_str(), Some("passed" | "pending" | "skipped"))
                    })
            });
        let ms = r["endTime"]
            .as_u64()
            .zip(r["startTime"].as_u64())
            .map(|(e, s)| e.saturating_sub(s));
        entries.push(Entry {
            file: file.to_string(),
            passed,
            ms,
        });
    }
    Some(entries)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn cfg(report: ReportFormat) -> BatchConfig {
        BatchConfig {
            command:
                "PLAYWRIGHT_JSON_OUTPUT_NAME={report} npx playwright test --reporter=json {files}"
                    .into(),
            check: "npx playwright test {file}".into(),
            report,
        }
    }

    #[test]
    fn only_a_check_of_the_batchs_shape_with_a_plain_file_joins_it() {
        let c = cfg(ReportFormat::Playwright);
        assert_eq!(
            file_of(&c, "npx playwright test tests/f1.spec.js").as_deref(),
            Some("tests/f1.spec.js")
        );
        assert_eq!(
            file_of(&c, "  npx playwright test a.spec.ts\n").as_deref(),
            Some("a.spec.ts")
        );
        for other in [
            "npx playwright test tests/f1.spec.js && rm -rf x",
            "npx playwright test 'a b.js'",
            "npx playwright test $(evil).js",
            "npx playwright test --grep x",
            "npx playwright test ",
            "npm test",
        ] {
            assert_eq!(file_of(&c, other), None, "{other}");
        }
        let cmd = command_for(
            &c,
            &["a.js".into(), "b.js".into()],
            Path::new("/tmp/r 1.json"),
        );
        assert_eq!(
            cmd,
            "PLAYWRIGHT_JSON_OUTPUT_NAME='/tmp/r 1.json' npx playwright test --reporter=json a.js b.js"
        );
    }

    /// Playwright names files relative to its test directory; a file passes only
    /// with every spec ok; a run-wide error, a file named twice, or a file the
    /// report leaves out says nothing.
    #[test]
    fn a_playwright_report_says_which_files_passed() {
        let files: Vec<String> = [
            "tests/f1.spec.js",
            "tests/f2.spec.js",
            "tests/f3.spec.js",
            "tests/f4.spec.js",
        ]
        .map(String::from)
        .to_vec();
        let report = r#"{"suites": [
            {"file": "f1.spec.js", "specs": [{"ok": true, "tests": [{"results": [{"duration": 900}]}]}]},
            {"file": "f2.spec.js", "specs": [{"ok": true}], "suites": [{"specs": [{"ok": false}]}]},
            {"file": "f3.spec.js", "specs": []}
        ], "errors": []}"#;
        let r = results(ReportFormat::Playwright, report, &files);
        assert_eq!(r["tests/f1.spec.js"], (true, Some(900)));
        assert!(!r["tests/f2.spec.js"].0, "a nested spec failed");
        assert!(!r["tests/f3.spec.js"].0, "no test is no pass");
        assert!(!r.contains_key("tests/f4.spec.js"), "not in the report");
        let broken = report.replace(
            r#""errors": []"#,
            r#""errors": [{"message": "webServer failed"}]"#,
        );
        assert!(results(ReportFormat::Playwright, &broken, &files).is_empty());
        assert!(results(ReportFormat::Playwright, "not json", &files).is_empty());
        // Two checks whose files the report cannot tell apart.
        let twins: Vec<String> = ["a/x.spec.js", "b/x.spec.js"].map(String::from).to_vec();
        let one = r#"{"suites": [{"file": "x.spec.js", "specs": [{"ok": true}]}]}"#;
        assert!(results(ReportFormat::Playwright, one, &twins).is_empty());
    }

    #[test]
    fn a_jest_report_says_which_files_passed() {
        let files: Vec<String> = ["src/a.test.js", "src/b.test.js"]
            .map(String::from)
            .to_vec();
        let report = r#"{"testResults": [
            {"name": "/p/src/a.test.js", "status": "passed", "startTime": 10, "endTime": 30,
             "assertionResults": [{"status": "passed"}]},
            {"name": "/p/src/b.test.js", "status": "failed", "assertionResults": [{"status": "failed"}]}
        ]}"#;
        let r = results(ReportFormat::Jest, report, &files);
        assert_eq!(r["src/a.test.js"], (true, Some(20)));
        assert!(!r["src/b.test.js"].0);
    }
}
