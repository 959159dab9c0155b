//! The command policy and the OS sandbox through the real binary: `baton policy
//! check`, and `baton exec` sessions whose commands are refused or confined.

use std::process::Command;

use baton_agent::transcript::Event;
use baton_testkit::{Reply, Step, Wire};
use serde_json::{Value, json};

use super::*;

fn check(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .current_dir(dir)
        .args(["policy", "check"])
        .args(args)
        .output_bounded()
        .unwrap()
}

/// A session that runs `command` with Bash, then ends.
fn one_command(command: &str) -> Vec<Step> {
    vec![
        Step::Reply(Reply::tool("Bash", json!({ "command": command }))),
        Step::Reply(Reply::text("done")),
    ]
}

#[test]
fn policy_check_exit_codes_and_reasons() {
    let p = Project::new();
    let ok = check(p.path(), &["--", "npm test 2>&1 | tail -20 && git status"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    assert_eq!(stdout(&ok), "allowed\n");

    let bad = check(p.path(), &["--", "ls; rm -rf .git"]);
    assert_eq!(bad.status.code(), Some(1));
    let out = stdout(&bad);
    assert!(out.starts_with("refused:\n- `rm -rf .git`: "), "{out}");
    assert!(out.contains("Instead: "), "{out}");

    // Several words are joined, as a shell would pass them.
    let words = check(p.path(), &["--", "git", "-c", "core.pager=id", "log"]);
    assert_eq!(words.status.code(), Some(1));
}

#[test]
fn policy_check_json() {
    let p = Project::new();
    let out = check(p.path(), &["--json", "--", "eval \"$X\""]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["verdict"], "refused");
    assert_eq!(v["command"], "eval \"$X\"");
    assert_eq!(v["refusals"][0]["part"], "eval \"$X\"");
    assert!(
        v["refusals"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("eval")
    );
    assert!(!v["refusals"][0]["instead"].as_str().unwrap().is_empty());

    let out = check(p.path(), &["--json", "--", "cargo test"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v,
        json!({"verdict": "allowed", "command": "cargo test", "refusals": []})
    );
}

#[test]
fn policy_check_reads_the_project_config() {
    let p = Project::with_toml("[policy]\nallow = [\"hadolint\"]\ndeny = [\"curl\"]\n");
    let dir = p.path().to_str().unwrap();
    let here = tempfile::tempdir().unwrap();
    assert_eq!(
        check(here.path(), &["--dir", dir, "--", "hadolint Dockerfile"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        check(here.path(), &["--", "hadolint Dockerfile"])
            .status
            .code(),
        Some(1),
        "without --dir the defaults apply"
    );
    let out = check(
        here.path(),
        &["--dir", dir, "--", "curl http://localhost:3000"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("[policy] deny"), "{}", stdout(&out));

    let broken = Project::with_toml("[policy]\nmode = \"strict\"\n");
    let out = check(
        here.path(),
        &["--dir", broken.path().to_str().unwrap(), "--", "ls"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("baton.toml"), "{}", stderr(&out));
}

#[test]
fn refused_command_is_recorded_and_never_runs() {
    let p = Project::new();
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": "echo ran > marker.txt; eval \"echo hi\""}),
            )),
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": "echo fine > ok.txt"}),
            )),
            Step::Reply(Reply::text("done")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        !p.path().join("marker.txt").exists(),
        "no part of a refused command runs"
    );
    assert_eq!(p.file("ok.txt"), "fine\n");
    let reqs = server.requests();
    let results = tool_results(Wire::Anthropic, &reqs[1].body);
    assert!(results[0].2, "refusal is an error for the model");
    assert!(
        results[0]
            .1
            .starts_with("Refused by baton's policy: `eval \"echo hi\"`: eval: eval runs"),
        "{}",
        results[0].1
    );
    assert!(results[0].1.contains("Instead: "), "{}", results[0].1);
    let t = p.transcript(1);
    let refused: Vec<bool> = t
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolResult { refused, .. } => Some(*refused),
            _ => None,
        })
        .collect();
    assert_eq!(refused, vec![true, false]);
}

