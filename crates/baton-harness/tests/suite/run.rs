//! The harness in process: a `Runner` against the test kit's scripted model, in a
//! real git repository with real bash, without the `baton` binary around it (the
//! whole-binary scenarios live in `baton-cli/tests/suite/run.rs`).

use std::path::PathBuf;

use baton_agent::pricing::PriceTable;
use baton_config::Config;
use baton_harness::files::Files;
use baton_harness::run::{Backend, RunEnd, RunOptions, Runner, RunnerParts};

use super::support::{Lines, client, git};
use baton_records::{InProgress, LedgerEntry, LedgerKind, SessionKind, SessionOutcome, State};
use baton_testkit::scenario::{features, honest, initializer};
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use baton_tools::{AllowAll, ToolContext, Toolbox};
use serde_json::json;

/// A project directory with a git repository, a spec and `baton.toml`.
pub(super) struct Project {
    _t: tempfile::TempDir,
    pub(super) dir: PathBuf,
}

impl Project {
    /// `run` is added to `baton.toml`'s `[run]` table (pauses are always off).
    fn new(run: &str) -> Self {
        Self::with_toml(&baton_testkit::trusting(&format!(
            "[project]\nfeatures = 3\nmin_features = 3\n[run]\npause_secs = 0\n{run}"
        )))
    }

    /// A project whose `baton.toml` is `toml` as written (no `[verify]` table means
    /// baton's defaults).
    pub(super) fn with_toml(toml: &str) -> Self {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().canonicalize().unwrap();
        std::fs::write(dir.join("baton.toml"), toml).unwrap();
        std::fs::write(dir.join("app_spec.txt"), "Build a tiny app.\n").unwrap();
        std::fs::write(dir.join(".gitignore"), ".baton/\n").unwrap();
        git(&dir, &["init", "-q"]);
        Self { _t: t, dir }
    }

    /// One `Runner::run` against a scripted model playing `steps`; what it ended
    /// with and the lines it reported.
    async fn run(&self, steps: Vec<Step>, max_sessions: u32) -> (RunEnd, String) {
        let server = ScriptedServer::start(Wire::Anthropic, steps);
        self.run_on(&server, max_sessions).await
    }

    /// One `Runner::run` against `server`.
    pub(super) async fn run_on(
        &self,
        server: &ScriptedServer,
        max_sessions: u32,
    ) -> (RunEnd, String) {
        let cfg = Config::load(&self.dir).unwrap();
        let client = client(server.base_url(), &cfg);
        let prices = PriceTable::new(&cfg.prices);
        let lines = Lines::default();
        let runner = Runner::new(RunnerParts {
            files: Files::new(self.dir.clone(), cfg.project.clone()),
            cfg,
            backend: Backend::Loop(&client),
            prices: &prices,
            policy: &AllowAll,
            reporter: &lines,
            tools: Toolbox::new(ToolContext::new(self.dir.clone())),
        })
        .with_opts(RunOptions {
            max_sessions: Some(max_sessions),
            ..RunOptions::default()
        });
        let end = runner.run().await.unwrap();
        let said = lines.0.lock().unwrap().join("\n");
        (end, said)
    }

    fn state(&self) -> State {
        State::load(&self.dir).unwrap()
    }

    pub(super) fn ledger(&self) -> Vec<LedgerEntry> {
        baton_records::ledger::read(&self.dir.join(baton_records::layout::LEDGER))
            .unwrap()
            .entries
    }

    fn kinds(&self) -> Vec<LedgerKind> {
        self.ledger().iter().map(|e| e.kind).collect()
    }

    fn list(&self) -> baton_records::FeatureList {
        let text = std::fs::read_to_string(self.dir.join("feature_list.json")).unwrap();
        baton_records::FeatureList::parse(&text, "feature_list.json").unwrap()
    }
}

/// A session that writes its notes and commits, and does nothing else.
fn idle(n: usize) -> Vec<Step> {
    vec![
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": format!("echo 'Session {n}: looked around, changed nothing.' >> claude-progress.txt && git add -A && git commit -qm 'Notes of session {n}'")}),
        )),
        Step::Reply(Reply::text("Nothing done.")),
    ]
}

