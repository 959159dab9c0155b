//! `cargo bench -p baton-cli --bench run`: what the harness adds around sessions.
//!
//! - Per-session fixed cost: from the end of one session to the first model request
//!   of the next (gates, state, brief included), `--pause 0`, on a small project,
//!   read from the transcripts' own timestamps; peak RSS of `baton run`.
//! - The same as the project grows: 8, 200, 1,000 and 5,000 features, all but
//!   four passing with a verify command each (`true`), with the default
//!   `[verify] sweep_checks`, as ratios against 8 features.
//! - `baton status` on 10,000 features and 500 recorded sessions, against
//!   `baton --version` (process start) as the baseline in the same run.
//! - The ledger diff of two 10,000-feature lists, against parsing one (serde_json).
#![allow(unsafe_code, clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use baton_agent::transcript::{self, Event};
use baton_testkit::{Reply, ScriptedServer, Step, Wire, git};
use serde_json::{Value, json};

fn peak_children_rss_mb() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    ru.ru_maxrss as f64 / 1024.0
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn features(n: usize, passing: usize) -> String {
    features_checked(n, passing, false)
}

/// `n` features, the first `passing` passing, each of those with a verify
/// command (`true`) when `checks`.
fn features_checked(n: usize, passing: usize, checks: bool) -> String {
    let list: Vec<Value> = (0..n)
        .map(|i| {
            let category = ["functional", "style"][i % 2];
            let mut f = json!({"category": category, "description": format!("Feature {i}: a user can do something useful"),
                   "steps": ["open the page", "click the button", "see the result"], "passes": i < passing});
            if checks && i < passing {
                f["verify"] = json!("true");
            }
            f
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap()
}

/// A small adopted project; `sessions` coding sessions that only talk.
fn per_session_cost(sessions: usize) -> (Vec<Duration>, f64) {
    per_session_cost_of(sessions, &features(20, 5), "")
}

/// An adopted project with `list`; `sessions` coding sessions that only talk.
fn per_session_cost_of(sessions: usize, list: &str, toml: &str) -> (Vec<Duration>, f64) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    git(p, &["init", "-q"]);
    std::fs::write(p.join("feature_list.json"), list).unwrap();
    std::fs::write(p.join("claude-progress.txt"), "notes\n".repeat(50)).unwrap();
    std::fs::write(p.join("app_spec.txt"), "spec\n").unwrap();
    std::fs::write(p.join(".gitignore"), ".baton/\n").unwrap();
    std::fs::write(
        p.join("baton.toml"),
        format!(
            "[run]\npause_secs = 0\nstall_sessions = {}\n{toml}",
            sessions + 1
        ),
    )
    .unwrap();
    for i in 0..10 {
        std::fs::write(p.join(format!("src{i}.txt")), "x").unwrap();
    }
    git(p, &["add", "-A"]);
    git(
        p,
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-qm",
            "start",
        ],
    );
    let steps = (0..sessions)
        .map(|_| Step::Reply(Reply::text("thinking")))
        .collect();
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let status = support::baton(&server)
        .arg("run")
        .arg(p)
        .args(["--max-sessions", &sessions.to_string()])
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(2));
    let mut gaps = Vec::new();
    let mut last_end: Option<u64> = None;
    for (_, path) in transcript::list_sessions(p).unwrap() {
        let recs = transcript::read(&path).unwrap();
        let first_request = recs
            .iter()
            .find_map(|r| matches!(r.event, Event::Request { .. }).then_some(r.t_ms));
        if let (Some(end), Some(start)) = (last_end, first_request) {
            gaps.push(Duration::from_millis(start.saturating_sub(end)));
        }
        last_end = recs
            .iter()
            .find_map(|r| matches!(r.event, Event::SessionEnd { .. }).then_some(r.t_ms));
    }
    (gaps, peak_children_rss_mb())
}

