//! Every prompt as a snapshot: a change to what the agent is told is reviewed as a diff.

use baton_config::ProjectConfig;
use baton_harness::prompts;
use baton_records::FeatureList;
use prompts::{Setting, Toolset};

/// baton's own loop inside bubblewrap: the most common run.
const OWN: Setting = Setting {
    tools: Toolset::Own,
    bubblewrap: true,
};
/// Codex where Landlock is the only sandbox: the run whose texts differ most.
const CODEX_LANDLOCK: Setting = Setting {
    tools: Toolset::Cli(baton_agent::cli_session::CliKind::Codex),
    bubblewrap: false,
};

#[test]
fn system_prompts() {
    let dir = std::path::Path::new("/work/todo");
    let names = ProjectConfig::default();
    insta::assert_snapshot!("system", prompts::system(dir, &names, OWN));
    insta::assert_snapshot!(
        "system_codex_landlock",
        prompts::system(dir, &names, CODEX_LANDLOCK)
    );
    insta::assert_snapshot!("verifier_system", prompts::verifier_system(dir, OWN));
    insta::assert_snapshot!(
        "verifier_system_codex_landlock",
        prompts::verifier_system(dir, CODEX_LANDLOCK)
    );
}

#[test]
fn initializer_prompts() {
    let names = ProjectConfig::default();
    insta::assert_snapshot!("initializer", prompts::initializer(&names, None, OWN));
    let adopt = ProjectConfig {
        adopt: true,
        ..ProjectConfig::default()
    };
    insta::assert_snapshot!("initializer_adopt", prompts::initializer(&adopt, None, OWN));
    insta::assert_snapshot!(
        "initializer_codex",
        prompts::initializer(&names, None, CODEX_LANDLOCK)
    );
    let cli = ProjectConfig {
        kind: "cli".into(),
        features: 40,
        min_features: 10,
        ..ProjectConfig::default()
    };
    insta::assert_snapshot!(
        "initializer_cli_retry",
        prompts::initializer(
            &cli,
            Some("feature_list.json:3:5: expected `,` or `]`"),
            OWN
        )
    );
}

#[test]
fn coding_prompts() {
    let names = ProjectConfig::default();
    insta::assert_snapshot!(
        "coding_web_browser",
        prompts::coding(&names, "<the brief>", true, true, RULES_WEB, OWN)
    );
    insta::assert_snapshot!(
        "coding_codex",
        prompts::coding(
            &names,
            "<the brief>",
            true,
            false,
            RULES_WEB,
            CODEX_LANDLOCK
        )
    );
    let cli = ProjectConfig {
        kind: "cli".into(),
        ..ProjectConfig::default()
    };
    insta::assert_snapshot!(
        "coding_cli",
        prompts::coding(&cli, "<the brief>", false, false, RULES_CLI, OWN)
    );
}

/// baton's defaults: the verifier on, no trust in the agent's word.
const RULES_WEB: prompts::ProofRules = prompts::ProofRules {
    verifier: true,
    trust_agent: false,
    browser: true,
};
const RULES_CLI: prompts::ProofRules = prompts::ProofRules {
    verifier: true,
    trust_agent: false,
    browser: false,
};

#[test]
fn the_coding_prompt_says_what_proves_a_flip_under_each_configuration() {
    let names = ProjectConfig::default();
    let text = |verifier, trust_agent| {
        prompts::coding(
            &names,
            "",
            false,
            true,
            prompts::ProofRules {
                verifier,
                trust_agent,
                browser: false,
            },
            OWN,
        )
    };
    let default = text(true, false);
    assert!(default.contains("it accepts a flip only with proof"));
    assert!(default.contains("an independent verifier"));
    assert!(default.contains("A flip without proof is reverted"));
    // One bar for coder and verifier: what the verifier fails a feature for.
    assert!(default.contains("The verifier fails a feature for"));
    assert!(default.contains("It does not fail a feature for what its steps do not cover"));
    let no_verifier = text(false, false);
    assert!(no_verifier.contains("The independent verifier is off"));
    assert!(!no_verifier.contains("The verifier fails a feature for"));
    let trusting = text(false, true);
    assert!(trusting.contains("taken on your word"));
    assert!(!trusting.contains("only with proof"));
    // No configuration claims that every flip is re-checked.
    for t in [&default, &no_verifier, &trusting, &text(true, true)] {
        assert!(!t.contains("re-checks every flip"), "{t}");
    }
}

#[test]
fn handoff_note() {
    use prompts::Handoff;
    let names = ProjectConfig::default();
    insta::assert_snapshot!(
        "handoff",
        prompts::handoff_note(&names, Handoff::Coding, OWN)
    );
    // Each kind of session is told what its own work needs, not a coding
    // session's flips and commit: a planner must not commit, a verifier owes
    // verdicts.
    for (name, kind) in [
        ("handoff_initializer", Handoff::Initializer),
        ("handoff_planner_spec", Handoff::PlannerSpec),
        ("handoff_planner_more", Handoff::PlannerMore),
        ("handoff_verifier", Handoff::Verifier),
    ] {
        insta::assert_snapshot!(name, prompts::handoff_note(&names, kind, OWN));
    }
}

#[test]
fn planner_prompts() {
    let names = ProjectConfig::default();
    insta::assert_snapshot!("planner_spec", prompts::planner(&names, None, OWN));
    insta::assert_snapshot!(
        "planner_more",
        prompts::planner(&names, Some("Add tags to todos."), OWN)
    );
    insta::assert_snapshot!("planner_rest", prompts::planner_rest(&names, 40, OWN));
    insta::assert_snapshot!(
        "planner_rest_codex",
        prompts::planner_rest(&names, 40, CODEX_LANDLOCK)
    );
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
        baton_harness::verifier::prompt(&baton_harness::verifier::Brief {
            list: &list,
            features: &[1],
            kind: "web",
            browser: true,
            base: Some("0123456789abcdef0123"),
            app: Some(baton_harness::verifier::AppStart {
                script: "init.sh".into(),
                refused: None,
                failed: false,
                said: "Server: http://127.0.0.1:3000".into(),
                fence: "0f1e2d3c4b5a6978".into(),
            }),
            scratch: Some("/tmp/baton-verifier-test".into()),
            refused: &[],
        })
    );
    // Each kind of project is verified its own way.
    let cli = baton_harness::verifier::prompt(&baton_harness::verifier::Brief {
        list: &list,
        features: &[1],
        kind: "cli",
        browser: false,
        base: None,
        app: None,
        scratch: None,
        refused: &[],
    });
    assert!(
        cli.contains("inputs other than the values in the steps"),
        "{cli}"
    );
    assert!(!cli.contains("mcp__playwright__"), "{cli}");
}

#[test]
fn prompts_agree_with_the_gates() {
    let names = ProjectConfig::default();
    let coding = prompts::coding(&names, "", false, true, RULES_CLI, OWN);
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
    let init = prompts::initializer(&names, None, OWN);
    assert!(init.contains("a JSON array of 200 end-to-end test cases (at least 20)"));
    // Background processes outlive a call; a reply without a tool call ends the session.
    let practices = prompts::practices(&names, OWN);
    assert!(practices.contains("keep running after your call"));
    assert!(practices.contains("A reply without a tool call ends your session"));
}
