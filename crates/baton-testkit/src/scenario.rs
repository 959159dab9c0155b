//! The scripted sessions most harness tests share: a three-feature list, an
//! initializer that writes it with `init.sh` and notes and commits, and an honest
//! coding session that implements one feature, flips only it and commits.

use serde_json::{Value, json};

use crate::{RecordedRequest, Reply, Step};

/// A feature list of `passes.len()` features (the third is `style`), as the agent
/// would write it.
pub fn features(passes: &[bool]) -> String {
    let list: Vec<Value> = passes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({"category": if i == 2 { "style" } else { "functional" },
                   "description": format!("Feature {}", i + 1),
                   "steps": [format!("open the app for feature {}", i + 1), "check the result"],
                   "passes": p})
        })
        .collect();
    serde_json::to_string_pretty(&list).unwrap_or_default() + "\n"
}

/// The initializer: writes `list`, `init.sh` and the notes, and commits them.
pub fn initializer(list: &str) -> Vec<Step> {
    initializer_writing(
        list,
        "#!/usr/bin/env bash\necho 'app ready on http://127.0.0.1:0'\n",
        "Session 1: wrote the feature list and init.sh.\n",
        &[],
    )
}

/// An initializer that writes `list`, `init` as `init.sh`, `notes` and `more`
/// files, makes `init.sh` executable, and commits everything.
pub fn initializer_writing(
    list: &str,
    init: &str,
    notes: &str,
    more: &[(&str, &str)],
) -> Vec<Step> {
    let mut calls = vec![
        (
            "Write",
            json!({"file_path": "feature_list.json", "content": list}),
        ),
        ("Write", json!({"file_path": "init.sh", "content": init})),
        (
            "Write",
            json!({"file_path": "claude-progress.txt", "content": notes}),
        ),
    ];
    for (path, content) in more {
        calls.push(("Write", json!({"file_path": path, "content": content})));
    }
    calls.push((
        "Bash",
        json!({"command": "chmod +x init.sh && git add -A && git commit -qm 'Initial feature list, init.sh and notes'"}),
    ));
    vec![
        Step::Reply(Reply::tools(&calls)),
        Step::Reply(Reply::text("The project is initialized.")),
    ]
}

/// An honest coding session: start the app, implement feature `n`, flip only its
/// own feature (the list becomes `passes_after`), commit, write notes.
pub fn honest(n: usize, passes_after: &[bool]) -> Vec<Step> {
    vec![
        Step::Reply(Reply::tools(&[
            ("Bash", json!({"command": "./init.sh"})),
            (
                "Write",
                json!({"file_path": format!("src/feature{n}.txt"), "content": format!("feature {n}\n")}),
            ),
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": features(passes_after)}),
            ),
            (
                "Bash",
                json!({"command": format!("echo 'Session: implemented and verified feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Implement feature {n}'")}),
            ),
        ])),
        Step::Reply(Reply::text(&format!("Feature {n} works."))),
    ]
}

/// An honest coding session for feature `n` that works the way the coding prompt
/// asks, one response per step (bearings, `init.sh`, a smoke test, implement,
/// verify, flip with notes and commit, done): seven responses where [`honest`]
/// has two, so a run's cost splits as it does with a real model that works.
pub fn working(n: usize, passes_after: &[bool]) -> Vec<Step> {
    let bash = |command: &str| Step::Reply(Reply::tool("Bash", json!({ "command": command })));
    vec![
        bash("pwd && tail -n 20 claude-progress.txt && git log --oneline -5"),
        bash("./init.sh"),
        bash("grep -c '\"passes\": true' feature_list.json || true"),
        Step::Reply(Reply::tool(
            "Write",
            json!({"file_path": format!("src/feature{n}.txt"), "content": format!("feature {n}\n")}),
        )),
        bash(&format!(
            "test -s src/feature{n}.txt && cat src/feature{n}.txt"
        )),
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": features(passes_after)}),
            ),
            (
                "Bash",
                json!({"command": format!("echo 'Session: implemented and verified feature {n}.' >> claude-progress.txt && git add -A && git commit -qm 'Implement feature {n}'")}),
            ),
        ])),
        Step::Reply(Reply::text(&format!(
            "Feature {n} works: I wrote src/feature{n}.txt and read it back."
        ))),
    ]
}

/// Whether `r` is a request of the independent verifier's session (its system
/// prompt, wherever the wire or the agent CLI puts it).
pub fn is_verifier(r: &RecordedRequest) -> bool {
    r.body
        .to_string()
        .contains("You are an independent QA engineer")
}

