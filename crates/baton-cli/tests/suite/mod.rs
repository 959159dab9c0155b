mod boundary;
mod boundary_crash;
mod browser;
mod claude_code;
mod codex;
mod deploy;
mod endurance;
mod events;
mod exec;
mod faults;
mod git_jail;
mod grow;
mod hook;
mod issues;
mod links;
mod log;
mod new_defaults;
mod notify;
mod parallel;
mod policy;
mod proof;
mod proof_lies;
mod proof_ways;
mod reliability;
mod report;
mod run;
mod secrets;
mod serve;
mod set_aside;
mod spawner;
mod status_log;
mod verify;
mod webbench;
mod wire;

use std::path::Path;
use std::process::{Command, Output};

use baton_agent::model::Block;
use baton_agent::transcript::{self, Event, Record};
pub use baton_testkit::{Bounded, BoundedChild};
use baton_testkit::{ScriptedServer, Step, Wire};
use serde_json::Value;

/// A temp project with a fast retry policy in its baton.toml.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    pub fn new() -> Self {
        Self::with_toml("")
    }

    /// A project whose baton.toml is the fast retry policy plus `extra`.
    pub fn with_toml(extra: &str) -> Self {
        let dir = baton_testkit::temp_project().unwrap();
        let toml = format!(
            "[retry]\nmax_attempts = 6\nbase_delay_ms = 5\nmax_delay_ms = 50\nstream_idle_timeout_secs = 10\n{extra}"
        );
        // Tests of proof say so with a `[verify]` table of their own.
        std::fs::write(
            dir.path().join("baton.toml"),
            baton_testkit::trusting(&toml),
        )
        .unwrap();
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn file(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap_or_default()
    }

    /// The records of session `n`.
    pub fn transcript(&self, n: u32) -> Vec<Record> {
        let p = self.path().join(format!(".baton/sessions/{n:04}.jsonl"));
        transcript::read(&p).unwrap()
    }
}

