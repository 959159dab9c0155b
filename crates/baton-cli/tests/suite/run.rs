//! Whole `baton run`s with the scripted model playing every session, in real git
//! repositories with real bash. Each failure mode of the pattern has a test here
//! that fails if baton stops handling it.

use std::process::{Command, Output};

use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

pub(super) const TOML: &str =
    "[project]\nfeatures = 3\nmin_features = 3\n[run]\npause_secs = 0\nstall_sessions = 3\n";

pub(super) use baton_testkit::scenario::{features, honest, initializer};

pub(super) fn new_project() -> Project {
    let p = Project::with_toml(TOML);
    std::fs::write(
        p.path().join("app_spec.txt"),
        "Build a tiny app with three features.\n",
    )
    .unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    git(&p, &["init", "-q"]);
    p
}

pub(super) fn git(p: &Project, args: &[&str]) -> String {
    baton_testkit::git(p.path(), args)
}

pub(super) fn run(p: &Project, steps: Vec<Step>, extra: &[&str]) -> (Output, ScriptedServer) {
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .args(extra)
        .output_bounded()
        .unwrap();
    (out, server)
}

#[test]
fn an_honest_run_completes() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    steps.extend(honest(2, &[true, true, false]));
    steps.extend(honest(3, &[true, true, true]));
    let (out, server) = run(&p, steps, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0);
    assert!(
        stderr(&out).contains("baton: complete: every feature passes · 3/3 passing · 4 sessions"),
        "{}",
        stderr(&out)
    );
    // One commit per feature at least, and the initializer's.
    let log = git(&p, &["log", "--oneline"]);
    for n in 1..=3 {
        assert!(log.contains(&format!("Implement feature {n}")), "{log}");
    }
    assert!(log.contains("Initial feature list"));
    assert!(
        !log.contains("baton:"),
        "an honest run needs no baton commit: {log}"
    );
    // Notes grew every session.
    assert_eq!(p.file("claude-progress.txt").lines().count(), 4);
    let s = state(&p);
    let kinds: Vec<&str> = s["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["initializer", "coding", "coding", "coding"]);
    assert!(
        s["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["gates"]["notes_updated"] == true)
    );
    assert_eq!(s["sessions"][2]["gates"]["flipped"], json!([2]));
    // Coding sessions get the brief; the second one is told what the first achieved.
    let brief = prompt_of(&server, 4);
    assert!(brief.contains("# Brief from baton (session 3)"), "{brief}");
    assert!(brief.contains("Features passing: 1/3"), "{brief}");
    // Notes written before the commit that holds the flip: nothing left over.
    assert!(!brief.contains("left uncommitted"), "{brief}");
    assert!(!brief.contains("notes were not updated"), "{brief}");
    assert!(brief.contains("- Newly passing: #1."), "{brief}");
    assert!(
        brief.contains("2. [functional] Feature 2\n   - open the app for feature 2"),
        "{brief}"
    );
    assert!(brief.contains("Implement feature 1"), "{brief}");
    assert!(
        brief.contains("Session: implemented and verified feature 1."),
        "{brief}"
    );
    // The ledger names every flip with its commit.
    let ledger = p.file(".baton/ledger.jsonl");
    assert_eq!(
        ledger
            .lines()
            .filter(|l| l.contains("\"kind\":\"flip\""))
            .count(),
        3
    );
}

#[test]
fn tampering_with_the_feature_list_is_undone_flips_kept_and_briefed() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    // Session 2: an Edit of a description is refused on the spot; then a shell `cp`
    // over the list edits feature 2, drops feature 3, and flips feature 1.
    let mut tampered: Vec<Value> = serde_json::from_str(&features(&[true, false, false])).unwrap();
    tampered[1]["description"] = json!("Feature 2 (easier now)");
    tampered[1]["steps"] = json!(["nothing to check"]);
    tampered.pop();
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Edit",
            json!({"file_path": "feature_list.json", "old_string": "\"Feature 2\"", "new_string": "\"Feature 2 (done)\""}),
        ),
        ("Write", json!({"file_path": "tampered.json", "content": serde_json::to_string_pretty(&tampered).unwrap()})),
        ("Bash", json!({"command": "cp tampered.json feature_list.json && rm tampered.json && echo 'All done!' >> claude-progress.txt && git add -A && git commit -qm 'Simplify features'"})),
    ])));
    steps.push(Step::Reply(Reply::text("Everything passes now.")));
    // Session 3 only talks.
    steps.push(Step::Reply(Reply::text("Looking.")));
    let (out, server) = run(&p, steps, &["--max-sessions", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("stopped: --max-sessions 3 reached"),
        "{}",
        stderr(&out)
    );

    // Refused on the spot, with what is allowed.
    let r = tool_results(Wire::Anthropic, &server.requests()[3].body);
    assert!(r[0].2, "{r:?}");
    assert!(
        r[0].1.starts_with("Refused by baton's policy: feature_list.json may only change in \"passes\", and this Edit would also change more: feature 2: \"description\" was changed."),
        "{}",
        r[0].1
    );
    // Restored, with the legal flip of feature 1 kept.
    assert_eq!(p.file("feature_list.json"), features(&[true, false, false]));
    let log = git(&p, &["log", "--format=%s"]);
    assert!(
        log.starts_with("baton: correct feature_list.json after session 2\n"),
        "{log}"
    );
    assert_eq!(git(&p, &["status", "--porcelain"]), "");
    let s = state(&p);
    let g = &s["sessions"][1]["gates"];
    assert_eq!(g["flipped"], json!([1]));
    assert_eq!(
        g["violations"],
        json!([
            "feature 2: \"description\", \"steps\" was changed",
            "feature 3 (\"Feature 3\") was removed"
        ])
    );
    assert_eq!(s["sessions"][1]["gates"]["refusals"], 1);
    // Briefed to the next session.
    let brief = prompt_of(&server, 4);
    assert!(
        brief.contains("- VIOLATION, undone by baton: feature 3 (\"Feature 3\") was removed."),
        "{brief}"
    );
    assert!(brief.contains("- Newly passing: #1."), "{brief}");
    // The refused command is named with the policy's reason.
    assert!(
        brief.contains("- 1 tool call(s) were refused by baton's policy:\n  - `"),
        "{brief}"
    );
}

