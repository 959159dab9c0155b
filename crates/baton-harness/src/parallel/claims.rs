//! Claims: a feature is worked on by one agent of one machine at a time. In a run
//! on one machine a claim is a ref in the project that only one can create
//! (`refs/baton/claims/<n>`); with `--remote` it is a claim commit pushed to the
//! shared remote only if none is there, renewed while its session runs and
//! expired when its machine stops renewing it (`Remote`). Claims are part of
//! the [`Mainline`], the main branch the work lands on (the project's, or the
//! remote's), through which the coordinator, the merges and the settling go
//! without knowing which they have. The remote's side of both is in
//! `remote.rs`, which depends on this file and not the other way round.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::HarnessError;
use crate::git::git;
use crate::runner::Reporter;

/// Where claims live, on a shared remote as locally.
pub const CLAIMS: &str = "refs/baton/claims/";

/// The main branch the agents' work lands on, and the claims on its features:
/// the project's own branch and refs on one machine ([`Local`]), or a remote's
/// shared by machines (`Remote`). The coordinator, the merges and the
/// settling go through it alone.
pub(super) trait Mainline: Claims + Sync {
    /// Whether other machines share it (their merges and claims can appear at
    /// any time).
    fn shared(&self) -> bool;
    /// Bring the project's main branch up to the mainline's; true when it moved.
    fn pull(&self) -> Result<bool, HarnessError>;
    /// Make `commit` the mainline's main branch; false when it moved first
    /// (another machine integrated): nothing was published.
    fn publish(&self, commit: &str) -> Result<bool, HarnessError>;
}

impl Mainline for Local {
    fn shared(&self) -> bool {
        false
    }

    /// The project's branch is the mainline: there is nothing to bring in.
    fn pull(&self) -> Result<bool, HarnessError> {
        Ok(false)
    }

    /// The project's branch is moved by the merge itself.
    fn publish(&self, _commit: &str) -> Result<bool, HarnessError> {
        Ok(true)
    }
}

/// Where a run's claims live.
pub(super) trait Claims {
    /// Claim feature `n` for a session that starts from the main branch's `tip`;
    /// false when someone else holds it.
    fn claim(&self, n: usize, tip: &str) -> Result<bool, HarnessError>;
    /// Give feature `n` back (best effort: a claim left behind expires or is
    /// dropped by the next run).
    fn release(&self, n: usize);
    /// The features claimed now, by anyone.
    fn claimed(&self) -> Result<BTreeSet<usize>, HarnessError>;
    /// At the start of a run: drop the claims nobody holds any more.
    fn drop_stale(&self, reporter: &dyn Reporter) -> Result<(), HarnessError>;
    /// How often the claims held must be renewed; `None`: never.
    fn renew_every(&self) -> Option<Duration>;
    /// Renew the claims held, saying which were lost meanwhile.
    fn renew(&self, reporter: &dyn Reporter) -> Result<(), HarnessError>;
}

/// The claims of a run on one machine: refs in the project, which the run's lock
/// keeps to one run at a time.
pub(super) struct Local {
    /// The project.
    pub dir: PathBuf,
}

impl Claims for Local {
    fn claim(&self, n: usize, tip: &str) -> Result<bool, HarnessError> {
        // The empty old value: the ref must not exist yet.
        git(&self.dir, &["update-ref", &format!("{CLAIMS}{n}"), tip, ""])?;
        Ok(true)
    }

    fn release(&self, n: usize) {
        let _ = git(&self.dir, &["update-ref", "-d", &format!("{CLAIMS}{n}")]);
    }

    /// Nobody else claims in this project while the run holds its lock; the
    /// coordinator knows its own.
    fn claimed(&self) -> Result<BTreeSet<usize>, HarnessError> {
        Ok(BTreeSet::new())
    }

    /// Claims of a run that was killed are stale: this run holds the project.
    fn drop_stale(&self, _reporter: &dyn Reporter) -> Result<(), HarnessError> {
        for r in git(&self.dir, &["for-each-ref", "--format=%(refname)", CLAIMS])?
            .lines()
            .filter(|l| !l.is_empty())
        {
            git(&self.dir, &["update-ref", "-d", r])?;
        }
        Ok(())
    }

    fn renew_every(&self) -> Option<Duration> {
        None
    }

    fn renew(&self, _reporter: &dyn Reporter) -> Result<(), HarnessError> {
        Ok(())
    }
}
