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
fn claude(test: &str) -> Option<PathBuf> {
    agent_cli(
        test,
        "claude",
        "BATON_TEST_CLAUDE",
        "@anthropic-ai/claude-code",
    )
}

/// `baton ARGS` with provider claude-code against `server`, the CLI's home in `home`.
fn baton_cc(
    claude: &PathBuf,
    server: &ScriptedServer,
    home: &std::path::Path,
    args: &[&str],
) -> Output {
    baton_cc_env(claude, server, home, args, &[])
}

/// [`baton_cc`] with more variables in baton's environment.
fn baton_cc_env(
    claude: &PathBuf,
    server: &ScriptedServer,
    home: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut c = baton(server, Wire::Anthropic);
    c.envs(env.iter().copied())
        .env("BATON_PROVIDER", "claude-code")
        .env("BATON_CLAUDE", claude)
        .env("HOME", home)
        .env("IS_SANDBOX", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(args)
        .output_bounded()
        .unwrap()
}

#[test]
fn claude_code_exec_completes_through_the_cli() {
    let Some(cli) = claude("claude_code_exec_completes_through_the_cli") else {
        return;
    };
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
    let Some(cli) = claude("claude_code_refused_command_is_refused_by_batons_hook") else {
        return;
    };
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

/// The initializer's session through Claude Code: two failing features, a
/// start script and the notes, committed.
fn initialized() -> Vec<Step> {
    vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": failing_features(2)}),
            ),
            (
                "Write",
                json!({"file_path": "init.sh", "content": "#!/usr/bin/env bash\necho ready\n"}),
            ),
            (
                "Write",
                json!({"file_path": "claude-progress.txt", "content": "Session 1: list and init.sh.\n"}),
            ),
            (
                "Bash",
                json!({"command": "chmod +x init.sh && git add -A && git commit -qm 'Initial feature list'"}),
            ),
        ])),
        Step::Reply(Reply::text("Initialized.")),
    ]
}

