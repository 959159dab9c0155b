//! The checks after every session (DESIGN §3), in order: the feature-list ledger,
//! the verify commands of new flips, the clean tree and the progress notes, and
//! baton's own commit of anything it changed in the feature list.

use baton_agent::transcript::now_ms;
use baton_records::{FeatureList, reconcile};

use crate::checks::Checker;
use crate::error::{HarnessError, io};
use crate::files::Files;
use crate::git;
use baton_records::{CheckRun, GateReport};
use baton_records::{LedgerEntry, LedgerKind};

/// The gates of one session, run step by step.
pub struct Gates<'a> {
    /// Project files.
    pub files: &'a Files,
    /// The session just ended.
    pub session: u32,
    /// What was found so far.
    pub report: GateReport,
    /// The feature list as it must now be (None before an initializer produced one).
    pub list: Option<FeatureList>,
    /// Whether baton changed the feature list and must commit it.
    changed: bool,
    /// Why baton changed it, for its commit message.
    reasons: Vec<String>,
}

impl<'a> Gates<'a> {
    /// Step 1, the ledger: compare with `accepted` (none after an initializer) and
    /// restore anything but legal flips.
    pub fn ledger(
        files: &'a Files,
        session: u32,
        accepted: Option<&FeatureList>,
    ) -> Result<Self, HarnessError> {
        let mut g = Self {
            files,
            session,
            report: GateReport::default(),
            list: None,
            changed: false,
            reasons: Vec::new(),
        };
        let Some(acc) = accepted else {
            return Ok(g);
        };
        let fl_name = &files.names.feature_list;
        let fl_path = files.feature_list();
        let text = match std::fs::read_to_string(&fl_path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(io(&fl_path)(e)),
        };
        let r = reconcile(acc, &text, fl_name);
        g.report.flipped = r.flipped.iter().map(|i| i + 1).collect();
        g.report.unflipped = r.unflipped.iter().map(|i| i + 1).collect();
        g.report.verify_added = r.verify_added.iter().map(|i| i + 1).collect();
        g.report.violations = r
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
            g.changed = true;
            g.reasons
                .extend(g.report.violations.iter().map(|v| format!("undid: {v}")));
        }
        g.list = Some(r.list);
        Ok(g)
    }

    /// Step 2, verify: run the `verify` command of every new flip; revert those that fail.
    /// Returns whether the checker ran the start script (so the app is up).
    pub async fn verify(&mut self, checker: &Checker<'_>) -> bool {
        let Some(list) = &self.list else { return false };
        let new: Vec<usize> = self.report.flipped.iter().map(|n| n - 1).collect();
        let run: CheckRun = checker.run(list, &new, None).await;
        self.report.verified = run.passed.clone();
        for f in &run.failed {
            self.reasons.push(format!(
                "reverted the flip of feature {}: its verify command failed",
                f.feature
            ));
        }
        let failed: Vec<usize> = run.failed.iter().map(|f| f.feature).collect();
        self.revert(&failed);
        self.report.verify_failed = run.failed;
        run.init_ran
    }

    /// Set features (1-based) back to failing, as baton's decision.
    pub fn revert(&mut self, features: &[usize]) {
        let Some(list) = &mut self.list else { return };
        for &n in features {
            if let Some(f) = list.features.get_mut(n - 1) {
                f.passes = false;
                self.changed = true;
            }
        }
        self.report.flipped.retain(|n| !features.contains(n));
    }

    /// Record that the verifier rejected `rejections` (feature, reason) and revert them.
    pub fn reject(&mut self, rejections: Vec<(usize, String)>) {
        let features: Vec<usize> = rejections.iter().map(|r| r.0).collect();
        for (n, _) in &rejections {
            self.reasons.push(format!(
                "reverted the flip of feature {n}: the independent verifier rejected it"
            ));
        }
        self.revert(&features);
        self.report.verifier_rejected.extend(rejections);
    }

    /// Steps 3 and 4: write the list baton decided, commit what the session left
    /// uncommitted (nothing discarded), check the notes, commit baton's own changes,
    /// and record everything in the ledger and the accepted copy.
    pub fn finish(
        mut self,
        notes_before: &str,
    ) -> Result<(GateReport, Option<FeatureList>), HarnessError> {
        let files = self.files;
        let fl_name = files.names.feature_list.clone();
        let dirty = git::dirty_paths(&files.dir)?;
        let leftovers: Vec<String> = dirty
            .into_iter()
            .filter(|p| !(self.changed && *p == fl_name))
            .collect();
        if !leftovers.is_empty() {
            let shown: Vec<&str> = leftovers.iter().take(20).map(String::as_str).collect();
            let more = leftovers.len().saturating_sub(shown.len());
            let msg = format!(
                "baton: commit work session {} left uncommitted\n\nThe session ended with uncommitted changes; baton committed them so nothing is lost.\n\n{}{}",
                self.session,
                shown.iter().map(|p| format!("- {p}\n")).collect::<String>(),
                if more > 0 {
                    format!("- … and {more} more\n")
                } else {
                    String::new()
                }
            );
            let exclude: Vec<&str> = if self.changed {
                vec![fl_name.as_str()]
            } else {
                vec![]
            };
            self.report.leftover_commit = git::commit(&files.dir, &msg, &[], &exclude)?;
            self.report.leftover_files = leftovers;
        }
        let notes_now = files.read_notes();
        self.report.notes_updated = !notes_now.trim().is_empty() && notes_now != notes_before;
        if self.changed
            && let Some(list) = &self.list
        {
            let msg = format!(
                "baton: correct {fl_name} after session {}\n\nOnly \"passes\" may change in {fl_name}, and only for features that pass their checks. baton:\n{}",
                self.session,
                self.reasons
                    .iter()
                    .map(|v| format!("- {v}\n"))
                    .collect::<String>()
            );
            self.report.restore_commit = files.commit_list(list, &msg, Vec::new())?;
        }
        if let Some(list) = &self.list {
            self.record(list)?;
            files.save_accepted(list)?;
        }
        Ok((self.report, self.list))
    }

    fn record(&self, list: &FeatureList) -> Result<(), HarnessError> {
        let head = git::head(&self.files.dir);
        let r = &self.report;
        let entry =
            |kind: LedgerKind, feature: Option<usize>, detail: String, commit: Option<String>| {
                LedgerEntry {
                    t_ms: now_ms(),
                    session: self.session,
                    kind,
                    feature,
                    detail,
                    commit,
                    evidence: Vec::new(),
                }
            };
        let desc = |n: usize| {
            list.features
                .get(n - 1)
                .map(|f| f.description.clone())
                .unwrap_or_default()
        };
        for &n in &r.flipped {
            let mut e = entry(LedgerKind::Flip, Some(n), desc(n), head.clone());
            e.evidence = r.evidence.clone();
            self.files.append_ledger(&e)?;
        }
        for &n in &r.unflipped {
            self.files
                .append_ledger(&entry(LedgerKind::Unflip, Some(n), desc(n), head.clone()))?;
        }
        for f in &r.verify_failed {
            self.files.append_ledger(&entry(
                LedgerKind::VerifyFailed,
                Some(f.feature),
                format!("{}: `{}` failed: {}", desc(f.feature), f.command, f.reason),
                r.restore_commit.clone(),
            ))?;
        }
        for (n, why) in &r.verifier_rejected {
            self.files.append_ledger(&entry(
                LedgerKind::VerifierRejected,
                Some(*n),
                format!("{}: {why}", desc(*n)),
                r.restore_commit.clone(),
            ))?;
        }
        for v in &r.boundary {
            self.files.append_ledger(&entry(
                LedgerKind::BoundaryViolation,
                None,
                format!("{v}; restored from baton's snapshot"),
                head.clone(),
            ))?;
        }
        for v in &r.violations {
            self.files.append_ledger(&entry(
                LedgerKind::Violation,
                None,
                v.clone(),
                r.restore_commit.clone(),
            ))?;
        }
        Ok(())
    }
}
