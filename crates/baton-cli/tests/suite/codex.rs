//! `provider = "codex"` with the real Codex CLI (installed by `.ci/run` into
//! `.ci/npm`, or named by `$BATON_TEST_CODEX`) against the scripted Responses API
//! server on 127.0.0.1. Codex runs whole inside baton's sandbox and reaches the
//! server only through baton's key proxy; its commands are judged by baton's hook.
//! Missing CLI: the tests fail on CI (`CI=true`) and are skipped with a note
//! elsewhere.

use std::path::PathBuf;
use std::process::Output;

use baton_agent::transcript::Event;
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::{Value, json};

use super::*;

/// The key baton holds in these tests; Codex must never see it.
const KEY: &str = "sk-openai-test";

/// The Codex CLI, or `None` (after a note) where it is not installed.
fn codex(test: &str) -> Option<PathBuf> {
    agent_cli(test, "codex", "BATON_TEST_CODEX", "@openai/codex")
}

/// `baton ARGS` with provider codex against `server` (the Responses API).
fn baton_codex(cli: &PathBuf, server: &ScriptedServer, args: &[&str]) -> Output {
    baton(server, Wire::OpenAiResponses)
        .env("BATON_PROVIDER", "codex")
        .env("BATON_CODEX", cli)
        .env("BATON_MODEL", "gpt-5-codex")
        .args(args)
        .output_bounded()
        .unwrap()
}

/// A shell call that writes `script` to `probe.sh` and runs it: what a hijacked
/// session does to get past the policy's reading of its commands.
fn script(body: &str) -> Step {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(body);
    sh(&format!(
        "echo {b64} | base64 -d > probe.sh && bash probe.sh"
    ))
}

/// Whether the key can be found in any environment or command line in reach (the
/// pattern's brackets keep `grep` from finding its own command line).
const KEY_PROBE: &str = "if (env; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline) 2>/dev/null | grep -q 'sk-openai-tes[t]'; then echo KEY-SEEN; else echo key-hidden; fi\n";

/// A Codex shell call (its `exec_command` tool).
fn sh(cmd: &str) -> Step {
    Step::Reply(Reply::tool("exec_command", json!({"cmd": cmd})))
}

/// The tool results of a transcript: (content, is_error, refused).
fn results(t: &[baton_agent::transcript::Record]) -> Vec<(String, bool, bool)> {
    t.iter()
        .filter_map(|r| match &r.event {
            Event::ToolResult {
                content,
                is_error,
                refused,
                ..
            } => Some((content.clone(), *is_error, *refused)),
            _ => None,
        })
        .collect()
}

/// What Codex sent the model as a call's output, in request `i`.
fn outputs(server: &ScriptedServer, i: usize) -> Vec<String> {
    server.requests()[i].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["type"] == "function_call_output")
        .map(|x| x["output"].to_string())
        .collect()
}

#[test]
fn codex_exec_runs_in_the_sandbox_and_never_holds_the_key() {
    let Some(cli) = codex("codex_exec_runs_in_the_sandbox_and_never_holds_the_key") else {
        return;
    };
    let p = Project::new();
    let server = ScriptedServer::start(
        Wire::OpenAiResponses,
        vec![
            script(&format!("echo built > out.txt\n{KEY_PROBE}")),
            Step::Reply(Reply::text("Built it.")),
        ],
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_codex(&cli, &server, &["exec", dir, "--prompt", "build it"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0);
    assert_eq!(p.file("out.txt"), "built\n");
    // What Codex cannot give is said at start.
    assert!(
        stderr(&out).contains("baton: note: with codex, an apply_patch of the feature list is checked after the session"),
        "{}",
        stderr(&out)
    );
    // The provider got the real key, from baton's proxy; Codex had only a token.
    for r in server.requests() {
        let auth = r.header("authorization").unwrap_or_default();
        assert_eq!(auth, format!("Bearer {KEY}"));
    }
    let t = p.transcript(1);
    assert_consistent(&t);
    match &t[0].event {
        Event::SessionStart { provider, .. } => assert_eq!(provider, "codex"),
        e => panic!("{e:?}"),
    }
    let r = results(&t);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].0.contains("key-hidden"), "{r:?}");
    assert!(!r[0].1 && !r[0].2, "{r:?}");
    // The session's usage is Codex's: 2 requests of 100 in and 20 out.
    match &t.last().unwrap().event {
        Event::SessionEnd {
            outcome,
            usage,
            final_text,
            ..
        } => {
            assert_eq!(outcome, "completed");
            assert_eq!(final_text, "Built it.");
            assert!(usage.output_tokens > 0, "{usage:?}");
        }
        e => panic!("{e:?}"),
    }
}

