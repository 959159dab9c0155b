//! One session of a run: started (the brief, the prompt, the session on the
//! record while it runs), run on the backend (baton's own loop or an agent CLI,
//! within the session's limits), finished (the gates), and put on the record
//! with what it did to the features (passes forgotten, blocks, attempts, the
//! stall count). The loop around it is in `run.rs`.

use std::time::{Duration, Instant};

use baton_agent::client::ModelClient;
use baton_agent::session::{AgentError, Limits, Session, SessionResult};
use baton_agent::transcript::{Transcript, now_ms};
use baton_records::FeatureList;
use baton_records::{InProgress, SessionKind, SessionOutcome, SessionRecord, State};
use baton_records::{LedgerEntry, LedgerKind};
use baton_tools::Toolbox;

use crate::block::BlockTool;
use crate::boundary::Snapshot;
use crate::error::HarnessError;
use crate::gates::Gates;
use crate::guard::GateStack;
use crate::limits::RunLimits;
use crate::runner::{Backend, Runner};
use crate::summary::{Summary, summarize};
use crate::{block, brief, git, prompts, queue};

/// A session that ended, gates run.
pub(crate) struct Finished {
    pub(crate) record: SessionRecord,
    pub(crate) error: Option<AgentError>,
    /// Features the session declared blocked, with the reasons.
    pub(crate) blocks: Vec<(usize, String)>,
}

