//! `baton log`: a transcript as a readable conversation, or its JSON lines;
//! filtered to one tool or to what went wrong; highlighted on a terminal.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use baton_agent::model::Block;
use baton_agent::transcript::{self, Event, Record};
use serde_json::Value;

use crate::live::{key_argument, one_line};

/// Lines of a tool result shown before the rest is cut.
const RESULT_LINES: usize = 8;

/// When to colour the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// When stdout is a terminal and `NO_COLOR` is not set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// Whether to colour, given whether stdout is a terminal and `NO_COLOR`.
    pub fn enabled(self, terminal: bool, no_color: bool) -> bool {
        match self {
            Self::Auto => terminal && !no_color,
            Self::Always => true,
            Self::Never => false,
        }
    }
}

/// Arguments of `baton log`.
#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// The project directory.
    dir: PathBuf,
    /// Session number (default: the latest).
    #[arg(long)]
    session: Option<u32>,
    /// Print the transcript's JSON lines instead (filters apply to them too).
    #[arg(long)]
    json: bool,
    /// Only the calls of this tool and their results (e.g. Bash, mcp__playwright__browser_click).
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// Only what went wrong: failed and refused tool calls, retries, a session error.
    #[arg(long)]
    errors: bool,
    /// Colour the output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    color: ColorChoice,
}

/// Which records to show.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this tool's calls and results.
    pub tool: Option<String>,
    /// Only failures, refusals, retries and errors.
    pub errors: bool,
}

impl Filter {
    /// Whether anything is filtered out.
    pub fn active(&self) -> bool {
        self.tool.is_some() || self.errors
    }

    /// Whether `r` is shown.
    pub fn keep(&self, r: &Record) -> bool {
        if !self.active() {
            return true;
        }
        match &r.event {
            Event::SessionStart { .. } | Event::SessionEnd { .. } => true,
            Event::User { .. } | Event::Request { .. } | Event::Assistant { .. } => false,
            Event::Retry { .. } | Event::Wait { .. } => self.errors && self.tool.is_none(),
            Event::Handoff { .. } | Event::Compaction { .. } => self.tool.is_none(),
            Event::ToolResult {
                name,
                is_error,
                refused,
                ..
            } => {
                self.tool
                    .as_ref()
                    .is_none_or(|t| t.eq_ignore_ascii_case(name))
                    && (!self.errors || *is_error || *refused)
            }
        }
    }
}

/// ANSI styles, or nothing.
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    on: bool,
}

impl Paint {
    /// Colour when `on`.
    pub fn new(on: bool) -> Self {
        Self { on }
    }

