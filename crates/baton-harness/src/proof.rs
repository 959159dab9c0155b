//! Proof of flips: what baton accepts a flip on. Before a coding session, the
//! target's verify command runs on the base commit (a check that passes already
//! proves nothing); after it, the proof gates run in order: the verify commands of
//! the new flips, proof by checks that failed before the work, the leftover
//! commit (so the verifier sees everything), the independent verifier over what
//! no check proved, and the flips still unproven reverted, or taken on the agent's
//! word where `[verify] trust_agent` says so. See `docs/verification.md`.

use std::time::Instant;

use baton_agent::client::ModelClient;
use baton_agent::session::AgentError;
use baton_tools::Toolbox;

use baton_records::{BaseCheck, FeatureList, InProgress};

use crate::error::HarnessError;
use crate::gates::Gates;
use crate::guard::GateStack;
use crate::prompts;
use crate::runner::{Backend, Runner};
use crate::session::Agent;
use crate::verifier;

/// Earlier coding sessions' bases a proof may be replayed against, at most.
const MAX_REFERENCES: usize = 8;

/// How many rounds the verifier gets over a session's flips: the first, and
/// one more for the passes refused only for their check.
const VERIFIER_ROUNDS: u32 = 2;

/// What one round of the verifier came to.
struct Round {
    /// What it cost.
    cost: f64,
    /// The error that kept it from running.
    error: Option<AgentError>,
    /// Its verdicts as judged, its checks replayed; `None` when it did not
    /// finish.
    judged: Option<verifier::Judged>,
}

/// How [`Runner::replay_in_worlds`] replays a check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Replay {
    /// A verifier's check: it must also fail with the work's files junk.
    pub mutant: bool,
    /// The base check passed at the session's base already.
    pub passed_at_base: bool,
}

