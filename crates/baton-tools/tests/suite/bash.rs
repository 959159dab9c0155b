//! The `Bash` tool: output, exit codes, timeouts, capping, process ownership,
//! background runs, cancellation and environment scrubbing.

use std::time::{Duration, Instant};

use baton_tools::bash::{HEAD_BYTES, TAIL_BYTES};
use baton_tools::{DEFAULT_SECRET_VARS, ToolContext};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::{Project, err, eventually, ok, process_gone};

/// Generous bound for "returned well before the 30 s sleep": no tight timing.
const WELL_BEFORE_SLEEP: Duration = Duration::from_secs(20);

#[tokio::test]
async fn success_returns_output_and_exit_code_zero() {
    let p = Project::new();
    let out = p.call("Bash", json!({"command": "echo hello"})).await;
    assert_eq!(out, ok("hello\nExit code: 0"));
}

#[tokio::test]
async fn no_output_still_reports_exit_code() {
    let p = Project::new();
    let out = p
        .call(
            "Bash",
            json!({"command": "true", "description": "does nothing"}),
        )
        .await;
    assert_eq!(out, ok("Exit code: 0"));
}

#[tokio::test]
async fn output_without_trailing_newline_gets_one_before_exit_code() {
    let p = Project::new();
    let out = p.call("Bash", json!({"command": "printf abc"})).await;
    assert_eq!(out, ok("abc\nExit code: 0"));
}

#[tokio::test]
async fn stdout_and_stderr_are_interleaved_in_order() {
    let p = Project::new();
    let out = p
        .call(
            "Bash",
            json!({"command": "echo out1; echo err1 >&2; echo out2; echo err2 >&2"}),
        )
        .await;
    assert_eq!(out, ok("out1\nerr1\nout2\nerr2\nExit code: 0"));
}

#[tokio::test]
async fn non_zero_exit_is_an_error_showing_the_code() {
    let p = Project::new();
    let out = p
        .call("Bash", json!({"command": "echo oops >&2; exit 3"}))
        .await;
    assert_eq!(out, err("oops\nExit code: 3"));
}

#[tokio::test]
async fn command_killed_by_a_signal_is_an_error() {
    let p = Project::new();
    let out = p
        .call("Bash", json!({"command": "echo before; kill -9 $$"}))
        .await;
    assert_eq!(out, err("before\nCommand was killed by a signal."));
}

#[tokio::test]
async fn empty_command_is_refused() {
    let p = Project::new();
    let out = p.call("Bash", json!({"command": "   "})).await;
    assert_eq!(out, err("Bash: command is empty"));
}

#[tokio::test]
async fn runs_in_the_project_directory() {
    let p = Project::new();
    let out = p.call("Bash", json!({"command": "pwd -P"})).await;
    assert_eq!(out, ok(format!("{}\nExit code: 0", p.root.display())));
}

#[tokio::test]
async fn files_written_by_the_command_land_in_the_project() {
    let p = Project::new();
    let out = p
        .call(
            "Bash",
            json!({"command": "mkdir -p sub && echo data > sub/f.txt"}),
        )
        .await;
    assert_eq!(out, ok("Exit code: 0"));
    assert_eq!(p.read("sub/f.txt"), "data\n");
}

