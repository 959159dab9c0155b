//! Claude Code as a session backend: `claude -p --output-format stream-json
//! --verbose`, with baton's `PreToolUse` hook in a settings file written under
//! `.baton/` for the session and `--max-turns` for the turn limit.
//!
//! With the OS sandbox on, the CLI's own shell commands (its `Bash`, and its hooks) go
//! through baton's launcher: `CLAUDE_CODE_SHELL_PREFIX` is `<baton> --sandbox-shell`,
//! which the CLI runs as `'<baton>' --sandbox-shell '<its command string>'`; the
//! launcher reads the sandbox spec from `BATON_SANDBOX`, confines itself, removes the
//! secret variables and becomes `bash -c '<its command string>'`. The CLI itself,
//! which holds the key, stays outside.
//!
//! The stream's events become transcript events: each assistant message (merged by
//! message id) a `request` + `assistant` turn with its usage and cost from the price
//! table, each tool result a `tool_result` (a hook refusal marked `refused`), and the
//! CLI's final `result` the `session_end` with its outcome, usage and total cost.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{
    AgentCli, CliKind, CliSession, Opening, Recorder, Start, io_err, mentions_any, reset_of,
    result_text, tail,
};
use crate::model::{Block, Usage};
use crate::session::{AgentError, Outcome};

/// The provider name of this backend in config and transcripts.
pub const PROVIDER: &str = "claude-code";

/// The variable that makes Claude Code run each shell command as `'<program>' <flag>
/// '<command string>'` (a prefix ending in ` -…` is split into program and flag).
pub const SHELL_PREFIX_VAR: &str = "CLAUDE_CODE_SHELL_PREFIX";

/// baton's flag for running a CLI's command string in its sandbox.
pub const SANDBOX_SHELL_FLAG: &str = "--sandbox-shell";

/// The name under which baton behaves as `baton --sandbox-shell` (a link to it in
/// baton's state dir is Claude Code's shell prefix: Claude Code splits a flag off
/// the prefix for its shell commands, but not for its MCP servers, which it then
/// cannot start).
pub const SANDBOX_SHELL_NAME: &str = "baton-sandbox-shell";

/// The variable holding the sandbox spec (JSON) for `baton --sandbox-shell`.
pub const SANDBOX_SPEC_VAR: &str = "BATON_SANDBOX";

/// The variable carrying the user's `PATH` to `baton --sandbox-shell`, which
/// gives it back to the command it confines. Claude Code itself runs outside the
/// sandbox, on the `PATH` baton trusts (no directory a sandboxed command can
/// write, so a `node` or `git` the agent planted in the project is never run
/// outside); its commands, confined, keep the user's (a virtualenv first).
pub const COMMAND_PATH_VAR: &str = "BATON_COMMAND_PATH";

/// The prefix Claude Code gives a tool result its `PreToolUse` hook refused.
const HOOK_REFUSAL: &str = "hook error: ";

/// Where, in baton's state dir for the project, `baton --sandbox-shell` appends why
/// it could not start a command (its stderr goes to the CLI, which shows a hook's
/// to nobody).
pub const LAUNCHER_LOG: &str = "sandbox-shell.log";

/// Where the per-session files for the CLI live, inside the project.
const CLI_DIR: &str = baton_records::layout::CLAUDE_CODE;

/// Claude Code: it holds the user's key and runs outside baton's sandbox; its
/// shell commands go through baton's sandbox shell, its tool calls through
/// baton's hook.
#[derive(Debug, Clone, Copy)]
pub struct ClaudeCode;

impl AgentCli for ClaudeCode {
    fn kind(&self) -> CliKind {
        CliKind::ClaudeCode
    }