/// `[agent] max_session_tokens` holds for Codex: once the answers to a session's
/// token have reported that many tokens, the key proxy refuses its next request
/// (it never reaches the provider) and the session ends `token_limit`.
#[test]
fn codex_sessions_stop_at_their_token_limit_at_the_key_proxy() {
    let Some(cli) = codex("codex_sessions_stop_at_their_token_limit_at_the_key_proxy") else {
        return;
    };
    let p = Project::with_toml("[agent]\nmax_session_tokens = 1000\n");
    let first = Reply::tool("exec_command", json!({"cmd": "echo one > one.txt"}))
        .with_usage(1500, 20, 0, 0);
    let server = ScriptedServer::start(
        Wire::OpenAiResponses,
        vec![Step::Reply(first), Step::Reply(Reply::text("never"))],
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_codex(&cli, &server, &["exec", dir, "--prompt", "build it"]);
    let err = stderr(&out);
    assert_eq!(server.requests().len(), 1, "{err}");
    assert_eq!(p.file("one.txt"), "one\n");
    let t = p.transcript(1);
    let end = t
        .iter()
        .find_map(|r| match &r.event {
            Event::SessionEnd { outcome, usage, .. } => Some((outcome.clone(), *usage)),
            _ => None,
        })
        .unwrap();
    assert_eq!(end.0, "token_limit", "{err}");
    assert_eq!(end.1.input_tokens, 1500);
    // A limit, as for baton's own loop.
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("token_limit"), "{err}");
}

