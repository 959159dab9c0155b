//! `baton run --agents N` through the binary: the real command policy and OS
//! sandbox in every agent's working copy, the scripted model answering several
//! sessions at once.

use std::time::Duration;

use baton_testkit::scenario::parallel::{initializer, is_for, list, session};
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::Value;

use super::run::git;
use super::*;

#[test]
fn agents_in_working_copies_of_their_own_finish_a_project_through_the_binary() {
    let p = Project::with_toml(
        "[project]\nfeatures = 4\nmin_features = 4\n[run]\npause_secs = 0\nagents = 2\n",
    );
    std::fs::write(p.path().join("app_spec.txt"), "Build a tiny app.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    git(&p, &["init", "-q"]);
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(Duration::from_millis(20));
    for n in 1..=4 {
        let shared = n > 3;
        b = b.when(move |r| is_for(r, n), session(n, shared));
    }
    // The agent of feature 1 also checks who it is and where it may listen.
    let server = b.start(initializer(&list(3, 1)));
    let out = baton(&server, Wire::Anthropic)
        .args(["run", "--quiet"])
        .arg(p.path())
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("2 agents"), "{err}");
    // Every feature passes on the main branch, with each feature's work.
    let status = baton(&server, Wire::Anthropic)
        .args(["status", "--json"])
        .arg(p.path())
        .output_bounded()
        .unwrap();
    let s: Value = serde_json::from_str(&stdout(&status)).unwrap();
    assert_eq!(s["passing"], 4, "{s}");
    for f in ["src/F01.txt", "src/F02.txt", "src/F03.txt"] {
        assert!(p.path().join(f).is_file(), "{f}");
    }
    assert_eq!(git(&p, &["status", "--porcelain"]), "");
    // The working copies are clones with a .git of their own (not worktrees of
    // the project's), on branches of their own.
    for k in ["a1", "a2"] {
        let copy = p.path().join(".baton/agents").join(k);
        assert!(copy.join(".git").is_dir(), "{k}");
    }
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join(".baton/state.json")).unwrap())
            .unwrap();
    let agents: Vec<u64> = state["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["agent"].as_u64())
        .collect();
    assert_eq!(agents.len(), 4, "{state}");
    assert!(agents.contains(&1) && agents.contains(&2), "{agents:?}");
    // What the agents bought: their sessions' time against the time any ran, in
    // the status (text and JSON) and the report.
    let par = &s["parallel"];
    assert_eq!(par["agents"], 2, "{s}");
    assert_eq!(par["sessions"], 4, "{s}");
    let (session, wall) = (
        par["session_secs"].as_f64().unwrap(),
        par["wall_secs"].as_f64().unwrap(),
    );
    assert!(wall > 0.0 && session >= wall, "{par}");
    assert!(
        (par["speed_up"].as_f64().unwrap() - session / wall).abs() < 1e-6,
        "{par}"
    );
    let text = baton(&server, Wire::Anthropic)
        .arg("status")
        .arg(p.path())
        .output_bounded()
        .unwrap();
    assert!(
        stdout(&text).contains("agents    2 agents · 4 sessions · "),
        "{}",
        stdout(&text)
    );
    let report = baton(&server, Wire::Anthropic)
        .arg("report")
        .arg(p.path())
        .args(["-o", "-"])
        .output_bounded()
        .unwrap();
    assert!(report.status.success(), "{}", stderr(&report));
    assert!(
        stdout(&report).contains(r#"<span id="speed-up">2 agents: "#),
        "no speed-up in the report"
    );
}

/// Two worker processes on two "machines" (two clones) sharing nothing but a bare
/// repository on disk: one runs the initializer, both take features, and the
/// remote's main branch ends with every feature passing.
#[test]
fn two_worker_processes_share_a_bare_remote_and_finish_the_project() {
    let root = baton_testkit::temp_project().unwrap();
    let root = root.path().canonicalize().unwrap();
    let (bare, workers) = baton_testkit::scenario::bare_remote(&root, 4, &["m1", "m2"]);
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(Duration::from_millis(30));
    for n in 1..=4 {
        b = b.when(move |r| is_for(r, n), session(n, false));
    }
    let server = b.start(initializer(&list(4, 0)));
    let mut children = Vec::new();
    for w in &workers {
        children.push(
            baton(&server, Wire::Anthropic)
                .args(["run", "--quiet", "--remote", bare.to_str().unwrap()])
                .arg(w)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        );
    }
    // Both end by themselves, or the test fails (never hangs the suite): a
    // worker that handed out session after session for ever did once.
    let deadline = std::time::Instant::now() + ENDS_BY_ITSELF;
    while children.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
        if std::time::Instant::now() > deadline {
            for c in &mut children {
                let _ = c.kill();
            }
            panic!("a worker was still running after {ENDS_BY_ITSELF:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let outs: Vec<std::process::Output> = children
        .into_iter()
        .map(|c| c.wait_with_output_bounded().unwrap())
        .collect();
    for o in &outs {
        assert!(o.status.success(), "{}", stderr(o));
    }
    let (check, text) = baton_testkit::scenario::remote_main(&root, &bare);
    let list: Value = serde_json::from_str(&text).unwrap();
    assert!(
        list.as_array().unwrap().iter().all(|f| f["passes"] == true),
        "{text}"
    );
    for f in ["src/F01.txt", "src/F02.txt", "src/F03.txt", "src/F04.txt"] {
        assert!(check.join(f).is_file(), "{f}");
    }
    // One initializer between the two machines.
    let inits = outs
        .iter()
        .filter(|o| stderr(o).contains("initializer · completed"))
        .count();
    assert_eq!(inits, 1, "{}\n---\n{}", stderr(&outs[0]), stderr(&outs[1]));
}

/// How long a run that ends by itself may take here before the test calls it a
/// spin: far more than it needs, so this is no timing assertion.
const ENDS_BY_ITSELF: Duration = Duration::from_secs(120);

/// `baton run DIR --agents 2 EXTRA…` against `server`; its exit code and
/// stderr, or a panic if it is still running after [`ENDS_BY_ITSELF`] (then
/// killed).
fn run_bounded(server: &ScriptedServer, p: &Project, extra: &[&str]) -> (Option<i32>, String) {
    run_agents(server, p, 2, extra)
}

/// [`run_bounded`] with `agents` agents.
fn run_agents(
    server: &ScriptedServer,
    p: &Project,
    agents: u32,
    extra: &[&str],
) -> (Option<i32>, String) {
    let log = p.path().join("..").join(format!(
        "{}-stderr.log",
        p.path().file_name().unwrap().to_string_lossy()
    ));
    let mut child = baton(server, Wire::Anthropic)
        .args(["run", "--agents", &agents.to_string()])
        .arg(p.path())
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > ENDS_BY_ITSELF {
            let _ = child.kill();
            let _ = child.wait_bounded();
            let err = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: String = err.lines().rev().take(40).collect::<Vec<_>>().join("\n");
            panic!(
                "still running after {ENDS_BY_ITSELF:?}; its last lines (newest first):\n{tail}"
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    (status.code(), err)
}

/// A project of `features` features for two agents with a stall limit, as
/// `baton new` writes it (`stall_sessions = 3`).
fn stalling(features: usize) -> Project {
    let p = Project::with_toml(&format!(
        "[project]\nfeatures = {features}\nmin_features = {features}\n[run]\npause_secs = 0\nstall_sessions = 3\n"
    ));
    std::fs::write(p.path().join("app_spec.txt"), "Build a tiny app.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    git(&p, &["init", "-q"]);
    p
}

/// A model that writes a list of four features, then makes no progress on any.
fn making_no_progress() -> ScriptedServer {
    ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(20))
        .respond(|r| {
            (1..=4)
                .any(|n| is_for(r, n))
                .then(|| Step::Reply(Reply::text("I could not get it to work.")))
        })
        .start(initializer(&list(4, 0)))
}

/// Issue #25: `baton run DIR --agents 2` without `--max-sessions`, a stall
/// limit, and a model that makes no progress. The run stops by itself with exit
/// 3 (stalled), every hand-out having run its session; three runs, since how the
/// agents' sessions interleave varies.
#[test]
fn two_agents_making_no_progress_exit_stalled_through_the_binary() {
    for round in 1..=3 {
        let p = stalling(4);
        let server = making_no_progress();
        let (code, err) = run_bounded(&server, &p, &[]);
        assert_eq!(code, Some(3), "run {round}:\n{err}");
        let state: Value = serde_json::from_str(&p.file(".baton/state.json")).unwrap();
        let stalled = state["stalled"].as_u64().unwrap();
        // stall_sessions × agents, and at most one session per agent past it.
        assert!((6..=8).contains(&stalled), "run {round}: {stalled}\n{err}");
        let ran = state["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["agent"].as_u64().is_some())
            .count();
        let handed = err.matches(" takes feature #").count();
        assert_eq!(
            handed, ran,
            "run {round}: hand-outs that ran no session\n{err}"
        );
        // The limit, once more after a feature's first deferral restarted the
        // count (before it reached the limit, as in a run of one), and the
        // sessions under way when it was reached.
        assert!(ran <= 5 + 1 + 6 + 2, "run {round}: {ran}\n{err}");
    }
}

/// A hand-out that starts no session stops the run with exit 1 and its cause:
/// here agent 1's working copy holds a stale `index.lock`, so putting it on the
/// main branch (`git checkout`) fails, and the message says so.
#[test]
fn a_working_copy_that_cannot_be_prepared_stops_the_run_with_its_cause() {
    let p = stalling(4);
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(Duration::from_millis(50));
    for n in 1..=4 {
        b = b.when(move |r| is_for(r, n), session(n, false));
    }
    let server = b.start(initializer(&list(4, 0)));
    // The initializer alone: the working copies are made.
    let (code, err) = run_bounded(&server, &p, &["--max-sessions", "1"]);
    assert_eq!(code, Some(2), "{err}");
    let lock = p.path().join(".baton/agents/a1/.git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let (code, err) = run_bounded(&server, &p, &[]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("agent 1 could not start session")
            && err.contains("git checkout")
            && err.contains("index.lock"),
        "{err}"
    );
    assert_eq!(err.matches("agent 1 takes feature #").count(), 1, "{err}");
    assert_eq!(git(&p, &["for-each-ref", "refs/baton/claims/"]).trim(), "");
}

/// A committed-to-be project of two features for two agents.
fn two_agents() -> Project {
    let p = Project::with_toml(
        "[project]\nfeatures = 2\nmin_features = 2\n[run]\npause_secs = 0\nagents = 2\n",
    );
    std::fs::write(p.path().join("app_spec.txt"), "Build a tiny app.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    git(&p, &["init", "-q"]);
    p
}

/// One turn that writes `script` to `path` and runs it with bash (`redirect`
/// appended): past what the policy reads of a command.
fn script_run(path: &str, script: &str, redirect: &str) -> Step {
    Step::Reply(Reply::tools(&[
        (
            "Write",
            serde_json::json!({"file_path": path, "content": script}),
        ),
        (
            "Bash",
            serde_json::json!({"command": format!("bash {path}{redirect}")}),
        ),
    ]))
}

/// An agent commits a change to `baton.toml` past its gates: into the index and
/// its branch only, hidden from `git status`, the working file untouched (what the
/// agent's own `git` may do even where bubblewrap keeps the file read-only). The
/// branch is never merged, so the project's `baton.toml`, which the next run
/// loads and runs `[notify] command` from, stays the user's.
#[test]
fn a_branch_that_changes_baton_toml_is_never_merged_into_the_project() {
    let p = two_agents();
    let before = p.file("baton.toml");
    let script = "#!/bin/sh\nset -e\nblob=$(printf '[notify]\\ncommand = [\"touch\", \"/tmp/baton-never\"]\\n' | cat baton.toml - | git hash-object -w --stdin)\ngit update-index --add --cacheinfo \"100644,$blob,baton.toml\"\ngit update-index --skip-worktree baton.toml\ngit commit -qm 'Tune the settings'\necho committed\n";
    let mut cheat = vec![script_run("scripts/tune.sh", script, " 2>&1")];
    cheat.extend(session(1, false));
    // The feature back in the queue: its next session, from the main branch.
    cheat.extend(session(1, false));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(20))
        .when(|r| is_for(r, 1), cheat)
        .when(|r| is_for(r, 2), session(2, false))
        .start(initializer(&list(2, 0)));
    let out = baton(&server, Wire::Anthropic)
        .args(["run", "--quiet"])
        .arg(p.path())
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let said: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|r| tool_results(Wire::Anthropic, &r.body))
        .map(|(_, text, _)| text)
        .collect();
    assert!(said.iter().any(|t| t.contains("committed")), "{said:?}");
    assert_eq!(p.file("baton.toml"), before);
    assert!(
        !git(&p, &["log", "-p", "HEAD", "--", "baton.toml"]).contains("[notify]"),
        "the agent's baton.toml reached the main branch"
    );
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join(".baton/state.json")).unwrap())
            .unwrap();
    let refused: Vec<&Value> = state["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["integration"]["outcome"] == "conflict")
        .collect();
    assert_eq!(refused.len(), 1, "{state}");
    assert!(
        refused[0]["integration"]["detail"]
            .as_str()
            .unwrap()
            .contains("baton.toml"),
        "{state}"
    );
}

/// An agent's working copy lies inside the main project (`.baton/agents/`), and a
/// project in a writable tree such as /tmp is writable to Landlock: a script of
/// the agent's reaches for the main project's git hooks, baton.toml and records.
/// None of them is writable from the copy, which gets a temp dir of its own.
#[test]
fn an_agent_cannot_write_the_main_projects_git_hooks_or_baton_toml() {
    if !super::bwrap("an_agent_cannot_write_the_main_projects_git_hooks_or_baton_toml") {
        return;
    }
    reach_for_the_main_project(None);
}

/// The same without bubblewrap, under Landlock alone, which cannot make part of a
/// writable tree read-only: the copy's commands may not write the tree that holds
/// the main project (/tmp here), and get a temp dir of their own instead.
#[test]
fn without_bubblewrap_an_agent_cannot_write_the_main_project_either() {
    if !super::landlock("without_bubblewrap_an_agent_cannot_write_the_main_project_either") {
        return;
    }
    let bin = super::boundary_crash::fake_bin();
    let path = super::boundary_crash::without_bwrap(bin.path());
    reach_for_the_main_project(Some(&path));
}

/// A two-agent run whose agent 1 runs a script that tries the main project's git
/// hooks and baton.toml (and a temp file); `path` replaces baton's `PATH`.
fn reach_for_the_main_project(path: Option<&std::ffi::OsStr>) {
    let p = two_agents();
    let before = p.file("baton.toml");
    let script = "#!/bin/sh\nmain=$(cd ../../.. && pwd)\nprintf '#!/bin/sh\\n' > \"$main/.git/hooks/post-merge\" 2>/dev/null && echo HOOK-PLANTED\necho '[notify]' >> \"$main/baton.toml\" 2>/dev/null && echo TOML-WRITTEN\necho '{}' > \"$main/.baton/planted.json\" 2>/dev/null && echo RECORDS-WRITTEN\nt=$(mktemp) && echo x > \"$t\" && echo TEMP-OK\necho tried\n";
    let mut reach = vec![script_run("scripts/reach.sh", script, "")];
    reach.extend(session(1, false));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(20))
        .when(|r| is_for(r, 1), reach)
        .when(|r| is_for(r, 2), session(2, false))
        .start(initializer(&list(2, 0)));
    let mut cmd = baton(&server, Wire::Anthropic);
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    let out = cmd
        .args(["run", "--quiet"])
        .arg(p.path())
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let said: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|r| tool_results(Wire::Anthropic, &r.body))
        .map(|(_, text, _)| text)
        .filter(|t| t.contains("tried"))
        .collect();
    assert_eq!(said.len(), 1, "the script did not run: {said:?}");
    assert!(said[0].contains("TEMP-OK"), "{said:?}");
    assert!(!said[0].contains("HOOK-PLANTED"), "{said:?}");
    assert!(!said[0].contains("TOML-WRITTEN"), "{said:?}");
    assert!(!said[0].contains("RECORDS-WRITTEN"), "{said:?}");
    assert!(!p.path().join(".baton/planted.json").exists());
    assert!(!p.path().join(".git/hooks/post-merge").exists());
    assert_eq!(p.file("baton.toml"), before);
}

/// `--budget-usd` holds with `--agents 2`: the run stops with exit 2 once the
/// project has cost that much (the initializer costs $0.0012 here, each coding
/// session $0.0006, the budget is $0.003), no new session starts after it, and the line names the budget as
/// given. The coordinator judged the budget on the main record alone, which
/// holds a session only once its batch is merged, so agents were handed new
/// sessions past the budget (7 sessions).
#[test]
fn a_budget_stops_a_run_of_two_agents() {
    let p = stalling(4);
    let server = making_no_progress();
    let (code, err) = run_bounded(&server, &p, &["--budget-usd", "0.003"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("budget $0.003 reached"), "{err}");
    let state: Value = serde_json::from_str(&p.file(".baton/state.json")).unwrap();
    let sessions = state["sessions"].as_array().unwrap().len();
    // The initializer and three coding sessions reach $0.003; at most the other
    // agent's session is under way then, and none starts after.
    assert!((4..=5).contains(&sessions), "{sessions} sessions:\n{err}");
}

/// Each session's verifier in a parallel run gets a number of the project's
/// own, never one another agent's session has: every transcript the records
/// name (sessions and their verifiers) is in the project, and no two share one.
#[test]
fn the_verifiers_of_agents_sessions_have_numbers_no_other_session_has() {
    let (_t, dir) = super::proof::new_project("cli");
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap();
    assert!(toml.contains("features = 4"), "{toml}");
    std::fs::write(
        dir.join("baton.toml"),
        toml.replace("features = 4", "features = 2"),
    )
    .unwrap();
    // Two features without a verify command: the verifier proves each flip.
    let mut l: Vec<Value> = serde_json::from_str(&list(2, 0)).unwrap();
    for f in &mut l {
        f.as_object_mut().unwrap().remove("verify");
    }
    let l = serde_json::to_string_pretty(&l).unwrap() + "\n";
    let mut b = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(20))
        .respond(baton_testkit::scenario::honest_verifier);
    for n in 1..=2usize {
        let work = format!("mkdir -p src && echo 'feature {n}' > src/feature{n}.txt");
        b = b.when(
            move |r| is_for(r, n),
            baton_testkit::scenario::parallel::session_doing(n, &work),
        );
    }
    let server = b.start(initializer(&l));
    let out = baton(&server, Wire::Anthropic)
        .args(["run", "--quiet", "--agents", "2", "--max-sessions", "6"])
        .arg(&dir)
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    // The verifier's checks ran in clean checkouts before the work and with it,
    // in each copy's own temp dir (the project lies in the temp dir, which a
    // copy may not write).
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.matches("fails before the work (at ").count(),
        2,
        "{err}"
    );
    assert_eq!(err.matches(") and passes with it").count(), 2, "{err}");
    let state: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".baton/state.json")).unwrap())
            .unwrap();
    let sessions = state["sessions"].as_array().unwrap();
    let mut numbers: Vec<u64> = sessions
        .iter()
        .map(|s| s["number"].as_u64().unwrap())
        .collect();
    let verifiers: Vec<u64> = sessions
        .iter()
        .filter_map(|s| s["gates"]["verifier_session"].as_u64())
        .collect();
    assert_eq!(verifiers.len(), 2, "{state}");
    numbers.extend(&verifiers);
    let mut unique = numbers.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), numbers.len(), "shared numbers: {numbers:?}");
    for v in verifiers {
        let t = std::fs::read_to_string(dir.join(format!(".baton/sessions/{v:04}.jsonl")))
            .unwrap_or_else(|e| panic!("verifier transcript {v}: {e}"));
        assert!(t.contains("verifier"), "{v}: not a verifier's transcript");
    }
}

