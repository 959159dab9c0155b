//! Where a project's handoff files and baton's records live.

use std::path::{Path, PathBuf};

use baton_config::ProjectConfig;
use baton_ledger::FeatureList;
use serde::Serialize;

use crate::error::{HarnessError, io};

/// The project's files, by the names configured in `baton.toml`.
#[derive(Debug, Clone)]
pub struct Files {
    /// The project directory (canonical).
    pub dir: PathBuf,
    /// File names relative to `dir`.
    pub names: ProjectConfig,
}

impl Files {
    /// The files of `dir` under `names`.
    pub fn new(dir: PathBuf, names: ProjectConfig) -> Self {
        Self { dir, names }
    }

    /// The feature list's path.
    pub fn feature_list(&self) -> PathBuf {
        self.dir.join(&self.names.feature_list)
    }

    /// The progress notes' path.
    pub fn progress(&self) -> PathBuf {
        self.dir.join(&self.names.progress)
    }

    /// The accepted copy of the feature list, kept by baton.
    pub fn accepted(&self) -> PathBuf {
        self.dir.join(".baton/accepted_feature_list.json")
    }

    /// The ledger of every flip, restore and violation.
    pub fn ledger(&self) -> PathBuf {
        self.dir.join(".baton/ledger.jsonl")
    }

    /// The progress notes, or empty when there are none.
    pub fn read_notes(&self) -> String {
        std::fs::read_to_string(self.progress()).unwrap_or_default()
    }

    /// The accepted feature list, if one was accepted.
    pub fn load_accepted(&self) -> Result<Option<FeatureList>, HarnessError> {
        let path = self.accepted();
        match std::fs::read_to_string(&path) {
            Ok(text) => FeatureList::parse(&text, &path.display().to_string())
                .map(Some)
                .map_err(|e| {
                    HarnessError::Input(format!(
                        "{e} (baton's accepted copy; delete it to adopt the project's list)"
                    ))
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(path)(e)),
        }
    }

    /// Record `list` as the accepted version.
    pub fn save_accepted(&self, list: &FeatureList) -> Result<(), HarnessError> {
        let path = self.accepted();
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(io(d))?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, list.to_json()).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))
    }

    /// Append one entry to the ledger.
    pub fn append_ledger(&self, entry: &LedgerEntry) -> Result<(), HarnessError> {
        use std::io::Write as _;
        let path = self.ledger();
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(io(d))?;
        }
        let mut line = serde_json::to_string(entry).unwrap_or_default();
        line.push('\n');
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .map_err(io(&path))
    }

    /// A path inside the project shown relative to it.
    pub fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.dir).unwrap_or(p).display().to_string()
    }
}

/// One line of `.baton/ledger.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct LedgerEntry {
    /// When, Unix ms.
    pub t_ms: u64,
    /// The session after which it happened.
    pub session: u32,
    /// `accepted`, `flip`, `unflip`, `verify_failed`, `verifier_rejected`, `violation`,
    /// `regression`, `deferred`, `blocked`, `unblocked` (docs/harness.md).
    pub kind: String,
    /// The feature (1-based), where it concerns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature: Option<usize>,
    /// The feature's description, or what happened.
    pub detail: String,
    /// The commit that holds it, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Evidence files of the session (relative to the project), for flips.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}
