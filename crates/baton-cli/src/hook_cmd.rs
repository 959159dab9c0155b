//! `baton hook pre-tool-use`: baton's rules inside an agent CLI. Claude Code and
//! Codex run it before every tool call (a `PreToolUse` hook in the settings file
//! baton writes for a `claude-code` session, or given with `-c` to `codex exec`)
//! with the call as JSON on stdin; baton answers with the hook's JSON on stdout:
//! `permissionDecision` `deny` with the reason, or `allow`.
//!
//! The judgement is the built-in loop's: the command policy of the project's
//! `baton.toml` (and its `Read` rules), write confinement of the file tools (inside
//! the project, never in `.git/` or `.baton/`), and in coding sessions the
//! feature-list guard (`--feature-list NAME`); for the verifier no edits (`--read-only`).
//! Claude Code's tool names are baton's; Codex's shell calls come as `Bash`, its
//! patches as `apply_patch`, judged by every file they write.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use baton_config::Config;
use baton_harness::guard::GateStack;
use baton_policy::Policy;
use baton_tools::{GateDecision, ToolGate, paths};
use serde_json::{Value, json};

/// Arguments of `baton hook`.
#[derive(Debug, clap::Args)]
pub struct HookArgs {
    #[command(subcommand)]
    command: HookCommand,
}

#[derive(Debug, clap::Subcommand)]
enum HookCommand {
    /// Judge one tool call of an agent CLI (Claude Code's PreToolUse hook JSON on
    /// stdin) and print the hook's answer: {"hookSpecificOutput": {"hookEventName":
    /// "PreToolUse", "permissionDecision": "allow"|"deny", "permissionDecisionReason"}}.
    ///
    /// Exit code 0 with the answer; 2 (which the CLI reads as a refusal, with stderr
    /// as the reason) when the input or baton.toml cannot be read, or the judgement
    /// fails in any way (never any other code).
    PreToolUse(PreToolUseArgs),
}

/// Arguments of `baton hook pre-tool-use`.
#[derive(Debug, clap::Args)]
struct PreToolUseArgs {
    /// The project directory (default: the hook input's `cwd`).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Guard this feature list (relative to the project): a Write or Edit of it may
    /// change only "passes". Given for coding sessions.
    #[arg(long)]
    feature_list: Option<String>,
    /// Judge by this copy of `baton.toml` (written by baton outside the project when
    /// the run started) instead of the project's file, which the agent can change.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Refuse every edit (the independent verifier's sessions).
    #[arg(long)]
    read_only: bool,
    /// The shell commands run in baton's bubblewrap sandbox and the run's PID
    /// namespace (baton says so when it starts the CLI): judge them as baton judges
    /// its own there, allowing what that sandbox bounds.
    #[arg(long)]
    bubblewrap: bool,
}

/// Run `baton hook …`.
pub fn run(args: HookArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        HookCommand::PreToolUse(a) => {
            // Fail closed: any exit but 2 lets the call through, so a panic anywhere in
            // the judgement (on any thread, and also where the build aborts on panic)
            // ends the process with 2 before it can unwind or abort.
            std::panic::set_hook(Box::new(|info| {
                eprintln!("baton hook: internal error, the call is refused: {info}");
                std::process::exit(2);
            }));
            let mut input = String::new();
            let answer = std::io::stdin()
                .read_to_string(&mut input)
                .context("cannot read the hook input on stdin")
                .and_then(|_| pre_tool_use(&a, &input));
            match answer {
                Ok(v) => {
                    println!("{v}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    // Exit 2 blocks the call in Claude Code; never let an error allow it.
                    eprintln!("baton hook: {e:#}");
                    Ok(ExitCode::from(2))
                }
            }
        }
    }
}

/// The hook's answer to `input` (the hook JSON).
fn pre_tool_use(a: &PreToolUseArgs, input: &str) -> anyhow::Result<Value> {
    let call: Value = serde_json::from_str(input).context("the hook input is not JSON")?;
    let tool = call["tool_name"]
        .as_str()
        .context("the hook input has no \"tool_name\"")?;
    let tool_input = &call["tool_input"];
    let dir = match (&a.dir, call["cwd"].as_str()) {
        (Some(d), _) => d.clone(),
        (None, Some(cwd)) => PathBuf::from(cwd),
        (None, None) => anyhow::bail!("no project directory: give --dir or \"cwd\" in the input"),
    };
    let dir = dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))?;
    let cfg = match &a.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            Config::from_toml_str(&text, path)?
        }
        None => crate::setup::load_config(&dir)?,
    };
    let policy = Policy::new(&cfg.policy, &dir)?.with_bubblewrap(a.bubblewrap);
    // A command beyond the checker's limits (or one it failed on) blocks with exit 2,
    // like every other failure of the judgement.
    if tool == "Bash"
        && let Some(cmd) = tool_input["command"].as_str()
    {
        let verdict = policy.check(cmd);
        if verdict.beyond_limits() {
            anyhow::bail!("the command cannot be judged: {}", verdict.message());
        }
    }
    // The same gates, in the same order, as in baton's own loop.
    let gate = GateStack {
        policy: &policy,
        allow_file_urls: cfg.policy.allow_file_urls,
        feature_list: a.feature_list.as_deref().map(|name| (dir.as_path(), name)),
        read_only: a.read_only,
    };
    let decision = match confinement(&dir, tool, tool_input) {
        Some(reason) => GateDecision::Refuse(reason),
        None => gate.check(tool, tool_input),
    };
    Ok(match decision {
        GateDecision::Allow => json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "allowed by baton's policy",
        }}),
        GateDecision::Refuse(reason) => json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": format!("Refused by baton's policy: {reason}"),
        }}),
    })
}

/// Why a file tool's write may not happen: outside the project, or in `.git/` or
/// `.baton/` (the built-in tools refuse the same in themselves). Codex's
/// `apply_patch` writes every file its patch names.
fn confinement(dir: &Path, tool: &str, input: &Value) -> Option<String> {
    if tool == "apply_patch" {
        let patch = input["command"]
            .as_str()
            .or_else(|| input["input"].as_str())?;
        return patch_paths(patch).find_map(|path| paths::resolve_for_write(dir, path).err());
    }
    let key = match tool {
        "Write" | "Edit" | "MultiEdit" => "file_path",
        "NotebookEdit" => "notebook_path",
        _ => return None,
    };
    let path = input[key].as_str()?;
    paths::resolve_for_write(dir, path).err()
}

/// The files a Codex patch adds, updates, deletes or moves to.
fn patch_paths(patch: &str) -> impl Iterator<Item = &str> {
    const HEADS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    patch
        .lines()
        .filter_map(|l| HEADS.iter().find_map(|h| l.strip_prefix(h)).map(str::trim))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_is_judged_by_every_file_it_writes() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        let inside = "*** Begin Patch\n*** Add File: src/a.txt\n+hi\n*** End Patch\n";
        assert_eq!(
            confinement(&dir, "apply_patch", &json!({"command": inside})),
            None
        );
        let git = "*** Begin Patch\n*** Update File: src/a.txt\n*** Move to: .git/hooks/pre-commit\n@@\n-a\n+b\n*** End Patch\n";
        let why = confinement(&dir, "apply_patch", &json!({"command": git})).unwrap();
        assert!(why.contains(".git"), "{why}");
        let out = "*** Begin Patch\n*** Add File: ../elsewhere.txt\n+x\n*** End Patch\n";
        assert!(confinement(&dir, "apply_patch", &json!({"command": out})).is_some());
    }
}
