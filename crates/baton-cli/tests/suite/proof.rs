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
        .output_bounded()
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
        .output_bounded()
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
        .output_bounded()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let by: Vec<&str> = s["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["by"].as_str().unwrap())
        .collect();
    assert_eq!(by, vec!["verifier"; 4], "{s}");
    // Each coding session names the verifier's session that judged it, which
    // `baton log --session N` opens.
    assert_eq!(s["sessions"][1]["number"], 2, "{s}");
    assert_eq!(s["sessions"][1]["verifier_session"], 3, "{s}");
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", dir.to_str().unwrap()])
        .output_bounded()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("proven    by verifier #1, #2, #3, #4"),
        "{text}"
    );
    assert!(text.contains("verifier 0003"), "{text}");
    let html = super::report_page(&dir);
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
    run_under_defaults_by(list, more, sessions, verifier, max, &|server, args| {
        baton(server, Wire::Anthropic)
            .args(args)
            .output_bounded()
            .unwrap()
    })
}

/// [`run_under_defaults`] with `run` running baton (`baton args…` against the
/// scripted server): baton's own loop, or an agent CLI.
pub(super) fn run_under_defaults_by(
    list: &str,
    more: &[(&str, &str)],
    sessions: Vec<Vec<baton_testkit::Step>>,
    verifier: fn(&baton_testkit::RecordedRequest) -> Option<baton_testkit::Step>,
    max: u32,
    run: &dyn Fn(&ScriptedServer, &[&str]) -> std::process::Output,
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
    let max = max.to_string();
    let out = run(
        &server,
        &["run", dir.to_str().unwrap(), "--max-sessions", &max],
    );
    assert_eq!(server.remaining(), 0, "{}", stderr(&out));
    (t, dir, out)
}

/// A coding session that writes `files`, sets the list to `list` and commits.
pub(super) fn session_writing(files: &[(&str, &str)], list: &str) -> Vec<baton_testkit::Step> {
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
    // Read first what it writes (Claude Code's Write refuses a file not read).
    let mut reads: Vec<(&str, serde_json::Value)> =
        vec![("Read", json!({"file_path": "feature_list.json"}))];
    reads.extend(
        files
            .iter()
            .map(|(p, _)| ("Read", json!({ "file_path": p }))),
    );
    vec![
        Step::Reply(Reply::tools(&reads)),
        Step::Reply(Reply::tools(&calls)),
        Step::Reply(Reply::text("Done: it works.")),
    ]
}

/// `features(passes)` with `verify` commands where `checks` gives one.
pub(super) fn with_checks(passes: &[bool], checks: &[Option<&str>]) -> String {
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
    planted_check(&|server, args| {
        baton(server, Wire::Anthropic)
            .args(args)
            .output_bounded()
            .unwrap()
    });
}

