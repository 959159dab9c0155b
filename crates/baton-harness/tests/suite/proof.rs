//! Proof of flips with baton's defaults: a flip counts only with a check that
//! failed before the work, or the independent verifier's pass backed by work of
//! its own; everything else is reverted and recorded. In process, against the
//! test kit's scripted coder and its honest scripted verifier.

use baton_config::Config;
use baton_harness::files::Files;
use baton_harness::run::RunEnd;
use baton_records::{LedgerEntry, LedgerKind, Proof, State};
use baton_testkit::scenario::{
    features, honest, honest_verifier, initializer, is_verifier, working,
};
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::json;

use super::run::Project;
use super::support::git;

/// What proof tests read of a project's records.
trait Records {
    fn of(&self, kind: LedgerKind) -> Vec<LedgerEntry>;
    fn passes(&self) -> Vec<bool>;
}

impl Records for Project {
    fn of(&self, kind: LedgerKind) -> Vec<LedgerEntry> {
        self.ledger()
            .into_iter()
            .filter(|e| e.kind == kind)
            .collect()
    }

    fn passes(&self) -> Vec<bool> {
        let text = std::fs::read_to_string(self.dir.join("feature_list.json")).unwrap();
        let list: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        list.iter().map(|f| f["passes"] == true).collect()
    }
}

const FOUR: &str = "[project]\nfeatures = 4\nmin_features = 4\n[run]\npause_secs = 0\n";

/// The scenario: baton's defaults, features without verify commands, and
/// a first coding session that builds feature 1 but flips 1 and 4. The verifier
/// catches the lie, the flip of 4 is reverted with its reason in the next brief,
/// and the run goes on to really finish: every feature built, every flip proven.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_false_flip_does_not_survive_the_defaults_and_the_project_really_finishes() {
    let p = Project::with_toml(FOUR);
    let mut steps = initializer(&features(&[false; 4]));
    steps.extend(honest(1, &[true, false, false, true]));
    steps.extend(honest(2, &[true, true, false, false]));
    steps.extend(honest(3, &[true, true, true, false]));
    steps.extend(honest(4, &[true, true, true, true]));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(honest_verifier)
        .start(steps);
    let (end, said) = p.run_on(&server, 20).await;
    assert_eq!(end, RunEnd::Complete, "{said}");
    assert_eq!(p.passes(), vec![true; 4]);
    for n in 1..=4 {
        assert!(
            p.dir.join(format!("src/feature{n}.txt")).is_file(),
            "feature {n}"
        );
    }
    // The lie was caught in the first coding session and recorded.
    let rejected = p.of(LedgerKind::VerifierRejected);
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!((rejected[0].session, rejected[0].feature), (2, Some(4)));
    assert!(
        rejected[0].detail.contains("nothing was built"),
        "{rejected:?}"
    );
    // Every accepted flip names its proof: the verifier, with what it ran.
    let flips = p.of(LedgerKind::Flip);
    assert_eq!(
        flips.iter().map(|e| e.feature.unwrap()).collect::<Vec<_>>(),
        vec![1, 2, 3, 4]
    );
    for f in &flips {
        match &f.proof {
            Some(Proof::Verifier { tools, reason, .. }) => {
                assert_eq!(tools, &vec!["Bash".to_string()], "{f:?}");
                assert!(reason.contains("is built"), "{f:?}");
            }
            other => panic!("feature {:?} proven by {other:?}", f.feature),
        }
    }
    // The next brief told the coder why.
    let briefs: Vec<String> = server
        .requests()
        .iter()
        .filter(|r| !is_verifier(r))
        .map(|r| r.first_user_text())
        .collect();
    assert!(
        briefs
            .iter()
            .any(|b| b.contains("The independent verifier REJECTED #4")),
        "no brief told the coder"
    );
    // One verifier session per coding session that flipped something.
    let state = State::load(&p.dir).unwrap();
    let kinds: Vec<&str> = state.sessions.iter().map(|s| s.kind.name()).collect();
    assert_eq!(kinds.len(), 5, "{kinds:?}");
}

