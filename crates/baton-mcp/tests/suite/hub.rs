//! The hub against a real MCP server process (`tests/support/test_server.py`).

use baton_testkit::Bounded as _;
use std::time::Duration;

use baton_mcp::{HubOptions, McpError, McpHub};
use baton_tools::ExternalTools;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{running, test_server, wait_gone};

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

async fn call(hub: &McpHub, name: &str, input: Value) -> baton_tools::ToolOutput {
    hub.call(name, &input).await
}

fn whoami(out: &baton_tools::ToolOutput) -> Value {
    assert!(!out.is_error, "{}", out.content);
    serde_json::from_str(&out.content).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_with_prefixed_names_descriptions_and_schemas() {
    let d = dir();
    let hub = McpHub::start(vec![test_server("test", d.path(), &[])])
        .await
        .unwrap();
    let specs = hub.specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mcp__test__echo",
            "mcp__test__image",
            "mcp__test__fail",
            "mcp__test__crash",
            "mcp__test__sleep",
            "mcp__test__whoami",
            "mcp__test__spawn",
            "mcp__test__odd_name",
        ]
    );
    assert_eq!(specs[0].description, "Answer with the text given.");
    assert_eq!(
        specs[0].input_schema,
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    );
    assert!(hub.handles("mcp__test__echo"));
    assert!(hub.handles("mcp__test__anything"));
    assert!(!hub.handles("mcp__other__echo"));
    assert!(!hub.handles("Bash"));
    assert_eq!(hub.servers(), ["test"]);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_tools_are_not_offered_and_refused() {
    let d = dir();
    let mut spec = test_server("test", d.path(), &[]);
    spec.hidden_tools = vec!["crash".into()];
    let hub = McpHub::start(vec![spec]).await.unwrap();
    assert!(hub.specs().iter().all(|s| s.name != "mcp__test__crash"));
    let out = call(&hub, "mcp__test__crash", json!({})).await;
    assert!(out.is_error);
    assert!(out.content.contains("is not available"), "{}", out.content);
    // Not called: the server is the same process.
    assert!(hub.server_pid("test").await.is_some());
    let out = call(&hub, "mcp__test__echo", json!({"text": "x"})).await;
    assert_eq!(out.content, "x");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_come_back_faithfully() {
    let d = dir();
    let hub = McpHub::start(vec![test_server("test", d.path(), &[])])
        .await
        .unwrap();

    let out = call(&hub, "mcp__test__echo", json!({"text": "hello\nworld"})).await;
    assert_eq!(out, baton_tools::ToolOutput::ok("hello\nworld"));

    let out = call(&hub, "mcp__test__image", json!({})).await;
    assert!(!out.is_error);
    assert_eq!(out.content, "a red pixel");
    assert_eq!(out.images.len(), 1);
    assert_eq!(out.images[0].media_type, "image/png");
    assert!(out.images[0].data.starts_with("iVBORw0KGgo"), "a PNG");

    let out = call(&hub, "mcp__test__fail", json!({"message": "no such row"})).await;
    assert_eq!(out, baton_tools::ToolOutput::error("no such row"));

    // The cleaned name reaches the tool's real name.
    let out = call(&hub, "mcp__test__odd_name", json!({})).await;
    assert_eq!(out, baton_tools::ToolOutput::ok("odd"));

    // A tool the server does not have: the server's own error, named.
    let out = call(&hub, "mcp__test__nope", json!({})).await;
    assert!(out.is_error);
    assert!(out.content.contains("unknown tool nope"), "{}", out.content);
    assert!(out.content.contains("-32602"), "{}", out.content);

    let out = call(&hub, "mcp__test__echo", json!("text")).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("must be a JSON object"),
        "{}",
        out.content
    );

    // Null input is no arguments.
    let out = call(&hub, "mcp__test__whoami", Value::Null).await;
    assert!(!out.is_error, "{}", out.content);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_and_working_directory_are_the_specs() {
    let d = dir();
    let mut spec = test_server("test", d.path(), &[]);
    spec.env
        .insert("MCP_TEST_VAR".into(), "set by baton.toml".into());
    // Removed from baton's environment, unless the spec sets it.
    spec.env_remove = vec!["HOME".into(), "MCP_TEST_VAR".into()];
    spec.files = vec![(d.path().join("conf/server.json"), "{}\n".into())];
    let hub = McpHub::start(vec![spec]).await.unwrap();
    let who = whoami(&call(&hub, "mcp__test__whoami", json!({})).await);
    assert_eq!(who["var"], "set by baton.toml");
    assert_eq!(who["home"], Value::Null);
    assert_eq!(
        std::path::Path::new(who["cwd"].as_str().unwrap())
            .canonicalize()
            .unwrap(),
        d.path().canonicalize().unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("conf/server.json")).unwrap(),
        "{}\n",
        "files are written before the start"
    );
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_mid_call_is_a_tool_error_and_the_server_is_restarted() {
    let d = dir();
    let hub = McpHub::start(vec![test_server("test", d.path(), &[])])
        .await
        .unwrap();
    let first = whoami(&call(&hub, "mcp__test__whoami", json!({})).await)["pid"].clone();

    let out = call(&hub, "mcp__test__crash", json!({})).await;
    assert!(out.is_error);
    assert!(
        out.content
            .contains("MCP server \"test\" died during the call of crash"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("crashing on purpose"),
        "quotes its last output: {}",
        out.content
    );
    assert!(
        out.content
            .contains("baton restarted it (restart 1 of at most 3)"),
        "{}",
        out.content
    );

    // The next call works, on a new process.
    let who = whoami(&call(&hub, "mcp__test__whoami", json!({})).await);
    assert_ne!(who["pid"], first);
    assert!(!running(first.as_u64().unwrap() as u32));
    let out = call(&hub, "mcp__test__echo", json!({"text": "still here"})).await;
    assert_eq!(out.content, "still here");
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_between_calls_is_found_dead_and_restarted() {
    let d = dir();
    let hub = McpHub::start(vec![test_server("test", d.path(), &[])])
        .await
        .unwrap();
    let pid = hub.server_pid("test").await.unwrap();
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status_bounded()
        .unwrap();
    assert!(status.success());
    assert_eq!(wait_gone(&[pid]), Vec::<u32>::new());

    let out = call(&hub, "mcp__test__echo", json!({"text": "x"})).await;
    assert!(out.is_error);
    assert!(out.content.contains("died"), "{}", out.content);
    assert!(out.content.contains("restarted"), "{}", out.content);
    let out = call(&hub, "mcp__test__echo", json!({"text": "x"})).await;
    assert_eq!(out, baton_tools::ToolOutput::ok("x"));
    assert_ne!(hub.server_pid("test").await, Some(pid));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_are_bounded_then_the_server_is_gone() {
    let d = dir();
    let options = HubOptions {
        max_restarts: 2,
        ..HubOptions::default()
    };
    let hub = McpHub::start_with(vec![test_server("test", d.path(), &[])], options)
        .await
        .unwrap();
    for n in 1..=2 {
        let out = call(&hub, "mcp__test__crash", json!({})).await;
        assert!(
            out.content.contains(&format!("restart {n} of at most 2")),
            "{}",
            out.content
        );
    }
    let out = call(&hub, "mcp__test__crash", json!({})).await;
    assert!(out.is_error);
    assert!(
        out.content
            .contains("baton does not start it again (it died 3 times and was restarted 2 times"),
        "{}",
        out.content
    );
    let out = call(&hub, "mcp__test__echo", json!({"text": "x"})).await;
    assert!(out.is_error);
    assert!(
        out.content.contains("MCP server \"test\" is gone"),
        "{}",
        out.content
    );
    assert_eq!(hub.server_pid("test").await, None);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_an_answer_times_out_and_the_server_goes_on() {
    let d = dir();
    let options = HubOptions {
        call_timeout: Duration::from_millis(300),
        ..HubOptions::default()
    };
    let hub = McpHub::start_with(vec![test_server("test", d.path(), &[])], options)
        .await
        .unwrap();
    let out = call(&hub, "mcp__test__sleep", json!({"seconds": 1.5})).await;
    assert!(out.is_error);
    assert!(
        out.content
            .contains("did not answer the call of sleep within 0.3 s"),
        "{}",
        out.content
    );
    // The server is busy until its sleep ends, then answers again.
    let mut answered = None;
    for _ in 0..50 {
        let out = call(&hub, "mcp__test__echo", json!({"text": "back"})).await;
        if !out.is_error {
            answered = Some(out.content);
            break;
        }
    }
    assert_eq!(answered.as_deref(), Some("back"));
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_is_named_with_what_it_printed() {
    let d = dir();
    let good = test_server("good", d.path(), &[]);
    let bad = test_server("broken", d.path(), &["--fail-start"]);
    let err = McpHub::start(vec![good, bad]).await.unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, McpError::Start { .. }), "{err:?}");
    assert!(msg.starts_with("MCP server \"broken\" (`python3 "), "{msg}");
    assert!(
        msg.contains("test server: cannot start: missing widget"),
        "{msg}"
    );

    // For the browser, the error points at `baton doctor`.
    let err = McpHub::start(vec![test_server("playwright", d.path(), &["--fail-start"])])
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("(`baton doctor` checks Node, @playwright/mcp and Chromium)"),
        "{err}"
    );

    let mut missing = test_server("nothere", d.path(), &[]);
    missing.command = "/nonexistent/mcp-server".into();
    let err = McpHub::start(vec![missing]).await.unwrap_err();
    assert!(matches!(err, McpError::Spawn { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("MCP server \"nothere\": cannot run `/nonexistent/mcp-server "),
        "{err}"
    );

    let mut empty = test_server("empty", d.path(), &[]);
    empty.command = String::new();
    let err = McpHub::start(vec![empty]).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "MCP server \"empty\" has no command to run"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_must_be_usable_and_unique() {
    let d = dir();
    let err = McpHub::start(vec![test_server("a__b", d.path(), &[])])
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::InvalidName { .. }), "{err:?}");
    let err = McpHub::start(vec![
        test_server("t", d.path(), &[]),
        test_server("t", d.path(), &[]),
    ])
    .await
    .unwrap_err();
    assert_eq!(err.to_string(), "MCP server \"t\" is configured twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_the_server_and_what_it_started_in_its_own_session() {
    let d = dir();
    let hub = McpHub::start(vec![
        test_server("one", d.path(), &[]),
        test_server("two", d.path(), &[]),
    ])
    .await
    .unwrap();
    let one = hub.server_pid("one").await.unwrap();
    let two = hub.server_pid("two").await.unwrap();
    let out = call(&hub, "mcp__one__spawn", json!({})).await;
    let child: u32 = out.content.parse().unwrap();
    assert!(running(child));

    hub.shutdown().await;
    assert_eq!(wait_gone(&[one, two, child]), Vec::<u32>::new());
    let out = call(&hub, "mcp__one__echo", json!({"text": "x"})).await;
    assert!(out.is_error);
    assert!(out.content.contains("is gone"), "{}", out.content);
    hub.shutdown().await; // twice is fine
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_hub_without_shutdown_still_kills_everything() {
    let d = dir();
    let hub = McpHub::start(vec![test_server("one", d.path(), &[])])
        .await
        .unwrap();
    let pid = hub.server_pid("one").await.unwrap();
    let child: u32 = call(&hub, "mcp__one__spawn", json!({}))
        .await
        .content
        .parse()
        .unwrap();
    drop(hub);
    assert_eq!(wait_gone(&[pid, child]), Vec::<u32>::new());
}

/// The browser server's `npx` starts outside the project: a `@playwright/mcp`
/// the agent wrote into the project's `node_modules/` is never what runs (it would
/// run with the user's rights, outside the sandbox).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_written_playwright_package_in_the_project_never_runs() {
    let project = dir();
    let outside = dir();
    let marker = outside.path().join("ran");
    let pkg = project.path().join("node_modules/@playwright/mcp");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        r#"{"name": "@playwright/mcp", "version": "9.9.9", "bin": {"mcp": "cli.js"}}"#,
    )
    .unwrap();
    let js = format!(
        "#!/usr/bin/env node\nrequire('fs').writeFileSync({:?}, 'x');\nprocess.exit(1);\n",
        marker.display().to_string()
    );
    std::fs::write(pkg.join("cli.js"), js).unwrap();
    let bin = project.path().join("node_modules/.bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("../@playwright/mcp/cli.js", bin.join("mcp")).unwrap();
    std::fs::set_permissions(
        pkg.join("cli.js"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let browser = baton_config::BrowserConfig::default();
    let spec = baton_mcp::playwright_spec(&browser, project.path());
    assert!(!spec.cwd.starts_with(project.path()));
    if let Ok(hub) = McpHub::start(vec![spec]).await {
        hub.shutdown().await;
    }
    assert!(
        !marker.exists(),
        "npx ran the project's node_modules/@playwright/mcp"
    );
}
