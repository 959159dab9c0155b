//! A session run by an installed agent CLI (Claude Code: `claude -p --output-format
//! stream-json --verbose`) instead of baton's own loop, recorded as baton's transcript.
//!
//! baton's rules reach inside the CLI through its `PreToolUse` hook: the caller gives
//! the hook's command line (`baton hook pre-tool-use …`) and it goes into a settings
//! file written under `.baton/` for the session. The CLI runs in the project directory
//! in its own process group, which is stopped when `stop` is cancelled or the wall-time
//! limit passes; turns are limited with `--max-turns`.
//!
//! With the OS sandbox on, the CLI's own shell commands (its `Bash`, and its hooks) go
//! through baton's launcher: `CLAUDE_CODE_SHELL_PREFIX` is `<baton> --sandbox-shell`,
//! which the CLI runs as `'<baton>' --sandbox-shell '<its command string>'`; the
//! launcher reads the sandbox spec from `BATON_SANDBOX`, confines itself with Landlock,
//! removes the secret variables and becomes `bash -c '<its command string>'`.
//!
//! The stream's events become transcript events: each assistant message (merged by
//! message id) a `request` + `assistant` turn with its usage and cost from the price
//! table, each tool result a `tool_result` (a hook refusal marked `refused`), and the
//! CLI's final `result` the `session_end` with its outcome, usage and total cost.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use baton_tools::{ProcessRegistry, ToolOutput};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
use tokio_util::sync::CancellationToken;

use crate::model::{Block, StopReason, Usage};
use crate::pricing::PriceTable;
use crate::session::{AgentError, Limits, Observer, Outcome, SessionResult};
use crate::transcript::{Event, Transcript, TranscriptError};

/// The provider name of this backend in config and transcripts.
pub const PROVIDER: &str = "claude-code";

/// The variable that makes Claude Code run each shell command as `'<program>' <flag>
/// '<command string>'` (a prefix ending in ` -…` is split into program and flag).
pub const SHELL_PREFIX_VAR: &str = "CLAUDE_CODE_SHELL_PREFIX";

/// baton's flag for running a Claude Code command string in its sandbox.
pub const SANDBOX_SHELL_FLAG: &str = "--sandbox-shell";

/// The variable holding the sandbox spec (JSON) for `baton --sandbox-shell`.
pub const SANDBOX_SPEC_VAR: &str = "BATON_SANDBOX";

/// The prefix Claude Code gives a tool result its `PreToolUse` hook refused.
const HOOK_REFUSAL: &str = "hook error: ";

/// One session through the Claude Code CLI.
pub struct CliSession<'a> {
    /// The `claude` program.
    pub program: PathBuf,
    /// The project directory (canonical); the CLI runs there.
    pub project_dir: PathBuf,
    /// Model name passed with `--model`.
    pub model: String,
    /// Limits: `max_turns` and `max_duration` are enforced; a token limit is not
    /// (the CLI reports tokens only as it goes).
    pub limits: Limits,
    /// The shell command the `PreToolUse` hook runs (baton's own judgement).
    pub hook_command: String,
    /// `{"mcpServers": {...}}` for `--mcp-config`, when MCP servers are configured.
    pub mcp_config: Option<Value>,
    /// Environment for the CLI besides baton's own (e.g. the API key baton holds).
    pub env: Vec<(String, String)>,
    /// The baton executable whose `--sandbox-shell` runs the CLI's shell commands.
    pub baton_exe: PathBuf,
    /// The sandbox spec (JSON, for `BATON_SANDBOX`) when the CLI's shell commands run
    /// through baton's sandbox launcher; `None` runs them as the CLI does.
    pub command_sandbox: Option<String>,
    /// Told what happens.
    pub observer: &'a dyn Observer,
    /// Prices for each turn's cost.
    pub prices: &'a PriceTable,
}

/// How to start the CLI for the sessions of a project (set up once per command).
#[derive(Debug, Clone)]
pub struct CliBackend {
    /// The `claude` program (a path, or a name looked up on `PATH`).
    pub program: PathBuf,
    /// Model name passed with `--model`.
    pub model: String,
    /// The baton executable the hook runs.
    pub baton_exe: PathBuf,
    /// Environment for the CLI besides baton's own (e.g. the API key baton holds).
    pub env: Vec<(String, String)>,
    /// `{"mcpServers": {...}}` for `--mcp-config`, when MCP servers are configured.
    pub mcp_config: Option<Value>,
    /// The sandbox spec (JSON, for `BATON_SANDBOX`) when the CLI's shell commands run
    /// through baton's sandbox launcher (`[sandbox] enabled` and the kernel enforces it).
    pub command_sandbox: Option<String>,
    /// The copy of `baton.toml` taken when baton started, outside the project, which
    /// the hook judges by (`--config`); `None` lets the hook read the project's.
    pub hook_config: Option<PathBuf>,
    /// What must live as long as the backend (the sandbox's PID namespace, which the
    /// CLI's commands join).
    pub keep_alive: Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
    /// The CLI's shell commands run in baton's bubblewrap sandbox and the run's PID
    /// namespace: its hook judges them as baton judges its own (`--bubblewrap`).
    pub bubblewrap: bool,
}