/// The planted-check lie, run by `run`, and what must come of it.
pub(super) fn planted_check(run: &dyn Fn(&ScriptedServer, &[&str]) -> std::process::Output) {
    // Session 2 builds #1 and plants a weak check on #2; session 3 writes a wrong
    // src/feature2.txt and flips #2. The check failed before and passes now, but a
    // coder wrote it: the verifier judges, and fails it.
    let planted = with_checks(
        &[true, false, false, false],
        &[None, Some("grep -q . src/feature2.txt")],
    );
    let (_t, dir, out) = run_under_defaults_by(
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
        run,
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
    // `baton status` and the report show the calls it cited and its replayed check.
    let (status, html) = proofs_shown(&dir);
    let said = "cited `if grep -qx 'feature 1' src/feature1.txt; then";
    assert!(status.contains(said), "{status}");
    assert!(
        status.contains(
            "its check `grep -qx 'feature 1' src/feature1.txt` failed before, passes now"
        ),
        "{status}"
    );
    assert!(
        html.contains("cited `if grep -qx &#39;feature 1&#39;")
            || html.contains("cited `if grep -qx &#x27;feature 1&#x27;"),
        "no citation in the report"
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
    rewritten_test(&|server, args| {
        baton(server, Wire::Anthropic)
            .args(args)
            .output_bounded()
            .unwrap()
    });
}

/// The rewritten-test lie, run by `run`, and what must come of it.
pub(super) fn rewritten_test(run: &dyn Fn(&ScriptedServer, &[&str]) -> std::process::Output) {
    // #1's check runs the project's own test; the session rewrites the test to
    // pass and flips #1 without building it.
    let list = with_checks(&[false; 4], &[Some("bash tests/t1.sh")]);
    let (_t, dir, out) = run_under_defaults_by(
        &list,
        &[("tests/t1.sh", "grep -qx 'feature 1' src/feature1.txt\n")],
        vec![session_writing(
            &[("tests/t1.sh", "exit 0\n")],
            &with_checks(&[true, false, false, false], &[Some("bash tests/t1.sh")]),
        )],
        baton_testkit::scenario::honest_verifier,
        2,
        run,
    );
    let err = stderr(&out);
    assert!(
        err.contains("base check: #1's verify command fails before the work"),
        "{err}"
    );
    let weak = entries(&dir, "check_touched");
    assert_eq!(weak.len(), 1, "{err}");
    assert!(
        weak[0]["detail"].as_str().unwrap().contains(
            "also fails in a clean checkout of that commit with only the changes to the product"
        ),
        "{weak:?}"
    );
    assert!(
        weak[0]["detail"]
            .as_str()
            .unwrap()
            .contains("beside the product: changed tests/t1.sh"),
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
        .output_bounded()
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
    // `baton status` and the report say who wrote the check that proved it,
    // and the commit its "before" was replayed against.
    let (status, html) = proofs_shown(&dir);
    let reference = flips[0]["proof"]["reference"]["commit"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(flips[0]["proof"]["reference"]["what"], "the session's base");
    let said = format!(
        "by the initializer (failed before, passes now; replayed against {} (the session's base))",
        &reference[..7]
    );
    assert!(status.contains(&said), "{status}");
    assert!(
        html.contains(&said.replace('\'', "&#39;")) || html.contains(&said.replace('\'', "&#x27;")),
        "no author or reference in the report"
    );
    drop(t);
}

/// How `baton status --json` (the first passing feature's `detail`) and the
/// report show the proof of the project in `dir`.
fn proofs_shown(dir: &std::path::Path) -> (String, String) {
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", dir.to_str().unwrap(), "--json"])
        .output_bounded()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let report = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["report", dir.to_str().unwrap(), "-o", "-"])
        .output_bounded()
        .unwrap();
    (
        s["proofs"][0]["detail"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        String::from_utf8_lossy(&report.stdout).into_owned(),
    )
}

#[test]
fn a_check_the_policy_refuses_is_said_at_once_and_never_reverts_a_flip() {
    // #1's check can never run here; #1 is built honestly: the verifier proves it.
    let list = with_checks(&[false; 4], &[Some("sudo ls src")]);
    let (_t, dir, out) = run_under_defaults(
        &list,
        &[],
        vec![session_writing(
            &[("src/feature1.txt", "feature 1\n")],
            &with_checks(&[true, false, false, false], &[Some("sudo ls src")]),
        )],
        baton_testkit::scenario::honest_verifier,
        2,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("#1's verify command cannot run here: baton's policy refuses `sudo ls src`"),
        "{err}"
    );
    assert!(
        err.contains("base check: #1's verify command cannot run here"),
        "{err}"
    );
    let unrunnable = entries(&dir, "check_unrunnable");
    assert!(!unrunnable.is_empty(), "{err}");
    assert_eq!(unrunnable[0]["feature"], 1);
    assert!(entries(&dir, "verify_failed").is_empty(), "{err}");
    let flips = entries(&dir, "flip");
    assert_eq!(flips.len(), 1, "{err}");
    assert_eq!(flips[0]["proof"]["by"], "verifier");
}

#[test]
fn the_app_and_its_checks_agree_on_the_port_baton_sets() {
    // init.sh's own default port (8080) is not the check's (3000): only the PORT
    // baton sets for a run of one makes them meet.
    let init = "#!/usr/bin/env bash\nmkdir -p site\nif ! curl -fsS \"http://127.0.0.1:${PORT:-8080}/\" >/dev/null 2>&1; then\n  python3 -m http.server \"${PORT:-8080}\" --bind 127.0.0.1 --directory site >/dev/null 2>&1 &\nfi\nfor i in $(seq 100); do curl -fsS \"http://127.0.0.1:${PORT:-8080}/\" >/dev/null 2>&1 && break; sleep 0.1; done\necho \"app ready on http://127.0.0.1:${PORT:-8080}\"\n";
    let check = "curl -fsS http://127.0.0.1:${PORT:-3000}/feature1.html | grep -q 'feature 1'";
    let (t, dir) = new_project("cli");
    let mut steps = baton_testkit::scenario::initializer_writing(
        &with_checks(&[false; 4], &[Some(check)]),
        init,
        "Session 1: wrote the feature list.\n",
        &[("site/index.html", "home\n")],
    );
    steps.extend(session_writing(
        &[("site/feature1.html", "feature 1\n")],
        &with_checks(&[true, false, false, false], &[Some(check)]),
    ));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(&dir)
        .args(["--max-sessions", "2"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(server.remaining(), 0, "{err}");
    let brief = server.requests()[2].first_user_text();
    assert!(
        brief.contains("Port: $PORT is 4100 for your commands, init.sh and baton's checks"),
        "{brief}"
    );
    let flips = entries(&dir, "flip");
    assert_eq!(flips.len(), 1, "{err}");
    assert_eq!(flips[0]["proof"]["by"], "check", "{err}");
    drop(t);
}

#[test]
fn the_verifier_writes_scratch_files_in_a_temp_dir_of_its_own() {
    // The verifier writes a small program into the temp dir its prompt names and
    // runs it; the project stays untouched and the pass counts.
    fn scratch_verifier(r: &baton_testkit::RecordedRequest) -> Option<baton_testkit::Step> {
        use baton_testkit::{Reply, Step};
        if !baton_testkit::scenario::is_verifier(r) {
            return None;
        }
        let prompt = r.first_user_text();
        let dir = prompt
            .split("go under ")
            .nth(1)?
            .split(' ')
            .next()?
            .to_string();
        let command = format!(
            "cat > {dir}/t.sh <<'EOF'\ngrep -qx 'feature 1' src/feature1.txt && echo SCRATCH-OK\nEOF\nbash {dir}/t.sh"
        );
        let said = r.body["messages"].to_string();
        if !said.contains("SCRATCH-OK") {
            return Some(Step::Reply(Reply::tool(
                "Bash",
                json!({ "command": command }),
            )));
        }
        let v = json!({"feature": 1, "pass": true,
            "reason": "wrote a test script in my temp dir, ran it: it printed SCRATCH-OK",
            "ran": [command], "check": "grep -qx 'feature 1' src/feature1.txt"});
        Some(Step::Reply(Reply::text(&format!(
            "VERDICT {v}\n{}",
            json!({"results": [v]})
        ))))
    }
    let (_t, dir, out) = run_under_defaults(
        &features(&[false; 4]),
        &[],
        vec![session_writing(
            &[("src/feature1.txt", "feature 1\n")],
            &features(&[true, false, false, false]),
        )],
        scratch_verifier,
        2,
    );
    let err = stderr(&out);
    let flips = entries(&dir, "flip");
    assert_eq!(flips.len(), 1, "{err}");
    assert_eq!(flips[0]["proof"]["by"], "verifier", "{err}");
    assert!(!dir.join("t.sh").exists());
}

#[test]
fn the_check_a_verifier_left_runs_in_every_later_sweep() {
    // #1 is proven by the verifier's replayed check; session 3 breaks #1 while
    // doing #2: the sweep before session 4 runs the verifier's check and sets #1
    // back.
    let (_t, dir, out) = run_under_defaults(
        &features(&[false; 4]),
        &[],
        vec![
            session_writing(
                &[("src/feature1.txt", "feature 1\n")],
                &features(&[true, false, false, false]),
            ),
            session_writing(
                &[
                    ("src/feature1.txt", "gone\n"),
                    ("src/feature2.txt", "feature 2\n"),
                ],
                &features(&[true, true, false, false]),
            ),
            vec![baton_testkit::Step::Reply(baton_testkit::Reply::text(
                "reading",
            ))],
        ],
        baton_testkit::scenario::honest_verifier,
        4,
    );
    let err = stderr(&out);
    assert!(
        err.contains("sweep: #1 broke and was set back to failing"),
        "{err}"
    );
    let regressions = entries(&dir, "regression");
    assert_eq!(regressions.len(), 1, "{err}");
    assert_eq!(regressions[0]["feature"], 1);
    assert!(
        regressions[0]["detail"]
            .as_str()
            .unwrap()
            .contains("grep -qx 'feature 1' src/feature1.txt"),
        "{regressions:?}"
    );
}

/// Ctrl-C while the verifier checks a flip: the run ends interrupted (exit 130),
/// the flip is not judged — no rejection, no failed attempt at its feature — and
/// the reason says the run was stopped.
#[test]
fn ctrl_c_in_the_verifier_is_an_interruption_not_a_rejection() {
    use baton_testkit::{Reply, Step};
    let (_t, dir) = new_project("cli");
    // The verifier's command in sight from the host (its namespace has a `/tmp`
    // of its own), and the test's go-ahead where it can read it: the project's
    // `.git`.
    let started = || super::process_running(": verifier-waits-77;");
    let go = dir.join(".git/test-go");
    let mut steps = baton_testkit::scenario::initializer(&features(&[false; 4]));
    steps.extend(session_writing(
        &[("src/feature1.txt", "feature 1\n")],
        &features(&[true, false, false, false]),
    ));
    // The verifier's first call waits until the test has pressed Ctrl-C.
    steps.push(Step::Reply(Reply::tool(
        "Bash",
        json!({"command": ": verifier-waits-77; for _ in $(seq 1200); do [ -e .git/test-go ] && break; sleep 0.05; done; grep -qx 'feature 1' src/feature1.txt && echo checked"}),
    )));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let mut child = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !started() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(started(), "the verifier never started");
    let reader = super::ctrl_c(&mut child);
    std::fs::write(&go, "").unwrap();
    let status = child.wait_bounded().unwrap();
    let err = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(entries(&dir, "verifier_rejected").is_empty(), "{err}");
    let unproven = entries(&dir, "unverified_flip");
    assert_eq!(unproven.len(), 1, "{err}");
    assert!(
        unproven[0]["detail"]
            .as_str()
            .unwrap()
            .contains("stopped (Ctrl-C)"),
        "{unproven:?}"
    );
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".baton/state.json")).unwrap())
            .unwrap();
    assert_eq!(state["sessions"][1]["outcome"], "interrupted", "{state}");
    assert_eq!(
        state["features"]["1"]["attempts"].as_u64().unwrap_or(0),
        0,
        "{state}"
    );
}

/// The check a verifier leaves runs on the head as the verifier's own commands
/// do, with the project read-only: a check that also writes into the project
/// cannot change the work it judges.
#[test]
fn a_verifiers_check_cannot_write_the_project_it_judges() {
    if !super::bwrap("a_verifiers_check_cannot_write_the_project_it_judges") {
        return;
    }
    fn writing_verifier(r: &baton_testkit::RecordedRequest) -> Option<baton_testkit::Step> {
        use baton_testkit::{Reply, Step};
        if !baton_testkit::scenario::is_verifier(r) {
            return None;
        }
        let run = "grep -qx 'feature 1' src/feature1.txt && echo CHECKED";
        if !r.body["messages"].to_string().contains("CHECKED") {
            return Some(Step::Reply(Reply::tool("Bash", json!({ "command": run }))));
        }
        let v = json!({"feature": 1, "pass": true,
            "reason": "ran grep on src/feature1.txt and it holds feature 1",
            "ran": [run],
            "check": "echo planted > src/planted.txt; grep -qx 'feature 1' src/feature1.txt"});
        Some(Step::Reply(Reply::text(&format!(
            "VERDICT {v}\n{}",
            json!({"results": [v]})
        ))))
    }
    let (_t, dir, out) = run_under_defaults(
        &features(&[false; 4]),
        &[],
        vec![session_writing(
            &[("src/feature1.txt", "feature 1\n")],
            &features(&[true, false, false, false]),
        )],
        writing_verifier,
        2,
    );
    let err = stderr(&out);
    assert!(
        !dir.join("src/planted.txt").exists(),
        "the check wrote the project: {err}"
    );
    assert_eq!(entries(&dir, "flip").len(), 1, "{err}");
}

/// A session plants `~/.npmrc` naming another `script-shell` in the agent's home,
/// so `npm test` passes in it while the real test fails, and flips #1 (whose
/// check is `npm test`) without building it. The checks run in a home no command
/// wrote: the check fails, the flip does not stand; and the next session's home
/// no longer holds the file.
#[test]
fn a_config_planted_in_the_agents_home_does_not_make_a_check_pass() {
    use baton_testkit::{Reply, Step};
    if !bwrap("a_config_planted_in_the_agents_home_does_not_make_a_check_pass") {
        return;
    }
    let list = with_checks(&[false; 4], &[Some("npm test")]);
    let package = r#"{"name":"app","version":"1.0.0","scripts":{"test":"grep -qx 'feature 1' src/feature1.txt"}}"#;
    // Through scripts: the policy refuses `~/.npmrc` named in a command.
    let mut coding = vec![Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "scripts/plant.sh", "content": "echo 'script-shell=/bin/true' > ~/.npmrc\nnpm test >/dev/null 2>&1; echo planted-npm-said-$?\n"}),
        ),
        (
            "Write",
            json!({"file_path": "scripts/look.sh", "content": "cat ~/.npmrc 2>/dev/null || echo no-npmrc-left\n"}),
        ),
        ("Bash", json!({"command": "bash scripts/plant.sh"})),
    ]))];
    coding.extend(session_writing(
        &[],
        &with_checks(&[true, false, false, false], &[Some("npm test")]),
    ));
    let next = vec![
        Step::Reply(Reply::tools(&[(
            "Bash",
            json!({"command": "bash scripts/look.sh"}),
        )])),
        Step::Reply(Reply::text("Looked.")),
    ];
    let (_t, dir, out) = run_under_defaults(
        &list,
        &[("package.json", package)],
        vec![coding, next],
        baton_testkit::scenario::honest_verifier,
        3,
    );
    let err = stderr(&out);
    let list = std::fs::read_to_string(dir.join("feature_list.json")).unwrap();
    assert!(!list.contains("\"passes\": true"), "{list}\n{err}");
    assert!(entries(&dir, "flip").is_empty(), "{err}");
    let transcript = std::fs::read_dir(dir.join(".baton/sessions"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect::<String>();
    assert!(transcript.contains("planted-npm-said-0"), "{err}");
    assert!(transcript.contains("no-npmrc-left"), "{err}");
}

/// Where a run's time went is on record and shown: each coding session says
/// how long baton's sweep and base check before it, the agent, and the gates
/// and proof after it took; `baton status` (text and JSON) and the report add
/// them up. (The report used to show session time only, which left the sweeps
/// and the verifier out.) Only presence is asserted, never how long.
#[test]
fn the_time_before_during_and_after_each_session_is_recorded_and_shown() {
    let (_t, dir, out) = run_under_defaults(
        &features(&[false; 4]),
        &[],
        vec![
            session_writing(
                &[("src/feature1.txt", "feature 1\n")],
                &features(&[true, false, false, false]),
            ),
            vec![baton_testkit::Step::Reply(baton_testkit::Reply::text(
                "reading",
            ))],
        ],
        baton_testkit::scenario::honest_verifier,
        3,
    );
    let err = stderr(&out);
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".baton/state.json")).unwrap())
            .unwrap();
    let coding: Vec<&serde_json::Value> = state["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "coding")
        .collect();
    assert_eq!(coding.len(), 2, "{err}");
    for s in &coding {
        for part in [
            "agent_ms",
            "gates_ms",
            "sweep_ms",
            "base_check_ms",
            "verifier_ms",
        ] {
            assert!(s["timing"][part].is_u64(), "{part} in {s}");
        }
    }
    // The first session's flip was proven (the verifier ran); the second was
    // preceded by a sweep that ran the verifier's check.
    assert!(
        coding[0]["timing"]["verifier_ms"].as_u64().unwrap() > 0,
        "{}",
        coding[0]
    );
    assert!(
        coding[1]["timing"]["sweep_ms"].as_u64().unwrap() > 0,
        "{}",
        coding[1]
    );
    let json = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", "--json"])
        .arg(&dir)
        .output_bounded()
        .unwrap();
    let st: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let total = &st["totals"]["timing"];
    let sum = |part: &str| -> u64 {
        state["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["timing"][part].as_u64().unwrap_or(0))
            .sum()
    };
    for part in [
        "agent_ms",
        "gates_ms",
        "sweep_ms",
        "base_check_ms",
        "verifier_ms",
    ] {
        assert_eq!(total[part].as_u64(), Some(sum(part)), "{part}: {st}");
    }
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("status")
        .arg(&dir)
        .output_bounded()
        .unwrap();
    let text = stdout(&text);
    assert!(
        text.contains("time      agents ")
            && text.contains(" · sweeps ")
            && text.contains(" · proof "),
        "{text}"
    );
    let page = super::report_page(&dir);
    assert!(
        page.contains(r#"<span id="time-split">time: agents "#),
        "no time split in the report"
    );
    // The sweep before the second session ran #1's check, and timed it.
    assert!(
        page.contains(r#"<span id="slow-checks">slowest checks: #1 "#),
        "no slowest checks in the report"
    );
}
