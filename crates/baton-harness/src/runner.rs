//! One `baton run` over a project: its parts ([`Runner`], built from
//! [`RunnerParts`]), what runs its sessions ([`Backend`]) and who hears of its
//! progress ([`Reporter`]). The loop is in `run.rs`; a session's start,
//! finish and record in `session.rs`; a flip's proof in `proof.rs`; the list baton
//! goes by in `list.rs`; the planner in `plan/`. Those are `impl Runner`; this
//! module depends on none of them.

use std::time::Duration;

use baton_agent::cli_session::CliBackend;
use baton_agent::client::ModelClient;
use baton_agent::pricing::PriceTable;
use baton_agent::session::Observer;
use baton_config::Config;
use baton_records::{CheckRun, FeatureList, SessionKind, SessionRecord};
use baton_tools::{ToolGate, Toolbox};
use tokio_util::sync::CancellationToken;

use crate::checks::{Checker, Sweep, Sweeper};
use crate::error::HarnessError;
use crate::files::Files;
use crate::limits::RunOptions;

/// Told about the run's progress, for the terminal.
pub trait Reporter: Send + Sync {
    /// One line for people.
    fn line(&self, text: &str);
    /// A session is starting (its `line` is also sent).
    fn session_start(&self, _number: u32, _kind: SessionKind) {}
    /// A session was recorded, gates included; `passing` of `total` features pass now.
    fn session_end(&self, _record: &SessionRecord, _passing: usize, _total: usize) {}
    /// In a parallel run: what agent `agent` is doing now, in a few words (its
    /// feature, turn, tokens, the tool it runs).
    fn agent_status(&self, _agent: u32, _status: &str) {}
    /// In a parallel run: agent `agent`'s session waits out a quota until its reset
    /// (a run of one tells its session's observer instead).
    fn agent_waits(&self, _agent: u32, _notice: &baton_agent::client::RetryNotice) {}
}

/// What runs the sessions.
#[expect(
    clippy::large_enum_variant,
    reason = "one value per run, never copied around"
)]
pub enum Backend<'a> {
    /// baton's own agent loop, with this model client.
    Loop(&'a ModelClient),
    /// An agent CLI (provider `claude-code` or `codex`); baton's rules apply through
    /// its hook.
    Cli(CliBackend),
}

impl<'a> Backend<'a> {
    /// The one place the backend is chosen: the agent CLI when the provider is
    /// one (`cli`), else baton's own loop with `client`.
    pub fn choose(
        cli: Option<CliBackend>,
        client: Option<&'a ModelClient>,
    ) -> Result<Self, HarnessError> {
        match (cli, client) {
            (Some(cli), _) => Ok(Backend::Cli(cli)),
            (None, Some(c)) => Ok(Backend::Loop(c)),
            (None, None) => Err(HarnessError::Input(
                "neither a model client nor an agent CLI to run sessions with".into(),
            )),
        }
    }
}

/// One `baton run` over a project.
pub struct Runner<'a> {
    /// Project files.
    pub(crate) files: Files,
    /// Settings.
    pub(crate) cfg: Config,
    /// What runs the sessions.
    pub(crate) backend: Backend<'a>,
    /// Prices.
    pub(crate) prices: &'a PriceTable,
    /// The command policy, behind the feature-list guard.
    pub(crate) policy: &'a dyn ToolGate,
    /// Live view of sessions.
    pub(crate) observer: &'a dyn Observer,
    /// Run-level lines.
    pub(crate) reporter: &'a dyn Reporter,
    /// The tools; one process registry for the run, so dev servers live across sessions.
    pub(crate) tools: Toolbox,
    /// Cancelled on the first Ctrl-C: finish the current tool call, then stop.
    pub(crate) stop: CancellationToken,
    /// Command-line limits.
    pub(crate) opts: RunOptions,
    /// The agent's commands run under bubblewrap's read-only binds of git's
    /// guarded files and `baton.toml` ([`Runner::with_kernel_binds`]).
    pub(crate) kernel_binds: bool,
    /// Where its sessions' numbers come from ([`Runner::with_numbers`]); the
    /// project's own record when `None`.
    pub(crate) numbers: Option<baton_records::SessionNumbers>,
    /// The sweeps before "complete" so far, in ms (outside every session's clock).
    /// The pauses between this run's sessions, in ms.
    pub(crate) pause_ms: std::sync::atomic::AtomicU64,
    pub(crate) complete_sweep_ms: std::sync::atomic::AtomicU64,
    /// The branch the run publishes, fixed when the run starts
    /// ([`Runner::run_branch`]).
    pub(crate) run_branch: std::sync::OnceLock<String>,
}

/// What every runner needs; the rest has defaults ([`Runner::new`]).
pub struct RunnerParts<'a> {
    /// Project files.
    pub files: Files,
    /// Settings.
    pub cfg: Config,
    /// What runs the sessions ([`Backend::choose`]).
    pub backend: Backend<'a>,
    /// Prices.
    pub prices: &'a PriceTable,
    /// The command policy.
    pub policy: &'a dyn ToolGate,
    /// The tools.
    pub tools: Toolbox,
    /// Run-level lines.
    pub reporter: &'a dyn Reporter,
}

