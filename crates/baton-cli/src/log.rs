//! `baton log`: a transcript as a readable conversation, or its JSON lines.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, bail};
use baton_agent::model::Block;
use baton_agent::transcript::{self, Event, Record};

use crate::live::{key_argument, one_line};

/// Lines of a tool result shown before the rest is cut.
const RESULT_LINES: usize = 8;

/// Run `baton log`.
pub fn run(dir: &Path, session: Option<u32>, json: bool) -> anyhow::Result<()> {
    let sessions = transcript::list_sessions(dir)?;
    if sessions.is_empty() {
        bail!(
            "no sessions recorded in {}",
            dir.join(transcript::SESSIONS_DIR).display()
        );
    }
    let path = match session {
        Some(n) => match sessions.iter().find(|(m, _)| *m == n) {
            Some((_, p)) => p.clone(),
            None => bail!(
                "no session {n} in {} (sessions: {})",
                dir.display(),
                sessions
                    .iter()
                    .map(|(n, _)| n.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        None => sessions.last().map(|(_, p)| p.clone()).unwrap_or_default(),
    };
    let records = transcript::read(&path)?;
    let out = if json {
        let mut s = String::new();
        for r in &records {
            s.push_str(&serde_json::to_string(r).context("encode")?);
            s.push('\n');
        }
        s
    } else {
        render(&records)
    };
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("write to stdout"),
    }
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}\n")).collect()
}

fn cut_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= n {
        return text.to_string();
    }
    format!(
        "{}\n… ({} more lines)",
        lines[..n].join("\n"),
        lines.len() - n
    )
}

/// The transcript as text for people.
pub fn render(records: &[Record]) -> String {
    let mut s = String::new();
    for r in records {
        let _ = match &r.event {
            Event::SessionStart {
                session,
                provider,
                model,
                project_dir,
                tools,
                ..
            } => writeln!(
                s,
                "session {session:04} · {provider} {model} · {project_dir}\ntools: {}\n",
                tools.join(", ")
            ),
            Event::User { content } => {
                let _ = writeln!(s, "── user");
                for b in content {
                    if let Block::Text { text } = b {
                        s.push_str(&indent(text, "   "));
                    }
                }
                writeln!(s)
            }
            Event::Request { .. } => Ok(()),
            Event::Retry {
                turn,
                attempt,
                max_attempts,
                error,
                delay_ms,
            } => writeln!(
                s,
                "   ↻ turn {turn}: attempt {attempt}/{max_attempts} failed, retried after {delay_ms} ms: {}",
                one_line(error, 200)
            ),
            Event::Assistant {
                turn,
                content,
                stop_reason,
                usage,
                cost_usd,
            } => {
                let _ = writeln!(
                    s,
                    "── assistant · turn {turn} · {} in / {} out / {} cache read / {} cache write · ${cost_usd:.4}{}",
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    match stop_reason {
                        baton_agent::model::StopReason::MaxTokens => " · cut by max_tokens",
                        _ => "",
                    }
                );
                for b in content {
                    match b {
                        Block::Text { text } => s.push_str(&indent(text, "   ")),
                        Block::Thinking { thinking, .. } => {
                            s.push_str(&indent(&one_line(thinking, 200), "   (thinking) "))
                        }
                        Block::RedactedThinking { .. } => s.push_str("   (redacted thinking)\n"),
                        Block::ToolUse { name, input, .. } => {
                            let _ = writeln!(s, "   → {name} {}", key_argument(name, input));
                        }
                        Block::ToolResult { .. } => {}
                    }
                }
                Ok(())
            }
            Event::ToolResult {
                name,
                content,
                is_error,
                refused,
                duration_ms,
                ..
            } => {
                let mark = if *refused {
                    "⛔ REFUSED"
                } else if *is_error {
                    "✗ ERROR"
                } else {
                    "✓"
                };
                let _ = writeln!(s, "   ← {name} {mark} ({duration_ms} ms)");
                s.push_str(&indent(&cut_lines(content, RESULT_LINES), "     │ "));
                Ok(())
            }
            Event::SessionEnd {
                outcome,
                turns,
                usage,
                cost_usd,
                error,
                ..
            } => {
                let _ = writeln!(
                    s,
                    "\n── end: {outcome} · {turns} turns · {} tokens · ${cost_usd:.4}",
                    usage.total()
                );
                match error {
                    Some(e) => writeln!(s, "   error: {e}"),
                    None => Ok(()),
                }
            }
        };
    }
    s
}