#[test]
fn claude_code_whole_run_initializer_and_coding_sessions_complete() {
    let Some(cli) = claude("claude_code_whole_run_initializer_and_coding_sessions_complete") else {
        return;
    };
    let p = Project::with_toml(
        "[project]\nfeatures = 2\nmin_features = 2\n[run]\npause_secs = 0\nstall_sessions = 3\n",
    );
    std::fs::write(p.path().join("app_spec.txt"), "Two features.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(p.path())
        .status_bounded()
        .unwrap();
    assert!(git.success());
    // The initializer writes new files (Claude Code's Write needs no prior Read then).
    let mut steps = initialized();
    for n in 1..=2 {
        steps.push(Step::Reply(Reply::tool(
            "Bash",
            json!({"command": format!("./init.sh && mkdir -p src && echo 'feature {n}' > src/feature{n}.txt && sed -i '0,/\"passes\": false/s//\"passes\": true/' feature_list.json && echo 'Session: feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Implement feature {n}'")}),
        )));
        steps.push(Step::Reply(Reply::text(&format!("Feature {n} works."))));
    }
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let home = tempfile::tempdir().unwrap();
    let dir = p.path().to_str().unwrap();
    let out = baton_cc(&cli, &server, home.path(), &["run", dir]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0);
    // The hook judges by baton's frozen copy of baton.toml, outside the project.
    let settings = p.file(".baton/claude-code/0002-settings.json");
    assert!(
        settings.contains("--config '/") && settings.contains("/hook-baton.toml'"),
        "{settings}"
    );
    assert!(!settings.contains(&format!("--config '{}", p.path().display())));
    assert!(
        stderr(&out).contains("every feature passes"),
        "{}",
        stderr(&out)
    );
    let log = std::process::Command::new("git")
        .args(["log", "--oneline"])
        .current_dir(p.path())
        .output_bounded()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(
        log.contains("Implement feature 2") && log.contains("Initial feature list"),
        "{log}"
    );
    // Status reads the CLI's sessions from baton's transcripts like any others.
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", dir, "--json"])
        .output_bounded()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(
        (s["passing"].clone(), s["total"].clone()),
        (json!(2), json!(2))
    );
    let sessions = s["sessions"].as_array().unwrap();
    let kinds: Vec<_> = sessions.iter().map(|x| x["kind"].clone()).collect();
    assert_eq!(
        kinds,
        [json!("initializer"), json!("coding"), json!("coding")]
    );
    for x in sessions {
        assert_eq!(x["outcome"], "completed", "{x}");
        assert_eq!(x["turns"], 2, "{x}");
        assert!(x["cost_usd"].as_f64().unwrap() > 0.0, "{x}");
    }
    assert_eq!(sessions[1]["flipped"], json!([1]));
    for n in 1..=3 {
        assert_consistent(&p.transcript(n));
    }
    // Coding sessions ran with the feature-list guard in baton's hook.
    let settings = p.file(".baton/claude-code/0002-settings.json");
    assert!(settings.contains("--feature-list"), "{settings}");
}

#[test]
fn claude_code_usage_limit_pauses_the_run_until_the_reset() {
    let Some(cli) = claude("claude_code_usage_limit_pauses_the_run_until_the_reset") else {
        return;
    };
    let p = Project::with_toml(
        "[project]\nfeatures = 1\nmin_features = 1\n[run]\npause_secs = 0\nstall_sessions = 2\n",
    );
    // Probes of a usage limit whose reset the CLI does not name: every 4 s here.
    let toml = p
        .file("baton.toml")
        .replace("max_attempts = 6", "max_attempts = 6\nquota_probe_secs = 4");
    std::fs::write(p.path().join("baton.toml"), toml).unwrap();
    std::fs::write(p.path().join("app_spec.txt"), "One feature.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(p.path())
        .status_bounded()
        .unwrap();
    assert!(git.success());
    let steps = vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": failing_features(1)}),
            ),
            (
                "Write",
                json!({"file_path": "init.sh", "content": "#!/usr/bin/env bash\necho ready\n"}),
            ),
            (
                "Write",
                json!({"file_path": "claude-progress.txt", "content": "Session 1.\n"}),
            ),
            (
                "Bash",
                json!({"command": "chmod +x init.sh && git add -A && git commit -qm 'Initial feature list'"}),
            ),
        ])),
        Step::Reply(Reply::text("Initialized.")),
        // The first coding session meets a hard usage limit (the CLI gives up at once).
        Step::QuotaWall {
            reset_in: std::time::Duration::from_secs(3),
            retry_after: false,
            hard: true,
        },
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": "./init.sh && echo 'feature 1' > f1.txt && sed -i '0,/\"passes\": false/s//\"passes\": true/' feature_list.json && echo 'Session: feature 1.' >> claude-progress.txt && git add -A && git commit -qm 'Implement feature 1'"}),
        )),
        Step::Reply(Reply::text("Feature 1 works.")),
    ];
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let home = tempfile::tempdir().unwrap();
    let dir = p.path().to_str().unwrap();
    let out = baton_cc(&cli, &server, home.path(), &["run", dir, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0);
    assert_eq!(server.refused("quota"), 1, "the CLI gave up at once");
    let events = stdout(&out);
    assert!(
        events.lines().any(|l| l.contains("\"type\":\"waiting\"")),
        "{events}"
    );
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", dir, "--json"])
        .output_bounded()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(s["passing"], 1);
    let sessions = s["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 3, "{sessions:?}");
    assert_eq!(sessions[1]["outcome"], "usage_limit");
    assert!(
        sessions[1]["waited_secs"].as_f64().unwrap() >= 3.9,
        "{}",
        sessions[1]
    );
    assert_eq!(sessions[2]["flipped"], json!([1]));
    assert!(s["waiting_until_ms"].is_null());
}

fn doctor(p: &Project, claude: &std::path::Path) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("doctor")
        .arg(p.path())
        .env("BATON_CLAUDE", claude)
        .output_bounded()
        .unwrap();
    (out.status.code(), stdout(&out))
}

#[test]
fn doctor_finds_the_claude_cli_and_requires_it_for_its_provider() {
    let p = Project::with_toml("[agent]\nprovider = \"claude-code\"\n");
    let (code, text) = doctor(&p, std::path::Path::new("/nonexistent/claude"));
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("  missing  claude      /nonexistent/claude not found"),
        "{text}"
    );
    assert!(
        text.contains("install: npm install -g @anthropic-ai/claude-code"),
        "{text}"
    );
    // Another provider does not need it.
    let other = Project::new();
    let (_, text) = doctor(&other, std::path::Path::new("/nonexistent/claude"));
    assert!(text.contains("  absent   claude "), "{text}");

    let Some(cli) = claude("doctor_finds_the_claude_cli_and_requires_it_for_its_provider") else {
        return;
    };
    let (code, text) = doctor(&p, &cli);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("(Claude Code)"), "{text}");
    assert!(text.contains("  ok       claude      "), "{text}");
}

