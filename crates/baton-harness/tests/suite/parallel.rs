//! Many agents on one project, in process: a `Parallel` run against the test
//! kit's scripted model answering several sessions at once (each in its own
//! working copy, told apart by the feature its brief hands it), with real git and
//! bash.

use baton_testkit::Bounded as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_agent::pricing::PriceTable;
use baton_config::Config;
use baton_harness::files::Files;
use baton_harness::parallel::{AgentParts, Parallel, ParallelParts, Workspace};
use baton_harness::run::{Reporter, RunEnd, RunOptions};
use baton_records::{IntegrationOutcome, LedgerKind, State};
use baton_testkit::scenario::parallel::{initializer, is_for, list, session, token};
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use tokio_util::sync::CancellationToken;

use super::support::{Lines, Plain, client, git};

fn project(features: usize) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().canonicalize().unwrap();
    let toml = format!(
        "[project]\nfeatures = {features}\nmin_features = {features}\n[run]\npause_secs = 0\nstall_sessions = 0\n"
    );
    std::fs::write(dir.join("baton.toml"), toml).unwrap();
    std::fs::write(dir.join("app_spec.txt"), "Build a tiny app.\n").unwrap();
    std::fs::write(dir.join(".gitignore"), ".baton/\n").unwrap();
    git(&dir, &["init", "-q"]);
    (t, dir)
}

/// A scripted model for `independent + shared` features: the initializer on the
/// main script, each feature's sessions on a hook of its own (two sessions' worth
/// for the shared ones, which may be requeued after a conflict).
fn model(independent: usize, shared: usize, think: Duration) -> ScriptedServer {
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(think);
    for n in 1..=independent + shared {
        let is_shared = n > independent;
        let mut steps: Vec<Step> = session(n, is_shared);
        if is_shared {
            steps.extend(session(n, true));
        }
        b = b.when(move |r| is_for(r, n), steps);
    }
    b.start(initializer(&list(independent, shared)))
}

/// What a `Parallel` over one project directory borrows, owned.
struct Kit {
    dir: PathBuf,
    cfg: Config,
    client: baton_agent::client::ModelClient,
    prices: PriceTable,
    main: AgentParts,
}

impl Kit {
    fn new(dir: &Path, server: &ScriptedServer) -> Self {
        let cfg = Config::load(dir).unwrap();
        Self {
            dir: dir.to_path_buf(),
            client: client(server.base_url(), &cfg),
            prices: PriceTable::new(&cfg.prices),
            main: Plain.parts(0, dir, Vec::new()).unwrap(),
            cfg,
        }
    }

    /// A run of `agents` agents, at most `max_sessions` sessions.
    fn parallel<'a>(
        &'a self,
        agents: u32,
        reporter: &'a dyn Reporter,
        max_sessions: Option<u32>,
    ) -> Parallel<'a> {
        self.parallel_until(agents, reporter, max_sessions, CancellationToken::new())
    }

    /// [`Kit::parallel`], stopped when `stop` is cancelled.
    fn parallel_until<'a>(
        &'a self,
        agents: u32,
        reporter: &'a dyn Reporter,
        max_sessions: Option<u32>,
        stop: CancellationToken,
    ) -> Parallel<'a> {
        Parallel::new(ParallelParts {
            files: Files::new(self.dir.clone(), self.cfg.project.clone()),
            cfg: self.cfg.clone(),
            agents,
            client: Some(&self.client),
            prices: &self.prices,
            workspace: &Plain,
            main: &self.main,
            reporter,
            stop,
            opts: RunOptions {
                max_sessions,
                ..RunOptions::default()
            },
        })
    }
}

async fn run(dir: &Path, server: &ScriptedServer, agents: u32) -> (RunEnd, String) {
    let kit = Kit::new(dir, server);
    let lines = Lines::default();
    let end = kit.parallel(agents, &lines, Some(40)).run().await.unwrap();
    // The live view was told what each agent did: its feature, turns, tokens, tools.
    let statuses = lines.statuses();
    for a in 1..=agents {
        assert!(
            statuses
                .iter()
                .any(|(x, s)| *x == a && s.contains(" · turn 2 · ") && s.contains(" tokens")),
            "agent {a}: {statuses:?}"
        );
    }
    assert!(
        statuses.iter().any(|(_, s)| s.ends_with(" · Bash")),
        "{statuses:?}"
    );
    (end, lines.said())
}

/// The issue's scenario: 12 features (10 independent, 2 appending to one shared
/// file) with 4 agents. Every feature passes, each independent one implemented
/// once; the two shared ones both pass after the conflict between them; the main
/// branch holds all the work, never broken, and nothing an agent committed is lost.
#[tokio::test(flavor = "current_thread")]
async fn four_agents_finish_twelve_features_with_everything_on_the_main_branch() {
    let (_t, dir) = project(12);
    let server = model(10, 2, Duration::from_millis(30));
    let (end, said) = run(&dir, &server, 4).await;
    assert_eq!(end, RunEnd::Complete, "{said}");

    // Every feature passes, in the accepted list and on the main branch's list.
    let text = std::fs::read_to_string(dir.join("feature_list.json")).unwrap();
    let on_main = baton_records::FeatureList::parse(&text, "feature_list.json").unwrap();
    assert!(on_main.all_pass(), "{text}");
    // The main branch holds every feature's work, and is clean.
    for n in 1..=10 {
        assert!(dir.join(format!("src/{}.txt", token(n))).is_file(), "{n}");
    }
    let shared = std::fs::read_to_string(dir.join("shared.txt")).unwrap();
    assert!(
        shared.contains("F11\n") && shared.contains("F12\n"),
        "{shared}"
    );
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
    // Every session's notes survive the merges (a union of both sides).
    let notes = std::fs::read_to_string(dir.join("claude-progress.txt")).unwrap();
    for n in 1..=12 {
        assert!(notes.contains(&format!("{} done", token(n))), "{notes}");
    }

    let state = State::load(&dir).unwrap();
    let coding: Vec<_> = state
        .sessions
        .iter()
        .filter(|s| s.agent.is_some())
        .collect();
    // The agents worked at once: more than one of them ran sessions.
    let agents: std::collections::BTreeSet<u32> = coding.iter().filter_map(|s| s.agent).collect();
    assert!(agents.len() > 1, "{agents:?}");
    // Each independent feature was implemented once.
    for n in 1..=10 {
        let times = coding.iter().filter(|s| s.target == Some(n)).count();
        assert_eq!(times, 1, "feature {n}: {said}");
    }
    // Numbers are the project's own, unique across the agents.
    let mut numbers: Vec<u32> = state.sessions.iter().map(|s| s.number).collect();
    numbers.dedup();
    assert_eq!(numbers.len(), state.sessions.len());
    // A flip that conflicted was requeued, its branch kept, and finished later.
    let requeued: Vec<_> = coding
        .iter()
        .filter(|s| {
            s.integration
                .as_ref()
                .is_some_and(|i| i.outcome == IntegrationOutcome::Conflict)
        })
        .collect();
    for s in &requeued {
        let kept = s.integration.as_ref().unwrap().kept.clone().unwrap();
        assert!(
            !git(&dir, &["rev-parse", "--verify", &kept]).is_empty(),
            "{kept}"
        );
    }
    let kinds: Vec<LedgerKind> =
        baton_records::ledger::read(&dir.join(baton_records::layout::LEDGER))
            .unwrap()
            .entries
            .iter()
            .map(|e| e.kind)
            .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == LedgerKind::Flip).count(),
        12,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| **k == LedgerKind::Requeued).count(),
        requeued.len()
    );
    // Every merged session's flip commit is on the main branch.
    for s in &coding {
        if let Some(c) = s.integration.as_ref().and_then(|i| i.commit.clone()) {
            git(&dir, &["merge-base", "--is-ancestor", &c, "HEAD"]);
        }
    }
    // The claims are gone; the transcripts are where `baton log` looks.
    assert_eq!(
        git(&dir, &["for-each-ref", "refs/baton/claims/"]).trim(),
        ""
    );
    for s in &coding {
        assert!(
            dir.join(baton_records::layout::transcript(s.number))
                .is_file(),
            "{}",
            s.number
        );
    }
}

