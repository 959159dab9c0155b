//! `cargo bench -p baton-harness --bench parallel`: the wall time of a 12-feature
//! run (10 independent features, 2 that append to one shared file) with a model
//! that thinks 0.2 s per response, `--agents 4` against `--agents 1` (the plain
//! runner `baton run` uses without `--agents`) in the same run. Target: at most
//! 0.4× (the floor is 0.25×: four agents, twelve features; 0.33× with the one
//! conflict the shared file makes).
//!
//! Two kinds of session, each measured: sessions that work the way the coding
//! prompt asks (bearings, `init.sh`, a smoke test, implement, verify, flip and
//! commit: seven responses, 1.4 s of thinking), which the target is judged on;
//! and the smallest honest session (two responses), where baton's own cost
//! between sessions weighs most and which shows that cost.
//!
//! Each pair runs in turn `ROUNDS` times and the medians are compared: on a
//! shared machine one pair alone swings by ±0.08×. The CPU time of baton and
//! everything it started (git, bash) is printed per session as well: the
//! harness's own cost, steadier than wall time. Each run's parts are printed
//! too, from its sessions' records: the model and its tools, base checks, gates
//! and proof, sweeps, summed over the sessions, and the agents' idle time (no
//! session of theirs running: waiting for a hand-out, a merge, a sweep), of
//! agents × wall. `BATON_BENCH_TRACE=1` prints each run's lines with their times.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;
use std::time::{Duration, Instant};

use baton_agent::pricing::PriceTable;
use baton_config::Config;
use baton_harness::files::Files;
use baton_harness::parallel::{Parallel, ParallelParts, Workspace};
use baton_harness::run::{Backend, Reporter, RunEnd, RunOptions, Runner, RunnerParts};
use baton_testkit::ScriptedServer;
use baton_testkit::Step;
use baton_testkit::Wire;
use baton_testkit::scenario::parallel::{initializer, is_for, list, session, working_session};

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

const ROUNDS: usize = 3;

/// CPU time this process and its waited-for children have used (user and
/// system), from `/proc/self/stat`.
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with the last `)`).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime, stime, cutime, cstime: fields 14-17, here 11-14 (0-based).
    let ticks: u64 = f.get(11..15).map_or(0, |t| t.iter().sum());
    Duration::from_millis(ticks * 10)
}

/// Where a run's time went, from its sessions' records (the initializer left
/// out): the sums over its sessions of each part, and the agents' time with no
/// session of theirs running (waiting for a hand-out, a merge, a sweep), of
/// `agents` × the wall time.
#[derive(Debug, Clone, Copy, Default)]
struct Parts {
    agent: f64,
    base_checks: f64,
    gates: f64,
    sweeps: f64,
    idle: f64,
}

impl Parts {
    fn of(state: &serde_json::Value, agents: u32, wall: Duration) -> Self {
        let mut p = Parts::default();
        let mut spans = 0.0;
        let secs = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0) / 1000.0;
        for s in state["sessions"].as_array().into_iter().flatten().skip(1) {
            let t = &s["timing"];
            p.agent += secs(&t["agent_ms"]);
            p.base_checks += secs(&t["base_check_ms"]);
            p.gates += secs(&t["gates_ms"]) + secs(&t["verifier_ms"]);
            p.sweeps += secs(&t["sweep_ms"]);
            spans += secs(&s["ended_ms"]) - secs(&s["started_ms"]);
        }
        p.idle = (f64::from(agents) * wall.as_secs_f64() - spans).max(0.0);
        p
    }

    fn line(&self) -> String {
        format!(
            "parts (s, summed over sessions): model and tools {:.1} · base checks {:.1} · gates and proof {:.1} · sweeps {:.1} · agents idle {:.1}",
            self.agent, self.base_checks, self.gates, self.sweeps, self.idle
        )
    }
}

