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
        let app_started = g
            .verify(&self.checker(), self.cfg.verify.skip_unchanged)
            .await;
        // What the start script ran for the checks stops before baton's git.
        if app_started {
            self.stop_processes().await;
        }
        g.commit_leftovers()?;
        let inputs = crate::scrutiny::Inputs::new(&self.cfg.verify.protect);
        let unproven = g.prove_by_checks(
            accepted,
            ip.base_check.as_ref(),
            ip.head_before.as_deref(),
            &inputs,
        );
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
    /// reject the rest. Returns its cost, and the error that kept it from running
    /// (the provider's quota, a model error), in which case `flips` are reverted
    /// as unproven and the error is the session's for the run to act on.
    pub(crate) async fn verifier(
        &self,
        g: &mut Gates<'_>,
        flips: &[usize],
        base: Option<&str>,
        app: Option<String>,
        deadline: Option<Instant>,
    ) -> Result<(f64, Option<AgentError>), HarnessError> {
        let Some(current) = g.list.clone() else {
            return Ok((0.0, None));
        };
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
            "── session {session:04} · verifier of session {:04} · checking {} ──",
            g.session,
            baton_records::human::features(flips)
        ));
        let kind = self.cfg.project.kind.as_str();
        let browser = self.cfg.browser.enabled && kind == "web";
        // Its scratch space: a temp dir of its own (`TMPDIR`), gone after it.
        let temp = baton_policy::sandbox::temp_dir_for(&self.files.dir);
        let scratch = tempfile::Builder::new()
            .prefix("baton-verifier-")
            .tempdir_in(&temp)
            .map_err(crate::error::io(&temp))?;
        let prompt = verifier::prompt(&verifier::Brief {
            list: &current,
            features: flips,
            kind,
            browser,
            base,
            app,
            scratch: Some(scratch.path().display().to_string()),
        });
        let system = prompts::verifier_system(&self.files.dir);
        // Another model for the verifier: its own client in baton's loop.
        let own_client = match (&self.backend, &self.cfg.verify.model) {
            (Backend::Loop(client), Some(m)) => {
                let mut cfg = client.config().clone();
                cfg.model = m.clone();
                Some(ModelClient::new(cfg).map_err(HarnessError::VerifierClient)?)
            }
            _ => None,
        };
        // The verifier's commands see the project read-only (kernel-enforced where
        // the sandbox runs).
        let mut ro_tools = self.read_only_tools();
        let mut ctx = ro_tools.context().clone();
        ctx.env.retain(|(k, _)| k != "TMPDIR");
        ctx.env
            .push(("TMPDIR".into(), scratch.path().display().to_string()));
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
                return Ok((0.0, Some(e)));
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
            return Ok((result.cost_usd, None));
        }
        // The final verdict object; else (out of turns, cut off) the verdicts it gave
        // one by one as it went: a feature it did not reach is not confirmed.
        let finals = (result.outcome == baton_agent::session::Outcome::Completed)
            .then(|| verifier::parse_verdict(&result.final_text))
            .flatten();
        let walked = verifier::walk(transcript.path());
        let (proofs, mut rejected) = verifier::judge(
            flips,
            finals.as_deref(),
            &walked,
            verifier::Needs::of(kind, browser),
            session,
        );
        // What the verifier started stops before baton replays its checks.
        self.stop_processes().await;
        let proofs = self
            .replay(g, &current, proofs, base, session, &mut rejected)
            .await;
        if !rejected.is_empty() {
            self.reporter.line(&format!(
                "  verifier rejected {}",
                baton_records::human::features(&rejected.iter().map(|r| r.0).collect::<Vec<_>>())
            ));
        }
        g.reject(rejected);
        g.report.proofs.extend(proofs);
        Ok((result.cost_usd, None))
    }

    /// baton's own run of the checks the verifier left with its passes: each must
    /// pass on the session's head (the project read-only, as for the verifier)
    /// and fail on its base commit (`base`, in a copy of the project at that
    /// commit), run as baton runs every check (policy, sandbox, `init.sh` first). A pass whose check does not is rejected with
    /// why; one whose check holds is recorded with the proof (and in the ledger
    /// as `check_added`). Returns the proofs that stand.
    async fn replay(
        &self,
        g: &mut Gates<'_>,
        list: &FeatureList,
        proofs: Vec<(usize, baton_records::Proof)>,
        base: Option<&str>,
        session: u32,
        rejected: &mut Vec<(usize, String)>,
    ) -> Vec<(usize, baton_records::Proof)> {
        let checks: Vec<(usize, String)> = proofs
            .iter()
            .filter_map(|(n, p)| match p {
                baton_records::Proof::Verifier { check: Some(c), .. } => Some((*n, c.clone())),
                _ => None,
            })
            .collect();
        if checks.is_empty() {
            return proofs;
        }
        // The checks as verify commands of a copy of the list, run like any check.
        let mut probe = list.clone();
        for (n, c) in &checks {
            if let Some(f) = probe.features.get_mut(n - 1) {
                f.fields.insert(
                    baton_records::VERIFY.to_string(),
                    serde_json::Value::String(c.clone()),
                );
            }
        }
        let idx: Vec<usize> = checks.iter().map(|(n, _)| n - 1).collect();
        // On the head the checks run as the verifier's own commands did: the app
        // started by baton, the project read-only, so a check a verifier wrote
        // cannot change the work it judges.
        let _ = self.start_app_for_verifier().await;
        let ro_tools = self.read_only_tools();
        let mut checker =
            crate::checks::Checker::for_project(&ro_tools, self.policy, &self.cfg, &self.files.dir);
        checker.init_script = None;
        let head = checker.run(&probe, &idx, None).await;
        self.stop_processes().await;
        let at_base = match base {
            Some(b) => self.run_at(b, &probe, &idx).await,
            None => Err("the session's base commit is unknown".to_string()),
        };
        let author = format!("the verifier (session {session})");
        let mut kept = Vec::new();
        for (n, proof) in proofs {
            let Some((_, check)) = checks.iter().find(|(f, _)| *f == n) else {
                kept.push((n, proof));
                continue;
            };
            let failed_now = head
                .failed
                .iter()
                .chain(&head.refused)
                .find(|f| f.feature == n);
            let why = if let Some(f) = failed_now {
                Some(format!(
                    "baton ran the verifier's check `{check}` itself and it failed: {}",
                    crate::queue::cut(&f.reason, 600)
                ))
            } else {
                match &at_base {
                    Err(e) => Some(format!(
                        "baton could not run the verifier's check on the session's base commit ({e}), so it proves nothing"
                    )),
                    Ok(run) if run.passed.contains(&n) => Some(format!(
                        "the verifier's check `{check}` passes on the session's base commit too, before the work, so it proves nothing"
                    )),
                    Ok(_) => None,
                }
            };
            match why {
                Some(why) => {
                    self.reporter.line(&format!(
                        "  the verifier's check of #{n} does not hold: {why}"
                    ));
                    rejected.push((n, why));
                }
                None => {
                    self.reporter.line(&format!(
                        "  the verifier's check of #{n} fails before the work and passes now"
                    ));
                    g.keep_check(n, check, &author);
                    kept.push((n, proof));
                }
            }
        }
        kept
    }

    /// Run the checks of `features` (0-based) of `list` in a copy of the project
    /// at `commit`, made for this and removed after: a clone sharing the project's
    /// objects, in the temp dir (writable to the checks' commands), its processes
    /// stopped after.
    async fn run_at(
        &self,
        commit: &str,
        list: &FeatureList,
        features: &[usize],
    ) -> Result<baton_records::CheckRun, String> {
        // Where the commands may write: a copy's own temp dir when the main
        // project lies in the temp dir.
        let copy = tempfile::Builder::new()
            .prefix("baton-base-")
            .tempdir_in(baton_policy::sandbox::temp_dir_for(&self.files.dir))
            .map_err(|e| format!("cannot make a temp dir: {e}"))?;
        let dir = copy.path().to_path_buf();
        // Made by git inside the sandbox, like every command on the project's
        // content: a clone sharing the project's objects, at `commit`.
        let q =
            |p: &std::path::Path| baton_agent::cli_session::shell_quote(&p.display().to_string());
        let make = format!(
            "git clone -q --shared --no-checkout {} {} && git -C {} -c advice.detachedHead=false checkout -q --detach {commit}",
            q(&self.files.dir),
            q(&dir),
            q(&dir)
        );
        let out = self
            .tools
            .call(
                "Bash",
                &serde_json::json!({"command": make, "timeout": 600_000}),
            )
            .await;
        if out.is_error {
            return Err(format!(
                "making a copy at {} failed: {}",
                &commit[..commit.len().min(12)],
                crate::queue::cut(out.content.trim(), 300)
            ));
        }
        let mut ctx = self.tools.context().clone();
        ctx.project_dir = dir.canonicalize().unwrap_or(dir.clone());
        let tools = self.tools.with_context(ctx);
        let checker = crate::checks::Checker::for_project(&tools, self.policy, &self.cfg, &dir);
        let run = checker.run(list, features, None).await;
        self.stop_processes().await;
        Ok(run)
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
    /// launcher, where one is in use): the verifier's commands cannot write it.
    pub(crate) fn read_only_tools(&self) -> Toolbox {
        let mut ctx = self.tools.context().clone();
        ctx.launcher = ctx.launcher.as_ref().map(|l| l.read_only());
        self.tools.with_context(ctx)
    }

    /// Run the start script (writable, through the policy) so the read-only verifier
    /// finds the app running. Returns the last lines it printed (or its failure),
    /// for the verifier to read; `None` when there is no start script to run.
    pub(crate) async fn start_app_for_verifier(&self) -> Option<String> {
        let init = &self.files.names.init_script;
        if !(self.cfg.verify.run_init && self.files.dir.join(init).is_file()) {
            return None;
        }
        // The session is over: its home goes, so what it planted there does not
        // steer the app the verifier judges.
        self.clean_home();
        let input = serde_json::json!({"command": format!("./{init}"), "timeout": 600_000});
        if let baton_tools::GateDecision::Refuse(why) = self.policy.check("Bash", &input) {
            return Some(format!("(./{init} was refused by baton's policy: {why})"));
        }
        let out = self.tools.call("Bash", &input).await;
        let lines: Vec<&str> = out.content.lines().rev().take(6).collect();
        let said: Vec<&str> = lines.into_iter().rev().collect();
        Some(format!(
            "{}{}",
            if out.is_error { "(it failed) " } else { "" },
            said.join("\n")
        ))
    }
}