#[test]
fn claude_code_time_limit_stops_the_cli_and_its_commands() {
    let Some(cli) = claude("claude_code_time_limit_stops_the_cli_and_its_commands") else {
        return;
    };
    // 15 s: the CLI starts and makes its first request within it even on a loaded
    // machine (6 s did not always); its command (30 s) is cut by it.
    let p = Project::with_toml("[agent]\nmax_session_minutes = 0.25\n");
    let home = tempfile::tempdir().unwrap();
    let marker = format!("baton-cc-limit-{}", std::process::id());
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": format!("timeout 30 tail -f /dev/null; touch {marker}")}),
            )),
            Step::Reply(Reply::text("never asked")),
        ],
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_cc(
        &cli,
        &server,
        home.path(),
        &["exec", dir, "--prompt", "wait"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let (outcome, _) = end_of(&p.transcript(1));
    assert_eq!(outcome, "time_limit");
    assert_eq!(server.remaining(), 1, "the CLI was stopped mid-command");
    // The CLI's command went with its process group.
    let ps = std::process::Command::new("pgrep")
        .args(["-f", &marker])
        .output_bounded()
        .unwrap();
    assert!(
        ps.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&ps.stdout)
    );
}

#[test]
fn claude_code_errors_are_surfaced_with_what_the_cli_said() {
    let Some(cli) = claude("claude_code_errors_are_surfaced_with_what_the_cli_said") else {
        return;
    };
    let p = Project::new();
    let home = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(
        Wire::Anthropic,
        // No step: every request is answered 400 with the scripted server's own
        // message, which the CLI reports after its retries (it retries some 400s,
        // and 401s and 5xx for minutes, so those are not scripted here).
        Vec::new(),
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_cc(&cli, &server, home.path(), &["exec", dir, "--prompt", "hi"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("session 0001 failed"), "{err}");
    let (outcome, error) = end_of(&p.transcript(1));
    assert_eq!(outcome, "error");
    let error = error.unwrap_or_default();
    assert!(
        error.contains("claude: the CLI reported an error: ") && error.contains("no step left"),
        "{error}"
    );
    assert!(err.contains("no step left"), "{err}");
}

#[test]
fn claude_code_commands_run_without_the_secret_variables() {
    let Some(cli) = claude("claude_code_commands_run_without_the_secret_variables") else {
        return;
    };
    if !landlock("claude_code_commands_run_without_the_secret_variables") {
        return;
    }
    let p = Project::with_toml("[policy]\nsecret_env = [\"MY_DB_PASSWORD\"]\n");
    let home = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": "env", "description": "show the environment"}),
            )),
            Step::Reply(Reply::text("Seen.")),
        ],
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_cc_env(
        &cli,
        &server,
        home.path(),
        &["exec", dir, "--prompt", "show the environment"],
        &[
            ("MY_DB_PASSWORD", "hunter2"),
            ("MARKER_VISIBLE", "still-here"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let results = tool_results(Wire::Anthropic, &reqs[1].body);
    assert_eq!(results.len(), 1, "{results:?}");
    let env = &results[0].1;
    assert!(
        env.contains("MARKER_VISIBLE=still-here"),
        "the command ran and printed its environment: {env}"
    );
    for leaked in [
        "ANTHROPIC_API_KEY",
        "sk-test-key",
        "MY_DB_PASSWORD",
        "hunter2",
        "BATON_SANDBOX",
    ] {
        assert!(!env.contains(leaked), "{leaked} reached the command: {env}");
    }
}

/// The CLI holds the API key in its environment; a project script its commands run
/// descends from it, and from baton and the test runner. Where bubblewrap works
/// none of them is visible to the script, so the key cannot be read from
/// `/proc/PID/environ` (nor from a thread's `/proc/TID/environ`); nor is any other
/// process of the user's (the commands join one PID namespace for the run).
#[test]
fn claude_code_cli_key_is_out_of_reach_of_project_scripts() {
    let Some(cli) = claude("claude_code_cli_key_is_out_of_reach_of_project_scripts") else {
        return;
    };
    if !landlock("claude_code_cli_key_is_out_of_reach_of_project_scripts")
        || !super::bwrap("claude_code_cli_key_is_out_of_reach_of_project_scripts")
    {
        return;
    }
    let p = Project::new();
    let home = tempfile::tempdir().unwrap();
    let script = p.path().join("peek.sh");
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool(
                "Write",
                json!({"file_path": script.to_str().unwrap(), "content":
                    "#!/bin/bash\n\
                     p=$$; n=0; hops=0\n\
                     while [ \"$p\" -gt 1 ] && [ -r /proc/$p/stat ]; do\n\
                       c=$(cat /proc/$p/environ /proc/$p/task/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sk-test-key)\n\
                       n=$((n + c)); hops=$((hops + 1))\n\
                       p=$(awk '{print $4}' /proc/$p/stat)\n\
                     done\n\
                     s=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sibling-77ab)\n\
                     echo \"key-seen=$n hops=$hops sibling-seen=$s\"\n"}),
            )),
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": "bash peek.sh", "description": "look around"}),
            )),
            Step::Reply(Reply::text("Seen.")),
        ],
    );
    let dir = p.path().to_str().unwrap();
    // Another process of the user's, beside baton, with a secret of its own.
    let mut sibling = std::process::Command::new("sleep")
        .arg("30")
        .env("BATON_TEST_SIBLING", "sibling-77ab")
        .spawn()
        .unwrap();
    let out = baton_cc_env(
        &cli,
        &server,
        home.path(),
        &["exec", dir, "--prompt", "look around"],
        &[],
    );
    let _ = sibling.kill();
    let _ = sibling.wait_bounded();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let results = tool_results(Wire::Anthropic, &reqs[2].body);
    let peek = &results[0].1;
    assert!(
        peek.contains("sibling-seen=0"),
        "another process's environment was readable: {peek}"
    );
    assert!(
        peek.contains("key-seen=0"),
        "the CLI's key was readable: {peek}"
    );
    assert!(peek.contains("hops="), "the script did not run: {peek}");
}