/// A flip nothing proves is reverted when the verifier is off; a check that
/// failed before the work proves its feature; a check that passed already
/// proves nothing and is recorded as vacuous.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_prove_only_what_failed_before_the_work_and_the_rest_is_reverted() {
    let p = Project::with_toml(&format!("{FOUR}[verify]\nagent = false\n"));
    let list = |passes: &[bool]| {
        let checks = [
            Some("grep -q built src/feature1.txt"),
            Some("printf ok | grep -q ok"),
            None,
            Some("grep -q built src/feature4.txt"),
        ];
        let v: Vec<serde_json::Value> = passes
            .iter()
            .zip(checks)
            .enumerate()
            .map(|(i, (p, c))| {
                let mut f = json!({"category": "functional",
                    "description": format!("Feature {}", i + 1),
                    "steps": ["open it", "check it"], "passes": p});
                if let Some(c) = c {
                    f["verify"] = json!(c);
                }
                f
            })
            .collect();
        serde_json::to_string_pretty(&v).unwrap() + "\n"
    };
    let session = |n: usize, passes: &[bool]| {
        vec![
            Step::Reply(Reply::tools(&[
                (
                    "Write",
                    json!({"file_path": format!("src/feature{n}.txt"), "content": "built\n"}),
                ),
                (
                    "Write",
                    json!({"file_path": "feature_list.json", "content": list(passes)}),
                ),
                (
                    "Bash",
                    json!({"command": format!("echo 'Session: feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Feature {n}'")}),
                ),
            ])),
            Step::Reply(Reply::text("Done.")),
        ]
    };
    let mut steps = initializer(&list(&[false; 4]));
    // Feature 1's check failed before and passes now: proven. Feature 3 (no
    // check) is flipped too: nothing proves it.
    steps.extend(session(1, &[true, false, true, false]));
    // Feature 2's check passes whatever the work: it passed before the work too.
    steps.extend(session(2, &[true, true, false, false]));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let (end, said) = p.run_on(&server, 3).await;
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?} {said}");
    assert_eq!(p.passes(), vec![true, false, false, false], "{said}");
    let flips = p.of(LedgerKind::Flip);
    assert_eq!(flips.len(), 1, "{flips:?}");
    // Replayed in clean checkouts: it failed at the session's base, which its
    // proof names.
    match &flips[0].proof {
        Some(Proof::Check {
            command,
            author,
            reference: Some(r),
        }) => {
            assert_eq!(command, "grep -q built src/feature1.txt");
            assert_eq!(author, "the initializer");
            assert_eq!(r.what, "the session's base", "{r:?}");
            assert_eq!(r.commit.len(), 40, "{r:?}");
        }
        other => panic!("{other:?}"),
    }
    let unverified = p.of(LedgerKind::UnverifiedFlip);
    let which: Vec<(u32, Option<usize>)> =
        unverified.iter().map(|e| (e.session, e.feature)).collect();
    assert_eq!(which, vec![(2, Some(3)), (3, Some(2))], "{unverified:?}");
    assert!(unverified[0].detail.contains("it has no verify command"));
    assert!(unverified[0].detail.contains("[verify] agent = false"));
    assert!(unverified[1].detail.contains("already passed before"));
    let vacuous = p.of(LedgerKind::VacuousCheck);
    assert_eq!(vacuous.len(), 1, "{vacuous:?}");
    assert_eq!((vacuous[0].session, vacuous[0].feature), (3, Some(2)));
    assert!(said.contains("base check: #2's verify command passes before the work"));
    // No verifier session was asked for: it is off.
    assert_eq!(
        server.requests().iter().filter(|r| is_verifier(r)).count(),
        0
    );
}

/// With `[verify] trust_agent = true`, a flip nothing proves is taken on the
/// agent's word, and recorded as such.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trusting_the_agent_is_an_opt_in_that_the_record_names() {
    let p = Project::with_toml(&format!(
        "{FOUR}[verify]\nagent = false\ntrust_agent = true\n"
    ));
    let mut steps = initializer(&features(&[false; 4]));
    steps.extend(honest(1, &[true, false, false, true]));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let (_, said) = p.run_on(&server, 2).await;
    assert_eq!(p.passes(), vec![true, false, false, true], "{said}");
    let proofs: Vec<Option<Proof>> = p
        .of(LedgerKind::Flip)
        .into_iter()
        .map(|e| e.proof)
        .collect();
    assert_eq!(proofs, vec![Some(Proof::Trusted), Some(Proof::Trusted)]);
}

