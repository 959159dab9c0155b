//! `baton log`: transcripts as a readable conversation, or as JSON lines.

use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::json;

use super::*;

fn log(p: &Project, args: &[&str]) -> Output {
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    baton(&server, Wire::Anthropic)
        .arg("log")
        .arg(p.path())
        .args(args)
        .output_bounded()
        .unwrap()
}

fn session_with_a_bit_of_everything() -> Project {
    let p = Project::new();
    let (out, _s) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::overloaded(),
            Step::Reply(
                Reply::tools(&[
                    ("Bash", json!({"command": "seq 1 20"})),
                    ("Read", json!({"file_path": "missing.txt"})),
                ])
                .with_text("Looking around."),
            ),
            Step::Reply(Reply::text("Finished.")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    p
}

#[test]
fn log_reads_as_a_conversation() {
    let p = session_with_a_bit_of_everything();
    let out = log(&p, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for expected in [
        "session 0001 · anthropic claude-sonnet-4-5 ·",
        "tools: Bash, Read, Write, Edit, Glob, Grep",
        "── user\n   do the task\n",
        "   ↻ turn 1: attempt 1/6 failed, retried after",
        "overloaded_error: Overloaded",
        "── assistant · turn 1 · 100 in / 20 out / 0 cache read / 0 cache write · $0.0006\n   Looking around.\n   → Bash seq 1 20\n   → Read missing.txt\n",
        "   ← Bash ✓ (",
        "     │ 1\n     │ 2\n",
        "     │ … (13 more lines)\n",
        "   ← Read ✗ ERROR (",
        "     │ Read: file not found: missing.txt\n",
        "   Finished.\n",
        "── end: completed · 2 turns · 240 tokens · $0.0012",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn log_json_is_the_transcript() {
    let p = session_with_a_bit_of_everything();
    let out = log(&p, &["--json", "--session", "1"]);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "session_start",
            "user",
            "request",
            "retry",
            "assistant",
            "tool_result",
            "tool_result",
            "request",
            "assistant",
            "session_end"
        ]
    );
    assert!(lines.iter().all(|l| l["t_ms"].as_u64().is_some()));
}

#[test]
fn log_errors_name_what_is_missing() {
    let p = Project::new();
    let out = log(&p, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no sessions recorded in"),
        "{}",
        stderr(&out)
    );
    let p = session_with_a_bit_of_everything();
    let out = log(&p, &["--session", "7"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no session 7 in") && stderr(&out).contains("(sessions: 1)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn log_names_the_line_of_a_corrupt_transcript() {
    let p = session_with_a_bit_of_everything();
    let path = p.path().join(".baton/sessions/0001.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.insert_str(0, "{\"garbage\": true}\n");
    std::fs::write(&path, text).unwrap();
    let out = log(&p, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("0001.jsonl:1: not a transcript event"),
        "{}",
        stderr(&out)
    );
}