    fn missing_end(&self) -> &'static str {
        "a result"
    }

    fn counts_turns(&self) -> bool {
        false // `--max-turns`
    }

    fn in_home(&self, _home: &Path) -> Arc<dyn AgentCli> {
        Arc::new(*self) // It keeps nothing of a session's in HOME.
    }

    /// Write the session's settings and say how to start Claude Code.
    fn start(&self, s: &CliSession<'_>, opening: &Opening<'_>) -> Result<Start, AgentError> {
        let Opening { n, system, prompt } = *opening;
        let dir = s.project_dir.join(CLI_DIR);
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let settings = dir.join(format!("{n:04}-settings.json"));
        let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": s.hook_command}
        ]}]}});
        std::fs::write(&settings, hooks.to_string()).map_err(io_err(&settings))?;
        let mut cmd = tokio::process::Command::new(&s.program);
        cmd.current_dir(&s.project_dir)
            .args(["-p", "--output-format", "stream-json", "--verbose"])
            .args(["--model", &s.model])
            .args(["--max-turns", &s.limits.max_turns.to_string()])
            .arg("--settings")
            .arg(&settings)
            // Only the user's settings besides baton's: the project's .claude/ files are
            // writable by the agent and could override the shell prefix (the sandbox)
            // or the hooks; likewise only baton's MCP servers, not a project .mcp.json.
            .args(["--setting-sources", "user", "--strict-mcp-config"])
            .args(["--append-system-prompt", system]);
        if let Some(mcp) = &s.mcp_config {
            let path = dir.join(format!("{n:04}-mcp.json"));
            std::fs::write(&path, mcp.to_string()).map_err(io_err(&path))?;
            // The servers' tools offered as they are, not deferred behind the CLI's
            // tool search: baton's brief names them (`mcp__playwright__…`).
            cmd.arg("--mcp-config")
                .arg(&path)
                .env("ENABLE_TOOL_SEARCH", "false");
        }
        cmd.arg("--")
            .arg(prompt)
            .envs(s.env.iter().map(|(k, v)| (k, v)))
            .env_remove(SHELL_PREFIX_VAR)
            .env_remove(SANDBOX_SPEC_VAR);
        if let Some(spec) = &s.command_sandbox {
            cmd.env(SHELL_PREFIX_VAR, s.sandbox_shell_link()?)
                .env(SANDBOX_SPEC_VAR, spec);
        }
        Ok(Start {
            cmd,
            stdin: None,
            scratch: None,
            grant: None,
        })
    }

    /// How the session ended, from the CLI's `result` event.
    fn outcome(&self, s: &CliSession<'_>, r: &Value, stderr: &str) -> Result<Outcome, AgentError> {
        match r["subtype"].as_str().unwrap_or_default() {
            "success" if r["is_error"] != json!(true) => Ok(Outcome::Completed),
            "error_max_turns" => Ok(Outcome::MaxTurns),
            _ if usage_limited(r) => Err(AgentError::UsageLimit {
                program: s.program.display().to_string(),
                message: r["result"].as_str().unwrap_or("rate limited").to_string(),
                reset_in: r["result"].as_str().and_then(reset_of),
            }),
            other => {
                let said = r["result"]
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| r["errors"].as_array().map(|e| format!("{e:?}")))
                    .unwrap_or_default();
                let kind = match other {
                    "success" => "error".to_string(),
                    o => o.replace('_', " "),
                };
                Err(s.cli_err(format!(
                    "the CLI reported an {kind}: {said} {}",
                    tail(stderr)
                )))
            }
        }
    }

    /// One event of Claude Code's stream.
    fn event(&self, r: &mut Recorder<'_, '_>, v: Value) -> Result<(), AgentError> {
        // Subagents' messages are theirs, not this conversation'r.s.
        if !v["parent_tool_use_id"].is_null() {
            return Ok(());
        }
        match v["type"].as_str().unwrap_or_default() {
            "assistant" => {
                let msg = &v["message"];
                let id = msg["id"].as_str().unwrap_or_default().to_string();
                if r.p.pending.as_ref().is_some_and(|(pid, _, _)| *pid != id) {
                    r.flush()?;
                }
                let blocks = msg["content"]
                    .as_array()
                    .map(|c| c.iter().filter_map(block_of).collect::<Vec<_>>())
                    .unwrap_or_default();
                let usage = usage_of(&msg["usage"]);
                match &mut r.p.pending {
                    Some((_, b, u)) => {
                        b.extend(blocks);
                        *u = usage;
                    }
                    None => r.p.pending = Some((id, blocks, usage)),
                }
            }
            "user" => {
                r.flush()?;
                let content = v["message"]["content"].as_array().cloned();
                for b in content.unwrap_or_default() {
                    if b["type"] != "tool_result" {
                        continue;
                    }
                    let id = b["tool_use_id"].as_str().unwrap_or_default().to_string();
                    let images = super::images_of(&b["content"]);
                    let mut text = result_text(&b["content"]);
                    let is_error = b["is_error"] == json!(true);
                    let mut refused = is_error && text.contains(HOOK_REFUSAL);
                    if let Some(why) = r.p.no_verdict.remove(&id) {
                        // Claude Code refused it for want of baton's answer.
                        refused = is_error;
                        text = format!("{text}\n(baton's PreToolUse hook gave no answer: {why})");
                    }
                    let out = baton_tools::ToolOutput {
                        content: text,
                        is_error,
                        images,
                    };
                    r.tool_output(id, out, refused)?;
                }
            }
            // baton's hook gave no usable answer (it failed to start, or timed out):
            // Claude Code falls back on its permissions, which refuse in `-p`.
            "system" if v["tag"] == "hook_no_verdict" => {
                let nv = &v["hook_no_verdict"];
                let id = nv["tool_use_id"].as_str().unwrap_or_default().to_string();
                let why = if nv["timed_out"] == json!(true) {
                    "it timed out".to_string()
                } else {
                    r.s.launcher_failure()
                        .map_or("it failed".to_string(), |l| format!("it failed: {l}"))
                };
                r.p.no_verdict.insert(id, why);
            }
            "result" => {
                r.flush()?;
                if let Some(t) = v["result"].as_str() {
                    r.p.final_text = t.to_string();
                }
                r.p.totals = Some((usage_of(&v["usage"]), v["total_cost_usd"].as_f64()));
                r.p.result = Some(v);
            }
            _ => {}
        }
        Ok(())
    }
}

