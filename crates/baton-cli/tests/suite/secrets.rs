//! The provider keys reach no agent command: not in its environment, and not in
//! baton's own `/proc/<pid>/environ`, which a command running as the same user could
//! otherwise read.

use baton_testkit::{Reply, Step, Wire};
use serde_json::json;

use super::*;

#[test]
fn no_ancestor_of_an_agent_command_shows_the_api_key_in_proc_environ() {
    let p = Project::new();
    // A project script (the policy does not look inside it) walks up its ancestors.
    let script = "p=$PPID\nwhile [ \"$p\" -gt 1 ]; do\n  n=$(tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -c sk-test-key)\n  echo \"$p $n\"\n  p=$(awk '{print $4}' /proc/$p/stat)\ndone\ntr '\\0' '\\n' < /proc/self/environ | grep -c sk-test-key || true\n";
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tools(&[
                ("Write", json!({"file_path": "walk.sh", "content": script})),
                ("Bash", json!({"command": "bash walk.sh"})),
            ])),
            Step::Reply(Reply::text("done")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[1].body);
    let lines: Vec<&str> = r[1]
        .1
        .lines()
        .filter(|l| !l.starts_with("Exit code:"))
        .collect();
    // The key was found nowhere. Without bubblewrap at least baton itself was
    // looked at; with it, the commands' PID namespace hides every ancestor.
    if !baton_policy::sandbox::kernel_binds() {
        assert!(lines.len() >= 3, "{r:?}");
    }
    let (own, walk) = lines.split_last().expect("the script printed nothing");
    for l in walk {
        let (pid, n) = l
            .split_once(' ')
            .unwrap_or_else(|| panic!("{l:?} in {r:?}"));
        assert_eq!(n, "0", "process {pid} shows the key: {r:?}");
    }
    // The command's own environment has no key either.
    assert_eq!(
        *own, "0",
        "the command's own environment shows the key: {r:?}"
    );
    // The model still got answers: baton kept its own copy of the key.
    assert_eq!(
        server.requests()[1].header("x-api-key"),
        Some("sk-test-key")
    );
}

/// No credential broker is within an agent command's reach: the variables that
/// lead to one (an ssh agent, the session bus, a Docker daemon) are not in its
/// environment, whatever baton was started with; baton keeps them for itself.
#[test]
fn no_agent_command_sees_the_way_to_a_credential_broker() {
    let p = Project::new();
    let script = "env | grep -E '^(SSH_AUTH_SOCK|SSH_AGENT_PID|GPG_AGENT_INFO|DBUS_SESSION_BUS_ADDRESS|DOCKER_HOST|XDG_RUNTIME_DIR|KRB5CCNAME)=' || echo NONE-LEFT\n";
    let server = baton_testkit::ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tools(&[
                (
                    "Write",
                    json!({"file_path": "brokers.sh", "content": script}),
                ),
                ("Bash", json!({"command": "bash brokers.sh"})),
            ])),
            Step::Reply(Reply::text("done")),
        ],
    );
    let out = baton(&server, Wire::Anthropic)
        .env("SSH_AUTH_SOCK", "/tmp/ssh-XYZ/agent.42")
        .env("SSH_AGENT_PID", "42")
        .env("GPG_AGENT_INFO", "/run/user/0/gnupg/S.gpg-agent:0:1")
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus")
        .env("DOCKER_HOST", "unix:///run/user/0/docker.sock")
        .env("XDG_RUNTIME_DIR", "/run/user/0")
        .env("KRB5CCNAME", "FILE:/tmp/krb5cc_0")
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "do the task"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[1].body);
    assert!(r[1].1.contains("NONE-LEFT"), "{r:?}");
}
