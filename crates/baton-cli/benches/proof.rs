//! `cargo bench -p baton-cli --bench proof`: what proof costs per flip.
//!
//! A scripted honest run of one agent: six features, six coding sessions, each
//! building one feature and flipping it, sandbox on. Proven: every feature has
//! a check (the initializer's, `grep -qx …`), so each flip is proven by it,
//! replayed in two clean checkouts (before the work, with it), each with the
//! base check before its session and the sweeps between. Baseline, in the same run: the same sessions on features without checks,
//! taken on the agent's word (`[verify] agent = false`, `trust_agent = true`):
//! no check runs at all. The difference divided by the flips is what proof adds
//! to each; `$BATON_BENCH_BIN` measures another build the same way (an earlier
//! one, back to back with this one). `$BATON_BENCH_BASELINE` names an earlier
//! build to measure in the same rounds, interleaved with this one (the machine's
//! load then weighs on both alike), and prints this build's proven run against
//! that build's: the figure "proof costs under 1.2× the build before clean
//! worlds" is read from. `$BATON_BENCH_SCRIPTED_ONLY` leaves out the Playwright
//! part.
//!
//! Then the same on a real Playwright project (the `webbench` fixture: a page,
//! a spec a feature, Debian's Chromium), when Playwright and Chromium are here:
//! three sessions each build one feature and flip it, proven by its spec (in
//! two clean checkouts, each with `init.sh` and a runner start)
//! or taken on the agent's word. Those figures are the real checks' to bring
//! down; they are printed, not held to a target.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::time::{Duration, Instant};

use baton_testkit::{Reply, ScriptedServer, Step, Wire, git};
use serde_json::{Value, json};

const FEATURES: usize = 6;
const ROUNDS: usize = 5;
const PW_FEATURES: usize = 4;

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

/// `baton.toml` with `project` in its `[project]` table: flips proven by
/// check (`checks`, no verifier) or taken on the agent's word.
fn toml(project: &str, checks: bool) -> String {
    let trust = if checks { "" } else { "trust_agent = true\n" };
    format!("[project]\n{project}\n[run]\npause_secs = 0\n[verify]\nagent = false\n{trust}")
}

/// A session that writes `file` and the list, then commits: feature `n` built.
fn session(n: usize, file: (&str, String), list: String) -> [Step; 2] {
    [
        Step::Reply(Reply::tools(&[
            ("Write", json!({"file_path": file.0, "content": file.1})),
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": list}),
            ),
            (
                "Bash",
                json!({"command": format!("echo 'Session: feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Feature {n}'")}),
            ),
        ])),
        Step::Reply(Reply::text("Done.")),
    ]
}

/// `baton run` of the project in `p` through `steps`; its wall time, once it
/// completed with `flips` flips proven by check (`checks`) or trusted.
fn timed_run(
    p: &std::path::Path,
    steps: Vec<Step>,
    checks: bool,
    flips: usize,
    exe: Option<&std::ffi::OsStr>,
) -> Duration {
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let mut cmd = match exe {
        Some(exe) => support::baton_exe(&server, Wire::Anthropic, exe),
        None => support::baton(&server),
    };
    let t = Instant::now();
    let status = cmd.arg("run").arg(p).status().unwrap();
    let took = t.elapsed();
    assert_eq!(status.code(), Some(0), "the honest run did not complete");
    let ledger = std::fs::read_to_string(p.join(".baton/ledger.jsonl")).unwrap();
    let by = if checks {
        "\"by\":\"check\""
    } else {
        "\"by\":\"trusted\""
    };
    assert_eq!(ledger.matches(by).count(), flips, "{ledger}");
    took
}

/// One honest run (by `exe`, else the build measured); its wall time.
fn honest_run(checks: bool, exe: Option<&std::ffi::OsStr>) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    git(p, &["init", "-q"]);
    std::fs::write(p.join("feature_list.json"), list(0, checks)).unwrap();
    std::fs::write(p.join("claude-progress.txt"), "notes\n").unwrap();
    std::fs::write(p.join("app_spec.txt"), "spec\n").unwrap();
    std::fs::write(p.join("init.sh"), "#!/usr/bin/env bash\necho 'app ready'\n").unwrap();
    std::fs::write(p.join(".gitignore"), ".baton/\n").unwrap();
    std::fs::write(p.join("baton.toml"), toml("kind = \"cli\"", checks)).unwrap();
    git(p, &["add", "-A"]);
    git(p, &["update-index", "--chmod=+x", "init.sh"]);
    git(p, &["commit", "-qm", "start"]);
    let steps = (1..=FEATURES)
        .flat_map(|n| {
            let file = format!("src/feature{n}.txt");
            session(n, (&file, format!("feature {n}\n")), list(n, checks))
        })
        .collect();
    timed_run(p, steps, checks, FEATURES, exe)
}