/// One whole run with `agents` agents: its wall time from the first coding
/// session (the initializer is one session either way) to the end, the CPU
/// time spent meanwhile (per session), and where the time went.
fn run(agents: u32, kind: Kind) -> (Duration, Duration, Parts) {
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
        let mut steps = (kind.session)(f, shared);
        if shared {
            steps.extend((kind.session)(f, true));
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
    let make = |agents: u32, max: u32| {
        Parallel::new(ParallelParts {
            files: Files::new(dir.clone(), cfg.project.clone()),
            cfg: cfg.clone(),
            agents,
            client: Some(&client),
            prices: &prices,
            workspace: &Plain,
            main: &main,
            reporter: &silent,
            stop: tokio_util::sync::CancellationToken::new(),
            opts: RunOptions {
                max_sessions: Some(max),
                ..RunOptions::default()
            },
        })
    };
    // One agent is what `baton run` does without `--agents`: the plain runner,
    // with no working copy, merge or integration.
    let plain = |max: u32| {
        Runner::new(RunnerParts {
            files: Files::new(dir.clone(), cfg.project.clone()),
            cfg: cfg.clone(),
            backend: Backend::Loop(&client),
            prices: &prices,
            policy: &*main.policy,
            tools: main.tools.clone(),
            reporter: &silent,
        })
        .with_opts(RunOptions {
            max_sessions: Some(max),
            ..RunOptions::default()
        })
    };
    let whole = |max: u32| async move {
        if agents == 1 {
            plain(max).run().await
        } else {
            make(agents, max).run().await
        }
    };
    // The initializer alone (one session, not timed).
    rt.block_on(whole(1)).unwrap();
    let (t0, c0) = (Instant::now(), cpu());
    let end = rt.block_on(whole(40)).unwrap();
    let took = (t0.elapsed(), cpu().saturating_sub(c0));
    assert_eq!(end, RunEnd::Complete);
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".baton/state.json")).unwrap())
            .unwrap();
    let sessions = state["sessions"].as_array().map_or(0, Vec::len);
    // One initializer, then a session per feature and one per conflict.
    assert!(sessions > n, "{sessions} sessions");
    let parts = Parts::of(&state, agents, took.0);
    (took.0, took.1 / (sessions as u32 - 1), parts)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A kind of scripted session.
#[derive(Clone, Copy)]
struct Kind {
    name: &'static str,
    /// The steps of a session for feature `n` (`shared`: on the shared file).
    session: fn(usize, bool) -> Vec<Step>,
    /// Whether the target is judged on this kind.
    judged: bool,
}

fn main() {
    println!(
        "parallel run, {} features, model thinking {} ms per response (median of {ROUNDS}, in turn)",
        INDEPENDENT + SHARED,
        THINK.as_millis()
    );
    for kind in [
        Kind {
            name: "sessions as the coding prompt asks (7 responses)",
            session: working_session,
            judged: true,
        },
        Kind {
            name: "smallest sessions (2 responses): baton's cost between sessions",
            session,
            judged: false,
        },
    ] {
        compare(kind);
    }
}

fn compare(kind: Kind) {
    let (mut ones, mut fours) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        ones.push(run(1, kind));
        fours.push(run(4, kind));
    }
    let wall = |v: &[(Duration, Duration, Parts)]| median(v.iter().map(|r| r.0).collect());
    let cpu = |v: &[(Duration, Duration, Parts)]| median(v.iter().map(|r| r.1).collect());
    // The parts of the run whose wall time is the median.
    let parts = |v: &[(Duration, Duration, Parts)]| {
        let m = wall(v);
        v.iter().find(|r| r.0 == m).map(|r| r.2).unwrap_or_default()
    };
    let (one, four) = (wall(&ones), wall(&fours));
    let ratio = four.as_secs_f64() / one.as_secs_f64();
    let each = |v: &[(Duration, Duration, Parts)]| {
        v.iter()
            .map(|r| format!("{:.2}", r.0.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(" {}", kind.name);
    println!(
        "  --agents 1: {:>6.2} s  ({})   CPU per session {:>4.0} ms",
        one.as_secs_f64(),
        each(&ones),
        cpu(&ones).as_secs_f64() * 1e3
    );
    println!("              {}", parts(&ones).line());
    let verdict = match (kind.judged, ratio <= 0.40) {
        (false, _) => "",
        (true, true) => "   target <= 0.40x: met",
        (true, false) => "   target <= 0.40x: MISSED",
    };
    println!(
        "  --agents 4: {:>6.2} s  ({})   CPU per session {:>4.0} ms   ratio {ratio:.2}x{verdict}",
        four.as_secs_f64(),
        each(&fours),
        cpu(&fours).as_secs_f64() * 1e3,
    );
    println!("              {}", parts(&fours).line());
}