impl<'a> Runner<'a> {
    /// A runner of `parts`, observed by nobody, stopped by nothing, with the
    /// limits of `baton.toml`; the `with_` methods change those.
    pub fn new(parts: RunnerParts<'a>) -> Self {
        crate::git::set_timeout(parts.cfg.git.timeout_secs);
        Self {
            files: parts.files,
            cfg: parts.cfg,
            backend: parts.backend,
            prices: parts.prices,
            policy: parts.policy,
            observer: &baton_agent::session::Quiet,
            reporter: parts.reporter,
            tools: parts.tools,
            stop: CancellationToken::new(),
            opts: RunOptions::default(),
            kernel_binds: false,
            numbers: None,
            complete_sweep_ms: std::sync::atomic::AtomicU64::new(0),
            pause_ms: std::sync::atomic::AtomicU64::new(0),
            run_branch: std::sync::OnceLock::new(),
        }
    }

    /// Number sessions from `numbers` (a parallel run's agents share the
    /// project's), not from the record of the directory the runner works in.
    #[must_use]
    pub fn with_numbers(mut self, numbers: baton_records::SessionNumbers) -> Self {
        self.numbers = Some(numbers);
        self
    }

    /// The transcript of a new session, numbered by the project's records (a
    /// number handed out already, for an agent's session, when `given`).
    pub(crate) fn new_transcript(
        &self,
        given: Option<u32>,
    ) -> Result<baton_agent::transcript::Transcript, crate::HarnessError> {
        new_transcript(&self.files.dir, self.numbers.as_ref(), given)
    }

    /// Whether the agent's commands run under bubblewrap's read-only binds
    /// (`SandboxLauncher::bubblewrap`; default no): recorded in the snapshot a
    /// run saves, so that after a crash a changed `baton.toml` is known to be the
    /// user's edit only where nothing the agent ran could write it
    /// ([`crate::boundary::ConfigVerdict`]).
    #[must_use]
    pub fn with_kernel_binds(mut self, binds: bool) -> Self {
        self.kernel_binds = binds;
        self
    }

    /// Sessions shown to `observer` as they go.
    #[must_use]
    pub fn with_observer(mut self, observer: &'a dyn Observer) -> Self {
        self.observer = observer;
        self
    }

    /// Stopped (after the current tool call) when `stop` is cancelled.
    #[must_use]
    pub fn with_stop(mut self, stop: CancellationToken) -> Self {
        self.stop = stop;
        self
    }

    /// The command line's limits and options.
    #[must_use]
    pub fn with_opts(mut self, opts: RunOptions) -> Self {
        self.opts = opts;
        self
    }
}

impl Runner<'_> {
    /// The checker for verify commands, through the run's tools and policy.
    pub(crate) fn checker(&self) -> Checker<'_> {
        Checker::for_project(&self.tools, self.policy, &self.cfg, &self.files.dir)
    }

    /// The regression sweep before session `number` ([`Sweeper::sweep`]):
    /// time-boxed by `sweep_secs`, at most `sweep_checks` checks.
    pub(crate) async fn sweep(
        &self,
        number: u32,
        accepted: &mut Option<FeatureList>,
    ) -> Result<Option<CheckRun>, HarnessError> {
        let budget = Duration::from_secs(self.cfg.verify.sweep_secs.max(1));
        self.sweeper(&|l| self.reporter.line(l))
            .sweep(Sweep::Before(number), accepted, Some(budget))
            .await
    }

    /// Before the run says "complete": every passing feature's check, with no
    /// time box (a regression the time-boxed sweeps have not reached yet is found
    /// here). `true` when something broke and was set back: not complete.
    pub(crate) async fn sweep_before_complete(
        &self,
        last: u32,
        accepted: &mut Option<FeatureList>,
    ) -> Result<bool, HarnessError> {
        let started = std::time::Instant::now();
        let run = self
            .sweeper(&|l| self.reporter.line(l))
            .sweep(Sweep::Complete(last), accepted, None)
            .await;
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.complete_sweep_ms
            .fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
        let run = run?;
        Ok(run.is_some_and(|r| !r.failed.is_empty()))
    }

    fn sweeper<'s>(&'s self, say: &'s (dyn Fn(&str) + Sync)) -> Sweeper<'s> {
        Sweeper {
            checker: self.checker(),
            files: &self.files,
            most: self.cfg.verify.sweep_checks as usize,
            skip_unchanged: self.cfg.verify.skip_unchanged,
            say,
        }
    }
}

/// The transcript of a new session in `project`, numbered `given` or the next of
/// `numbers` (the project's own record when `None`); a number past it, when a
/// file was in the way, is kept on record too.
pub fn new_transcript(
    project: &std::path::Path,
    numbers: Option<&baton_records::SessionNumbers>,
    given: Option<u32>,
) -> Result<baton_agent::transcript::Transcript, crate::HarnessError> {
    let numbers = match numbers {
        Some(n) => n.clone(),
        None => baton_records::SessionNumbers::open(project)?,
    };
    let number = match given {
        Some(n) => n,
        None => numbers.take()?,
    };
    let t = baton_agent::transcript::Transcript::create(project, number)?;
    if t.number() != number {
        numbers.saw(t.number())?;
    }
    Ok(t)
}
