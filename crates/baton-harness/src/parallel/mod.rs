//! Many agents on one project (`baton run --agents N`), on one machine, with git
//! as the only coordination engine (see `docs/parallel.md`).
//!
//! What it promises:
//! - **Isolation.** Agent `k` works in its own local clone, `.baton/agents/a<k>/`,
//!   on its own branch: its own `.git` (so nothing it writes reaches the project's),
//!   its own `.baton/` records, tools, process registry, policy and sandbox
//!   confinement, browser profile, and `BATON_AGENT`/`PORT` in its commands.
//! - **Claims.** A feature is claimed before a session (`refs/baton/claims/<n>`,
//!   created atomically) and handed to that agent alone; no feature is worked on by
//!   two agents at once. A claim ends with its session; the claims of a killed run
//!   are dropped when the next run starts.
//! - **Integration.** After a session and its gates (the same gates as a run of
//!   one, in the working copy), a flip is merged into the main branch in the
//!   integration worktree, `.baton/integrate/`: the feature list by meaning (main's
//!   list plus the flips, never a textual merge), the progress notes as a union, any
//!   other conflict abandons the merge. Then every passing feature's check runs on
//!   the merged tree, and only if all pass does the main branch move (fast-forward).
//!   Otherwise the feature goes back to the queue (an attempt counted, the reason in
//!   the next brief) and the agent's branch is kept as
//!   `refs/baton/unintegrated/f<n>-s<session>`: nothing an agent committed is lost.
//! - **One record.** Every session is recorded in the project's `state.json` with
//!   its agent and integration, its ledger lines copied to the project's ledger,
//!   its transcript to `.baton/sessions/`; budget, `--max-sessions`,
//!   `--max-hours`, stall detection and exit codes apply to the whole run.
//!
//! Where things are:
//! - `coordinator.rs`: the run's state machine: hand-outs, sessions ending,
//!   batches settling, claims renewed; the stop rule is a run of one's
//!   (`RunLimits::stop_rule`), with the stall limit scaled by the agents.
//! - `claims.rs`: the mainline (the main branch and the claims on its features,
//!   the project's or a shared remote's) behind one trait, `Mainline`.
//! - `agents.rs`: each agent's working copy and thread, and what its copy starts from.
//! - `merge.rs`: the `Integrator`, an owned part: integrating branches into the
//!   main branch (merge, sweep, publish on the mainline, advance).
//! - `settle.rs`: the `Settler`, an owned part: sessions that ended (or that a
//!   killed run left), on their way to the project's record.
//! - `board.rs`: the coordinator's bookkeeping, with no I/O (a unit test each).
//! - `remote.rs`: a git remote shared by machines (`--remote`).
//! - `relay.rs`: the agents' lines and live status, to the run's reporter.

use std::path::Path;
use std::time::Duration;

use baton_agent::client::ModelClient;
use baton_agent::pricing::PriceTable;
use baton_config::Config;
use baton_records::State;
use baton_tools::{ToolGate, Toolbox};
use tokio_util::sync::CancellationToken;

use crate::error::HarnessError;
use crate::files::Files;
use crate::git::{self, git};
use crate::limits::{RunEnd, RunLimits, RunOptions};
use crate::runner::{Backend, Reporter, Runner, RunnerParts};

mod agents;
mod board;
mod claims;
mod coordinator;
mod merge;
mod relay;
pub mod remote;
mod settle;

use agents::CopyDir;
use claims::Mainline;
use coordinator::{Coordinator, Setup};

/// Ports each agent may use: agent `k` gets `PORT = base + (k - 1) * PORT_BLOCK`
/// and the block above it (`BATON_PORT_BLOCK`).
pub const PORT_BLOCK: u16 = 10;
/// The first agent's `PORT`; the integration worktree's checks use the block
/// below it.
pub const PORT_BASE: u16 = 4100;
/// How long a machine with nothing to do waits before looking at the remote again.
const WAIT_FOR_OTHERS: Duration = Duration::from_millis(500);
/// Merges and sweeps of one session before giving up on a remote whose main
/// branch keeps moving.
const PUSH_ATTEMPTS: u32 = 5;

