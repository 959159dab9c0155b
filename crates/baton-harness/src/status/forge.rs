//! What `baton status` says of the forge: the features that came from it (an
//! issue, a failed check of baton's pull request, a review thread) and baton's
//! pull request with where its watch stands.

use baton_records::FeatureList;
use serde::Serialize;

use crate::files::Files;

/// A feature that came from the forge.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FromForge {
    /// The feature (1-based).
    pub feature: usize,
    /// `issue`, `ci` (a failed check of baton's pull request) or `review` (a
    /// review thread of it).
    pub from: String,
    /// The or pull request's number.
    pub number: u64,
    /// Its page.
    pub url: String,
}

/// baton's pull request.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PullStatus {
    /// Its number.
    pub number: u64,
    /// Its page.
    pub url: String,
    /// Where its watch stands (`waiting_for_checks`, `checks_failed`,
    /// `checks_never_started`, `checks_passed`, `merged`).
    pub phase: baton_records::forge::Phase,
    /// The commit last pushed to it.
    pub head: String,
}

/// The features of `list` that came from the forge.
pub fn from_forge(list: &FeatureList) -> Vec<FromForge> {
    list.features
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let s = f.fields.get("source")?;
            let (from, number) = match (s["number"].as_u64(), s["pull"].as_u64()) {
                (Some(n), _) => ("issue", n),
                (None, Some(p)) if s.get("thread").is_some() => ("review", p),
                (None, Some(p)) => ("ci", p),
                _ => return None,
            };
            let url = s["url"]
                .as_str()
                .or_else(|| s["urls"][0].as_str())
                .unwrap_or_default()
                .to_string();
            Some(FromForge {
                feature: i + 1,
                from: from.to_string(),
                number,
                url,
            })
        })
        .collect()
}

/// baton's pull request, if it opened one.
pub fn pull(files: &Files) -> Option<PullStatus> {
    let p = baton_records::forge::ForgeRecord::load(&files.dir).pull?;
    Some(PullStatus {
        number: p.number,
        url: p.url,
        phase: p.phase,
        head: p.head,
    })
}

/// The status's forge line, when there is anything to say.
pub fn line(from: &[FromForge], pull: Option<&PullStatus>) -> Option<String> {
    if from.is_empty() && pull.is_none() {
        return None;
    }
    let mut parts = Vec::new();
    if let Some(p) = pull {
        let phase = serde_json::to_value(p.phase)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
            .replace('_', " ");
        parts.push(format!("pull request #{} ({phase}) {}", p.number, p.url));
    }
    for (kind, words) in [
        ("issue", "from issues"),
        ("ci", "CI fixes"),
        ("review", "reviews"),
    ] {
        let each: Vec<String> = from
            .iter()
            .filter(|f| f.from == kind)
            .map(|f| format!("#{} (#{})", f.feature, f.number))
            .collect();
        if !each.is_empty() {
            parts.push(format!("{words} {}", each.join(", ")));
        }
    }
    Some(parts.join(" · "))
}