#[tokio::test(flavor = "current_thread")]
async fn an_honest_run_records_every_session_and_flip_and_stops_at_its_limit() {
    let p = Project::new("");
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let (end, said) = p.run(steps, 2).await;
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}");
    // Two sessions recorded, in order, both completed; the flip accepted.
    let state = p.state();
    let outcomes: Vec<SessionOutcome> = state.sessions.iter().map(|s| s.outcome).collect();
    assert_eq!(
        outcomes,
        [SessionOutcome::Completed, SessionOutcome::Completed]
    );
    assert_eq!(state.sessions[1].gates.flipped, [1]);
    assert_eq!(p.kinds(), [LedgerKind::Accepted, LedgerKind::Flip]);
    // The work is committed and the tree is clean for the next session.
    assert_eq!(git(&p.dir, &["status", "--porcelain"]), "");
    assert!(git(&p.dir, &["log", "--oneline"]).contains("Implement feature 1"));
    assert!(said.contains("session 0002"), "{said}");
}

/// The gate of the feature list: a session that rewrites a feature to make it
/// easier and flips it has the rewrite undone and the flip refused, in a commit of
/// baton's own, with the violation in the ledger and in the record.
#[tokio::test(flavor = "current_thread")]
async fn a_session_that_rewrites_a_feature_has_it_restored_and_recorded() {
    let p = Project::new("");
    let mut steps = initializer(&features(&[false, false, false]));
    let mut easier: serde_json::Value =
        serde_json::from_str(&features(&[true, false, false])).unwrap();
    easier[0]["description"] = json!("Feature 1 (only the button has to exist)");
    // Through the shell: the Write tool's own guard would refuse the rewrite
    // before it happened, and the gate is what is tested here.
    let easier = serde_json::to_string(&easier).unwrap();
    steps.extend([
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": format!("printf '%s' '{easier}' > feature_list.json && echo 'Session 2: feature 1 done.' >> claude-progress.txt && git add -A && git commit -qm 'Feature 1'")}),
        )),
        Step::Reply(Reply::text("Feature 1 passes.")),
    ]);
    let (end, _) = p.run(steps, 2).await;
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}");
    let gates = &p.state().sessions[1].gates;
    assert!(gates.flipped.is_empty(), "{gates:?}");
    assert_eq!(gates.violations.len(), 1, "{gates:?}");
    let restore = gates.restore_commit.clone().expect("a restore commit");
    assert_eq!(p.kinds(), [LedgerKind::Accepted, LedgerKind::Violation]);
    assert_eq!(p.ledger()[1].commit.as_deref(), Some(restore.as_str()));
    // The list on disk is the accepted one again, and committed.
    let list = p.list();
    assert_eq!(list.features[0].description, "Feature 1");
    assert!(!list.features[0].passes);
    assert_eq!(git(&p.dir, &["status", "--porcelain"]), "");
}

/// A stop condition: coding sessions in a row without a newly passing feature end
/// the run as stalled (exit 3), whatever the agent says.
#[tokio::test(flavor = "current_thread")]
async fn sessions_that_pass_nothing_stop_the_run_as_stalled() {
    let p = Project::new("stall_sessions = 2\n");
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(idle(2));
    steps.extend(idle(3));
    let (end, said) = p.run(steps, 10).await;
    assert!(matches!(end, RunEnd::Stalled(2)), "{end:?}\n{said}");
    assert_eq!(end.exit_code(), 3);
    let state = p.state();
    assert_eq!(state.sessions.len(), 3);
    assert_eq!(state.stalled, 2);
    assert!(state.in_progress.is_none());
}