/// How a check fared in clean worlds.
pub(crate) enum Replayed {
    /// It failed before the work (at this reference) and passes with it; with
    /// `true` where the world with it held the head's tracked files as they are
    /// ([`crate::world::Pair::exact`]).
    Held(baton_records::Reference, bool),
    /// It passed before the work at every reference: it proves nothing.
    Vacuous(String),
    /// It could not be replayed, or failed with the work: why.
    NotHeld(String),
}

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
        if let Some(r) = run.refused.first() {
            self.reporter.line(&format!(
                "base check: #{n}'s verify command cannot run here ({}), so it proves nothing either way",
                crate::queue::cut(&r.reason, 200)
            ));
            return Some(BaseCheck {
                feature: n,
                command,
                passed: false,
                refused: Some(r.reason.clone()),
            });
        }
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
            refused: None,
        })
    }

    /// The proof gates of a coding session: its leftovers committed (so the
    /// verifier sees all of it), proof by checks replayed in clean worlds
    /// (failing before the work, passing with it), the verify commands of the
    /// other new flips run in the project, the independent verifier over what
    /// no check proved, and the flips still unproven reverted (or trusted,
    /// where the project says so). Returns the verifier's cost.
    pub(crate) async fn prove(
        &self,
        g: &mut Gates<'_>,
        ip: &InProgress,
        accepted: Option<&FeatureList>,
        deadline: Option<Instant>,
    ) -> Result<(f64, Option<AgentError>), HarnessError> {
        // The session's work is committed first: what the checks then write into
        // the project is theirs, not the work's, and is put back.
        g.commit_leftovers()?;
        let flipped = g.report.flipped.clone();
        // A flip with a claim is settled by its check replayed in clean worlds
        // first: one that holds there passed with the work, and needs no run in
        // the project. The rest run in the project, and a claim whose replay
        // did not hold is judged by what it did there: a check that fails in
        // the project is a failed verify (the flip reverted), one that passes
        // there and not in the worlds proves nothing.
        let mut ledger = None;
        let mut pending: Vec<(usize, Result<Replayed, Option<String>>)> = Vec::new();
        let mut held_on_head = Vec::new();
        if let Some(list) = g.list.clone() {
            for &n in &flipped {
                let claim = match g.claim(accepted, n, &mut ledger) {
                    Ok(c) if !self.refuses(&c.command) => c,
                    Ok(_) => {
                        pending.push((n, Err(None)));
                        continue;
                    }
                    Err(why) => {
                        pending.push((n, Err(why)));
                        continue;
                    }
                };
                // The base check said it passes already: its world with the
                // work is made only where one before it fails.
                let passed_at_base = ip
                    .base_check
                    .as_ref()
                    .is_some_and(|c| c.feature == n && c.command == claim.command && c.passed);
                let replayed = self
                    .replay_in_worlds(
                        &list,
                        n,
                        &claim.command,
                        ip.head_before.as_deref(),
                        Replay {
                            mutant: false,
                            passed_at_base,
                        },
                    )
                    .await;
                match replayed {
                    Replayed::Held(r, exact) => {
                        self.reporter.line(&format!(
                            "  #{n}'s verify command fails before the work (at {}) and passes with it, each in a clean checkout",
                            r.describe()
                        ));
                        if exact {
                            held_on_head.push(n);
                        }
                        g.check_held(claim, r);
                    }
                    other => pending.push((n, Ok(other))),
                }
            }
        }
        // A check that held on the head's own files passed on the tree as it
        // stands (when the session left nothing out of its commits): the next
        // sweep need not run it again (`[verify] skip_unchanged`), as after a
        // run in the project.
        if self.cfg.verify.skip_unchanged
            && !held_on_head.is_empty()
            && g.report.left_out.is_empty()
            && let Some(list) = &g.list
        {
            let mut passed_on = baton_records::PassedOn::load(&self.files.dir);
            let run = baton_records::CheckRun {
                passed: held_on_head,
                ..baton_records::CheckRun::default()
            };
            crate::checks::note_passed(&mut passed_on, &self.files, list, &run);
            let _ = passed_on.save(&self.files.dir);
        }
        let rest: Vec<usize> = pending.iter().map(|(n, _)| *n).collect();
        if !rest.is_empty() {
            let dirty = crate::git::dirty(&self.files.dir)?;
            let app_started = g
                .verify(&self.checker(), self.cfg.verify.skip_unchanged, &rest)
                .await;
            // What the start script ran for the checks stops before baton's git.
            if app_started {
                self.stop_processes().await;
            }
            g.report
                .boundary
                .extend(self.undo_check_writes(&dirty, g.session)?);
        }
        let mut unproven = Vec::new();
        for (n, judged) in pending {
            if !g.report.verified.contains(&n) {
                // Reverted, or its check cannot run here: the verifier judges
                // what is still flipped.
                if g.report.flipped.contains(&n) {
                    unproven.push(n);
                }
                continue;
            }
            unproven.push(n);
            match judged {
                Err(None) => {}
                Err(Some(why)) => g.weak_check(n, why),
                Ok(Replayed::Held(..)) => {}
                Ok(Replayed::Vacuous(why)) => g.check_not_held(n, why, true),
                Ok(Replayed::NotHeld(why)) => {
                    self.reporter.line(&format!(
                        "  #{n}'s verify command does not prove it: {}",
                        crate::queue::cut(&why, 300)
                    ));
                    g.check_not_held(n, why, false);
                }
            }
        }
        unproven.sort_unstable();
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

    /// Run the independent verifier over `flips`, the session's new flips that no
    /// check proved: record a proof for each it confirms with work of its own, and
    /// reject the rest. A pass refused only for its check (none left, one that
    /// cannot stand alone, or one baton's replay finds proves nothing) is not
    /// the verifier's last word: it is asked once more, in a second round told
    /// why, for a check that stands. Returns its cost, and the error that kept
    /// it from running (the provider's quota, a model error), in which case the
    /// flips it was checking are reverted as unproven and the error is the
    /// session's for the run to act on.
    pub(crate) async fn verifier(
        &self,
        g: &mut Gates<'_>,
        flips: &[usize],
        base: Option<&str>,
        app: Option<verifier::AppStart>,
        deadline: Option<Instant>,
    ) -> Result<(f64, Option<AgentError>), HarnessError> {
        let Some(current) = g.list.clone() else {
            return Ok((0.0, None));
        };
        let mut cost = 0.0;
        let mut todo = flips.to_vec();
        let mut refused: Vec<(usize, String)> = Vec::new();
        for round in 1..=VERIFIER_ROUNDS {
            let r = self
                .verifier_round(g, &current, &todo, &refused, base, app.clone(), deadline)
                .await?;
            cost += r.cost;
            let Some(mut judged) = r.judged else {
                return Ok((cost, r.error));
            };
            g.report.proofs.extend(judged.proofs);
            let last = round == VERIFIER_ROUNDS || judged.refused.is_empty();
            if last {
                judged.rejected.append(&mut judged.refused);
            } else {
                for (n, why) in &judged.refused {
                    self.reporter.line(&format!(
                        "  the verifier's pass of #{n} did not count for its check alone; it is asked for one that stands: {}",
                        crate::queue::cut(why, 200)
                    ));
                }
                g.report
                    .checks_refused
                    .extend(judged.refused.iter().cloned());
            }
            if !judged.rejected.is_empty() {
                self.reporter.line(&format!(
                    "  verifier rejected {}",
                    baton_records::human::features(
                        &judged.rejected.iter().map(|r| r.0).collect::<Vec<_>>()
                    )
                ));
            }
            g.reject(judged.rejected);
            if last {
                break;
            }
            todo = judged.refused.iter().map(|r| r.0).collect();
            refused = judged.refused;
        }
        Ok((cost, None))
    }

    /// One round of the verifier over `flips` (`refused`: what an earlier
    /// round's checks were refused for): its session, then its verdicts judged
    /// and its checks replayed. `judged` is `None` when it did not finish (an
    /// error, in `error`, or Ctrl-C): the flips are then reverted as unproven.
    #[allow(clippy::too_many_arguments)]
    async fn verifier_round(
        &self,
        g: &mut Gates<'_>,
        current: &FeatureList,
        flips: &[usize],
        refused: &[(usize, String)],
        base: Option<&str>,
        app: Option<verifier::AppStart>,
        deadline: Option<Instant>,
    ) -> Result<Round, HarnessError> {
        let per_feature = self.cfg.verify.turns_per_feature;
        let turns = (10 + per_feature.saturating_mul(flips.len() as u32))
            .min(self.cfg.verify.max_turns)
            .max(1);
        let limits = self.limits(turns, deadline, crate::prompts::Handoff::Verifier);
        let gate = GateStack {
            policy: self.policy,
            allow_file_urls: self.cfg.policy.allow_file_urls,
            feature_list: None,
            read_only: true,
        };
        let mut transcript = self.new_transcript(None)?;
        let session = transcript.number();
        g.report.verifier_session = Some(session);
        self.reporter.line(&format!(
            "── session {session:04} · verifier of session {:04} · checking {}{} ──",
            g.session,
            baton_records::human::features(flips),
            if refused.is_empty() {
                ""
            } else {
                " again, for checks that stand"
            }
        ));
        let kind = self.cfg.project.kind.as_str();
        let browser = self.cfg.browser.enabled && kind == "web";
        // Its scratch space: a temp dir of its own (`TMPDIR`), gone after it; where
        // bubblewrap runs, bound into the verifier's namespace alone (every
        // namespace has a `/tmp` of its own), out of any coder's reach.
        let temp = baton_policy::sandbox::temp_dir_for(&self.files.dir);
        let scratch_dir = tempfile::Builder::new()
            .prefix("baton-verifier-")
            .tempdir_in(&temp)
            .map_err(crate::error::io(&temp))?;
        let scratch = scratch_dir.path();
        // The verifier's commands see the project read-only (kernel-enforced where
        // the sandbox runs), and may write their scratch.
        let mut ro_tools = self.read_only_tools(scratch);
        let prompt = verifier::prompt(&verifier::Brief {
            list: current,
            features: flips,
            kind,
            browser,
            base,
            app,
            scratch: Some(scratch.display().to_string()),
            refused,
        });
        let system = prompts::verifier_system(&self.files.dir, self.setting());
        // Another model for the verifier: its own client in baton's loop.
        let own_client = match (&self.backend, &self.cfg.verify.model) {
            (Backend::Loop(client), Some(m)) => {
                let mut cfg = client.config().clone();
                cfg.model = m.clone();
                Some(ModelClient::new(cfg).map_err(HarnessError::VerifierClient)?)
            }
            _ => None,
        };
        let mut ctx = ro_tools.context().clone();
        ctx.env.retain(|(k, _)| k != "TMPDIR");
        ctx.env
            .push(("TMPDIR".into(), scratch.display().to_string()));
        ro_tools = ro_tools.with_context(ctx);
        let result = self
            .run_agent(
                Agent {
                    tools: &ro_tools,
                    gate,
                    client: own_client.as_ref(),
                    model: self.cfg.verify.model.as_deref(),
                    limits,
                },
                &mut transcript,
                &system,
                &prompt,
            )
            .await;
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                let why = e.to_string();
                self.reporter.line(&format!(
                    "  verifier could not run ({}); the flips it was to check are reverted",
                    crate::queue::cut(&why, 200)
                ));
                g.verifier_failed(flips, &crate::queue::cut(&why, 300));
                return Ok(Round {
                    cost: 0.0,
                    error: Some(e),
                    judged: None,
                });
            }
        };
        // Stopped by Ctrl-C: its verdicts are not judged. The flips it was to check
        // stay unproven, reverted with that reason (the work stays committed), and
        // the next run's session flips them again for a verifier that finishes.
        if self.stop.is_cancelled() {
            self.reporter
                .line("  verifier stopped by Ctrl-C; the flips it was to check are not judged");
            g.verifier_failed(flips, "the run was stopped (Ctrl-C) while it checked them");
            g.interrupted = true;
            return Ok(Round {
                cost: result.cost_usd,
                error: None,
                judged: None,
            });
        }
        // The final verdict object; else (out of turns, cut off) the verdicts it gave
        // one by one as it went: a feature it did not reach is not confirmed.
        let finals = (result.outcome == baton_agent::session::Outcome::Completed)
            .then(|| verifier::parse_verdict(&result.final_text))
            .flatten();
        let walked = verifier::walk(transcript.path());
        let scratch_dir = scratch.display().to_string();
        let project_dir = self.files.dir.display().to_string();
        let mut judged = verifier::judge(
            flips,
            finals.as_deref(),
            &walked,
            verifier::Needs::of(kind, browser),
            &verifier::Places {
                scratch: Some(&scratch_dir),
                project: Some(&project_dir),
            },
            session,
        );
        // What the verifier started stops before baton replays its checks.
        self.stop_processes().await;
        let proofs = std::mem::take(&mut judged.proofs);
        judged.proofs = self
            .replay(g, current, proofs, base, session, &mut judged.refused)
            .await;
        Ok(Round {
            cost: result.cost_usd,
            error: None,
            judged: Some(judged),
        })
    }

    /// baton's own run of the checks the verifier left with its passes, each in
    /// the clean worlds of [`Runner::replay_in_worlds`]: it must fail before the
    /// work and pass with it. A pass whose check does not is refused with why;
    /// one whose check holds is recorded with the proof, its reference with it
    /// (and in the ledger as `check_added`). Returns the proofs that stand.
    async fn replay(
        &self,
        g: &mut Gates<'_>,
        list: &FeatureList,
        proofs: Vec<(usize, baton_records::Proof)>,
        base: Option<&str>,
        session: u32,
        refused: &mut Vec<(usize, String)>,
    ) -> Vec<(usize, baton_records::Proof)> {
        let author = format!("the verifier (session {session})");
        let mut kept = Vec::new();
        for (n, mut proof) in proofs {
            let check = match &proof {
                baton_records::Proof::Verifier { check: Some(c), .. } => c.clone(),
                _ => {
                    kept.push((n, proof));
                    continue;
                }
            };
            let how = Replay {
                mutant: true,
                passed_at_base: false,
            };
            let why = match self.replay_in_worlds(list, n, &check, base, how).await {
                Replayed::Held(r, _) => {
                    self.reporter.line(&format!(
                        "  the verifier's check of #{n} fails before the work (at {}) and passes with it",
                        r.describe()
                    ));
                    if let baton_records::Proof::Verifier { reference, .. } = &mut proof {
                        *reference = Some(r);
                    }
                    g.keep_check(n, &check, &author);
                    kept.push((n, proof));
                    continue;
                }
                Replayed::Vacuous(why) => {
                    format!("the verifier's check `{check}` proves nothing: {why}")
                }
                Replayed::NotHeld(why) => {
                    format!("the verifier's check `{check}` does not hold: {why}")
                }
            };
            self.reporter.line(&format!(
                "  the verifier's check of #{n} does not hold: {}",
                crate::queue::cut(&why, 300)
            ));
            refused.push((n, why));
        }
        kept
    }

    /// Whether the command policy refuses `command` here: such a check runs
    /// nowhere, so it is not replayed.
    fn refuses(&self, command: &str) -> bool {
        matches!(
            self.policy
                .check("Bash", &serde_json::json!({ "command": command })),
            baton_tools::GateDecision::Refuse(_)
        )
    }

    /// Replay `command` as feature `n`'s check in clean worlds ([`crate::world`]):
    /// against each reference in turn, newest first (the session's base, the bases
    /// of the coding sessions before it, where the feature entered the list), until
    /// one where it fails before the work; there it must pass with the work, and,
    /// with `mutant` (a verifier's check), fail again with the work's files
    /// replaced by junk. Each
    /// world is a clean checkout of tracked files, with a fresh home and the
    /// start script run first, its processes stopped after.
    pub(crate) async fn replay_in_worlds(
        &self,
        list: &FeatureList,
        n: usize,
        command: &str,
        base: Option<&str>,
        how: Replay,
    ) -> Replayed {
        let mutant = how.mutant;
        let Some(f) = list.features.get(n - 1) else {
            return Replayed::NotHeld(format!("there is no feature {n}"));
        };
        let dir = &self.files.dir;
        let Some(head) = crate::git::head(dir) else {
            return Replayed::NotHeld("the project has no commit to replay it on".into());
        };
        // The session's base first: the others are looked for only when the
        // check passes there too.
        let (entry, first) = self.references_of(f, base, false);
        if first.is_empty() {
            return Replayed::NotHeld(
                "baton knows no commit before the work to replay it against".into(),
            );
        }
        let layers = crate::world::Layers::new(
            command,
            crate::world::about_init(f, &self.files.names.init_script),
            &self.files.names,
            &self.cfg.verify.protect,
        );
        // The check as the feature's verify command of a copy of the list, run
        // like any check.
        let mut probe = list.clone();
        if let Some(p) = probe.features.get_mut(n - 1) {
            p.fields.insert(
                baton_records::VERIFY.to_string(),
                serde_json::Value::String(command.to_string()),
            );
        }
        let playwright = crate::ran::Playwright::of(command);
        // At the session's base, where the check most often fails before the
        // work, the world with the work is made beside the one before it when
        // each has a network of its own; at older references (looked at only
        // because it passed at a newer one), after it.
        let mut beside = !how.passed_at_base
            && self
                .tools
                .context()
                .launcher
                .as_ref()
                .is_some_and(|l| l.own_network());
        let mut passed_before = Vec::new();
        // After the session's base (always the first of all), the rest.
        let later = base
            .into_iter()
            .flat_map(|_| self.references_of(f, base, true).1.into_iter().skip(1));
        for r in first.into_iter().chain(later) {
            let entry = entry.as_deref().unwrap_or(&r.commit);
            let pair = match crate::world::pair(dir, &layers, entry, &r.commit, &head) {
                Ok(p) => p,
                Err(e) => {
                    return Replayed::NotHeld(format!(
                        "baton could not lay out the worlds to replay it in ({e})"
                    ));
                }
            };
            let observe = playwright.as_ref().map(|p| (n, p));
            // Where each world has a network of its own, the world with the work
            // is made and run beside the one before it (both start the app on
            // the same ports): it is needed whenever the check fails before.
            let only = [n - 1];
            let (before, mut after) = if beside {
                let (b, a) = tokio::join!(
                    self.run_in(&pair.before, &probe, &only),
                    self.run_in_observed(&pair.after, &probe, &only, observe)
                );
                (b, Some(a))
            } else {
                (self.run_in(&pair.before, &probe, &[n - 1]).await, None)
            };
            beside = false;
            let before = match before {
                Ok(run) => run,
                Err(e) => return Replayed::NotHeld(e),
            };
            if let Some(f) = before.refused.first() {
                return Replayed::NotHeld(format!("it cannot run here ({})", f.reason));
            }
            if before.passed.contains(&n) {
                passed_before.push(r.describe());
                continue;
            }
            // A Playwright run names patterns: a work file they also match
            // would be loaded beside the named test.
            if let Some(p) = &playwright {
                let also = p.also_matched(&pair.work);
                if !also.is_empty() {
                    return Replayed::NotHeld(format!(
                        "the work adds or changes {}, which the check's file arguments ({}) also match, so Playwright would run it beside the named test: a check proves only what it names",
                        also.join(", "),
                        p.named.join(" ")
                    ));
                }
            }
            let after = match after.take() {
                Some(a) => a,
                None => {
                    self.run_in_observed(&pair.after, &probe, &[n - 1], observe)
                        .await
                }
            };
            let (after, ran) = match after {
                Ok(run) => run,
                Err(e) => return Replayed::NotHeld(e),
            };
            if let Some(why) = ran {
                return Replayed::NotHeld(format!(
                    "it passes with the work in a clean checkout, but {why}"
                ));
            }
            if after.passed.contains(&n) {
                if !mutant {
                    return Replayed::Held(r, pair.exact);
                }
                // It must depend on the work: with the work's files junk, fail.
                let junk = match self.run_in(&pair.mutant, &probe, &[n - 1]).await {
                    Ok(run) => run,
                    Err(e) => return Replayed::NotHeld(e),
                };
                if !junk.passed.contains(&n) {
                    return Replayed::Held(r, pair.exact);
                }
                let mut shown: Vec<&str> = pair.work.iter().take(8).map(String::as_str).collect();
                if pair.work.len() > 8 {
                    shown.push("…");
                }
                return Replayed::NotHeld(format!(
                    "it still passes when the files the work added or changed ({}) are replaced by junk, so it does not test what the work does: a check must fail unless the feature behaves as its steps say",
                    shown.join(", ")
                ));
            }
            let said = after
                .failed
                .iter()
                .chain(&after.refused)
                .find(|f| f.feature == n)
                .map(|f| crate::queue::cut(&f.reason, 600))
                .unwrap_or_default();
            let beside = crate::world::beside_product(dir, &layers, &r.commit, &head);
            let beside = if beside.is_empty() {
                String::new()
            } else {
                format!(
                    "; what changed since then beside the product: {}",
                    beside.join(", ")
                )
            };
            return Replayed::NotHeld(format!(
                "it fails at {} before the work, but it also fails in a clean checkout of that commit with only the changes to the product since then laid over it, so what makes it pass in the project is something else: a test, a fixture, a helper, a runner's or the package's configuration, the start script, a dotfile, or an ignored or untracked file{beside} (in the clean checkout: {said})",
                r.describe()
            ));
        }
        Replayed::Vacuous(format!(
            "it passes before the work too, in a clean checkout of {}",
            passed_before.join(" and of ")
        ))
    }

    /// Where feature `f` entered the list, and the commits its "before" may be
    /// replayed against, newest first: `base` (the session's), then, with `all`
    /// or without a `base`, the bases of the last coding sessions before it
    /// ([`MAX_REFERENCES`] at most) that come after the feature entered the
    /// list, and that entry itself.
    fn references_of(
        &self,
        f: &baton_records::Feature,
        base: Option<&str>,
        all: bool,
    ) -> (Option<String>, Vec<baton_records::Reference>) {
        let dir = &self.files.dir;
        let entry = crate::world::entry_of(dir, &self.files.names.feature_list, f);
        if let (Some(b), false) = (base, all) {
            let first = baton_records::Reference {
                commit: b.to_string(),
                what: "the session's base".to_string(),
            };
            return (entry, vec![first]);
        }
        let mut out: Vec<baton_records::Reference> = Vec::new();
        let mut push = |commit: &str, what: String| {
            if !out.iter().any(|r| r.commit == commit) {
                out.push(baton_records::Reference {
                    commit: commit.to_string(),
                    what,
                });
            }
        };
        if let Some(b) = base {
            push(b, "the session's base".to_string());
        }
        let state = baton_records::State::load(dir).unwrap_or_default();
        let earlier = state
            .sessions
            .iter()
            .rev()
            .filter(|s| s.kind == baton_records::SessionKind::Coding)
            .filter_map(|s| s.base.as_deref().map(|b| (s.number, b)))
            .filter(|(_, b)| Some(*b) != base)
            .filter(|(_, b)| {
                entry
                    .as_deref()
                    .is_none_or(|e| crate::git::is_ancestor(dir, e, b))
            })
            .take(MAX_REFERENCES);
        for (number, b) in earlier {
            push(b, format!("the base of session {number}"));
        }
        if let Some(e) = &entry {
            push(e, "where it entered the list".to_string());
        }
        (entry, out)
    }

    /// Run the checks of `features` (0-based) of `list` in a world laid out by
    /// `plan`: a clone sharing the project's objects, in the temp dir (writable
    /// to the checks' commands), made for this and removed after, its processes
    /// stopped after.
    async fn run_in(
        &self,
        plan: &crate::world::Plan,
        list: &FeatureList,
        features: &[usize],
    ) -> Result<baton_records::CheckRun, String> {
        Ok(self.run_in_observed(plan, list, features, None).await?.0)
    }

    /// [`Runner::run_in`], and with `observe` (a feature, 1-based, and its
    /// check's Playwright run) also why that check's pass proves nothing by what
    /// its runner reports it ran ([`crate::ran`]): `Some` only when it passed
    /// and the run is observable.
    async fn run_in_observed(
        &self,
        plan: &crate::world::Plan,
        list: &FeatureList,
        features: &[usize],
        observe: Option<(usize, &crate::ran::Playwright)>,
    ) -> Result<(baton_records::CheckRun, Option<String>), String> {
        let copy = tempfile::Builder::new()
            .prefix("baton-world-")
            .tempdir_in(baton_policy::sandbox::temp_dir_for(&self.files.dir))
            .map_err(|e| format!("cannot make a temp dir: {e}"))?;
        let dir = copy.path().join("w");
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let dir = dir.canonicalize().unwrap_or(dir);
        // One namespace and one fresh home for the whole world: its making, the
        // start script and the checks. Its commands may write the world (and
        // the lists beside it), and only read the project.
        let tools = self.tools.elsewhere(copy.path());
        let mut ctx = tools.context().clone();
        ctx.project_dir = dir.clone();
        // The world's processes are its own: stopped when it is done, and no
        // other world's (one may run beside it) with them.
        ctx.processes = std::sync::Arc::new(baton_tools::ProcessRegistry::new());
        let processes = ctx.processes.clone();
        let tools = tools.with_context(ctx);
        let q =
            |p: &std::path::Path| baton_agent::cli_session::shell_quote(&p.display().to_string());
        // Made by git inside the sandbox, like every command on the project's
        // content; the lists of paths are files baton writes beside it.
        let (w, at) = (q(&dir), &plan.at);
        // A repository of its own borrowing the project's objects (what `git
        // clone --shared` makes, without the refs, remotes and hook samples a
        // clone writes: each file made costs on a slow disk, and a world is
        // made twice a flip), then checked out at `at`.
        let mut make = format!(
            "o=$(git -C {} rev-parse --path-format=absolute --git-common-dir) && git init -q --template= {w} && printf '%s/objects\n' \"$o\" > {w}/.git/objects/info/alternates && {{ [ ! -f \"$o/shallow\" ] || cp \"$o/shallow\" {w}/.git/shallow; }} && git -C {w} -c advice.detachedHead=false checkout -q --detach {at}",
            q(&self.files.dir),
        );
        let list_file = |name: String, paths: &[String]| -> Result<String, String> {
            let p = copy.path().join(name);
            let mut bytes = paths.join("\0").into_bytes();
            bytes.push(0);
            std::fs::write(&p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            Ok(q(&p))
        };
        for (k, (commit, paths)) in plan.take.iter().enumerate() {
            let file = list_file(format!("take-{k}"), paths)?;
            make.push_str(&format!(
                " && git --literal-pathspecs -C {w} checkout -q {commit} --pathspec-from-file={file} --pathspec-file-nul"
            ));
        }
        if !plan.remove.is_empty() {
            let file = list_file("remove".to_string(), &plan.remove)?;
            make.push_str(&format!(
                " && git --literal-pathspecs -C {w} rm -q -r -f --ignore-unmatch --pathspec-from-file={file} --pathspec-file-nul"
            ));
        }
        let out = tools
            .call(
                "Bash",
                &serde_json::json!({"command": make, "timeout": 600_000}),
            )
            .await;
        if out.is_error {
            return Err(format!(
                "making a clean checkout at {} failed: {}",
                &at[..at.len().min(12)],
                crate::queue::cut(out.content.trim(), 300)
            ));
        }
        let beneath = baton_records::beneath::Beneath::new(&dir);
        for (path, bytes) in &plan.write {
            beneath
                .write_atomic(path, bytes)
                .map_err(|e| format!("cannot write {path} into the clean checkout: {e}"))?;
        }
        let world = dir.clone();
        // The observed run: its command also writes what the runner ran.
        let observed = observe.and_then(|(n, p)| p.observing(&world).map(|c| (n, p, c)));
        let mut probe;
        let list = match &observed {
            Some((n, _, c)) => {
                probe = list.clone();
                if let Some(f) = probe.features.get_mut(n - 1) {
                    f.fields.insert(
                        baton_records::VERIFY.to_string(),
                        serde_json::Value::String(c.clone()),
                    );
                }
                &probe
            }
            None => list,
        };
        let checker = crate::checks::Checker::for_project(&tools, self.policy, &self.cfg, &dir);
        let run = checker.run_as_is(list, features, None).await;
        let _ = processes.shutdown(std::time::Duration::from_secs(2)).await;
        let why = match observed {
            Some((n, p, _)) if run.passed.contains(&n) => {
                // Where the check could write: read without following a link
                // or blocking on a FIFO in its place.
                let report = baton_records::beneath::read_regular(
                    &world.join(crate::ran::REPORT),
                    baton_records::beneath::MAX_READ,
                )
                .ok();
                p.judge(&world, report.as_deref())
            }
            _ => None,
        };
        Ok((run, why))
    }

    /// Before a coding session of a run of one: every failing feature whose
    /// check (written by nobody who gains from its flip, more than a test that
    /// paths exist, allowed here) was never run where the feature entered the
    /// list has it run there now, in a clean checkout of that commit, its start
    /// script first. One that passes there, and fails again with every product
    /// file of that commit holding junk (so it tests the product, not nothing),
    /// already worked when it entered the list (an adopted repository's
    /// feature, a planner's feature the code already does): no session can ever
    /// make it fail "before the work", so it is recorded as passing with that
    /// proof ([`baton_records::Proof::Accepted`])
    /// in baton's commit of the list. Returns those features.
    pub(crate) async fn accept_working(
        &self,
        number: u32,
        accepted: &mut Option<FeatureList>,
    ) -> Result<Vec<usize>, HarnessError> {
        let Some(list) = accepted.as_ref() else {
            return Ok(Vec::new());
        };
        let dir = &self.files.dir;
        let known = baton_records::References::load(dir);
        let ledger = baton_records::ledger::read(&self.files.ledger()).unwrap_or_default();
        // By the commit they entered at: one clean checkout runs all of its checks.
        let mut by_entry: std::collections::BTreeMap<String, Vec<(usize, String, String)>> =
            std::collections::BTreeMap::new();
        let mut not_run: Vec<(usize, String)> = Vec::new();
        for (i, f) in list.features.iter().enumerate() {
            if f.passes {
                continue;
            }
            let Some(command) = crate::checks::command_of(list, i) else {
                continue;
            };
            if known.checked_at_entry(f, &command) {
                continue;
            }
            let author = crate::gates::check_author(&ledger, i + 1, &command);
            let allowed = !self.refuses(&command);
            let entry = crate::world::entry_of(dir, &self.files.names.feature_list, f);
            match entry {
                Some(e)
                    if allowed && !author.coder && !crate::scrutiny::existence_only(&command) =>
                {
                    by_entry
                        .entry(e)
                        .or_default()
                        .push((i, command, author.who));
                }
                _ => not_run.push((i, command)),
            }
        }
        // Read after `entry_of`, which notes what it finds.
        let mut refs = baton_records::References::load(dir);
        for (i, command) in &not_run {
            refs.mark_checked(&list.features[*i], command);
        }
        if by_entry.is_empty() {
            if !not_run.is_empty() {
                refs.save(dir)?;
            }
            return Ok(Vec::new());
        }
        let mut passed: Vec<(usize, baton_records::Proof)> = Vec::new();
        for (entry, checks) in &by_entry {
            let idx: Vec<usize> = checks.iter().map(|c| c.0).collect();
            let plan = crate::world::Plan {
                at: entry.clone(),
                ..crate::world::Plan::default()
            };
            let run = match self.run_in(&plan, list, &idx).await {
                Ok(r) => r,
                Err(e) => {
                    self.reporter.line(&format!(
                        "baton: could not run checks where their features entered the list ({e}); they are tried again before the next session"
                    ));
                    continue;
                }
            };
            // A check that passes with every file of the product junk passes
            // whatever the product does: it proves nothing, here either.
            let maybe: Vec<usize> = idx
                .iter()
                .copied()
                .filter(|i| run.passed.contains(&(i + 1)))
                .collect();
            let junk = if maybe.is_empty() {
                Default::default()
            } else {
                let layers = crate::world::Layers::new(
                    "",
                    false,
                    &self.files.names,
                    &self.cfg.verify.protect,
                );
                let plan = crate::world::junk_at(dir, &layers, entry);
                self.run_in(&plan, list, &maybe).await.unwrap_or_default()
            };
            for (i, command, author) in checks {
                let f = &list.features[*i];
                refs.mark_checked(f, command);
                if run.passed.contains(&(i + 1)) && !junk.passed.contains(&(i + 1)) {
                    passed.push((
                        i + 1,
                        baton_records::Proof::Accepted {
                            command: command.clone(),
                            author: author.clone(),
                            commit: entry.clone(),
                        },
                    ));
                }
            }
        }
        refs.save(dir)?;
        if passed.is_empty() {
            return Ok(Vec::new());
        }
        let mut list = list.clone();
        let ns: Vec<usize> = passed.iter().map(|(n, _)| *n).collect();
        for &n in &ns {
            list.features[n - 1].passes = true;
        }
        let said = baton_records::human::features(&ns);
        let entries = passed
            .into_iter()
            .map(|(n, proof)| baton_records::LedgerEntry {
                feature: Some(n),
                proof: Some(proof),
                ..baton_records::LedgerEntry::new(
                    number,
                    baton_records::LedgerKind::Flip,
                    format!(
                        "{}: passed its check where it entered the list, before any session worked on it",
                        list.features[n - 1].description
                    ),
                )
            })
            .collect();
        let fl = &self.files.names.feature_list;
        self.files.commit_list(
            &list,
            &format!(
                "baton: {said} already pass where they entered {fl}\n\nTheir checks, written by nobody who gains from the flip, passed in a clean checkout of the commit where each entered the list, before any session worked on it."
            ),
            entries,
        )?;
        self.files.save_accepted(&list)?;
        self.reporter.line(&format!(
            "passed when accepted: {said} already pass their checks where they entered the list; recorded as passing"
        ));
        *accepted = Some(list);
        Ok(ns)
    }

    /// Put back what baton's own runs of checks in the project changed since
    /// `before` (what was dirty then): tracked files as HEAD holds them, new
    /// files git would see removed (never through a link). A check may not
    /// write the work it judges — a runner's config that patches the app when
    /// its tests start would otherwise have its patch committed as the
    /// session's work. Returns what was put back, in words, for the record.
    pub(crate) fn undo_check_writes(
        &self,
        before: &[crate::leftovers::Dirty],
        session: u32,
    ) -> Result<Vec<String>, HarnessError> {
        let dir = &self.files.dir;
        let now = crate::git::dirty(dir)?;
        let new: Vec<&crate::leftovers::Dirty> = now
            .iter()
            .filter(|d| !before.iter().any(|b| b.path == d.path))
            .collect();
        if new.is_empty() {
            return Ok(Vec::new());
        }
        let tracked: Vec<String> = new
            .iter()
            .filter(|d| !d.untracked)
            .map(|d| d.path.clone())
            .collect();
        crate::git::restore_tracked(dir, &tracked)?;
        let beneath = self.files.beneath();
        for d in new.iter().filter(|d| d.untracked) {
            beneath
                .remove_all(&d.path)
                .map_err(crate::error::io(dir.join(&d.path)))?;
        }
        let shown: Vec<&str> = new.iter().take(10).map(|d| d.path.as_str()).collect();
        let said = format!(
            "baton's run of the checks after session {session} changed {}{}, which a check may not do to the work it judges; put back",
            shown.join(", "),
            if new.len() > 10 {
                format!(" and {} more", new.len() - 10)
            } else {
                String::new()
            }
        );
        self.reporter.line(&format!("  {said}"));
        Ok(vec![said])
    }

    /// Judge by the command policy every check of `list` that `before` did not
    /// have (every check when `before` is `None`): one the policy refuses here can
    /// never pass or fail, so it never proves a flip or finds a regression. Each
    /// is said once, and recorded (`check_unrunnable`) after session `session`.
    pub(crate) fn judge_checks(
        &self,
        before: Option<&FeatureList>,
        list: &FeatureList,
        session: u32,
    ) -> Result<(), HarnessError> {
        let mut said: Option<Vec<(usize, String)>> = None;
        for i in 0..list.features.len() {
            let Some(command) = crate::checks::command_of(list, i) else {
                continue;
            };
            if before.is_some_and(|b| crate::checks::command_of(b, i).as_ref() == Some(&command)) {
                continue;
            }
            let baton_tools::GateDecision::Refuse(why) = self
                .policy
                .check("Bash", &serde_json::json!({ "command": command }))
            else {
                continue;
            };
            let n = i + 1;
            let known = said.get_or_insert_with(|| {
                baton_records::ledger::read(&self.files.ledger())
                    .unwrap_or_default()
                    .entries
                    .into_iter()
                    .filter(|e| e.kind == baton_records::LedgerKind::CheckUnrunnable)
                    .filter_map(|e| Some((e.feature?, e.detail)))
                    .collect()
            });
            if known
                .iter()
                .any(|(f, d)| *f == n && d.contains(&format!("`{command}`")))
            {
                continue;
            }
            let why = crate::queue::cut(&why, 400);
            self.reporter.line(&format!(
                "#{n}'s verify command cannot run here: baton's policy refuses `{}` ({why}); it will never prove or fail a flip, so the verifier judges #{n}",
                crate::queue::cut(&command, 120)
            ));
            self.files.append_ledger(&baton_records::LedgerEntry {
                feature: Some(n),
                ..baton_records::LedgerEntry::new(
                    session,
                    baton_records::LedgerKind::CheckUnrunnable,
                    format!("`{command}` refused by baton's policy: {why}"),
                )
            })?;
            known.push((n, format!("`{command}`")));
        }
        Ok(())
    }

    /// The run's tools with the project read-only for `Bash` (through the sandbox
    /// launcher, where one is in use): the verifier's commands cannot write it;
    /// they may write `scratch` (its temp dir).
    pub(crate) fn read_only_tools(&self, scratch: &std::path::Path) -> Toolbox {
        let mut ctx = self.tools.context().clone();
        ctx.launcher = ctx.launcher.as_ref().map(|l| l.read_only(scratch));
        self.tools.with_context(ctx)
    }

    /// Run the start script (writable, through the policy) so the read-only verifier
    /// finds the app running. Returns the last lines it printed (or its failure),
    /// for the verifier to read; `None` when there is no start script to run.
    pub(crate) async fn start_app_for_verifier(&self) -> Option<verifier::AppStart> {
        let init = &self.files.names.init_script;
        if !(self.cfg.verify.run_init && self.files.dir.join(init).is_file()) {
            return None;
        }
        // The session is over: its home goes, so what it planted there does not
        // steer the app the verifier judges.
        self.clean_home();
        let input = serde_json::json!({"command": format!("./{init}"), "timeout": 600_000});
        let mut start = verifier::AppStart {
            script: init.clone(),
            refused: None,
            failed: false,
            said: String::new(),
            fence: verifier::AppStart::new_fence(),
        };
        if let baton_tools::GateDecision::Refuse(why) = self.policy.check("Bash", &input) {
            start.refused = Some(why);
            return Some(start);
        }
        let out = self.tools.call("Bash", &input).await;
        let lines: Vec<&str> = out.content.lines().rev().take(6).collect();
        let said: Vec<&str> = lines.into_iter().rev().collect();
        start.failed = out.is_error;
        start.said = said.join("\n");
        Some(start)
    }
}
