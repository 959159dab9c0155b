//! The browser and MCP servers through the real `baton` binary: `baton exec` with
//! `[browser] enabled = true` drives the real `@playwright/mcp` and Chromium against a
//! page on 127.0.0.1; an MCP server that crashes mid-session; `baton doctor`.
//!
//! The browser's parts are found as in baton-mcp's tests: `$BATON_PLAYWRIGHT_MCP`
//! (the package's `cli.js`), else `.ci/npm/node_modules/@playwright/mcp/cli.js`
//! where `.ci/run` installs it; Chromium at `$BATON_CHROMIUM`, else
//! `/usr/bin/chromium`. Missing parts fail the test on CI (`CI=true`) and skip it
//! elsewhere, with a note.

use std::path::Path;
use std::process::Command;

use baton_agent::transcript::Event;
use baton_testkit::{Reply, Step, Wire};
use serde_json::{Value, json};

use super::*;

use baton_testkit::browser::{browser_parts, serve_page};

/// The text of the tool results in the last message of a recorded Anthropic
/// request, and the images among them: (texts, image media types).
fn results_of(body: &Value) -> (Vec<(String, bool)>, Vec<String>) {
    let last = body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    let mut texts = Vec::new();
    let mut images = Vec::new();
    for b in last["content"].as_array().cloned().unwrap_or_default() {
        if b["type"] != "tool_result" {
            continue;
        }
        let is_error = b["is_error"].as_bool().unwrap_or(false);
        match &b["content"] {
            Value::String(s) => texts.push((s.clone(), is_error)),
            Value::Array(parts) => {
                let mut text = String::new();
                for p in parts {
                    match p["type"].as_str() {
                        Some("text") => text.push_str(p["text"].as_str().unwrap_or_default()),
                        Some("image") => images.push(
                            p["source"]["media_type"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string(),
                        ),
                        _ => {}
                    }
                }
                texts.push((text, is_error));
            }
            _ => {}
        }
    }
    (texts, images)
}

/// Processes whose command line mentions `dir` (the browser's do: its output and
/// temp directories are in the project).
fn processes_mentioning(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.display().to_string();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmd.contains(&needle) {
            found.push((pid, cmd));
        }
    }
    found
}

