//! The live view of a session on stderr: tool calls as they start and end, retries,
//! and the model's words between tool calls.

use std::io::Write as _;
use std::time::Duration;

use baton_agent::client::RetryNotice;
use baton_agent::session::Observer;
use baton_tools::ToolOutput;
use serde_json::Value;

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

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

fn say(line: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{line}");
}

impl Observer for LiveView {
    fn retry(&self, turn: u32, n: &RetryNotice) {
        say(&format!(
            "  ↻ turn {turn}: attempt {}/{} failed, retrying in {}: {}",
            n.attempt,
            n.max_attempts,
            secs(n.delay),
            one_line(&n.error, 160)
        ));
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
        let last_line = out.content.lines().last().unwrap_or_default();
        if refused {
            say(&format!(
                "  ⛔ {name} refused: {}",
                one_line(&out.content, 160)
            ));
        } else if out.is_error {
            say(&format!(
                "  ✗ {name} failed ({}): {}",
                secs(took),
                one_line(last_line, 120)
            ));
        } else {
            say(&format!("  ✓ {name} ({})", secs(took)));
        }
    }
}
