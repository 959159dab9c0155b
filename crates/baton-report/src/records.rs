//! Reading a project's records: `.baton/state.json`, `.baton/ledger.jsonl`, the
//! accepted feature list and `.baton/evidence/`. Fields are read leniently (every
//! one has a default) so that records written by older or newer versions of baton
//! still make a report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_ledger::FeatureList;
use serde::Deserialize;
use serde_json::Value;

use crate::ReportError;

/// Tokens of one session, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Tokens {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input written to the prompt cache.
    pub cache_write_tokens: u64,
}

impl Tokens {
    /// Every kind added up.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }
}

/// A check that failed (verification after a session, or the regression sweep).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CheckFailure {
    /// The feature (1-based).
    pub feature: usize,
    /// The command that failed.
    pub command: String,
    /// Why.
    pub reason: String,
}

/// The regression sweep before a session.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Sweep {
    /// Features whose check failed and were set back.
    pub failed: Vec<CheckFailure>,
}

fn yes() -> bool {
    true
}

/// What the gates found after a session.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default)]
pub struct Gates {
    /// Features (1-based) newly passing.
    pub flipped: Vec<usize>,
    /// Features (1-based) set back to failing by the session itself.
    pub unflipped: Vec<usize>,
    /// Changes to the feature list that were undone.
    pub violations: Vec<String>,
    /// New flips whose verify command failed, reverted.
    pub verify_failed: Vec<CheckFailure>,
    /// The verifier's rejections, `[feature, reason]`, reverted.
    pub verifier_rejected: Vec<Value>,
    /// The commit that restored the feature list.
    pub restore_commit: Option<String>,
    /// Files the session left uncommitted.
    pub leftover_files: Vec<String>,
    /// The commit that holds them.
    pub leftover_commit: Option<String>,
    /// Whether the progress notes were updated.
    #[serde(default = "yes")]
    pub notes_updated: bool,
    /// Refused tool calls.
    pub refusals: u32,
    /// Evidence files of the session (relative to the project).
    pub evidence: Vec<String>,
}

impl Default for Gates {
    fn default() -> Self {
        Self {
            flipped: Vec::new(),
            unflipped: Vec::new(),
            violations: Vec::new(),
            verify_failed: Vec::new(),
            verifier_rejected: Vec::new(),
            restore_commit: None,
            leftover_files: Vec::new(),
            leftover_commit: None,
            notes_updated: true,
            refusals: 0,
            evidence: Vec::new(),
        }
    }
}

impl Gates {
    /// The verifier's rejections as (feature, reason).
    pub fn rejections(&self) -> Vec<(usize, String)> {
        self.verifier_rejected
            .iter()
            .filter_map(|v| {
                let n = v.get(0)?.as_u64()? as usize;
                let why = v.get(1).and_then(Value::as_str).unwrap_or_default();
                Some((n, why.to_string()))
            })
            .collect()
    }
}

/// One recorded session.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Session {
    /// Its number.
    pub number: u32,
    /// `initializer` or `coding`.
    pub kind: String,
    /// Start, Unix ms.
    pub started_ms: u64,
    /// End, Unix ms.
    pub ended_ms: u64,
    /// How it ended.
    pub outcome: String,
    /// Model turns.
    pub turns: u32,
    /// Tokens.
    pub usage: Tokens,
    /// Cost of the session's model requests.
    pub cost_usd: f64,
    /// Cost of the verifier's session after it, if there was one.
    pub verifier_cost_usd: f64,
    /// Commits made during it.
    pub commits: usize,
    /// What the gates found.
    pub gates: Gates,
    /// The regression sweep before it.
    pub sweep: Option<Sweep>,
    /// Time spent waiting for the provider's quota to reset, in ms.
    pub waited_ms: u64,
}

impl Session {
    /// Everything the session cost, the verifier's check included.
    pub fn cost(&self) -> f64 {
        self.cost_usd + self.verifier_cost_usd
    }

    /// Wall time in seconds.
    pub fn duration_secs(&self) -> f64 {
        self.ended_ms.saturating_sub(self.started_ms) as f64 / 1000.0
    }

