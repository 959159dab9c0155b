//! The accepted list: the feature list baton goes by, kept in `.baton/`. Two words
//! mean one thing each across baton: a list is **adopted** when baton takes one it
//! did not see written as it is (a project's own list on its first run; `baton new
//! --adopt` likewise takes a repository as it is), and a change is **accepted**
//! when it passed baton's checks and becomes the accepted list (the initializer's
//! list here, a planner's in `plan/`, a person's edit in [`crate::edit`], a
//! session's flips in the gates). This file adopts or restores the list before a
//! run, accepts or refuses the initializer's, and puts back a list damaged or
//! deleted between sessions.

use baton_agent::transcript::now_ms;
use baton_records::FeatureList;

use crate::error::HarnessError;
use crate::git;
use crate::runner::Runner;
use baton_records::GateReport;
use baton_records::{LedgerEntry, LedgerKind};
use baton_records::{SessionKind, State};

/// When baton puts the accepted feature list back ([`Runner::restore_list`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Restore {
    /// Before coding session `n`.
    Before(u32),
    /// When a run starts, after the last session that ran (0: none yet).
    AtStart {
        /// That session's number.
        after: u32,
    },
}

impl Runner<'_> {
    /// The accepted list, or the project's own list adopted as the baseline (which
    /// starts the per-feature records afresh: their numbers may mean other features now).
    pub(crate) fn accepted_list(
        &self,
        state: &mut State,
    ) -> Result<Option<FeatureList>, HarnessError> {
        if let Some(a) = self.files.load_accepted()? {
            return Ok(Some(a));
        }
        // A list baton's own initializer wrote is never adopted: rejected, the
        // initializer runs again (told what was wrong); written by one a killed
        // run left unfinished, that session's gates judge it when it is resumed.
        if state
            .sessions
            .iter()
            .any(|s| s.kind == SessionKind::Initializer)
            || state
                .in_progress
                .as_ref()
                .is_some_and(|ip| ip.kind == SessionKind::Initializer)
        {
            return Ok(None);
        }
        let Ok(Some(text)) = self.files.read_list() else {
            return Ok(None);
        };
        let list = FeatureList::parse(&text, &self.files.names.feature_list).map_err(|source| {
            HarnessError::FeatureList {
                what: "cannot adopt the existing feature list".into(),
                source,
            }
        })?;
        self.files.save_accepted(&list)?;
        if !state.features.is_empty() {
            self.reporter.line(&format!(
                "cleared the attempts, deferrals and blocks of {} feature(s): they belonged to the list adopted before",
                state.features.len()
            ));
            state.features.clear();
            state.save(&self.files.dir)?;
        }
        self.files.append_ledger(&LedgerEntry {
            t_ms: now_ms(),
            session: 0,
            kind: LedgerKind::Accepted,
            feature: None,
            detail: format!(
                "adopted the existing {} ({} features, {} passing)",
                self.files.names.feature_list,
                list.features.len(),
                list.passing()
            ),
            commit: git::head(&self.files.dir),
            evidence: Vec::new(),
            proof: None,
        })?;
        self.reporter.line(&format!(
            "adopted {}: {} features, {} passing",
            self.files.names.feature_list,
            list.features.len(),
            list.passing()
        ));
        Ok(Some(list))
    }

    /// Before a coding session, and when a run starts: a feature list that is
    /// invalid, deleted or changed beyond `passes` since it was accepted (by a
    /// person, a script, a crash) is put back to the accepted version, passes
    /// included, and committed and recorded, so the agent never starts from a
    /// broken list and no pass is lost. `when` says which, and names the session
    /// the restore follows or precedes: at a run's start, the last one that ran
    /// (a finished project runs no next one).
    pub(crate) fn restore_list(
        &self,
        when: Restore,
        accepted: &FeatureList,
    ) -> Result<(), HarnessError> {
        let (number, said, tag) = match when {
            Restore::Before(n) => (
                n,
                format!("before session {n:04}"),
                format!("before-{n:04}"),
            ),
            Restore::AtStart { after } => (
                after,
                format!("when the run started (after session {after:04})"),
                format!("after-{after:04}"),
            ),
        };
        let name = &self.files.names.feature_list;
        // A link in the list's place reads as a deleted list: it is replaced.
        let text = self.files.read_text(name);
        let r = baton_records::reconcile(accepted, &text, name);
        if !r.needs_restore() {
            return Ok(());
        }
        let what: Vec<String> = if text.is_empty() {
            vec![format!("{name} was deleted")]
        } else {
            r.violations.iter().map(ToString::to_string).collect()
        };
        // What is replaced is kept, byte for byte, for a person to look at.
        let kept = if text.is_empty() {
            None
        } else {
            let p = self
                .files
                .dir
                .join(baton_records::layout::REPLACED)
                .join(format!("{name}.{tag}"));
            baton_records::write_atomic(&p, &text)?;
            Some(self.files.rel(&p))
        };
        let what: Vec<String> = what
            .into_iter()
            .map(|w| match &kept {
                Some(k) => format!("{w} (the replaced file is kept as {k})"),
                None => w,
            })
            .collect();
        let msg = format!(
            "baton: restore {name} {said}\n\n{}",
            what.iter().map(|w| format!("- {w}\n")).collect::<String>()
        );
        let entries = what
            .iter()
            .map(|w| LedgerEntry {
                t_ms: now_ms(),
                session: number,
                kind: LedgerKind::Violation,
                feature: None,
                detail: format!("{said}: {w}; restored the accepted list"),
                commit: None,
                evidence: Vec::new(),
                proof: None,
            })
            .collect();
        self.files.commit_list(accepted, &msg, entries)?;
        self.reporter
            .line(&format!("restored {name} {said}: {}", what.join("; ")));
        Ok(())
    }

    /// At the start of a run (no session in progress): a valid feature list that
    /// differs from the accepted one beyond `passes` is a person's edit, not an
    /// agent's (a session's own changes were judged by its gates). It is not
    /// restored over, which would lose it: the run stops and says how to accept it.
    pub(crate) fn refuse_unaccepted_edit(
        &self,
        accepted: &FeatureList,
    ) -> Result<(), HarnessError> {
        let name = &self.files.names.feature_list;
        // Beneath the project: never through a link planted in the list's place.
        let Ok(Some(text)) = self.files.read_list() else {
            return Ok(());
        };
        if FeatureList::parse(&text, name).is_err() {
            return Ok(());
        }
        let r = baton_records::reconcile(accepted, &text, name);
        if r.violations.is_empty() {
            return Ok(());
        }
        let what: Vec<String> = r
            .violations
            .iter()
            .take(5)
            .map(ToString::to_string)
            .collect();
        Err(HarnessError::Input(format!(
            "{name} differs from the accepted list beyond \"passes\" ({}{}): to keep that edit, `baton accept {}`; to drop it, `git checkout -- {name}`; then run again",
            what.join("; "),
            if r.violations.len() > 5 { "; …" } else { "" },
            self.files.dir.display()
        )))
    }

    /// Validate the initializer's list; accept it (all features failing) or leave `None`.
    pub(crate) fn accept_initial(
        &self,
        session: u32,
        gates: &mut GateReport,
    ) -> Result<Option<FeatureList>, HarnessError> {
        let Ok(Some(text)) = self.files.read_list() else {
            return Ok(None);
        };
        let Ok(mut list) = FeatureList::parse(&text, &self.files.names.feature_list) else {
            return Ok(None);
        };
        if (list.features.len() as u32) < self.cfg.project.min_features {
            return Ok(None);
        }
        let claimed: Vec<usize> = (0..list.features.len())
            .filter(|&i| list.features[i].passes)
            .collect();
        if !claimed.is_empty() {
            for &i in &claimed {
                list.features[i].passes = false;
            }
            let v = format!(
                "{} feature(s) were marked passing before any was implemented; set back to false",
                claimed.len()
            );
            gates.violations.push(v.clone());
            let msg = format!(
                "baton: reset premature passes in {} after session {session}\n\n{v}",
                self.files.names.feature_list
            );
            gates.restore_commit = self.files.commit_list(&list, &msg, Vec::new())?;
        }
        self.files.save_accepted(&list)?;
        self.files.append_ledger(&LedgerEntry {
            t_ms: now_ms(),
            session,
            kind: LedgerKind::Accepted,
            feature: None,
            detail: format!("initial feature list ({} features)", list.features.len()),
            commit: git::head(&self.files.dir),
            evidence: Vec::new(),
            proof: None,
        })?;
        Ok(Some(list))
    }

    pub(crate) fn initial_problem(&self) -> String {
        let name = &self.files.names.feature_list;
        // Beneath the project: never through a link planted in the list's place.
        match self.files.read_list() {
            Err(_) | Ok(None) => format!("no {name} was written"),
            Ok(Some(text)) => match FeatureList::parse(&text, name) {
                Err(e) => e.to_string(),
                Ok(l) => format!(
                    "{name} has {} features; at least {} are required (if the spec warrants no more, lower [project] min_features and features in baton.toml)",
                    l.features.len(),
                    self.cfg.project.min_features
                ),
            },
        }
    }
}
