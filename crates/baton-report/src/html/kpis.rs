//! The top of the page: the run's status pill and the four headline boxes
//! (how far, how much, budget, what broke).

use std::fmt::Write as _;

use super::needs_person::set_aside;
use super::{meter, pct};
use crate::Options;
use crate::analysis::{Analysis, failed};
use crate::fmt::{count, duration, money, usd};
use crate::records::Records;

/// The run's status for the header: a CSS class and a sentence, from the
/// first that applies of complete, done except blocked features, unfinished,
/// budget spent, last session failed, stalled, no session yet and in progress.
pub(super) fn status_pill(r: &Records, a: &Analysis, opts: &Options) -> (&'static str, String) {
    let total = r.features.len();
    let passing = a.passing_after.last().copied().unwrap_or(0);
    if total > 0 && passing == total {
        return ("ok", "complete: every feature passes".into());
    }
    let (blocked, _) = set_aside(r);
    if !blocked.is_empty() && passing + blocked.len() == total {
        return (
            "warn",
            format!(
                "done except {} blocked feature(s): see Needs a person",
                blocked.len()
            ),
        );
    }
    if let Some(n) = r.unfinished {
        return (
            "bad",
            format!("session {n} did not finish; `baton run` resumes"),
        );
    }
    if let Some(b) = opts.budget_usd
        && a.total_cost >= b
    {
        return ("bad", "budget spent".into());
    }
    if r.sessions.last().is_some_and(failed) {
        return ("bad", "last session failed".into());
    }
    if r.stalled >= 3 {
        return (
            "warn",
            format!(
                "stalled: {} sessions without a newly passing feature",
                r.stalled
            ),
        );
    }
    if r.sessions.is_empty() {
        return ("run", "no session yet".into());
    }
    ("run", "in progress".into())
}

