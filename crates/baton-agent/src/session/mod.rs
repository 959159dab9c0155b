//! The agent loop: send the conversation, run every tool call of the turn in order,
//! answer each `tool_use` with its `tool_result`, repeat until the model ends its
//! turn or a limit is reached. Everything is recorded as it happens.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use baton_tools::{GateDecision, ToolGate, ToolOutput, Toolbox};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use baton_config::ContextMode;

use crate::client::{ModelClient, ModelError, RetryNotice};
use crate::context::{self, Ctx};
use crate::model::{
    Block, ImageData, Message, ModelResponse, Request, Role, StopReason, ToolDef, Usage,
};
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

/// Told to the model after a response cut by the output limit (or paused).
const CONTINUE_NOTE: &str = "Your last response was cut off by the output token limit. Continue exactly where you left off.";

/// The answer to a tool call the output limit cut off.
const CUT_CALL: &str = "this call was cut off by the output token limit before its input was complete, so it was NOT run. Make it again in smaller pieces: write a large file in parts (Write the first part, then add the rest with Edit or further calls), or shorten the command.";

/// The generic handoff note; `{turns}` is the wrap-up turns left.
const HANDOFF_NOTE: &str = "baton: your context window is nearly full. Wrap up now, in at most {turns} more turns: commit the work that works, leave everything you did not verify as it is, write down for the next session what you did, what is verified, what is not and what to do next, then stop. Start nothing new.";

/// Asks the model for the summary that replaces the conversation.
const COMPACT_NOTE: &str = "baton: the context window is nearly full, so this conversation will be replaced by your summary of it. Write that summary now, as plain text, without calling any tool. Include: the task and the feature you are working on; the files you created or changed and why; decisions made; what you verified and how, and what is not verified yet; errors you met and how you solved them; running processes (ports, pids, logs); and the exact next steps.";

/// Between the first prompt and the summary in a compacted conversation.
const SUMMARY_HEADER: &str = "\n\n---\nbaton compacted this session's conversation to keep it within the context window. Your own summary of the work so far:\n\n";

