//! Growing a project, through the binary with the scripted model: from a one-line
//! idea (a planner session writes the spec), more features later (`baton plan`), a
//! person's own edit of the list (`baton accept`), and an existing repository
//! (`baton new --adopt`).

use std::process::Output;

use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::json;

use super::run::{features, git, honest, initializer, new_project};
use super::*;

/// A specification of `lines` lines, as a planner would write it.
fn spec_text(lines: usize) -> String {
    let mut s = String::from("Original idea:\n\na tiny todo app\n\nOverview\n");
    for i in 0..lines {
        s.push_str(&format!(
            "- The app does thing {i}: a user sees result {i}.\n"
        ));
    }
    s
}

/// A planner session that writes `content` as the spec.
fn planner_writing(content: &str) -> Vec<Step> {
    vec![
        Step::Reply(Reply::tool(
            "Write",
            json!({"file_path": "app_spec.txt", "content": content}),
        )),
        Step::Reply(Reply::text("The specification is written.")),
    ]
}

fn ledger_kinds(p: &Project) -> Vec<String> {
    p.file(".baton/ledger.jsonl")
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

fn baton_in(server: &ScriptedServer, args: &[&str]) -> Output {
    baton(server, Wire::Anthropic)
        .args(args)
        .output_bounded()
        .unwrap()
}

/// `baton new DIR --idea IDEA --features 3 --plan-only` (and `extra`).
fn plan_only(server: &ScriptedServer, dir: &std::path::Path, idea: &str, extra: &[&str]) -> Output {
    let dir = dir.to_str().unwrap();
    let mut args = vec!["new", dir, "--idea", idea, "--features", "3", "--plan-only"];
    args.extend(extra);
    baton_in(server, &args)
}

/// `baton run DIR --max-sessions 2 --pause 0` (and `extra`), the agent
/// trusted: the initializer writes three features and session 2 makes #1 pass.
/// The run's output and its model.
fn initializer_and_feature_1(dir: &std::path::Path, extra: &[&str]) -> (Output, ScriptedServer) {
    trust_the_agent(dir);
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let dir = dir.to_str().unwrap();
    let mut args = vec!["run", dir, "--max-sessions", "2", "--pause", "0"];
    args.extend(extra);
    (baton_in(&server, &args), server)
}

/// `baton new` writes the independent verifier on and trust off; a run whose
/// scripted agent flips features without a verify command (and has no verifier
/// script) trusts the agent instead, as `baton_testkit::trusting` makes the suite's
/// other projects do. Committed, as a person's edit of baton.toml would be.
fn trust_the_agent(dir: &std::path::Path) {
    let path = dir.join("baton.toml");
    let toml = std::fs::read_to_string(&path).unwrap();
    let trusting = toml
        .replacen("\nagent = true ", "\nagent = false ", 1)
        .replacen("\ntrust_agent = false ", "\ntrust_agent = true ", 1);
    assert_ne!(
        trusting, toml,
        "baton new wrote no [verify] agent and trust_agent"
    );
    std::fs::write(&path, trusting).unwrap();
    baton_testkit::git(dir, &["commit", "-qam", "trust the scripted agent"]);
}

/// `baton new --idea --plan-only`: the planner expands the idea into the spec,
/// which is committed and recorded; `baton run` then works from it.
#[test]
fn an_idea_becomes_a_spec_then_a_feature_list() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("todo");
    let spec = spec_text(30);
    let server = ScriptedServer::start(Wire::Anthropic, planner_writing(&spec));
    let out = plan_only(&server, &dir, "a tiny todo app", &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("read and edit it"),
        "{}",
        stderr(&out)
    );
    // The planner was given the idea and asked for a full specification.
    let prompt = prompt_of(&server, 0);
    assert!(prompt.contains("product planner"), "{prompt}");
    assert!(prompt.contains("Out of scope"), "{prompt}");
    let read = |rel: &str| std::fs::read_to_string(dir.join(rel)).unwrap_or_default();
    assert_eq!(read("app_spec.txt"), spec);
    let log = baton_testkit::git(&dir, &["log", "--format=%s"]);
    assert!(
        log.starts_with("baton plan: the specification in app_spec.txt, from the idea"),
        "{log}"
    );
    assert_eq!(baton_testkit::git(&dir, &["status", "--porcelain"]), "");
    let ledger = read(".baton/ledger.jsonl");
    assert!(ledger.contains("\"kind\":\"planned\""), "{ledger}");
    let state: serde_json::Value = serde_json::from_str(&read(".baton/state.json")).unwrap();
    assert_eq!(state["sessions"][0]["kind"], "planner");

    // The run's initializer works from the planned spec.
    let (out, server) = initializer_and_feature_1(&dir, &["--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let prompt = prompt_of(&server, 0);
    assert!(prompt.contains("Read app_spec.txt carefully"), "{prompt}");
    let state: serde_json::Value = serde_json::from_str(&read(".baton/state.json")).unwrap();
    let kinds: Vec<&str> = state["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["planner", "initializer", "coding"]);
}

/// Without `--plan-only`, `baton new --idea` goes on into the run: the initializer
/// follows the planner at once.
#[test]
fn an_idea_without_plan_only_goes_on_into_the_run() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("todo");
    let mut steps = planner_writing(&spec_text(25));
    steps.extend(initializer(&features(&[false, false, false])));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton_in(
        &server,
        &[
            "new",
            dir.to_str().unwrap(),
            "--idea",
            "a tiny todo app",
            "--features",
            "3",
            "--quiet",
        ],
    );
    // The script ends after the initializer: the first coding session's request is
    // refused by the scripted server, which ends the run with an error.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".baton/state.json")).unwrap())
            .unwrap();
    let kinds: Vec<&str> = state["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(&kinds[..2], ["planner", "initializer"], "{}", stderr(&out));
    assert!(dir.join(".baton/accepted_feature_list.json").is_file());
}

/// A planner that writes next to nothing leaves the idea as it was and says so.
#[test]
fn a_planner_that_writes_no_real_spec_fails_and_keeps_the_idea() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("todo");
    let server = ScriptedServer::start(Wire::Anthropic, planner_writing("A todo app.\n"));
    let out = baton_in(
        &server,
        &[
            "new",
            dir.to_str().unwrap(),
            "--idea",
            "a tiny todo app",
            "--quiet",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "did not write a specification in app_spec.txt (wrote 1 non-empty lines, fewer than 20)"
        ),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("runs the planner again"),
        "{}",
        stderr(&out)
    );
    let spec = std::fs::read_to_string(dir.join("app_spec.txt")).unwrap();
    assert_eq!(spec, "Original idea:\n\na tiny todo app\n");
    assert_eq!(baton_testkit::git(&dir, &["status", "--porcelain"]), "");
    // `baton plan DIR` tries again on the idea.
    let server = ScriptedServer::start(Wire::Anthropic, planner_writing(&spec_text(22)));
    let out = baton_in(&server, &["plan", dir.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(dir.join("app_spec.txt")).unwrap(),
        spec_text(22)
    );
    assert!(prompt_of(&server, 0).contains("product planner"));
}

/// A project whose initializer has run (three features accepted).
fn initialized() -> Project {
    let p = new_project();
    let (out, _s) = super::run::run(
        &p,
        initializer(&features(&[false, false, false])),
        &["--max-sessions", "1"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    p
}

/// The list as a planner (or a person) would write it: the three features, with
/// `edits` applied to their objects, then `more` appended.
fn list_with(edit: impl Fn(&mut Vec<serde_json::Value>), more: &[serde_json::Value]) -> String {
    let mut list: Vec<serde_json::Value> =
        serde_json::from_str(&features(&[false, false, false])).unwrap();
    edit(&mut list);
    list.extend(more.iter().cloned());
    serde_json::to_string_pretty(&list).unwrap() + "\n"
}

/// `baton plan P --idea REQUEST` with a planner that writes `list` as the feature
/// list.
fn plan_writing(p: &Project, list: &str, request: &str) -> (Output, ScriptedServer) {
    plan_writing_as(p, list, request, "--quiet")
}

/// [`plan_writing`] with the output flag `output` (`--quiet`, `--json`).
fn plan_writing_as(
    p: &Project,
    list: &str,
    request: &str,
    output: &str,
) -> (Output, ScriptedServer) {
    let steps = vec![
        Step::Reply(Reply::tool(
            "Write",
            json!({"file_path": "feature_list.json", "content": list}),
        )),
        Step::Reply(Reply::text("Features appended.")),
    ];
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton_in(
        &server,
        &[
            "plan",
            p.path().to_str().unwrap(),
            "--idea",
            request,
            output,
        ],
    );
    (out, server)
}

/// `baton plan --json`: one JSON event per line on stdout, as for `baton run`,
/// the last a `run_end` with `outcome: planned` naming the features added.
#[test]
fn plan_json_prints_events_ending_with_the_features_planned() {
    let p = initialized();
    let written = list_with(
        |_| {},
        &[feature(
            "Dark mode: the theme switch turns the page dark",
            false,
        )],
    );
    let (out, _server) = plan_writing_as(&p, &written, "add a dark mode", "--json");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        events.iter().any(|e| e["type"] == "session_end"),
        "{stdout}"
    );
    let end = events.last().unwrap();
    assert_eq!(end["type"], "run_end", "{stdout}");
    assert_eq!(end["outcome"], "planned", "{stdout}");
    assert_eq!(end["exit_code"], 0, "{stdout}");
    assert!(
        end["reason"].as_str().unwrap().ends_with("added #4"),
        "{stdout}"
    );
    assert_eq!(end["total"], 4, "{stdout}");
}

fn feature(description: &str, passes: bool) -> serde_json::Value {
    json!({"category": "functional", "description": description,
           "steps": ["open the app", "see it"], "passes": passes})
}

/// `baton plan`: new features are appended, checked and recorded; an existing
/// entry the planner changed is restored; a new one written passing is set
/// failing; the request goes into the spec.
#[test]
fn plan_appends_features_and_restores_what_it_changed() {
    let p = initialized();
    let written = list_with(
        |l| l[1]["description"] = "Feature 2, rewritten by the planner".into(),
        &[
            feature("Dark mode: the theme switch turns the page dark", false),
            feature("Dark mode is remembered after a reload", true),
        ],
    );
    let (out, server) = plan_writing(&p, &written, "add a dark mode");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("2 feature(s) added to feature_list.json (#4, #5)"),
        "{}",
        stderr(&out)
    );
    let prompt = prompt_of(&server, 0);
    assert!(prompt.contains("add a dark mode"), "{prompt}");
    assert!(prompt.contains("Append only"), "{prompt}");

    // The list: the three as accepted, then the two new ones, failing.
    let list: Vec<serde_json::Value> = serde_json::from_str(&p.file("feature_list.json")).unwrap();
    assert_eq!(list.len(), 5);
    assert_eq!(list[1]["description"], "Feature 2");
    assert_eq!(
        list[4]["description"],
        "Dark mode is remembered after a reload"
    );
    assert!(list.iter().all(|f| f["passes"] == false));
    let accepted: Vec<serde_json::Value> =
        serde_json::from_str(&p.file(".baton/accepted_feature_list.json")).unwrap();
    assert_eq!(accepted, list);
    // Recorded: two additions with the request, the edit and the premature pass.
    let ledger = p.file(".baton/ledger.jsonl");
    let kinds = ledger_kinds(&p);
    assert_eq!(
        kinds.iter().filter(|k| *k == "added").count(),
        2,
        "{ledger}"
    );
    assert!(ledger.contains("for: add a dark mode"), "{ledger}");
    assert!(
        ledger.contains("changed existing feature(s) #2; restored"),
        "{ledger}"
    );
    assert!(
        ledger.contains("new feature #5 was written passing"),
        "{ledger}"
    );
    // The request is in the spec; everything is committed.
    assert!(p.file("app_spec.txt").contains("add a dark mode"));
    assert!(p.file("app_spec.txt").contains("\n## Added "));
    let log = git(&p, &["log", "--format=%s", "-3"]);
    assert!(
        log.contains("baton plan: 2 feature(s) added (#4, #5) for: add a dark mode"),
        "{log}"
    );
    assert_eq!(git(&p, &["status", "--porcelain"]), "");
    let s = state(&p);
    assert_eq!(s["sessions"][1]["kind"], "planner");

    // A planner that adds nothing: an error, the list as it was.
    let steps = vec![Step::Reply(Reply::text("Nothing to add."))];
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton_in(
        &server,
        &[
            "plan",
            p.path().to_str().unwrap(),
            "--idea",
            "nothing really",
            "--quiet",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no feature was added"),
        "{}",
        stderr(&out)
    );
    let after: Vec<serde_json::Value> = serde_json::from_str(&p.file("feature_list.json")).unwrap();
    assert_eq!(after, list);
}

/// A planner killed mid-session: the next `baton plan` records it (killed), puts
/// back the list it left half-written (kept aside), and plans.
#[test]
fn a_planner_killed_mid_session_is_recorded_and_its_half_list_set_aside() {
    let p = initialized();
    // The planner writes a broken list, then the model stalls: killed there.
    let steps = vec![
        Step::Reply(Reply::tool(
            "Write",
            json!({"file_path": "feature_list.json", "content": "[{\"category\": \"functional\","}),
        )),
        Step::Stall {
            reply: Reply::text("thinking"),
            events: 1,
        },
    ];
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let mut child = baton(&server, Wire::Anthropic)
        .args([
            "plan",
            p.path().to_str().unwrap(),
            "--idea",
            "add search",
            "--quiet",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while server.requests().len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        server.requests().len(),
        2,
        "the planner did not get to its second turn"
    );
    child.kill().unwrap();
    child.wait_bounded().unwrap();
    assert!(
        state(&p)["in_progress"]["kind"] == "planner",
        "{}",
        state(&p)
    );
    assert!(p.file("feature_list.json").starts_with("[{\"category\""));

    let written = list_with(|_| {}, &[feature("Search the todos by title", false)]);
    let (out, _server) = plan_writing(&p, &written, "add search");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("was stopped before it finished; recorded"),
        "{}",
        stderr(&out)
    );
    let s = state(&p);
    assert!(s["in_progress"].is_null(), "{s}");
    let planners: Vec<&serde_json::Value> = s["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "planner")
        .collect();
    assert_eq!(planners.len(), 2, "{s}");
    assert_eq!(planners[0]["outcome"], "killed");
    assert!(
        planners[0]["gates"]["violations"][0]
            .as_str()
            .unwrap()
            .contains("kept as .baton/replaced/feature_list.json.planner-"),
        "{s}"
    );
    assert_eq!(planners[1]["outcome"], "completed");
    let list: Vec<serde_json::Value> = serde_json::from_str(&p.file("feature_list.json")).unwrap();
    assert_eq!(list.len(), 4);
}

/// `baton accept`: a person's edit is shown, refused without an answer, accepted
/// with --yes and recorded; removing a feature is refused.
#[test]
fn accept_takes_a_persons_edit_of_the_list() {
    let p = initialized();
    let edited = list_with(
        |l| l[2]["description"] = "Feature 3, in the person's words".into(),
        &[feature("Export the todos as CSV", false)],
    );
    std::fs::write(p.path().join("feature_list.json"), &edited).unwrap();
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    // `baton run` does not restore over the edit: it stops and says how to keep it.
    let out = baton_in(&server, &["run", p.path().to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("to keep that edit, `baton accept"),
        "{}",
        stderr(&out)
    );
    assert_eq!(p.file("feature_list.json"), edited);
    assert_eq!(server.requests().len(), 0);
    let out = baton_in(&server, &["accept", p.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("+ #4 Export the todos as CSV"), "{err}");
    assert!(
        err.contains("~ #3 description \"Feature 3\" → \"Feature 3, in the person's words\""),
        "{err}"
    );
    assert!(err.contains("--yes"), "{err}");
    assert!(!p.file(".baton/accepted_feature_list.json").contains("CSV"));

    let out = baton_in(&server, &["accept", p.path().to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let accepted: Vec<serde_json::Value> =
        serde_json::from_str(&p.file(".baton/accepted_feature_list.json")).unwrap();
    let now: Vec<serde_json::Value> = serde_json::from_str(&edited).unwrap();
    assert_eq!(accepted, now);
    let kinds = ledger_kinds(&p);
    assert!(kinds.contains(&"added".to_string()), "{kinds:?}");
    assert!(kinds.contains(&"amended".to_string()), "{kinds:?}");
    assert_eq!(git(&p, &["status", "--porcelain"]), "");
    assert!(
        git(&p, &["log", "--format=%s", "-1"])
            .starts_with("baton accept: a person's edit of feature_list.json (1 added, 1 changed)")
    );

    // Nothing left to accept; then a removal is refused, the accepted list kept.
    let out = baton_in(&server, &["accept", p.path().to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing to accept"),
        "{}",
        stderr(&out)
    );
    let fewer = serde_json::to_string_pretty(&now[..3]).unwrap();
    std::fs::write(p.path().join("feature_list.json"), fewer).unwrap();
    let out = baton_in(&server, &["accept", p.path().to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("removing features renumbers"),
        "{}",
        stderr(&out)
    );
    let still: Vec<serde_json::Value> =
        serde_json::from_str(&p.file(".baton/accepted_feature_list.json")).unwrap();
    assert_eq!(still, now);
}

/// An existing repository with history, adopted: its history intact, baton's files
/// committed on top, and the initializer told to study the code and run its tests.
#[test]
fn an_existing_repository_is_adopted_with_its_history() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("tool");
    std::fs::create_dir_all(&dir).unwrap();
    let g = |args: &[&str]| baton_testkit::git(&dir, args);
    g(&["init", "-q"]);
    g(&["config", "user.name", "Person"]);
    g(&["config", "user.email", "person@example.com"]);
    std::fs::write(dir.join("hello.sh"), "#!/usr/bin/env bash\necho hello\n").unwrap();
    g(&["add", "-A"]);
    g(&["commit", "-qm", "First: hello"]);
    std::fs::write(
        dir.join("test.sh"),
        "#!/usr/bin/env bash\n[ \"$(bash hello.sh)\" = hello ] && echo 'tests pass' > .tests-ran\n",
    )
    .unwrap();
    g(&["add", "-A"]);
    g(&["commit", "-qm", "Second: a test"]);
    let first = g(&["rev-list", "--max-parents=0", "HEAD"])
        .trim()
        .to_string();
    let second = g(&["rev-parse", "HEAD"]).trim().to_string();

    // Uncommitted changes are refused, nothing written.
    std::fs::write(dir.join("hello.sh"), "#!/usr/bin/env bash\necho hi\n").unwrap();
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    let out = baton_in(
        &server,
        &[
            "new",
            dir.to_str().unwrap(),
            "--adopt",
            "--goal",
            "add a --name flag",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("uncommitted changes (hello.sh)"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.join("baton.toml").exists());
    g(&["checkout", "--", "hello.sh"]);

    let out = baton_in(
        &server,
        &[
            "new",
            dir.to_str().unwrap(),
            "--adopt",
            "--goal",
            "add a --name flag",
            "--features",
            "3",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The history is intact, baton's files one commit on top.
    assert_eq!(g(&["rev-parse", "HEAD~1"]).trim(), second);
    assert_eq!(g(&["rev-list", "--max-parents=0", "HEAD"]).trim(), first);
    assert_eq!(g(&["status", "--porcelain"]), "");
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap();
    assert!(toml.contains("adopt = true"), "{toml}");
    assert!(
        std::fs::read_to_string(dir.join("app_spec.txt"))
            .unwrap()
            .contains("add a --name flag")
    );
    let ledger = std::fs::read_to_string(dir.join(".baton/ledger.jsonl")).unwrap();
    assert!(ledger.contains("\"kind\":\"adopted\""), "{ledger}");
    assert!(
        ledger.contains(&format!("adopted the repository at {second} (2 commits")),
        "{ledger}"
    );
    // The person's identity is theirs still.
    assert_eq!(g(&["config", "--local", "user.name"]).trim(), "Person");

    // The initializer studies the code and writes an init.sh that runs its tests.
    let steps = baton_testkit::scenario::initializer_writing(
        &features(&[false, false, false]),
        "#!/usr/bin/env bash\nbash test.sh && cat .tests-ran\n",
        "## Project facts\nhello.sh prints hello; test.sh tests it.\n",
        &[],
    );
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton_in(
        &server,
        &[
            "run",
            dir.to_str().unwrap(),
            "--max-sessions",
            "1",
            "--quiet",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let prompt = prompt_of(&server, 0);
    assert!(prompt.contains("existing software project"), "{prompt}");
    assert!(
        prompt.contains("runs the project's own test suite"),
        "{prompt}"
    );
    assert!(
        prompt.contains("Never rewrite the project's history"),
        "{prompt}"
    );
    assert_eq!(g(&["rev-list", "--max-parents=0", "HEAD"]).trim(), first);
    assert!(g(&["merge-base", "--is-ancestor", &second, "HEAD"]).is_empty());
    // init.sh runs the project's own tests.
    let ran = std::process::Command::new("bash")
        .arg("init.sh")
        .current_dir(&dir)
        .output_bounded()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&ran.stdout).contains("tests pass"),
        "{ran:?}"
    );
}

/// A failed `baton plan` changes nothing: the request is not committed into the
/// spec (no `## Added` block piles up with each retry), the tree and history are
/// as they were, what the planner wrote is kept aside, status counts no restore,
/// and the same command works when tried again.
#[test]
fn a_failed_plan_leaves_the_project_as_it_was() {
    let p = initialized();
    let head = baton_testkit::git(p.path(), &["rev-parse", "HEAD"]);
    let spec = p.file("app_spec.txt");
    let steps = vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "notes/plan.md", "content": "thinking\n"}),
            ),
            (
                "Bash",
                json!({"command": "git add -A && git commit -qm 'planner commits its notes'"}),
            ),
        ])),
        Step::Reply(Reply::text("I could not decide what to add.")),
    ];
    for _ in 0..2 {
        let server = ScriptedServer::start(Wire::Anthropic, steps.clone());
        let out = baton_in(
            &server,
            &[
                "plan",
                p.path().to_str().unwrap(),
                "--idea",
                "add tags",
                "--quiet",
            ],
        );
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains("no feature was added"), "{err}");
        assert!(
            err.contains("the list and the spec are as they were"),
            "{err}"
        );
        assert!(err.contains(".baton/replaced/planner-"), "{err}");
        // The way on names the whole command (`baton plan DIR` alone fails).
        assert!(
            err.contains("again with the same `--spec FILE` or `--idea TEXT`"),
            "{err}"
        );
    }
    assert_eq!(
        p.file("app_spec.txt"),
        spec,
        "the request stayed in the spec"
    );
    assert!(!p.path().join("notes/plan.md").exists());
    assert_eq!(baton_testkit::git(p.path(), &["status", "--porcelain"]), "");
    // The planner's commits stay in history (never rewritten); the tree is put back.
    let diff = baton_testkit::git(p.path(), &["diff", "--stat", head.trim(), "HEAD"]);
    assert_eq!(diff, "", "the tree differs from before the plans");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", p.path().to_str().unwrap(), "--json"])
        .output_bounded()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(s["totals"]["violations"], 0, "{s}");
    // The same request works the next time.
    let written = list_with(|_| {}, &[feature("Tags can be added to a todo", false)]);
    let (out, _server) = plan_writing(&p, &written, "add tags");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(p.file("app_spec.txt").matches("## Added").count(), 1);
}

/// `baton new --idea` whose planner writes a feature list and `init.sh` and
/// commits them instead of a spec: they are set aside, so `baton plan DIR` runs
/// the planner again (it refused, seeing a list) and `baton run` does not adopt a
/// list nobody accepted.
#[test]
fn a_planner_that_writes_a_list_instead_of_a_spec_is_undone() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("todo");
    let steps = vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": features(&[false, false, false, false])}),
            ),
            (
                "Write",
                json!({"file_path": "init.sh", "content": "#!/bin/sh\necho up\n"}),
            ),
            (
                "Bash",
                json!({"command": "git add -A && git commit -qm 'list and init'"}),
            ),
        ])),
        Step::Reply(Reply::text("Done.")),
    ];
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton_in(
        &server,
        &[
            "new",
            dir.to_str().unwrap(),
            "--idea",
            "a tiny todo app",
            "--quiet",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(!dir.join("feature_list.json").exists());
    assert!(!dir.join("init.sh").exists());
    assert!(dir.join(".baton/replaced").is_dir());
    assert_eq!(
        std::fs::read_to_string(dir.join("app_spec.txt")).unwrap(),
        "Original idea:\n\na tiny todo app\n"
    );
    let server = ScriptedServer::start(Wire::Anthropic, planner_writing(&spec_text(22)));
    let out = baton_in(&server, &["plan", dir.to_str().unwrap(), "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A passing feature whose description a person changes through `baton accept`
/// is set back to failing: what passed was the old feature, so it must be proven
/// again. A person's change of `passes` alone stands.
#[test]
fn an_amended_passing_feature_must_be_proven_again() {
    let p = initialized();
    // Feature 1 passes (as a person accepted it), then its description changes.
    let passing = list_with(|l| l[0]["passes"] = true.into(), &[]);
    std::fs::write(p.path().join("feature_list.json"), &passing).unwrap();
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    let out = baton_in(&server, &["accept", p.path().to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let accepted: Vec<serde_json::Value> =
        serde_json::from_str(&p.file(".baton/accepted_feature_list.json")).unwrap();
    assert_eq!(
        accepted[0]["passes"], true,
        "a change of passes alone stands"
    );
    let amended = list_with(
        |l| {
            l[0]["passes"] = true.into();
            l[0]["description"] = "Feature 1, now with undo".into();
        },
        &[],
    );
    std::fs::write(p.path().join("feature_list.json"), &amended).unwrap();
    let out = baton_in(&server, &["accept", p.path().to_str().unwrap(), "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("must be proven again"),
        "{}",
        stderr(&out)
    );
    let accepted: Vec<serde_json::Value> =
        serde_json::from_str(&p.file(".baton/accepted_feature_list.json")).unwrap();
    assert_eq!(accepted[0]["description"], "Feature 1, now with undo");
    assert_eq!(accepted[0]["passes"], false);
    let on_disk: Vec<serde_json::Value> =
        serde_json::from_str(&p.file("feature_list.json")).unwrap();
    assert_eq!(on_disk[0]["passes"], false);
}

/// A `--plan-only` planner that writes a feature list and a start script besides
/// the spec: they are the initializer's to write (after it checked the spec), so
/// they are set aside, said and recorded, and the next `baton run` runs its
/// initializer instead of adopting a list nobody checked.
#[test]
fn a_planner_writes_the_spec_alone_and_the_run_does_not_adopt_its_list() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("todo");
    let spec = spec_text(30);
    let server = ScriptedServer::start(
        Wire::Anthropic,
        vec![
            Step::Reply(Reply::tools(&[
                (
                    "Write",
                    json!({"file_path": "app_spec.txt", "content": spec}),
                ),
                (
                    "Write",
                    json!({"file_path": "feature_list.json", "content": features(&[true, true, false])}),
                ),
                (
                    "Write",
                    json!({"file_path": "init.sh", "content": "#!/bin/sh\necho planner's\n"}),
                ),
            ])),
            Step::Reply(Reply::text("The specification is written.")),
        ],
    );
    let out = plan_only(&server, &dir, "a tiny todo app", &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("the planner wrote feature_list.json"), "{err}");
    assert!(!dir.join("feature_list.json").exists(), "{err}");
    assert!(!dir.join("init.sh").exists(), "{err}");
    assert!(
        dir.join(".baton/replaced/planner-0001/feature_list.json")
            .is_file()
    );
    assert_eq!(baton_testkit::git(&dir, &["status", "--porcelain"]), "");
    // The run's first session is the initializer.
    let (out, server) = initializer_and_feature_1(&dir, &[]);
    let err = stderr(&out);
    assert!(!err.contains("adopted"), "{err}");
    assert!(
        prompt_of(&server, 0).contains("Read app_spec.txt carefully"),
        "{err}"
    );
}

/// `baton new --idea` reads the kind from a one-line idea before any spec exists
/// ("a todo app": web, by default). The planner's spec says what is really built:
/// a command-line program here, so the project becomes `cli` (browser off), said
/// and committed, before any session judges a feature by the browser.
#[test]
fn an_idea_projects_kind_is_read_again_from_the_planners_spec() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("todo");
    let spec = format!(
        "A command-line program: `todo add TEXT` prints the new item's number on stdout; flags --done and --all.\n{}",
        spec_text(30)
    );
    let server = ScriptedServer::start(Wire::Anthropic, planner_writing(&spec));
    let out = plan_only(&server, &dir, "a todo app", &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("baton: kind: web ("),
        "the idea's guess first: {err}"
    );
    assert!(
        err.contains("baton: kind: cli (from the planner's spec: \"command-line\""),
        "{err}"
    );
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap();
    assert!(toml.contains("kind = \"cli\""), "{toml}");
    assert!(toml.contains("[browser]\nenabled = false"), "{toml}");
    assert_eq!(baton_testkit::git(&dir, &["status", "--porcelain"]), "");
    let log = baton_testkit::git(&dir, &["log", "--format=%s", "-1"]);
    assert!(
        log.contains("kind = \"cli\", from the planner's spec"),
        "{log}"
    );
}
