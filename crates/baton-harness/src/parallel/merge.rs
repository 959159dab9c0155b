//! Integrating agents' branches into the main branch: the merge in the
//! integration worktree (the feature list by meaning, the notes as a union, any
//! other conflict abandons it), the sweep of every passing feature on the merged
//! tree, and the fast-forward (after a push, with a shared remote). Sessions that
//! end together are merged as a batch with one sweep; when that sweep fails, each
//! is merged and swept alone, so the blame lands on the branch that broke a check.
//! A branch that is not merged is kept under `refs/baton/unintegrated/`.
//!
//! All of it runs while the run's task hands out work (see `coordinator.rs`):
//! git in the integration worktree does not block the thread, and the main
//! branch and the accepted list move together ([`Integrator::advance`], with no
//! await between), so an agent handed work at any moment starts from a tip and a
//! list that match.

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_config::CONFIG_FILE;
use baton_records::{FeatureList, Integration, IntegrationOutcome, layout};

use super::claims::Mainline;
use super::{AgentParts, PUSH_ATTEMPTS, Parallel};
use crate::checks::{Checker, passing_checks};
use crate::error::HarnessError;
use crate::git::{self, git, git_async};

/// One agent's branch to integrate.
pub(super) struct Branch<'b> {
    /// The agent.
    pub agent: u32,
    /// The branch's tip, fetched into the project.
    pub theirs: &'b str,
    /// The flips the agent's gates accepted.
    pub flips: &'b [usize],
    /// The feature the session was for.
    pub feature: usize,
    /// The session's number.
    pub number: u32,
}

/// Told at once of a session whose branch conflicts with the main branch itself
/// (its number and integration), before the rest of its batch is merged and
/// swept: its feature can go back to the queue without waiting for them.
pub(super) type Early<'e> = dyn FnMut(u32, Integration) -> Result<(), HarnessError> + 'e;

/// How one branch of [`Integrator::integrate_all`] came out.
pub(super) enum Settled {
    /// Merged, kept or requeued now: its integration.
    Now(Integration),
    /// It conflicted with the main branch itself and went to `early` already.
    Early,
}

/// How the merge of one branch onto the integration worktree came out.
enum Merged {
    /// Committed: the merge commit.
    Commit(String),
    /// Files other than the list and the notes conflicted (the worktree back
    /// where it was): which.
    Conflicts(String),
}

/// How a batch came out.
enum Batched {
    /// Every branch settled (merged, or not merged and why), in order.
    Done(Vec<Settled>),
    /// The sweep failed or the remote's main branch moved: nothing moved, and the
    /// branches go one at a time.
    OneByOne,
}

impl Parallel<'_> {
    /// Keep an agent's branch that is not merged under a name of its own, if it
    /// holds anything the main branch does not.
    pub(super) async fn keep(
        &self,
        theirs: &str,
        n: usize,
        number: u32,
    ) -> Result<Integration, HarnessError> {
        let main = &self.files.dir;
        let ahead = git_async(main, &["rev-list", "--count", &format!("HEAD..{theirs}")]).await?;
        let kept = if ahead.trim() == "0" {
            None
        } else {
            let name = unintegrated(n, number);
            git_async(main, &["update-ref", &name, theirs]).await?;
            Some(name)
        };
        Ok(Integration {
            outcome: IntegrationOutcome::Kept,
            commit: None,
            kept,
            detail: String::new(),
        })
    }

    /// The integration worktree, made on first use, and the attributes its merges
    /// read.
    pub(super) fn integration_tree(&self) -> Result<PathBuf, HarnessError> {
        let main = &self.files.dir;
        let tree = main.join(layout::INTEGRATE);
        // Written afresh whenever it is not baton's: what else it said (a planted
        // `* merge=union`) would merge conflicting code without a word.
        let attributes = main.join(layout::MERGE_ATTRIBUTES);
        let want = merge_attributes(&self.cfg.project.progress);
        if std::fs::read_to_string(&attributes).ok().as_deref() != Some(want.as_str()) {
            baton_records::write_atomic(&attributes, &want)?;
        }
        if !tree.join(".git").exists() {
            let _ = git(main, &["worktree", "prune"]);
            git(
                main,
                &[
                    "worktree",
                    "add",
                    "-q",
                    "--detach",
                    &tree.display().to_string(),
                    "HEAD",
                ],
            )?;
        }
        Ok(tree)
    }
}

