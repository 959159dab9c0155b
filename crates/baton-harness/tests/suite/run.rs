//! The harness in process: a `Runner` against the test kit's scripted model, in a
//! real git repository with real bash, without the `baton` binary around it (the
//! whole-binary scenarios live in `baton-cli/tests/suite/run.rs`).

use std::sync::Mutex;

use baton_agent::client::{ClientConfig, ModelClient, Provider};
use baton_agent::pricing::PriceTable;
use baton_agent::session::Quiet;
use baton_config::Config;
use baton_harness::files::Files;
use baton_harness::run::{Backend, Reporter, RunEnd, RunOptions, Runner};
use baton_records::LedgerKind;
use baton_records::{SessionOutcome, State};
use baton_testkit::scenario::{features, honest, initializer};
use baton_testkit::{ScriptedServer, Wire};
use baton_tools::{AllowAll, ToolContext, Toolbox};
use tokio_util::sync::CancellationToken;

/// Collects the run's lines.
#[derive(Default)]
struct Lines(Mutex<Vec<String>>);

impl Reporter for Lines {
    fn line(&self, text: &str) {
        self.0.lock().unwrap().push(text.to_string());
    }
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "current_thread")]
async fn an_honest_run_records_every_session_and_flip_and_stops_at_its_limit() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().canonicalize().unwrap();
    let toml = "[project]\nfeatures = 3\nmin_features = 3\n[run]\npause_secs = 0\n";
    std::fs::write(dir.join("baton.toml"), toml).unwrap();
    std::fs::write(dir.join("app_spec.txt"), "Build a tiny app.\n").unwrap();
    std::fs::write(dir.join(".gitignore"), ".baton/\n").unwrap();
    git(&dir, &["init", "-q"]);
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(honest(1, &[true, false, false]));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let cfg = Config::load(&dir).unwrap();
    let client = ModelClient::new(ClientConfig {
        provider: Provider::Anthropic,
        model: "claude-sonnet-4-5".into(),
        base_url: server.base_url(),
        api_key: Some("sk-test".into()),
        max_output_tokens: 4096,
        thinking_budget: 0,
        retry: cfg.retry.clone(),
        max_wait: std::time::Duration::from_secs(60),
    })
    .unwrap();
    let prices = PriceTable::new(&cfg.prices);
    let lines = Lines::default();
    let runner = Runner {
        files: Files::new(dir.clone(), cfg.project.clone()),
        cfg,
        backend: Backend::Loop(&client),
        prices: &prices,
        policy: &AllowAll,
        observer: &Quiet,
        reporter: &lines,
        tools: Toolbox::new(ToolContext::new(dir.clone())),
        stop: CancellationToken::new(),
        opts: RunOptions {
            max_sessions: Some(2),
            ..RunOptions::default()
        },
    };
    let end = runner.run().await.unwrap();
    assert!(matches!(end, RunEnd::Limit(_)), "{end:?}");
    // Two sessions recorded, in order, both completed; the flip accepted.
    let state = State::load(&dir).unwrap();
    let outcomes: Vec<SessionOutcome> = state.sessions.iter().map(|s| s.outcome).collect();
    assert_eq!(
        outcomes,
        [SessionOutcome::Completed, SessionOutcome::Completed]
    );
    assert_eq!(state.sessions[1].gates.flipped, [1]);
    let ledger = std::fs::read_to_string(runner.files.ledger()).unwrap();
    let kinds: Vec<LedgerKind> = ledger
        .lines()
        .map(|l| {
            serde_json::from_str::<baton_records::LedgerEntry>(l)
                .unwrap()
                .kind
        })
        .collect();
    assert_eq!(kinds, [LedgerKind::Accepted, LedgerKind::Flip]);
    // The work is committed and the tree is clean for the next session.
    assert_eq!(git(&dir, &["status", "--porcelain"]), "");
    assert!(git(&dir, &["log", "--oneline"]).contains("Implement feature 1"));
    let said = lines.0.lock().unwrap().join("\n");
    assert!(said.contains("session 0002"), "{said}");
}
