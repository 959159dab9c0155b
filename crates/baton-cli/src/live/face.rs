//! The parts every face shares: one-line renderings of events, the run's
//! totals, the [`Face`] trait and its plain-lines face, and [`LiveView`] for one
//! session (`baton exec`).

use std::io::Write as _;
use std::time::Duration;

use baton_agent::client::RetryNotice;
use baton_agent::session::{ContextMode, Observer};
use baton_records::SessionKind;
use baton_tools::ToolOutput;
use serde_json::Value;

use crate::events::RunEvent;

/// Prints one line per event to stderr.
pub struct LiveView;

/// The argument of a call that says most about it, shortened to one line.
pub fn key_argument(name: &str, input: &Value) -> String {
    let field = match name {
        "Bash" => "command",
        "Read" | "Write" | "Edit" => "file_path",
        "Glob" | "Grep" => "pattern",
        _ => "",
    };
    let s = match input.get(field).and_then(Value::as_str) {
        Some(v) => v.to_string(),
        None => input.to_string(),
    };
    one_line(&s, 100)
}

/// `s` on one line, cut to `max` characters with an ellipsis.
pub fn one_line(s: &str, max: usize) -> String {
    let s = baton_records::human::terminal(s);
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

/// `s` on one line in at most `max` characters, keeping both ends: an error's
/// cause comes last ("… client error (Connect): dns error: failed to lookup
/// address"), and cutting the end cut exactly that.
pub(super) fn both_ends(s: &str, max: usize) -> String {
    let s = baton_records::human::terminal(s);
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let n = flat.chars().count();
    if n <= max {
        return flat;
    }
    let head = max / 3;
    let tail = max - head - 1;
    let start: String = flat.chars().take(head).collect();
    let end: String = flat.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

pub(super) fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

pub(super) fn say(line: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{}", baton_records::human::terminal(line));
}

pub(super) fn retry_line(turn: u32, n: &RetryNotice) -> String {
    format!(
        "  ↻ turn {turn}: attempt {}/{} failed, retrying in {}: {}",
        n.attempt,
        n.max_attempts,
        secs(n.delay),
        both_ends(&n.error, 200)
    )
}

/// `HH:MM:SS UTC` of a moment `d` from now.
pub(super) fn clock_in(d: Duration) -> String {
    let at = chrono::Utc::now() + chrono::Duration::milliseconds(d.as_millis() as i64);
    at.format("%H:%M:%S UTC").to_string()
}

pub(super) fn wait_line(turn: u32, n: &RetryNotice) -> String {
    format!("  ⏸ turn {turn}: {}", quota_wait(n))
}

/// "quota reached; waiting … for the reset, until …: why", for a session's turn
/// or a parallel run's agent.
pub(super) fn quota_wait(n: &RetryNotice) -> String {
    format!(
        "quota reached; waiting {} for the reset, until {}: {}",
        baton_records::human::wait(n.delay),
        clock_in(n.delay),
        both_ends(&n.error, 200)
    )
}

pub(super) fn context_line(action: ContextMode, tokens: u64, after: u64, window: u64) -> String {
    match action {
        ContextMode::Handoff => format!(
            "  ⇢ context nearly full (about {} of {} tokens): the agent was told to commit, write its notes and stop",
            self::tokens(tokens),
            self::tokens(window)
        ),
        ContextMode::Compact => format!(
            "  ⇢ context compacted: about {} → {} of {} tokens",
            self::tokens(tokens),
            self::tokens(after),
            self::tokens(window)
        ),
    }
}

pub(super) fn tool_end_line(name: &str, out: &ToolOutput, refused: bool, took: Duration) -> String {
    let last_line = out.content.lines().last().unwrap_or_default();
    if refused {
        let line = format!("  ⛔ {name} refused: {}", one_line(&out.content, 160));
        // What a person can do about it is said here, never to the agent.
        if out.content.contains(baton_policy::BUBBLEWRAP_HINT) {
            format!(
                "{line}\n    baton: for you: {}",
                baton_policy::BUBBLEWRAP_FIX
            )
        } else {
            line
        }
    } else if out.is_error {
        format!(
            "  ✗ {name} failed ({}): {}",
            secs(took),
            one_line(last_line, 120)
        )
    } else {
        format!("  ✓ {name} ({})", secs(took))
    }
}

impl Observer for LiveView {
    fn retry(&self, turn: u32, n: &RetryNotice) {
        say(&retry_line(turn, n));
    }

    fn wait(&self, turn: u32, n: &RetryNotice) {
        say(&wait_line(turn, n));
    }

    fn context(&self, action: ContextMode, tokens: u64, after: u64, window: u64) {
        say(&context_line(action, tokens, after, window));
    }

    fn assistant_text(&self, text: &str, more_to_come: bool) {
        if more_to_come {
            say(&format!("· {}", one_line(text, 160)));
        }
    }

    fn tool_start(&self, name: &str, input: &Value) {
        say(&format!("▸ {name} {}", key_argument(name, input)));
    }

    fn tool_end(&self, name: &str, out: &ToolOutput, refused: bool, took: Duration) {
        say(&tool_end_line(name, out, refused, took));
    }
}

/// How [`RunView`] shows a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Progress bars and a spinner on stderr (a terminal).
    Bars,
    /// Lines on stderr; `quiet` leaves out tool calls and the model's words.
    Lines {
        /// Run-level lines and retries only.
        quiet: bool,
    },
    /// One JSON event per line on stdout.
    Json,
}

/// A token count for people: `950`, `12.3k`, `4.5M`.
pub use baton_records::human::count as tokens;

/// Dollars: cents from $1 up, tenths of a cent below.
pub fn usd(v: f64) -> String {
    if v.abs() >= 1.0 {
        format!("${v:.2}")
    } else {
        format!("${v:.4}")
    }
}

/// The current session, as far as it has gone.
#[derive(Debug, Clone)]
pub(super) struct Current {
    pub(super) number: u32,
    pub(super) kind: SessionKind,
    pub(super) turns: u32,
    pub(super) tokens: u64,
    pub(super) cost: f64,
}

/// Where the run stands: what every face shows.
#[derive(Debug)]
pub(super) struct Totals {
    pub(super) passing: usize,
    pub(super) total: usize,
    pub(super) sessions: usize,
    /// Cost of the sessions recorded.
    pub(super) spent: f64,
    pub(super) current: Option<Current>,
    pub(super) budget: Option<f64>,
}

impl Totals {
    /// The run's cost so far, the current session's included.
    pub(super) fn spent_now(&self) -> f64 {
        self.spent + self.current.as_ref().map_or(0.0, |c| c.cost)
    }
}

/// One way of showing a run: plain lines, progress bars or JSON events. Each
/// method is one event; `session` is the number of the session it belongs to.
/// What a face does not show, it leaves to the default (nothing).
pub(super) trait Face: Send + Sync {
    /// A line for people (above the bars, or on stderr).
    fn println(&self, _line: &str) {}
    /// A run-level line of baton's (`Reporter::line`).
    fn message(&self, text: &str) {
        self.println(text);
    }
    /// One of the events every mode goes through; only JSON shows them as such.
    fn event(&self, _event: RunEvent<'_>) {}
    /// The totals changed.
    fn refresh(&self, _t: &Totals) {}
    /// A session starts.
    fn session_start(&self) {}
    /// A session was recorded.
    fn session_end(&self) {}
    /// Ctrl-C was pressed: no session follows the one running.
    fn stopping(&self) {}
    /// The run ended.
    fn finish(&self) {}
    /// What agent `agent` of a parallel run is doing now.
    fn agent_status(&self, _agent: u32, _status: &str) {}
    /// A model turn ended.
    fn turn_end(&self) {}
    /// Waiting out a quota until its reset.
    fn wait(&self, session: Option<u32>, turn: u32, n: &RetryNotice);
    /// The context window was handed off or compacted.
    fn context(&self, session: Option<u32>, c: ContextEvent);
    /// A model request failed and is retried.
    fn retry(&self, session: Option<u32>, turn: u32, n: &RetryNotice);
    /// The model said something.
    fn assistant_text(&self, session: Option<u32>, text: &str, more_to_come: bool);
    /// A tool call starts.
    fn tool_start(&self, session: Option<u32>, name: &str, input: &Value);
    /// A tool call ended.
    fn tool_end(&self, session: Option<u32>, name: &str, end: ToolEnd<'_>);
    /// The bars, for tests that read them.
    #[cfg(test)]
    fn bars(&self) -> Option<&super::bars::Bars> {
        None
    }
}

/// What the context tracker did.
#[derive(Debug, Clone, Copy)]
pub(super) struct ContextEvent {
    pub(super) action: ContextMode,
    pub(super) tokens: u64,
    pub(super) after: u64,
    pub(super) window: u64,
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy)]
pub(super) struct ToolEnd<'a> {
    pub(super) out: &'a ToolOutput,
    pub(super) refused: bool,
    pub(super) took: Duration,
}

/// Plain lines on stderr (`quiet`: run-level lines and retries only).
pub(super) struct Lines {
    pub(super) quiet: bool,
}

impl Face for Lines {
    fn println(&self, line: &str) {
        say(line);
    }

    fn wait(&self, _: Option<u32>, turn: u32, n: &RetryNotice) {
        say(&wait_line(turn, n));
    }

    fn context(&self, _: Option<u32>, c: ContextEvent) {
        say(&context_line(c.action, c.tokens, c.after, c.window));
    }

    fn retry(&self, _: Option<u32>, turn: u32, n: &RetryNotice) {
        say(&retry_line(turn, n));
    }

    fn assistant_text(&self, _: Option<u32>, text: &str, more_to_come: bool) {
        if !self.quiet {
            LiveView.assistant_text(text, more_to_come);
        }
    }

    fn tool_start(&self, _: Option<u32>, name: &str, input: &Value) {
        if !self.quiet {
            LiveView.tool_start(name, input);
        }
    }

    fn tool_end(&self, _: Option<u32>, name: &str, e: ToolEnd<'_>) {
        if !self.quiet {
            LiveView.tool_end(name, e.out, e.refused, e.took);
        }
    }
}

/// Where JSON events go.
pub(super) type Sink = Box<dyn std::io::Write + Send>;

/// Where the run stands when the view starts.
#[derive(Debug, Clone, Default)]
pub struct Start {
    /// Project directory.
    pub project: String,
    /// Features passing.
    pub passing: usize,
    /// Features in all.
    pub total: usize,
    /// Sessions recorded before this run.
    pub sessions: usize,
    /// What they cost.
    pub spent_usd: f64,
    /// The budget, if one is set.
    pub budget_usd: Option<f64>,
}
