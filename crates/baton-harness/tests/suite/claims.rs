//! Prompts claim only what runs: every prompt and tool description baton sends,
//! rendered for every project kind, browser on and off, proof rules and backend,
//! and every command they recommend judged by the command policy the agent's
//! commands meet. A prompt that tells the agent to run something the policy
//! refuses costs a real model a turn, every time.

use baton_config::{PolicyConfig, ProjectConfig};
use baton_harness::prompts::{self, Handoff, ProofRules};
use baton_records::FeatureList;

/// Programs whose backticked mention in a prompt is a command to run.
const PROGRAMS: &[&str] = &[
    "python3", "python", "node", "curl", "grep", "git", "jq", "npm", "npx", "ls", "cat", "sed",
    "test", "bash", "kill", "pkill", "lsof", "sqlite3", "wc", "head", "tail", "chmod", "find",
];

/// The backticked spans of `text` that are commands: they start with one of
/// [`PROGRAMS`] or with `./`. A span with a placeholder word (`kill PID`: "the pid
/// the Bash tool printed") is a template, not a command to judge as written.
fn commands(text: &str) -> Vec<String> {
    let placeholder = |w: &str| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase());
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| {
            let first = span.split_whitespace().next().unwrap_or_default();
            ((span.contains(' ') && PROGRAMS.contains(&first)) || first.starts_with("./"))
                && !span.split_whitespace().any(placeholder)
        })
        .map(str::to_string)
        .collect()
}

/// Every text the agent is given, under every configuration baton has.
fn every_prompt() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let dir = std::path::Path::new("/work/todo");
    out.push(("system".into(), prompts::system(dir)));
    out.push(("verifier system".into(), prompts::verifier_system(dir)));
    let list = FeatureList::parse(
        r#"[{"category": "functional", "description": "A todo can be added",
             "steps": ["Type 'Buy milk'", "See it listed"], "passes": true}]"#,
        "feature_list.json",
    )
    .unwrap();
    for kind in ["web", "cli", "library", "service"] {
        for adopt in [false, true] {
            let names = ProjectConfig {
                kind: kind.into(),
                adopt,
                ..ProjectConfig::default()
            };
            out.push((
                format!("initializer {kind} adopt={adopt}"),
                prompts::initializer(&names, Some("too few features")),
            ));
        }
        let names = ProjectConfig {
            kind: kind.into(),
            ..ProjectConfig::default()
        };
        out.push((
            format!("planner spec {kind}"),
            prompts::planner(&names, None),
        ));
        out.push((
            format!("planner more {kind}"),
            prompts::planner(&names, Some("add tags")),
        ));
        out.push((
            format!("planner rest {kind}"),
            prompts::planner_rest(&names, 40),
        ));
        for h in [
            Handoff::Coding,
            Handoff::Initializer,
            Handoff::PlannerSpec,
            Handoff::PlannerMore,
            Handoff::Verifier,
        ] {
            out.push((
                format!("handoff {h:?} {kind}"),
                prompts::handoff_note(&names, h),
            ));
        }
        for browser in [false, true] {
            for (verifier, trust_agent) in
                [(true, false), (false, false), (true, true), (false, true)]
            {
                for block in [false, true] {
                    let rules = ProofRules {
                        verifier,
                        trust_agent,
                        browser: browser && kind == "web",
                    };
                    out.push((
                        format!("coding {kind} browser={browser} {rules:?} block={block}"),
                        prompts::coding(&names, "", browser, block, rules),
                    ));
                }
            }
            out.push((
                format!("verifier {kind} browser={browser}"),
                baton_harness::verifier::prompt(&baton_harness::verifier::Brief {
                    list: &list,
                    features: &[1],
                    kind,
                    browser,
                    base: Some("0123456789abcdef"),
                    app: None,
                    scratch: Some("/tmp/baton-verifier-test".into()),
                }),
            ));
        }
    }
    for t in baton_tools::builtin_specs() {
        out.push((format!("tool {}", t.name), t.description));
    }
    out
}

#[test]
fn every_command_a_prompt_recommends_is_allowed_by_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let policy = baton_policy::Policy::new(&PolicyConfig::default(), dir.path()).unwrap();
    let mut refused = Vec::new();
    let mut seen = 0;
    for (name, text) in every_prompt() {
        for c in commands(&text) {
            seen += 1;
            let verdict = policy.check(&c);
            if !verdict.is_allowed() {
                refused.push(format!("{name}: `{c}`: {}", verdict.message()));
            }
        }
    }
    assert!(seen > 20, "the prompts recommend commands: found {seen}");
    refused.sort();
    refused.dedup();
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
}

#[test]
fn the_command_finder_finds_commands_and_nothing_else() {
    let found = commands(
        "run `./init.sh` or `curl -fsS http://127.0.0.1:3000/` and keep `\"passes\": false`; `git` alone; `kill PID`",
    );
    assert_eq!(found, vec!["./init.sh", "curl -fsS http://127.0.0.1:3000/"]);
}
