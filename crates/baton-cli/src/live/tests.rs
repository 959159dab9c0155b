//! The run view's lines, bars and JSON events, driven without a terminal.

use super::face::both_ends;
use super::*;
use std::sync::Arc;

/// A sink tests can read back.
#[derive(Clone, Default)]
struct Buf(Arc<Mutex<Vec<u8>>>);
impl std::io::Write for Buf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn start() -> Start {
    Start {
        project: "/p".into(),
        passing: 1,
        total: 3,
        sessions: 2,
        spent_usd: 0.5,
        budget_usd: Some(2.0),
    }
}

fn usage() -> Usage {
    Usage {
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
    }
}

#[test]
fn each_agent_of_a_parallel_run_gets_a_line_of_its_own() {
    let v = RunView::new(
        Mode::Bars,
        &start(),
        ProgressDrawTarget::hidden(),
        Box::new(Buf::default()),
    );
    v.agent_status(2, "#4 · turn 1 · 0 tokens");
    v.agent_status(1, "#3 · turn 2 · 1.2k tokens · Bash");
    v.agent_status(2, "#4 · turn 3 · 5.1k tokens");
    // While the agents work, the session line does not claim that nothing runs.
    v.refresh();
    assert_eq!(
        v.face.bars().unwrap().session.message(),
        "— 2 agents at work, each on its line below"
    );
    let agents = v.face.bars().unwrap().agents.lock().unwrap();
    let lines: Vec<(u32, String)> = agents.iter().map(|(a, b)| (*a, b.message())).collect();
    assert_eq!(
        lines,
        [
            (1, "#3 · turn 2 · 1.2k tokens · Bash".to_string()),
            (2, "#4 · turn 3 · 5.1k tokens".to_string())
        ]
    );
}

#[test]
fn a_long_errors_cause_survives_the_cut() {
    let e = format!(
        "anthropic: error sending request for url (https://api.anthropic.com/v1/messages): {} client error (Connect): dns error: failed to lookup address information: Temporary failure in name resolution",
        "x".repeat(200)
    );
    let line = both_ends(&e, 200);
    assert!(line.chars().count() <= 200, "{line}");
    assert!(line.starts_with("anthropic: error sending"), "{line}");
    assert!(
        line.ends_with("Temporary failure in name resolution"),
        "{line}"
    );
}

#[test]
fn before_the_list_the_bar_counts_nothing() {
    let v = RunView::new(
        Mode::Bars,
        &Start {
            passing: 0,
            total: 0,
            ..start()
        },
        ProgressDrawTarget::hidden(),
        Box::new(Buf::default()),
    );
    v.refresh();
    let b = v.face.bars().unwrap();
    assert!(
        b.features.message().starts_with("no feature list yet · "),
        "{}",
        b.features.message()
    );
}

fn drive(v: &RunView) {
    v.session_start(3, SessionKind::Coding);
    v.tool_start("Bash", &serde_json::json!({"command": "npm test"}));
    v.tool_end(
        "Bash",
        &ToolOutput::ok("ok\nExit code: 0"),
        false,
        Duration::from_millis(5),
    );
    v.turn_end(1, &usage(), 0.25);
    v.retry(
        2,
        &RetryNotice {
            attempt: 1,
            max_attempts: 8,
            error: "HTTP 529".into(),
            delay: Duration::from_millis(10),
            long_wait: false,
        },
    );
    v.turn_end(2, &usage(), 0.25);
}

#[test]
fn bars_follow_the_session_and_the_budget() {
    let v = RunView::new(
        Mode::Bars,
        &start(),
        ProgressDrawTarget::hidden(),
        Box::new(std::io::sink()),
    );
    drive(&v);
    let b = v.face.bars().unwrap();
    assert_eq!(
        b.session.message(),
        "0003 coding · 2 turns · 240 tokens · $0.5000"
    );
    assert_eq!(
        b.features.message(),
        "1/3 passing · $1.00 spent · $1.00 of $2.00 left"
    );
    assert_eq!(usd(0.0031), "$0.0031");
    assert_eq!(b.features.position(), 1);
    assert_eq!(
        b.tool.message(),
        "retrying turn 2 in 0.0s (attempt 1/8 failed)"
    );
    v.finish(Ok(&RunEnd::Complete));
}

/// After Ctrl-C the tool line says the run is stopping, not that another
/// session follows the pause.
#[test]
fn after_ctrl_c_no_session_is_promised() {
    let v = RunView::new(
        Mode::Bars,
        &start(),
        ProgressDrawTarget::hidden(),
        Box::new(std::io::sink()),
    );
    drive(&v);
    v.stopping();
    let b = v.face.bars().unwrap();
    assert!(
        b.tool.message().starts_with("stopping"),
        "{}",
        b.tool.message()
    );
    let r: SessionRecord = serde_json::from_value(serde_json::json!({
        "number": 3, "kind": "coding", "outcome": "interrupted"
    }))
    .unwrap();
    v.session_end(&r, 1, 3);
    assert_eq!(b.tool.message(), "gates done · stopping (Ctrl-C)");
    v.finish(Ok(&RunEnd::Interrupted));
}

#[test]
fn json_events_carry_the_session_and_running_cost() {
    let buf = Buf::default();
    let v = RunView::new(
        Mode::Json,
        &start(),
        ProgressDrawTarget::hidden(),
        Box::new(buf.clone()),
    );
    drive(&v);
    v.finish(Ok(&RunEnd::Limit("--max-sessions 1 reached".into())));
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let events: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "run_start",
            "session_start",
            "tool_start",
            "tool_end",
            "turn_end",
            "retry",
            "turn_end",
            "run_end"
        ]
    );
    assert_eq!(events[2]["summary"], "npm test");
    assert_eq!(events[5]["session"], 3);
    assert_eq!(events[7]["cost_usd"], 1.0);
    assert_eq!(events[7]["budget_left_usd"], 1.0);
    assert_eq!(events[7]["exit_code"], 2);
    // Every line opens with the time, then the type (docs/report.md).
    assert!(text.lines().all(|l| l.starts_with("{\"t_ms\":")), "{text}");
    let keys = |i: usize| -> Vec<&str> {
        events[i]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect()
    };
    assert_eq!(keys(1), ["t_ms", "type", "session", "kind"]);
    assert_eq!(
        keys(7),
        [
            "t_ms",
            "type",
            "outcome",
            "exit_code",
            "reason",
            "passing",
            "total",
            "sessions",
            "cost_usd",
            "budget_usd",
            "budget_left_usd"
        ]
    );
}