/// Resume: a session that a killed baton left in progress, with work not
/// committed, has its gates run by the next run before anything else: its work
/// committed for it, recorded as killed, and the run goes on from there.
#[tokio::test(flavor = "current_thread")]
async fn a_session_left_by_a_killed_run_is_finished_by_the_next_one() {
    let p = Project::new("");
    let (end, _) = p
        .run(initializer(&features(&[false, false, false])), 1)
        .await;
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}");
    // What `kill -9` leaves behind mid-session: the session in progress in the
    // record, and half its work in the tree.
    let head = git(&p.dir, &["rev-parse", "HEAD"]).trim().to_string();
    let notes = std::fs::read_to_string(p.dir.join("claude-progress.txt")).unwrap();
    let mut state = p.state();
    state.in_progress = Some(InProgress {
        timing: Default::default(),
        number: 2,
        kind: SessionKind::Coding,
        started_ms: 1,
        head_before: Some(head),
        notes_before: notes,
        sweep: None,
        target: Some(1),
        base_check: None,
    });
    state.save(&p.dir).unwrap();
    std::fs::write(p.dir.join(baton_records::layout::transcript(2)), "").unwrap();
    std::fs::create_dir_all(p.dir.join("src")).unwrap();
    std::fs::write(p.dir.join("src/half.txt"), "half of feature 1\n").unwrap();

    let (end, said) = p.run(honest(1, &[true, false, false]), 1).await;
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}");
    assert!(said.contains("resuming: session 0002"), "{said}");
    let state = p.state();
    let killed = &state.sessions[1];
    assert_eq!((killed.number, killed.outcome), (2, SessionOutcome::Killed));
    assert_eq!(killed.gates.leftover_files, ["src/half.txt"]);
    assert!(killed.gates.leftover_commit.is_some());
    // Then the next session ran and its flip was accepted.
    assert_eq!(state.sessions[2].number, 3);
    assert_eq!(state.sessions[2].gates.flipped, [1]);
    assert!(state.in_progress.is_none());
    assert_eq!(git(&p.dir, &["status", "--porcelain"]), "");
    assert!(
        git(&p.dir, &["show", "HEAD~1", "--stat"]).contains("half.txt")
            || git(&p.dir, &["log", "--all", "--stat"]).contains("src/half.txt")
    );
}

/// A session that rewinds history (`git reset --hard` to before the last
/// session's commit, in a command the policy does not see as harmful, or a
/// script) is met by a rule that holds: the dropped commits are joined back, the
/// violation is recorded and briefed, and nothing earlier is lost.
#[tokio::test(flavor = "current_thread")]
async fn a_session_that_rewinds_history_has_it_joined_back_and_recorded() {
    let p = Project::new("");
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    steps.push(Step::Reply(Reply::tool(
        "Bash",
        json!({"command": "git reset -q --hard HEAD~1 && echo 'Session: started over.' >> claude-progress.txt && git commit -qam 'Start over'"}),
    )));
    steps.push(Step::Reply(Reply::text("Started over.")));
    steps.push(Step::Reply(Reply::text("Reading the brief.")));
    let (_, said) = p.run(steps, 4).await;
    assert!(said.contains("the session rewrote history"), "{said}");
    // The first coding session's commit is in the branch again.
    let log = git(&p.dir, &["log", "--format=%s"]);
    assert!(log.contains("Implement feature 1"), "{log}");
    assert!(
        log.contains("baton: rejoin the history session 3 rewound"),
        "{log}"
    );
    let kinds = p.kinds();
    assert!(kinds.contains(&LedgerKind::Violation), "{kinds:?}");
    let state = p.state();
    assert!(state.sessions[2].gates.rewound.is_some());
}

/// `kill -9` during the initializer, after it wrote its list: the next run does not
/// adopt that list as someone else's; it runs the killed initializer's gates, which
/// accept it (or refuse it and run the initializer again), saying which, once.
#[tokio::test(flavor = "current_thread")]
async fn a_list_a_killed_initializer_wrote_is_judged_by_its_gates_not_adopted() {
    let p = Project::new("");
    let list = features(&[false, false, false]);
    std::fs::write(p.dir.join("feature_list.json"), &list).unwrap();
    std::fs::write(p.dir.join("init.sh"), "#!/bin/sh\necho started\n").unwrap();
    let mut state = p.state();
    state.in_progress = Some(InProgress {
        timing: Default::default(),
        number: 1,
        kind: SessionKind::Initializer,
        started_ms: 1,
        head_before: None,
        notes_before: String::new(),
        sweep: None,
        target: None,
        base_check: None,
    });
    state.save(&p.dir).unwrap();
    let transcript = p.dir.join(baton_records::layout::transcript(1));
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    std::fs::write(transcript, "").unwrap();

    let (end, said) = p.run(honest(1, &[true, false, false]), 1).await;
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}\n{said}");
    assert!(!said.contains("adopted"), "{said}");
    assert!(!said.contains("not accepted"), "{said}");
    assert!(
        said.contains("resuming: session 0001 (initializer)"),
        "{said}"
    );
    let state = p.state();
    assert_eq!(state.sessions[0].kind, SessionKind::Initializer);
    assert_eq!(state.sessions[0].outcome, SessionOutcome::Killed);
    assert_eq!(state.sessions[1].gates.flipped, [1]);
    let kinds = p.kinds();
    assert!(kinds.contains(&LedgerKind::Accepted), "{kinds:?}");
}