/// The leftover commit keeps the session's work and leaves junk out, untracked
/// and recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leftover_commit_leaves_dependencies_logs_and_databases_out() {
    let p = Project::with_toml(&format!(
        "{FOUR}[verify]\nagent = false\ntrust_agent = true\n"
    ));
    let mut steps = initializer(&features(&[false; 4]));
    steps.push(Step::Reply(Reply::tools(&[(
        "Bash",
        json!({"command": "mkdir -p src node_modules/left-pad data && echo work > src/app.js && echo dep > node_modules/left-pad/index.js && echo log > server.log && echo 1 > server.pid && echo db > data/app.db && echo notes >> claude-progress.txt"}),
    )])));
    steps.push(Step::Reply(Reply::text("I stop here.")));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let (_, said) = p.run_on(&server, 2).await;
    let committed = git(&p.dir, &["show", "--name-only", "--format=", "HEAD"]);
    let committed: Vec<&str> = committed.lines().collect();
    assert_eq!(
        committed,
        vec!["claude-progress.txt", "src/app.js"],
        "{said}"
    );
    let state = State::load(&p.dir).unwrap();
    let g = &state.sessions.last().unwrap().gates;
    assert_eq!(g.leftover_files, vec!["claude-progress.txt", "src/app.js"]);
    assert_eq!(g.left_out.len(), 4, "{:?}", g.left_out);
    assert!(
        g.left_out[0].starts_with("node_modules/ (1 file(s)"),
        "{:?}",
        g.left_out
    );
    for junk in [
        "node_modules/left-pad/index.js",
        "server.log",
        "server.pid",
        "data/app.db",
    ] {
        assert!(p.dir.join(junk).is_file(), "{junk} was lost");
    }
    assert!(said.contains("left out of baton's commit"), "{said}");
}

/// What proof costs: on an honest scripted run whose coding sessions work the way
/// the coding prompt asks, with usage counted from the real sizes of requests
/// and replies, the verifier's share of the run's tokens and cost. Printed, and
/// held at about a quarter at most: one verifier session checks all of a
/// session's unproven flips, and flips proven by their checks need none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verifiers_share_of_an_honest_runs_cost_is_at_most_a_quarter() {
    let p = Project::with_toml(FOUR);
    let mut steps = initializer(&features(&[false; 4]));
    let mut passes = vec![false; 4];
    for n in 1..=4 {
        passes[n - 1] = true;
        steps.extend(working(n, &passes));
    }
    let server = ScriptedServer::builder(Wire::Anthropic)
        .real_usage()
        .respond(honest_verifier)
        .start(steps);
    let (end, said) = p.run_on(&server, 20).await;
    assert_eq!(end, RunEnd::Complete, "{said}");
    let state = State::load(&p.dir).unwrap();
    let cost: f64 = state.sessions.iter().map(|s| s.cost_usd).sum();
    let verifier: f64 = state.sessions.iter().map(|s| s.verifier_cost_usd).sum();
    let (mut verifier_tokens, mut all_tokens) = (0u64, 0u64);
    for r in server.requests() {
        let t = r.tokens;
        all_tokens += t;
        if is_verifier(&r) {
            verifier_tokens += t;
        }
    }
    let share = verifier / (cost + verifier);
    let token_share = verifier_tokens as f64 / all_tokens as f64;
    println!(
        "verifier: ${verifier:.4} of ${:.4} ({:.0} % of cost), {verifier_tokens} of {all_tokens} prompt tokens ({:.0} %)",
        cost + verifier,
        share * 100.0,
        token_share * 100.0
    );
    assert!(verifier > 0.0, "the verifier ran: {said}");
    assert!(
        share <= 0.25,
        "the verifier costs {:.0} % of the run",
        share * 100.0
    );
    assert!(
        token_share <= 0.25,
        "the verifier reads {:.0} % of the tokens",
        token_share * 100.0
    );
}

