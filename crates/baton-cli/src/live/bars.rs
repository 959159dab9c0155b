//! The bars face of the run view (a terminal): features passing, the current
//! session with its elapsed time, turns, tokens and cost, the tool call in flight
//! with a spinner, one line per agent of a parallel run, and the lines of
//! [`Lines`](super::face::Lines) printed above them as they land.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use baton_agent::client::RetryNotice;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;

use super::face::{
    ContextEvent, Face, Start, ToolEnd, Totals, clock_in, context_line, key_argument, one_line,
    retry_line, secs, tokens, tool_end_line, usd, wait_line,
};

/// The bars, drawn to one target.
pub(super) struct Bars {
    pub(super) multi: MultiProgress,
    pub(super) features: ProgressBar,
    pub(super) session: ProgressBar,
    pub(super) tool: ProgressBar,
    /// One line per agent of a parallel run, made on its first status.
    pub(super) agents: Mutex<std::collections::BTreeMap<u32, ProgressBar>>,
    /// Bumped whenever the tool line changes, which ends a running countdown.
    countdown: std::sync::Arc<AtomicU64>,
    /// Ctrl-C was pressed: no session follows the one running.
    stopping: AtomicBool,
}

impl Bars {
    pub(super) fn new(target: ProgressDrawTarget, start: &Start) -> Self {
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
        Self {
            multi,
            features,
            session,
            tool,
            agents: Mutex::default(),
            countdown: std::sync::Arc::default(),
            stopping: AtomicBool::new(false),
        }
    }

    /// A countdown on the tool line until the quota's reset (or the next event).
    fn count_down(&self, delay: Duration) {
        let generation = self.countdown.fetch_add(1, Ordering::SeqCst) + 1;
        let (bar, current) = (self.tool.clone(), self.countdown.clone());
        let until = std::time::Instant::now() + delay;
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

impl Face for Bars {
    fn println(&self, line: &str) {
        if !self.multi.is_hidden() {
            let _ = self.multi.println(baton_records::human::terminal(line));
        }
    }

    fn refresh(&self, t: &Totals) {
        // No list yet: an empty bar, not a full one at 0/0.
        self.features.set_length((t.total as u64).max(1));
        self.features.set_position(t.passing as u64);
        let spent = t.spent_now();
        let money = match t.budget {
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
        self.features.set_message(format!("{counted} · {money}"));
        // In a parallel run the agents' own lines say what runs.
        let agents = self.agents.lock().map(|a| a.len()).unwrap_or(0);
        match &t.current {
            None if agents > 0 => self
                .session
                .set_message(format!("— {agents} agents at work, each on its line below")),
            Some(c) => self.session.set_message(format!(
                "{:04} {} · {} · {} tokens · {}",
                c.number,
                c.kind.name(),
                baton_records::human::plural(u64::from(c.turns), "turn"),
                tokens(c.tokens),
                baton_records::human::cost(c.cost, c.tokens)
            )),
            None if t.total == 0 => self.session.set_message("— (no feature list yet)"),
            None => self.session.set_message("— none running (gates, pause)"),
        }
    }

    fn session_start(&self) {
        self.session.reset_elapsed();
        self.tool.set_message("waiting for the model…");
        self.tool.reset_elapsed();
    }

    fn session_end(&self) {
        let parallel = self.agents.lock().is_ok_and(|a| !a.is_empty());
        self.tool
            .set_message(if self.stopping.load(Ordering::Relaxed) {
                "gates done · stopping (Ctrl-C)"
            } else if parallel {
                "a session ended: its gates and merge run while the others work"
            } else {
                "gates done · the next session follows the pause"
            });
        self.tool.reset_elapsed();
    }

    fn stopping(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        self.tool
            .set_message("stopping: the current tool call ends, then the gates run");
    }

    fn finish(&self) {
        self.tool.finish_and_clear();
        self.session.finish_and_clear();
        self.features.finish_and_clear();
        let _ = self.multi.clear();
    }

    fn agent_status(&self, agent: u32, status: &str) {
        let Ok(mut agents) = self.agents.lock() else {
            return;
        };
        let bar = agents.entry(agent).or_insert_with(|| {
            let bar = self.multi.add(ProgressBar::new_spinner());
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
        bar.set_message(baton_records::human::terminal(status).into_owned());
    }

    fn turn_end(&self) {
        self.countdown.fetch_add(1, Ordering::SeqCst);
    }

    fn wait(&self, _: Option<u32>, turn: u32, n: &RetryNotice) {
        self.println(&wait_line(turn, n));
        self.count_down(n.delay);
    }

    fn context(&self, _: Option<u32>, c: ContextEvent) {
        self.println(&context_line(c.action, c.tokens, c.after, c.window));
    }

    fn retry(&self, _: Option<u32>, turn: u32, n: &RetryNotice) {
        self.println(&retry_line(turn, n));
        self.tool.set_message(format!(
            "retrying turn {turn} in {} (attempt {}/{} failed)",
            secs(n.delay),
            n.attempt,
            n.max_attempts
        ));
        self.tool.reset_elapsed();
    }

    fn assistant_text(&self, _: Option<u32>, text: &str, more_to_come: bool) {
        if more_to_come {
            self.println(&format!("· {}", one_line(text, 160)));
        }
    }

    fn tool_start(&self, _: Option<u32>, name: &str, input: &Value) {
        self.countdown.fetch_add(1, Ordering::SeqCst);
        self.tool
            .set_message(format!("{name} {}", key_argument(name, input)));
        self.tool.reset_elapsed();
    }

    fn tool_end(&self, _: Option<u32>, name: &str, e: ToolEnd<'_>) {
        // Name the call, not only the tool: "✓ Bash npm test (1.2s)".
        let line = if !e.refused && !e.out.is_error {
            format!("  ✓ {} ({})", self.tool.message(), secs(e.took))
        } else {
            tool_end_line(name, e.out, e.refused, e.took)
        };
        self.println(&line);
        self.tool.set_message("waiting for the model…");
        self.tool.reset_elapsed();
    }

    #[cfg(test)]
    fn bars(&self) -> Option<&Bars> {
        Some(self)
    }
}
