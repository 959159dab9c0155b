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
/// lead to one (an ssh agent, the session bus, a Docker daemon) or to another of
/// the host's rendezvous points (tmux, screen, a display, an editor's socket)
/// are not in its environment, whatever baton was started with; baton keeps
/// them for itself.
#[test]
fn no_agent_command_sees_the_way_to_a_credential_broker() {
    let p = Project::new();
    let script = "env | grep -E '^(SSH_AUTH_SOCK|SSH_AGENT_PID|GPG_AGENT_INFO|DBUS_SESSION_BUS_ADDRESS|DOCKER_HOST|XDG_RUNTIME_DIR|KRB5CCNAME|TMUX|TMUX_PANE|STY|DISPLAY|VSCODE_IPC_HOOK_CLI)=' || echo NONE-LEFT\n";
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
        .env("TMUX", "/tmp/tmux-0/default,1234,0")
        .env("TMUX_PANE", "%1")
        .env("STY", "1234.pts-0.host")
        .env("DISPLAY", ":0")
        .env("VSCODE_IPC_HOOK_CLI", "/tmp/vscode-ipc-1.sock")
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "do the task"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[1].body);
    assert!(r[1].1.contains("NONE-LEFT"), "{r:?}");
}

/// No forge credential reaches an agent's command: forges' token variables are
/// not in its environment nor in any ancestor's `/proc/<pid>/environ`, whatever
/// baton was started with, and the GitHub CLI's login, git's stored credentials
/// and `.netrc` in the user's home are out of its sight. Every forge write is
/// baton's; the agent gets results, never a token.
#[test]
fn no_agent_command_sees_a_forge_credential() {
    let test = "no_agent_command_sees_a_forge_credential";
    let home = fake_home();
    let h = home.path();
    for (f, text) in [
        (
            ".config/gh/hosts.yml",
            "github.com:\n    oauth_token: gho_SECRET_GH_LOGIN\n",
        ),
        (
            ".git-credentials",
            "https://u:ghp_SECRET_GIT_CRED@github.com\n",
        ),
        (".netrc", "machine github.com password SECRET_NETRC\n"),
    ] {
        std::fs::create_dir_all(h.join(f).parent().unwrap()).unwrap();
        std::fs::write(h.join(f), text).unwrap();
    }
    let tokens = [
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "GITEA_TOKEN",
        "FORGEJO_TOKEN",
        "GITLAB_TOKEN",
        "CI_JOB_TOKEN",
    ];
    let p = Project::new();
    // Its own environment, every ancestor's, and the home's credential files, by
    // the home's real path and by `~`.
    let script = "env | grep -c SECRET_TOKEN_ || true
                  p=$PPID
                  while [ \"$p\" -gt 1 ]; do
                    tr '\\0' '\\n' < /proc/$p/environ 2>/dev/null | grep -c SECRET_TOKEN_
                    p=$(awk '{print $4}' /proc/$p/stat)
                  done
                  cat HOME/.config/gh/hosts.yml HOME/.git-credentials HOME/.netrc ~/.config/gh/hosts.yml ~/.git-credentials 2>&1
                  echo looked\n"
        .replace("HOME", &h.display().to_string());
    let server = baton_testkit::ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tools(&[
                ("Write", json!({"file_path": "look.sh", "content": script})),
                ("Bash", json!({"command": "bash look.sh"})),
            ])),
            Step::Reply(Reply::text("done")),
        ],
    );
    let mut cmd = baton(&server, Wire::Anthropic);
    for t in tokens {
        cmd.env(t, format!("SECRET_TOKEN_{t}"));
    }
    cmd.env("GH_CONFIG_DIR", h.join(".config/gh"));
    let out = cmd
        .env("HOME", h)
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "do the task"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let said = &tool_results(Wire::Anthropic, &server.requests()[1].body)[1].1;
    assert!(said.contains("looked"), "{said}");
    assert!(!said.contains("SECRET_TOKEN_"), "{said}");
    for line in said
        .lines()
        .take_while(|l| !l.starts_with("cat") && l.trim().parse::<u32>().is_ok())
    {
        assert_eq!(line.trim(), "0", "a token in an environment: {said}");
    }
    if bwrap(test) {
        for secret in ["gho_SECRET_GH_LOGIN", "ghp_SECRET_GIT_CRED", "SECRET_NETRC"] {
            assert!(!said.contains(secret), "{secret} in sight: {said}");
        }
    }
}

