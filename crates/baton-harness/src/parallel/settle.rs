//! Settling sessions that ended: what a session left in its agent's copy is
//! gathered ([`Ended`], kept in `.baton/settling/` until it is on the record, so
//! that a killed run loses none), its flips integrated into the main branch (see
//! `merge.rs`), and the session put on the project's record: its ledger lines,
//! the flips if merged (else a requeue, an attempt counted), blocks, the stall
//! count, its record, transcript and evidence.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_records::{
    FeatureList, FeatureRecord, Integration, IntegrationOutcome, LedgerEntry, LedgerKind,
    SessionKind, SessionRecord, State, layout, ledger,
};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::Parallel;
use super::agents::{Agent, CopyDir, Done, fetch};
use super::merge::{Branch, Integrator, Settled};
use super::relay::Prefixed;
use crate::error::HarnessError;
use crate::limits::{RunEnd, RunOptions};
use crate::queue;

/// A session that ended, on its way to the project's record. Written to
/// `.baton/settling/<number>.json` until it is settled, since its agent's next
/// session writes the copy's records afresh: a run killed in between settles it
/// first when started again.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Ended {
    /// The agent's index in the run.
    pub agent: usize,
    pub feature: usize,
    pub number: u32,
    /// Its record, from the copy.
    pub record: SessionRecord,
    /// The copy's record of the feature after it (attempts, last reason).
    pub feature_record: Option<FeatureRecord>,
    /// The tip of the agent's branch, in the project.
    pub theirs: String,
    /// Other features the session declared blocked (`BlockFeature`), with the
    /// copy's record of each.
    #[serde(default)]
    pub blocked: Vec<(usize, FeatureRecord)>,
}

/// An agent's session that ended and is not merged yet, as its agent's next
/// session builds on it: the agent, its branch's tip, and its flips.
pub(super) type Unmerged = (usize, String, Vec<usize>);

impl Ended {
    fn path(main: &Path, number: u32) -> PathBuf {
        main.join(layout::SETTLING)
            .join(format!("{number:04}.json"))
    }

    /// Whether the session flipped its feature: only then is there a branch to
    /// merge.
    pub(super) fn flipped(&self) -> bool {
        self.record.gates.flipped.contains(&self.feature)
    }

    /// What its agent's next session builds on while it is not merged yet
    /// (`None` when it flipped nothing).
    pub(super) fn own(&self) -> Option<Unmerged> {
        self.flipped().then(|| {
            (
                self.agent,
                self.theirs.clone(),
                self.record.gates.flipped.clone(),
            )
        })
    }

    /// Its number and what it cost, its verifier's session included.
    pub(super) fn spent(&self) -> (u32, f64) {
        (
            self.number,
            self.record.cost_usd + self.record.verifier_cost_usd,
        )
    }
}

/// What agent `a`'s copy builds on: of its sessions ended and not merged yet
/// (`ended`, oldest first), the newest one's tip, and every one's flips (a
/// session started from the one before it, so its branch holds that one's flips
/// as well).
pub(super) fn unmerged_own(
    ended: impl Iterator<Item = Unmerged>,
    a: usize,
) -> Option<(String, Vec<usize>)> {
    let mut own: Option<(String, Vec<usize>)> = None;
    for (_, theirs, flips) in ended.filter(|(agent, ..)| *agent == a) {
        let mut all = own.map(|(_, f)| f).unwrap_or_default();
        for f in flips {
            if !all.contains(&f) {
                all.push(f);
            }
        }
        own = Some((theirs, all));
    }
    own
}

