//! One run per project, and records that a second process or a crash cannot make
//! drift.

use std::time::Duration;

use baton_testkit::{ScriptedServer, Wire};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::run::{features, honest, initializer, new_project};
use super::*;

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

#[test]
fn a_second_run_on_a_project_is_refused_at_once_and_the_first_is_intact() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    steps.extend(honest(2, &[true, true, false]));
    steps.extend(honest(3, &[true, true, true]));
    // The model thinks a while, so the first run is still going when the second starts.
    let server = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(300))
        .start(steps);
    let first = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lock = p.path().join(".baton/run.lock");
    wait_for("the first run's lock", || {
        std::fs::read_to_string(&lock).is_ok_and(|t| t.contains("pid "))
    });
    let second = run_on(&server, Wire::Anthropic, &p, &[]);
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("another baton run (pid {}", first.id())),
        "{err}"
    );
    assert!(
        err.contains("`baton status`, `log` and `report` work meanwhile"),
        "{err}"
    );
    // Status works while the run holds the lock.
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", p.path().to_str().unwrap()])
        .output_bounded()
        .unwrap();
    assert!(status.status.success(), "{}", stderr(&status));
    let out = first.wait_with_output_bounded().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0);
    // One consistent record: sessions 1..4, each once, the lock released.
    let s = state(&p);
    let numbers: Vec<Value> = s["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["number"].clone())
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4]);
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), "");
}

#[test]
fn a_killed_runs_lock_is_taken_over_with_a_note() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(500))
        .start(steps);
    let mut first = spawn_run(&server, &p);
    let lock = p.path().join(".baton/run.lock");
    wait_for("the first run's lock", || {
        std::fs::read_to_string(&lock).is_ok_and(|t| t.contains("pid "))
    });
    first.kill().unwrap();
    first.wait_bounded().unwrap();
    // The next run takes the lock at once and says whose it was.
    let server2 = ScriptedServer::start(Wire::Anthropic, vec![]);
    let out = run_on(&server2, Wire::Anthropic, &p, &["--max-sessions", "0"]);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("the lock of baton run (pid {}", first.id())),
        "{err}"
    );
    assert!(err.contains("taking over"), "{err}");
}

/// Whether process `pid` exists and is not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().chars().next())
        })
        .is_some_and(|state| state.is_some_and(|c| c != 'Z'))
}

#[test]
fn processes_a_killed_run_left_are_stopped_by_the_next_run() {
    // Without the sandbox nothing ties the server's life to the run's.
    leftovers_are_stopped(false);
}

#[test]
fn processes_a_killed_sandboxed_run_left_are_gone_after_the_next_run() {
    leftovers_are_stopped(true);
}