impl CliSession<'_> {
    /// `<state dir>/bin/baton-sandbox-shell`, a link to this baton made (or made
    /// anew) here: out of the sandbox's reach, like the rest of the state dir.
    fn sandbox_shell_link(&self) -> Result<PathBuf, AgentError> {
        let dir = baton_config::state_dir(&self.project_dir).join("bin");
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let link = dir.join(SANDBOX_SHELL_NAME);
        if std::fs::read_link(&link).is_ok_and(|t| t == self.baton_exe) {
            return Ok(link);
        }
        let fresh = dir.join(format!(".{SANDBOX_SHELL_NAME}.{}", std::process::id()));
        let _ = std::fs::remove_file(&fresh);
        std::os::unix::fs::symlink(&self.baton_exe, &fresh).map_err(io_err(&fresh))?;
        std::fs::rename(&fresh, &link).map_err(io_err(&link))?;
        Ok(link)
    }

    /// The last line the sandbox launcher logged, when it logged one in the last
    /// minute (why the hook's process could not start).
    fn launcher_failure(&self) -> Option<String> {
        let path = baton_config::state_dir(&self.project_dir).join(LAUNCHER_LOG);
        let meta = std::fs::metadata(&path).ok()?;
        let age = meta.modified().ok()?.elapsed().unwrap_or_default();
        if age > std::time::Duration::from_secs(60) {
            return None;
        }
        let text = std::fs::read_to_string(&path).ok()?;
        text.lines().last().map(str::to_string)
    }
}

/// Whether the CLI's `result` says a usage or rate limit stopped it: an API error
/// 429/529 (an API key's rate limit, overload), or a subscription's usage limit.
fn usage_limited(r: &Value) -> bool {
    if matches!(r["api_error_status"].as_u64(), Some(429 | 529)) {
        return true;
    }
    mentions_any(r["result"].as_str().unwrap_or_default(), LIMIT_WORDS)
}

/// What Claude Code's result says when a quota or rate limit stopped it.
const LIMIT_WORDS: &[&str] = &[
    "usage limit",
    "hit your limit",
    "rate limit",
    "request rejected (429)",
];

/// Anthropic usage JSON as baton's [`Usage`].
fn usage_of(u: &Value) -> Usage {
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
        cache_read_tokens: n("cache_read_input_tokens"),
        cache_write_tokens: n("cache_creation_input_tokens"),
    }
}