#[test]
fn uncommitted_work_and_missing_notes_are_committed_and_briefed() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "src/half.txt", "content": "half-done work\n"}),
        ),
        (
            "Write",
            json!({"file_path": "feature_list.json", "content": features(&[true, false, false])}),
        ),
    ])));
    steps.push(Step::Reply(Reply::text("I implemented feature 1.")));
    steps.push(Step::Reply(Reply::text("Reading the brief.")));
    let (out, server) = run(&p, steps, &["--max-sessions", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // Nothing lost: committed by baton under a labelled commit.
    assert_eq!(git(&p, &["status", "--porcelain"]), "");
    let show = git(&p, &["show", "--stat", "--format=%s%n%b", "HEAD"]);
    assert!(
        show.starts_with("baton: commit work session 2 left uncommitted"),
        "{show}"
    );
    assert!(show.contains("src/half.txt"), "{show}");
    assert_eq!(git(&p, &["show", "HEAD:src/half.txt"]), "half-done work\n");
    let brief = prompt_of(&server, 4);
    assert!(
        brief.contains("- The session left uncommitted work; baton committed it as"),
        "{brief}"
    );
    assert!(brief.contains("src/half.txt"), "{brief}");
    assert!(
        brief.contains("- The progress notes were not updated. Write them this time."),
        "{brief}"
    );
    assert_eq!(state(&p)["sessions"][1]["gates"]["notes_updated"], false);
}

#[test]
fn sessions_that_only_claim_success_stall_with_exit_3() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    for _ in 0..8 {
        steps.push(Step::Reply(Reply::text(
            "All features are implemented and verified. The project is done!",
        )));
    }
    let (out, server) = run(&p, steps, &[]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("stalled: 3 coding sessions in a row without a newly passing feature"),
        "{}",
        stderr(&out)
    );
    // Feature 1 fails [run] feature_attempts (3) times and is deferred, which starts
    // the stall count afresh once; feature 2 then fails the 3 sessions of a stall.
    assert_eq!(server.requests().len(), 2 + 3 + 3);
    assert_eq!(
        state(&p)["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["target"].clone())
            .collect::<Vec<_>>(),
        [
            Value::Null,
            json!(1),
            json!(1),
            json!(1),
            json!(2),
            json!(2),
            json!(2)
        ]
    );
    assert_eq!(
        p.file("feature_list.json"),
        features(&[false, false, false])
    );
}

#[test]
fn premature_passes_from_the_initializer_are_reset() {
    let p = new_project();
    let steps = initializer(&features(&[true, true, false]));
    let (out, _s) = run(&p, steps, &["--max-sessions", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        p.file("feature_list.json"),
        features(&[false, false, false])
    );
    assert!(git(&p, &["log", "--format=%s"]).starts_with("baton: reset premature passes"));
}

#[test]
fn an_initializer_that_writes_invalid_json_is_retried_once_then_fails() {
    let p = new_project();
    let bad = "[\n  {\"category\": \"functional\", \"description\": \"x\",\n";
    let mut steps = initializer(bad);
    steps.extend(initializer(bad));
    let (out, server) = run(&p, steps, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("baton: error: the initializer did not produce a valid feature list after 2 sessions: feature_list.json:3:0: not valid JSON"),
        "{err}"
    );
    let retry = prompt_of(&server, 2);
    assert!(retry.contains("A previous initializer session did not leave a usable feature_list.json: feature_list.json:3:0: not valid JSON"), "{retry}");
    // Nothing lost: the broken attempt is in history.
    assert!(git(&p, &["log", "--oneline"]).contains("Initial feature list"));
}

#[test]
fn an_initializer_retry_that_succeeds_goes_on() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false]));
    steps.extend(initializer(&features(&[false, false, false])));
    let (out, server) = run(&p, steps, &["--max-sessions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        prompt_of(&server, 2).contains("feature_list.json has 2 features; at least 3 are required")
    );
    assert!(p.path().join(".baton/accepted_feature_list.json").exists());
}

