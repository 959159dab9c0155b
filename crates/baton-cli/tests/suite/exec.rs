//! Whole sessions through `baton exec`, on every wire format.

use baton_agent::transcript::Event;
use baton_testkit::{Reply, Step, Wire};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn multi_tool_session(wire: Wire) {
    let p = Project::new();
    let (out, server) = exec(
        &p,
        wire,
        vec![
            Step::Reply(
                Reply::tools(&[
                    (
                        "Write",
                        json!({"file_path": "notes/hello.txt", "content": "hello\nworld\n"}),
                    ),
                    (
                        "Bash",
                        json!({"command": "wc -l < notes/hello.txt; echo err >&2"}),
                    ),
                ])
                .with_text("I will write a file and count its lines."),
            ),
            Step::Reply(Reply::tool("Read", json!({"file_path": "notes/hello.txt"}))),
            Step::Reply(Reply::text("The file has 2 lines.")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "The file has 2 lines.\n");
    assert_eq!(p.file("notes/hello.txt"), "hello\nworld\n");
    let err = stderr(&out);
    assert!(err.contains("▸ Write notes/hello.txt"), "{err}");
    assert!(
        err.contains("▸ Bash wc -l < notes/hello.txt; echo err >&2"),
        "{err}"
    );
    assert!(err.contains("✓ Read"), "{err}");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    // Two results in one user turn, in the order of the calls, each paired by id.
    let results = tool_results(wire, &reqs[1].body);
    assert_eq!(results.len(), 2);
    assert!(
        results[0].1.starts_with("Created notes/hello.txt"),
        "{results:?}"
    );
    assert_eq!(
        results[1].1.trim_start_matches("Error: "),
        "2\nerr\nExit code: 0"
    );
    let reads = tool_results(wire, &reqs[2].body);
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].1, "     1\thello\n     2\tworld\n");

    let t = p.transcript(1);
    assert_consistent(&t);
    assert_eq!(count(&t, |e| matches!(e, Event::ToolResult { .. })), 3);
    assert_eq!(end_of(&t), ("completed".to_string(), None));
    // The ids the model gave are the ids answered.
    let ids: Vec<String> = t
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        results
            .iter()
            .map(|r| r.0.clone())
            .chain(reads.iter().map(|r| r.0.clone()))
            .collect::<Vec<_>>(),
        ids
    );
}

#[test]
fn anthropic_multi_tool_session_completes() {
    multi_tool_session(Wire::Anthropic);
}

#[test]
fn openai_multi_tool_session_completes() {
    multi_tool_session(Wire::OpenAi);
}

#[test]
fn openai_responses_multi_tool_session_completes() {
    multi_tool_session(Wire::OpenAiResponses);
}