#[test]
fn policy_off_lets_everything_through() {
    let p = Project::with_toml("[policy]\nmode = \"off\"\n[sandbox]\nenabled = false\n");
    let (out, _server) = exec(
        &p,
        Wire::Anthropic,
        one_command("eval 'echo ran > marker.txt'"),
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(p.file("marker.txt"), "ran\n");
}

#[test]
fn agent_environment_has_no_api_key() {
    let p = Project::with_toml("[policy]\nsecret_env = [\"MY_DB_PASSWORD\"]\n");
    let server =
        baton_testkit::ScriptedServer::start(Wire::Anthropic, one_command("env > env.txt"));
    let out = baton(&server, Wire::Anthropic)
        .env("MY_DB_PASSWORD", "hunter2")
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "show env"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let env = p.file("env.txt");
    assert!(env.contains("PATH="), "{env}");
    assert!(!env.contains("sk-test-key"), "API key leaked: {env}");
    assert!(!env.contains("ANTHROPIC_API_KEY"), "{env}");
    assert!(
        !env.contains("hunter2"),
        "[policy] secret_env leaked: {env}"
    );
}

/// The kernel test: a script the agent wrote (allowed by the policy: it is a
/// project script) tries to write outside the project; Landlock stops it, and the
/// project stays writable.
#[test]
fn sandbox_stops_a_project_script_writing_outside() {
    if !landlock("sandbox_stops_a_project_script_writing_outside") {
        return;
    }
    let home = std::env::var("HOME").unwrap();
    let outside = tempfile::Builder::new()
        .prefix(".baton-sandbox-test-")
        .tempdir_in(&home)
        .unwrap();
    let target = outside.path().join("escaped.txt");
    let script = format!(
        "#!/bin/bash\necho escaped > {t}\necho \"write status $?\"\necho inside > inside.txt\n",
        t = target.display()
    );
    // Shown to the commands (the rest of the home is hidden from them), so the
    // write is refused, not missed.
    let p = Project::with_toml(&format!(
        "[sandbox]\nreadable = [\"{}\"]\n",
        outside.path().display()
    ));
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tool(
                "Write",
                json!({"file_path": "escape.sh", "content": script}),
            )),
            Step::Reply(Reply::tool("Bash", json!({"command": "bash escape.sh"}))),
            Step::Reply(Reply::text("done")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let result = &tool_results(Wire::Anthropic, &reqs[2].body)[0].1;
    assert!(
        !target.exists(),
        "the kernel let the script write outside: {result}"
    );
    assert!(
        result.contains("Permission denied") || result.contains("Read-only file system"),
        "{result}"
    );
    assert!(result.contains("write status 1"), "{result}");
    assert_eq!(
        p.file("inside.txt"),
        "inside\n",
        "the project stays writable"
    );
}

#[test]
fn sandbox_can_be_disabled() {
    let home = std::env::var("HOME").unwrap();
    let outside = tempfile::Builder::new()
        .prefix(".baton-sandbox-test-")
        .tempdir_in(&home)
        .unwrap();
    let target = outside.path().join("written.txt");
    let p = Project::with_toml("[sandbox]\nenabled = false\n");
    std::fs::write(
        p.path().join("w.sh"),
        format!("echo yes > {}\n", target.display()),
    )
    .unwrap();
    let (out, _server) = exec(&p, Wire::Anthropic, one_command("bash w.sh"), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "yes\n");
}

/// `[sandbox] network = "loopback"` is what it says it is: the start says so, a
/// command reaching a host that is not this machine is refused by the policy
/// with a reason, never run, and a project script that tries finds no route.
#[test]
fn network_loopback_is_said_and_curl_stays_on_this_machine() {
    let p = Project::with_toml("[sandbox]\nnetwork = \"loopback\"\n");
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        one_command("curl -fsS http://192.0.2.1/ > reached.txt"),
        &[],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("not enforced"), "{err}");
    assert!(!p.path().join("reached.txt").exists(), "the command ran");
    let results = tool_results(Wire::Anthropic, &server.requests().last().unwrap().body);
    let (_, said, refused) = &results[0];
    assert!(
        *refused && said.contains("Refused by baton's policy"),
        "{said}"
    );
}

