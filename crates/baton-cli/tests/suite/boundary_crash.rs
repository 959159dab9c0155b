//! The trust boundary across a run that did not end cleanly: what the killed run's
//! agent wrote into `baton.toml` (possible only without bubblewrap) is neither
//! run nor trusted by the next command; what the user wrote where the kernel kept
//! the agent out is.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use baton_testkit::{Reply, ScriptedServer, Step};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::run::{features, honest, initializer, new_project};
use super::*;

/// A directory for programs that stand in for the user's own (a `bwrap` that
/// does not work here): outside every directory a sandboxed command can write
/// (not the temp dirs), where baton takes its helpers from.
pub(super) fn fake_bin() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// A `PATH` whose first `bwrap` does not work: baton's commands run under Landlock
/// alone, as on a machine without bubblewrap.
pub(super) fn without_bwrap(bin: &Path) -> std::ffi::OsString {
    let fake = bin.join("bwrap");
    std::fs::write(&fake, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut path = bin.as_os_str().to_owned();
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

/// Run `p` against `steps` (the last one a stall) with `path`, and kill the run
/// with SIGKILL once the model was asked for the last step: mid-session.
fn killed_mid_session(p: &Project, steps: Vec<Step>, path: &std::ffi::OsStr) {
    let asked = steps.len();
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let mut run = baton(&server, Wire::Anthropic)
        .env("PATH", path)
        .arg("run")
        .arg(p.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().len() < asked && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    run.kill().unwrap();
    run.wait_bounded().unwrap();
    assert_eq!(server.requests().len(), asked, "the run never got there");
    assert!(
        state(p)["in_progress"].is_object(),
        "killed between sessions: {}",
        state(p)
    );
}

/// The model stalls on its next turn (the run is killed meanwhile).
fn stall() -> Step {
    Step::Stall {
        reply: Reply::text("thinking"),
        events: 1,
    }
}

fn boundary_entries(p: &Project) -> Vec<String> {
    p.file(".baton/ledger.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == "boundary_violation")
        .map(|e| e["detail"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Without bubblewrap, a project script writes a `[notify] command` into
/// `baton.toml`, and the run is killed before its gates put the file back. No
/// later command runs it: `baton notify test` goes by `baton.toml` as the killed
/// run found it, and the next `baton run` puts that back before loading it, keeps
/// the changed file aside, records it and says how to keep it.
#[test]
fn a_notify_command_written_into_baton_toml_before_a_crash_never_runs() {
    let p = new_project();
    let bin = super::boundary_crash::fake_bin();
    let path = without_bwrap(bin.path());
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("pwned");
    let before = p.file("baton.toml");
    let script = format!(
        "#!/bin/sh\nprintf '\\n[notify]\\ncommand = [\"touch\", \"{}\"]\\n' >> baton.toml\necho edited\n",
        marker.display()
    );
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "scripts/notify.sh", "content": script}),
        ),
        ("Bash", json!({"command": "bash scripts/notify.sh"})),
    ])));
    steps.push(stall());
    killed_mid_session(&p, steps, &path);
    let changed = p.file("baton.toml");
    assert!(
        changed.contains("[notify]"),
        "the script did not run: {changed}"
    );

    // A command that runs the notify command goes by the file the run found.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .env("PATH", &path)
        .args(["notify", "test", p.path().to_str().unwrap()])
        .output_bounded()
        .unwrap();
    assert!(
        !marker.exists(),
        "`baton notify test` ran the agent's command"
    );
    assert!(
        stderr(&out).contains(&format!(
            "baton: warning: {}",
            "baton.toml was changed since the last run started, and that run has not ended cleanly; the agent's commands could write it then"
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(p.file("baton.toml"), changed, "only a run puts it back");

    let server = ScriptedServer::start(Wire::Anthropic, honest(1, &[true, false, false]));
    let out = baton(&server, Wire::Anthropic)
        .env("PATH", &path)
        .arg("run")
        .arg(p.path())
        .args(["--max-sessions", "1"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!marker.exists(), "the agent's notify command ran: {err}");
    assert_eq!(p.file("baton.toml"), before);
    let kept = ".baton/replaced/baton.toml.after-0002";
    assert_eq!(p.file(kept), changed);
    assert!(
        err.contains(&format!(
            "baton: baton.toml was changed after a run that did not end cleanly, while the agent's commands could write it (it was not bound read-only by bubblewrap); baton cannot tell your edit from the agent's, so it put back baton.toml as that run found it and kept the changed file as {kept}.\nbaton: if the change was yours: cp {} {}, then run baton again",
            p.path().join(kept).display(),
            p.path().join("baton.toml").display()
        )),
        "{err}"
    );
    assert_eq!(
        boundary_entries(&p),
        [format!(
            "baton.toml was changed after a run that did not end cleanly, while the agent's commands could write it; put back as that run found it (the changed file is kept as {kept})"
        )]
    );

    // The user says it was theirs: copied back, it is obeyed by the next run.
    std::fs::copy(p.path().join(kept), p.path().join("baton.toml")).unwrap();
    let server = ScriptedServer::start(Wire::Anthropic, honest(2, &[true, true, false]));
    let out = baton(&server, Wire::Anthropic)
        .env("PATH", &path)
        .arg("run")
        .arg(p.path())
        .args(["--max-sessions", "1"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(marker.exists(), "the user's own command was not obeyed");
    assert_eq!(boundary_entries(&p).len(), 1);
}

/// With bubblewrap the agent's commands cannot write `baton.toml`, so a change
/// found after a killed run is the user's: kept and obeyed.
#[test]
fn a_users_edit_of_baton_toml_after_a_crash_is_kept_where_the_kernel_kept_the_agent_out() {
    if !super::bwrap(
        "a_users_edit_of_baton_toml_after_a_crash_is_kept_where_the_kernel_kept_the_agent_out",
    ) {
        return;
    }
    let p = new_project();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tool(
        "Bash",
        json!({"command": "echo x >> baton.toml 2>&1; echo tried"}),
    )));
    steps.push(stall());
    killed_mid_session(&p, steps, &path);
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("told");
    let edited = format!(
        "{}\n[notify]\ncommand = [\"touch\", \"{}\"]\n",
        p.file("baton.toml"),
        marker.display()
    );
    std::fs::write(p.path().join("baton.toml"), &edited).unwrap();

    let server = ScriptedServer::start(Wire::Anthropic, honest(1, &[true, false, false]));
    let out = run_on(&server, Wire::Anthropic, &p, &["--max-sessions", "1"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(p.file("baton.toml"), edited);
    assert!(
        marker.exists(),
        "the user's notify command was not obeyed: {err}"
    );
    assert!(!err.contains("baton.toml was changed"), "{err}");
    assert!(!p.path().join(".baton/replaced").exists());
    assert_eq!(boundary_entries(&p), Vec::<String>::new());
}

/// `baton exec` without bubblewrap: a session's script plants a git hook and
/// rewrites baton.toml (Landlock alone cannot keep it out); after the session both
/// are as they were, and baton says so.
#[test]
fn an_exec_session_leaves_no_git_hook_or_baton_toml_change_behind() {
    let p = Project::new();
    baton_testkit::git(p.path(), &["init", "-q"]);
    let bin = super::boundary_crash::fake_bin();
    let path = without_bwrap(bin.path());
    let before = p.file("baton.toml");
    let script = "#!/bin/sh\nprintf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit\nchmod +x .git/hooks/pre-commit\nprintf '\\n[notify]\\ncommand = [\"true\"]\\n' >> baton.toml\necho planted\n";
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tools(&[
                (
                    "Write",
                    json!({"file_path": "scripts/plant.sh", "content": script}),
                ),
                ("Bash", json!({"command": "bash scripts/plant.sh"})),
            ])),
            Step::Reply(Reply::text("done")),
        ],
    );
    let out = baton(&server, Wire::Anthropic)
        .env("PATH", &path)
        .args(["exec", p.path().to_str().unwrap(), "--prompt", "go"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let r = tool_results(Wire::Anthropic, &server.requests()[1].body);
    assert!(r[1].1.contains("planted"), "the script did not run: {r:?}");
    assert!(!p.path().join(".git/hooks/pre-commit").exists(), "{err}");
    assert_eq!(p.file("baton.toml"), before);
    assert!(
        err.contains("the session changed what baton guards; put back as it was"),
        "{err}"
    );
}
