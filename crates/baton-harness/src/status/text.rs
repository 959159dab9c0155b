//! `baton status` as text for people: where the project stands, the last
//! sessions (one row each, within 100 columns), the next features, and what
//! needs a person.

use std::fmt::Write as _;

use baton_records::SessionOutcome;
use baton_records::human::{count, duration, features};

use super::{FeatureProof, NeedsPerson, SessionStatus, Status};

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!(
            "{}…",
            s.chars().take(max.saturating_sub(1)).collect::<String>()
        )
    }
}

/// A path cut from the left so its end (the project's name) stays visible.
fn cut_left(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        format!("…{}", s.chars().skip(n + 1 - max).collect::<String>())
    }
}

/// A 20-cell bar of `part` out of `whole`.
fn bar(part: usize, whole: usize) -> String {
    let filled = (part * 20).checked_div(whole).unwrap_or(0).min(20);
    format!("{}{}", "█".repeat(filled), "░".repeat(20 - filled))
}

/// Sessions shown in the text table (the most recent); `--json` has them all.
pub const TABLE_SESSIONS: usize = 20;

/// What the gates found after a session, in a few words.
fn findings(x: &SessionStatus) -> String {
    let mut f = Vec::new();
    if matches!(x.outcome, SessionOutcome::Error | SessionOutcome::Killed) {
        f.push(x.outcome.to_string());
    }
    if !x.network_refused.is_empty() {
        f.push(format!("network refused {}", x.network_refused.join(" ")));
    }
    if let Some(a) = x.agent {
        f.push(format!("agent {a}"));
    }
    if let Some(v) = x.verifier_session {
        f.push(format!("verifier {v:04}"));
    }
    match x.integration {
        Some(baton_records::IntegrationOutcome::Conflict) => f.push("conflict, requeued".into()),
        Some(baton_records::IntegrationOutcome::Regressed) => {
            f.push("broke a check when merged, requeued".into());
        }
        _ => {}
    }
    if !x.violations.is_empty() {
        f.push(format!("{} restore", x.violations.len()));
    }
    if !x.unflipped.is_empty() {
        f.push(format!("{} set back", x.unflipped.len()));
    }
    if !x.reverted.is_empty() {
        f.push(format!("{} reverted", x.reverted.len()));
    }
    if !x.regressions.is_empty() {
        f.push(format!("{} regressed", x.regressions.len()));
    }
    if x.leftover_files > 0 {
        f.push("dirty".to_string());
    }
    if !x.notes_updated {
        f.push("no notes".to_string());
    }
    if x.refusals > 0 {
        f.push(format!("{} refused", x.refusals));
    }
    if x.waited_secs >= 1.0 {
        f.push(format!("waited {}", duration(x.waited_secs)));
    }
    f.join(", ")
}

/// The status as text that fits 100 columns.
pub fn render(s: &Status) -> String {
    let mut o = String::new();
    standing(&mut o, s);
    session_table(&mut o, s);
    next_and_waiting(&mut o, s);
    needs_a_person(&mut o, &s.needs_person);
    o
}

