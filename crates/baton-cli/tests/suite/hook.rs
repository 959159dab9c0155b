//! `baton hook pre-tool-use` through the real binary: Claude Code's PreToolUse hook
//! JSON on stdin, the hook's answer on stdout.

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::*;

/// Run the hook with `input` on stdin and `args`; (exit code, parsed stdout).
fn hook(input: &Value, args: &[&str]) -> (Option<i32>, Value, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["hook", "pre-tool-use"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output_bounded().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), v, stderr(&out))
}

fn call(p: &Project, tool: &str, input: Value) -> Value {
    json!({
        "session_id": "s1",
        "cwd": p.path(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "tu1",
    })
}

fn decision(v: &Value) -> (&str, &str) {
    let o = &v["hookSpecificOutput"];
    assert_eq!(o["hookEventName"], "PreToolUse", "{v}");
    (
        o["permissionDecision"].as_str().unwrap_or_default(),
        o["permissionDecisionReason"].as_str().unwrap_or_default(),
    )
}

#[test]
fn hook_allows_what_the_policy_allows() {
    let p = Project::new();
    for (tool, input) in [
        (
            "Bash",
            json!({"command": "npm test 2>&1 | tail -20", "description": "x"}),
        ),
        ("Write", json!({"file_path": "src/a.txt", "content": "hi"})),
        ("Read", json!({"file_path": "README.md"})),
        ("Glob", json!({"pattern": "**/*.rs"})),
        ("TodoWrite", json!({"todos": []})),
    ] {
        let (code, v, err) = hook(&call(&p, tool, input), &[]);
        assert_eq!(code, Some(0), "{tool}: {err}");
        assert_eq!(decision(&v).0, "allow", "{tool}: {v}");
    }
}

#[test]
fn hook_denies_refused_commands_with_the_policy_reason() {
    let p = Project::new();
    let (code, v, _) = hook(
        &call(&p, "Bash", json!({"command": "ls; rm -rf .git"})),
        &[],
    );
    assert_eq!(code, Some(0));
    let (d, reason) = decision(&v);
    assert_eq!(d, "deny");
    assert!(
        reason.starts_with("Refused by baton's policy: ") && reason.contains("rm -rf .git"),
        "{reason}"
    );
    // The project's baton.toml is the policy: a denied command there is denied here.
    let strict = Project::with_toml("[policy]\ndeny = [\"npm\"]\n");
    let (_, v, err) = hook(&call(&strict, "Bash", json!({"command": "npm test"})), &[]);
    assert_eq!(decision(&v).0, "deny", "{v} {err}");
}

#[test]
fn hook_confines_file_writes_to_the_project() {
    let p = Project::new();
    let outside = tempfile::tempdir().unwrap();
    for (tool, input) in [
        (
            "Write",
            json!({"file_path": outside.path().join("x").to_str().unwrap(), "content": "x"}),
        ),
        (
            "Edit",
            json!({"file_path": "../escape.txt", "old_string": "a", "new_string": "b"}),
        ),
        ("Write", json!({"file_path": ".git/config", "content": "x"})),
        (
            "Write",
            json!({"file_path": ".baton/state.json", "content": "{}"}),
        ),
    ] {
        let (_, v, _) = hook(&call(&p, tool, input.clone()), &[]);
        assert_eq!(decision(&v).0, "deny", "{tool} {input}: {v}");
    }
}

#[test]
fn hook_guards_the_feature_list_when_asked() {
    let p = Project::new();
    let list = r#"[
  {"category": "a", "description": "one", "steps": ["s"], "passes": false}
]
"#;
    std::fs::write(p.path().join("feature_list.json"), list).unwrap();
    let edit_text =
        json!({"file_path": "feature_list.json", "old_string": "\"one\"", "new_string": "\"two\""});
    let flip = json!({"file_path": "feature_list.json", "old_string": "\"passes\": false", "new_string": "\"passes\": true"});
    let guarded = ["--feature-list", "feature_list.json"];
    let (_, v, _) = hook(&call(&p, "Edit", edit_text.clone()), &guarded);
    let (d, reason) = decision(&v);
    assert_eq!(d, "deny");
    assert!(reason.contains("may only change in \"passes\""), "{reason}");
    let (_, v, _) = hook(&call(&p, "Edit", flip), &guarded);
    assert_eq!(decision(&v).0, "allow", "{v}");
    // Without the flag (the initializer writes the list) the edit is allowed.
    let (_, v, _) = hook(&call(&p, "Edit", edit_text), &[]);
    assert_eq!(decision(&v).0, "allow", "{v}");
}

#[test]
fn hook_blocks_on_bad_input_rather_than_allowing() {
    let p = Project::new();
    let (code, _, err) = hook(&json!({"cwd": p.path()}), &[]);
    assert_eq!(code, Some(2), "exit 2 blocks the call in Claude Code");
    assert!(err.contains("tool_name"), "{err}");
    std::fs::write(p.path().join("baton.toml"), "[agent\n").unwrap();
    let (code, _, err) = hook(&call(&p, "Bash", json!({"command": "ls"})), &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("baton.toml"), "{err}");
}

