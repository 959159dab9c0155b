//! The JSON face of the run view: one event per line (`--json`; the schema is in
//! docs/report.md), and nothing for people.

use std::io::Write as _;
use std::sync::Mutex;

use baton_agent::client::RetryNotice;
use baton_agent::transcript::now_ms;
use serde_json::Value;

use super::face::{ContextEvent, Face, Sink, ToolEnd, key_argument, one_line};
use crate::events::{Line, RunEvent};

/// Writes each event to its sink as one JSON line.
pub(super) struct Json {
    sink: Mutex<Sink>,
}

impl Json {
    pub(super) fn new(sink: Sink) -> Self {
        Self {
            sink: Mutex::new(sink),
        }
    }
}

impl Face for Json {
    fn message(&self, text: &str) {
        self.event(RunEvent::Message { text });
    }

    /// `{"t_ms", "type", ...fields}`.
    fn event(&self, event: RunEvent<'_>) {
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

    fn wait(&self, session: Option<u32>, turn: u32, n: &RetryNotice) {
        self.event(RunEvent::Waiting {
            session,
            turn,
            error: &n.error,
            delay_ms: n.delay.as_millis() as u64,
            until_ms: now_ms() + n.delay.as_millis() as u64,
        });
    }

    fn context(&self, session: Option<u32>, c: ContextEvent) {
        self.event(RunEvent::Context {
            session,
            action: c.action.name(),
            tokens: c.tokens,
            tokens_after: c.after,
            window: c.window,
        });
    }

    fn retry(&self, session: Option<u32>, turn: u32, n: &RetryNotice) {
        self.event(RunEvent::Retry {
            session,
            turn,
            attempt: n.attempt,
            max_attempts: n.max_attempts,
            error: &n.error,
            delay_ms: n.delay.as_millis() as u64,
        });
    }

    fn assistant_text(&self, session: Option<u32>, text: &str, more_to_come: bool) {
        self.event(RunEvent::AssistantText {
            session,
            text,
            more_to_come,
        });
    }

    fn tool_start(&self, session: Option<u32>, name: &str, input: &Value) {
        self.event(RunEvent::ToolStart {
            session,
            name,
            summary: key_argument(name, input),
        });
    }

    fn tool_end(&self, session: Option<u32>, name: &str, e: ToolEnd<'_>) {
        self.event(RunEvent::ToolEnd {
            session,
            name,
            is_error: e.out.is_error,
            refused: e.refused,
            duration_ms: e.took.as_millis() as u64,
            last_line: one_line(e.out.content.lines().last().unwrap_or_default(), 200),
        });
    }
}