/// Two features that edit the same lines, handed to two agents at once from the
/// same commit: one merges, the other conflicts, is requeued with its branch kept,
/// and passes in a later session begun from the new main branch.
#[tokio::test(flavor = "current_thread")]
async fn two_features_editing_the_same_lines_both_pass_after_a_conflict() {
    let (_t, dir) = project(2);
    // Planted merge attributes (every file a union) are not baton's: rewritten,
    // the conflict is still one.
    std::fs::create_dir_all(dir.join(".baton")).unwrap();
    std::fs::write(dir.join(".baton/merge-attributes"), "* merge=union\n").unwrap();
    let server = model(0, 2, Duration::from_millis(30));
    let (end, said) = run(&dir, &server, 2).await;
    assert_eq!(end, RunEnd::Complete, "{said}");
    let state = State::load(&dir).unwrap();
    let outcomes: Vec<(Option<usize>, IntegrationOutcome)> = state
        .sessions
        .iter()
        .filter_map(|s| s.integration.as_ref().map(|i| (s.target, i.outcome)))
        .collect();
    assert_eq!(outcomes.len(), 3, "{outcomes:?}\n{said}");
    assert_eq!(
        outcomes
            .iter()
            .filter(|(_, o)| *o == IntegrationOutcome::Conflict)
            .count(),
        1,
        "{outcomes:?}"
    );
    let conflicted = state
        .sessions
        .iter()
        .find(|s| {
            s.integration
                .as_ref()
                .is_some_and(|i| i.outcome == IntegrationOutcome::Conflict)
        })
        .unwrap();
    let i = conflicted.integration.as_ref().unwrap();
    assert!(i.detail.contains("shared.txt"), "{i:?}");
    assert!(conflicted.gates.flipped.is_empty());
    // The requeued feature's attempt is counted, with the reason for the brief.
    let shared = std::fs::read_to_string(dir.join("shared.txt")).unwrap();
    assert!(
        shared.contains("F01\n") && shared.contains("F02\n"),
        "{shared}"
    );
    assert!(said.contains("back to the queue"), "{said}");
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
}

/// Sessions that end while another is being merged are merged as one batch, with
/// one sweep. When that sweep fails, each is merged and swept alone, so the branch
/// that broke a check is the one requeued and the others land with every flip.
///
/// Four agents: #1's check sleeps the first time a sweep runs it, so #2, #3 and #4
/// end while #1 is merged; #2's file breaks #4's check. #4's check logs each run in
/// a sweep: once in the batch's, once when it is merged alone.
#[tokio::test(flavor = "current_thread")]
async fn sessions_ending_together_merge_as_one_batch_and_a_breaking_one_is_found_alone() {
    let (_t, dir) = project(4);
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("f04-checks.log");
    let slept = outside.path().join("slept");
    let mut features: Vec<serde_json::Value> = serde_json::from_str(&list(4, 0)).unwrap();
    // The checks of a sweep run in the integration worktree, `.baton/integrate`
    // (a copy's gates run them in the copy).
    let merging = "case \"$(pwd)\" in */.baton/integrate)";
    // #1's first sweep waits (up to 30 s) until the others' sessions have ended
    // and their branches are fetched into the project (the event after which an
    // agent hands its session to the run, not a guess of how long that takes):
    // they end while #1 is merged however slow the machine is.
    let ended = |n: usize| outside.path().join(format!("ended-{n}"));
    for n in 2..=3usize {
        features[n - 1]["verify"] = format!(
            "test -f src/F0{n}.txt && {{ case \"$(pwd)\" in */.baton/integrate) ;; *) touch {};; esac; }}",
            ended(n).display()
        )
        .into();
    }
    // Each agent's branch is fetched into the project (`refs/baton/agents/aN`)
    // after its session is on record and just before the agent reports it.
    let fetched = (1..=4)
        .map(|n| format!("[ -e ../../.git/refs/baton/agents/a{n} ]"))
        .collect::<Vec<_>>()
        .join(" && ");
    features[0]["verify"] = format!(
        "{merging} [ -e {s} ] || {{ touch {s}; for i in $(seq 300); do {fetched} && break; sleep 0.1; done; }};; esac; test -f src/F01.txt",
        s = slept.display()
    )
    .into();
    features[3]["verify"] = format!(
        "{merging} echo run >> {};; *) test -f src/F04.txt && touch {};; esac; test -f src/F04.txt && ! test -f src/F02.txt",
        log.display(),
        ended(4).display()
    )
    .into();
    let text = serde_json::to_string_pretty(&features).unwrap() + "\n";
    let mut b = ScriptedServer::builder(Wire::Anthropic);
    for n in 1..=4usize {
        let t = token(n);
        // The others work once #1's merge has begun (its first sweep marks it),
        // and each once the one before it has ended (its agent's branch fetched
        // into the project): #1 is merged first and the batch holds #2, #3, #4
        // in that order, whatever the machine's speed.
        let wait = if n == 1 {
            String::new()
        } else {
            format!(
                "for i in $(seq 600); do [ -e {m} ] && [ $(ls {r} 2>/dev/null | wc -l) -ge {before} ] && break; sleep 0.05; done; [ -e {m} ] && ",
                m = slept.display(),
                r = dir.join(".git/refs/baton/agents").display(),
                before = n - 1
            )
        };
        let work = format!("{wait}mkdir -p src && echo '{t}' > src/{t}.txt");
        b = b.when(
            move |r| is_for(r, n),
            baton_testkit::scenario::parallel::session_doing(n, &work),
        );
    }
    let server = b.start(initializer(&text));
    let kit = Kit::new(&dir, &server);
    let lines = Lines::default();
    // The initializer and one session per feature: #4 is not tried again.
    let end = kit.parallel(4, &lines, Some(5)).run().await.unwrap();
    let said = lines.said();
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}\n{said}");

    let state = State::load(&dir).unwrap();
    let outcome = |n: usize| {
        state
            .sessions
            .iter()
            .find(|s| s.target == Some(n))
            .and_then(|s| s.integration.clone())
            .unwrap_or_else(|| panic!("#{n}: {said}"))
    };
    for n in 1..=3 {
        assert_eq!(
            outcome(n).outcome,
            IntegrationOutcome::Merged,
            "#{n}\n{said}"
        );
    }
    let broken = outcome(4);
    assert_eq!(broken.outcome, IntegrationOutcome::Regressed, "{said}");
    assert!(broken.detail.contains("#4"), "{broken:?}");
    assert!(broken.kept.is_some(), "{broken:?}");
    // One run of #4's check in the batch's sweep, one when it was merged alone.
    let runs = std::fs::read_to_string(&log).unwrap();
    assert_eq!(runs.lines().count(), 2, "{runs}\n{said}");
    // The main branch holds #1 to #3 with their flips (each merged alone after the
    // batch failed keeps the flips merged before it), and not #4.
    let text = std::fs::read_to_string(dir.join("feature_list.json")).unwrap();
    let on_main = baton_records::FeatureList::parse(&text, "feature_list.json").unwrap();
    let passes: Vec<bool> = on_main.features.iter().map(|f| f.passes).collect();
    assert_eq!(passes, [true, true, true, false], "{text}\n{said}");
    for n in 1..=3 {
        assert!(dir.join(format!("src/{}.txt", token(n))).is_file(), "{n}");
    }
    assert!(!dir.join("src/F04.txt").exists());
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
}

