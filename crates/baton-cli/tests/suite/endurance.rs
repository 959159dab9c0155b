//! What real models do over a night, played by a scripted model that behaves like
//! one: a context window it enforces with the provider's own error, usage that
//! grows with the conversation, replies cut at `max_tokens`, quota walls that answer
//! 429 until their reset. Each test fails if baton stops surviving it.

use std::time::Duration;

use baton_agent::transcript::Event;
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::run::{TOML, features, honest, initializer};
use super::*;

/// A run project (three features) with `extra` in its baton.toml.
fn project(extra: &str) -> Project {
    let p = Project::with_toml(&format!("{TOML}{extra}"));
    std::fs::write(
        p.path().join("app_spec.txt"),
        "Build a tiny app with three features.\n",
    )
    .unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    let ok = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(p.path())
        .status_bounded()
        .unwrap();
    assert!(ok.success());
    p
}

/// Three honest coding sessions that make features 1, 2 and 3 pass.
fn three_honest() -> Vec<Step> {
    let mut steps = honest(1, &[true, false, false]);
    steps.extend(honest(2, &[true, true, false]));
    steps.extend(honest(3, &[true, true, true]));
    steps
}

/// A Bash call whose output is about 29 kB (about 10k tokens once JSON-escaped).
fn filler() -> Step {
    Step::Reply(Reply::tool("Bash", json!({"command": "seq 1 6000"})))
}

/// The brief of session `n` opens the request's first message.
fn in_session(n: u32) -> impl Fn(&baton_testkit::RecordedRequest) -> bool {
    move |r| {
        r.first_user_text()
            .contains(&format!("# Brief from baton (session {n})"))
    }
}

const HANDOFF: &str = "context window is nearly full";

/// How the agent wraps up when told: notes, commit, stop.
fn wrap_up() -> Vec<Step> {
    vec![
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": "echo 'Session 2: read the logs; nothing verified yet; next: feature 1.' >> claude-progress.txt && git add -A && git commit -qm 'Notes before the context ran out'"}),
        )),
        Step::Reply(Reply::text("Handing off: notes written and committed.")),
    ]
}

/// A model with a 40k window, like a real one: in session `n` it reads logs until
/// baton says its context is nearly full, then wraps up; `steps` play the rest.
fn filling_model(wire: Wire, n: u32, steps: Vec<Step>) -> ScriptedServer {
    ScriptedServer::builder(wire)
        .like_a_real_model(40_000)
        .when(|r| r.says(HANDOFF), wrap_up())
        .when(
            move |r| in_session(n)(r) && !r.says(HANDOFF),
            (0..10).map(|_| filler()).collect(),
        )
        .start(steps)
}

fn the_whole_run(steps_after_init: Vec<Step>) -> Vec<Step> {
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(steps_after_init);
    steps
}

