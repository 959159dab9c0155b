//! The sandbox's spawner: one process in the run's namespace, joined and confined
//! once, starts every `Bash` command as its child (baton_policy::spawner). What a
//! command may do must be exactly what it may do when it joins the namespace
//! itself; and when the spawner is gone, commands join one by one again.

use baton_testkit::{Bounded as _, BoundedChild as _};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_config::SandboxNetwork;
use baton_policy::sandbox::{SandboxLauncher, SandboxSpec, private_home};
use baton_tools::{Launcher as _, ToolContext, ToolOutput};

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn bash(rt: &tokio::runtime::Runtime, ctx: &ToolContext, input: serde_json::Value) -> ToolOutput {
    rt.block_on(baton_tools::bash::run(
        ctx,
        serde_json::from_value(input).unwrap(),
    ))
}

fn sh(rt: &tokio::runtime::Runtime, ctx: &ToolContext, command: &str) -> ToolOutput {
    bash(rt, ctx, serde_json::json!({ "command": command }))
}

/// The pid in "Started in the background (pid N)".
fn background_pid(out: &ToolOutput) -> u32 {
    assert!(!out.is_error, "{}", out.content);
    out.content
        .split("(pid ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {}", out.content))
}

/// The parent of host process `pid` and its command line.
fn parent(pid: u32) -> (u32, String) {
    let ppid: u32 = baton_tools::process::proc_stat(pid as i32, 4).unwrap() as u32;
    let cmdline = std::fs::read(format!("/proc/{ppid}/cmdline")).unwrap();
    (ppid, String::from_utf8_lossy(&cmdline).replace('\0', " "))
}