/// A session whose branch conflicts with the main branch goes back to the queue
/// as soon as its merge fails, not when the rest of its batch has been merged
/// and swept.
///
/// Three agents: #1's check sleeps in the first sweep, so #2 and #3 end while #1
/// is merged and then form one batch. #1 and #2 both rewrite `shared.txt`: #2
/// conflicts with the main branch once #1 is on it. #3's check sleeps in the
/// batch's sweep; #2 is handed out again before #3 is merged.
#[tokio::test(flavor = "current_thread")]
async fn a_conflicting_session_is_requeued_before_its_batch_is_swept() {
    let (_t, dir) = project(3);
    let outside = tempfile::tempdir().unwrap();
    let mut features: Vec<serde_json::Value> = serde_json::from_str(&list(3, 0)).unwrap();
    let merging = "case \"$(pwd)\" in */.baton/integrate)";
    // #1's first sweep waits (up to 30 s) until #2's and #3's sessions are on
    // record in their copies (their gates done, each flipping its feature): the
    // event after which the agent hands the session to the run, not a guess of
    // how long that takes. #3's check in the batch's sweep waits (up to 30 s)
    // until #2's second session is at work.
    let slept = |n: usize| outside.path().join(format!("slept-{n}"));
    let ended = |n: usize| outside.path().join(format!("ended-{n}"));
    let again = outside.path().join("again-2");
    features[0]["verify"] = format!(
        "{merging} [ -e {s} ] || {{ touch {s}; for i in $(seq 300); do r=$(cat ../agents/*/.baton/state.json 2>/dev/null | tr -d ' \\n'); case \"$r\" in *'\"flipped\":[2]'*) case \"$r\" in *'\"flipped\":[3]'*) break;; esac;; esac; sleep 0.1; done; }};; esac; test -f src/F01.txt",
        s = slept(1).display(),
    )
    .into();
    features[2]["verify"] = format!(
        "{merging} [ -e {s} ] || {{ touch {s}; for i in $(seq 300); do [ -e {a} ] && break; sleep 0.1; done; }};; *) test -f src/F03.txt && touch {e};; esac; test -f src/F03.txt",
        s = slept(3).display(),
        a = again.display(),
        e = ended(3).display()
    )
    .into();
    features[1]["verify"] = format!(
        "{merging} ;; *) grep -q F02 shared.txt && touch {e};; esac; grep -q F02 shared.txt",
        e = ended(2).display()
    )
    .into();
    let text = serde_json::to_string_pretty(&features).unwrap() + "\n";
    let mut b = ScriptedServer::builder(Wire::Anthropic);
    for n in 1..=3usize {
        let t = token(n);
        // The others work once #1's merge has begun (its first sweep marks it):
        // #1 is on the main branch first. #3 works once #2 has ended too (two
        // agents' branches fetched into the project): #2 is first in the batch
        // and conflicts before #3 is merged, whatever the machine's speed.
        let refs = dir.join(".git/refs/baton/agents");
        let wait = match n {
            1 => String::new(),
            2 => format!(
                "for i in $(seq 600); do [ -e {m} ] && break; sleep 0.05; done; [ -e {m} ] && ",
                m = slept(1).display()
            ),
            _ => format!(
                "for i in $(seq 600); do [ -e {m} ] && [ $(ls {r} 2>/dev/null | wc -l) -ge 2 ] && break; sleep 0.05; done; [ -e {m} ] && ",
                m = slept(1).display(),
                r = refs.display()
            ),
        };
        let work = if n == 3 {
            format!("mkdir -p src && echo '{t}' > src/{t}.txt")
        } else {
            format!("mkdir -p src && echo '{t}' > src/{t}.txt && echo '{t}' > shared.txt")
        };
        let flip = format!(
            "sed -i '/\"description\": \"Feature {t}:/,/\"passes\"/ s/\"passes\": false/\"passes\": true/' feature_list.json"
        );
        let step = Step::Reply(Reply::tool(
            "Bash",
            serde_json::json!({"command": format!("{wait}{work} && {flip} && echo 'Session: {t} done.' >> claude-progress.txt && git add -A && git commit -qm 'Implement {t}'")}),
        ));
        let done = Step::Reply(Reply::text(&format!("{t} works.")));
        // #2 twice: the session that conflicts, then the one from the new main
        // (which says it is at work).
        let mut steps = vec![step.clone(), done.clone()];
        if n == 2 {
            steps.push(Step::Reply(Reply::tool(
                "Bash",
                serde_json::json!({"command": format!("touch {}", again.display())}),
            )));
            steps.extend([step, done]);
        }
        b = b.when(move |r| is_for(r, n), steps);
    }
    let server = b.start(initializer(&text));
    let kit = Kit::new(&dir, &server);
    let lines = Lines::default();
    let end = kit.parallel(3, &lines, Some(5)).run().await.unwrap();
    let said = lines.said();
    assert_eq!(end, RunEnd::Complete, "{said}");
    let requeued = said
        .find("feature #2: Conflict")
        .unwrap_or_else(|| panic!("no conflict: {said}"));
    let again = said[requeued..]
        .find("takes feature #2 (")
        .map(|at| requeued + at)
        .unwrap_or_else(|| panic!("#2 not handed out again: {said}"));
    let third = said
        .find("feature #3: merged")
        .unwrap_or_else(|| panic!("#3 not merged: {said}"));
    assert!(requeued < again && again < third, "{said}");
    let text = std::fs::read_to_string(dir.join("feature_list.json")).unwrap();
    assert!(!text.contains("\"passes\": false"), "{text}");
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
}

/// A run killed after a session ended but before it was settled (its agent may
/// already be on its next session, which writes the copy's records afresh): the
/// session waits in `.baton/settling/`, and the next run settles it first, with
/// its flip, ledger line, transcript and evidence.
#[tokio::test(flavor = "current_thread")]
async fn a_session_left_unsettled_by_a_killed_run_is_settled_by_the_next() {
    let (_t, dir) = project(2);
    let server = model(2, 0, Duration::from_millis(10));
    let kit = Kit::new(&dir, &server);
    let lines = Lines::default();
    // The initializer and feature #1.
    let end = kit.parallel(1, &lines, Some(2)).run().await.unwrap();
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}\n{}", lines.said());

    // What the killed run left: session 3 of agent 1 did #2, its branch fetched,
    // its record taken, nothing of it yet on the project's record.
    let copy = dir.join(".baton/agents/a1");
    let flip = "sed -i '/\"description\": \"Feature F02:/,/\"passes\"/ s/\"passes\": false/\"passes\": true/' feature_list.json";
    let work = format!(
        "mkdir -p src && echo 'page F02' > src/F02.txt && {flip} && echo 'Session 3: F02.' >> claude-progress.txt && git add -A && git commit -qm 'Implement F02'"
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &work])
        .current_dir(&copy)
        .output_bounded()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let tip = git(&copy, &["rev-parse", "HEAD"]);
    git(
        &dir,
        &[
            "fetch",
            "-q",
            &copy.display().to_string(),
            "+HEAD:refs/baton/agents/a1",
        ],
    );
    baton_records::ledger::append(
        &copy.join(".baton/ledger.jsonl"),
        &baton_records::LedgerEntry {
            feature: Some(2),
            ..baton_records::LedgerEntry::new(3, LedgerKind::Flip, "Feature F02")
        },
    )
    .unwrap();
    std::fs::create_dir_all(copy.join(".baton/evidence/0003")).unwrap();
    std::fs::write(copy.join(".baton/evidence/0003/shot.txt"), "seen").unwrap();
    let state = State::load(&dir).unwrap();
    let mut record = serde_json::to_value(state.sessions.last().unwrap()).unwrap();
    record["number"] = 3.into();
    record["target"] = 2.into();
    record["gates"]["flipped"] = serde_json::json!([2]);
    record["integration"] = serde_json::Value::Null;
    let ended = serde_json::json!({
        "agent": 0, "feature": 2, "number": 3, "record": record,
        "feature_record": null, "theirs": tip.trim(),
    });
    std::fs::create_dir_all(dir.join(".baton/settling")).unwrap();
    std::fs::write(dir.join(".baton/settling/0003.json"), ended.to_string()).unwrap();

    let lines = Lines::default();
    let end = kit.parallel(2, &lines, Some(10)).run().await.unwrap();
    let said = lines.said();
    assert_eq!(end, RunEnd::Complete, "{said}");
    assert!(said.contains("settling 1 session(s)"), "{said}");
    let state = State::load(&dir).unwrap();
    let s3 = state.sessions.iter().find(|s| s.number == 3).unwrap();
    let i = s3.integration.as_ref().unwrap();
    assert_eq!(i.outcome, IntegrationOutcome::Merged, "{said}");
    assert_eq!(s3.agent, Some(1));
    assert!(dir.join("src/F02.txt").is_file());
    let ledger = baton_records::ledger::read(&dir.join(".baton/ledger.jsonl")).unwrap();
    assert!(
        ledger
            .entries
            .iter()
            .any(|e| e.kind == LedgerKind::Flip && e.feature == Some(2) && e.commit == i.commit),
        "{ledger:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join(".baton/evidence/0003/shot.txt")).unwrap(),
        "seen"
    );
    assert!(
        std::fs::read_dir(dir.join(".baton/settling"))
            .unwrap()
            .next()
            .is_none()
    );
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
}