fn status_json(p: &Project) -> Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("status")
        .arg(p.path())
        .arg("--json")
        .output_bounded()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_session_that_fills_its_window_hands_off_and_the_run_completes() {
    for wire in [Wire::Anthropic, Wire::OpenAi, Wire::OpenAiResponses] {
        let p = project("[agent]\ncontext_window = 40000\n");
        let rest = three_honest();
        let server = filling_model(wire, 2, the_whole_run(rest));
        let out = run_on(&server, wire, &p, &[]);
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", stderr(&out));
        assert_eq!(server.remaining(), 0, "{wire:?}");
        // baton acted at its threshold, before the window was reached: at most one
        // request refused as too long in the session (its estimate may run short).
        assert!(server.refused("context") <= 1, "{wire:?}");
        let t = p.transcript(2);
        assert_consistent(&t);
        assert_eq!(end_of(&t).0, "context_full", "{wire:?}");
        let reasons: Vec<String> = t
            .iter()
            .filter_map(|r| match &r.event {
                Event::Handoff { reason, .. } => Some(reason.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(reasons.len(), 1, "{reasons:?}");
        assert!(
            count(
                &t,
                |e| matches!(e, Event::ToolResult { name, .. } if name == "Bash")
            ) >= 2,
            "the fillers ran before the handoff"
        );
        // The work of the handoff is committed and the next session is told.
        assert!(
            super::run::git(&p, &["log", "--oneline"]).contains("Notes before the context ran out")
        );
        let brief = server
            .requests()
            .iter()
            .map(|r| r.first_user_text())
            .find(|t| t.contains("# Brief from baton (session 3)"))
            .unwrap();
        assert!(brief.contains("filled its context window"), "{brief}");
        let s = status_json(&p);
        assert_eq!(s["passing"], 3);
        assert_eq!(s["totals"]["context_full"], 1);
        assert_eq!(s["sessions"][1]["outcome"], "context_full");
    }
}

#[test]
fn compaction_replaces_the_conversation_and_the_session_goes_on() {
    for wire in [Wire::Anthropic, Wire::OpenAi, Wire::OpenAiResponses] {
        let p = project("[agent]\ncontext_window = 40000\ncontext = \"compact\"\n");
        // After the compaction the session implements feature 1 itself.
        let rest = three_honest();
        let compacted = "baton compacted this session";
        let server = ScriptedServer::builder(wire)
            .like_a_real_model(40_000)
            .when(
                |r| r.says("replaced by your summary"),
                vec![Step::Reply(Reply::text(
                    "SUMMARY: working on feature 1; read the sequence logs; nothing verified yet.",
                ))],
            )
            .when(
                move |r| in_session(2)(r) && !r.first_user_text().contains(compacted),
                (0..10).map(|_| filler()).collect(),
            )
            .start(the_whole_run(rest));
        let out = run_on(&server, wire, &p, &["--json"]);
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", stderr(&out));
        assert_eq!(server.remaining(), 0, "{wire:?}");
        assert!(server.refused("context") <= 1, "{wire:?}");
        let t = p.transcript(2);
        assert_consistent(&t);
        assert_eq!(end_of(&t).0, "completed", "{wire:?}");
        let summaries: Vec<String> = t
            .iter()
            .filter_map(|r| match &r.event {
                Event::Compaction {
                    summary,
                    tokens_before,
                    tokens_after,
                    ..
                } => {
                    assert!(
                        tokens_after * 2 < *tokens_before,
                        "{tokens_before} → {tokens_after}"
                    );
                    Some(summary.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(summaries.len(), 1, "{wire:?}");
        assert!(summaries[0].starts_with("SUMMARY:"));
        // The request after the compaction starts afresh from the prompt and summary.
        let reqs = server.requests();
        let after = reqs
            .iter()
            .find(|r| r.first_user_text().contains(compacted))
            .unwrap();
        assert!(
            after
                .first_user_text()
                .contains("SUMMARY: working on feature 1")
        );
        assert!(
            after
                .first_user_text()
                .contains("# Brief from baton (session 2)")
        );
        let msgs = after.body["messages"]
            .as_array()
            .or(after.body["input"].as_array())
            .unwrap()
            .len();
        assert!(msgs <= 2, "{msgs} messages after compaction");
        // Session 2 made feature 1 pass after its compaction.
        let s = status_json(&p);
        assert_eq!(s["sessions"][1]["flipped"], json!([1]));
        // The live view's JSON stream says so.
        let events = stdout(&out);
        assert!(
            events.lines().any(|l| l.contains("\"type\":\"context\"") && l.contains("\"action\":\"compact\"")),
            "{events}"
        );
        // `baton log` shows it.
        let log = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["log", p.path().to_str().unwrap(), "--session", "2"])
            .output_bounded()
            .unwrap();
        assert!(
            stdout(&log).contains("context compacted after turn"),
            "{}",
            stdout(&log)
        );
    }
}

#[test]
fn a_context_length_error_teaches_the_window_and_is_never_fatal() {
    // baton believes the model has 200k tokens; the server has 40k and says so.
    let wire = Wire::Anthropic;
    let p = project("[agent]\ncontext_window = 200000\nmax_output_tokens = 8000\n");
    let rest = three_honest();
    let server = filling_model(wire, 2, the_whole_run(rest));
    let out = run_on(&server, wire, &p, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0);
    // Refused once, then never again above the window it learnt.
    assert_eq!(server.refused("context"), 1);
    let t = p.transcript(2);
    assert_consistent(&t);
    assert_eq!(end_of(&t).0, "context_full");
    let reason = t
        .iter()
        .find_map(|r| match &r.event {
            Event::Handoff { reason, window, .. } => Some((reason.clone(), *window)),
            _ => None,
        })
        .unwrap();
    assert!(
        reason.0.contains("refused the request as too long")
            && (reason.0.contains("prompt is too long")
                || reason.0.contains("exceed context limit")),
        "{}",
        reason.0
    );
    assert!(
        reason.0.contains("the window is 40000 tokens"),
        "{}",
        reason.0
    );
    assert_eq!(reason.1, 40_000);
    // The big results were taken out of the conversation to make the wrap-up fit,
    // and saved whole.
    let outputs: Vec<_> = std::fs::read_dir(p.path().join(".baton/outputs"))
        .unwrap()
        .flatten()
        .collect();
    assert!(!outputs.is_empty());
}

#[test]
fn a_context_length_error_without_numbers_bounds_the_window() {
    // The Responses API says only that the input exceeds the window: baton believes
    // 200k, the server has 40k. The refused request's size bounds the window.
    let wire = Wire::OpenAiResponses;
    let p = project("[agent]\ncontext_window = 200000\nmax_output_tokens = 8000\n");
    let rest = three_honest();
    let server = filling_model(wire, 2, the_whole_run(rest));
    let out = run_on(&server, wire, &p, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0);
    assert_eq!(server.refused("context"), 1);
    let t = p.transcript(2);
    assert_consistent(&t);
    assert_eq!(end_of(&t).0, "context_full");
    let (reason, window) = t
        .iter()
        .find_map(|r| match &r.event {
            Event::Handoff { reason, window, .. } => Some((reason.clone(), *window)),
            _ => None,
        })
        .unwrap();
    assert!(
        reason.contains("exceeds the context window")
            && reason.contains("the window is at most about"),
        "{reason}"
    );
    assert!(window < 200_000, "{window}");
    // The wrap-up happened: its notes are committed.
    assert!(
        super::run::git(&p, &["log", "--oneline"]).contains("Notes before the context ran out")
    );
}

#[test]
fn a_result_of_megabytes_is_cut_and_saved_whole() {
    let p = Project::new();
    // 3 MB in 30,000 lines: Read returns 2,000 lines of 100 characters.
    let line = "x".repeat(99);
    let big: String = (0..30_000).map(|i| format!("{i:05}{line}\n")).collect();
    std::fs::write(p.path().join("big.log"), &big).unwrap();
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tools(&[
                ("Bash", json!({"command": "seq 1 1000000"})),
                ("Read", json!({"file_path": "big.log"})),
            ])),
            Step::Reply(Reply::text("done")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(Wire::Anthropic, &server.requests()[1].body);
    // Bash: head and tail, and the whole output (6.9 MB) saved.
    let bash = &results[0].1;
    assert!(bash.len() < 40_000, "{}", bash.len());
    let saved = bash
        .split("the whole output is in ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .unwrap();
    let whole = std::fs::read_to_string(p.path().join(saved)).unwrap();
    let expected: String = (1..=1_000_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(whole.len(), expected.len());
    assert!(whole == expected);
    // Read (200 kB of lines): over the 25k-token budget of one result; cut, saved.
    let read = &results[1].1;
    assert!(read.len() < 80_000, "{}", read.len());
    assert!(
        read.contains("over the 25000-token budget"),
        "{}",
        &read[..200]
    );
    let saved = read
        .split(" is in ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .unwrap();
    let whole = std::fs::read_to_string(p.path().join(saved)).unwrap();
    assert!(whole.contains("01999xxx"), "the whole Read result is kept");
    assert!(whole.len() > 200_000);
}

#[test]
fn a_tool_call_cut_by_the_output_limit_is_never_run() {
    for wire in [Wire::Anthropic, Wire::OpenAi, Wire::OpenAiResponses] {
        let p = Project::with_toml("[agent]\nmax_output_tokens = 1000\n");
        let big = "line of the big file\n".repeat(1_000);
        let (out, server) = {
            let server = ScriptedServer::builder(wire)
                .output_limit()
                .real_usage()
                .start(vec![
                    // 21 kB in one Write: cut at 1000 tokens, its JSON left incomplete.
                    Step::Reply(Reply::tool(
                        "Write",
                        json!({"file_path": "big.txt", "content": big}),
                    )),
                    // Told so, the model writes in smaller parts.
                    Step::Reply(Reply::tool(
                        "Write",
                        json!({"file_path": "big.txt", "content": "part one\n"}),
                    )),
                    Step::Reply(Reply::text("Written in parts.")),
                ]);
            let out = baton(&server, wire)
                .arg("exec")
                .arg(p.path())
                .args(["--prompt", "write the big file"])
                .output_bounded()
                .unwrap();
            (out, server)
        };
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", stderr(&out));
        let reqs = server.requests();
        let limit = match wire {
            Wire::OpenAiResponses => "max_output_tokens",
            _ => "max_tokens",
        };
        assert_eq!(reqs[0].body[limit], 1000);
        let results = tool_results(wire, &reqs[1].body);
        assert!(results[0].2, "{results:?}");
        assert!(
            results[0].1.contains("cut off by the output token limit"),
            "{results:?}"
        );
        assert!(results[0].1.contains("NOT run"), "{results:?}");
        assert_eq!(p.file("big.txt"), "part one\n", "{wire:?}");
        let t = p.transcript(1);
        assert_consistent(&t);
    }
}

#[test]
fn a_quota_wall_is_waited_out_and_the_run_completes() {
    // Anthropic names the reset in anthropic-ratelimit-*-reset (RFC 3339) only; the
    // wall lasts 20 s, far beyond the 2 s retry cap.
    for (wire, reset) in [
        (Wire::Anthropic, 20),
        (Wire::OpenAi, 6),
        (Wire::OpenAiResponses, 6),
    ] {
        let p = project("");
        // The retry cap: 2 s.
        let toml = p
            .file("baton.toml")
            .replace("max_delay_ms = 50", "max_delay_ms = 2000");
        std::fs::write(p.path().join("baton.toml"), toml).unwrap();
        let mut rest = vec![Step::quota_wall(Duration::from_secs(reset))];
        rest.extend(three_honest());
        let server = ScriptedServer::start(wire, the_whole_run(rest));
        let mut child = baton(&server, wire)
            .arg("run")
            .arg(p.path())
            .arg("--json")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // While the run waits, `baton status` says until when (looked at until the
        // run ends, at most a minute: the wait is the run's, not a guess of ours).
        let mut seen_waiting = false;
        let t0 = std::time::Instant::now();
        while t0.elapsed() < Duration::from_secs(60) && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(50));
            if !p.path().join(".baton/state.json").exists() {
                continue;
            }
            // (Status may fail while the initializer is still writing its list.)
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
                .arg("status")
                .arg(p.path())
                .arg("--json")
                .output_bounded()
                .unwrap();
            let Ok(s) = serde_json::from_slice::<Value>(&out.stdout) else {
                continue;
            };
            if let Some(until) = s["waiting_until_ms"].as_u64() {
                assert!(until > baton_agent::transcript::now_ms(), "{s}");
                seen_waiting = true;
                break;
            }
        }
        assert!(seen_waiting, "{wire:?}: status never showed the wait");
        let out = child.wait_with_output_bounded().unwrap();
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {}", stderr(&out));
        assert_eq!(server.remaining(), 0);
        // Few requests while the wall stood: the first refusal and at most two more.
        let refused = server.refused("quota");
        assert!(
            (1..=3).contains(&refused),
            "{wire:?}: {refused} requests refused"
        );
        let t = p.transcript(2);
        assert_consistent(&t);
        let waits: Vec<u64> = t
            .iter()
            .filter_map(|r| match &r.event {
                Event::Wait { until_ms, .. } => Some(until_ms - r.t_ms),
                _ => None,
            })
            .collect();
        assert_eq!(waits.len(), 1, "{wire:?}: {waits:?}");
        assert!(waits[0] >= (reset - 1) * 1000, "{waits:?}");
        let events = stdout(&out);
        assert!(
            events.lines().any(|l| l.contains("\"type\":\"waiting\"")),
            "{events}"
        );
        let s = status_json(&p);
        assert!(s["sessions"][1]["waited_secs"].as_f64().unwrap() >= (reset - 1) as f64);
        assert!(s["totals"]["waited_secs"].as_f64().unwrap() >= (reset - 1) as f64);
        assert_eq!(s["passing"], 3);
    }
}

#[test]
fn a_quota_wall_without_a_reset_time_is_probed_slowly() {
    // 429s that name no reset: after the retries, probes every quota_probe_secs.
    let p = Project::new();
    let toml = p
        .file("baton.toml")
        .replace("max_attempts = 6", "max_attempts = 2\nquota_probe_secs = 2");
    std::fs::write(p.path().join("baton.toml"), toml).unwrap();
    let no_reset = || {
        Step::error(
            429,
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
        )
    };
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            no_reset(),
            no_reset(),
            no_reset(),
            no_reset(),
            Step::Reply(Reply::text("done after the wall")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "done after the wall\n");
    assert_eq!(server.requests().len(), 5);
    let err = stderr(&out);
    assert!(err.contains("quota reached; waiting"), "{err}");
    let t = p.transcript(1);
    assert_consistent(&t);
    // Each round: a retry inside the cap, then a probe wait of 2 s, then 4 s.
    assert_eq!(count(&t, |e| matches!(e, Event::Retry { .. })), 2);
    let waits: Vec<u64> = t
        .iter()
        .filter_map(|r| match &r.event {
            Event::Wait { until_ms, .. } => Some((until_ms - r.t_ms + 500) / 1000),
            _ => None,
        })
        .collect();
    assert_eq!(waits, [2, 4]);
}

#[test]
fn a_quota_that_resets_beyond_the_longest_wait_stops_the_run_with_exit_2() {
    let p = project("");
    let toml = p
        .file("baton.toml")
        .replace("[run]\n", "[run]\nmax_wait_hours = 0.01\n");
    std::fs::write(p.path().join("baton.toml"), toml).unwrap();
    let mut rest = vec![Step::quota_wall(Duration::from_secs(3_600))];
    rest.extend(honest(1, &[true, false, false]));
    let server = ScriptedServer::start(Wire::Anthropic, the_whole_run(rest));
    let out = run_on(&server, Wire::Anthropic, &p, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("beyond the longest wait allowed"), "{err}");
    assert!(err.contains("max_wait_hours"), "{err}");
    assert_eq!(server.refused("quota"), 1);
    // Nothing is lost: the initializer's work stands, the session is recorded.
    let s = status_json(&p);
    assert_eq!(s["total"], 3);
    assert_eq!(s["sessions"].as_array().unwrap().len(), 2);
}

#[test]
fn a_tool_result_budget_applies_to_every_tool() {
    // A small budget: a Grep over many matches is cut like Bash output.
    let p = Project::with_toml("[agent]\ntool_result_max_tokens = 200\n");
    let lines: String = (0..400).map(|i| format!("needle {i}\n")).collect();
    std::fs::write(p.path().join("hay.txt"), lines).unwrap();
    let (out, server) = exec(
        &p,
        Wire::OpenAi,
        vec![
            Step::Reply(Reply::tool(
                "Grep",
                json!({"pattern": "needle", "output_mode": "content"}),
            )),
            Step::Reply(Reply::text("found")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = &tool_results(Wire::OpenAi, &server.requests()[1].body)[0].1;
    assert!(r.contains("over the 200-token budget"), "{r}");
    assert!(r.len() < 1_000, "{}", r.len());
}

/// Three features checked by their files; feature 2's check can never pass.
fn night_features(passes: &[bool]) -> String {
    let list: Vec<Value> = passes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let verify = if i == 1 {
                "test -f never-there".to_string()
            } else {
                format!("grep -q . src/f{}.txt", i + 1)
            };
            json!({"category": "functional", "description": format!("Feature {}", i + 1),
                   "steps": ["run it"], "verify": verify, "passes": p})
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap() + "\n"
}

/// A coding session that builds feature `n`, flips it and commits with notes.
fn builds(n: usize, passes: &[bool]) -> Vec<Step> {
    vec![
        Step::Reply(Reply::tools(&[
            (
                "Bash",
                json!({"command": format!("mkdir -p src && echo ok > src/f{n}.txt")}),
            ),
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": night_features(passes)}),
            ),
            (
                "Bash",
                json!({"command": format!("echo 'Feature {n} done.' >> claude-progress.txt && git add -A && git commit -qm 'Feature {n}'")}),
            ),
        ])),
        Step::Reply(Reply::text(&format!("Feature {n} works."))),
    ]
}

#[test]
fn a_night_with_a_full_window_a_quota_wall_and_an_impossible_feature_finishes_the_rest() {
    let toml = "[retry]\nmax_attempts = 6\nbase_delay_ms = 5\nmax_delay_ms = 2000\n\
                [agent]\ncontext_window = 40000\n\
                [run]\npause_secs = 0\nstall_sessions = 3\nfeature_attempts = 2\n";
    let dir = baton_testkit::temp_project().unwrap();
    let p = Project { dir };
    let write = |rel: &str, text: &str| std::fs::write(p.path().join(rel), text).unwrap();
    write("baton.toml", toml);
    write("app_spec.txt", "Three features.\n");
    write(".gitignore", ".baton/\n");
    write("feature_list.json", &night_features(&[false, false, false]));
    write("claude-progress.txt", "Start.\n");
    for args in [
        &["init", "-q"][..],
        &["add", "-A"][..],
        &["commit", "-qm", "start"][..],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(p.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status_bounded()
            .unwrap();
        assert!(ok.success());
    }
    let mut steps = Vec::new();
    // Session 2 starts behind a quota wall, then builds feature 1.
    steps.push(Step::quota_wall(Duration::from_secs(5)));
    steps.extend(builds(1, &[true, false, false]));
    // Sessions 3 and 4 claim feature 2; its check fails; it is deferred.
    steps.extend(builds(2, &[true, true, false]));
    steps.extend(builds(2, &[true, true, false]));
    // Session 5 builds feature 3.
    steps.extend(builds(3, &[true, false, true]));
    // Session 6 gets feature 2 back and declares it blocked.
    steps.push(Step::Reply(Reply::tool(
        "BlockFeature",
        json!({"feature": 2, "reason": "needs a paid API key for the payment provider"}),
    )));
    steps.push(Step::Reply(Reply::tool(
        "Bash",
        json!({"command": "echo 'Feature 2 blocked: needs an API key.' >> claude-progress.txt && git commit -qam 'Notes: feature 2 blocked'"}),
    )));
    steps.push(Step::Reply(Reply::text("Feature 2 cannot pass here.")));
    // Session 1 fills its window and hands off.
    let server = filling_model(Wire::Anthropic, 1, steps);
    let out = run_on(&server, Wire::Anthropic, &p, &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert_eq!(server.remaining(), 0, "{err}");
    let s = status_json(&p);
    assert_eq!(
        (s["passing"].clone(), s["total"].clone()),
        (json!(2), json!(3))
    );
    let outcomes: Vec<Value> = s["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["outcome"].clone())
        .collect();
    assert_eq!(outcomes[0], "context_full", "{outcomes:?}");
    assert_eq!(outcomes.len(), 6, "{outcomes:?}");
    assert!(s["sessions"][1]["waited_secs"].as_f64().unwrap() >= 4.0);
    assert_eq!(s["totals"]["context_full"], 1);
    let blocked = &s["needs_person"]["blocked"];
    assert_eq!(blocked[0]["number"], 2, "{s}");
    assert!(
        blocked[0]["reason"]
            .as_str()
            .unwrap()
            .contains("paid API key")
    );
    // A person reads it in the report too.
    let report = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["report", p.path().to_str().unwrap(), "-o"])
        .arg(p.path().join(".baton/night.html"))
        .output_bounded()
        .unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    let html = p.file(".baton/night.html");
    for expected in [
        "Needs a person",
        "paid API key",
        "context window full",
        "for the provider",
    ] {
        assert!(html.contains(expected), "report lacks {expected:?}");
    }
    // Nothing was lost: every session's work is in git.
    let log = super::run::git(&p, &["log", "--oneline"]);
    for c in [
        "Notes before the context ran out",
        "Feature 1",
        "Feature 3",
        "Notes: feature 2 blocked",
    ] {
        assert!(log.contains(c), "{c}: {log}");
    }
}

/// A planner (`baton plan --idea`) whose context fills while it reads is told
/// what its own work needs — close the list with what it appended, and not to
/// commit — not a coding session's flips and commit; what it appended is then
/// checked, recorded and committed by baton as usual.
#[test]
fn a_planner_that_fills_its_window_is_told_to_close_the_list_and_not_to_commit() {
    let p = project("[agent]\ncontext_window = 40000\n");
    let server = ScriptedServer::start(
        Wire::Anthropic,
        initializer(&features(&[false, false, false])),
    );
    let out = run_on(&server, Wire::Anthropic, &p, &["--max-sessions", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    let mut list: Vec<Value> = serde_json::from_str(&features(&[false, false, false])).unwrap();
    list.push(json!({"category": "functional", "description": "Dark mode: the theme switch turns the page dark",
                     "steps": ["open the app", "switch the theme", "the page is dark"], "passes": false}));
    let list = serde_json::to_string_pretty(&list).unwrap() + "\n";
    let close = vec![
        Step::Reply(Reply::tool(
            "Write",
            json!({"file_path": "feature_list.json", "content": list}),
        )),
        Step::Reply(Reply::text(
            "The list is closed with the one entry I appended.",
        )),
    ];
    let server = ScriptedServer::builder(Wire::Anthropic)
        .like_a_real_model(40_000)
        .when(|r| r.says(HANDOFF), close)
        .start((0..10).map(|_| filler()).collect());
    let out = baton(&server, Wire::Anthropic)
        .args([
            "plan",
            p.path().to_str().unwrap(),
            "--idea",
            "add a dark mode",
            "--quiet",
        ])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let told = server
        .requests()
        .iter()
        .find(|r| r.says(HANDOFF))
        .map(|r| {
            let body = r.body.to_string();
            let at = body.find(HANDOFF).unwrap_or(0);
            body[at..].chars().take(600).collect::<String>()
        })
        .expect("the planner was told its context is nearly full");
    assert!(told.contains("Do not commit"), "{told}");
    assert!(
        !told.contains("any flip"),
        "a coding session's note: {told}"
    );
    assert!(
        stderr(&out).contains("1 feature(s) added to feature_list.json (#4)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(super::run::git(&p, &["status", "--porcelain"]), "");
}

/// A model that goes on working after the wrap-up note is stopped once its
/// `handoff_turns` are used: exactly that many requests follow the note, the
/// session ends `context_full`, and the run goes on to complete.
#[test]
fn a_model_that_ignores_the_wrap_up_note_is_stopped_after_its_wrap_up_turns() {
    let p = project("[agent]\ncontext_window = 40000\nhandoff_turns = 2\n");
    let told = |r: &baton_testkit::RecordedRequest| {
        in_session(2)(r) && r.body.to_string().contains(HANDOFF)
    };
    let server = ScriptedServer::builder(Wire::Anthropic)
        .like_a_real_model(40_000)
        .when(
            told,
            (0..20)
                .map(|_| Step::Reply(Reply::tool("Bash", json!({"command": "echo still going"}))))
                .collect(),
        )
        .when(
            move |r| in_session(2)(r) && !told(r),
            (0..10).map(|_| filler()).collect(),
        )
        .start(the_whole_run(three_honest()));
    let out = run_on(&server, Wire::Anthropic, &p, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let after_note: Vec<_> = server.requests().into_iter().filter(told).collect();
    assert_eq!(after_note.len(), 2, "requests after the wrap-up note");
    assert!(
        after_note[0]
            .body
            .to_string()
            .contains("in at most 2 more turns"),
        "the note names the turns the configuration gives"
    );
    let t = p.transcript(2);
    assert_consistent(&t);
    assert_eq!(end_of(&t).0, "context_full");
    let s = status_json(&p);
    assert_eq!(s["passing"], 3);
    assert_eq!(s["sessions"][1]["outcome"], "context_full");
}