/// Most output tokens a summary may take.
const SUMMARY_MAX_TOKENS: u32 = 8_192;

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

    /// The session's turns, until the model ends its turn or a limit ends the
    /// session: before each turn the limits are checked and the conversation kept
    /// within the context window; then the request is sent, the response recorded,
    /// and its tool calls run and answered (or, without calls, its stop reason
    /// decides what follows).
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
        let frame = Frame {
            system,
            tools,
            cancel,
            stopped: &stopped,
            started,
            deadline: self
                .limits
                .max_duration
                .map(|d| tokio::time::Instant::now() + d),
        };
        let mut carry = Carry::default();
        loop {
            if let Some(outcome) = self.limit_reached(st, &frame) {
                return Ok(outcome);
            }
            let refused = carry.refused.take();
            if let Some(outcome) = self
                .keep_within_window(transcript, st, &frame, refused)
                .await?
            {
                return Ok(outcome);
            }
            self.warn_turns(transcript, st, &mut carry.turns_warned)?;
            let turn = self.begin_turn(transcript, st)?;
            let chars = st.ctx.total_chars();
            let resp = match self.request(transcript, st, &frame, turn, chars).await? {
                Sent::Answer(r) => r,
                Sent::End(outcome) => return Ok(outcome),
                Sent::TooLong(why) => {
                    carry.refused = Some(why);
                    continue;
                }
            };
            self.record_response(transcript, st, turn, chars, &resp)?;
            let calls = crate::model::tool_calls_of(&resp.content);
            if !calls.is_empty() {
                carry.continuations =
                    self.calls_continued(turn, &resp.stop_reason, carry.continuations)?;
                let bounds = Bounds {
                    stopped: frame.stopped,
                    deadline: frame.deadline,
                };
                let invalid = invalid_calls(&resp);
                let results = self
                    .run_tools(transcript, st, turn, &calls, &invalid, bounds)
                    .await?;
                self.push(
                    st,
                    Message {
                        role: Role::User,
                        content: results,
                    },
                );
                continue;
            }
            if let Some(outcome) = self.after_stop(
                transcript,
                st,
                turn,
                &resp.stop_reason,
                &mut carry.continuations,
            )? {
                return Ok(outcome);
            }
        }
    }

    /// The limit that ends the session before its next turn, if one is reached,
    /// checked in this order: a stop, the wrap-up turns used up, turns, tokens, time.
    fn limit_reached(&self, st: &State, frame: &Frame<'_>) -> Option<Outcome> {
        if (frame.stopped)() {
            return Some(Outcome::Interrupted);
        }
        if st.ctx.handoff_left == Some(0) {
            return Some(Outcome::ContextFull);
        }
        if st.turns >= self.limits.max_turns {
            return Some(Outcome::MaxTurns);
        }
        if self.limits.max_tokens > 0 && st.usage.total() >= self.limits.max_tokens {
            return Some(Outcome::TokenLimit);
        }
        if self
            .limits
            .max_duration
            .is_some_and(|d| frame.started.elapsed() >= d)
        {
            return Some(Outcome::TimeLimit);
        }
        None
    }

    /// Keep within the context window before sending: act at the threshold (or when
    /// the server said the last request was too long, `refused` saying why) by
    /// compacting or handing off; then, if the next request still does not fit, make
    /// room. `Some(ContextFull)` when no room can be made.
    async fn keep_within_window(
        &self,
        transcript: &mut Transcript,
        st: &mut State,
        frame: &Frame<'_>,
        refused: Option<String>,
    ) -> Result<Option<Outcome>, AgentError> {
        if st.ctx.handoff_left.is_none() && (refused.is_some() || st.ctx.over_threshold()) {
            let why = refused.unwrap_or_else(|| {
                format!(
                    "about {} of {} tokens used (threshold {:.0} %)",
                    st.ctx.estimate(),
                    st.ctx.window,
                    st.ctx.threshold * 100.0
                )
            });
            let compacted = match self.limits.context.mode {
                ContextMode::Compact => self.compact(transcript, st, frame, &why).await?,
                ContextMode::Handoff => false,
            };
            if !compacted {
                self.handoff(transcript, st, &why)?;
            }
        }
        // Already wrapping up and still too long: make room, or end.
        if !st.ctx.fits() && !self.make_room(st) {
            return Ok(Some(Outcome::ContextFull));
        }
        Ok(None)
    }

    /// At 80 % of the turn budget, tell the agent so, once (`warned` remembers).
    fn warn_turns(
        &self,
        transcript: &mut Transcript,
        st: &mut State,
        warned: &mut bool,
    ) -> Result<(), AgentError> {
        let max = self.limits.max_turns;
        if !*warned && max >= 10 && st.turns * 5 >= max * 4 && st.ctx.handoff_left.is_none() {
            *warned = true;
            let note = format!(
                "baton: {} of your {max} turns are used. Finish what you are on: verify it, write your notes and commit; start nothing big.",
                st.turns
            );
            self.note(transcript, st, &note)?;
        }
        Ok(())
    }

    /// Start the next turn: count it, count down the wrap-up turns left, and record
    /// the request about to be sent. Returns the turn's number.
    fn begin_turn(&self, transcript: &mut Transcript, st: &mut State) -> Result<u32, AgentError> {
        st.turns += 1;
        let turn = st.turns;
        if let Some(left) = st.ctx.handoff_left.as_mut() {
            *left = left.saturating_sub(1);
        }
        transcript.record(Event::Request {
            turn,
            messages: st.messages.len(),
        })?;
        Ok(turn)
    }

    /// Send the conversation (`chars` long) as this turn's request. A server that
    /// refuses it as too long is never fatal the first three times: what it said of
    /// the real size is learnt and the next turn hands off or compacts.
    async fn request(
        &self,
        transcript: &mut Transcript,
        st: &mut State,
        frame: &Frame<'_>,
        turn: u32,
        chars: usize,
    ) -> Result<Sent, AgentError> {
        let req = Request {
            system: frame.system,
            tools: frame.tools,
            messages: &st.messages,
            max_tokens: st.ctx.max_tokens(self.client.config().max_output_tokens),
        };
        let sent = self
            .send(transcript, turn, &req, frame.cancel, frame.deadline)
            .await?;
        Ok(match sent {
            None => Sent::End(Outcome::TimeLimit),
            Some(Err(ModelError::Cancelled)) => Sent::End(Outcome::Interrupted),
            Some(Err(source)) => match source.context_overflow() {
                // Never fatal: learn the real size, then hand off or compact.
                Some(o) if st.ctx.overflows < 3 => {
                    let learnt = st.ctx.learn(&o, chars);
                    let mut why = format!("the server refused the request as too long ({source})");
                    if !learnt.is_empty() {
                        why.push_str(&format!("; {learnt}"));
                    }
                    Sent::TooLong(why)
                }
                Some(_) => Sent::End(Outcome::ContextFull),
                None => return Err(AgentError::Model { turn, source }),
            },
            Some(Ok(r)) => Sent::Answer(r),
        })
    }

    /// Record the model's response to a request `chars` long: its usage and cost,
    /// the tokens it shows the request took, the `assistant` event, the live view,
    /// its text as the session's last, and the response added to the conversation
    /// (an empty one as "(empty response)").
    fn record_response(
        &self,
        transcript: &mut Transcript,
        st: &mut State,
        turn: u32,
        chars: usize,
        resp: &ModelResponse,
    ) -> Result<(), AgentError> {
        let cost = self.prices.cost(&self.client.config().model, &resp.usage);
        st.usage.add(&resp.usage);
        st.cost += cost;
        let u = &resp.usage;
        st.ctx.observe(
            chars,
            u.input_tokens + u.cache_read_tokens + u.cache_write_tokens,
        );
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
        self.push(
            st,
            Message {
                role: Role::Assistant,
                content,
            },
        );
        Ok(())
    }

    /// The count of responses continued in a row, after one with tool calls: one
    /// cut by the output limit adds to it, any other starts it again. Over
    /// `max_continuations` ends the session with [`AgentError::Truncated`].
    fn calls_continued(
        &self,
        turn: u32,
        stop_reason: &StopReason,
        continuations: u32,
    ) -> Result<u32, AgentError> {
        let continuations = if *stop_reason == StopReason::MaxTokens {
            continuations + 1
        } else {
            0
        };
        if continuations > self.limits.max_continuations {
            return Err(AgentError::Truncated {
                turn,
                count: continuations,
            });
        }
        Ok(continuations)
    }

    /// What follows a response without tool calls, by its stop reason: cut by the
    /// output limit or paused, the agent is told to continue (too many cuts in a row
    /// end the session with [`AgentError::Truncated`]); anything else ends the
    /// session, [`Outcome::ContextFull`] when it was wrapping up.
    fn after_stop(
        &self,
        transcript: &mut Transcript,
        st: &mut State,
        turn: u32,
        stop_reason: &StopReason,
        continuations: &mut u32,
    ) -> Result<Option<Outcome>, AgentError> {
        match stop_reason {
            StopReason::MaxTokens | StopReason::PauseTurn => {
                *continuations += 1;
                if *stop_reason == StopReason::MaxTokens
                    && *continuations > self.limits.max_continuations
                {
                    return Err(AgentError::Truncated {
                        turn,
                        count: *continuations,
                    });
                }
                let note = Message::user_text(CONTINUE_NOTE);
                transcript.record(Event::User {
                    content: note.content.clone(),
                })?;
                self.push(st, note);
                Ok(None)
            }
            StopReason::EndTurn
            | StopReason::ToolUse
            | StopReason::StopSequence
            | StopReason::Refusal
            | StopReason::Other(_) => Ok(Some(if st.ctx.handoff_left.is_some() {
                Outcome::ContextFull
            } else {
                Outcome::Completed
            })),
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

    /// Tell the agent to wrap up: commit, write notes, stop, in a few turns.
    fn handoff(
        &self,
        transcript: &mut Transcript,
        st: &mut State,
        why: &str,
    ) -> Result<(), AgentError> {
        let turns = self.limits.context.handoff_turns.max(1);
        let tokens = st.ctx.estimate();
        transcript.record(Event::Handoff {
            turn: st.turns,
            tokens,
            window: st.ctx.window,
            reason: why.to_string(),
        })?;
        self.observer
            .context(ContextMode::Handoff, tokens, tokens, st.ctx.window);
        let note = self
            .limits
            .context
            .handoff_note
            .as_deref()
            .unwrap_or(HANDOFF_NOTE)
            .replace("{turns}", &turns.to_string());
        self.note(transcript, st, &note)?;
        st.ctx.handoff_left = Some(turns);
        // The wrap-up itself must fit.
        if !st.ctx.fits() {
            self.make_room(st);
        }
        Ok(())
    }

    /// Take the largest tool results out (each saved whole) until the next request
    /// fits. False when it cannot be made to fit.
    fn make_room(&self, st: &mut State) -> bool {
        let target = ((st.ctx.window as f64) * st.ctx.threshold * 0.9) as u64;
        let need = st
            .ctx
            .chars_over(target.min(st.ctx.window - st.ctx.reserve()));
        if need > 0 {
            let (_, first) =
                context::take_out_results(&mut st.messages, need, &st.outputs, st.turns);
            if let Some(i) = first {
                st.ctx.recount_from(&st.messages, i);
            }
        }
        st.ctx.fits()
    }

    /// Replace the conversation by the model's summary of it. False when no summary
    /// could be had (the caller hands off instead).
    async fn compact(
        &self,
        transcript: &mut Transcript,
        st: &mut State,
        frame: &Frame<'_>,
        why: &str,
    ) -> Result<bool, AgentError> {
        let before = st.ctx.estimate();
        let mut messages = st.messages.clone();
        let note = Block::Text {
            text: COMPACT_NOTE.to_string(),
        };
        match messages.last_mut() {
            Some(m) if m.role == Role::User => m.content.push(note),
            _ => messages.push(Message {
                role: Role::User,
                content: vec![note],
            }),
        }
        // The summarising request must fit too: take old results out of it first.
        let room = st
            .ctx
            .window
            .saturating_sub(u64::from(SUMMARY_MAX_TOKENS) + st.ctx.reserve());
        if st.ctx.estimate() + 200 > room {
            let need = st.ctx.chars_over(room.saturating_sub(200));
            context::take_out_results(&mut messages, need, &st.outputs, st.turns);
        }
        let req = Request {
            system: frame.system,
            tools: frame.tools,
            messages: &messages,
            max_tokens: Some(SUMMARY_MAX_TOKENS.min(self.client.config().max_output_tokens)),
        };
        let resp = match self
            .send(transcript, st.turns, &req, frame.cancel, frame.deadline)
            .await?
        {
            Some(Ok(r)) => r,
            Some(Err(ModelError::Cancelled)) | None => return Ok(false),
            Some(Err(e)) if e.context_overflow().is_some() => return Ok(false),
            Some(Err(source)) => {
                return Err(AgentError::Model {
                    turn: st.turns,
                    source,
                });
            }
        };
        let cost = self.prices.cost(&self.client.config().model, &resp.usage);
        st.usage.add(&resp.usage);
        st.cost += cost;
        let summary = resp.text();
        if summary.trim().is_empty() {
            return Ok(false);
        }
        st.messages = vec![Message::user_text(format!(
            "{}{SUMMARY_HEADER}{}",
            st.prompt,
            summary.trim()
        ))];
        st.ctx.reset(&st.messages);
        let after = st.ctx.estimate();
        transcript.record(Event::Compaction {
            turn: st.turns,
            tokens_before: before,
            tokens_after: after,
            reason: why.to_string(),
            summary: summary.trim().to_string(),
            usage: resp.usage,
            cost_usd: cost,
        })?;
        self.observer.turn_end(st.turns, &resp.usage, cost);
        self.observer
            .context(ContextMode::Compact, before, after, st.ctx.window);
        // A summary that leaves the conversation still near the threshold would
        // compact again at once: hand off instead.
        Ok(!st.ctx.over_threshold())
    }

    /// Run a response's tool calls in order, each through the gate and within the
    /// session's bounds, and answer each with its `tool_result` (capped to the
    /// result budget), recording each as it ends. Calls in `invalid` are answered
    /// with why and never run.
    async fn run_tools(
        &self,
        transcript: &mut Transcript,
        st: &State,
        turn: u32,
        calls: &[(String, String, Value)],
        invalid: &[(String, String)],
        bounds: Bounds<'_>,
    ) -> Result<Vec<Block>, AgentError> {
        let Bounds { stopped, deadline } = bounds;
        let mut results = Vec::with_capacity(calls.len());
        let past = || deadline.is_some_and(|d| tokio::time::Instant::now() >= d);
        for (id, name, input) in calls {
            let t0 = Instant::now();
            self.observer.tool_start(name, input);
            let mut refused = false;
            let mut out = if stopped() {
                ToolOutput::error("Not run: the session was interrupted.")
            } else if past() {
                ToolOutput::error("Not run: the session's time limit was reached.")
            } else if let Some((_, why)) = invalid.iter().find(|(i, _)| i == id) {
                ToolOutput::error(format!("Invalid input for {name}: {why}"))
            } else {
                match self.gate.check(name, input) {
                    // The session's time limit bounds a call too: a command still
                    // running then is stopped (its process group killed).
                    GateDecision::Allow => match deadline {
                        Some(d) => tokio::select! {
                            out = self.tools.call(name, input) => out,
                            () = tokio::time::sleep_until(d) => ToolOutput::error(
                                "Stopped: the session's time limit was reached while this call ran.",
                            ),
                        },
                        None => self.tools.call(name, input).await,
                    },
                    GateDecision::Refuse(reason) => {
                        refused = true;
                        ToolOutput::error(format!("Refused by baton's policy: {reason}"))
                    }
                }
            };
            let took = t0.elapsed();
            // One result must not fill the window: keep head and tail, save the whole.
            let budget = self.limits.context.result_max_tokens;
            if context::over_budget(&out.content, budget) {
                let saved = st.outputs.save(turn, results.len(), name, &out.content);
                if let Some(capped) = context::cap(&out.content, budget, saved.as_deref()) {
                    out.content = capped;
                }
            }
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

/// What every turn of a session's loop shares: the fixed parts of its requests and
/// what ends the session early.
struct Frame<'a> {
    /// The system prompt.
    system: &'a str,
    /// The tools offered to the model.
    tools: &'a [ToolDef],
    /// Abandons a model request in flight (a stop, or the tools' context cancelled).
    cancel: &'a CancellationToken,
    /// True once the session is to stop.
    stopped: &'a (dyn Fn() -> bool + Sync),
    /// When the turns began, for the time limit.
    started: Instant,
    /// When the session's time is up, if it has a limit.
    deadline: Option<tokio::time::Instant>,
}

/// What the loop of turns carries from one turn to the next.
#[derive(Default)]
struct Carry {
    /// Responses continued in a row (cut by the output limit, or paused).
    continuations: u32,
    /// Why the server refused the last request as too long, for the next turn.
    refused: Option<String>,
    /// Whether the agent was told that most of its turns are used.
    turns_warned: bool,
}

/// What became of a turn's request.
enum Sent {
    /// The model answered.
    Answer(ModelResponse),
    /// The session ends with this outcome.
    End(Outcome),
    /// The server refused the request as too long, for the reason given: the next
    /// turn makes room first.
    TooLong(String),
}

/// The tool calls of `resp` that must not run, with why: those whose input did not
/// parse, and a call the output limit cut off, whose input may be incomplete even
/// where it parses.
fn invalid_calls(resp: &ModelResponse) -> Vec<(String, String)> {
    let mut invalid = resp.invalid_inputs.clone();
    if resp.stop_reason == StopReason::MaxTokens
        && let Some(Block::ToolUse { id, .. }) = resp.content.last()
    {
        invalid.retain(|(i, _)| i != id);
        invalid.push((id.clone(), CUT_CALL.to_string()));
    }
    invalid
}

/// What ends a batch of tool calls early: a stop, and the session's time limit.
struct Bounds<'a> {
    /// True once the session is to stop.
    stopped: &'a (dyn Fn() -> bool + Sync),
    /// When the session's time is up, if it has a limit.
    deadline: Option<tokio::time::Instant>,
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
    let rel_dir = baton_records::layout::evidence(session);
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
