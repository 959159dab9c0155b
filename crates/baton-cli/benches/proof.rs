//! `cargo bench -p baton-cli --bench proof`: what proof costs per flip.
//!
//! A scripted honest run of one agent: six features, six coding sessions, each
//! building one feature and flipping it, sandbox on. Proven: every feature has
//! a check (the initializer's, `grep -qx …`), so each flip is proven by it —
//! run in place, then replayed in two clean checkouts (before the work, with
//! it). Baseline, in the same run: the same sessions on features without checks,
//! taken on the agent's word (`[verify] agent = false`, `trust_agent = true`):
//! no check runs at all. The difference divided by the flips is what proof adds
//! to each; `$BATON_BENCH_BIN` measures another build the same way (an earlier
//! one, back to back with this one).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::{Value, json};

const FEATURES: usize = 6;
const ROUNDS: usize = 3;

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// The list with the first `passing` features passing, each with its check
/// when `checks`.
fn list(passing: usize, checks: bool) -> String {
    let v: Vec<Value> = (1..=FEATURES)
        .map(|n| {
            let mut f = json!({"category": "functional",
                "description": format!("Feature {n}: the program says feature {n}"),
                "steps": ["run it", format!("see feature {n}")], "passes": n <= passing});
            if checks {
                f["verify"] = json!(format!("grep -qx 'feature {n}' src/feature{n}.txt"));
            }
            f
        })
        .collect();
    serde_json::to_string_pretty(&v).unwrap() + "\n"
}

/// One honest run; its wall time.
fn honest_run(checks: bool) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    git(p, &["init", "-q"]);
    std::fs::write(p.join("feature_list.json"), list(0, checks)).unwrap();
    std::fs::write(p.join("claude-progress.txt"), "notes\n").unwrap();
    std::fs::write(p.join("app_spec.txt"), "spec\n").unwrap();
    std::fs::write(p.join("init.sh"), "#!/usr/bin/env bash\necho 'app ready'\n").unwrap();
    std::fs::write(p.join(".gitignore"), ".baton/\n").unwrap();
    let verify = if checks {
        "[verify]\nagent = false\n"
    } else {
        "[verify]\nagent = false\ntrust_agent = true\n"
    };
    std::fs::write(
        p.join("baton.toml"),
        format!("[project]\nkind = \"cli\"\n[run]\npause_secs = 0\n{verify}"),
    )
    .unwrap();
    git(p, &["add", "-A"]);
    git(p, &["update-index", "--chmod=+x", "init.sh"]);
    git(p, &["commit", "-qm", "start"]);
    let mut steps = Vec::new();
    for n in 1..=FEATURES {
        steps.push(Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": format!("src/feature{n}.txt"), "content": format!("feature {n}\n")}),
            ),
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": list(n, checks)}),
            ),
            (
                "Bash",
                json!({"command": format!("echo 'Session: feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Feature {n}'")}),
            ),
        ])));
        steps.push(Step::Reply(Reply::text("Done.")));
    }
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let t = Instant::now();
    let status = support::baton(&server).arg("run").arg(p).status().unwrap();
    let took = t.elapsed();
    assert_eq!(status.code(), Some(0), "the honest run did not complete");
    let ledger = std::fs::read_to_string(p.join(".baton/ledger.jsonl")).unwrap();
    let by = if checks {
        "\"by\":\"check\""
    } else {
        "\"by\":\"trusted\""
    };
    assert_eq!(ledger.matches(by).count(), FEATURES, "{ledger}");
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut proven = Vec::new();
    let mut trusted = Vec::new();
    for _ in 0..ROUNDS {
        proven.push(honest_run(true));
        trusted.push(honest_run(false));
    }
    let (p, t) = (median(proven), median(trusted));
    let per_flip = p.saturating_sub(t) / FEATURES as u32;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("proof per flip: a scripted honest run of {FEATURES} features (median of {ROUNDS})");
    println!(
        "  every flip proven by its check (in place, then in two clean checkouts): {:8.1} ms",
        ms(p)
    );
    println!(
        "  baseline, the same run taken on the agent's word (no check at all):    {:8.1} ms   ratio {:.2}x",
        ms(t),
        p.as_secs_f64() / t.as_secs_f64().max(1e-9)
    );
    println!(
        "  what proof adds to each flip:                                           {:8.1} ms   target < 1000 ms: {}",
        ms(per_flip),
        if per_flip < Duration::from_secs(1) {
            "met"
        } else {
            "MISSED"
        }
    );
}
