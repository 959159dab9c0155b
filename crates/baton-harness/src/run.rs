//! `baton run`: sessions until every feature passes, a limit is reached, or the run
//! stalls. The agent's word is never a stop condition; the ledger decides.
//!
//! This module holds the loop and the stop rule; one session's start, finish
//! and record are in `session.rs`. Around it: `list.rs` (which feature list baton
//! goes by), [`crate::checks`] (verify commands and the regression sweep),
//! `proof.rs` (a flip's proof, the independent verifier's session among it),
//! `summary.rs` (what a transcript says), `gates.rs` (the gates after each
//! session).

use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_agent::session::AgentError;
use baton_agent::transcript::now_ms;
use baton_records::FeatureList;

use crate::block::BlockTool;
use crate::boundary::Snapshot;
use crate::error::HarnessError;
pub(crate) use crate::limits::RunLimits;
pub use crate::limits::{RunEnd, RunOptions};
pub use crate::runner::{Backend, Reporter, Runner, RunnerParts, new_transcript};
use crate::{git, queue};
use baton_records::human::features;
use baton_records::{LedgerEntry, LedgerKind};
use baton_records::{SessionKind, SessionOutcome, State};

/// A run between its sessions.
struct Going {
    /// What the agent may not change, as the run found it.
    snap: Snapshot,
    /// The record.
    state: State,
    /// The list baton goes by, once there is one.
    accepted: Option<FeatureList>,
    /// The run's limits.
    limits: RunLimits,
    /// Its waits for a usage limit's reset.
    waits: Waits,
    /// Sessions in this run.
    this_run: u32,
}

/// The waits of a run for an agent CLI's usage limit to reset.
#[derive(Default)]
struct Waits {
    /// Waited in all.
    waited: Duration,
    /// Waits of a limit that named no reset (their delays double).
    probes: u32,
}