/// On the Responses API every session of a project sends the same
/// `prompt_cache_key` (another project another), with nothing stored server-side.
#[test]
fn openai_responses_sessions_of_a_project_share_one_cache_key() {
    let key_of = |p: &Project| {
        let (out, server) = exec(
            p,
            Wire::OpenAiResponses,
            vec![Step::Reply(Reply::text("ok"))],
            &[],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let req = &server.requests()[0];
        assert_eq!(req.path, "/v1/responses");
        assert_eq!(req.header("authorization"), Some("Bearer sk-openai-test"));
        assert_eq!(req.body["store"], false);
        assert_eq!(req.body["model"], "gpt-5");
        assert_eq!(req.first_user_text(), "do the task");
        req.body["prompt_cache_key"].as_str().unwrap().to_string()
    };
    let p = Project::new();
    let first = key_of(&p);
    assert_eq!(key_of(&p), first);
    assert_ne!(key_of(&Project::new()), first);
}

#[test]
fn max_turns_stops_with_exit_2() {
    let p = Project::new();
    let steps = (0..5)
        .map(|_| Step::Reply(Reply::tool("Bash", json!({"command": "true"}))))
        .collect();
    let (out, server) = exec(&p, Wire::Anthropic, steps, &["--max-turns", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 2);
    let t = p.transcript(1);
    assert_consistent(&t);
    assert_eq!(end_of(&t).0, "max_turns");
}

#[test]
fn each_session_gets_the_next_transcript_number() {
    let p = Project::new();
    for n in 1..=2u32 {
        let (out, _s) = exec(
            &p,
            Wire::Anthropic,
            vec![Step::Reply(Reply::text("ok"))],
            &[],
        );
        assert_eq!(out.status.code(), Some(0));
        assert!(
            stderr(&out).contains(&format!("session {n:04} · completed")),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(p.transcript(2).len(), p.transcript(1).len());
}

#[test]
fn background_processes_are_stopped_when_the_session_ends() {
    let p = Project::new();
    let (out, _s) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": "sleep 307 & echo $! > server.pid"}),
            )),
            Step::Reply(Reply::text("started")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let pid = p.file("server.pid").trim().to_string();
    assert!(!pid.is_empty());
    assert!(
        stderr(&out).contains("stopped 1 background process group"),
        "{}",
        stderr(&out)
    );
    // Gone or a zombie waiting for its reaper: either way no longer running. (The
    // pid the command saw may be one inside the sandbox's PID namespace, so the
    // server is looked for by its command line.)
    let still = running_with_command(b"sleep\x00307\x00");
    assert!(still.is_empty(), "still running: {still:?}");
}

#[test]
fn missing_project_dir_is_a_clear_error() {
    let server = baton_testkit::ScriptedServer::start(Wire::Anthropic, vec![]);
    let out = baton(&server, Wire::Anthropic)
        .args(["exec", "/nonexistent/baton-dir", "--prompt", "x"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "baton: error: /nonexistent/baton-dir does not exist\n"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn missing_api_key_is_a_clear_error() {
    let p = Project::new();
    let server = baton_testkit::ScriptedServer::start(Wire::Anthropic, vec![]);
    let out = baton(&server, Wire::Anthropic)
        .env_remove("ANTHROPIC_API_KEY")
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "x"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("ANTHROPIC_API_KEY is not set"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn malformed_config_names_file_and_line() {
    let p = Project::with_toml("[agent]\nmax_turns = \"many\"\n");
    let (out, server) = exec(&p, Wire::Anthropic, vec![], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("baton.toml") && err.contains("line 7"),
        "{err}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn interrupt_kills_the_running_tool_and_closes_the_transcript() {
    let p = Project::new();
    let server = baton_testkit::ScriptedServer::start(
        Wire::Anthropic,
        vec![Step::Reply(Reply::tool(
            "Bash",
            json!({"command": "touch started; sleep 60"}),
        ))],
    );
    let child = baton(&server, Wire::Anthropic)
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "x"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = p.path().join("started");
    let t0 = std::time::Instant::now();
    while !started.exists() && t0.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(started.exists(), "the command never started");
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-INT", &pid])
            .status_bounded()
            .unwrap()
            .success()
    );
    let out = child.wait_with_output_bounded().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let t = p.transcript(1);
    assert_consistent(&t);
    assert_eq!(end_of(&t).0, "interrupted");
    let interrupted = t.iter().any(|r| matches!(&r.event, Event::ToolResult { content, is_error: true, .. } if content.contains("interrupted")));
    assert!(interrupted, "{t:?}");
}

#[test]
fn session_token_limit_stops_with_exit_2() {
    let p = Project::with_toml("[agent]\nmax_session_tokens = 200\n");
    // Each scripted reply reports 120 tokens: the limit is reached after turn 2.
    let steps = (0..5)
        .map(|_| Step::Reply(Reply::tool("Bash", json!({"command": "true"}))))
        .collect();
    let (out, server) = exec(&p, Wire::Anthropic, steps, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 2);
    let t = p.transcript(1);
    assert_consistent(&t);
    assert_eq!(end_of(&t).0, "token_limit");
}

#[test]
fn session_time_limit_stops_with_exit_2() {
    // 0.1 minutes = 6 s: the first model turn comes within it even on a loaded
    // machine (1.2 s did not always), and its tool call (30 s) is cut by it, so
    // exactly one request is made.
    let p = Project::with_toml("[agent]\nmax_session_minutes = 0.1\n");
    let steps = (0..5)
        .map(|_| Step::Reply(Reply::tool("Bash", json!({"command": "sleep 30"}))))
        .collect();
    let (out, server) = exec(&p, Wire::Anthropic, steps, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(server.requests().len(), 1);
    let t = p.transcript(1);
    assert_consistent(&t);
    assert_eq!(end_of(&t).0, "time_limit");
    // The limit stopped the command; it did not wait for it to end.
    let result = t
        .iter()
        .find_map(|r| match &r.event {
            Event::ToolResult { content, .. } => Some(content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        result.contains("the session's time limit was reached while this call ran"),
        "{result}"
    );
}

#[test]
fn session_time_limit_also_cuts_a_stalled_model_request() {
    let p = Project::with_toml("[agent]\nmax_session_minutes = 0.005\n");
    let (out, _server) = exec(
        &p,
        Wire::Anthropic,
        vec![Step::Stall {
            reply: Reply::text("slow"),
            events: 1,
        }],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(end_of(&p.transcript(1)).0, "time_limit");
}

/// A server started in the background is reported with the pid the agent's own
/// commands know it by, and `kill` of that pid is allowed and stops it, also when
/// the commands run in a PID namespace of their own (where pids differ from baton's).
#[test]
fn a_background_server_is_stopped_by_the_pid_the_agent_was_told() {
    let p = Project::new();
    // The model kills whatever pid it was told (in a fresh namespace a small one).
    let mut builder = baton_testkit::ScriptedServer::builder(Wire::Anthropic);
    for n in 2..40 {
        builder = builder.when(
            move |r| r.body.to_string().contains(&format!("(pid {n})")),
            vec![Step::Reply(Reply::tool(
                "Bash",
                json!({"command": format!("kill {n}; echo sent")}),
            ))],
        );
    }
    let server = builder.start(vec![
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": "sleep 311", "run_in_background": true}),
        )),
        Step::Reply(Reply::text("stopped")),
    ]);
    let out = baton(&server, Wire::Anthropic)
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "start and stop a server"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    if !super::bwrap("a_background_server_is_stopped_by_the_pid_the_agent_was_told") {
        return;
    }
    let reqs = server.requests();
    let started = &tool_results(Wire::Anthropic, &reqs[1].body)[0].1;
    assert!(
        started.contains("Started in the background (pid "),
        "{started}"
    );
    let killed = &tool_results(Wire::Anthropic, &reqs[2].body)[0].1;
    assert!(killed.contains("sent"), "the kill was not run: {killed}");
    assert!(
        !stderr(&out).contains("stopped 1 background process group"),
        "the agent's kill did not stop it: {}",
        stderr(&out)
    );
}
