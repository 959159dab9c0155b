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
        .output_bounded()
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

#[test]
fn batons_records_and_gits_programs_are_read_only_inside_the_sandbox() {
    if !super::bwrap("batons_records_and_gits_programs_are_read_only_inside_the_sandbox") {
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

/// `baton run` of `steps` in `p` with `home` as the user's home: a fake one
/// holding a fake key, so what runs outside the sandbox with the user's rights
/// shows.
fn run_with_home(
    p: &Project,
    steps: Vec<Step>,
    home: &std::path::Path,
    extra: &[&str],
) -> (std::process::Output, baton_testkit::ScriptedServer) {
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "FAKE PRIVATE KEY\n").unwrap();
    let server = baton_testkit::ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton(&server, Wire::Anthropic)
        .env("HOME", home)
        .arg("run")
        .arg(p.path())
        .args(extra)
        .output_bounded()
        .unwrap();
    (out, server)
}

/// Everything under `home` but the fake key and baton's own state (where the
/// agent's commands have their home): what something planted wrote there.
fn written_in(home: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut dirs = vec![home.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path != home.join(".ssh/id_rsa")
                && !path.starts_with(home.join(".local/state/baton"))
            {
                found.push(path.strip_prefix(home).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// A nested repository whose own config names a filter, added to the project as a
/// gitlink and changed afterwards: baton's gates must not enter it (a `git status`
/// recursing into it ran the filter with the user's rights: it read the key and
/// wrote into the home).
#[test]
fn a_nested_repositorys_filter_never_runs_outside_the_sandbox() {
    if !super::bwrap("a_nested_repositorys_filter_never_runs_outside_the_sandbox") {
        return;
    }
    let p = project("");
    let home = fake_home();
    let loot = home.path().join("stolen");
    let script = format!(
        "#!/bin/sh\nset -e\nmkdir -p vendor/lib && cd vendor/lib && git init -q\ngit config user.email a@b && git config user.name a\ngit config filter.x.clean \"sh -c 'cat \\\"\\$HOME/.ssh/id_rsa\\\" > {loot} 2>/dev/null; touch \\\"\\$HOME/pwned\\\"; cat'\"\nprintf '* filter=x\\n' > .gitattributes\necho a > f && git add -A && git commit -qm x\ncd ../.. && git add vendor/lib && git commit -qm vendor\necho b >> vendor/lib/f\necho planted\n",
        loot = loot.display()
    );
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "scripts/nest.sh", "content": script}),
        ),
        ("Bash", json!({"command": "bash scripts/nest.sh 2>&1"})),
        (
            "Write",
            json!({"file_path": "src/app.txt", "content": "work\n"}),
        ),
    ])));
    steps.push(Step::Reply(Reply::text("Vendored.")));
    steps.push(Step::Reply(Reply::text("Looking.")));
    let (out, server) = run_with_home(&p, steps, home.path(), &["--max-sessions", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[3].body);
    assert!(r[1].1.contains("planted"), "{r:?}");
    assert_eq!(
        written_in(home.path()),
        Vec::<String>::new(),
        "{}",
        stderr(&out)
    );
    // The gates did their work all the same.
    assert!(super::run::git(&p, &["log", "--format=%s"]).contains("left uncommitted"));
}

/// A process the session leaves running re-creates `.git/commondir` every
/// millisecond, pointing at a copy of `.git` whose config names a filter for every
/// file: the snapshot puts `commondir` back, but baton's git read the copy first
/// and ran the filter with the user's rights.
#[test]
fn a_planted_commondir_race_never_runs_a_filter_outside_the_sandbox() {
    if !super::bwrap("a_planted_commondir_race_never_runs_a_filter_outside_the_sandbox") {
        return;
    }
    let p = project("");
    let home = fake_home();
    // The positive control: the racer marks that a write of `commondir` went
    // through, so the test cannot pass because the race never ran (in the
    // project's `.git`: the command's `/tmp` is its own).
    let wrote = p.path().join(".git/race-wrote");
    let script = format!(
        "#!/bin/sh\nset -e\nrm -rf .evil && cp -r .git .evil\ngit --git-dir=.evil config filter.x.clean \"sh -c 'touch \\\"\\$HOME/pwned\\\"; cat'\"\nprintf '* filter=x\\n' > .gitattributes\nend=$(( $(date +%s) + 12 ))\n( while [ \"$(date +%s)\" -lt \"$end\" ]; do echo \"$PWD/.evil\" > .git/commondir 2>/dev/null && : > {w}; sleep 0.001; done ) >/dev/null 2>&1 &\necho racing\n",
        w = wrote.display()
    );
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "scripts/race.sh", "content": script}),
        ),
        (
            "Bash",
            json!({"command": "bash scripts/race.sh", "run_in_background": true}),
        ),
        ("Bash", json!({"command": "sleep 1; echo waited"})),
        (
            "Write",
            json!({"file_path": "src/app.txt", "content": "work\n"}),
        ),
    ])));
    steps.push(Step::Reply(Reply::text("Racing.")));
    steps.push(Step::Reply(Reply::text("Looking.")));
    let (out, _server) = run_with_home(&p, steps, home.path(), &["--max-sessions", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        wrote.exists(),
        "the race never wrote commondir: {}",
        stderr(&out)
    );
    assert_eq!(
        written_in(home.path()),
        Vec::<String>::new(),
        "{}",
        stderr(&out)
    );
}

