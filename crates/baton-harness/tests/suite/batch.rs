//! `[verify.batch]` with a runner of the test's own: what a batch's report says
//! passed passes; what failed, what the report leaves out and every check of a
//! batch without a report run alone; the batch is bounded by one check's limit
//! for each of its checks, not by one.

use baton_testkit::Bounded as _;
use std::path::Path;
use std::time::Duration;

use baton_config::{BatchConfig, ReportFormat};
use baton_harness::batch::Batching;
use baton_harness::checks::Checker;
use baton_records::FeatureList;
use baton_tools::{AllowAll, ToolContext, Toolbox};
use serde_json::json;

/// A runner: `./runner.sh REPORT FILE…` runs each file (it passes when the file
/// says `ok`, after `sleep` seconds), logs its invocation to `log`, and writes a
/// report in Playwright's shape to REPORT unless REPORT is `-` (one file alone:
/// its exit says) or the file `no-report` exists outside the tree.
fn project(log: &Path, sleep: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let no_report = log.with_file_name("no-report");
    let script = format!(
        r#"#!/bin/bash
report=$1; shift
if [ "$report" = - ]; then echo "alone $*" >> {log}; else echo "batch $*" >> {log}; fi
status=0; suites=""
for f in "$@"; do
  sleep {sleep}
  if grep -q ok "$f"; then ok=true; else ok=false; status=1; fi
  suites="$suites${{suites:+,}}{{\"file\": \"$f\", \"specs\": [{{\"ok\": $ok}}]}}"
done
if [ "$report" != - ] && [ ! -e {no_report} ]; then
  printf '{{"suites": [%s], "errors": []}}' "$suites" > "$report"
fi
exit $status
"#,
        log = log.display(),
        no_report = no_report.display(),
    );
    std::fs::write(dir.path().join("runner.sh"), script).unwrap();
    std::process::Command::new("chmod")
        .args(["+x", "runner.sh"])
        .current_dir(dir.path())
        .status_bounded()
        .unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn list(checks: &[&str]) -> FeatureList {
    let v: Vec<_> = checks
        .iter()
        .map(|c| json!({"category": "functional", "description": c, "steps": [], "verify": c, "passes": true}))
        .collect();
    FeatureList::parse(&serde_json::to_string(&v).unwrap(), "f.json").unwrap()
}

/// The checks of `checks` in `dir`, as a time-boxed sweep runs them (a box of
/// ten minutes), or, with `boxed` false, as a flip's proof or the sweep before
/// "complete" does.
fn run_as(dir: &Path, checks: &[&str], timeout: Duration, boxed: bool) -> baton_records::CheckRun {
    let tools = Toolbox::new(ToolContext::new(dir.to_path_buf()));
    let checker = Checker {
        tools: &tools,
        policy: &AllowAll,
        timeout,
        init_script: None,
        batch: Some(Batching::of(
            Some(&BatchConfig {
                command: "./runner.sh {report} {files}".into(),
                check: "./runner.sh - {file}".into(),
                report: ReportFormat::Playwright,
            }),
            std::env::temp_dir(),
        )),
    };
    let l = list(checks);
    let all: Vec<usize> = (0..checks.len()).collect();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(checker.run(&l, &all, boxed.then_some(Duration::from_secs(600))))
}

fn run(dir: &Path, checks: &[&str], timeout: Duration) -> baton_records::CheckRun {
    run_as(dir, checks, timeout, true)
}

fn lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

const CHECKS: &[&str] = &[
    "./runner.sh - a.js",
    "./runner.sh - b.js",
    "./runner.sh - c.js",
    "./runner.sh - d.js",
    "true",
];
const FILES: &[(&str, &str)] = &[
    ("a.js", "ok"),
    ("b.js", "ok"),
    ("c.js", "fails"),
    ("d.js", "ok"),
];

/// Four checks of the batch's shape run as one invocation; the one the report
/// says failed runs alone, for its own verdict and output; a check of another
/// shape runs as before.
#[test]
fn checks_that_share_a_runner_run_as_one_and_what_failed_runs_alone() {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("log");
    let p = project(&log, "0", FILES);
    let r = run(p.path(), CHECKS, Duration::from_secs(30));
    assert_eq!(r.passed, vec![1, 2, 4, 5], "{r:?}");
    assert_eq!(
        r.failed.iter().map(|f| f.feature).collect::<Vec<_>>(),
        vec![3]
    );
    assert_eq!(lines(&log), vec!["batch a.js b.js c.js d.js", "alone c.js"]);
}

/// A batch that wrote no report makes nothing pass: every check runs alone.
#[test]
fn a_batch_without_a_report_makes_no_check_pass() {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("log");
    std::fs::write(logs.path().join("no-report"), "").unwrap();
    let p = project(&log, "0", FILES);
    let r = run(p.path(), CHECKS, Duration::from_secs(30));
    assert_eq!(r.passed, vec![1, 2, 4, 5], "{r:?}");
    assert_eq!(
        r.failed.iter().map(|f| f.feature).collect::<Vec<_>>(),
        vec![3]
    );
    let said = lines(&log);
    assert_eq!(said[0], "batch a.js b.js c.js d.js");
    assert_eq!(
        &said[1..],
        ["alone a.js", "alone b.js", "alone c.js", "alone d.js"]
    );
}

/// The batch's bound is one check's limit for each check in it: four files of
/// 0.6 s each (2.4 s) under a 1 s `timeout_secs` finish as one batch. Cut at
/// one check's limit, every file ran again alone.
#[test]
fn one_checks_timeout_does_not_cut_the_batch() {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("log");
    let files: Vec<(&str, &str)> = FILES.iter().map(|(f, _)| (*f, "ok")).collect();
    let p = project(&log, "0.6", &files);
    let r = run(p.path(), &CHECKS[..4], Duration::from_secs(1));
    assert_eq!(r.passed, vec![1, 2, 3, 4], "{r:?}");
    assert_eq!(lines(&log), vec!["batch a.js b.js c.js d.js"]);
}

/// A run without a time box (a flip's proof, a base check, the sweep before
/// "complete") never batches: in one runner's process a spec can make another's
/// result, so there every check runs in a process of its own.
#[test]
fn a_run_that_decides_proof_or_complete_never_batches() {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("log");
    let p = project(&log, "0", FILES);
    let r = run_as(p.path(), CHECKS, Duration::from_secs(30), false);
    assert_eq!(r.passed, vec![1, 2, 4, 5], "{r:?}");
    assert_eq!(
        r.failed.iter().map(|f| f.feature).collect::<Vec<_>>(),
        vec![3]
    );
    assert_eq!(
        lines(&log),
        ["alone a.js", "alone b.js", "alone c.js", "alone d.js"]
    );
}
