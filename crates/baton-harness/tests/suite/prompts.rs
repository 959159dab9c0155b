//! Every prompt as a snapshot: a change to what the agent is told is reviewed as a diff.

use baton_config::ProjectConfig;
use baton_harness::prompts;
use baton_records::FeatureList;

#[test]
fn system_prompts() {
    let dir = std::path::Path::new("/work/todo");
    insta::assert_snapshot!("system", prompts::system(dir));
    insta::assert_snapshot!("verifier_system", prompts::verifier_system(dir));
}

#[test]
fn initializer_prompts() {
    let names = ProjectConfig::default();
    insta::assert_snapshot!("initializer", prompts::initializer(&names, None));
    let cli = ProjectConfig {
        kind: "cli".into(),
        features: 40,
        min_features: 10,
        ..ProjectConfig::default()
    };
    insta::assert_snapshot!(
        "initializer_cli_retry",
        prompts::initializer(&cli, Some("feature_list.json:3:5: expected `,` or `]`"))
    );
}

#[test]
fn coding_prompts() {
    let names = ProjectConfig::default();
    insta::assert_snapshot!(
        "coding_web_browser",
        prompts::coding(&names, "<the brief>", true, true)
    );
    let cli = ProjectConfig {
        kind: "cli".into(),
        ..ProjectConfig::default()
    };
    insta::assert_snapshot!(
        "coding_cli",
        prompts::coding(&cli, "<the brief>", false, false)
    );
}

#[test]
fn handoff_note() {
    use prompts::Handoff;
    let names = ProjectConfig::default();
    insta::assert_snapshot!("handoff", prompts::handoff_note(&names, Handoff::Coding));
    // Each kind of session is told what its own work needs, not a coding
    // session's flips and commit: a planner must not commit, a verifier owes
    // verdicts.
    for (name, kind) in [
        ("handoff_initializer", Handoff::Initializer),
        ("handoff_planner_spec", Handoff::PlannerSpec),
        ("handoff_planner_more", Handoff::PlannerMore),
        ("handoff_verifier", Handoff::Verifier),
    ] {
        insta::assert_snapshot!(name, prompts::handoff_note(&names, kind));
    }
}

#[test]
fn verifier_prompt() {
    let list = FeatureList::parse(
        r#"[{"category": "functional", "description": "A new todo can be added",
             "steps": ["Type 'Buy milk' and press Enter", "The list shows 'Buy milk'"], "passes": true}]"#,
        "feature_list.json",
    )
    .unwrap();
    insta::assert_snapshot!(
        "verifier",
        baton_harness::verifier::prompt(&list, &[1], "init.sh", true, Some("0123456789abcdef0123"))
    );
}

#[test]
fn prompts_agree_with_the_gates() {
    let names = ProjectConfig::default();
    let coding = prompts::coding(&names, "", false, true);
    // Notes before the commit that holds code, flip and notes together.
    let notes = coding.find("7. Update claude-progress.txt").unwrap();
    let commit = coding
        .find("8. Commit the code, the flip and the notes together")
        .unwrap();
    assert!(notes < commit);
    // Adding a verify command is allowed, as the ledger allows it.
    assert!(coding.contains("you may add a \"verify\" command to a feature that has none"));
    assert!(!coding.contains("Change nothing else in that file: no"));
    // The initializer is asked for the number wanted, not the minimum.
    let init = prompts::initializer(&names, None);
    assert!(init.contains("a JSON array of 200 end-to-end test cases (at least 20)"));
    // Background processes outlive a call; a reply without a tool call ends the session.
    assert!(prompts::PRACTICES.contains("keep running after your call"));
    assert!(prompts::PRACTICES.contains("A reply without a tool call ends your session"));
}