/// Feature 1's check needs `src/feature1.txt`, feature 2 has none.
fn checked_features(passes: &[bool]) -> String {
    let list: Vec<serde_json::Value> = passes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut f = json!({"category": "functional",
                               "description": format!("Feature {}", i + 1),
                               "steps": ["open the app", "check the result"],
                               "passes": p});
            if i == 0 {
                f["verify"] = json!("test -f src/feature1.txt");
            }
            f
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap() + "\n"
}

/// A coding session in the scripted model's words: `command`, the list as
/// `passes`, the notes, a commit.
fn session_doing(command: &str, passes: &[bool], n: usize) -> Vec<Step> {
    vec![
        Step::Reply(Reply::tools(&[
            ("Bash", json!({ "command": command })),
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": checked_features(passes)}),
            ),
            (
                "Bash",
                json!({"command": format!("echo 'Session: feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Feature {n}'")}),
            ),
        ])),
        Step::Reply(Reply::text("Done.")),
    ]
}

/// "Complete" is proven: the last session flips the last feature and breaks an
/// earlier one it did not touch (its check's file deleted). Every passing
/// feature's check runs before the run may say complete, so the regression is
/// set back, recorded and the run goes on instead of ending "complete".
#[tokio::test(flavor = "current_thread")]
async fn a_regression_the_last_session_planted_is_found_before_complete() {
    let p = Project::new("");
    let mut steps = initializer(&checked_features(&[false, false]));
    steps.extend(session_doing(
        "mkdir -p src && echo one > src/feature1.txt",
        &[true, false],
        1,
    ));
    steps.extend(session_doing(
        "rm src/feature1.txt && echo two > src/feature2.txt",
        &[true, true],
        2,
    ));
    let toml = baton_testkit::trusting(
        "[project]\nfeatures = 2\nmin_features = 2\n[run]\npause_secs = 0\n",
    );
    std::fs::write(p.dir.join("baton.toml"), toml).unwrap();
    let (end, said) = p.run(steps, 3).await;
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}\n{said}");
    assert!(
        said.contains("sweep before declaring the project complete: #1 broke"),
        "{said}"
    );
    let list = Files::new(p.dir.clone(), Config::load(&p.dir).unwrap().project)
        .load_accepted()
        .unwrap()
        .unwrap();
    assert_eq!(
        list.features.iter().map(|f| f.passes).collect::<Vec<_>>(),
        [false, true]
    );
    assert!(p.kinds().contains(&LedgerKind::Regression));
    let log = git(&p.dir, &["log", "--format=%s"]);
    assert!(
        log.contains("baton: regression sweep before declaring the project complete set back #1"),
        "{log}"
    );
}

/// The provider's quota runs out during the independent verifier (on by
/// default): the session is recorded, its unproven flip reverted with that
/// reason, and the run ends as a limit (exit 2), not as an error (exit 1) with
/// the session left to finish.
#[tokio::test(flavor = "current_thread")]
async fn a_quota_wall_in_the_verifier_ends_the_run_as_a_limit_with_the_flip_reverted() {
    let p = Project::with_toml(
        "[project]\nfeatures = 3\nmin_features = 3\n[run]\npause_secs = 0\nmax_wait_hours = 0.01\n",
    );
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    steps.push(Step::quota_wall(std::time::Duration::from_secs(3_600)));
    let (end, said) = p.run(steps, 5).await;
    match &end {
        RunEnd::Limit(why) => assert!(why.contains("quota"), "{why}\n{said}"),
        other => panic!("{other:?}\n{said}"),
    }
    assert_eq!(end.exit_code(), 2);
    assert!(said.contains("verifier could not run"), "{said}");
    let state = p.state();
    assert!(state.in_progress.is_none());
    let coding = &state.sessions[1];
    assert!(coding.gates.flipped.is_empty(), "{:?}", coding.gates);
    assert!(
        coding.gates.unproven[0]
            .1
            .contains("the independent verifier could not run"),
        "{:?}",
        coding.gates.unproven
    );
    let list = Files::new(p.dir.clone(), Config::load(&p.dir).unwrap().project)
        .load_accepted()
        .unwrap()
        .unwrap();
    assert!(!list.features[0].passes);
}