impl CliBackend {
    /// A session in `project_dir` whose tool calls are judged by `baton hook
    /// pre-tool-use` with `hook_args` (e.g. `--feature-list NAME`, `--read-only`).
    pub fn session<'a>(
        &self,
        project_dir: &Path,
        hook_args: &[String],
        limits: Limits,
        observer: &'a dyn Observer,
        prices: &'a PriceTable,
    ) -> CliSession<'a> {
        let mut hook = format!(
            "{} hook pre-tool-use --dir {}",
            shell_quote(&self.baton_exe.display().to_string()),
            shell_quote(&project_dir.display().to_string())
        );
        if let Some(c) = &self.hook_config {
            hook.push_str(" --config ");
            hook.push_str(&shell_quote(&c.display().to_string()));
        }
        // The verifier's read-only commands get a sandbox of their own, outside the
        // run's PID namespace: judged without what that namespace bounds.
        if self.bubblewrap && !hook_args.iter().any(|a| a == "--read-only") {
            hook.push_str(" --bubblewrap");
        }
        for a in hook_args {
            hook.push(' ');
            hook.push_str(&shell_quote(a));
        }
        CliSession {
            program: self.program.clone(),
            project_dir: project_dir.to_path_buf(),
            model: self.model.clone(),
            limits,
            hook_command: hook,
            mcp_config: self.mcp_config.clone(),
            env: self.env.clone(),
            baton_exe: self.baton_exe.clone(),
            command_sandbox: self.command_sandbox.clone(),
            observer,
            prices,
        }
    }
}

