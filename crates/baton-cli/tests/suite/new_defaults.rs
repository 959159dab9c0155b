//! What `baton new` writes, through the binary: the project's kind (from `--kind`, or
//! read from the spec and said), `[browser]` on for a web project whose browser
//! parts are found (off with a warning that says how to install them otherwise),
//! the independent verifier on, the common junk in `.gitignore`, and a repository
//! of its own even inside another one (issue #25).
//!
//! The browser's parts are found as the other browser tests find them
//! (`baton_testkit::browser::browser_parts`); `baton new` is shown them only through
//! its own environment (`PATH`, `XDG_STATE_HOME`), never the test process's.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use baton_testkit::browser::browser_parts;

use super::*;

/// `baton new ARGS…` in `cwd`, with `env` set for it alone.
fn new_in(cwd: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    for k in [
        "BATON_PROVIDER",
        "BATON_MODEL",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
    ] {
        c.env_remove(k);
    }
    c.arg("new").args(args).current_dir(cwd);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output_bounded().unwrap()
}

fn config(dir: &Path) -> baton_config::Config {
    let path = dir.join("baton.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    baton_config::Config::from_toml_str(&text, &path).unwrap()
}

/// `PATH` with `dir` first.
fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// Where `name` is on the test's `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

const WEB_SPEC: &str = "# Greeter web app\n\nA page where a visitor types a name and is greeted.\n";

/// A web spec on a machine with Chromium and @playwright/mcp: kind web (read from
/// the spec, and said), the browser on, the verifier on, the junk ignored.
#[test]
fn a_web_spec_gets_the_browser_when_its_parts_are_found() {
    let Some(parts) = browser_parts("a_web_spec_gets_the_browser_when_its_parts_are_found") else {
        return;
    };
    // `npx --no-install @playwright/mcp` runs from the MCP servers' launch directory
    // (under XDG_STATE_HOME), as in a run; the package is found in a `node_modules`
    // above it, here the one .ci/npm holds.
    let Some(modules) = parts
        .cli
        .ancestors()
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"))
    else {
        // Through the shared helper: with CI=true a missing part fails the test.
        baton_testkit::skip(
            "a_web_spec_gets_the_browser_when_its_parts_are_found",
            &format!("{} is not inside a node_modules", parts.cli.display()),
        );
        return;
    };
    let root = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(modules, root.path().join("node_modules")).unwrap();
    // Chromium where `baton new` looks when it is not at /usr/bin/chromium.
    let bin = root.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(&parts.chromium, bin.join("chromium")).unwrap();
    std::fs::write(root.path().join("spec.txt"), WEB_SPEC).unwrap();
    let state = root.path().join("state");
    let out = new_in(
        root.path(),
        &["greeter", "--spec", "spec.txt", "--features", "20"],
        &[
            ("XDG_STATE_HOME", state.as_os_str()),
            ("PATH", &path_with(&bin)),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "baton: kind: web (from the spec: \"web app\", \"page\"); change [project] kind in baton.toml or pass --kind"
        ),
        "{err}"
    );
    assert!(err.contains("baton: browser: on (Chromium "), "{err}");
    assert!(!err.contains("the browser is off"), "{err}");
    let dir = root.path().join("greeter");
    let cfg = config(&dir);
    assert_eq!(cfg.project.kind, "web");
    assert_eq!(cfg.project.features, 20);
    assert!(cfg.browser.enabled);
    assert!(Path::new(&cfg.browser.chromium).is_file());
    assert!(cfg.verify.agent);
    assert!(!cfg.verify.trust_agent);
    assert_eq!(cfg.verify.turns_per_feature, 30);
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap();
    assert!(
        toml.contains("\nenabled = true                   # the agent tests in headless Chromium"),
        "{toml}"
    );
    // What tools leave behind is ignored from the first commit.
    let ignore = std::fs::read_to_string(dir.join(".gitignore")).unwrap();
    assert_eq!(
        ignore,
        ".baton/\nnode_modules/\n.venv/\nvenv/\n__pycache__/\n*.pyc\n*.log\n*.pid\n.DS_Store\n*.sqlite-journal\n"
    );
    assert_eq!(baton_testkit::git(&dir, &["status", "--porcelain"]), "");

    // `baton doctor` agrees: the browser's parts a run needs are there.
    let doctor = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("doctor")
        .arg(&dir)
        .env("XDG_STATE_HOME", &state)
        .output_bounded()
        .unwrap();
    let text = stdout(&doctor);
    assert!(
        text.contains("(the browser is enabled in baton.toml)"),
        "{text}"
    );
    assert!(text.contains("  ok       chromium    Chromium "), "{text}");
}

/// A web spec where @playwright/mcp cannot be found: the browser is written off,
/// and a warning says what is missing and how to install it.
#[test]
fn a_web_spec_without_the_browsers_parts_gets_a_warning_and_the_browser_off() {
    let root = tempfile::tempdir().unwrap();
    // A PATH with git alone: no npx, so no Playwright MCP server.
    let bin = root.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(which("git").unwrap(), bin.join("git")).unwrap();
    std::fs::write(root.path().join("spec.txt"), WEB_SPEC).unwrap();
    let state = root.path().join("state");
    let out = new_in(
        root.path(),
        &["greeter", "--spec", "spec.txt"],
        &[
            ("XDG_STATE_HOME", state.as_os_str()),
            ("PATH", bin.as_os_str()),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("baton: kind: web (from the spec"), "{err}");
    assert!(
        err.contains("baton: warning: this is a web project, but the browser is off in baton.toml"),
        "{err}"
    );
    assert!(
        err.contains("`npx --no-install @playwright/mcp` does not run: npx not found; install: PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install -g @playwright/mcp"),
        "{err}"
    );
    assert!(
        err.contains("then set [browser] enabled = true in "),
        "{err}"
    );
    let dir = root.path().join("greeter");
    let cfg = config(&dir);
    assert_eq!(cfg.project.kind, "web");
    assert!(!cfg.browser.enabled);
    assert!(cfg.verify.agent);
    let toml = std::fs::read_to_string(dir.join("baton.toml")).unwrap();
    assert!(
        toml.contains("enabled = false                  # Chromium or @playwright/mcp was missing"),
        "{toml}"
    );
}

/// `--kind cli` is written as it is, without probing the browser; without the flag
/// the kind is read from the spec's words and said.
#[test]
fn the_kind_comes_from_the_flag_or_the_specs_words() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    let env: &[(&str, &std::ffi::OsStr)] = &[("XDG_STATE_HOME", state.as_os_str())];
    std::fs::write(root.path().join("web.txt"), WEB_SPEC).unwrap();
    let out = new_in(
        root.path(),
        &["forced", "--spec", "web.txt", "--kind", "cli"],
        env,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("baton: kind: cli (--kind)"), "{err}");
    assert!(!err.contains("browser"), "{err}");
    let cfg = config(&root.path().join("forced"));
    assert_eq!(cfg.project.kind, "cli");
    assert!(!cfg.browser.enabled);
    assert!(cfg.verify.agent);
    let toml = std::fs::read_to_string(root.path().join("forced/baton.toml")).unwrap();
    assert!(
        toml.contains("kind = \"cli\"                     # web (tested in a browser), cli, library or service"),
        "{toml}"
    );
    assert!(
        toml.contains(
            "enabled = false                  # a cli project is checked through commands"
        ),
        "{toml}"
    );

    std::fs::write(
        root.path().join("cli.txt"),
        "A command-line tool that renames photos by the date they were taken.\nFlags: --dry-run prints what it would do.\n",
    )
    .unwrap();
    let out = new_in(root.path(), &["photos", "--spec", "cli.txt"], env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "baton: kind: cli (from the spec: \"command-line\", \"Flags\"); change [project] kind in baton.toml or pass --kind"
        ),
        "{err}"
    );
    assert_eq!(config(&root.path().join("photos")).project.kind, "cli");

    std::fs::write(
        root.path().join("lib.txt"),
        "A Rust crate that parses ISO 8601 durations, with a small public API.\n",
    )
    .unwrap();
    let out = new_in(root.path(), &["durations", "--spec", "lib.txt"], env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        config(&root.path().join("durations")).project.kind,
        "library"
    );

    // An unknown kind is refused by the argument parser, naming the known ones
    // (a usage error: exit 1).
    let out = new_in(
        root.path(),
        &["x", "--spec", "lib.txt", "--kind", "desktop"],
        env,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("[possible values: web, cli, library, service]"),
        "{}",
        stderr(&out)
    );
}