fn status_10k() -> (Duration, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    git(p, &["init", "-q"]);
    std::fs::create_dir_all(p.join(".baton")).unwrap();
    let list = features(10_000, 4_000);
    std::fs::write(p.join("feature_list.json"), &list).unwrap();
    std::fs::write(p.join(".baton/accepted_feature_list.json"), &list).unwrap();
    let sessions: Vec<Value> = (1..=500)
        .map(|n| {
            json!({"number": n, "kind": "coding", "started_ms": 0, "ended_ms": 60_000, "outcome": "completed", "turns": 40,
                   "usage": {"input_tokens": 1000, "output_tokens": 2000, "cache_read_tokens": 50_000, "cache_write_tokens": 3000},
                   "cost_usd": 0.4, "commits": 2,
                   "gates": {"flipped": [n], "unflipped": [], "violations": [], "leftover_files": [], "notes_updated": true, "refusals": 0}})
        })
        .collect();
    std::fs::write(
        p.join(".baton/state.json"),
        json!({"version": 1, "sessions": sessions, "in_progress": null, "stalled": 0}).to_string(),
    )
    .unwrap();
    let time = |args: &[&str]| {
        let t0 = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(args)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(out.success());
        t0.elapsed()
    };
    let dir_s = p.to_str().unwrap();
    let status = median((0..9).map(|_| time(&["status", dir_s])).collect());
    let baseline = median((0..9).map(|_| time(&["--version"])).collect());
    (status, baseline)
}

fn ledger_10k() -> (Duration, Duration) {
    let a = features(10_000, 4_000);
    let b = features(10_000, 4_001);
    let accepted = baton_records::FeatureList::parse(&a, "a").unwrap();
    let diff = median(
        (0..9)
            .map(|_| {
                let t0 = Instant::now();
                let r = baton_records::reconcile(&accepted, &b, "b");
                assert_eq!(r.flipped, vec![4000]);
                t0.elapsed()
            })
            .collect(),
    );
    let parse = median(
        (0..9)
            .map(|_| {
                let t0 = Instant::now();
                let v: Value = serde_json::from_str(&b).unwrap();
                assert!(v.is_array());
                t0.elapsed()
            })
            .collect(),
    );
    (diff, parse)
}

fn main() {
    let (gaps, rss) = per_session_cost(15);
    let gap = median(gaps.clone());
    let (status, version) = status_10k();
    let (diff, parse) = ledger_10k();
    let check = |ok: bool| if ok { "met" } else { "MISSED" };
    println!("baton run / status / ledger (median)");
    println!(
        "  per-session fixed cost (end of session → next request), {} gaps: {:7.1} ms   target < 300 ms: {}",
        gaps.len(),
        ms(gap),
        check(gap < Duration::from_millis(300))
    );
    println!(
        "  peak RSS of baton run:                                     {rss:7.1} MB   target < 30 MB: {}",
        check(rss < 30.0)
    );
    println!(
        "  baton status, 10,000 features + 500 sessions:              {:7.1} ms   target < 50 ms: {}",
        ms(status),
        check(status < Duration::from_millis(50))
    );
    println!(
        "    baseline baton --version (process start):                {:7.1} ms   ratio {:.1}x",
        ms(version),
        status.as_secs_f64() / version.as_secs_f64().max(1e-9)
    );
    println!(
        "  ledger diff of two 10,000-feature lists (parse included):  {:7.1} ms   target < 20 ms: {}",
        ms(diff),
        check(diff < Duration::from_millis(20))
    );
    println!(
        "    baseline serde_json parse of one list:                   {:7.1} ms   ratio {:.1}x",
        ms(parse),
        diff.as_secs_f64() / parse.as_secs_f64().max(1e-9)
    );
    notify_cost(gap);
    scaling();
}

/// The per-session fixed cost with `[notify]` set (a command for every event; the
/// sessions themselves send none, so this is what watching for events costs),
/// against the same run without it (`plain`).
fn notify_cost(plain: Duration) {
    let (gaps, _) = per_session_cost_of(15, &features(20, 5), "[notify]\ncommand = [\"true\"]\n");
    let with = median(gaps);
    println!(
        "  per-session fixed cost with [notify] set:                  {:7.1} ms   ratio {:.2}x against without",
        ms(with),
        with.as_secs_f64() / plain.as_secs_f64().max(1e-9)
    );
}

/// The per-session cost as the project grows, every passing feature with a check.
fn scaling() {
    println!(
        "per-session cost as the project grows (all but 4 passing, a check each; median of 5 gaps)"
    );
    let mut base = None;
    for n in [8usize, 200, 1_000, 5_000] {
        let (gaps, _) = per_session_cost_of(6, &features_checked(n, n - 4, true), "");
        let gap = median(gaps);
        let base = *base.get_or_insert(gap);
        println!(
            "  {n:>5} features: {:7.1} ms   {:.2}x the cost at 8   target at 1,000 < 500 ms",
            ms(gap),
            gap.as_secs_f64() / base.as_secs_f64().max(1e-9)
        );
    }
}