/// Where the per-session files for the CLI live, inside the project.
const CLI_DIR: &str = baton_records::layout::CLAUDE_CODE;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> AgentError + '_ {
    move |source| {
        AgentError::Transcript(TranscriptError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// Quote `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What the stream has told so far.
#[derive(Default)]
struct Progress {
    turns: u32,
    /// The assistant message being assembled: (id, blocks, usage).
    pending: Option<(String, Vec<Block>, Usage)>,
    /// Tool calls by id, for naming results and timing them.
    calls: HashMap<String, (String, Instant)>,
    final_text: String,
    usage: Usage,
    cost: f64,
    /// The CLI's `result` event, when it came.
    result: Option<Value>,
}

impl CliSession<'_> {
    /// Run one session to its end, recording it in `transcript`; stop early (the CLI's
    /// process group is killed) once `stop` is cancelled.
    pub async fn run_until(
        &self,
        transcript: &mut Transcript,
        system: &str,
        prompt: &str,
        stop: &CancellationToken,
    ) -> Result<SessionResult, AgentError> {
        transcript.record(Event::SessionStart {
            session: transcript.number(),
            provider: PROVIDER.to_string(),
            model: self.model.clone(),
            project_dir: self.project_dir.display().to_string(),
            system: system.to_string(),
            tools: Vec::new(),
        })?;
        transcript.record(Event::User {
            content: vec![Block::Text {
                text: prompt.to_string(),
            }],
        })?;
        let mut p = Progress::default();
        let result = self.drive(transcript, system, prompt, stop, &mut p).await;
        // A turn still being assembled (the CLI was stopped) is recorded as it stood.
        let flushed = self.flush(transcript, &mut p);
        let result = result.and_then(|o| flushed.map(|()| o));
        let (outcome_name, error) = match &result {
            Ok(o) => (o.name(), None),
            Err(e) => ("error", Some(e.to_string())),
        };
        let (usage, cost) = match &p.result {
            Some(r) => (usage_of(&r["usage"]), r["total_cost_usd"].as_f64()),
            None => (p.usage, None),
        };
        let cost = cost.unwrap_or(p.cost);
        transcript.record(Event::SessionEnd {
            outcome: outcome_name.to_string(),
            turns: p.turns,
            usage,
            cost_usd: cost,
            final_text: p.final_text.clone(),
            error,
        })?;
        let outcome = result?;
        Ok(SessionResult {
            outcome,
            final_text: p.final_text,
            turns: p.turns,
            usage,
            cost_usd: cost,
            session: transcript.number(),
            transcript: transcript.path().to_path_buf(),
        })
    }

    /// Write the session's settings, start the CLI, follow its stream to the end.
    async fn drive(
        &self,
        transcript: &mut Transcript,
        system: &str,
        prompt: &str,
        stop: &CancellationToken,
        p: &mut Progress,
    ) -> Result<Outcome, AgentError> {
        let dir = self.project_dir.join(CLI_DIR);
        std::fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let n = transcript.number();
        let settings = dir.join(format!("{n:04}-settings.json"));
        let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": self.hook_command}
        ]}]}});
        std::fs::write(&settings, hooks.to_string()).map_err(io_err(&settings))?;
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.current_dir(&self.project_dir)
            .args(["-p", "--output-format", "stream-json", "--verbose"])
            .args(["--model", &self.model])
            .args(["--max-turns", &self.limits.max_turns.to_string()])
            .arg("--settings")
            .arg(&settings)
            // Only the user's settings besides baton's: the project's .claude/ files are
            // writable by the agent and could override the shell prefix (the sandbox)
            // or the hooks; likewise only baton's MCP servers, not a project .mcp.json.
            .args(["--setting-sources", "user", "--strict-mcp-config"])
            .args(["--append-system-prompt", system]);
        if let Some(mcp) = &self.mcp_config {
            let path = dir.join(format!("{n:04}-mcp.json"));
            std::fs::write(&path, mcp.to_string()).map_err(io_err(&path))?;
            cmd.arg("--mcp-config").arg(&path);
        }
        cmd.arg("--")
            .arg(prompt)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove(SHELL_PREFIX_VAR)
            .env_remove(SANDBOX_SPEC_VAR);
        if let Some(spec) = &self.command_sandbox {
            let prefix = format!("{} {SANDBOX_SHELL_FLAG}", self.baton_exe.display());
            cmd.env(SHELL_PREFIX_VAR, prefix)
                .env(SANDBOX_SPEC_VAR, spec);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| AgentError::Cli {
            program: self.program.display().to_string(),
            message: format!("cannot start it: {e}; is Claude Code installed (`baton doctor`)?"),
        })?;
        let owner = ProcessRegistry::new();
        if let Some(pid) = child.id() {
            owner.adopt(pid);
        }
        let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(self.cli_err("no output pipes".to_string()));
        };
        let errors = tokio::spawn(async move {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s).await;
            s
        });
        let mut lines = BufReader::new(stdout).lines();
        let deadline = self
            .limits
            .max_duration
            .map(|d| tokio::time::Instant::now() + d);
        let ended = loop {
            let next = tokio::select! {
                l = lines.next_line() => l,
                () = stop.cancelled() => break Some(Outcome::Interrupted),
                () = sleep_until(deadline) => break Some(Outcome::TimeLimit),
            };
            match next {
                Ok(Some(line)) => self.event(transcript, p, &line)?,
                Ok(None) => break None,
                Err(e) => return Err(self.cli_err(format!("reading its output: {e}"))),
            }
        };
        if ended.is_some() {
            owner.shutdown(Duration::from_secs(2)).await;
        }
        let status = child.wait().await;
        // The CLI's own children (commands it ran in the background) go with it.
        owner.shutdown(Duration::from_secs(2)).await;
        let stderr = errors.await.unwrap_or_default();
        if let Some(o) = ended {
            return Ok(o);
        }
        let Some(r) = &p.result else {
            let code = status.map_or_else(|e| e.to_string(), |s| s.to_string());
            return Err(self.cli_err(format!(
                "it ended ({code}) without a result: {}",
                tail(&stderr)
            )));
        };
        match r["subtype"].as_str().unwrap_or_default() {
            "success" if r["is_error"] != json!(true) => Ok(Outcome::Completed),
            "error_max_turns" => Ok(Outcome::MaxTurns),
            _ if usage_limited(r) => Err(AgentError::UsageLimit {
                program: self.program.display().to_string(),
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
                Err(self.cli_err(format!(
                    "the CLI reported an {kind}: {said} {}",
                    tail(&stderr)
                )))
            }
        }
    }

    fn cli_err(&self, message: String) -> AgentError {
        AgentError::Cli {
            program: self.program.display().to_string(),
            message: message.trim().to_string(),
        }
    }

    /// One line of the stream.
    fn event(
        &self,
        transcript: &mut Transcript,
        p: &mut Progress,
        line: &str,
    ) -> Result<(), AgentError> {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return Ok(()); // Not an event (the CLI may print other things).
        };
        // Subagents' messages are theirs, not this conversation's.
        if !v["parent_tool_use_id"].is_null() {
            return Ok(());
        }
        match v["type"].as_str().unwrap_or_default() {
            "assistant" => {
                let msg = &v["message"];
                let id = msg["id"].as_str().unwrap_or_default().to_string();
                if p.pending.as_ref().is_some_and(|(pid, _, _)| *pid != id) {
                    self.flush(transcript, p)?;
                }
                let blocks = msg["content"]
                    .as_array()
                    .map(|c| c.iter().filter_map(block_of).collect::<Vec<_>>())
                    .unwrap_or_default();
                let usage = usage_of(&msg["usage"]);
                match &mut p.pending {
                    Some((_, b, u)) => {
                        b.extend(blocks);
                        *u = usage;
                    }
                    None => p.pending = Some((id, blocks, usage)),
                }
            }
            "user" => {
                self.flush(transcript, p)?;
                let content = v["message"]["content"].as_array().cloned();
                for b in content.unwrap_or_default() {
                    if b["type"] != "tool_result" {
                        continue;
                    }
                    let id = b["tool_use_id"].as_str().unwrap_or_default().to_string();
                    let text = result_text(&b["content"]);
                    let is_error = b["is_error"] == json!(true);
                    let refused = is_error && text.contains(HOOK_REFUSAL);
                    let (name, took) = p
                        .calls
                        .remove(&id)
                        .map_or((String::new(), Duration::ZERO), |(n, t)| (n, t.elapsed()));
                    let out = ToolOutput {
                        content: text.clone(),
                        is_error,
                        images: Vec::new(),
                    };
                    self.observer.tool_end(&name, &out, refused, took);
                    transcript.record(Event::ToolResult {
                        turn: p.turns,
                        tool_use_id: id,
                        name,
                        content: text,
                        is_error,
                        refused,
                        duration_ms: took.as_millis() as u64,
                        evidence: Vec::new(),
                    })?;
                }
            }
            "result" => {
                self.flush(transcript, p)?;
                if let Some(t) = v["result"].as_str() {
                    p.final_text = t.to_string();
                }
                p.result = Some(v);
            }
            _ => {}
        }
        Ok(())
    }

    /// Record the assistant message being assembled as one turn.
    fn flush(&self, transcript: &mut Transcript, p: &mut Progress) -> Result<(), AgentError> {
        let Some((_, content, usage)) = p.pending.take() else {
            return Ok(());
        };
        p.turns += 1;
        let turn = p.turns;
        let cost = self.prices.cost(&self.model, &usage);
        p.usage.input_tokens += usage.input_tokens;
        p.usage.output_tokens += usage.output_tokens;
        p.usage.cache_read_tokens += usage.cache_read_tokens;
        p.usage.cache_write_tokens += usage.cache_write_tokens;
        p.cost += cost;
        transcript.record(Event::Request {
            turn,
            messages: turn as usize * 2 - 1,
        })?;
        let calls = crate::model::tool_calls_of(&content);
        let text = crate::model::text_of(&content);
        if !text.is_empty() {
            self.observer.assistant_text(&text, !calls.is_empty());
            p.final_text = text;
        }
        transcript.record(Event::Assistant {
            turn,
            content,
            stop_reason: if calls.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            },
            usage,
            cost_usd: cost,
        })?;
        self.observer.turn_end(turn, &usage, cost);
        for (id, name, input) in calls {
            self.observer.tool_start(&name, &input);
            p.calls.insert(id, (name, Instant::now()));
        }
        Ok(())
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The last few lines of the CLI's stderr, for an error message.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// Whether the CLI's `result` says a usage or rate limit stopped it: an API error
/// 429/529 (an API key's rate limit, overload), or a subscription's usage limit.
fn usage_limited(r: &Value) -> bool {
    if matches!(r["api_error_status"].as_u64(), Some(429 | 529)) {
        return true;
    }
    let said = r["result"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase();
    [
        "usage limit",
        "hit your limit",
        "rate limit",
        "request rejected (429)",
    ]
    .iter()
    .any(|k| said.contains(k))
}

/// When a usage limit resets, from the CLI's words: `Claude AI usage limit
/// reached|1767225600` (Unix seconds). Other wordings ("resets 3pm") name a local
/// time without a date and are not trusted.
fn reset_of(said: &str) -> Option<Duration> {
    let (_, unix) = said.rsplit_once('|')?;
    let unix: u64 = unix.trim().parse().ok()?;
    let at = std::time::UNIX_EPOCH.checked_add(Duration::from_secs(unix))?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

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

/// A tool result's content (a string, or text blocks) as text.
fn result_text(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
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
        let later = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 600;
        let d = reset_of(&format!("Claude AI usage limit reached|{later}")).unwrap();
        assert!(
            d > Duration::from_secs(590) && d <= Duration::from_secs(600),
            "{d:?}"
        );
        assert_eq!(reset_of("You've hit your limit · resets 3pm"), None);
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
