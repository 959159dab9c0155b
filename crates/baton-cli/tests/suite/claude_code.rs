//! `provider = "claude-code"` with the real Claude Code CLI (installed by `.ci/run`
//! into `.ci/npm`, or named by `$BATON_TEST_CLAUDE`) against the scripted Anthropic
//! server on 127.0.0.1: its tool calls go through baton's hook, its stream becomes
//! baton's transcript. Missing CLI: the tests fail on CI (`CI=true`) and are skipped
//! with a note elsewhere.

use std::path::PathBuf;
use std::process::Output;

use baton_agent::transcript::Event;
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::json;

use super::*;

/// The Claude Code CLI, or `None` (after a note) where it is not installed.
fn claude() -> Option<PathBuf> {
    let path = std::env::var_os("BATON_TEST_CLAUDE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.ci/npm/node_modules/.bin/claude")
        });
    if path.exists() {
        return Some(path);
    }
    let msg = format!(
        "Claude Code CLI not found at {} (install it with .ci/run or set BATON_TEST_CLAUDE)",
        path.display()
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("skipped: {msg}");
    None
}

/// `baton ARGS` with provider claude-code against `server`, the CLI's home in `home`.
fn baton_cc(
    claude: &PathBuf,
    server: &ScriptedServer,
    home: &std::path::Path,
    args: &[&str],
) -> Output {
    let mut c = baton(server, Wire::Anthropic);
    c.env("BATON_PROVIDER", "claude-code")
        .env("BATON_CLAUDE", claude)
        .env("HOME", home)
        .env("IS_SANDBOX", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn claude_code_exec_completes_through_the_cli() {
    let Some(cli) = claude() else { return };
    let p = Project::new();
    let home = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": "echo made > made.txt", "description": "make a file"}),
            )),
            Step::Reply(Reply::text("All done.")),
        ],
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_cc(
        &cli,
        &server,
        home.path(),
        &["exec", dir, "--prompt", "make a file"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "All done.");
    assert_eq!(p.file("made.txt"), "made\n");
    assert_eq!(
        server.remaining(),
        0,
        "both scripted replies were asked for"
    );
    let reqs = server.requests();
    assert!(reqs.iter().all(|r| r.path.starts_with("/v1/messages")));

    let t = p.transcript(1);
    assert_consistent(&t);
    match &t[0].event {
        Event::SessionStart { provider, .. } => assert_eq!(provider, "claude-code"),
        other => panic!("{other:?}"),
    }
    let results: Vec<_> = t
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolResult {
                name,
                is_error,
                refused,
                ..
            } => Some((name.clone(), *is_error, *refused)),
            _ => None,
        })
        .collect();
    assert_eq!(results, vec![("Bash".to_string(), false, false)]);
    match &t.last().unwrap().event {
        Event::SessionEnd {
            outcome,
            turns,
            cost_usd,
            final_text,
            ..
        } => {
            assert_eq!(outcome, "completed");
            assert_eq!(*turns, 2);
            assert!(*cost_usd > 0.0, "the CLI's total cost is recorded");
            assert_eq!(final_text, "All done.");
        }
        other => panic!("{other:?}"),
    }
    // The CLI got baton's hook through the settings file baton wrote for it.
    let settings = p.file(".baton/claude-code/0001-settings.json");
    assert!(settings.contains("hook pre-tool-use"), "{settings}");
}

#[test]
fn claude_code_refused_command_is_refused_by_batons_hook() {
    let Some(cli) = claude() else { return };
    let p = Project::new();
    std::fs::create_dir(p.path().join(".git")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool("Bash", json!({"command": "ls; rm -rf .git"}))),
            Step::Reply(Reply::text("I could not.")),
        ],
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_cc(
        &cli,
        &server,
        home.path(),
        &["exec", dir, "--prompt", "clean up"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(p.path().join(".git").is_dir(), "the command did not run");
    // The model was told why, in baton's words.
    let reqs = server.requests();
    let told = reqs[1].body.to_string();
    assert!(told.contains("Refused by baton's policy"), "{told}");
    let t = p.transcript(1);
    assert_consistent(&t);
    let refused: Vec<_> = t
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolResult {
                content,
                is_error,
                refused,
                ..
            } => Some((content.clone(), *is_error, *refused)),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 1);
    assert!(refused[0].1 && refused[0].2, "{refused:?}");
    assert!(refused[0].0.contains("rm -rf .git"), "{refused:?}");
}
