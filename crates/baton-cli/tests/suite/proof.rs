//! Proof of flips through the binary, with the settings `baton new` writes: an
//! agent's false flip of a feature without a verify command does not survive the
//! run, which still really finishes; `baton status` and the report show how each
//! passing feature was proven.

use baton_testkit::scenario::{features, honest, honest_verifier, initializer};
use baton_testkit::{ScriptedServer, Wire};
use serde_json::json;

use super::*;

/// `baton new` for a 4-feature project of `kind` in a fresh directory; returns
/// the directory holding it and the project's path.
pub(super) fn new_project(kind: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let t = baton_testkit::temp_project().unwrap();
    let spec = t.path().join("spec.txt");
    std::fs::write(&spec, "A tiny program with four features.\n").unwrap();
    let dir = t.path().join("proj");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args([
            "new",
            dir.to_str().unwrap(),
            "--spec",
            spec.to_str().unwrap(),
        ])
        .args(["--kind", kind, "--features", "4"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Only the pause is shortened; everything else is as `baton new` wrote it.
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap();
    assert!(toml.contains("agent = true"), "{toml}");
    assert!(toml.contains("trust_agent = false"), "{toml}");
    let toml = toml.replace("pause_secs = 3", "pause_secs = 0");
    std::fs::write(dir.join("baton.toml"), toml).unwrap();
    (t, dir)
}

#[test]
fn a_false_flip_under_baton_new_defaults_is_caught_and_the_run_really_finishes() {
    let (_t, dir) = new_project("cli");
    let mut steps = initializer(&features(&[false; 4]));
    // Builds feature 1, claims 1 and 4.
    steps.extend(honest(1, &[true, false, false, true]));
    steps.extend(honest(2, &[true, true, false, false]));
    steps.extend(honest(3, &[true, true, true, false]));
    steps.extend(honest(4, &[true, true, true, true]));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(honest_verifier)
        .start(steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(&dir)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.remaining(), 0, "{err}");
    assert!(err.contains("verifier rejected #4"), "{err}");
    for n in 1..=4 {
        assert!(
            dir.join(format!("src/feature{n}.txt")).is_file(),
            "feature {n}"
        );
    }
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", dir.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let by: Vec<&str> = s["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["by"].as_str().unwrap())
        .collect();
    assert_eq!(by, vec!["verifier"; 4], "{s}");
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("proven    by verifier #1, #2, #3, #4"),
        "{text}"
    );
    let report = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["report", dir.to_str().unwrap(), "-o", "-"])
        .output()
        .unwrap();
    let html = String::from_utf8_lossy(&report.stdout);
    assert!(html.contains("<th>proven by</th>"), "no proof column");
    assert!(
        html.contains("verifier session 0003 ran Bash"),
        "no proof of #1"
    );
    let rejected: Vec<serde_json::Value> = std::fs::read_to_string(dir.join(".baton/ledger.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["kind"] == "verifier_rejected")
        .collect();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["feature"], json!(4));
}