#[test]
fn claude_code_sandbox_stops_a_project_script_writing_outside() {
    let Some(cli) = claude("claude_code_sandbox_stops_a_project_script_writing_outside") else {
        return;
    };
    if !landlock("claude_code_sandbox_stops_a_project_script_writing_outside") {
        return;
    }
    // Outside the project and outside the temp dirs (the CLI's HOME here is a temp dir).
    let real_home = std::env::var("HOME").unwrap();
    let outside = tempfile::Builder::new()
        .prefix(".baton-sandbox-test-")
        .tempdir_in(&real_home)
        .unwrap();
    let target = outside.path().join("escaped.txt");
    let script = format!(
        "#!/bin/bash\necho escaped > {t}\necho \"write status $?\"\necho inside > inside.txt\n",
        t = target.display()
    );
    let p = Project::new();
    let home = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool(
                "Write",
                json!({"file_path": p.path().join("escape.sh"), "content": script}),
            )),
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": "bash escape.sh", "description": "run the script"}),
            )),
            Step::Reply(Reply::text("done")),
        ],
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_cc(
        &cli,
        &server,
        home.path(),
        &["exec", dir, "--prompt", "run the script"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let result = &tool_results(Wire::Anthropic, &reqs[2].body)[0].1;
    assert!(
        !target.exists(),
        "the kernel let the script write outside: {result}"
    );
    // Landlock refuses the write; where the run's namespace hides other homes (the
    // CLI's HOME is a temp dir here, so /root is another's), the place is not there.
    assert!(
        result.contains("Permission denied") || result.contains("No such file or directory"),
        "{result}"
    );
    assert!(result.contains("write status 1"), "{result}");
    assert_eq!(
        p.file("inside.txt"),
        "inside\n",
        "the project stays writable"
    );
}

#[test]
fn claude_code_ignores_project_settings_that_would_undo_the_sandbox() {
    let Some(cli) = claude("claude_code_ignores_project_settings_that_would_undo_the_sandbox")
    else {
        return;
    };
    if !landlock("claude_code_ignores_project_settings_that_would_undo_the_sandbox") {
        return;
    }
    let p = Project::new();
    // An agent could have written these in an earlier session: an empty shell prefix
    // (commands outside the sandbox, with the key) and a hook list without baton's.
    std::fs::create_dir_all(p.path().join(".claude")).unwrap();
    for name in ["settings.json", "settings.local.json"] {
        std::fs::write(
            p.path().join(".claude").join(name),
            r#"{"env": {"CLAUDE_CODE_SHELL_PREFIX": "", "MARKER_FROM_PROJECT": "loaded"}, "hooks": {}}"#,
        )
        .unwrap();
    }
    let home = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": "env", "description": "show the environment"}),
            )),
            Step::Reply(Reply::text("Seen.")),
        ],
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_cc_env(
        &cli,
        &server,
        home.path(),
        &["exec", dir, "--prompt", "env"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let results = tool_results(Wire::Anthropic, &server.requests()[1].body);
    let env = &results[0].1;
    assert!(
        !env.contains("MARKER_FROM_PROJECT"),
        "the project's settings were loaded: {env}"
    );
    assert!(
        !env.contains("sk-test-key") && !env.contains("ANTHROPIC_API_KEY"),
        "the key reached the command: {env}"
    );
}

/// `--agents 2` with the Claude Code CLI: each working copy gets a CLI of its own
/// (its sandbox, hook and frozen configuration), and both features are merged.
#[test]
fn claude_code_agents_in_working_copies_finish_a_project() {
    use baton_testkit::scenario::parallel::{initializer, is_for, list, session};
    let Some(cli) = claude("claude_code_agents_in_working_copies_finish_a_project") else {
        return;
    };
    let p = two_feature_project();
    let mut b = ScriptedServer::builder(Wire::Anthropic);
    for n in 1..=2 {
        b = b.when(move |r| is_for(r, n), session(n, false));
    }
    let server = b.start(initializer(&list(2, 0)));
    let home = tempfile::tempdir().unwrap();
    let dir = p.path().to_str().unwrap();
    let out = baton_cc(&cli, &server, home.path(), &two_agents_run(dir));
    assert_two_agents_finished(&p, &out);
    let err = stderr(&out);
    // Each copy's sessions ran the CLI with a hook judging in that copy.
    let mut copies = 0;
    for k in ["a1", "a2"] {
        let claude_dir = p
            .path()
            .join(".baton/agents")
            .join(k)
            .join(".baton/claude-code");
        let Ok(rd) = std::fs::read_dir(&claude_dir) else {
            continue;
        };
        for e in rd.flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            if text.contains("pre-tool-use") {
                let copy = p.path().join(".baton/agents").join(k);
                assert!(
                    text.contains(&format!("--dir '{}'", copy.display())),
                    "{text}"
                );
                copies += 1;
            }
        }
    }
    assert_eq!(
        copies, 2,
        "one CLI session per feature, each judged in its copy\n{err}"
    );
}

