//! `baton new`: a fresh project directory ready for `baton run`.

use std::path::Path;

use crate::error::{HarnessError, io};
use crate::git;
pub use crate::kind::{Kind, KindGuess, guess_kind};

/// What `baton new` writes as `[browser]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Browser {
    /// A web project whose browser parts (Chromium, the Playwright MCP server) were
    /// found: on. `chromium` when Chromium is not at the default path.
    On {
        /// Where Chromium was found, when not at `/usr/bin/chromium`.
        chromium: Option<String>,
    },
    /// A web project whose browser parts are missing: off until they are installed.
    Missing,
    /// Not a web project: off.
    NotWeb,
}

/// What `baton new` writes as `baton.toml`: every setting, commented; the project's
/// `kind`, the browser on when it is a web project and its parts were found, and
/// the independent verifier on.
pub fn default_toml(features: u32, kind: Kind, browser: &Browser) -> String {
    let browser = match browser {
        Browser::On { chromium } => format!(
            "enabled = true                   # the agent tests in headless Chromium through the Playwright MCP server (found by `baton new`)\n{}",
            match chromium {
                Some(path) => format!("chromium = {path:?}\n"),
                None => "# chromium = \"/usr/bin/chromium\"\n".to_string(),
            }
        ),
        Browser::Missing => "enabled = false                  # Chromium or @playwright/mcp was missing at `baton new`: install them (`baton doctor --browser` says how), then set true\n# chromium = \"/usr/bin/chromium\"\n".to_string(),
        Browser::NotWeb => format!(
            "enabled = false                  # a {} project is checked through commands; true offers the agent headless Chromium too\n# chromium = \"/usr/bin/chromium\"\n",
            kind.as_str()
        ),
    };
    format!(
        r#"# baton.toml: settings of this project for baton. Every key is optional.

[agent]
# provider = "anthropic"        # or "openai" (any OpenAI-compatible server), "openai-responses" (OpenAI's Responses API)
# model = "claude-sonnet-4-5"
max_turns = 200                  # model turns per session
# max_output_tokens = 32000      # default: the model's own limit (16384 if unknown)
# context_window = 0             # tokens; 0 = the model's own (128000 if unknown)
# context_threshold = 0.8        # share of the window at which baton acts
# context = "handoff"            # or "compact": summarise and go on
# tool_result_max_tokens = 25000 # bigger results keep head and tail; the rest goes to .baton/outputs/
# max_session_tokens = 0         # all tokens in one session; 0 = no limit
# max_session_minutes = 0        # 0 = no limit
# thinking_budget = 0            # Anthropic extended thinking; 0 = off

[project]
kind = "{kind}"{pad}# web (tested in a browser), cli, library or service (tested through commands)
# The pattern's well-known file names; change them to adopt another layout.
spec = "app_spec.txt"
feature_list = "feature_list.json"
progress = "claude-progress.txt"
init_script = "init.sh"
features = {features}            # how many features the initializer is asked for
min_features = {min}             # fewest baton accepts

[run]
# max_sessions = 0               # sessions per `baton run`; 0 = no limit
# budget_usd = 0                 # spend for the project; 0 = no limit
# max_hours = 0                  # per `baton run`; 0 = no limit
pause_secs = 3                   # between sessions
stall_sessions = 3               # coding sessions in a row without a new pass before stopping
# max_wait_hours = 6             # longest wait for a provider's quota to reset; 0 = never wait
feature_attempts = 3             # failed attempts before a feature is deferred; 0 = never
# agents = 1                     # coding agents at once, each in its own working copy

[verify]
agent = true                     # a fresh read-only verifier session re-walks each new flip no verify command proved (failing before the session, passing after); off: such flips are reverted, unless trust_agent
trust_agent = false              # accept a flip on the agent's word when nothing proves it; true lets an untested "done" end the run
# turns_per_feature = 30         # the verifier's turns for each flip it re-walks
# max_turns = 200                # the most turns of one verifier session
# model = "claude-haiku-4-5"     # a cheaper model for the verifier (default: the coder's)
# timeout_secs = 120             # seconds one verify command may run
# sweep_secs = 300               # the regression sweep before each coding session, in all
# sweep_checks = 200             # checks that sweep runs at most, in turn (0 = all); every check runs before "complete"
# skip_unchanged = true          # that sweep leaves out a check that already passed on the same tree
# run_init = true                # run init.sh before the checks, so servers are up

[browser]
{browser}# command = ["npx", "--no-install", "@playwright/mcp"]  # how the Playwright MCP server starts

[sandbox]
enabled = true                   # the agent's commands run confined: Landlock, and with bubblewrap namespaces of their own
network = "allowlist"            # a loopback of their own, and the hosts of `allow` through baton's proxy; "loopback": no host; "open": the host's network
# allow = ["registry.npmjs.org", "pypi.org", "files.pythonhosted.org", "crates.io", "index.crates.io", "static.crates.io", "proxy.golang.org", "github.com"]  # default: the registries of the project's kind, and GitHub
# host_ports = [5432]            # ports of this machine's loopback the commands reach (a database you start before the run)

[git]
# Used only when git has no identity configured for this repository.
user_name = "baton"
user_email = "baton@localhost"
# push = "origin"      # publish the branch the run starts on as baton/<branch> after each session (never forced, never a CI definition)
# timeout_secs = 300   # baton's own git commands are stopped after this, with an error that says so

[retry]
# max_attempts = 8
# base_delay_ms = 1000
# max_delay_ms = 60000

# [forge]                        # issues in, one pull request out: baton issues pull|pr|watch
# repo = "owner/name"
# label = "baton"                # open issues with this label, from collaborators, become features
# token_env = "GITHUB_TOKEN"     # the variable holding the token: baton's, never the agent's
# merge = false                  # true: baton merges its pull request once every check passed

# [prices."my-model"]            # USD per million tokens
# input = 3.0
# output = 15.0
# cache_read = 0.3
# cache_write = 3.75
"#,
        kind = kind.as_str(),
        pad = " ".repeat(33usize.saturating_sub(9 + kind.as_str().len())),
        min = (features / 10).clamp(1, 20)
    )
}

