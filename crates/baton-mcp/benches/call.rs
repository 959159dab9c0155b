//! baton's own share of an MCP tool call (issue: under 2 ms).
//!
//! Against the test MCP server (`tests/support/test_server.py`, tool `echo`), the
//! same run times calls made directly with rmcp (the baseline: the server's work,
//! the pipes, JSON-RPC) and calls made through baton (`Toolbox::call` → `McpHub`:
//! name routing, the restart bookkeeping, the timeout, the result conversion). The
//! difference is baton's share. Rounds alternate; medians of per-call times.
//!
//! `cargo bench -p baton-mcp --bench call`

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use baton_mcp::{McpHub, ServerSpec};
use baton_tools::{ToolContext, Toolbox};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::TokioChildProcess;
use serde_json::json;

const CALLS: u32 = 300;
const ROUNDS: usize = 7;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(bench())
}

async fn bench() -> Result<(), Box<dyn std::error::Error>> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/test_server.py");
    let dir = tempfile::tempdir()?;

    let mut cmd = tokio::process::Command::new("python3");
    cmd.arg(&script);
    let direct = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("bench", "1"),
    )
    .serve(TokioChildProcess::new(cmd)?)
    .await?;

    let hub = McpHub::start(vec![ServerSpec {
        name: "test".into(),
        command: "python3".into(),
        args: vec![script.display().to_string()],
        env: BTreeMap::new(),
        env_remove: vec![],
        cwd: dir.path().to_path_buf(),
        files: vec![],
        hidden_tools: vec![],
    }])
    .await?;
    let tools = Toolbox::new(ToolContext::new(dir.path().to_path_buf()));
    tools.attach(hub.clone());

    let text = "x".repeat(200);
    let input = json!({ "text": text });
    let args = input.as_object().cloned().unwrap_or_default();

    let mut direct_us = Vec::new();
    let mut baton_us = Vec::new();
    for _ in 0..ROUNDS {
        let t0 = Instant::now();
        for _ in 0..CALLS {
            let r = direct
                .call_tool(CallToolRequestParams::new("echo").with_arguments(args.clone()))
                .await?;
            if r.is_error == Some(true) {
                return Err("direct call failed".into());
            }
        }
        direct_us.push(per_call(t0.elapsed()));

        let t0 = Instant::now();
        for _ in 0..CALLS {
            let out = tools.call("mcp__test__echo", &input).await;
            if out.is_error {
                return Err(format!("baton call failed: {}", out.content).into());
            }
        }
        baton_us.push(per_call(t0.elapsed()));
    }
    hub.shutdown().await;
    direct.cancel().await?;

    let d = median(&mut direct_us);
    let b = median(&mut baton_us);
    let share = b - d;
    println!("MCP tool call (echo, 200 bytes), {CALLS} calls x {ROUNDS} rounds, medians per call:");
    println!("  direct rmcp client      {d:8.1} us");
    println!("  through baton (Toolbox) {b:8.1} us");
    let note = if share <= 0.0 {
        ", below this run's noise"
    } else {
        ""
    };
    println!(
        "  baton's share           {share:8.1} us   (ratio {:.2}x{note}; target < 2000 us)",
        b / d
    );
    Ok(())
}

fn per_call(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6 / f64::from(CALLS)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
