//! Pushing the run's work: after each session that committed, baton publishes
//! what it decided to the remote `[git] push` names. The agent's commands
//! cannot: they see neither the user's credentials (the home is hidden, credential
//! brokers are out of reach) nor a way to them. So the push is baton's, outside the
//! sandbox, with its own hardened git ([`git::git_network`]: no hook, no program the
//! repository configures, the user's own ssh and credential helpers), and what it
//! publishes is fixed by baton, not by the agent:
//!
//! - **the branch**: the one HEAD was on when the run started ([`Runner::run_branch`]),
//!   whatever branch HEAD is on at push time (an agent's `git checkout -B master`
//!   publishes nothing);
//! - **where**: `baton/<branch>` on the remote ([`NAMESPACE`]), never the
//!   remote's default branch nor any branch a person works on;
//! - **how**: never forced, so a remote that moved on refuses it, and the refusal is
//!   said and recorded; nothing is overwritten or deleted there;
//! - **what**: never a commit that changes CI or deployment definitions
//!   ([`PUBLISHED_BY_PEOPLE`]: a workflow runs with the repository's secrets once it
//!   is on the remote). The push stops before the first such commit, says which, and
//!   goes on once a person has published it (pushed that commit to `baton/<branch>`
//!   themselves, after reading it).

use baton_records::{LedgerEntry, LedgerKind};

use crate::error::HarnessError;
use crate::git;
use crate::runner::Runner;

/// Where baton's pushes go on the remote: `baton/<the run's branch>`.
pub const NAMESPACE: &str = "baton/";

/// What only a person publishes: CI and deployment definitions, which run with
/// the repository's secrets (or deploy) once they are on the remote.
pub const PUBLISHED_BY_PEOPLE: &[&str] = &[
    ".github/",
    ".gitlab-ci.yml",
    ".gitlab/",
    ".circleci/",
    ".buildkite/",
    ".travis.yml",
    ".drone.yml",
    ".woodpecker/",
    ".woodpecker.yml",
    "azure-pipelines.yml",
    "bitbucket-pipelines.yml",
    "Jenkinsfile",
    ".forgejo/",
    ".gitea/",
    "netlify.toml",
    "vercel.json",
    "fly.toml",
    "render.yaml",
    "app.yaml",
    "Procfile",
];

/// Whether `path` (relative to the repository) is a CI or deployment definition.
pub fn published_by_people(path: &str) -> bool {
    PUBLISHED_BY_PEOPLE.iter().any(|p| {
        if p.ends_with('/') {
            path.starts_with(p)
        } else {
            path == *p
        }
    })
}

impl Runner<'_> {
    /// The branch the run publishes: the one HEAD was on when it first asked
    /// (the run's start), fixed for the rest of the run. `None` while HEAD is
    /// on no branch.
    pub(crate) fn run_branch(&self) -> Option<String> {
        if let Some(b) = self.run_branch.get() {
            return Some(b.clone());
        }
        let b = git::git(&self.files.dir, &["symbolic-ref", "--short", "-q", "HEAD"]).ok()?;
        let b = b.trim().to_string();
        if b.is_empty() {
            return None;
        }
        Some(self.run_branch.get_or_init(|| b).clone())
    }

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
        let Some(branch) = self.run_branch() else {
            return refuse(
                "HEAD was on no branch when the run started; nothing was pushed".to_string(),
            );
        };
        let Ok(tip) = git::rev(dir, &format!("refs/heads/{branch}")) else {
            return refuse(format!(
                "the run's branch {branch} is gone; nothing was pushed"
            ));
        };
        let target = format!("{NAMESPACE}{branch}");
        let tracking = format!("refs/remotes/{remote}/{target}");
        let mut there = git::rev(dir, &tracking).ok();
        if there.as_deref() == Some(tip.as_str()) {
            return Ok(());
        }
        // What would be published, oldest first: it stops before the first
        // commit that changes a CI or deployment definition.
        let mut judged = publishable(dir, &tip, there.as_deref(), remote)?;
        if judged.1.is_some() {
            // Held back: a person may have published it since; ask the remote
            // where the branch stands (into the tracking ref only).
            let fetch = format!("+refs/heads/{target}:{tracking}");
            if git::git_network(dir, &["fetch", "-q", "--no-tags", "--", remote, &fetch]).is_ok() {
                there = git::rev(dir, &tracking).ok();
                if there.as_deref() == Some(tip.as_str()) {
                    return Ok(());
                }
                judged = publishable(dir, &tip, there.as_deref(), remote)?;
            }
        }
        let (head, held) = match judged {
            (Some(h), held) => (h, held),
            (None, Some(held)) => return refuse(held),
            (None, None) => return Ok(()),
        };
        let short = &head[..head.len().min(12)];
        if there.as_deref() != Some(head.as_str()) {
            // The refspec names the branch (no `+`: never forced); a mirror
            // setting would push everything, and is switched off.
            let mirror = format!("remote.{remote}.mirror=false");
            let refspec = format!("{head}:refs/heads/{target}");
            match git::git_network(
                dir,
                &["-c", &mirror, "push", "--porcelain", "--", remote, &refspec],
            ) {
                Ok(_) => {
                    // Where the remote now stands, for the next session's comparison.
                    let _ = git::git(dir, &["update-ref", &tracking, &head]);
                    self.reporter.line(&format!(
                        "  pushed {branch} to {remote} as {target} ({short})"
                    ));
                    self.files.append_ledger(&LedgerEntry {
                        commit: Some(head.clone()),
                        ..LedgerEntry::new(
                            session,
                            LedgerKind::Pushed,
                            format!("{remote} {target}"),
                        )
                    })?;
                }
                Err(e) => {
                    return refuse(format!(
                        "{remote} refused {target} at {short}, and baton never forces a push: {}; bring the remote and this branch together by hand (a merge or a rebase you choose), the next session's push follows",
                        crate::queue::cut(e.to_string().trim(), 300)
                    ));
                }
            }
        }
        match held {
            Some(why) => refuse(why),
            None => Ok(()),
        }
    }
}