#[test]
fn exec_drives_the_real_browser_and_keeps_the_evidence() {
    let Some(parts) = browser_parts("exec_drives_the_real_browser_and_keeps_the_evidence") else {
        return;
    };
    let url = serve_page();
    let p = Project::with_toml(&format!(
        "[browser]\nenabled = true\nchromium = {:?}\ncommand = [\"node\", {:?}]\n",
        parts.chromium.display().to_string(),
        parts.cli.display().to_string()
    ));
    let tool = |name: &str, input: Value| {
        Step::Reply(Reply::tool(&format!("mcp__playwright__{name}"), input))
    };
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            tool("browser_navigate", json!({"url": url})),
            tool("browser_snapshot", json!({})),
            tool(
                "browser_type",
                json!({"element": "Your name", "target": "e3", "text": "Ada"}),
            ),
            tool(
                "browser_click",
                json!({"element": "Greet button", "target": "e4"}),
            ),
            tool("browser_snapshot", json!({})),
            tool("browser_take_screenshot", json!({"scale": "css"})),
            Step::Reply(Reply::text("The greeting works: verified in the browser.")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "The greeting works: verified in the browser.\n"
    );

    let reqs = server.requests();
    assert_eq!(reqs.len(), 7);
    // The browser tools were offered with the server's schemas.
    let offered: Vec<&str> = reqs[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        offered.contains(&"mcp__playwright__browser_click"),
        "{offered:?}"
    );
    // What the model got back, call by call.
    let (nav, _) = results_of(&reqs[1].body);
    assert!(nav[0].0.contains("Page Title: Greeter"), "{nav:?}");
    let (snap, _) = results_of(&reqs[2].body);
    assert!(!snap[0].1, "{snap:?}");
    assert!(
        snap[0].0.contains("textbox \"Your name\" [ref=e3]")
            && snap[0].0.contains("button \"Greet\" [ref=e4]"),
        "the refs the script uses: {snap:?}"
    );
    assert!(snap[0].0.contains("Nobody greeted yet"), "{snap:?}");
    for (i, req) in reqs.iter().enumerate().take(5).skip(3) {
        let (r, _) = results_of(&req.body);
        assert!(!r[0].1, "call {i} failed: {r:?}");
    }
    let (snap, _) = results_of(&reqs[5].body);
    assert!(snap[0].0.contains("Hello, Ada!"), "{snap:?}");
    let (shot, images) = results_of(&reqs[6].body);
    assert!(!shot[0].1, "{shot:?}");
    assert_eq!(images, ["image/png"], "the screenshot reached the model");

    // Evidence: the screenshot and every browser call's text.
    let dir = p.path().join(".baton/evidence/0001");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let pngs: Vec<&String> = files.iter().filter(|f| f.ends_with(".png")).collect();
    assert_eq!(pngs.len(), 1, "{files:?}");
    let png = std::fs::read(dir.join(pngs[0])).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a real PNG");
    let txts: Vec<&String> = files.iter().filter(|f| f.ends_with(".txt")).collect();
    assert_eq!(txts.len(), 6, "{files:?}");
    let clicked = txts
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
        .find(|t| t.contains("Hello, Ada!"))
        .unwrap_or_else(|| panic!("no evidence with the greeting: {files:?}"));
    assert!(
        clicked.starts_with("tool: mcp__playwright__browser_snapshot\n"),
        "{clicked}"
    );

    // The transcript lists the evidence with the results.
    let t = p.transcript(1);
    assert_consistent(&t);
    let kept: usize = t
        .iter()
        .map(|r| match &r.event {
            Event::ToolResult { evidence, .. } => evidence.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(kept, 7, "six texts and one image");

    // The browser ended with the session.
    assert_eq!(processes_mentioning(p.path()), Vec::<(u32, String)>::new());
}

#[test]
fn an_mcp_server_that_crashes_mid_session_gives_a_tool_error_and_the_session_goes_on() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../baton-mcp/tests/support/test_server.py")
        .canonicalize()
        .unwrap();
    let p = Project::with_toml(&format!(
        "[mcp.test]\ncommand = \"python3\"\nargs = [{:?}]\n",
        script.display().to_string()
    ));
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool("mcp__test__echo", json!({"text": "before"}))),
            Step::Reply(Reply::tool("mcp__test__crash", json!({}))),
            Step::Reply(Reply::tool("mcp__test__echo", json!({"text": "after"}))),
            Step::Reply(Reply::text("done")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let result = |i: usize| tool_results(Wire::Anthropic, &reqs[i].body)[0].clone();
    assert_eq!(result(1).1, "before");
    let (_, crashed, is_error) = result(2);
    assert!(is_error);
    assert!(
        crashed.contains("MCP server \"test\" died during the call of crash")
            && crashed.contains("crashing on purpose")
            && crashed.contains("baton restarted it"),
        "{crashed}"
    );
    let (_, after, is_error) = result(3);
    assert_eq!((after.as_str(), is_error), ("after", false));
    assert_eq!(end_of(&p.transcript(1)), ("completed".to_string(), None));
}

#[test]
fn exec_stops_with_an_error_naming_a_server_that_cannot_start() {
    let p = Project::with_toml("[mcp.broken]\ncommand = \"/nonexistent/server\"\n");
    let (out, server) = exec(&p, Wire::Anthropic, vec![], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("MCP server \"broken\": cannot run `/nonexistent/server`"),
        "{err}"
    );
    assert!(server.requests().is_empty(), "no model request was made");
}

fn doctor(dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("doctor")
        .arg(dir)
        .output_bounded()
        .unwrap()
}

#[test]
fn doctor_says_what_is_missing_and_how_to_install_it() {
    let p = Project::with_toml(
        "[browser]\nenabled = true\nchromium = \"/nonexistent/chromium\"\ncommand = [\"node\", \"/nonexistent/cli.js\"]\n",
    );
    let out = doctor(p.path());
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("(the browser is enabled in baton.toml)"),
        "{text}"
    );
    assert!(text.contains("  ok       git "), "{text}");
    assert!(text.contains("  ok       bash "), "{text}");
    assert!(
        text.contains("  missing  chromium    /nonexistent/chromium not found"),
        "{text}"
    );
    assert!(text.contains("install: apt-get install chromium"), "{text}");
    assert!(
        text.contains("  missing  playwright  `node /nonexistent/cli.js` does not run"),
        "{text}"
    );
    assert!(
        text.contains("install: PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install -g @playwright/mcp"),
        "{text}"
    );
    assert!(text.contains("2 required part(s) missing"), "{text}");

    // With the browser off, its parts are optional.
    let p = Project::with_toml("[browser]\nchromium = \"/nonexistent/chromium\"\n");
    let out = doctor(p.path());
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("  absent   chromium "), "{text}");
}