fn outer_repo(root: &Path) -> String {
    baton_testkit::git(root, &["init", "-q"]);
    std::fs::write(
        root.join("spec.txt"),
        "A command-line tool that counts words.\n",
    )
    .unwrap();
    baton_testkit::git(root, &["add", "spec.txt"]);
    baton_testkit::git(root, &["commit", "-q", "-m", "outer"]);
    baton_testkit::git(root, &["rev-parse", "HEAD"])
}

/// Issue #25: `baton new inner` run inside another repository (as the README's
/// quick start inside baton's checkout) makes `inner` a repository of its own; the
/// outer one's history is untouched.
#[test]
fn new_inside_another_repository_makes_a_repository_of_its_own() {
    let root = tempfile::tempdir().unwrap();
    let outer = root.path();
    let head = outer_repo(outer);
    let out = new_in(outer, &["inner", "--spec", "spec.txt"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(baton_testkit::git(outer, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        baton_testkit::git(outer, &["rev-list", "--count", "HEAD"]).trim(),
        "1"
    );
    assert_eq!(
        baton_testkit::git(outer, &["log", "--format=%s"]).trim(),
        "outer"
    );
    let inner = outer.join("inner");
    assert!(inner.join(".git").is_dir());
    assert_eq!(
        baton_testkit::git(&inner, &["rev-parse", "--show-toplevel"]).trim(),
        inner.canonicalize().unwrap().display().to_string()
    );
    assert_eq!(
        baton_testkit::git(&inner, &["log", "--format=%s"]).trim(),
        "baton new: the specification, baton.toml and .gitignore"
    );
    assert_eq!(baton_testkit::git(&inner, &["status", "--porcelain"]), "");
}

/// The same for `baton run` on a project directory inside another repository: the
/// project gets its own before any session.
#[test]
fn run_inside_another_repository_makes_a_repository_of_its_own() {
    let root = tempfile::tempdir().unwrap();
    let outer = root.path();
    let head = outer_repo(outer);
    let inner = outer.join("inner");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(inner.join("app_spec.txt"), "A command-line tool.\n").unwrap();
    std::fs::write(
        inner.join("baton.toml"),
        "[retry]\nmax_attempts = 1\nbase_delay_ms = 5\nmax_delay_ms = 5\n[verify]\nagent = false\n",
    )
    .unwrap();
    // No model answers: the initializer fails at once, after the repository is made.
    let server = baton_testkit::ScriptedServer::start(baton_testkit::Wire::Anthropic, vec![]);
    let out = baton(&server, baton_testkit::Wire::Anthropic)
        .arg("run")
        .arg("inner")
        .args(["--max-sessions", "1", "--quiet"])
        .current_dir(outer)
        .output_bounded()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(inner.join(".git").is_dir(), "{}", stderr(&out));
    assert_eq!(baton_testkit::git(outer, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        baton_testkit::git(outer, &["rev-list", "--count", "HEAD"]).trim(),
        "1"
    );
}

/// A small spec is not asked for 200 features (at least 20 of them required): the
/// number follows the spec's size and is said; `--features` still sets it, and a
/// spec of many lines is asked for at most 200.
#[test]
fn the_features_asked_follow_the_specs_size() {
    let root = tempfile::tempdir().unwrap();
    let state = root.path().join("state");
    let env: &[(&str, &std::ffi::OsStr)] = &[("XDG_STATE_HOME", state.as_os_str())];
    let small = "A command-line tool that greets.\n\n- `greet NAME` prints Hello, NAME.\n- `greet` alone prints Hello, world.\n- `--shout` prints it in capitals.\n";
    std::fs::write(root.path().join("small.txt"), small).unwrap();
    let big: String = (0..120)
        .map(|i| format!("- The CLI does thing {i}.\n"))
        .collect();
    std::fs::write(root.path().join("big.txt"), big).unwrap();
    let out = new_in(root.path(), &["s", "--spec", "small.txt"], env);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("baton: features: 20 asked (from the spec's 4 non-empty lines)"),
        "{err}"
    );
    let cfg = config(&root.path().join("s"));
    assert_eq!((cfg.project.features, cfg.project.min_features), (20, 2));
    let out = new_in(root.path(), &["b", "--spec", "big.txt"], env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(config(&root.path().join("b")).project.features, 200);
    let out = new_in(
        root.path(),
        &["f", "--spec", "small.txt", "--features", "7"],
        env,
    );
    let err = stderr(&out);
    assert!(!err.contains("baton: features:"), "{err}");
    assert_eq!(config(&root.path().join("f")).project.features, 7);
}
