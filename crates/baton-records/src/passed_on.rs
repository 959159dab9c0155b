//! What each check last passed on ([`crate::layout::PASSED_ON`]): the command and
//! a digest of the project's tree as it stood. A per-session sweep need not run a
//! check again on the same tree with the same command; "complete" and every
//! integration run every check whatever this says.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{RecordsError, layout, read_optional, write_atomic};

/// One check that passed: its command and the tree it passed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Passed {
    /// The check's command, as it ran.
    pub command: String,
    /// The digest of the tree (what checks read of it) it passed on.
    pub tree: String,
}

/// The checks that passed, by feature (1-based).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PassedOn {
    /// By feature number.
    pub features: BTreeMap<usize, Passed>,
}

impl PassedOn {
    /// The project's record: empty when there is none yet, or when what is there
    /// is not what baton writes (a link planted there is not followed): a sweep
    /// that runs every check loses nothing.
    pub fn load(project: &Path) -> Self {
        read_optional(&project.join(layout::PASSED_ON))
            .ok()
            .flatten()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Whether feature `n`'s `command` passed on `tree` when it last ran.
    pub fn unchanged(&self, n: usize, command: &str, tree: &str) -> bool {
        self.features
            .get(&n)
            .is_some_and(|p| p.command == command && p.tree == tree)
    }

    /// Feature `n`'s `command` passed on `tree`.
    pub fn passed(&mut self, n: usize, command: &str, tree: &str) {
        let passed = Passed {
            command: command.to_string(),
            tree: tree.to_string(),
        };
        self.features.insert(n, passed);
    }

    /// Feature `n`'s check failed (or must run again): forget where it passed.
    pub fn forget(&mut self, n: usize) {
        self.features.remove(&n);
    }

    /// Keep it (a temp file, then a rename; never through a link).
    pub fn save(&self, project: &Path) -> Result<(), RecordsError> {
        let text = serde_json::to_string(self).unwrap_or_default();
        write_atomic(&project.join(layout::PASSED_ON), &format!("{text}\n"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_check_is_unchanged_only_with_the_same_command_on_the_same_tree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".baton")).unwrap();
        let mut p = PassedOn::load(dir.path());
        assert!(!p.unchanged(1, "true", "t1"));
        p.passed(1, "true", "t1");
        p.save(dir.path()).unwrap();
        let p = PassedOn::load(dir.path());
        assert!(p.unchanged(1, "true", "t1"));
        assert!(!p.unchanged(1, "true", "t2"), "another tree");
        assert!(!p.unchanged(1, "false", "t1"), "another command");
        assert!(!p.unchanged(2, "true", "t1"), "another feature");
        std::fs::write(dir.path().join(layout::PASSED_ON), "garbage").unwrap();
        assert_eq!(PassedOn::load(dir.path()), PassedOn::default());
    }
}
