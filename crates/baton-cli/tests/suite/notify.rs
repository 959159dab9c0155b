//! `[notify]` through the binary: a run's events reach a command and a webhook on
//! a local listener, in order and once each. (The quota, blocked, budget and
//! end-of-run events are driven in `set_aside`, next to blocking.)

use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

/// A webhook on a local listener: the bodies it was sent, in order.
pub struct Hook {
    pub url: String,
    pub bodies: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Hook {
    /// Listen on 127.0.0.1 for at most two minutes, answering 200 to every POST.
    pub fn start() -> Self {
        Self::answering(Vec::new())
    }

    /// As [`Hook::start`], but the first POSTs are answered with `statuses`, in
    /// order (each body is kept all the same).
    pub fn answering(statuses: Vec<u16>) -> Self {
        use std::io::{BufRead as _, Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = bodies.clone();
        std::thread::spawn(move || {
            let end = std::time::Instant::now() + std::time::Duration::from_secs(120);
            while std::time::Instant::now() < end {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                let mut reader = std::io::BufReader::new(stream);
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0u8; length];
                reader.read_exact(&mut body).unwrap();
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&body).into_owned());
                let n = seen.lock().unwrap().len();
                let status = statuses.get(n - 1).copied().unwrap_or(200);
                let _ = reader.get_mut().write_all(
                    format!(
                        "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    )
                    .as_bytes(),
                );
            }
        });
        Self { url, bodies }
    }
}

/// The events a command appended to `file`, one JSON object a line.
fn said(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A coding session that claims all three features without building any.
fn false_claim() -> Vec<Step> {
    vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": baton_testkit::scenario::features(&[true, true, true])}),
            ),
            (
                "Bash",
                json!({"command": "echo 'all done' >> claude-progress.txt && git commit -qam 'all done'"}),
            ),
        ])),
        Step::Reply(Reply::text("All three work.")),
    ]
}

/// The independent verifier, finding nothing behind the claims.
fn rejection() -> Vec<Step> {
    vec![
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": "ls src 2>&1 || true"}),
        )),
        Step::Reply(Reply::text(
            "{\"results\": [{\"feature\": 1, \"pass\": false, \"reason\": \"no src/ at all\"}, {\"feature\": 2, \"pass\": false, \"reason\": \"no src/ at all\"}, {\"feature\": 3, \"pass\": false, \"reason\": \"no src/ at all\"}]}",
        )),
    ]
}