/// The false-flip scenario of `proof.rs` with the agent CLI as the backend: the
/// settings `baton new` writes, a first coding session that builds feature 1 and
/// flips 1 and 4; the verifier (a session of the CLI too, read-only) catches it,
/// and the run really finishes.
#[test]
fn claude_code_a_false_flip_under_baton_new_defaults_is_caught() {
    let Some(cli) = claude("claude_code_a_false_flip_under_baton_new_defaults_is_caught") else {
        return;
    };
    let (_t, dir) = super::proof::new_project("cli");
    let flip = |ns: &[usize]| {
        ns.iter()
            .map(|n| format!("sed -i '/\"description\": \"Feature {n}\"/,/\"passes\"/ s/\"passes\": false/\"passes\": true/' feature_list.json"))
            .collect::<Vec<_>>()
            .join(" && ")
    };
    let build = |n: usize, flips: &[usize]| {
        vec![
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": format!("./init.sh && mkdir -p src && echo 'feature {n}' > src/feature{n}.txt && {} && echo 'Session: feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Implement feature {n}'", flip(flips))}),
            )),
            Step::Reply(Reply::text(&format!("Feature {n} works."))),
        ]
    };
    let mut steps = vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": baton_testkit::scenario::features(&[false; 4])}),
            ),
            (
                "Write",
                json!({"file_path": "init.sh", "content": "#!/usr/bin/env bash\necho ready\n"}),
            ),
            (
                "Write",
                json!({"file_path": "claude-progress.txt", "content": "Session 1: list and init.sh.\n"}),
            ),
            (
                "Bash",
                json!({"command": "chmod +x init.sh && git add -A && git commit -qm 'Initial feature list'"}),
            ),
        ])),
        Step::Reply(Reply::text("Initialized.")),
    ];
    steps.extend(build(1, &[1, 4]));
    for n in 2..=4 {
        steps.extend(build(n, &[n]));
    }
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(baton_testkit::scenario::honest_verifier)
        .start(steps);
    let home = tempfile::tempdir().unwrap();
    let out = baton_cc(&cli, &server, home.path(), &["run", dir.to_str().unwrap()]);
    // What the sessions were refused, and why, beside baton's own words.
    let err = format!("{}\nrefused: {:?}", stderr(&out), refusals(&dir));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.remaining(), 0, "{err}");
    assert!(err.contains("verifier rejected #4"), "{err}");
    for n in 1..=4 {
        assert!(
            dir.join(format!("src/feature{n}.txt")).is_file(),
            "feature {n}"
        );
    }
    let ledger = std::fs::read_to_string(dir.join(".baton/ledger.jsonl")).unwrap();
    let flips: Vec<serde_json::Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["kind"] == "flip")
        .collect();
    assert_eq!(flips.len(), 4, "{ledger}");
    for f in &flips {
        assert_eq!(f["proof"]["by"], "verifier", "{f}");
    }
}

