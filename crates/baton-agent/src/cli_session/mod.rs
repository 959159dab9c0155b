//! A session run by an installed agent CLI instead of baton's own loop, recorded as
//! baton's transcript. What every CLI shares lives here: starting it in its own
//! process group, following its JSON event stream (and its stderr) line by line,
//! the turn and wall-time limits, stopping it and the commands it started, and
//! recording turns and tool results. Each CLI is one module implementing
//! [`AgentCli`] (how to start it, what its lines mean, how it ended: [`claude`],
//! [`codex`]) and one [`CliKind`] with its [`CliProfile`]; `docs/cli-backends.md`
//! says what a third one needs.
//!
//! baton's rules reach inside a CLI through its `PreToolUse` hook (both CLIs speak
//! the same hook JSON): the hook's command line is `baton hook pre-tool-use …`,
//! judging by a copy of `baton.toml` frozen when the run started.

pub mod claude;
pub mod codex;
mod profile;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_tools::{ProcessRegistry, ToolOutput};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio_util::sync::CancellationToken;

use crate::key_proxy;
use crate::model::{Block, StopReason, Usage};
use crate::pricing::PriceTable;
use crate::session::{AgentError, Limits, Observer, Outcome, SessionResult};
use crate::transcript::{Event, Transcript, TranscriptError};

pub use claude::ClaudeCode;
pub use claude::{
    COMMAND_PATH_VAR, LAUNCHER_LOG, PROVIDER, SANDBOX_SHELL_FLAG, SANDBOX_SHELL_NAME,
    SANDBOX_SPEC_VAR, SHELL_PREFIX_VAR,
};
pub use codex::Codex;
pub use profile::{CliKind, CliProfile, OWN_TOOL_WORDS, ToolWords};

/// One agent CLI: how a session of it starts, what the lines of its stream mean
/// and how it ended. What every CLI shares (its process, the limits, stopping it,
/// the transcript) is [`CliSession`]'s; a third CLI is one module implementing
/// this and one [`CliKind`] (`docs/cli-backends.md`).
pub trait AgentCli: std::fmt::Debug + Send + Sync {
    /// Which CLI (its [`CliProfile`]: provider name, program, keys, whether it
    /// runs inside the sandbox).
    fn kind(&self) -> CliKind;

    /// Whether baton counts its turns and stops it past `max_turns`, for a CLI
    /// with no turn limit of its own.
    fn counts_turns(&self) -> bool;

    /// The same CLI for sessions whose `HOME` is `home` (the verifier's fresh
    /// one), where it keeps what it keeps of a session's.
    fn in_home(&self, home: &Path) -> Arc<dyn AgentCli>;

    /// How to start a session (`opening`): its command (told the hook, the model,
    /// the MCP servers and the sandbox), its input, and its grant of the key proxy
    /// when it reaches the model through baton's.
    fn start(&self, s: &CliSession<'_>, opening: &Opening<'_>) -> Result<Start, AgentError>;

    /// One event of its JSON stream, recorded through `r`.
    fn event(&self, r: &mut Recorder<'_, '_>, v: Value) -> Result<(), AgentError>;

    /// One line of its stderr (where a CLI may say which calls its hook refused).
    fn stderr_line(&self, _r: &mut Recorder<'_, '_>, _line: &str) -> Result<(), AgentError> {
        Ok(())
    }

    /// How the session ended, when nothing cut it short and it gave its last
    /// event (`last`, the one `event` kept as the result); `stderr` is the end of
    /// its stderr.
    fn outcome(
        &self,
        s: &CliSession<'_>,
        last: &Value,
        stderr: &str,
    ) -> Result<Outcome, AgentError>;

    /// What a session that ended without its last event did not do ("a result"),
    /// for the error that says so.
    fn missing_end(&self) -> &'static str;

    /// The provider name in config and transcripts.
    fn provider(&self) -> &'static str {
        self.kind().profile().provider
    }
}

/// The CLI a backend drives.
pub type Cli = Arc<dyn AgentCli>;

/// What a session opens with: its number, its system prompt and its prompt.
pub struct Opening<'a> {
    /// The session's number.
    pub n: u32,
    /// The system prompt.
    pub system: &'a str,
    /// The first user message.
    pub prompt: &'a str,
}