#[test]
fn a_killed_run_resumes_without_losing_or_double_counting() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "src/work.txt", "content": "work before the crash\n"}),
        ),
        ("Bash", json!({"command": "touch started; sleep 3001"})),
    ])));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let mut child = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = p.path().join("started");
    let t0 = std::time::Instant::now();
    while !started.exists() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(started.exists(), "session 2 never started its command");
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait_bounded().unwrap();
    let _ = Command::new("bash")
        .args(["-c", "pkill -f 'sleep 3001' || true"])
        .status_bounded();
    assert_eq!(state(&p)["in_progress"]["number"], 2);

    let mut steps = honest(1, &[true, false, false]);
    steps.truncate(2);
    let (out, _s) = run(&p, steps, &["--max-sessions", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("resuming: session 0002 (coding) did not finish; running its gates now"),
        "{}",
        stderr(&out)
    );
    let s = state(&p);
    let numbers: Vec<u64> = s["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["number"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3]);
    assert_eq!(s["sessions"][1]["outcome"], "killed");
    assert_eq!(s["in_progress"], Value::Null);
    // The killed session's work was committed by baton, and the next session built on it.
    assert_eq!(
        git(&p, &["show", "HEAD~1:src/work.txt"]),
        "work before the crash\n"
    );
    assert_eq!(s["sessions"][2]["gates"]["flipped"], json!([1]));
}

#[test]
fn commits_work_without_any_git_identity_and_global_config_is_untouched() {
    let p = new_project();
    let home = tempfile::tempdir().unwrap();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .args(["--max-sessions", "2"])
        .env("HOME", home.path())
        .env(
            "GIT_CONFIG_GLOBAL",
            home.path().join("nonexistent-gitconfig"),
        )
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_AUTHOR_NAME")
        .env_remove("GIT_AUTHOR_EMAIL")
        .env_remove("GIT_COMMITTER_NAME")
        .env_remove("GIT_COMMITTER_EMAIL")
        .env_remove("EMAIL")
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        git(&p, &["log", "--format=%an <%ae>"])
            .lines()
            .all(|l| l == "baton <baton@localhost>")
    );
    assert!(git(&p, &["log", "--oneline"]).contains("Implement feature 1"));
    assert!(!home.path().join(".gitconfig").exists());
    assert!(!home.path().join("nonexistent-gitconfig").exists());
}

