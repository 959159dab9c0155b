//! baton's own git runs in a warm jail kept for the run (one per repository
//! root): nothing a git command starts there lives into the next command, and
//! nothing it leaves in the jail's `/tmp` or home is there for the next one, as
//! with a jail per command.

use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::run::{features, initializer};
use super::*;

/// A program git starts in baton's jail (here the clean filter of the user's
/// own git config, run on the agent's `*.dat` files: a git-lfs-like filter that
/// runs a script of the project's) leaves a process behind and plants files in
/// the jail's `/tmp` and home; each later run of it in baton's jail records
/// whether it finds either. It must find neither, and it must have run in
/// baton's jail at least twice (the positive control).
#[test]
fn nothing_a_git_command_starts_in_batons_jail_lives_into_the_next() {
    if !super::bwrap("nothing_a_git_command_starts_in_batons_jail_lives_into_the_next") {
        return;
    }
    let p = super::run::new_project();
    let home = fake_home();
    std::fs::write(
        home.path().join(".gitconfig"),
        "[filter \"x\"]\n\tclean = sh tools/f.sh\n\tsmudge = cat\n",
    )
    .unwrap();
    // Run with the repository's top as its directory; the log is under `.git`,
    // out of the tree.
    let filter = "#!/bin/sh\nseen=no\n[ -e /tmp/planted ] && seen=yes\n[ -e \"$HOME/planted\" ] && seen=yes\nalive=no\nif [ -f .git/jail-pid ]; then pid=$(cat .git/jail-pid); grep -q sleep \"/proc/$pid/cmdline\" 2>/dev/null && alive=yes; fi\necho \"home=$HOME seen=$seen alive=$alive\" >> .git/jail-log\ntouch /tmp/planted \"$HOME/planted\" 2>/dev/null\n( exec sleep 30 ) </dev/null >/dev/null 2>&1 &\necho $! > .git/jail-pid\ncat\n";
    let mut steps = initializer(&features(&[false, false, false]));
    // Two sessions leave the one `.dat` file changed: baton commits it, its git
    // cleaning the file through the filter (once a command: one file).
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "tools/f.sh", "content": filter}),
        ),
        (
            "Write",
            json!({"file_path": ".gitattributes", "content": "*.dat filter=x\n"}),
        ),
        ("Write", json!({"file_path": "a.dat", "content": "one\n"})),
    ])));
    steps.push(Step::Reply(Reply::text("Left it.")));
    steps.push(Step::Reply(Reply::tools(&[(
        "Bash",
        json!({"command": "echo two >> a.dat"}),
    )])));
    steps.push(Step::Reply(Reply::text("Left it again.")));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton(&server, Wire::Anthropic)
        .env("HOME", home.path())
        .arg("run")
        .arg(p.path())
        .args(["--max-sessions", "3"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let log = std::fs::read_to_string(p.path().join(".git/jail-log")).unwrap_or_default();
    let in_jail: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with(&format!("home={} ", home.path().display())))
        .collect();
    assert!(
        in_jail.len() >= 2,
        "the filter ran in baton's jail fewer than twice: {log}\n{}",
        stderr(&out)
    );
    let found: Vec<&&str> = in_jail
        .iter()
        .skip(1)
        .filter(|l| l.contains("=yes"))
        .collect();
    assert_eq!(found, Vec::<&&str>::new(), "{log}");
    // Nothing of it reached the real home either, and both files were committed.
    assert!(!home.path().join("planted").exists());
    assert_eq!(
        super::run::git(&p, &["status", "--porcelain", "--", "a.dat"]),
        ""
    );
}
