//! The real Playwright MCP server driving the real Chromium, through the hub.

use baton_config::BrowserConfig;
use baton_mcp::{McpHub, playwright_spec};
use baton_testkit::Bounded as _;
use baton_tools::{ExternalTools, ToolOutput};
use serde_json::{Value, json};

use super::{browser_parts, family, wait_gone};

use baton_testkit::browser::serve_page;

/// The `ref` of the element whose snapshot line contains `what`, e.g. `textbox "Your name"`.
pub fn ref_of(snapshot: &str, what: &str) -> String {
    let line = snapshot
        .lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no {what} in the snapshot:\n{snapshot}"));
    let start = line.find("[ref=").expect("a ref") + 5;
    let end = start + line[start..].find(']').expect("ref ends");
    line[start..end].to_string()
}

async fn call(hub: &McpHub, tool: &str, input: Value) -> ToolOutput {
    let out = hub.call(&format!("mcp__playwright__{tool}"), &input).await;
    assert!(!out.is_error, "{tool} failed: {}", out.content);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigate_type_click_snapshot_and_screenshot_in_real_chromium() {
    let Some(parts) = browser_parts("navigate_type_click_snapshot_and_screenshot_in_real_chromium")
    else {
        return;
    };
    let url = serve_page();
    let project = tempfile::tempdir().unwrap();
    let browser = BrowserConfig {
        enabled: true,
        chromium: parts.chromium.display().to_string(),
        command: vec!["node".into(), parts.cli.display().to_string()],
    };
    let hub = McpHub::start(vec![playwright_spec(&browser, project.path())])
        .await
        .unwrap();
    let names: Vec<String> = hub.specs().into_iter().map(|s| s.name).collect();
    for t in [
        "browser_navigate",
        "browser_snapshot",
        "browser_type",
        "browser_click",
        "browser_take_screenshot",
    ] {
        assert!(
            names.contains(&format!("mcp__playwright__{t}")),
            "{t} in {names:?}"
        );
    }

    assert!(
        !names.contains(&"mcp__playwright__browser_run_code_unsafe".to_string()),
        "the unsafe tool is hidden"
    );
    let out = call(&hub, "browser_navigate", json!({"url": url})).await;
    eprintln!("navigate:\n{}", out.content);
    let snap = call(&hub, "browser_snapshot", json!({})).await.content;
    eprintln!("snapshot:\n{snap}");
    assert!(snap.contains("Nobody greeted yet"), "{snap}");

    let input = ref_of(&snap, "textbox \"Your name\"");
    let out = call(
        &hub,
        "browser_type",
        json!({"element": "Your name", "target": input, "text": "Ada"}),
    )
    .await;
    eprintln!("type:\n{}", out.content);
    let button = ref_of(&snap, "button \"Greet\"");
    let out = call(
        &hub,
        "browser_click",
        json!({"element": "Greet button", "target": button}),
    )
    .await;
    eprintln!("click:\n{}", out.content);

    let snap = call(&hub, "browser_snapshot", json!({})).await.content;
    assert!(snap.contains("Hello, Ada!"), "{snap}");
    assert!(!snap.contains("Nobody greeted yet"), "{snap}");

    let shot = call(&hub, "browser_take_screenshot", json!({"scale": "css"})).await;
    eprintln!("screenshot:\n{}", shot.content);
    assert_eq!(shot.images.len(), 1, "{}", shot.content);
    assert_eq!(shot.images[0].media_type, "image/png");
    assert!(shot.images[0].data.starts_with("iVBORw0KGgo"), "a PNG");

    // Shutting down ends the server, Chromium and all its helpers.
    let pid = hub.server_pid("playwright").await.unwrap();
    let procs = family(pid);
    assert!(procs.len() > 2, "node and chromium's processes: {procs:?}");
    let t0 = std::time::Instant::now();
    hub.shutdown().await;
    eprintln!("shutdown took {:?}", t0.elapsed());
    assert_eq!(wait_gone(&procs), Vec::<u32>::new());
    // The profile lived in the project's .baton/playwright/tmp and was removed.
    let left: Vec<String> = std::fs::read_dir(project.path().join(".baton/playwright/tmp"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    eprintln!("left in tmp: {left:?}");
    assert!(left.iter().all(|f| !f.contains("profile")), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_server_killed_mid_run_is_restarted_with_a_fresh_browser() {
    let Some(parts) =
        browser_parts("a_browser_server_killed_mid_run_is_restarted_with_a_fresh_browser")
    else {
        return;
    };
    let url = serve_page();
    let project = tempfile::tempdir().unwrap();
    let browser = BrowserConfig {
        enabled: true,
        chromium: parts.chromium.display().to_string(),
        command: vec!["node".into(), parts.cli.display().to_string()],
    };
    let hub = McpHub::start(vec![playwright_spec(&browser, project.path())])
        .await
        .unwrap();
    call(&hub, "browser_navigate", json!({"url": url})).await;
    let pid = hub.server_pid("playwright").await.unwrap();
    let procs = family(pid);
    assert!(procs.len() > 2, "node and chromium's processes: {procs:?}");

    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status_bounded()
        .unwrap();
    assert!(status.success());
    // Chromium goes when its pipe to the dead server closes.
    assert_eq!(wait_gone(&procs), Vec::<u32>::new());

    let out = hub
        .call("mcp__playwright__browser_snapshot", &json!({}))
        .await;
    assert!(out.is_error);
    assert!(
        out.content
            .contains("MCP server \"playwright\" died during the call of browser_snapshot"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains("baton restarted it"),
        "{}",
        out.content
    );

    // A fresh browser: the page must be opened again, and works.
    call(&hub, "browser_navigate", json!({"url": url})).await;
    let snap = call(&hub, "browser_snapshot", json!({})).await.content;
    assert!(snap.contains("Nobody greeted yet"), "{snap}");
    let pid = hub.server_pid("playwright").await.unwrap();
    let procs = family(pid);
    hub.shutdown().await;
    assert_eq!(wait_gone(&procs), Vec::<u32>::new());
}