/// Where a session's stream is recorded as it comes: the session, its transcript
/// and what the stream has shown so far. A CLI's lines become turns and tool
/// results through it.
pub struct Recorder<'r, 'a> {
    /// The session.
    pub s: &'r CliSession<'a>,
    transcript: &'r mut Transcript,
    p: Progress,
}

/// One session through an agent CLI.
pub struct CliSession<'a> {
    /// Which CLI.
    pub cli: Cli,
    /// The CLI's program.
    pub program: PathBuf,
    /// The project directory (canonical); the CLI runs there.
    pub project_dir: PathBuf,
    /// Model name passed to the CLI.
    pub model: String,
    /// Limits: `max_turns` and `max_duration` are enforced; the token limit only
    /// for Codex, whose requests go through baton's key proxy (Claude Code reports
    /// tokens only as it goes).
    pub limits: Limits,
    /// The shell command the `PreToolUse` hook runs (baton's own judgement).
    pub hook_command: String,
    /// `{"mcpServers": {...}}`, when MCP servers are configured.
    pub mcp_config: Option<Value>,
    /// Environment for the CLI besides baton's own (e.g. the API key baton holds).
    pub env: Vec<(String, String)>,
    /// The baton executable whose `--sandbox-shell` confines the CLI's commands.
    pub baton_exe: PathBuf,
    /// The sandbox spec (JSON, for `BATON_SANDBOX`) when the CLI's commands run
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
    /// Which CLI.
    pub cli: Cli,
    /// The CLI's program (a path, or a name looked up on `PATH`).
    pub program: PathBuf,
    /// Model name passed to the CLI.
    pub model: String,
    /// The baton executable the hook runs.
    pub baton_exe: PathBuf,
    /// Environment for the CLI besides baton's own (e.g. the API key baton holds).
    pub env: Vec<(String, String)>,
    /// `{"mcpServers": {...}}`, when MCP servers are configured.
    pub mcp_config: Option<Value>,
    /// The sandbox spec (JSON, for `BATON_SANDBOX`) when the CLI's commands run
    /// through baton's sandbox launcher (`[sandbox] enabled` and the kernel enforces it).
    pub command_sandbox: Option<String>,
    /// The copy of `baton.toml` taken when baton started, outside the project, which
    /// the hook judges by (`--config`); `None` lets the hook read the project's.
    pub hook_config: Option<PathBuf>,
    /// What must live as long as the backend (the sandbox's PID namespace, which the
    /// CLI's commands join).
    pub keep_alive: Vec<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
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
            cli: self.cli.clone(),
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

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> AgentError + '_ {
    move |source| {
        AgentError::Transcript(TranscriptError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// Whether `text` mentions any of `words` (lower case), in any case.
pub(super) fn mentions_any(text: &str, words: &[&str]) -> bool {
    let text = text.to_ascii_lowercase();
    words.iter().any(|w| text.contains(w))
}

/// The text of a tool result's content: a string, or its text blocks joined.
pub(super) fn result_text(c: &Value) -> String {
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

/// The images of a tool result's content blocks, in Anthropic's shape (`source`
/// with `media_type` and `data`) or MCP's (`data`, `mimeType`).
fn images_of(content: &Value) -> Vec<baton_tools::Image> {
    let Some(blocks) = content.as_array() else {
        return Vec::new();
    };
    blocks
        .iter()
        .filter(|b| b["type"] == "image")
        .filter_map(|b| {
            let data = b["source"]["data"]
                .as_str()
                .or_else(|| b["data"].as_str())?;
            let media = b["source"]["media_type"]
                .as_str()
                .or_else(|| b["mimeType"].as_str())
                .unwrap_or("image/png");
            Some(baton_tools::Image {
                media_type: media.to_string(),
                data: data.to_string(),
            })
        })
        .collect()
}

/// Quote `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What the stream has told so far.
#[derive(Default)]
pub struct Progress {
    turns: u32,
    /// The assistant message being assembled: (id, blocks, usage).
    pending: Option<(String, Vec<Block>, Usage)>,
    /// Tool calls by id, for naming results, timing them and keeping evidence:
    /// (name, started, input).
    calls: HashMap<String, (String, Instant, Value)>,
    final_text: String,
    usage: Usage,
    cost: f64,
    /// The CLI's final event (Claude Code's `result`, Codex's `turn.completed` or
    /// `turn.failed`), when it came.
    result: Option<Value>,
    /// Usage and cost the CLI reported for the whole session, when it did.
    totals: Option<(Usage, Option<f64>)>,
    /// Calls whose `PreToolUse` hook gave no answer, with why (Claude Code).
    no_verdict: HashMap<String, String>,
    /// Tool results recorded so far (names evidence files apart).
    results: usize,
}

/// How one CLI is started and read.
pub struct Start {
    cmd: tokio::process::Command,
    /// Written to the CLI's stdin, which is then closed.
    stdin: Option<String>,
    /// What to remove when the session ends (Codex's home for the session).
    scratch: Option<Scratch>,
    /// The session's grant of baton's key proxy, for a CLI that reaches the model
    /// through it: revoked when the session ends, and what it metered is the
    /// session's usage and cost.
    grant: Option<key_proxy::Grant>,
}

/// A directory of the session's own inside a tree the agent can write (Codex's
/// home, in the agent's private home): made and removed beneath the directory
/// above it, so a link planted on the way is refused, and one planted inside is
/// removed, never followed.
pub(crate) struct Scratch {
    root: baton_records::beneath::Beneath,
    rel: PathBuf,
}

impl Scratch {
    /// The scratch directory `dir`, beneath its grandparent (the private home).
    pub(crate) fn of(dir: &std::path::Path) -> Self {
        let parent = dir.parent().unwrap_or(dir);
        let root = parent.parent().unwrap_or(parent);
        let rel = dir.strip_prefix(root).unwrap_or(dir).to_path_buf();
        Self {
            root: baton_records::beneath::Beneath::new(root),
            rel,
        }
    }

    /// Make it; a link planted where it (or the directory above it) goes is
    /// taken away first.
    pub(crate) fn create(&self) -> std::io::Result<()> {
        match self.root.create_dir_all(&self.rel) {
            Err(e) if baton_records::beneath::is_link_refusal(&e) => {
                if let Some(first) = self.rel.components().next() {
                    self.root.remove_all(first.as_os_str())?;
                }
                self.root.create_dir_all(&self.rel)
            }
            done => done,
        }
    }

    pub(crate) fn remove(&self) -> std::io::Result<()> {
        self.root.remove_all(&self.rel)
    }
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
            provider: self.cli.provider().to_string(),
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
        let opening = Opening {
            n: transcript.number(),
            system,
            prompt,
        };
        let mut r = Recorder {
            s: self,
            transcript,
            p: Progress::default(),
        };
        let result = self.drive(&mut r, &opening, stop).await;
        // A turn still being assembled (the CLI was stopped) is recorded as it stood.
        let flushed = r.flush();
        let result = result.and_then(|o| flushed.map(|()| o));
        let Recorder { transcript, p, .. } = r;
        let (outcome_name, error) = match &result {
            Ok(o) => (o.name(), None),
            Err(e) => ("error", Some(e.to_string())),
        };
        let (usage, cost) = match &p.totals {
            Some((u, c)) => (*u, c.unwrap_or(p.cost)),
            None => (p.usage, p.cost),
        };
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

    /// Start the CLI, follow its stream to the end, and say how it ended.
    async fn drive(
        &self,
        r: &mut Recorder<'_, '_>,
        opening: &Opening<'_>,
        stop: &CancellationToken,
    ) -> Result<Outcome, AgentError> {
        let mut start = self.cli.start(self, opening)?;
        let grant = start.grant.take();
        let scratch = start.scratch.take();
        let ended = self.follow(start, r, stop).await;
        if let Some(dir) = scratch {
            let _ = dir.remove();
        }
        // What the provider said the session's token spent, whoever spent it.
        if let Some(metered) = grant.as_ref().and_then(|g| self.metered(g)) {
            r.p.totals = Some(metered);
        }
        let (ended, status, stderr) = ended?;
        if let Some(o) = ended {
            return Ok(o);
        }
        // The proxy refused the session's requests past its token limit.
        if grant.as_ref().is_some_and(key_proxy::Grant::spent) {
            return Ok(Outcome::TokenLimit);
        }
        let Some(last) = &r.p.result else {
            return Err(self.cli_err(format!(
                "it ended ({status}) without {}: {}",
                self.cli.missing_end(),
                tail(&stderr)
            )));
        };
        self.cli.outcome(self, last, &stderr)
    }

    /// Spawn the CLI and read its stdout (events) and stderr (lines) until it ends,
    /// `stop` is cancelled, the wall time or the turns run out. Returns how it was
    /// cut short (if it was), its exit status (as text) and its stderr.
    async fn follow(
        &self,
        start: Start,
        r: &mut Recorder<'_, '_>,
        stop: &CancellationToken,
    ) -> Result<(Option<Outcome>, String, String), AgentError> {
        let Start { mut cmd, stdin, .. } = start;
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| AgentError::Cli {
            program: self.program.display().to_string(),
            message: format!(
                "cannot start it: {e}; is {} installed (`baton doctor`)?",
                self.cli.provider()
            ),
        })?;
        let owner = ProcessRegistry::new();
        if let Some(pid) = child.id() {
            owner.adopt(pid);
        }
        if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
            // Written off the reading path: a CLI that reads its input late must not
            // stall the stream.
            tokio::spawn(async move {
                let _ = pipe.write_all(text.as_bytes()).await;
                let _ = pipe.shutdown().await;
            });
        }
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(self.cli_err("no output pipes".to_string()));
        };
        let mut lines = BufReader::new(stdout).lines();
        let mut errs = BufReader::new(stderr).lines();
        let mut err_text = String::new();
        let mut err_open = true;
        let deadline = self
            .limits
            .max_duration
            .map(|d| tokio::time::Instant::now() + d);
        let ended = loop {
            if r.p.turns > self.limits.max_turns && self.cli.counts_turns() {
                break Some(Outcome::MaxTurns);
            }
            if self.limits.max_cost_usd > 0.0 && r.p.cost >= self.limits.max_cost_usd {
                break Some(Outcome::BudgetLimit);
            }
            tokio::select! {
                l = lines.next_line() => match l {
                    Ok(Some(line)) => r.line(&line)?,
                    Ok(None) => break None,
                    Err(e) => return Err(self.cli_err(format!("reading its output: {e}"))),
                },
                l = errs.next_line(), if err_open => match l {
                    Ok(Some(line)) => {
                        self.cli.stderr_line(r, &line)?;
                        keep_tail(&mut err_text, &line);
                    }
                    _ => err_open = false,
                },
                () = stop.cancelled() => break Some(Outcome::Interrupted),
                () = sleep_until(deadline) => break Some(Outcome::TimeLimit),
            }
        };
        if ended.is_some() {
            owner.shutdown(Duration::from_secs(2)).await;
        }
        // What the CLI still says on stderr after its stream ended (its last words),
        // for 2 s at most in all: a background child holding the pipe may write on.
        let last_words = tokio::time::Instant::now() + Duration::from_secs(2);
        while err_open {
            match tokio::time::timeout_at(last_words, errs.next_line()).await {
                Ok(Ok(Some(line))) => {
                    self.cli.stderr_line(r, &line)?;
                    keep_tail(&mut err_text, &line);
                }
                _ => err_open = false,
            }
        }
        let status = child.wait().await;
        // The CLI's own children (commands it ran in the background) go with it.
        owner.shutdown(Duration::from_secs(2)).await;
        let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
        Ok((ended, status, err_text))
    }

    /// The session's usage and cost as the key proxy saw the provider report them
    /// for its grant; `None` when no answer reported any (the CLI's own count stands).
    fn metered(&self, grant: &key_proxy::Grant) -> Option<(Usage, Option<f64>)> {
        let m = grant.metered();
        if m.by_model.is_empty() {
            return None;
        }
        let cost = m
            .by_model
            .iter()
            .map(|(model, u)| {
                // An answer that named no model, or one without a price, is priced
                // as the session's model.
                let priced = self.prices.lookup(model).is_some();
                self.prices
                    .cost(if priced { model } else { &self.model }, u)
            })
            .sum();
        Some((m.total(), Some(cost)))
    }

    fn cli_err(&self, message: String) -> AgentError {
        AgentError::Cli {
            program: self.program.display().to_string(),
            message: message.trim().to_string(),
        }
    }
}

