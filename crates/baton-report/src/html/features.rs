//! The features section: every feature grouped by category, with its status,
//! proof, cost and evidence images (inlined within a byte budget).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;

use super::{meter, short};
use crate::Options;
use crate::analysis::{Analysis, FeatureFacts, Since};
use crate::fmt::{escape, usd};
use crate::records::Records;

/// Images inlined once each, within a byte budget; the rest are linked.
struct Images<'a> {
    opts: &'a Options,
    used: u64,
    seen: HashMap<PathBuf, String>,
}

impl Images<'_> {
    /// Shows the image at `path`: inlined the first time when it fits both
    /// byte budgets, a link to that copy after that, and a link to the file
    /// when it is too large or unreadable.
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
        // A link planted among the evidence is never followed into the page.
        let size = std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map_or(u64::MAX, |m| m.len());
        let fits = size <= self.opts.image_max_bytes
            && self.used.saturating_add(size) <= self.opts.images_max_bytes;
        let bytes = if fits {
            baton_records::beneath::read_record(path).ok()
        } else {
            None
        };
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

/// The feature list: a filter box, then one collapsible table per category
/// in order of first appearance (open when there are at most 300 features).
pub(super) fn features(o: &mut String, r: &Records, a: &Analysis, opts: &Options) {
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

/// One row of a feature table: number, description, status (with what it
/// waits on and its flip-backs), since when it passes, its proof, its cost and
/// its evidence images.
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
        r#"<tr class="{class}" id="f{n}"><td>{n}</td><td>{}{}</td><td>{status}{backs}</td><td>{since}</td><td>{proof}</td><td>{cost}</td><td>"#,
        escape(&f.description),
        source_links(f, r)
    );
    for p in &facts.evidence {
        images.show(o, p);
    }
    o.push_str("</td></tr>");
}

/// Where a feature came from on the forge, as links: its issue (and baton's pull
/// request, once it passes), or the pull request whose check or review it
/// answers.
fn source_links(f: &crate::records::Feature, r: &Records) -> String {
    let Some(s) = &f.source else {
        return String::new();
    };
    let link = |url: &str, text: String| {
        if url.is_empty() {
            format!(r#" <span class="note">{}</span>"#, escape(&text))
        } else {
            format!(
                r#" <a class="src" href="{}">{}</a>"#,
                escape(url),
                escape(&text)
            )
        }
    };
    let url = s["url"].as_str().unwrap_or_default();
    match (s["number"].as_u64(), s["pull"].as_u64()) {
        (Some(issue), _) => {
            let mut out = link(url, format!("issue #{issue}"));
            if let Some(p) = r.pull.as_ref().filter(|_| f.passes) {
                out.push_str(&link(&p.url, format!("in pull request #{}", p.number)));
            }
            out
        }
        (None, Some(pull)) => {
            let what = if s.get("thread").is_some() {
                "review"
            } else {
                "CI"
            };
            let at = s["urls"][0].as_str().unwrap_or(url);
            link(at, format!("{what} of pull request #{pull}"))
        }
        _ => String::new(),
    }
}