impl Parallel<'_> {
    /// What a session that ended left in its copy: its record, the copy's state
    /// and its branch's tip (fetched into the project). Taken before the agent's
    /// next session starts, which writes the copy's state afresh. `None` when the
    /// run was stopped (Ctrl-C, or an error elsewhere) before the session began.
    ///
    /// A hand-out that began no session otherwise is an error, with its cause:
    /// the copy could not be prepared (git's command and message), or its runner
    /// stopped before the session. Handing the work out again would only fail the
    /// same way, at once.
    pub(super) fn gather(&self, copy: &CopyDir, d: Done) -> Result<Option<Ended>, HarnessError> {
        let state = State::load(&copy.dir)?;
        let Some(mut record) = state
            .sessions
            .iter()
            .find(|s| s.number == d.number)
            .cloned()
        else {
            let why = match d.end {
                Ok(RunEnd::Interrupted) => return Ok(None),
                Err(e) => e.to_string(),
                Ok(end) => format!(
                    "its working copy's runner stopped before the session ({end:?}) where the run's own stop conditions did not (a bug in baton)"
                ),
            };
            // Begun but not recorded: the next run finishes it from the copy.
            if state
                .in_progress
                .as_ref()
                .is_some_and(|ip| ip.number == d.number)
            {
                return Err(HarnessError::Input(format!(
                    "agent {}'s session {:04} on feature #{} was not recorded (the next run settles it): {why}",
                    copy.id, d.number, d.feature
                )));
            }
            return Err(HarnessError::Input(format!(
                "agent {} could not start session {:04} on feature #{}: {why}",
                copy.id, d.number, d.feature
            )));
        };
        if let Err(e) = &d.end {
            self.reporter.line(&format!(
                "agent {}: session {:04} failed: {e}",
                copy.id, d.number
            ));
        }
        record.agent = Some(copy.id);
        let theirs = match d.theirs {
            Some(t) => t?,
            None => fetch(&self.files.dir, &copy.dir, copy.id)?,
        };
        let ended = Ended {
            agent: d.agent,
            feature: d.feature,
            number: d.number,
            record,
            feature_record: state.features.get(&d.feature).cloned(),
            theirs,
            blocked: state
                .features
                .iter()
                .filter(|(n, r)| **n != d.feature && r.blocked_in == Some(d.number))
                .map(|(n, r)| (*n, r.clone()))
                .collect(),
        };
        let text = serde_json::to_string_pretty(&ended)
            .map_err(|e| HarnessError::Agents(format!("session {:04}: {e}", d.number)))?;
        baton_records::write_atomic(&Ended::path(&self.files.dir, d.number), &text)?;
        Ok(Some(ended))
    }
    /// Sessions a killed run had ended but not settled (`.baton/settling/`).
    fn unsettled(&self) -> Result<Vec<Ended>, HarnessError> {
        let dir = self.files.dir.join(layout::SETTLING);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        let mut out = Vec::new();
        for p in paths
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
        {
            let text = std::fs::read_to_string(p).map_err(crate::error::io(p))?;
            let e: Ended = serde_json::from_str(&text).map_err(|e| {
                HarnessError::Input(format!(
                    "{}: not a session waiting to be settled ({e}); move it aside to go on",
                    p.display()
                ))
            })?;
            out.push(e);
        }
        Ok(out)
    }
}

/// Settles agents' ended sessions on the project's record, integrating their
/// branches through its [`Integrator`] (the run, the integration worktree's parts,
/// the mainline).
pub(super) struct Settler<'r, 'a> {
    pub integrator: Integrator<'r, 'a>,
}

impl Settler<'_, '_> {
    /// Before the first hand-out: what a killed run left is put on the record.
    /// Sessions it had ended but not settled first; then sessions it left
    /// unfinished in a working copy, whose gates run there (the copy's runner
    /// resumes them and stops) before they are integrated.
    pub(super) async fn recover(&self, agents: &[Agent]) -> Result<(), HarnessError> {
        let main = &self.integrator.run.files.dir;
        let unsettled = self.integrator.run.unsettled()?;
        if !unsettled.is_empty() {
            self.integrator.run.reporter.line(&format!(
                "settling {} session(s) a stopped run left unsettled",
                unsettled.len()
            ));
            // Their copies, whether or not this run has as many agents.
            let last = unsettled.iter().map(|e| e.agent + 1).max().unwrap_or(0);
            let copies: Vec<CopyDir> = (1..=last)
                .map(|k| CopyDir {
                    id: k as u32,
                    dir: main.join(layout::AGENTS).join(format!("a{k}")),
                })
                .collect();
            self.settle(&copies, unsettled, None).await?;
        }
        let copies = CopyDir::of(agents);
        for (i, a) in agents.iter().enumerate() {
            let Some(ip) = State::load(&a.dir)?.in_progress else {
                continue;
            };
            let Some(parts) = &a.parts else { continue };
            let stopped = CancellationToken::new();
            stopped.cancel();
            let reporter = Prefixed {
                agent: a.id,
                inner: self.integrator.run.reporter,
            };
            let opts = RunOptions {
                agent: Some(a.id),
                ..self.integrator.run.opts.clone()
            };
            let end = match self
                .integrator
                .run
                .runner(&a.dir, parts, &reporter, opts, stopped)
            {
                Ok(runner) => runner.run().await,
                Err(e) => Err(e),
            };
            let done = Done {
                agent: i,
                feature: ip.target.unwrap_or(0),
                number: ip.number,
                end,
                parts: None,
                theirs: None,
            };
            if let Some(e) = self.integrator.run.gather(&copies[i], done)? {
                self.settle(&copies, vec![e], None).await?;
            }
        }
        Ok(())
    }