/// Where bubblewrap is missing, inline code is refused with what the agent can
/// do (a file in the temp dir) and no advice meant for a person, in what the
/// model reads and in the transcript; the run's output tells the person how to
/// allow it.
#[test]
fn a_refusal_tells_the_agent_what_it_can_do_and_the_person_what_they_can() {
    let bin = super::boundary_crash::fake_bin();
    let path = super::boundary_crash::without_bwrap(bin.path());
    let p = Project::with_toml("");
    let server =
        baton_testkit::ScriptedServer::start(Wire::Anthropic, one_command("python3 -c 'print(1)'"));
    let out = baton(&server, Wire::Anthropic)
        .env("PATH", &path)
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "do the task"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("baton: for you: apt-get install bubblewrap"),
        "{err}"
    );
    let results = tool_results(Wire::Anthropic, &server.requests().last().unwrap().body);
    let (_, said, refused) = &results[0];
    assert!(*refused, "{said}");
    assert!(
        said.contains("Landlock without bubblewrap") && said.contains("temp dir"),
        "{said}"
    );
    for person in ["apt-get", "baton.toml", "[sandbox]"] {
        assert!(!said.contains(person), "{said}");
    }
    let sessions = p.path().join(".baton/sessions");
    for e in std::fs::read_dir(&sessions).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap_or_default();
        assert!(!text.contains("apt-get install"), "{text}");
    }
}

