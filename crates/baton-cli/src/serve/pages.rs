//! The dashboard's pages: the list of projects, a project's page, and its board
//! (features by state, cost, sessions, notes, the newest transcript).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use baton_harness::status::Status;
use baton_records::FeatureList;
use baton_report::escape;

use super::projects::{
    Project, Server, TAIL_LINES, agents_at_work, feature_list, newest_transcript, running,
};

pub(super) fn head(o: &mut String, title: &str, script: &str) {
    let _ = write!(
        o,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark"><link rel="icon" href="data:,"><title>{}</title><style>{}{EXTRA_STYLE}</style></head><body><main>{script}"#,
        escape(title),
        baton_report::STYLE
    );
}

/// The board's own style, on top of the report's.
pub(super) const EXTRA_STYLE: &str = ".board{display:grid;grid-template-columns:repeat(auto-fit,minmax(190px,1fr));gap:10px;margin-top:12px}
.col{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:8px}
.col h3{margin:0 0 6px;font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.col ul{list-style:none;margin:0;padding:0}.col li{border-top:1px solid var(--line);padding:6px 2px;font-size:13px}
.col li small{display:block;color:var(--muted)}.col.passing h3{color:var(--pass)}.col.blocked h3{color:var(--fail)}
.col.deferred h3{color:var(--warn)}.col.progress h3{color:var(--accent)}
pre.tail{white-space:pre-wrap;word-break:break-word;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px;font:12px ui-monospace,monospace;max-height:420px;overflow:auto}
ol.transcript{list-style:none;padding:0;margin:0;font:12px ui-monospace,monospace}ol.transcript li{padding:3px 6px;border-bottom:1px solid var(--line);white-space:pre-wrap;word-break:break-word}
ol.transcript .tool{color:var(--accent)}ol.transcript .err{color:var(--fail)}ol.transcript .res{color:var(--muted)}";

/// `/`: every project in a line (swapped in live).
pub(super) fn index(s: &Server) -> String {
    let mut o = String::new();
    head(&mut o, "baton · projects", "");
    let _ = write!(
        o,
        r#"<header><h1>baton projects <span class="pill run" id="live">live</span></h1><div class="sub">read-only</div></header><div id="list">{}</div>{}</main></body></html>"#,
        project_list(s),
        live_script("/events", "/list", "list")
    );
    o
}

/// `/list`: the projects' table.
pub(super) fn project_list(s: &Server) -> String {
    let mut o = String::from(
        r#"<table><thead><tr><th>Project</th><th class="n">Passing</th><th>Run</th><th class="n">Cost</th></tr></thead><tbody>"#,
    );
    for (i, p) in s.projects.iter().enumerate() {
        let (passing, total, cost) = match baton_harness::status::status(&p.files) {
            Ok(st) => (st.passing, st.total, st.totals.cost_usd),
            Err(_) => (0, 0, 0.0),
        };
        let run = if running(&p.files.dir) {
            r#"<span class="pill run">running</span>"#
        } else {
            "idle"
        };
        let _ = write!(
            o,
            r#"<tr><td><a href="/p/{i}">{}</a> <code>{}</code></td><td class="n">{passing}/{total}</td><td>{run}</td><td class="n">${cost:.4}</td></tr>"#,
            escape(&p.name()),
            escape(&p.files.dir.display().to_string())
        );
    }
    o.push_str("</tbody></table>");
    o
}

/// The script that keeps element `target` live: on each `change` from `events`
/// (and on each (re)connect, for a change in between) it fetches `fragment` and
/// swaps it in, one fetch at a time. The URLs are made here, never from a request
/// (the token travels in a cookie, never in a URL).
pub(super) fn live_script(events: &str, fragment: &str, target: &str) -> String {
    format!(
        r#"<script>(function(){{var busy=false,again=false,live=document.getElementById('live');
function load(){{if(busy){{again=true;return;}}busy=true;fetch('{fragment}',{{cache:'no-store'}}).then(function(r){{return r.ok?r.text():Promise.reject(r.status);}}).then(function(t){{document.getElementById('{target}').innerHTML=t;}}).catch(function(){{}}).finally(function(){{busy=false;if(again){{again=false;load();}}}});}}
var es=new EventSource('{events}');es.addEventListener('change',load);
es.onopen=function(){{live.textContent='live';live.className='pill ok';load();}};es.onerror=function(){{live.textContent='reconnecting';live.className='pill warn';}};}})();</script>"#
    )
}