    /// Features set back by a check or the session (flip-backs), with why.
    pub fn flip_backs(&self) -> Vec<(usize, String)> {
        let g = &self.gates;
        let mut v: Vec<(usize, String)> = g
            .unflipped
            .iter()
            .map(|&n| (n, "set back by the session".to_string()))
            .collect();
        v.extend(
            g.verify_failed
                .iter()
                .map(|f| (f.feature, format!("`{}` failed", f.command))),
        );
        v.extend(
            g.rejections()
                .into_iter()
                .map(|(n, why)| (n, format!("verifier: {why}"))),
        );
        if let Some(s) = &self.sweep {
            v.extend(
                s.failed
                    .iter()
                    .map(|f| (f.feature, format!("regression: `{}` failed", f.command))),
            );
        }
        v
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct StateFile {
    sessions: Vec<Session>,
    in_progress: Option<InProgress>,
    stalled: u32,
    features: BTreeMap<usize, FeatureRecord>,
}

/// What baton remembers about a failing feature that did not pass when handed out,
/// or that an agent declared blocked (`features` in `.baton/state.json`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FeatureRecord {
    /// Coding sessions handed it that ended without it passing.
    pub attempts: u32,
    /// Deferred behind the other failing features: the session after which it was.
    pub deferred: Option<u32>,
    /// Blocked by an agent, with the reason it gave.
    pub blocked: Option<String>,
    /// The session that blocked it.
    pub blocked_in: Option<u32>,
    /// Why the last attempt failed, where known.
    pub last_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct InProgress {
    number: u32,
}

/// One line of `.baton/ledger.jsonl`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct LedgerEntry {
    /// When, Unix ms.
    pub t_ms: u64,
    /// The session after which it happened.
    pub session: u32,
    /// `accepted`, `flip`, `unflip`, `violation`, …
    pub kind: String,
    /// The feature (1-based), where it concerns one.
    pub feature: Option<usize>,
    /// What happened.
    pub detail: String,
    /// The commit that holds it.
    pub commit: Option<String>,
    /// Evidence files (relative to the project), for flips.
    pub evidence: Vec<String>,
}

/// One feature of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    /// Category.
    pub category: String,
    /// Description.
    pub description: String,
    /// Whether it passes.
    pub passes: bool,
}

/// Everything the report is made from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Records {
    /// The project directory.
    pub project: PathBuf,
    /// The accepted feature list (the project's own if baton has not accepted one).
    pub features: Vec<Feature>,
    /// Recorded sessions, in order.
    pub sessions: Vec<Session>,
    /// The ledger, in order.
    pub ledger: Vec<LedgerEntry>,
    /// Image files under `.baton/evidence/NNNN/`, by session.
    pub evidence: BTreeMap<u32, Vec<PathBuf>>,
    /// A session started and not recorded (a killed run).
    pub unfinished: Option<u32>,
    /// Coding sessions in a row without a newly passing feature.
    pub stalled: u32,
    /// Per-feature records (1-based numbers): attempts, deferral, blocks.
    pub feature_records: BTreeMap<usize, FeatureRecord>,
    /// Ledger lines that could not be read (a line cut by a crash, say).
    pub unreadable_ledger_lines: usize,
}

fn read_optional(path: &Path) -> Result<Option<String>, ReportError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ReportError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Whether a file name is an image the report can show.
pub fn is_image(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("png" | "jpg" | "jpeg")
    )
}

fn images_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            images_under(&p, out);
        } else if is_image(&p) {
            out.push(p);
        }
    }
}

