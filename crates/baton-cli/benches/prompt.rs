//! `cargo bench -p baton-cli --bench prompt`: the weight of what baton sends a
//! model. A scripted honest run of four features under `baton new`'s defaults
//! (the initializer, four coding sessions that work the way the coding prompt
//! asks, seven responses each, and the independent verifier after each)
//! through the real binary; then, per session kind, the size of each part of a
//! request (system prompt, tool descriptions, the first message: prompt and
//! brief) and the prompt tokens per passing feature, the initializer's and
//! coding sessions' apart from the verifier's. Sizes are in tokens at 4
//! characters a token; totals use the scripted model's count of each request.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod support;

use std::collections::BTreeMap;
use std::process::Command;

use baton_testkit::scenario::{features, honest_verifier, initializer, is_verifier, working};
use baton_testkit::{RecordedRequest, ScriptedServer, Wire};
use serde_json::Value;

/// Tokens of `v` at 4 characters a token (strings by their text, the rest as JSON).
fn tokens(v: &Value) -> u64 {
    let chars = match v {
        Value::String(s) => s.chars().count(),
        Value::Null => 0,
        other => other.to_string().chars().count(),
    };
    (chars / 4) as u64
}

/// The session kind a request belongs to.
fn kind(r: &RecordedRequest) -> &'static str {
    if is_verifier(r) {
        "verifier"
    } else if r
        .first_user_text()
        .starts_with("You are the first engineer")
    {
        "initializer"
    } else {
        "coding"
    }
}

#[derive(Default)]
struct Parts {
    requests: u64,
    system: u64,
    tools: u64,
    first: u64,
    total: u64,
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(
        p.join("app_spec.txt"),
        "Build a tiny app with four features.\n",
    )
    .unwrap();
    std::fs::write(
        p.join("baton.toml"),
        "[project]\nfeatures = 4\nmin_features = 4\n[run]\npause_secs = 0\n",
    )
    .unwrap();
    std::fs::write(p.join(".gitignore"), ".baton/\n").unwrap();
    assert!(
        Command::new("git")
            .args(["init", "-q"])
            .current_dir(p)
            .status()
            .unwrap()
            .success()
    );
    let mut steps = initializer(&features(&[false; 4]));
    for n in 1..=4 {
        let passes: Vec<bool> = (1..=4).map(|k| k <= n).collect();
        steps.extend(working(n, &passes));
    }
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(honest_verifier)
        .start(steps);
    let status = support::baton(&server).arg("run").arg(p).status().unwrap();
    assert_eq!(status.code(), Some(0), "the honest run did not complete");
    let mut by_kind: BTreeMap<&str, Parts> = BTreeMap::new();
    for r in server.requests() {
        let part = by_kind.entry(kind(&r)).or_default();
        part.requests += 1;
        part.system += tokens(&r.body["system"]);
        part.tools += tokens(&r.body["tools"]);
        part.first += tokens(&Value::String(r.first_user_text()));
        part.total += r.tokens;
    }
    println!("prompt weight of a scripted honest run, 4 features, baton new's defaults");
    println!(
        "  kind          requests   system   tools   first message   prompt tokens per request"
    );
    for (k, part) in &by_kind {
        let n = part.requests.max(1);
        println!(
            "  {k:<12} {:>9} {:>8} {:>7} {:>15} {:>27}",
            part.requests,
            part.system / n,
            part.tools / n,
            part.first / n,
            part.total / n
        );
    }
    let of = |k: &str| by_kind.get(k).map_or(0, |p| p.total);
    let builders = of("initializer") + of("coding");
    println!(
        "  prompt tokens per passing feature: {} (initializer and coding), {} (verifier); target for the first <= 26k",
        builders / 4,
        of("verifier") / 4
    );
    // The verifier's part of the run's prompt tokens: its checks of a pass (work,
    // citations, a replayed check) must not make it the run's main cost.
    let all = (builders + of("verifier")).max(1);
    println!(
        "  the verifier's share of the run's prompt tokens: {:.1} % (target <= 25 %)",
        100.0 * of("verifier") as f64 / all as f64
    );
}