/// Every refused tool result in the project's transcripts.
fn refusals(dir: &std::path::Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(dir.join(".baton/sessions")) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    paths.sort();
    paths
        .iter()
        .flat_map(|p| baton_agent::transcript::read(p).unwrap_or_default())
        .filter_map(|r| match r.event {
            Event::ToolResult {
                content,
                refused: true,
                ..
            } => Some(content),
            _ => None,
        })
        .collect()
}

/// Claude Code drives the real browser (`[browser]`'s Playwright MCP server and
/// Chromium, which the CLI starts from baton's `--mcp-config`): the page's title
/// comes back, and baton's hook refuses a `file://` URL as in its own loop.
#[test]
fn claude_code_drives_the_real_browser() {
    let Some(cli) = claude("claude_code_drives_the_real_browser") else {
        return;
    };
    let Some(parts) = baton_testkit::browser::browser_parts("claude_code_drives_the_real_browser")
    else {
        return;
    };
    let p = Project::with_toml(&format!(
        "[browser]\nenabled = true\nchromium = {:?}\ncommand = [\"node\", {:?}]\n",
        parts.chromium.display().to_string(),
        parts.cli.display().to_string()
    ));
    let browse = |url: &str| {
        Step::Reply(Reply::tool(
            "mcp__playwright__browser_navigate",
            json!({"url": url}),
        ))
    };
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            browse("data:text/html,<title>Greeter</title><p>hello</p>"),
            browse("file:///etc/hostname"),
            Step::Reply(Reply::tool(
                "mcp__playwright__browser_take_screenshot",
                json!({}),
            )),
            Step::Reply(Reply::text("Seen in the browser.")),
        ],
    );
    let home = tempfile::tempdir().unwrap();
    let dir = p.path().to_str().unwrap();
    let out = baton_cc(
        &cli,
        &server,
        home.path(),
        &["exec", dir, "--prompt", "look"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // What the CLI sent back to the model after call `i` (its tool result).
    let said = |i: usize| {
        server.requests()[i].body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .map(|m| m.to_string())
            .unwrap_or_default()
    };
    assert!(said(1).contains("Page Title: Greeter"), "{}", said(1));
    assert!(said(2).contains("Refused by baton's policy"), "{}", said(2));
    assert!(said(2).contains("file://"), "{}", said(2));
    let t = p.transcript(1);
    assert_consistent(&t);
    let refused: Vec<String> = t
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolResult {
                name,
                refused: true,
                ..
            } => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(refused, ["mcp__playwright__browser_navigate"], "{err}");
    super::assert_screenshot_kept(p.path(), &t);
}

/// A lazy verifier through Claude Code, under the settings `baton new` writes: the
/// coder flips feature 1 without building it, and the verifier (a read-only Claude
/// Code session) only reads the diff and passes it citing a `cat` it never ran.
/// baton does not believe it: the flip is reverted.
#[test]
fn claude_code_a_lazy_verifiers_pass_of_a_flip_nobody_built_does_not_count() {
    let Some(cli) =
        claude("claude_code_a_lazy_verifiers_pass_of_a_flip_nobody_built_does_not_count")
    else {
        return;
    };
    // No work at all, then a stub.
    for stub in ["", "mkdir -p src && echo TODO > src/feature1.txt && "] {
        let (_t, dir) = super::proof::new_project("cli");
        let mut steps =
            baton_testkit::scenario::initializer(&baton_testkit::scenario::features(&[false; 4]));
        steps.extend([
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": format!("{stub}sed -i '0,/\"passes\": false/ s/\"passes\": false/\"passes\": true/' feature_list.json && echo 'Session: feature 1.' >> claude-progress.txt && git add -A && git commit -qm 'Implement feature 1'")}),
        )),
        Step::Reply(Reply::text("Feature 1 works.")),
    ]);
        let server = ScriptedServer::builder(Wire::Anthropic)
            .respond(baton_testkit::scenario::lazy_verifier)
            .start(steps);
        let home = tempfile::tempdir().unwrap();
        let out = baton_cc(
            &cli,
            &server,
            home.path(),
            &["run", dir.to_str().unwrap(), "--max-sessions", "2"],
        );
        let err = format!("{}\nrefused: {:?}", stderr(&out), refusals(&dir));
        super::proof::lazy_pass_refused(&dir, &out, &err);
    }
}

