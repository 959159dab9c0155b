//! The checks after every session, in order: the feature-list ledger, the verify
//! commands of new flips, proof of every flip (a check that failed before the
//! work, or the independent verifier; nothing else unless the project trusts the
//! agent's word), the clean tree and the progress notes, and baton's own commit of
//! anything it changed in the feature list.

use baton_agent::transcript::now_ms;
use baton_records::{FeatureList, reconcile};

use crate::checks::Checker;
use crate::error::{HarnessError, io};
use crate::files::Files;
use crate::git;
use baton_records::{CheckRun, GateReport, Proof};
use baton_records::{LedgerEntry, LedgerKind};

/// A flip that its own check may prove, once baton has replayed the check in
/// clean worlds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckClaim {
    /// The feature (1-based).
    pub feature: usize,
    /// Its verify command.
    pub command: String,
    /// Who wrote the check.
    pub author: String,
}

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
    /// Whether what the session left uncommitted was committed already.
    leftovers_done: bool,
    /// Ctrl-C stopped the verifier: the session is an interruption, not a
    /// failed attempt.
    pub interrupted: bool,
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
            leftovers_done: false,
            interrupted: false,
        };
        let Some(acc) = accepted else {
            return Ok(g);
        };
        let fl_name = &files.names.feature_list;
        // Never read through a link: one planted in the list's place reads as a
        // deleted list, and is replaced by the accepted one.
        let mut linked = false;
        let text = match files.beneath().read_to_string(fl_name) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) if baton_records::beneath::is_link_refusal(&e) => {
                linked = true;
                String::new()
            }
            Err(e) => return Err(io(files.feature_list())(e)),
        };
        let r = reconcile(acc, &text, fl_name);
        g.report.flipped = r.flipped.iter().map(|i| i + 1).collect();
        g.report.unflipped = r.unflipped.iter().map(|i| i + 1).collect();
        g.report.verify_added = r.verify_added.iter().map(|i| i + 1).collect();
        g.report.violations = r
            .violations
            .iter()
            .map(|v| {
                if linked {
                    format!("{fl_name} was replaced by a symbolic link (baton never follows one)")
                } else if text.is_empty() {
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

    /// Step 2, verify: run the `verify` command of each new flip of `flips`
    /// (1-based) in the project; revert those that fail. With `note_passed`
    /// (`[verify] skip_unchanged`), keep the tree the passing ones passed on.
    /// Returns whether the checker ran the start script (so the app is up).
    pub async fn verify(
        &mut self,
        checker: &Checker<'_>,
        note_passed: bool,
        flips: &[usize],
    ) -> bool {
        let Some(list) = &self.list else { return false };
        let new: Vec<usize> = flips.iter().map(|n| n - 1).collect();
        if new.is_empty() {
            return false;
        }
        let run: CheckRun = checker.run(list, &new, None).await;
        if note_passed {
            // Where the new flips' checks passed: the next sweep need not run
            // them again on this tree.
            let mut passed_on = baton_records::PassedOn::load(&self.files.dir);
            crate::checks::note_passed(&mut passed_on, self.files, list, &run);
            let _ = passed_on.save(&self.files.dir);
        }
        self.report.verified.extend(run.passed.iter().copied());
        self.report.verified.sort_unstable();
        for f in &run.failed {
            self.reasons.push(format!(
                "reverted the flip of feature {}: its verify command failed",
                f.feature
            ));
        }
        let failed: Vec<usize> = run.failed.iter().map(|f| f.feature).collect();
        self.revert(&failed);
        self.report.verify_failed.extend(run.failed);
        // A check the policy refuses here decides nothing: the flip stays, for the
        // verifier to judge.
        self.report.unrunnable.extend(run.refused);
        run.init_ran
    }

    /// Step 2, proof by checks, the part judged without running anything: a new
    /// flip can be proven by its verify command when that command was in the
    /// accepted list before the session (not one the agent added with its flip),
    /// was not written by a coding session, and tests more than that paths
    /// exist. Such a flip's claim is returned, for baton to replay in clean
    /// worlds (`proof.rs`), which settle it with [`Gates::check_held`] or
    /// [`Gates::check_not_held`]; a flip without one gets `Err`, with why its
    /// check proves nothing where it has one (for [`Gates::weak_check`]).
    pub fn claim(
        &self,
        accepted: Option<&FeatureList>,
        n: usize,
        ledger: &mut Option<baton_records::ledger::Ledger>,
    ) -> Result<CheckClaim, Option<String>> {
        let list = self.list.as_ref().ok_or(None)?;
        let now = crate::checks::command_of(list, n - 1);
        let before = accepted.and_then(|a| crate::checks::command_of(a, n - 1));
        let (Some(cmd), Some(old)) = (now, before) else {
            return Err(None);
        };
        if cmd != old {
            return Err(None);
        }
        if crate::scrutiny::existence_only(&cmd) {
            return Err(Some(
                "its verify command only tests that paths exist, which proves no behaviour"
                    .to_string(),
            ));
        }
        let ledger = ledger.get_or_insert_with(|| {
            baton_records::ledger::read(&self.files.ledger()).unwrap_or_default()
        });
        let author = check_author(ledger, n, &cmd);
        if author.coder {
            return Err(Some(format!(
                "its verify command was written by {}, so it is a regression check, not proof",
                author.who
            )));
        }
        Ok(CheckClaim {
            feature: n,
            command: cmd,
            author: author.who,
        })
    }

    /// Why flip `n`'s check proves nothing ([`Gates::claim`]), on record.
    pub fn weak_check(&mut self, n: usize, why: String) {
        self.report.weak_checks.push((n, why));
    }

    /// A claim's check held in clean worlds: it failed before the work (at
    /// `reference`) and passes with it. The flip is proven by it.
    pub fn check_held(&mut self, claim: CheckClaim, reference: baton_records::Reference) {
        // It passed with the work: confirmed, as a run in the project would say.
        if !self.report.verified.contains(&claim.feature) {
            self.report.verified.push(claim.feature);
            self.report.verified.sort_unstable();
        }
        self.report.proofs.push((
            claim.feature,
            Proof::Check {
                command: claim.command,
                author: claim.author,
                reference: Some(reference),
            },
        ));
    }

    /// A claim's check did not hold in clean worlds (`why`); `vacuous` when it
    /// passed before the work wherever it was replayed. The flip stays unproven
    /// by it (the verifier may still prove it).
    pub fn check_not_held(&mut self, n: usize, why: String, vacuous: bool) {
        if vacuous {
            self.report.vacuous.push(n);
        } else {
            self.report.weak_checks.push((n, why));
        }
    }

    /// Record the check the verifier left for feature `n` (1-based) and baton
    /// replayed: a `check_added` entry by `author`, kept with the flip's proof. The
    /// feature list itself is left as the agent knows it.
    pub fn keep_check(&mut self, n: usize, command: &str, author: &str) {
        self.report
            .checks_added
            .push((n, command.to_string(), author.to_string()));
    }

    /// Step 5, the flips nothing proved (`unproven`, 1-based, those the verifier
    /// did not already reject): taken on the agent's word where `trust_agent`,
    /// else reverted with why (`verifier`: whether the verifier was asked).
    pub fn settle_unproven(&mut self, unproven: &[usize], trust_agent: bool, verifier: bool) {
        let left: Vec<usize> = unproven
            .iter()
            .copied()
            .filter(|n| {
                self.report.flipped.contains(n) && !self.report.proofs.iter().any(|(p, _)| p == n)
            })
            .collect();
        if trust_agent {
            self.report
                .proofs
                .extend(left.iter().map(|&n| (n, Proof::Trusted)));
            return;
        }
        let Some(list) = &self.list else { return };
        let mut reverted = Vec::new();
        for &n in &left {
            let why = self.unproven_reason(list, n, verifier);
            self.reasons.push(format!(
                "reverted the flip of feature {n}: nothing proved it ({why})"
            ));
            self.report.unproven.push((n, why));
            reverted.push(n);
        }
        self.revert(&reverted);
    }

    /// Why nothing proved feature `n`'s flip, in words the next session can act on.
    fn unproven_reason(&self, list: &FeatureList, n: usize, verifier: bool) -> String {
        let weak = self.report.weak_checks.iter().find(|(f, _)| *f == n);
        let unrunnable = self.report.unrunnable.iter().find(|f| f.feature == n);
        let refused;
        let check = if let Some((_, why)) = weak {
            why.as_str()
        } else if let Some(f) = unrunnable {
            refused = format!("its verify command cannot run here ({})", f.reason);
            refused.as_str()
        } else if self.report.vacuous.contains(&n) {
            "its verify command already passed before the work (replayed in a clean checkout of the session's base and of where the feature entered the list), so it proves nothing"
        } else if self.report.verify_added.contains(&n) {
            "its verify command was added with the flip, so it is the claim, not a proof"
        } else if crate::checks::command_of(list, n - 1).is_some() {
            "its verify command did not pass just now"
        } else {
            "it has no verify command"
        };
        if verifier {
            format!("{check}, and the independent verifier did not confirm it")
        } else {
            format!(
                "{check}, and the independent verifier is off ([verify] agent = false in baton.toml)"
            )
        }
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

    /// The independent verifier could not run (`why`: the provider's quota, a
    /// model error): the flips it was to check stay unproven, and are reverted
    /// with that reason, for the next session to try again.
    pub fn verifier_failed(&mut self, features: &[usize], why: &str) {
        let why = format!("the independent verifier could not run: {why}");
        for &n in features {
            self.reasons.push(format!(
                "reverted the flip of feature {n}: nothing proved it ({why})"
            ));
            self.report.unproven.push((n, why.clone()));
        }
        self.revert(features);
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

    /// Step 4, the clean tree: commit what the session left uncommitted, so
    /// nothing is lost (and the verifier sees all of it in the history), except
    /// junk ([`crate::leftovers`]), which stays untracked and is recorded. Runs
    /// once; [`Gates::finish`] calls it if no one did.
    pub fn commit_leftovers(&mut self) -> Result<(), HarnessError> {
        if self.leftovers_done {
            return Ok(());
        }
        self.leftovers_done = true;
        let files = self.files;
        let fl_name = files.names.feature_list.clone();
        let dirty: Vec<crate::leftovers::Dirty> = git::dirty(&files.dir)?
            .into_iter()
            .filter(|d| !(self.changed && d.path == fl_name))
            .collect();
        let split = crate::leftovers::split(&files.dir, &dirty);
        self.report.left_out = split.left_out;
        let leftovers = split.keep;
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
            let paths: Vec<String> = leftovers.iter().map(|p| format!(":(literal){p}")).collect();
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            self.report.leftover_commit = git::commit(&files.dir, &msg, &paths, &[])?;
            self.report.leftover_files = leftovers;
        }
        Ok(())
    }

    /// The end: commit leftovers if that was not done, write the list baton
    /// decided, check the notes, commit baton's own changes, and record everything
    /// in the ledger and the accepted copy.
    pub fn finish(
        mut self,
        notes_before: &str,
    ) -> Result<(GateReport, Option<FeatureList>), HarnessError> {
        self.commit_leftovers()?;
        let files = self.files;
        let fl_name = files.names.feature_list.clone();
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
                    proof: None,
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
            e.proof = r
                .proofs
                .iter()
                .find(|(p, _)| *p == n)
                .map(|(_, p)| p.clone());
            self.files.append_ledger(&e)?;
        }
        for &n in &r.vacuous {
            self.files.append_ledger(&entry(
                LedgerKind::VacuousCheck,
                Some(n),
                format!(
                    "{}: its verify command already passed before the work, in a clean checkout of every commit it was replayed against, so it is not counted as proof",
                    desc(n)
                ),
                head.clone(),
            ))?;
        }
        for (n, why) in &r.weak_checks {
            self.files.append_ledger(&entry(
                LedgerKind::CheckTouched,
                Some(*n),
                format!("{}: {why}", desc(*n)),
                head.clone(),
            ))?;
        }
        let coder = format!("coding session {}", self.session);
        let added = r
            .verify_added
            .iter()
            .filter_map(|&n| crate::checks::command_of(list, n - 1).map(|c| (n, c, coder.clone())))
            .chain(r.checks_added.iter().cloned());
        for (n, command, author) in added {
            let mut e = entry(LedgerKind::CheckAdded, Some(n), desc(n), head.clone());
            e.proof = Some(Proof::Check {
                command,
                author,
                reference: None,
            });
            self.files.append_ledger(&e)?;
        }
        for (n, why) in &r.unproven {
            self.files.append_ledger(&entry(
                LedgerKind::UnverifiedFlip,
                Some(*n),
                format!("{}: {why}", desc(*n)),
                r.restore_commit.clone(),
            ))?;
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
        for (n, why) in &r.checks_refused {
            self.files.append_ledger(&entry(
                LedgerKind::CheckRefused,
                Some(*n),
                format!("{}: {why}", desc(*n)),
                head.clone(),
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
        if let Some(v) = &r.rewound {
            self.files.append_ledger(&entry(
                LedgerKind::Violation,
                None,
                v.clone(),
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

/// Who wrote a check, as the ledger tells it.
pub(crate) struct Author {
    /// In words: `coding session 4`, `the verifier (session 6)`, `the initializer`.
    pub(crate) who: String,
    /// A coding session wrote it.
    pub(crate) coder: bool,
}

/// Who wrote feature `n`'s check `command`: the last `check_added` entry for it
/// that names this command (a coding session, or the verifier whose check baton
/// kept), else whoever wrote the feature (a planner's or a person's `added` or
/// `amended` entry), else the list's first author, the initializer.
pub(crate) fn check_author(
    ledger: &baton_records::ledger::Ledger,
    n: usize,
    command: &str,
) -> Author {
    let mut out = Author {
        who: "the initializer".to_string(),
        coder: false,
    };
    for e in ledger.entries.iter().filter(|e| e.feature == Some(n)) {
        match (e.kind, &e.proof) {
            (
                LedgerKind::CheckAdded,
                Some(Proof::Check {
                    command: c, author, ..
                }),
            ) if c == command => {
                out = Author {
                    coder: author.starts_with("coding session"),
                    who: author.clone(),
                };
            }
            (LedgerKind::Added, _) => {
                out = Author {
                    who: format!("the planner or a person (session {})", e.session),
                    coder: false,
                };
            }
            (LedgerKind::Amended, _) => {
                out = Author {
                    who: "a person (baton accept)".to_string(),
                    coder: false,
                };
            }
            _ => {}
        }
    }
    out
}