/// The four headline boxes: how far (features passing), how much (cost,
/// tokens, sessions, time), what is left of the budget, and what broke.
pub(super) fn kpis(o: &mut String, r: &Records, a: &Analysis, opts: &Options) {
    let total = r.features.len();
    let passing = a.passing_after.last().copied().unwrap_or(0);
    o.push_str(r#"<section class="kpis">"#);
    // How far.
    let _ = write!(
        o,
        r#"<div class="kpi" id="kpi-far"><h3>How far</h3><div class="big">{passing} / {total}</div>"#
    );
    meter(o, "", passing as f64 / total.max(1) as f64);
    let recent: usize = r
        .sessions
        .iter()
        .rev()
        .take(5)
        .map(|s| s.gates.flipped.len())
        .sum();
    let _ = write!(
        o,
        r#"<div class="note">{}% passing · {recent} newly passing in the last {} session(s)</div></div>"#,
        pct(passing, total),
        r.sessions.len().min(5)
    );
    // How much.
    let per = if passing > 0 {
        format!(
            "{} per passing feature",
            money(a.total_cost / passing as f64)
        )
    } else {
        "no feature passes yet".into()
    };
    // What many agents bought, when a run had them.
    let agents = baton_records::state::parallelism(&r.sessions).map_or_else(String::new, |p| {
        format!(
            r#"<br><span id="speed-up">{} agents: {} of their sessions in {}, {:.1}× one agent at a time</span>"#,
            p.agents,
            duration(p.session_secs),
            duration(p.wall_secs),
            p.speed_up
        )
    });
    // The sweeps run between sessions, outside their clocks.
    let sweeps = if a.sweep_secs > 0.0 {
        format!(
            r#" · <span id="sweep-time">{} in regression sweeps</span>"#,
            duration(a.sweep_secs)
        )
    } else {
        String::new()
    };
    // Where the sessions' wall time went, baton's own share included.
    let mut t = baton_records::Timing::default();
    for s in &r.sessions {
        t.add(&s.timing);
    }
    let split = if t.is_zero() {
        String::new()
    } else {
        let secs = |ms: u64| duration(ms as f64 / 1000.0);
        format!(
            r#"<br><span id="time-split">time: agents {} · sweeps {} · base checks {} · gates {} · proof {}</span>"#,
            secs(t.agent_ms),
            secs(t.sweep_ms),
            secs(t.base_check_ms),
            secs(t.gates_ms),
            secs(t.verifier_ms)
        )
    };
    let split = format!("{split}{}{}", wall_time(r), slowest_checks(r));
    let _ = write!(
        o,
        r#"<div class="kpi" id="kpi-cost"><h3>How much</h3><div class="big">{}</div><div class="note">{per}<br>{} tokens · {} sessions · {} of session time{sweeps}{split}{agents}</div></div>"#,
        baton_records::human::unpriced(a.total_cost, a.total_tokens)
            .map_or_else(|| money(a.total_cost), str::to_string),
        count(a.total_tokens),
        r.sessions.len(),
        duration(a.session_secs)
    );
    // Budget.
    o.push_str(r#"<div class="kpi" id="kpi-budget"><h3>Budget</h3>"#);
    match opts.budget_usd {
        Some(b) => {
            let left = b - a.total_cost;
            let _ = write!(
                o,
                r#"<div class="big {}">{}</div>"#,
                if left <= 0.0 { "bad" } else { "" },
                usd(left.max(0.0), 2)
            );
            meter(
                o,
                if left <= 0.0 { "over" } else { "spend" },
                a.total_cost / b.max(f64::MIN_POSITIVE),
            );
            let _ = write!(
                o,
                r#"<div class="note">left of {} ({}% spent)</div>"#,
                usd(b, 2),
                ((a.total_cost / b.max(f64::MIN_POSITIVE)) * 100.0).round()
            );
        }
        None => o.push_str(
            r#"<div class="big">—</div><div class="note">no budget set (<code>--budget-usd</code> or <code>[run] budget_usd</code>)</div>"#,
        ),
    }
    o.push_str("</div>");
    // What broke.
    let f = &a.findings;
    o.push_str(r#"<div class="kpi" id="kpi-broke"><h3>What broke</h3>"#);
    if f.is_empty() {
        o.push_str(r#"<div class="big ok">nothing</div><div class="note">the gates had nothing to correct</div>"#);
    } else {
        let mut items = Vec::new();
        let mut add = |n: usize, what: &str, class: &str| {
            if n > 0 {
                items.push(format!(
                    r##"<li><a class="{class}" href="#findings">{n} {what}</a></li>"##
                ));
            }
        };
        add(f.failed_sessions, "failed session(s)", "bad");
        add(f.restores, "feature-list restore(s)", "bad");
        add(f.flip_backs, "flip-back(s)", "bad");
        add(f.dirty_trees, "dirty tree(s)", "warn");
        add(f.refusals as usize, "refusal(s)", "warn");
        add(f.notes_missing, "session(s) without notes", "warn");
        let _ = write!(o, r#"<ul>{}</ul>"#, items.join(""));
    }
    o.push_str("</div></section>");
}

/// The slowest three checks, as each last ran in a sweep: where a sweep's time
/// goes (empty when no sweep timed one).
fn slowest_checks(r: &Records) -> String {
    let mut last_ms = std::collections::BTreeMap::new();
    for s in &r.sessions {
        if let Some(w) = &s.sweep {
            last_ms.extend(w.check_ms.iter().map(|(f, ms)| (*f, *ms)));
        }
    }
    let mut slow: Vec<(usize, u64)> = last_ms.into_iter().collect();
    slow.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if slow.is_empty() {
        String::new()
    } else {
        let each: Vec<String> = slow
            .iter()
            .take(3)
            .map(|(f, ms)| format!("#{f} {}", duration(*ms as f64 / 1000.0)))
            .collect();
        format!(
            r#"<br><span id="slow-checks">slowest checks: {}</span>"#,
            each.join(", ")
        )
    }
}

/// Where the wall time of the runs of one agent went: the sessions' parts, the
/// waits for a quota, the sweeps before "complete", and what is left, baton's
/// own work between sessions (empty when no run was recorded).
fn wall_time(r: &Records) -> String {
    let wall: u64 = r.runs.iter().map(baton_records::RunRecord::wall_ms).sum();
    if wall == 0 {
        return String::new();
    }
    let mut t = baton_records::Timing::default();
    for s in r
        .sessions
        .iter()
        .filter(|s| r.runs.iter().any(|run| run.holds(s.started_ms)))
    {
        t.add(&s.timing);
    }
    let complete: u64 = r.runs.iter().map(|run| run.complete_sweep_ms).sum();
    let pauses: u64 = r.runs.iter().map(|run| run.pause_ms).sum();
    let named = t.total_ms() + complete + pauses;
    let between = wall.saturating_sub(named);
    let secs = |ms: u64| duration(ms as f64 / 1000.0);
    let killed = r.runs.iter().filter(|run| run.killed).count();
    let killed = if killed == 0 {
        String::new()
    } else {
        format!(" ({killed} run(s) killed, counted from their sessions)")
    };
    format!(
        r#"<br><span id="wall-time">wall time {}{killed}: agents {} · sweeps {} · base checks {} · gates {} · proof {} · quota waits {} · sweeps before "complete" {} · pauses {} · between sessions {} ({:.0}%)</span>"#,
        secs(wall),
        secs(t.agent_ms),
        secs(t.sweep_ms),
        secs(t.base_check_ms),
        secs(t.gates_ms),
        secs(t.verifier_ms),
        secs(t.wait_after_ms),
        secs(complete),
        secs(pauses),
        secs(between),
        between as f64 * 100.0 / wall as f64
    )
}
