//! The agent loop: send the conversation, run every tool call of the turn in order,
//! answer each `tool_use` with its `tool_result`, repeat until the model ends its
//! turn or a limit is reached. Everything is recorded as it happens.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton_tools::{GateDecision, ToolGate, ToolOutput, Toolbox};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::client::{ModelClient, ModelError, RetryNotice};
use crate::model::{Block, ImageData, Message, Request, Role, StopReason, ToolDef, Usage};
use crate::pricing::PriceTable;
use crate::transcript::{Event, Transcript, TranscriptError};

/// When a session must stop even if the model has not finished.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Model turns.
    pub max_turns: u32,
    /// Tokens of every kind in all; 0 = no limit.
    pub max_tokens: u64,
    /// Wall-clock time; `None` = no limit.
    pub max_duration: Option<Duration>,
    /// Consecutive responses cut by `max_tokens` that are continued.
    pub max_continuations: u32,
}

impl Limits {
    /// The limits `[agent]` in `baton.toml` sets, with `max_turns` given by the caller
    /// (a flag, the verifier's own setting, or `agent.max_turns`).
    pub fn from_config(agent: &baton_config::AgentConfig, max_turns: u32) -> Self {
        Self {
            max_turns: max_turns.max(1),
            max_tokens: agent.max_session_tokens,
            max_duration: (agent.max_session_minutes > 0.0)
                .then(|| Duration::from_secs_f64(agent.max_session_minutes * 60.0)),
            max_continuations: agent.max_continuations,
        }
    }
}

/// How a session ended (other than by an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The model ended its turn.
    Completed,
    /// `max_turns` was reached.
    MaxTurns,
    /// The session's token limit was reached.
    TokenLimit,
    /// The session's wall-time limit was reached.
    TimeLimit,
    /// The session was cancelled (Ctrl-C).
    Interrupted,
}

impl Outcome {
    /// The name used in transcripts.
    pub fn name(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::MaxTurns => "max_turns",
            Self::TokenLimit => "token_limit",
            Self::TimeLimit => "time_limit",
            Self::Interrupted => "interrupted",
        }
    }
}

/// What a finished session produced.
#[derive(Debug, Clone)]
pub struct SessionResult {
    /// How it ended.
    pub outcome: Outcome,
    /// The model's last text.
    pub final_text: String,
    /// Turns taken.
    pub turns: u32,
    /// Tokens used.
    pub usage: Usage,
    /// Cost in USD.
    pub cost_usd: f64,
    /// Session number.
    pub session: u32,
    /// Transcript file.
    pub transcript: PathBuf,
}

/// A session that could not go on.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model could not be reached or kept failing.
    #[error("turn {turn}: {source}")]
    Model {
        /// Turn that failed.
        turn: u32,
        /// Why.
        source: ModelError,
    },
    /// The model kept hitting its output limit.
    #[error(
        "turn {turn}: the model's response was cut off by max_tokens {count} times in a row; raise agent.max_output_tokens in baton.toml"
    )]
    Truncated {
        /// Turn that failed.
        turn: u32,
        /// Consecutive cut responses.
        count: u32,
    },
    /// The agent CLI driven as the session backend failed (could not start, ended
    /// without a result, or reported an error: auth, rate limits, API failures).
    #[error("{program}: {message}")]
    Cli {
        /// The CLI program.
        program: String,
        /// What went wrong, with what the CLI said.
        message: String,
    },
    /// The transcript could not be written.
    #[error("transcript: {0}")]
    Transcript(#[from] TranscriptError),
}