impl Records {
    /// Read the records of the project in `dir`, whose feature list is named
    /// `feature_list` (relative to `dir`). Missing records are empty; records that
    /// exist but cannot be read are errors naming the file.
    pub fn load(dir: &Path, feature_list: &str) -> Result<Self, ReportError> {
        let baton = dir.join(".baton");
        let state_path = baton.join("state.json");
        let state: StateFile = match read_optional(&state_path)? {
            Some(t) => serde_json::from_str(&t).map_err(|e| ReportError::Parse {
                path: state_path.clone(),
                message: e.to_string(),
            })?,
            None => StateFile::default(),
        };
        let accepted = baton.join("accepted_feature_list.json");
        let (list_path, text) = match read_optional(&accepted)? {
            Some(t) => (accepted, Some(t)),
            None => {
                let p = dir.join(feature_list);
                let t = read_optional(&p)?;
                (p, t)
            }
        };
        let features = match text {
            Some(t) => FeatureList::parse(&t, &list_path.display().to_string())
                .map_err(|e| ReportError::Parse {
                    path: list_path.clone(),
                    message: e.to_string(),
                })?
                .features
                .into_iter()
                .map(|f| Feature {
                    category: f.category,
                    description: f.description,
                    passes: f.passes,
                })
                .collect(),
            None => Vec::new(),
        };
        let mut ledger = Vec::new();
        let mut unreadable = 0;
        if let Some(t) = read_optional(&baton.join("ledger.jsonl"))? {
            for line in t.lines().filter(|l| !l.trim().is_empty()) {
                match serde_json::from_str::<LedgerEntry>(line) {
                    Ok(e) => ledger.push(e),
                    Err(_) => unreadable += 1,
                }
            }
        }
        let mut evidence = BTreeMap::new();
        if let Ok(rd) = std::fs::read_dir(baton.join("evidence")) {
            for e in rd.flatten() {
                let p = e.path();
                let Some(n) = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                let mut imgs = Vec::new();
                images_under(&p, &mut imgs);
                if !imgs.is_empty() {
                    evidence.insert(n, imgs);
                }
            }
        }
        Ok(Self {
            project: dir.to_path_buf(),
            features,
            sessions: state.sessions,
            ledger,
            evidence,
            unfinished: state.in_progress.map(|i| i.number),
            stalled: state.stalled,
            feature_records: state.features,
            unreadable_ledger_lines: unreadable,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_about_missing_and_extra_fields() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path().join(".baton");
        std::fs::create_dir_all(b.join("evidence/0002/shots")).unwrap();
        std::fs::write(
            b.join("state.json"),
            r#"{"version":1,"sessions":[{"number":1,"kind":"initializer","outcome":"completed",
                "gates":{"flipped":[],"future_field":7}},{"number":2,"kind":"coding",
                "verifier_cost_usd":0.5,"cost_usd":1.0,"gates":{"flipped":[1],"verifier_rejected":[[2,"no"]]},
                "sweep":{"passed":[],"failed":[{"feature":3,"command":"npm t","reason":"exit 1"}]}}],
                "in_progress":{"number":3,"kind":"coding"},"stalled":0}"#,
        )
        .unwrap();
        std::fs::write(
            b.join("ledger.jsonl"),
            "{\"t_ms\":1,\"session\":2,\"kind\":\"flip\",\"feature\":1,\"detail\":\"a\",\"commit\":\"abc\"}\n{\"t_ms\":2,\"ses",
        )
        .unwrap();
        std::fs::write(b.join("evidence/0002/shots/a.png"), b"png").unwrap();
        std::fs::write(b.join("evidence/0002/notes.txt"), b"x").unwrap();
        std::fs::write(
            dir.path().join("feature_list.json"),
            r#"[{"category":"c","description":"d","steps":[],"passes":true}]"#,
        )
        .unwrap();
        let r = Records::load(dir.path(), "feature_list.json").unwrap();
        assert_eq!(r.sessions.len(), 2);
        assert!(r.sessions[0].gates.notes_updated);
        assert_eq!(r.sessions[1].cost(), 1.5);
        assert_eq!(
            r.sessions[1].flip_backs(),
            vec![
                (2, "verifier: no".to_string()),
                (3, "regression: `npm t` failed".to_string())
            ]
        );
        assert_eq!(r.unfinished, Some(3));
        assert_eq!(r.ledger.len(), 1);
        assert_eq!(r.unreadable_ledger_lines, 1);
        assert_eq!(r.features.len(), 1);
        assert_eq!(r.evidence[&2].len(), 1);
    }

    #[test]
    fn a_bad_state_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".baton")).unwrap();
        std::fs::write(dir.path().join(".baton/state.json"), "{").unwrap();
        let e = Records::load(dir.path(), "feature_list.json").unwrap_err();
        assert!(e.to_string().contains("state.json"), "{e}");
    }
}