#[test]
fn doctor_finds_the_installed_browser() {
    let Some(parts) = browser_parts("doctor_finds_the_installed_browser") else {
        return;
    };
    let p = Project::with_toml(&format!(
        "[browser]\nenabled = true\nchromium = {:?}\ncommand = [\"node\", {:?}]\n",
        parts.chromium.display().to_string(),
        parts.cli.display().to_string()
    ));
    let out = doctor(p.path());
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("  ok       node        v"), "{text}");
    assert!(
        text.contains("  ok       playwright  @playwright/mcp 0."),
        "{text}"
    );
    assert!(text.contains("  ok       chromium    Chromium "), "{text}");
    assert!(text.ends_with("all required parts are present\n"), "{text}");
}

#[test]
fn a_run_verifies_in_the_real_browser_and_links_the_evidence_to_the_flip() {
    let Some(parts) =
        browser_parts("a_run_verifies_in_the_real_browser_and_links_the_evidence_to_the_flip")
    else {
        return;
    };
    let url = serve_page();
    let p = Project::with_toml(&format!(
        "[run]\npause_secs = 0\n[browser]\nenabled = true\nchromium = {:?}\ncommand = [\"node\", {:?}]\n",
        parts.chromium.display().to_string(),
        parts.cli.display().to_string()
    ));
    let list = |passes: bool| {
        serde_json::to_string_pretty(&json!([{
            "category": "functional",
            "description": "A visitor types a name, presses Greet and is greeted by name",
            "steps": ["open the page", "type Ada into Your name", "press Greet", "see Hello, Ada!"],
            "passes": passes
        }]))
        .unwrap()
            + "\n"
    };
    std::fs::write(p.path().join("app_spec.txt"), "A greeter page.\n").unwrap();
    std::fs::write(p.path().join("feature_list.json"), list(false)).unwrap();
    std::fs::write(
        p.path().join("claude-progress.txt"),
        "Page served by the test.\n",
    )
    .unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-qm", "start"],
    ] {
        let o = Command::new("git")
            .args(args)
            .current_dir(p.path())
            .output_bounded()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let tool = |name: &str, input: Value| (format!("mcp__playwright__{name}"), input);
    let calls = [
        tool("browser_navigate", json!({"url": url})),
        tool(
            "browser_type",
            json!({"element": "Your name", "target": "e3", "text": "Ada"}),
        ),
        tool(
            "browser_click",
            json!({"element": "Greet button", "target": "e4"}),
        ),
        tool("browser_snapshot", json!({})),
        tool("browser_take_screenshot", json!({"scale": "css"})),
    ];
    let mut steps: Vec<Step> = calls
        .iter()
        .map(|(n, i)| Step::Reply(Reply::tool(n, i.clone())))
        .collect();
    steps.push(Step::Reply(Reply::tools(&[
        ("Write", json!({"file_path": "feature_list.json", "content": list(true)})),
        ("Bash", json!({"command": "echo 'Verified the greeting in the browser.' >> claude-progress.txt && git add -A && git commit -qm 'Verify the greeting'"})),
    ])));
    steps.push(Step::Reply(Reply::text(
        "Verified in the browser; screenshot taken.",
    )));
    let server = baton_testkit::ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The model saw the page change in the snapshot.
    let (snap, _) = results_of(&server.requests()[4].body);
    assert!(snap[0].0.contains("Hello, Ada!"), "{snap:?}");
    // The flip in the ledger links the session's evidence, which is on disk.
    let ledger = std::fs::read_to_string(p.path().join(".baton/ledger.jsonl")).unwrap();
    let flip: Value = ledger
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["kind"] == "flip")
        .unwrap_or_else(|| panic!("no flip in {ledger}"));
    assert_eq!(flip["feature"], 1);
    assert!(
        flip["commit"].as_str().is_some_and(|c| c.len() == 40),
        "{flip}"
    );
    let evidence: Vec<String> = flip["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert!(evidence.iter().any(|f| f.ends_with(".png")), "{evidence:?}");
    assert!(
        evidence.iter().filter(|f| f.ends_with(".txt")).count() >= 5,
        "{evidence:?}"
    );
    for f in &evidence {
        assert!(p.path().join(f).is_file(), "{f}");
    }
    let shot = evidence.iter().find(|f| f.ends_with(".png")).unwrap();
    assert!(
        std::fs::read(p.path().join(shot))
            .unwrap()
            .starts_with(b"\x89PNG\r\n\x1a\n")
    );
    // The browser is gone with the run.
    let t0 = std::time::Instant::now();
    while !processes_mentioning(p.path()).is_empty()
        && t0.elapsed() < std::time::Duration::from_secs(10)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        processes_mentioning(p.path()),
        vec![],
        "browser processes outlived the run"
    );
}