impl Runner<'_> {
    /// What the texts of this run's sessions may say: the agent's tools (by
    /// backend) and whether its commands run inside bubblewrap.
    pub(crate) fn setting(&self) -> prompts::Setting {
        prompts::Setting {
            tools: match &self.backend {
                Backend::Loop(_) => prompts::Toolset::Own,
                Backend::Cli(c) => prompts::Toolset::of_cli(c.cli.kind()),
            },
            bubblewrap: self.kernel_binds,
        }
    }

    /// The session limits of `[agent]`, within what is left of the run's hours,
    /// with the note a session of kind `handoff` gets when its context fills.
    pub(crate) fn limits(
        &self,
        max_turns: u32,
        deadline: Option<Instant>,
        handoff: prompts::Handoff,
    ) -> Limits {
        let mut limits = Limits::from_config(&self.cfg.agent, max_turns);
        limits.context.handoff_note = Some(prompts::handoff_note(
            &self.files.names,
            handoff,
            self.setting(),
        ));
        if let Some(d) = deadline {
            let left = d.saturating_duration_since(Instant::now());
            limits.max_duration = Some(limits.max_duration.map_or(left, |m| m.min(left)));
        }
        // Within what is left of the run's budget: a session that spends it
        // stops at that turn, not when it is done (a $0.01 budget once ended at
        // $0.0148). The record read here is the project's as the session starts.
        if let Ok(state) = State::load(&self.files.dir) {
            let budget = RunLimits::for_project(&self.opts, &self.cfg, &state).budget;
            if budget > 0.0 {
                limits.max_cost_usd = (budget - state.total_cost()).max(f64::MIN_POSITIVE);
            }
        }
        limits
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "the session's inputs, each used once"
    )]
    pub(crate) async fn session(
        &self,
        kind: SessionKind,
        state: &State,
        problem: Option<&str>,
        accepted: &mut Option<FeatureList>,
        block: &BlockTool,
        deadline: Option<Instant>,
        snap: &Snapshot,
    ) -> Result<Finished, HarnessError> {
        let dir = &self.files.dir;
        let mut transcript = self.new_transcript(self.opts.first_number)?;
        let number = transcript.number();
        // A process left running by an earlier session may have changed them since.
        self.guard_boundary(snap, number)?;
        self.clean_home();
        if let (SessionKind::Coding, Some(list)) = (kind, accepted.as_ref()) {
            self.restore_list(crate::list::Restore::Before(number), list)?;
        }
        let mut timing = baton_records::Timing::default();
        // What baton's checks below write into the project is put back after.
        let dirty = match kind {
            SessionKind::Coding => Some(git::dirty(dir)?),
            SessionKind::Initializer | SessionKind::Planner => None,
        };
        let swept = now_ms();
        let sweep = match kind {
            SessionKind::Coding if self.opts.skip_sweep => None,
            SessionKind::Coding => self.sweep(number, accepted).await?,
            SessionKind::Initializer | SessionKind::Planner => None,
        };
        // Features that already work where they entered the list (an adopted
        // repository, a planner's feature the code already does) pass now.
        let accepted_working = match kind {
            SessionKind::Coding if self.opts.agent.is_none() => {
                self.accept_working(number, accepted).await?
            }
            _ => Vec::new(),
        };
        timing.sweep_ms = now_ms().saturating_sub(swept);
        // The target is the first of the brief's list: computed after the sweep, from
        // the same list and state as the brief.
        let target = match (kind, accepted.as_ref()) {
            (SessionKind::Coding, Some(list)) => queue::order(list, state).first().copied(),
            _ => None,
        };
        // The target's check on the base commit, before the work: one that passes
        // already proves nothing when the target is flipped.
        let checked = now_ms();
        let base_check = match (target, accepted.as_ref()) {
            (Some(t), Some(list)) => {
                let init_ran = sweep.as_ref().is_some_and(|s| s.init_ran);
                self.base_check(list, t, init_ran).await
            }
            _ => None,
        };
        timing.base_check_ms = now_ms().saturating_sub(checked);
        if let Some(before) = &dirty {
            for said in self.undo_check_writes(before, number.saturating_sub(1))? {
                self.files.append_ledger(&LedgerEntry::new(
                    number,
                    LedgerKind::BoundaryViolation,
                    said,
                ))?;
            }
        }
        let ip = InProgress {
            number,
            kind,
            started_ms: now_ms(),
            head_before: git::head(dir),
            notes_before: self.files.read_notes(),
            sweep: sweep.clone(),
            target,
            base_check,
            timing,
        };
        let mut saved = state.clone();
        saved.in_progress = Some(ip.clone());
        saved.save(dir)?;
        // A person's guidance waits for a coding session's brief.
        let told = match kind {
            SessionKind::Coding => crate::tell::pending(dir),
            SessionKind::Initializer | SessionKind::Planner => Vec::new(),
        };
        let prompt = match (kind, accepted.as_ref()) {
            (SessionKind::Coding, Some(list)) => prompts::coding(
                &self.files.names,
                &brief::brief_with(
                    &self.files,
                    list,
                    state,
                    number,
                    sweep.as_ref(),
                    &brief::Extras {
                        running: crate::running::describe(
                            &self.tools.context().processes.alive(),
                            dir,
                        ),
                        max_turns: self.cfg.agent.max_turns,
                        told: told.clone(),
                        base_check: ip.base_check.clone(),
                        accepted_working: accepted_working.clone(),
                        port: self
                            .tools
                            .context()
                            .env
                            .iter()
                            .find(|(k, _)| k == "PORT")
                            .map(|(_, v)| v.clone()),
                    },
                ),
                self.cfg.browser.enabled,
                matches!(self.backend, Backend::Loop(_)),
                prompts::ProofRules::of(&self.cfg),
                self.setting(),
            ),
            _ => prompts::initializer(&self.files.names, problem, self.setting()),
        };
        if !told.is_empty() {
            crate::tell::delivered(&self.files, &told, number)?;
        }
        self.reporter
            .line(&format!("── session {number:04} · {} ──", kind.name()));
        self.reporter.session_start(number, kind);
        let stack = GateStack {
            policy: self.policy,
            allow_file_urls: self.cfg.policy.allow_file_urls,
            feature_list: (kind == SessionKind::Coding)
                .then_some((dir.as_path(), self.files.names.feature_list.as_str())),
            read_only: false,
        };
        let handoff = match kind {
            SessionKind::Initializer => prompts::Handoff::Initializer,
            SessionKind::Coding | SessionKind::Planner => prompts::Handoff::Coding,
        };
        let limits = self.limits(self.cfg.agent.max_turns, deadline, handoff);
        let system = prompts::system(dir, &self.files.names, self.setting());
        // BlockFeature is offered while a coding session of baton's own loop runs.
        if let (SessionKind::Coding, Some(list)) = (kind, accepted.as_ref()) {
            block.open(list);
        }
        let result = self
            .run_agent(
                Agent {
                    tools: &self.tools,
                    gate: stack,
                    client: None,
                    model: None,
                    limits,
                },
                &mut transcript,
                &system,
                &prompt,
            )
            .await;
        block.close();
        let error = result.err();
        let ended = Some(now_ms());
        self.finish(&ip, error, ended, accepted, deadline, snap)
            .await
    }

    /// Run one agent on the run's backend: baton's own loop (with `a.tools` behind
    /// `a.gate`), or the agent CLI, whose hook applies the same gates and whose shell
    /// commands see the project read-only where the gates say so.
    pub(crate) async fn run_agent(
        &self,
        a: Agent<'_>,
        transcript: &mut Transcript,
        system: &str,
        prompt: &str,
    ) -> Result<SessionResult, AgentError> {
        match &self.backend {
            Backend::Loop(client) => {
                Session {
                    client: a.client.unwrap_or(client),
                    tools: a.tools,
                    gate: &a.gate,
                    observer: self.observer,
                    prices: self.prices,
                    limits: a.limits,
                }
                .run_until(transcript, system, prompt, &self.stop)
                .await
            }
            Backend::Cli(cli) => {
                let mut cli = cli.clone();
                if let Some(m) = a.model {
                    cli.model = m.to_string();
                }
                // The verifier's commands: the project read-only, and a home of
                // their own (Codex's too), which ends with the session.
                let mut fresh = None;
                let mut own_namespace = None;
                if a.gate.read_only {
                    fresh = baton_policy::sandbox::FreshHome::new(&self.files.dir)
                        .inspect_err(|e| {
                            self.reporter.line(&format!(
                                "baton: warning: cannot make a fresh home for the verifier ({e}); its commands share the session's"
                            ));
                        })
                        .ok();
                    let scratch = fresh.as_ref().map(|f| f.path());
                    // A namespace of the verifier's own, the project read-only
                    // in it, whose commands (Codex whole) join it: it has the
                    // run's network boundary, the key proxy's bridge included.
                    let ro = self
                        .tools
                        .context()
                        .launcher
                        .as_ref()
                        .zip(scratch)
                        .map(|(l, s)| l.read_only(s));
                    let joined = ro
                        .as_ref()
                        .and_then(|l| Some((l.join_target()?, l.home()?)));
                    let open = joined.is_none() && cli.cli.kind().profile().inside_sandbox;
                    let home = joined.as_ref().map(|(_, h)| h.as_path()).or(scratch);
                    cli.command_sandbox = cli.command_sandbox.as_deref().map(|s| {
                        read_only_spec(
                            s,
                            (home, scratch),
                            joined.as_ref().map(|(pid, _)| *pid),
                            open,
                        )
                    });
                    if let Some(h) = scratch {
                        cli.cli = cli.cli.in_home(h);
                        // The CLI's temp files (Claude Code's record of its
                        // shell's directory) where the verifier's commands reach
                        // them: the coder's home is not in its namespace.
                        let tmp = h.join("tmp");
                        if std::fs::create_dir_all(&tmp).is_ok() {
                            for (_, v) in cli.env.iter_mut().filter(|(k, _)| k == "TMPDIR") {
                                *v = tmp.display().to_string();
                            }
                        }
                    }
                    own_namespace = ro;
                } else if let Some(pid) = self
                    .tools
                    .context()
                    .launcher
                    .as_ref()
                    .and_then(|l| l.join_target())
                {
                    // The CLI's commands join this session's namespace, which
                    // ends at its gates with all in it (a double fork too): the
                    // next session's is a fresh one.
                    cli.command_sandbox =
                        cli.command_sandbox.as_deref().map(|s| joining_spec(s, pid));
                }
                let ended = cli
                    .session(
                        &self.files.dir,
                        &a.gate.hook_args(),
                        a.limits,
                        self.observer,
                        self.prices,
                    )
                    .run_until(transcript, system, prompt, &self.stop)
                    .await;
                drop(own_namespace);
                drop(fresh);
                ended
            }
        }
    }

    /// Empty the agent's home ([`baton_policy::sandbox::clean_home`]): every session
    /// starts from, and the verifier's start script runs in, one no session wrote.
    pub(crate) fn clean_home(&self) {
        if let Err(e) = baton_policy::sandbox::clean_home(&self.files.dir) {
            self.reporter.line(&format!(
                "baton: warning: cannot empty the agent's home ({e}); what the last session left there stays"
            ));
        }
    }

    /// Restore the guarded files before session `number` starts; what had changed
    /// (since the last gates) goes to the ledger.
    pub(crate) fn guard_boundary(&self, snap: &Snapshot, number: u32) -> Result<(), HarnessError> {
        for u in snap.restore()? {
            self.reporter
                .line(&format!("boundary: {u} between sessions; restored"));
            self.files.append_ledger(&LedgerEntry {
                t_ms: now_ms(),
                session: number,
                kind: LedgerKind::BoundaryViolation,
                feature: None,
                detail: format!("{u} between sessions; restored from baton's snapshot"),
                commit: None,
                evidence: Vec::new(),
                proof: None,
            })?;
        }
        Ok(())
    }

    /// Gates and the session's record, from its transcript (also for a killed
    /// session, whose agent's end, `agent_ended`, is not known).
    pub(crate) async fn finish(
        &self,
        ip: &InProgress,
        error: Option<AgentError>,
        agent_ended: Option<u64>,
        accepted: &mut Option<FeatureList>,
        deadline: Option<Instant>,
        snap: &Snapshot,
    ) -> Result<Finished, HarnessError> {
        let gates_began = now_ms();
        // No process of the session lives into the gates: one left running could
        // change what baton's git reads between the restore below and its next
        // command. The start script brings servers up again for the checks and
        // the next session.
        self.stop_processes().await;
        // And what left those groups (a double fork into a session of its own):
        // the session's namespace ends, with every process in it.
        self.end_session_processes();
        // Before any git command (and any check) of the gates: put back what the
        // session changed of git's config, hooks and info, and of baton.toml.
        let undone = snap.restore()?;
        for u in &undone {
            self.reporter
                .line(&format!("  boundary: {u}; restored from baton's snapshot"));
        }
        let base = match ip.kind {
            SessionKind::Coding => accepted.clone(),
            SessionKind::Initializer | SessionKind::Planner => None,
        };
        // History is never rewritten: what a session's reset, rebase or amend
        // dropped from the branch is joined back before anything else.
        let rewound = match (ip.kind, ip.head_before.as_deref()) {
            (SessionKind::Coding, Some(before)) => git::rejoin(&self.files.dir, before, ip.number)?,
            _ => None,
        };
        let mut undone = undone;
        // Nothing stays hidden from git status (and so from the leftovers' commit),
        // and history holds baton's baton.toml, whatever the session committed.
        for path in git::unhide(&self.files.dir)? {
            undone.push(format!(
                "{path} was hidden from git status (skip-worktree or assume-unchanged); made visible"
            ));
        }
        if let Some(before) = ip.head_before.as_deref() {
            undone.extend(git::restore_committed(
                &self.files.dir,
                before,
                baton_config::CONFIG_FILE,
                ip.number,
            )?);
        }
        let mut g = Gates::ledger(&self.files, ip.number, base.as_ref())?;
        g.report.boundary = undone;
        g.report.rewound = rewound;
        let (mut verifier_cost, mut verifier_error) = (0.0, None);
        let proving = now_ms();
        if ip.kind == SessionKind::Coding {
            (verifier_cost, verifier_error) =
                self.prove(&mut g, ip, base.as_ref(), deadline).await?;
        }
        let verifier_ms = now_ms().saturating_sub(proving);
        let summary = summarize(&self.files.dir, ip.number);
        // Stopped by Ctrl-C while the verifier checked it: an interruption, not a
        // failed attempt at its feature.
        let outcome = if g.interrupted {
            SessionOutcome::Interrupted
        } else {
            summary.outcome_after(error.as_ref())
        };
        // A verifier that could not run is the run's to act on once the session
        // is recorded (the provider's quota: a limit; another error: the run
        // stops with it); the session's own error comes first.
        let error = error.or(verifier_error);
        let blocks = match ip.kind {
            SessionKind::Coding => block::declared(&self.files.dir, ip.number),
            SessionKind::Initializer | SessionKind::Planner => Vec::new(),
        };
        g.report.refusals = summary.refusals;
        g.report.evidence = summary.evidence;
        let (mut gates, new_accepted) = g.finish(&ip.notes_before)?;
        if let Some(l) = &self.tools.context().launcher {
            gates.network_refused = l.refused_hosts();
            for host in &gates.network_refused {
                self.reporter.line(&format!(
                    "  network: refused {host}: not on [sandbox] allow (add it there for the commands to reach it)"
                ));
            }
        }
        // A session that made no model turn (a refused key, no network) had no
        // chance to write notes: nothing to report about them.
        if summary.turns == 0 {
            gates.notes_updated = true;
        }
        // The list before this session's, for the checks it newly holds.
        let before = accepted.take();
        if ip.kind == SessionKind::Coding {
            *accepted = new_accepted;
        } else {
            *accepted = self.accept_initial(ip.number, &mut gates)?;
        }
        if let Some(list) = accepted.as_ref() {
            self.judge_checks(before.as_ref(), list, ip.number)?;
        }
        let Summary {
            turns,
            usage,
            cost,
            waited_ms,
            ..
        } = summary;
        let mut timing = ip.timing;
        timing.agent_ms = agent_ended.map_or(0, |e| e.saturating_sub(ip.started_ms));
        timing.verifier_ms = verifier_ms;
        timing.gates_ms = now_ms()
            .saturating_sub(gates_began)
            .saturating_sub(verifier_ms);
        let record = SessionRecord {
            number: ip.number,
            kind: ip.kind,
            started_ms: ip.started_ms,
            ended_ms: now_ms(),
            outcome,
            turns,
            usage,
            cost_usd: cost,
            commits: git::commits_since(&self.files.dir, ip.head_before.as_deref()),
            gates,
            sweep: ip.sweep.clone(),
            verifier_cost_usd: verifier_cost,
            waited_ms,
            target: ip.target,
            agent: self.opts.agent,
            timing,
            integration: None,
            base: ip.head_before.clone(),
        };
        Ok(Finished {
            record,
            error,
            blocks,
        })
    }

    /// Stop every process the run's commands started (the session's, or the
    /// start script's run by baton's checks), before baton's git works on what
    /// they could write.
    /// End every process the session's commands started, wherever it went
    /// ([`baton_tools::Launcher::end_all`]).
    pub(crate) fn end_session_processes(&self) {
        if let Some(l) = &self.tools.context().launcher {
            l.end_all();
        }
    }

    pub(crate) async fn stop_processes(&self) {
        let _ = self
            .tools
            .context()
            .processes
            .shutdown(Duration::from_secs(2))
            .await;
    }

    pub(crate) fn record(
        &self,
        state: &mut State,
        record: SessionRecord,
        blocks: &[(usize, String)],
        accepted: &mut Option<FeatureList>,
    ) -> Result<(), HarnessError> {
        let mut notes = Vec::new();
        if record.kind == SessionKind::Coding
            && let Some(list) = accepted.as_ref()
        {
            notes = self.features_after(state, &record, blocks, list)?;
        }
        let g = &record.gates;
        let passing = accepted.as_ref().map_or(0, FeatureList::passing);
        let total = accepted.as_ref().map_or(0, |l| l.features.len());
        self.reporter.session_end(&record, passing, total);
        let standing = if accepted.is_some() {
            format!("passing {passing}/{total}")
        } else {
            "no feature list yet".to_string()
        };
        let mut line = format!(
            "session {:04} {} · {} · {} · {} tokens · {} · {standing}",
            record.number,
            record.kind.name(),
            record.outcome,
            baton_records::human::plural(u64::from(record.turns), "turn"),
            record.usage.total(),
            baton_records::human::cost(record.cost_usd, record.usage.total())
        );
        if !g.flipped.is_empty() {
            line.push_str(&format!(
                " · flipped {}",
                baton_records::human::features(&g.flipped)
            ));
        }
        self.reporter.line(&line);
        for n in &notes {
            self.reporter.line(n);
        }
        for v in &g.violations {
            self.reporter
                .line(&format!("  gate: restored the feature list: {v}"));
        }
        for f in &g.verify_failed {
            self.reporter.line(&format!(
                "  gate: reverted the flip of #{}: its verify command `{}` failed",
                f.feature,
                f.command.chars().take(80).collect::<String>()
            ));
        }
        for n in &g.vacuous {
            self.reporter.line(&format!(
                "  gate: #{n}'s verify command already passed before the session, so it proves nothing"
            ));
        }
        if let Some(r) = &g.rewound {
            self.reporter.line(&format!("  gate: {r}"));
        }
        for (n, why) in &g.unproven {
            self.reporter.line(&format!(
                "  gate: reverted the flip of #{n}: nothing proved it ({})",
                queue::cut(why, 200)
            ));
        }
        if !g.leftover_files.is_empty() {
            self.reporter.line(&format!(
                "  gate: committed {} file(s) the session left uncommitted",
                g.leftover_files.len()
            ));
        }
        if !g.left_out.is_empty() {
            self.reporter.line(&format!(
                "  gate: left out of baton's commit (untracked): {}",
                queue::cut(&g.left_out.join(", "), 200)
            ));
        }
        if !g.notes_updated {
            self.reporter
                .line("  gate: progress notes were not updated");
        }
        state.sessions.push(record);
        state.in_progress = None;
        Ok(state.save(&self.files.dir)?)
    }

    /// After a coding session: forget features that pass, record the blocks it
    /// declared, count a failed attempt at its target (deferring it at the limit), and
    /// count the stall. Returns run lines for people.
    pub(crate) fn features_after(
        &self,
        state: &mut State,
        record: &SessionRecord,
        blocks: &[(usize, String)],
        list: &FeatureList,
    ) -> Result<Vec<String>, HarnessError> {
        let mut notes = Vec::new();
        let passes = |n: usize| list.features.get(n - 1).is_some_and(|f| f.passes);
        let desc = |n: usize| {
            list.features
                .get(n - 1)
                .map(|f| f.description.clone())
                .unwrap_or_default()
        };
        let entry = |kind: LedgerKind, n: usize, detail: String| LedgerEntry {
            t_ms: now_ms(),
            session: record.number,
            kind,
            feature: Some(n),
            detail,
            commit: None,
            evidence: Vec::new(),
            proof: None,
        };
        queue::forget_passing(state, list);
        for (n, reason) in blocks {
            let n = *n;
            if n == 0 || n > list.features.len() || passes(n) {
                continue;
            }
            let r = state.features.entry(n).or_default();
            r.blocked = Some(reason.clone());
            r.blocked_in = Some(record.number);
            self.files.append_ledger(&entry(
                LedgerKind::Blocked,
                n,
                format!("{}: {reason}", desc(n)),
            ))?;
            notes.push(format!(
                "  blocked #{n} (the agent says: {}); `baton unblock` hands it out again",
                queue::cut(reason, 200)
            ));
        }
        let target = record.target.filter(|&t| !passes(t));
        let target_blocked = target.is_some_and(|t| blocks.iter().any(|(n, _)| *n == t));
        let mut first_deferral = false;
        if let Some(t) = target
            && !target_blocked
            && queue::counts_as_attempt(record.outcome)
        {
            let reason = queue::failure_reason(record, t);
            let limit = self.cfg.run.feature_attempts;
            if let Some(d) = queue::count_attempt(state, t, record.number, reason.clone(), limit) {
                first_deferral = d.first;
                self.files.append_ledger(&entry(
                    LedgerKind::Deferred,
                    t,
                    format!(
                        "{}: deferred after {} failed attempt(s); last: {reason}",
                        desc(t),
                        d.attempts
                    ),
                ))?;
                let next = queue::order(list, state)
                    .first()
                    .map_or("nothing else".to_string(), |n| format!("#{n}"));
                notes.push(format!(
                    "  deferred #{t} after {} failed attempt(s) ({}); next: {next}",
                    d.attempts,
                    queue::cut(&reason, 200)
                ));
            }
        }
        // A session stopped by the provider's usage limit, Ctrl-C or a kill had
        // no fair chance either.
        queue::count_stall(
            state,
            !record.gates.flipped.is_empty(),
            record.target.is_some() && !target_blocked && queue::had_a_fair_chance(record.outcome),
            first_deferral,
        );
        Ok(notes)
    }
}

