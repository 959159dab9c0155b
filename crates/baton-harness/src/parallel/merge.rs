//! Integrating agents' branches into the main branch: the merge in the
//! integration worktree (the feature list by meaning, the notes as a union, any
//! other conflict abandons it), the sweep of every passing feature on the merged
//! tree, and the fast-forward (after a push, with a shared remote). Sessions that
//! end together are merged as a batch with one sweep; when that sweep fails, each
//! is merged and swept alone, so the blame lands on the branch that broke a check.
//! A branch that is not merged is kept under `refs/baton/unintegrated/`.

use super::*;

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

impl Parallel<'_> {
    /// Keep an agent's branch that is not merged under a name of its own, if it
    /// holds anything the main branch does not.
    pub(super) fn keep(
        &self,
        theirs: &str,
        n: usize,
        number: u32,
    ) -> Result<Integration, HarnessError> {
        let main = &self.files.dir;
        let ahead = git(main, &["rev-list", "--count", &format!("HEAD..{theirs}")])?;
        let kept = if ahead.trim() == "0" {
            None
        } else {
            let name = unintegrated(n, number);
            git(main, &["update-ref", &name, theirs])?;
            Some(name)
        };
        Ok(Integration {
            outcome: IntegrationOutcome::Kept,
            commit: None,
            kept,
            detail: String::new(),
        })
    }

    /// Integrate `branches` (sessions that ended together), in order: as one batch
    /// with one sweep when there are several, else (or when the batch's sweep or
    /// push fails) one at a time. One integration per branch, in order.
    pub(super) async fn integrate_all(
        &self,
        parts: &AgentParts,
        remote: Option<&Remote>,
        branches: &[Branch<'_>],
    ) -> Result<Vec<Integration>, HarnessError> {
        if branches.len() > 1
            && let Some(done) = self.integrate_batch(parts, remote, branches).await?
        {
            return Ok(done);
        }
        let mut out: Vec<Integration> = Vec::new();
        // The flips merged before: the accepted list has them only once the
        // sessions are recorded, after all of these.
        let mut before = Vec::new();
        for b in branches {
            let i = self.integrate(parts, remote, b, &before).await?;
            if i.outcome == IntegrationOutcome::Merged {
                before.extend_from_slice(b.flips);
            }
            out.push(i);
        }
        Ok(out)
    }

    /// Merge every branch onto the main branch one after another (a merge commit
    /// each; a branch whose files conflict is kept and left out), sweep the result
    /// once, and move the main branch to it. `None` when the sweep failed or the
    /// remote's main branch moved: nothing moved, and the caller goes one by one.
    async fn integrate_batch(
        &self,
        parts: &AgentParts,
        remote: Option<&Remote>,
        branches: &[Branch<'_>],
    ) -> Result<Option<Vec<Integration>>, HarnessError> {
        if let Some(r) = remote {
            self.sync(r)?;
        }
        let main = &self.files.dir;
        let (tree, ours, mut list) = self.fresh_tree()?;
        let mut out = Vec::new();
        for b in branches {
            out.push(match self.merge_one(&tree, &mut list, b)? {
                Ok(commit) => Integration {
                    outcome: IntegrationOutcome::Merged,
                    commit: Some(commit),
                    kept: None,
                    detail: String::new(),
                },
                Err(conflicts) => self.not_merged(b, IntegrationOutcome::Conflict, conflicts)?,
            });
        }
        let tip = git::rev(&tree, "HEAD")?;
        if tip == ours {
            return Ok(Some(out));
        }
        if self.sweep_tree(parts, &tree, &list).await.is_some() {
            git(&tree, &["reset", "-q", "--hard", &ours])?;
            return Ok(None);
        }
        if let Some(r) = remote
            && !r.push(&tip)?
        {
            git(&tree, &["reset", "-q", "--hard", &ours])?;
            return Ok(None);
        }
        git(main, &["merge", "-q", "--ff-only", &tip])?;
        Ok(Some(out))
    }

    /// Merge one agent's branch into the main branch in the integration worktree,
    /// the feature list by meaning and the notes as a union; sweep the merged tree;
    /// move the main branch only if every check passes.
    pub(super) async fn integrate(
        &self,
        parts: &AgentParts,
        remote: Option<&Remote>,
        b: &Branch<'_>,
        before: &[usize],
    ) -> Result<Integration, HarnessError> {
        for _ in 0..PUSH_ATTEMPTS {
            if let Some(r) = remote {
                self.sync(r)?;
            }
            if let Some(i) = self.integrate_once(parts, remote, b, before).await? {
                return Ok(i);
            }
        }
        self.not_merged(
            b,
            IntegrationOutcome::Conflict,
            format!("the remote's main branch moved {PUSH_ATTEMPTS} times while this was merged"),
        )
    }

    /// One attempt of [`Self::integrate`]; `None` when the remote's main branch
    /// moved before the push.
    async fn integrate_once(
        &self,
        parts: &AgentParts,
        remote: Option<&Remote>,
        b: &Branch<'_>,
        before: &[usize],
    ) -> Result<Option<Integration>, HarnessError> {
        let main = &self.files.dir;
        let (tree, ours, mut list) = self.fresh_tree()?;
        flip(&mut list, before);
        let merged = match self.merge_one(&tree, &mut list, b)? {
            Ok(commit) => commit,
            Err(conflicts) => {
                return self
                    .not_merged(b, IntegrationOutcome::Conflict, conflicts)
                    .map(Some);
            }
        };
        if let Some(failed) = self.sweep_tree(parts, &tree, &list).await {
            git(&tree, &["reset", "-q", "--hard", &ours])?;
            return self
                .not_merged(b, IntegrationOutcome::Regressed, failed)
                .map(Some);
        }
        if let Some(r) = remote
            && !r.push(&merged)?
        {
            // Another machine moved the main branch first: merge again onto its.
            git(&tree, &["reset", "-q", "--hard", &ours])?;
            return Ok(None);
        }
        git(main, &["merge", "-q", "--ff-only", &merged])?;
        Ok(Some(Integration {
            outcome: IntegrationOutcome::Merged,
            commit: Some(merged),
            kept: None,
            detail: String::new(),
        }))
    }

    /// Merge `b` onto the integration worktree's `HEAD` and commit: the feature
    /// list is `list` plus `b`'s flips (and becomes that), the notes a union. `Err`
    /// with the conflicting files (the worktree back where it was) when any other
    /// file conflicts.
    fn merge_one(
        &self,
        tree: &Path,
        list: &mut FeatureList,
        b: &Branch<'_>,
    ) -> Result<Result<String, String>, HarnessError> {
        let before = git::rev(tree, "HEAD")?;
        let names = &self.cfg.project;
        // Conflicts are expected; which files conflicted decides.
        let unmerged = match git(tree, &["merge", "-q", "--no-ff", "--no-commit", b.theirs]) {
            Ok(_) => String::new(),
            Err(_) => git(tree, &["diff", "--name-only", "--diff-filter=U"])?,
        };
        let mut conflicts = Vec::new();
        for path in unmerged.lines().filter(|l| !l.is_empty()) {
            if path == names.progress {
                union_notes(tree, path)?;
            } else if path != names.feature_list {
                conflicts.push(path.to_string());
            }
        }
        if !conflicts.is_empty() {
            let _ = git(tree, &["merge", "--abort"]);
            git(tree, &["reset", "-q", "--hard", &before])?;
            return Ok(Err(conflicts.join(", ")));
        }
        // The feature list by meaning: the main branch's (the accepted list), plus
        // the flips the agent's gates accepted — never a textual merge.
        flip(list, b.flips);
        let path = tree.join(&names.feature_list);
        std::fs::write(&path, list.to_json()).map_err(crate::error::io(&path))?;
        git(tree, &["add", "--", &names.feature_list, &names.progress])?;
        let what = list
            .features
            .get(b.feature.wrapping_sub(1))
            .map(|f| f.description.clone())
            .unwrap_or_default();
        let msg = format!(
            "baton: merge agent {}'s session {}: feature {}\n\n{what}",
            b.agent, b.number, b.feature
        );
        git(tree, &["commit", "-q", "--no-verify", "-m", &msg])?;
        Ok(Ok(git::rev(tree, "HEAD")?))
    }

    /// Every passing feature's check on the integration worktree; what failed, if
    /// anything did.
    async fn sweep_tree(
        &self,
        parts: &AgentParts,
        tree: &Path,
        list: &FeatureList,
    ) -> Option<String> {
        let checker = Checker::for_project(&parts.tools, &*parts.policy, &self.cfg, tree);
        let passing = passing_checks(list);
        let budget = Duration::from_secs(self.cfg.verify.sweep_secs.max(1));
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
    fn not_merged(
        &self,
        b: &Branch<'_>,
        outcome: IntegrationOutcome,
        detail: String,
    ) -> Result<Integration, HarnessError> {
        let kept = unintegrated(b.feature, b.number);
        git(&self.files.dir, &["update-ref", &kept, b.theirs])?;
        Ok(Integration {
            outcome,
            commit: None,
            kept: Some(kept),
            detail,
        })
    }

    /// The integration worktree on the main branch's tip, nothing else in it: the
    /// tree, the tip, and the accepted list that goes with it.
    fn fresh_tree(&self) -> Result<(PathBuf, String, FeatureList), HarnessError> {
        let tree = self.integration_tree()?;
        let ours = git::rev(&self.files.dir, "HEAD")?;
        git(&tree, &["reset", "-q", "--hard", &ours])?;
        git(&tree, &["clean", "-q", "-fd"])?;
        let list = self.files.load_accepted()?.unwrap_or_default();
        Ok((tree, ours, list))
    }

    /// The integration worktree, made on first use.
    pub(super) fn integration_tree(&self) -> Result<PathBuf, HarnessError> {
        let main = &self.files.dir;
        let tree = main.join(layout::INTEGRATE);
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

/// The progress notes of a merge in `tree` as the union of both sides' lines.
pub(super) fn union_notes(tree: &Path, path: &str) -> Result<(), HarnessError> {
    let stage = |n: u8| git(tree, &["show", &format!(":{n}:{path}")]).unwrap_or_default();
    let tmp = tree.with_file_name("integrate-union");
    std::fs::create_dir_all(&tmp).map_err(crate::error::io(&tmp))?;
    let (o, b, t) = (tmp.join("ours"), tmp.join("base"), tmp.join("theirs"));
    for (p, text) in [(&o, stage(2)), (&b, stage(1)), (&t, stage(3))] {
        std::fs::write(p, text).map_err(crate::error::io(p))?;
    }
    let _ = git(
        tree,
        &[
            "merge-file",
            "--union",
            &o.display().to_string(),
            &b.display().to_string(),
            &t.display().to_string(),
        ],
    );
    let merged = std::fs::read(&o).map_err(crate::error::io(&o))?;
    let _ = std::fs::remove_dir_all(&tmp);
    let dest = tree.join(path);
    std::fs::write(&dest, merged).map_err(crate::error::io(&dest))?;
    git(tree, &["add", "--", path])?;
    Ok(())
}

/// Set `flips` passing in `list`.
fn flip(list: &mut FeatureList, flips: &[usize]) {
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