/// The lines `baton new` puts in `.gitignore` (those missing): baton's records, and
/// what tools leave behind that no session should commit.
pub const GITIGNORE: &[&str] = &[
    ".baton/",
    "node_modules/",
    ".venv/",
    "venv/",
    "__pycache__/",
    "*.pyc",
    "*.log",
    "*.pid",
    ".DS_Store",
    "*.sqlite-journal",
];

/// `existing` (a `.gitignore`, perhaps empty) with each line of [`GITIGNORE`] it
/// lacks appended; `None` when it lacks none. A line counts as present with or
/// without its leading and trailing `/`.
pub fn gitignore(existing: &str) -> Option<String> {
    let norm = |l: &str| {
        let l = l.trim();
        let l = l.strip_prefix('/').unwrap_or(l);
        l.strip_suffix('/').unwrap_or(l).to_string()
    };
    let present: Vec<String> = existing.lines().map(norm).collect();
    let missing: Vec<&str> = GITIGNORE
        .iter()
        .copied()
        .filter(|l| !present.contains(&norm(l)))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut out = existing.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    for l in missing {
        out.push_str(l);
        out.push('\n');
    }
    Some(out)
}

/// The text of the spec file `spec`, refused when missing or empty.
pub fn read_spec(spec: &Path) -> Result<String, HarnessError> {
    let text = std::fs::read_to_string(spec).map_err(|source| HarnessError::Spec {
        path: spec.to_path_buf(),
        source,
    })?;
    if text.trim().is_empty() {
        return Err(HarnessError::Input(format!(
            "the spec {} is empty; describe what to build",
            spec.display()
        )));
    }
    Ok(text)
}

/// What `baton new --idea` writes as the spec until the planner expands it.
pub fn idea_spec(idea: &str) -> Result<String, HarnessError> {
    if idea.trim().is_empty() {
        return Err(HarnessError::Input(
            "the idea is empty; say in a sentence or a few what to build".into(),
        ));
    }
    Ok(format!("Original idea:\n\n{}\n", idea.trim()))
}

