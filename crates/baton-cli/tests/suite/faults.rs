//! Transient faults mid-session end in a completed session with a consistent
//! transcript; bad input from the model or the server gives a clear error.

use baton_agent::transcript::Event;
use baton_testkit::{Reply, Step, Wire};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn append(tag: &str) -> Reply {
    Reply::tool("Bash", json!({"command": format!("echo {tag} >> ran.log")}))
}

fn every_fault_kind(wire: Wire) {
    let p = Project::new();
    let overloaded = match wire {
        Wire::Anthropic => Step::overloaded(),
        Wire::OpenAi | Wire::OpenAiResponses => {
            Step::error(503, "server_error", "Service Unavailable")
        }
    };
    let steps = vec![
        // turn 1
        Step::rate_limited(0),
        Step::Reply(append("one")),
        // turn 2
        overloaded,
        Step::Reset,
        Step::Cut {
            reply: append("cut"),
            events: 4,
        },
        Step::Raw("event: message_start\ndata: {not json\n\n".into()),
        Step::Reply(append("two")),
        // turn 3
        Step::SseError {
            reply: Reply::text("partial answer that must vanish"),
            events: 3,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
        },
        Step::Status {
            status: 502,
            headers: vec![],
            body: "<html><body>Bad Gateway</body></html>".into(),
        },
        Step::Reply(Reply::text("all done")),
    ];
    let (out, server) = exec(&p, wire, steps, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "all done\n");
    // Each tool ran once: the cut response's call never ran, none ran twice.
    assert_eq!(p.file("ran.log"), "one\ntwo\n");
    assert_eq!(server.requests().len(), 10);
    assert_eq!(server.remaining(), 0);
    let t = p.transcript(1);
    assert_consistent(&t);
    assert_eq!(count(&t, |e| matches!(e, Event::Retry { .. })), 7);
    assert_eq!(count(&t, |e| matches!(e, Event::Assistant { .. })), 3);
    // The partial text of the failed stream never reached the record.
    let raw = std::fs::read_to_string(p.path().join(".baton/sessions/0001.jsonl")).unwrap();
    assert!(!raw.contains("must vanish"));
    let err = stderr(&out);
    assert!(err.contains("attempt 1/6 failed, retrying"), "{err}");
    assert!(err.contains("HTTP 429"), "{err}");
    assert!(
        err.contains("(body is not JSON) <html><body>Bad Gateway"),
        "{err}"
    );
    // The retried requests carry the same conversation.
    let reqs = server.requests();
    assert_eq!(reqs[2].body, reqs[6].body);
}

#[test]
fn anthropic_survives_every_fault_kind() {
    every_fault_kind(Wire::Anthropic);
}

#[test]
fn openai_survives_every_fault_kind() {
    every_fault_kind(Wire::OpenAi);
}

#[test]
fn openai_responses_survives_every_fault_kind() {
    every_fault_kind(Wire::OpenAiResponses);
}

