//! The page: one HTML document with its style, charts and images inline.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::Options;
use crate::analysis::{Analysis, FeatureFacts, Since, failed};
use crate::fmt::{count, duration, escape, money, seconds, usd, utc};
use baton_records::{IntegrationOutcome, SessionOutcome};

use crate::records::{FeatureRecord, Records, SessionKind, SessionRecord as Session, flip_backs};
use crate::svg::{self, SessionBar, Span};

const STYLE: &str = include_str!("style.css");

const SCRIPT: &str = r#"(function(){var q=document.getElementById('q'),f=document.getElementById('only-failing');
if(!q||!f){return;}var rows=document.querySelectorAll('#features tbody tr');
function go(){var t=q.value.toLowerCase(),fo=f.checked;for(var i=0;i<rows.length;i++){var r=rows[i];
r.hidden=(fo&&!r.classList.contains('fail'))||(t!==''&&r.textContent.toLowerCase().indexOf(t)<0);}
if(t!==''||fo){document.querySelectorAll('#features details').forEach(function(d){d.open=true;});}}
q.addEventListener('input',go);f.addEventListener('change',go);document.body.setAttribute('data-ready','1');})();"#;

fn short(commit: &str) -> &str {
    commit.get(..7).unwrap_or(commit)
}

fn pct(a: usize, b: usize) -> usize {
    (a * 100).checked_div(b).unwrap_or(0)
}

fn meter(o: &mut String, class: &str, fraction: f64) {
    let _ = write!(
        o,
        r#"<span class="meter {class}"><i style="width:{:.1}%"></i></span>"#,
        (fraction * 100.0).clamp(0.0, 100.0)
    );
}

/// Images inlined once each, within a byte budget; the rest are linked.
struct Images<'a> {
    opts: &'a Options,
    used: u64,
    seen: HashMap<PathBuf, String>,
}

impl Images<'_> {
    fn show(&mut self, o: &mut String, path: &Path) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(id) = self.seen.get(path) {
            let _ = write!(
                o,
                r##"<a class="evref" href="#{id}" title="{}">(image above)</a> "##,
                escape(&name)
            );
            return;
        }
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(u64::MAX);
        let fits = size <= self.opts.image_max_bytes
            && self.used.saturating_add(size) <= self.opts.images_max_bytes;
        let bytes = if fits { std::fs::read(path).ok() } else { None };
        let Some(bytes) = bytes else {
            let why = if size == u64::MAX {
                "unreadable".to_string()
            } else {
                format!("{} KB, not inlined", size.div_ceil(1024))
            };
            let _ = write!(
                o,
                r#"<a href="file://{}">{}</a> <span class="note">({why})</span> "#,
                escape(&path.display().to_string()),
                escape(&name)
            );
            return;
        };
        self.used += size;
        let id = format!("ev{}", self.seen.len() + 1);
        let mime = match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("png") => "image/png",
            _ => "image/jpeg",
        };
        let _ = write!(
            o,
            r#"<img id="{id}" class="thumb" alt="{n}" title="{n}" loading="lazy" src="data:{mime};base64,{}">"#,
            base64::engine::general_purpose::STANDARD.encode(&bytes),
            n = escape(&name)
        );
        self.seen.insert(path.to_path_buf(), id);
    }
}

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

