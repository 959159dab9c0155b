//! What a person (or a program) sees while baton works.
//!
//! - [`LiveView`]: one session (`baton exec`), one line per event on stderr.
//! - [`RunView`]: a whole `baton run`, in one of three [`Mode`]s: progress bars on
//!   a terminal (features passing, the current session with its elapsed time, turns,
//!   tokens and cost, the tool call in flight with a spinner, gate results and
//!   retries printed above as they land); plain lines (stderr not a terminal, or
//!   `--quiet`, which leaves out tool calls and the model's words); or JSON events on
//!   stdout, one per line (`--json`; schema in docs/report.md).

use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use baton_agent::client::RetryNotice;
use baton_agent::model::Usage;
use baton_agent::session::{ContextMode, Observer};
use baton_agent::transcript::now_ms;
use baton_harness::run::{Reporter, RunEnd};
use baton_records::{SessionKind, SessionRecord};
use baton_tools::ToolOutput;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use crate::events::{Line, RunEvent};

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
fn both_ends(s: &str, max: usize) -> String {
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

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

fn say(line: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{line}");
}

fn retry_line(turn: u32, n: &RetryNotice) -> String {
    format!(
        "  ↻ turn {turn}: attempt {}/{} failed, retrying in {}: {}",
        n.attempt,
        n.max_attempts,
        secs(n.delay),
        both_ends(&n.error, 200)
    )
}

/// `HH:MM:SS UTC` of a moment `d` from now.
fn clock_in(d: Duration) -> String {
    let at = chrono::Utc::now() + chrono::Duration::milliseconds(d.as_millis() as i64);
    at.format("%H:%M:%S UTC").to_string()
}

fn wait_line(turn: u32, n: &RetryNotice) -> String {
    format!(
        "  ⏸ turn {turn}: quota reached; waiting {} for the reset, until {}: {}",
        baton_records::human::wait(n.delay),
        clock_in(n.delay),
        both_ends(&n.error, 200)
    )
}

fn context_line(action: ContextMode, tokens: u64, after: u64, window: u64) -> String {
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

fn tool_end_line(name: &str, out: &ToolOutput, refused: bool, took: Duration) -> String {
    let last_line = out.content.lines().last().unwrap_or_default();
    if refused {
        format!("  ⛔ {name} refused: {}", one_line(&out.content, 160))
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
struct Current {
    number: u32,
    kind: SessionKind,
    turns: u32,
    tokens: u64,
    cost: f64,
}

#[derive(Debug)]
struct Totals {
    passing: usize,
    total: usize,
    sessions: usize,
    /// Cost of the sessions recorded.
    spent: f64,
    current: Option<Current>,
}

struct Bars {
    multi: MultiProgress,
    features: ProgressBar,
    session: ProgressBar,
    tool: ProgressBar,
    /// One line per agent of a parallel run, made on its first status.
    agents: Mutex<std::collections::BTreeMap<u32, ProgressBar>>,
}

/// Where JSON events go.
type Sink = Box<dyn std::io::Write + Send>;

/// The live view of `baton run`: an [`Observer`] of each session and the run's
/// [`Reporter`].
pub struct RunView {
    mode: Mode,
    budget: Option<f64>,
    totals: Mutex<Totals>,
    bars: Option<Bars>,
    sink: Mutex<Sink>,
    /// Bumped whenever the tool line changes, which ends a running countdown.
    countdown: std::sync::Arc<AtomicU64>,
    /// Ctrl-C was pressed: no session follows the one running.
    stopping: std::sync::atomic::AtomicBool,
}

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

impl RunView {
    /// A view in `mode`; bars draw to `target` (stderr in use, hidden in tests) and
    /// JSON events go to `sink` (stdout in use).
    pub fn new(mode: Mode, start: &Start, target: ProgressDrawTarget, sink: Sink) -> Self {
        let bars = (mode == Mode::Bars).then(|| {
            let multi = MultiProgress::with_draw_target(target);
            let features = multi.add(ProgressBar::new(start.total as u64));
            features.set_style(
                ProgressStyle::with_template("{prefix:.bold} [{bar:32.green/dim}] {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("█▉▊▋▌▍▎▏ "),
            );
            features.set_prefix("features");
            features.set_position(start.passing as u64);
            let session = multi.add(ProgressBar::new_spinner());
            session.set_style(
                ProgressStyle::with_template("{prefix:.bold} {msg} · {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            session.set_prefix("session ");
            session.set_message("starting");
            let tool = multi.add(ProgressBar::new_spinner());
            tool.set_style(
                ProgressStyle::with_template("  {spinner:.cyan} {msg} {elapsed:.dim}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            tool.enable_steady_tick(Duration::from_millis(120));
            session.enable_steady_tick(Duration::from_millis(500));
            Bars {
                multi,
                features,
                session,
                tool,
                agents: Mutex::default(),
            }
        });
        let view = Self {
            mode,
            budget: start.budget_usd,
            totals: Mutex::new(Totals {
                passing: start.passing,
                total: start.total,
                sessions: start.sessions,
                spent: start.spent_usd,
                current: None,
            }),
            bars,
            sink: Mutex::new(sink),
            countdown: std::sync::Arc::default(),
            stopping: std::sync::atomic::AtomicBool::new(false),
        };
        view.refresh();
        view.event(RunEvent::RunStart {
            project: &start.project,
            passing: start.passing,
            total: start.total,
            sessions: start.sessions,
            cost_usd: start.spent_usd,
            budget_usd: start.budget_usd,
        });
        view
    }

    fn totals(&self) -> std::sync::MutexGuard<'_, Totals> {
        self.totals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The run's cost so far, the current session's included.
    fn spent_now(t: &Totals) -> f64 {
        t.spent + t.current.as_ref().map_or(0.0, |c| c.cost)
    }

    /// One JSON event, in JSON mode: `{"t_ms", "type", ...fields}`.
    fn event(&self, event: RunEvent<'_>) {
        if self.mode != Mode::Json {
            return;
        }
        let line = Line {
            t_ms: now_ms(),
            event: &event,
        };
        let text = serde_json::to_string(&line).unwrap_or_default();
        let mut sink = self
            .sink
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = writeln!(sink, "{text}");
        let _ = sink.flush();
    }

    /// Ctrl-C was pressed: say so, and say no session follows.
    pub fn stopping(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.println("\nbaton: stopping after the current tool call (Ctrl-C again to stop now)");
        if let Some(b) = &self.bars {
            b.tool
                .set_message("stopping: the current tool call ends, then the gates run");
        }
    }

    /// A line for people (above the bars, or on stderr); nothing in JSON mode.
    pub fn println(&self, line: &str) {
        match (&self.bars, self.mode) {
            (_, Mode::Json) => {}
            (Some(b), _) => {
                if b.multi.is_hidden() {
                    return;
                }
                let _ = b.multi.println(line);
            }
            (None, _) => say(line),
        }
    }

    fn refresh(&self) {
        let Some(b) = &self.bars else { return };
        let t = self.totals();
        // No list yet: an empty bar, not a full one at 0/0.
        b.features.set_length((t.total as u64).max(1));
        b.features.set_position(t.passing as u64);
        let spent = Self::spent_now(&t);
        let money = match self.budget {
            Some(budget) => format!(
                "{} spent · {} of ${budget:.2} left",
                usd(spent),
                usd((budget - spent).max(0.0))
            ),
            None => format!("{} spent", usd(spent)),
        };
        // Before the initializer's list there is nothing to count ("0/1 passing"
        // read as a one-feature project).
        let counted = if t.total == 0 {
            "no feature list yet".to_string()
        } else {
            format!("{}/{} passing", t.passing, t.total)
        };
        b.features.set_message(format!("{counted} · {money}"));
        // In a parallel run the agents' own lines say what runs.
        let agents = b.agents.lock().map(|a| a.len()).unwrap_or(0);
        match &t.current {
            None if agents > 0 => b
                .session
                .set_message(format!("— {agents} agents at work, each on its line below")),
            Some(c) => b.session.set_message(format!(
                "{:04} {} · {} · {} tokens · ${:.4}",
                c.number,
                c.kind.name(),
                baton_records::human::plural(u64::from(c.turns), "turn"),
                tokens(c.tokens),
                c.cost
            )),
            None if t.total == 0 => b.session.set_message("— (no feature list yet)"),
            None => b.session.set_message("— none running (gates, pause)"),
        }
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
        if let Some(b) = &self.bars {
            b.tool.finish_and_clear();
            b.session.finish_and_clear();
            b.features.finish_and_clear();
            let _ = b.multi.clear();
        }
        let t = self.totals();
        let spent = Self::spent_now(&t);
        let (passing, total, sessions) = (t.passing, t.total, t.sessions);
        drop(t);
        self.event(RunEvent::RunEnd {
            outcome,
            exit_code: code,
            reason,
            passing,
            total,
            sessions,
            cost_usd: spent,
            budget_usd: self.budget,
            budget_left_usd: self.budget.map(|b| (b - spent).max(0.0)),
        });
    }

    fn session_number(&self) -> Option<u32> {
        self.totals().current.as_ref().map(|c| c.number)
    }
}

impl Reporter for RunView {
    fn agent_status(&self, agent: u32, status: &str) {
        // The lines and JSON modes have each session's own lines and events.
        let Some(b) = &self.bars else { return };
        let Ok(mut agents) = b.agents.lock() else {
            return;
        };
        let bar = agents.entry(agent).or_insert_with(|| {
            let bar = b.multi.add(ProgressBar::new_spinner());
            bar.set_style(
                // No elapsed time: after the status it read as the time of the tool
                // named last ("Write 8s").
                ProgressStyle::with_template("{prefix:.bold} {spinner:.cyan} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(format!("agent {agent}"));
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        bar.set_message(status.to_string());
    }

    fn line(&self, text: &str) {
        match self.mode {
            Mode::Json => self.event(RunEvent::Message { text }),
            Mode::Bars | Mode::Lines { .. } => self.println(text),
        }
    }

    fn session_start(&self, number: u32, kind: SessionKind) {
        self.totals().current = Some(Current {
            number,
            kind,
            turns: 0,
            tokens: 0,
            cost: 0.0,
        });
        if let Some(b) = &self.bars {
            b.session.reset_elapsed();
            b.tool.set_message("waiting for the model…");
            b.tool.reset_elapsed();
        }
        self.refresh();
        self.event(RunEvent::SessionStart {
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
        if let Some(b) = &self.bars {
            let parallel = b.agents.lock().is_ok_and(|a| !a.is_empty());
            b.tool.set_message(
                if self.stopping.load(std::sync::atomic::Ordering::Relaxed) {
                    "gates done · stopping (Ctrl-C)"
                } else if parallel {
                    "a session ended: its gates and merge run while the others work"
                } else {
                    "gates done · the next session follows the pause"
                },
            );
            b.tool.reset_elapsed();
        }
        self.refresh();
        let g = &r.gates;
        self.event(RunEvent::SessionEnd {
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
        self.event(RunEvent::Gates {
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
        match self.mode {
            Mode::Json => self.event(RunEvent::Waiting {
                session: self.session_number(),
                turn,
                error: &n.error,
                delay_ms: n.delay.as_millis() as u64,
                until_ms: now_ms() + n.delay.as_millis() as u64,
            }),
            Mode::Bars => {
                self.println(&wait_line(turn, n));
                if let Some(b) = &self.bars {
                    // A countdown on the tool line until the reset (or the next event).
                    let generation = self.countdown.fetch_add(1, Ordering::SeqCst) + 1;
                    let (bar, current) = (b.tool.clone(), self.countdown.clone());
                    let until = std::time::Instant::now() + n.delay;
                    std::thread::spawn(move || {
                        while current.load(Ordering::SeqCst) == generation {
                            let left = until.saturating_duration_since(std::time::Instant::now());
                            if left.is_zero() {
                                break;
                            }
                            bar.set_message(format!(
                                "quota reached · resuming in {} (at {})",
                                baton_records::human::wait(left),
                                clock_in(left)
                            ));
                            std::thread::sleep(Duration::from_secs(1));
                        }
                    });
                }
            }
            Mode::Lines { .. } => say(&wait_line(turn, n)),
        }
    }

    fn context(&self, action: ContextMode, tokens: u64, after: u64, window: u64) {
        match self.mode {
            Mode::Json => self.event(RunEvent::Context {
                session: self.session_number(),
                action: action.name(),
                tokens,
                tokens_after: after,
                window,
            }),
            Mode::Bars | Mode::Lines { .. } => {
                self.println(&context_line(action, tokens, after, window));
            }
        }
    }

    fn retry(&self, turn: u32, n: &RetryNotice) {
        match self.mode {
            Mode::Json => self.event(RunEvent::Retry {
                session: self.session_number(),
                turn,
                attempt: n.attempt,
                max_attempts: n.max_attempts,
                error: &n.error,
                delay_ms: n.delay.as_millis() as u64,
            }),
            Mode::Bars => {
                self.println(&retry_line(turn, n));
                if let Some(b) = &self.bars {
                    b.tool.set_message(format!(
                        "retrying turn {turn} in {} (attempt {}/{} failed)",
                        secs(n.delay),
                        n.attempt,
                        n.max_attempts
                    ));
                    b.tool.reset_elapsed();
                }
            }
            Mode::Lines { .. } => say(&retry_line(turn, n)),
        }
    }

    fn assistant_text(&self, text: &str, more_to_come: bool) {
        match self.mode {
            Mode::Json => self.event(RunEvent::AssistantText {
                session: self.session_number(),
                text,
                more_to_come,
            }),
            Mode::Lines { quiet: true } => {}
            Mode::Bars | Mode::Lines { quiet: false } => {
                if more_to_come {
                    self.println(&format!("· {}", one_line(text, 160)));
                }
            }
        }
    }

    fn tool_start(&self, name: &str, input: &Value) {
        self.countdown.fetch_add(1, Ordering::SeqCst);
        match self.mode {
            Mode::Json => self.event(RunEvent::ToolStart {
                session: self.session_number(),
                name,
                summary: key_argument(name, input),
            }),
            Mode::Lines { quiet: true } => {}
            Mode::Lines { quiet: false } => LiveView.tool_start(name, input),
            Mode::Bars => {
                if let Some(b) = &self.bars {
                    b.tool
                        .set_message(format!("{name} {}", key_argument(name, input)));
                    b.tool.reset_elapsed();
                }
            }
        }
    }

    fn tool_end(&self, name: &str, out: &ToolOutput, refused: bool, took: Duration) {
        match self.mode {
            Mode::Json => self.event(RunEvent::ToolEnd {
                session: self.session_number(),
                name,
                is_error: out.is_error,
                refused,
                duration_ms: took.as_millis() as u64,
                last_line: one_line(out.content.lines().last().unwrap_or_default(), 200),
            }),
            Mode::Lines { quiet: true } => {}
            Mode::Lines { quiet: false } => LiveView.tool_end(name, out, refused, took),
            Mode::Bars => {
                let what = self
                    .bars
                    .as_ref()
                    .map(|b| b.tool.message())
                    .unwrap_or_default();
                let line = tool_end_line(name, out, refused, took);
                // Name the call, not only the tool: "✓ Bash npm test (1.2s)".
                let line = if !refused && !out.is_error {
                    format!("  ✓ {what} ({})", secs(took))
                } else {
                    line
                };
                self.println(&line);
                if let Some(b) = &self.bars {
                    b.tool.set_message("waiting for the model…");
                    b.tool.reset_elapsed();
                }
            }
        }
    }

    fn turn_end(&self, turn: u32, usage: &Usage, cost_usd: f64) {
        self.countdown.fetch_add(1, Ordering::SeqCst);
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
        self.event(RunEvent::TurnEnd {
            session,
            turn,
            usage,
            cost_usd,
        });
    }
}

#[cfg(test)]
mod tests;