/// Create a project of `kind` in `dir` whose spec is `text`. Refuses a directory
/// that already holds a project (or anything at all) unless `force`. `dir` becomes
/// a git repository of its own even inside another one (whose history is never
/// touched). For a web project, `browser` is asked (with the project's canonical
/// path, once it exists) whether the browser's parts are there.
pub fn create_with(
    dir: &Path,
    text: &str,
    features: u32,
    kind: Kind,
    force: bool,
    browser: impl FnOnce(&Path) -> Browser,
) -> Result<(), HarnessError> {
    if features == 0 {
        return Err(HarnessError::Input("--features must be at least 1".into()));
    }
    if dir.exists() {
        let occupied = std::fs::read_dir(dir).map_err(io(dir))?.next().is_some();
        if occupied && !force {
            let what = ["baton.toml", "feature_list.json", "app_spec.txt"]
                .iter()
                .find(|f| dir.join(f).exists())
                .map_or("files".to_string(), |f| f.to_string());
            return Err(HarnessError::Input(format!(
                "{} already holds {what}; use --force to write a new project there (existing files other than app_spec.txt, baton.toml and .gitignore are kept)",
                dir.display()
            )));
        }
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        HarnessError::Input(format!(
            "cannot create the project directory {}: {e}",
            dir.display()
        ))
    })?;
    // Inside another repository (baton's own checkout, a monorepo) the project
    // still gets its own: its sessions commit everything in the tree.
    if !git::is_top(dir) {
        git::git(dir, &["init", "-q"])?;
    }
    let browser = browser_for(dir, kind, browser)?;
    // The user's own files are the first commit, so no session's gates ever take
    // them for work it left uncommitted.
    write_and_commit(
        dir,
        text,
        &default_toml(features, kind, &browser),
        "baton new: the specification, baton.toml and .gitignore",
    )
}

/// What to write as `[browser]` for a project of `kind` in `dir`.
fn browser_for(
    dir: &Path,
    kind: Kind,
    probe: impl FnOnce(&Path) -> Browser,
) -> Result<Browser, HarnessError> {
    if kind != Kind::Web {
        return Ok(Browser::NotWeb);
    }
    Ok(probe(&dir.canonicalize().map_err(io(dir))?))
}

/// Write the spec, `baton.toml` and the missing lines of `.gitignore`
/// ([`GITIGNORE`]) into `dir` and commit those three files alone with `message`.
fn write_and_commit(dir: &Path, spec: &str, toml: &str, message: &str) -> Result<(), HarnessError> {
    let write = |name: &str, content: &str| {
        let p = dir.join(name);
        std::fs::write(&p, content).map_err(io(p))
    };
    write("app_spec.txt", spec)?;
    write("baton.toml", toml)?;
    let gi = dir.join(".gitignore");
    let existing = match std::fs::read_to_string(&gi) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io(gi)(e)),
    };
    if let Some(ignore) = gitignore(&existing) {
        write(".gitignore", &ignore)?;
    }
    let defaults = baton_config::GitConfig::default();
    git::prepare(dir, &defaults.user_name, &defaults.user_email)?;
    git::commit(
        dir,
        message,
        &["app_spec.txt", "baton.toml", ".gitignore"],
        &[],
    )?;
    Ok(())
}

/// The kind a new project from an idea was given, decided again from the spec its
/// planner wrote (the idea is a line; the spec says what is built): when the spec
/// tells another kind than `was`, `baton.toml` is written anew for it (as `baton
/// new` wrote it, the browser probed again) and committed alone. Returns the kind
/// and how it was read, when it changed. Only for a project `baton new` just made:
/// nothing else has touched its `baton.toml`.
pub fn kind_from_planned_spec(
    dir: &Path,
    was: Kind,
    features: u32,
    browser: impl FnOnce(&Path) -> Browser,
) -> Result<Option<KindGuess>, HarnessError> {
    let spec =
        std::fs::read_to_string(dir.join("app_spec.txt")).map_err(io(dir.join("app_spec.txt")))?;
    let guess = guess_kind(&spec);
    if guess.words.is_empty() || guess.kind == was {
        return Ok(None);
    }
    let toml = default_toml(
        features,
        guess.kind,
        &browser_for(dir, guess.kind, browser)?,
    );
    let at = dir.join("baton.toml");
    std::fs::write(&at, toml).map_err(io(at))?;
    git::commit(
        dir,
        &format!(
            "baton new: [project] kind = \"{}\", from the planner's spec",
            guess.kind.as_str()
        ),
        &["baton.toml"],
        &[],
    )?;
    Ok(Some(guess))
}

