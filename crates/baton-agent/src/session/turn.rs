//! The loop of a session's turns: before each turn the limits are checked and the
//! conversation kept within the context window; then the request is sent, the
//! response recorded, and its tool calls run (or its stop reason followed).

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::{AgentError, ContextMode, Outcome, Session, State, tools::Bounds};
use crate::client::ModelError;
use crate::model::{Block, Message, ModelResponse, Request, Role, StopReason, ToolDef};
use crate::transcript::{Event, Transcript};

/// Told to the model after a response cut by the output limit (or paused).
const CONTINUE_NOTE: &str = "Your last response was cut off by the output token limit. Continue exactly where you left off.";

/// The answer to a tool call the output limit cut off.
const CUT_CALL: &str = "this call was cut off by the output token limit before its input was complete, so it was NOT run. Make it again in smaller pieces: write a large file in parts (Write the first part, then add the rest with Edit or further calls), or shorten the command.";

impl Session<'_> {
    /// The session's turns, until the model ends its turn or a limit ends the
    /// session: before each turn the limits are checked and the conversation kept
    /// within the context window; then the request is sent, the response recorded,
    /// and its tool calls run and answered (or, without calls, its stop reason
    /// decides what follows).
    pub(super) async fn turns(
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
        let cache_key = cache_key(&self.tools.context().project_dir);
        let frame = Frame {
            system,
            tools,
            cache_key: &cache_key,
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
    /// checked in this order: a stop, the wrap-up turns used up, turns, tokens,
    /// money, time.
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
        if self.limits.max_cost_usd > 0.0 && st.cost >= self.limits.max_cost_usd {
            return Some(Outcome::BudgetLimit);
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
            cache_key: Some(frame.cache_key),
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
}

/// What every turn of a session's loop shares: the fixed parts of its requests and
/// what ends the session early.
pub(super) struct Frame<'a> {
    /// The system prompt.
    pub(super) system: &'a str,
    /// The tools offered to the model.
    pub(super) tools: &'a [ToolDef],
    /// The project's prompt-cache key.
    pub(super) cache_key: &'a str,
    /// Abandons a model request in flight (a stop, or the tools' context cancelled).
    pub(super) cancel: &'a CancellationToken,
    /// True once the session is to stop.
    pub(super) stopped: &'a (dyn Fn() -> bool + Sync),
    /// When the turns began, for the time limit.
    pub(super) started: Instant,
    /// When the session's time is up, if it has a limit.
    pub(super) deadline: Option<tokio::time::Instant>,
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

/// The prompt-cache key of the project in `dir`: `baton-` and a stable hash
/// (FNV-1a) of its path, the same for every session of the project and the same
/// from one baton version to the next.
pub(crate) fn cache_key(dir: &std::path::Path) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in dir.as_os_str().as_encoded_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("baton-{h:016x}")
}
