//! The agent loop: send the conversation, run every tool call of the turn in order,
//! answer each `tool_use` with its `tool_result`, repeat until the model ends its
//! turn or a limit is reached. Everything is recorded as it happens.
//!
//! This file holds the session's public types (limits, outcome, result, errors, the
//! observer), starting and ending a session, and sending a request; the loop of
//! turns is in `turn`, keeping within the context window in `window`, and running
//! tool calls in `tools`.

mod tools;
pub(crate) use tools::keep_evidence;
mod turn;
mod window;

use std::path::PathBuf;
use std::time::Duration;

use baton_tools::{ToolGate, ToolOutput, Toolbox};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use baton_config::ContextMode;

use crate::client::{ModelClient, ModelError, RetryNotice};
use crate::context::{self, Ctx};
use crate::model::{Block, Message, ModelResponse, Request, Role, ToolDef, Usage};
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
    /// USD the session may spend (what is left of the run's budget); 0 = no
    /// limit. Checked after each turn: the turn that reaches it is the last.
    pub max_cost_usd: f64,
    /// Consecutive responses cut by `max_tokens` that are continued.
    pub max_continuations: u32,
    /// How the session keeps within the model's context window.
    pub context: ContextLimits,
}

/// How a session keeps within the model's context window.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextLimits {
    /// The window in tokens; 0 = the model's own (see [`crate::models`]).
    pub window: u64,
    /// Share of the window at which to act.
    pub threshold: f64,
    /// What to do then.
    pub mode: ContextMode,
    /// A tool result over this many tokens keeps its head and tail; the whole text
    /// goes to `.baton/outputs/`.
    pub result_max_tokens: u64,
    /// Turns the agent gets to wrap up after the handoff note.
    pub handoff_turns: u32,
    /// The handoff note; `None` = a generic one. The harness names its files here.
    pub handoff_note: Option<String>,
}

impl Default for ContextLimits {
    fn default() -> Self {
        Self::from_config(&baton_config::AgentConfig::default())
    }
}

impl ContextLimits {
    /// The context settings of `[agent]`.
    pub fn from_config(agent: &baton_config::AgentConfig) -> Self {
        Self {
            window: agent.context_window,
            threshold: agent.context_threshold,
            mode: agent.context,
            result_max_tokens: agent.tool_result_max_tokens,
            handoff_turns: agent.handoff_turns,
            handoff_note: None,
        }
    }
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
            context: ContextLimits::from_config(agent),
            max_cost_usd: 0.0,
        }
    }
}

/// How a session ended (other than by an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The model ended its turn.
    Completed,
    /// The context window filled up: the agent was told to wrap up (handoff), or even
    /// that no longer fitted.
    ContextFull,
    /// `max_turns` was reached.
    MaxTurns,
    /// The session's token limit was reached.
    TokenLimit,
    /// The session's wall-time limit was reached.
    TimeLimit,
    /// The run's budget was spent ([`Limits::max_cost_usd`]).
    BudgetLimit,
    /// The session was cancelled (Ctrl-C).
    Interrupted,
}

impl Outcome {
    /// The name used in transcripts: the record's name for the same outcome.
    pub fn name(self) -> &'static str {
        baton_records::SessionOutcome::from(self).name()
    }
}