#[test]
fn hook_read_only_refuses_every_edit_for_the_verifier() {
    let p = Project::new();
    let (_, v, _) = hook(
        &call(&p, "Write", json!({"file_path": "a.txt", "content": "x"})),
        &["--read-only"],
    );
    let (d, reason) = decision(&v);
    assert_eq!(d, "deny");
    assert!(reason.contains("you are the verifier"), "{reason}");
    // Every edit tool of Claude Code's, each of which runs in the CLI itself,
    // outside the sandbox that makes the project read-only to commands.
    for (tool, input) in [
        (
            "MultiEdit",
            json!({"file_path": "a.txt", "edits": [{"old_string": "x", "new_string": "y"}]}),
        ),
        (
            "NotebookEdit",
            json!({"notebook_path": "n.ipynb", "new_source": "x"}),
        ),
    ] {
        let (_, v, _) = hook(&call(&p, tool, input), &["--read-only"]);
        let (d, reason) = decision(&v);
        assert_eq!(d, "deny", "{tool}: {v}");
        assert!(reason.contains("you are the verifier"), "{reason}");
    }
    // A subagent's calls are not the verifier's own, and only those count.
    for tool in ["Task", "Agent"] {
        let (_, v, _) = hook(
            &call(
                &p,
                tool,
                json!({"description": "walk the steps", "prompt": "check feature 1"}),
            ),
            &["--read-only"],
        );
        let (d, reason) = decision(&v);
        assert_eq!(d, "deny", "{tool}: {v}");
        assert!(reason.contains("only your own calls count"), "{reason}");
    }
    let (_, v, _) = hook(
        &call(&p, "Bash", json!({"command": "ls"})),
        &["--read-only"],
    );
    assert_eq!(decision(&v).0, "allow", "{v}");
}

#[test]
fn hook_guards_the_feature_list_by_any_name_and_any_edit_tool() {
    let p = Project::new();
    let list = r#"[
  {"category": "a", "description": "one", "steps": ["s"], "passes": false}
]
"#;
    std::fs::write(p.path().join("feature_list.json"), list).unwrap();
    std::os::unix::fs::symlink("feature_list.json", p.path().join("fl-link.json")).unwrap();
    std::fs::hard_link(
        p.path().join("feature_list.json"),
        p.path().join("fl-hard.json"),
    )
    .unwrap();
    let guarded = ["--feature-list", "feature_list.json"];
    let tampered = list.replace("\"one\"", "\"two\"");
    for (tool, input) in [
        (
            "Write",
            json!({"file_path": "fl-link.json", "content": tampered}),
        ),
        (
            "Write",
            json!({"file_path": "fl-hard.json", "content": tampered}),
        ),
        (
            "Write",
            json!({"file_path": "src/../feature_list.json", "content": tampered}),
        ),
        (
            "MultiEdit",
            json!({"file_path": "feature_list.json", "edits": [
                {"old_string": "\"passes\": false", "new_string": "\"passes\": true"},
                {"old_string": "\"one\"", "new_string": "\"two\""},
            ]}),
        ),
        (
            "MultiEdit",
            json!({"file_path": "fl-link.json", "edits": [
                {"old_string": "\"one\"", "new_string": "\"two\""},
            ]}),
        ),
        (
            "NotebookEdit",
            json!({"notebook_path": "feature_list.json", "new_source": "x"}),
        ),
    ] {
        let (_, v, _) = hook(&call(&p, tool, input.clone()), &guarded);
        assert_eq!(decision(&v).0, "deny", "{tool} {input}: {v}");
    }
    // A legal flip through MultiEdit is allowed.
    let flip = json!({"file_path": "feature_list.json", "edits": [
        {"old_string": "\"passes\": false", "new_string": "\"passes\": true"},
    ]});
    let (_, v, _) = hook(&call(&p, "MultiEdit", flip), &guarded);
    assert_eq!(decision(&v).0, "allow", "{v}");
}