fn leftovers_are_stopped(sandbox: bool) {
    let p = new_project();
    if !sandbox {
        let toml = p.file("baton.toml") + "[sandbox]\nenabled = false\n";
        std::fs::write(p.path().join("baton.toml"), toml).unwrap();
        super::run::git(&p, &["add", "baton.toml"]);
    }
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(baton_testkit::Step::Reply(baton_testkit::Reply::tool(
        "Bash",
        serde_json::json!({"command": "sleep 613", "run_in_background": true}),
    )));
    steps.push(baton_testkit::Step::Reply(baton_testkit::Reply::text(
        "waiting",
    )));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(700))
        .start(steps);
    let mut first = spawn_run(&server, &p);
    // The coding session started a server; kill -9 the run while the model thinks.
    let transcript = p.path().join(".baton/sessions/0002.jsonl");
    wait_for("the background process", || {
        let t = std::fs::read_to_string(&transcript).unwrap_or_default();
        t.contains("Started in the background (pid ")
    });
    // The pid the agent was told is the one inside the sandbox's PID namespace;
    // find the server's pid out here by its command line.
    let mut pid = 0u32;
    wait_for("the server's pid", || {
        pid = running_with_command(b"sleep\x00613\x00")
            .first()
            .map_or(0, |(p, _)| *p);
        pid != 0
    });
    first.kill().unwrap();
    first.wait_bounded().unwrap();
    // Under bubblewrap (--die-with-parent) the sandboxed server dies with the run
    // (waited for, not slept on); without it, it outlives the run and the next run
    // must stop it.
    let dies_with_run = sandbox && baton_policy::sandbox::kernel_binds();
    if dies_with_run {
        wait_for("the sandboxed server to die with the run", || !running(pid));
    }
    let survived = running(pid);
    assert!(survived != dies_with_run, "pid {pid}: survived {survived}");
    // The next run stops it before anything else, and says so.
    let server2 = ScriptedServer::start(Wire::Anthropic, honest(1, &[true, false, false]));
    let out = run_on(&server2, Wire::Anthropic, &p, &["--max-sessions", "1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    if survived {
        assert!(
            err.contains("stopped 1 process group(s) left running by an earlier run"),
            "{err}"
        );
    }
    wait_for("the leftover to be gone", || !running(pid));
    assert!(
        !p.path().join(".baton/processes").exists(),
        "the record is cleared at the end"
    );
    // The killed run never wrote its time; the next one wrote it for it, from
    // its sessions, and the report counts it in the wall time.
    let runs: Vec<serde_json::Value> = p
        .file(".baton/runs.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(runs[0]["killed"], true, "{runs:?}");
    assert!(runs[1].get("killed").is_none(), "{runs:?}");
    let page = super::report_page(p.path());
    assert!(
        page.contains("(1 run(s) killed, counted from their sessions)"),
        "{page}"
    );
}

#[test]
fn a_rejected_feature_list_is_never_adopted_and_the_initializer_runs_again() {
    let p = new_project();
    // Two features where three are required, twice: the run stops.
    let mut steps = initializer(&features(&[false, false]));
    steps.extend(initializer(&features(&[false, false])));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = run_on(&server, Wire::Anthropic, &p, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("[project] min_features"), "{err}");
    assert!(err.contains("features in baton.toml"), "{err}");
    // Run again: the short list is not adopted; the initializer runs, told why.
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = run_on(&server, Wire::Anthropic, &p, &["--max-sessions", "2"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("adopted"), "{err}");
    assert!(err.contains("running the initializer again"), "{err}");
    let first = prompt_of(&server, 0);
    assert!(first.contains("You are the first engineer"), "{first}");
    assert!(
        first.contains("has 2 features; at least 3 are required"),
        "{first}"
    );
    let s = state(&p);
    assert_eq!(s["sessions"][2]["kind"], "initializer");
    assert_eq!(s["sessions"][3]["gates"]["flipped"], serde_json::json!([1]));
}

#[test]
fn a_deleted_or_invalid_list_is_restored_before_the_session_with_passes_intact() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = run_on(&server, Wire::Anthropic, &p, &["--max-sessions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let accepted = p.file("feature_list.json");
    for (n, damage) in [(3, None), (4, Some("{ not json"))] {
        match damage {
            None => std::fs::remove_file(p.path().join("feature_list.json")).unwrap(),
            Some(text) => std::fs::write(p.path().join("feature_list.json"), text).unwrap(),
        }
        // The session's first call sees the list as it was accepted.
        let server = ScriptedServer::start(
            Wire::Anthropic,
            vec![
                baton_testkit::Step::Reply(baton_testkit::Reply::tool(
                    "Bash",
                    serde_json::json!({"command": "grep -c '\"passes\": true' feature_list.json"}),
                )),
                baton_testkit::Step::Reply(baton_testkit::Reply::text("looked")),
            ],
        );
        let out = run_on(&server, Wire::Anthropic, &p, &["--max-sessions", "1"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "restored feature_list.json when the run started (after session {:04})",
                n - 1
            )),
            "{err}"
        );
        let results = tool_results(Wire::Anthropic, &server.requests()[1].body);
        assert!(results[0].1.starts_with("1\n"), "{results:?}");
        assert!(prompt_of(&server, 0).contains("Features passing: 1/3"));
        assert_eq!(p.file("feature_list.json"), accepted);
        // The tree holds the accepted list again (committed if it had changed there).
        let changed = super::run::git(&p, &["status", "--porcelain", "feature_list.json"]);
        assert_eq!(changed, "", "{n}");
    }
    let ledger = p.file(".baton/ledger.jsonl");
    assert!(
        ledger.contains("when the run started (after session 0002): feature_list.json was deleted"),
        "{ledger}"
    );
}

#[test]
fn a_budget_that_cannot_be_counted_is_refused_with_the_fix() {
    let p = new_project();
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    let out = run_on(
        &server,
        Wire::Anthropic,
        &p,
        &["--budget-usd", "5", "--model", "my-local-model"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot be counted"), "{err}");
    assert!(err.contains("[prices.\"my-local-model\"]"), "{err}");
    assert_eq!(server.requests().len(), 0, "nothing was spent");
}

#[test]
fn commands_on_what_is_not_a_project_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let baton = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(args)
            .output_bounded()
            .unwrap()
    };
    let d = dir.path().to_str().unwrap();
    let out = baton(&["status", d]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a baton project"),
        "{}",
        stderr(&out)
    );
    let missing = dir.path().join("no/such/dir");
    let out = baton(&["doctor", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("no/such/dir does not exist"), "{err}");
    assert!(
        !stdout(&out).contains("install"),
        "no advice to install git for a bad path"
    );
    // An unknown provider names every one baton knows.
    let out = baton(&["exec", d, "--prompt", "x", "--provider", "bogus"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("\"claude-code\""), "{}", stderr(&out));
}

/// A run killed mid-session leaves its snapshot of git's guarded files in baton's
/// state dir. A hook planted then (by a script just before the crash, or by
/// anything while no run watches) is removed by the next run before any git
/// command, recorded, and so never runs in the user's own `git commit`.
#[test]
fn a_hook_planted_before_a_crash_is_removed_by_the_next_run() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(baton_testkit::Step::Reply(baton_testkit::Reply::text(
        "thinking",
    )));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(700))
        .start(steps);
    let mut first = spawn_run(&server, &p);
    let transcript = p.path().join(".baton/sessions/0002.jsonl");
    wait_for("the coding session", || transcript.exists());
    first.kill().unwrap();
    first.wait_bounded().unwrap();
    // A git command killed with the run, as it wrote the index, leaves its
    // lock: every commit after would fail on it.
    std::fs::write(p.path().join(".git/index.lock"), "").unwrap();
    let hook = p.path().join(".git/hooks/post-commit");
    std::fs::write(&hook, "#!/bin/sh\necho planted > /tmp/never\n").unwrap();
    let before = p.file(".git/config");
    std::fs::write(
        p.path().join(".git/config"),
        format!("{before}[core]\n\tpager = sh -c 'echo planted'\n"),
    )
    .unwrap();
    let server2 = ScriptedServer::start(Wire::Anthropic, honest(1, &[true, false, false]));
    let out = run_on(&server2, Wire::Anthropic, &p, &["--max-sessions", "1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            ".git/hooks/post-commit was added after a run that did not end cleanly; restored"
        ),
        "{err}"
    );
    assert!(
        err.contains("baton: removed .git/index.lock, git's lock that the run left behind"),
        "{err}"
    );
    assert!(!hook.exists(), "the planted hook survived");
    assert!(
        !p.file(".git/config").contains("planted"),
        "{}",
        p.file(".git/config")
    );
    let recorded: Vec<Value> = p
        .file(".baton/ledger.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == "boundary_violation")
        .collect();
    assert_eq!(recorded.len(), 2, "{recorded:?}");
}