/// `baton run DIR --max-sessions 2` against `server` (Anthropic's wire) with
/// `path` as its `PATH`, expected to stop at that limit: its output and stderr.
pub fn run_two_sessions_with_path(
    server: &ScriptedServer,
    dir: &std::path::Path,
    path: &std::ffi::OsStr,
) -> (Output, String) {
    let out = baton(server, Wire::Anthropic)
        .env("PATH", path)
        .arg("run")
        .arg(dir)
        .args(["--max-sessions", "2"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    (out, err)
}

/// `baton` with the environment pointed at `server`, speaking `wire`.
pub fn baton(server: &ScriptedServer, wire: Wire) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    for k in [
        "BATON_PROVIDER",
        "BATON_MODEL",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
    ] {
        c.env_remove(k);
    }
    match wire {
        Wire::Anthropic => {
            c.env("BATON_PROVIDER", "anthropic")
                .env("ANTHROPIC_API_KEY", "sk-test-key")
                .env("ANTHROPIC_BASE_URL", server.base_url());
        }
        Wire::OpenAi => {
            c.env("BATON_PROVIDER", "openai")
                .env("OPENAI_API_KEY", "sk-openai-test")
                .env("OPENAI_BASE_URL", server.openai_base_url());
        }
        Wire::OpenAiResponses => {
            c.env("BATON_PROVIDER", "openai-responses")
                .env("OPENAI_API_KEY", "sk-openai-test")
                .env("OPENAI_BASE_URL", server.openai_base_url());
        }
    }
    c
}

/// `baton run DIR EXTRA…` against `server` (speaking `wire`), to completion.
pub fn run_on(server: &ScriptedServer, wire: Wire, p: &Project, extra: &[&str]) -> Output {
    baton(server, wire)
        .arg("run")
        .arg(p.path())
        .args(extra)
        .output_bounded()
        .unwrap()
}

/// `baton run DIR` against `server`, in the background, its output discarded.
pub fn spawn_run(server: &ScriptedServer, p: &Project) -> std::process::Child {
    baton(server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// The same with its stderr piped, for the test to read.
pub fn spawn_run_said(server: &ScriptedServer, p: &Project) -> std::process::Child {
    baton(server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Press Ctrl-C on a running baton (SIGINT to `child`, its stderr piped) and wait
/// until it says it is stopping; its stderr goes on being read. Returns the
/// reader, whose result is all of stderr once baton closes it.
pub fn ctrl_c(child: &mut std::process::Child) -> std::thread::JoinHandle<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(pipe).lines() {
            let line = line.unwrap_or_default();
            let _ = tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status_bounded()
        .unwrap();
    assert!(kill.success());
    loop {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("baton did not say it was stopping");
        if line.contains("stopping after the current tool call") {
            break;
        }
    }
    reader
}

/// Run `baton exec` in `p` with `prompt` against a fresh server playing `steps`.
pub fn exec(p: &Project, wire: Wire, steps: Vec<Step>, extra: &[&str]) -> (Output, ScriptedServer) {
    let server = ScriptedServer::start(wire, steps);
    let out = baton(&server, wire)
        .arg("exec")
        .arg(p.path())
        .args(["--prompt", "do the task"])
        .args(extra)
        .output_bounded()
        .unwrap();
    (out, server)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What every tool call of a run on Anthropic's wire returned, in order: the
/// requests carry each result back to the model.
pub fn tool_outputs(server: &ScriptedServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .flat_map(|r| tool_results(Wire::Anthropic, &r.body))
        .map(|(_, text, _)| text)
        .collect()
}

/// Whether a process whose command line holds `needle` runs now, seen from the
/// host (whatever namespace it runs in: a command's `/tmp` is its own, so a
/// test sees its commands here rather than by a mark they leave).
pub fn process_running(needle: &str) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(needle)
            })
        })
}

/// The tool results sent back in a request, in order: (id, content, is_error).
pub fn tool_results(wire: Wire, body: &Value) -> Vec<(String, String, bool)> {
    let msgs = body["messages"].as_array().cloned().unwrap_or_default();
    match wire {
        Wire::Anthropic => {
            let last = msgs.last().cloned().unwrap_or_default();
            last["content"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| {
                    (
                        b["tool_use_id"].as_str().unwrap_or_default().to_string(),
                        b["content"].as_str().unwrap_or_default().to_string(),
                        b["is_error"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        }
        Wire::OpenAi => {
            let mut out: Vec<(String, String, bool)> = msgs
                .iter()
                .rev()
                .take_while(|m| m["role"] == "tool")
                .map(|m| {
                    let c = m["content"].as_str().unwrap_or_default().to_string();
                    let err = c.starts_with("Error: ");
                    (
                        m["tool_call_id"].as_str().unwrap_or_default().to_string(),
                        c,
                        err,
                    )
                })
                .collect();
            out.reverse();
            out
        }
        Wire::OpenAiResponses => {
            let items = body["input"].as_array().cloned().unwrap_or_default();
            let mut out: Vec<(String, String, bool)> = items
                .iter()
                .rev()
                .skip_while(|i| i["type"] != "function_call_output")
                .take_while(|i| i["type"] == "function_call_output")
                .map(|i| {
                    let c = i["output"].as_str().unwrap_or_default().to_string();
                    let err = c.starts_with("Error: ");
                    (
                        i["call_id"].as_str().unwrap_or_default().to_string(),
                        c,
                        err,
                    )
                })
                .collect();
            out.reverse();
            out
        }
    }
}

/// Check a transcript tells one consistent story: it starts and ends once, every
/// tool call of an assistant turn is answered by exactly one result, in order, before
/// the next request; nothing is answered that was not asked.
pub fn assert_consistent(records: &[Record]) {
    assert!(
        matches!(
            records.first().map(|r| &r.event),
            Some(Event::SessionStart { .. })
        ),
        "starts with session_start"
    );
    assert!(
        matches!(
            records.last().map(|r| &r.event),
            Some(Event::SessionEnd { .. })
        ),
        "ends with session_end"
    );
    let mut pending: Vec<String> = Vec::new();
    let mut last_turn = 0;
    for r in records {
        match &r.event {
            Event::Request { turn, .. } => {
                assert!(
                    pending.is_empty(),
                    "turn {turn} requested with unanswered calls {pending:?}"
                );
                assert_eq!(*turn, last_turn + 1, "turns count up by one");
                last_turn = *turn;
            }
            Event::Assistant { content, turn, .. } => {
                assert_eq!(*turn, last_turn);
                pending = content
                    .iter()
                    .filter_map(|b| match b {
                        Block::ToolUse { id, .. } => Some(id.clone()),
                        _ => None,
                    })
                    .collect();
            }
            Event::ToolResult { tool_use_id, .. } => {
                assert_eq!(
                    pending.first(),
                    Some(tool_use_id),
                    "results answer calls in order"
                );
                pending.remove(0);
            }
            _ => {}
        }
    }
    assert!(pending.is_empty(), "calls left unanswered: {pending:?}");
}

/// Count events matching `f`.
pub fn count(records: &[Record], f: impl Fn(&Event) -> bool) -> usize {
    records.iter().filter(|r| f(&r.event)).count()
}

/// The session's end event fields: (outcome, error).
pub fn end_of(records: &[Record]) -> (String, Option<String>) {
    match records.last().map(|r| &r.event) {
        Some(Event::SessionEnd { outcome, error, .. }) => (outcome.clone(), error.clone()),
        other => panic!("no session_end: {other:?}"),
    }
}

/// The page `baton report DIR -o -` writes (the command must succeed).
pub fn report_page(dir: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("report")
        .arg(dir)
        .args(["-o", "-"])
        .output_bounded()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The project's `.baton/state.json`.
pub fn state(p: &Project) -> Value {
    serde_json::from_str(&p.file(".baton/state.json")).unwrap()
}

/// The first user message of request `i`: the session's prompt and brief.
pub fn prompt_of(server: &ScriptedServer, i: usize) -> String {
    server.requests()[i].body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Whether this kernel enforces Landlock (a note is printed when it does not, and
/// the calling test skips its kernel part).
pub fn landlock(test: &str) -> bool {
    let ok = matches!(
        baton_policy::sandbox::probe(),
        baton_policy::sandbox::Support::Landlock(_)
    );
    if !ok {
        baton_testkit::skip(
            test,
            "this kernel has no Landlock (Linux 5.13 or later with it enabled)",
        );
    }
    ok
}

/// Whether bubblewrap works here (the run's namespace); a skip line where not.
pub fn bwrap(test: &str) -> bool {
    let ok = baton_policy::sandbox::kernel_binds();
    if !ok {
        baton_testkit::skip(
            test,
            "bubblewrap (bwrap) does not work here (apt-get install bubblewrap; unprivileged user namespaces)",
        );
    }
    ok
}

/// The `/proc/PID/stat` lines of running (not zombie) processes whose command line
/// is exactly `cmdline` (NUL-separated): how a test finds a server the agent
/// started, whose pid it knows only inside the sandbox's PID namespace.
pub fn running_with_command(cmdline: &[u8]) -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<u32>().ok()?;
            (std::fs::read(e.path().join("cmdline")).ok()? == cmdline).then_some(pid)
        })
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            (!stat.contains(") Z")).then_some((pid, stat))
        })
        .collect()
}

/// A home for baton that the sandbox does not let commands write: outside every
/// temp dir (which the sandbox opens), in the real home of the test's user (which
/// the sandbox neither reads nor writes once baton's `HOME` is elsewhere), else
/// beside the test binaries.
pub fn fake_home() -> tempfile::TempDir {
    let temp = |p: &Path| {
        p.starts_with("/tmp")
            || p.starts_with("/var/tmp")
            || std::env::var_os("TMPDIR").is_some_and(|t| p.starts_with(t))
    };
    let base = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .filter(|h| h.is_absolute() && h.is_dir() && !temp(h))
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")));
    assert!(
        !temp(&base),
        "no place outside the temp dirs for a fake home: {}",
        base.display()
    );
    tempfile::Builder::new()
        .prefix(".baton-test-home-")
        .tempdir_in(base)
        .unwrap()
}

/// A feature list of `n` failing features, each with one step (the agent CLIs'
/// whole-run tests).
pub fn failing_features(n: usize) -> String {
    let list: Vec<Value> = (1..=n)
        .map(|i| {
            serde_json::json!({"category": "functional", "description": format!("Feature {i}"),
                   "steps": [format!("check feature {i}")], "passes": false})
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap() + "\n"
}

/// An agent CLI for the tests: `$<var>`, else `.ci/npm/node_modules/.bin/<name>`,
/// else `<name>` on `PATH`; `None` (after a note, or a failure under `CI=true`)
/// where it is not installed.
pub fn agent_cli(test: &str, name: &str, var: &str, package: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os(var)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../.ci/npm/node_modules/.bin")
                .join(name)
        });
    if path.exists() {
        return Some(path);
    }
    if let Some(found) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|c| c.is_file())
    }) {
        return Some(found);
    }
    baton_testkit::skip(
        test,
        &format!(
            "missing the {name} CLI at {} or on PATH (npm install --prefix .ci/npm {package}, or set {var})",
            path.display()
        ),
    );
    None
}

