//! Proof is complete: every honest way of doing and verifying the work ends
//! with the project complete, under the settings `baton new` writes. Work that
//! reached a commit before its flip was accepted (a `kill -9` and resume, a
//! restored tamper, a feature done beside another) is replayed against the
//! feature's own "before"; verdicts written together count; a verifier's check
//! that cannot stand alone is refused with why, and a corrected one holds.

use baton_testkit::scenario::{features, honest, honest_check, honest_command, is_verifier};
use baton_testkit::{RecordedRequest, Reply, ScriptedServer, Step, Wire};
use serde_json::json;

use super::proof::{entries, new_project, session_writing, with_checks};
use super::*;

/// The initializer of a four-feature project: `list`, an `init.sh` that says
/// the app is ready, notes, and `more` files.
fn init(list: &str, more: &[(&str, &str)]) -> Vec<Step> {
    baton_testkit::scenario::initializer_writing(
        list,
        "#!/usr/bin/env bash\necho 'app ready'\n",
        "Session 1: wrote the feature list.\n",
        more,
    )
}

/// `baton run DIR` against `server` to its end.
fn run(server: &ScriptedServer, dir: &std::path::Path) -> std::process::Output {
    baton(server, Wire::Anthropic)
        .arg("run")
        .arg(dir)
        .output_bounded()
        .unwrap()
}

/// `baton run DIR --max-sessions 2`: the initializer writes `list` with
/// nothing passing, and one coding session writes `files` and flips #1.
fn flip_first(
    dir: &std::path::Path,
    list: &dyn Fn(&[bool]) -> String,
    files: &[(&str, &str)],
) -> std::process::Output {
    let mut steps = init(&list(&[false; 4]), &[]);
    steps.extend(session_writing(files, &list(&[true, false, false, false])));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    baton(&server, Wire::Anthropic)
        .args(["run", dir.to_str().unwrap(), "--max-sessions", "2"])
        .output_bounded()
        .unwrap()
}

/// The flips of the ledger: feature, how it was proven, and its reference's words.
fn flips(dir: &std::path::Path) -> Vec<(u64, String, String)> {
    entries(dir, "flip")
        .iter()
        .map(|e| {
            (
                e["feature"].as_u64().unwrap(),
                e["proof"]["by"].as_str().unwrap_or_default().to_string(),
                e["proof"]["reference"]["what"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

/// The honest sessions for features `from..=4` of a four-feature project in
/// which features before `from` pass.
fn honest_rest(from: usize) -> Vec<Step> {
    let mut steps = Vec::new();
    for n in from..=4 {
        let passes: Vec<bool> = (1..=4).map(|k| k <= n).collect();
        steps.extend(honest(n, &passes));
    }
    steps
}

/// A coding session that only flips `passes` (the work is already committed),
/// writes its notes and commits.
fn flip_only(passes: &[bool], list: &str) -> Vec<Step> {
    let _ = passes;
    session_writing(&[], list)
}

/// `kill -9` while a coding session waits, its work written but not committed;
/// the next run settles the killed session (its leftovers committed), flips the
/// feature, and the verifier's check proves it against the killed session's
/// base (at the resumed session's base the work is there already). The run
/// completes.
#[test]
fn work_left_by_a_session_killed_mid_way_is_proven_after_resume() {
    let (_t, dir) = new_project("cli");
    // The session's command, seen from the host (its namespace has a `/tmp`
    // of its own, so it cannot leave a mark there).
    let started = || super::process_running("sleep 3002 ");
    let mut steps = init(&features(&[false; 4]), &[]);
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "src/feature1.txt", "content": "feature 1\n"}),
        ),
        ("Bash", json!({"command": "sleep 3002"})),
    ])));
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let mut child = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !started() && t0.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(started(), "session 2 never started its command");
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait_bounded().unwrap();
    let _ = std::process::Command::new("bash")
        .args(["-c", "pkill -f 'sleep 3002' || true"])
        .status_bounded();

    let mut steps = flip_only(
        &[true, false, false, false],
        &features(&[true, false, false, false]),
    );
    steps.extend(honest_rest(2));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(baton_testkit::scenario::honest_verifier)
        .start(steps);
    let out = run(&server, &dir);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(server.remaining(), 0, "{err}");
    let f = flips(&dir);
    assert_eq!(
        f[0],
        (1, "verifier".into(), "the base of session 2".into()),
        "{f:?}\n{err}"
    );
    assert!(entries(&dir, "verifier_rejected").is_empty(), "{err}");
}

