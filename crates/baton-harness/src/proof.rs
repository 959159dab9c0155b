//! Proof of flips: what baton accepts a flip on. Before a coding session, the
//! target's verify command runs on the base commit (a check that passes already
//! proves nothing); after it, the proof gates run in order: the verify commands of
//! the new flips, proof by checks that failed before the work, the leftover
//! commit (so the verifier sees everything), the independent verifier over what
//! no check proved, and the flips still unproven reverted, or taken on the agent's
//! word where `[verify] trust_agent` says so. See `docs/verification.md`.

use std::time::Instant;

use baton_agent::session::AgentError;

use baton_records::{BaseCheck, FeatureList, InProgress};

use crate::error::HarnessError;
use crate::gates::Gates;
use crate::run::Runner;

impl Runner<'_> {
    /// Run feature `n`'s verify command (if it has one) before the session's work,
    /// the start script first unless `init_ran` (the sweep just ran it).
    pub(crate) async fn base_check(
        &self,
        list: &FeatureList,
        n: usize,
        init_ran: bool,
    ) -> Option<BaseCheck> {
        let command = crate::checks::command_of(list, n - 1)?;
        let mut checker = self.checker();
        if init_ran {
            checker.init_script = None;
        }
        let run = checker.run(list, &[n - 1], None).await;
        let passed = run.passed.contains(&n);
        self.reporter.line(&format!(
            "base check: #{n}'s verify command {} before the work{}",
            if passed { "passes" } else { "fails" },
            if passed {
                " (so it cannot prove this feature's flip)"
            } else {
                ""
            }
        ));
        Some(BaseCheck {
            feature: n,
            command,
            passed,
        })
    }

    /// The proof gates of a coding session: the verify commands of its new flips,
    /// proof by checks that failed on its base commit, its leftovers committed (so
    /// the verifier sees all of it), the independent verifier over what no check
    /// proved, and the flips still unproven reverted (or trusted, where the
    /// project says so). Returns the verifier's cost.
    pub(crate) async fn prove(
        &self,
        g: &mut Gates<'_>,
        ip: &InProgress,
        accepted: Option<&FeatureList>,
        deadline: Option<Instant>,
    ) -> Result<(f64, Option<AgentError>), HarnessError> {
        let app_started = g.verify(&self.checker()).await;
        let unproven = g.prove_by_checks(accepted, ip.base_check.as_ref());
        // What the start script ran for the checks stops before baton's git.
        if app_started {
            self.stop_processes().await;
        }
        g.commit_leftovers()?;
        let verify = &self.cfg.verify;
        let mut done = (0.0, None);
        if verify.agent && !unproven.is_empty() {
            // The verifier sees the project read-only, so baton starts the app for
            // it; what that started stops again before baton's git goes on.
            let app = self.start_app_for_verifier().await;
            done = self
                .verifier(g, &unproven, ip.head_before.as_deref(), app, deadline)
                .await?;
            self.stop_processes().await;
        }
        g.settle_unproven(&unproven, verify.trust_agent, verify.agent);
        Ok(done)
    }
}