/// A project of five features whose first three are built and pass, each with
/// the check `test -f src/fN.txt` after `slow(N)`; `verify` is added to its
/// `[verify]` table.
fn three_built(verify: &str, slow: impl Fn(usize) -> &'static str) -> Project {
    let p = Project::with_toml(&baton_testkit::trusting(&format!(
        "[project]\nfeatures = 5\nmin_features = 5\n[run]\npause_secs = 0\nstall_sessions = 0\n[verify]\n{verify}"
    )));
    std::fs::create_dir_all(p.dir.join("src")).unwrap();
    let list: Vec<serde_json::Value> = (1..=5)
        .map(|n| {
            let mut f = json!({"category": "functional", "description": format!("Feature {n}"),
                               "steps": ["use it"], "passes": n <= 3});
            if n <= 3 {
                f["verify"] = json!(format!("{}test -f src/f{n}.txt", slow(n)));
                std::fs::write(p.dir.join(format!("src/f{n}.txt")), "built\n").unwrap();
            }
            f
        })
        .collect();
    std::fs::write(
        p.dir.join("feature_list.json"),
        serde_json::to_string_pretty(&list).unwrap(),
    )
    .unwrap();
    git(&p.dir, &["add", "-A"]);
    git(
        &p.dir,
        &["commit", "-qm", "a project with three features built"],
    );
    p
}

/// `sessions` sessions: the first removes `src/f3.txt` (breaking #3's check), the
/// others look around.
fn tidy_up_breaking_f3(sessions: usize) -> Vec<Step> {
    let mut steps = vec![
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": "rm src/f3.txt && echo 'Session 1: tidied up.' >> claude-progress.txt && git add -A && git commit -qm 'Tidy up'"}),
        )),
        Step::Reply(Reply::text("Tidied up.")),
    ];
    steps.extend((1..sessions).map(|_| Step::Reply(Reply::text("Looked around."))));
    steps
}

/// `sessions`: the first writes only its notes, the second removes `src/f3.txt`
/// (breaking #3's check), the rest look around.
fn notes_then_breaking_f3(sessions: usize) -> Vec<Step> {
    let mut steps = vec![
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": "echo 'Session 1: read the code.' >> claude-progress.txt && git add -A && git commit -qm 'Notes'"}),
        )),
        Step::Reply(Reply::text("Noted.")),
    ];
    steps.extend(tidy_up_breaking_f3(sessions - 1));
    steps
}

/// The sweep before a session leaves out a check whose command passed on the
/// same tree (`[verify] skip_unchanged`, on by default): after a session that
/// wrote only its progress notes, no check runs; after one that removed a file,
/// every check runs again (the digest is the whole tree's) and the regression is
/// found at once. Off, every sweep runs every check.
#[tokio::test(flavor = "current_thread")]
async fn a_sweep_leaves_out_checks_whose_tree_is_unchanged_and_reruns_them_after_a_change() {
    let p = three_built("", |_| "");
    let (end, said) = p.run(notes_then_breaking_f3(3), 3).await;
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}\n{said}");
    let sweeps: Vec<&str> = said.lines().filter(|l| l.starts_with("sweep")).collect();
    assert_eq!(sweeps.len(), 3, "{said}");
    assert!(
        sweeps[0].contains("3 passing feature(s) re-checked"),
        "{said}"
    );
    assert!(
        sweeps[1].contains("3 passing feature(s) unchanged since their checks passed, none re-run"),
        "{said}"
    );
    assert!(sweeps[2].contains("#3 broke"), "{said}");
    let state = State::load(&p.dir).unwrap();
    let before_2 = state.sessions[1].sweep.as_ref().unwrap();
    assert_eq!(before_2.unchanged, vec![1, 2, 3], "{before_2:?}");
    assert!(before_2.passed.is_empty() && before_2.check_ms.is_empty());
    let before_3 = state.sessions[2].sweep.as_ref().unwrap();
    assert_eq!(before_3.passed, vec![1, 2], "{before_3:?}");
    assert_eq!(before_3.failed[0].feature, 3);

    let off = three_built("skip_unchanged = false\n", |_| "");
    let (_, said) = off.run(notes_then_breaking_f3(2), 2).await;
    let sweeps: Vec<&str> = said.lines().filter(|l| l.starts_with("sweep")).collect();
    assert!(
        sweeps[1].contains("3 passing feature(s) re-checked"),
        "{said}"
    );
}

