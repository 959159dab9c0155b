//! The trust boundary (issue #11): whatever a session writes into the project, no
//! program of its choosing runs outside the sandbox, and baton's own files and
//! rules stay baton's.

use baton_testkit::{Reply, Step};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::run::{features, initializer, run};
use super::*;

fn ledger(p: &Project, kind: &str) -> Vec<Value> {
    p.file(".baton/ledger.jsonl")
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// A project whose sandbox is off: only the gates stand between a planted hook
/// and baton's unsandboxed git.
fn project(toml_extra: &str) -> Project {
    let p = Project::with_toml(&format!("{}{toml_extra}", super::run::TOML));
    std::fs::write(p.path().join("app_spec.txt"), "Build a tiny app.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    super::run::git(&p, &["init", "-q"]);
    p
}

#[test]
fn hooks_and_fsmonitor_planted_by_a_script_never_run_and_are_restored() {
    let p = project("[sandbox]\nenabled = false\n");
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("pwned");
    let payload = format!("#!/bin/sh\ntouch {}\n", marker.display());
    let plant = format!(
        "#!/bin/sh\nset -e\nprintf '%s' '{payload}' > .git/hooks/post-commit\nchmod +x .git/hooks/post-commit\ncp .git/hooks/post-commit .git/evil-fsmonitor\ngit config core.fsmonitor \"$PWD/.git/evil-fsmonitor\"\ngit config core.pager \"$PWD/.git/evil-fsmonitor\"\necho planted\n"
    );
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "scripts/setup.sh", "content": plant}),
        ),
        ("Bash", json!({"command": "bash scripts/setup.sh"})),
        // Left uncommitted: the gates must `git status`, `git add` and `git commit`.
        (
            "Write",
            json!({"file_path": "src/app.txt", "content": "work\n"}),
        ),
    ])));
    steps.push(Step::Reply(Reply::text("Set up.")));
    steps.push(Step::Reply(Reply::text("Looking.")));
    let (out, server) = run(&p, steps, &["--max-sessions", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[3].body);
    assert!(r[1].1.contains("planted"), "{r:?}");

    assert!(!marker.exists(), "a planted hook ran outside the sandbox");
    assert!(!p.path().join(".git/hooks/post-commit").exists());
    let config = p.file(".git/config");
    assert!(!config.contains("fsmonitor"), "{config}");
    assert!(!config.contains("pager"), "{config}");
    // The leftovers were committed all the same.
    assert_eq!(super::run::git(&p, &["status", "--porcelain"]), "");

    let s = state(&p);
    let g = &s["sessions"][1]["gates"]["boundary"];
    assert_eq!(
        g,
        &json!([
            ".git/config was changed",
            ".git/hooks/post-commit was added"
        ])
    );
    let entries = ledger(&p, "boundary_violation");
    assert_eq!(entries.len(), 2, "{entries:?}");
    let brief = prompt_of(&server, 4);
    assert!(
        brief.contains("- VIOLATION, undone by baton: .git/hooks/post-commit was added."),
        "{brief}"
    );
    // Still absent after baton's last git commands.
    assert!(!marker.exists());
}

