//! `baton report`: the page made from real and synthetic records, opened in
//! headless Chromium: it loads without console errors, its script runs, and every
//! chart has one point or bar per session.
//!
//! Chromium comes from Debian (`apt-get install chromium`; `.ci/run` installs it).
//! Without it these tests fail under CI=true and are skipped with a note elsewhere.

use std::path::PathBuf;
use std::process::Command;

use baton_report::sample::{self, Sample};
use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::{Value, json};

use super::*;

fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!(
                "chromium is not installed, and CI=true: install it (`apt-get install -y chromium`; .ci/run does)"
            );
        }
        eprintln!(
            "note: skipping a browser check: chromium is not installed (apt-get install -y chromium)"
        );
    }
    found
}

/// Open `page` in headless Chromium: (the DOM after load, console messages).
fn open(chromium: &Path, page: &Path, extra: &[&str]) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new("timeout")
        .arg("120")
        .arg(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output_bounded()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), console)
}

fn report(dir: &Path, extra: &[&str]) -> Output {
    let server = ScriptedServer::start(Wire::Anthropic, vec![]);
    baton(&server, Wire::Anthropic)
        .arg("report")
        .arg(dir)
        .args(extra)
        .output_bounded()
        .unwrap()
}

/// The value of attribute `attr` of the first element whose text starts with `start`.
fn attr<'a>(dom: &'a str, start: &str, attr: &str) -> &'a str {
    let i = dom
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in the page"));
    let tag = &dom[i..i + dom[i..].find('>').unwrap()];
    let key = format!(" {attr}=\"");
    let j = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {attr} in {tag}"))
        + key.len();
    &tag[j..j + tag[j..].find('"').unwrap()]
}

/// The part of the page from `<svg id="{id}"` to its `</svg>`.
fn svg<'a>(dom: &'a str, id: &str) -> &'a str {
    let i = dom
        .find(&format!("<svg id=\"{id}\""))
        .unwrap_or_else(|| panic!("no chart {id}"));
    &dom[i..i + dom[i..].find("</svg>").unwrap()]
}

fn points(s: &str) -> usize {
    s.split_whitespace()
        .filter(|p| {
            let xy: Vec<&str> = p.split(',').collect();
            xy.len() == 2 && xy.iter().all(|v| v.parse::<f64>().is_ok())
        })
        .count()
}

#[test]
fn the_report_loads_in_chromium_with_a_point_per_session() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let spec = Sample::default();
    sample::write(dir.path(), &spec).unwrap();
    let page = dir.path().join("out/report.html");
    let out = report(
        dir.path(),
        &["-o", page.to_str().unwrap(), "--budget-usd", "30"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("24 sessions, 60 features"),
        "{}",
        stderr(&out)
    );

    let (dom, console) = open(&chromium, &page, &["--dump-dom"]);
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script did not run"
    );
    let n = spec.sessions as usize;

    let passing = svg(&dom, "chart-passing");
    assert_eq!(
        points(attr(passing, "<polyline class=\"line passing\"", "points")),
        n + 1
    );
    assert_eq!(passing.matches("<circle class=\"dot\"").count(), n + 1);
    let tokens = svg(&dom, "chart-tokens");
    assert_eq!(tokens.matches("<g class=\"bar\">").count(), n);
    let cost = svg(&dom, "chart-cost");
    assert_eq!(cost.matches("<rect class=\"bar cost\"").count(), n);
    assert_eq!(
        points(attr(cost, "<polyline class=\"line cumulative\"", "points")),
        n
    );
    assert!(cost.contains("<line class=\"budget\""));
    let timeline = svg(&dom, "chart-timeline");
    assert_eq!(timeline.matches("<rect class=\"span ").count(), n);

    // A row per feature; thumbnails inlined; findings and budget shown.
    assert_eq!(
        dom.matches("<tr class=\"pass\" id=\"f").count()
            + dom.matches("<tr class=\"fail\" id=\"f").count(),
        spec.features
    );
    assert!(dom.contains("class=\"thumb\""), "no evidence thumbnail");
    assert!(dom.contains("src=\"data:image/png;base64,iVBORw0KGgo"));
    assert!(dom.contains("id=\"kpi-budget\""));
    assert!(dom.contains("left of $30.00"));
    assert!(dom.contains("<h2 id=\"findings\">"));
    // Nothing is fetched: no http(s) URL anywhere in the page.
    assert!(!dom.contains("http://") && !dom.contains("https://"));

    // The screenshot the docs use renders too.
    let shot = dir.path().join("shot.png");
    let (_, console) = open(
        &chromium,
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,1600",
            "--hide-scrollbars",
        ],
    );
    assert!(console.is_empty(), "console messages: {console:#?}");
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{}",
        png.len()
    );
}