/// Where the project stands: features, sessions, checks, proof, cost, tree,
/// limits, agents, a wait or an unfinished session.
fn standing(o: &mut String, s: &Status) {
    let pct = (s.passing * 100).checked_div(s.total).unwrap_or(0);
    let _ = writeln!(o, "{}", cut_left(&s.project, 100));
    let asked = match s.asked {
        Some(asked) if s.total > 0 && s.total < asked as usize => {
            format!(" · {} of {asked} asked", s.total)
        }
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "features  {}/{} passing ({pct}%){asked}",
        s.passing, s.total
    );
    if !s.list_accepted && s.total > 0 {
        let _ = writeln!(
            o,
            "  the feature list is not accepted yet (no run has checked it): what it marks passing does not count"
        );
    }
    for c in &s.categories {
        let _ = writeln!(
            o,
            "  {:<20} {:>5}/{:<5}",
            cut(&c.name, 20),
            c.passing,
            c.total
        );
    }
    if s.total > 0 {
        let _ = writeln!(o, "          {} {pct}%", bar(s.passing, s.total));
    }
    let _ = writeln!(
        o,
        "sessions  {} · {} tokens · {} · {} undone · {}",
        s.totals.sessions,
        s.totals.tokens,
        baton_records::human::cost(s.totals.cost_usd, s.totals.tokens),
        baton_records::human::plural(s.totals.violations as u64, "violation"),
        baton_records::human::plural(u64::from(s.totals.refusals), "refusal")
    );
    if s.totals.verifier_cost_usd > 0.0 || s.totals.reverted > 0 || s.totals.regressions > 0 {
        let _ = writeln!(
            o,
            "checks    {} flips reverted · {} regressions set back · verifier ${:.4} (in the total)",
            s.totals.reverted, s.totals.regressions, s.totals.verifier_cost_usd
        );
    }
    if !s.proofs.is_empty() {
        let _ = writeln!(o, "proven    {}", proof_summary(&s.proofs));
    }
    let mut cost = format!("cost      ${:.2} in all", s.totals.cost_usd);
    if s.passing > 0 {
        let _ = write!(
            cost,
            " · ${:.2} per passing feature",
            s.cost_per_passing_usd
        );
    }
    if let (Some(b), Some(left)) = (s.budget_usd, s.budget_left_usd) {
        let _ = write!(cost, " · budget ${b:.2}, ${left:.2} left");
        if left <= 0.0 {
            cost.push_str(" (spent)");
        }
    }
    let _ = writeln!(o, "{cost}");
    let _ = writeln!(
        o,
        "tree      {}",
        if s.tree_clean {
            "clean"
        } else {
            "uncommitted changes"
        }
    );
    if !s.totals.timing.is_zero() {
        let _ = writeln!(
            o,
            "time      {}",
            time_line(&s.totals.timing, s.totals.waited_secs)
        );
    }
    if let Some(line) = super::forge::line(&s.forge, s.pull_request.as_ref()) {
        let _ = writeln!(o, "forge     {line}");
    }
    if s.totals.waited_secs >= 1.0 || s.totals.context_full > 0 {
        let _ = writeln!(
            o,
            "limits    {} waiting for quota resets · {} session(s) filled their context window",
            duration(s.totals.waited_secs),
            s.totals.context_full
        );
    }
    if let Some(p) = &s.parallel {
        let _ = writeln!(
            o,
            "agents    {} agents · {} sessions · {} of sessions in {} · {:.1}× one agent at a time",
            p.agents,
            p.sessions,
            duration(p.session_secs),
            duration(p.wall_secs),
            p.speed_up
        );
    }
    if let Some(until) = s.waiting_until_ms {
        let left = until.saturating_sub(baton_agent::transcript::now_ms()) as f64 / 1000.0;
        let _ = writeln!(
            o,
            "waiting   for the provider's quota to reset: {} left",
            duration(left)
        );
    }
    if let Some(st) = &s.stalled {
        let _ = writeln!(
            o,
            "stalled   {} coding sessions in a row without a newly passing feature ([run] stall_sessions = {}): `baton run` stops at once until a person acts (baton tell, baton unblock, baton plan or accept, a change to baton.toml)",
            st.sessions, st.limit
        );
    }
    if let Some(n) = s.unfinished_session {
        let _ = writeln!(
            o,
            "unfinished session {n:04}: `baton run` resumes it (gates run first)"
        );
    }
}

/// The last sessions, one row each.
fn session_table(o: &mut String, s: &Status) {
    if s.sessions.is_empty() {
        return;
    }
    // The outcome column is as wide as its longest name shown ("context_full").
    let skip = s.sessions.len().saturating_sub(TABLE_SESSIONS);
    let width = s.sessions[skip..]
        .iter()
        .map(|x| x.outcome.name().len())
        .max()
        .unwrap_or(0)
        .max(10);
    let _ = writeln!(
        o,
        "\n   #  kind         {:<width$} {:>7}  turns tokens     cost  flipped     findings",
        "outcome", "time"
    );
    if skip > 0 {
        let _ = writeln!(
            o,
            "      … {skip} earlier session(s); `baton status --json` lists them all"
        );
    }
    for x in &s.sessions[skip..] {
        let _ = writeln!(o, "{}", session_row(x, width));
    }
}

/// The next features handed out, and those waiting for others to pass.
fn next_and_waiting(o: &mut String, s: &Status) {
    if !s.next.is_empty() {
        let _ = writeln!(o, "\nnext");
        for n in &s.next {
            let _ = writeln!(
                o,
                "  #{:<4} [{}] {}",
                n.number,
                cut(&n.category, 12),
                cut(&n.description, 75)
            );
        }
    }
    if !s.waiting.is_empty() {
        let shown: Vec<String> = s
            .waiting
            .iter()
            .take(8)
            .map(|w| {
                let on: Vec<String> = w.on.iter().map(|n| format!("#{n}")).collect();
                format!("#{} on {}", w.feature, on.join(", "))
            })
            .collect();
        let more = s.waiting.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "
waiting: {}{more}",
            shown.join("; ")
        );
    }
}