/// Told what happens, for the live view. Every method has an empty default.
pub trait Observer: Send + Sync {
    /// A transient failure will be retried.
    fn retry(&self, _turn: u32, _notice: &RetryNotice) {}
    /// The model said something; `more_to_come` is true when tool calls follow.
    fn assistant_text(&self, _text: &str, _more_to_come: bool) {}
    /// A tool call is starting.
    fn tool_start(&self, _name: &str, _input: &Value) {}
    /// A tool call ended.
    fn tool_end(&self, _name: &str, _output: &ToolOutput, _refused: bool, _took: Duration) {}
    /// A model turn was answered: its tokens and cost (this turn's, not the session's).
    fn turn_end(&self, _turn: u32, _usage: &Usage, _cost_usd: f64) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Quiet;
impl Observer for Quiet {}

/// One agent session's collaborators.
pub struct Session<'a> {
    /// The model.
    pub client: &'a ModelClient,
    /// The tools.
    pub tools: &'a Toolbox,
    /// Consulted before every tool call.
    pub gate: &'a dyn ToolGate,
    /// Told what happens.
    pub observer: &'a dyn Observer,
    /// Prices for cost.
    pub prices: &'a PriceTable,
    /// Limits.
    pub limits: Limits,
}

const CONTINUE_NOTE: &str = "Your last response was cut off by the output token limit. Continue exactly where you left off.";