const SIX_ASKED: &str = "[project]\nfeatures = 6\nmin_features = 3\n[run]\npause_secs = 0\n";

/// An initializer that lists fewer features than asked is followed by a
/// list-append session before any coding: a short list is never silently taken.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_list_gets_an_append_session_before_coding() {
    let p = Project::with_toml(&baton_testkit::trusting(SIX_ASKED));
    let mut steps = initializer(&features(&[false; 3]));
    steps.push(Step::Reply(Reply::tool(
        "Write",
        json!({"file_path": "feature_list.json", "content": features(&[false; 6])}),
    )));
    steps.push(Step::Reply(Reply::text("Appended the rest.")));
    steps.extend(honest(1, &[true, false, false, false, false, false]));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let (_, said) = p.run_on(&server, 3).await;
    assert!(
        said.contains("the list has 3 of the 6 features asked"),
        "{said}"
    );
    assert!(said.contains("appended 3 feature(s): #4, #5, #6"), "{said}");
    let state = State::load(&p.dir).unwrap();
    let kinds: Vec<&str> = state.sessions.iter().map(|s| s.kind.name()).collect();
    assert_eq!(kinds, vec!["initializer", "planner", "coding"]);
    let added: Vec<Option<usize>> = p.of(LedgerKind::Added).iter().map(|e| e.feature).collect();
    assert_eq!(added, vec![Some(4), Some(5), Some(6)]);
    assert_eq!(p.passes().len(), 6);
    // The planner was asked for the rest, not told to change the spec.
    let asked = server.requests()[2].first_user_text();
    assert!(asked.contains("has 3 entries; 6 were asked"), "{asked}");
    assert_eq!(
        std::fs::read_to_string(p.dir.join("app_spec.txt")).unwrap(),
        "Build a tiny app.\n"
    );
}

/// A list-append session that says the list covers the spec ends the appending;
/// status says how many of the features asked were listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planner_that_says_the_spec_is_covered_ends_the_appending() {
    let p = Project::with_toml(&baton_testkit::trusting(SIX_ASKED));
    let mut steps = initializer(&features(&[false; 3]));
    steps.push(Step::Reply(Reply::text(
        "Every part of the spec has an entry.\nSPEC COVERED",
    )));
    steps.extend(honest(1, &[true, false, false]));
    steps.extend(honest(2, &[true, true, false]));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let (_, said) = p.run_on(&server, 4).await;
    assert!(
        said.contains("the planner says the list covers the spec"),
        "{said}"
    );
    let state = State::load(&p.dir).unwrap();
    assert!(state.list_covered);
    let kinds: Vec<&str> = state.sessions.iter().map(|s| s.kind.name()).collect();
    assert_eq!(kinds, vec!["initializer", "planner", "coding", "coding"]);
    let cfg = Config::load(&p.dir).unwrap();
    let files = Files::new(p.dir.clone(), cfg.project);
    let text = baton_harness::status::render(&baton_harness::status::status(&files).unwrap());
    assert!(
        text.contains("features  2/3 passing (66%) · 3 of 6 asked"),
        "{text}"
    );
}

/// List-append sessions that add nothing usable are tried twice, then coding
/// starts with the list there is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_append_sessions_that_fail_twice_leave_the_list_as_it_is() {
    let p = Project::with_toml(&baton_testkit::trusting(SIX_ASKED));
    let mut steps = initializer(&features(&[false; 3]));
    steps.push(Step::Reply(Reply::text("I could not think of anything.")));
    steps.push(Step::Reply(Reply::text("Still nothing.")));
    steps.extend(honest(1, &[true, false, false]));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let (_, said) = p.run_on(&server, 4).await;
    assert!(
        said.contains("coding starts with the 3 features listed"),
        "{said}"
    );
    let state = State::load(&p.dir).unwrap();
    let kinds: Vec<&str> = state.sessions.iter().map(|s| s.kind.name()).collect();
    assert_eq!(kinds, vec!["initializer", "planner", "planner", "coding"]);
    assert_eq!(p.passes(), vec![true, false, false]);
}
