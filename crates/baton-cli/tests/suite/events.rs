//! `baton run --json`: one JSON event per line on stdout, parsed back and checked
//! against what the run recorded; `--quiet` lines for people.

use std::process::Command;

use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::{Value, json};

use super::*;

fn features(passes: &[bool]) -> String {
    let list: Vec<Value> = passes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({"category": "functional", "description": format!("Feature {}", i + 1),
                   "steps": ["check it"], "passes": p})
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap() + "\n"
}

fn project() -> Project {
    let p =
        Project::with_toml("[project]\nfeatures = 2\nmin_features = 2\n[run]\npause_secs = 0\n");
    std::fs::write(p.path().join("app_spec.txt"), "Two features.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(p.path())
        .status_bounded()
        .unwrap();
    assert!(ok.success());
    p
}

/// The initializer, then a coding session with a retry, a refused edit of the
/// feature list, a failing command, and an honest flip of feature 1.
fn script() -> Vec<Step> {
    vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": features(&[false, false])}),
            ),
            (
                "Bash",
                json!({"command": "echo 'Session 1: list written.' > claude-progress.txt && git add -A && git commit -qm init"}),
            ),
        ])),
        Step::Reply(Reply::text("Initialized.")),
        Step::overloaded(),
        Step::Reply(Reply::tools(&[
            (
                "Edit",
                json!({"file_path": "feature_list.json", "old_string": "\"Feature 2\"", "new_string": "\"Feature 2!\""}),
            ),
            ("Bash", json!({"command": "exit 3"})),
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": features(&[true, false])}),
            ),
            (
                "Bash",
                json!({"command": "echo 'Session 2: feature 1.' >> claude-progress.txt && git add -A && git commit -qm f1"}),
            ),
        ])),
        Step::Reply(Reply::text("Feature 1 works.")),
    ]
}

fn run(p: &Project, extra: &[&str]) -> Output {
    let server = ScriptedServer::start(Wire::Anthropic, script());
    baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .args(["--max-sessions", "2", "--budget-usd", "5"])
        .args(extra)
        .output_bounded()
        .unwrap()
}

#[test]
fn json_events_tell_the_run_and_agree_with_its_records() {
    let p = project();
    let out = run(&p, &["--json"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect();
    assert!(
        events
            .iter()
            .all(|e| e["t_ms"].as_u64().is_some() && e["type"].is_string())
    );
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let only = |t: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == t).collect() };

    assert_eq!(types.first(), Some(&"run_start"));
    assert_eq!(types.last(), Some(&"run_end"));
    assert_eq!(events[0]["passing"], 0);
    assert_eq!(events[0]["budget_usd"], 5.0);

    // Sessions start and end in pairs, in order, each followed by its gates.
    let starts: Vec<(u64, &str)> = only("session_start")
        .iter()
        .map(|e| (e["session"].as_u64().unwrap(), e["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(starts, [(1, "initializer"), (2, "coding")]);
    let ends = only("session_end");
    assert_eq!(ends.len(), 2);
    for (i, e) in types.iter().enumerate() {
        if *e == "session_end" {
            assert_eq!(types[i + 1], "gates");
        }
    }
    assert_eq!(ends[1]["passing"], 1);
    assert_eq!(ends[1]["total"], 2);
    let gates = only("gates");
    assert_eq!(gates[1]["session"], 2);
    assert_eq!(gates[1]["flipped"], json!([1]));

    // Every tool call starts and ends; the refusal and the failure are marked.
    let starts = only("tool_start");
    let ends_t = only("tool_end");
    assert_eq!(starts.len(), 6);
    assert_eq!(ends_t.len(), 6);
    assert_eq!(starts[2]["summary"], "feature_list.json");
    assert_eq!(ends_t[2]["refused"], true);
    assert_eq!(ends_t[3]["is_error"], true);
    assert_eq!(ends_t[3]["last_line"], "Exit code: 3");
    assert!(ends_t.iter().all(|e| e["session"].is_u64()));

    // The retry is an event of session 2, turn 1.
    let retries = only("retry");
    assert_eq!(retries.len(), 1);
    assert_eq!(
        (&retries[0]["session"], &retries[0]["turn"]),
        (&json!(2), &json!(1))
    );
    assert!(
        retries[0]["error"].as_str().unwrap().contains("overloaded"),
        "{}",
        retries[0]
    );

    // Turn costs add up to each session's recorded cost.
    let state: Value = serde_json::from_str(&p.file(".baton/state.json")).unwrap();
    for n in [1u64, 2] {
        let turns: f64 = only("turn_end")
            .iter()
            .filter(|e| e["session"] == n)
            .map(|e| e["cost_usd"].as_f64().unwrap())
            .sum();
        let recorded = state["sessions"][(n - 1) as usize]["cost_usd"]
            .as_f64()
            .unwrap();
        assert!((turns - recorded).abs() < 1e-9, "{turns} vs {recorded}");
    }

    let end = events.last().unwrap();
    assert_eq!(end["outcome"], "limit");
    assert_eq!(end["exit_code"], 2);
    assert_eq!(end["sessions"], 2);
    assert_eq!(end["passing"], 1);
    let spent = end["cost_usd"].as_f64().unwrap();
    assert!((end["budget_left_usd"].as_f64().unwrap() - (5.0 - spent)).abs() < 1e-9);
    // Messages for people come as events too, not on stdout as text.
    assert!(only("message").iter().any(|m| {
        m["text"]
            .as_str()
            .unwrap()
            .starts_with("session 0002 coding")
    }));
    // stderr keeps only the closing summary.
    assert!(
        !stderr(&out).contains('▸'),
        "no tool lines in JSON mode: {}",
        stderr(&out)
    );
}

#[test]
fn quiet_prints_sessions_gates_and_retries_but_no_tool_calls() {
    let p = project();
    let out = run(&p, &["--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(stdout(&out), "");
    assert!(err.contains("── session 0002 · coding ──"), "{err}");
    assert!(err.contains("session 0002 coding · completed"), "{err}");
    assert!(err.contains("↻ turn 1: attempt 1/6 failed"), "{err}");
    assert!(!err.contains('▸'), "{err}");
    assert!(err.contains("$5.00 budget left"), "{err}");
}

#[test]
fn plain_lines_when_stderr_is_not_a_terminal() {
    let p = project();
    let out = run(&p, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("▸ Bash exit 3"), "{err}");
    assert!(err.contains("  ⛔ Edit refused:"), "{err}");
    assert!(err.contains("  ✗ Bash failed"), "{err}");
    // No progress-bar drawing codes in a log file.
    assert!(!err.contains('\x1b'), "{err:?}");
}