/// One agent session's means, for [`Runner::run_agent`].
pub(crate) struct Agent<'a> {
    /// The tools of baton's own loop.
    pub tools: &'a Toolbox,
    /// The gates of every tool call (also the CLI hook's arguments).
    pub gate: GateStack<'a>,
    /// Another client than the run's, for baton's own loop (another model).
    pub client: Option<&'a ModelClient>,
    /// Another model than the run's, for an agent CLI.
    pub model: Option<&'a str>,
    /// Turn, token and time limits.
    pub limits: Limits,
}

/// `spec` (a CLI's `BATON_SANDBOX`) as `edit` changes it; as it is when it
/// cannot be read.
fn edit_spec(spec: &str, edit: impl FnOnce(&mut baton_policy::sandbox::ShellSpec)) -> String {
    let var = baton_agent::cli_session::SANDBOX_SPEC_VAR;
    match baton_policy::sandbox::ShellSpec::from_env(var, spec) {
        Ok(mut s) => {
            edit(&mut s);
            s.to_env()
        }
        Err(_) => spec.to_string(),
    }
}

/// `spec` joining the namespace `pid` holds, where it joins one at all.
fn joining_spec(spec: &str, pid: i32) -> String {
    edit_spec(spec, |s| {
        if s.join.is_some() {
            s.join = Some(pid);
        }
    })
}

/// `spec` for the verifier: the project read-only, `home` its home and
/// `scratch` writable (the CLI's own files), joining the read-only namespace
/// `join` holds (none: a sandbox of its own per command), with the host's
/// network when `open_network` (a CLI whole in a sandbox without a bridge to
/// its key proxy).
fn read_only_spec(
    spec: &str,
    (home, scratch): (Option<&std::path::Path>, Option<&std::path::Path>),
    join: Option<i32>,
    open_network: bool,
) -> String {
    edit_spec(spec, |s| {
        s.spec.read_only = true;
        s.join = join;
        if open_network {
            s.spec.network = baton_config::SandboxNetwork::Open;
        }
        if let Some(h) = home {
            s.spec.home = h.to_path_buf();
        }
        s.spec.writable.extend(
            scratch
                .filter(|d| Some(*d) != home)
                .map(std::path::Path::to_path_buf),
        );
    })
}