/// The sessions of `p`'s record: `(agent, outcome, started_ms, ended_ms,
/// cost_usd)`, the initializer's with agent 0.
fn sessions_of(p: &Project) -> Vec<(u64, String, u64, u64, f64)> {
    let state: Value = serde_json::from_str(&p.file(".baton/state.json")).unwrap();
    state["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["agent"].as_u64().unwrap_or(0),
                s["outcome"].as_str().unwrap_or_default().to_string(),
                s["started_ms"].as_u64().unwrap(),
                s["ended_ms"].as_u64().unwrap(),
                s["cost_usd"].as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

/// A model for eight features whose agents' sessions each run `work` first.
fn eight_features(before_init: Option<&str>, work: &str) -> ScriptedServer {
    eight_features_checked(before_init, work, "")
}

/// [`eight_features`] whose features' checks each run `check_first` first.
fn eight_features_checked(
    before_init: Option<&str>,
    work: &str,
    check_first: &str,
) -> ScriptedServer {
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(Duration::from_millis(20));
    for n in 1..=8 {
        let steps = if work.is_empty() {
            session(n, false)
        } else {
            baton_testkit::scenario::parallel::session_doing(n, work)
        };
        b = b.when(move |r| is_for(r, n), steps);
    }
    let mut init = Vec::new();
    if let Some(cmd) = before_init {
        init.push(Step::Reply(Reply::tool(
            "Bash",
            serde_json::json!({"command": cmd}),
        )));
    }
    let mut features: Value = serde_json::from_str(&list(8, 0)).unwrap();
    for f in features.as_array_mut().unwrap() {
        let verify = f["verify"].as_str().unwrap().to_string();
        f["verify"] = Value::from(format!("{check_first}{verify}"));
    }
    init.extend(initializer(
        &serde_json::to_string_pretty(&features).unwrap(),
    ));
    b.start(init)
}

/// `--max-hours` bounds a run of four agents as a whole, as it bounds a run of
/// one: the clock starts before the initializer, and every agent's session is cut
/// when the run's hours run out, not hours of its own after it began. (The
/// initializer takes four seconds of the run's 7.2; the agents' sessions would
/// take half a minute. Cut at the run's end, each ends within the 7.2 seconds
/// of the run plus the time to stop it; with a clock of its own, a session ran
/// 7.2 seconds after the four.)
#[test]
fn max_hours_bound_a_run_of_four_agents_as_a_whole() {
    let p = stalling(8);
    let server = eight_features(Some("sleep 4"), "sleep 30");
    let (code, err) = run_agents(&server, &p, 4, &["--max-hours", "0.002"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--max-hours 0.002 reached"), "{err}");
    let sessions = sessions_of(&p);
    let (_, init, began, _, _) = sessions[0].clone();
    assert_eq!(init, "completed", "{sessions:?}\n{err}");
    let agents: Vec<_> = sessions.iter().filter(|s| s.0 > 0).collect();
    assert!(!agents.is_empty(), "{sessions:?}\n{err}");
    for (agent, outcome, _, ended, _) in agents {
        assert_eq!(outcome, "time_limit", "agent {agent}: {sessions:?}\n{err}");
        // 7.2 s of the run, and up to 2.5 s to stop the session and its
        // commands: a clock of the session's own ends it 4 s later than that.
        assert!(
            ended - began <= 7_200 + 2_500,
            "agent {agent}'s session ended {} ms after the run began\n{err}",
            ended - began
        );
    }
}

/// `--max-sessions` bounds a run of four agents as it bounds a run of one:
/// the initializer counts, and no more sessions than the limit run.
#[test]
fn max_sessions_bound_a_run_of_four_agents_as_a_run_of_one() {
    let p = stalling(8);
    let server = eight_features(None, "");
    let (code, err) = run_agents(&server, &p, 4, &["--max-sessions", "3"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--max-sessions 3 reached"), "{err}");
    assert_eq!(sessions_of(&p).len(), 3, "{err}");
}

/// `--budget-usd` bounds a run of four agents as it bounds a run of one: once
/// the project has cost what it allows, no session is handed out, and the run
/// exits 2. A session's cost counts from its turns, not from when its agent
/// reports back after the gates: the live lines say each session's cost when
/// its gates are done, and no hand-out follows the line that reached the budget
/// (it once did, twice, while the coordinator knew only the sessions whose
/// agents had reported).
#[test]
fn the_budget_bounds_a_run_of_four_agents_as_a_run_of_one() {
    let p = stalling(8);
    // Each check takes two seconds: an agent reports back two seconds (its
    // gates) after its session's last turn, by when the other three have
    // spent what the budget allows.
    let server = eight_features_checked(None, "", "sleep 2 && ");
    let (code, err) = run_agents(&server, &p, 4, &["--budget-usd", "0.004"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("budget $0.004 reached"), "{err}");
    let mut spent = 0.0;
    for line in err.lines() {
        let body = line.split_once("] ").map_or(line, |(_, b)| b);
        if body.starts_with("session ") && body.contains(" · completed · ") {
            let cost = body
                .split(" · ")
                .find_map(|part| part.strip_prefix('$'))
                .and_then(|usd| usd.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("no cost in {line}"));
            spent += cost;
        }
        if line.contains(" takes feature #") {
            assert!(
                spent < 0.004 - 1e-9,
                "handed out with ${spent} of $0.004 spent: {line}\n{err}"
            );
        }
    }
    // The initializer and the four sessions handed out at once: the first to
    // report back found the budget spent by them all.
    let state: Value = serde_json::from_str(&p.file(".baton/state.json")).unwrap();
    assert_eq!(state["sessions"].as_array().unwrap().len(), 5, "{err}");
}