    /// `text` in `style`; what in it would act on a terminal is shown escaped
    /// first ([`baton_records::human::terminal`]), so only baton's own style
    /// reaches the terminal.
    fn p(self, style: &str, text: &str) -> String {
        let text = baton_records::human::terminal(text);
        if self.on && !text.is_empty() {
            format!("\x1b[{style}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
    fn bold(self, t: &str) -> String {
        self.p("1", t)
    }
    fn dim(self, t: &str) -> String {
        self.p("2", t)
    }
    fn red(self, t: &str) -> String {
        self.p("1;31", t)
    }
    fn refused(self, t: &str) -> String {
        self.p("1;97;41", t)
    }
    fn green(self, t: &str) -> String {
        self.p("32", t)
    }
    fn yellow(self, t: &str) -> String {
        self.p("33", t)
    }
    fn cyan(self, t: &str) -> String {
        self.p("1;36", t)
    }
    fn blue(self, t: &str) -> String {
        self.p("1;34", t)
    }
}

/// Run `baton log`.
pub fn run(args: LogArgs) -> anyhow::Result<()> {
    let dir = &args.dir;
    let sessions = transcript::list_sessions(dir)?;
    if sessions.is_empty() {
        bail!(
            "no sessions recorded in {}",
            dir.join(transcript::SESSIONS_DIR).display()
        );
    }
    let path = match args.session {
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
    let filter = Filter {
        tool: args.tool,
        errors: args.errors,
    };
    let out = if args.json {
        let mut s = String::new();
        for r in records.iter().filter(|r| filter.keep(r)) {
            s.push_str(&serde_json::to_string(r).context("encode")?);
            s.push('\n');
        }
        s
    } else {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let paint = Paint::new(
            args.color
                .enabled(std::io::stdout().is_terminal(), no_color),
        );
        render(&records, &filter, paint)
    };
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(out.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("write to stdout"),
    }
}

fn indent(text: &str, prefix: &str) -> String {
    baton_records::human::terminal(text)
        .lines()
        .map(|l| format!("{prefix}{l}\n"))
        .collect()
}

fn cut_lines(text: &str, n: usize) -> String {
    let text = baton_records::human::terminal(text);
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= n {
        return text.to_string();
    }
    let more = lines.len() - n;
    format!(
        "{}\n… ({more} more {})",
        lines[..n].join("\n"),
        if more == 1 { "line" } else { "lines" }
    )
}

/// The transcript as text for people: every record `filter` keeps, styled by `paint`.
pub fn render(records: &[Record], filter: &Filter, paint: Paint) -> String {
    let mut s = String::new();
    // For filtered views: each call's tool and input, to head its result.
    let mut calls: HashMap<&str, (&str, &Value)> = HashMap::new();
    let mut shown = 0usize;
    for r in records {
        if let Event::Assistant { content, .. } = &r.event {
            for b in content {
                if let Block::ToolUse { id, name, input } = b {
                    calls.insert(id, (name, input));
                }
            }
        }
        if !filter.keep(r) {
            continue;
        }
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
                "{}\n{}\n",
                paint.bold(&format!(
                    "session {session:04} · {provider} {model} · {project_dir}"
                )),
                paint.dim(&format!("tools: {}", tools.join(", ")))
            ),
            Event::User { content } => {
                let _ = writeln!(s, "{}", paint.cyan("── user"));
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
            } => {
                shown += 1;
                writeln!(
                    s,
                    "   {}",
                    paint.yellow(&format!(
                        "↻ turn {turn}: attempt {attempt}/{max_attempts} failed, retried after {delay_ms} ms: {}",
                        one_line(error, 200)
                    ))
                )
            }
            Event::Wait {
                turn,
                error,
                until_ms,
            } => {
                shown += 1;
                let secs = until_ms.saturating_sub(r.t_ms) / 1000;
                writeln!(
                    s,
                    "   {}",
                    paint.yellow(&format!(
                        "⏸ turn {turn}: quota reached, waited {} for the reset: {}",
                        baton_records::human::wait(std::time::Duration::from_secs(secs)),
                        one_line(error, 200)
                    ))
                )
            }
            Event::Handoff {
                turn,
                tokens,
                window,
                reason,
            } => {
                shown += 1;
                writeln!(
                    s,
                    "{}
   {}
",
                    paint.yellow(&format!(
                        "── context nearly full after turn {turn}: handoff (about {tokens} of {window} tokens)"
                    )),
                    paint.dim(&one_line(reason, 300))
                )
            }
            Event::Compaction {
                turn,
                tokens_before,
                tokens_after,
                reason,
                summary,
                usage,
                cost_usd,
            } => {
                shown += 1;
                let _ = writeln!(
                    s,
                    "{}{}",
                    paint.yellow(&format!(
                        "── context compacted after turn {turn}: about {tokens_before} → {tokens_after} tokens"
                    )),
                    paint.dim(&format!(
                        " · {} in / {} out · ${cost_usd:.4}",
                        usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
                        usage.output_tokens
                    ))
                );
                let _ = writeln!(s, "   {}", paint.dim(&one_line(reason, 300)));
                s.push_str(&indent(summary, "   "));
                writeln!(s)
            }
            Event::Assistant { .. } => {
                assistant(&mut s, &r.event, paint);
                Ok(())
            }
            Event::ToolResult { .. } => {
                shown += 1;
                tool_result(&mut s, &r.event, paint, filter.active().then_some(&calls));
                Ok(())
            }
            Event::SessionEnd { .. } => {
                session_end(&mut s, &r.event, paint, filter.active() && shown == 0)
            }
        };
    }
    s
}

/// An assistant turn: its usage and cost, its text, thinking and tool calls.
fn assistant(s: &mut String, event: &Event, paint: Paint) {
    let Event::Assistant {
        turn,
        content,
        stop_reason,
        usage,
        cost_usd,
    } = event
    else {
        return;
    };
    let _ = writeln!(
        s,
        "{}{}",
        paint.blue(&format!("── assistant · turn {turn}")),
        paint.dim(&format!(
            " · {} in / {} out / {} cache read / {} cache write · ${cost_usd:.4}{}",
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            match stop_reason {
                baton_agent::model::StopReason::MaxTokens => " · cut by max_tokens",
                _ => "",
            }
        ))
    );
    for b in content {
        match b {
            Block::Text { text } => s.push_str(&indent(text, "   ")),
            Block::Thinking { thinking, .. } => {
                s.push_str(&paint.dim(&indent(&one_line(thinking, 200), "   (thinking) ")))
            }
            Block::RedactedThinking { .. } => s.push_str(&paint.dim("   (redacted thinking)\n")),
            Block::Reasoning { summary, .. } if !summary.is_empty() => s.push_str(&paint.dim(
                &indent(&one_line(&summary.join(" "), 200), "   (reasoning) "),
            )),
            Block::Reasoning { .. } => s.push_str(&paint.dim("   (reasoning)\n")),
            Block::ToolUse { name, input, .. } => {
                let _ = writeln!(s, "   → {} {}", paint.bold(name), key_argument(name, input));
            }
            Block::ToolResult { .. } => {}
        }
    }
}

/// A tool's result: a mark (refused, error, ok), its time and its output (cut);
/// headed by its call when `calls` is given (a filtered view).
fn tool_result(
    s: &mut String,
    event: &Event,
    paint: Paint,
    calls: Option<&HashMap<&str, (&str, &Value)>>,
) {
    let Event::ToolResult {
        turn,
        tool_use_id,
        name,
        content,
        is_error,
        refused,
        duration_ms,
        ..
    } = event
    else {
        return;
    };
    if let Some(calls) = calls {
        let arg = calls
            .get(tool_use_id.as_str())
            .map(|(n, i)| key_argument(n, i))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "{} {}",
            paint.blue(&format!("── turn {turn} →")),
            format!("{} {arg}", paint.bold(name)).trim_end()
        );
    }
    let mark = if *refused {
        paint.refused("⛔ REFUSED")
    } else if *is_error {
        paint.red("✗ ERROR")
    } else {
        paint.green("✓")
    };
    let _ = writeln!(
        s,
        "   ← {} {mark} ({duration_ms} ms)",
        baton_records::human::terminal(name)
    );
    let gutter = if *refused || *is_error {
        paint.red("│")
    } else {
        paint.dim("│")
    };
    s.push_str(&indent(
        &cut_lines(content, RESULT_LINES),
        &format!("     {gutter} "),
    ));
}

/// The session's end: its outcome, turns, tokens, cost and error;
/// `nothing_shown` when a filter matched nothing.
fn session_end(
    s: &mut String,
    event: &Event,
    paint: Paint,
    nothing_shown: bool,
) -> std::fmt::Result {
    let Event::SessionEnd {
        outcome,
        turns,
        usage,
        cost_usd,
        error,
        ..
    } = event
    else {
        return Ok(());
    };
    if nothing_shown {
        let _ = writeln!(s, "{}", paint.dim("   (nothing matches the filter)"));
    }
    let o = if outcome == "completed" {
        paint.green(outcome)
    } else {
        paint.red(outcome)
    };
    let _ = writeln!(
        s,
        "\n{} {o}{}",
        paint.bold("── end:"),
        paint.bold(&format!(
            " · {} · {} tokens · {}",
            baton_records::human::plural(u64::from(*turns), "turn"),
            usage.total(),
            baton_records::human::cost(*cost_usd, usage.total())
        ))
    );
    match error {
        Some(e) => writeln!(s, "   {}", paint.red(&format!("error: {e}"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn color_choice() {
        assert!(ColorChoice::Auto.enabled(true, false));
        assert!(!ColorChoice::Auto.enabled(true, true));
        assert!(!ColorChoice::Auto.enabled(false, false));
        assert!(ColorChoice::Always.enabled(false, true));
        assert!(!ColorChoice::Never.enabled(true, false));
    }

    #[test]
    fn paint_off_is_plain() {
        assert_eq!(Paint::new(false).red("x"), "x");
        assert_eq!(Paint::new(true).red("x"), "\x1b[1;31mx\x1b[0m");
    }
}