    /// Record what sessions that ended together did in the project, integrating
    /// their flips (as one batch when there are several). A session whose branch
    /// conflicts with the main branch itself is recorded at once and its feature
    /// sent on `released`, before the rest of the batch is merged and swept.
    pub(super) async fn settle(
        &self,
        agents: &[CopyDir],
        ended: Vec<Ended>,
        released: Option<UnboundedSender<usize>>,
    ) -> Result<(), HarnessError> {
        // What the merges need, apart from the sessions themselves: those are put
        // on the record as they settle.
        let flipped: Vec<(u32, String, Vec<usize>, usize, u32)> = ended
            .iter()
            .filter(|e| e.flipped())
            .map(|e| {
                (
                    agents[e.agent].id,
                    e.theirs.clone(),
                    e.record.gates.flipped.clone(),
                    e.feature,
                    e.number,
                )
            })
            .collect();
        let branches: Vec<Branch<'_>> = flipped
            .iter()
            .map(|(agent, theirs, flips, feature, number)| Branch {
                agent: *agent,
                theirs,
                flips,
                feature: *feature,
                number: *number,
            })
            .collect();
        let mut waiting: Vec<Option<Ended>> = ended.into_iter().map(Some).collect();
        let mut early = |number: u32, integration: Integration| -> Result<(), HarnessError> {
            let Some(e) = waiting
                .iter_mut()
                .find(|e| e.as_ref().is_some_and(|e| e.number == number))
                .and_then(Option::take)
            else {
                return Ok(());
            };
            let feature = e.feature;
            self.record_settled(&agents[e.agent], e, integration)?;
            if let Some(tx) = &released {
                let _ = tx.send(feature);
            }
            Ok(())
        };
        let results = self.integrator.integrate_all(&branches, &mut early).await?;
        let mut merged: BTreeMap<u32, Integration> = results
            .into_iter()
            .zip(branches.iter().map(|b| b.number))
            .filter_map(|(s, n)| match s {
                Settled::Now(i) => Some((n, i)),
                Settled::Early => None,
            })
            .collect();
        for e in waiting.into_iter().flatten() {
            let integration = match merged.remove(&e.number) {
                Some(i) => i,
                None => {
                    self.integrator
                        .run
                        .keep(&e.theirs, e.feature, e.number)
                        .await?
                }
            };
            self.record_settled(&agents[e.agent], e, integration)?;
        }
        Ok(())
    }

    /// Put one settled session on the project's record: its ledger lines, its
    /// flips if merged (else a requeue), blocks and the stall count, its record,
    /// transcript and evidence.
    fn record_settled(
        &self,
        copy: &CopyDir,
        ended: Ended,
        integration: Integration,
    ) -> Result<(), HarnessError> {
        let Ended {
            feature,
            number,
            mut record,
            feature_record,
            blocked,
            ..
        } = ended;
        let main = &self.integrator.run.files.dir;
        let mut state = State::load(main)?;
        self.copy_ledger(copy, number, &integration)?;
        let mut list = self
            .integrator
            .run
            .files
            .load_accepted()?
            .unwrap_or_default();
        keep_blocks(&mut state, &list, blocked);
        let merged = integration.outcome == IntegrationOutcome::Merged;
        if merged {
            for &f in &record.gates.flipped {
                if let Some(feat) = list.features.get_mut(f - 1) {
                    feat.passes = true;
                }
                state.features.remove(&f);
            }
            self.integrator.run.files.save_accepted(&list)?;
            if record.kind == SessionKind::Coding {
                queue::count_stall(&mut state, !record.gates.flipped.is_empty(), true, false);
            }
        } else {
            let first_deferral = if record.gates.flipped.contains(&feature) {
                self.requeue(&mut state, &list, feature, number, &integration)?
            } else {
                take_feature_record(&mut state, feature, feature_record)
            };
            if record.kind == SessionKind::Coding {
                self.count_stall(&mut state, &record, feature, first_deferral);
            }
            // Not the project's: the flips stay on the kept branch.
            record.gates.flipped.clear();
        }
        self.integrator
            .run
            .reporter
            .line(&settled_line(copy.id, number, feature, &integration));
        record.integration = Some(integration);
        state.sessions.push(record.clone());
        state.sessions.sort_by_key(|s| s.number);
        state.save(main)?;
        // Its numbers are the project's (a no-op for what this run handed out; a
        // session a killed run left may be past the record).
        baton_records::SessionNumbers::open(main)?
            .saw(number.max(record.gates.verifier_session.unwrap_or(0)))?;
        self.integrator
            .run
            .reporter
            .session_end(&record, list.passing(), list.features.len());
        self.copy_artifacts(copy, number, record.gates.verifier_session)
    }

