//! A person's own edit of the feature list, taken by `baton accept`: features
//! appended at the end and entries changed in place are shown, recorded in the
//! ledger (`added`, `amended`) and committed; removing or moving features is
//! refused (the ledger and records name features by number), and a passing feature
//! whose content changed is set back to failing, to be proven again.

use baton_records::{Feature, FeatureList, LedgerEntry, LedgerKind, State};

use crate::error::{HarnessError, io};

/// A person's edit of the feature list, as `baton accept` shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Edit {
    /// Features appended (1-based) with their descriptions.
    pub added: Vec<(usize, String)>,
    /// Features changed (1-based), with what changed, for people.
    pub amended: Vec<(usize, String)>,
    /// The list as edited.
    pub list: FeatureList,
}

impl Edit {
    /// Whether there is nothing to accept.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.amended.is_empty()
    }
}

/// The difference between the accepted list and the project's list as a person
/// edited it. Removing or reordering features is refused: features are known by
/// their number in the ledger, the records and the claims of parallel runs.
pub fn read(files: &crate::files::Files) -> Result<Edit, HarnessError> {
    let names = &files.names;
    let Some(accepted) = files.load_accepted()? else {
        return Err(HarnessError::Input(format!(
            "{} has no accepted feature list yet: `baton run` adopts {} as it is",
            files.dir.display(),
            names.feature_list
        )));
    };
    let path = files.feature_list();
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    let list = FeatureList::parse(&text, &names.feature_list).map_err(|source| {
        HarnessError::FeatureList {
            what: "cannot accept the edited feature list".into(),
            source,
        }
    })?;
    let old = accepted.features.len();
    if list.features.len() < old {
        return Err(HarnessError::Input(format!(
            "{} has {} features, {old} were accepted: removing features renumbers the ones after them, which the ledger and records name by number. Put the entries back; to drop one, change its description to say it is dropped and leave it failing, or mark it blocked with `BlockFeature` notes",
            names.feature_list,
            list.features.len()
        )));
    }
    let mut e = Edit {
        list: list.clone(),
        ..Edit::default()
    };
    for (i, (before, after)) in accepted.features.iter().zip(&list.features).enumerate() {
        if before == after {
            continue;
        }
        // The same entry further down means entries were moved or inserted.
        if let Some(j) = list.features.iter().position(|f| f == before)
            && j != i
        {
            return Err(HarnessError::Input(format!(
                "feature #{} of the accepted list is now #{}: inserting or moving features renumbers them, which the ledger and records name by number. Append new features at the end instead",
                i + 1,
                j + 1
            )));
        }
        let mut what = describe_change(before, after);
        // A feature whose content changed must be proven again: what passed was
        // the old one. (A person's change of `passes` alone stands.)
        let unproven = |f: &Feature| {
            let mut f = f.clone();
            f.passes = false;
            f.fields.insert("passes".into(), false.into());
            f
        };
        if after.passes && unproven(before) != unproven(after) {
            let f = &mut e.list.features[i];
            f.passes = false;
            f.fields.insert("passes".into(), false.into());
            what.push_str("; set back to failing: it must be proven again");
        }
        e.amended.push((i + 1, what));
    }
    for (i, f) in list.features.iter().enumerate().skip(old) {
        e.added.push((i + 1, f.description.clone()));
    }
    Ok(e)
}

/// Accept `edit`: the list becomes the accepted one, each change goes to the
/// ledger (`added`, `amended`), the per-feature records of amended features start
/// afresh, and the list is committed. Returns the commit.
pub fn accept(files: &crate::files::Files, edit: &Edit) -> Result<Option<String>, HarnessError> {
    let dir = &files.dir;
    let mut state = State::load(dir)?;
    let number = state.sessions.iter().map(|s| s.number).max().unwrap_or(0);
    let mut entries = Vec::new();
    for (n, what) in &edit.added {
        entries.push(LedgerEntry {
            feature: Some(*n),
            ..LedgerEntry::new(number, LedgerKind::Added, format!("{what} — by a person"))
        });
    }
    for (n, what) in &edit.amended {
        entries.push(LedgerEntry {
            feature: Some(*n),
            ..LedgerEntry::new(number, LedgerKind::Amended, format!("by a person: {what}"))
        });
        state.features.remove(n);
    }
    files.save_accepted(&edit.list)?;
    state.save(dir)?;
    let mut parts = Vec::new();
    if !edit.added.is_empty() {
        parts.push(format!("{} added", edit.added.len()));
    }
    if !edit.amended.is_empty() {
        parts.push(format!("{} changed", edit.amended.len()));
    }
    files.commit_list(
        &edit.list,
        &format!(
            "baton accept: a person's edit of {} ({})",
            files.names.feature_list,
            parts.join(", ")
        ),
        entries,
    )
}

/// What changed in one feature, in a line: the fields, with the description's
/// old and new text.
fn describe_change(before: &Feature, after: &Feature) -> String {
    let mut what = Vec::new();
    if before.description != after.description {
        what.push(format!(
            "description {:?} → {:?}",
            before.description, after.description
        ));
    }
    if before.category != after.category {
        what.push(format!("category {} → {}", before.category, after.category));
    }
    if before.steps != after.steps {
        what.push(format!(
            "steps ({} → {})",
            before.steps.len(),
            after.steps.len()
        ));
    }
    if before.passes != after.passes {
        what.push(format!("passes {} → {}", before.passes, after.passes));
    }
    let keys: std::collections::BTreeSet<&String> =
        before.fields.keys().chain(after.fields.keys()).collect();
    for k in keys {
        if ["description", "category", "steps", "passes"].contains(&k.as_str()) {
            continue;
        }
        if before.fields.get(k) != after.fields.get(k) {
            what.push(k.clone());
        }
    }
    what.join("; ")
}