impl Runner<'_> {
    /// Run sessions until a stop condition. Resumes from `.baton/state.json` and git.
    pub async fn run(&self) -> Result<RunEnd, HarnessError> {
        let started_ms = baton_agent::transcript::now_ms();
        self.record_killed_run();
        let end = self.run_all().await;
        // Where its wall time went, beside its sessions' own records.
        let record = baton_records::RunRecord {
            started_ms,
            ended_ms: baton_agent::transcript::now_ms(),
            complete_sweep_ms: self
                .complete_sweep_ms
                .load(std::sync::atomic::Ordering::Relaxed),
            pause_ms: self.pause_ms.load(std::sync::atomic::Ordering::Relaxed),
            killed: false,
        };
        if let Err(e) = record.append(&self.files.dir) {
            self.reporter
                .line(&format!("baton: could not record the run's time: {e}"));
        }
        end
    }

    /// A run killed before it wrote its time (`kill -9`) gets its line now, from
    /// the sessions no recorded run holds, so the report's wall time counts it.
    fn record_killed_run(&self) {
        let dir = &self.files.dir;
        let Ok(state) = State::load(dir) else {
            return;
        };
        // A parallel run's sessions (their agent named) have no run line of
        // this kind.
        let sessions: Vec<(u64, u64)> = state
            .sessions
            .iter()
            .filter(|s| s.agent.is_none())
            .map(|s| (s.started_ms, s.ended_ms))
            .chain(
                state
                    .in_progress
                    .iter()
                    .map(|ip| (ip.started_ms, ip.started_ms)),
            )
            .collect();
        let runs = baton_records::runs::load(dir);
        if let Some(killed) = baton_records::runs::killed_run(&runs, &sessions)
            && let Err(e) = killed.append(dir)
        {
            self.reporter.line(&format!(
                "baton: could not record the killed run's time: {e}"
            ));
        }
    }

    /// [`Runner::run`], the record of its time aside.
    async fn run_all(&self) -> Result<RunEnd, HarnessError> {
        // The branch it publishes is the one it starts on.
        let _ = self.run_branch();
        // MCP servers (the browser among them) live for the whole run.
        let hub = self.start_mcp().await?;
        // BlockFeature, offered only while a coding session of our own loop runs.
        let block = Arc::new(BlockTool::default());
        if let Backend::Loop(_) = &self.backend {
            self.tools.attach(block.clone());
        }
        let end = self.run_sessions(&block).await;
        if let Some(hub) = hub {
            hub.shutdown().await;
        }
        self.forget_snapshot(end.is_ok());
        end
    }

    /// A run (or its list's making) that ended cleanly, with no session left
    /// unfinished (an interrupted one is finished by the next run, which must
    /// judge it against this snapshot): the gates restored what the last session
    /// changed, so the saved snapshot has done its job.
    fn forget_snapshot(&self, ok: bool) {
        let unfinished = State::load(&self.files.dir).map_or(true, |s| s.in_progress.is_some());
        if ok && !unfinished {
            let _ = std::fs::remove_file(crate::boundary::saved_path(&self.files.dir));
        }
    }

    /// The MCP servers of `baton.toml` (the browser among them), started and
    /// offered to baton's own loop (an agent CLI starts them itself).
    async fn start_mcp(&self) -> Result<Option<Arc<baton_mcp::McpHub>>, HarnessError> {
        let mut specs = match &self.backend {
            Backend::Loop(_) => mcp_specs(&self.cfg, &self.files.dir),
            Backend::Cli(_) => Vec::new(),
        };
        browser_through(&mut specs, self.tools.context().launcher.as_deref());
        if specs.is_empty() {
            return Ok(None);
        }
        let hub = baton_mcp::McpHub::start(specs)
            .await
            .map_err(HarnessError::Mcp)?;
        self.reporter
            .line(&format!("mcp: started {}", hub.servers().join(", ")));
        self.tools.attach(hub.clone());
        Ok(Some(hub))
    }

    /// The project as a run finds it: its own repository (even inside another
    /// one, whose history the sessions' commits must never reach), baton's
    /// snapshot of what the agent may not change, the record (with a budget given
    /// on the command line, which is the project's from now on), the list baton
    /// goes by, and a session a killed run left unfinished finished.
    async fn open_project(&self) -> Result<(Snapshot, State, Option<FeatureList>), HarnessError> {
        let dir = &self.files.dir;
        // `is_top` asks git only when there is no `.git`.
        if !git::is_top(dir) {
            git::git(dir, &["init", "-q"])?;
        }
        let snap = self.guard_start()?;
        let mut state = State::load(dir)?;
        if RunLimits::record_budget(&self.opts, &mut state, self.cfg.run.budget_usd) {
            state.save(dir)?;
        }
        let mut accepted = self.accepted_list(&mut state)?;
        if let Some(ip) = state.in_progress.clone()
            && ip.kind == SessionKind::Planner
        {
            self.settle_stopped_planner(&mut state, &ip)?;
        }
        if let Some(ip) = state.in_progress.clone() {
            self.reporter.line(&format!(
                "resuming: session {:04} ({}) did not finish; running its gates now",
                ip.number,
                ip.kind.name()
            ));
            let f = self
                .finish(&ip, None, None, &mut accepted, None, &snap)
                .await?;
            self.record(&mut state, f.record, &f.blocks, &mut accepted)?;
        }
        if let Some(list) = &accepted {
            self.refuse_unaccepted_edit(list)?;
            // A list deleted or broken since the last run is put back now, not only
            // before a coding session: a finished project has none left to run,
            // and would call itself complete over a list it never read.
            let after = state.sessions.last().map_or(0, |s| s.number);
            self.restore_list(crate::list::Restore::AtStart { after }, list)?;
            // Checks a person or a planner wrote since the last run.
            self.judge_checks(None, list, state.sessions.last().map_or(0, |s| s.number))?;
        }
        let left = crate::tell::left_in_project(&self.files.dir);
        if left > 0 {
            self.reporter.line(&format!(
                "{left} tell(s) in {} (an older baton's queue, which commands can write where bubblewrap is missing) are not read: tell them again with `baton tell`, which now keeps them in {}",
                baton_records::layout::TELL,
                crate::tell::queue_dir(&self.files.dir).display()
            ));
        }
        self.resume_stalled(&mut state)?;
        Ok((snap, state, accepted))
    }

    /// A project that stalled goes on when a person acted since: guidance queued
    /// with `baton tell`, a feature handed out again (`baton unblock`), features
    /// added or changed (`baton plan`, `baton accept`), `baton.toml` changed, or
    /// `[run] stall_sessions` raised. Otherwise it stays stalled, and the run says how to go on.
    fn resume_stalled(&self, state: &mut State) -> Result<(), HarnessError> {
        let limit = self.cfg.run.stall_sessions;
        if limit == 0 || state.stalled < limit {
            return Ok(());
        }
        let why = crate::tell::acted_since_stall(&self.files, state);
        if let Some(why) = why {
            self.reporter.line(&format!(
                "the project had stalled ({} coding sessions without a newly passing feature); going on: {why}",
                state.stalled
            ));
            state.stalled = 0;
            state.save(&self.files.dir)?;
        }
        Ok(())
    }

    /// An agent CLI's usage limit: wait for its reset between sessions, unless
    /// that is beyond `[run] max_wait_hours` (all waits of the run together) or
    /// `--max-hours` (`limits`), which end the run as a limit; Ctrl-C while
    /// waiting ends it interrupted. `None`: waited, go on.
    async fn wait_out_usage_limit(
        &self,
        state: &mut State,
        message: &str,
        reset_in: Option<Duration>,
        waits: &mut Waits,
        limits: &RunLimits,
    ) -> Result<Option<RunEnd>, HarnessError> {
        let max_wait = Duration::from_secs_f64(self.cfg.run.max_wait_hours * 3600.0);
        let wait = reset_in
            .filter(|d| !d.is_zero())
            .unwrap_or_else(|| baton_agent::retry::probe_delay(&self.cfg.retry, waits.probes));
        waits.probes += u32::from(reset_in.is_none());
        if waits.waited + wait > max_wait {
            return Ok(Some(RunEnd::Limit(format!(
                "the agent CLI's usage limit ({message}) resets in {}, beyond the longest wait allowed ({}; raise [run] max_wait_hours in baton.toml)",
                baton_records::human::wait(wait),
                baton_records::human::wait(max_wait)
            ))));
        }
        if limits.deadline().is_some_and(|d| Instant::now() + wait > d) {
            let max_hours = limits.max_hours;
            return Ok(Some(RunEnd::Limit(format!(
                "--max-hours {max_hours} would pass while waiting {} for the agent CLI's usage limit to reset",
                baton_records::human::wait(wait)
            ))));
        }
        if !self.wait_for_reset(state, message, wait).await? {
            return Ok(Some(RunEnd::Interrupted));
        }
        waits.waited += wait;
        Ok(None)
    }

    async fn run_sessions(&self, block: &BlockTool) -> Result<RunEnd, HarnessError> {
        let mut g = self.going().await?;
        if let Some(end) = self.make_list_in(&mut g, block).await? {
            return Ok(end);
        }
        self.code(&mut g, block).await
    }

    /// The first part of a run, alone: the initializer (tried twice) and the
    /// list-append sessions, until the list baton goes by is made, as a run of
    /// one makes it. A parallel run's coordinator runs this in the project before
    /// it hands out any feature. `Some` when the run ends here (a limit, Ctrl-C).
    pub(crate) async fn make_list(&self) -> Result<Option<RunEnd>, HarnessError> {
        // The initializer's session has the browser a coding session has.
        let hub = self.start_mcp().await?;
        let block = BlockTool::default();
        let made = match self.going().await {
            Ok(mut g) => self.make_list_in(&mut g, &block).await,
            Err(e) => Err(e),
        };
        if let Some(hub) = hub {
            hub.shutdown().await;
        }
        self.forget_snapshot(made.is_ok());
        made
    }

    /// The run as it starts: the project opened, its limits, no session yet.
    async fn going(&self) -> Result<Going, HarnessError> {
        let (snap, state, accepted) = self.open_project().await?;
        let limits = RunLimits::for_project(&self.opts, &self.cfg, &state);
        Ok(Going {
            snap,
            state,
            accepted,
            limits,
            waits: Waits::default(),
            this_run: 0,
        })
    }

    /// Sessions until the list is made: the initializer until one list is
    /// accepted (two tries; the second is told why the first was not), then
    /// list-append sessions while the list is shorter than asked.
    async fn make_list_in(
        &self,
        g: &mut Going,
        block: &BlockTool,
    ) -> Result<Option<RunEnd>, HarnessError> {
        let mut failures = 0u32;
        // An earlier initializer's list was rejected: the next one is told why.
        let mut problem: Option<String> = (g.accepted.is_none()
            && g.state
                .sessions
                .iter()
                .any(|s| s.kind == SessionKind::Initializer))
        .then(|| self.initial_problem());
        if let Some(p) = &problem {
            self.reporter.line(&format!(
                "the last initializer's feature list was not accepted ({p}); running the initializer again"
            ));
        }
        loop {
            // Made: what comes next (a coding session, a limit) is not the list's.
            if let Some(list) = &g.accepted
                && !self.wants_rest(list, &g.state)
            {
                return Ok(None);
            }
            if let Some(end) = self.between_sessions(g).await? {
                return Ok(Some(end));
            }
            if g.accepted.is_some() {
                // The initializer's list is shorter than asked: list-append sessions
                // first, before any coding session.
                self.append_rest(&mut g.state, &g.snap).await?;
                g.accepted = self.files.load_accepted()?;
                g.this_run += 1;
                continue;
            }
            let outcome = self
                .one_session(g, SessionKind::Initializer, problem.as_deref(), block)
                .await?;
            if let Err(end) = outcome {
                return Ok(Some(end));
            }
            if g.accepted.is_none() {
                failures += 1;
                let p = self.initial_problem();
                if failures >= 2 {
                    return Err(HarnessError::Initializer {
                        attempts: failures,
                        problem: p,
                    });
                }
                self.reporter.line(&format!(
                    "initializer did not produce a usable feature list ({p}); trying once more"
                ));
                problem = Some(p);
            }
        }
    }

    /// Coding sessions until the run ends.
    async fn code(&self, g: &mut Going, block: &BlockTool) -> Result<RunEnd, HarnessError> {
        loop {
            if let Some(end) = self.between_sessions(g).await? {
                return Ok(end);
            }
            if let Err(end) = self
                .one_session(g, SessionKind::Coding, None, block)
                .await?
            {
                return Ok(end);
            }
        }
    }

    /// Before each session: the stop rule ("complete" only once every passing
    /// feature's check passed: a regression the time-boxed sweeps did not reach
    /// yet is set back here, and the run goes on), then the pause.
    async fn between_sessions(&self, g: &mut Going) -> Result<Option<RunEnd>, HarnessError> {
        while let Some(end) = g.limits.stop_rule(
            g.accepted.as_ref(),
            &g.state,
            0.0,
            g.this_run,
            true,
            self.stop.is_cancelled(),
        ) {
            let done = matches!(end, RunEnd::Complete | RunEnd::CompleteExceptBlocked(_));
            let last = g.state.sessions.last().map_or(0, |s| s.number);
            if !(done
                && !self.opts.skip_sweep
                && self.sweep_before_complete(last, &mut g.accepted).await?)
            {
                return Ok(Some(end));
            }
        }
        let pause = self
            .opts
            .pause
            .unwrap_or(Duration::from_secs_f64(self.cfg.run.pause_secs));
        if g.this_run > 0 && !pause.is_zero() {
            let paused = std::time::Instant::now();
            let end = tokio::select! {
                () = tokio::time::sleep(pause) => None,
                () = self.stop.cancelled() => Some(RunEnd::Interrupted),
            };
            self.pause_ms.fetch_add(
                paused.elapsed().as_millis() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            if end.is_some() {
                return Ok(end);
            }
        }
        Ok(None)
    }

    /// One session of `kind`, recorded, its branch pushed, and what its error
    /// means for the run: `Err` with how the run ends, `Ok` to go on.
    async fn one_session(
        &self,
        g: &mut Going,
        kind: SessionKind,
        problem: Option<&str>,
        block: &BlockTool,
    ) -> Result<Result<(), RunEnd>, HarnessError> {
        let f = self
            .session(
                kind,
                &g.state,
                problem,
                &mut g.accepted,
                block,
                g.limits.deadline(),
                &g.snap,
            )
            .await?;
        g.this_run += 1;
        let error = f.error;
        let outcome = f.record.outcome;
        let number = f.record.number;
        self.record(&mut g.state, f.record, &f.blocks, &mut g.accepted)?;
        if let Err(e) = self.push_branch(number) {
            self.reporter
                .line(&format!("  push: could not push the branch: {e}"));
        }
        match error {
            None => {}
            // The provider's quota will not be back in time: a limit, not an error.
            Some(AgentError::Model {
                source: e @ baton_agent::client::ModelError::QuotaExhausted { .. },
                ..
            }) => return Ok(Err(RunEnd::Limit(format!("the provider's quota: {e}")))),
            // Cut off by the output limit again and again: this session is lost,
            // the run is not; the next session starts fresh.
            Some(e @ AgentError::Truncated { .. }) => {
                self.reporter
                    .line(&format!("  session ended with an error; going on: {e}"));
            }
            // An agent CLI's usage limit: wait for its reset between sessions.
            Some(AgentError::UsageLimit {
                message, reset_in, ..
            }) => {
                let (state, waits) = (&mut g.state, &mut g.waits);
                if let Some(end) = self
                    .wait_out_usage_limit(state, &message, reset_in, waits, &g.limits)
                    .await?
                {
                    return Ok(Err(end));
                }
            }
            Some(e) => return Err(e.into()),
        }
        // Stopped by the user: not a failed initializer (which would be
        // retried, or end the run as an error at the second).
        if outcome == SessionOutcome::Interrupted {
            return Ok(Err(RunEnd::Interrupted));
        }
        Ok(Ok(()))
    }

    /// [`queue::wants_rest`], with the features `[project] features` asks.
    fn wants_rest(&self, list: &FeatureList, state: &State) -> bool {
        queue::wants_rest(list, state, self.files.names.features)
    }

    /// One list-append session (a planner appending the rest of the spec), and
    /// what it means for the next: covered, more to come, or a failure counted.
    async fn append_rest(&self, state: &mut State, snap: &Snapshot) -> Result<(), HarnessError> {
        let have = self.files.load_accepted()?.map_or(0, |l| l.features.len());
        self.reporter.line(&format!(
            "the list has {have} of the {} features asked: a list-append session continues it",
            self.files.names.features
        ));
        let planned = self.plan_with(&crate::plan::Plan::Rest, snap).await;
        *state = State::load(&self.files.dir)?;
        match planned {
            Ok(p) if p.covered => {
                state.list_covered = true;
                self.reporter.line(&format!(
                    "  the planner says the list covers the spec ({have} features); coding starts"
                ));
            }
            Ok(p) => {
                state.append_failures = 0;
                self.reporter.line(&format!(
                    "  appended {} feature(s): {}",
                    p.added.len(),
                    features(&p.added)
                ));
            }
            Err(HarnessError::Planner(why)) => {
                state.append_failures += 1;
                let last = state.append_failures >= baton_records::state::APPEND_ATTEMPTS;
                self.reporter.line(&format!(
                    "  the list-append session failed: {why}{}",
                    if last {
                        format!("; coding starts with the {have} features listed")
                    } else {
                        String::new()
                    }
                ));
            }
            Err(e) => return Err(e),
        }
        state.save(&self.files.dir)?;
        Ok(())
    }

    /// Before baton's first git command on the project (a run's, a planner's): a
    /// snapshot saved by a run or planner that did not end cleanly puts git's
    /// guarded files back as it found them; then the identity is set up, and what
    /// the agent may not change (git's config, hooks, info; `baton.toml`) is taken
    /// as it is now, in baton's memory and in its state dir (removed when the run
    /// ends cleanly).
    pub(crate) fn guard_start(&self) -> Result<Snapshot, HarnessError> {
        let dir = &self.files.dir;
        // A snapshot saved by a run that did not end cleanly: git's guarded files go
        // back as that run found them before baton's git touches the repository.
        let saved = crate::boundary::saved_path(dir);
        if let Some(old) = Snapshot::load(&saved, dir)? {
            let number = State::load(dir)?.in_progress.map_or(0, |ip| ip.number);
            for u in old.restore_git()? {
                self.reporter.line(&format!(
                    "boundary: {u} after a run that did not end cleanly; restored"
                ));
                self.files.append_ledger(&LedgerEntry {
                    t_ms: now_ms(),
                    session: number,
                    kind: LedgerKind::BoundaryViolation,
                    feature: None,
                    detail: format!(
                        "{u} after a run that did not end cleanly; restored from baton's saved snapshot"
                    ),
                    commit: None,
                    evidence: Vec::new(),
                    proof: None,
                })?;
            }
        }
        git::prepare(dir, &self.cfg.git.user_name, &self.cfg.git.user_email)?;
        self.commit_persons_settings()?;
        // Claude Code's own file tools run outside the binds; Codex runs whole
        // inside them (when they hold for its commands at all).
        let binds = self.kernel_binds
            && match &self.backend {
                Backend::Loop(_) => true,
                Backend::Cli(b) => b.cli.kind().profile().inside_sandbox && b.bubblewrap,
            };
        let snap = Snapshot::take(dir)?.with_kernel_binds(binds);
        snap.save(&saved)?;
        Ok(snap)
    }

    /// A change to `baton.toml` left uncommitted between runs is the person's (no
    /// agent runs then): committed now by baton as theirs, and said, rather than
    /// swept into the agent's first commit without a word. Not while a session
    /// is unfinished (a killed run's): its gates judge what changed.
    fn commit_persons_settings(&self) -> Result<(), HarnessError> {
        let dir = &self.files.dir;
        if git::head(dir).is_none() || State::load(dir)?.in_progress.is_some() {
            return Ok(());
        }
        let dirty = git::git(
            dir,
            &[
                "status",
                "--porcelain=v1",
                "-z",
                "--",
                baton_config::CONFIG_FILE,
            ],
        )?;
        if dirty.is_empty() {
            return Ok(());
        }
        let msg = format!(
            "baton: the person's change to {}, before the run\n\nLeft uncommitted between runs, when no agent runs: committed as the person's, apart from any session's work.",
            baton_config::CONFIG_FILE
        );
        // That file alone, whatever else the index holds.
        let file = baton_config::CONFIG_FILE;
        git::git(dir, &["add", "--", file])?;
        git::git(
            dir,
            &["commit", "-q", "--no-verify", "-m", &msg, "--", file],
        )?;
        let c = git::head(dir).unwrap_or_default();
        self.reporter.line(&format!(
            "committed your change to {file} ({}) before the first session",
            &c[..c.len().min(9)]
        ));
        Ok(())
    }

    /// Wait `wait` for a usage limit to reset, shown live and recorded in the state
    /// (`waiting_until_ms` while it lasts, the session's `waited_ms` after). False when
    /// interrupted.
    async fn wait_for_reset(
        &self,
        state: &mut State,
        message: &str,
        wait: Duration,
    ) -> Result<bool, HarnessError> {
        state.waiting_until_ms = Some(now_ms() + wait.as_millis() as u64);
        state.save(&self.files.dir)?;
        self.observer.wait(
            0,
            &baton_agent::client::RetryNotice {
                attempt: 1,
                max_attempts: 1,
                error: message.to_string(),
                delay: wait,
                long_wait: true,
            },
        );
        let done = tokio::select! {
            () = tokio::time::sleep(wait) => true,
            () = self.stop.cancelled() => false,
        };
        state.waiting_until_ms = None;
        if let Some(last) = state.sessions.last_mut() {
            let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
            last.waited_ms += ms;
            last.timing.wait_after_ms += ms;
        }
        state.save(&self.files.dir)?;
        Ok(done)
    }
}