    /// The copy's ledger lines of session `number`: its decisions, on the
    /// project's record. A flip is the project's only once it is merged.
    fn copy_ledger(
        &self,
        copy: &CopyDir,
        number: u32,
        integration: &Integration,
    ) -> Result<(), HarnessError> {
        let lines = ledger::read(&copy.dir.join(layout::LEDGER))?;
        for mut e in lines.entries.into_iter().filter(|e| e.session == number) {
            if e.kind == LedgerKind::Flip {
                if integration.outcome != IntegrationOutcome::Merged {
                    continue;
                }
                e.commit.clone_from(&integration.commit);
            }
            self.integrator.run.files.append_ledger(&e)?;
        }
        Ok(())
    }

    /// A flip that was not merged: the feature goes back to the queue, an attempt
    /// counted (deferred at the limit). Whether this was its first deferral.
    fn requeue(
        &self,
        state: &mut State,
        list: &FeatureList,
        feature: usize,
        number: u32,
        integration: &Integration,
    ) -> Result<bool, HarnessError> {
        let detail = format!(
            "not merged into the main branch ({:?}): {}; kept as {}",
            integration.outcome,
            integration.detail,
            integration.kept.as_deref().unwrap_or("-")
        );
        self.integrator.run.files.append_ledger(&LedgerEntry {
            feature: Some(feature),
            ..LedgerEntry::new(number, LedgerKind::Requeued, detail.clone())
        })?;
        let limit = self.integrator.run.cfg.run.feature_attempts;
        let Some(d) = queue::count_attempt(state, feature, number, detail.clone(), limit) else {
            return Ok(false);
        };
        let desc = list
            .features
            .get(feature.wrapping_sub(1))
            .map(|f| f.description.clone())
            .unwrap_or_default();
        self.integrator.run.files.append_ledger(&LedgerEntry {
            feature: Some(feature),
            ..LedgerEntry::new(
                number,
                LedgerKind::Deferred,
                format!(
                    "{desc}: deferred after {} failed attempt(s); last: {detail}",
                    d.attempts
                ),
            )
        })?;
        Ok(d.first)
    }

    /// The stall count after a coding session that made nothing newly pass, as a
    /// run of one counts it: a session that had its feature to work on (not one
    /// it declared blocked, not one stopped by the provider's usage limit,
    /// Ctrl-C or a kill: [`queue::had_a_fair_chance`]). The
    /// feature's first deferral restarts the count once.
    fn count_stall(
        &self,
        state: &mut State,
        record: &SessionRecord,
        feature: usize,
        first_deferral: bool,
    ) {
        let declared_blocked = state
            .features
            .get(&feature)
            .is_some_and(|r| r.blocked.is_some() && r.blocked_in == Some(record.number));
        let worked = record.target.is_some()
            && !declared_blocked
            && queue::had_a_fair_chance(record.outcome);
        // A run of one stops as soon as the count reaches the limit, so no
        // deferral restarts it from there: neither does one of a session that was
        // under way when it did.
        let limit = self.integrator.run.stall_limit();
        let first_deferral = first_deferral && (limit == 0 || state.stalled < limit);
        queue::count_stall(state, false, worked, first_deferral);
    }