/// Features set aside for a person: blocked (with the reason) and deferred.
fn needs_a_person(o: &mut String, p: &NeedsPerson) {
    if p.blocked.is_empty() && p.deferred.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nneeds a person");
    for b in &p.blocked {
        let by = b
            .session
            .map(|n| format!(" by session {n}"))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "  #{:<4} blocked{by}: {}",
            b.number,
            cut(&b.description, 60)
        );
        let _ = writeln!(
            o,
            "{}",
            cut(&format!("        reason: {}", one_line(&b.reason)), 100)
        );
    }
    for d in &p.deferred {
        let _ = writeln!(
            o,
            "  #{:<4} deferred after {} failed attempts: {}",
            d.number,
            d.attempts,
            cut(&d.description, 55)
        );
        if let Some(why) = &d.last_reason {
            let _ = writeln!(
                o,
                "{}",
                cut(&format!("        last: {}", one_line(why)), 100)
            );
        }
    }
    if !p.blocked.is_empty() {
        let _ = writeln!(
            o,
            "  act on the reason, then `baton unblock DIR N` hands a blocked feature out again"
        );
    }
}

/// How the passing features were proven, by kind, each with its features:
/// `check #1, #4 · verifier #2 · trusted #3`.
fn proof_summary(proofs: &[FeatureProof]) -> String {
    let mut parts = Vec::new();
    for (by, label) in [
        ("check", "by check"),
        ("screenshot", "by verifier with screenshots"),
        ("verifier", "by verifier"),
        ("accepted", "passed when accepted"),
        ("trusted", "on the agent's word"),
        ("unrecorded", "no proof on record"),
    ] {
        let ns: Vec<usize> = proofs
            .iter()
            .filter(|p| p.by == by)
            .map(|p| p.feature)
            .collect();
        if !ns.is_empty() {
            parts.push(format!("{label} {}", cut(&features(&ns), 60)));
        }
    }
    parts.join(" · ")
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One session's row of the table, its outcome in a column `width` wide (every
/// name whole: "interrupted", "context_full"), the findings cut to the line's
/// width.
fn session_row(x: &SessionStatus, width: usize) -> String {
    let flipped = x
        .flipped
        .iter()
        .map(|n| format!("#{n}"))
        .collect::<Vec<_>>()
        .join(",");
    let line = format!(
        "{:>4}  {:<11}  {:<width$} {:>7} {:>5} {:>6} {:>8}  {:<10}  {}",
        x.number,
        x.kind,
        x.outcome.name(),
        duration(x.duration_secs),
        x.turns,
        count(x.tokens),
        format!("${:.4}", x.cost_usd),
        cut(&flipped, 10),
        findings(x)
    );
    cut(line.trim_end(), 100)
}

/// Where the sessions' wall time went: the agents, and what baton did around
/// them (sweeps and base checks before, gates and proof after, quota waits).
pub fn time_line(t: &baton_records::Timing, waited_secs: f64) -> String {
    let secs = |ms: u64| duration(ms as f64 / 1000.0);
    let mut parts = vec![
        format!("agents {}", secs(t.agent_ms)),
        format!("sweeps {}", secs(t.sweep_ms)),
        format!("base checks {}", secs(t.base_check_ms)),
        format!("gates {}", secs(t.gates_ms)),
        format!("proof {}", secs(t.verifier_ms)),
    ];
    if waited_secs >= 1.0 {
        parts.push(format!("quota waits {}", duration(waited_secs)));
    }
    parts.join(" · ")
}

#[cfg(test)]
mod render_tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(bar(1, 3), "██████░░░░░░░░░░░░░░");
        assert_eq!(cut_left("/a/very/long/path", 8), "…ng/path");
    }

    #[test]
    fn a_session_row_names_every_outcome_whole() {
        for outcome in [
            SessionOutcome::Interrupted,
            SessionOutcome::ContextFull,
            SessionOutcome::TokenLimit,
        ] {
            let row = session_row(
                &SessionStatus {
                    timing: baton_records::Timing::default(),
                    number: 12,
                    kind: "coding".into(),
                    outcome,
                    duration_secs: 61.0,
                    turns: 1,
                    tokens: 1200,
                    cost_usd: 0.5,
                    verifier_cost_usd: 0.0,
                    verifier_session: None,
                    sweep_secs: None,
                    reverted: Vec::new(),
                    regressions: Vec::new(),
                    flipped: vec![3],
                    unflipped: Vec::new(),
                    violations: Vec::new(),
                    leftover_files: 0,
                    notes_updated: true,
                    refusals: 0,
                    network_refused: Vec::new(),
                    commits: 1,
                    waited_secs: 0.0,
                    agent: None,
                    integration: None,
                },
                12,
            );
            assert!(row.contains(&format!("{} ", outcome.name())), "{row}");
            assert!(!row.contains('…'), "{row}");
        }
    }
}
