//! `baton new`: a fresh project directory ready for `baton run`.

use std::path::Path;

use crate::error::{HarnessError, io};
use crate::git;

/// What `baton new` writes as `baton.toml`: every setting, commented.
pub fn default_toml(features: u32) -> String {
    format!(
        r#"# baton.toml: settings of this project for baton. Every key is optional.

[agent]
# provider = "anthropic"        # or "openai" (any OpenAI-compatible server)
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

[git]
# Used only when git has no identity configured for this repository.
user_name = "baton"
user_email = "baton@localhost"

[retry]
# max_attempts = 8
# base_delay_ms = 1000
# max_delay_ms = 60000

# [prices."my-model"]            # USD per million tokens
# input = 3.0
# output = 15.0
# cache_read = 0.3
# cache_write = 3.75
"#,
        min = (features / 10).clamp(1, 20)
    )
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

/// Create a project in `dir` from `spec`. Refuses a directory that already holds a
/// project (or anything at all) unless `force`.
pub fn create(dir: &Path, spec: &Path, features: u32, force: bool) -> Result<(), HarnessError> {
    create_with(dir, &read_spec(spec)?, features, force)
}

/// Create a project in `dir` whose spec is `text`.
pub fn create_with(dir: &Path, text: &str, features: u32, force: bool) -> Result<(), HarnessError> {
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
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    if !git::is_repo(dir) {
        git::git(dir, &["init", "-q"])?;
    }
    // The user's own files are the first commit, so no session's gates ever take
    // them for work it left uncommitted.
    write_and_commit(
        dir,
        text,
        &default_toml(features),
        "baton new: the specification, baton.toml and .gitignore",
    )
}

/// Write the spec, `baton.toml` and the `.baton/` line of `.gitignore` into `dir`
/// and commit those three files alone with `message`.
fn write_and_commit(dir: &Path, spec: &str, toml: &str, message: &str) -> Result<(), HarnessError> {
    let write = |name: &str, content: &str| {
        let p = dir.join(name);
        std::fs::write(&p, content).map_err(io(p))
    };
    write("app_spec.txt", spec)?;
    write("baton.toml", toml)?;
    let gi = dir.join(".gitignore");
    let mut ignore = std::fs::read_to_string(&gi).unwrap_or_default();
    if !ignore
        .lines()
        .any(|l| l.trim() == ".baton/" || l.trim() == ".baton")
    {
        if !ignore.is_empty() && !ignore.ends_with('\n') {
            ignore.push('\n');
        }
        ignore.push_str(".baton/\n");
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
pub fn adopt(dir: &Path, spec: &str, features: u32) -> Result<(), HarnessError> {
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
    let toml = default_toml(features).replacen(
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
