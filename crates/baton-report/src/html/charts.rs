//! The charts section: features passing over sessions, tokens and cost per
//! session, the cost breakdown and the time line. The SVG itself is drawn in
//! `crate::svg`; this file feeds it the records and adds titles and legends.

use std::fmt::Write as _;

use crate::Options;
use crate::analysis::{Analysis, failed};
use crate::fmt::{escape, money, seconds, utc};
use crate::records::{Records, SessionKind, SessionRecord as Session, flip_backs};
use crate::svg::{self, SessionBar, Span};

/// The CSS class of a session's bar in the time line: failed, initializer,
/// corrected by the gates, newly passing, or nothing new.
fn session_class(s: &Session) -> &'static str {
    let g = &s.gates;
    if failed(s) {
        "s-fail"
    } else if s.kind == SessionKind::Initializer {
        "s-init"
    } else if !g.violations.is_empty() || !flip_backs(s).is_empty() || g.refusals > 0 {
        "s-warn"
    } else if !g.flipped.is_empty() {
        "s-flip"
    } else {
        "s-none"
    }
}

/// A chart's legend: one swatch per (CSS colour variable, name).
fn legend(o: &mut String, items: &[(&str, &str)]) {
    o.push_str(r#"<div class="legend">"#);
    for (var, name) in items {
        let _ = write!(o, r#"<span style="--c:var({var})">{name}</span>"#);
    }
    o.push_str("</div>");
}

/// The charts: features passing over sessions, tokens and cost per session
/// with the cost breakdown, and the time line of sessions.
pub(super) fn charts(o: &mut String, r: &Records, a: &Analysis, opts: &Options) {
    let numbers: Vec<u32> = r.sessions.iter().map(|s| s.number).collect();
    o.push_str(r#"<h2 id="progress">Features passing over sessions</h2><div class="card">"#);
    o.push_str(&svg::passing(&a.passing_after, r.features.len(), &numbers));
    legend(
        o,
        &[
            ("--pass", "passing after the session"),
            ("--muted", "features in the list"),
        ],
    );
    o.push_str("</div>");

    let bars: Vec<SessionBar> = r
        .sessions
        .iter()
        .map(|s| SessionBar {
            number: s.number,
            tokens: [
                s.usage.input_tokens,
                s.usage.output_tokens,
                s.usage.cache_read_tokens,
                s.usage.cache_write_tokens,
            ],
            cost_usd: s.cost(),
        })
        .collect();
    o.push_str(
        r#"<h2 id="spend">Tokens and cost per session</h2><div class="two"><div class="card">"#,
    );
    o.push_str(&svg::tokens(&bars));
    legend(
        o,
        &[
            ("--t-in", "input"),
            ("--t-out", "output"),
            ("--t-cr", "cache read"),
            ("--t-cw", "cache write"),
        ],
    );
    o.push_str(r#"</div><div class="card">"#);
    o.push_str(&svg::cost(&bars, opts.budget_usd));
    let mut items = vec![
        ("--cost", "per session (left axis)"),
        ("--fg", "running total (right axis)"),
    ];
    if opts.budget_usd.is_some() {
        items.push(("--fail", "budget"));
    }
    legend(o, &items);
    o.push_str("</div></div>");
    // Cost breakdown.
    o.push_str(r#"<p class="note">"#);
    let kinds: Vec<String> = a
        .cost_by_kind
        .iter()
        .map(|(k, n, c)| format!("{} in {n} {} session(s)", money(*c), escape(k)))
        .collect();
    let _ = write!(
        o,
        "Run total {} ({}). Each feature is charged the cost of the sessions that flipped it (a session's cost split evenly over its flips); {} went to sessions that flipped nothing.",
        money(a.total_cost),
        kinds.join(", "),
        money(a.unattributed_cost)
    );
    o.push_str("</p>");

    let spans: Vec<Span> = r
        .sessions
        .iter()
        .map(|s| Span {
            number: s.number,
            start_ms: s.started_ms,
            end_ms: s.ended_ms,
            class: session_class(s),
            title: format!(
                "session {} · {} · {} · {} · {} · {} flipped",
                s.number,
                s.kind,
                s.outcome,
                utc(s.started_ms),
                seconds(s.duration_secs()),
                s.gates.flipped.len()
            ),
        })
        .collect();
    o.push_str(r#"<h2 id="timeline">Time line</h2><div class="card">"#);
    o.push_str(&svg::timeline(&spans));
    legend(
        o,
        &[
            ("--init", "initializer"),
            ("--pass", "newly passing"),
            ("--none", "nothing new"),
            ("--warn", "gates corrected something"),
            ("--fail", "error or killed"),
        ],
    );
    o.push_str(r##"<p class="note">Times are UTC. Every session is listed, with its start, under <a href="#sessions">Sessions</a>.</p></div>"##);
}