/// What of `tip` may be published to `remote`: the newest commit before the
/// first one (oldest first, since `there` or what `remote` has) that changes a
/// CI or deployment definition, or `tip` itself; and, when such a commit holds
/// the rest back, why, in words. `(None, _)` when nothing can be pushed.
pub(crate) fn publishable(
    dir: &std::path::Path,
    tip: &str,
    there: Option<&str>,
    remote: &str,
) -> Result<(Option<String>, Option<String>), HarnessError> {
    let not = format!("--remotes={remote}");
    let mut args = vec!["rev-list", "--reverse", "--topo-order", tip, "--not"];
    args.push(there.unwrap_or(&not));
    let new = git::git(dir, &args)?;
    let mut last: Option<String> = None;
    for commit in new.lines().map(str::trim).filter(|c| !c.is_empty()) {
        let changed = git::git(
            dir,
            &[
                "diff-tree",
                "--no-commit-id",
                "--name-only",
                "-r",
                "--root",
                "-m",
                commit,
            ],
        )?;
        if let Some(path) = changed.lines().find(|p| published_by_people(p.trim())) {
            let short = &commit[..commit.len().min(12)];
            let why = format!(
                "commit {short} changes {}, a CI or deployment definition, which baton never publishes: it runs with the repository's secrets once it is on the remote. Read it, then publish it yourself (git push {remote} {short}:<the branch>); the pushes after it follow",
                path.trim()
            );
            return Ok((last, Some(why)));
        }
        last = Some(commit.to_string());
    }
    Ok((last, None))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{publishable, published_by_people};
    use baton_testkit::Bounded as _;

    /// What may be published stops before the first commit that changes a CI
    /// definition, and says which.
    #[test]
    fn publishing_stops_before_a_workflow() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(dir)
                .output_bounded()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_string()
        };
        git(&["init", "-q"]);
        let commit = |path: &str| {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x\n").unwrap();
            git(&["add", "-A"]);
            git(&["commit", "-qm", path]);
            git(&["rev-parse", "HEAD"])
        };
        let a = commit("a.txt");
        let b = commit("b.txt");
        assert_eq!(
            publishable(dir, &b, None, "origin").unwrap(),
            (Some(b.clone()), None)
        );
        commit(".github/workflows/leak.yml");
        let tip = commit("c.txt");
        let (head, why) = publishable(dir, &tip, Some(&a), "origin").unwrap();
        assert_eq!(head, Some(b));
        assert!(why.unwrap().contains(".github/workflows/leak.yml"));
        assert_eq!(
            publishable(dir, &tip, Some(&tip), "origin").unwrap(),
            (None, None)
        );
    }

    #[test]
    fn ci_and_deployment_definitions_are_known() {
        for p in [
            ".github/workflows/ci.yml",
            ".gitlab-ci.yml",
            ".circleci/config.yml",
            "Jenkinsfile",
            "netlify.toml",
        ] {
            assert!(published_by_people(p), "{p}");
        }
        for p in ["src/github.rs", "docs/.github.md", "app/Procfile.md"] {
            assert!(!published_by_people(p), "{p}");
        }
    }
}