impl From<Outcome> for baton_records::SessionOutcome {
    fn from(o: Outcome) -> Self {
        match o {
            Outcome::Completed => Self::Completed,
            Outcome::ContextFull => Self::ContextFull,
            Outcome::MaxTurns => Self::MaxTurns,
            Outcome::TokenLimit => Self::TokenLimit,
            Outcome::TimeLimit => Self::TimeLimit,
            Outcome::BudgetLimit => Self::BudgetLimit,
            Outcome::Interrupted => Self::Interrupted,
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
    /// The agent CLI hit its provider's usage limit (a subscription's 5-hour or weekly
    /// window, an organisation's rate limit): the session ended; the run can wait.
    #[error("{program}: usage limit reached: {message}")]
    UsageLimit {
        /// The CLI program.
        program: String,
        /// What the CLI said.
        message: String,
        /// When the limit resets, from the end of the session, where the CLI said.
        reset_in: Option<Duration>,
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
    /// The provider's quota is exhausted; the session waits (`notice.delay`) for it.
    fn wait(&self, _turn: u32, _notice: &RetryNotice) {}
    /// The context window is nearly full and baton acted: `handoff` or `compact`
    /// (`tokens_after` is the estimate after a compaction, else equal to `tokens`).
    fn context(&self, _action: ContextMode, _tokens: u64, _tokens_after: u64, _window: u64) {}
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
        let window = match self.limits.context.window {
            0 => crate::models::info(&cfg.model).context_window,
            w => w,
        };
        let base_chars = system.len()
            + tools
                .iter()
                .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
                .sum::<usize>();
        let mut ctx = Ctx::new(window, self.limits.context.threshold, base_chars);
        let messages = vec![first];
        ctx.recount_from(&messages, 0);
        let mut st = State {
            messages,
            prompt: prompt.to_string(),
            turns: 0,
            usage: Usage::default(),
            cost: 0.0,
            final_text: String::new(),
            ctx,
            outputs: context::Outputs::new(&self.tools.context().project_dir, transcript.number()),
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

    /// Run the turns with one token that abandons a model request when either the
    /// tools' context is cancelled or `stop` is.
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

    /// Send `req`, recording retries and quota waits in the transcript as they
    /// begin. `None` when the session's time ran out first.
    async fn send(
        &self,
        transcript: &mut Transcript,
        turn: u32,
        req: &Request<'_>,
        cancel: &CancellationToken,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Option<Result<ModelResponse, ModelError>>, AgentError> {
        let mut failed: Option<TranscriptError> = None;
        let sent = {
            let observer = self.observer;
            let mut on_retry = |n: &RetryNotice| {
                let event = if n.long_wait {
                    observer.wait(turn, n);
                    Event::Wait {
                        turn,
                        error: n.error.clone(),
                        until_ms: crate::transcript::now_ms() + n.delay.as_millis() as u64,
                    }
                } else {
                    observer.retry(turn, n);
                    Event::Retry {
                        turn,
                        attempt: n.attempt,
                        max_attempts: n.max_attempts,
                        error: n.error.clone(),
                        delay_ms: n.delay.as_millis() as u64,
                    }
                };
                if let Err(e) = transcript.record(event) {
                    failed.get_or_insert(e);
                }
            };
            let send = self.client.send(req, cancel, &mut on_retry);
            match deadline {
                Some(d) => tokio::select! {
                    r = send => Some(r),
                    () = tokio::time::sleep_until(d) => None,
                },
                None => Some(send.await),
            }
        };
        match failed {
            Some(e) => Err(e.into()),
            None => Ok(sent),
        }
    }

    /// Add a message to the conversation and count its size.
    fn push(&self, st: &mut State, m: Message) {
        st.messages.push(m);
        let n = st.messages.len() - 1;
        st.ctx.recount_from(&st.messages, n);
    }

    /// Add a user note: to the last message when it is the user's (tool results),
    /// else as a message of its own. Recorded as a `user` event.
    fn note(
        &self,
        transcript: &mut Transcript,
        st: &mut State,
        text: &str,
    ) -> Result<(), AgentError> {
        let block = Block::Text {
            text: text.to_string(),
        };
        transcript.record(Event::User {
            content: vec![block.clone()],
        })?;
        match st.messages.last_mut() {
            Some(m) if m.role == Role::User => m.content.push(block),
            _ => st.messages.push(Message {
                role: Role::User,
                content: vec![block],
            }),
        }
        let n = st.messages.len() - 1;
        st.ctx.recount_from(&st.messages, n);
        Ok(())
    }
}

/// Where a session stands: its conversation and what it has used so far.
struct State {
    /// The conversation sent with each request.
    messages: Vec<Message>,
    /// The session's first prompt, kept through compactions.
    prompt: String,
    /// Turns taken.
    turns: u32,
    /// Tokens used.
    usage: Usage,
    /// Cost in USD.
    cost: f64,
    /// The model's last text.
    final_text: String,
    /// The conversation's size against the context window.
    ctx: Ctx,
    /// Where whole tool results taken out of the conversation are saved.
    outputs: context::Outputs,
}
