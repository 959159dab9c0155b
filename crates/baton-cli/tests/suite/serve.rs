//! `baton serve`: the dashboard over plain HTTP on 127.0.0.1 (404, 405, the token),
//! and in the real Chromium through the real Playwright MCP server: the board shows
//! the features and follows the records as they change, without a reload.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

use baton_config::BrowserConfig;
use baton_mcp::{McpHub, playwright_spec};
use baton_testkit::browser::{BrowserParts, browser_parts};
use baton_tools::{ExternalTools as _, ToolOutput};
use serde_json::{Value, json};

use super::*;

/// A running `baton serve`, stopped when dropped.
pub(super) struct Serving {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub(super) addr: String,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait_bounded();
    }
}

/// `baton serve DIR --bind 127.0.0.1:0 EXTRA…` with `env`; its address, read from
/// the URL it prints on stderr.
pub(super) fn serve(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Serving {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    c.arg("serve")
        .arg(dir)
        .args(["--bind", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    // Held by `Serving` from the start, so it is killed and waited for however
    // this ends.
    let mut serving = Serving {
        child: c.spawn().unwrap(),
        addr: String::new(),
    };
    let stderr = serving.child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut said = String::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(30)) {
        said.push_str(&line);
        said.push('\n');
        if let Some(at) = line.find("http://") {
            let addr = line[at + 7..].split('/').next().unwrap().to_string();
            assert!(addr.starts_with("127.0.0.1:"), "{line}");
            serving.addr = addr;
            return serving;
        }
    }
    panic!("baton serve printed no URL: {said}");
}

/// A raw request; the status line and the body.
fn request(addr: &str, raw: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or_default().to_string(),
        body.to_string(),
    )
}

/// An events stream of `path` open on `addr`, read up to its `retry:` line;
/// what was read so far.
fn open_events(addr: &str, path: &str) -> (TcpStream, String) {
    let mut ev = TcpStream::connect(addr).unwrap();
    ev.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    ev.write_all(format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    let mut seen = String::new();
    read_until(&mut ev, &mut seen, "retry:");
    (ev, seen)
}

/// Read `ev` into `seen` until it holds `what` (each read bounded by the
/// stream's timeout).
fn read_until(ev: &mut TcpStream, seen: &mut String, what: &str) {
    let mut buf = [0u8; 1024];
    while !seen.contains(what) {
        let n = ev.read(&mut buf).unwrap();
        assert!(n > 0, "{seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

pub(super) fn get(addr: &str, path: &str) -> (String, String) {
    request(
        addr,
        &format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"),
    )
}

fn list(passing: [bool; 3]) -> String {
    let descs = [
        "A visitor can sign up with an email",
        "The greeting shows the visitor's <name>",
        "Payments go through Stripe",
    ];
    let l: Vec<Value> = descs
        .iter()
        .zip(passing)
        .map(|(d, p)| json!({"category": "functional", "description": d, "steps": ["open"], "passes": p}))
        .collect();
    serde_json::to_string_pretty(&l).unwrap()
}

fn session(n: u32, flipped: &[usize]) -> Value {
    let start = 1_736_154_000_000u64 + u64::from(n) * 3_600_000;
    json!({
        "number": n, "kind": if n == 1 { "initializer" } else { "coding" },
        "started_ms": start, "ended_ms": start + 600_000, "outcome": "completed", "turns": 12,
        "usage": {"input_tokens": 1000, "output_tokens": 200, "cache_read_tokens": 0, "cache_write_tokens": 0},
        "cost_usd": 0.25, "commits": 1,
        "timing": {"sweep_ms": 90_000, "base_check_ms": 5_000, "agent_ms": 600_000, "gates_ms": 2_000, "verifier_ms": 30_000},
        "gates": {"flipped": flipped, "unflipped": [], "violations": [], "leftover_files": [],
                  "notes_updated": true, "refusals": 0},
    })
}

/// Write the records as a session's end does: the list (the file and the accepted
/// copy), the state, the ledger's flips (each proven by its verify command), the
/// notes. With `running`, session `sessions.len() + 1` is under way on feature 2:
/// state.json says so and the run lock names a live process (this test's).
fn write_records(dir: &Path, passing: [bool; 3], sessions: &[Value], running: bool) {
    std::fs::create_dir_all(dir.join(".baton/sessions")).unwrap();
    std::fs::write(dir.join("feature_list.json"), list(passing)).unwrap();
    std::fs::write(dir.join(".baton/accepted_feature_list.json"), list(passing)).unwrap();
    let next = sessions.len() + 1;
    let in_progress = if running {
        json!({"number": next, "kind": "coding", "started_ms": 1_736_170_000_000u64, "target": 2})
    } else {
        Value::Null
    };
    let state = json!({"version": 1, "sessions": sessions, "in_progress": in_progress, "stalled": 0,
        "features": {"3": {"attempts": 1, "blocked": "needs a Stripe test key in STRIPE_KEY", "blocked_in": 2}}});
    std::fs::write(
        dir.join(".baton/state.json"),
        serde_json::to_string_pretty(&state).unwrap(),
    )
    .unwrap();
    let ledger: String = sessions
        .iter()
        .flat_map(|s| {
            let n = s["number"].clone();
            s["gates"]["flipped"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |f| {
                    json!({"t_ms": 1, "session": n, "kind": "flip", "feature": f, "detail": "",
                       "proof": {"by": "check", "command": format!("npm test -- feature-{f}")}})
                    .to_string()
                        + "\n"
                })
        })
        .collect();
    std::fs::write(dir.join(".baton/ledger.jsonl"), ledger).unwrap();
    let lock = if running {
        format!(
            "pid {}\nstarted_ms 1736170000000\ncommand baton run\n",
            std::process::id()
        )
    } else {
        String::new()
    };
    std::fs::write(dir.join(".baton/run.lock"), lock).unwrap();
    std::fs::write(
        dir.join("claude-progress.txt"),
        format!("Session {}: worked on the greeting.\n", sessions.len()),
    )
    .unwrap();
}

/// A project with a budget, one feature passing, one being worked on (a session
/// runs), one blocked, and the running session's transcript.
fn fixture() -> Project {
    let p = Project::with_toml("[run]\nbudget_usd = 5\n");
    write_records(
        p.path(),
        [true, false, false],
        &[session(1, &[]), session(2, &[1])],
        true,
    );
    let transcript = [
        json!({"t_ms": 1, "type": "assistant", "turn": 1, "content": [
            {"type": "text", "text": "I will check the greeting."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "npm test"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 1, "output_tokens": 1}, "cost_usd": 0.0}),
        json!({"t_ms": 2, "type": "tool_result", "turn": 1, "tool_use_id": "t1", "name": "Bash",
            "content": "11 passing, 1 failing", "is_error": true, "duration_ms": 5}),
    ]
    .iter()
    .map(|v| v.to_string() + "\n")
    .collect::<String>();
    std::fs::write(p.path().join(".baton/sessions/0003.jsonl"), transcript).unwrap();
    p
}

/// The records once session 3 ended with feature 2 passing.
fn session_3_ends(dir: &Path) {
    write_records(
        dir,
        [true, true, false],
        &[session(1, &[]), session(2, &[1]), session(3, &[2])],
        false,
    );
}

#[test]
fn serve_answers_get_only_and_unknown_paths_with_404() {
    let p = fixture();
    let s = serve(p.path(), &[], &[]);
    let (status, body) = get(&s.addr, "/");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.contains(r#"href="/p/0""#), "{body}");
    assert!(body.contains("1/3"), "{body}");
    let (status, body) = get(&s.addr, "/p/0");
    assert_eq!(status, "HTTP/1.1 200 OK");
    // Where the time went, baton's sweeps and proof beside the agents'.
    assert!(
        body.contains(r#"id="time-split">agents 20m 00s · sweeps 3m 00s · base checks 10s · gates 4s · proof 1m 00s</div>"#),
        "{body}"
    );
    // The project's text is escaped.
    assert!(
        body.contains("The greeting shows the visitor&#39;s &lt;name&gt;"),
        "{body}"
    );
    assert!(!body.contains("<name>"), "{body}");
    assert!(
        body.contains("blocked: needs a Stripe test key in STRIPE_KEY"),
        "{body}"
    );
    assert!(body.contains("→ Bash npm test"), "{body}");
    let (status, _) = get(&s.addr, "/p/0/board");
    assert_eq!(status, "HTTP/1.1 200 OK");
    for path in ["/nope", "/p/1", "/p/01", "/p/0/x", "/p/-1/board"] {
        assert_eq!(get(&s.addr, path).0, "HTTP/1.1 404 Not Found", "{path}");
    }
    for method in ["POST", "PUT", "DELETE"] {
        let (status, _) = request(
            &s.addr,
            &format!("{method} /p/0 HTTP/1.1\r\ncontent-length: 0\r\n\r\n"),
        );
        assert_eq!(status, "HTTP/1.1 405 Method Not Allowed", "{method}");
    }
    // A page under another name (DNS rebinding) is refused without a token.
    let (status, _) = request(
        &s.addr,
        "GET /p/0 HTTP/1.1\r\nhost: evil.example:8787\r\n\r\n",
    );
    assert_eq!(status, "HTTP/1.1 403 Forbidden");
    // At most 64 connections at once: the 65th is told so at once.
    let held: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(&s.addr).unwrap())
        .collect();
    // The server takes them in order; a request on one more answers only once all
    // 64 are taken, so ask until the answer is 503 (bounded).
    let mut status = String::new();
    for _ in 0..50 {
        status = get(&s.addr, "/").0;
        if status.contains("503") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
    drop(held);
    let mut status = String::new();
    for _ in 0..50 {
        status = get(&s.addr, "/").0;
        if status.contains("200") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(status, "HTTP/1.1 200 OK");
    // A request head past the bound is refused, not read on.
    let huge = format!("GET / HTTP/1.1\r\nx: {}\r\n\r\n", "a".repeat(20_000));
    let (status, _) = request(&s.addr, &huge);
    assert_eq!(status, "HTTP/1.1 431 Request Header Fields Too Large");
    // The events stream says when the records change.
    let (mut ev, mut seen) = open_events(&s.addr, "/p/0/events");
    assert!(seen.contains("text/event-stream"), "{seen}");
    session_3_ends(p.path());
    read_until(&mut ev, &mut seen, "event: change");
}

/// Events streams hold their connection only while their client is there: with
/// all 64 places taken by streams, the next request is turned away, and once the
/// clients leave, a page is served again (bounded wait, no timing asserted).
#[test]
fn serve_frees_an_events_streams_place_when_its_client_leaves() {
    let p = fixture();
    let s = serve(p.path(), &[], &[]);
    let streams: Vec<TcpStream> = (0..64)
        .map(|_| {
            let (ev, _) = open_events(&s.addr, "/events");
            ev
        })
        .collect();
    assert_eq!(get(&s.addr, "/").0, "HTTP/1.1 503 Service Unavailable");
    drop(streams);
    let mut status = String::new();
    for _ in 0..100 {
        status = get(&s.addr, "/").0;
        if status.contains("200") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(status, "HTTP/1.1 200 OK");
}

#[test]
fn serve_refuses_a_non_loopback_address_without_a_token_and_checks_the_token() {
    let p = fixture();
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("serve")
        .arg(p.path())
        .args(["--bind", "0.0.0.0:0"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("not a loopback address"), "{err}");
    assert!(err.contains("--token-env NAME"), "{err}");
    // A token named by a variable that is not set is an error too.
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("serve")
        .arg(p.path())
        .args([
            "--bind",
            "127.0.0.1:0",
            "--token-env",
            "BATON_TEST_NO_SUCH_VAR",
        ])
        .env_remove("BATON_TEST_NO_SUCH_VAR")
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("BATON_TEST_NO_SUCH_VAR"),
        "{}",
        stderr(&out)
    );

    let s = serve(
        p.path(),
        &["--token-env", "BATON_TEST_SERVE_TOKEN"],
        &[("BATON_TEST_SERVE_TOKEN", "s3cret/+x")],
    );
    // The token is taken out of the server's environment block once read.
    let environ = std::fs::read(format!("/proc/{}/environ", s.child.id())).unwrap();
    assert!(
        !String::from_utf8_lossy(&environ).contains("s3cret/+x"),
        "the token is still in /proc/PID/environ"
    );
    for path in [
        "/",
        "/p/0",
        "/p/0/board",
        "/p/0/events",
        "/p/0?token=wrong",
        "/nope",
    ] {
        assert_eq!(get(&s.addr, path).0, "HTTP/1.1 401 Unauthorized", "{path}");
    }
    // A token in the address is exchanged for a cookie at once and taken out of
    // the address: it never stays in links, history or a proxy's log.
    let mut c = TcpStream::connect(&s.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.write_all(
        format!(
            "GET /p/0?token=s3cret%2F%2Bx HTTP/1.1\r\nhost: {}\r\nconnection: close\r\n\r\n",
            s.addr
        )
        .as_bytes(),
    )
    .unwrap();
    let mut head = String::new();
    let _ = c.read_to_string(&mut head);
    assert!(head.starts_with("HTTP/1.1 303 See Other"), "{head}");
    assert!(head.contains("\r\nlocation: /p/0\r\n"), "{head}");
    assert!(
        head.contains("set-cookie: baton_token=s3cret%2F%2Bx; HttpOnly; SameSite=Strict; Path=/"),
        "{head}"
    );
    let (status, body) = request(
        &s.addr,
        &format!(
            "GET / HTTP/1.1\r\nhost: {}\r\ncookie: theme=dark; baton_token=s3cret%2F%2Bx\r\nconnection: close\r\n\r\n",
            s.addr
        ),
    );
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.contains(r#"href="/p/0""#), "{body}");
    assert!(!body.contains("s3cret"), "the token is in the page: {body}");
    let (status, _) = request(
        &s.addr,
        &format!(
            "GET / HTTP/1.1\r\nhost: {}\r\ncookie: baton_token=wrong\r\nconnection: close\r\n\r\n",
            s.addr
        ),
    );
    assert_eq!(status, "HTTP/1.1 401 Unauthorized");
    let (status, _) = request(
        &s.addr,
        &format!(
            "GET /p/0/board HTTP/1.1\r\nauthorization: Bearer s3cret/+x\r\nhost: {}\r\n\r\n",
            s.addr
        ),
    );
    assert_eq!(status, "HTTP/1.1 200 OK");
}

async fn call(hub: &McpHub, tool: &str, input: Value) -> ToolOutput {
    let out = hub.call(&format!("mcp__playwright__{tool}"), &input).await;
    assert!(!out.is_error, "{tool} failed: {}", out.content);
    out
}

/// The Playwright MCP server driving Chromium, on `url`.
async fn open_in_browser(parts: &BrowserParts, home: &Path, url: &str) -> std::sync::Arc<McpHub> {
    let browser = BrowserConfig {
        enabled: true,
        chromium: parts.chromium.display().to_string(),
        command: vec!["node".into(), parts.cli.display().to_string()],
    };
    let hub = McpHub::start(vec![playwright_spec(&browser, home)])
        .await
        .unwrap();
    call(&hub, "browser_navigate", json!({ "url": url })).await;
    hub
}

#[test]
fn serve_dashboard_in_real_chromium_follows_the_records_without_a_reload() {
    let Some(parts) =
        browser_parts("serve_dashboard_in_real_chromium_follows_the_records_without_a_reload")
    else {
        return;
    };
    let p = fixture();
    let s = serve(p.path(), &[], &[]);
    let browser_home = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let hub = open_in_browser(
            &parts,
            browser_home.path(),
            &format!("http://{}/p/0", s.addr),
        )
        .await;
        let snap = call(&hub, "browser_snapshot", json!({})).await.content;
        eprintln!("snapshot:\n{snap}");
        assert!(
            snap.contains("The greeting shows the visitor's <name>"),
            "{snap}"
        );
        // Feature 2 is the running session's target; none fails otherwise.
        assert!(snap.contains("In progress (1)"), "{snap}");
        assert!(snap.contains("in progress · session 3's target"), "{snap}");
        assert!(snap.contains("Failing (0)"), "{snap}");
        assert!(snap.contains("Passing (1)"), "{snap}");
        assert!(snap.contains("proven by check in session 2"), "{snap}");
        assert!(snap.contains("blocked: needs a Stripe test key"), "{snap}");
        assert!(snap.contains("of $5.00"), "{snap}");
        assert!(snap.contains("I will check the greeting."), "{snap}");
        assert!(
            snap.contains("← Bash (error): 11 passing, 1 failing"),
            "{snap}"
        );

        // `BATON_DASHBOARD_PNG=PATH` keeps a screenshot of the running project (docs/img/dashboard.png).
        let shot = call(
            &hub,
            "browser_take_screenshot",
            json!({"scale": "css", "fullPage": true}),
        )
        .await;
        assert_eq!(shot.images.len(), 1, "{}", shot.content);
        if let Some(path) = std::env::var_os("BATON_DASHBOARD_PNG") {
            use base64::Engine as _;
            let png = base64::engine::general_purpose::STANDARD
                .decode(&shot.images[0].data)
                .unwrap();
            std::fs::write(path, png).unwrap();
        }
        // A session ends: feature 2 passes. The page follows without a reload.
        session_3_ends(p.path());
        let snap = snapshot_showing(&hub, "Passing (2)").await;
        eprintln!("snapshot after:\n{snap}");
        assert!(snap.contains("Passing (2)"), "{snap}");
        assert!(snap.contains("In progress (0)"), "{snap}");
        assert!(snap.contains("Failing (0)"), "{snap}");
        assert!(snap.contains("2/3"), "{snap}");
        assert!(snap.contains("proven by check in session 3"), "{snap}");

        // The list of projects follows too: the next session starts and passes #3.
        call(
            &hub,
            "browser_navigate",
            json!({"url": format!("http://{}/", s.addr)}),
        )
        .await;
        let snap = snapshot_showing(&hub, "2/3").await;
        assert!(snap.contains("2/3"), "{snap}");
        assert!(snap.contains("idle"), "{snap}");
        write_records(
            p.path(),
            [true, true, true],
            &[
                session(1, &[]),
                session(2, &[1]),
                session(3, &[2]),
                session(4, &[3]),
            ],
            true,
        );
        let snap = snapshot_showing(&hub, "3/3").await;
        assert!(snap.contains("3/3"), "{snap}");
        assert!(snap.contains("running"), "{snap}");
        hub.shutdown().await;
    });
}

#[test]
fn serve_stops_on_ctrl_c_with_exit_0() {
    let p = fixture();
    let mut s = serve(p.path(), &[], &[]);
    assert_eq!(get(&s.addr, "/").0, "HTTP/1.1 200 OK");
    // An events stream stays open; Ctrl-C ends the server all the same.
    let mut ev = TcpStream::connect(&s.addr).unwrap();
    ev.write_all(format!("GET /p/0/events HTTP/1.1\r\nhost: {}\r\n\r\n", s.addr).as_bytes())
        .unwrap();
    // Ctrl-C, to the child this test started (by its pid) and has not waited for.
    let killed = Command::new("kill")
        .args(["-INT", &s.child.id().to_string()])
        .status_bounded()
        .unwrap();
    assert!(killed.success());
    let mut status = None;
    for _ in 0..200 {
        if let Some(st) = s.child.try_wait().unwrap() {
            status = Some(st);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(status.and_then(|st| st.code()), Some(0), "{status:?}");
}

#[test]
fn serve_board_shows_what_a_parallel_runs_agents_claimed() {
    let p = Project::new();
    // The run holds the project; its own record has no session under way, an
    // agent's working copy has one, on the feature it claimed.
    write_records(
        p.path(),
        [true, false, false],
        &[session(1, &[]), session(2, &[1])],
        true,
    );
    let mut state: Value = serde_json::from_str(&p.file(".baton/state.json")).unwrap();
    state["in_progress"] = Value::Null;
    std::fs::write(p.path().join(".baton/state.json"), state.to_string()).unwrap();
    let agent = p.path().join(".baton/agents/a1/.baton");
    std::fs::create_dir_all(&agent).unwrap();
    state["claim"] = json!(2);
    state["in_progress"] = json!({"number": 4, "kind": "coding", "started_ms": 1});
    std::fs::write(agent.join("state.json"), state.to_string()).unwrap();
    let s = serve(p.path(), &[], &[]);
    let (status, body) = get(&s.addr, "/p/0/board");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.contains("In progress (1)"), "{body}");
    assert!(body.contains("in progress · agent 1, session 4"), "{body}");
    assert!(body.contains("Failing (0)"), "{body}");
}

#[test]
fn serve_lists_several_projects_and_one_without_records() {
    let a = fixture();
    let bare = Project::new();
    // The second directory comes after --bind, as clap takes it.
    let s = serve(a.path(), &[bare.path().to_str().unwrap()], &[]);
    let (status, body) = get(&s.addr, "/");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.contains(r#"href="/p/0""#), "{body}");
    assert!(body.contains(r#"href="/p/1""#), "{body}");
    assert!(body.contains("running"), "{body}");
    assert!(body.contains("idle"), "{body}");
    let (status, body) = get(&s.addr, "/p/1");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.contains("0/0"), "{body}");
    assert!(body.contains("Failing (0)"), "{body}");
    assert_eq!(get(&s.addr, "/p/2").0, "HTTP/1.1 404 Not Found");
    let (status, body) = get(&s.addr, "/list");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.starts_with("<table>"), "{body}");
    assert!(body.contains(r#"href="/p/1""#), "{body}");
    // `/events` says when any project's records change (here the second's).
    let (mut ev, mut seen) = open_events(&s.addr, "/events");
    std::fs::write(bare.path().join("feature_list.json"), list([false; 3])).unwrap();
    read_until(&mut ev, &mut seen, "event: change");
    // A directory that is not a project is refused before serving.
    let plain = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("serve")
        .arg(plain.path())
        .args(["--bind", "127.0.0.1:0"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a baton project"),
        "{}",
        stderr(&out)
    );
}

/// Wait (bounded: about 10 s) until the page's snapshot contains `what`; the last
/// snapshot.
async fn snapshot_showing(hub: &McpHub, what: &str) -> String {
    let mut snap = String::new();
    for _ in 0..40 {
        snap = call(hub, "browser_snapshot", json!({})).await.content;
        if snap.contains(what) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    snap
}

#[test]
fn serve_dashboard_follows_a_real_scripted_run() {
    use baton_testkit::scenario::{features, honest, initializer};
    let Some(parts) = browser_parts("serve_dashboard_follows_a_real_scripted_run") else {
        return;
    };
    // Two sessions of a real `baton run`: the initializer and feature 1.
    let p = super::run::new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let (out, _) = super::run::run(&p, steps, &["--max-sessions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let s = serve(p.path(), &[], &[]);
    let browser_home = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let hub = open_in_browser(
            &parts,
            browser_home.path(),
            &format!("http://{}/p/0", s.addr),
        )
        .await;
        let snap = snapshot_showing(&hub, "Passing (1)").await;
        assert!(snap.contains("Passing (1)"), "{snap}");
        assert!(snap.contains("Failing (2)"), "{snap}");
        assert!(snap.contains("Feature 2"), "{snap}");
        // The newest transcript's tail: session 2's tool calls.
        assert!(snap.contains("./init.sh"), "{snap}");

        // One more session of the run passes feature 2; the open page follows.
        let (out, _) = super::run::run(
            &p,
            honest(2, &[true, true, false]),
            &["--max-sessions", "1"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let snap = snapshot_showing(&hub, "Passing (2)").await;
        assert!(snap.contains("Passing (2)"), "{snap}");
        assert!(snap.contains("Failing (1)"), "{snap}");
        assert!(snap.contains("2/3"), "{snap}");
        hub.shutdown().await;
    });
}
