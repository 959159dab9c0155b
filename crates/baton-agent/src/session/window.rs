//! Keeping a session within the model's context window: the handoff note that tells
//! the agent to wrap up, taking the largest tool results out, and compaction (the
//! conversation replaced by the model's summary of it).

use super::{AgentError, ContextMode, Session, State, turn::Frame};
use crate::client::ModelError;
use crate::context;
use crate::model::{Block, Message, Request, Role};
use crate::transcript::{Event, Transcript};

/// The generic handoff note; `{turns}` is the wrap-up turns left.
const HANDOFF_NOTE: &str = "baton: your context window is nearly full. Wrap up now, in at most {turns} more turns: commit the work that works, leave everything you did not verify as it is, write down for the next session what you did, what is verified, what is not and what to do next, then stop. Start nothing new.";

/// Asks the model for the summary that replaces the conversation.
const COMPACT_NOTE: &str = "baton: the context window is nearly full, so this conversation will be replaced by your summary of it. Write that summary now, as plain text, without calling any tool. Include: the task and the feature you are working on; the files you created or changed and why; decisions made; what you verified and how, and what is not verified yet; errors you met and how you solved them; running processes (ports, pids, logs); and the exact next steps.";

/// Between the first prompt and the summary in a compacted conversation.
const SUMMARY_HEADER: &str = "\n\n---\nbaton compacted this session's conversation to keep it within the context window. Your own summary of the work so far:\n\n";

/// Most output tokens a summary may take.
const SUMMARY_MAX_TOKENS: u32 = 8_192;

impl Session<'_> {
    /// Tell the agent to wrap up: commit, write notes, stop, in a few turns.
    pub(super) fn handoff(
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
    pub(super) fn make_room(&self, st: &mut State) -> bool {
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
    pub(super) async fn compact(
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
            cache_key: Some(frame.cache_key),
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
}
