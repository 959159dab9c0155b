//! One run per project, and records that a second process or a crash cannot make
//! drift.

use std::time::Duration;

use baton_testkit::{ScriptedServer, Wire};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::run::{features, honest, initializer, new_project};
use super::*;

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..200 {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

#[test]
fn a_second_run_on_a_project_is_refused_at_once_and_the_first_is_intact() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    steps.extend(honest(2, &[true, true, false]));
    steps.extend(honest(3, &[true, true, true]));
    // The model thinks a while, so the first run is still going when the second starts.
    let server = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(300))
        .start(steps);
    let first = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lock = p.path().join(".baton/run.lock");
    wait_for("the first run's lock", || {
        std::fs::read_to_string(&lock).is_ok_and(|t| t.contains("pid "))
    });
    let second = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .output()
        .unwrap();
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("another baton run (pid {}", first.id())),
        "{err}"
    );
    assert!(
        err.contains("`baton status`, `log` and `report` work meanwhile"),
        "{err}"
    );
    // Status works while the run holds the lock.
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", p.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", stderr(&status));
    let out = first.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(server.remaining(), 0);
    // One consistent record: sessions 1..4, each once, the lock released.
    let s = state(&p);
    let numbers: Vec<Value> = s["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["number"].clone())
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4]);
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), "");
}

#[test]
fn a_killed_runs_lock_is_taken_over_with_a_note() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(500))
        .start(steps);
    let mut first = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let lock = p.path().join(".baton/run.lock");
    wait_for("the first run's lock", || {
        std::fs::read_to_string(&lock).is_ok_and(|t| t.contains("pid "))
    });
    first.kill().unwrap();
    first.wait().unwrap();
    // The next run takes the lock at once and says whose it was.
    let server2 = ScriptedServer::start(Wire::Anthropic, vec![]);
    let out = baton(&server2, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .args(["--max-sessions", "0"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains(&format!("the lock of baton run (pid {}", first.id())),
        "{err}"
    );
    assert!(err.contains("taking over"), "{err}");
}

/// Whether process `pid` exists and is not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().chars().next())
        })
        .is_some_and(|state| state.is_some_and(|c| c != 'Z'))
}

#[test]
fn processes_a_killed_run_left_are_stopped_by_the_next_run() {
    let p = new_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(baton_testkit::Step::Reply(baton_testkit::Reply::tool(
        "Bash",
        serde_json::json!({"command": "sleep 600", "run_in_background": true}),
    )));
    steps.push(baton_testkit::Step::Reply(baton_testkit::Reply::text(
        "waiting",
    )));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(700))
        .start(steps);
    let mut first = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The coding session started a server; kill -9 the run while the model thinks.
    let transcript = p.path().join(".baton/sessions/0002.jsonl");
    let mut pid = 0u32;
    wait_for("the background process", || {
        let t = std::fs::read_to_string(&transcript).unwrap_or_default();
        if let Some(rest) = t.split("Started in the background (pid ").nth(1) {
            pid = rest.split(')').next().unwrap().parse().unwrap();
            return true;
        }
        false
    });
    first.kill().unwrap();
    first.wait().unwrap();
    assert!(running(pid), "the server outlived the killed run");
    // The next run stops it before anything else, and says so.
    let server2 = ScriptedServer::start(Wire::Anthropic, honest(1, &[true, false, false]));
    let out = baton(&server2, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .args(["--max-sessions", "1"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("stopped 1 process group(s) left running by an earlier run"),
        "{err}"
    );
    wait_for("the leftover to be gone", || !running(pid));
    assert!(
        !p.path().join(".baton/processes").exists(),
        "the record is cleared at the end"
    );
}