/// The planted-check and rewritten-test lies of `proof.rs`, through Claude Code:
/// the gates that refuse them do not depend on the backend.
#[test]
fn claude_code_a_planted_check_and_a_rewritten_test_prove_nothing() {
    let Some(cli) = claude("claude_code_a_planted_check_and_a_rewritten_test_prove_nothing") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let run = |server: &ScriptedServer, args: &[&str]| baton_cc(&cli, server, home.path(), args);
    super::proof::planted_check(&run);
    super::proof::rewritten_test(&run);
}

/// Every lie of `proof_lies.rs` (a rewritten fixture, a weakened helper, a
/// shadow module in git or only as an ignored `.pyc`, `init.sh` planting a
/// config, a project `.npmrc`, the manifest's test script, a verifier's
/// existence check in disguise and its check of baton's records), through
/// Claude Code: none proves a flip.
#[test]
fn claude_code_no_lie_about_what_a_check_reads_proves_a_flip() {
    let Some(cli) = claude("claude_code_no_lie_about_what_a_check_reads_proves_a_flip") else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let run = |server: &ScriptedServer, args: &[&str]| baton_cc(&cli, server, home.path(), args);
    super::proof_lies::every_lie(&run);
}

/// A process a Claude Code session's command double-forks out of every process
/// group (a `setsid` daemon) is gone before the session's gates: the CLI's
/// commands join the session's own namespace, which ends with it, so the next
/// session's commands neither see it nor find what it keeps writing.
#[test]
fn claude_code_a_double_forked_process_does_not_outlive_its_session() {
    let Some(cli) = claude("claude_code_a_double_forked_process_does_not_outlive_its_session")
    else {
        return;
    };
    if !super::bwrap("claude_code_a_double_forked_process_does_not_outlive_its_session") {
        return;
    }
    let p =
        Project::with_toml("[project]\nfeatures = 2\nmin_features = 2\n[run]\npause_secs = 0\n");
    std::fs::write(p.path().join("app_spec.txt"), "Two features.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    super::run::git(&p, &["init", "-q"]);
    let (start, look) = super::leftover_daemon(78);
    let mut steps = initialized();
    steps.extend([
        Step::Reply(Reply::tools(&start)),
        Step::Reply(Reply::text("Left a helper running.")),
        look,
        Step::Reply(Reply::text("Looked.")),
    ]);
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let home = tempfile::tempdir().unwrap();
    let dir = p.path().to_str().unwrap();
    let out = baton_cc(
        &cli,
        &server,
        home.path(),
        &["run", dir, "--max-sessions", "3"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    super::assert_no_leftover(&server);
}

/// With the project's own `bin` first on the user's `PATH` (as a virtualenv's,
/// `node_modules/.bin` or a direnv entry stand), a `claude`, `node` or `git` the
/// agent wrote there is never run outside the sandbox: baton finds Claude Code on
/// the `PATH` it trusts, and Claude Code, which runs outside, runs on it too.
/// The agent's commands, confined, still get the user's `PATH`.
#[test]
fn claude_code_and_what_it_starts_are_never_taken_from_the_project() {
    let test = "claude_code_and_what_it_starts_are_never_taken_from_the_project";
    let Some(cli) = claude(test) else {
        return;
    };
    if !super::bwrap(test) {
        return;
    }
    let p = Project::new();
    // A repository: Claude Code asks git about it as it starts.
    baton_testkit::git(p.path(), &["init", "-q"]);
    let home = tempfile::tempdir().unwrap();
    // Where only a process outside the sandbox can write: each planted program
    // notes itself there, then runs the real one.
    let marker = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ran = marker.path().join("ran");
    let real = std::env::var("PATH").unwrap_or_default();
    let bin = p.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let cli = cli.canonicalize().unwrap();
    for name in ["claude", "node", "git"] {
        let target = if name == "claude" {
            cli.display().to_string()
        } else {
            name.to_string()
        };
        let f = bin.join(name);
        std::fs::write(
            &f,
            format!(
                "#!/bin/sh\necho {name} >> {} 2>/dev/null\nPATH='{real}' exec {target} \"$@\"\n",
                ran.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The real CLI, by name, in a directory baton may trust.
    let trusted = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::os::unix::fs::symlink(&cli, trusted.path().join("claude")).unwrap();
    let path = format!("{}:{}:{real}", bin.display(), trusted.path().display());
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": "printf '%s' \"$PATH\" > path.txt", "description": "path"}),
            )),
            Step::Reply(Reply::text("All done.")),
        ],
    );
    let mut c = baton(&server, Wire::Anthropic);
    let out = c
        .env_remove("BATON_CLAUDE")
        .env("PATH", &path)
        .env("BATON_PROVIDER", "claude-code")
        .env("HOME", home.path())
        .env("IS_SANDBOX", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args([
            "exec",
            p.path().to_str().unwrap(),
            "--prompt",
            "say your PATH",
        ])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "All done.");
    assert!(
        !ran.exists(),
        "a planted program ran outside the sandbox: {}\n{}",
        std::fs::read_to_string(&ran).unwrap_or_default(),
        stderr(&out)
    );
    // The command itself had the user's PATH, the project's bin first.
    assert_eq!(p.file("path.txt"), path);
}

