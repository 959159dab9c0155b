//! Where each feature entered the accepted list ([`crate::layout::REFERENCES`]):
//! the commit baton's HEAD stood at when a list holding the feature, as it reads
//! now, was first accepted (the initializer's, an adopted one, a planner's
//! append, a person's `baton accept`, a forge pull). Proof replays a check
//! against a feature's own "before": the session's base where the work had not
//! begun, else this commit, where nobody had worked on the feature yet. A
//! feature is known by what it says (category, description, steps), not by its
//! place in the list, so a person's reordering keeps every reference and a
//! person's rewording of a feature starts it afresh.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{Feature, FeatureList, RecordsError, layout, read_optional, write_atomic};

/// Where features entered the list, by what they say.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct References {
    /// A feature's identity ([`identity`]) to the commit it entered the list at.
    #[serde(default)]
    pub entered: BTreeMap<String, String>,
    /// A feature's identity to the check baton ran where it entered the list
    /// (to see whether it already worked there).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub checked: BTreeMap<String, String>,
}

/// What makes a feature the same feature: its category, description and steps
/// (its `passes` and its check may change without making it another).
pub fn identity(f: &Feature) -> String {
    let mut s = format!("{}\u{1f}{}", f.category, f.description);
    for step in &f.steps {
        s.push('\u{1f}');
        s.push_str(step);
    }
    s
}

impl References {
    /// The project's record; empty when there is none (or what is there is not
    /// what baton writes: a link planted there is not followed).
    pub fn load(project: &Path) -> Self {
        read_optional(&project.join(layout::REFERENCES))
            .ok()
            .flatten()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Where `f` entered the list, when it is known.
    pub fn entered(&self, f: &Feature) -> Option<&str> {
        self.entered.get(&identity(f)).map(String::as_str)
    }

    /// Note that every feature of `list` not known yet entered it at `commit`;
    /// returns whether anything was new.
    pub fn accept(&mut self, list: &FeatureList, commit: &str) -> bool {
        let mut new = false;
        for f in &list.features {
            if let std::collections::btree_map::Entry::Vacant(e) = self.entered.entry(identity(f)) {
                e.insert(commit.to_string());
                new = true;
            }
        }
        new
    }

    /// Feature `f` entered at `commit` (found afresh, for a record that lacked it).
    pub fn set(&mut self, f: &Feature, commit: &str) {
        self.entered.insert(identity(f), commit.to_string());
    }

    /// Whether `f`'s check `command` was run where it entered the list.
    pub fn checked_at_entry(&self, f: &Feature, command: &str) -> bool {
        self.checked.get(&identity(f)).is_some_and(|c| c == command)
    }

    /// `f`'s check `command` was run where it entered the list (or needs not be).
    pub fn mark_checked(&mut self, f: &Feature, command: &str) {
        self.checked.insert(identity(f), command.to_string());
    }

    /// Keep it (a temp file, then a rename; never through a link).
    pub fn save(&self, project: &Path) -> Result<(), RecordsError> {
        let text = serde_json::to_string(self).unwrap_or_default();
        write_atomic(&project.join(layout::REFERENCES), &format!("{text}\n"))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn list(descs: &[&str]) -> FeatureList {
        let v: Vec<serde_json::Value> = descs
            .iter()
            .map(|d| serde_json::json!({"category": "functional", "description": d, "steps": ["s"], "passes": false}))
            .collect();
        FeatureList::parse(&serde_json::to_string(&v).unwrap(), "feature_list.json").unwrap()
    }

    #[test]
    fn a_feature_keeps_where_it_entered_whatever_its_place_or_its_passes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".baton")).unwrap();
        let mut r = References::load(dir.path());
        assert!(r.accept(&list(&["a", "b"]), "c1"));
        // Appended later, and the old ones moved: only the new one is new.
        let mut later = list(&["c", "b", "a"]);
        later.features[1].passes = true;
        assert!(r.accept(&later, "c2"));
        assert!(!r.accept(&later, "c3"));
        r.save(dir.path()).unwrap();
        let r = References::load(dir.path());
        assert_eq!(r.entered(&later.features[0]), Some("c2"));
        assert_eq!(r.entered(&later.features[1]), Some("c1"));
        assert_eq!(r.entered(&later.features[2]), Some("c1"));
        // A reworded feature is another feature.
        assert_eq!(r.entered(&list(&["a2"]).features[0]), None);
    }
}
