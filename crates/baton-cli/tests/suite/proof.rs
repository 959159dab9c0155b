//! Proof of flips through the binary, with the settings `baton new` writes: an
//! agent's false flip of a feature without a verify command does not survive the
//! run, which still really finishes; `baton status` and the report show how each
//! passing feature was proven.

use baton_testkit::scenario::{features, honest, honest_verifier, initializer};
use baton_testkit::{ScriptedServer, Wire};
use serde_json::json;

use super::*;

/// `baton new` for a 4-feature project of `kind` in a fresh directory; returns
/// the directory holding it and the project's path.
pub(super) fn new_project(kind: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let t = baton_testkit::temp_project().unwrap();
    let spec = t.path().join("spec.txt");
    std::fs::write(&spec, "A tiny program with four features.\n").unwrap();
    let dir = t.path().join("proj");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args([
            "new",
            dir.to_str().unwrap(),
            "--spec",
            spec.to_str().unwrap(),
        ])
        .args(["--kind", kind, "--features", "4"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Only the pause is shortened; everything else is as `baton new` wrote it.
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap();
    assert!(toml.contains("agent = true"), "{toml}");
    assert!(toml.contains("trust_agent = false"), "{toml}");
    let toml = toml.replace("pause_secs = 3", "pause_secs = 0");
    std::fs::write(dir.join("baton.toml"), toml).unwrap();
    (t, dir)
}

#[test]
fn a_false_flip_under_baton_new_defaults_is_caught_and_the_run_really_finishes() {
    let (_t, dir) = new_project("cli");
    let mut steps = initializer(&features(&[false; 4]));
    // Builds feature 1, claims 1 and 4.
    steps.extend(honest(1, &[true, false, false, true]));
    steps.extend(honest(2, &[true, true, false, false]));
    steps.extend(honest(3, &[true, true, true, false]));
    steps.extend(honest(4, &[true, true, true, true]));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(honest_verifier)
        .start(steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(&dir)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.remaining(), 0, "{err}");
    assert!(err.contains("verifier rejected #4"), "{err}");
    for n in 1..=4 {
        assert!(
            dir.join(format!("src/feature{n}.txt")).is_file(),
            "feature {n}"
        );
    }
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", dir.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    let s: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let by: Vec<&str> = s["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["by"].as_str().unwrap())
        .collect();
    assert_eq!(by, vec!["verifier"; 4], "{s}");
    let text = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["status", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("proven    by verifier #1, #2, #3, #4"),
        "{text}"
    );
    let report = std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["report", dir.to_str().unwrap(), "-o", "-"])
        .output()
        .unwrap();
    let html = String::from_utf8_lossy(&report.stdout);
    assert!(html.contains("<th>proven by</th>"), "no proof column");
    assert!(
        html.contains("verifier session 0003 ran Bash"),
        "no proof of #1"
    );
    let rejected: Vec<serde_json::Value> = std::fs::read_to_string(dir.join(".baton/ledger.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["kind"] == "verifier_rejected")
        .collect();
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0]["feature"], json!(4));
}