/// The tools and command policy for one working copy.
pub struct AgentParts {
    /// Tools rooted at the working copy (its own process registry).
    pub tools: Toolbox,
    /// The command policy and OS sandbox for the working copy.
    pub policy: Box<dyn ToolGate>,
    /// The agent CLI set up for the working copy (its sandbox, hook and MCP
    /// servers), when the run drives one (provider `claude-code`) instead of
    /// baton's own loop.
    pub cli: Option<baton_agent::cli_session::CliBackend>,
    /// The working copy's commands run under bubblewrap's read-only binds
    /// ([`Runner::with_kernel_binds`]).
    pub kernel_binds: bool,
}

impl AgentParts {
    /// The backend sessions in this copy run on: its agent CLI, else baton's own
    /// loop with `client`.
    fn backend<'c>(&self, client: Option<&'c ModelClient>) -> Result<Backend<'c>, HarnessError> {
        Backend::choose(self.cli.clone(), client)
    }

    /// A runner in `dir` (the project, or a working copy) with these parts.
    pub fn runner<'b>(
        &'b self,
        cfg: &Config,
        dir: &Path,
        client: Option<&'b ModelClient>,
        prices: &'b PriceTable,
        reporter: &'b dyn Reporter,
    ) -> Result<Runner<'b>, HarnessError> {
        Ok(Runner::new(RunnerParts {
            files: Files::new(dir.to_path_buf(), cfg.project.clone()),
            cfg: cfg.clone(),
            backend: self.backend(client)?,
            prices,
            policy: &*self.policy,
            tools: self.tools.clone(),
            reporter,
        })
        .with_kernel_binds(self.kernel_binds))
    }
}

/// Makes the tools and policy of a working copy: what `baton run` builds for the
/// project directory, for another directory.
pub trait Workspace: Send + Sync {
    /// The parts for agent `agent` (0 for the integration worktree) in `dir`, whose
    /// commands get `env` as well.
    fn parts(
        &self,
        agent: u32,
        dir: &Path,
        env: Vec<(String, String)>,
    ) -> Result<AgentParts, HarnessError>;
}

/// The environment of agent `agent`'s commands: its number and port block.
pub fn agent_env(agent: u32) -> Vec<(String, String)> {
    let base = u32::from(PORT_BASE) + agent.saturating_sub(1) * u32::from(PORT_BLOCK);
    let base = if agent == 0 {
        u32::from(PORT_BASE - PORT_BLOCK)
    } else {
        base
    };
    vec![
        ("BATON_AGENT".into(), agent.to_string()),
        ("PORT".into(), base.to_string()),
        (
            "BATON_PORT_BLOCK".into(),
            format!("{base}-{}", base + u32::from(PORT_BLOCK) - 1),
        ),
    ]
}

/// One `baton run --agents N`, built from [`ParallelParts`] ([`Parallel::new`]).
pub struct Parallel<'a> {
    /// The project's files (the main working tree).
    pub(crate) files: Files,
    /// Settings.
    pub(crate) cfg: Config,
    /// How many agents work at once.
    pub(crate) agents: u32,
    /// The model client every agent's loop uses; `None` when every copy's parts
    /// carry an agent CLI.
    pub(crate) client: Option<&'a ModelClient>,
    /// Prices.
    pub(crate) prices: &'a PriceTable,
    /// Builds each working copy's tools and policy.
    pub(crate) workspace: &'a dyn Workspace,
    /// The project's own tools and policy (the initializer's session).
    pub(crate) main: &'a AgentParts,
    /// Run-level lines (each agent's are prefixed with it).
    pub(crate) reporter: &'a dyn Reporter,
    /// Cancelled on Ctrl-C: every agent finishes its tool call and stops.
    pub(crate) stop: CancellationToken,
    /// Command-line limits, for the whole run.
    pub(crate) opts: RunOptions,
    /// A git remote shared with baton runs on other machines (`--remote URL`):
    /// claims and the main branch live there.
    pub(crate) remote: Option<String>,
}