/// Three coding sessions in a row whose flips the verifier rejects: the third
/// tells the person once (the agent may be claiming work it did not do), and
/// the run's end follows; command and webhook get the same, in order.
#[test]
fn three_verifier_rejected_sessions_in_a_row_are_told_once() {
    let out_dir = tempfile::tempdir().unwrap();
    let events = out_dir.path().join("events.jsonl");
    let hook = Hook::start();
    let p = Project::with_toml(&format!(
        "[project]\nfeatures = 3\nmin_features = 3\n[run]\npause_secs = 0\nstall_sessions = 9\n[verify]\nagent = true\n[notify]\ncommand = [\"sh\", \"-c\", \"cat >> {}\"]\nwebhook_env = \"BATON_TEST_WEBHOOK\"\n",
        events.display()
    ));
    let write = |rel: &str, text: &str| std::fs::write(p.path().join(rel), text).unwrap();
    write("app_spec.txt", "spec\n");
    write(".gitignore", ".baton/\n");
    write(
        "feature_list.json",
        &baton_testkit::scenario::features(&[false, false, false]),
    );
    write("claude-progress.txt", "start\n");
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-qm", "start"],
    ] {
        let o = std::process::Command::new("git")
            .args(args)
            .current_dir(p.path())
            .output_bounded()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let mut steps = Vec::new();
    for _ in 0..3 {
        steps.extend(false_claim());
        steps.extend(rejection());
    }
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton(&server, Wire::Anthropic)
        .env("BATON_TEST_WEBHOOK", &hook.url)
        .arg("run")
        .arg(p.path())
        .args(["--max-sessions", "3"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(server.remaining(), 0, "{err}");
    // Every claim was reverted: nothing passes.
    assert_eq!(
        p.file("feature_list.json"),
        baton_testkit::scenario::features(&[false, false, false])
    );
    let said = said(&events);
    let names: Vec<&str> = said.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(names, ["verifier_rejections", "run_end"], "{said:?}");
    assert_eq!(said[0]["sessions"], 3);
    // Told after the third coding session (sessions 1, 3 and 5; the verifier's
    // are 2, 4 and 6), not before.
    assert_eq!(said[0]["last_session"], 5, "{said:?}");
    assert_eq!(said[0]["features"], json!([1, 2, 3]));
    assert!(
        said[0]["text"]
            .as_str()
            .unwrap()
            .contains("the verifier rejected the flips of 3 sessions in a row"),
        "{said:?}"
    );
    assert_eq!(said[1]["exit_code"], 2);
    let posted: Vec<Value> = hook
        .bodies
        .lock()
        .unwrap()
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    assert_eq!(posted, said);
}

/// A notification command that hangs is stopped at `[notify] timeout_secs`: the
/// run says so once, records it in the notify log, ends as it would have, and
/// leaves no notifier behind (the command's own children included: its whole
/// process group goes).
#[test]
fn a_notification_command_that_hangs_is_stopped_at_its_timeout() {
    let marker = format!("baton-notify-hang-{}", std::process::id());
    let p = Project::with_toml(&format!(
        "[project]\nfeatures = 3\nmin_features = 3\n[run]\npause_secs = 0\n[notify]\ncommand = [\"bash\", \"-c\", \"(exec -a {marker} sleep 31); true\"]\ntimeout_secs = 1\n"
    ));
    std::fs::write(p.path().join("app_spec.txt"), "spec\n").unwrap();
    let server = ScriptedServer::start(
        Wire::Anthropic,
        baton_testkit::scenario::initializer(&baton_testkit::scenario::features(&[false; 3])),
    );
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .args(["--max-sessions", "1"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("took longer than 1s and was stopped"), "{err}");
    assert_eq!(err.matches("a notification failed").count(), 1, "{err}");
    let left = std::process::Command::new("pgrep")
        .args(["-f", &marker])
        .output_bounded()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&left.stdout)
    );
}

/// `baton notify test` through the binary, with the webhook URL in
/// `BATON_TEST_WEBHOOK`: its exit code and what it said.
fn notify_test(p: &Project, url: &str) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["notify", "test"])
        .arg(p.path())
        .env("BATON_TEST_WEBHOOK", url)
        .output_bounded()
        .unwrap();
    (out.status.code(), stderr(&out))
}

/// Delivery is retried where a retry can help and only there: a webhook that
/// answers 503 twice is sent the event three times and it is delivered; one
/// that answers 400 is sent it once and the error names the status; a command
/// that fails is named with its exit status, and the webhook still gets the
/// event.
#[test]
fn a_webhook_is_retried_on_server_errors_and_never_on_client_errors() {
    let toml = "[notify]\nwebhook_env = \"BATON_TEST_WEBHOOK\"\n";
    let p = Project::with_toml(toml);

    let flaky = Hook::answering(vec![503, 503]);
    let (code, err) = notify_test(&p, &flaky.url);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("the test notification was delivered"), "{err}");
    let bodies = flaky.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 3, "{bodies:?}");
    assert!(bodies.iter().all(|b| b == &bodies[0]), "{bodies:?}");

    let refusing = Hook::answering(vec![400, 400, 400]);
    let (code, err) = notify_test(&p, &refusing.url);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("webhook: HTTP 400"), "{err}");
    assert_eq!(refusing.bodies.lock().unwrap().len(), 1);

    let down = Hook::answering(vec![500, 502, 503]);
    let (code, err) = notify_test(&p, &down.url);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("(3 attempts)"), "{err}");

    let failing = Project::with_toml(&format!("{toml}command = [\"sh\", \"-c\", \"exit 3\"]\n"));
    let hook = Hook::start();
    let (code, err) = notify_test(&failing, &hook.url);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("command: sh exited with exit status: 3"),
        "{err}"
    );
    assert_eq!(
        hook.bodies.lock().unwrap().len(),
        1,
        "the webhook still got it"
    );
}