/// The sweep before each session is bounded (`[verify] sweep_checks`) and takes
/// the checks in turn, so a regression in a feature no session touches is found
/// within a bounded number of sessions: here one check a sweep, three passing
/// features, and the regression planted in the third is found by the third sweep.
#[tokio::test(flavor = "current_thread")]
async fn a_bounded_sweep_takes_the_checks_in_turn_and_finds_a_regression_in_time() {
    let p = three_built("sweep_checks = 1\n", |_| "");
    let (end, said) = p.run(tidy_up_breaking_f3(3), 3).await;
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}\n{said}");
    // One check a sweep, in turn: #1 before session 1, #2 before session 2, and
    // #3, the one session 1 broke, before session 3.
    let sweeps: Vec<&str> = said.lines().filter(|l| l.starts_with("sweep")).collect();
    assert_eq!(sweeps.len(), 3, "{said}");
    assert!(
        sweeps[0].contains("1 passing feature(s) re-checked"),
        "{said}"
    );
    assert!(
        sweeps[1].contains("1 passing feature(s) re-checked"),
        "{said}"
    );
    assert!(sweeps[2].contains("#3 broke"), "{said}");
    let log = git(&p.dir, &["log", "--format=%s"]);
    assert!(
        log.contains("baton: regression sweep before session 3 set back #3"),
        "{log}"
    );
}

/// `[verify] sweep_secs` bounds a sweep, but never to nothing: a check that
/// takes longer than the whole box (#1 here, 2 s against 1 s) runs to its end as
/// the sweep's one check, the rest wait for the next sweep, which starts after
/// it and finds what session 1 broke. A box that cut the slow check every time
/// skipped every check in every sweep, and #3's regression was never found.
#[tokio::test(flavor = "current_thread")]
async fn a_check_longer_than_the_sweeps_time_box_does_not_starve_the_rest() {
    let p = three_built(
        "sweep_secs = 1\n",
        |n| if n == 1 { "sleep 2 && " } else { "" },
    );
    let (end, said) = p.run(tidy_up_breaking_f3(2), 2).await;
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}\n{said}");
    let sweeps: Vec<&str> = said.lines().filter(|l| l.starts_with("sweep")).collect();
    assert_eq!(sweeps.len(), 2, "{said}");
    assert!(
        sweeps[0].contains("1 passing feature(s) re-checked, all still pass (2 more not reached within [verify] sweep_secs"),
        "{said}"
    );
    assert!(sweeps[1].contains("#3 broke"), "{said}");
    let log = git(&p.dir, &["log", "--format=%s"]);
    assert!(
        log.contains("baton: regression sweep before session 2 set back #3"),
        "{log}"
    );
    // The sweep's time is recorded with the session it came before: the 2 s
    // check at least (a lower bound, which no load can break).
    let state = State::load(&p.dir).unwrap();
    let first = state.sessions[0].sweep.as_ref().unwrap();
    assert!(first.ms >= 2_000, "{first:?}");
    // And `baton status` shows it.
    let files = Files::new(p.dir.clone(), Config::load(&p.dir).unwrap().project);
    let status = baton_harness::status::status(&files).unwrap();
    let json = serde_json::to_value(&status.sessions[0]).unwrap();
    assert!(json["sweep_secs"].as_f64().unwrap() >= 2.0, "{json}");
}