/// An honest verifier, for [`crate::ServerBuilder::respond`]: for each feature
/// its prompt names (`Feature N [`…), one `Bash` call that looks for the file an
/// honest session writes (`src/featureN.txt`, see [`honest`]); the verdict line
/// after it passes the feature when the file is there and fails it when not; the
/// last reply gives the final verdict object. It judges by what its commands
/// printed, so it catches a flip of a feature nobody built. `None` for requests
/// that are not the verifier's.
pub fn honest_verifier(r: &RecordedRequest) -> Option<Step> {
    if !is_verifier(r) {
        return None;
    }
    let prompt = r.first_user_text();
    let features: Vec<usize> = prompt
        .lines()
        .filter_map(|l| l.strip_prefix("Feature "))
        .filter_map(|l| l.split_once(" [").and_then(|(n, _)| n.parse().ok()))
        .collect();
    // What its commands printed so far: `CHECKED-<n>-<present|missing>`, spelled
    // out only by the shell (the command itself says `$((n))`).
    let said = format!("{}{}", r.body["messages"], r.body["input"]);
    let seen = |n: usize| {
        if said.contains(&format!("CHECKED-{n}-present")) {
            Some(true)
        } else if said.contains(&format!("CHECKED-{n}-missing")) {
            Some(false)
        } else {
            None
        }
    };
    let verdict = |n: usize, pass: bool| {
        let reason = if pass {
            format!(
                "ran grep on src/feature{n}.txt and it holds 'feature {n}': feature {n} is built"
            )
        } else {
            format!(
                "ran grep on src/feature{n}.txt: it does not hold 'feature {n}', nothing was built for feature {n}"
            )
        };
        json!({"feature": n, "pass": pass, "reason": reason,
               "ran": [honest_command(n)], "check": honest_check(n)})
    };
    let done: Vec<(usize, bool)> = features
        .iter()
        .filter_map(|&n| seen(n).map(|p| (n, p)))
        .collect();
    let last_line = done
        .last()
        .map(|&(n, p)| format!("VERDICT {}\n", verdict(n, p)))
        .unwrap_or_default();
    match features.iter().find(|&&n| seen(n).is_none()) {
        Some(&n) => {
            let command = honest_command(n);
            // Codex's shell tool where it is offered, else baton's (and Claude Code's).
            let codex = r.body["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["name"] == "exec_command"));
            let reply = if codex {
                Reply::tool("exec_command", json!({ "cmd": command }))
            } else {
                Reply::tool("Bash", json!({ "command": command }))
            };
            Some(Step::Reply(if last_line.is_empty() {
                reply
            } else {
                reply.with_text(&last_line)
            }))
        }
        None => {
            let results: Vec<Value> = done.iter().map(|&(n, p)| verdict(n, p)).collect();
            Some(Step::Reply(Reply::text(&format!(
                "{last_line}{}",
                json!({ "results": results })
            ))))
        }
    }
}

/// A lazy verifier, for [`crate::ServerBuilder::respond`]: for each feature its
/// prompt names it only reads the change (`git diff --stat`), then passes the
/// feature with a confident account that cites a `cat` it never ran, and a check
/// that only tests that the file exists. The verifier LLM judges are known to
/// be: baton must not believe it. `None` for requests that are not the verifier's.
pub fn lazy_verifier(r: &RecordedRequest) -> Option<Step> {
    if !is_verifier(r) {
        return None;
    }
    let features: Vec<usize> = r
        .first_user_text()
        .lines()
        .filter_map(|l| l.strip_prefix("Feature "))
        .filter_map(|l| l.split_once(" [").and_then(|(n, _)| n.parse().ok()))
        .collect();
    let said = format!("{}{}", r.body["messages"], r.body["input"]);
    let diffs = said.matches("LAZY-DIFF").count();
    let verdict = |n: usize| {
        json!({"feature": n, "pass": true,
               "reason": format!("ran cat src/feature{n}.txt: it holds the expected text, feature {n} works"),
               "ran": [format!("cat src/feature{n}.txt")],
               "check": format!("test -f src/feature{n}.txt")})
    };
    // One diff per feature, each answered before the next; the sentinel is echoed
    // so its count in the conversation says how far it got.
    let tools = r.body["tools"].as_array().cloned().unwrap_or_default();
    let codex = tools.iter().any(|t| t["name"] == "exec_command");
    let command = "git diff --stat HEAD~1 HEAD; echo LAZY-DIFF";
    let reply = |text: &str| {
        let call = if codex {
            Reply::tool("exec_command", json!({ "cmd": command }))
        } else {
            Reply::tool("Bash", json!({ "command": command }))
        };
        if text.is_empty() {
            call
        } else {
            call.with_text(text)
        }
    };
    // Each echo shows up twice in what is sent back (the command and its output).
    let done = diffs / 2;
    let line = |k: usize| format!("VERDICT {}\n", verdict(features[k]));
    Some(Step::Reply(match done {
        0 => reply(""),
        k if k < features.len() => reply(&line(k - 1)),
        k => {
            let results: Vec<Value> = features.iter().map(|&n| verdict(n)).collect();
            Reply::text(&format!("{}{}", line(k - 1), json!({ "results": results })))
        }
    }))
}

/// The honest verifier's call for feature `n`: it reads what the feature built
/// (`src/featureN.txt` holding `feature N`) and prints `CHECKED-N-present` or
/// `CHECKED-N-missing`, spelled out only by the shell.
pub fn honest_command(n: usize) -> String {
    format!(
        "if grep -qx 'feature {n}' src/feature{n}.txt; then echo CHECKED-$(({n}))-present; else echo CHECKED-$(({n}))-missing; fi"
    )
}

/// The check the honest verifier leaves for feature `n`: it fails before the
/// feature is built and passes after.
pub fn honest_check(n: usize) -> String {
    format!("grep -qx 'feature {n}' src/feature{n}.txt")
}

/// A project for many agents at once: `independent` features that each add a file
/// of their own, then `shared` features that each append a line to one shared file
/// (so two of them begun from the same commit conflict). Every feature has a
/// `verify` command; descriptions are `Feature Fnn: …`, unique as text.
pub mod parallel {
    use serde_json::{Value, json};

    use crate::{RecordedRequest, Reply, Step};

    /// The token that names feature `n` (1-based) in its description.
    pub fn token(n: usize) -> String {
        format!("F{n:02}")
    }

    /// The feature list, every feature failing.
    pub fn list(independent: usize, shared: usize) -> String {
        let list: Vec<Value> = (1..=independent + shared)
            .map(|n| {
                let t = token(n);
                let (what, verify) = if n <= independent {
                    (
                        format!("Feature {t}: the app has page {t}"),
                        format!("grep -qx 'page {t}' src/{t}.txt"),
                    )
                } else {
                    (
                        format!("Feature {t}: the shared log says {t}"),
                        format!("grep -q '^{t}$' shared.txt"),
                    )
                };
                json!({"category": "functional", "description": what,
                       "steps": [format!("open the app for {t}"), "check the result"],
                       "passes": false, "verify": verify})
            })
            .collect();
        serde_json::to_string_pretty(&list).unwrap_or_default() + "\n"
    }

    /// The initializer: writes `list`, `init.sh` (saying its `$PORT`), the notes
    /// and the shared file, and commits them.
    pub fn initializer(list: &str) -> Vec<Step> {
        super::initializer_writing(
            list,
            "#!/usr/bin/env bash\necho \"app ready on port ${PORT:-3000}\"\n",
            "Session 1: wrote the feature list.\n",
            &[("shared.txt", "log\n")],
        )
    }

    /// An honest session for feature `n`: its file (or its line of the shared file
    /// when `shared`), its own flip alone (by `sed` on its entry), notes, a commit.
    pub fn session(n: usize, shared: bool) -> Vec<Step> {
        let t = token(n);
        let work = if shared {
            format!("echo '{t}' >> shared.txt")
        } else {
            format!("mkdir -p src && echo 'page {t}' > src/{t}.txt")
        };
        session_doing(n, &work)
    }

    /// A session for feature `n` that runs `work`, then flips its own entry
    /// alone (by `sed`), writes the notes and commits; then says it works.
    pub fn session_doing(n: usize, work: &str) -> Vec<Step> {
        let t = token(n);
        let flip = format!(
            "sed -i '/\"description\": \"Feature {t}:/,/\"passes\"/ s/\"passes\": false/\"passes\": true/' feature_list.json"
        );
        vec![
            Step::Reply(Reply::tool(
                "Bash",
                json!({"command": format!("{work} && {flip} && echo 'Session: {t} done and verified.' >> claude-progress.txt && git add -A && git commit -qm 'Implement {t}'")}),
            )),
            Step::Reply(Reply::text(&format!("{t} works."))),
        ]
    }

    /// A session for feature `n` that works the way the coding prompt asks, one
    /// response per step: get its bearings (notes, log, list), start the app with
    /// `init.sh`, smoke-test what passes, implement (its file, or its line of the
    /// shared file when `shared`), verify, flip its own entry, write the notes and
    /// commit, then say it is done: seven responses where `session` has two.
    pub fn working_session(n: usize, shared: bool) -> Vec<Step> {
        let t = token(n);
        let (work, verify) = if shared {
            (
                format!("echo '{t}' >> shared.txt"),
                format!("grep -q '^{t}$' shared.txt"),
            )
        } else {
            (
                format!("mkdir -p src && echo 'page {t}' > src/{t}.txt"),
                format!("test -f src/{t}.txt"),
            )
        };
        let flip = format!(
            "sed -i '/\"description\": \"Feature {t}:/,/\"passes\"/ s/\"passes\": false/\"passes\": true/' feature_list.json"
        );
        let bash =
            |command: String| Step::Reply(Reply::tool("Bash", json!({ "command": command })));
        vec![
            bash("pwd && tail -n 20 claude-progress.txt && git log --oneline -5".into()),
            bash("./init.sh".into()),
            bash("grep -c '\"passes\": true' feature_list.json || true".into()),
            bash(work),
            bash(verify),
            bash(format!(
                "{flip} && echo 'Session: {t} done and verified.' >> claude-progress.txt && git add -A && git commit -qm 'Implement {t}'"
            )),
            Step::Reply(Reply::text(&format!("{t} works."))),
        ]
    }

    /// Whether `r` is a request of a session whose feature is `n`: the brief's
    /// "Your feature" section names it (an agent of many), or it is the first of
    /// the "Next failing features" (one agent, which takes the first).
    pub fn is_for(r: &RecordedRequest, n: usize) -> bool {
        let text = r.first_user_text();
        let wanted = format!("Feature {}:", token(n));
        if let Some(at) = text.find("## Your feature") {
            let section = &text[at + 3..];
            let section = section.split("\n## ").next().unwrap_or(section);
            return section.contains(&wanted);
        }
        let Some(at) = text.find("## Next failing features") else {
            return false;
        };
        // The section's first numbered line is the feature to take.
        text[at..]
            .lines()
            .skip(1)
            .find(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .is_some_and(|first| first.contains(&wanted))
    }
}

/// A shared remote for many machines: a bare repository `remote.git` under `root`
/// holding a project as `baton new` leaves it (a spec, `baton.toml` asking for
/// `features` features, `.gitignore`), and `clones` clones of it under `root`.
/// Returns the bare repository's path and the clones' paths.
pub fn bare_remote(
    root: &std::path::Path,
    features: usize,
    clones: &[&str],
) -> (std::path::PathBuf, Vec<std::path::PathBuf>) {
    let bare = root.join("remote.git");
    let url = bare.display().to_string();
    crate::git(root, &["init", "-q", "--bare", &url]);
    let seed = root.join("seed");
    let write = |name: &str, text: &str| {
        std::fs::create_dir_all(&seed)
            .and_then(|()| std::fs::write(seed.join(name), text))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    };
    write(
        "baton.toml",
        &format!(
            "[project]\nfeatures = {features}\nmin_features = {features}\n[run]\npause_secs = 0\nstall_sessions = 0\n"
        ),
    );
    write("app_spec.txt", "Build a tiny app.\n");
    write(".gitignore", ".baton/\n");
    crate::git(&seed, &["init", "-q"]);
    crate::git(&seed, &["add", "-A"]);
    crate::git(&seed, &["commit", "-qm", "Spec"]);
    let branch = crate::git(&seed, &["symbolic-ref", "--short", "HEAD"]);
    crate::git(&seed, &["push", "-q", &url, branch.trim()]);
    let dirs: Vec<std::path::PathBuf> = clones.iter().map(|c| root.join(c)).collect();
    for d in &dirs {
        crate::git(root, &["clone", "-q", &url, &d.display().to_string()]);
    }
    (bare, dirs)
}

/// What the shared remote `bare`'s main branch holds, seen from a fresh clone of
/// it under `root` (`check/`): the clone's path and its `feature_list.json`.
pub fn remote_main(root: &std::path::Path, bare: &std::path::Path) -> (std::path::PathBuf, String) {
    let check = root.join("check");
    crate::git(
        root,
        &[
            "clone",
            "-q",
            &bare.display().to_string(),
            &check.display().to_string(),
        ],
    );
    let list = std::fs::read_to_string(check.join("feature_list.json"))
        .unwrap_or_else(|e| panic!("the remote's feature_list.json: {e}"));
    (check, list)
}