#[test]
fn hook_judges_searches_like_reads_and_refuses_file_urls() {
    let p = Project::new();
    let home = std::env::var("HOME").unwrap();
    for (tool, input) in [
        (
            "Grep",
            json!({"pattern": "BEGIN", "path": format!("{home}/.ssh")}),
        ),
        (
            "Glob",
            json!({"pattern": "*", "path": format!("{home}/.ssh")}),
        ),
        ("Grep", json!({"pattern": "root", "path": "/etc/shadow"})),
        (
            "WebFetch",
            json!({"url": "file:///etc/passwd", "prompt": "x"}),
        ),
        (
            "mcp__playwright__browser_navigate",
            json!({"url": "FILE:///root/.ssh/id_rsa"}),
        ),
    ] {
        let (_, v, _) = hook(&call(&p, tool, input.clone()), &[]);
        assert_eq!(decision(&v).0, "deny", "{tool} {input}: {v}");
    }
    for (tool, input) in [
        ("Grep", json!({"pattern": "x", "path": "src"})),
        ("Glob", json!({"pattern": "**/*.rs"})),
        (
            "WebFetch",
            json!({"url": "http://127.0.0.1:3000/", "prompt": "x"}),
        ),
    ] {
        let (_, v, _) = hook(&call(&p, tool, input.clone()), &[]);
        assert_eq!(decision(&v).0, "allow", "{tool} {input}: {v}");
    }
    // Allowed by the project's own setting.
    let q = Project::with_toml("[policy]\nallow_file_urls = true\n");
    let (_, v, _) = hook(
        &call(
            &q,
            "WebFetch",
            json!({"url": "file:///etc/hostname", "prompt": "x"}),
        ),
        &[],
    );
    assert_eq!(decision(&v).0, "allow", "{v}");
}

#[test]
fn hook_judges_by_the_frozen_config_not_the_projects_file() {
    let p = Project::new();
    let frozen = tempfile::tempdir().unwrap();
    let cfg = frozen.path().join("baton.toml");
    std::fs::write(&cfg, "").unwrap();
    // The agent switched the policy off in the project's file.
    std::fs::write(p.path().join("baton.toml"), "[policy]\nmode = \"off\"\n").unwrap();
    let bad = json!({"command": "sudo rm -rf /"});
    let (_, v, _) = hook(&call(&p, "Bash", bad.clone()), &[]);
    assert_eq!(
        decision(&v).0,
        "allow",
        "without --config the project's file counts: {v}"
    );
    let (_, v, _) = hook(&call(&p, "Bash", bad), &["--config", cfg.to_str().unwrap()]);
    assert_eq!(decision(&v).0, "deny", "{v}");
    // And the project's baton.toml cannot be written with the file tools.
    let (_, v, _) = hook(
        &call(
            &p,
            "Edit",
            json!({"file_path": "baton.toml", "old_string": "off", "new_string": "allowlist"}),
        ),
        &[],
    );
    assert_eq!(decision(&v).0, "deny", "{v}");
}

/// The fault marker exists in debug builds only: under `cargo test --release` the
/// binary has no way to fail inside the checker on purpose, and the test is not
/// compiled.
#[cfg(debug_assertions)]
#[test]
fn hook_exits_2_when_the_judgement_fails_internally() {
    // Debug builds panic inside the checker on this marker; the hook must block the
    // call (exit 2), never crash with another code or allow it.
    let p = Project::new();
    let cmd = format!("echo {}", baton_policy::FAULT_MARKER);
    let (code, v, err) = hook(&call(&p, "Bash", json!({ "command": cmd })), &[]);
    assert_eq!(code, Some(2), "stdout {v}, stderr {err}");
    assert!(err.contains("internal error"), "{err}");
}

#[test]
fn hook_denies_huge_brace_ranges_without_expanding_them() {
    let p = Project::new();
    let cmd = "x={-9223372036854775808..9223372036854775807}; echo {1..99999999999}";
    let (code, v, err) = hook(&call(&p, "Bash", json!({ "command": cmd })), &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(decision(&v).0, "deny", "{v}");
}

#[test]
fn hook_refuses_huge_chains_and_deep_nesting_without_crashing() {
    let p = Project::new();
    let chain = vec!["true"; 8000].join(" && ");
    let nested = format!("{}true{}", "(".repeat(5000), ")".repeat(5000));
    let substs = format!("{}true{}", "$(".repeat(3000), ")".repeat(3000));
    let long = format!("echo {}", "a".repeat(300 * 1024));
    for cmd in [chain, nested, substs, long] {
        let (code, v, err) = hook(&call(&p, "Bash", json!({ "command": cmd })), &[]);
        // Beyond the checker's limits: exit 2 (Claude Code blocks), never a crash.
        assert_eq!(code, Some(2), "stdout {v}, stderr {err}");
        assert!(err.contains("cannot be judged"), "{err}");
    }
}

/// The agent CLI's commands run in baton's bubblewrap sandbox and the run's PID
/// namespace when baton says so (`--bubblewrap`): its hook then allows what that
/// sandbox bounds, as baton's own loop does, and refuses it without.
#[test]
fn the_hook_judges_inline_code_by_whether_bubblewrap_is_in_force() {
    let p = Project::new();
    let input = call(
        &p,
        "Bash",
        json!({"command": "python3 -c \"import json; print(len(json.load(open('feature_list.json'))))\""}),
    );
    let (code, v, err) = hook(&input, &["--bubblewrap"]);
    assert_eq!(code, Some(0), "{v} {err}");
    assert_eq!(decision(&v).0, "allow", "{v}");
    let (_, v, _) = hook(&input, &[]);
    let (d, why) = decision(&v);
    assert_eq!(d, "deny", "{v}");
    assert!(why.contains("bubblewrap"), "{why}");
}