#[test]
fn a_project_from_another_harness_is_adopted_as_is() {
    let p = Project::with_toml("");
    std::fs::remove_file(p.path().join("baton.toml")).unwrap();
    git(&p, &["init", "-q"]);
    std::fs::write(p.path().join("app_spec.txt"), "spec\n").unwrap();
    std::fs::write(
        p.path().join("feature_list.json"),
        features(&[true, false, false]),
    )
    .unwrap();
    std::fs::write(
        p.path().join("claude-progress.txt"),
        "Earlier harness: feature 1 done.\n",
    )
    .unwrap();
    std::fs::write(p.path().join("init.sh"), "#!/usr/bin/env bash\necho up\n").unwrap();
    git(&p, &["add", "-A"]);
    git(&p, &["commit", "-qm", "made elsewhere"]);
    let mut steps = honest(2, &[true, true, false]);
    steps.extend(honest(3, &[true, true, true]));
    // No baton.toml: baton's defaults, so each flip is proven by the verifier.
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(baton_testkit::scenario::honest_verifier)
        .start(steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .args(["--pause", "0"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("adopted feature_list.json: 3 features, 1 passing"),
        "{}",
        stderr(&out)
    );
    // .baton/ never reaches git, even without a .gitignore entry.
    assert!(!git(&p, &["ls-files"]).contains(".baton"));
    assert_eq!(git(&p, &["status", "--porcelain"]), "");
    assert!(prompt_of(&server, 0).contains("Earlier harness: feature 1 done."));
}

#[test]
fn status_reports_progress_sessions_and_next_features() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let (out, _s) = run(&p, steps, &["--max-sessions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    let out = baton(&server, Wire::Anthropic)
        .arg("status")
        .arg(p.path())
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("features  1/3 passing (33%)\n  functional               1/2    \n  style                    0/1    \n"), "{text}");
    assert!(
        text.contains("sessions  2 · 480 tokens · $0.0024 · 0 violations undone · 0 refusals"),
        "{text}"
    );
    assert!(text.contains("tree      clean"), "{text}");
    assert!(text.contains("  #2    [functional] Feature 2"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    let out = baton(&server, Wire::Anthropic)
        .args(["status", "--json"])
        .arg(p.path())
        .output_bounded()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        (v["passing"].as_u64(), v["total"].as_u64()),
        (Some(1), Some(3))
    );
    assert_eq!(v["sessions"][1]["flipped"], json!([1]));
    assert_eq!(v["sessions"][1]["commits"], 1);
    assert_eq!(v["tree_clean"], true);
    assert_eq!(v["next"][0]["number"], 2);
}

#[test]
fn new_creates_a_project_and_refuses_to_overwrite_one() {
    let root = tempfile::tempdir().unwrap();
    let spec = root.path().join("spec.txt");
    std::fs::write(&spec, "Build a todo app.\n").unwrap();
    let dir = root.path().join("todo");
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    let new = |args: &[&str]| {
        baton(&server, Wire::Anthropic)
            .arg("new")
            .args(args)
            .output_bounded()
            .unwrap()
    };
    let d = dir.to_str().unwrap();
    let s = spec.to_str().unwrap();
    let out = new(&[d, "--spec", s, "--features", "50"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(dir.join("app_spec.txt")).unwrap(),
        "Build a todo app.\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join(".gitignore")).unwrap(),
        baton_harness::new::GITIGNORE.join("\n") + "\n"
    );
    // The user's files are committed, so no session takes them for its leftovers.
    let log = std::process::Command::new("git")
        .args(["log", "--oneline", "--name-only"])
        .current_dir(&dir)
        .output_bounded()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("baton new: the specification"), "{log}");
    assert!(
        log.contains("app_spec.txt") && log.contains("baton.toml"),
        "{log}"
    );
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap();
    assert!(toml.contains("features = 50 "), "{toml}");
    baton_config::Config::load(&dir).unwrap();
    assert!(dir.join(".git").is_dir());

    let out = new(&[d, "--spec", s]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("already holds baton.toml; use --force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(new(&[d, "--spec", s, "--force"]).status.code(), Some(0));

    let out = new(&[
        root.path().join("x").to_str().unwrap(),
        "--spec",
        "/nonexistent/spec.txt",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot read the spec /nonexistent/spec.txt"),
        "{}",
        stderr(&out)
    );
    std::fs::write(&spec, "  \n").unwrap();
    let out = new(&[root.path().join("y").to_str().unwrap(), "--spec", s]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is empty; describe what to build"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn first_ctrl_c_lets_the_running_tool_finish_then_stops_cleanly() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    // The call in flight waits until the test has seen baton take the Ctrl-C
    // (bounded: 60 s), so no sleep has to be long enough.
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Bash",
            json!({"command": "touch started; for _ in $(seq 1200); do [ -e go ] && break; sleep 0.05; done; echo finished > done.txt"}),
        ),
        ("Bash", json!({"command": "echo never > never.txt"})),
    ])));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let mut child = super::spawn_run_said(&server, &p);
    let started = p.path().join("started");
    let t0 = std::time::Instant::now();
    while !started.exists() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(started.exists());
    // baton's stderr, line by line, to see it take the Ctrl-C.
    let reader = super::ctrl_c(&mut child);
    std::fs::write(p.path().join("go"), "").unwrap();
    let status = child.wait_bounded().unwrap();
    let err = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    // The call in flight finished; the next one never ran; gates ran; nothing pending.
    assert_eq!(p.file("done.txt"), "finished\n");
    assert!(!p.path().join("never.txt").exists());
    let s = state(&p);
    assert_eq!(s["in_progress"], Value::Null);
    assert_eq!(s["sessions"][1]["outcome"], "interrupted");
    assert_eq!(git(&p, &["status", "--porcelain"]), "");
    assert!(
        err.contains("interrupted; `baton run` again resumes"),
        "{err}"
    );
}

/// Ctrl-C while the initializer waits for the model: the run ends interrupted
/// (exit 130) and says so; the stopped initializer is not a failed one ("trying
/// once more"), and a line about it says there is no list yet, not "passing 0/0".
#[test]
fn ctrl_c_during_the_initializer_is_an_interruption_not_a_failure() {
    let p = new_project();
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![Step::Stall {
            reply: Reply::text("Reading the spec."),
            events: 1,
        }],
    );
    let mut child = super::spawn_run_said(&server, &p);
    let t0 = std::time::Instant::now();
    while server.requests().is_empty() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(server.requests().len(), 1);
    let pid = child.id();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status_bounded()
            .unwrap()
            .success()
    );
    let stderr_pipe = child.stderr.take().unwrap();
    let err = std::io::read_to_string(stderr_pipe).unwrap();
    let status = child.wait_bounded().unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(!err.contains("trying once more"), "{err}");
    assert!(!err.contains("passing 0/0"), "{err}");
    assert!(
        err.contains("session 0001 initializer · interrupted")
            && err.contains("no feature list yet"),
        "{err}"
    );
    assert!(
        err.contains("interrupted; `baton run` again resumes"),
        "{err}"
    );
}