/// A project of two features for a `--agents 2` run through an agent CLI: its
/// `baton.toml`, spec, `.gitignore` and an empty repository.
pub fn two_feature_project() -> Project {
    let p = Project::with_toml(
        "[project]\nfeatures = 2\nmin_features = 2\n[run]\npause_secs = 0\nstall_sessions = 0\n",
    );
    std::fs::write(p.path().join("app_spec.txt"), "Build a tiny app.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    baton_testkit::git(p.path(), &["init", "-q"]);
    p
}

/// `baton run DIR` with two agents, six sessions at most, quietly.
pub fn two_agents_run(dir: &str) -> [&str; 7] {
    [
        "run",
        dir,
        "--agents",
        "2",
        "--max-sessions",
        "6",
        "--quiet",
    ]
}

/// What a two-agent run of [`two_feature_project`] leaves when it finished: exit
/// 0, both agents said, both features built and merged, a clean tree.
pub fn assert_two_agents_finished(p: &Project, out: &Output) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("2 agents"), "{err}");
    for f in ["src/F01.txt", "src/F02.txt"] {
        assert!(p.path().join(f).is_file(), "{f}\n{err}");
    }
    assert_eq!(baton_testkit::git(p.path(), &["status", "--porcelain"]), "");
}

/// A session's browser screenshot was kept as evidence, as baton's own loop keeps
/// one: a PNG under `.baton/evidence/`, named by its tool result.
pub fn assert_screenshot_kept(project: &std::path::Path, t: &[baton_agent::transcript::Record]) {
    let kept: Vec<String> = t
        .iter()
        .filter_map(|r| match &r.event {
            baton_agent::transcript::Event::ToolResult { name, evidence, .. }
                if name.ends_with("browser_take_screenshot") =>
            {
                Some(evidence.clone())
            }
            _ => None,
        })
        .flatten()
        .filter(|f| f.ends_with(".png"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let png = std::fs::read(project.join(&kept[0])).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "{} is no PNG", kept[0]);
}

/// A double-forked daemon (`setsid`, out of every process group baton knows)
/// that keeps `$HOME/beat` fresh, its command line marked `beat-loop-{tag}`:
/// a session's leftover that must not outlive it. The tool calls that write it
/// as `scripts/daemon.pl` and start it; then the call that looks for it from
/// the next session.
pub fn leftover_daemon(tag: u32) -> (Vec<(&'static str, Value)>, Step) {
    let daemon = format!(
        "use POSIX ();\nexit 0 if fork;\nPOSIX::setsid();\nexit 0 if fork;\nopen STDIN, '<', '/dev/null'; open STDOUT, '>', '/dev/null'; open STDERR, '>', '/dev/null';\nexec 'sh', '-c', 'while :; do date +%s%N > \"$HOME/beat\"; sleep 0.05; done # beat-loop-{tag}';\n"
    );
    let start = vec![
        (
            "Write",
            serde_json::json!({"file_path": "scripts/daemon.pl", "content": daemon}),
        ),
        (
            "Bash",
            serde_json::json!({"command": "perl scripts/daemon.pl; sleep 0.3; cat \"$HOME/beat\" >/dev/null && echo started"}),
        ),
    ];
    // The tag is computed in the look, so the look's own command line never
    // matches it.
    let look = format!(
        "sleep 0.5; if [ -e \"$HOME/beat\" ]; then echo LEFTOVER-ALIVE; else echo home-quiet; fi; n=0; for f in /proc/[0-9]*/cmdline; do case \"$(tr '\\0' ' ' < \"$f\" 2>/dev/null)\" in *\"beat-loop-$(({} + 1))\"*) n=$((n+1));; esac; done; echo \"leftovers=$n\"",
        tag - 1
    );
    (
        start,
        Step::Reply(baton_testkit::Reply::tool(
            "Bash",
            serde_json::json!({ "command": look }),
        )),
    )
}

/// What [`leftover_daemon`]'s calls told the model: it started, and the next
/// session found neither it nor its file.
pub fn assert_no_leftover(server: &ScriptedServer) {
    let said = tool_outputs(server);
    assert!(said.iter().any(|s| s.contains("started")), "{said:?}");
    let next = said
        .iter()
        .find(|s| s.contains("leftovers="))
        .unwrap_or_else(|| panic!("{said:?}"));
    assert!(next.contains("home-quiet"), "{next}");
    assert!(next.contains("leftovers=0"), "{next}");
}