/// A content block of the CLI's stream as baton's [`Block`] (unknown kinds dropped).
fn block_of(b: &Value) -> Option<Block> {
    let s = |k: &str| b[k].as_str().unwrap_or_default().to_string();
    match b["type"].as_str()? {
        "text" => Some(Block::Text { text: s("text") }),
        "thinking" => Some(Block::Thinking {
            thinking: s("thinking"),
            signature: s("signature"),
        }),
        "redacted_thinking" => Some(Block::RedactedThinking { data: s("data") }),
        "tool_use" => Some(Block::ToolUse {
            id: s("id"),
            name: s("name"),
            input: b["input"].clone(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Write whose hook gave no answer: Claude Code 2.1.332's own lines (its
    /// `hook_no_verdict` notice, then the permission refusal as the result), as it
    /// printed them with a hook that exited 126.
    #[test]
    fn a_call_refused_for_want_of_the_hooks_answer_is_recorded_refused_with_why() {
        let dir = tempfile::tempdir().unwrap();
        let prices = crate::pricing::PriceTable::new(&Default::default());
        let backend = super::super::CliBackend {
            cli: std::sync::Arc::new(super::ClaudeCode),
            program: "claude".into(),
            model: "m".into(),
            baton_exe: "baton".into(),
            env: Vec::new(),
            mcp_config: None,
            command_sandbox: None,
            hook_config: None,
            keep_alive: Vec::new(),
            bubblewrap: false,
        };
        let limits = crate::session::Limits::from_config(&baton_config::AgentConfig::default(), 10);
        let quiet = crate::session::Quiet;
        let s = backend.session(dir.path(), &[], limits, &quiet, &prices);
        let mut t = crate::transcript::Transcript::create_next(dir.path()).unwrap();
        let mut r = Recorder {
            s: &s,
            transcript: &mut t,
            p: super::super::Progress::default(),
        };
        let lines = [
            r#"{"type":"assistant","message":{"id":"msg_0001","type":"message","role":"assistant","model":"scripted","content":[{"type":"tool_use","id":"toolu_001_0","name":"Write","input":{"file_path":"a.txt","content":"a\n"}}],"stop_reason":null,"usage":{"input_tokens":100,"output_tokens":1}},"parent_tool_use_id":null}"#,
            r#"{"type":"system","subtype":"informational","content":"A hook gave no usable answer, so it didn't check this action.","level":"warning","tag":"hook_no_verdict","hook_no_verdict":{"hook_event":"PreToolUse","tool_use_id":"toolu_001_0","timed_out":false}}"#,
            r#"{"type":"system","subtype":"permission_denied","tool_name":"Write","tool_use_id":"toolu_001_0","message":"Claude requested permissions to write to /tmp/x/a.txt, but you haven't granted it yet."}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Claude requested permissions to write to /tmp/x/a.txt, but you haven't granted it yet.","is_error":true,"tool_use_id":"toolu_001_0"}]},"parent_tool_use_id":null}"#,
        ];
        for l in lines {
            ClaudeCode
                .event(&mut r, serde_json::from_str(l).unwrap())
                .unwrap();
        }
        drop(r);
        let records = crate::transcript::read(t.path()).unwrap();
        let found = records.iter().find_map(|r| match &r.event {
            crate::transcript::Event::ToolResult {
                content, refused, ..
            } => Some((content.clone(), *refused)),
            _ => None,
        });
        let (content, refused) = found.expect("the result is recorded");
        assert!(refused, "{content}");
        assert!(
            content.contains("baton's PreToolUse hook gave no answer: it failed"),
            "{content}"
        );
    }

    #[test]
    fn result_content_in_either_shape() {
        assert_eq!(result_text(&json!("x")), "x");
        assert_eq!(
            result_text(&json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])),
            "a\nb"
        );
    }

    #[test]
    fn usage_limits_are_recognised() {
        assert!(usage_limited(
            &json!({"api_error_status": 429, "result": "API Error: Request rejected (429)"})
        ));
        assert!(usage_limited(
            &json!({"result": "Claude AI usage limit reached|1767225600"})
        ));
        assert!(usage_limited(
            &json!({"result": "You've hit your limit · resets 3pm (UTC)"})
        ));
        assert!(!usage_limited(
            &json!({"api_error_status": 400, "result": "API Error: 400 bad request"})
        ));
    }

    #[test]
    fn usage_from_the_stream() {
        let u = usage_of(&json!({"input_tokens": 3, "output_tokens": 4,
            "cache_read_input_tokens": 5, "cache_creation_input_tokens": 6}));
        assert_eq!(
            (
                u.input_tokens,
                u.output_tokens,
                u.cache_read_tokens,
                u.cache_write_tokens
            ),
            (3, 4, 5, 6)
        );
    }
}