/// The commands have a loopback of their own (the network boundary), and the
/// browser, outside the sandbox, still opens the app a command serves there:
/// through baton's proxy into the session's namespace. The host's loopback does
/// not have the app.
#[test]
fn the_browser_opens_the_app_a_command_serves_inside_the_sandbox() {
    let Some(parts) =
        browser_parts("the_browser_opens_the_app_a_command_serves_inside_the_sandbox")
    else {
        return;
    };
    if !super::bwrap("the_browser_opens_the_app_a_command_serves_inside_the_sandbox") {
        return;
    }
    // Both closed networks: the allowlist's (egress proxy and bridge) and
    // loopback only (the bridge alone).
    for network in ["allowlist", "loopback"] {
        opens_the_app_inside(&parts, network);
    }
}

fn opens_the_app_inside(parts: &baton_testkit::browser::BrowserParts, network: &str) {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = free.local_addr().unwrap().port();
    drop(free);
    let p = Project::with_toml(&format!(
        "[browser]\nenabled = true\nchromium = {:?}\ncommand = [\"node\", {:?}]\n[sandbox]\nnetwork = \"{network}\"\n",
        parts.chromium.display().to_string(),
        parts.cli.display().to_string()
    ));
    std::fs::create_dir_all(p.path().join("site")).unwrap();
    std::fs::write(
        p.path().join("site/index.html"),
        "<title>Inside App</title><p>served in the sandbox</p>",
    )
    .unwrap();
    let serve = format!(
        "cd site && (python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 &) && curl -fsS --retry 30 --retry-connrefused --retry-delay 1 http://127.0.0.1:{port}/ >/dev/null && echo serving"
    );
    let url = format!("http://127.0.0.1:{port}/");
    let steps = vec![
        Step::Reply(Reply::tool("Bash", json!({ "command": serve }))),
        Step::Reply(Reply::tool(
            "mcp__playwright__browser_navigate",
            json!({ "url": url }),
        )),
        Step::Reply(Reply::text("Opened it.")),
    ];
    let (out, server) = exec(&p, Wire::Anthropic, steps, &[]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let said = tool_outputs(&server).join("\n");
    assert!(said.contains("serving"), "{said}");
    assert!(said.contains("Page Title: Inside App"), "{network}: {said}");
    // Not on the host's loopback: the app is the namespace's.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}
