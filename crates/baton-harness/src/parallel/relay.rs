//! What the agents' threads tell the run's reporter: their lines, prefixed with
//! the agent, and what each agent's session is doing now, for the live view.

use crate::runner::Reporter;

/// An agent's lines, prefixed with it, straight to the run's reporter (from the
/// coordinator's own task).
pub(super) struct Prefixed<'a> {
    pub agent: u32,
    pub inner: &'a dyn Reporter,
}

impl Reporter for Prefixed<'_> {
    fn line(&self, text: &str) {
        self.inner.line(&format!("[agent {}] {text}", self.agent));
    }
}

/// What an agent's thread tells the run's reporter.
pub(super) enum Note {
    /// A line, prefixed with the agent.
    Line(String),
    /// What the agent is doing now.
    Status(u32, String),
    /// The agent's session waits out a quota until its reset.
    Wait(u32, baton_agent::client::RetryNotice),
}

impl Note {
    /// Pass it on to `reporter`.
    pub(super) fn tell(self, reporter: &dyn Reporter) {
        match self {
            Note::Line(l) => reporter.line(&l),
            Note::Status(a, s) => reporter.agent_status(a, &s),
            Note::Wait(a, n) => reporter.agent_waits(a, &n),
        }
    }
}

/// An agent's lines, sent to the run's reporter from the agent's thread.
pub(super) struct Relay {
    pub agent: u32,
    pub notes: tokio::sync::mpsc::UnboundedSender<Note>,
}

impl Reporter for Relay {
    fn line(&self, text: &str) {
        let _ = self
            .notes
            .send(Note::Line(format!("[agent {}] {text}", self.agent)));
    }
}

/// An agent's session as it goes, for the live view: turn, tokens, tool.
pub(super) struct Watch {
    pub agent: u32,
    pub feature: usize,
    /// The session's number.
    pub number: u32,
    /// Where its spend is told, turn by turn, for the run's budget.
    pub spend: super::board::Spend,
    pub notes: tokio::sync::mpsc::UnboundedSender<Note>,
    /// Turns and tokens so far.
    pub so_far: std::sync::Mutex<(u32, u64)>,
}

impl Watch {
    pub(super) fn say(&self, tool: Option<&str>) {
        let (turn, tokens) = self.so_far.lock().map(|g| *g).unwrap_or_default();
        let tool = tool.map(|t| format!(" · {t}")).unwrap_or_default();
        let _ = self.notes.send(Note::Status(
            self.agent,
            format!(
                "#{} · turn {} · {} tokens{tool}",
                self.feature,
                turn + 1,
                baton_records::human::count(tokens)
            ),
        ));
    }
}

impl baton_agent::session::Observer for Watch {
    fn wait(&self, _turn: u32, n: &baton_agent::client::RetryNotice) {
        let _ = self.notes.send(Note::Wait(self.agent, n.clone()));
    }

    fn tool_start(&self, name: &str, _input: &serde_json::Value) {
        self.say(Some(name));
    }

    fn turn_end(&self, turn: u32, usage: &baton_records::Usage, cost_usd: f64) {
        self.spend.add(self.number, cost_usd);
        if let Ok(mut g) = self.so_far.lock() {
            *g = (turn, g.1 + usage.total());
        }
        self.say(None);
    }
}