#[tokio::test]
async fn stdin_is_closed() {
    let p = Project::new();
    let out = p.call("Bash", json!({"command": "cat; echo done"})).await;
    assert_eq!(out, ok("done\nExit code: 0"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_the_command() {
    let p = Project::new();
    let started = Instant::now();
    let out = p
        .call("Bash", json!({"command": "sleep 30", "timeout": 300}))
        .await;
    assert!(
        started.elapsed() < WELL_BEFORE_SLEEP,
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(
        out,
        err(
            "Command timed out after 300 ms and was killed. For long-running servers use run_in_background."
        )
    );
    // The whole group was killed, so nothing of it is left running.
    assert!(
        eventually(Duration::from_secs(10), || p
            .ctx()
            .processes
            .alive()
            .is_empty())
        .await,
        "groups still alive: {:?}",
        p.ctx().processes.alive()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_keeps_output_produced_before_it() {
    let p = Project::new();
    let out = p
        .call(
            "Bash",
            json!({"command": "echo partial; sleep 30 & wait", "timeout": 1500}),
        )
        .await;
    assert!(out.is_error);
    assert!(
        out.content
            .starts_with("partial\nCommand timed out after 1500 ms"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn long_output_keeps_head_and_tail_with_omitted_marker() {
    let p = Project::new();
    let body = 50_000;
    let out = p
        .call(
            "Bash",
            json!({"command": format!("printf START; head -c {body} /dev/zero | tr '\\0' x; printf END")}),
        )
        .await;
    let total = "START".len() + body + "END".len();
    // The whole output is saved under .baton/outputs/, and the marker says where.
    let saved = out
        .content
        .split("the whole output is in ")
        .nth(1)
        .and_then(|r| r.split(':').next())
        .unwrap_or_default()
        .to_string();
    assert!(saved.starts_with(".baton/outputs/bash-"), "{saved}");
    let whole = std::fs::read_to_string(p.path(&saved)).unwrap();
    assert_eq!(whole.len(), total);
    assert!(whole.starts_with("STARTxxx") && whole.ends_with("xxxEND"));
    let expected = format!(
        "START{}\n\n... [{} bytes of output omitted; the whole output is in {saved}: search it with Grep or read parts with Read (offset, limit) instead of running the command again] ...\n\n{}END\nExit code: 0",
        "x".repeat(HEAD_BYTES - "START".len()),
        total - HEAD_BYTES - TAIL_BYTES,
        "x".repeat(TAIL_BYTES - "END".len()),
    );
    assert!(!out.is_error);
    // Compare the whole value, but keep a failure message readable.
    assert_eq!(out.content.len(), expected.len());
    assert!(
        out.content == expected,
        "output differs around the marker: {:?}",
        &out.content[HEAD_BYTES - 20..HEAD_BYTES + 60]
    );
}

#[tokio::test]
async fn output_at_the_cap_is_kept_whole() {
    let p = Project::new();
    let n = HEAD_BYTES + TAIL_BYTES;
    let out = p
        .call(
            "Bash",
            json!({"command": format!("head -c {n} /dev/zero | tr '\\0' y")}),
        )
        .await;
    assert!(
        out.content == format!("{}\nExit code: 0", "y".repeat(n)),
        "{}",
        &out.content[..80]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_job_inside_command_does_not_block_and_is_killed_by_shutdown() {
    let p = Project::new();
    let started = Instant::now();
    let out = p
        .call(
            "Bash",
            json!({"command": "sleep 30 & echo $!; echo started"}),
        )
        .await;
    assert!(
        started.elapsed() < WELL_BEFORE_SLEEP,
        "took {:?}",
        started.elapsed()
    );
    assert!(!out.is_error, "{}", out.content);
    let (pid, rest) = out.content.split_once('\n').unwrap();
    assert_eq!(rest, "started\nExit code: 0");
    let pid: i32 = pid.parse().unwrap();
    assert!(!process_gone(pid), "the background sleep should still run");

    let registry = &p.ctx().processes;
    assert_eq!(registry.alive().len(), 1);
    assert_eq!(registry.shutdown(Duration::from_secs(5)).await, 1);
    assert!(
        eventually(Duration::from_secs(10), || process_gone(pid)).await,
        "sleep {pid} survived shutdown"
    );
    assert_eq!(registry.alive(), Vec::<i32>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_all_now_stops_leftover_groups() {
    let p = Project::new();
    let out = p
        .call("Bash", json!({"command": "sleep 30 & echo $!"}))
        .await;
    let pid: i32 = out.content.lines().next().unwrap().parse().unwrap();
    p.ctx().processes.kill_all_now();
    assert!(
        eventually(Duration::from_secs(10), || process_gone(pid)).await,
        "sleep {pid} survived kill_all_now"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_in_background_writes_a_log_and_returns_at_once() {
    let p = Project::new();
    let started = Instant::now();
    let out = p
        .call(
            "Bash",
            json!({"command": "echo hello-from-bg; echo to-stderr >&2; sleep 30", "run_in_background": true}),
        )
        .await;
    assert!(
        started.elapsed() < WELL_BEFORE_SLEEP,
        "took {:?}",
        started.elapsed()
    );
    let pid: i32 = out
        .content
        .strip_prefix("Started in the background (pid ")
        .and_then(|s| s.split_once(')'))
        .map(|(pid, _)| pid.parse().unwrap())
        .unwrap_or_else(|| panic!("unexpected output: {}", out.content));
    assert_eq!(
        out,
        ok(format!(
            "Started in the background (pid {pid}). Its output goes to .baton/background/0001.log; \
             read it with Read. It keeps running after this call (baton stops it when the run or exec ends); \
             stop it yourself with `kill {pid}`."
        ))
    );

    let log = p.path(".baton/background/0001.log");
    let expected = "hello-from-bg\nto-stderr\n";
    assert!(
        eventually(Duration::from_secs(10), || {
            std::fs::read_to_string(&log).is_ok_and(|s| s == expected)
        })
        .await,
        "log: {:?}",
        std::fs::read_to_string(&log)
    );
    // The log is readable with the Read tool, as the message says.
    let read = p
        .call("Read", json!({"file_path": ".baton/background/0001.log"}))
        .await;
    assert_eq!(read, ok("     1\thello-from-bg\n     2\tto-stderr\n"));

    let registry = &p.ctx().processes;
    assert_eq!(registry.shutdown(Duration::from_secs(5)).await, 1);
    assert!(
        eventually(Duration::from_secs(10), || process_gone(pid)).await,
        "background command {pid} survived shutdown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_background_command_gets_its_own_log() {
    let p = Project::new();
    for n in 1..=2 {
        let out = p
            .call(
                "Bash",
                json!({"command": format!("echo run-{n}"), "run_in_background": true}),
            )
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content
                .contains(&format!(".baton/background/{n:04}.log")),
            "{}",
            out.content
        );
        let log = p.path(&format!(".baton/background/{n:04}.log"));
        let want = format!("run-{n}\n");
        assert!(
            eventually(Duration::from_secs(10), || {
                std::fs::read_to_string(&log).is_ok_and(|s| s == want)
            })
            .await
        );
    }
    p.ctx().processes.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_interrupts_a_running_command() {
    let p = Project::new();
    let tools = p.tools.clone();
    let started = Instant::now();
    let call = tokio::spawn(async move {
        tools
            .call("Bash", &json!({"command": "touch running; sleep 30"}))
            .await
    });
    // Cancelled once the command runs, not after a guess at how long it takes.
    let running = p.path("running");
    for _ in 0..2000 {
        if running.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(running.exists(), "the command never started");
    p.ctx().cancel.cancel();
    let out = call.await.unwrap();
    assert!(
        started.elapsed() < WELL_BEFORE_SLEEP,
        "took {:?}",
        started.elapsed()
    );
    assert!(out.is_error);
    assert!(
        out.content
            .ends_with("Command interrupted: the session is stopping."),
        "{}",
        out.content
    );
}

/// A call dropped before its command ended (the session's time limit races it)
/// takes the command's whole process group with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_call_kills_its_command() {
    let p = Project::new();
    let pid_file = p.root.join("pid");
    let input = json!({"command": "sleep 30 & echo $! > pid; wait"});
    let call = p.tools.call("Bash", &input);
    let cut = tokio::time::timeout(Duration::from_secs(20), async {
        tokio::select! {
            _ = call => panic!("the command ended by itself"),
            () = async {
                while !std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n')) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            } => {}
        }
    })
    .await;
    assert!(cut.is_ok(), "the command never wrote its pid");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        eventually(Duration::from_secs(10), || process_gone(pid)).await,
        "the command's child {pid} outlived the dropped call"
    );
}

#[tokio::test]
async fn already_cancelled_context_interrupts_at_once() {
    let p = Project::new();
    p.ctx().cancel.cancel();
    let started = Instant::now();
    let out = p.call("Bash", json!({"command": "sleep 30"})).await;
    assert!(started.elapsed() < WELL_BEFORE_SLEEP);
    assert_eq!(out, err("Command interrupted: the session is stopping."));
}

#[tokio::test]
async fn default_context_removes_provider_api_keys() {
    let ctx = ToolContext::new(std::env::temp_dir());
    assert!(
        DEFAULT_SECRET_VARS
            .iter()
            .all(|v| ctx.env_remove.iter().any(|k| k == v))
    );
    assert!(ctx.env_remove.iter().any(|k| k == "SSH_AUTH_SOCK"));
    assert!(ctx.env_remove.iter().any(|k| k == "ANTHROPIC_API_KEY"));
    assert!(ctx.env_remove.iter().any(|k| k == "OPENAI_API_KEY"));
}

#[tokio::test]
async fn env_remove_keeps_variables_from_the_command() {
    // HOME is set in the test process; the context removes it, without touching
    // this process's environment.
    assert!(std::env::var_os("HOME").is_some(), "test needs HOME set");
    let with_home = Project::new();
    let out = with_home.call("Bash", json!({"command": "env"})).await;
    assert!(
        out.content.lines().any(|l| l.starts_with("HOME=")),
        "control: HOME should reach commands by default:\n{}",
        out.content
    );

    let p = Project::with_context(|ctx| ctx.env_remove.push("HOME".to_string()));
    let out = p.call("Bash", json!({"command": "env"})).await;
    assert!(!out.is_error, "{}", out.content);
    let leaked: Vec<&str> = out
        .content
        .lines()
        .filter(|l| {
            l.starts_with("HOME=")
                || DEFAULT_SECRET_VARS
                    .iter()
                    .any(|k| l.starts_with(&format!("{k}=")))
        })
        .collect();
    assert_eq!(leaked, Vec::<&str>::new());
}
