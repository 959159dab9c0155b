//! Pushing the run's work: after each session that committed, baton pushes the
//! branch the run works on to the remote `[git] push` names. The agent's commands
//! cannot: they see neither the user's credentials (the home is hidden, credential
//! brokers are out of reach) nor a way to them. So the push is baton's, outside the
//! sandbox, with its own hardened git ([`git::git_network`]: no hook, no program the
//! repository configures, the user's own ssh and credential helpers), only for that
//! branch, and never forced: a remote that moved on refuses it, and the refusal is
//! said and recorded, nothing is overwritten or deleted there.

use baton_records::{LedgerEntry, LedgerKind};

use crate::error::HarnessError;
use crate::git;
use crate::runner::Runner;

impl Runner<'_> {
    /// Push the run's branch after session `session`, when `[git] push` names a
    /// remote and the branch moved since the remote last had it. Not for a parallel
    /// run's working copies (their work reaches the project by merges).
    pub(crate) fn push_branch(&self, session: u32) -> Result<(), HarnessError> {
        let Some(remote) = self.cfg.git.push.as_deref().filter(|r| !r.is_empty()) else {
            return Ok(());
        };
        let dir = &self.files.dir;
        if baton_policy::sandbox::main_of_copy(dir).is_some() {
            return Ok(());
        }
        let refuse = |why: String| -> Result<(), HarnessError> {
            self.reporter.line(&format!("  push: {why}"));
            self.files
                .append_ledger(&LedgerEntry::new(session, LedgerKind::PushRefused, why))
        };
        if git::git(dir, &["remote", "get-url", "--", remote]).is_err() {
            return refuse(format!(
                "[git] push names `{remote}`, which is not a remote of this repository (`git remote -v` lists them); nothing was pushed"
            ));
        }
        let Ok(branch) = git::git(dir, &["symbolic-ref", "--short", "-q", "HEAD"]) else {
            return refuse("HEAD is not on a branch; nothing was pushed".to_string());
        };
        let branch = branch.trim().to_string();
        let head = git::rev(dir, "HEAD")?;
        let tracking = format!("refs/remotes/{remote}/{branch}");
        if git::rev(dir, &tracking).is_ok_and(|t| t == head) {
            return Ok(());
        }
        // The refspec names the branch (no `+`: never forced); a mirror setting
        // would push everything, and is switched off.
        let mirror = format!("remote.{remote}.mirror=false");
        let refspec = format!("{head}:refs/heads/{branch}");
        let short = &head[..head.len().min(12)];
        match git::git_network(
            dir,
            &["-c", &mirror, "push", "--porcelain", "--", remote, &refspec],
        ) {
            Ok(_) => {
                // Where the remote now stands, for the next session's comparison.
                let _ = git::git(dir, &["update-ref", &tracking, &head]);
                self.reporter
                    .line(&format!("  pushed {branch} to {remote} ({short})"));
                self.files.append_ledger(&LedgerEntry {
                    commit: Some(head.clone()),
                    ..LedgerEntry::new(session, LedgerKind::Pushed, format!("{remote} {branch}"))
                })
            }
            Err(e) => refuse(format!(
                "{remote} refused {branch} at {short}, and baton never forces a push: {}; bring the remote and this branch together by hand (a merge or a rebase you choose), the next session's push follows",
                crate::queue::cut(e.to_string().trim(), 300)
            )),
        }
    }
}