#[test]
fn codex_refused_command_is_refused_by_batons_hook() {
    let Some(cli) = codex("codex_refused_command_is_refused_by_batons_hook") else {
        return;
    };
    let p = Project::new();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(p.path())
        .status_bounded()
        .unwrap();
    assert!(git.success());
    let server = ScriptedServer::start(
        Wire::OpenAiResponses,
        vec![
            sh("git push origin main"),
            Step::Reply(Reply::text("I could not.")),
        ],
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_codex(&cli, &server, &["exec", dir, "--prompt", "ship it"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The model was told why, in baton's words.
    let told = outputs(&server, 1).join("\n");
    assert!(told.contains("Refused by baton's policy"), "{told}");
    let t = p.transcript(1);
    assert_consistent(&t);
    let r = results(&t);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].1 && r[0].2, "{r:?}");
    assert!(r[0].0.contains("Refused by baton's policy"), "{r:?}");
}

/// The initializer through Codex: the list, init.sh and the notes, committed.
fn initializer(n: usize) -> Vec<Step> {
    vec![
        sh(&format!(
            "cat > feature_list.json <<'EOF'\n{}EOF\nprintf '#!/usr/bin/env bash\\necho ready\\n' > init.sh && chmod +x init.sh && echo 'Session 1: list and init.sh.' > claude-progress.txt && git add -A && git commit -qm 'Initial feature list'",
            failing_features(n)
        )),
        Step::Reply(Reply::text("Initialized.")),
    ]
}

/// A coding session through Codex that builds feature `n` and flips it.
fn build(n: usize) -> Step {
    sh(&format!(
        "./init.sh && mkdir -p src && echo 'feature {n}' > src/feature{n}.txt && sed -i '0,/\"passes\": false/s//\"passes\": true/' feature_list.json && echo 'Session: feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Implement feature {n}'"
    ))
}

fn project(features: usize) -> Project {
    let p = Project::with_toml(&format!(
        "[project]\nfeatures = {features}\nmin_features = {features}\n[run]\npause_secs = 0\nstall_sessions = 3\n"
    ));
    std::fs::write(p.path().join("app_spec.txt"), "Two features.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(p.path())
        .status_bounded()
        .unwrap();
    assert!(git.success());
    p
}

fn status(dir: &str) -> Value {
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", dir, "--json"])
        .output_bounded()
        .unwrap();
    serde_json::from_slice(&status.stdout).unwrap()
}

/// A whole run through Codex, initializer to complete, with an edited feature
/// undone, a refused command and a quota waited out on the way.
#[test]
fn codex_whole_run_with_a_tamper_a_refusal_and_a_quota_wait_completes() {
    let Some(cli) = codex("codex_whole_run_with_a_tamper_a_refusal_and_a_quota_wait_completes")
    else {
        return;
    };
    let p = project(2);
    let mut steps = initializer(2);
    // Session 2 meets the provider's quota wall first (Codex gives up, baton waits).
    steps.push(Step::QuotaWall {
        reset_in: std::time::Duration::from_secs(3),
        retry_after: true,
        hard: true,
    });
    // Then: a refused push, an edit of feature 2's description, and feature 1.
    steps.push(sh("git push origin main"));
    steps.push(sh(
        "sed -i 's/\"Feature 2\"/\"Feature 2 (easy)\"/' feature_list.json",
    ));
    steps.push(build(1));
    steps.push(Step::Reply(Reply::text("Feature 1 works.")));
    steps.push(build(2));
    steps.push(Step::Reply(Reply::text("Feature 2 works.")));
    let server = ScriptedServer::start(Wire::OpenAiResponses, steps);
    let dir = p.path().to_str().unwrap();
    let out = baton_codex(&cli, &server, &["run", dir, "--json"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.remaining(), 0, "{err}");
    assert!(err.contains("every feature passes"), "{err}");
    let events = stdout(&out);
    assert!(
        events.lines().any(|l| l.contains("\"type\":\"waiting\"")),
        "{events}"
    );
    // The edit was undone; both flips stand.
    assert_eq!(
        p.file("feature_list.json"),
        failing_features(2).replace("\"passes\": false", "\"passes\": true")
    );
    let s = status(dir);
    assert_eq!(
        (s["passing"].clone(), s["total"].clone()),
        (json!(2), json!(2))
    );
    let sessions = s["sessions"].as_array().unwrap();
    let outcomes: Vec<_> = sessions.iter().map(|x| x["outcome"].clone()).collect();
    assert_eq!(
        outcomes,
        [
            json!("completed"),
            json!("usage_limit"),
            json!("completed"),
            json!("completed")
        ],
        "{sessions:?}"
    );
    assert!(
        sessions[1]["waited_secs"].as_f64().unwrap() >= 2.0,
        "{}",
        sessions[1]
    );
    assert_eq!(sessions[2]["flipped"], json!([1]));
    assert_eq!(sessions[3]["flipped"], json!([2]));
    let state = state(&p);
    let g = &state["sessions"][2]["gates"];
    assert_eq!(
        g["violations"],
        json!(["feature 2: \"description\" was changed"]),
        "{g}"
    );
    assert_eq!(g["refusals"], 1, "{g}");
    for n in 1..=4 {
        assert_consistent(&p.transcript(n));
    }
}

/// A hijacked Codex session tries to read the key, plant a git hook, rewrite
/// baton.toml and run a refused command: none of it lands.
#[test]
fn a_hijacked_codex_session_cannot_reach_the_key_git_or_baton_toml() {
    let Some(cli) = codex("a_hijacked_codex_session_cannot_reach_the_key_git_or_baton_toml") else {
        return;
    };
    if !super::bwrap("a_hijacked_codex_session_cannot_reach_the_key_git_or_baton_toml") {
        return;
    }
    let p = project(1);
    let toml_before = p.file("baton.toml");
    let mut steps = initializer(1);
    steps.push(script(&format!(
        "{KEY_PROBE}echo '#!/bin/sh' > .git/hooks/pre-commit && echo HOOK-PLANTED\n\
         echo '[notify]' >> baton.toml && echo TOML-WRITTEN\n\
         git config core.hooksPath /tmp && echo CONFIG-WRITTEN\ntrue\n"
    )));
    steps.push(sh("git push origin main"));
    steps.push(Step::Reply(Reply::text("Done.")));
    let server = ScriptedServer::start(Wire::OpenAiResponses, steps);
    let dir = p.path().to_str().unwrap();
    let out = baton_codex(&cli, &server, &["run", dir, "--max-sessions", "2"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let t = p.transcript(2);
    let r = results(&t);
    assert_eq!(r.len(), 2, "{r:?}");
    let said = &r[0].0;
    assert!(
        said.contains("key-hidden") && !said.contains("KEY-SEEN"),
        "{said}"
    );
    for planted in ["HOOK-PLANTED", "TOML-WRITTEN", "CONFIG-WRITTEN"] {
        assert!(!said.contains(planted), "{planted}: {said}");
    }
    assert!(!p.path().join(".git/hooks/pre-commit").exists());
    assert_eq!(p.file("baton.toml"), toml_before);
    assert!(r[1].2, "not refused: {r:?}");
}

/// A command that finds the session's proxy token and base URL in Codex's process
/// (its environment and `-c` arguments), keeps them in the repository (a session's
/// `/tmp` and home end with it), and asks the model itself with them.
const STEAL: &str = r#"for f in /proc/[0-9]*/environ; do
  t=$(tr '\0' '\n' < "$f" 2>/dev/null | sed -n 's/^BATON_CODEX_TOKEN=//p')
  u=$(tr '\0' '\n' < "${f%environ}cmdline" 2>/dev/null | sed -n 's/^model_providers.baton.base_url="\(.*\)"$/\1/p')
  [ -n "$t" ] && [ -n "$u" ] && break
done
echo "$t $u" > .git/stolen
curl -s -o /dev/null -w 'STOLEN-%{http_code}\n' -H "authorization: Bearer $t" -H 'content-type: application/json' "$u/responses" -d '{"model":"gpt-5-codex","input":"stolen-request","stream":true}'
"#;

/// What a session spends with its token outside Codex is counted as the session's
/// (the key proxy reads every answer's usage), and the token dies with the
/// session: the next session's use of it is refused before it reaches the provider.
#[test]
fn a_codex_sessions_token_is_metered_whoever_uses_it_and_dies_with_the_session() {
    let Some(cli) =
        codex("a_codex_sessions_token_is_metered_whoever_uses_it_and_dies_with_the_session")
    else {
        return;
    };
    let p = project(1);
    let mut steps = initializer(1);
    steps.insert(1, script(STEAL));
    steps.push(script(
        "read t u < .git/stolen\ncurl -s -o /dev/null -w 'OLD-TOKEN-%{http_code}\\n' -H \"authorization: Bearer $t\" -H 'content-type: application/json' \"$u/responses\" -d '{\"model\":\"gpt-5-codex\",\"input\":\"stolen-request\",\"stream\":true}'\n",
    ));
    steps.push(build(1));
    steps.push(Step::Reply(Reply::text("Feature 1 works.")));
    let stolen = |r: &baton_testkit::RecordedRequest| r.body["input"] == "stolen-request";
    let big = Reply::text("spent").with_usage(0, 1_000_000, 0, 0);
    let server = ScriptedServer::builder(Wire::OpenAiResponses)
        .when(stolen, vec![Step::Reply(big.clone()), Step::Reply(big)])
        .start(steps);
    let dir = p.path().to_str().unwrap();
    let out = baton_codex(&cli, &server, &["run", dir]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.remaining(), 0, "{err}");
    let asked = |s: &ScriptedServer| {
        s.requests()
            .iter()
            .filter(|r| r.body["input"] == "stolen-request")
            .count()
    };
    assert_eq!(asked(&server), 1, "the old token reached the provider");
    let said = |n: u32| -> String {
        results(&p.transcript(n))
            .iter()
            .map(|r| r.0.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(said(1).contains("STOLEN-200"), "{}", said(1));
    assert!(said(2).contains("OLD-TOKEN-401"), "{}", said(2));
    // Session 1 is charged the million output tokens Codex never reported.
    let end = |n: u32| {
        p.transcript(n)
            .into_iter()
            .find_map(|r| match r.event {
                Event::SessionEnd {
                    usage, cost_usd, ..
                } => Some((usage, cost_usd)),
                _ => None,
            })
            .unwrap()
    };
    let (usage, cost) = end(1);
    assert!(usage.output_tokens >= 1_000_000, "{usage:?}");
    assert!(cost >= 1.0, "{cost}");
    let (usage, _) = end(2);
    assert!(usage.output_tokens < 1_000, "{usage:?}");
    let s = state(&p);
    let spent = s["sessions"][0]["usage"]["output_tokens"].as_u64().unwrap();
    assert!(spent >= 1_000_000, "{}", s["sessions"][0]);
}

#[test]
fn doctor_lists_codex_and_requires_it_for_its_provider() {
    let p = Project::with_toml("[agent]\nprovider = \"codex\"\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["doctor", p.path().to_str().unwrap()])
        .env("BATON_CODEX", "/nonexistent/codex")
        .output_bounded()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("  missing  codex       /nonexistent/codex not found"),
        "{text}"
    );
    assert!(text.contains("npm install -g @openai/codex"), "{text}");
    let Some(cli) = codex("doctor_lists_codex_and_requires_it_for_its_provider") else {
        return;
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["doctor", p.path().to_str().unwrap()])
        .env("BATON_CODEX", &cli)
        .output_bounded()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("  ok       codex       "), "{text}");
}

/// `--agents 2` with Codex: each working copy gets a Codex of its own (its sandbox,
/// key proxy and hook), and both features are merged.
#[test]
fn codex_agents_in_working_copies_finish_a_project() {
    use baton_testkit::scenario::parallel::{list, token};
    let Some(cli) = codex("codex_agents_in_working_copies_finish_a_project") else {
        return;
    };
    let p = two_feature_project();
    let mut b = ScriptedServer::builder(Wire::OpenAiResponses);
    for n in 1..=2 {
        let t = token(n);
        b = b.when(
            move |r| baton_testkit::scenario::parallel::is_for(r, n),
            vec![
                sh(&format!(
                    "mkdir -p src && echo 'page {t}' > src/{t}.txt && sed -i '/\"description\": \"Feature {t}:/,/\"passes\"/ s/\"passes\": false/\"passes\": true/' feature_list.json && echo 'Session: {t} done.' >> claude-progress.txt && git add -A && git commit -qm 'Implement {t}'"
                )),
                Step::Reply(Reply::text(&format!("{t} works."))),
            ],
        );
    }
    let init = vec![
        sh(&format!(
            "cat > feature_list.json <<'EOF'\n{}EOF\nprintf '#!/usr/bin/env bash\\necho ready\\n' > init.sh && chmod +x init.sh && echo log > shared.txt && echo 'Session 1.' > claude-progress.txt && git add -A && git commit -qm 'Initial feature list'",
            list(2, 0)
        )),
        Step::Reply(Reply::text("Initialized.")),
    ];
    let server = b.start(init);
    let dir = p.path().to_str().unwrap();
    let out = baton_codex(&cli, &server, &two_agents_run(dir));
    assert_two_agents_finished(&p, &out);
    let s = status(dir);
    assert_eq!(s["passing"], 2, "{s}");
}

/// Codex drives the real browser (`[browser]`'s Playwright MCP server and
/// Chromium, which Codex starts inside the sandbox): the page's title comes back,
/// and baton's hook refuses a `file://` URL as it does in its own loop. The server
/// takes 11 s to start, past Codex's own 10 s default (a loaded machine's node):
/// Codex waits as long as baton's own loop would (60 s).
#[test]
fn codex_drives_the_real_browser_inside_the_sandbox() {
    let Some(cli) = codex("codex_drives_the_real_browser_inside_the_sandbox") else {
        return;
    };
    let Some(parts) =
        baton_testkit::browser::browser_parts("codex_drives_the_real_browser_inside_the_sandbox")
    else {
        return;
    };
    let p = Project::with_toml(&format!(
        "[browser]\nenabled = true\nchromium = {:?}\ncommand = [\"sh\", \"-c\", \"sleep 11; exec node \\\"$@\\\"\", \"sh\", {:?}]\n",
        parts.chromium.display().to_string(),
        parts.cli.display().to_string()
    ));
    // `NAMESPACE::name`: Codex offers an MCP server's tools in a namespace.
    let browse = |url: &str| {
        Step::Reply(Reply::tool(
            "mcp__playwright::browser_navigate",
            json!({"url": url}),
        ))
    };
    let server = ScriptedServer::start(
        Wire::OpenAiResponses,
        vec![
            browse("data:text/html,<title>Greeter</title><p>hello</p>"),
            browse("file:///etc/hostname"),
            Step::Reply(Reply::tool(
                "mcp__playwright::browser_take_screenshot",
                json!({}),
            )),
            Step::Reply(Reply::text("Seen in the browser.")),
        ],
    );
    let dir = p.path().to_str().unwrap();
    let out = baton_codex(&cli, &server, &["exec", dir, "--prompt", "look"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = outputs(&server, 1).join("\n");
    assert!(page.contains("Page Title: Greeter"), "{page}");
    let refused = outputs(&server, 2).join("\n");
    assert!(refused.contains("Refused by baton's policy"), "{refused}");
    assert!(refused.contains("file://"), "{refused}");
    let t = p.transcript(1);
    assert_consistent(&t);
    let calls: Vec<String> = t
        .iter()
        .filter_map(|r| match &r.event {
            Event::Assistant { content, .. } => Some(content.clone()),
            _ => None,
        })
        .flatten()
        .filter_map(|b| match b {
            baton_agent::model::Block::ToolUse { name, .. } => Some(name),
            _ => None,
        })
        .collect();
    assert!(
        calls.contains(&"mcp__playwright__browser_navigate".to_string()),
        "{calls:?}"
    );
    assert_screenshot_kept(p.path(), &t);
}

/// A Codex that is not installed is said before anything runs, with how to
/// install it (inside the sandbox's shell it would only show as a failed session).
#[test]
fn a_missing_codex_is_said_before_the_session() {
    let p = Project::new();
    let server = ScriptedServer::start(Wire::OpenAiResponses, vec![]);
    let out = baton(&server, Wire::OpenAiResponses)
        .env("BATON_PROVIDER", "codex")
        .env("BATON_CODEX", "/nonexistent/codex")
        .args(["exec", p.path().to_str().unwrap(), "--prompt", "hi"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/nonexistent/codex not found; install it: npm install -g @openai/codex"),
        "{err}"
    );
    assert!(
        !p.path().join(".baton/sessions/0001.jsonl").exists(),
        "{err}"
    );
    assert!(server.requests().is_empty());
}

/// The false-flip scenario of `proof.rs` through Codex under the settings `baton
/// new` writes: a coding session builds feature 1 and flips 1 and 4; the verifier,
/// a read-only Codex session of its own, finds nothing behind #4; the run really
/// finishes, and every flip the ledger accepts is the verifier's.
#[test]
fn codex_a_false_flip_under_baton_new_defaults_is_caught() {
    let Some(cli) = codex("codex_a_false_flip_under_baton_new_defaults_is_caught") else {
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
            sh(&format!(
                "./init.sh && mkdir -p src && echo 'feature {n}' > src/feature{n}.txt && {} && echo 'Session: feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Implement feature {n}'",
                flip(flips)
            )),
            Step::Reply(Reply::text(&format!("Feature {n} works."))),
        ]
    };
    let mut steps = vec![
        sh(&format!(
            "cat > feature_list.json <<'EOF'\n{}EOF\nprintf '#!/usr/bin/env bash\\necho ready\\n' > init.sh && chmod +x init.sh && echo 'Session 1: list and init.sh.' > claude-progress.txt && git add -A && git commit -qm 'Initial feature list'",
            baton_testkit::scenario::features(&[false; 4])
        )),
        Step::Reply(Reply::text("Initialized.")),
    ];
    steps.extend(build(1, &[1, 4]));
    for n in 2..=4 {
        steps.extend(build(n, &[n]));
    }
    let server = ScriptedServer::builder(Wire::OpenAiResponses)
        .respond(baton_testkit::scenario::honest_verifier)
        .start(steps);
    let out = baton_codex(&cli, &server, &["run", dir.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.remaining(), 0, "{err}");
    assert!(err.contains("verifier rejected #4"), "{err}");
    let ledger = std::fs::read_to_string(dir.join(".baton/ledger.jsonl")).unwrap();
    let flips: Vec<Value> = ledger
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["kind"] == "flip")
        .collect();
    assert_eq!(flips.len(), 4, "{ledger}");
    for f in &flips {
        assert_eq!(f["proof"]["by"], "verifier", "{f}");
    }
}
