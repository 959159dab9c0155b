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

    /// The project's files as baton's own hands may touch them: beneath the
    /// project, never through a link the agent planted
    /// ([`baton_records::beneath`]).
    pub fn beneath(&self) -> baton_records::beneath::Beneath {
        baton_records::beneath::Beneath::new(&self.dir)
    }

    /// The progress notes, or empty when there are none (or when they are a link:
    /// baton never reads through one, so a planted `notes → ~/.ssh/id_rsa` never
    /// reaches a brief).
    pub fn read_notes(&self) -> String {
        self.beneath()
            .read_to_string(&self.names.progress)
            .unwrap_or_default()
    }

    /// A project file's text (`rel`: the spec, the list, the notes), empty when
    /// it is missing or a link (never read through).
    pub fn read_text(&self, rel: &str) -> String {
        self.beneath().read_to_string(rel).unwrap_or_default()
    }

    /// Replace a project file (`rel`) with `text`, whole; a link in its place is
    /// replaced, never written through.
    pub fn write_text(&self, rel: &str, text: &str) -> Result<(), HarnessError> {
        self.beneath()
            .write_atomic(rel, text.as_bytes())
            .map_err(io(self.dir.join(rel)))
    }

    /// The feature list's text: `Ok(None)` when it is missing, an error naming
    /// the link when it is one (never followed).
    pub fn read_list(&self) -> Result<Option<String>, HarnessError> {
        match self.beneath().read_to_string(&self.names.feature_list) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(self.feature_list())(e)),
        }
    }

    /// The accepted feature list, if one was accepted.
    pub fn load_accepted(&self) -> Result<Option<FeatureList>, HarnessError> {
        let path = self.accepted();
        match self.beneath().read_to_string(layout::ACCEPTED) {
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

    /// Record `list` as the accepted version. Features it holds that the list
    /// accepted before did not (all of them, for a first list) are noted as
    /// entering the list at HEAD ([`baton_records::References`]): where their
    /// proof falls back to when the work reached a commit before its flip.
    pub fn save_accepted(&self, list: &FeatureList) -> Result<(), HarnessError> {
        let before: std::collections::BTreeSet<String> = self
            .load_accepted()
            .ok()
            .flatten()
            .map(|b| {
                b.features
                    .iter()
                    .map(baton_records::references::identity)
                    .collect()
            })
            .unwrap_or_default();
        let new: Vec<baton_records::Feature> = list
            .features
            .iter()
            .filter(|f| !before.contains(&baton_records::references::identity(f)))
            .cloned()
            .collect();
        if !new.is_empty()
            && let Some(head) = crate::git::head(&self.dir)
        {
            let mut refs = baton_records::References::load(&self.dir);
            if refs.accept(&FeatureList { features: new }, &head) {
                refs.save(&self.dir)?;
            }
        }
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
        // A link planted in its place is replaced, never written through.
        self.beneath()
            .write_atomic(&self.names.feature_list, list.to_json().as_bytes())
            .map_err(io(&path))?;
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