/// One honest run on the Playwright fixture: `PW_FEATURES` features, the
/// first built and passing, sessions building the rest one by one; proven by
/// each feature's spec (`checks`) or taken on the agent's word. Its wall time.
fn playwright_run(parts: &baton_testkit::webbench::WebBenchParts, checks: bool) -> Duration {
    use baton_testkit::webbench;
    let list = |passes: &[usize]| {
        let l = webbench::feature_list(PW_FEATURES, passes);
        if checks {
            return l;
        }
        let mut v: Vec<Value> = serde_json::from_str(&l).unwrap();
        for f in &mut v {
            f.as_object_mut().unwrap().remove("verify");
        }
        serde_json::to_string_pretty(&v).unwrap() + "\n"
    };
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    webbench::write(p, parts, PW_FEATURES, &[1], &[1]).unwrap();
    std::fs::write(p.join("feature_list.json"), list(&[1])).unwrap();
    std::fs::write(p.join("claude-progress.txt"), "notes\n").unwrap();
    std::fs::write(
        p.join("baton.toml"),
        toml(
            &format!("features = {PW_FEATURES}\nmin_features = {PW_FEATURES}"),
            checks,
        ) + &webbench::sandbox_toml(p),
    )
    .unwrap();
    git(p, &["init", "-q"]);
    git(p, &["add", "-A"]);
    git(p, &["commit", "-qm", "start"]);
    let steps = (2..=PW_FEATURES)
        .flat_map(|n| {
            let built: Vec<usize> = (1..=n).collect();
            session(n, ("app/app.js", webbench::app(&built)), list(&built))
        })
        .collect();
    timed_run(p, steps, checks, PW_FEATURES - 1, None)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let baseline = std::env::var_os("BATON_BENCH_BASELINE");
    let mut proven = Vec::new();
    let mut trusted = Vec::new();
    let mut before = Vec::new();
    for _ in 0..ROUNDS {
        proven.push(honest_run(true, None));
        trusted.push(honest_run(false, None));
        if let Some(b) = &baseline {
            before.push(honest_run(true, Some(b)));
        }
    }
    let (p, t) = (median(proven), median(trusted));
    let per_flip = p.saturating_sub(t) / FEATURES as u32;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("proof per flip: a scripted honest run of {FEATURES} features (median of {ROUNDS})");
    println!(
        "  every flip proven by its check (replayed in two clean checkouts):       {:8.1} ms",
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
    if !before.is_empty() {
        let b = median(before);
        println!(
            "  the earlier build's proven run ($BATON_BENCH_BASELINE, same rounds):  {:8.1} ms   this build {:.2}x it, target < 1.20x: {}",
            ms(b),
            p.as_secs_f64() / b.as_secs_f64().max(1e-9),
            if p.as_secs_f64() < 1.2 * b.as_secs_f64() {
                "met"
            } else {
                "MISSED"
            }
        );
    }
    if std::env::var_os("BATON_BENCH_SCRIPTED_ONLY").is_some() {
        return;
    }
    let Some(parts) = baton_testkit::webbench::parts("proof bench") else {
        println!("proof per flip on Playwright: Playwright or Chromium missing; not measured");
        return;
    };
    let (p, t) = (playwright_run(&parts, true), playwright_run(&parts, false));
    let flips = (PW_FEATURES - 1) as u32;
    println!(
        "proof per flip on a real Playwright project ({flips} flips, one run each; the real checks' to bring down)"
    );
    println!(
        "  every flip proven by its spec (replayed in two clean checkouts):       {:8.1} ms",
        ms(p)
    );
    println!(
        "  baseline, taken on the agent's word (no spec runs):                    {:8.1} ms   ratio {:.2}x",
        ms(t),
        p.as_secs_f64() / t.as_secs_f64().max(1e-9)
    );
    println!(
        "  what proof adds to each flip:                                           {:8.1} ms",
        ms(p.saturating_sub(t) / flips)
    );
}