/// An agent whose session ended gets its next feature before that session is
/// merged, and builds on it: two features that append to one file, one agent, one
/// session each, and no conflict.
#[tokio::test(flavor = "current_thread")]
async fn an_agent_builds_on_its_own_session_while_it_is_merged() {
    let (_t, dir) = project(2);
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(Duration::from_millis(10));
    for n in 1..=2 {
        b = b.when(move |r| is_for(r, n), session(n, true));
    }
    let server = b.start(initializer(&list(0, 2)));
    let (end, said) = run(&dir, &server, 1).await;
    assert_eq!(end, RunEnd::Complete, "{said}");
    let state = State::load(&dir).unwrap();
    let outcomes: Vec<IntegrationOutcome> = state
        .sessions
        .iter()
        .filter_map(|s| s.integration.as_ref().map(|i| i.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [IntegrationOutcome::Merged, IntegrationOutcome::Merged],
        "{said}"
    );
    let shared = std::fs::read_to_string(dir.join("shared.txt")).unwrap();
    assert!(shared.contains("F01\nF02\n"), "{shared}");
    // Each flip is recorded once, by the session that made it.
    let ledger = baton_records::ledger::read(&dir.join(".baton/ledger.jsonl")).unwrap();
    let flips: Vec<(u32, Option<usize>)> = ledger
        .entries
        .iter()
        .filter(|e| e.kind == LedgerKind::Flip)
        .map(|e| (e.session, e.feature))
        .collect();
    assert_eq!(flips, [(2, Some(1)), (3, Some(2))], "{ledger:?}");
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
}

/// Agents get an identity and a port block of their own in their commands.
#[test]
fn agents_get_their_own_ports() {
    let env = baton_harness::parallel::agent_env(3);
    let get = |k: &str| env.iter().find(|(n, _)| n == k).unwrap().1.clone();
    assert_eq!(get("BATON_AGENT"), "3");
    assert_eq!(get("PORT"), "4120");
    assert_eq!(get("BATON_PORT_BLOCK"), "4120-4129");
    assert_ne!(
        baton_harness::parallel::agent_env(0)
            .iter()
            .find(|(n, _)| n == "PORT")
            .unwrap()
            .1,
        "4100"
    );
}

/// `kill -9` mid-session, then a new run: the stale claim is dropped, the killed
/// session's gates run in its working copy (its half-done work committed to its
/// branch, which is kept), and the feature is handed out again, from that work,
/// and finished.
#[tokio::test(flavor = "current_thread")]
async fn a_session_killed_mid_way_is_settled_and_its_feature_finished_by_the_next_run() {
    let (_t, dir) = project(3);
    let server = model(3, 0, Duration::from_millis(10));
    // The initializer alone; the working copies are made.
    let kit = Kit::new(&dir, &server);
    let lines = Lines::default();
    let p = kit.parallel(2, &lines, Some(1));
    assert!(matches!(p.run().await.unwrap(), RunEnd::Limit(_)));
    // What a kill leaves: agent 1 mid-way through feature 1, claimed, with half
    // its work not committed.
    let a1 = dir.join(".baton/agents/a1");
    let tip = git(&dir, &["rev-parse", "HEAD"]).trim().to_string();
    git(&a1, &["checkout", "-q", "-B", "baton/agent-1", &tip]);
    git(&dir, &["update-ref", "refs/baton/claims/1", &tip]);
    std::fs::create_dir_all(a1.join(".baton/sessions")).unwrap();
    std::fs::copy(
        dir.join(baton_records::layout::ACCEPTED),
        a1.join(baton_records::layout::ACCEPTED),
    )
    .unwrap();
    let mut copy = State::load(&dir).unwrap();
    copy.claim = Some(1);
    copy.in_progress = Some(baton_records::InProgress {
        timing: Default::default(),
        number: 2,
        kind: baton_records::SessionKind::Coding,
        started_ms: 1,
        head_before: Some(tip.clone()),
        notes_before: std::fs::read_to_string(a1.join("claude-progress.txt")).unwrap(),
        sweep: None,
        target: Some(1),
        base_check: None,
    });
    copy.save(&a1).unwrap();
    std::fs::write(a1.join(baton_records::layout::transcript(2)), "").unwrap();
    std::fs::create_dir_all(a1.join("src")).unwrap();
    std::fs::write(a1.join("src/half.txt"), "half of F01\n").unwrap();

    let end = kit.parallel(2, &lines, Some(20)).run().await.unwrap();
    let said = lines.said();
    assert_eq!(end, RunEnd::Complete, "{said}");
    let state = State::load(&dir).unwrap();
    let killed = state.sessions.iter().find(|s| s.number == 2).unwrap();
    assert_eq!(killed.outcome, baton_records::SessionOutcome::Killed);
    assert_eq!(killed.agent, Some(1));
    let i = killed.integration.as_ref().unwrap();
    assert_eq!(i.outcome, IntegrationOutcome::Kept);
    // The half-done work is on the kept branch; the next session on feature 1
    // started from it (as a run of one starts from the leftovers it committed), so
    // it reached the main branch with that session's merge.
    let kept = i.kept.clone().unwrap();
    assert!(git(&dir, &["show", "--stat", &kept]).contains("src/half.txt"));
    assert!(dir.join("src/half.txt").exists(), "{said}");
    // Feature 1 was finished in a later session, and every feature passes.
    assert!(
        state
            .sessions
            .iter()
            .any(|s| s.number > 2 && s.target == Some(1) && s.gates.flipped == [1]),
        "{said}"
    );
    assert_eq!(
        git(&dir, &["for-each-ref", "refs/baton/claims/"]).trim(),
        ""
    );
}

/// One agent rewrites another feature's entry in its copy of the list: its gates
/// restore the entry (recorded in the project's ledger), its own legal flip is
/// merged, and the other agents' work is untouched.
#[tokio::test(flavor = "current_thread")]
async fn a_list_tampered_with_by_one_agent_is_restored_without_disturbing_the_others() {
    use baton_testkit::{Reply, ScriptedServer};
    use serde_json::json;
    let (_t, dir) = project(3);
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(Duration::from_millis(20));
    for n in [1, 3] {
        b = b.when(move |r| is_for(r, n), session(n, false));
    }
    let tamper = "sed -i 's/Feature F03: the app has page F03/Feature F03: nothing to do/' feature_list.json";
    let mut cheat = vec![Step::Reply(Reply::tool(
        "Bash",
        json!({"command": format!("{tamper} && git commit -qam 'Simplify F03'")}),
    ))];
    cheat.extend(session(2, false));
    b = b.when(|r| is_for(r, 2), cheat);
    let server = b.start(initializer(&list(3, 0)));
    let (end, said) = run(&dir, &server, 3).await;
    assert_eq!(end, RunEnd::Complete, "{said}");
    let text = std::fs::read_to_string(dir.join("feature_list.json")).unwrap();
    assert!(text.contains("Feature F03: the app has page F03"), "{text}");
    assert!(!text.contains("nothing to do"), "{text}");
    let ledger = baton_records::ledger::read(&dir.join(baton_records::layout::LEDGER))
        .unwrap()
        .entries;
    let violations: Vec<_> = ledger
        .iter()
        .filter(|e| e.kind == LedgerKind::Violation)
        .collect();
    assert_eq!(violations.len(), 1, "{ledger:?}");
    let state = State::load(&dir).unwrap();
    let cheater = state
        .sessions
        .iter()
        .find(|s| s.number == violations[0].session)
        .unwrap();
    assert_eq!(cheater.target, Some(2));
    for n in 1..=3 {
        assert!(dir.join(format!("src/{}.txt", token(n))).is_file(), "{n}");
    }
}

/// Two machines sharing nothing but a bare git remote: each a `Parallel` run of
/// two agents over its own clone. One runs the initializer (it claims `init`), the
/// other waits for its list; claims on the remote keep every feature to one agent;
/// each integration is a push that fails if the other moved the main branch first.
#[tokio::test(flavor = "current_thread")]
async fn two_workers_on_a_bare_remote_finish_one_project_together() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let (bare, workers) = baton_testkit::scenario::bare_remote(&root, 6, &["w1", "w2"]);
    let server = model(6, 0, Duration::from_millis(20));
    let kits: Vec<Kit> = workers.iter().map(|w| Kit::new(w, &server)).collect();
    let lines = [Lines::default(), Lines::default()];
    let runs: Vec<Parallel> = (0..2)
        .map(|i| {
            kits[i]
                .parallel(2, &lines[i], Some(20))
                .with_remote(Some(bare.display().to_string()))
        })
        .collect();
    let (a, b) = tokio::join!(runs[0].run(), runs[1].run());
    let said: Vec<String> = lines.iter().map(Lines::said).collect();
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => panic!("{a:?}\n{b:?}\n--- w1\n{}\n--- w2\n{}", said[0], said[1]),
    };
    assert_eq!(
        a,
        RunEnd::Complete,
        "{}\n--- the other worker ({b:?})\n{}",
        said[0],
        said[1]
    );
    assert_eq!(b, RunEnd::Complete, "{}", said[1]);

    // The remote's main branch holds every feature, passing.
    let (check, text) = baton_testkit::scenario::remote_main(&root, &bare);
    let list = baton_records::FeatureList::parse(&text, "feature_list.json").unwrap();
    assert!(list.all_pass(), "{text}");
    for n in 1..=6 {
        assert!(check.join(format!("src/{}.txt", token(n))).is_file(), "{n}");
    }
    // One initializer between them; each feature merged once; both machines worked.
    let states: Vec<State> = workers.iter().map(|w| State::load(w).unwrap()).collect();
    let inits: usize = states
        .iter()
        .map(|s| {
            s.sessions
                .iter()
                .filter(|x| x.kind == baton_records::SessionKind::Initializer)
                .count()
        })
        .sum();
    assert_eq!(inits, 1, "{said:?}");
    let merged: Vec<usize> = states
        .iter()
        .flat_map(|s| s.sessions.iter())
        .filter(|x| {
            x.integration
                .as_ref()
                .is_some_and(|i| i.outcome == IntegrationOutcome::Merged)
        })
        .filter_map(|x| x.target)
        .collect();
    let mut sorted = merged.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [1, 2, 3, 4, 5, 6], "{said:?}");
    assert!(
        states
            .iter()
            .all(|s| s.sessions.iter().any(|x| x.agent.is_some())),
        "{said:?}"
    );
    // No claim is left on the remote.
    assert_eq!(
        git(
            &root,
            &["ls-remote", bare.to_str().unwrap(), "refs/baton/claims/*"]
        )
        .trim(),
        ""
    );
}

