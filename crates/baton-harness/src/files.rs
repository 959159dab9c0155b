//! Where a project's handoff files and baton's records live.

use std::path::{Path, PathBuf};

use baton_config::ProjectConfig;
use baton_records::{FeatureList, LedgerEntry, layout, ledger};

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
        layout::at(&self.dir, layout::ACCEPTED)
    }

    /// The ledger of every flip, restore and violation.
    pub fn ledger(&self) -> PathBuf {
        layout::at(&self.dir, layout::LEDGER)
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
                .map_err(|source| HarnessError::FeatureList {
                    what: "baton's accepted copy of the feature list is damaged (delete it to adopt the project's list)".into(),
                    source,
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(path)(e)),
        }
    }

    /// Record `list` as the accepted version.
    pub fn save_accepted(&self, list: &FeatureList) -> Result<(), HarnessError> {
        Ok(baton_records::write_atomic(
            &self.accepted(),
            &list.to_json(),
        )?)
    }

    /// Write `list` to the project's feature list, commit that file alone with
    /// `message`, and append `entries` to the ledger with that commit: how every
    /// correction of baton's to the list is made (set-backs, restores, resets).
    /// Returns the commit, `None` when there was nothing to commit.
    pub fn commit_list(
        &self,
        list: &FeatureList,
        message: &str,
        entries: Vec<LedgerEntry>,
    ) -> Result<Option<String>, HarnessError> {
        let path = self.feature_list();
        std::fs::write(&path, list.to_json()).map_err(io(&path))?;
        let commit =
            crate::git::commit(&self.dir, message, &[self.names.feature_list.as_str()], &[])?;
        for mut e in entries {
            e.commit = commit.clone();
            self.append_ledger(&e)?;
        }
        Ok(commit)
    }

    /// Append one entry to the ledger.
    pub fn append_ledger(&self, entry: &LedgerEntry) -> Result<(), HarnessError> {
        Ok(ledger::append(&self.ledger(), entry)?)
    }

    /// A path inside the project shown relative to it.
    pub fn rel(&self, p: &Path) -> String {
        p.strip_prefix(&self.dir).unwrap_or(p).display().to_string()
    }
}
