//! The gate before every tool call decides; a refusal reaches the model as the
//! tool's error, is marked in the transcript, and the command never runs.

use baton_agent::client::{ClientConfig, ModelClient, Provider};
use baton_agent::pricing::PriceTable;
use baton_agent::session::{Limits, Outcome, Quiet, Session};
use baton_agent::transcript::{self, Event, Transcript};
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use baton_tools::{GateDecision, ToolContext, ToolGate, Toolbox};
use serde_json::{Value, json};

struct NoRm;

impl ToolGate for NoRm {
    fn check(&self, tool: &str, input: &Value) -> GateDecision {
        match input["command"].as_str() {
            Some(c) if tool == "Bash" && c.contains("rm ") => GateDecision::Refuse(
                "`rm` is not allowed here; move files with git mv instead".into(),
            ),
            _ => GateDecision::Allow,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_is_answered_and_recorded_but_never_run() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "precious").unwrap();
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tools(&[
                ("Bash", json!({"command": "rm keep.txt"})),
                ("Bash", json!({"command": "echo allowed > ok.txt"})),
            ])),
            Step::Reply(Reply::text("done")),
        ],
    );
    let client = ModelClient::new(ClientConfig {
        provider: Provider::Anthropic,
        model: "m".into(),
        base_url: server.base_url(),
        api_key: Some("k".into()),
        max_output_tokens: 1000,
        thinking_budget: 0,
        retry: Default::default(),
        max_wait: std::time::Duration::ZERO,
    })
    .unwrap();
    let tools = Toolbox::new(ToolContext::new(dir.path().to_path_buf()));
    let prices = PriceTable::new(&Default::default());
    let session = Session {
        client: &client,
        tools: &tools,
        gate: &NoRm,
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
    let mut t = Transcript::create_next(dir.path()).unwrap();
    let r = session.run(&mut t, "system", "go").await.unwrap();
    assert_eq!(r.outcome, Outcome::Completed);
    assert_eq!(r.final_text, "done");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("keep.txt")).unwrap(),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ok.txt")).unwrap(),
        "allowed\n"
    );

    let sent = &server.requests()[1].body["messages"][2]["content"];
    assert_eq!(
        sent[0]["content"],
        "Refused by baton's policy: `rm` is not allowed here; move files with git mv instead"
    );
    assert_eq!(sent[0]["is_error"], true);
    assert_eq!(sent[1]["content"], "Exit code: 0");

    let records = transcript::read(t.path()).unwrap();
    let refused: Vec<bool> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolResult { refused, .. } => Some(*refused),
            _ => None,
        })
        .collect();
    assert_eq!(refused, vec![true, false]);
}
