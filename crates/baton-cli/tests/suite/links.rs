//! baton's own hands never follow a link the agent planted: a feature list
//! replaced by a link to a file of the user's is restored without writing through
//! it, notes that point at a secret never reach a brief, a tell queue entry
//! that is a link is not read, and a spec a planner replaced by a link is neither
//! read nor written through (`baton_records::beneath`).

use baton_testkit::scenario::{features, initializer};
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::json;

use super::*;

/// A coding session whose project script replaces `name` with a link to
/// `target` and commits it, then ends.
fn plants_link(name: &str, target: &std::path::Path) -> Vec<Step> {
    let script = format!("ln -sfn '{}' {name}\n", target.display());
    vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "tools/fix.sh", "content": script}),
            ),
            (
                "Bash",
                json!({"command": "bash tools/fix.sh && git add -A && git commit -qm 'Tidy up'"}),
            ),
        ])),
        Step::Reply(Reply::text("Done.")),
    ]
}

/// A user's file outside the project (a stand-in for `~/.bashrc` or
/// `~/.ssh/id_rsa`) holding `text`.
fn users_file(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let f = home.path().join("bashrc");
    std::fs::write(&f, text).unwrap();
    (home, f)
}

#[test]
fn a_feature_list_replaced_by_a_link_is_restored_without_writing_through_it() {
    let (_home, bashrc) = users_file("export PS1='me'\n");
    let p =
        Project::with_toml("[project]\nfeatures = 3\nmin_features = 3\n[run]\npause_secs = 0\n");
    std::fs::write(p.path().join("app_spec.txt"), "spec\n").unwrap();
    let mut steps = initializer(&features(&[false; 3]));
    steps.extend(plants_link("feature_list.json", &bashrc));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = run_on(&server, Wire::Anthropic, &p, &["--max-sessions", "2"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // The user's file is as it was; the list is a file again, the accepted one.
    assert_eq!(
        std::fs::read_to_string(&bashrc).unwrap(),
        "export PS1='me'\n"
    );
    let list = p.path().join("feature_list.json");
    assert!(!list.is_symlink(), "{err}");
    assert_eq!(p.file("feature_list.json"), features(&[false; 3]));
    let ledger = p.file(".baton/ledger.jsonl");
    assert!(
        ledger.contains("feature_list.json was replaced by a symbolic link"),
        "{ledger}"
    );
}

#[test]
fn notes_that_point_at_a_secret_never_reach_the_brief() {
    let (_home, key) = users_file("-----BEGIN OPENSSH PRIVATE KEY----- SECRET-7f3a\n");
    let p =
        Project::with_toml("[project]\nfeatures = 3\nmin_features = 3\n[run]\npause_secs = 0\n");
    std::fs::write(p.path().join("app_spec.txt"), "spec\n").unwrap();
    let mut steps = initializer(&features(&[false; 3]));
    steps.extend(plants_link("claude-progress.txt", &key));
    steps.push(Step::Reply(Reply::text("reading the brief")));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = run_on(&server, Wire::Anthropic, &p, &["--max-sessions", "3"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for r in server.requests() {
        assert!(
            !r.body.to_string().contains("SECRET-7f3a"),
            "the secret reached the model"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&key).unwrap(),
        "-----BEGIN OPENSSH PRIVATE KEY----- SECRET-7f3a\n"
    );
}

#[test]
fn a_tell_queue_entry_that_is_a_link_is_not_read() {
    let (_home, key) = users_file("SECRET-tell-91c\n");
    let p =
        Project::with_toml("[project]\nfeatures = 3\nmin_features = 3\n[run]\npause_secs = 0\n");
    std::fs::write(p.path().join("app_spec.txt"), "spec\n").unwrap();
    let queue = baton_harness::tell::queue_dir(&p.path().canonicalize().unwrap());
    std::fs::create_dir_all(&queue).unwrap();
    std::os::unix::fs::symlink(&key, queue.join("1700000000000-a.txt")).unwrap();
    std::fs::write(queue.join("1700000000001-b.txt"), "Use SQLite.\n").unwrap();
    let mut steps = initializer(&features(&[false; 3]));
    steps.push(Step::Reply(Reply::text("reading the brief")));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = run_on(&server, Wire::Anthropic, &p, &["--max-sessions", "2"]);
    let err = stderr(&out);
    let brief = prompt_of(&server, 2);
    assert!(brief.contains("Use SQLite."), "{brief}\n{err}");
    assert!(!brief.contains("SECRET-tell-91c"), "{brief}");
}

/// A planner (from an idea) whose script replaces the spec with a link to a file
/// of the user's: baton reads no spec through it, and puts the idea back as a
/// file of its own, never writing through the link.
#[test]
fn a_spec_the_planner_replaced_by_a_link_is_never_written_through() {
    let (_home, bashrc) = users_file("export PS1='me'\n");
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("todo");
    let server = ScriptedServer::start(Wire::Anthropic, plants_link("app_spec.txt", &bashrc));
    let out = baton(&server, Wire::Anthropic)
        .args([
            "new",
            dir.to_str().unwrap(),
            "--idea",
            "a todo app",
            "--plan-only",
        ])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("did not write a specification"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&bashrc).unwrap(),
        "export PS1='me'\n",
        "{err}"
    );
    let spec = dir.join("app_spec.txt");
    assert!(!spec.is_symlink(), "{err}");
    assert!(
        std::fs::read_to_string(&spec)
            .unwrap()
            .contains("a todo app"),
        "{err}"
    );
}