/// The claim protocol on its own: a claim is won once; a second claimant of the
/// same name loses; a released claim can be taken again; a claim older than the
/// time to live is expired by anyone, and only that claim.
#[test]
fn claims_on_a_remote_are_won_once_and_expire_by_time() {
    use baton_harness::parallel::remote::Remote;
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let bare = root.join("r.git");
    git(&root, &["init", "-q", "--bare", bare.to_str().unwrap()]);
    let mut remotes = Vec::new();
    for (w, ttl) in [("w1", 3600), ("w2", 0)] {
        let dir = root.join(w);
        git(&root, &["init", "-q", dir.to_str().unwrap()]);
        git(&dir, &["config", "user.name", w]);
        git(&dir, &["config", "user.email", "w@example.invalid"]);
        git(&dir, &["commit", "-q", "--allow-empty", "-m", "start"]);
        let url = bare.display().to_string();
        remotes.push(Remote::open(&dir, &url, w, Duration::from_secs(ttl)).unwrap());
    }
    let (a, b) = (&remotes[0], &remotes[1]);
    assert!(a.claim("3").unwrap());
    assert!(!b.claim("3").unwrap());
    assert!(b.claim("4").unwrap());
    assert_eq!(
        a.claimed().unwrap().into_iter().collect::<Vec<_>>(),
        ["3", "4"]
    );
    a.release("3");
    assert!(b.claim("3").unwrap());
    // With a time to live of zero, w2 takes every claim as abandoned.
    let mut expired = b.expire().unwrap();
    expired.sort();
    assert_eq!(expired, ["3", "4"]);
    assert!(a.claimed().unwrap().is_empty());
    // With an hour, w1 expires nothing just made.
    assert!(a.claim("5").unwrap());
    assert!(a.expire().unwrap().is_empty());
    // A renewed claim is new again; one expired meanwhile is reported lost.
    let c = root.join("w3");
    git(&root, &["init", "-q", c.to_str().unwrap()]);
    git(&c, &["config", "user.name", "w3"]);
    git(&c, &["config", "user.email", "w@example.invalid"]);
    git(&c, &["commit", "-q", "--allow-empty", "-m", "start"]);
    let two = Remote::open(
        &c,
        &bare.display().to_string(),
        "w3",
        Duration::from_secs(2),
    )
    .unwrap();
    // Renewed, claim 5 is new again: judged one second after the renewal began
    // (commit times are whole seconds), it is younger than the 2 s w3 allows. No
    // test waits for a clock: the rule is driven by the time it is judged at.
    let before = now_secs();
    assert!(a.renew().unwrap().is_empty());
    assert!(
        two.expire_at(before + 1).unwrap().is_empty(),
        "a renewed claim is not old"
    );
    // Two seconds after the renewal ended, it is old: expired, and lost for w1.
    let after = now_secs();
    assert_eq!(two.expire_at(after + 2).unwrap(), ["5"]);
    assert_eq!(a.renew().unwrap(), ["5"]);
}

/// Stops the run once `times` lines have said `when`.
struct StopWhen {
    lines: Lines,
    when: &'static str,
    times: usize,
    seen: std::sync::atomic::AtomicUsize,
    stop: CancellationToken,
}

impl Reporter for StopWhen {
    fn line(&self, text: &str) {
        if text.contains(self.when)
            && self.seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 >= self.times
        {
            self.stop.cancel();
        }
        self.lines.line(text);
    }
}

/// Ctrl-C: every agent finishes its tool call and stops, every session started is
/// settled into the project's record, and no claim or unfinished session is left.
#[tokio::test(flavor = "current_thread")]
async fn a_stop_ends_every_agent_cleanly() {
    let (_t, dir) = project(6);
    let server = model(6, 0, Duration::from_millis(100));
    let kit = Kit::new(&dir, &server);
    let stop = CancellationToken::new();
    // Once all three agents' sessions have started (their threads start them in
    // any order).
    let reporter = StopWhen {
        lines: Lines::default(),
        when: " · coding ──",
        times: 3,
        seen: std::sync::atomic::AtomicUsize::new(0),
        stop: stop.clone(),
    };
    let p = kit.parallel_until(3, &reporter, None, stop);
    let end = p.run().await.unwrap();
    let said = reporter.lines.said();
    assert_eq!(end, RunEnd::Interrupted, "{said}");
    let state = State::load(&dir).unwrap();
    let coding = state.sessions.iter().filter(|s| s.agent.is_some()).count();
    assert_eq!(coding, 3, "{said}");
    for k in 1..=3 {
        let copy = State::load(&dir.join(format!(".baton/agents/a{k}"))).unwrap();
        assert!(copy.in_progress.is_none(), "agent {k}");
    }
    assert_eq!(
        git(&dir, &["for-each-ref", "refs/baton/claims/"]).trim(),
        ""
    );
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
}

/// The bench's sessions that work the way the coding prompt asks (bearings,
/// `init.sh`, a smoke test, implement, verify, flip and commit) finish a project
/// both ways the bench compares: one agent through the plain runner `baton run`
/// uses without `--agents` (its brief lists the next features, the scripted
/// model answers the first), and two agents.
#[tokio::test(flavor = "current_thread")]
async fn working_sessions_finish_a_project_with_one_agent_and_with_two() {
    use baton_harness::run::{Backend, Runner, RunnerParts};
    use baton_testkit::scenario::parallel::working_session;
    for agents in [1, 2] {
        let (_t, dir) = project(5);
        let mut b = ScriptedServer::builder(Wire::Anthropic);
        for n in 1..=5 {
            let shared = n > 3;
            let mut steps = working_session(n, shared);
            if shared {
                steps.extend(working_session(n, true));
            }
            b = b.when(move |r| is_for(r, n), steps);
        }
        let server = b.start(initializer(&list(3, 2)));
        let kit = Kit::new(&dir, &server);
        let lines = Lines::default();
        let end = if agents == 1 {
            Runner::new(RunnerParts {
                files: Files::new(dir.clone(), kit.cfg.project.clone()),
                cfg: kit.cfg.clone(),
                backend: Backend::Loop(&kit.client),
                prices: &kit.prices,
                policy: &*kit.main.policy,
                reporter: &lines,
                tools: kit.main.tools.clone(),
            })
            .with_opts(RunOptions {
                max_sessions: Some(20),
                ..RunOptions::default()
            })
            .run()
            .await
            .unwrap()
        } else {
            kit.parallel(agents, &lines, Some(20)).run().await.unwrap()
        };
        let said = lines.said();
        assert_eq!(end, RunEnd::Complete, "{agents} agent(s): {said}");
        let text = std::fs::read_to_string(dir.join("feature_list.json")).unwrap();
        let list = baton_records::FeatureList::parse(&text, "feature_list.json").unwrap();
        assert!(list.all_pass(), "{agents} agent(s): {text}");
        let shared = std::fs::read_to_string(dir.join("shared.txt")).unwrap();
        assert!(
            shared.contains("F04\n") && shared.contains("F05\n"),
            "{shared}"
        );
        // Every session ran the steps: each one's notes line is on the main branch.
        let notes = std::fs::read_to_string(dir.join("claude-progress.txt")).unwrap();
        for n in 1..=5 {
            assert!(
                notes.contains(&format!("Session: {} done", token(n))),
                "{notes}"
            );
        }
    }
}