/// The browser runs outside the sandbox: where the commands have a network of
/// their own, it reaches it (the app a session serves on its own loopback, and
/// the hosts they may reach) through `launcher`'s proxy.
pub fn browser_through(
    specs: &mut [baton_mcp::ServerSpec],
    launcher: Option<&dyn baton_tools::Launcher>,
) {
    let Some(port) = launcher.and_then(baton_tools::Launcher::browser_proxy) else {
        return;
    };
    for s in specs
        .iter_mut()
        .filter(|s| s.name == baton_mcp::PLAYWRIGHT_SERVER)
    {
        s.args
            .push(format!("--proxy-server=http://127.0.0.1:{port}"));
    }
}

/// The MCP servers `cfg` names for the project at `dir`, as baton starts them
/// (outside the sandbox): their program (`npx`) and what it starts (`node`)
/// come from the `PATH` baton trusts ([`baton_policy::helpers`]), never from the
/// project's `node_modules/.bin` or a virtualenv first on the user's.
pub fn mcp_specs(cfg: &baton_config::Config, dir: &std::path::Path) -> Vec<baton_mcp::ServerSpec> {
    let trusted = baton_policy::helpers::trusted_path();
    baton_mcp::specs_from_config(cfg, dir)
        .into_iter()
        .map(|mut s| {
            if let Some(p) = baton_policy::helpers::find(&s.command) {
                s.command = p.display().to_string();
            }
            s.env
                .entry("PATH".to_string())
                .or_insert_with(|| trusted.to_string_lossy().into_owned());
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use baton_agent::session::Outcome;
    use baton_records::SessionOutcome;

    /// A transcript's `session_end` names the agent loop's outcome; the record
    /// must know every one of them, or a session would be recorded as an error.
    #[test]
    fn every_outcome_a_transcript_names_is_a_known_session_outcome() {
        for o in [
            Outcome::Completed,
            Outcome::ContextFull,
            Outcome::MaxTurns,
            Outcome::TokenLimit,
            Outcome::TimeLimit,
            Outcome::BudgetLimit,
            Outcome::Interrupted,
        ] {
            let known = SessionOutcome::from_name(o.name());
            assert_eq!(known.map(SessionOutcome::name), Some(o.name()));
        }
    }
}
