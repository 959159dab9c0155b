//! A session on the OpenAI Responses API against the scripted server: calls run and
//! answered as `function_call_output`, reasoning replayed in order with its
//! encrypted content, one prompt-cache key per project, cached tokens priced as
//! cache reads, and a rate limit retried.

use baton_agent::client::{ClientConfig, ModelClient, Provider};
use baton_agent::pricing::PriceTable;
use baton_agent::session::{Limits, Outcome, Quiet, Session, SessionResult};
use baton_agent::transcript::Transcript;
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use baton_tools::{AllowAll, ToolContext, Toolbox};
use serde_json::{Value, json};

async fn session(dir: &std::path::Path, server: &ScriptedServer, prompt: &str) -> SessionResult {
    let client = ModelClient::new(ClientConfig {
        provider: Provider::OpenAiResponses,
        model: "gpt-5".into(),
        base_url: server.openai_base_url(),
        api_key: Some("sk-test".into()),
        max_output_tokens: 1000,
        thinking_budget: 0,
        retry: baton_config::RetryConfig {
            base_delay_ms: 1,
            max_delay_ms: 10,
            ..Default::default()
        },
        max_wait: std::time::Duration::ZERO,
    })
    .unwrap();
    let tools = Toolbox::new(ToolContext::new(dir.to_path_buf()));
    let prices = PriceTable::new(&Default::default());
    let session = Session {
        client: &client,
        tools: &tools,
        gate: &AllowAll,
        observer: &Quiet,
        prices: &prices,
        limits: Limits {
            max_turns: 10,
            max_tokens: 0,
            max_duration: None,
            max_cost_usd: 0.0,
            max_continuations: 3,
            context: Default::default(),
        },
    };
    let mut t = Transcript::create_next(dir).unwrap();
    session.run(&mut t, "system prompt", prompt).await.unwrap()
}

fn items<'a>(body: &'a Value, kind: &str) -> Vec<&'a Value> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == kind)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_round_trip_replays_reasoning_and_keeps_one_cache_key() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(
        Wire::OpenAiResponses,
        vec![
            Step::rate_limited(0),
            Step::Reply(
                Reply::tool("Bash", json!({"command": "echo made > out.txt"}))
                    .with_text("Writing it.")
                    .with_thinking("write the file first", "ENCRYPTED-1")
                    .with_usage(100, 20, 900, 0),
            ),
            Step::Reply(Reply::text("done").with_usage(200, 10, 1000, 0)),
        ],
    );
    let r = session(dir.path(), &server, "make out.txt").await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.final_text, "done");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(r.usage.cache_read_tokens, 1900);
    assert_eq!(r.usage.input_tokens, 300);
    // gpt-5: 1.25 in, 10 out, 0.125 cache read (USD per million).
    let expected = (300.0 * 1.25 + 30.0 * 10.0 + 1900.0 * 0.125) / 1e6;
    assert!((r.cost_usd - expected).abs() < 1e-12, "{}", r.cost_usd);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "the 429 was retried");
    for req in &reqs {
        assert_eq!(req.path, "/v1/responses");
        assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(req.body["stream"], true);
        assert_eq!(req.body["store"], false);
        assert_eq!(req.body["instructions"], "system prompt");
        assert_eq!(req.body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(req.body["tools"][0]["type"], "function");
        assert!(req.body["tools"][0]["name"].is_string());
    }
    let key = reqs[0].body["prompt_cache_key"].as_str().unwrap();
    assert!(key.starts_with("baton-"), "{key}");
    assert!(reqs.iter().all(|r| r.body["prompt_cache_key"] == key));
    assert_eq!(reqs[1].first_user_text(), "make out.txt");

    // The second turn: reasoning, text, call and its output, in the model's order.
    let last = &reqs[2].body;
    let kinds: Vec<&str> = last["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call_output"
        ]
    );
    let reasoning = items(last, "reasoning")[0];
    assert_eq!(reasoning["encrypted_content"], "ENCRYPTED-1");
    assert_eq!(reasoning["summary"][0]["text"], "write the file first");
    assert!(
        reasoning.get("id").is_none(),
        "nothing is stored to refer to"
    );
    let call = items(last, "function_call")[0];
    let output = items(last, "function_call_output")[0];
    assert_eq!(call["call_id"], output["call_id"]);
    assert_eq!(call["name"], "Bash");
    assert_eq!(output["output"], "Exit code: 0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_call_is_answered_with_an_error_and_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(
        Wire::OpenAiResponses,
        vec![
            Step::Reply(
                Reply::raw_tool("Write", r#"{"file_path": "a.txt", "content": "par"#)
                    .with_stop("max_output_tokens"),
            ),
            Step::Reply(Reply::tool(
                "Write",
                json!({"file_path": "a.txt", "content": "whole"}),
            )),
            Step::Reply(Reply::text("done")),
        ],
    );
    let r = session(dir.path(), &server, "write a.txt").await;
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "whole"
    );
    let second = &server.requests()[1].body;
    let out = items(second, "function_call_output")[0]["output"]
        .as_str()
        .unwrap();
    assert!(out.contains("output token limit"), "{out}");
}