/// A session does #1's work but writes a list that is no list: baton restores
/// the accepted one, which loses the flip; the work stays committed. The next
/// session flips #1 and its check, written by the initializer, proves it
/// against the tampering session's base. The run completes.
#[test]
fn a_tampering_sessions_work_is_proven_once_the_list_is_restored() {
    let (_t, dir) = new_project("cli");
    let check = honest_check(1);
    let list = |p: &[bool]| with_checks(p, &[Some(check.as_str())]);
    let mut steps = init(&list(&[false; 4]), &[]);
    // The work, then a list that is no list, written by a script (baton's own
    // tools refuse to write it), all committed.
    steps.push(Step::Reply(Reply::tools(&[
        (
            "Write",
            json!({"file_path": "src/feature1.txt", "content": "feature 1\n"}),
        ),
        (
            "Write",
            json!({"file_path": "scripts/tamper.sh", "content": "echo '[{\"this\": \"is no feature list\"}]' > feature_list.json\n"}),
        ),
        (
            "Bash",
            json!({"command": "bash scripts/tamper.sh && echo 'Session: did #1.' >> claude-progress.txt && git add -A && git commit -qm 'Work'"}),
        ),
    ])));
    steps.push(Step::Reply(Reply::text("Done.")));
    steps.extend(session_writing(&[], &list(&[true, false, false, false])));
    for n in 2..=4 {
        let passes: Vec<bool> = (1..=4).map(|k| k <= n).collect();
        steps.extend(session_writing(
            &[(&format!("src/feature{n}.txt"), &format!("feature {n}\n"))],
            &list(&passes),
        ));
    }
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(baton_testkit::scenario::honest_verifier)
        .start(steps);
    let out = run(&server, &dir);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        !entries(&dir, "violation").is_empty(),
        "the tamper was not caught: {err}"
    );
    let f = flips(&dir);
    assert_eq!(
        f[0],
        (1, "check".into(), "the base of session 2".into()),
        "{f:?}\n{err}"
    );
}

/// Session 2 builds #1 and #2 and flips only #1; session 3 flips #2, whose
/// work was committed a session before. The verifier's check proves it against
/// session 2's base. The run completes.
#[test]
fn a_feature_done_beside_another_is_proven_when_it_is_flipped_later() {
    let (_t, dir) = new_project("cli");
    let mut steps = init(&features(&[false; 4]), &[]);
    steps.extend(session_writing(
        &[
            ("src/feature1.txt", "feature 1\n"),
            ("src/feature2.txt", "feature 2\n"),
        ],
        &features(&[true, false, false, false]),
    ));
    steps.extend(flip_only(
        &[true, true, false, false],
        &features(&[true, true, false, false]),
    ));
    steps.extend(honest_rest(3));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(baton_testkit::scenario::honest_verifier)
        .start(steps);
    let out = run(&server, &dir);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let f = flips(&dir);
    assert_eq!(
        f[0],
        (1, "verifier".into(), "the session's base".into()),
        "{f:?}"
    );
    assert_eq!(
        f[1],
        (2, "verifier".into(), "the base of session 2".into()),
        "{f:?}\n{err}"
    );
}

