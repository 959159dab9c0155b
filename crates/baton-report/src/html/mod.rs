//! The page: one HTML document with its style, charts and images inline. This
//! file writes the header and footer and puts the sections in order; each
//! section is drawn in its own file: the headline boxes in `kpis`, "Needs a
//! person" in `needs_person`, the charts in `charts`, the gate findings and the
//! session table in `sessions`, the feature list in `features`.

mod charts;
mod features;
mod kpis;
mod needs_person;
mod sessions;

use std::fmt::Write as _;

use crate::Options;
use crate::analysis::Analysis;
use crate::fmt::{escape, utc};
use crate::records::Records;

/// The page's style sheet, inlined.
const STYLE: &str = include_str!("../style.css");

/// The feature filter (search box and "failing only"), inlined; it marks the
/// body `data-ready` once wired.
const SCRIPT: &str = r#"(function(){var q=document.getElementById('q'),f=document.getElementById('only-failing');
if(!q||!f){return;}var rows=document.querySelectorAll('#features tbody tr');
function go(){var t=q.value.toLowerCase(),fo=f.checked;for(var i=0;i<rows.length;i++){var r=rows[i];
r.hidden=(fo&&!r.classList.contains('fail'))||(t!==''&&r.textContent.toLowerCase().indexOf(t)<0);}
if(t!==''||fo){document.querySelectorAll('#features details').forEach(function(d){d.open=true;});}}
q.addEventListener('input',go);f.addEventListener('change',go);document.body.setAttribute('data-ready','1');})();"#;

/// The first seven characters of a commit hash (all of it when shorter).
fn short(commit: &str) -> &str {
    commit.get(..7).unwrap_or(commit)
}

/// `a` as a whole percentage of `b`, rounded down; 0 when `b` is 0.
fn pct(a: usize, b: usize) -> usize {
    (a * 100).checked_div(b).unwrap_or(0)
}

/// A bar filled to `fraction` (clamped to 0 to 100%), with an extra CSS class.
fn meter(o: &mut String, class: &str, fraction: f64) {
    let _ = write!(
        o,
        r#"<span class="meter {class}"><i style="width:{:.1}%"></i></span>"#,
        (fraction * 100.0).clamp(0.0, 100.0)
    );
}