    /// The session's transcript and its verifier's (where `baton log` looks) and
    /// evidence (where the report looks) into the project; then it is settled.
    fn copy_artifacts(
        &self,
        copy: &CopyDir,
        number: u32,
        verifier: Option<u32>,
    ) -> Result<(), HarnessError> {
        let main = &self.integrator.run.files.dir;
        for t in std::iter::once(number)
            .chain(verifier)
            .map(layout::transcript)
        {
            if copy.dir.join(&t).is_file() {
                std::fs::create_dir_all(main.join(layout::SESSIONS))
                    .map_err(crate::error::io(main.join(layout::SESSIONS)))?;
                std::fs::copy(copy.dir.join(&t), main.join(&t))
                    .map_err(crate::error::io(main.join(&t)))?;
            }
        }
        let ev = layout::evidence(number);
        if copy.dir.join(&ev).is_dir() {
            copy_tree(&copy.dir.join(&ev), &main.join(&ev))?;
        }
        let pending = Ended::path(main, number);
        if pending.exists() {
            std::fs::remove_file(&pending).map_err(crate::error::io(&pending))?;
        }
        Ok(())
    }
}

/// Other features a session declared blocked, unless they pass by now.
fn keep_blocks(state: &mut State, list: &FeatureList, blocked: Vec<(usize, FeatureRecord)>) {
    for (n, r) in blocked {
        if list
            .features
            .get(n.wrapping_sub(1))
            .is_some_and(|f| !f.passes)
        {
            let mine = state.features.entry(n).or_default();
            mine.blocked = r.blocked;
            mine.blocked_in = r.blocked_in;
        }
    }
}

/// A session that flipped nothing: the copy's record of its feature (attempts,
/// deferral, last reason) becomes the project's, keeping a block another agent's
/// session declared meanwhile. Whether the copy's gates deferred it first now.
fn take_feature_record(
    state: &mut State,
    feature: usize,
    copy_record: Option<FeatureRecord>,
) -> bool {
    let Some(mut r) = copy_record else {
        return false;
    };
    let before = state.features.get(&feature);
    let first_deferral = r.deferred.is_some() && before.is_none_or(|b| b.deferred.is_none());
    if r.blocked.is_none()
        && let Some(b) = before.filter(|b| b.blocked.is_some())
    {
        r.blocked.clone_from(&b.blocked);
        r.blocked_in = b.blocked_in;
    }
    state.features.insert(feature, r);
    first_deferral
}

/// The run's line about a settled session.
fn settled_line(agent: u32, number: u32, feature: usize, integration: &Integration) -> String {
    let what = match integration.outcome {
        IntegrationOutcome::Merged => format!(
            "merged into the main branch ({})",
            integration.commit.as_deref().unwrap_or("")
        ),
        IntegrationOutcome::Kept => "did not pass; its branch is kept".into(),
        o => format!("{o:?}: {}; back to the queue", integration.detail),
    };
    format!("agent {agent}: session {number:04} feature #{feature}: {what}")
}

/// Copy the files under `from` to `to` (directories made as needed; symlinks and
/// other special files left out).
fn copy_tree(from: &Path, to: &Path) -> Result<(), HarnessError> {
    std::fs::create_dir_all(to).map_err(crate::error::io(to))?;
    for e in std::fs::read_dir(from).map_err(crate::error::io(from))? {
        let e = e.map_err(crate::error::io(from))?;
        let kind = e.file_type().map_err(crate::error::io(e.path()))?;
        let dest = to.join(e.file_name());
        if kind.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else if kind.is_file() {
            std::fs::copy(e.path(), &dest).map_err(crate::error::io(&dest))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::unmerged_own;

    #[test]
    fn an_agent_builds_on_its_newest_unmerged_session_with_every_unmerged_flip() {
        let ended = || {
            vec![
                (0, "a1".to_string(), vec![1]),
                (1, "b1".to_string(), vec![2]),
                (0, "a2".to_string(), vec![5]),
                (0, "a3".to_string(), vec![5, 7]),
            ]
            .into_iter()
        };
        assert_eq!(
            unmerged_own(ended(), 0),
            Some(("a3".to_string(), vec![1, 5, 7]))
        );
        assert_eq!(unmerged_own(ended(), 1), Some(("b1".to_string(), vec![2])));
        assert_eq!(unmerged_own(ended(), 2), None);
    }
}
