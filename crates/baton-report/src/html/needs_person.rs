//! The "Needs a person" section: failing features an agent blocked or baton
//! deferred, with their attempts and reasons.

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