#[test]
fn the_console_check_catches_a_script_error() {
    let Some(chromium) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("bad.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><script>no_such_function();</script></body></html>",
    )
    .unwrap();
    let (_, console) = open(&chromium, &page, &["--dump-dom"]);
    assert!(
        console
            .iter()
            .any(|l| l.contains("Uncaught ReferenceError")),
        "{console:#?}"
    );
}

#[test]
fn a_project_without_sessions_still_has_a_page() {
    let dir = tempfile::tempdir().unwrap();
    // A directory that is no project is refused, and nothing is written into it.
    let out = report(dir.path(), &["-o", "-"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not a baton project"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join(".baton").exists());
    // A project `baton new` made, before any session.
    std::fs::write(dir.path().join("baton.toml"), "").unwrap();
    let out = report(dir.path(), &["-o", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = stdout(&out);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("No session recorded yet."));
    assert!(html.contains("no session yet"));
    let Some(chromium) = chromium() else { return };
    let page = dir.path().join("r.html");
    std::fs::write(&page, html).unwrap();
    let (dom, console) = open(&chromium, &page, &["--dump-dom"]);
    assert!(console.is_empty(), "console messages: {console:#?}");
    assert_eq!(
        points(attr(
            svg(&dom, "chart-passing"),
            "<polyline class=\"line passing\"",
            "points"
        )),
        1
    );
}

#[test]
fn bad_records_and_arguments_are_errors_that_say_what_to_fix() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".baton")).unwrap();
    std::fs::write(dir.path().join(".baton/state.json"), "{\"sessions\": [").unwrap();
    let out = report(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(".baton/state.json:"),
        "{}",
        stderr(&out)
    );
    let out = report(&dir.path().join("nope"), &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("nope does not exist"),
        "{}",
        stderr(&out)
    );
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output_bounded()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A real run: the page names the session and commit that made a feature pass,
/// charges it that session's cost, and writes to .baton/report.html by default.
#[test]
fn a_real_run_is_reported_with_the_session_and_commit_of_each_flip() {
    let p =
        Project::with_toml("[project]\nfeatures = 2\nmin_features = 2\n[run]\npause_secs = 0\n");
    std::fs::write(p.path().join("app_spec.txt"), "Two features.\n").unwrap();
    std::fs::write(p.path().join(".gitignore"), ".baton/\n").unwrap();
    git(p.path(), &["init", "-q"]);
    let list = |a: bool| {
        serde_json::to_string_pretty(&json!([
            {"category": "functional", "description": "Add a todo", "steps": ["x"], "passes": a},
            {"category": "style", "description": "Dark mode", "steps": ["y"], "passes": false}
        ]))
        .unwrap()
    };
    let steps = vec![
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": list(false)}),
            ),
            (
                "Bash",
                json!({"command": "echo notes > claude-progress.txt && git add -A && git commit -qm init"}),
            ),
        ])),
        Step::Reply(Reply::text("Initialized.")),
        Step::Reply(Reply::tools(&[
            (
                "Write",
                json!({"file_path": "feature_list.json", "content": list(true)}),
            ),
            (
                "Bash",
                json!({"command": "echo more >> claude-progress.txt && git add -A && git commit -qm 'Add todos'"}),
            ),
        ])),
        Step::Reply(Reply::text("Done.")),
    ];
    let server = ScriptedServer::start(Wire::Anthropic, steps);
    let out = baton(&server, Wire::Anthropic)
        .arg("run")
        .arg(p.path())
        .args(["--max-sessions", "2"])
        .output_bounded()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    let out = report(p.path(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let html = p.file(".baton/report.html");
    let flip: Value = p
        .file(".baton/ledger.jsonl")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["kind"] == "flip")
        .unwrap();
    let commit = flip["commit"].as_str().unwrap();
    assert_eq!(commit, git(p.path(), &["rev-parse", "HEAD"]));
    let row_start = html.find("<tr class=\"pass\" id=\"f1\">").unwrap();
    let row = &html[row_start..row_start + html[row_start..].find("</tr>").unwrap()];
    assert!(row.contains("Add a todo"), "{row}");
    assert!(
        row.contains(&format!(
            "<a href=\"#s2\">2</a> <code>{}</code>",
            &commit[..7]
        )),
        "{row}"
    );
    let state: Value = serde_json::from_str(&p.file(".baton/state.json")).unwrap();
    let cost = state["sessions"][1]["cost_usd"].as_f64().unwrap();
    assert!(row.contains(&format!("${cost:.2}")), "{row}");
    assert!(html.contains("<tr class=\"fail\" id=\"f2\">"));
    assert!(html.contains(">1 / 2</div>"), "the headline count");
    // The report is in .baton/, which git ignores: the tree stays clean.
    assert_eq!(git(p.path(), &["status", "--porcelain"]), "");
}