/// No process of a session lives into the gates (it could change what baton's
/// git reads between the boundary's restore and its next command): a server the
/// session left running is stopped when the session ends, the next session finds
/// it gone (and starts it again with `init.sh`), and nothing outlives the run.
#[test]
fn a_sessions_servers_stop_before_the_gates_and_nothing_outlives_the_run() {
    let p = new_project();
    // A duration no other test's process has: found by its command line below.
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let sleep = format!("303.{nonce:09}");
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tool(
        "Bash",
        json!({"command": format!("sleep {sleep} > /dev/null 2>&1 & echo $! > server.pid; echo 'server.pid' >> .gitignore")}),
    )));
    steps.push(Step::Reply(Reply::text("Server started.")));
    steps.push(Step::Reply(Reply::tool(
        "Bash",
        json!({"command": "kill -0 $(cat server.pid) 2>/dev/null && echo alive || echo gone"}),
    )));
    steps.push(Step::Reply(Reply::text("Looked.")));
    let (out, server) = run(&p, steps, &["--max-sessions", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let alive = tool_results(Wire::Anthropic, &server.requests()[5].body);
    assert_eq!(alive[0].1, "gone\nExit code: 0");
    // `$!` was the pid inside the sandbox's PID namespace: look for the server out
    // here by its command line.
    let still = running_with_command(format!("sleep\x00{sleep}\x00").as_bytes());
    assert!(still.is_empty(), "still running: {still:?}");
}

#[test]
fn run_without_spec_or_feature_list_says_what_to_do() {
    let p = Project::new();
    let (out, server) = run(&p, vec![], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("has neither app_spec.txt nor feature_list.json: nothing to build (create a project with `baton new DIR --spec FILE`)"),
        "{}",
        stderr(&out)
    );
    assert!(server.requests().is_empty());
    let (out, _s) = {
        let server = ScriptedServer::start(Wire::Anthropic, vec![]);
        let out = baton(&server, Wire::Anthropic)
            .args(["run", "/nonexistent/baton-project"])
            .output_bounded()
            .unwrap();
        (out, server)
    };
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("/nonexistent/baton-project does not exist"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_damaged_feature_list_in_an_adopted_project_is_named_by_line() {
    let p = Project::new();
    std::fs::write(p.path().join("app_spec.txt"), "spec\n").unwrap();
    std::fs::write(p.path().join("feature_list.json"), "[\n  {\"category\": \"a\", \"description\": \"b\", \"steps\": [], \"passes\": \"no\"}\n]\n").unwrap();
    git(&p, &["init", "-q"]);
    let (out, _s) = run(&p, vec![], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("feature_list.json:2: feature 1: \"passes\" must be true or false"),
        "{}",
        stderr(&out)
    );
}

/// The budget stop is driven to its end: once the project has cost what
/// `--budget-usd` allows, no further session starts and the run exits 2.
#[test]
fn the_budget_stops_the_run_between_sessions() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    steps.extend(honest(2, &[true, true, false]));
    let (out, server) = run(&p, steps, &["--budget-usd", "0.002"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // The limit as it was given, not rounded away to "$0.00".
    assert!(err.contains("budget $0.002 reached"), "{err}");
    // Two sessions of $0.0012 each: the third never started.
    assert_eq!(server.remaining(), 2, "{err}");
}

/// The budget stops a session mid-way, not only between sessions: a session of
/// seven responses, with what is left of the budget spent by its third, stops
/// there (outcome `budget_limit`), and the run ends at the budget (exit 2), a
/// turn's cost past it at most.
#[test]
fn the_budget_stops_a_session_at_the_turn_that_spends_it() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(baton_testkit::scenario::working(1, &[true, false, false]));
    let (out, server) = run(&p, steps, &["--budget-usd", "0.0025"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("budget $0.0025 reached"), "{err}");
    assert!(
        err.contains("session 0002 coding · budget_limit · 3 turns · "),
        "{err}"
    );
    // The session's four other responses were never asked for.
    assert_eq!(server.remaining(), 4, "{err}");
    let state: Value = serde_json::from_str(&p.file(".baton/state.json")).unwrap();
    let spent: f64 = state["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["cost_usd"].as_f64().unwrap())
        .sum();
    assert!(spent < 0.0025 + 0.0007, "spent {spent}\n{err}");
}

/// The hours stop is driven to its end: `--max-hours` bounds the session that is
/// running (its model thinks half a second a reply) and no other starts.
#[test]
fn max_hours_stops_the_run_between_sessions() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .think_time(std::time::Duration::from_millis(500))
        .start(steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .args(["--max-hours", "0.0001"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--max-hours 0.0001 reached"), "{err}");
    // The hours bound the session too: it was cut, and no other started.
    assert!(err.contains("initializer · time_limit"), "{err}");
    assert!(server.remaining() >= 2, "{err}");
}

/// A usage error is an error, exit 1: exit 2 means a limit was reached, and a
/// script must not take a typo for one. `--help` still exits 0.
#[test]
fn a_usage_error_exits_1_not_the_limit_code() {
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", "--max-sesions", "3", "."])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unexpected argument '--max-sesions'"),
        "{}",
        stderr(&out)
    );
    let help = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", "--help"])
        .output_bounded()
        .unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("--max-sessions"));
}

/// `baton --help` can be scanned: each command on one line, said in a short
/// sentence (the details are in `baton COMMAND --help`).
#[test]
fn the_help_lists_each_command_in_a_short_line() {
    let help = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("--help")
        .output_bounded()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout).into_owned();
    let commands: Vec<&str> = text
        .split("Commands:")
        .nth(1)
        .and_then(|t| t.split("Options:").next())
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(commands.len() >= 15, "{text}");
    for line in commands {
        assert!(line.chars().count() <= 90, "too long to scan: {line}");
    }
}

/// `baton run` on a directory that is no project refuses and leaves it as it
/// was (no `.baton/`, so `baton status` does not take it for a project); a
/// provider name baton does not know is refused before `baton new` creates
/// anything.
#[test]
fn refusals_leave_no_trace_behind() {
    let plain = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("run")
        .arg(plain.path())
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_dir(plain.path()).unwrap().count(),
        0,
        "left behind"
    );
    let status = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("status")
        .arg(plain.path())
        .output_bounded()
        .unwrap();
    assert_eq!(status.status.code(), Some(1));
    assert!(
        stderr(&status).contains("is not a baton project"),
        "{}",
        stderr(&status)
    );
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("todo");
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args([
            "new",
            dir.to_str().unwrap(),
            "--idea",
            "a todo app",
            "--provider",
            "anthropc",
        ])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("invalid value 'anthropc' for '--provider"),
        "{}",
        stderr(&out)
    );
    assert!(
        !dir.exists(),
        "the project was created before the provider was refused"
    );
}

/// A session deletes feature 2 of 4 from the list: the restore names feature 2
/// ("Feature 2") as removed, and no other feature as changed.
#[test]
fn a_deleted_feature_is_named_by_the_restore() {
    let p = new_project();
    let toml = std::fs::read_to_string(p.path().join("baton.toml")).unwrap();
    let toml = toml.replace(
        "features = 3\nmin_features = 3",
        "features = 4\nmin_features = 4",
    );
    std::fs::write(p.path().join("baton.toml"), toml).unwrap();
    let mut steps = initializer(&features(&[false; 4]));
    let mut four: Vec<serde_json::Value> = serde_json::from_str(&features(&[false; 4])).unwrap();
    four.remove(1);
    let three = serde_json::to_string_pretty(&four).unwrap() + "\n";
    // By a script (the Write tool's guard refuses it on the spot, naming it).
    steps.push(Step::Reply(Reply::tools(&[
        ("Write", json!({"file_path": "tidy/list.json", "content": three})),
        (
            "Write",
            json!({"file_path": "tidy/tidy.sh", "content": "cp tidy/list.json feature_list.json\n"}),
        ),
        (
            "Bash",
            json!({"command": "bash tidy/tidy.sh && echo 'Session 2: tidied the list.' >> claude-progress.txt && git add -A && git commit -qm tidy"}),
        ),
    ])));
    steps.push(Step::Reply(Reply::text("Tidied.")));
    let (out, _server) = run(&p, steps, &["--max-sessions", "2"]);
    let err = stderr(&out);
    assert!(
        err.contains("feature 2 (\"Feature 2\") was removed"),
        "{err}"
    );
    assert!(
        !err.contains("feature 3 (") && !err.contains("feature 4 ("),
        "{err}"
    );
}

/// The initializer writes a list too short to accept, marking a feature passing,
/// twice: the run fails (exit 1), and neither `status` nor its JSON counts what
/// the rejected list claims: nothing has proven it.
#[test]
fn a_list_baton_rejected_counts_nothing_as_passing() {
    let p = new_project();
    let short = features(&[true, false]);
    let mut steps = initializer(&short);
    steps.extend(initializer(&short));
    let (out, _server) = run(&p, steps, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("1/2 passing"), "{err}");
    let status = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .arg("status")
            .arg(p.path())
            .args(args)
            .output_bounded()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let json: serde_json::Value = serde_json::from_str(&status(&["--json"])).unwrap();
    assert_eq!(json["passing"], 0, "{json}");
    assert_eq!(json["list_accepted"], false, "{json}");
    assert_eq!(json["proofs"], serde_json::json!([]), "{json}");
    let text = status(&[]);
    assert!(text.contains("0/2 passing"), "{text}");
    assert!(text.contains("not accepted yet"), "{text}");
}

/// A finished project whose list a person then broke by hand: the next `baton
/// run` puts the accepted list back (keeping the broken file for them) and says
/// so, before it says "complete"; it never calls itself complete over a list it
/// could not read.
#[test]
fn a_broken_list_on_a_finished_project_is_restored_and_said() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    steps.extend(honest(2, &[true, true, false]));
    steps.extend(honest(3, &[true, true, true]));
    let (out, _server) = run(&p, steps, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let accepted = p.file("feature_list.json");
    std::fs::write(p.path().join("feature_list.json"), "[{ \"description\": \n").unwrap();
    let (out, _server) = run(&p, vec![], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("restored feature_list.json when the run started (after session 0004)"),
        "{err}"
    );
    assert!(err.contains("3/3 passing"), "{err}");
    assert_eq!(p.file("feature_list.json"), accepted);
    // No session 0005 ever runs: none is named.
    assert!(!err.contains("session 0005"), "{err}");
    let kept = p.file(".baton/replaced/feature_list.json.after-0004");
    assert_eq!(kept, "[{ \"description\": \n");
}

/// The run says at its start what it works with: provider, model and whether it
/// is priced (an unpriced model's $0 is said, not left to puzzle over), the
/// project's kind and browser, the verifier and the budget.
#[test]
fn the_run_names_provider_model_prices_kind_verifier_and_budget_at_its_start() {
    let p = new_project();
    let (out, _server) = run(
        &p,
        initializer(&features(&[false, false, false])),
        &["--max-sessions", "1", "--model", "my-local-model"],
    );
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.starts_with("baton: anthropic · "))
        .unwrap_or_else(|| panic!("no start line: {err}"));
    assert!(
        line.contains("my-local-model (not priced: its costs show as $0"),
        "{line}"
    );
    assert!(line.contains("[prices.\"my-local-model\"]"), "{line}");
    // The kind decides how every feature is judged: the line says where it is set.
    assert!(
        line.contains(" project ([project] kind), browser"),
        "{line}"
    );
    // Wherever its cost shows, an unpriced session's $0 says so.
    assert!(err.contains("tokens · $0 (unpriced) · "), "{err}");
    let status = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("status")
        .arg(p.path())
        .output_bounded()
        .unwrap();
    assert!(
        stdout(&status).contains("tokens · $0 (unpriced) · "),
        "{}",
        stdout(&status)
    );
    let report = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["report", "-o", "-"])
        .arg(p.path())
        .output_bounded()
        .unwrap();
    assert!(
        stdout(&report).contains("$0 (unpriced)"),
        "no unpriced mark in the report"
    );
    assert!(line.contains("verifier"), "{line}");
    assert!(line.contains("· no budget ·"), "{line}");
    assert!(line.contains("· network: allowlist of "), "{line}");
    let (out, _server) = run(&p, vec![], &["--max-sessions", "1", "--budget-usd", "2"]);
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.starts_with("baton: anthropic · "))
        .unwrap_or_else(|| panic!("no start line: {err}"));
    assert!(line.contains("per million tokens"), "{line}");
    assert!(line.contains("· budget $2.00 ·"), "{line}");
    // The one setting that lets a false "done" through is said (the test
    // projects trust the agent), and only where it is on.
    assert!(p.file("baton.toml").contains("trust_agent = true"));
    assert!(
        line.contains("taken on the agent's word ([verify] trust_agent = true)"),
        "{line}"
    );
    let toml = p
        .file("baton.toml")
        .replace("trust_agent = true", "trust_agent = false");
    std::fs::write(p.path().join("baton.toml"), toml).unwrap();
    let (out, _server) = run(&p, vec![], &["--max-sessions", "1"]);
    let err = stderr(&out);
    let line = err
        .lines()
        .find(|l| l.starts_with("baton: anthropic · "))
        .unwrap_or_else(|| panic!("no start line: {err}"));
    assert!(!line.contains("trust_agent"), "{line}");
}