/// The ledger's entries of `kind` in the project `dir`.
pub(super) fn entries(dir: &std::path::Path, kind: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join(".baton/ledger.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// `baton new`'s defaults, `init` as the initializer's list, then `sessions`, run
/// with `verifier` playing the verifier, for at most `max` sessions. Returns the
/// run's output and the project.
fn run_under_defaults(
    list: &str,
    more: &[(&str, &str)],
    sessions: Vec<Vec<baton_testkit::Step>>,
    verifier: fn(&baton_testkit::RecordedRequest) -> Option<baton_testkit::Step>,
    max: u32,
) -> (tempfile::TempDir, std::path::PathBuf, std::process::Output) {
    let (t, dir) = new_project("cli");
    let mut steps = baton_testkit::scenario::initializer_writing(
        list,
        "#!/usr/bin/env bash\necho 'app ready'\n",
        "Session 1: wrote the feature list.\n",
        more,
    );
    for s in sessions {
        steps.extend(s);
    }
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(verifier)
        .start(steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(&dir)
        .args(["--max-sessions", &max.to_string()])
        .output()
        .unwrap();
    assert_eq!(server.remaining(), 0, "{}", stderr(&out));
    (t, dir, out)
}

/// A coding session that writes `files`, sets the list to `list` and commits.
fn session_writing(files: &[(&str, &str)], list: &str) -> Vec<baton_testkit::Step> {
    use baton_testkit::{Reply, Step};
    let mut calls: Vec<(&str, serde_json::Value)> = files
        .iter()
        .map(|(p, c)| ("Write", json!({"file_path": p, "content": c})))
        .collect();
    calls.push((
        "Write",
        json!({"file_path": "feature_list.json", "content": list}),
    ));
    calls.push((
        "Bash",
        json!({"command": "echo 'Session: did the work and verified it.' >> claude-progress.txt && git add -A && git commit -qm 'Work'"}),
    ));
    vec![
        Step::Reply(Reply::tools(&calls)),
        Step::Reply(Reply::text("Done: it works.")),
    ]
}

/// `features(passes)` with `verify` commands where `checks` gives one.
fn with_checks(passes: &[bool], checks: &[Option<&str>]) -> String {
    let mut v: Vec<serde_json::Value> = serde_json::from_str(&features(passes)).unwrap();
    for (f, c) in v.iter_mut().zip(checks) {
        if let Some(c) = c {
            f["verify"] = json!(c);
        }
    }
    serde_json::to_string_pretty(&v).unwrap() + "\n"
}

#[test]
fn a_lazy_verifier_that_reads_the_diff_and_cites_a_command_it_never_ran_proves_nothing() {
    // The coder flips feature 1 without building it; the same with a stub.
    for files in [vec![], vec![("src/feature1.txt", "TODO\n")]] {
        let (_t, dir, out) = run_under_defaults(
            &features(&[false; 4]),
            &[],
            vec![session_writing(
                &files,
                &features(&[true, false, false, false]),
            )],
            baton_testkit::scenario::lazy_verifier,
            2,
        );
        lazy_pass_refused(&dir, &out, &stderr(&out));
    }
}

/// What a run whose only flip a lazy verifier passed leaves: a limit (exit 2),
/// nothing passing, the pass rejected because it only inspected, no flip.
pub(super) fn lazy_pass_refused(dir: &std::path::Path, out: &std::process::Output, err: &str) {
    assert_eq!(out.status.code(), Some(2), "{err}");
    let list = std::fs::read_to_string(dir.join("feature_list.json")).unwrap();
    assert!(!list.contains("\"passes\": true"), "{list}\n{err}");
    let rejected = entries(dir, "verifier_rejected");
    assert_eq!(rejected.len(), 1, "{err}");
    assert!(
        rejected[0]["detail"]
            .as_str()
            .unwrap()
            .contains("only inspected the change"),
        "{rejected:?}"
    );
    assert!(entries(dir, "flip").is_empty(), "{err}");
}

#[test]
fn a_check_a_coder_planted_on_a_later_feature_does_not_prove_it() {
    // Session 2 builds #1 and plants a weak check on #2; session 3 writes a wrong
    // src/feature2.txt and flips #2. The check failed before and passes now, but a
    // coder wrote it: the verifier judges, and fails it.
    let planted = with_checks(
        &[true, false, false, false],
        &[None, Some("grep -q . src/feature2.txt")],
    );
    let (_t, dir, out) = run_under_defaults(
        &features(&[false; 4]),
        &[],
        vec![
            session_writing(&[("src/feature1.txt", "feature 1\n")], &planted),
            session_writing(
                &[("src/feature2.txt", "wrong\n")],
                &with_checks(
                    &[true, true, false, false],
                    &[None, Some("grep -q . src/feature2.txt")],
                ),
            ),
        ],
        baton_testkit::scenario::honest_verifier,
        3,
    );
    let err = stderr(&out);
    assert!(
        err.contains("base check: #2's verify command fails before the work"),
        "{err}"
    );
    let added = entries(&dir, "check_added");
    assert!(
        added
            .iter()
            .any(|e| e["feature"] == 2 && e["proof"]["author"] == "coding session 2"),
        "{added:?}"
    );
    let weak = entries(&dir, "check_touched");
    assert_eq!(weak.len(), 1, "{err}");
    assert_eq!(weak[0]["feature"], 2);
    assert!(
        weak[0]["detail"]
            .as_str()
            .unwrap()
            .contains("written by coding session 2")
    );
    let flips: Vec<serde_json::Value> = entries(&dir, "flip");
    let flipped: Vec<u64> = flips
        .iter()
        .map(|e| e["feature"].as_u64().unwrap())
        .collect();
    assert_eq!(flipped, vec![1], "{err}");
    // #1 was proven by the verifier, whose check baton replayed and recorded.
    assert_eq!(
        flips[0]["proof"]["check"],
        "grep -qx 'feature 1' src/feature1.txt"
    );
    assert!(
        added
            .iter()
            .any(|e| e["feature"] == 1 && e["proof"]["author"] == "the verifier (session 3)"),
        "{added:?}"
    );
}

#[test]
fn a_test_file_the_session_rewrote_does_not_prove_its_feature() {
    // #1's check runs the project's own test; the session rewrites the test to
    // pass and flips #1 without building it.
    let list = with_checks(&[false; 4], &[Some("bash tests/t1.sh")]);
    let (_t, dir, out) = run_under_defaults(
        &list,
        &[("tests/t1.sh", "grep -qx 'feature 1' src/feature1.txt\n")],
        vec![session_writing(
            &[("tests/t1.sh", "exit 0\n")],
            &with_checks(&[true, false, false, false], &[Some("bash tests/t1.sh")]),
        )],
        baton_testkit::scenario::honest_verifier,
        2,
    );
    let err = stderr(&out);
    assert!(
        err.contains("base check: #1's verify command fails before the work"),
        "{err}"
    );
    let weak = entries(&dir, "check_touched");
    assert_eq!(weak.len(), 1, "{err}");
    assert!(
        weak[0]["detail"]
            .as_str()
            .unwrap()
            .contains("changed tests/t1.sh (its command runs it)"),
        "{weak:?}"
    );
    assert!(entries(&dir, "flip").is_empty(), "{err}");
    assert_eq!(entries(&dir, "verifier_rejected").len(), 1, "{err}");
}

#[test]
fn the_brief_says_how_the_targets_check_came_out_before_the_work() {
    let list = with_checks(
        &[false; 4],
        &[Some("grep -qx 'feature 1' src/feature1.txt")],
    );
    let (t, dir) = new_project("cli");
    let mut steps = baton_testkit::scenario::initializer(&list);
    steps.extend(session_writing(
        &[("src/feature1.txt", "feature 1\n")],
        &with_checks(
            &[true, false, false, false],
            &[Some("grep -qx 'feature 1' src/feature1.txt")],
        ),
    ));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(&dir)
        .args(["--max-sessions", "2"])
        .output()
        .unwrap();
    let err = stderr(&out);
    let brief = server.requests()[2].first_user_text();
    assert!(
        brief.contains("#1's check fails before your work (baton ran it just now): make it pass"),
        "{brief}"
    );
    // Proven by its check, written by the initializer.
    let flips = entries(&dir, "flip");
    assert_eq!(flips.len(), 1, "{err}");
    assert_eq!(flips[0]["proof"]["by"], "check");
    assert_eq!(flips[0]["proof"]["author"], "the initializer");
    drop(t);
}