/// A hijacked planner (`baton plan`) plants a hook and a pager, and rewrites
/// baton.toml, before baton commits its features: all put back before baton's git
/// runs, recorded, and the planted programs never run.
#[test]
fn a_planner_that_plants_hooks_and_edits_baton_toml_is_undone_before_baton_commits() {
    let p = project("[sandbox]\nenabled = false\n");
    let (out, _s) = run(
        &p,
        initializer(&features(&[false, false, false])),
        &["--max-sessions", "1"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let toml_before = p.file("baton.toml");
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("pwned");
    let payload = format!("#!/bin/sh\ntouch {}\n", marker.display());
    let plant = format!(
        "#!/bin/sh\nset -e\nprintf '%s' '{payload}' > .git/hooks/post-commit\nchmod +x .git/hooks/post-commit\ncp .git/hooks/post-commit .git/evil-pager\ngit config core.pager \"$PWD/.git/evil-pager\"\nprintf '[sandbox]\\nenabled = false\\n[policy]\\nallow_file_urls = true\\n' >> baton.toml\necho planted\n"
    );
    let mut list: Vec<Value> = serde_json::from_str(&features(&[false, false, false])).unwrap();
    list.push(json!({"category": "functional", "description": "Search",
                     "steps": ["search", "see"], "passes": false}));
    let steps = vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "scripts/plant.sh", "content": plant}),
            ),
            ("Bash", json!({"command": "bash scripts/plant.sh"})),
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": serde_json::to_string_pretty(&list).unwrap()}),
            ),
        ])),
        Step::Reply(Reply::text("Planned.")),
    ];
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton(&server, Wire::Anthropic)
        .args([
            "plan",
            p.path().to_str().unwrap(),
            "--idea",
            "add search",
            "--quiet",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[1].body);
    assert!(r[1].1.contains("planted"), "{r:?}");
    assert!(!marker.exists(), "a planted hook ran outside the sandbox");
    assert!(!p.path().join(".git/hooks/post-commit").exists());
    assert!(!p.file(".git/config").contains("pager"));
    assert_eq!(p.file("baton.toml"), toml_before);
    let s = state(&p);
    let planner = s["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["kind"] == "planner")
        .unwrap();
    let boundary: Vec<&str> = planner["gates"]["boundary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        boundary.contains(&".git/hooks/post-commit was added"),
        "{boundary:?}"
    );
    assert!(boundary.contains(&"baton.toml was changed"), "{boundary:?}");
    assert!(!ledger(&p, "boundary_violation").is_empty());
    // The feature was added all the same, and committed without the planted hook.
    assert_eq!(
        p.file("feature_list.json")
            .matches("\"description\"")
            .count(),
        4
    );
    assert_eq!(super::run::git(&p, &["status", "--porcelain"]), "");
    assert!(!marker.exists());
}

/// Whether bubblewrap works here; on CI (`CI=true`) it must.
fn bwrap_or_skip(test: &str) -> bool {
    if baton_policy::sandbox::kernel_binds() {
        return true;
    }
    let msg = format!(
        "{test}: skipped: bubblewrap (bwrap) is not available here; install it (apt-get install bubblewrap)"
    );
    assert!(std::env::var("CI").as_deref() != Ok("true"), "{msg}");
    eprintln!("{msg}");
    false
}

#[test]
fn batons_records_and_gits_programs_are_read_only_inside_the_sandbox() {
    if !bwrap_or_skip("batons_records_and_gits_programs_are_read_only_inside_the_sandbox") {
        return;
    }
    let p = project("");
    let mut steps = initializer(&features(&[false, false, false]));
    let script = "#!/bin/sh\nfor f in .baton/state.json .git/config .git/hooks/post-commit .git/info/attributes baton.toml; do\n  if echo x >> \"$f\"; then echo \"WROTE $f\"; fi\ndone\necho notes >> claude-progress.txt && git add -A && git commit -qm 'still commits' && echo COMMITTED\n";
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "scripts/tamper.sh", "content": script}),
        ),
        ("Bash", json!({"command": "bash scripts/tamper.sh 2>&1"})),
    ])));
    steps.push(Step::Reply(Reply::text("Done.")));
    let (out, server) = run(&p, steps, &["--max-sessions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[3].body);
    let text = &r[1].1;
    assert!(!text.contains("WROTE"), "{text}");
    assert_eq!(text.matches("Read-only file system").count(), 5, "{text}");
    assert!(text.contains("COMMITTED"), "{text}");
    // Nothing to undo afterwards, and baton's state is its own.
    let s = state(&p);
    assert_eq!(s["sessions"][1]["gates"].get("boundary"), None);
}

#[test]
fn baton_toml_changed_by_the_agent_is_restored_recorded_and_never_obeyed() {
    // Sandbox off: nothing but the policy read at the start and the gates' check.
    let p = project("[sandbox]\nenabled = false\n");
    let toml_before = p.file("baton.toml");
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        // The file tools refuse it outright…
        (
            "Write",
            json!({"file_path": "baton.toml", "content": "[policy]\nmode = \"off\"\n"}),
        ),
        // …a project script does not (the policy cannot see inside it).
        (
            "Write",
            json!({"file_path": "scripts/cfg.sh", "content": "#!/bin/sh\nprintf '[policy]\\nmode = \"off\"\\n' >> baton.toml\necho edited\n"}),
        ),
        ("Bash", json!({"command": "bash scripts/cfg.sh"})),
        // Refused by the policy read when the run started, whatever the file says.
        ("Bash", json!({"command": "sudo true"})),
    ])));
    steps.push(Step::Reply(Reply::text("Edited.")));
    // The next session: still refused.
    steps.push(Step::Reply(Reply::tool(
        "Bash",
        json!({"command": "sudo true"}),
    )));
    steps.push(Step::Reply(Reply::text("Refused.")));
    let (out, server) = run(&p, steps, &["--max-sessions", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[3].body);
    assert!(r[0].2 && r[0].1.contains("baton's own rules"), "{r:?}");
    assert!(r[2].1.contains("edited"), "{r:?}");
    assert!(
        r[3].2 && r[3].1.starts_with("Refused by baton's policy"),
        "{r:?}"
    );
    let r = tool_results(Wire::Anthropic, &server.requests()[5].body);
    assert!(
        r[0].2 && r[0].1.starts_with("Refused by baton's policy"),
        "{r:?}"
    );

    assert_eq!(p.file("baton.toml"), toml_before);
    let s = state(&p);
    assert_eq!(
        s["sessions"][1]["gates"]["boundary"],
        json!(["baton.toml was changed"])
    );
    assert_eq!(ledger(&p, "boundary_violation").len(), 1);
    let brief = prompt_of(&server, 4);
    assert!(
        brief.contains("- VIOLATION, undone by baton: baton.toml was changed."),
        "{brief}"
    );
}