/// A `--budget-usd` given once is the project's for later runs (a resume keeps
/// it), until baton.toml's `[run] budget_usd` changes: that later word is then
/// the one the start line, the run's limit, `status` and the report go by.
#[test]
fn a_budget_given_once_holds_until_baton_toml_changes_it() {
    let p = new_project();
    let start = |out: &Output| -> String {
        stderr(out)
            .lines()
            .find(|l| l.starts_with("baton: anthropic · "))
            .unwrap_or_else(|| panic!("no start line: {}", stderr(out)))
            .to_string()
    };
    let budget = || -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["status", "--json"])
            .arg(p.path())
            .output_bounded()
            .unwrap();
        let v: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
        v["budget_usd"].clone()
    };
    let (out, _server) = run(
        &p,
        initializer(&features(&[false, false, false])),
        &["--max-sessions", "1", "--budget-usd", "5"],
    );
    assert!(start(&out).contains("· budget $5.00 ·"), "{}", stderr(&out));
    // Resumed without the flag: still 5.
    let (out, _server) = run(&p, vec![], &["--max-sessions", "1"]);
    assert!(start(&out).contains("· budget $5.00 ·"), "{}", stderr(&out));
    assert_eq!(budget(), json!(5.0));
    // baton.toml says otherwise since: its word wins everywhere.
    let toml = p.file("baton.toml");
    std::fs::write(
        p.path().join("baton.toml"),
        toml.replace("[run]\n", "[run]\nbudget_usd = 0.05\n"),
    )
    .unwrap();
    assert_eq!(budget(), json!(0.05));
    let (out, _server) = run(&p, vec![], &["--max-sessions", "1"]);
    assert!(start(&out).contains("· budget $0.05 ·"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("$5.00"), "{}", stderr(&out));
    // A new flag is the project's again, from then on.
    let (out, _server) = run(&p, vec![], &["--max-sessions", "1", "--budget-usd", "2"]);
    assert!(start(&out).contains("· budget $2.00 ·"), "{}", stderr(&out));
    let (out, _server) = run(&p, vec![], &["--max-sessions", "1"]);
    assert!(start(&out).contains("· budget $2.00 ·"), "{}", stderr(&out));
    assert_eq!(budget(), json!(2.0));
}