impl Session<'_> {
    /// Run one session to its end, recording it in `transcript`. Cancelling the
    /// tools' context token interrupts it: running commands are killed, calls not
    /// yet run are answered as not run, and the transcript is closed.
    pub async fn run(
        &self,
        transcript: &mut Transcript,
        system: &str,
        prompt: &str,
    ) -> Result<SessionResult, AgentError> {
        self.run_until(transcript, system, prompt, &CancellationToken::new())
            .await
    }

    /// Like [`Session::run`], and also stop cleanly once `stop` is cancelled: the tool
    /// call running then finishes, calls not yet run are answered as not run, a model
    /// request in flight is abandoned (nothing of it is kept), and the outcome is
    /// [`Outcome::Interrupted`].
    pub async fn run_until(
        &self,
        transcript: &mut Transcript,
        system: &str,
        prompt: &str,
        stop: &CancellationToken,
    ) -> Result<SessionResult, AgentError> {
        let cfg = self.client.config();
        let specs = self.tools.specs();
        let tools: Vec<ToolDef> = specs
            .iter()
            .map(|s| ToolDef {
                name: s.name.clone(),
                description: s.description.clone(),
                input_schema: s.input_schema.clone(),
            })
            .collect();
        transcript.record(Event::SessionStart {
            session: transcript.number(),
            provider: cfg.provider.name().to_string(),
            model: cfg.model.clone(),
            project_dir: self.tools.context().project_dir.display().to_string(),
            system: system.to_string(),
            tools: tools.iter().map(|t| t.name.clone()).collect(),
        })?;
        let first = Message::user_text(prompt);
        transcript.record(Event::User {
            content: first.content.clone(),
        })?;
        let mut st = State {
            messages: vec![first],
            turns: 0,
            usage: Usage::default(),
            cost: 0.0,
            final_text: String::new(),
        };
        let result = self
            .run_loop(transcript, system, &tools, &mut st, stop)
            .await;
        let (outcome_name, error) = match &result {
            Ok(o) => (o.name(), None),
            Err(e) => ("error", Some(e.to_string())),
        };
        transcript.record(Event::SessionEnd {
            outcome: outcome_name.to_string(),
            turns: st.turns,
            usage: st.usage,
            cost_usd: st.cost,
            final_text: st.final_text.clone(),
            error,
        })?;
        let outcome = result?;
        Ok(SessionResult {
            outcome,
            final_text: st.final_text,
            turns: st.turns,
            usage: st.usage,
            cost_usd: st.cost,
            session: transcript.number(),
            transcript: transcript.path().to_path_buf(),
        })
    }

    async fn run_loop(
        &self,
        transcript: &mut Transcript,
        system: &str,
        tools: &[ToolDef],
        st: &mut State,
        stop: &CancellationToken,
    ) -> Result<Outcome, AgentError> {
        let hard = self.tools.context().cancel.clone();
        // Either token abandons a model request; only `hard` kills running tools.
        let cancel = CancellationToken::new();
        let either = {
            let (cancel, hard, stop) = (cancel.clone(), hard.clone(), stop.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = hard.cancelled() => {}
                    () = stop.cancelled() => {}
                }
                cancel.cancel();
            })
        };
        let result = self
            .turns(transcript, system, tools, st, &cancel, stop)
            .await;
        either.abort();
        result
    }

    async fn turns(
        &self,
        transcript: &mut Transcript,
        system: &str,
        tools: &[ToolDef],
        st: &mut State,
        cancel: &CancellationToken,
        stop: &CancellationToken,
    ) -> Result<Outcome, AgentError> {
        // The derived `cancel` fires from a task; check the sources too, so nothing
        // starts after a stop even before that task has run.
        let hard = &self.tools.context().cancel;
        let stopped = || cancel.is_cancelled() || hard.is_cancelled() || stop.is_cancelled();
        let started = Instant::now();
        let deadline = self
            .limits
            .max_duration
            .map(|d| tokio::time::Instant::now() + d);
        let mut continuations = 0u32;
        loop {
            if stopped() {
                return Ok(Outcome::Interrupted);
            }
            if st.turns >= self.limits.max_turns {
                return Ok(Outcome::MaxTurns);
            }
            if self.limits.max_tokens > 0 && st.usage.total() >= self.limits.max_tokens {
                return Ok(Outcome::TokenLimit);
            }
            if self
                .limits
                .max_duration
                .is_some_and(|d| started.elapsed() >= d)
            {
                return Ok(Outcome::TimeLimit);
            }
            st.turns += 1;
            let turn = st.turns;
            transcript.record(Event::Request {
                turn,
                messages: st.messages.len(),
            })?;
            let req = Request {
                system,
                tools,
                messages: &st.messages,
            };
            let mut retries = Vec::new();
            let sent = {
                let mut on_retry = |n: &RetryNotice| {
                    self.observer.retry(turn, n);
                    retries.push(n.clone());
                };
                let send = self.client.send(&req, cancel, &mut on_retry);
                match deadline {
                    Some(d) => tokio::select! {
                        r = send => Some(r),
                        () = tokio::time::sleep_until(d) => None,
                    },
                    None => Some(send.await),
                }
            };
            for n in retries {
                transcript.record(Event::Retry {
                    turn,
                    attempt: n.attempt,
                    max_attempts: n.max_attempts,
                    error: n.error,
                    delay_ms: n.delay.as_millis() as u64,
                })?;
            }
            let resp = match sent {
                None => return Ok(Outcome::TimeLimit),
                Some(Err(ModelError::Cancelled)) => return Ok(Outcome::Interrupted),
                Some(Err(source)) => return Err(AgentError::Model { turn, source }),
                Some(Ok(r)) => r,
            };
            let cost = self.prices.cost(&self.client.config().model, &resp.usage);
            st.usage.add(&resp.usage);
            st.cost += cost;
            let mut content = resp.content.clone();
            if content.is_empty() {
                content.push(Block::Text {
                    text: "(empty response)".into(),
                });
            }
            transcript.record(Event::Assistant {
                turn,
                content: content.clone(),
                stop_reason: resp.stop_reason.clone(),
                usage: resp.usage,
                cost_usd: cost,
            })?;
            self.observer.turn_end(turn, &resp.usage, cost);
            let text = resp.text();
            if !text.trim().is_empty() {
                self.observer.assistant_text(
                    &text,
                    resp.content
                        .iter()
                        .any(|b| matches!(b, Block::ToolUse { .. })),
                );
                st.final_text = text;
            }
            st.messages.push(Message {
                role: Role::Assistant,
                content,
            });
            let calls: Vec<(String, String, Value)> = resp
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::ToolUse { id, name, input } => {
                        Some((id.clone(), name.clone(), input.clone()))
                    }
                    _ => None,
                })
                .collect();
            if !calls.is_empty() {
                continuations = 0;
                let results = self
                    .run_tools(transcript, turn, &calls, &resp.invalid_inputs, &stopped)
                    .await?;
                st.messages.push(Message {
                    role: Role::User,
                    content: results,
                });
                continue;
            }
            match resp.stop_reason {
                StopReason::MaxTokens | StopReason::PauseTurn => {
                    continuations += 1;
                    if resp.stop_reason == StopReason::MaxTokens
                        && continuations > self.limits.max_continuations
                    {
                        return Err(AgentError::Truncated {
                            turn,
                            count: continuations,
                        });
                    }
                    let note = Message::user_text(CONTINUE_NOTE);
                    transcript.record(Event::User {
                        content: note.content.clone(),
                    })?;
                    st.messages.push(note);
                }
                StopReason::EndTurn
                | StopReason::ToolUse
                | StopReason::StopSequence
                | StopReason::Refusal
                | StopReason::Other(_) => return Ok(Outcome::Completed),
            }
        }
    }

    async fn run_tools(
        &self,
        transcript: &mut Transcript,
        turn: u32,
        calls: &[(String, String, Value)],
        invalid: &[(String, String)],
        stopped: &(dyn Fn() -> bool + Sync),
    ) -> Result<Vec<Block>, AgentError> {
        let mut results = Vec::with_capacity(calls.len());
        for (id, name, input) in calls {
            let t0 = Instant::now();
            self.observer.tool_start(name, input);
            let mut refused = false;
            let out = if stopped() {
                ToolOutput::error("Not run: the session was interrupted.")
            } else if let Some((_, why)) = invalid.iter().find(|(i, _)| i == id) {
                ToolOutput::error(format!("Invalid input for {name}: {why}"))
            } else {
                match self.gate.check(name, input) {
                    GateDecision::Allow => self.tools.call(name, input).await,
                    GateDecision::Refuse(reason) => {
                        refused = true;
                        ToolOutput::error(format!("Refused by baton's policy: {reason}"))
                    }
                }
            };
            let took = t0.elapsed();
            self.observer.tool_end(name, &out, refused, took);
            let evidence = keep_evidence(
                &self.tools.context().project_dir,
                transcript.number(),
                turn,
                results.len(),
                name,
                input,
                &out,
            );
            transcript.record(Event::ToolResult {
                turn,
                tool_use_id: id.clone(),
                name: name.clone(),
                content: out.content.clone(),
                is_error: out.is_error,
                refused,
                duration_ms: took.as_millis() as u64,
                evidence,
            })?;
            results.push(Block::ToolResult {
                tool_use_id: id.clone(),
                content: out.content,
                is_error: out.is_error,
                images: out
                    .images
                    .into_iter()
                    .map(|i| ImageData {
                        media_type: i.media_type,
                        data: i.data,
                    })
                    .collect(),
            });
        }
        Ok(results)
    }
}

