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
        let path = self.accepted();
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(io(d))?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, list.to_json()).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))
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
    /// What happened.
    pub kind: LedgerKind,
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

/// What a line of `.baton/ledger.jsonl` records (its `kind`, in snake case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerKind {
    /// A feature list was accepted: the initializer's, or one adopted as it was.
    Accepted,
    /// A feature newly passes, as the session's gates accepted it.
    Flip,
    /// A feature that passed no longer does (the session set it back).
    Unflip,
    /// A flip whose `verify` command failed, reverted.
    VerifyFailed,
    /// A flip the independent verifier rejected, reverted.
    VerifierRejected,
    /// A change to the feature list beyond `passes`, undone.
    Violation,
    /// A change to git's config, hooks or info, or to `baton.toml`, undone.
    BoundaryViolation,
    /// A passing feature the regression sweep found broken, set back.
    Regression,
    /// A feature set aside after `[run] feature_attempts` sessions without passing.
    Deferred,
    /// A feature the agent declared blocked, with its reason.
    Blocked,
    /// A blocked feature handed out again (`baton unblock`).
    Unblocked,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ledger_kinds_are_written_as_the_documented_names() {
        let kinds = [
            (LedgerKind::Accepted, "accepted"),
            (LedgerKind::Flip, "flip"),
            (LedgerKind::Unflip, "unflip"),
            (LedgerKind::VerifyFailed, "verify_failed"),
            (LedgerKind::VerifierRejected, "verifier_rejected"),
            (LedgerKind::Violation, "violation"),
            (LedgerKind::BoundaryViolation, "boundary_violation"),
            (LedgerKind::Regression, "regression"),
            (LedgerKind::Deferred, "deferred"),
            (LedgerKind::Blocked, "blocked"),
            (LedgerKind::Unblocked, "unblocked"),
        ];
        let doc = include_str!("../../../docs/harness.md");
        for (k, name) in kinds {
            assert_eq!(serde_json::to_value(k).unwrap(), name);
            assert!(
                doc.contains(&format!("`{name}`")),
                "{name} is not in docs/harness.md"
            );
            let line = format!(r#"{{"t_ms":1,"session":2,"kind":"{name}","detail":"d"}}"#);
            let e: LedgerEntry = serde_json::from_str(&line).unwrap();
            assert_eq!(e.kind, k);
        }
    }
}