/// A coding session stopped by Ctrl-C had no fair chance at its feature: it
/// does not count towards the stall, so with `stall_sessions = 1` the next
/// `baton run` goes on coding instead of stopping as stalled.
#[test]
fn a_session_stopped_by_ctrl_c_does_not_count_towards_the_stall() {
    let p = Project::with_toml(&TOML.replace("stall_sessions = 3", "stall_sessions = 1"));
    std::fs::write(p.path().join("app_spec.txt"), "Build a tiny app.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    git(&p, &["init", "-q"]);
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Stall {
        reply: Reply::text("Working on it."),
        events: 1,
    });
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let mut child = super::spawn_run_said(&server, &p);
    let t0 = std::time::Instant::now();
    // The initializer's two requests, then the coding session's first.
    while server.requests().len() < 3 && t0.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(server.requests().len(), 3);
    let reader = super::ctrl_c(&mut child);
    let status = child.wait_bounded().unwrap();
    let err = reader.join().unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("coding · interrupted"), "{err}");
    let state: Value = serde_json::from_str(&p.file(".baton/state.json")).unwrap();
    assert_eq!(state["stalled"].as_u64().unwrap_or(0), 0, "{state}");
    // The next run codes on: its session builds feature 1.
    let (out, server) = run(
        &p,
        honest(1, &[true, false, false]),
        &["--max-sessions", "1"],
    );
    assert_ne!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(!stderr(&out).contains("stalled"), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0, "{}", stderr(&out));
}

