//! The brief stays compact and says what matters.

use baton_config::ProjectConfig;
use baton_harness::files::Files;
use baton_harness::gates::GateReport;
use baton_harness::state::{FeatureRecord, SessionKind, SessionRecord, State};
use baton_ledger::FeatureList;
use serde_json::json;

fn project_with(features: usize, note_lines: usize) -> (tempfile::TempDir, Files, FeatureList) {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            ok.status.success(),
            "{}",
            String::from_utf8_lossy(&ok.stderr)
        );
    };
    run(&["init", "-q"]);
    let list: Vec<_> = (0..features)
        .map(|i| {
            let category = ["functional", "style", "accessibility"][i % 3];
            json!({
                "category": category,
                "description": format!("As a user I can do thing number {i} in the application, and the result shows on the screen with the right styling and no errors in the console"),
                "steps": (0..12).map(|s| format!("Step {s}: navigate, click the button labelled 'Action {s}', type a value and check the result area shows the expected value")).collect::<Vec<_>>(),
                "passes": i < features / 3,
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&list).unwrap();
    std::fs::write(dir.path().join("feature_list.json"), &text).unwrap();
    let notes: String = (0..note_lines)
        .map(|i| format!("Session {i}: implemented a feature, verified it in the browser, fixed two regressions, and left notes on what comes next in considerable detail.\n"))
        .collect();
    std::fs::write(dir.path().join("claude-progress.txt"), notes).unwrap();
    for i in 0..30 {
        std::fs::write(dir.path().join("f.txt"), i.to_string()).unwrap();
        run(&["add", "-A"]);
        run(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            &format!("Implement feature {i} with a reasonably descriptive commit message"),
        ]);
    }
    let files = Files::new(dir.path().canonicalize().unwrap(), ProjectConfig::default());
    let list = FeatureList::parse(&text, "feature_list.json").unwrap();
    (dir, files, list)
}

fn state_with_findings() -> State {
    State {
        version: 1,
        sessions: vec![SessionRecord {
            number: 41,
            kind: SessionKind::Coding,
            started_ms: 0,
            ended_ms: 1,
            outcome: "completed".into(),
            turns: 30,
            usage: Default::default(),
            cost_usd: 0.5,
            commits: 2,
            sweep: None,
            verifier_cost_usd: 0.0,
            waited_ms: 0,
            target: Some(66),
            gates: GateReport {
                flipped: vec![66],
                unflipped: vec![12],
                violations: vec!["feature 3: \"description\" was changed".into()],
                restore_commit: Some("abc".into()),
                leftover_files: (0..30).map(|i| format!("src/file{i}.ts")).collect(),
                leftover_commit: Some("0123456789abcdef".into()),
                notes_updated: false,
                refusals: 2,
                ..Default::default()
            },
        }],
        in_progress: None,
        stalled: 0,
        waiting_until_ms: None,
        restarted_by_deferral: false,
        features: set_aside(),
    }
}

/// Feature 67 (the target) failed twice; eight features are blocked with long
/// reasons and eight deferred.
fn set_aside() -> std::collections::BTreeMap<usize, FeatureRecord> {
    let long = "the payment provider's sandbox needs an account and an API key in PAYMENTS_KEY, which this machine does not have; ask the team for one and put it in .env";
    let mut m = std::collections::BTreeMap::new();
    m.insert(
        67,
        FeatureRecord {
            attempts: 2,
            last_reason: Some(
                "its verify command `npm test -- checkout` failed: Exit code: 1".into(),
            ),
            ..Default::default()
        },
    );
    for n in 100..108 {
        m.insert(
            n,
            FeatureRecord {
                attempts: 1,
                blocked: Some(long.into()),
                blocked_in: Some(40),
                ..Default::default()
            },
        );
    }
    for n in 120..128 {
        m.insert(
            n,
            FeatureRecord {
                attempts: 3,
                deferred: Some(n as u32),
                last_reason: Some(long.into()),
                ..Default::default()
            },
        );
    }
    m
}

#[test]
fn brief_of_a_200_feature_project_with_long_notes_is_under_2000_tokens() {
    let (_d, files, list) = project_with(200, 400);
    let b = baton_harness::brief::brief(&files, &list, &state_with_findings(), 42, None);
    let tokens = b.len() / 4;
    assert!(tokens < 2000, "{tokens} tokens:\n{b}");
    for expected in [
        "# Brief from baton (session 42)",
        "Features passing: 66/200",
        "By category: functional 22/67, style 22/67, accessibility 22/66",
        "- Session 41 (coding) ended: completed.",
        "- Newly passing: #66.",
        "- Set back to failing: #12.",
        "- VIOLATION, undone by baton: feature 3: \"description\" was changed.",
        "baton committed it as 012345678: src/file0.ts",
        "- The progress notes were not updated.",
        "- 2 tool call(s) were refused",
        "67. [functional] As a user I can do thing number 66",
        "   - … 2 more steps in the feature list",
        "   Tried in 2 earlier session(s) without passing; last time: its verify command `npm test -- checkout` failed: Exit code: 1.",
        "## Set aside\n- Blocked, waiting for a person; not yours to work on: #100 (the payment provider's",
        "; … and 3 more.\n- Deferred after failed attempts; they come back after every other failing feature: #120 (3 attempts), #121",
        "68. [style] As a user I can do thing number 67 in the application, and the result shows on the screen with the right styling and no …\n69.",
        "Implement feature 29 with",
        "Session 399: implemented a feature",
    ] {
        assert!(b.contains(expected), "missing {expected:?} in:\n{b}");
    }
    assert!(!b.contains("Session 300:"), "the notes' tail only");
}
