//! `cargo bench -p baton-harness --bench webbench`: real end-to-end checks at the
//! speed of the project's own runner. A Web-Bench-like project (a small static
//! web app, twelve Playwright specs, Debian's Chromium: the test kit's
//! `webbench` fixture) is checked three ways in the same run: by Playwright's
//! runner alone (one `npx playwright test`, the baseline), by baton's sweep
//! batching Playwright's checks as it does by default (target: at most 1.1x the
//! runner alone), and by baton's sweep
//! one check at a time (what a project without a batch pays). Then what a sweep
//! of an unchanged tree costs with `[verify] skip_unchanged`: the tree's digest.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;
use std::time::{Duration, Instant};

use baton_harness::batch::Batching;
use baton_harness::checks::Checker;
use baton_records::FeatureList;
use baton_testkit::webbench;
use baton_tools::{AllowAll, ToolContext, Toolbox};

const FEATURES: usize = 12;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let Some(parts) = webbench::parts("webbench bench") else {
        eprintln!("webbench: Playwright or Chromium missing; nothing measured");
        std::process::exit(1);
    };
    let dir = tempfile::tempdir().unwrap();
    let all: Vec<usize> = (1..=FEATURES).collect();
    webbench::write(dir.path(), &parts, FEATURES, &all, &all).unwrap();
    let text = std::fs::read_to_string(dir.path().join("feature_list.json")).unwrap();
    let list = FeatureList::parse(&text, "feature_list.json").unwrap();
    let idx: Vec<usize> = (0..FEATURES).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tools = Toolbox::new(ToolContext::new(dir.path().to_path_buf()));
    let checker = |batched: bool| Checker {
        tools: &tools,
        policy: &AllowAll,
        timeout: Duration::from_secs(120),
        init_script: None,
        batch: batched.then(|| Batching::of(None, std::env::temp_dir())),
    };
    let sweep = |batched: bool| {
        let t0 = Instant::now();
        // The sweep before a session: time-boxed, the only run that batches.
        let run = rt.block_on(checker(batched).run(&list, &idx, Some(Duration::from_secs(600))));
        assert_eq!(run.passed.len(), FEATURES, "{run:?}");
        t0.elapsed()
    };
    let alone = || {
        let t0 = Instant::now();
        let ok = Command::new("npx")
            .args(["playwright", "test"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stdout)
        );
        t0.elapsed()
    };
    // Warm the disk cache once, then alternate, so that neither side gets the
    // machine's quiet moments alone.
    alone();
    let (mut runner, mut batched) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        runner.push(alone());
        batched.push(sweep(true));
    }
    let (runner, batched) = (median(runner), median(batched));
    let one_by_one = sweep(false);
    let ratio = batched.as_secs_f64() / runner.as_secs_f64().max(1e-9);
    println!(
        "{FEATURES} Playwright specs against Debian's Chromium (median of 3; one by one: 1 run)"
    );
    println!(
        "  the runner alone (npx playwright test): {:8.2} s",
        runner.as_secs_f64()
    );
    println!(
        "  baton's sweep, batched:                {:8.2} s   {ratio:.2}x the runner alone   target <= 1.10x: {}",
        batched.as_secs_f64(),
        if ratio <= 1.10 { "met" } else { "MISSED" }
    );
    println!(
        "  baton's sweep, one check at a time:     {:8.2} s   {:.2}x the runner alone",
        one_by_one.as_secs_f64(),
        one_by_one.as_secs_f64() / runner.as_secs_f64().max(1e-9)
    );
    let digest = median(
        (0..5)
            .map(|_| {
                let t0 = Instant::now();
                baton_harness::tree_digest::tree_digest(dir.path(), &["feature_list.json"])
                    .unwrap();
                t0.elapsed()
            })
            .collect(),
    );
    println!(
        "  a sweep of an unchanged tree (skip_unchanged: the digest alone): {:.1} ms   {:.4}x the runner alone",
        digest.as_secs_f64() * 1e3,
        digest.as_secs_f64() / runner.as_secs_f64().max(1e-9)
    );
}