/// A project script writes a `.pth` into the user's `~/.local/lib/python3.X/
/// site-packages` (which the sandbox used to open for caches): it would run in
/// every later `python3` of the user's, outside any sandbox. Commands now have a
/// home of their own; the user's stays untouched, and caches still work.
#[test]
fn the_agents_commands_have_a_home_of_their_own_and_the_users_stays_untouched() {
    if !super::bwrap("the_agents_commands_have_a_home_of_their_own_and_the_users_stays_untouched") {
        return;
    }
    let p = project("");
    let home = fake_home();
    let site = home.path().join(".local/lib/python3.11/site-packages");
    std::fs::create_dir_all(&site).unwrap();
    for d in [".npm", ".cache", ".config"] {
        std::fs::create_dir_all(home.path().join(d)).unwrap();
    }
    let script = "#!/bin/sh\necho \"home=$HOME\"\nfor f in \"$HOME/.local/lib/python3.11/site-packages/evil.pth\" ~/.bashrc ~/.profile ~/.config/autostart.sh ~/.npm/evil ~/.cache/evil; do mkdir -p \"$(dirname \"$f\")\" 2>/dev/null; if echo 'import os' > \"$f\" 2>/dev/null; then echo \"wrote $f\"; fi; done\nfor f in /HOME/.local/lib/python3.11/site-packages/evil.pth /HOME/.bashrc /HOME/.npm/evil; do if echo x > \"$f\" 2>/dev/null; then echo \"WROTE $f\"; fi; done\nmkdir -p ~/.cache/pip && echo cached > ~/.cache/pip/x && cat ~/.cache/pip/x\n";
    let script = script.replace("/HOME", &home.path().display().to_string());
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "scripts/home.sh", "content": script}),
        ),
        ("Bash", json!({"command": "bash scripts/home.sh 2>&1"})),
    ])));
    steps.push(Step::Reply(Reply::text("Done.")));
    let (out, server) = run_with_home(&p, steps, home.path(), &["--max-sessions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[3].body);
    let said = &r[1].1;
    assert!(!said.contains("WROTE"), "{said}");
    assert!(
        said.contains("cached"),
        "caches work in the agent's home: {said}"
    );
    let own = said
        .lines()
        .find_map(|l| l.strip_prefix("home="))
        .unwrap_or_default()
        .to_string();
    assert!(
        !own.is_empty() && own != home.path().display().to_string(),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "wrote {own}/.local/lib/python3.11/site-packages/evil.pth"
        )),
        "{said}"
    );
    assert_eq!(written_in(home.path()), Vec::<String>::new());
}