/// The kernel test for other processes' environments (issue #11): a sandboxed
/// project script cannot read the environment of baton or of any other process it
/// descends from (the user's shell, the test runner; with the claude-code backend,
/// the CLI holding its key), neither through `/proc/PID/environ` nor through the
/// threads' `/proc/TID/environ`: where bubblewrap works those entries are hidden;
/// without it, baton's environment is scrubbed of the keys and `secret_env`. `ps
/// eww`, which would print environments, is refused by the policy.
#[test]
fn sandboxed_commands_cannot_read_other_processes_environments() {
    if !landlock("sandboxed_commands_cannot_read_other_processes_environments") {
        return;
    }
    let kernel_hides = baton_policy::sandbox::kernel_binds();
    let planted = "planted-7f3a9c5e";
    let prompt = "look around 5c0ffee";
    let p = Project::with_toml("[policy]\nsecret_env = [\"BATON_TEST_PLANTED\"]\n");
    // This test runner is an ancestor too, with threads of its own (the scripted
    // server's among them) whose `/proc/TID` entries have higher ids than its pid.
    let runner = std::process::id();
    let runner_exe = std::env::current_exe()
        .ok()
        .and_then(|e| e.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    // Walk up from the script through every ancestor it can see, reading each one's
    // environment and its threads' (only ancestors: other tests' processes run
    // beside this one and are not what this test is about).
    let script = format!(
        "#!/bin/bash\n\
         p=$$; envs=''; seen=''\n\
         while [ \"$p\" -gt 1 ] && [ -r /proc/$p/stat ]; do\n\
           envs+=\"$(cat /proc/$p/environ /proc/$p/task/*/environ 2>/dev/null | tr '\\0' '\\n')\"$'\\n'\n\
           seen+=\"$(tr '\\0' ' ' < /proc/$p/cmdline)\"$'\\n'\n\
           p=$(awk '{{print $4}}' /proc/$p/stat)\n\
         done\n\
         echo \"count=$(grep -c {planted} <<<\"$envs\")\"\n\
         echo \"keys=$(grep -c sk-test-key <<<\"$envs\")\"\n\
         echo \"baton-seen=$(grep -c '{prompt}' <<<\"$seen\")\"\n\
         echo \"top=$p\"\n\
         echo \"sibling-seen=$(cat /proc/[0-9]*/environ /proc/[0-9]*/task/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sibling-9e1d44)\"\n\
         for n in $(seq {runner} $$); do [ -r /proc/$n/cmdline ] && tr '\\0' ' ' < /proc/$n/cmdline && echo; done > threads.txt\n\
         echo \"threads-seen=$(grep -c -- '{runner_exe}' threads.txt)\"\n"
    );
    let mut steps = peek_steps(&script);
    steps.insert(
        2,
        Step::Reply(Reply::tool("Bash", json!({"command": "ps eww"}))),
    );
    let server = baton_testkit::ScriptedServer::start(Wire::Anthropic, steps);
    // A process beside baton (not an ancestor of the script) with a secret of its
    // own, as another program of the user's would be.
    let mut sibling = std::process::Command::new("sleep")
        .arg("30")
        .env("BATON_TEST_SIBLING", "sibling-9e1d44")
        .spawn()
        .unwrap();
    let out = baton(&server, Wire::Anthropic)
        .env("BATON_TEST_PLANTED", planted)
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", prompt])
        .output_bounded()
        .unwrap();
    let _ = sibling.kill();
    let _ = sibling.wait_bounded();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let peek = &tool_results(Wire::Anthropic, &reqs[2].body)[0].1;
    assert!(
        peek.contains("count=0"),
        "the planted key was visible: {peek}"
    );
    // The provider key the test gives baton (ANTHROPIC_API_KEY) is not readable
    // either: baton scrubs its own environment block of both at start-up / session
    // start.
    assert!(
        peek.contains("keys=0"),
        "the provider key was visible: {peek}"
    );
    if kernel_hides {
        // Whatever else baton's environment holds is out of reach too: baton's
        // process (and the test runner above it) are not even visible to the script.
        assert!(
            peek.contains("baton-seen=0"),
            "baton's process was visible: {peek}"
        );
        // Nor any other process of the user's: the commands have a PID namespace of
        // their own, with a /proc that shows only them.
        assert!(
            peek.contains("sibling-seen=0"),
            "another process's environment was visible: {peek}"
        );
        // Nor are the threads of any of them, whose `/proc/TID` entries are unlisted
        // but readable: the script tries every id between the runner's and its own.
        assert!(
            peek.contains("threads-seen=0"),
            "baton's threads were visible: {peek}"
        );
    } else {
        // Only the scrubbing of baton's environment could be tested.
        super::bwrap("sandboxed_commands_cannot_read_other_processes_environments");
    }
    let ps = &tool_results(Wire::Anthropic, &reqs[3].body)[0].1;
    assert!(ps.contains("environments"), "ps eww was not refused: {ps}");
    assert!(!ps.contains(planted), "{ps}");
}

/// The secret locations of the one list are out of a project script's reach (keys,
/// cloud credentials, `.netrc`), while what `[sandbox] readable` names of the
/// user's home is readable and package caches writable, in the agent's own home:
/// Landlock refuses the rest, and in the run's namespace the home is hidden.
#[test]
fn a_project_script_cannot_read_the_secret_locations_of_home() {
    if !landlock("a_project_script_cannot_read_the_secret_locations_of_home") {
        return;
    }
    // Outside the temp dirs, which the sandbox lets commands write.
    let home = super::fake_home();
    let h = home.path();
    std::fs::create_dir_all(h.join(".ssh")).unwrap();
    std::fs::write(h.join(".ssh/id_ed25519"), "secret-ssh-4b1e\n").unwrap();
    std::fs::create_dir_all(h.join(".aws")).unwrap();
    std::fs::write(h.join(".aws/credentials"), "secret-aws-90ac\n").unwrap();
    std::fs::write(h.join(".netrc"), "secret-netrc-77f2\n").unwrap();
    std::fs::create_dir_all(h.join(".npm")).unwrap();
    std::fs::write(h.join("notes.txt"), "plain-notes\n").unwrap();
    let p = Project::with_toml("[sandbox]\nreadable = [\"~/notes.txt\"]\n");
    let script = "#!/bin/bash\n\
                  cat @HOME@/.ssh/id_ed25519 @HOME@/.aws/credentials @HOME@/.netrc 2>&1\n\
                  ls -a @HOME@/.ssh @HOME@/.aws 2>&1\n\
                  cat @HOME@/notes.txt\n\
                  mkdir -p ~/.npm && touch ~/.npm/cache-entry && echo cache-writable\n\
                  touch @HOME@/.npm/cache-entry 2>/dev/null && echo USER-HOME-WRITABLE\n"
        .replace("@HOME@", &h.display().to_string());
    let server = baton_testkit::ScriptedServer::start(Wire::Anthropic, peek_steps(&script));
    let out = baton(&server, Wire::Anthropic)
        .env("HOME", h)
        .env_remove("XDG_STATE_HOME")
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "look around"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let peek = &tool_results(Wire::Anthropic, &server.requests()[2].body)[0].1;
    for secret in ["secret-ssh-4b1e", "secret-aws-90ac", "secret-netrc-77f2"] {
        assert!(!peek.contains(secret), "{secret} was readable: {peek}");
    }
    assert!(
        peek.contains("plain-notes"),
        "what [sandbox] readable names is readable: {peek}"
    );
    assert!(
        peek.contains("cache-writable"),
        "the caches are writable: {peek}"
    );
    assert!(!peek.contains("USER-HOME-WRITABLE"), "{peek}");
}

/// A model that writes `script` to `peek.sh`, runs it, and is done.
fn peek_steps(script: &str) -> Vec<Step> {
    vec![
        Step::Reply(Reply::tool(
            "Write",
            json!({"file_path": "peek.sh", "content": script}),
        )),
        Step::Reply(Reply::tool("Bash", json!({"command": "bash peek.sh"}))),
        Step::Reply(Reply::text("done")),
    ]
}

/// The fallback where no shared PID namespace is at hand (a `BATON_SANDBOX` spec
/// without `"join"`, as for the claude-code verifier's read-only commands): the
/// command gets a bubblewrap of its own in which its ancestors, and each of their
/// threads, are hidden from `/proc`.
#[test]
fn without_the_runs_namespace_a_command_still_cannot_see_its_ancestors() {
    if !landlock("without_the_runs_namespace_a_command_still_cannot_see_its_ancestors")
        || !super::bwrap("without_the_runs_namespace_a_command_still_cannot_see_its_ancestors")
    {
        return;
    }
    let p = Project::new();
    let me = std::process::id();
    // The runner's threads as baton starts. The test harness starts a thread per
    // test, so threads born while the command runs are not known to the launcher
    // (see docs/policy.md, "Still open"); those are not counted.
    let threads: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let threads = threads.join(" ");
    let script = format!(
        "#!/bin/bash\n\
         test -r /proc/{me}/cmdline && echo runner-visible\n\
         n=0; for t in {threads}; do grep -qa all- /proc/$t/cmdline 2>/dev/null && n=$((n+1)); done\n\
         echo \"runner-threads-seen=$n\"\n\
         echo > .git/config 2>/dev/null || echo config-read-only\n"
    );
    std::fs::write(p.path().join("peek.sh"), script).unwrap();
    let spec = json!({
        "project": p.path().canonicalize().unwrap(),
        "writable": [], "network": "open", "read_only": false, "unset": [],
    });
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["--sandbox-shell", "bash peek.sh"])
        .env("BATON_SANDBOX", spec.to_string())
        .current_dir(p.path())
        .output_bounded()
        .unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(!text.contains("runner-visible"), "{text}");
    assert!(text.contains("runner-threads-seen=0"), "{text}");
    assert!(text.contains("config-read-only"), "{text}");
}

