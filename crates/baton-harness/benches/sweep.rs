//! `cargo bench -p baton-harness --bench sweep`: the regression sweep over 200
//! features whose verify command is `true` (target < 3 s), against spawning the
//! same 200 `bash -c true` directly in the same run; then the sweep's cost per
//! check at 200, 1,000 and 5,000 checks, as ratios against 200 (linear: ~1x).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;
use std::time::{Duration, Instant};

use baton_harness::checks::Checker;
use baton_records::FeatureList;
use baton_tools::{AllowAll, ToolContext, Toolbox};
use serde_json::json;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let list: Vec<_> = (0..200)
        .map(|i| json!({"category": "functional", "description": format!("f{i}"), "steps": [], "verify": "true", "passes": true}))
        .collect();
    let list = FeatureList::parse(&serde_json::to_string(&list).unwrap(), "f.json").unwrap();
    let all: Vec<usize> = (0..200).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tools = Toolbox::new(ToolContext::new(dir.path().to_path_buf()));
    let checker = Checker {
        tools: &tools,
        policy: &AllowAll,
        timeout: Duration::from_secs(10),
        init_script: None,
        batch: None,
    };
    let sweep = median(
        (0..5)
            .map(|_| {
                let t0 = Instant::now();
                let run = rt.block_on(checker.run(&list, &all, Some(Duration::from_secs(300))));
                assert_eq!(run.passed.len(), 200);
                t0.elapsed()
            })
            .collect(),
    );
    let direct = median(
        (0..5)
            .map(|_| {
                let t0 = Instant::now();
                for _ in 0..200 {
                    assert!(
                        Command::new("bash")
                            .args(["-c", "true"])
                            .current_dir(dir.path())
                            .status()
                            .unwrap()
                            .success()
                    );
                }
                t0.elapsed()
            })
            .collect(),
    );
    println!("regression sweep, 200 verify commands of `true` (median of 5)");
    println!(
        "  baton sweep:            {:8.1} ms   target < 3000 ms: {}",
        sweep.as_secs_f64() * 1e3,
        if sweep < Duration::from_secs(3) {
            "met"
        } else {
            "MISSED"
        }
    );
    println!(
        "  baseline 200 × bash -c: {:8.1} ms",
        direct.as_secs_f64() * 1e3
    );
    println!(
        "  ratio: {:.2}x",
        sweep.as_secs_f64() / direct.as_secs_f64().max(1e-9)
    );
    scaling(&rt, &checker);
}

/// The sweep's cost per check as the project grows: no cliff where one shell's
/// reports outgrow what the Bash tool keeps.
fn scaling(rt: &tokio::runtime::Runtime, checker: &Checker<'_>) {
    println!("sweep cost per check as checks grow (median of 3)");
    let mut base = None;
    for n in [200usize, 1_000, 5_000] {
        let list: Vec<_> = (0..n)
            .map(|i| json!({"category": "functional", "description": format!("f{i}"), "steps": [], "verify": "true", "passes": true}))
            .collect();
        let list = FeatureList::parse(&serde_json::to_string(&list).unwrap(), "f.json").unwrap();
        let all: Vec<usize> = (0..n).collect();
        let took = median(
            (0..3)
                .map(|_| {
                    let t0 = Instant::now();
                    let run = rt.block_on(checker.run(&list, &all, None));
                    assert_eq!(run.passed.len(), n);
                    t0.elapsed()
                })
                .collect(),
        );
        let per = took.as_secs_f64() * 1e3 / n as f64;
        let base = *base.get_or_insert(per);
        println!(
            "  {n:>5} checks: {:8.1} ms   {per:.3} ms a check   {:.2}x the cost a check at 200",
            took.as_secs_f64() * 1e3,
            per / base
        );
    }
}