/// Wait (up to 10 s) until the process the commands call `visible` is gone.
fn gone(launcher: &SandboxLauncher, visible: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while launcher.host_pid(visible).is_some() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn setup(project: &Path) -> (ToolContext, SandboxLauncher) {
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::write(project.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::write(project.join("baton.toml"), "").unwrap();
    let spec = SandboxSpec::new(project, &[], SandboxNetwork::Open);
    let launcher = SandboxLauncher::new(spec, Path::new(env!("CARGO_BIN_EXE_baton")));
    let mut ctx = ToolContext::new(project.to_path_buf());
    ctx.launcher = Some(Arc::new(launcher.clone()));
    ctx.env = vec![("BATON_SPAWNER_TEST".into(), "given".into())];
    (ctx, launcher)
}

#[test]
fn the_spawner_starts_each_command_confined_in_the_runs_namespace() {
    let test = "the_spawner_starts_each_command_confined_in_the_runs_namespace";
    if !super::landlock(test) || !super::bwrap(test) {
        return;
    }
    let rt = rt();
    let project = baton_testkit::temp_project().unwrap();
    let project = project.path().canonicalize().unwrap();
    let (mut ctx, launcher) = setup(&project);
    // A variable of baton's own that the commands must not get.
    let secret = std::env::vars()
        .map(|(k, _)| k)
        .find(|k| !["PATH", "HOME", "TMPDIR", "XDG_STATE_HOME"].contains(&k.as_str()))
        .unwrap();
    ctx.env_remove.push(secret.clone());

    // Two commands, one parent: the spawner, not a join per command.
    let first = background_pid(&bash(
        &rt,
        &ctx,
        serde_json::json!({"command": "sleep 300", "run_in_background": true}),
    ));
    let second = background_pid(&bash(
        &rt,
        &ctx,
        serde_json::json!({"command": "sleep 301", "run_in_background": true}),
    ));
    let (h1, h2) = (
        launcher.host_pid(first).unwrap(),
        launcher.host_pid(second).unwrap(),
    );
    let (spawner, cmdline) = parent(h1);
    assert!(
        cmdline.contains("__sandbox") && cmdline.contains("--serve"),
        "{cmdline}"
    );
    assert_eq!(parent(h2).0, spawner);

    // Its commands run in the project, with the agent's home, without the removed
    // variable, with the given one, stdin empty, and their exit codes.
    let out = sh(
        &rt,
        &ctx,
        &format!(
            "pwd; echo \"home=$HOME\"; echo \"given=$BATON_SPAWNER_TEST\"; env | grep -c '^{secret}=' ; read x; echo \"read=$?\"; ls -l /proc/$$/fd | grep -c socket; exit 3"
        ),
    );
    assert!(out.is_error, "{}", out.content);
    // No socket reaches the command (the spawner's control socket, the channels).
    let want = format!(
        "{}\nhome={}\ngiven=given\n0\nread=1\n0\n",
        project.display(),
        private_home(&project).display()
    );
    assert!(out.content.starts_with(&want), "{}", out.content);
    assert!(out.content.ends_with("Exit code: 3"), "{}", out.content);
    let killed = sh(&rt, &ctx, "kill -9 $$");
    assert!(
        killed.content.contains("killed by a signal"),
        "{}",
        killed.content
    );

    // Confined: nothing outside the project and the temp dirs is writable, the
    // protected files are read-only, and only the run's processes are in /proc.
    let outside = super::fake_home();
    let out = sh(
        &rt,
        &ctx,
        &format!(
            "echo x > {}/planted; echo x >> .git/config; echo x >> baton.toml; echo ok > mine; test -d /proc/{} || echo no-baton; test -d /proc/{spawner} || echo no-spawner",
            outside.path().display(),
            std::process::id()
        ),
    );
    assert!(!outside.path().join("planted").exists(), "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(project.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("baton.toml")).unwrap(),
        ""
    );
    assert_eq!(
        std::fs::read_to_string(project.join("mine")).unwrap(),
        "ok\n"
    );
    assert!(
        out.content.contains("no-baton\nno-spawner\n"),
        "{}",
        out.content
    );

    // A protected file replaced outside (git's lock-and-rename) is what the next
    // command sees, read-only still.
    std::fs::write(project.join(".git/config.lock"), "[core]\n\tbare = true\n").unwrap();
    std::fs::rename(
        project.join(".git/config.lock"),
        project.join(".git/config"),
    )
    .unwrap();
    let out = sh(&rt, &ctx, "cat .git/config; echo x >> .git/config");
    assert!(out.content.contains("bare = true"), "{}", out.content);
    assert_eq!(
        std::fs::read_to_string(project.join(".git/config")).unwrap(),
        "[core]\n\tbare = true\n"
    );

    // A server started with `&` outlives its command; a timeout kills the whole
    // process group of the command it ends.
    let out = sh(&rt, &ctx, "sleep 302 >/dev/null 2>&1 & echo $!");
    let server: u32 = out.content.lines().next().unwrap().trim().parse().unwrap();
    let out = bash(
        &rt,
        &ctx,
        serde_json::json!({"command": "sleep 303 & echo $!; sleep 304", "timeout": 1500}),
    );
    assert!(out.content.contains("timed out"), "{}", out.content);
    let in_group: u32 = out.content.lines().next().unwrap().trim().parse().unwrap();
    assert!(
        gone(&launcher, in_group),
        "the timed-out command's group lives on"
    );
    assert!(
        launcher.host_pid(server).is_some(),
        "the server was stopped"
    );

    // A call dropped while its command runs leaves nothing behind: dropped once
    // its command has started (its pid written), however long that takes.
    let marker = project.join("dropped.pid");
    let dropped = rt.block_on(async {
        let call = baton_tools::bash::run(
            &ctx,
            serde_json::from_value(serde_json::json!({
                "command": format!("echo $$ > {}.tmp && mv {0}.tmp {0}; exec sleep 305", marker.display())
            }))
            .unwrap(),
        );
        let started = async {
            for _ in 0..6000 {
                if marker.exists() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::select! {
            out = call => Some(out),
            () = started => None,
        }
    });
    assert!(
        dropped.is_none(),
        "the call ended before it was dropped: {dropped:?}"
    );
    let pid: u32 = std::fs::read_to_string(&marker)
        .expect("the command never started")
        .trim()
        .parse()
        .unwrap();
    assert!(
        gone(&launcher, pid),
        "a dropped call left its command running"
    );

    // The spawner gone, each command joins the namespace itself, as confined.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(spawner as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{spawner}/cmdline")).exists()
        && std::fs::read(format!("/proc/{spawner}/cmdline")).is_ok_and(|c| !c.is_empty())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let after = background_pid(&bash(
        &rt,
        &ctx,
        serde_json::json!({"command": "sleep 306", "run_in_background": true}),
    ));
    let (_, cmdline) = parent(launcher.host_pid(after).unwrap());
    assert!(
        cmdline.contains("--join") && !cmdline.contains("--serve"),
        "{cmdline}"
    );
    let out = sh(
        &rt,
        &ctx,
        &format!(
            "echo x > {}/planted; echo x >> baton.toml; echo fine",
            outside.path().display()
        ),
    );
    assert!(out.content.contains("fine"), "{}", out.content);
    assert!(!outside.path().join("planted").exists());
    assert_eq!(
        std::fs::read_to_string(project.join("baton.toml")).unwrap(),
        ""
    );
    rt.block_on(ctx.processes.shutdown(Duration::from_secs(2)));
}

/// An agent CLI's shell commands and hooks join the run's namespace one process
/// each, often several at once (Claude Code runs a hook per parallel tool call).
/// When a protected file was replaced since the last join, every one of them
/// renews its bind: they must not trip over each other's unmount and bind (one
/// failing join is a hook that failed, and Claude Code then refuses the call).
#[test]
fn joins_at_once_after_a_protected_file_was_replaced_all_succeed() {
    let test = "joins_at_once_after_a_protected_file_was_replaced_all_succeed";
    if !super::landlock(test) || !super::bwrap(test) {
        return;
    }
    let project = baton_testkit::temp_project().unwrap();
    let project = project.path().canonicalize().unwrap();
    let (_ctx, launcher) = setup(&project);
    let target = launcher.join_target().expect("the namespace starts");
    let spec = serde_json::json!({
        "join": target,
        "project": project.display().to_string(),
        "writable": [],
        "network": "open",
        "read_only": false,
        "unset": [],
    })
    .to_string();
    for round in 0..20 {
        // git's lock-and-rename, outside the sandbox.
        let text = format!("[core]\n\tbare = false\n[baton]\n\tround = {round}\n");
        std::fs::write(project.join(".git/config.lock"), &text).unwrap();
        std::fs::rename(
            project.join(".git/config.lock"),
            project.join(".git/config"),
        )
        .unwrap();
        let joins: Vec<_> = (0..12)
            .map(|_| {
                std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
                    .args(["--sandbox-shell", "cat .git/config; echo x >> .git/config"])
                    .env("BATON_SANDBOX", &spec)
                    .current_dir(&project)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for j in joins {
            let out = j.wait_with_output_bounded().unwrap();
            let said = String::from_utf8_lossy(&out.stdout);
            let err = String::from_utf8_lossy(&out.stderr);
            // The exit status too: a join that printed nothing at all (seen once
            // under a loaded CI) is told apart by how it ended.
            assert!(
                said.contains(&format!("round = {round}\n")),
                "round {round}: {:?}: {said}{err}",
                out.status
            );
            assert!(
                err.contains("Read-only file system"),
                "round {round}: {err}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(project.join(".git/config")).unwrap(),
            text
        );
    }
}

/// A command an agent CLI's shell prefix could not start is written down where
/// baton reads it (Claude Code shows a hook's stderr to nobody): here, a join of a
/// namespace whose holder is gone.
#[test]
fn a_command_the_launcher_cannot_start_is_logged_in_batons_state_dir() {
    let project = baton_testkit::temp_project().unwrap();
    let state = tempfile::tempdir().unwrap();
    let spec = serde_json::json!({
        "join": i32::MAX,
        "project": project.path().display().to_string(),
        "writable": [],
        "network": "open",
        "read_only": false,
        "unset": [],
    })
    .to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["--sandbox-shell", "echo ran"])
        .env("BATON_SANDBOX", &spec)
        .env("XDG_STATE_HOME", state.path())
        .current_dir(project.path())
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(126));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ran"));
    let logs: Vec<_> = walk(state.path())
        .into_iter()
        .filter(|p| p.ends_with(baton_agent::cli_session::LAUNCHER_LOG))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(text.contains("cannot join the run's namespace"), "{text}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