/// What `baton new --adopt --goal` writes as the spec.
pub fn goal_spec(goal: &str) -> Result<String, HarnessError> {
    if goal.trim().is_empty() {
        return Err(HarnessError::Input(
            "the goal is empty; say what to do with the project".into(),
        ));
    }
    Ok(format!("Goal:\n\n{}\n", goal.trim()))
}

/// `baton new --adopt`: make the git repository in `dir`, which has no feature
/// list yet, a baton project whose spec is `spec` (the goal): `baton.toml` (with `[project]
/// adopt = true`, so the initializer studies the code first), the spec and
/// `.gitignore`, committed on top of the project's history, which is not touched.
/// A tree with uncommitted changes is refused: they would be swallowed by the
/// sessions' commits.
pub fn adopt(
    dir: &Path,
    spec: &str,
    features: u32,
    kind: Kind,
    browser: impl FnOnce(&Path) -> Browser,
) -> Result<(), HarnessError> {
    if features == 0 {
        return Err(HarnessError::Input("--features must be at least 1".into()));
    }
    if !dir.is_dir() {
        return Err(HarnessError::Input(format!(
            "{} does not exist; --adopt takes an existing git repository (without --adopt, `baton new` creates a project)",
            dir.display()
        )));
    }
    let top = git::git(dir, &["rev-parse", "--show-toplevel"]).map_err(|_| {
        HarnessError::Input(format!(
            "{} is not a git repository; --adopt takes an existing one (`git init` and commit it first)",
            dir.display()
        ))
    })?;
    let canon = dir.canonicalize().map_err(io(dir))?;
    if Path::new(top.trim()) != canon {
        return Err(HarnessError::Input(format!(
            "{} is inside the git repository {}, not its top: adopt the repository's top directory",
            dir.display(),
            top.trim()
        )));
    }
    if git::head(dir).is_none() {
        return Err(HarnessError::Input(format!(
            "{} has no commit yet: commit the existing code first, so baton's sessions start from it",
            dir.display()
        )));
    }
    let dirty = git::dirty_paths(dir)?;
    if !dirty.is_empty() {
        let shown: Vec<&str> = dirty.iter().take(10).map(String::as_str).collect();
        return Err(HarnessError::Input(format!(
            "{} has uncommitted changes ({}{}); commit or stash them first: baton's sessions commit everything in the tree, so they would be swallowed",
            dir.display(),
            shown.join(", "),
            if dirty.len() > 10 {
                format!(" and {} more", dirty.len() - 10)
            } else {
                String::new()
            }
        )));
    }
    for f in ["baton.toml", "feature_list.json", "app_spec.txt"] {
        if dir.join(f).exists() {
            let hint = if f == "feature_list.json" {
                "it has a feature list already: `baton run` adopts it as it is"
            } else {
                "it is baton's to write; move it aside first"
            };
            return Err(HarnessError::Input(format!(
                "{} already holds {f}: {hint}",
                dir.display()
            )));
        }
    }
    let browser = browser_for(dir, kind, browser)?;
    let toml = default_toml(features, kind, &browser).replacen(
        "[project]\n",
        "[project]\nadopt = true                      # the code existed before baton: the initializer studies it first\n",
        1,
    );
    let before = git::head(dir);
    let history = git::git(dir, &["rev-list", "--count", "HEAD"])
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    write_and_commit(
        dir,
        spec,
        &toml,
        "baton new --adopt: the goal, baton.toml and .gitignore",
    )?;
    let entry = baton_records::LedgerEntry {
        commit: git::head(dir),
        ..baton_records::LedgerEntry::new(
            0,
            baton_records::LedgerKind::Adopted,
            format!(
                "adopted the repository at {} ({history} commits of history, untouched)",
                before.as_deref().unwrap_or("?")
            ),
        )
    };
    let path = dir.join(baton_records::layout::LEDGER);
    baton_records::ledger::append(&path, &entry)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_written_toml_parses_with_the_kind_browser_and_verifier() {
        let path = Path::new("baton.toml");
        for (k, browser, enabled) in [
            (Kind::Web, Browser::On { chromium: None }, true),
            (
                Kind::Web,
                Browser::On {
                    chromium: Some("/opt/chromium/chrome".into()),
                },
                true,
            ),
            (Kind::Web, Browser::Missing, false),
            (Kind::Cli, Browser::NotWeb, false),
            (Kind::Library, Browser::NotWeb, false),
            (Kind::Service, Browser::NotWeb, false),
        ] {
            let text = default_toml(50, k, &browser);
            let cfg = baton_config::Config::from_toml_str(&text, path)
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(cfg.project.kind, k.as_str());
            assert_eq!(cfg.project.features, 50);
            assert_eq!(cfg.project.min_features, 5);
            assert_eq!(cfg.browser.enabled, enabled, "{text}");
            if let Browser::On {
                chromium: Some(c), ..
            } = &browser
            {
                assert_eq!(&cfg.browser.chromium, c);
            } else {
                assert_eq!(cfg.browser.chromium, "/usr/bin/chromium");
            }
            assert!(cfg.verify.agent, "{text}");
            assert!(!cfg.verify.trust_agent, "{text}");
            assert_eq!(cfg.verify.turns_per_feature, 30);
            assert_eq!(cfg.verify, baton_config::VerifyConfig::default());
        }
        // The kind's comment lines up with the others.
        let text = default_toml(200, Kind::Library, &Browser::NotWeb);
        assert!(
            text.contains("kind = \"library\"                 # web (tested in a browser)"),
            "{text}"
        );
    }

    /// Every default written commented out still parses once uncommented, and
    /// says what baton would do anyway (a key it does not know, or a value of
    /// the wrong type, would be an error the user meets only when they try it).
    #[test]
    fn every_commented_default_parses_when_uncommented() {
        let text = default_toml(50, Kind::Web, &Browser::On { chromium: None });
        let open: String = text
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest)
                    if rest.starts_with('[')
                        || rest.split_once(" = ").is_some_and(|(k, _)| {
                            k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                        }) =>
                {
                    rest.to_string()
                }
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n");
        assert_ne!(open, text);
        let cfg = baton_config::Config::from_toml_str(&open, Path::new("baton.toml"))
            .unwrap_or_else(|e| panic!("{e}\n{open}"));
        assert_eq!(cfg.forge.repo, "owner/name");
        assert!(!cfg.forge.merge);
        assert!(cfg.verify.skip_unchanged);
    }

    #[test]
    fn gitignore_gains_only_the_lines_it_lacks() {
        let all = gitignore("").unwrap();
        assert_eq!(all, GITIGNORE.join("\n") + "\n");
        assert_eq!(gitignore(&all), None);
        // The user's lines are kept; `/node_modules` and `.baton` count as present.
        let mine = "target\n/node_modules\n.baton\n*.log";
        let out = gitignore(mine).unwrap();
        assert!(
            out.starts_with("target\n/node_modules\n.baton\n*.log\n"),
            "{out}"
        );
        assert_eq!(out.matches("node_modules").count(), 1, "{out}");
        assert_eq!(out.matches(".baton").count(), 1, "{out}");
        assert_eq!(out.matches("*.log").count(), 1, "{out}");
        assert!(
            out.ends_with(
                ".venv/\nvenv/\n__pycache__/\n*.pyc\n*.pid\n.DS_Store\n*.sqlite-journal\n"
            ),
            "{out}"
        );
    }

    #[test]
    fn new_inside_another_repository_makes_one_of_its_own() {
        let t = tempfile::tempdir().unwrap();
        let outer = t.path();
        git::git(outer, &["init", "-q"]).unwrap();
        git::prepare(outer, "t", "t@localhost").unwrap();
        std::fs::write(outer.join("a.txt"), "a\n").unwrap();
        git::commit(outer, "outer", &[], &[]).unwrap();
        let before = git::rev(outer, "HEAD").unwrap();
        let inner = outer.join("inner");
        let mut probed = false;
        create_with(&inner, "A CLI.\n", 10, Kind::Cli, false, |_| {
            probed = true;
            Browser::Missing
        })
        .unwrap();
        assert!(!probed, "only a web project's browser is probed");
        assert!(inner.join(".git").is_dir());
        assert_eq!(git::rev(outer, "HEAD").unwrap(), before);
        assert_eq!(git::commits_since(outer, None), 1);
        assert_eq!(git::commits_since(&inner, None), 1);
        let toml = std::fs::read_to_string(inner.join("baton.toml")).unwrap();
        assert!(toml.contains("kind = \"cli\""), "{toml}");
    }
}
