//! Reading a project's records through `baton-records`: `.baton/state.json`, the
//! ledger, the accepted feature list and `.baton/evidence/`. Records written by older
//! versions of baton still make a report (their missing fields have defaults), and
//! ledger lines that cannot be read are counted, not fatal.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_records::{FeatureList, RecordsError, State, layout, ledger};
pub use baton_records::{FeatureRecord, LedgerEntry, LedgerKind, SessionKind, SessionRecord};

use crate::ReportError;

/// Features set back by a check or by the session itself (flip-backs), with why.
pub fn flip_backs(s: &SessionRecord) -> Vec<(usize, String)> {
    let g = &s.gates;
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
        g.verifier_rejected
            .iter()
            .map(|(n, why)| (*n, format!("verifier: {why}"))),
    );
    v.extend(
        g.unproven
            .iter()
            .map(|(n, why)| (*n, format!("unproven: {why}"))),
    );
    if let Some(sw) = &s.sweep {
        v.extend(
            sw.failed
                .iter()
                .map(|f| (f.feature, format!("regression: `{}` failed", f.command))),
        );
    }
    v
}

/// One feature of the list, as the report shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    /// Category.
    pub category: String,
    /// Description.
    pub description: String,
    /// Whether it passes.
    pub passes: bool,
    /// The features (1-based) it needs to pass first (`depends_on`).
    pub depends_on: Vec<usize>,
    /// Where it came from on the forge (`source`: an issue, a failed check or a
    /// review thread of baton's pull request).
    pub source: Option<serde_json::Value>,
}

/// Everything the report is made from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Records {
    /// The project directory.
    pub project: PathBuf,
    /// The accepted feature list (the project's own if baton has not accepted one).
    pub features: Vec<Feature>,
    /// Recorded sessions, in order.
    pub sessions: Vec<SessionRecord>,
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
    /// The runs of one agent, with their wall time.
    pub runs: Vec<baton_records::RunRecord>,
    /// baton's pull request on the forge, if it opened one.
    pub pull: Option<baton_records::forge::PullRecord>,
}

impl From<RecordsError> for ReportError {
    fn from(e: RecordsError) -> Self {
        match e {
            RecordsError::Io { path, source } => ReportError::Io { path, source },
            RecordsError::Parse { path, message, .. } => ReportError::Parse { path, message },
        }
    }
}

fn read_optional(path: &Path) -> Result<Option<String>, ReportError> {
    match baton_records::beneath::read_record(path) {
        Ok(t) => Ok(Some(String::from_utf8_lossy(&t).into_owned())),
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
        let state = State::load(dir)?;
        let accepted = layout::at(dir, layout::ACCEPTED);
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
                    depends_on: f.depends_on(),
                    source: f.fields.get("source").cloned(),
                    category: f.category,
                    description: f.description,
                    passes: f.passes,
                })
                .collect(),
            None => Vec::new(),
        };
        let ledger = ledger::read(&layout::at(dir, layout::LEDGER))?;
        let mut evidence = BTreeMap::new();
        if let Ok(rd) = std::fs::read_dir(layout::at(dir, layout::EVIDENCE)) {
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
            ledger: ledger.entries,
            evidence,
            unfinished: state.in_progress.map(|i| i.number),
            stalled: state.stalled,
            feature_records: state.features,
            unreadable_ledger_lines: ledger.unreadable,
            runs: baton_records::runs::load(dir),
            pull: baton_records::forge::ForgeRecord::load(dir).pull,
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
                "gates":{"flipped":[],"future_field":7}},{"number":2,"kind":"coding","outcome":"completed",
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
            flip_backs(&r.sessions[1]),
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