fn bad_tool_calls(wire: Wire) {
    let p = Project::new();
    let mut bad = Reply::tools(&[
        ("Deploy", json!({"target": "prod"})),
        ("Bash", json!({})),
        ("Read", json!({"file_path": 42})),
        ("Bash", json!({"command": "echo fine"})),
    ]);
    bad.blocks.push(baton_testkit::RBlock::ToolUse {
        id: String::new(),
        name: "Bash".into(),
        input_json: r#"{"command": "echo never > never.txt""#.into(),
    });
    let (out, server) = exec(
        &p,
        wire,
        vec![Step::Reply(bad), Step::Reply(Reply::text("ok"))],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(wire, &server.requests()[1].body);
    let texts: Vec<String> = results
        .iter()
        .map(|r| r.1.trim_start_matches("Error: ").to_string())
        .collect();
    assert_eq!(results.len(), 5);
    assert_eq!(
        texts[0],
        "Unknown tool \"Deploy\". Available tools: Bash, Read, Write, Edit, Glob, Grep."
    );
    assert!(
        texts[1].starts_with(
            "Invalid input for Bash: missing field `command`. Expected fields: {command: string"
        ),
        "{}",
        texts[1]
    );
    assert!(
        texts[2]
            .starts_with("Invalid input for Read: invalid type: integer `42`, expected a string"),
        "{}",
        texts[2]
    );
    assert_eq!(texts[3], "fine\nExit code: 0");
    assert!(
        texts[4].starts_with("Invalid input for Bash: the tool input is not valid JSON"),
        "{}",
        texts[4]
    );
    assert!(!p.path().join("never.txt").exists());
    let errors: Vec<bool> = results.iter().map(|r| r.2).collect();
    assert_eq!(errors, vec![true, true, true, false, true]);
    assert_consistent(&p.transcript(1));
}

#[test]
fn anthropic_bad_tool_calls_get_clear_errors() {
    bad_tool_calls(Wire::Anthropic);
}

#[test]
fn openai_bad_tool_calls_get_clear_errors() {
    bad_tool_calls(Wire::OpenAi);
}

#[test]
fn openai_responses_bad_tool_calls_get_clear_errors() {
    bad_tool_calls(Wire::OpenAiResponses);
}

#[test]
fn unauthorized_is_not_retried_and_names_the_key() {
    for (wire, var) in [
        (Wire::Anthropic, "ANTHROPIC_API_KEY"),
        (Wire::OpenAi, "OPENAI_API_KEY"),
        (Wire::OpenAiResponses, "OPENAI_API_KEY"),
    ] {
        let p = Project::new();
        let (out, server) = exec(
            &p,
            wire,
            vec![Step::error(
                401,
                "authentication_error",
                "invalid x-api-key",
            )],
            &[],
        );
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert!(err.contains("HTTP 401"), "{err}");
        assert!(
            err.contains(&format!(
                "authentication_error: invalid x-api-key (check {var})"
            )),
            "{err}"
        );
        assert_eq!(server.requests().len(), 1);
        let t = p.transcript(1);
        assert_consistent(&t);
        let (outcome, error) = end_of(&t);
        assert_eq!(outcome, "error");
        assert!(error.unwrap_or_default().contains("HTTP 401"));
    }
}

#[test]
fn non_json_error_body_is_reported_plainly() {
    let p = Project::new();
    let (out, _server) = exec(
        &p,
        Wire::Anthropic,
        vec![Step::Status {
            status: 400,
            headers: vec![],
            body: "<html>Request Rejected</html>".into(),
        }],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("HTTP 400")
            && err.contains("(body is not JSON) <html>Request Rejected</html>"),
        "{err}"
    );
}

#[test]
fn exhausted_retries_end_the_session_with_an_error() {
    let p = Project::new();
    let steps = (0..6)
        .map(|_| Step::error(503, "api_error", "down"))
        .collect();
    let (out, server) = exec(&p, Wire::Anthropic, steps, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(server.requests().len(), 6);
    let err = stderr(&out);
    assert!(err.contains("attempt 5/6 failed"), "{err}");
    assert!(err.contains("session 0001 failed"), "{err}");
    let t = p.transcript(1);
    assert_consistent(&t);
    assert_eq!(count(&t, |e| matches!(e, Event::Retry { .. })), 5);
}

#[test]
fn cut_by_max_tokens_is_continued() {
    for (wire, stop) in [
        (Wire::Anthropic, "max_tokens"),
        (Wire::OpenAi, "length"),
        (Wire::OpenAiResponses, "max_output_tokens"),
    ] {
        let p = Project::new();
        let (out, server) = exec(
            &p,
            wire,
            vec![
                Step::Reply(Reply::text("part one").with_stop(stop)),
                Step::Reply(Reply::text("part two")),
            ],
            &[],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(stdout(&out), "part two\n");
        let text = server.requests()[1].last_user_text();
        assert!(text.contains("cut off by the output token limit"), "{text}");
    }
}

#[test]
fn tool_input_cut_by_max_tokens_asks_for_a_shorter_call() {
    let p = Project::new();
    let cut = Reply::raw_tool("Write", r#"{"file_path": "a.txt", "content": "abc"#)
        .with_stop("max_tokens");
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![Step::Reply(cut), Step::Reply(Reply::text("ok"))],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let r = tool_results(Wire::Anthropic, &server.requests()[1].body);
    assert!(
        r[0].1.contains("cut off by the output token limit") && r[0].2,
        "{r:?}"
    );
    assert!(!p.path().join("a.txt").exists());
}

#[test]
fn endless_truncation_is_an_error() {
    let p = Project::new();
    let steps = (0..4)
        .map(|_| Step::Reply(Reply::text("more").with_stop("max_tokens")))
        .collect();
    let (out, _s) = exec(&p, Wire::Anthropic, steps, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cut off by max_tokens 4 times in a row"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_stalled_stream_is_retried() {
    // No data for the idle timeout counts as a cut stream.
    let p = Project::with_toml("");
    std::fs::write(
        p.path().join("baton.toml"),
        "[retry]\nmax_attempts = 3\nbase_delay_ms = 5\nmax_delay_ms = 50\nstream_idle_timeout_secs = 1\n",
    )
    .unwrap();
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Stall {
                reply: Reply::text("never finished"),
                events: 2,
            },
            Step::Reply(Reply::text("finished")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "finished\n");
    assert!(stderr(&out).contains("no data for 1 s"), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 2);
}

/// A base URL where nothing listens fails fast and says so once: one more try,
/// then an error naming the URL a single time per line and what to check, not a
/// minute and a half of retries with the URL twice in each.
#[test]
fn a_refused_connection_fails_fast_naming_the_url_once() {
    let p = Project::new();
    // A port that was free a moment ago, now closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    let url = format!("http://127.0.0.1:{port}");
    let out = baton(&server, Wire::Anthropic)
        .env("ANTHROPIC_BASE_URL", &url)
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "do the task"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("connection refused: nothing listens at that address"),
        "{err}"
    );
    for line in err.lines() {
        assert!(line.matches(&url).count() <= 1, "{line}");
    }
    assert_eq!(err.matches("retrying in").count(), 1, "{err}");
}
