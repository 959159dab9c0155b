//! The policy as the agent loop's gate, and the `[policy]` settings.

use std::sync::Arc;

use baton_config::{PolicyConfig, PolicyMode};
use baton_policy::{Policy, SessionGuard};
use baton_tools::{GateDecision, ProcessRegistry, ToolGate};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::project;

#[test]
fn bash_refusals_reach_the_model_with_part_reason_and_instead() {
    let (_dir, policy) = project();
    let gate: &dyn ToolGate = &policy;
    assert_eq!(
        gate.check("Bash", &json!({"command": "npm test && git status"})),
        GateDecision::Allow
    );
    let GateDecision::Refuse(msg) = gate.check("Bash", &json!({"command": "ls; rm -rf .git"}))
    else {
        panic!("allowed");
    };
    assert!(msg.starts_with("`rm -rf .git`: "), "{msg}");
    assert!(
        msg.contains(".git/, which only git and baton may change"),
        "{msg}"
    );
    assert!(msg.contains("Instead: "), "{msg}");
}

#[test]
fn reads_of_secret_locations_are_refused_and_other_tools_pass() {
    let (dir, policy) = project();
    let home = std::env::var("HOME").unwrap();
    let gate: &dyn ToolGate = &policy;
    assert!(matches!(
        gate.check("Read", &json!({"file_path": format!("{home}/.ssh/id_rsa")})),
        GateDecision::Refuse(_)
    ));
    assert!(matches!(
        gate.check("Read", &json!({"file_path": "/etc/shadow"})),
        GateDecision::Refuse(_)
    ));
    assert_eq!(
        gate.check("Read", &json!({"file_path": "package.json"})),
        GateDecision::Allow
    );
    // A symlink in the project pointing at a secret is followed.
    std::os::unix::fs::symlink("/etc/shadow", dir.path().join("innocent.txt")).unwrap();
    assert!(matches!(
        gate.check("Read", &json!({"file_path": "innocent.txt"})),
        GateDecision::Refuse(_)
    ));
    assert_eq!(
        gate.check("Write", &json!({"file_path": "/etc/x", "content": ""})),
        GateDecision::Allow,
        "write confinement belongs to the tool itself"
    );
}

#[test]
fn mode_off_allows_everything() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = PolicyConfig {
        mode: PolicyMode::Off,
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&cfg, dir.path()).unwrap();
    assert!(policy.check("rm -rf .git; eval x").is_allowed());
    assert!(!policy.enforcing());
}

#[test]
fn allow_deny_and_package_lists_come_from_config() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = PolicyConfig {
        allow: vec!["docker".into(), "shellcheck".into()],
        deny: vec!["curl".into()],
        npx_packages: vec!["cowsay".into()],
        dev_server_names: vec!["my-server".into()],
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&cfg, dir.path()).unwrap();
    assert!(policy.check("shellcheck init.sh").is_allowed());
    assert!(policy.check("docker ps").is_allowed());
    let v = policy.check("curl -s http://localhost:3000");
    assert!(v.message().contains("[policy] deny"), "{}", v.message());
    assert!(policy.check("npx cowsay hi").is_allowed());
    // Names never select processes to kill, even listed ones (issue #11).
    assert!(!policy.check("pkill -f my-server").is_allowed());
    // Validators still apply to allowed names that have them.
    assert!(!policy.check("git -c x=y log").is_allowed());
}

#[test]
fn bad_config_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = PolicyConfig {
        allow: vec!["rm -rf".into()],
        ..PolicyConfig::default()
    };
    let err = Policy::new(&cfg, dir.path()).unwrap_err().to_string();
    assert!(err.contains("[policy] allow"), "{err}");
}

#[test]
fn kill_is_allowed_for_processes_of_this_run_only() {
    let (dir, policy) = project();
    let registry = Arc::new(ProcessRegistry::new());
    let policy = policy.with_processes(registry.clone());
    use std::os::unix::process::CommandExt as _;
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(
        !policy.check(&format!("kill {pid}")).is_allowed(),
        "not adopted yet"
    );
    registry.adopt(pid);
    assert!(policy.check(&format!("kill {pid}")).is_allowed());
    assert!(policy.check(&format!("kill -TERM -{pid}")).is_allowed());
    // This test process is neither this run's nor a dev server.
    let me = std::process::id();
    assert!(!policy.check(&format!("kill {me}")).is_allowed());
    // A pid file is not trusted: the command could rewrite it before kill reads it.
    std::fs::write(dir.path().join("server.pid"), format!("{pid}\n")).unwrap();
    assert!(!policy.check("kill $(cat server.pid)").is_allowed());
    // Matching by name reaches processes this run did not start.
    assert!(!policy.check("pkill -f sleep").is_allowed());
    assert!(!policy.check("kill $(pgrep -f sleep)").is_allowed());
    child.kill().unwrap();
    baton_testkit::BoundedChild::wait_bounded(&mut child).unwrap();
}

#[test]
fn verdicts_serialize_for_json_output() {
    let (_dir, policy) = project();
    let v = serde_json::to_value(policy.check("eval x")).unwrap();
    assert_eq!(v["verdict"], "refused");
    assert_eq!(v["refusals"][0]["part"], "eval x");
    assert!(v["refusals"][0]["instead"].as_str().unwrap().len() > 5);
    let v = serde_json::to_value(policy.check("ls")).unwrap();
    assert_eq!(v, json!({"verdict": "allowed"}));
}