/// A Claude Code verifier that hands its walk to a subagent (`Task`) is refused
/// by baton's hook with why (only its own calls count as evidence), and then
/// walks the steps itself: its verdict stands on calls in its own record.
#[test]
fn claude_code_a_verifier_that_delegates_is_told_only_its_own_calls_count() {
    let Some(cli) =
        claude("claude_code_a_verifier_that_delegates_is_told_only_its_own_calls_count")
    else {
        return;
    };
    let (_t, dir) = super::proof::new_project("cli");
    let mut steps =
        baton_testkit::scenario::initializer(&baton_testkit::scenario::features(&[false; 4]));
    // Feature 1 built and flipped (Claude Code's Write needs a Read first: the
    // shell does it all).
    steps.extend([
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": "mkdir -p src && echo 'feature 1' > src/feature1.txt && sed -i '0,/\"passes\": false/ s/\"passes\": false/\"passes\": true/' feature_list.json && echo 'Session: feature 1.' >> claude-progress.txt && git add -A && git commit -qm 'Implement feature 1'"}),
        )),
        Step::Reply(Reply::text("Feature 1 works.")),
    ]);
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(|r| {
            if !baton_testkit::scenario::is_verifier(r) {
                return None;
            }
            let said = format!("{}{}", r.body["messages"], r.body["input"]);
            if said.contains("only your own calls count") {
                return baton_testkit::scenario::honest_verifier(r);
            }
            // Delegated once and not refused: give up at once (the test fails
            // below), rather than delegate again.
            if said.contains("Check feature 1 and report") {
                return Some(Step::Reply(Reply::text(
                    "VERDICT {\"feature\": 1, \"pass\": false, \"reason\": \"the subagent did not say\"}",
                )));
            }
            // The subagent tool, by the name this CLI offers it under.
            let offers = |name: &str| {
                r.body["tools"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|t| t["name"] == name))
            };
            let name = if offers("Agent") { "Agent" } else { "Task" };
            Some(Step::Reply(Reply::tool(
                name,
                json!({"description": "walk the steps", "prompt": "Check feature 1 and report what you saw.", "subagent_type": "general-purpose"}),
            )))
        })
        .start(steps);
    let home = tempfile::tempdir().unwrap();
    let out = baton_cc(
        &cli,
        &server,
        home.path(),
        &["run", dir.to_str().unwrap(), "--max-sessions", "2"],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let verifier: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| baton_testkit::scenario::is_verifier(r))
        .map(|r| r.body.to_string())
        .collect();
    assert!(!verifier.is_empty(), "no verifier ran: {err}");
    assert!(
        verifier
            .iter()
            .any(|b| b.contains("only your own calls count as evidence")),
        "the delegation was not refused with why: {err}"
    );
}