fn feature_list(v: &[usize]) -> String {
    v.iter()
        .map(|n| format!(r##"<a href="#f{n}">#{n}</a>"##))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The findings of one session, as list items (empty when there are none).
fn findings_of(s: &Session) -> Vec<String> {
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

fn status_pill(r: &Records, a: &Analysis, opts: &Options) -> (&'static str, String) {
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

fn kpis(o: &mut String, r: &Records, a: &Analysis, opts: &Options) {
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
    let _ = write!(
        o,
        r#"<div class="kpi" id="kpi-cost"><h3>How much</h3><div class="big">{}</div><div class="note">{per}<br>{} tokens · {} sessions · {} of session time{agents}</div></div>"#,
        money(a.total_cost),
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

fn legend(o: &mut String, items: &[(&str, &str)]) {
    o.push_str(r#"<div class="legend">"#);
    for (var, name) in items {
        let _ = write!(o, r#"<span style="--c:var({var})">{name}</span>"#);
    }
    o.push_str("</div>");
}

fn charts(o: &mut String, r: &Records, a: &Analysis, opts: &Options) {
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

/// Features (1-based) with their records.
type Numbered<'a> = Vec<(usize, &'a FeatureRecord)>;

/// Failing features an agent blocked, and failing features deferred (not blocked),
/// by number.
fn set_aside(r: &Records) -> (Numbered<'_>, Numbered<'_>) {
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
fn needs_person(o: &mut String, r: &Records) {
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

fn findings(o: &mut String, r: &Records) {
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

fn features(o: &mut String, r: &Records, a: &Analysis, opts: &Options) {
    let total = r.features.len();
    let passing = r.features.iter().filter(|f| f.passes).count();
    let _ = write!(
        o,
        r#"<h2 id="features">Features ({passing} of {total} passing)</h2>"#
    );
    if total == 0 {
        o.push_str(
            r#"<p class="note">No feature list yet: the initializer has not produced one.</p>"#,
        );
        return;
    }
    o.push_str(r#"<div class="filters"><input type="search" id="q" placeholder="Filter features…" aria-label="Filter features"><label><input type="checkbox" id="only-failing"> failing only</label></div>"#);
    // Categories in order of first appearance.
    let mut order: Vec<&str> = Vec::new();
    let mut members: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, f) in r.features.iter().enumerate() {
        let e = members.entry(f.category.as_str()).or_default();
        if e.is_empty() {
            order.push(f.category.as_str());
        }
        e.push(i);
    }
    let open = total <= 300;
    let mut images = Images {
        opts,
        used: 0,
        seen: HashMap::new(),
    };
    for cat in order {
        let idx = &members[cat];
        let p = idx.iter().filter(|&&i| r.features[i].passes).count();
        let cost: f64 = idx.iter().map(|&i| a.features[i].cost_usd).sum();
        let _ = write!(
            o,
            r#"<details{}><summary><span class="b">{}</span>"#,
            if open { " open" } else { "" },
            escape(cat)
        );
        meter(o, "", p as f64 / idx.len().max(1) as f64);
        let _ = write!(
            o,
            r#"<span class="n">{p}/{} · {}</span></summary>"#,
            idx.len(),
            usd(cost, 2)
        );
        o.push_str(r#"<table><thead><tr><th class="n">#</th><th>description</th><th>status</th><th>passing since session</th><th>proven by</th><th class="n">cost</th><th>evidence</th></tr></thead><tbody>"#);
        for &i in idx {
            feature_row(o, i, r, &a.features[i], &mut images);
        }
        o.push_str("</tbody></table></details>");
    }
}

fn feature_row(o: &mut String, i: usize, r: &Records, facts: &FeatureFacts, images: &mut Images) {
    let f = &r.features[i];
    let n = i + 1;
    let waits: Vec<usize> = f
        .depends_on
        .iter()
        .copied()
        .filter(|d| r.features.get(d.wrapping_sub(1)).is_some_and(|x| !x.passes))
        .collect();
    let (class, status) = if f.passes {
        ("pass", "passing".to_string())
    } else if waits.is_empty() {
        ("fail", "failing".to_string())
    } else {
        (
            "fail",
            format!(
                "failing · waits on {}",
                waits
                    .iter()
                    .map(|d| format!(r##"<a href="#f{d}">#{d}</a>"##))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    };
    let since = match &facts.since {
        Some(Since::Session { session, commit }) => {
            let c = commit
                .as_deref()
                .map(|c| format!(" <code>{}</code>", escape(short(c))))
                .unwrap_or_default();
            format!(r##"<a href="#s{session}">{session}</a>{c}"##)
        }
        Some(Since::Adopted) => "adopted".to_string(),
        None => String::new(),
    };
    let backs = if facts.flip_backs > 0 {
        format!(
            r#" <span class="warn" title="set back to failing {0} time(s)">↺{0}</span>"#,
            facts.flip_backs
        )
    } else {
        String::new()
    };
    let cost = if facts.cost_usd > 0.0 {
        usd(facts.cost_usd, 2)
    } else {
        String::new()
    };
    let proof = match &facts.proof {
        Some(p @ baton_records::Proof::Verifier { reason, .. }) => format!(
            r#"<span title="{}">{}</span>"#,
            escape(reason),
            escape(&p.describe())
        ),
        Some(p @ baton_records::Proof::Trusted) => {
            format!(r#"<span class="warn">{}</span>"#, escape(&p.describe()))
        }
        Some(p) => escape(&p.describe()),
        None if f.passes => r#"<span class="note">no proof on record</span>"#.to_string(),
        None => String::new(),
    };
    let _ = write!(
        o,
        r#"<tr class="{class}" id="f{n}"><td>{n}</td><td>{}</td><td>{status}{backs}</td><td>{since}</td><td>{proof}</td><td>{cost}</td><td>"#,
        escape(&f.description)
    );
    for p in &facts.evidence {
        images.show(o, p);
    }
    o.push_str("</td></tr>");
}

fn sessions(o: &mut String, r: &Records) {
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
            usd(s.cost(), 4),
            feature_list(&s.gates.flipped),
            n = s.number
        );
    }
    o.push_str("</tbody></table></div>");
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
    let (pill_class, pill) = status_pill(r, &a, opts);
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
    kpis(&mut o, r, &a, opts);
    needs_person(&mut o, r);
    charts(&mut o, r, &a, opts);
    findings(&mut o, r);
    features(&mut o, r, &a, opts);
    sessions(&mut o, r);
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
    use crate::records::Feature;

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

    #[test]
    fn a_feature_says_what_it_waits_on() {
        let feature = |d: &str, passes: bool, depends_on: Vec<usize>| Feature {
            category: "c".into(),
            description: d.into(),
            passes,
            depends_on,
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