/// Integrates agents' branches into the main branch: the run, the parts its
/// merges and sweeps run with (the integration worktree's), and the mainline
/// they land on.
#[derive(Clone, Copy)]
pub(super) struct Integrator<'r, 'a> {
    pub run: &'r Parallel<'a>,
    pub parts: &'r AgentParts,
    pub mainline: &'r dyn Mainline,
}

impl Integrator<'_, '_> {
    /// Integrate `branches` (sessions that ended together), in order: as one batch
    /// with one sweep when there are several, else (or when the batch's sweep or
    /// push fails) one at a time. One result per branch, in order; a branch that
    /// conflicted with the main branch itself is handed to `early` as soon as that
    /// is known.
    pub(super) async fn integrate_all(
        &self,
        branches: &[Branch<'_>],
        early: &mut Early<'_>,
    ) -> Result<Vec<Settled>, HarnessError> {
        let mut settled = Vec::new();
        if branches.len() > 1
            && let Batched::Done(done) = self.integrate_batch(branches, early, &mut settled).await?
        {
            return Ok(done);
        }
        let mut out = Vec::new();
        for b in branches {
            if settled.contains(&b.number) {
                out.push(Settled::Early);
                continue;
            }
            // The flips merged before are in the accepted list by now.
            let i = self.integrate(b).await?;
            if i.outcome == IntegrationOutcome::Conflict {
                early(b.number, i)?;
                out.push(Settled::Early);
            } else {
                out.push(Settled::Now(i));
            }
        }
        Ok(out)
    }

    /// Merge every branch onto the main branch one after another (a merge commit
    /// each; a branch whose files conflict is kept and left out), sweep the result
    /// once, and move the main branch to it; [`Batched::OneByOne`] when the sweep
    /// failed or the remote's main branch moved: nothing moved.
    /// A branch that conflicts before anything is merged conflicts with the main
    /// branch itself: it goes to `early` at once (and its number to `settled`).
    /// One that conflicts with a session merged before it in the batch waits for
    /// the batch: its next session must start from a main branch holding that.
    async fn integrate_batch(
        &self,
        branches: &[Branch<'_>],
        early: &mut Early<'_>,
        settled: &mut Vec<u32>,
    ) -> Result<Batched, HarnessError> {
        self.run.sync(self.mainline)?;
        let (tree, ours, mut list) = self.fresh_tree().await?;
        let mut out = Vec::new();
        let mut tip = ours.clone();
        for b in branches {
            out.push(match self.merge_one(&tree, &mut list, b, &tip).await? {
                Merged::Commit(commit) => {
                    tip.clone_from(&commit);
                    Settled::Now(merged(commit))
                }
                Merged::Conflicts(conflicts) => {
                    let i = self
                        .not_merged(b, IntegrationOutcome::Conflict, conflicts)
                        .await?;
                    if tip == ours {
                        early(b.number, i)?;
                        settled.push(b.number);
                        Settled::Early
                    } else {
                        Settled::Now(i)
                    }
                }
            });
        }
        if tip == ours {
            return Ok(Batched::Done(out));
        }
        if self.sweep_tree(&tree, &list).await.is_some() {
            git_async(&tree, &["reset", "-q", "--hard", &ours]).await?;
            return Ok(Batched::OneByOne);
        }
        if !self.mainline.publish(&tip)? {
            git_async(&tree, &["reset", "-q", "--hard", &ours]).await?;
            return Ok(Batched::OneByOne);
        }
        self.advance(&tip, &list)?;
        Ok(Batched::Done(out))
    }

    /// Merge one agent's branch into the main branch in the integration worktree,
    /// the feature list by meaning and the notes as a union; sweep the merged tree;
    /// move the main branch only if every check passes.
    pub(super) async fn integrate(&self, b: &Branch<'_>) -> Result<Integration, HarnessError> {
        for _ in 0..PUSH_ATTEMPTS {
            self.run.sync(self.mainline)?;
            if let Some(i) = self.integrate_once(b).await? {
                return Ok(i);
            }
        }
        self.not_merged(
            b,
            IntegrationOutcome::Conflict,
            format!("the remote's main branch moved {PUSH_ATTEMPTS} times while this was merged"),
        )
        .await
    }

    /// One attempt of [`Self::integrate`]; `None` when the remote's main branch
    /// moved before the push.
    async fn integrate_once(&self, b: &Branch<'_>) -> Result<Option<Integration>, HarnessError> {
        let (tree, ours, mut list) = self.fresh_tree().await?;
        let commit = match self.merge_one(&tree, &mut list, b, &ours).await? {
            Merged::Commit(commit) => commit,
            Merged::Conflicts(conflicts) => {
                return self
                    .not_merged(b, IntegrationOutcome::Conflict, conflicts)
                    .await
                    .map(Some);
            }
        };
        if let Some(failed) = self.sweep_tree(&tree, &list).await {
            git_async(&tree, &["reset", "-q", "--hard", &ours]).await?;
            return self
                .not_merged(b, IntegrationOutcome::Regressed, failed)
                .await
                .map(Some);
        }
        if !self.mainline.publish(&commit)? {
            // Another machine moved the main branch first: merge again onto its.
            git_async(&tree, &["reset", "-q", "--hard", &ours]).await?;
            return Ok(None);
        }
        self.advance(&commit, &list)?;
        Ok(Some(merged(commit)))
    }

    /// Merge `b` onto the integration worktree's `HEAD` (commit `before`) and
    /// commit: the feature list is `list` plus `b`'s flips (and becomes that), the
    /// notes a union; the conflicting files when any other file conflicts.
    async fn merge_one(
        &self,
        tree: &Path,
        list: &mut FeatureList,
        b: &Branch<'_>,
        before: &str,
    ) -> Result<Merged, HarnessError> {
        let names = &self.run.cfg.project;
        // The notes merge as a union in git itself where the attributes say so
        // (baton's file, below anything the repository sets); the rest by hand.
        let attributes = attributes_setting(&self.run.files.dir);
        let merge = [
            "-c",
            &attributes,
            "merge",
            "-q",
            "--no-ff",
            "--no-commit",
            b.theirs,
        ];
        // Conflicts are expected; which files conflicted decides.
        let unmerged = match git_async(tree, &merge).await {
            Ok(_) => String::new(),
            Err(_) => git_async(tree, &["diff", "--name-only", "--diff-filter=U"]).await?,
        };
        let mut conflicts = Vec::new();
        for path in unmerged.lines().filter(|l| !l.is_empty()) {
            if path == names.progress {
                union_notes(tree, path).await?;
            } else if path != names.feature_list {
                conflicts.push(path.to_string());
            }
        }
        // baton.toml is the user's alone, and the project's next run loads it and
        // runs what it names outside the sandbox: a branch that changes it (in its
        // commits, past the gates' check of the working file) is never merged, nor
        // one any commit of which did (the gates put it back in a later commit, but
        // the agent's file would stand in the project's history).
        let user = git_async(
            tree,
            &["diff", "--cached", "--name-only", before, "--", CONFIG_FILE],
        )
        .await?;
        let range = format!("{before}..{}", b.theirs);
        let touched = git_async(tree, &["log", "--format=%H", &range, "--", CONFIG_FILE]).await?;
        if !user.trim().is_empty() || !touched.trim().is_empty() {
            conflicts.retain(|c| c != CONFIG_FILE);
            conflicts.push(format!(
                "{CONFIG_FILE} (the user's alone: a branch that changes it is never merged)"
            ));
        }
        if !conflicts.is_empty() {
            let _ = git_async(tree, &["merge", "--abort"]).await;
            git_async(tree, &["reset", "-q", "--hard", before]).await?;
            return Ok(Merged::Conflicts(conflicts.join(", ")));
        }
        // The feature list by meaning: the main branch's (the accepted list), plus
        // the flips the agent's gates accepted — never a textual merge.
        flip(list, b.flips);
        let path = tree.join(&names.feature_list);
        std::fs::write(&path, list.to_json()).map_err(crate::error::io(&path))?;
        git_async(tree, &["add", "--", &names.feature_list, &names.progress]).await?;
        let what = list
            .features
            .get(b.feature.wrapping_sub(1))
            .map(|f| f.description.clone())
            .unwrap_or_default();
        let msg = format!(
            "baton: merge agent {}'s session {}: feature {}\n\n{what}",
            b.agent, b.number, b.feature
        );
        git_async(tree, &["commit", "-q", "--no-verify", "-m", &msg]).await?;
        Ok(Merged::Commit(git::own_head(tree)?))
    }

    /// Every passing feature's check on the integration worktree; what failed, if
    /// anything did.
    async fn sweep_tree(&self, tree: &Path, list: &FeatureList) -> Option<String> {
        let parts = self.parts;
        let checker = Checker::for_project(&parts.tools, &*parts.policy, &self.run.cfg, tree);
        let passing = passing_checks(list);
        let budget = Duration::from_secs(self.run.cfg.verify.sweep_secs.max(1));
        let run = checker.run(list, &passing, Some(budget)).await;
        parts
            .tools
            .context()
            .processes
            .shutdown(Duration::from_secs(3))
            .await;
        (!run.failed.is_empty()).then(|| {
            run.failed
                .iter()
                .map(|f| format!("#{} `{}` failed", f.feature, f.command))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    /// `b` not merged: its branch kept by name, the reason recorded.
    async fn not_merged(
        &self,
        b: &Branch<'_>,
        outcome: IntegrationOutcome,
        detail: String,
    ) -> Result<Integration, HarnessError> {
        let kept = unintegrated(b.feature, b.number);
        git_async(&self.run.files.dir, &["update-ref", &kept, b.theirs]).await?;
        Ok(Integration {
            outcome,
            commit: None,
            kept: Some(kept),
            detail,
        })
    }

    /// The integration worktree on the main branch's tip, nothing else in it: the
    /// tree, the tip, and the accepted list that goes with it (read together).
    async fn fresh_tree(&self) -> Result<(PathBuf, String, FeatureList), HarnessError> {
        let tree = self.run.integration_tree()?;
        let ours = git::own_head(&self.run.files.dir)?;
        let list = self.run.files.load_accepted()?.unwrap_or_default();
        git_async(&tree, &["reset", "-q", "--hard", &ours]).await?;
        git_async(&tree, &["clean", "-q", "-fd"]).await?;
        Ok((tree, ours, list))
    }

    /// Move the main branch to `tip`, whose feature list is `list`, and make that
    /// the accepted list: both at once (no await between), so that work handed
    /// out while an integration runs starts from a tip and a list that match.
    fn advance(&self, tip: &str, list: &FeatureList) -> Result<(), HarnessError> {
        git(&self.run.files.dir, &["merge", "-q", "--ff-only", tip])?;
        self.run.files.save_accepted(list)
    }
}

/// The progress notes of a merge in `tree` as the union of both sides' lines.
pub(super) async fn union_notes(tree: &Path, path: &str) -> Result<(), HarnessError> {
    let tmp = tree.with_file_name("integrate-union");
    std::fs::create_dir_all(&tmp).map_err(crate::error::io(&tmp))?;
    let (o, b, t) = (tmp.join("ours"), tmp.join("base"), tmp.join("theirs"));
    for (p, stage) in [(&o, 2), (&b, 1), (&t, 3)] {
        let text = git_async(tree, &["show", &format!(":{stage}:{path}")])
            .await
            .unwrap_or_default();
        std::fs::write(p, text).map_err(crate::error::io(p))?;
    }
    let _ = git_async(
        tree,
        &[
            "merge-file",
            "--union",
            &o.display().to_string(),
            &b.display().to_string(),
            &t.display().to_string(),
        ],
    )
    .await;
    let merged = std::fs::read(&o).map_err(crate::error::io(&o))?;
    let _ = std::fs::remove_dir_all(&tmp);
    let dest = tree.join(path);
    std::fs::write(&dest, merged).map_err(crate::error::io(&dest))?;
    git_async(tree, &["add", "--", path]).await?;
    Ok(())
}

/// The `-c` setting that makes a merge read baton's attributes (the project
/// `main`'s `.baton/merge-attributes`, written by [`Parallel::integration_tree`]).
pub(super) fn attributes_setting(main: &Path) -> String {
    format!(
        "core.attributesFile={}",
        main.join(layout::MERGE_ATTRIBUTES).display()
    )
}

/// The attributes of an integration's merges: the progress notes `progress`
/// merge as a union (git's own driver, no program). Empty when the name would
/// need quoting in a pattern.
fn merge_attributes(progress: &str) -> String {
    let plain = !progress.is_empty()
        && !progress
            .chars()
            .any(|c| c.is_whitespace() || "*?[]\\\"#!".contains(c));
    if plain {
        format!("/{progress} merge=union\n")
    } else {
        String::new()
    }
}

/// A branch merged as `commit`.
fn merged(commit: String) -> Integration {
    Integration {
        outcome: IntegrationOutcome::Merged,
        commit: Some(commit),
        kept: None,
        detail: String::new(),
    }
}

/// Set `flips` passing in `list`.
pub(super) fn flip(list: &mut FeatureList, flips: &[usize]) {
    for &f in flips {
        if let Some(feat) = f.checked_sub(1).and_then(|i| list.features.get_mut(i)) {
            feat.passes = true;
        }
    }
}

/// Where a branch that was not merged is kept: by feature and session.
fn unintegrated(n: usize, number: u32) -> String {
    format!("refs/baton/unintegrated/f{n}-s{number}")
}