impl Recorder<'_, '_> {
    /// One line of the CLI's event stream.
    fn line(&mut self, line: &str) -> Result<(), AgentError> {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            return Ok(()); // Not an event (the CLI may print other things).
        };
        let cli = self.s.cli.clone();
        cli.event(self, v)
    }

    /// Record a tool call's result (text only).
    fn tool_result(
        &mut self,
        id: String,
        text: String,
        is_error: bool,
        refused: bool,
    ) -> Result<(), AgentError> {
        let out = ToolOutput {
            content: text,
            is_error,
            images: Vec::new(),
        };
        self.tool_output(id, out, refused)
    }

    /// Record a tool call's result; what a browser call showed (its text, its
    /// screenshots) is kept as evidence as in baton's own loop.
    fn tool_output(
        &mut self,
        id: String,
        out: ToolOutput,
        refused: bool,
    ) -> Result<(), AgentError> {
        let (name, took, input) = self
            .p
            .calls
            .remove(&id)
            .map_or((String::new(), Duration::ZERO, Value::Null), |(n, t, i)| {
                (n, t.elapsed(), i)
            });
        self.s.observer.tool_end(&name, &out, refused, took);
        let evidence = crate::session::keep_evidence(
            &self.s.project_dir,
            self.transcript.number(),
            self.p.turns,
            self.p.results,
            &name,
            &input,
            &out,
        );
        self.p.results += 1;
        self.transcript.record(Event::ToolResult {
            turn: self.p.turns,
            tool_use_id: id,
            name,
            content: out.content,
            is_error: out.is_error,
            refused,
            duration_ms: took.as_millis() as u64,
            evidence,
        })?;
        Ok(())
    }

    /// Record the assistant message being assembled as one turn.
    fn flush(&mut self) -> Result<(), AgentError> {
        let Some((_, content, usage)) = self.p.pending.take() else {
            return Ok(());
        };
        self.p.turns += 1;
        let turn = self.p.turns;
        let cost = self.s.prices.cost(&self.s.model, &usage);
        self.p.usage.input_tokens += usage.input_tokens;
        self.p.usage.output_tokens += usage.output_tokens;
        self.p.usage.cache_read_tokens += usage.cache_read_tokens;
        self.p.usage.cache_write_tokens += usage.cache_write_tokens;
        self.p.cost += cost;
        self.transcript.record(Event::Request {
            turn,
            messages: turn as usize * 2 - 1,
        })?;
        let calls = crate::model::tool_calls_of(&content);
        let text = crate::model::text_of(&content);
        if !text.is_empty() {
            self.s.observer.assistant_text(&text, !calls.is_empty());
            self.p.final_text = text;
        }
        self.transcript.record(Event::Assistant {
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
        self.s.observer.turn_end(turn, &usage, cost);
        for (id, name, input) in calls {
            self.s.observer.tool_start(&name, &input);
            self.p.calls.insert(id, (name, Instant::now(), input));
        }
        Ok(())
    }

    /// Record one whole assistant turn that makes one tool call.
    fn call(&mut self, id: String, name: String, input: Value) -> Result<(), AgentError> {
        self.turn(vec![Block::ToolUse { id, name, input }])
    }

    /// Record one whole assistant turn (`blocks`, without usage of its own).
    fn turn(&mut self, blocks: Vec<Block>) -> Result<(), AgentError> {
        self.flush()?;
        self.p.pending = Some((String::new(), blocks, Usage::default()));
        self.flush()
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The most of the CLI's stderr kept for its error message: the end, where it
/// says why it stopped.
const STDERR_KEPT: usize = 64 * 1024;

/// Append `line` to `text`, keeping only its last [`STDERR_KEPT`] bytes (whole
/// lines).
fn keep_tail(text: &mut String, line: &str) {
    text.push_str(line);
    text.push('\n');
    if text.len() > STDERR_KEPT {
        let over = text.len() - STDERR_KEPT;
        let cut = text[over..].find('\n').map_or(text.len(), |i| over + i + 1);
        text.drain(..cut);
    }
}

/// The last few lines of the CLI's stderr, for an error message.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// When a usage limit resets, from the words `…|<unix seconds>` some CLIs end
/// their message with. Other wordings ("resets 3pm") name a local time without a
/// date and are not trusted.
fn reset_of(said: &str) -> Option<Duration> {
    let (_, unix) = said.rsplit_once('|')?;
    let unix: u64 = unix.trim().parse().ok()?;
    let at = std::time::UNIX_EPOCH.checked_add(Duration::from_secs(unix))?;
    Some(
        at.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests;
