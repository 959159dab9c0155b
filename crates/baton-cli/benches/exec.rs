//! `cargo bench -p baton-cli --bench exec`: the cost of baton's agent loop.
//!
//! Runs `baton exec` through a 50-turn scripted session (each turn one `Bash` call of
//! `echo`) against the test kit's in-process scripted server, and prints wall time,
//! CPU time and peak RSS next to baselines measured in the same run: the same 50
//! `bash -c echo` processes spawned directly, and a 0-tool session (process start
//! plus one model round trip). Absolute times on shared machines are noise; the
//! ratios and the per-turn overhead are the figures to read.
//!
//! Then the same scripted work through the two agent CLIs baton can drive, as rows
//! against baton's own loop of the same run: Claude Code (`BATON_PROVIDER=claude-code`,
//! `.ci/npm/node_modules/.bin/claude` or `$BATON_TEST_CLAUDE`, one `Bash` call a turn
//! on Anthropic's wire) and Codex (`BATON_PROVIDER=codex`,
//! `.ci/npm/node_modules/.bin/codex` or `$BATON_TEST_CODEX`, one `exec_command` call a
//! turn on the Responses wire). For each: median wall and CPU of the 50-turn and the
//! 0-turn session over [`CLI_RUNS`] runs (they are slow), its per-turn cost, and the
//! ratios of its 50-turn wall and its per-turn wall to baton's. A CLI that is not
//! installed is reported as skipped; one whose session fails, as failed.
#![allow(unsafe_code, clippy::unwrap_used, clippy::expect_used, missing_docs)]

#[path = "exec/cli.rs"]
mod cli;
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::json;

const TURNS: usize = 50;
const RUNS: usize = 7;
/// Runs of each CLI's sessions: a CLI session takes seconds, not milliseconds.
const CLI_RUNS: usize = 3;

/// CPU time (user + system) and peak RSS (KiB) of all waited-for children so far.
pub(crate) fn children_usage() -> (Duration, u64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own; RUSAGE_CHILDREN is valid.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    (tv(ru.ru_utime) + tv(ru.ru_stime), ru.ru_maxrss as u64)
}

pub(crate) struct Sample {
    pub(crate) wall: Duration,
    pub(crate) cpu: Duration,
}

pub(crate) fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A project directory holding the bench's `baton.toml` (`$BATON_BENCH_TOML`, or
/// short retry delays).
pub(crate) fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("baton.toml"),
        std::env::var("BATON_BENCH_TOML").unwrap_or_else(|_| "[retry]\nbase_delay_ms = 5\n".into()),
    )
    .unwrap();
    dir
}

fn baton_session(tool_turns: usize) -> Sample {
    let dir = project();
    let mut steps: Vec<Step> = (0..tool_turns)
        .map(|i| {
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": format!("echo turn {i}")}),
            ))
        })
        .collect();
    steps.push(Step::Reply(Reply::text("done")));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let (cpu0, _) = children_usage();
    let t0 = Instant::now();
    let status = support::baton(&server)
        .arg("exec")
        .arg(dir.path())
        .args(["--prompt", "bench", "--max-turns", "1000"])
        .status()
        .unwrap();
    let wall = t0.elapsed();
    let (cpu1, _) = children_usage();
    assert!(status.success(), "baton exec failed: {status}");
    assert_eq!(
        server.remaining(),
        0,
        "the session did not play the whole script"
    );
    Sample {
        wall,
        cpu: cpu1 - cpu0,
    }
}

fn bash_baseline() -> Sample {
    let dir = tempfile::tempdir().unwrap();
    let (cpu0, _) = children_usage();
    let t0 = Instant::now();
    for i in 0..TURNS {
        let s = Command::new("bash")
            .arg("-c")
            .arg(format!("echo turn {i}"))
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(s.success());
    }
    let wall = t0.elapsed();
    let (cpu1, _) = children_usage();
    Sample {
        wall,
        cpu: cpu1 - cpu0,
    }
}

pub(crate) fn ms(d: Duration) -> String {
    format!("{:8.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    // Warm up file caches and the binary.
    baton_session(1);
    let mut base = (Vec::new(), Vec::new());
    let mut empty = (Vec::new(), Vec::new());
    let mut full = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let b = bash_baseline();
        base.0.push(b.wall);
        base.1.push(b.cpu);
        let e = baton_session(0);
        empty.0.push(e.wall);
        empty.1.push(e.cpu);
        let f = baton_session(TURNS);
        full.0.push(f.wall);
        full.1.push(f.cpu);
    }
    let (_, peak_kib) = children_usage();
    let (bw, bc) = (median(base.0), median(base.1));
    let (ew, ec) = (median(empty.0), median(empty.1));
    let (fw, fc) = (median(full.0), median(full.1));
    let per_turn_wall = fw.saturating_sub(ew).saturating_sub(bw) / TURNS as u32;
    let per_turn_cpu = fc.saturating_sub(ec).saturating_sub(bc) / TURNS as u32;
    let rss_mb = peak_kib as f64 / 1024.0;
    println!(
        "baton exec: {TURNS}-turn scripted session, one Bash `echo` per turn; median of {RUNS} runs"
    );
    println!(
        "  {:<44} wall {}   cpu {}",
        format!("baseline: {TURNS} × bash -c echo"),
        ms(bw),
        ms(bc)
    );
    println!(
        "  {:<44} wall {}   cpu {}",
        "baseline: baton exec, 0 tool turns",
        ms(ew),
        ms(ec)
    );
    println!(
        "  {:<44} wall {}   cpu {}",
        format!("baton exec, {TURNS} tool turns"),
        ms(fw),
        ms(fc)
    );
    println!("  peak RSS of any child (baton exec):          {rss_mb:.1} MB");
    println!(
        "  harness overhead per turn, bash excluded:   wall {}   cpu {}",
        ms(per_turn_wall),
        ms(per_turn_cpu)
    );
    println!(
        "  ratio: session wall / bash baseline wall = {:.2}x",
        fw.as_secs_f64() / bw.as_secs_f64().max(1e-9)
    );
    let check = |ok: bool| if ok { "met" } else { "MISSED" };
    println!("targets:");
    println!(
        "  whole session < 500 ms:        {:>7.1} ms  {}",
        fw.as_secs_f64() * 1e3,
        check(fw < Duration::from_millis(500))
    );
    println!(
        "  peak RSS < 20 MB:              {rss_mb:>7.1} MB  {}",
        check(rss_mb < 20.0)
    );
    println!(
        "  overhead per turn < 1 ms:      {:>7.2} ms  {}",
        per_turn_wall.as_secs_f64() * 1e3,
        check(per_turn_wall < Duration::from_millis(1))
    );
    cli::rows(&cli::Baton {
        full_wall: fw,
        per_turn_wall,
        bash_wall: bw,
        bash_cpu: bc,
    });
}