/// The user's home is hidden from the agent's commands by default, not masked by
/// a list: a file no list names (`~/notes/plan.txt`) and a `~/.netrc` that
/// appears while the run's namespace already stands are out of sight; the
/// toolchains (`~/.rustup`) and what `[sandbox] readable` names stay readable.
#[test]
fn the_users_home_is_hidden_but_for_toolchains_and_what_is_named() {
    if !bwrap("the_users_home_is_hidden_but_for_toolchains_and_what_is_named") {
        return;
    }
    let home = fake_home();
    let h = home.path();
    for (f, text) in [
        ("notes/plan.txt", "PRIVATE PLAN"),
        (".rustup/settings.toml", "TOOLCHAIN SETTINGS"),
        ("shared/data.txt", "SHARED DATA"),
    ] {
        std::fs::create_dir_all(h.join(f).parent().unwrap()).unwrap();
        std::fs::write(h.join(f), text).unwrap();
    }
    let p = Project::with_toml("[sandbox]\nreadable = [\"~/shared\"]\n");
    let script = "cat ~/notes/plan.txt HOME/notes/plan.txt HOME/.rustup/settings.toml HOME/shared/data.txt 2>&1\n\
                  echo LISTING; ls -a HOME 2>&1; echo LISTED\n\
                  touch started\n\
                  for i in $(seq 1 100); do if cat HOME/.netrc 2>/dev/null; then break; fi; sleep 0.05; done\n\
                  echo end\n"
        .replace("HOME", &h.display().to_string());
    // The `.netrc` appears once the command runs (its namespace stands by then).
    let started = p.path().join("started");
    let netrc = h.join(".netrc");
    let planter = std::thread::spawn(move || {
        for _ in 0..600 {
            if started.exists() {
                std::fs::write(&netrc, "machine github.com password LATE-SECRET\n").unwrap();
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        false
    });
    let said = &exec_looking(&p, &script, ("HOME", h.as_os_str()));
    // Planted while the command ran, or this test proves nothing.
    assert!(
        planter.join().unwrap(),
        "the command never started: nothing was planted\n{said}"
    );
    assert!(said.contains("end"), "{said}");
    assert!(!said.contains("PRIVATE PLAN"), "{said}");
    assert!(!said.contains("LATE-SECRET"), "{said}");
    let listing = said.split("LISTING").nth(1).unwrap_or_default();
    let listing = listing.split("LISTED").next().unwrap_or_default();
    assert!(!listing.contains("notes"), "the home's listing: {said}");
    assert!(said.contains("TOOLCHAIN SETTINGS"), "{said}");
    assert!(said.contains("SHARED DATA"), "{said}");
}

/// An ssh agent listening in `/tmp/ssh-*/agent.*` (where `ssh-agent` puts it) is
/// out of a command's sight, though `SSH_AUTH_SOCK` never reaches it: listing
/// `/tmp` would find the socket, and signing with the user's keys needs nothing
/// more than connecting to it.
#[test]
fn an_ssh_agent_socket_in_tmp_is_out_of_sight() {
    if !bwrap("an_ssh_agent_socket_in_tmp_is_out_of_sight") {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("ssh-baton-test-")
        .tempdir_in("/tmp")
        .unwrap();
    let sock = dir.path().join("agent.4242");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let p = Project::new();
    let script = format!(
        "ls -a {d} 2>&1; test -S {s} && echo SOCKET-REACHABLE; echo looked\n",
        d = dir.path().display(),
        s = sock.display()
    );
    let said = &exec_looking(&p, &script, ("SSH_AUTH_SOCK", sock.as_os_str()));
    assert!(said.contains("looked"), "{said}");
    assert!(!said.contains("agent.4242"), "{said}");
    assert!(!said.contains("SOCKET-REACHABLE"), "{said}");
}

/// `baton exec` in `p` (with `var` set) of one session that writes `script` to
/// `look.sh` and runs it; what the script printed.
fn exec_looking(p: &Project, script: &str, var: (&str, &std::ffi::OsStr)) -> String {
    let server = baton_testkit::ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tools(&[
                ("Write", json!({"file_path": "look.sh", "content": script})),
                ("Bash", json!({"command": "bash look.sh"})),
            ])),
            Step::Reply(Reply::text("done")),
        ],
    );
    let out = baton(&server, Wire::Anthropic)
        .env(var.0, var.1)
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "do the task"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[1].body);
    r[1].1.clone()
}

/// `[sandbox] writable` names a directory of the user's home the commands may
/// write (the rest of it hidden): writes land there, in the user's real directory,
/// and nowhere else of the home.
#[test]
fn a_writable_directory_of_the_home_is_written_and_nothing_else() {
    if !bwrap("a_writable_directory_of_the_home_is_written_and_nothing_else") {
        return;
    }
    let home = fake_home();
    let h = home.path();
    std::fs::create_dir_all(h.join("cache-x")).unwrap();
    std::fs::create_dir_all(h.join("other")).unwrap();
    let p = Project::with_toml("[sandbox]\nwritable = [\"~/cache-x\"]\n");
    let script = "echo cached > HOME/cache-x/entry && echo WROTE-CACHE\n\
                  echo x > HOME/other/entry 2>/dev/null && echo WROTE-OTHER\n\
                  echo looked\n"
        .replace("HOME", &h.display().to_string());
    let said = exec_looking(&p, &script, ("HOME", h.as_os_str()));
    assert!(said.contains("looked"), "{said}");
    assert!(said.contains("WROTE-CACHE"), "{said}");
    assert!(!said.contains("WROTE-OTHER"), "{said}");
    assert_eq!(
        std::fs::read_to_string(h.join("cache-x/entry")).unwrap(),
        "cached\n"
    );
    assert!(!h.join("other/entry").exists());
}
