//! The sections about sessions: the gate findings of each session (what baton
//! had to correct after it) and the table of every session.

use std::fmt::Write as _;

use baton_records::{IntegrationOutcome, SessionOutcome};

use super::short;
use crate::analysis::failed;
use crate::fmt::{count, escape, seconds, usd, utc};
use crate::records::{Records, SessionRecord as Session, flip_backs};

/// Links to the features numbered in `v` (1-based), separated by spaces.
fn feature_list(v: &[usize]) -> String {
    v.iter()
        .map(|n| format!(r##"<a href="#f{n}">#{n}</a>"##))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The findings of one session, as list items (empty when there are none).
pub(super) fn findings_of(s: &Session) -> Vec<String> {
    let g = &s.gates;
    let mut v = Vec::new();
    if let Some(i) = &s.integration {
        let agent = s.agent.map(|a| format!("agent {a}: ")).unwrap_or_default();
        let kept = i
            .kept
            .as_deref()
            .map(|k| format!(" (kept as <code>{}</code>)", escape(k)))
            .unwrap_or_default();
        match i.outcome {
            IntegrationOutcome::Merged => {}
            IntegrationOutcome::Kept => v.push(format!(
                r#"<span class="warn">{agent}branch not merged</span>: nothing passed{kept}"#
            )),
            IntegrationOutcome::Conflict | IntegrationOutcome::Regressed => v.push(format!(
                r#"<span class="bad">{agent}{}</span>: {}; the feature went back to the queue{kept}"#,
                if i.outcome == IntegrationOutcome::Conflict {
                    "merge conflict"
                } else {
                    "broke a check when merged"
                },
                escape(&i.detail)
            )),
        }
    }
    if failed(s) {
        v.push(format!(
            r#"<span class="bad b">session {}</span>"#,
            escape(s.outcome.name())
        ));
    }
    for x in &g.violations {
        let commit = g
            .restore_commit
            .as_deref()
            .map(|c| format!(" in <code>{}</code>", escape(short(c))))
            .unwrap_or_default();
        v.push(format!(
            r#"<span class="bad">restored</span> the feature list{commit}: {}"#,
            escape(x)
        ));
    }
    for (n, why) in flip_backs(s) {
        v.push(format!(
            r##"<span class="bad">set back</span> <a href="#f{n}">#{n}</a>: {}"##,
            escape(&why)
        ));
    }
    if !g.leftover_files.is_empty() {
        let shown: Vec<String> = g
            .leftover_files
            .iter()
            .take(5)
            .map(|f| format!("<code>{}</code>", escape(f)))
            .collect();
        let more = g.leftover_files.len().saturating_sub(5);
        let commit = g
            .leftover_commit
            .as_deref()
            .map(|c| format!(" as <code>{}</code>", escape(short(c))))
            .unwrap_or_default();
        v.push(format!(
            r#"<span class="warn">dirty tree</span>: {} file(s) committed by baton{commit}: {}{}"#,
            g.leftover_files.len(),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    if g.refusals > 0 {
        v.push(format!(
            r#"<span class="warn">{} tool call(s) refused</span> by the policy"#,
            g.refusals
        ));
    }
    if !g.network_refused.is_empty() {
        let hosts: Vec<String> = g
            .network_refused
            .iter()
            .map(|h| format!("<code>{}</code>", escape(h)))
            .collect();
        v.push(format!(
            r#"<span class="warn">network refused</span> {} (not on <code>[sandbox] allow</code>)"#,
            hosts.join(", ")
        ));
    }
    if !g.notes_updated {
        v.push(r#"<span class="warn">progress notes not updated</span>"#.to_string());
    }
    match s.outcome {
        SessionOutcome::ContextFull => v.push(
            r#"<span class="warn">context window full</span>: the agent was told to wrap up; the next session started fresh"#
                .to_string(),
        ),
        SessionOutcome::UsageLimit => v.push(
            r#"<span class="warn">usage limit</span>: the agent CLI stopped on the provider's limit"#
                .to_string(),
        ),
        _ => {}
    }
    if s.waited_ms >= 1_000 {
        v.push(format!(
            r#"<span class="warn">waited {}</span> for the provider's quota to reset"#,
            crate::fmt::duration(s.waited_ms as f64 / 1000.0)
        ));
    }
    v
}

/// The table of gate findings, one row per session that had any; a note
/// when none did.
pub(super) fn findings(o: &mut String, r: &Records) {
    o.push_str(r#"<h2 id="findings">Gate findings per session</h2>"#);
    let rows: Vec<(&Session, Vec<String>)> = r
        .sessions
        .iter()
        .map(|s| (s, findings_of(s)))
        .filter(|(_, f)| !f.is_empty())
        .collect();
    if rows.is_empty() {
        o.push_str(r#"<p class="note ok">After every session the feature list was as allowed, the tree was clean and the notes were written: the gates had nothing to correct.</p>"#);
        return;
    }
    let _ = write!(
        o,
        r#"<p class="note">{} of {} sessions needed a correction. Restores undo edits of the feature list beyond <code>passes</code>; flip-backs set a claimed feature back to failing; dirty trees are work baton committed for the session.</p>"#,
        rows.len(),
        r.sessions.len()
    );
    o.push_str(r#"<div class="scroll"><table><thead><tr><th class="n">#</th><th>kind</th><th>outcome</th><th>findings</th></tr></thead><tbody>"#);
    for (s, f) in rows {
        let _ = write!(
            o,
            r##"<tr id="g{n}"><td class="n"><a href="#s{n}">{n}</a></td><td>{}</td><td>{}</td><td><ul class="find">{}</ul></td></tr>"##,
            escape(s.kind.name()),
            escape(s.outcome.name()),
            f.iter()
                .map(|x| format!("<li>{x}</li>"))
                .collect::<String>(),
            n = s.number
        );
    }
    o.push_str("</tbody></table></div>");
}

/// The table of every session: kind, start, time, outcome, turns, tokens,
/// cost, features flipped and a link to its findings.
pub(super) fn sessions(o: &mut String, r: &Records) {
    let _ = write!(
        o,
        r#"<h2 id="sessions">Sessions ({})</h2>"#,
        r.sessions.len()
    );
    if r.sessions.is_empty() {
        o.push_str(r#"<p class="note">No session recorded yet.</p>"#);
        return;
    }
    o.push_str(r#"<div class="scroll"><table><thead><tr><th class="n">#</th><th>kind</th><th>started (UTC)</th><th class="n">time</th><th>outcome</th><th class="n">turns</th><th class="n">tokens</th><th class="n">cost</th><th>flipped</th><th>findings</th></tr></thead><tbody>"#);
    for s in &r.sessions {
        let f = findings_of(s);
        let fcell = if f.is_empty() {
            String::new()
        } else {
            format!(
                r##"<a class="{}" href="#g{}">{} finding(s)</a>"##,
                if failed(s) || !s.gates.violations.is_empty() {
                    "bad"
                } else {
                    "warn"
                },
                s.number,
                f.len()
            )
        };
        let _ = write!(
            o,
            r#"<tr id="s{n}"><td class="n">{n}</td><td>{}</td><td>{}</td><td class="n">{}</td><td class="{}">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td>{}</td><td>{fcell}</td></tr>"#,
            escape(s.kind.name()),
            utc(s.started_ms),
            seconds(s.duration_secs()),
            if failed(s) { "bad" } else { "" },
            escape(s.outcome.name()),
            s.turns,
            count(s.usage.total()),
            baton_records::human::unpriced(s.cost(), s.usage.total())
                .map_or_else(|| usd(s.cost(), 4), str::to_string),
            feature_list(&s.gates.flipped),
            n = s.number
        );
    }
    o.push_str("</tbody></table></div>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::SessionKind;

    #[test]
    fn a_parallel_runs_conflict_is_a_finding_naming_the_agent_and_the_kept_branch() {
        let s = Session {
            agent: Some(2),
            integration: Some(baton_records::Integration {
                outcome: IntegrationOutcome::Conflict,
                commit: None,
                kept: Some("refs/baton/unintegrated/f4-s7".into()),
                detail: "shared.txt".into(),
            }),
            ..Session::new(7, SessionKind::Coding, SessionOutcome::Completed)
        };
        let f = findings_of(&s).join(" ");
        assert!(f.contains("agent 2: merge conflict"), "{f}");
        assert!(f.contains("shared.txt") && f.contains("f4-s7"), "{f}");
    }

    #[test]
    fn waits_and_full_context_windows_are_findings() {
        let mut s = Session {
            waited_ms: 20_000,
            ..Session::new(3, SessionKind::Coding, SessionOutcome::ContextFull)
        };
        let f = findings_of(&s).join(" ");
        assert!(f.contains("context window full"), "{f}");
        assert!(f.contains("waited 20s"), "{f}");
        s.outcome = SessionOutcome::Completed;
        s.waited_ms = 0;
        assert!(findings_of(&s).is_empty(), "{:?}", findings_of(&s));
    }
}