/// A session commits a different `baton.toml` through git's plumbing (no write
/// to the file itself, which bubblewrap keeps read-only) and hides the difference
/// from `git status` with skip-worktree: a clone, a `--remote` worker or the
/// user's next checkout would get the agent's file. After the session, history
/// holds baton's file again, the bit is cleared, and the ledger says so.
#[test]
fn a_baton_toml_committed_behind_the_work_trees_back_is_put_back_in_history() {
    let p = project("");
    let toml_before = p.file("baton.toml");
    let marker = tempfile::tempdir().unwrap();
    let marker = marker.path().join("pwned");
    let script = format!(
        "#!/bin/sh\nset -e\nblob=$(printf '[notify]\\ncommand = [\"touch\", \"{}\"]\\n' | git hash-object -w --stdin)\ngit update-index --cacheinfo \"100644,$blob,baton.toml\"\ngit update-index --skip-worktree baton.toml\ngit commit -qm 'Tidy up'\necho sneaked\n",
        marker.display()
    );
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "scripts/tidy.sh", "content": script}),
        ),
        ("Bash", json!({"command": "bash scripts/tidy.sh"})),
    ])));
    steps.push(Step::Reply(Reply::text("Tidied.")));
    let (out, server) = run(&p, steps, &["--max-sessions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let r = tool_results(Wire::Anthropic, &server.requests()[3].body);
    assert!(r[1].1.contains("sneaked"), "the script did not run: {r:?}");
    assert_eq!(
        super::run::git(&p, &["show", "HEAD:baton.toml"]),
        toml_before
    );
    assert!(
        super::run::git(&p, &["ls-files", "-v", "baton.toml"]).starts_with("H "),
        "still hidden"
    );
    assert_eq!(super::run::git(&p, &["status", "--porcelain"]), "");
    let found = ledger(&p, "boundary_violation");
    assert!(
        found.iter().any(|e| e["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("baton.toml")),
        "{found:?}"
    );
    assert!(!marker.exists());
}

/// A new project whose `[git] push` names `origin`, an empty bare repository
/// of its own (kept while the returned dir lives; its path last).
fn pushing_project() -> (Project, tempfile::TempDir, std::path::PathBuf) {
    let p = super::run::new_project();
    let toml = std::fs::read_to_string(p.path().join("baton.toml")).unwrap();
    std::fs::write(
        p.path().join("baton.toml"),
        format!("{toml}[git]\npush = \"origin\"\n"),
    )
    .unwrap();
    let remote = tempfile::tempdir().unwrap();
    let bare = remote.path().join("r.git");
    baton_testkit::git(remote.path(), &["init", "-q", "--bare", "r.git"]);
    super::run::git(&p, &["remote", "add", "origin", bare.to_str().unwrap()]);
    (p, remote, bare)
}

/// With `[git] push = "origin"`, baton pushes the run's branch after each
/// session that committed, outside the sandbox (whose commands have no way to the
/// user's credentials), to `baton/<branch>` on the remote; when the remote moved
/// on, the push is refused, said and recorded, and the remote's work stays:
/// baton never forces.
#[test]
fn baton_pushes_the_runs_branch_and_never_forces() {
    let (p, _remote, bare) = pushing_project();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(super::run::honest(1, &[true, false, false]));
    let (out, _server) = run(&p, steps, &["--max-sessions", "2"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let branch = super::run::git(&p, &["symbolic-ref", "--short", "HEAD"]);
    let branch = branch.trim();
    let head = super::run::git(&p, &["rev-parse", "HEAD"]);
    let there = baton_testkit::git(&bare, &["rev-parse", &format!("refs/heads/baton/{branch}")]);
    assert_eq!(there.trim(), head.trim(), "{err}");
    // Never the remote's own branch of that name (its default, here).
    let heads = baton_testkit::git(&bare, &["for-each-ref", "--format=%(refname)"]);
    assert_eq!(heads.trim(), format!("refs/heads/baton/{branch}"), "{err}");
    let pushed = ledger(&p, "pushed");
    assert_eq!(
        pushed.len(),
        2,
        "after the initializer and the coding session: {err}"
    );
    assert_eq!(pushed[1]["commit"], head.trim(), "{pushed:?}");
    assert!(
        err.contains(&format!("pushed {branch} to origin as baton/{branch}")),
        "{err}"
    );

    // Someone else pushes to the branch; the next session's push is refused.
    let other = tempfile::tempdir().unwrap();
    baton_testkit::git(other.path(), &["clone", "-q", bare.to_str().unwrap(), "c"]);
    let c = other.path().join("c");
    baton_testkit::git(&c, &["checkout", "-q", &format!("baton/{branch}")]);
    std::fs::write(c.join("theirs.txt"), "their work\n").unwrap();
    baton_testkit::git(&c, &["add", "-A"]);
    baton_testkit::git(&c, &["commit", "-qm", "their work"]);
    baton_testkit::git(
        &c,
        &["push", "-q", "origin", &format!("HEAD:baton/{branch}")],
    );
    let theirs = baton_testkit::git(&c, &["rev-parse", "HEAD"]);
    let (out, _server) = run(
        &p,
        super::run::honest(2, &[true, true, false]),
        &["--max-sessions", "1"],
    );
    let err = stderr(&out);
    let refused = ledger(&p, "push_refused");
    assert_eq!(refused.len(), 1, "{err}");
    assert!(
        refused[0]["detail"]
            .as_str()
            .unwrap()
            .contains("never forces"),
        "{refused:?}"
    );
    assert!(err.contains("push: origin refused"), "{err}");
    let there = baton_testkit::git(&bare, &["rev-parse", &format!("refs/heads/baton/{branch}")]);
    assert_eq!(
        there.trim(),
        theirs.trim(),
        "their work stays on the remote"
    );
}

/// What baton publishes is baton's decision: the branch the run started on,
/// whatever HEAD is on when it pushes (an agent's `git checkout -B deploy` and
/// its commit there are never pushed), under `baton/` on the remote (never the
/// remote's own branches), and never a commit that changes a CI or
/// deployment definition (a workflow runs with the repository's secrets): the
/// push stops before it, says which, and goes on once a person has published it.
#[test]
fn baton_publishes_only_the_runs_branch_and_never_a_workflow() {
    let (p, _remote, bare) = pushing_project();
    let mut steps = initializer(&features(&[false, false, false]));
    // A session that switches branches and commits there.
    steps.push(Step::Reply(Reply::tool(
        "Bash",
        json!({"command": "git checkout -q -B deploy && echo evil > evil.txt && git add -A && git commit -qm evil"}),
    )));
    steps.push(Step::Reply(Reply::text("done")));
    let (out, _server) = run(&p, steps, &["--max-sessions", "2"]);
    let err = stderr(&out);
    let refs = baton_testkit::git(&bare, &["for-each-ref", "--format=%(refname)"]);
    assert!(!refs.contains("deploy"), "{refs}\n{err}");
    let branch = baton_testkit::git(
        &bare,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/baton/",
        ],
    );
    let branch = branch.trim().trim_start_matches("baton/").to_string();
    assert!(!branch.is_empty() && branch != "deploy", "{refs}");
    let there =
        |b: &str| baton_testkit::git(&bare, &["rev-parse", &format!("refs/heads/baton/{b}")]);
    let evil = super::run::git(&p, &["log", "-1", "--format=%H", "deploy"]);
    assert_ne!(there(&branch).trim(), evil.trim(), "{err}");
    let contains = |c: &str| {
        std::process::Command::new("git")
            .args(["-C", bare.to_str().unwrap(), "cat-file", "-e", c])
            .status_bounded()
            .unwrap()
            .success()
    };
    assert!(
        !contains(evil.trim()),
        "the other branch's commit reached the remote: {err}"
    );

    // Back on the run's branch: a session that adds a workflow.
    super::run::git(&p, &["checkout", "-q", &branch]);
    let steps = vec![
        Step::Reply(Reply::tool(
            "Bash",
            json!({"command": "mkdir -p .github/workflows && printf 'on: push\\njobs: {}\\n' > .github/workflows/leak.yml && git add -A && git commit -qm 'ci' && echo more > more.txt && git add -A && git commit -qm more"}),
        )),
        Step::Reply(Reply::text("done")),
    ];
    let before = there(&branch);
    let (out, _server) = run(&p, steps, &["--max-sessions", "1"]);
    let err = stderr(&out);
    assert_eq!(there(&branch), before, "a workflow was published: {err}");
    let refused = ledger(&p, "push_refused");
    assert!(
        refused.iter().any(|r| r["detail"]
            .as_str()
            .unwrap()
            .contains(".github/workflows/leak.yml, a CI or deployment definition")),
        "{refused:?}\n{err}"
    );
    assert!(err.contains("which baton never publishes"), "{err}");

    // A person reads it and publishes it; the next push follows.
    let ci = super::run::git(&p, &["log", "-1", "--format=%H", "--", ".github"]);
    baton_testkit::git(
        p.path(),
        &[
            "push",
            "-q",
            "origin",
            &format!("{}:refs/heads/baton/{branch}", ci.trim()),
        ],
    );
    let (out, _server) = run(
        &p,
        super::run::honest(1, &[true, false, false]),
        &["--max-sessions", "1"],
    );
    let err = stderr(&out);
    let head = super::run::git(&p, &["rev-parse", "HEAD"]);
    assert_eq!(there(&branch).trim(), head.trim(), "{err}");
}

/// baton finds its own helpers on a `PATH` it trusts: with the project's `bin/`
/// first on the user's `PATH` (as a virtualenv, `node_modules/.bin` or a direnv
/// entry stands), a `bwrap`, a `git` or a `[notify]` program the agent could
/// write there are never run; baton runs the real ones, by absolute path.
#[test]
fn a_helper_planted_first_on_path_is_never_run() {
    let p = super::run::new_project();
    // Where only a process outside the sandbox can write (not the project, not
    // a temp dir): each planted helper notes itself there, then runs the real
    // program, so the agent's own commands (inside the sandbox, where the
    // user's PATH is theirs to use) work and leave no note.
    let marker = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let ran = marker.path().join("ran");
    let bin = p.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let real = std::env::var("PATH").unwrap_or_default();
    for name in ["bwrap", "git", "npx", "node", "baton-test-notifier"] {
        let f = bin.join(name);
        std::fs::write(
            &f,
            format!(
                "#!/bin/sh\necho {name} >> {} 2>/dev/null\nPATH='{real}' exec {name} \"$@\"\n",
                ran.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The notifier the person installed, in a directory baton may trust.
    let trusted = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let told = marker.path().join("told");
    let notifier = trusted.path().join("baton-test-notifier");
    std::fs::write(
        &notifier,
        format!(
            "#!/bin/sh
cat >> {}
",
            told.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&notifier, std::fs::Permissions::from_mode(0o755)).unwrap();
    let toml = p.path().join("baton.toml");
    let mut config = std::fs::read_to_string(&toml).unwrap();
    config.push_str("\n[notify]\ncommand = [\"baton-test-notifier\"]\n");
    std::fs::write(&toml, config).unwrap();
    let path = format!(
        "{}:{}:{}",
        bin.display(),
        trusted.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut steps = initializer(&features(&[false, false, false]));
    steps.extend(super::run::honest(1, &[true, false, false]));
    let server = baton_testkit::ScriptedServer::start(baton_testkit::Wire::Anthropic, steps);
    let (_, err) = super::run_two_sessions_with_path(&server, p.path(), path.as_ref());
    assert!(
        !ran.exists(),
        "a planted helper ran: {}\n{err}",
        std::fs::read_to_string(&ran).unwrap_or_default()
    );
    assert_eq!(ledger(&p, "flip").len(), 1, "{err}");
    // The person's notifier was told how the run ended.
    let told = std::fs::read_to_string(&told).unwrap_or_default();
    assert!(told.contains("\"event\""), "{told}\n{err}");
}

/// baton's own reads of the tree never hang or abort on what the agent left: a
/// `.gitignore` that is a link to `/dev/zero` (read by the tree digest of every
/// sweep before a session) is not followed; the run goes on, its sweeps running
/// every check, and ends.
#[test]
fn an_ignore_file_linked_to_dev_zero_never_stops_a_run() {
    use super::proof::{run_under_defaults_by, session_writing, with_checks};
    let checks = [
        Some("grep -qx 'feature 1' src/feature1.txt"),
        Some("grep -qx 'feature 2' src/feature2.txt"),
    ];
    let list = |p: &[bool]| with_checks(p, &checks);
    let mut first = vec![Step::Reply(Reply::tool(
        "Bash",
        json!({"command": "mkdir -p src && ln -s /dev/zero src/.gitignore"}),
    ))];
    first.extend(session_writing(
        &[("src/feature1.txt", "feature 1\n")],
        &list(&[true, false, false, false]),
    ));
    let second = session_writing(
        &[("src/feature2.txt", "feature 2\n")],
        &list(&[true, true, false, false]),
    );
    // Bounded: a hang ends the test, not the suite.
    let run = |server: &baton_testkit::ScriptedServer, args: &[&str]| {
        let mut cmd = baton(server, baton_testkit::Wire::Anthropic);
        cmd.args(args);
        output_within(cmd, 120).0
    };
    let (_t, dir, out) = run_under_defaults_by(
        &list(&[false; 4]),
        &[],
        vec![first, second],
        baton_testkit::scenario::honest_verifier,
        4,
        &run,
    );
    let err = stderr(&out);
    assert!(out.status.code().is_some(), "killed after a hang: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(super::proof::entries(&dir, "flip").len(), 2, "{err}");
}

/// `baton exec` starts its session in an empty agent home, as every session of
/// a run does: what an earlier session left there (a config a later command
/// would read) is gone.
#[test]
fn an_exec_session_starts_in_an_empty_home() {
    let p = Project::new();
    let exec = |command: &str| {
        let server = baton_testkit::ScriptedServer::start(
            baton_testkit::Wire::Anthropic,
            vec![
                Step::Reply(Reply::tool("Bash", json!({ "command": command }))),
                Step::Reply(Reply::text("done")),
            ],
        );
        let out = baton(&server, baton_testkit::Wire::Anthropic)
            .arg("exec")
            .arg(p.path())
            .args(["--prompt", "do the task"])
            .output_bounded()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let r = tool_results(baton_testkit::Wire::Anthropic, &server.requests()[1].body);
        r[0].1.clone()
    };
    // Through a script of the project: the policy refuses a command that
    // names the home, not what a project script does inside the sandbox.
    std::fs::write(
        p.path().join("plant.sh"),
        "echo planted > \"$HOME/planted.txt\" && cat \"$HOME/planted.txt\"\n",
    )
    .unwrap();
    std::fs::write(
        p.path().join("look.sh"),
        "cat \"$HOME/planted.txt\" 2>/dev/null || echo GONE\n",
    )
    .unwrap();
    let planted = exec("bash plant.sh");
    assert!(planted.contains("planted"), "{planted}");
    let later = exec("bash look.sh");
    assert!(later.contains("GONE"), "{later}");
}

/// A hung git never hangs baton: a session that leaves a FIFO where git reads
/// its index (`.git/index`) makes baton's own git block at the gates; it is
/// stopped at `[git] timeout_secs` and the run ends with an error that says
/// what happened, not a hang.
#[test]
fn a_hung_git_ends_in_a_clear_error() {
    let p = super::run::new_project();
    let toml = std::fs::read_to_string(p.path().join("baton.toml")).unwrap();
    std::fs::write(
        p.path().join("baton.toml"),
        format!("{toml}[git]\ntimeout_secs = 5\n"),
    )
    .unwrap();
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "fifo.py", "content": "import os\nos.remove('.git/index')\nos.mkfifo('.git/index')\n"}),
        ),
        ("Bash", json!({"command": "python3 fifo.py"})),
    ])));
    steps.push(Step::Reply(Reply::text("done")));
    let server = baton_testkit::ScriptedServer::start(baton_testkit::Wire::Anthropic, steps);
    let mut cmd = baton(&server, baton_testkit::Wire::Anthropic);
    cmd.arg("run").arg(p.path()).args(["--max-sessions", "2"]);
    // Bounded: a hang ends the test, not the suite.
    let (out, hung) = output_within(cmd, 120);
    let err = stderr(&out);
    // The FIFO goes, so the project's git works again.
    let _ = std::fs::remove_file(p.path().join(".git/index"));
    assert!(!hung, "baton hung on the FIFO: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("did not finish within 5s"), "{err}");
}

/// `cmd`'s output, killed after `secs` if it has not ended (then `true`): a
/// test of a hang ends on its own.
fn output_within(mut cmd: std::process::Command, secs: u64) -> (std::process::Output, bool) {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let hung = child.try_wait().unwrap().is_none();
    if hung {
        let _ = child.kill();
    }
    (child.wait_with_output_bounded().unwrap(), hung)
}

/// A coding session double-forks a process into a session of its own (out of
/// every process group baton knows), which keeps a file in the agent's home
/// fresh. Nothing of a session may live into its gates or the next session:
/// the next session's home (emptied when it starts) stays without the file,
/// and no such process is there to see.
#[test]
fn a_double_forked_process_does_not_outlive_its_session() {
    if !super::bwrap("a_double_forked_process_does_not_outlive_its_session") {
        return;
    }
    let p = project("");
    let (start, look) = super::leftover_daemon(77);
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&start)));
    steps.push(Step::Reply(Reply::text("Left a helper running.")));
    steps.push(look);
    steps.push(Step::Reply(Reply::text("Looked.")));
    let (out, server) = run(&p, steps, &["--max-sessions", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    super::assert_no_leftover(&server);
}

/// The host's temp dirs are rendezvous points: a tmux server's socket, an ssh
/// agent forwarded to `/tmp/vscode-ssh-auth-….sock`, Chromium's singleton,
/// another run's files. A command sees a `/tmp` and a `/dev/shm` of its own:
/// none of the host's entries, and what it writes there stays there; the
/// project (itself in `/tmp` here) is still its to work in.
#[test]
fn the_hosts_temp_dirs_and_their_sockets_are_out_of_reach() {
    if !super::bwrap("the_hosts_temp_dirs_and_their_sockets_are_out_of_reach") {
        return;
    }
    let p = project("");
    let host = tempfile::Builder::new()
        .prefix("baton-host-")
        .tempdir_in("/tmp")
        .unwrap();
    let sock = host.path().join("vscode-ssh-auth-1.sock");
    let _agent = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let shm = tempfile::Builder::new()
        .prefix("baton-host-")
        .tempfile_in("/dev/shm")
        .unwrap();
    // A host daemon's socket in /run (the user's runtime dir, a container
    // daemon's), where the test may make one.
    let run_dir = tempfile::Builder::new()
        .prefix("baton-host-")
        .tempdir_in("/run")
        .ok();
    let run_sock = run_dir.as_ref().map(|d| d.path().join("docker.sock"));
    let _daemon = run_sock
        .as_ref()
        .map(|s| std::os::unix::net::UnixListener::bind(s).unwrap());
    let mine = format!(
        "/tmp/{}-written-inside",
        host.path().file_name().unwrap().to_string_lossy()
    );
    let run_sock = run_sock.map_or("/run/baton-none".into(), |s| s.display().to_string());
    let look = format!(
        "for p in {} {} {} {run_sock}; do if [ -e \"$p\" ]; then echo \"SEEN $p\"; else echo hidden; fi; done; echo inside > {mine} && cat {mine}; pwd; echo work > src-probe.txt && cat src-probe.txt; if [ -r /etc/resolv.conf ]; then echo names-resolve; fi",
        host.path().display(),
        sock.display(),
        shm.path().display()
    );
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tool("Bash", json!({ "command": look }))));
    steps.push(Step::Reply(Reply::text("Looked.")));
    let (out, server) = run(&p, steps, &["--max-sessions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = tool_outputs(&server);
    let said = said
        .iter()
        .find(|s| s.contains("hidden") || s.contains("SEEN"))
        .unwrap_or_else(|| panic!("{said:?}"));
    assert!(!said.contains("SEEN"), "{said}");
    assert_eq!(said.matches("hidden").count(), 4, "{said}");
    assert!(said.contains("inside\n"), "{said}");
    assert!(said.contains("names-resolve"), "{said}");
    assert!(
        said.contains("work\n"),
        "the project stays the command's: {said}"
    );
    assert!(
        !std::path::Path::new(&mine).exists(),
        "what a command writes in its /tmp stays in its namespace"
    );
}

/// The user's global git config may hold a token (a `url.….insteadOf` with
/// one in it, a credential helper, an `http.extraHeader`). A command sees the
/// config baton writes instead: the user's name and email, nothing that
/// reaches a server, and the user's file is out of sight.
#[test]
fn no_token_from_the_users_git_config_reaches_a_command() {
    if !super::bwrap("no_token_from_the_users_git_config_reaches_a_command") {
        return;
    }
    let p = project("");
    let home = fake_home();
    std::fs::write(
        home.path().join(".gitconfig"),
        "[user]\n\tname = Test User\n\temail = test@example.com\n[url \"https://x-access-token:SECRET-TOKEN-1@github.com/\"]\n\tinsteadOf = https://github.com/\n[credential]\n\thelper = store --file /tmp/SECRET-TOKEN-2\n[http]\n\textraHeader = AUTHORIZATION: basic SECRET-TOKEN-3\n[include]\n\tpath = ~/.gitconfig-more\n",
    )
    .unwrap();
    std::fs::write(
        home.path().join(".gitconfig-more"),
        "[core]\n\tsshCommand = ssh -i SECRET-TOKEN-4\n",
    )
    .unwrap();
    // The project's own config, as a CI checkout leaves it.
    let project_config = p.path().join(".git/config");
    let mut config = std::fs::read_to_string(&project_config).unwrap();
    config.push_str("[remote \"origin\"]\n\turl = https://x-access-token:SECRET-TOKEN-5@github.com/o/r.git\n[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic SECRET-TOKEN-6\n[credential]\n\thelper = store --file /tmp/SECRET-TOKEN-7\n[includeIf \"gitdir:/\"]\n\tpath = /tmp/SECRET-TOKEN-8\n");
    std::fs::write(&project_config, config).unwrap();
    let look = format!(
        "git config --global --list 2>&1; git config --list 2>&1; cat {h}/.gitconfig {h}/.gitconfig-more 2>&1; cat \"${{GIT_CONFIG_GLOBAL:-none}}\" 2>&1; cat .git/config; git remote -v; git status --short | head -1; echo end",
        h = home.path().display()
    );
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tool("Bash", json!({ "command": look }))));
    steps.push(Step::Reply(Reply::text("Looked.")));
    let (out, server) = run_with_home(&p, steps, home.path(), &["--max-sessions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = tool_outputs(&server);
    let said = said
        .iter()
        .find(|s| s.contains("end"))
        .unwrap_or_else(|| panic!("{said:?}"));
    assert!(!said.contains("SECRET-TOKEN"), "{said}");
    assert!(said.contains("user.name=Test User"), "{said}");
    assert!(said.contains("user.email=test@example.com"), "{said}");
    // The project's remote is there, without its token.
    assert!(
        said.contains("origin\thttps://github.com/o/r.git (fetch)"),
        "{said}"
    );
    // The initializer's commit took the user's name all the same.
    let author = super::run::git(&p, &["log", "--format=%an", "-1", "HEAD~0"]);
    assert!(!author.is_empty(), "{author}");
}

/// A run whose coding session writes `script` as `scripts/<name>` and runs it
/// with `sh`: the run's output, and what the script printed.
fn run_script(p: &Project, name: &str, script: &str) -> (Output, String) {
    let mut steps = initializer(&features(&[false, false, false]));
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": format!("scripts/{name}"), "content": script}),
        ),
        ("Bash", json!({"command": format!("sh scripts/{name}")})),
    ])));
    steps.push(Step::Reply(Reply::text("Ran it.")));
    let (out, server) = run(p, steps, &["--max-sessions", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    (out, tool_outputs(&server).join("\n"))
}

/// A stand-in for "the internet": a server on every address of the host that
/// answers each request with `INTERNET-OK <request line>`.
fn internet() -> u16 {
    use std::io::{Read as _, Write as _};
    let server = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in server.incoming().flatten() {
            let mut buf = [0u8; 2048];
            let n = c.read(&mut buf).unwrap_or(0);
            let line = String::from_utf8_lossy(&buf[..n])
                .lines()
                .next()
                .unwrap_or_default()
                .to_string();
            let body = format!("INTERNET-OK {line}\n");
            let _ = write!(
                c,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

/// Under the default network (`"allowlist"`), a project script's commands reach
/// a host of `[sandbox] allow` through baton's proxy, and nothing else: not a
/// host off the list (the agent is told why), not the host by its address, not
/// a name through DNS, not through a proxy variable the script sets itself.
/// The refused host is told to the person once.
#[test]
fn a_command_reaches_only_the_allowlisted_hosts_through_batons_proxy() {
    if !super::bwrap("a_command_reaches_only_the_allowlisted_hosts_through_batons_proxy") {
        return;
    }
    let port = internet();
    let notes = tempfile::tempdir().unwrap();
    let told = notes.path().join("told.jsonl");
    let p = project(&format!(
        "[sandbox]\nallow = [\"registry.test\", \"porty.test:1\"]\n[sandbox.hosts]\n\"registry.test\" = \"127.0.0.1\"\n\"evil.test\" = \"127.0.0.1\"\n\"porty.test\" = \"127.0.0.1\"\n[notify]\ncommand = [\"sh\", \"-c\", \"cat >> {}\"]\n",
        told.display()
    ));
    let script = format!(
        "#!/bin/sh\n\
         try() {{ label=$1; shift; out=$(\"$@\" 2>&1); echo \"$label: $out\"; }}\n\
         try allowed curl -s --max-time 5 http://registry.test:{port}/pkg\n\
         try allowed-tls curl -s --max-time 5 -p http://registry.test:{port}/tunnel\n\
         try refused curl -s --max-time 5 http://evil.test:{port}/x\n\
         try other-port curl -s --max-time 5 http://porty.test:{port}/x\n\
         try by-ip curl -s --max-time 5 --noproxy '*' http://127.0.0.1:{port}/x\n\
         try by-dns curl -s --max-time 5 --noproxy '*' http://registry.test:{port}/x\n\
         try own-proxy env HTTPS_PROXY=http://127.0.0.1:{port} HTTP_PROXY=http://127.0.0.1:{port} curl -s --max-time 5 http://evil.test:{port}/x\n\
         try far curl -s --max-time 5 --noproxy '*' http://192.0.2.1/\n\
         echo net-done\n"
    );
    let (out, said) = run_script(&p, "net.sh", &script);
    assert!(said.contains("net-done"), "{said}");
    let line = |label: &str| {
        said.lines()
            .find(|l| l.starts_with(&format!("{label}: ")))
            .unwrap_or_else(|| panic!("{label} in {said}"))
            .to_string()
    };
    assert!(line("allowed").contains("INTERNET-OK GET /pkg"), "{said}");
    assert!(
        line("allowed-tls").contains("INTERNET-OK GET /tunnel"),
        "{said}"
    );
    assert!(
        line("refused").contains("evil.test is not on this run's allowlist"),
        "{said}"
    );
    // An entry with a port allows that port only, and the refusal says which
    // entry to add.
    assert!(
        line("other-port").contains(&format!(
            "porty.test is on this run's allowlist at other ports than {port}; if the project needs it, say so in the progress notes (only a person can add porty.test:{port}"
        )),
        "{said}"
    );
    for label in ["by-ip", "by-dns", "own-proxy", "far", "other-port"] {
        assert!(!line(label).contains("INTERNET-OK"), "{said}");
    }
    // The person is told, once: in the live view, the status, the report and
    // a notification.
    let err = stderr(&out);
    assert_eq!(
        err.matches("network: refused evil.test").count(),
        1,
        "{err}"
    );
    assert!(err.contains("network: allowlist of 2 hosts"), "{err}");
    let baton = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(args)
            .arg(p.path())
            .output_bounded()
            .unwrap()
    };
    let status: serde_json::Value =
        serde_json::from_slice(&baton(&["status", "--json"]).stdout).unwrap();
    assert_eq!(
        status["sessions"][1]["network_refused"],
        json!(["evil.test", "porty.test"])
    );
    let text = String::from_utf8_lossy(&baton(&["status"]).stdout).into_owned();
    assert!(text.contains("network refused evil.test"), "{text}");
    assert!(baton(&["report"]).status.success());
    let page = p.file(".baton/report.html");
    assert!(page.contains("network refused</span> <code>evil.test</code>"));
    let told = std::fs::read_to_string(&told).unwrap_or_default();
    assert_eq!(told.matches("\"network_refused\"").count(), 1, "{told}");
    assert!(told.contains("evil.test"), "{told}");
}

/// `network = "open"` is the host's network, and the start says so.
#[test]
fn an_open_network_is_open_and_says_so() {
    if !super::bwrap("an_open_network_is_open_and_says_so") {
        return;
    }
    let port = internet();
    let p = project("[sandbox]\nnetwork = \"open\"\n");
    let script = format!(
        "#!/bin/sh\necho \"direct: $(curl -s --max-time 5 --noproxy '*' http://127.0.0.1:{port}/open 2>&1)\"\necho net-done\n"
    );
    let (out, said) = run_script(&p, "net.sh", &script);
    assert!(said.contains("direct: INTERNET-OK GET /open"), "{said}");
    assert!(stderr(&out).contains("network: open"), "{}", stderr(&out));
}

/// A package registry on the allowlist (a local one, by the name
/// `[sandbox] hosts` maps) serves `npm install` inside the sandbox, through
/// baton's proxy: the network boundary leaves a normal project's installs working.
#[test]
fn npm_installs_from_an_allowed_registry_inside_the_sandbox() {
    use std::io::{Read as _, Write as _};
    if !super::bwrap("npm_installs_from_an_allowed_registry_inside_the_sandbox") {
        return;
    }
    let Ok(npm) = which_npm() else {
        assert!(std::env::var_os("CI").is_none(), "npm is missing on CI");
        eprintln!("note: npm_installs_from_an_allowed_registry_inside_the_sandbox skipped: no npm");
        return;
    };
    // The package, packed by npm itself.
    let pkg = tempfile::tempdir().unwrap();
    std::fs::write(
        pkg.path().join("package.json"),
        r#"{"name": "tiny-pkg", "version": "1.0.0", "main": "index.js"}"#,
    )
    .unwrap();
    std::fs::write(
        pkg.path().join("index.js"),
        "module.exports = 'tiny works';\n",
    )
    .unwrap();
    let packed = std::process::Command::new(&npm)
        .args(["pack", "--silent"])
        .current_dir(pkg.path())
        .output_bounded()
        .unwrap();
    assert!(packed.status.success(), "{packed:?}");
    let tarball = std::fs::read(pkg.path().join("tiny-pkg-1.0.0.tgz")).unwrap();
    let server = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in server.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let n = c.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
            let (kind, body): (&str, Vec<u8>) = if path.ends_with(".tgz") {
                ("application/octet-stream", tarball.clone())
            } else if path.contains("tiny-pkg") {
                let doc = json!({
                    "name": "tiny-pkg",
                    "dist-tags": {"latest": "1.0.0"},
                    "versions": {"1.0.0": {
                        "name": "tiny-pkg", "version": "1.0.0", "main": "index.js",
                        "dist": {"tarball": format!("http://registry.test:{port}/tiny-pkg/-/tiny-pkg-1.0.0.tgz")}
                    }}
                });
                ("application/json", doc.to_string().into_bytes())
            } else {
                let _ = c.write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
                continue;
            };
            let _ = write!(
                c,
                "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = c.write_all(&body);
        }
    });
    let p = project(
        "[sandbox]\nallow = [\"registry.test\"]\n[sandbox.hosts]\n\"registry.test\" = \"127.0.0.1\"\n",
    );
    std::fs::write(
        p.path().join("package.json"),
        r#"{"name": "app", "version": "0.0.1", "dependencies": {"tiny-pkg": "1.0.0"}}"#,
    )
    .unwrap();
    std::fs::write(
        p.path().join(".npmrc"),
        format!("registry=http://registry.test:{port}/\n"),
    )
    .unwrap();
    let script = "#!/bin/sh\nnpm install --no-audit --no-fund --loglevel=error >/dev/null 2>npm-err.txt || cat npm-err.txt\nnode -e \"console.log(require('tiny-pkg'))\"\necho install-done\n";
    let (out, said) = run_script(&p, "install.sh", script);
    assert!(said.contains("tiny works"), "{said}");
    assert!(
        !stderr(&out).contains("network: refused"),
        "{}",
        stderr(&out)
    );
}

/// `npm` on the `PATH`, if any.
fn which_npm() -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("npm"))
        .find(|p| p.is_file())
        .ok_or(())
}
