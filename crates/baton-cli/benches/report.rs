//! `cargo bench -p baton-cli --bench report`: `baton report` on a long run.
//!
//! A synthetic project with 500 sessions and 10,000 features (the report crate's
//! sample: state, ledger, accepted list, a few evidence images) is reported on by
//! the real binary; the figures are the wall time (median of 7) and the size of the
//! HTML, next to `baton status --json` on the same records as the baseline measured
//! in the same run. Targets: under 1 s and under 5 MB.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::process::Command;
use std::time::{Duration, Instant};

use baton_report::sample::{self, Sample};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn time(args: &[&str]) -> Duration {
    let runs: Vec<Duration> = (0..7)
        .map(|_| {
            let t0 = Instant::now();
            let out = Command::new(env!("CARGO_BIN_EXE_baton"))
                .args(args)
                .output()
                .unwrap();
            let took = t0.elapsed();
            assert!(
                out.status.success(),
                "baton {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            took
        })
        .collect();
    median(runs)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(p)
        .status()
        .unwrap();
    assert!(ok.success());
    sample::write(
        p,
        &Sample {
            sessions: 500,
            features: 10_000,
            passing: 7_000,
            evidence_every: 50,
            ..Sample::default()
        },
    )
    .unwrap();
    let out = p.join("report.html");
    let d = p.to_str().unwrap();
    let o = out.to_str().unwrap();
    let report = time(&["report", d, "-o", o]);
    let status = time(&["status", "--json", d]);
    let bytes = std::fs::metadata(&out).unwrap().len();
    let html = std::fs::read_to_string(&out).unwrap();
    let mb = bytes as f64 / 1_048_576.0;
    println!("baton report, 500 sessions and 10,000 features (median of 7):");
    println!(
        "  baton report        {:>8.1} ms   (target < 1000 ms: {})",
        ms(report),
        if report < Duration::from_secs(1) {
            "ok"
        } else {
            "MISSED"
        }
    );
    println!(
        "  baton status --json {:>8.1} ms   (baseline: same records)",
        ms(status)
    );
    println!(
        "  ratio               {:>8.1} x",
        report.as_secs_f64() / status.as_secs_f64()
    );
    println!(
        "  HTML                {:>8.2} MB   (target < 5 MB: {}; {} feature rows, {} images inlined)",
        mb,
        if mb < 5.0 { "ok" } else { "MISSED" },
        html.matches("<tr class=\"").count(),
        html.matches("data:image/").count()
    );
}