/// A verifier that runs everything first and writes all its verdict lines
/// together at the end (GPT-5 Codex's habit): each verdict is credited with the
/// calls it cites, and both flips are proven.
fn verdicts_at_the_end(r: &RecordedRequest) -> Option<Step> {
    if !is_verifier(r) {
        return None;
    }
    let said = format!("{}{}", r.body["messages"], r.body["input"]);
    for n in [1, 2] {
        if !said.contains(&format!("CHECKED-{n}-")) {
            return Some(Step::Reply(Reply::tool(
                "Bash",
                json!({ "command": honest_command(n) }),
            )));
        }
    }
    let verdict = |n: usize| {
        json!({"feature": n, "pass": true,
               "reason": format!("ran grep on src/feature{n}.txt and it holds 'feature {n}'"),
               "ran": [honest_command(n)], "check": honest_check(n)})
    };
    Some(Step::Reply(Reply::text(&format!(
        "VERDICT {}\nVERDICT {}\n{}",
        verdict(1),
        verdict(2),
        json!({"results": [verdict(1), verdict(2)]})
    ))))
}

#[test]
fn verdicts_written_together_at_the_end_each_count() {
    let (_t, dir) = new_project("cli");
    let mut steps = init(&features(&[false; 4]), &[]);
    steps.extend(session_writing(
        &[
            ("src/feature1.txt", "feature 1\n"),
            ("src/feature2.txt", "feature 2\n"),
        ],
        &features(&[true, true, false, false]),
    ));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(verdicts_at_the_end)
        .start(steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(&dir)
        .args(["--max-sessions", "2"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    assert!(entries(&dir, "verifier_rejected").is_empty(), "{err}");
    let f = flips(&dir);
    assert_eq!(f.len(), 2, "{f:?}\n{err}");
    assert!(f.iter().all(|(_, by, _)| by == "verifier"), "{f:?}");
}

/// A verifier whose check runs a script it wrote in its temp dir (which is
/// gone after its session); told in its next round why that check was
/// refused, it leaves the same test written inline, which stands alone.
fn scratch_then_fixed(r: &RecordedRequest) -> Option<Step> {
    if !is_verifier(r) {
        return None;
    }
    let prompt = r.first_user_text();
    let scratch = prompt
        .split("go under ")
        .nth(1)?
        .split(' ')
        .next()?
        .to_string();
    let said = format!("{}", r.body["messages"]);
    let script = format!("{scratch}/t.sh");
    let command = format!(
        "cat > {script} <<'EOF'\ngrep -qx 'feature 1' src/feature1.txt\nEOF\nbash {script} && echo SCRATCH-OK"
    );
    if !said.contains("SCRATCH-") {
        return Some(Step::Reply(Reply::tool(
            "Bash",
            json!({ "command": command }),
        )));
    }
    let told = prompt.contains("did not count, only because of its check")
        && prompt.contains("own temp dir");
    let check = if told {
        honest_check(1)
    } else {
        format!("bash {script}")
    };
    let v = json!({"feature": 1, "pass": true,
        "reason": "wrote a test script in my temp dir and ran it: it printed SCRATCH-OK",
        "ran": [command], "check": check});
    Some(Step::Reply(Reply::text(&format!(
        "VERDICT {v}\n{}",
        json!({"results": [v]})
    ))))
}

#[test]
fn a_verifiers_check_in_its_temp_dir_is_refused_in_its_session_and_a_corrected_one_holds_in_later_sweeps()
 {
    let (_t, dir) = new_project("cli");
    let mut steps = init(&features(&[false; 4]), &[]);
    steps.extend(session_writing(
        &[("src/feature1.txt", "feature 1\n")],
        &features(&[true, false, false, false]),
    ));
    // A session that changes the tree: the sweep before the next runs #1's check.
    steps.extend(session_writing(
        &[("src/other.txt", "more\n")],
        &features(&[true, false, false, false]),
    ));
    steps.push(Step::Reply(Reply::text("reading")));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(scratch_then_fixed)
        .start(steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(&dir)
        .args(["--max-sessions", "4"])
        .output_bounded()
        .unwrap();
    let err = stderr(&out);
    // Refused at its verdict, with why, and asked again in the same stage.
    let refused = entries(&dir, "check_refused");
    assert_eq!(refused.len(), 1, "{err}");
    assert!(
        refused[0]["detail"]
            .as_str()
            .unwrap()
            .contains("the verifier's own temp dir"),
        "{refused:?}"
    );
    assert!(err.contains("asked for one that stands"), "{err}");
    assert!(entries(&dir, "verifier_rejected").is_empty(), "{err}");
    let f = flips(&dir);
    assert_eq!(f.len(), 1, "{f:?}\n{err}");
    assert_eq!(f[0].1, "verifier");
    let flip = &entries(&dir, "flip")[0];
    assert_eq!(flip["session"], 2, "{flip:?}");
    assert_eq!(flip["proof"]["check"], honest_check(1), "{flip:?}");
    // The corrected check ran in the sweeps after, and held.
    assert!(entries(&dir, "regression").is_empty(), "{err}");
    assert!(
        err.contains("sweep: 1 passing feature(s) re-checked, all still pass"),
        "no sweep ran the kept check: {err}"
    );
}

/// `baton new --adopt` on a repository where #1 already works: its check,
/// written by the initializer, passes where the feature entered the list, so
/// it is recorded as passing ("passed when accepted") and the brief says so;
/// the rest are built and proven, and the run completes.
#[test]
fn an_adopted_repository_whose_features_already_work_completes() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("tool");
    std::fs::create_dir_all(&dir).unwrap();
    let g = |args: &[&str]| baton_testkit::git(&dir, args);
    g(&["init", "-q"]);
    g(&["config", "user.name", "Person"]);
    g(&["config", "user.email", "person@example.com"]);
    std::fs::write(dir.join("hello.sh"), "#!/usr/bin/env bash\necho hello\n").unwrap();
    g(&["add", "-A"]);
    g(&["commit", "-qm", "hello"]);
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    let out = baton(&server, Wire::Anthropic)
        .args([
            "new",
            dir.to_str().unwrap(),
            "--adopt",
            "--goal",
            "greet by name",
        ])
        .args(["--kind", "cli", "--features", "3"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap();
    assert!(toml.contains("agent = true"), "{toml}");
    std::fs::write(
        dir.join("baton.toml"),
        toml.replace("pause_secs = 3", "pause_secs = 0"),
    )
    .unwrap();
    g(&["commit", "-qam", "no pause"]);

    let checks = [
        "[ \"$(bash hello.sh)\" = hello ]",
        "[ \"$(bash hello.sh --name Ann)\" = 'hello Ann' ]",
        "bash hello.sh --help | grep -q usage",
    ];
    let list = |p: &[bool]| {
        let c: Vec<Option<&str>> = checks.iter().map(|c| Some(*c)).collect();
        with_checks(p, &c)
    };
    let greet = "#!/usr/bin/env bash\nif [ \"$1\" = --name ]; then echo \"hello $2\"; else echo hello; fi\n";
    let help = "#!/usr/bin/env bash\nif [ \"$1\" = --help ]; then echo 'usage: hello.sh [--name N]'; exit 0; fi\nif [ \"$1\" = --name ]; then echo \"hello $2\"; else echo hello; fi\n";
    let mut steps = init(&list(&[false; 3]), &[]);
    steps.extend(session_writing(
        &[("hello.sh", greet)],
        &list(&[true, true, false]),
    ));
    steps.extend(session_writing(&[("hello.sh", help)], &list(&[true; 3])));
    let server = ScriptedServer::builder(Wire::Anthropic)
        .respond(baton_testkit::scenario::honest_verifier)
        .start(steps);
    let out = run(&server, &dir);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("passed when accepted: #1 already pass"),
        "{err}"
    );
    let f = flips(&dir);
    assert_eq!(f[0].0, 1, "{f:?}");
    assert_eq!(f[0].1, "accepted", "{f:?}");
    assert_eq!(
        f[1],
        (2, "check".into(), "the session's base".into()),
        "{f:?}"
    );
    // The first coding session's brief said #1 already works.
    let brief = server
        .requests()
        .iter()
        .filter(|r| !is_verifier(r))
        .map(|r| r.first_user_text())
        .find(|t| t.contains("# Brief from baton"))
        .unwrap();
    assert!(
        brief.contains("Already working: #1 passed its verify command"),
        "{brief}"
    );
}

/// A planner appends a feature the code already does: its check passes where
/// it entered the list, so it passes at once, and the run completes.
#[test]
fn a_planners_feature_the_code_already_does_completes() {
    let (_t, dir) = new_project("cli");
    let checks: Vec<String> = (1..=4).map(honest_check).collect();
    let list = |p: &[bool]| {
        let c: Vec<Option<&str>> = checks.iter().map(|c| Some(c.as_str())).collect();
        with_checks(p, &c)
    };
    let out = flip_first(&dir, &list, &[("src/feature1.txt", "feature 1\n")]);
    assert_eq!(entries(&dir, "flip").len(), 1, "{}", stderr(&out));

    // The planner appends #5, whose check the work of #1 already passes.
    let with = |p: &[bool]| -> Vec<serde_json::Value> {
        let mut v: Vec<serde_json::Value> = serde_json::from_str(&list(&p[..4])).unwrap();
        v.push(json!({"category": "functional",
            "description": "Feature 1 keeps its text", "steps": ["read it", "see feature 1"],
            "passes": p[4], "verify": "grep -q 'feature 1' src/feature1.txt"}));
        v
    };
    let text = |v: Vec<serde_json::Value>| serde_json::to_string_pretty(&v).unwrap() + "\n";
    let planner = vec![
        Step::Reply(Reply::tool(
            "Write",
            json!({"file_path": "feature_list.json",
                   "content": text(with(&[true, false, false, false, false]))}),
        )),
        Step::Reply(Reply::text("Features appended.")),
    ];
    let server = ScriptedServer::start(Wire::Anthropic, planner);
    let out = baton(&server, Wire::Anthropic)
        .args([
            "plan",
            dir.to_str().unwrap(),
            "--idea",
            "keep feature 1's text",
        ])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let mut steps = Vec::new();
    for n in 2..=4 {
        let mut p: Vec<bool> = (1..=4).map(|k| k <= n).collect();
        p.push(true);
        steps.extend(session_writing(
            &[(&format!("src/feature{n}.txt"), &format!("feature {n}\n"))],
            &text(with(&p)),
        ));
    }
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = run(&server, &dir);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("passed when accepted: #5 already pass"),
        "{err}"
    );
    let f = flips(&dir);
    let by: Vec<(u64, &str)> = f.iter().map(|(n, b, _)| (*n, b.as_str())).collect();
    assert_eq!(
        by,
        vec![
            (1, "check"),
            (5, "accepted"),
            (2, "check"),
            (3, "check"),
            (4, "check")
        ],
        "{f:?}\n{err}"
    );
}

/// A clean checkout's commands run the session's work (the product), which
/// finds the project from the checkout's `.git` and writes into it. They may
/// write the checkout alone: the project is only theirs to read, so nothing
/// lands there, and the honest check still proves the flip.
#[test]
fn a_clean_checkouts_commands_cannot_write_the_project() {
    if !super::bwrap("a_clean_checkouts_commands_cannot_write_the_project") {
        return;
    }
    let check = "out=$(sh src/feature1.sh) && [ \"$out\" = 'feature 1' ]";
    let product = "a=.git/objects/info/alternates\nif [ -f \"$a\" ]; then main=$(dirname \"$(dirname \"$(cat \"$a\")\")\"); echo planted > \"$main/src/planted.txt\" 2>/dev/null; echo planted > \"$main/.git/planted\" 2>/dev/null; fi\necho 'feature 1'\n";
    let list = |p: &[bool]| with_checks(p, &[Some(check)]);
    let (_t, dir) = new_project("cli");
    let out = flip_first(&dir, &list, &[("src/feature1.sh", product)]);
    let err = stderr(&out);
    let proven = [(1, "check".to_string(), "the session's base".to_string())];
    assert_eq!(flips(&dir), proven, "{err}");
    assert!(!dir.join("src/planted.txt").exists(), "{err}");
    assert!(!dir.join(".git/planted").exists(), "{err}");
    let ever = baton_testkit::git(
        &dir,
        &["log", "--all", "--format=%H", "--", "src/planted.txt"],
    );
    assert!(ever.is_empty(), "{err}");
}
