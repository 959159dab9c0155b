//! The people's sections: "Needs a person" (failing features an agent blocked
//! or baton deferred, with their attempts and reasons) and "Told by a person"
//! (guidance given with `baton tell`, and the session whose brief carried it).

use std::fmt::Write as _;

use crate::fmt::escape;
use crate::records::{FeatureRecord, Records};

/// Features (1-based) with their records.
pub(super) type Numbered<'a> = Vec<(usize, &'a FeatureRecord)>;

/// Failing features an agent blocked, and failing features deferred (not blocked),
/// by number.
pub(super) fn set_aside(r: &Records) -> (Numbered<'_>, Numbered<'_>) {
    let failing = |n: usize| {
        n.checked_sub(1)
            .and_then(|i| r.features.get(i))
            .is_some_and(|f| !f.passes)
    };
    let mut blocked = Vec::new();
    let mut deferred = Vec::new();
    for (&n, rec) in &r.feature_records {
        if !failing(n) {
            continue;
        }
        if rec.blocked.is_some() {
            blocked.push((n, rec));
        } else if rec.deferred.is_some() {
            deferred.push((n, rec));
        }
    }
    (blocked, deferred)
}

/// Blocked and deferred features with their attempts and reasons; nothing when none.
pub(super) fn needs_person(o: &mut String, r: &Records) {
    let (blocked, deferred) = set_aside(r);
    if blocked.is_empty() && deferred.is_empty() {
        return;
    }
    o.push_str(r#"<h2 id="needs-person">Needs a person</h2>"#);
    let _ = write!(
        o,
        r#"<p class="note">{} blocked, {} deferred. An agent blocks a feature that cannot pass in this environment: baton does not hand it out again until a person acts on the reason and runs <code>baton unblock DIR N</code>. A deferred feature failed <code>[run] feature_attempts</code> times and comes back after every other failing feature.</p>"#,
        blocked.len(),
        deferred.len()
    );
    o.push_str(r#"<div class="scroll"><table id="set-aside"><thead><tr><th class="n">#</th><th>feature</th><th>state</th><th class="n">attempts</th><th>reason</th></tr></thead><tbody>"#);
    let desc = |n: usize| {
        r.features
            .get(n - 1)
            .map(|f| f.description.clone())
            .unwrap_or_default()
    };
    for (n, rec) in &blocked {
        let by = rec
            .blocked_in
            .map(|s| format!(r##" by <a href="#s{s}">session {s}</a>"##))
            .unwrap_or_default();
        let _ = write!(
            o,
            r##"<tr class="fail"><td class="n"><a href="#f{n}">{n}</a></td><td>{}</td><td><span class="bad">blocked</span>{by}</td><td class="n">{}</td><td>{}</td></tr>"##,
            escape(&desc(*n)),
            rec.attempts,
            escape(rec.blocked.as_deref().unwrap_or_default())
        );
    }
    for (n, rec) in &deferred {
        let _ = write!(
            o,
            r##"<tr class="fail"><td class="n"><a href="#f{n}">{n}</a></td><td>{}</td><td><span class="warn">deferred</span></td><td class="n">{}</td><td>last: {}</td></tr>"##,
            escape(&desc(*n)),
            rec.attempts,
            escape(rec.last_reason.as_deref().unwrap_or("unknown"))
        );
    }
    o.push_str("</tbody></table></div>");
}
/// Guidance given with `baton tell`, oldest first, each with the session whose
/// brief carried it; nothing when there was none.
pub(super) fn told(o: &mut String, r: &Records) {
    let told: Vec<_> = r
        .ledger
        .iter()
        .filter(|e| e.kind == crate::records::LedgerKind::Told)
        .collect();
    if told.is_empty() {
        return;
    }
    o.push_str(r#"<h2 id="told">Told by a person</h2>"#);
    o.push_str(r#"<p class="note">Guidance given with <code>baton tell DIR "text"</code>: the brief of the session named carried it.</p>"#);
    o.push_str(r#"<div class="scroll"><table id="told-table"><thead><tr><th class="n">session</th><th>guidance</th></tr></thead><tbody>"#);
    for e in told {
        let _ = write!(
            o,
            r##"<tr><td class="n"><a href="#s{n}">{n}</a></td><td>{}</td></tr>"##,
            escape(&e.detail),
            n = e.session
        );
    }
    o.push_str("</tbody></table></div>");
}
