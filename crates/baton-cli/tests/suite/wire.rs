//! What baton sends: headers, tool schemas, prompt caching, thinking, usage and cost.

use baton_agent::transcript::Event;
use baton_testkit::{Reply, Step, Wire};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

const TOOLS: [&str; 6] = ["Bash", "Read", "Write", "Edit", "Glob", "Grep"];

#[test]
fn anthropic_request_shape_headers_and_cache_breakpoints() {
    let p = Project::new();
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool("Bash", json!({"command": "echo hi"}))),
            Step::Reply(Reply::text("done")),
        ],
        &["--model", "claude-test-model"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let r = &reqs[1];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(r.header("x-api-key"), Some("sk-test-key"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body["model"], "claude-test-model");
    assert_eq!(r.body["stream"], true);
    // No max_output_tokens set: the model's own limit (a claude- model the table
    // does not name gets the family's 32000).
    assert_eq!(r.body["max_tokens"], 32000);
    assert_eq!(
        r.body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let tools = r.body["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOLS);
    assert_eq!(tools[0]["input_schema"]["required"], json!(["command"]));
    assert_eq!(tools[5]["cache_control"], json!({"type": "ephemeral"}));
    assert!(tools[..5].iter().all(|t| t.get("cache_control").is_none()));
    // Only the newest block carries a breakpoint; older turns are plain.
    let msgs = r.body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert!(msgs[0]["content"][0].get("cache_control").is_none());
    assert_eq!(
        msgs[2]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"][0]["type"], "tool_use");
    assert_eq!(
        msgs[1]["content"][0]["input"],
        json!({"command": "echo hi"})
    );
    assert_eq!(
        msgs[2]["content"][0]["tool_use_id"],
        msgs[1]["content"][0]["id"]
    );
    assert!(msgs[2]["content"][0].get("is_error").is_none());
    // The API key never reaches the agent's commands.
    assert!(!reqs[0].body.to_string().contains("sk-test-key"));
}

#[test]
fn agent_commands_do_not_see_the_api_key() {
    let p = Project::new();
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool("Bash", json!({"command": "env"}))),
            Step::Reply(Reply::text("done")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    let env = &tool_results(Wire::Anthropic, &server.requests()[1].body)[0].1;
    assert!(env.contains("PATH="), "{env}");
    assert!(
        !env.contains("sk-test-key") && !env.contains("ANTHROPIC_API_KEY"),
        "{env}"
    );
}

#[test]
fn thinking_blocks_are_sent_back_with_their_signature() {
    let p = Project::with_toml("[agent]\nthinking_budget = 2048\n");
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(
                Reply::tool("Bash", json!({"command": "true"}))
                    .with_thinking("Let me check.", "sig-abc"),
            ),
            Step::Reply(Reply::text("done")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(
        reqs[0].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        reqs[1].body["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "Let me check.", "signature": "sig-abc"})
    );
}

#[test]
fn openai_request_shape_and_tool_pairing() {
    let p = Project::new();
    let (out, server) = exec(
        &p,
        Wire::OpenAi,
        vec![
            Step::Reply(Reply::tool("Bash", json!({"command": "exit 3"})).with_text("Trying.")),
            Step::Reply(Reply::text("done")),
        ],
        &["--model", "local-model"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = &server.requests()[1];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer sk-openai-test"));
    assert_eq!(r.body["model"], "local-model");
    assert_eq!(r.body["stream_options"], json!({"include_usage": true}));
    let tools = r.body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 6);
    assert_eq!(tools[1]["type"], "function");
    assert_eq!(tools[1]["function"]["name"], "Read");
    let msgs = r.body["messages"].as_array().unwrap();
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[1], json!({"role": "user", "content": "do the task"}));
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(msgs[2]["content"], "Trying.");
    let call = &msgs[2]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "Bash");
    let args: serde_json::Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"command": "exit 3"}));
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": call["id"], "content": "Error: Exit code: 3"})
    );
}

#[test]
fn usage_and_cost_are_recorded_per_request_and_session() {
    let p = Project::with_toml(
        "[prices.\"my-model\"]\ninput = 2.0\noutput = 10.0\ncache_read = 0.5\ncache_write = 4.0\n",
    );
    let (out, _s) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(
                Reply::tool("Bash", json!({"command": "true"})).with_usage(1000, 500, 2000, 300),
            ),
            Step::Reply(Reply::text("done").with_usage(100, 50, 3000, 0)),
        ],
        &["--model", "my-model"],
    );
    assert_eq!(out.status.code(), Some(0));
    let t = p.transcript(1);
    let costs: Vec<f64> = t
        .iter()
        .filter_map(|r| match &r.event {
            Event::Assistant { cost_usd, .. } => Some(*cost_usd),
            _ => None,
        })
        .collect();
    let c1 = (1000.0 * 2.0 + 500.0 * 10.0 + 2000.0 * 0.5 + 300.0 * 4.0) / 1e6;
    let c2 = (100.0 * 2.0 + 50.0 * 10.0 + 3000.0 * 0.5) / 1e6;
    assert_eq!(costs.len(), 2);
    assert!(
        (costs[0] - c1).abs() < 1e-12 && (costs[1] - c2).abs() < 1e-12,
        "{costs:?}"
    );
    match &t.last().unwrap().event {
        Event::SessionEnd {
            usage, cost_usd, ..
        } => {
            assert_eq!(
                (
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens
                ),
                (1100, 550, 5000, 300)
            );
            assert!((cost_usd - (c1 + c2)).abs() < 1e-12);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        stderr(&out).contains("6950 tokens · $0.0114"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn openai_cached_tokens_are_split_from_input() {
    let p = Project::new();
    let (out, _s) = exec(
        &p,
        Wire::OpenAi,
        vec![Step::Reply(Reply::text("hi").with_usage(100, 7, 900, 0))],
        &[],
    );
    assert_eq!(out.status.code(), Some(0));
    match &p.transcript(1).last().unwrap().event {
        Event::SessionEnd { usage, .. } => {
            assert_eq!(
                (
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens
                ),
                (100, 7, 900)
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn openai_responses_request_shape_reasoning_replay_and_usage() {
    let p = Project::new();
    let (out, server) = exec(
        &p,
        Wire::OpenAiResponses,
        vec![
            Step::Reply(
                Reply::tool("Bash", json!({"command": "exit 3"}))
                    .with_text("Trying.")
                    .with_thinking("Check the exit code.", "enc-abc")
                    .with_usage(100, 7, 900, 0),
            ),
            Step::Reply(Reply::text("done")),
        ],
        &["--model", "o4-mini"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = &server.requests()[1];
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(r.body["model"], "o4-mini");
    assert!(
        r.body["instructions"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    let tools = r.body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 6);
    assert_eq!(tools[1]["type"], "function");
    assert_eq!(tools[1]["name"], "Read");
    assert!(tools[1]["parameters"].is_object());
    let input = r.body["input"].as_array().unwrap();
    assert_eq!(
        input[0],
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "do the task"}]})
    );
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Check the exit code."}], "encrypted_content": "enc-abc"})
    );
    assert_eq!(
        input[2],
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Trying."}]})
    );
    assert_eq!(input[3]["type"], "function_call");
    assert_eq!(input[3]["name"], "Bash");
    let args: serde_json::Value =
        serde_json::from_str(input[3]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"command": "exit 3"}));
    assert_eq!(
        input[4],
        json!({"type": "function_call_output", "call_id": input[3]["call_id"], "output": "Error: Exit code: 3"})
    );
    assert_eq!(input.len(), 5);
    // The transcript keeps the reasoning; cached input counts as cache reads.
    let t = p.transcript(1);
    let first = t
        .iter()
        .find_map(|r| match &r.event {
            Event::Assistant { content, usage, .. } => Some((content.clone(), *usage)),
            _ => None,
        })
        .unwrap();
    assert!(
        matches!(&first.0[0], baton_agent::model::Block::Reasoning { encrypted_content, .. } if encrypted_content == "enc-abc"),
        "{:?}",
        first.0
    );
    assert_eq!(
        (
            first.1.input_tokens,
            first.1.output_tokens,
            first.1.cache_read_tokens
        ),
        (100, 7, 900)
    );
    // `baton log` shows the reasoning's summary.
    let log = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["log", p.path().to_str().unwrap(), "--session", "1"])
        .output_bounded()
        .unwrap();
    assert!(
        stdout(&log).contains("(reasoning) Check the exit code."),
        "{}",
        stdout(&log)
    );
}

/// A whole run on baton's own loop over the Responses API, initializer to
/// complete, with an edited feature undone, a refused command and a quota waited
/// out on the way (the same trials the Codex backend's whole run meets).
#[test]
fn openai_responses_whole_run_with_a_tamper_a_refusal_and_a_quota_wait_completes() {
    use super::run::{features, honest, initializer, new_project};
    let wire = Wire::OpenAiResponses;
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::quota_wall(std::time::Duration::from_secs(2)));
    // Session 2: feature 1 honestly, then a push (refused) and an edit of feature
    // 2's description (undone after the session).
    let mut session = honest(1, &[true, false, false]);
    let done = session.pop().unwrap();
    steps.extend(session);
    steps.push(Step::Reply(Reply::tools(&[
        ("Bash", json!({"command": "git push origin main"})),
        (
            "Bash",
            json!({"command": "sed -i 's/\"Feature 2\"/\"Feature 2 (easy)\"/' feature_list.json"}),
        ),
    ])));
    steps.push(done);
    steps.extend(honest(2, &[true, true, false]));
    steps.extend(honest(3, &[true, true, true]));
    let server = baton_testkit::ScriptedServer::start(wire, steps);
    let out = baton(&server, wire)
        .arg("run")
        .arg(p.path())
        .arg("--json")
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.remaining(), 0, "{err}");
    assert!(server.refused("quota") >= 1);
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.contains("\"type\":\"waiting\"")),
        "{}",
        stdout(&out)
    );
    assert_eq!(p.file("feature_list.json"), features(&[true, true, true]));
    let s = state(&p);
    let g = &s["sessions"][1]["gates"];
    assert_eq!(
        g["violations"],
        json!(["feature 2: \"description\" was changed"]),
        "{g}"
    );
    assert_eq!(g["refusals"], 1, "{g}");
    assert_eq!(g["flipped"], json!([1]), "{g}");
    for n in 1..=4 {
        assert_consistent(&p.transcript(n));
    }
}
