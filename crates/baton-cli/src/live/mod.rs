//! What a person (or a program) sees while baton works.
//!
//! - [`LiveView`]: one session (`baton exec`), one line per event on stderr.
//! - [`RunView`]: a whole `baton run`, in one of three [`Mode`]s: progress bars on
//!   a terminal (features passing, the current session with its elapsed time, turns,
//!   tokens and cost, the tool call in flight with a spinner, gate results and
//!   retries printed above as they land); plain lines (stderr not a terminal, or
//!   `--quiet`, which leaves out tool calls and the model's words); or JSON events on
//!   stdout, one per line (`--json`; schema in docs/report.md).
//!
//! The run view keeps the run's totals and hands every event to one [`Face`]
//! per mode: [`Lines`] here, the bars in `bars.rs`, the JSON events in `json.rs`.
//! A new way of showing a run is one more `Face`.

use std::sync::Mutex;
use std::time::Duration;

use baton_agent::client::RetryNotice;
use baton_agent::model::Usage;
use baton_agent::session::{ContextMode, Observer};
use baton_harness::run::{Reporter, RunEnd};
use baton_records::{SessionKind, SessionRecord};
use baton_tools::ToolOutput;
use indicatif::ProgressDrawTarget;
use serde_json::Value;

use crate::events::RunEvent;

mod bars;
mod face;
mod json;

use face::{ContextEvent, Current, Face, Lines, Sink, ToolEnd, Totals, quota_wait};
pub use face::{LiveView, Mode, Start, key_argument, one_line, usd};

/// What hears the run's events beside the view (the run's notifications to a
/// person implement it): each method is called once per event, after
/// the view has drawn it.
pub trait Listener: Send + Sync {
    /// A session was recorded; `spent` is the run's cost so far, of `budget`.
    fn session_end(&self, r: &SessionRecord, spent: f64, budget: Option<f64>);
    /// A quota is waited out (`session`, if one is running).
    fn waiting(&self, session: Option<u32>, n: &RetryNotice);
    /// The run ended with `outcome` and exit `code`; `figures` are the features
    /// passing, in all, and the run's cost.
    fn run_end(&self, outcome: &str, code: u8, reason: &str, figures: (usize, usize, f64));
}

/// The live view of `baton run`: an [`Observer`] of each session and the run's
/// [`Reporter`], showing both through the [`Face`] of its [`Mode`].
pub struct RunView {
    totals: Mutex<Totals>,
    face: Box<dyn Face>,
    /// What else hears the run's events (`[notify]`'s notices, where set).
    listeners: Vec<Box<dyn Listener>>,
}

impl RunView {
    /// A view in `mode`; bars draw to `target` (stderr in use, hidden in tests) and
    /// JSON events go to `sink` (stdout in use).
    pub fn new(mode: Mode, start: &Start, target: ProgressDrawTarget, sink: Sink) -> Self {
        let face: Box<dyn Face> = match mode {
            Mode::Bars => Box::new(bars::Bars::new(target, start)),
            Mode::Lines { quiet } => Box::new(Lines { quiet }),
            Mode::Json => Box::new(json::Json::new(sink)),
        };
        let view = Self {
            totals: Mutex::new(Totals {
                passing: start.passing,
                total: start.total,
                sessions: start.sessions,
                spent: start.spent_usd,
                current: None,
                budget: start.budget_usd,
            }),
            face,
            listeners: Vec::new(),
        };
        view.refresh();
        view.face.event(RunEvent::RunStart {
            project: &start.project,
            passing: start.passing,
            total: start.total,
            sessions: start.sessions,
            cost_usd: start.spent_usd,
            budget_usd: start.budget_usd,
        });
        view
    }

    /// Tell `listener` the run's events too.
    pub fn with_listener(mut self, listener: impl Listener + 'static) -> Self {
        self.listeners.push(Box::new(listener));
        self
    }

    fn totals(&self) -> std::sync::MutexGuard<'_, Totals> {
        self.totals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Ctrl-C was pressed: say so, and say no session follows.
    pub fn stopping(&self) {
        self.println("\nbaton: stopping after the current tool call (Ctrl-C again to stop now)");
        self.face.stopping();
    }

    /// A line for people (above the bars, or on stderr); nothing in JSON mode.
    pub fn println(&self, line: &str) {
        self.face.println(line);
    }

    fn refresh(&self) {
        self.face.refresh(&self.totals());
    }

    /// The run ended: clear the bars, send `run_end`.
    pub fn finish(&self, end: Result<&RunEnd, &str>) {
        let (outcome, code, reason) = match end {
            Ok(RunEnd::Complete) => ("complete", 0, "every feature passes".to_string()),
            Ok(RunEnd::CompleteExceptBlocked(b)) => (
                "complete_except_blocked",
                4,
                format!(
                    "every feature passes except blocked {}",
                    baton_records::human::features(b)
                ),
            ),
            Ok(RunEnd::Limit(l)) => ("limit", 2, l.clone()),
            Ok(RunEnd::Stalled(n)) => (
                "stalled",
                3,
                format!("{n} coding sessions in a row without a newly passing feature"),
            ),
            Ok(RunEnd::Interrupted) => ("interrupted", 130, "interrupted".to_string()),
            Err(e) => ("error", 1, e.to_string()),
        };
        self.finish_with(outcome, code, reason);
    }