/// A quota wall (every request answered 429 until its reset, as a provider does
/// when an organisation's quota runs out) met by several agents at once: each
/// waits it out, no session fails or counts an attempt for it, and the run
/// finishes every feature.
#[tokio::test(flavor = "current_thread")]
async fn agents_that_meet_a_quota_wall_together_wait_it_out_and_finish() {
    let (_t, dir) = project(6);
    // Retries capped at 0.3 s: the 3 s wall is a wait, not a retry.
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap()
        + "[retry]\nmax_attempts = 2\nbase_delay_ms = 50\nmax_delay_ms = 300\n";
    std::fs::write(dir.join("baton.toml"), toml).unwrap();
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(Duration::from_millis(100));
    for n in 1..=6 {
        let mut steps = Vec::new();
        if n == 2 {
            // Feature 2's first request meets the wall; the others' requests in
            // the next 3 s meet it too.
            steps.push(Step::quota_wall(Duration::from_secs(3)));
        }
        steps.extend(session(n, false));
        b = b.when(move |r| is_for(r, n), steps);
    }
    let server = b.start(initializer(&list(6, 0)));
    let started = std::time::Instant::now();
    let (end, said) = run(&dir, &server, 3).await;
    assert_eq!(end, RunEnd::Complete, "{said}");
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "the wall was waited out"
    );
    let refused: Vec<_> = server
        .requests()
        .iter()
        .filter(|r| r.refused.as_deref() == Some("quota"))
        .map(|r| r.first_user_text().len())
        .collect();
    assert!(
        refused.len() > 1,
        "more than one request met the wall: {refused:?}"
    );
    let state = State::load(&dir).unwrap();
    // Every feature passes, each implemented once: no session was lost to the wall.
    for n in 1..=6 {
        let sessions: Vec<_> = state
            .sessions
            .iter()
            .filter(|s| s.target == Some(n))
            .collect();
        assert_eq!(sessions.len(), 1, "feature {n}: {said}");
    }
    assert!(state.features.values().all(|r| r.attempts == 0), "{said}");
    // The run's reporter heard of the agents' waits (for the live view and notify).
    assert!(said.contains(" waits for a quota"), "{said}");
}

/// A session whose context fills hands off: it commits its partial work and its
/// notes without flipping its feature, so nothing is merged. The next session on
/// that feature (by whichever agent) starts from that work merged in, as a run of
/// one would start from it on the main branch, and finishes the feature.
#[tokio::test(flavor = "current_thread")]
async fn the_next_session_on_a_feature_starts_from_the_work_a_handed_off_one_left() {
    const HANDOFF: &str = "context window is nearly full";
    let (_t, dir) = project(3);
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap()
        + "[agent]\ncontext_window = 40000\n";
    std::fs::write(dir.join("baton.toml"), toml).unwrap();
    let t = token(1);
    // Feature 1's first session reads logs (about 10k tokens each) until baton
    // says its context is nearly full, then leaves its partial work and notes.
    let filler = || {
        Step::Reply(Reply::tool(
            "Bash",
            serde_json::json!({"command": "seq 1 6000"}),
        ))
    };
    let wrap_up = vec![
        Step::Reply(Reply::tool(
            "Bash",
            serde_json::json!({"command": format!("mkdir -p src && echo 'half of {t}' > src/{t}.partial && echo 'Handed off: {t} half done in src/{t}.partial; next: finish {t}.' >> claude-progress.txt && git add -A && git commit -qm 'Half of {t}, handed off'")}),
        )),
        Step::Reply(Reply::text("Handing off: notes written and committed.")),
    ];
    // Its second session finishes only from that work: without the partial file
    // and the notes its command fails and nothing is flipped.
    let flip = format!(
        "sed -i '/\"description\": \"Feature {t}:/,/\"passes\"/ s/\"passes\": false/\"passes\": true/' feature_list.json"
    );
    let finish = vec![
        Step::Reply(Reply::tool(
            "Bash",
            serde_json::json!({"command": format!("test -f src/{t}.partial && grep -q 'next: finish {t}' claude-progress.txt && echo 'page {t}' > src/{t}.txt && {flip} && echo 'Session: {t} done and verified.' >> claude-progress.txt && git add -A && git commit -qm 'Implement {t}'")}),
        )),
        Step::Reply(Reply::text(&format!("{t} works."))),
    ];
    let again = |r: &baton_testkit::RecordedRequest| {
        r.first_user_text().contains("Tried in 1 earlier session")
    };
    let mut b = ScriptedServer::builder(Wire::Anthropic)
        .like_a_real_model(40_000)
        .when(|r| r.says(HANDOFF), wrap_up)
        .when(move |r| is_for(r, 1) && again(r), finish)
        .when(
            move |r| is_for(r, 1) && !again(r) && !r.says(HANDOFF),
            (0..10).map(|_| filler()).collect(),
        );
    for n in 2..=3 {
        b = b.when(move |r| is_for(r, n), session(n, false));
    }
    let server = b.start(initializer(&list(3, 0)));
    let (end, said) = run(&dir, &server, 2).await;
    assert_eq!(end, RunEnd::Complete, "{said}");
    let state = State::load(&dir).unwrap();
    let on_1: Vec<_> = state
        .sessions
        .iter()
        .filter(|s| s.target == Some(1))
        .collect();
    assert_eq!(on_1.len(), 2, "{said}");
    assert_eq!(
        on_1[0].integration.as_ref().map(|i| i.outcome),
        Some(IntegrationOutcome::Kept),
        "{said}"
    );
    // The main branch holds the handed-off work and the finished feature.
    assert!(dir.join(format!("src/{t}.partial")).is_file(), "{said}");
    assert!(dir.join(format!("src/{t}.txt")).is_file(), "{said}");
    let log = git(&dir, &["log", "--format=%s"]);
    assert!(log.contains(&format!("Half of {t}, handed off")), "{log}");
}

/// A project whose run stalls the way a real one does (`stall_sessions = 3`,
/// `feature_attempts` as `baton new` writes it), with flips on the agent's word.
fn stalling_project(features: usize) -> (tempfile::TempDir, PathBuf) {
    let (t, dir) = project(features);
    let toml = baton_testkit::trusting(&format!(
        "[project]\nfeatures = {features}\nmin_features = {features}\n[run]\npause_secs = 0\nstall_sessions = 3\n"
    ));
    std::fs::write(dir.join("baton.toml"), toml).unwrap();
    (t, dir)
}

/// A model that writes the feature list, then makes no progress: every coding
/// session's request on features `1..=features` gets `answer`.
fn fruitless(features: usize, answer: Step) -> ScriptedServer {
    ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(20))
        .respond(move |r| (1..=features).any(|n| is_for(r, n)).then(|| answer.clone()))
        .start(initializer(&list(features, 0)))
}

/// How long a run that ends by itself may take here before the test calls it a
/// spin: far more than it needs, so this is no timing assertion.
const ENDS_BY_ITSELF: Duration = Duration::from_secs(120);

/// A run (no `--max-sessions`) that must end by itself; `None` if it did not
/// within [`ENDS_BY_ITSELF`].
async fn bounded(p: &Parallel<'_>) -> Option<Result<RunEnd, baton_harness::HarnessError>> {
    tokio::time::timeout(ENDS_BY_ITSELF, p.run()).await.ok()
}

/// Every hand-out started a session: as many "takes feature" lines as coding
/// sessions on the record, each of them with its agent.
fn every_hand_out_ran(dir: &Path, said: &str) -> usize {
    let handed = said.matches(" takes feature #").count();
    let state = State::load(dir).unwrap();
    let ran = state.sessions.iter().filter(|s| s.agent.is_some()).count();
    assert_eq!(handed, ran, "hand-outs that started no session\n{said}");
    ran
}