/// What every parallel run needs; the rest has defaults ([`Parallel::new`]).
pub struct ParallelParts<'a> {
    /// The project's files (the main working tree).
    pub files: Files,
    /// Settings.
    pub cfg: Config,
    /// How many agents work at once.
    pub agents: u32,
    /// The model client every agent's loop uses; `None` when every copy's parts
    /// carry an agent CLI.
    pub client: Option<&'a ModelClient>,
    /// Prices.
    pub prices: &'a PriceTable,
    /// Builds each working copy's tools and policy.
    pub workspace: &'a dyn Workspace,
    /// The project's own tools and policy (the initializer's session).
    pub main: &'a AgentParts,
    /// Run-level lines (each agent's are prefixed with it).
    pub reporter: &'a dyn Reporter,
    /// Cancelled on Ctrl-C: every agent finishes its tool call and stops.
    pub stop: CancellationToken,
    /// Command-line limits, for the whole run.
    pub opts: RunOptions,
}

impl<'a> Parallel<'a> {
    /// A run of `parts`, with no remote ([`Parallel::with_remote`] gives one).
    pub fn new(parts: ParallelParts<'a>) -> Self {
        Self {
            files: parts.files,
            cfg: parts.cfg,
            agents: parts.agents,
            client: parts.client,
            prices: parts.prices,
            workspace: parts.workspace,
            main: parts.main,
            reporter: parts.reporter,
            stop: parts.stop,
            // One clock for the run: its initializer, its coordinator and every
            // agent's session go by the hours from here.
            opts: RunOptions {
                started: parts
                    .opts
                    .started
                    .or_else(|| Some(std::time::Instant::now())),
                ..parts.opts
            },
            remote: None,
        }
    }

    /// Claims and the main branch on the shared git `remote` (`--remote URL`).
    #[must_use]
    pub fn with_remote(mut self, remote: Option<String>) -> Self {
        self.remote = remote;
        self
    }
}