#[test]
fn remotes_allowed_in_config_may_be_reached_but_never_forced() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = PolicyConfig {
        remotes: vec!["origin".into(), "https://github.com/me/".into()],
        ..PolicyConfig::default()
    };
    let policy = Policy::new(&cfg, dir.path()).unwrap();
    for ok in [
        "git push origin main",
        "git push -u origin feature/auth",
        "git pull --rebase",
        "git fetch origin",
        "git clone https://github.com/me/lib.git vendor/lib",
        "npm install git+https://github.com/me/pkg.git",
        "git remote add mine https://github.com/me/x.git",
    ] {
        let v = policy.check(ok);
        assert!(v.is_allowed(), "{ok}: {}", v.message());
    }
    for bad in [
        "git push --force origin main",
        "git push origin +main",
        "git push origin :main",
        "git push --delete origin main",
        "git push upstream main",
        "git fetch https://github.com/other/x.git",
        "git clone https://github.com/mean/x.git",
        "git fetch --all",
    ] {
        assert!(!policy.check(bad).is_allowed(), "{bad}");
    }
}

#[test]
fn the_session_guard_tells_the_policy_whether_bubblewrap_is_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::path::Path::new("/bin/true");
    let off = baton_config::SandboxConfig {
        enabled: false,
        ..baton_config::SandboxConfig::default()
    };
    let mut ctx = baton_tools::ToolContext::new(dir.path().to_path_buf());
    let guard = SessionGuard::new(&mut ctx, &PolicyConfig::default(), &off, exe).unwrap();
    assert!(!guard.policy.bubblewrap(), "no sandbox, no bubblewrap");
    assert!(!guard.policy.check("python3 -c 1").is_allowed());

    let on = baton_config::SandboxConfig::default();
    let mut ctx = baton_tools::ToolContext::new(dir.path().to_path_buf());
    let guard = SessionGuard::new(&mut ctx, &PolicyConfig::default(), &on, exe).unwrap();
    let landlock = matches!(
        baton_policy::sandbox::probe(),
        baton_policy::sandbox::Support::Landlock(_)
    );
    let expected = landlock && baton_policy::sandbox::kernel_binds();
    assert_eq!(guard.policy.bubblewrap(), expected);
    assert_eq!(guard.policy.check("python3 -c 1").is_allowed(), expected);
}

#[test]
fn with_bubblewrap_allows_what_the_sandbox_bounds_and_nothing_else() {
    let (_dir, policy) = project();
    let policy = policy.with_bubblewrap(true);
    assert!(policy.bubblewrap());
    for ok in [
        "python3 -c 'print(1)'",
        "pkill -f vite",
        "git push origin main",
    ] {
        assert!(policy.check(ok).is_allowed(), "{ok}");
    }
    let policy = policy.with_bubblewrap(false);
    for bad in [
        "python3 -c 'print(1)'",
        "pkill -f vite",
        "git push origin main",
    ] {
        // The agent is told the fact it can act on; what a person can do
        // (install bubblewrap) is for the run's output, not the agent.
        let v = policy.check(bad);
        assert!(
            v.message().contains(baton_policy::BUBBLEWRAP_HINT),
            "{bad}: {}",
            v.message()
        );
        assert!(!v.message().contains("apt-get"), "{bad}: {}", v.message());
    }
}

#[test]
fn remotes_are_those_of_the_repository_when_the_policy_was_made() {
    let (dir, policy) = project();
    let policy = policy.with_bubblewrap(true);
    assert!(policy.check("git push upstream main").is_allowed());
    // A remote added later (bubblewrap keeps .git/config read-only for the
    // commands; baton's snapshot puts it back) is not one the user configured.
    let config = dir.path().join(".git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[remote \"late\"]\n\turl = https://evil.example/x.git\n");
    std::fs::write(&config, text).unwrap();
    assert!(!policy.check("git push late main").is_allowed());
    // The harness may give the remotes it recorded when the run started.
    let policy = policy.with_repository_remotes(vec!["origin".into()]);
    assert!(policy.check("git push origin main").is_allowed());
    assert!(!policy.check("git push upstream main").is_allowed());

    // A worktree: `.git` is a file naming the git dir, whose commondir holds the
    // configuration.
    let main = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(main.path().join(".git/worktrees/wt")).unwrap();
    std::fs::write(
        main.path().join(".git/config"),
        "[remote \"origin\"]\n\turl = https://github.com/me/app.git\n",
    )
    .unwrap();
    std::fs::write(main.path().join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
    let wt = tempfile::tempdir().unwrap();
    std::fs::write(
        wt.path().join(".git"),
        format!(
            "gitdir: {}\n",
            main.path().join(".git/worktrees/wt").display()
        ),
    )
    .unwrap();
    let policy = Policy::new(&PolicyConfig::default(), wt.path())
        .unwrap()
        .with_bubblewrap(true);
    assert!(policy.check("git pull origin main").is_allowed());
    assert!(!policy.check("git pull evil main").is_allowed());
}