/// Issue #25: two agents whose sessions make no progress, with a stall limit and
/// no `--max-sessions`. The run stops by itself, stalled (exit 3), after the stall
/// rule's sessions plus at most the one session per agent already under way; it
/// never hands out work that starts no session. Sessions that end with a text
/// reply, and sessions that fail (the model refuses every request). Five runs of
/// each, since how the agents' sessions interleave varies.
#[tokio::test(flavor = "current_thread")]
async fn two_agents_making_no_progress_stall_by_themselves() {
    let refused = Step::Status {
        status: 400,
        headers: Vec::new(),
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"no"}}"#.into(),
    };
    for (what, answer) in [
        (
            "a text reply",
            Step::Reply(Reply::text("I could not get it to work.")),
        ),
        ("a failing model", refused),
    ] {
        for round in 1..=5 {
            let (_t, dir) = stalling_project(4);
            let server = fruitless(4, answer.clone());
            let kit = Kit::new(&dir, &server);
            let lines = Lines::default();
            let p = kit.parallel(2, &lines, None);
            let end = bounded(&p).await;
            let said = lines.said();
            let Some(end) = end else {
                panic!("{what}, run {round}: still running after {ENDS_BY_ITSELF:?}\n{said}");
            };
            let end = end.unwrap_or_else(|e| panic!("{what}, run {round}: {e}\n{said}"));
            let state = State::load(&dir).unwrap();
            // The stall rule: stall_sessions × agents sessions in a row.
            assert_eq!(
                end,
                RunEnd::Stalled(state.stalled),
                "{what}, run {round}\n{said}"
            );
            assert!(
                state.stalled >= 6,
                "{what}, run {round}: {}\n{said}",
                state.stalled
            );
            let ran = every_hand_out_ran(&dir, &said);
            // The limit, once more after a feature's first deferral restarted the
            // count (only before it reached the limit, as in a run of one), and
            // at most one session per agent under way when it was reached.
            assert!(
                ran <= 5 + 1 + 6 + 2,
                "{what}, run {round}: {ran} sessions\n{said}"
            );
            assert_eq!(
                git(&dir, &["for-each-ref", "refs/baton/claims/"]).trim(),
                "",
                "{what}, run {round}"
            );
        }
    }
}

/// A hand-out that starts no session (here agent 1's working copy cannot be put
/// on the main branch: a stale `index.lock` in its `.git` makes `git checkout`
/// fail) stops the run with that cause, git's command and message, instead of
/// handing the work out again and again. The other agent's session, under way, is
/// stopped and settled first; no claim is left.
#[tokio::test(flavor = "current_thread")]
async fn a_hand_out_that_starts_no_session_stops_the_run_with_its_cause() {
    let (_t, dir) = stalling_project(4);
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(Duration::from_millis(50));
    for n in 1..=4 {
        b = b.when(move |r| is_for(r, n), session(n, false));
    }
    let server = b.start(initializer(&list(4, 0)));
    let kit = Kit::new(&dir, &server);
    // The initializer alone: the working copies are made, no session handed out.
    let lines = Lines::default();
    let end = kit.parallel(2, &lines, Some(1)).run().await.unwrap();
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}\n{}", lines.said());
    let git_dir = dir.join(".baton/agents/a1/.git");
    assert!(git_dir.is_dir(), "{}", lines.said());
    std::fs::write(git_dir.join("index.lock"), "").unwrap();

    let lines = Lines::default();
    let p = kit.parallel(2, &lines, None);
    let end = bounded(&p).await;
    let said = lines.said();
    let Some(end) = end else {
        panic!("still running after {ENDS_BY_ITSELF:?}\n{said}");
    };
    let err = match end {
        Ok(end) => panic!("ended {end:?} instead of failing\n{said}"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("agent 1 could not start session")
            && err.contains("checkout")
            && err.contains("index.lock"),
        "{err}\n{said}"
    );
    // Agent 1 was handed work once, and nothing was handed out after it failed;
    // agent 2's session, stopped before or during its work, is on the record if
    // it began.
    let to_1 = said.matches("agent 1 takes feature #").count();
    assert_eq!(to_1, 1, "{said}");
    let stopping = said.find("stopping the run: ").unwrap();
    assert!(!said[stopping..].contains(" takes feature #"), "{said}");
    let state = State::load(&dir).unwrap();
    assert!(state.sessions.iter().all(|s| s.agent != Some(1)), "{said}");
    for k in 1..=2 {
        let copy = State::load(&dir.join(format!(".baton/agents/a{k}"))).unwrap();
        assert!(copy.in_progress.is_none(), "agent {k}\n{said}");
    }
    assert_eq!(
        git(&dir, &["for-each-ref", "refs/baton/claims/"]).trim(),
        "",
        "{said}"
    );
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
}

/// "Complete but for blocked features" (exit 4) with many agents: the agent of #3
/// declares it blocked (`BlockFeature`); the agent of #1 finishes #1 and declares
/// #4, which waits on #1, blocked too; #2 passes. The run ends by itself once
/// nothing else can be handed out, naming both, each on the project's record with
/// the session that declared it; neither declaration counts towards a stall.
#[tokio::test(flavor = "current_thread")]
async fn agents_declaring_features_blocked_end_the_run_complete_but_for_them() {
    let (_t, dir) = stalling_project(4);
    let mut features: Vec<serde_json::Value> = serde_json::from_str(&list(4, 0)).unwrap();
    features[3]["depends_on"] = serde_json::json!([1]);
    let text = serde_json::to_string_pretty(&features).unwrap() + "\n";
    let block = |n: usize, why: &str| {
        (
            "BlockFeature",
            serde_json::json!({"feature": n, "reason": why}),
        )
    };
    // #1's session: its work, flip and commit, and in the same turn the block
    // of #4.
    let first = session(1, false);
    let Step::Reply(mut work) = first[0].clone() else {
        panic!("a session starts with its work")
    };
    let (name, input) = block(
        4,
        "needs a payment provider account; a person must add its API key",
    );
    work.blocks.push(baton_testkit::RBlock::ToolUse {
        id: String::new(),
        name: name.into(),
        input_json: input.to_string(),
    });
    let mut b = ScriptedServer::builder(Wire::Anthropic)
        .think_time(Duration::from_millis(20))
        .when(|r| is_for(r, 1), vec![Step::Reply(work), first[1].clone()])
        .when(|r| is_for(r, 2), session(2, false))
        .when(
            |r| is_for(r, 3),
            vec![
                Step::Reply(Reply::tools(&[block(
                    3,
                    "needs a hardware token this machine does not have",
                )])),
                Step::Reply(Reply::text("#3 cannot pass here; I declared it blocked.")),
            ],
        );
    for n in 1..=4 {
        // Whatever else is asked: no progress, and no second session on #4.
        b = b.when(
            move |r| is_for(r, n),
            vec![Step::Reply(Reply::text("Nothing more."))],
        );
    }
    let server = b.start(initializer(&text));
    let kit = Kit::new(&dir, &server);
    let lines = Lines::default();
    let p = kit.parallel(2, &lines, None);
    let end = bounded(&p).await;
    let said = lines.said();
    let Some(end) = end else {
        panic!("still running after {ENDS_BY_ITSELF:?}\n{said}");
    };
    let end = end.unwrap_or_else(|e| panic!("{e}\n{said}"));
    assert_eq!(end, RunEnd::CompleteExceptBlocked(vec![3, 4]), "{said}");
    assert_eq!(end.exit_code(), 4);
    let text = std::fs::read_to_string(dir.join("feature_list.json")).unwrap();
    let on_main = baton_records::FeatureList::parse(&text, "feature_list.json").unwrap();
    let passes: Vec<bool> = on_main.features.iter().map(|f| f.passes).collect();
    assert_eq!(passes, [true, true, false, false], "{said}");
    let state = State::load(&dir).unwrap();
    let by = |n: usize| {
        state
            .sessions
            .iter()
            .find(|s| s.target == Some(n))
            .map(|s| s.number)
            .unwrap_or_else(|| panic!("no session on #{n}\n{said}"))
    };
    for (n, by) in [(3, by(3)), (4, by(1))] {
        let r = &state.features[&n];
        assert!(r.blocked.is_some(), "#{n}: {r:?}");
        assert_eq!(r.blocked_in, Some(by), "#{n}: {r:?}");
    }
    // #4 was never handed out; #3's session declared, it did not stall.
    assert!(state.sessions.iter().all(|s| s.target != Some(4)), "{said}");
    assert_eq!(state.stalled, 0, "{said}");
    every_hand_out_ran(&dir, &said);
    let blocked: Vec<Option<usize>> =
        baton_records::ledger::read(&dir.join(baton_records::layout::LEDGER))
            .unwrap()
            .entries
            .iter()
            .filter(|e| e.kind == LedgerKind::Blocked)
            .map(|e| e.feature)
            .collect();
    assert_eq!(blocked.len(), 2, "{blocked:?}");
    assert!(
        blocked.contains(&Some(3)) && blocked.contains(&Some(4)),
        "{blocked:?}"
    );
}

