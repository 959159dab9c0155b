//! The event stream of `baton run --json` (a documented contract, see
//! `docs/report.md`): one line per event, `{"t_ms", "type", …fields}`, the types and
//! fields spelled once, here.

use baton_agent::model::Usage;
use baton_records::SessionOutcome;
use serde::Serialize;

/// One event of the stream (its `type` in snake case).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunEvent<'a> {
    /// The run starts: where the project stands.
    RunStart {
        project: &'a str,
        passing: usize,
        total: usize,
        sessions: usize,
        cost_usd: f64,
        budget_usd: Option<f64>,
    },
    /// The run ends: why, with which exit code, and where the project stands.
    RunEnd {
        outcome: &'a str,
        exit_code: u8,
        reason: String,
        passing: usize,
        total: usize,
        sessions: usize,
        cost_usd: f64,
        budget_usd: Option<f64>,
        budget_left_usd: Option<f64>,
    },
    /// A line of the harness for people.
    Message { text: &'a str },
    /// A session starts.
    SessionStart { session: u32, kind: &'a str },
    /// A session ended and was recorded.
    SessionEnd {
        session: u32,
        kind: &'a str,
        outcome: SessionOutcome,
        duration_secs: f64,
        turns: u32,
        tokens: u64,
        usage: &'a Usage,
        cost_usd: f64,
        verifier_cost_usd: f64,
        commits: usize,
        passing: usize,
        total: usize,
        /// The agent of a parallel run.
        #[serde(skip_serializing_if = "Option::is_none")]
        agent: Option<u32>,
        /// How its branch went into the main branch, in a parallel run.
        #[serde(skip_serializing_if = "Option::is_none")]
        integration: Option<baton_records::IntegrationOutcome>,
    },
    /// What the gates found after a session.
    Gates {
        session: u32,
        flipped: &'a [usize],
        unflipped: &'a [usize],
        violations: &'a [String],
        restore_commit: Option<&'a str>,
        leftover_files: &'a [String],
        leftover_commit: Option<&'a str>,
        notes_updated: bool,
        refusals: u32,
    },
    /// A quota wall: waiting until it resets.
    Waiting {
        session: Option<u32>,
        turn: u32,
        error: &'a str,
        delay_ms: u64,
        until_ms: u64,
    },
    /// The context window: a handoff or a compaction.
    Context {
        session: Option<u32>,
        action: &'a str,
        tokens: u64,
        tokens_after: u64,
        window: u64,
    },
    /// A failed request, retried.
    Retry {
        session: Option<u32>,
        turn: u32,
        attempt: u32,
        max_attempts: u32,
        error: &'a str,
        delay_ms: u64,
    },
    /// The model's text.
    AssistantText {
        session: Option<u32>,
        text: &'a str,
        more_to_come: bool,
    },
    /// A tool call starts.
    ToolStart {
        session: Option<u32>,
        name: &'a str,
        summary: String,
    },
    /// A tool call ended.
    ToolEnd {
        session: Option<u32>,
        name: &'a str,
        is_error: bool,
        refused: bool,
        duration_ms: u64,
        last_line: String,
    },
    /// A model turn ended.
    TurnEnd {
        session: Option<u32>,
        turn: u32,
        usage: &'a Usage,
        cost_usd: f64,
    },
}

/// One line of the stream: the time, then the event.
#[derive(Debug, Serialize)]
pub struct Line<'a> {
    /// Unix ms.
    pub t_ms: u64,
    /// The event.
    #[serde(flatten)]
    pub event: &'a RunEvent<'a>,
}
