//! `cargo bench -p baton-harness --bench parallel`: the wall time of a 12-feature
//! run (10 independent features, 2 that append to one shared file) with a model
//! that thinks 0.2 s per response, `--agents 4` against `--agents 1` in the same
//! run. Target: at most 0.4× (the floor is 0.25×: four agents, twelve features).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;
use std::time::{Duration, Instant};

use baton_agent::pricing::PriceTable;
use baton_config::Config;
use baton_harness::files::Files;
use baton_harness::parallel::{Parallel, Workspace};
use baton_harness::run::{Reporter, RunEnd, RunOptions};
use baton_testkit::ScriptedServer;
use baton_testkit::Wire;
use baton_testkit::scenario::parallel::{initializer, is_for, list, session};
use tokio_util::sync::CancellationToken;

const INDEPENDENT: usize = 10;
const SHARED: usize = 2;
const THINK: Duration = Duration::from_millis(200);

#[path = "../tests/suite/support.rs"]
mod support;
use support::{Plain, client};

/// Silent, or with `BATON_BENCH_TRACE=1` each line with the time since the
/// bench began (to see where a run's time goes).
struct Silent(Option<Instant>);

impl Reporter for Silent {
    fn line(&self, line: &str) {
        if let Some(t0) = self.0 {
            eprintln!("{:>7.3} {line}", t0.elapsed().as_secs_f64());
        }
    }
    fn agent_status(&self, agent: u32, status: &str) {
        if let Some(t0) = self.0 {
            eprintln!("{:>7.3}   a{agent}: {status}", t0.elapsed().as_secs_f64());
        }
    }
}

/// One whole run with `agents` agents: its wall time from the first coding
/// session (the initializer is one session either way) to the end.
fn run(agents: u32) -> Duration {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().canonicalize().unwrap();
    let n = INDEPENDENT + SHARED;
    std::fs::write(
        dir.join("baton.toml"),
        format!("[project]\nfeatures = {n}\nmin_features = {n}\n[run]\npause_secs = 0\nstall_sessions = 0\n"),
    )
    .unwrap();
    std::fs::write(dir.join("app_spec.txt"), "Build a tiny app.\n").unwrap();
    std::fs::write(dir.join(".gitignore"), ".baton/\n").unwrap();
    assert!(
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(&dir)
            .status()
            .unwrap()
            .success()
    );
    let mut b = ScriptedServer::builder(Wire::Anthropic).think_time(THINK);
    for f in 1..=n {
        let shared = f > INDEPENDENT;
        let mut steps = session(f, shared);
        if shared {
            steps.extend(session(f, true));
        }
        b = b.when(move |r| is_for(r, f), steps);
    }
    let server = b.start(initializer(&list(INDEPENDENT, SHARED)));
    let cfg = Config::load(&dir).unwrap();
    let client = client(server.base_url(), &cfg);
    let prices = PriceTable::new(&cfg.prices);
    let main = Plain.parts(0, &dir, Vec::new()).unwrap();
    let silent = Silent(std::env::var_os("BATON_BENCH_TRACE").map(|_| Instant::now()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let make = |agents: u32, max: u32| Parallel {
        files: Files::new(dir.clone(), cfg.project.clone()),
        cfg: cfg.clone(),
        agents,
        client: Some(&client),
        prices: &prices,
        workspace: &Plain,
        main: &main,
        reporter: &silent,
        stop: CancellationToken::new(),
        opts: RunOptions {
            max_sessions: Some(max),
            ..RunOptions::default()
        },
        remote: None,
    };
    // The initializer alone (one session, not timed).
    rt.block_on(make(agents, 1).run()).unwrap();
    let t0 = Instant::now();
    let end = rt.block_on(make(agents, 40).run()).unwrap();
    let took = t0.elapsed();
    assert_eq!(end, RunEnd::Complete);
    took
}

fn main() {
    let one = run(1);
    let four = run(4);
    let ratio = four.as_secs_f64() / one.as_secs_f64();
    println!(
        "parallel run, {} features, model thinking {} ms per response",
        INDEPENDENT + SHARED,
        THINK.as_millis()
    );
    println!(
        "  --agents 1:                              {:>8.2} s",
        one.as_secs_f64()
    );
    println!(
        "  --agents 4:                              {:>8.2} s   ratio {ratio:.2}x   target <= 0.40x: {}",
        four.as_secs_f64(),
        if ratio <= 0.40 { "met" } else { "MISSED" }
    );
}