/// An initializer's list shorter than `[project] features` asked is continued
/// in the project by list-append sessions before any agent is handed a feature,
/// as a run of one continues it before its first coding session: here the
/// planner says the list covers the spec, and the agents finish the three.
#[tokio::test(flavor = "current_thread")]
async fn a_short_list_is_continued_in_the_project_before_the_agents_start() {
    let (_t, dir) = stalling_project(3);
    let toml = baton_testkit::trusting(
        "[project]\nfeatures = 6\nmin_features = 3\n[run]\npause_secs = 0\nstall_sessions = 3\n",
    );
    std::fs::write(dir.join("baton.toml"), toml).unwrap();
    let mut steps = initializer(&list(3, 0));
    steps.push(Step::Reply(Reply::text(
        "Every part of the spec has an entry.\nSPEC COVERED",
    )));
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(Duration::from_millis(20));
    for n in 1..=3 {
        b = b.when(move |r| is_for(r, n), session(n, false));
    }
    let server = b.start(steps);
    let kit = Kit::new(&dir, &server);
    let lines = Lines::default();
    let p = kit.parallel(2, &lines, None);
    let end = bounded(&p).await;
    let said = lines.said();
    let Some(end) = end else {
        panic!("still running after {ENDS_BY_ITSELF:?}\n{said}");
    };
    let end = end.unwrap_or_else(|e| panic!("{e}\n{said}"));
    assert_eq!(end, RunEnd::Complete, "{said}");
    let state = State::load(&dir).unwrap();
    assert!(state.list_covered, "{said}");
    let kinds: Vec<&str> = state.sessions.iter().map(|s| s.kind.name()).collect();
    assert_eq!(
        kinds,
        ["initializer", "planner", "coding", "coding", "coding"],
        "{said}"
    );
    assert!(state.sessions[1].agent.is_none(), "{said}");
    every_hand_out_ran(&dir, &said);
}

/// Seconds since the epoch, as claim commits carry their time.
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// "Complete" is proven in a parallel run too: the merge sweeps are time-boxed,
/// so before the run says complete every passing feature's check runs once more
/// on the main branch, with no time box. Here #1's check passes in the agents'
/// copies and the integration worktree but fails in the project itself (as a
/// regression the time-boxed sweeps did not reach would): it is set back in a
/// commit of baton's and the run does not end complete.
#[tokio::test(flavor = "current_thread")]
async fn a_parallel_run_sweeps_every_check_before_it_says_complete() {
    let (_t, dir) = project(2);
    let mut features: Vec<serde_json::Value> = serde_json::from_str(&list(2, 0)).unwrap();
    features[0]["verify"] = format!(
        "test -f src/{} && test \"$(pwd -P)\" != '{}'",
        format_args!("{}.txt", token(1)),
        dir.display()
    )
    .into();
    let text = serde_json::to_string_pretty(&features).unwrap() + "\n";
    let mut b = ScriptedServer::builder(Wire::Anthropic);
    for n in 1..=2 {
        b = b.when(move |r| is_for(r, n), session(n, false));
    }
    let server = b.start(initializer(&text));
    let kit = Kit::new(&dir, &server);
    let lines = Lines::default();
    // The initializer and two coding sessions: after the sweep sets #1 back, the
    // session limit ends the run.
    let end = kit.parallel(2, &lines, Some(3)).run().await.unwrap();
    let said = lines.said();
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}\n{said}");
    assert!(
        said.contains("sweep before declaring the project complete: #1 broke"),
        "{said}"
    );
    let accepted = Files::new(dir.clone(), kit.cfg.project.clone())
        .load_accepted()
        .unwrap()
        .unwrap();
    assert_eq!(
        accepted
            .features
            .iter()
            .map(|f| f.passes)
            .collect::<Vec<_>>(),
        [false, true]
    );
    let log = git(&dir, &["log", "--format=%s"]);
    assert!(
        log.contains("baton: regression sweep before declaring the project complete set back #1"),
        "{log}"
    );
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
    let ledger = std::fs::read_to_string(dir.join(".baton/ledger.jsonl")).unwrap_or_default();
    assert!(ledger.contains("\"regression\""), "{ledger}");
}

/// `baton tell` in a parallel run: what is queued in the project goes to the next
/// session handed out (into its working copy), whose brief carries it; the
/// session's `told` line reaches the project's ledger when it is settled.
#[tokio::test(flavor = "current_thread")]
async fn a_tell_goes_to_the_next_agent_session_handed_out() {
    let (_t, dir) = project(1);
    let mut b = ScriptedServer::builder(Wire::Anthropic);
    b = b.when(move |r| is_for(r, 1), session(1, false));
    let server = b.start(initializer(&list(1, 0)));
    let kit = Kit::new(&dir, &server);
    let files = Files::new(dir.clone(), kit.cfg.project.clone());
    baton_harness::tell::queue(&files, "Keep page F01 plain text.").unwrap();
    let lines = Lines::default();
    let end = kit.parallel(2, &lines, Some(5)).run().await.unwrap();
    assert_eq!(end, RunEnd::Complete, "{}", lines.said());
    let mut told: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.first_user_text())
        .filter(|t| t.contains("## From a person (baton tell)"))
        .collect();
    // Every request of a session repeats its first message: one session had it.
    told.dedup();
    // The initializer ran in the project first; the agent's session got it, once.
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].contains("## Your feature"), "{}", told[0]);
    assert!(
        told[0].contains("- Keep page F01 plain text."),
        "{}",
        told[0]
    );
    let ledger = std::fs::read_to_string(dir.join(".baton/ledger.jsonl")).unwrap();
    assert!(ledger.contains("\"told\""), "{ledger}");
    assert!(baton_harness::tell::pending(&dir).is_empty());
}

/// Two agents' sessions really run at once: each session's command marks that it
/// started, then waits (bounded) for the other's mark. Run one after the other,
/// the first would wait in vain and never see the second; both see each other.
#[tokio::test(flavor = "current_thread")]
async fn two_agents_sessions_overlap() {
    let (_t, dir) = project(2);
    let outside = tempfile::tempdir().unwrap();
    let mark = |n: usize, what: &str| outside.path().join(format!("{what}-{n}"));
    let mut b = ScriptedServer::builder(Wire::Anthropic);
    for n in 1..=2usize {
        let other = 3 - n;
        let t = token(n);
        let flip = format!(
            "sed -i '/\"description\": \"Feature {t}:/,/\"passes\"/ s/\"passes\": false/\"passes\": true/' feature_list.json"
        );
        let command = format!(
            "touch {start}; for i in $(seq 300); do if [ -e {theirs} ]; then touch {saw}; break; fi; sleep 0.05; done; mkdir -p src && echo 'page {t}' > src/{t}.txt && {flip} && echo 'Session: {t} done.' >> claude-progress.txt && git add -A && git commit -qm 'Implement {t}'",
            start = mark(n, "started").display(),
            theirs = mark(other, "started").display(),
            saw = mark(n, "saw").display(),
        );
        let steps = vec![
            Step::Reply(Reply::tool(
                "Bash",
                serde_json::json!({ "command": command }),
            )),
            Step::Reply(Reply::text(&format!("{t} works."))),
        ];
        b = b.when(move |r| is_for(r, n), steps);
    }
    let server = b.start(initializer(&list(2, 0)));
    let kit = Kit::new(&dir, &server);
    let lines = Lines::default();
    let end = kit.parallel(2, &lines, Some(3)).run().await.unwrap();
    let said = lines.said();
    assert_eq!(end, RunEnd::Complete, "{said}");
    for n in 1..=2 {
        assert!(
            mark(n, "saw").exists(),
            "agent on #{n} never saw the other's session running: {said}"
        );
    }
}
