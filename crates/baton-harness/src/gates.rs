//! The checks after every session (DESIGN §3), in order: the feature-list ledger,
//! the clean tree, the progress notes, and baton's own commit of any restore.

use baton_agent::transcript::now_ms;
use baton_ledger::{FeatureList, reconcile};
use serde::{Deserialize, Serialize};

use crate::error::{HarnessError, io};
use crate::files::{Files, LedgerEntry};
use crate::git;

/// What the gates found after one session.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GateReport {
    /// Features (1-based) newly passing.
    pub flipped: Vec<usize>,
    /// Features (1-based) set back to failing.
    pub unflipped: Vec<usize>,
    /// Changes to the feature list that were not allowed, and were undone.
    pub violations: Vec<String>,
    /// The commit in which baton restored the feature list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_commit: Option<String>,
    /// Files the session left uncommitted.
    pub leftover_files: Vec<String>,
    /// The commit in which baton committed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leftover_commit: Option<String>,
    /// Whether the progress notes changed during the session.
    pub notes_updated: bool,
    /// Tool calls refused during the session.
    pub refusals: u32,
}

impl GateReport {
    /// Whether anything needs the next session's attention.
    pub fn has_findings(&self) -> bool {
        !self.violations.is_empty()
            || !self.leftover_files.is_empty()
            || !self.notes_updated
            || !self.unflipped.is_empty()
    }
}

/// Run the gates after session `session`. `accepted` is the last accepted feature list
/// (`None` after an initializer, which has none yet); returns the report and the new
/// accepted list.
pub fn run(
    files: &Files,
    session: u32,
    accepted: Option<&FeatureList>,
    notes_before: &str,
) -> Result<(GateReport, Option<FeatureList>), HarnessError> {
    let mut report = GateReport::default();
    let fl_name = files.names.feature_list.clone();
    let fl_path = files.feature_list();

    // 1. Ledger: only `passes` may change.
    let mut new_accepted = accepted.cloned();
    let mut restored = false;
    if let Some(acc) = accepted {
        let text = match std::fs::read_to_string(&fl_path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io(&fl_path)(e)),
        };
        let r = reconcile(acc, &text, &fl_name);
        report.flipped = r.flipped.iter().map(|i| i + 1).collect();
        report.unflipped = r.unflipped.iter().map(|i| i + 1).collect();
        report.violations = r
            .violations
            .iter()
            .map(|v| {
                if text.is_empty() {
                    format!("{fl_name} was deleted")
                } else {
                    v.to_string()
                }
            })
            .collect();
        if r.needs_restore() {
            std::fs::write(&fl_path, r.list.to_json()).map_err(io(&fl_path))?;
            restored = true;
        }
        new_accepted = Some(r.list);
    }

    // 2. (Verification of flips comes with the verify issue.)

    // 3. Clean tree: commit what the session left, nothing discarded.
    let dirty = git::dirty_paths(&files.dir)?;
    let leftovers: Vec<String> = dirty
        .into_iter()
        .filter(|p| !(restored && *p == fl_name))
        .collect();
    if !leftovers.is_empty() {
        let shown: Vec<&str> = leftovers.iter().take(20).map(String::as_str).collect();
        let more = leftovers.len().saturating_sub(shown.len());
        let msg = format!(
            "baton: commit work session {session} left uncommitted\n\nThe session ended with uncommitted changes; baton committed them so nothing is lost.\n\n{}{}",
            shown.iter().map(|p| format!("- {p}\n")).collect::<String>(),
            if more > 0 {
                format!("- … and {more} more\n")
            } else {
                String::new()
            }
        );
        let exclude: Vec<&str> = if restored {
            vec![fl_name.as_str()]
        } else {
            vec![]
        };
        report.leftover_commit = git::commit(&files.dir, &msg, &[], &exclude)?;
        report.leftover_files = leftovers;
    }

    // Progress notes: the session must leave notes for the next.
    let notes_now = files.read_notes();
    report.notes_updated = !notes_now.trim().is_empty() && notes_now != notes_before;

    // 4. Baton's own commit of the restore.
    if restored {
        let msg = format!(
            "baton: restore {fl_name} after session {session}\n\nOnly \"passes\" may change in {fl_name}; baton undid:\n{}",
            report
                .violations
                .iter()
                .map(|v| format!("- {v}\n"))
                .collect::<String>()
        );
        report.restore_commit = git::commit(&files.dir, &msg, &[fl_name.as_str()], &[])?;
    }

    // The record: every flip and every violation in the ledger.
    let head = git::head(&files.dir);
    if let Some(list) = &new_accepted {
        let entry = |kind: &str, feature: Option<usize>, detail: String, commit: Option<String>| {
            LedgerEntry {
                t_ms: now_ms(),
                session,
                kind: kind.into(),
                feature,
                detail,
                commit,
            }
        };
        for &n in &report.flipped {
            files.append_ledger(&entry(
                "flip",
                Some(n),
                list.features[n - 1].description.clone(),
                head.clone(),
            ))?;
        }
        for &n in &report.unflipped {
            files.append_ledger(&entry(
                "unflip",
                Some(n),
                list.features[n - 1].description.clone(),
                head.clone(),
            ))?;
        }
        for v in &report.violations {
            files.append_ledger(&entry(
                "violation",
                None,
                v.clone(),
                report.restore_commit.clone(),
            ))?;
        }
        files.save_accepted(list)?;
    }
    Ok((report, new_accepted))
}
