//! `baton status` and `baton log` on fixed records, snapshotted: what people read
//! must not change by accident. The fixtures are written here (state, accepted list,
//! ledger, a transcript with fixed times), so the output is the same on every run;
//! the temp directory is masked.

use baton_testkit::{ScriptedServer, Wire};
use serde_json::{Value, json};

use super::*;

fn git(dir: &Path, args: &[&str]) {
    baton_testkit::git(dir, args);
}

fn feature_list() -> String {
    let list: Vec<Value> = (1..=7)
        .map(|i| {
            let category = ["functional", "style", "a category with a very long name indeed"][i % 3];
            json!({
                "category": category,
                "description": format!("Feature {i}: a user can do thing number {i}{}", if i == 5 {
                    ", and this description goes on long enough that the status table must cut it to fit"
                } else { "" }),
                "steps": ["open", "check"],
                "passes": i <= 3,
            })
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap() + "\n"
}

fn session(
    n: u32,
    kind: &str,
    outcome: &str,
    minutes: u64,
    tokens: [u64; 4],
    cost: f64,
    gates: Value,
) -> Value {
    let start = 1_736_154_000_000u64 + u64::from(n) * 3_600_000;
    json!({
        "number": n, "kind": kind, "started_ms": start, "ended_ms": start + minutes * 60_000 + 7_000,
        "outcome": outcome, "turns": 10 + n,
        "usage": {"input_tokens": tokens[0], "output_tokens": tokens[1],
                  "cache_read_tokens": tokens[2], "cache_write_tokens": tokens[3]},
        "cost_usd": cost, "gates": gates, "commits": 1,
    })
}

fn gates(flipped: &[usize], extra: Value) -> Value {
    let mut g = json!({"flipped": flipped, "unflipped": [], "violations": [], "leftover_files": [],
                       "notes_updated": true, "refusals": 0});
    if let (Some(g), Value::Object(e)) = (g.as_object_mut(), extra) {
        g.extend(e);
    }
    g
}

/// A project with five recorded sessions, one of each finding, in a clean git tree.
fn status_fixture() -> Project {
    let p = Project::with_toml("[run]\nbudget_usd = 10\n");
    let dir = p.path();
    std::fs::create_dir_all(dir.join(".baton")).unwrap();
    std::fs::write(dir.join(".gitignore"), ".baton/\n").unwrap();
    std::fs::write(dir.join("feature_list.json"), feature_list()).unwrap();
    std::fs::write(
        dir.join(".baton/accepted_feature_list.json"),
        feature_list(),
    )
    .unwrap();
    let sessions = vec![
        session(
            1,
            "initializer",
            "completed",
            4,
            [12_000, 3_000, 0, 9_000],
            0.1184,
            gates(&[], json!({})),
        ),
        session(
            2,
            "coding",
            "completed",
            23,
            [41_000, 9_800, 1_250_000, 30_000],
            1.0321,
            gates(&[1, 2], json!({})),
        ),
        session(
            3,
            "coding",
            "completed",
            75,
            [38_000, 7_100, 2_300_000, 21_000],
            1.4410,
            gates(
                &[3],
                json!({"violations": ["feature 5: \"description\" was changed"],
                       "leftover_files": ["src/app.js"], "refusals": 2}),
            ),
        ),
        session(
            4,
            "coding",
            "error",
            2,
            [5_000, 400, 0, 0],
            0.0210,
            gates(&[], json!({"notes_updated": false})),
        ),
        session(
            5,
            "coding",
            "max_turns",
            41,
            [52_000, 12_000, 3_900_000, 40_000],
            2.0043,
            gates(&[4], json!({"unflipped": [4]})),
        ),
    ];
    // #5 blocked by an agent, #6 deferred after three failed attempts.
    let features = json!({
        "5": {"attempts": 2, "blocked": "needs a Stripe test key in STRIPE_KEY; none is set on this machine, ask the payments team", "blocked_in": 5},
        "6": {"attempts": 3, "deferred": 5, "last_reason": "its verify command `npm test -- --grep \"feature 6\"` failed: Exit code: 1"}
    });
    let state = json!({"version": 1, "sessions": sessions, "in_progress": null, "stalled": 1,
                       "features": features});
    std::fs::write(
        dir.join(".baton/state.json"),
        serde_json::to_string_pretty(&state).unwrap(),
    )
    .unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "fixture"]);
    p
}