/// `pkill` in the run's namespace chooses processes by name; the namespace's
/// holder was a `cat`, and `pkill -x cat` ended it and with it every server of
/// the run. The holder is now the namespace's pid 1, which no signal sent from
/// inside reaches: after `pkill -x cat`, `pkill -f` of the holder and `kill -9 1`,
/// the server the session started still runs.
#[test]
fn pkill_in_the_namespace_cannot_end_its_holder() {
    if !super::bwrap("pkill_in_the_namespace_cannot_end_its_holder") {
        return;
    }
    let p = Project::new();
    let script =
        "pkill -x cat; pkill -f '__ho[l]d'; pkill -f 'ca[t]'; kill -9 1; sleep 0.3; echo killed\n";
    let (out, server) = exec(
        &p,
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tools(&[
                (
                    "Bash",
                    json!({"command": "sleep 3007", "run_in_background": true}),
                ),
                ("Write", json!({"file_path": "k.sh", "content": script})),
            ])),
            Step::Reply(Reply::tool("Bash", json!({"command": "bash k.sh"}))),
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": "pgrep -x sleep >/dev/null && echo server-alive || echo server-gone"}),
            )),
            Step::Reply(Reply::text("done")),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let reqs = server.requests();
    let killed = &tool_results(Wire::Anthropic, &reqs[2].body)[0].1;
    assert!(
        killed.contains("killed") && !killed.contains("efused"),
        "{killed}"
    );
    eprintln!("KILLED: {killed}");
    let after = &tool_results(Wire::Anthropic, &reqs[3].body)[0].1;
    assert!(after.contains("server-alive"), "{killed}\n{after}");
}