/// The whole page.
pub fn page(r: &Records, opts: &Options) -> String {
    let a = Analysis::new(r);
    let mut o = String::with_capacity(64 * 1024 + r.features.len() * 220);
    let name = r
        .project
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| r.project.display().to_string());
    let (pill_class, pill) = kpis::status_pill(r, &a, opts);
    let _ = write!(
        o,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark"><title>baton report · {}</title><style>{STYLE}</style></head><body><main>"#,
        escape(&name)
    );
    let span = match (r.sessions.first(), r.sessions.last()) {
        (Some(f), Some(l)) => format!(
            " · sessions from {} to {} UTC",
            utc(f.started_ms),
            utc(l.ended_ms)
        ),
        _ => String::new(),
    };
    let _ = write!(
        o,
        r#"<header><h1>{} <span class="pill {pill_class}" id="run-status">{}</span></h1><div class="sub"><code>{}</code>{span} · generated {} UTC by baton {}</div></header>"#,
        escape(&name),
        escape(&pill),
        escape(&r.project.display().to_string()),
        utc(opts.generated_ms),
        env!("CARGO_PKG_VERSION")
    );
    if r.unreadable_ledger_lines > 0 {
        let _ = write!(
            o,
            r#"<p class="note warn">{} line(s) of .baton/ledger.jsonl could not be read and were left out.</p>"#,
            r.unreadable_ledger_lines
        );
    }
    kpis::kpis(&mut o, r, &a, opts);
    needs_person::needs_person(&mut o, r);
    needs_person::told(&mut o, r);
    charts::charts(&mut o, r, &a, opts);
    sessions::findings(&mut o, r);
    features::features(&mut o, r, &a, opts);
    sessions::sessions(&mut o, r);
    let _ = write!(
        o,
        r#"<footer>Made by <code>baton report</code> from <code>.baton/state.json</code>, <code>.baton/ledger.jsonl</code>, the accepted feature list and <code>.baton/evidence/</code>. Self-contained: it needs no network.</footer></main><script>{SCRIPT}</script></body></html>"#
    );
    o.push('\n');
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Feature, FeatureRecord};

    #[test]
    fn the_right_aligned_column_of_the_feature_table_is_its_cost() {
        let r = Records {
            features: vec![Feature {
                category: "c".into(),
                description: "Create".into(),
                passes: true,
                depends_on: vec![],
                source: None,
            }],
            ..Records::default()
        };
        let html = page(&r, &Options::default());
        let head = html
            .split("<thead><tr>")
            .find(|h| h.contains("proven by"))
            .and_then(|h| h.split("</tr>").next())
            .unwrap_or_default();
        let cost = head
            .split("<th")
            .skip(1)
            .position(|th| th.contains(">cost<"))
            .map(|i| i + 1);
        let rule = STYLE
            .split("details td:nth-child(")
            .nth(1)
            .and_then(|r| r.split(')').next())
            .and_then(|n| n.parse::<usize>().ok());
        assert_eq!(
            rule, cost,
            "the style right-aligns another column than cost: {head}"
        );
        assert!(head.contains("<th class=\"n\">cost</th>"), "{head}");
    }

    #[test]
    fn a_feature_says_what_it_waits_on() {
        let feature = |d: &str, passes: bool, depends_on: Vec<usize>| Feature {
            category: "c".into(),
            description: d.into(),
            passes,
            depends_on,
            source: None,
        };
        let r = Records {
            features: vec![
                feature("Create", true, vec![]),
                feature("Tag", false, vec![]),
                feature("Edit", false, vec![1, 2]),
            ],
            ..Records::default()
        };
        let html = page(&r, &Options::default());
        // Only what does not pass yet is waited on.
        assert!(
            html.contains(r##"<td>Edit</td><td>failing · waits on <a href="#f2">#2</a></td>"##),
            "{html}"
        );
        assert!(html.contains("<td>Tag</td><td>failing</td>"), "{html}");
    }

    #[test]
    fn blocked_and_deferred_features_are_listed_for_a_person() {
        let feature = |d: &str, passes: bool| Feature {
            category: "c".into(),
            description: d.into(),
            passes,
            depends_on: Vec::new(),
            source: None,
        };
        let mut r = Records {
            features: vec![
                feature("One", true),
                feature("Two", false),
                feature("Three", false),
            ],
            ..Records::default()
        };
        assert!(!page(&r, &Options::default()).contains("Needs a person"));
        let rec = |f: fn(&mut FeatureRecord)| {
            let mut x = FeatureRecord::default();
            f(&mut x);
            x
        };
        r.feature_records
            .insert(1, rec(|x| x.blocked = Some("stale: it passes now".into())));
        r.feature_records.insert(
            2,
            rec(|x| {
                x.blocked = Some("needs a <KEY>".into());
                x.blocked_in = Some(4);
                x.attempts = 1;
            }),
        );
        r.feature_records.insert(
            3,
            rec(|x| {
                x.deferred = Some(5);
                x.attempts = 3;
                x.last_reason = Some("`false` failed".into());
            }),
        );
        let html = page(&r, &Options::default());
        assert!(html.contains(r#"<h2 id="needs-person">Needs a person</h2>"#));
        assert!(html.contains("1 blocked, 1 deferred."));
        assert!(html.contains(r##"<td>Two</td><td><span class="bad">blocked</span> by <a href="#s4">session 4</a></td><td class="n">1</td><td>needs a &lt;KEY&gt;</td>"##), "{html}");
        assert!(html.contains(r#"<td>Three</td><td><span class="warn">deferred</span></td><td class="n">3</td><td>last: `false` failed</td>"#));
        assert!(!html.contains("stale"));
    }
}