/// A tamper whose removal shifts what follows is named by the features it
/// touched, not by position: #1's description edited, #2 removed, #3's steps
/// rewritten are said as exactly that, in the record, the commit's words and
/// the next brief.
#[test]
fn a_tamper_is_named_by_the_features_it_touched_not_by_position() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    let mut tampered: Vec<Value> = serde_json::from_str(&features(&[false, false, false])).unwrap();
    tampered[0]["description"] = json!("Feature 1 (renamed)");
    tampered[2]["steps"] = json!(["skip it"]);
    tampered.remove(1);
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "t.json", "content": serde_json::to_string_pretty(&tampered).unwrap()}),
        ),
        (
            "Bash",
            json!({"command": "cp t.json feature_list.json && rm t.json && echo 'Session 2.' >> claude-progress.txt && git add -A && git commit -qm 'Tidy the list'"}),
        ),
    ])));
    steps.push(Step::Reply(Reply::text("Tidied.")));
    steps.push(Step::Reply(Reply::text("Looking.")));
    let (out, server) = run(&p, steps, &["--max-sessions", "3"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let said = [
        "feature 1: \"description\" was changed",
        "feature 2 (\"Feature 2\") was removed",
        "feature 3: \"steps\" was changed",
    ];
    assert_eq!(state(&p)["sessions"][1]["gates"]["violations"], json!(said));
    for s in said {
        assert!(err.contains(s), "{s}: {err}");
    }
    let brief = prompt_of(&server, 4);
    assert!(
        brief.contains("feature 3: \"steps\" was changed"),
        "{brief}"
    );
    assert_eq!(
        p.file("feature_list.json"),
        features(&[false, false, false])
    );
}

/// The configured pause between sessions is its own part of a run's wall time,
/// not "baton's own work between sessions": the run's record holds it and the
/// report names it.
#[test]
fn the_pause_between_sessions_is_its_own_part_of_the_wall_time() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let (out, _server) = run(&p, steps, &["--max-sessions", "2", "--pause", "0.4"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let run: Value =
        serde_json::from_str(p.file(".baton/runs.jsonl").lines().next().unwrap()).unwrap();
    let paused = run["pause_ms"].as_u64().unwrap_or(0);
    // One pause, between the two sessions.
    assert!(paused >= 400, "{run}");
    let page = super::report_page(p.path());
    let wall = page
        .split(r#"<span id="wall-time">"#)
        .nth(1)
        .and_then(|s| s.split("</span>").next())
        .unwrap_or_else(|| panic!("no wall time: {page}"));
    assert!(wall.contains(" · pauses "), "{wall}");
}

/// A value out of range in baton.toml is shown where it is, as a syntax error
/// is: line, column and a caret under the value.
#[test]
fn a_bad_value_in_baton_toml_is_shown_where_it_is() {
    let p = new_project();
    let toml = p
        .file("baton.toml")
        .replace("[run]\n", "[run]\nbudget_usd = -3\n");
    std::fs::write(p.path().join("baton.toml"), &toml).unwrap();
    let line = toml.lines().position(|l| l == "budget_usd = -3").unwrap() + 1;
    let (out, _server) = run(&p, vec![], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "run.budget_usd: must be a non-negative number (line {line}, column 14)"
        )),
        "{err}"
    );
    assert!(err.contains(&format!("{line} | budget_usd = -3")), "{err}");
    assert!(err.contains("|              ^^"), "{err}");
}

/// A person's change to baton.toml left uncommitted between runs is committed
/// by baton as the person's, said, and kept out of the agent's first commit.
#[test]
fn a_persons_uncommitted_baton_toml_is_committed_as_theirs() {
    let p = new_project();
    let (out, _server) = run(
        &p,
        initializer(&features(&[false, false, false])),
        &["--max-sessions", "1"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let toml = p.file("baton.toml") + "# the person's note\n";
    std::fs::write(p.path().join("baton.toml"), toml).unwrap();
    // Something else the person staged stays theirs to commit.
    std::fs::write(p.path().join("mine.txt"), "mine\n").unwrap();
    git(&p, &["add", "mine.txt"]);
    let (out, _server) = run(
        &p,
        honest(1, &[true, false, false]),
        &["--max-sessions", "1"],
    );
    let err = stderr(&out);
    assert!(
        err.contains("committed your change to baton.toml ("),
        "{err}"
    );
    let touching = git(&p, &["log", "--format=%s", "--", "baton.toml"]);
    assert!(
        touching.starts_with("baton: the person's change to baton.toml, before the run\n"),
        "{touching}"
    );
    let files = git(&p, &["show", "--name-only", "--format=", "HEAD~0"]);
    let persons = git(
        &p,
        &[
            "log",
            "--format=%H",
            "-1",
            "--grep",
            "the person's change to baton.toml",
        ],
    );
    let in_it = git(&p, &["show", "--name-only", "--format=", persons.trim()]);
    assert_eq!(in_it.trim(), "baton.toml", "{in_it}");
    assert!(
        !files.contains("baton.toml") || files.trim() == "baton.toml",
        "{files}"
    );
}