    /// Clear the bars and emit the `run_end` event with `outcome`, `code` and
    /// `reason` (also for commands that are not a run: `planned` for `baton plan`).
    pub fn finish_with(&self, outcome: &'static str, code: u8, reason: String) {
        self.face.finish();
        let t = self.totals();
        let spent = t.spent_now();
        let (passing, total, sessions, budget) = (t.passing, t.total, t.sessions, t.budget);
        drop(t);
        for l in &self.listeners {
            l.run_end(outcome, code, &reason, (passing, total, spent));
        }
        self.face.event(RunEvent::RunEnd {
            outcome,
            exit_code: code,
            reason,
            passing,
            total,
            sessions,
            cost_usd: spent,
            budget_usd: budget,
            budget_left_usd: budget.map(|b| (b - spent).max(0.0)),
        });
    }

    fn session_number(&self) -> Option<u32> {
        self.totals().current.as_ref().map(|c| c.number)
    }
}

impl Reporter for RunView {
    fn agent_status(&self, agent: u32, status: &str) {
        self.face.agent_status(agent, status);
    }

    fn agent_waits(&self, agent: u32, n: &RetryNotice) {
        self.face
            .message(&format!("[agent {agent}] ⏸ {}", quota_wait(n)));
        for l in &self.listeners {
            l.waiting(None, n);
        }
    }

    fn line(&self, text: &str) {
        self.face.message(text);
    }

    fn session_start(&self, number: u32, kind: SessionKind) {
        self.totals().current = Some(Current {
            number,
            kind,
            turns: 0,
            tokens: 0,
            cost: 0.0,
        });
        self.face.session_start();
        self.refresh();
        self.face.event(RunEvent::SessionStart {
            session: number,
            kind: kind.name(),
        });
    }

    fn session_end(&self, r: &SessionRecord, passing: usize, total: usize) {
        {
            let mut t = self.totals();
            t.passing = passing;
            t.total = total;
            t.sessions += 1;
            t.spent += r.cost_usd + r.verifier_cost_usd;
            t.current = None;
        }
        self.face.session_end();
        self.refresh();
        if !self.listeners.is_empty() {
            let t = self.totals();
            let (spent, budget) = (t.spent_now(), t.budget);
            drop(t);
            for l in &self.listeners {
                l.session_end(r, spent, budget);
            }
        }
        let g = &r.gates;
        self.face.event(RunEvent::SessionEnd {
            session: r.number,
            kind: r.kind.name(),
            outcome: r.outcome,
            duration_secs: r.ended_ms.saturating_sub(r.started_ms) as f64 / 1000.0,
            turns: r.turns,
            tokens: r.usage.total(),
            usage: &r.usage,
            cost_usd: r.cost_usd,
            verifier_cost_usd: r.verifier_cost_usd,
            commits: r.commits,
            passing,
            total,
            agent: r.agent,
            integration: r.integration.as_ref().map(|i| i.outcome),
        });
        self.face.event(RunEvent::Gates {
            session: r.number,
            flipped: &g.flipped,
            unflipped: &g.unflipped,
            violations: &g.violations,
            restore_commit: g.restore_commit.as_deref(),
            leftover_files: &g.leftover_files,
            leftover_commit: g.leftover_commit.as_deref(),
            notes_updated: g.notes_updated,
            refusals: g.refusals,
        });
    }
}

impl Observer for RunView {
    fn wait(&self, turn: u32, n: &RetryNotice) {
        self.face.wait(self.session_number(), turn, n);
        for l in &self.listeners {
            l.waiting(self.session_number(), n);
        }
    }

    fn context(&self, action: ContextMode, tokens: u64, after: u64, window: u64) {
        let c = ContextEvent {
            action,
            tokens,
            after,
            window,
        };
        self.face.context(self.session_number(), c);
    }

    fn retry(&self, turn: u32, n: &RetryNotice) {
        self.face.retry(self.session_number(), turn, n);
    }

    fn assistant_text(&self, text: &str, more_to_come: bool) {
        self.face
            .assistant_text(self.session_number(), text, more_to_come);
    }

    fn tool_start(&self, name: &str, input: &Value) {
        self.face.tool_start(self.session_number(), name, input);
    }

    fn tool_end(&self, name: &str, out: &ToolOutput, refused: bool, took: Duration) {
        let end = ToolEnd { out, refused, took };
        self.face.tool_end(self.session_number(), name, end);
    }

    fn turn_end(&self, turn: u32, usage: &Usage, cost_usd: f64) {
        self.face.turn_end();
        let session = {
            let mut t = self.totals();
            if let Some(c) = t.current.as_mut() {
                c.turns = turn;
                c.tokens += usage.total();
                c.cost += cost_usd;
            }
            t.current.as_ref().map(|c| c.number)
        };
        self.refresh();
        self.face.event(RunEvent::TurnEnd {
            session,
            turn,
            usage,
            cost_usd,
        });
    }
}

#[cfg(test)]
mod tests;