/// `/p/N`: the board (swapped in live) around the page.
pub(super) fn project_page(p: &Project, i: usize) -> String {
    let mut o = String::new();
    head(&mut o, &format!("baton · {}", p.name()), "");
    let _ = write!(
        o,
        r#"<header><h1>{} <span class="pill run" id="live">live</span></h1><div class="sub"><a href="/">all projects</a> · <code>{}</code></div></header><div id="board">{}</div>"#,
        escape(&p.name()),
        escape(&p.files.dir.display().to_string()),
        board(p)
    );
    o.push_str(&live_script(
        &format!("/p/{i}/events"),
        &format!("/p/{i}/board"),
        "board",
    ));
    o.push_str("</main></body></html>");
    o
}

/// One card of the board.
pub(super) fn card(o: &mut String, n: usize, desc: &str, note: &str) {
    let _ = write!(
        o,
        r#"<li id="f-{n}"><b>#{n}</b> {}<small>{}</small></li>"#,
        escape(desc),
        escape(note)
    );
}

/// `/p/N/board`: everything that changes, as a fragment.
pub(super) fn board(p: &Project) -> String {
    let mut o = String::new();
    let st = match baton_harness::status::status(&p.files) {
        Ok(s) => s
            .with_project_budget(p.budget_usd)
            .with_stall_limit(p.stall_sessions),
        Err(e) => {
            return format!(
                "<p class=\"note\">cannot read the records: {}</p>",
                escape(&e.to_string())
            );
        }
    };
    let list = feature_list(&p.files);
    let is_running = running(&p.files.dir);
    kpis(&mut o, &st, is_running);
    if let Some(line) = baton_harness::status::forge::line(&st.forge, st.pull_request.as_ref()) {
        let _ = write!(
            o,
            r#"<p class="sub" id="forge">forge: {}</p>"#,
            escape(&line)
        );
    }
    o.push_str(r#"<h2>Board</h2><section class="board">"#);
    let (progress, busy) = in_progress(p, &list, is_running);
    column(&mut o, "progress", "In progress", &progress);
    columns(&mut o, &st, &list, &busy);
    o.push_str("</section>");
    sessions(&mut o, &st);
    tails(&mut o, p);
    o
}

/// The headline boxes: passing, cost against budget, sessions, running or idle.
pub(super) fn kpis(o: &mut String, st: &Status, is_running: bool) {
    let spend = match st.budget_usd {
        Some(b) => format!(
            "${:.4} of ${b:.2} <span class=\"meter spend\"><i style=\"width:{:.1}%\"></i></span>",
            st.totals.cost_usd,
            (st.totals.cost_usd / b * 100.0).clamp(0.0, 100.0)
        ),
        None => format!(
            "${:.4} <span class=\"sub\">(no budget set)</span>",
            st.totals.cost_usd
        ),
    };
    let _ = write!(
        o,
        r#"<section class="kpis"><div class="kpi"><h3>Passing</h3><div class="big" id="passing">{}/{}</div><span class="meter"><i style="width:{:.1}%"></i></span></div><div class="kpi"><h3>Cost</h3><div>{spend}</div></div><div class="kpi"><h3>Sessions</h3><div class="big">{}</div>{}</div><div class="kpi"><h3>Run</h3><div class="big">{}</div></div></section>"#,
        st.passing,
        st.total,
        if st.total == 0 {
            0.0
        } else {
            st.passing as f64 * 100.0 / st.total as f64
        },
        st.totals.sessions,
        if st.totals.timing.is_zero() {
            String::new()
        } else {
            format!(
                r#"<div class="sub" id="time-split">{}</div>"#,
                escape(&baton_harness::status::time_line(
                    &st.totals.timing,
                    st.totals.waited_secs
                ))
            )
        },
        match (is_running, &st.stalled) {
            (true, _) => "running",
            (false, Some(_)) => "stalled",
            (false, None) => "idle",
        }
    );
}

/// What runs now: the session running (state.json's in_progress) with its
/// target, and a parallel run's agents on the features they claimed. Returns the
/// column's items and the features in progress.
pub(super) fn in_progress(
    p: &Project,
    list: &FeatureList,
    is_running: bool,
) -> (String, BTreeSet<usize>) {
    let mut progress = String::new();
    let mut busy = BTreeSet::new();
    let desc = |n: usize| {
        list.features
            .get(n.wrapping_sub(1))
            .map(|f| f.description.clone())
            .unwrap_or_default()
    };
    let in_progress = baton_records::State::load(&p.files.dir)
        .ok()
        .and_then(|s| s.in_progress)
        .filter(|_| is_running);
    if let Some(ip) = in_progress {
        let _ = write!(
            progress,
            "<li>session {} ({})<small>running now</small></li>",
            ip.number,
            escape(ip.kind.name())
        );
        if let Some(n) = ip.target {
            busy.insert(n);
            let note = format!("in progress · session {}'s target", ip.number);
            card(&mut progress, n, &desc(n), &note);
        }
    }
    if is_running {
        for (agent, session, feature) in agents_at_work(&p.files.dir) {
            match feature {
                Some(n) => {
                    busy.insert(n);
                    let note = format!("in progress · agent {agent}, session {session}");
                    card(&mut progress, n, &desc(n), &note);
                }
                None => {
                    let _ = write!(
                        progress,
                        "<li>agent {agent}: session {session}<small>running now</small></li>"
                    );
                }
            }
        }
    }
    if is_running && progress.is_empty() {
        progress.push_str("<li>a run holds the project<small>between sessions</small></li>");
    }
    (progress, busy)
}

/// The failing, deferred, blocked and passing columns (`busy`: in progress).
pub(super) fn columns(o: &mut String, st: &Status, list: &FeatureList, busy: &BTreeSet<usize>) {
    let blocked: BTreeSet<usize> = st.needs_person.blocked.iter().map(|b| b.number).collect();
    let deferred: BTreeSet<usize> = st.needs_person.deferred.iter().map(|d| d.number).collect();
    let mut failing = String::new();
    for (i, f) in list.features.iter().enumerate() {
        let n = i + 1;
        if !f.passes && !blocked.contains(&n) && !deferred.contains(&n) && !busy.contains(&n) {
            card(
                &mut failing,
                n,
                &f.description,
                &format!("failing · {}", f.category),
            );
        }
    }
    column(o, "failing", "Failing", &failing);
    let mut d = String::new();
    for f in &st.needs_person.deferred {
        let why = f.last_reason.as_deref().unwrap_or("no reason recorded");
        card(
            &mut d,
            f.number,
            &f.description,
            &format!("deferred after {} attempts: {why}", f.attempts),
        );
    }
    column(o, "deferred", "Deferred", &d);
    let mut b = String::new();
    for f in &st.needs_person.blocked {
        card(
            &mut b,
            f.number,
            &f.description,
            &format!("blocked: {}", f.reason),
        );
    }
    column(o, "blocked", "Blocked", &b);
    let mut pass = String::new();
    for proof in &st.proofs {
        let desc = list
            .features
            .get(proof.feature - 1)
            .map(|f| f.description.as_str())
            .unwrap_or_default();
        let by = if proof.by == "unrecorded" {
            "passing · no proof on record".to_string()
        } else {
            match proof.session {
                Some(s) => format!(
                    "passing · proven by {} in session {s}: {}",
                    proof.by, proof.detail
                ),
                None => format!("passing · proven by {}: {}", proof.by, proof.detail),
            }
        };
        card(&mut pass, proof.feature, desc, &by);
    }
    column(o, "passing", "Passing", &pass);
}

/// The sessions, newest first.
pub(super) fn sessions(o: &mut String, st: &Status) {
    o.push_str(r#"<h2>Sessions</h2><div class="scroll"><table><thead><tr><th class="n">#</th><th>Kind</th><th>Outcome</th><th class="n">Time</th><th class="n">Turns</th><th class="n">Cost</th><th>Newly passing</th></tr></thead><tbody>"#);
    for s in st.sessions.iter().rev() {
        let outcome = serde_json::to_value(s.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let _ = write!(
            o,
            r#"<tr><td class="n">{}</td><td>{}</td><td>{}</td><td class="n">{:.0}s</td><td class="n">{}</td><td class="n">${:.4}</td><td>{}</td></tr>"#,
            s.number,
            escape(&s.kind),
            escape(&outcome),
            s.duration_secs,
            s.turns,
            s.cost_usd + s.verifier_cost_usd,
            baton_records::human::features(&s.flipped)
        );
    }
    o.push_str("</tbody></table></div>");
}

/// The notes' last lines and the newest transcript's.
pub(super) fn tails(o: &mut String, p: &Project) {
    let notes = p.files.read_notes();
    let lines: Vec<&str> = notes.lines().collect();
    let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    let _ = write!(
        o,
        r#"<h2>Notes (last lines)</h2><pre class="tail">{}</pre>"#,
        escape(&tail)
    );
    if let Some(t) = newest_transcript(&p.files.dir) {
        let _ = write!(
            o,
            r#"<h2>Transcript {} (last lines)</h2><ol class="transcript">"#,
            escape(&t.file_name().unwrap_or_default().to_string_lossy())
        );
        for (class, line) in transcript_tail(&t) {
            let _ = write!(o, r#"<li class="{class}">{}</li>"#, escape(&line));
        }
        o.push_str("</ol>");
    }
}

pub(super) fn column(o: &mut String, class: &str, title: &str, items: &str) {
    let count = items.matches(r#"<li id="f-"#).count();
    let _ = write!(
        o,
        r#"<div class="col {class}"><h3>{title} ({count})</h3><ul>{items}</ul></div>"#
    );
}

/// `s` cut to `n` characters, with a marker.
pub(super) fn cut(s: &str, n: usize) -> String {
    let s = s.trim();
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The last events of a transcript as readable lines: (CSS class, text).
pub(super) fn transcript_tail(path: &Path) -> Vec<(&'static str, String)> {
    const MAX_BYTES: u64 = 256 * 1024;
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    use std::io::{Read as _, Seek as _};
    let _ = f.seek(std::io::SeekFrom::Start(len.saturating_sub(MAX_BYTES)));
    let mut text = String::new();
    let mut raw = Vec::new();
    let _ = f.take(MAX_BYTES).read_to_end(&mut raw);
    text.push_str(&String::from_utf8_lossy(&raw));
    let mut out = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match v["type"].as_str().unwrap_or_default() {
            "session_start" => out.push((
                "res",
                format!(
                    "session started · {}",
                    v["model"].as_str().unwrap_or_default()
                ),
            )),
            "user" | "assistant" => {
                let who = if v["type"] == "user" { "user" } else { "agent" };
                for b in v["content"].as_array().into_iter().flatten() {
                    match b["type"].as_str().unwrap_or_default() {
                        "text" => out.push((
                            "",
                            format!(
                                "{who}: {}",
                                cut(b["text"].as_str().unwrap_or_default(), 600)
                            ),
                        )),
                        "tool_use" => out.push(("tool", {
                            // As the live view and `baton log` say it: the
                            // call's key argument, not its JSON.
                            let name = b["name"].as_str().unwrap_or_default();
                            format!(
                                "→ {name} {}",
                                cut(&crate::live::key_argument(name, &b["input"]), 200)
                            )
                        })),
                        _ => {}
                    }
                }
            }
            "tool_result" => {
                let err = v["is_error"].as_bool().unwrap_or(false)
                    || v["refused"].as_bool().unwrap_or(false);
                let first = v["content"]
                    .as_str()
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default();
                out.push((
                    if err { "err" } else { "res" },
                    format!(
                        "← {}{}: {}",
                        v["name"].as_str().unwrap_or_default(),
                        if err { " (error)" } else { "" },
                        cut(first, 200)
                    ),
                ));
            }
            "retry" | "wait" => out.push((
                "err",
                format!(
                    "{}: {}",
                    v["type"].as_str().unwrap_or_default(),
                    cut(v["error"].as_str().unwrap_or_default(), 200)
                ),
            )),
            "session_end" => out.push((
                "res",
                format!(
                    "session ended: {}",
                    v["outcome"].as_str().unwrap_or_default()
                ),
            )),
            _ => {}
        }
    }
    let skip = out.len().saturating_sub(TAIL_LINES);
    out.split_off(skip)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn serve_transcript_tail_reads_tool_calls_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0001.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"t_ms":1,"type":"assistant","turn":1,"content":[{"type":"text","text":"Let me <look>"},{"type":"tool_use","id":"a","name":"Bash","input":{"command":"ls"}}]}"#,
                "\n",
                r#"{"t_ms":2,"type":"tool_result","turn":1,"tool_use_id":"a","name":"Bash","content":"boom\nmore","is_error":true,"duration_ms":3}"#,
                "\nnot json\n"
            ),
        )
        .unwrap();
        let t = transcript_tail(&p);
        assert_eq!(
            t,
            vec![
                ("", "agent: Let me <look>".to_string()),
                ("tool", "→ Bash ls".to_string()),
                ("err", "← Bash (error): boom".to_string()),
            ]
        );
    }
}