fn baton_in(p: &Project, args: &[&str]) -> Output {
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    baton(&server, Wire::Anthropic)
        .args(args)
        .arg(p.path())
        .env_remove("NO_COLOR")
        .output_bounded()
        .unwrap()
}

fn masked(p: &Project, text: &str) -> String {
    let real = p.path().canonicalize().unwrap();
    text.replace(real.to_str().unwrap(), "[project]")
        .replace(p.path().to_str().unwrap(), "[project]")
}

#[test]
fn status_text_snapshot() {
    let p = status_fixture();
    let out = baton_in(&p, &["status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = masked(&p, &stdout(&out));
    assert!(
        text.lines().all(|l| l.chars().count() <= 100),
        "wider than 100 columns:\n{text}"
    );
    insta::assert_snapshot!("status_text", text);
}

#[test]
fn status_json_is_stable() {
    let p = status_fixture();
    let out = baton_in(&p, &["status", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    v["project"] = json!("[project]");
    // The documented fields, every one (docs/harness.md).
    for key in [
        "project",
        "passing",
        "total",
        "categories",
        "sessions",
        "totals",
        "next",
        "tree_clean",
        "unfinished_session",
        "cost_per_passing_usd",
        "budget_usd",
        "budget_left_usd",
        "needs_person",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    insta::assert_snapshot!("status_json", serde_json::to_string_pretty(&v).unwrap());
}

#[test]
fn status_shows_only_the_last_sessions_of_a_long_run() {
    let p = status_fixture();
    let mut state: Value = serde_json::from_str(&p.file(".baton/state.json")).unwrap();
    let first = state["sessions"][1].clone();
    let sessions: Vec<Value> = (1..=45u32)
        .map(|n| {
            let mut s = first.clone();
            s["number"] = json!(n);
            s
        })
        .collect();
    state["sessions"] = json!(sessions);
    std::fs::write(
        p.path().join(".baton/state.json"),
        serde_json::to_string(&state).unwrap(),
    )
    .unwrap();
    let text = stdout(&baton_in(&p, &["status"]));
    assert!(
        text.contains("… 25 earlier session(s); `baton status --json` lists them all"),
        "{text}"
    );
    assert!(text.contains("\n  26  coding "), "{text}");
    assert!(!text.contains("\n  25  coding "), "{text}");
}

/// One transcript line with a fixed time.
fn line(t: u64, event: Value) -> String {
    let mut v = json!({"t_ms": 1_736_154_000_000u64 + t});
    v.as_object_mut()
        .unwrap()
        .extend(event.as_object().unwrap().clone());
    v.to_string() + "\n"
}

fn usage(i: u64, o: u64) -> Value {
    json!({"input_tokens": i, "output_tokens": o, "cache_read_tokens": 0, "cache_write_tokens": 0})
}

/// A session with a bit of everything: a retry, a long result, an error, a refusal.
fn log_fixture() -> Project {
    let p = Project::new();
    let dir = p.path().join(".baton/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let seq: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    let t = [
        line(0, json!({"type": "session_start", "session": 3, "provider": "anthropic",
            "model": "claude-sonnet-4-5", "project_dir": "/work/todo", "system": "…",
            "tools": ["Bash", "Read", "Write", "Edit", "Glob", "Grep"]})),
        line(1, json!({"type": "user", "content": [{"type": "text", "text": "Implement feature 4.\nThen commit."}]})),
        line(2, json!({"type": "request", "turn": 1, "messages": 1})),
        line(900, json!({"type": "retry", "turn": 1, "attempt": 1, "max_attempts": 8,
            "error": "HTTP 529: overloaded_error: Overloaded", "delay_ms": 1000})),
        line(3000, json!({"type": "assistant", "turn": 1, "content": [
            {"type": "thinking", "thinking": "Look at the tests first.", "signature": "s"},
            {"type": "text", "text": "I will run the tests and read the spec."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "npm test -- --reporter dot"}},
            {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "missing.txt"}}],
            "stop_reason": "tool_use", "usage": usage(1200, 90), "cost_usd": 0.0050})),
        line(4000, json!({"type": "tool_result", "turn": 1, "tool_use_id": "t1", "name": "Bash",
            "content": format!("{seq}Exit code: 0"), "is_error": false, "refused": false, "duration_ms": 950})),
        line(4010, json!({"type": "tool_result", "turn": 1, "tool_use_id": "t2", "name": "Read",
            "content": "Read: file not found: missing.txt", "is_error": true, "refused": false, "duration_ms": 1})),
        line(4020, json!({"type": "request", "turn": 2, "messages": 3})),
        line(6000, json!({"type": "assistant", "turn": 2, "content": [
            {"type": "tool_use", "id": "t3", "name": "Edit", "input": {"file_path": "feature_list.json",
              "old_string": "\"Feature 2\"", "new_string": "\"Feature 2 (done)\""}},
            {"type": "tool_use", "id": "t4", "name": "Bash", "input": {"command": "git commit -qam 'Feature 4'"}}],
            "stop_reason": "tool_use", "usage": usage(1500, 60), "cost_usd": 0.0054})),
        line(6010, json!({"type": "tool_result", "turn": 2, "tool_use_id": "t3", "name": "Edit",
            "content": "Refused by baton's policy: feature_list.json may only change in \"passes\"",
            "is_error": true, "refused": true, "duration_ms": 0})),
        line(6500, json!({"type": "tool_result", "turn": 2, "tool_use_id": "t4", "name": "Bash",
            "content": "fatal: not a git repository\nExit code: 128", "is_error": true, "refused": false, "duration_ms": 12})),
        line(6510, json!({"type": "request", "turn": 3, "messages": 5})),
        line(8000, json!({"type": "assistant", "turn": 3, "content": [{"type": "text", "text": "Feature 4 is done."}],
            "stop_reason": "end_turn", "usage": usage(1700, 20), "cost_usd": 0.0054})),
        line(8001, json!({"type": "session_end", "outcome": "completed", "turns": 3,
            "usage": usage(4400, 170), "cost_usd": 0.0158, "final_text": "Feature 4 is done."})),
    ]
    .concat();
    std::fs::write(dir.join("0003.jsonl"), t).unwrap();
    p
}

fn log_of(p: &Project, args: &[&str]) -> String {
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    let out = baton(&server, Wire::Anthropic)
        .arg("log")
        .arg(p.path())
        .args(args)
        .env_remove("NO_COLOR")
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn log_text_snapshot() {
    let p = log_fixture();
    let text = log_of(&p, &[]);
    assert!(!text.contains('\x1b'), "no colour when stdout is a pipe");
    insta::assert_snapshot!("log_text", text);
}

#[test]
fn log_filtered_to_one_tool() {
    let p = log_fixture();
    insta::assert_snapshot!("log_tool_bash", log_of(&p, &["--tool", "bash"]));
}

#[test]
fn log_errors_only() {
    let p = log_fixture();
    let text = log_of(&p, &["--errors"]);
    insta::assert_snapshot!("log_errors", text);
    // Combined with --tool: the failed Bash call only.
    let both = log_of(&p, &["--errors", "--tool", "Bash"]);
    assert!(both.contains("fatal: not a git repository"), "{both}");
    assert!(!both.contains("missing.txt"), "{both}");
    assert!(!both.contains("line 1\n"), "{both}");
    // A filter nothing matches says so.
    let none = log_of(&p, &["--tool", "Glob"]);
    assert!(none.contains("(nothing matches the filter)"), "{none}");
}

#[test]
fn log_highlights_refusals_and_errors_in_colour() {
    let p = log_fixture();
    let text = log_of(&p, &["--errors", "--color", "always"]);
    assert!(text.contains("\x1b[1;97;41m⛔ REFUSED\x1b[0m"), "{text:?}");
    assert!(text.contains("\x1b[1;31m✗ ERROR\x1b[0m"), "{text:?}");
    insta::assert_snapshot!("log_errors_colour", text.replace('\x1b', "␛"));
    assert!(!log_of(&p, &["--color", "never"]).contains('\x1b'));
}

#[test]
fn log_json_filters_apply_to_the_lines() {
    let p = log_fixture();
    let types: Vec<String> = log_of(&p, &["--json", "--errors"])
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        types,
        [
            "session_start",
            "retry",
            "tool_result",
            "tool_result",
            "tool_result",
            "session_end"
        ]
    );
}

/// A budget given on the command line is the project's: `baton status` and the
/// report measure spending against it after the run, and a session that never got
/// a model turn (a refused key) is not told off for its notes; counts agree with
/// their nouns ("1 turn").
#[test]
fn the_command_lines_budget_is_remembered_and_a_failed_start_is_not_told_off() {
    let p = super::run::new_project();
    let mut steps = super::run::initializer(&super::run::features(&[false, false, false]));
    steps.push(baton_testkit::Step::error(
        401,
        "authentication_error",
        "invalid x-api-key",
    ));
    let (out, _server) = super::run::run(&p, steps, &["--budget-usd", "20"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("progress notes were not updated"), "{err}");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", p.path().to_str().unwrap(), "--json"])
        .output_bounded()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(s["budget_usd"], serde_json::json!(20.0), "{s}");
    let report = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["report", p.path().to_str().unwrap(), "-o", "-"])
        .output_bounded()
        .unwrap();
    let html = String::from_utf8_lossy(&report.stdout);
    assert!(
        !html.contains("no budget set"),
        "the report forgot the budget"
    );
    assert!(html.contains("left of $20.00"), "no budget in the report");
}

/// `baton status` on a project whose `baton.toml` has a typo still shows where the
/// project stands, with the mistake named; `baton new` on a directory it cannot
/// create says which and why.
#[test]
fn status_survives_a_typo_and_new_names_the_directory_it_cannot_create() {
    let p = super::run::new_project();
    std::fs::write(p.path().join("baton.toml"), "[agent]\nmodle = \"x\"\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", p.path().to_str().unwrap()])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("baton.toml") && err.contains("line 2"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("features "));
    let spec = p.path().join("spec.txt");
    std::fs::write(&spec, "spec\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args([
            "new",
            "/proc/baton-cannot-be-here",
            "--spec",
            spec.to_str().unwrap(),
        ])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cannot create the project directory /proc/baton-cannot-be-here"),
        "{}",
        stderr(&out)
    );
}

/// What baton prints never ends it: with its standard error's reader gone (a
/// `| tee` that died) an error still exits 1, not 101 (a panic), and with its
/// standard output's reader gone (`| head`) `status` still exits 0.
#[test]
fn a_closed_output_never_makes_baton_panic() {
    let p = status_fixture();
    let closed = || {
        let (r, w) = std::io::pipe().unwrap();
        drop(r);
        w
    };
    let missing = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", "/nonexistent/baton-project"])
        .stdout(std::process::Stdio::null())
        .stderr(closed())
        .status_bounded()
        .unwrap();
    assert_eq!(missing.code(), Some(1));
    for args in [&["status"][..], &["status", "--json"]] {
        let status = Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(args)
            .arg(p.path())
            .stdout(closed())
            .stderr(std::process::Stdio::null())
            .status_bounded()
            .unwrap();
        assert_eq!(status.code(), Some(0), "{args:?}");
    }
}