impl Parallel<'_> {
    fn runner<'b>(
        &'b self,
        dir: &Path,
        parts: &'b AgentParts,
        reporter: &'b dyn Reporter,
        opts: RunOptions,
        stop: CancellationToken,
    ) -> Result<Runner<'b>, HarnessError> {
        Ok(parts
            .runner(&self.cfg, dir, self.client, self.prices, reporter)?
            .with_opts(opts)
            .with_stop(stop))
    }

    /// Run the agents until every feature passes or a stop condition holds: the
    /// initializer (and list-append sessions) in the project first, then stale
    /// claims dropped and what a killed run left settled, then the coordinator.
    pub async fn run(&self) -> Result<RunEnd, HarnessError> {
        let remote = match &self.remote {
            Some(url) => Some(self.open_remote(url)?),
            None => None,
        };
        let mut handed = 0u32;
        if let Some(end) = self.initialize(remote.as_ref(), &mut handed).await? {
            return Ok(end);
        }
        let local = claims::Local {
            dir: self.files.dir.clone(),
        };
        let mainline: &dyn Mainline = match &remote {
            Some(r) => r,
            None => &local,
        };
        mainline.drop_stale(self.reporter)?;
        let agents = self.agents(self.agents.max(1))?;
        let integrate = self
            .workspace
            .parts(0, &self.integration_tree()?, agent_env(0))?;
        let settler = settle::Settler {
            integrator: merge::Integrator {
                run: self,
                parts: &integrate,
                mainline,
            },
        };
        settler.recover(&agents).await?;
        let copies = CopyDir::of(&agents);
        let setup = Setup {
            mainline,
            copies: &copies,
            integrate: &integrate,
            agents,
            limits: self.limits()?,
            handed,
            numbers: baton_records::SessionNumbers::open(&self.files.dir)?,
        };
        Coordinator::new(self, setup).drive().await
    }

    /// Before a parallel run says "complete": every passing feature's check on
    /// the main branch in the project itself, with no time box (the merge sweeps
    /// are time-boxed, so a check they did not reach runs here), and what broke set
    /// back in a commit of baton's, pushed to the shared remote where there is
    /// one. `true` when something was set back (or the remote moved meanwhile):
    /// not complete, the coordinator looks again.
    async fn sweep_before_complete(&self, mainline: &dyn Mainline) -> Result<bool, HarnessError> {
        let dir = &self.files.dir;
        let runner = self.runner(
            dir,
            self.main,
            self.reporter,
            self.opts.clone(),
            self.stop.clone(),
        )?;
        let before = git::own_head(dir)?;
        let mut accepted = self.files.load_accepted()?;
        let kept = accepted.clone();
        let last = State::load(dir)?.sessions.last().map_or(0, |s| s.number);
        let broke = runner.sweep_before_complete(last, &mut accepted).await;
        // What the start script ran for the checks stops here, as after a merge's sweep.
        let processes = &self.main.tools.context().processes;
        processes.shutdown(std::time::Duration::from_secs(3)).await;
        if !broke? {
            return Ok(false);
        }
        if !mainline.publish(&git::own_head(dir)?)? {
            // Another machine integrated first: this set-back is not published, and
            // the check runs again on the main branch with its work.
            self.reporter.line(
                "the shared remote's main branch moved during the sweep: the set-back is withdrawn and the sweep runs again on the new main branch",
            );
            git(dir, &["reset", "-q", "--hard", &before])?;
            if let Some(list) = &kept {
                self.files.save_accepted(list)?;
            }
        }
        Ok(true)
    }

    /// The list a run of one would make, made in the project itself: the
    /// initializer (tried twice) and the list-append sessions, with the run's
    /// options (`--max-sessions` counts them). `Some` when the run ends here.
    pub(super) async fn make_list(&self, handed: &mut u32) -> Result<Option<RunEnd>, HarnessError> {
        let dir = &self.files.dir;
        let before = State::load(dir)?.sessions.len();
        let made = self
            .runner(
                dir,
                self.main,
                self.reporter,
                self.opts.clone(),
                self.stop.clone(),
            )?
            .make_list()
            .await;
        let after = State::load(dir)?.sessions.len();
        *handed += u32::try_from(after.saturating_sub(before)).unwrap_or(u32::MAX);
        made
    }

    /// The feature list to go by: taken from the remote, or made in the project
    /// as a run of one makes it ([`Self::make_list`]). `Some` when the run ends
    /// here.
    async fn initialize(
        &self,
        remote: Option<&remote::Remote>,
        handed: &mut u32,
    ) -> Result<Option<RunEnd>, HarnessError> {
        match remote {
            Some(r) => {
                let end = self.initialize_shared(r).await?;
                if end.is_none() {
                    *handed += u32::from(self.ran_initializer()?);
                }
                Ok(end)
            }
            None => self.make_list(handed).await,
        }
    }

    /// The run's limits as a run of one judges them, so that a copy's runner,
    /// which starts from the project's record, never stops before its session: a
    /// budget given on the command line is the project's from now on, and the
    /// project's is the one to go by when none is given.
    fn limits(&self) -> Result<RunLimits, HarnessError> {
        let main = &self.files.dir;
        let mut state = State::load(main)?;
        if RunLimits::record_budget(&self.opts, &mut state, self.cfg.run.budget_usd) {
            state.save(main)?;
        }
        let mut limits = RunLimits::for_project(&self.opts, &self.cfg, &state);
        limits.stall = self.stall_limit();
        Ok(limits)
    }

    /// The stall rule's limit (0: none): coding sessions in a row, in the order
    /// they are settled and across the agents, without a newly passing feature (a
    /// merged flip), counted as a run of one counts them (`queue::count_stall`):
    /// `stall_sessions` for each agent working at once, so a run of one's
    /// `stall_sessions` when N is 1 (docs/parallel.md, "One record").
    fn stall_limit(&self) -> u32 {
        self.cfg
            .run
            .stall_sessions
            .saturating_mul(self.agents.max(1))
    }
}