struct State {
    messages: Vec<Message>,
    turns: u32,
    usage: Usage,
    cost: f64,
    final_text: String,
}

/// Keep what a verifying tool call showed: every image (a screenshot) and, for tools
/// from MCP servers (the browser), the call and its text, under
/// `.baton/evidence/<session>/`. Returns the files written, relative to the project.
fn keep_evidence(
    project: &std::path::Path,
    session: u32,
    turn: u32,
    index: usize,
    name: &str,
    input: &Value,
    out: &ToolOutput,
) -> Vec<String> {
    use base64::Engine as _;
    if out.images.is_empty() && !name.starts_with("mcp__") {
        return Vec::new();
    }
    let rel_dir = format!(".baton/evidence/{session:04}");
    let dir = project.join(&rel_dir);
    if std::fs::create_dir_all(&dir).is_err() {
        return Vec::new();
    }
    let stem = format!("t{turn:03}-{index}-{}", name.replace("__", "-"));
    let mut files = Vec::new();
    let text = format!(
        "tool: {name}\ninput: {input}\nerror: {}\n\n{}\n",
        out.is_error, out.content
    );
    if std::fs::write(dir.join(format!("{stem}.txt")), text).is_ok() {
        files.push(format!("{rel_dir}/{stem}.txt"));
    }
    for (k, img) in out.images.iter().enumerate() {
        let ext = match img.media_type.as_str() {
            "image/jpeg" => "jpg",
            "image/gif" => "gif",
            "image/webp" => "webp",
            _ => "png",
        };
        if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(img.data.as_bytes()) {
            let file = format!("{stem}-{k}.{ext}");
            if std::fs::write(dir.join(&file), bytes).is_ok() {
                files.push(format!("{rel_dir}/{file}"));
            }
        }
    }
    files
}
