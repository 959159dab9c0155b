//! Integrating an agent's branch into the main branch: the merge in the
//! integration worktree (the feature list by meaning, the notes as a union, any
//! other conflict abandons it), the sweep of every passing feature on the merged
//! tree, and the fast-forward (after a push, with a shared remote). A branch that
//! is not merged is kept under `refs/baton/unintegrated/`.

use super::*;

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

    /// Merge agent's branch into the main branch in the integration worktree, the
    /// feature list by meaning and the notes as a union; sweep the merged tree;
    /// move the main branch only if every check passes.
    pub(super) async fn integrate(
        &self,
        agent: &Agent,
        parts: &AgentParts,
        remote: Option<&Remote>,
        (theirs, flips): (&str, &[usize]),
        (n, number): (usize, u32),
    ) -> Result<Integration, HarnessError> {
        for _ in 0..PUSH_ATTEMPTS {
            if let Some(r) = remote {
                self.sync(r)?;
            }
            if let Some(i) = self
                .integrate_once(agent, parts, remote, (theirs, flips), (n, number))
                .await?
            {
                return Ok(i);
            }
        }
        let kept = unintegrated(n, number);
        git(&self.files.dir, &["update-ref", &kept, theirs])?;
        Ok(Integration {
            outcome: IntegrationOutcome::Conflict,
            commit: None,
            kept: Some(kept),
            detail: format!(
                "the remote's main branch moved {PUSH_ATTEMPTS} times while this was merged"
            ),
        })
    }

    /// One attempt of [`Self::integrate`]; `None` when the remote's main branch
    /// moved before the push.
    pub(super) async fn integrate_once(
        &self,
        agent: &Agent,
        parts: &AgentParts,
        remote: Option<&Remote>,
        (theirs, flips): (&str, &[usize]),
        (n, number): (usize, u32),
    ) -> Result<Option<Integration>, HarnessError> {
        let main = &self.files.dir;
        let tree = self.integration_tree()?;
        let ours = git::rev(main, "HEAD")?;
        let kept = unintegrated(n, number);
        let not_merged = |outcome, detail: String| -> Result<Option<Integration>, HarnessError> {
            let _ = git(&tree, &["merge", "--abort"]);
            git(&tree, &["reset", "-q", "--hard", &ours])?;
            git(main, &["update-ref", &kept, theirs])?;
            Ok(Some(Integration {
                outcome,
                commit: None,
                kept: Some(kept.clone()),
                detail,
            }))
        };
        git(&tree, &["reset", "-q", "--hard", &ours])?;
        git(&tree, &["clean", "-q", "-fd"])?;
        let names = &self.cfg.project;
        // Conflicts are expected; which files conflicted decides.
        let unmerged = match git(&tree, &["merge", "-q", "--no-ff", "--no-commit", theirs]) {
            Ok(_) => String::new(),
            Err(_) => git(&tree, &["diff", "--name-only", "--diff-filter=U"])?,
        };
        let mut conflicts = Vec::new();
        for path in unmerged.lines().filter(|l| !l.is_empty()) {
            if path == names.progress {
                union_notes(&tree, path)?;
            } else if path != names.feature_list {
                conflicts.push(path.to_string());
            }
        }
        if !conflicts.is_empty() {
            return not_merged(IntegrationOutcome::Conflict, conflicts.join(", "));
        }
        // The feature list by meaning: the main branch's (the accepted list), plus
        // the flips the agent's gates accepted — never a textual merge.
        let mut list = self.files.load_accepted()?.unwrap_or_default();
        for &f in flips {
            if let Some(feat) = f.checked_sub(1).and_then(|i| list.features.get_mut(i))
                && !feat.passes
            {
                feat.passes = true;
            }
        }
        let path = tree.join(&names.feature_list);
        std::fs::write(&path, list.to_json()).map_err(crate::error::io(&path))?;
        git(&tree, &["add", "--", &names.feature_list, &names.progress])?;
        // Every passing feature's check, on the merged tree.
        let checker = Checker::for_project(&parts.tools, &*parts.policy, &self.cfg, &tree);
        let passing = passing_checks(&list);
        let budget = Duration::from_secs(self.cfg.verify.sweep_secs.max(1));
        let run = checker.run(&list, &passing, Some(budget)).await;
        parts
            .tools
            .context()
            .processes
            .shutdown(Duration::from_secs(3))
            .await;
        if !run.failed.is_empty() {
            let failed = run
                .failed
                .iter()
                .map(|f| format!("#{} `{}` failed", f.feature, f.command))
                .collect::<Vec<_>>()
                .join("; ");
            return not_merged(IntegrationOutcome::Regressed, failed);
        }
        let what = list
            .features
            .get(n - 1)
            .map(|f| f.description.clone())
            .unwrap_or_default();
        let msg = format!(
            "baton: merge agent {}'s session {number}: feature {n}\n\n{what}",
            agent.id
        );
        git(&tree, &["commit", "-q", "--no-verify", "-m", &msg])?;
        let merged = git::rev(&tree, "HEAD")?;
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

/// Where a branch that was not merged is kept: by feature and session.
fn unintegrated(n: usize, number: u32) -> String {
    format!("refs/baton/unintegrated/f{n}-s{number}")
}
