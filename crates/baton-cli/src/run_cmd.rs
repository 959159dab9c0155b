//! `baton new`, `baton run` and `baton status`.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use baton_agent::client::ModelClient;
use baton_agent::pricing::PriceTable;
use baton_config::Config;
use baton_harness::files::Files;
use baton_harness::parallel::{AgentParts, Parallel, Workspace};
use baton_harness::run::{Backend, RunEnd, RunOptions, Runner, RunnerParts};
use indicatif::ProgressDrawTarget;
use tokio_util::sync::CancellationToken;

use crate::live::{Mode, RunView, Start};
use crate::setup::client_config;

/// Where a run records the process groups its tools start, relative to the project.
const PROCESSES_FILE: &str = baton_records::layout::PROCESSES;

/// The model sessions use and how a run shows: `baton run`'s flags, shared with
/// `baton plan` and `baton new --idea`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ModelFlags {
    /// Model provider: anthropic, openai (chat completions), openai-responses (the
    /// OpenAI Responses API), claude-code (an installed Claude Code CLI) or codex (an
    /// installed Codex CLI). A name not among them is refused before anything is
    /// created or run.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(baton_config::PROVIDERS))]
    pub provider: Option<String>,
    /// Model name.
    #[arg(long)]
    pub model: Option<String>,
    /// Plain lines on stderr for sessions, gates and retries only (no progress bars,
    /// no tool calls).
    #[arg(long, conflicts_with = "json")]
    pub quiet: bool,
    /// One JSON event per line on stdout, for programs (schema: docs/report.md; a
    /// planner's `run_end` has `outcome: planned`).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `baton run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The project directory (made by `baton new`, or by another harness of the pattern).
    dir: PathBuf,
    /// Sessions in this run, the initializer included (default: baton.toml [run], else no limit).
    #[arg(long)]
    max_sessions: Option<u32>,
    /// Stop once the project has cost this much in USD. Remembered as the
    /// project's budget for later runs, `baton status` and the report.
    #[arg(long)]
    budget_usd: Option<f64>,
    /// Stop after this many hours of wall time.
    #[arg(long)]
    max_hours: Option<f64>,
    /// Seconds between sessions (default: baton.toml [run] pause_secs, 3).
    #[arg(long)]
    pause: Option<f64>,
    /// The model and how the run shows.
    #[command(flatten)]
    flags: ModelFlags,
    /// Coding agents at once, each in a working copy of its own, merged into the
    /// main branch after the gates and a sweep (default: baton.toml [run] agents, 1).
    /// See docs/parallel.md.
    #[arg(long)]
    agents: Option<u32>,
    /// A git remote shared with baton runs on other machines: claims and the main
    /// branch live there, nothing else is shared (DIR must be a clone of it). See
    /// docs/parallel.md.
    #[arg(long, value_name = "URL")]
    remote: Option<String>,
}

impl RunArgs {
    /// A run of `dir` with every option at its default.
    pub fn for_dir(dir: PathBuf) -> Self {
        Self {
            dir,
            max_sessions: None,
            budget_usd: None,
            max_hours: None,
            pause: None,
            flags: ModelFlags::default(),
            agents: None,
            remote: None,
        }
    }

    /// With this model and output mode.
    pub fn with(mut self, flags: ModelFlags) -> Self {
        self.flags = flags;
        self
    }
}

/// What a `baton run`-like command does once its parts are built.
pub enum What {
    /// Sessions until the project is done (`baton run`).
    Run,
    /// One planner session (`baton plan`, `baton new --idea`).
    Plan(baton_harness::plan::Plan),
}

/// Run `baton run`, holding the project's lock: one run per project.
pub fn run(args: RunArgs, secrets: &crate::secrets::Secrets) -> anyhow::Result<ExitCode> {
    run_what(args, secrets, What::Run)
}

/// Run `what` in `args.dir` as `baton run` would (lock, model, policy, sandbox,
/// live view).
pub fn run_what(
    args: RunArgs,
    secrets: &crate::secrets::Secrets,
    what: What,
) -> anyhow::Result<ExitCode> {
    let dir = crate::setup::project_dir(&args.dir, crate::setup::CREATE_HINT)?;
    let command = match what {
        What::Run => "baton run",
        What::Plan(_) => "baton plan",
    };
    // A directory that is no project is left as it was found, `.baton/` included.
    let records = dir.join(baton_records::layout::DIR);
    let lock_file = dir.join(baton_records::layout::LOCK);
    let had_records = records.exists();
    let lock = baton_harness::lock::ProjectLock::acquire(&dir, command)?;
    if let Some(previous) = &lock.took_over {
        eprintln!(
            "baton: note: the lock of {previous} was left behind (it ended without releasing it); taking over"
        );
    }
    // Before anything loads baton.toml: an agent's change left by a killed run goes.
    let result =
        crate::setup::recover_config(&dir).and_then(|()| run_locked(args, secrets, dir, what));
    lock.release();
    if !had_records && result.is_err() {
        // The lock file goes, then the directory if nothing else was written.
        let _ = std::fs::remove_file(&lock_file);
        let _ = std::fs::remove_dir(&records);
    }
    result
}

/// What `baton run` works with once the project and the model are checked.
struct Prepared<'s> {
    dir: PathBuf,
    cfg: Config,
    files: Files,
    secrets: &'s crate::secrets::Secrets,
    /// The agent CLI, when the provider is one.
    cli: Option<baton_agent::cli_session::CliBackend>,
    /// baton's own loop's model client, otherwise.
    client: Option<ModelClient>,
    prices: PriceTable,
    budget: Option<f64>,
    agents: u32,
    view: Arc<RunView>,
}

fn run_locked(
    args: RunArgs,
    secrets: &crate::secrets::Secrets,
    dir: PathBuf,
    what: What,
) -> anyhow::Result<ExitCode> {
    let p = prepare(&args, secrets, dir)?;
    let runtime = crate::setup::runtime()?;
    runtime.block_on(async {
        stop_leftovers(&p.dir, &p.view).await;
        let run_id = format!(
            "{}-{}",
            std::process::id(),
            baton_agent::transcript::now_ms()
        );
        let processes = Arc::new(baton_tools::ProcessRegistry::recording(
            p.dir.join(PROCESSES_FILE),
            run_id.clone(),
        ));
        // The command policy and OS sandbox, as for `baton exec`, for the whole run.
        // A port of its own, as each agent of a parallel run has: init.sh, the
        // agent's commands and every check agree on where the app listens.
        let (tools, guard) = crate::setup::guarded_tools_with(
            &p.dir,
            &p.cfg,
            Some(Arc::clone(&processes)),
            baton_harness::parallel::agent_env(1),
        )?;
        p.view.println(&start_line(&p));
        if let Some(w) = &guard.warning {
            p.view.println(&format!("baton: warning: {w}"));
        }
        if p.cfg.sandbox.enabled && !baton_policy::sandbox::kernel_binds() {
            p.view.println(&format!(
                "baton: warning: {}",
                crate::doctor_cmd::BWRAP_MISSING
            ));
        }
        let stop = CancellationToken::new();
        on_ctrl_c(&p.view, stop.clone(), tools.context().cancel.clone());
        if (p.agents > 1 || args.remote.is_some()) && matches!(what, What::Run) {
            let main = AgentParts {
                tools: tools.clone(),
                kernel_binds: guard.policy.bubblewrap(),
                policy: Box::new(guard.policy),
                cli: p.cli.clone(),
            };
            return run_parallel(&p, &args, &run_id, &main, stop).await;
        }
        let runner = Runner::new(RunnerParts {
            files: p.files.clone(),
            cfg: p.cfg.clone(),
            backend: Backend::choose(p.cli.clone(), p.client.as_ref())?,
            prices: &p.prices,
            policy: &guard.policy,
            tools: tools.clone(),
            reporter: &*p.view,
        })
        .with_observer(&*p.view)
        .with_stop(stop)
        .with_opts(run_options(&args))
        .with_kernel_binds(guard.policy.bubblewrap());
        enum Ended<'p> {
            Run(Result<RunEnd, baton_harness::HarnessError>),
            Plan(
                &'p baton_harness::plan::Plan,
                Result<baton_harness::plan::Planned, baton_harness::HarnessError>,
            ),
        }
        let ended = match &what {
            What::Run => Ended::Run(runner.run().await),
            What::Plan(plan) => Ended::Plan(plan, runner.plan(plan).await),
        };
        let stopped = tools
            .context()
            .processes
            .shutdown(Duration::from_secs(3))
            .await;
        if stopped > 0 {
            p.view.println(&format!(
                "baton: stopped {stopped} process group(s) started during the run"
            ));
        }
        match ended {
            Ended::Run(result) => finish(&p.view, &p.files, p.budget, result),
            Ended::Plan(plan, planned) => planned_end(&p.view, &p.files, plan, planned),
        }
    })
}

/// The project, the flags and the model checked, and the live view made: what
/// every `baton run` needs before its runtime starts.
fn prepare<'s>(
    args: &RunArgs,
    secrets: &'s crate::secrets::Secrets,
    dir: PathBuf,
) -> anyhow::Result<Prepared<'s>> {
    let cfg = crate::setup::load_config(&dir)?;
    // Read before the secrets are scrubbed from baton's environment (the variable is
    // one of them: the agent never gets it).
    let webhook = crate::notify::webhook(&cfg.notify);
    if args.pause.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
        bail!("--pause must be a non-negative number of seconds");
    }
    let has_list = dir.join(&cfg.project.feature_list).exists()
        || dir.join(baton_records::layout::ACCEPTED).exists();
    if !has_list && !dir.join(&cfg.project.spec).exists() {
        bail!(
            "{} has neither {} nor {}: nothing to build (create a project with `baton new DIR --spec FILE`)",
            dir.display(),
            cfg.project.spec,
            cfg.project.feature_list
        );
    }
    let cli = crate::setup::cli_backend(
        &cfg,
        &dir,
        secrets,
        args.flags.provider.as_deref(),
        args.flags.model.as_deref(),
    )?;
    for line in cli.iter().flat_map(crate::setup::cli_caveats) {
        eprintln!("baton: {line}");
    }
    let agents = args.agents.unwrap_or(cfg.run.agents);
    if agents == 0 {
        bail!("--agents must be at least 1");
    }
    let client = match cli {
        Some(_) => None,
        None => Some(ModelClient::new(client_config(
            &cfg,
            secrets,
            args.flags.provider.as_deref(),
            args.flags.model.as_deref(),
        )?)?),
    };
    let prices = PriceTable::new(&cfg.prices);
    let budget = args.budget_usd.unwrap_or(cfg.run.budget_usd).max(0.0);
    let budget = (budget > 0.0).then_some(budget);
    if let (Some(b), Some(client)) = (budget, &client) {
        refuse_unpriced_budget(b, &client.config().model, &cfg, &prices)?;
    }
    let files = Files::new(dir.clone(), cfg.project.clone());
    let view = live_view(args, &dir, &files, budget, &cfg, webhook)?;
    Ok(Prepared {
        dir,
        cfg,
        files,
        secrets,
        cli,
        client,
        prices,
        budget,
        agents,
        view,
    })
}

/// What the run works with, said once at its start: who plays the agent and with
/// which model, whether its tokens are priced (an unpriced model's costs show as
/// $0, and say so here), the project's kind and browser, the verifier, the budget.
fn start_line(p: &Prepared) -> String {
    let (provider, model) = match (&p.cli, &p.client) {
        (Some(cli), _) => (cli.cli.provider().to_string(), cli.model.clone()),
        (None, Some(c)) => (
            c.config().provider.name().to_string(),
            c.config().model.clone(),
        ),
        (None, None) => ("?".to_string(), "?".to_string()),
    };
    let priced = |m: &str| match p.prices.lookup(m) {
        Some(pr) => format!("${} in, ${} out per million tokens", pr.input, pr.output),
        None => format!("not priced: its costs show as $0 (add [prices.\"{m}\"] to baton.toml)"),
    };
    let verifier = match (p.cfg.verify.agent, p.cfg.verify.model.as_deref()) {
        (false, _) => "no verifier".to_string(),
        (true, None) => "verifier: the same model".to_string(),
        (true, Some(v)) => format!("verifier: {v} ({})", priced(v)),
    };
    let budget = p.budget.map_or("no budget".to_string(), |b| {
        format!("budget {}", baton_records::human::usd(b))
    });
    let browser = if p.cfg.browser.enabled {
        "browser on"
    } else {
        "browser off"
    };
    format!(
        "baton: {provider} · {model} ({}) · a {} project, {browser} · {verifier} · {budget}",
        priced(&model),
        p.cfg.project.kind
    )
}

/// A budget baton cannot count would never stop the run: refuse it up front.
fn refuse_unpriced_budget(
    b: f64,
    model: &str,
    cfg: &Config,
    prices: &PriceTable,
) -> anyhow::Result<()> {
    let verifier = cfg
        .verify
        .agent
        .then_some(cfg.verify.model.as_deref())
        .flatten();
    for m in std::iter::once(model).chain(verifier) {
        if prices.lookup(m).is_none() {
            bail!(
                "a budget of ${b:.2} cannot be counted: model {m:?} has no price, so every session would cost $0 in baton's records. \
                 Add its prices (USD per million tokens) to baton.toml:\n\n[prices.\"{m}\"]\ninput = 3.0\noutput = 15.0\n\n\
                 or run without --budget-usd / [run] budget_usd"
            );
        }
    }
    Ok(())
}

/// The run's view: bars on a terminal, plain lines otherwise (or with
/// `--quiet`), JSON events with `--json`; it starts from the project's standing.
fn live_view(
    args: &RunArgs,
    dir: &Path,
    files: &Files,
    budget: Option<f64>,
    cfg: &Config,
    webhook: Option<String>,
) -> anyhow::Result<Arc<RunView>> {
    let before = baton_harness::status::status(files)?;
    let mode = if args.flags.json {
        Mode::Json
    } else if args.flags.quiet || !std::io::stderr().is_terminal() {
        Mode::Lines {
            quiet: args.flags.quiet,
        }
    } else {
        Mode::Bars
    };
    let mut view = RunView::new(
        mode,
        &Start {
            project: dir.display().to_string(),
            passing: before.passing,
            total: before.total,
            sessions: before.totals.sessions,
            spent_usd: before.totals.cost_usd,
            budget_usd: budget,
        },
        ProgressDrawTarget::stderr(),
        Box::new(std::io::stdout()),
    );
    if let Some(n) = crate::notify::Notifier::new(&cfg.notify, webhook, dir) {
        view = view.with_listener(crate::notify::RunNotices::new(n, dir));
    }
    Ok(Arc::new(view))
}

/// Processes a crashed or killed run left behind (dev servers, long commands)
/// are stopped before this run starts its own.
async fn stop_leftovers(dir: &Path, view: &RunView) {
    let mut left = 0;
    for r in process_records(dir) {
        left += baton_tools::process::stop_leftovers(&r, Duration::from_secs(3)).await;
    }
    if left > 0 {
        view.println(&format!(
            "baton: stopped {left} process group(s) left running by an earlier run that did not end cleanly"
        ));
    }
}

/// The first Ctrl-C cancels `stop` (the current tool call ends, then the run);
/// a second cancels `hard` (running commands are killed).
fn on_ctrl_c(view: &Arc<RunView>, stop: CancellationToken, hard: CancellationToken) {
    let view = Arc::clone(view);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            view.stopping();
            stop.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                view.println("\nbaton: stopping now");
                hard.cancel();
            }
        }
    });
}

/// `baton run --agents N` (or `--remote`): the agents in working copies of
/// their own, `main` the project's own parts (its initializer's session).
async fn run_parallel(
    p: &Prepared<'_>,
    args: &RunArgs,
    run_id: &str,
    main: &AgentParts,
    stop: CancellationToken,
) -> anyhow::Result<ExitCode> {
    let workspace = Copies {
        cfg: &p.cfg,
        main: &p.dir,
        run_id,
        registries: std::sync::Mutex::default(),
        cli: p.cli.is_some().then_some((
            p.secrets,
            args.flags.provider.as_deref(),
            args.flags.model.as_deref(),
        )),
    };
    let parallel = Parallel {
        files: p.files.clone(),
        cfg: p.cfg.clone(),
        agents: p.agents,
        client: p.client.as_ref(),
        prices: &p.prices,
        workspace: &workspace,
        main,
        reporter: &*p.view,
        stop,
        opts: run_options(args),
        remote: args.remote.clone(),
    };
    p.view.println(&format!(
        "baton: {} agents, each in a working copy under {}",
        p.agents,
        p.dir.join(baton_records::layout::AGENTS).display()
    ));
    if let Some(w) = memory_warning(p.agents, p.cfg.browser.enabled, mem_available()) {
        p.view.println(&format!("baton: warning: {w}"));
    }
    let result = parallel.run().await;
    let stopped = workspace.shutdown().await;
    if stopped > 0 {
        p.view.println(&format!(
            "baton: stopped {stopped} process group(s) started during the run"
        ));
    }
    finish(&p.view, &p.files, p.budget, result)
}

/// Say what a planner session did, and give the exit code.
fn planned_end(
    view: &RunView,
    files: &Files,
    plan: &baton_harness::plan::Plan,
    planned: Result<baton_harness::plan::Planned, baton_harness::HarnessError>,
) -> anyhow::Result<ExitCode> {
    let p = match planned {
        Ok(p) => p,
        Err(e) => {
            view.finish(Err(&format!("{e:#}")));
            return Err(e.into());
        }
    };
    let reason = if p.added.is_empty() {
        format!("planner session {:04}", p.number)
    } else {
        format!(
            "planner session {:04} added {}",
            p.number,
            baton_records::human::features(&p.added)
        )
    };
    view.finish_with("planned", 0, reason);
    let dir = files.dir.display();
    match plan {
        baton_harness::plan::Plan::Spec => eprintln!(
            "baton: the planner wrote {} ({}), committed; read and edit it, then `baton run {dir}`",
            files.names.spec,
            baton_records::human::plural(p.spec_lines as u64, "line")
        ),
        baton_harness::plan::Plan::More(_) | baton_harness::plan::Plan::Rest => {
            let list = files.load_accepted()?.unwrap_or_default();
            eprintln!(
                "baton: {} feature(s) added to {} ({}), committed and recorded; {}/{} passing; next: `baton run {dir}`",
                p.added.len(),
                files.names.feature_list,
                baton_records::human::features(&p.added),
                list.passing(),
                list.features.len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Memory one agent may use at its peak: its browser (Chromium with a page), its
/// dev servers and build tools. A guess on the safe side, for a warning only.
const AGENT_MEMORY_MIB: u64 = 1536;
/// The same without a browser.
const AGENT_MEMORY_NO_BROWSER_MIB: u64 = 768;

/// Memory the kernel says is available, in MiB (`MemAvailable`).
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// A warning when `agents` agents (with a browser each when `browser`) would
/// likely need more memory than is available: an agent killed by the kernel's
/// out-of-memory killer loses its session.
fn memory_warning(agents: u32, browser: bool, available_mib: Option<u64>) -> Option<String> {
    let per = if browser {
        AGENT_MEMORY_MIB
    } else {
        AGENT_MEMORY_NO_BROWSER_MIB
    };
    let available = available_mib?;
    let need = per * u64::from(agents);
    if need <= available {
        return None;
    }
    let fit = (available / per).max(1);
    Some(format!(
        "{agents} agents{} may need about {} GiB at their peak, and {} GiB is available; an agent the kernel kills for memory loses its session. Consider --agents {fit}",
        if browser { " with a browser each" } else { "" },
        need.div_ceil(1024),
        available / 1024
    ))
}

/// The run's limits given on the command line.
fn run_options(args: &RunArgs) -> RunOptions {
    RunOptions {
        max_sessions: args.max_sessions,
        budget_usd: args.budget_usd,
        max_hours: args.max_hours,
        pause: args.pause.map(Duration::from_secs_f64),
        ..RunOptions::default()
    }
}

/// Say how the run ended, with the project's status, and give its exit code.
fn finish(
    view: &RunView,
    files: &Files,
    budget: Option<f64>,
    result: Result<RunEnd, baton_harness::HarnessError>,
) -> anyhow::Result<ExitCode> {
    let end = match result {
        Ok(end) => end,
        Err(e) => {
            view.finish(Err(&format!("{e:#}")));
            return Err(e.into());
        }
    };
    view.finish(Ok(&end));
    // baton.toml as the run loaded it (a change by the agent was undone).
    let s = baton_harness::status::status(files)?;
    let why = match &end {
        RunEnd::Complete => "complete: every feature passes".to_string(),
        RunEnd::CompleteExceptBlocked(b) => format!(
            "complete except blocked feature(s) {}: see `baton status`, then `baton unblock DIR N`",
            baton_records::human::features(b)
        ),
        RunEnd::Limit(l) => format!("stopped: {l}"),
        RunEnd::Stalled(n) => format!(
            "stalled: {n} coding sessions in a row without a newly passing feature. To go on, act, then `baton run` again: `baton status` says what failed; `baton tell DIR \"…\"` guides the next session, `baton unblock DIR N` hands a deferred or blocked feature out again, or raise [run] stall_sessions in baton.toml"
        ),
        RunEnd::Interrupted => "interrupted; `baton run` again resumes".to_string(),
    };
    let left = budget
        .map(|b| {
            format!(
                " · {} of {} budget left",
                baton_records::human::usd((b - s.totals.cost_usd).max(0.0)),
                baton_records::human::usd(b)
            )
        })
        .unwrap_or_default();
    eprintln!(
        "baton: {why} · {}/{} passing · {} · ${:.4}{left}",
        s.passing,
        s.total,
        baton_records::human::plural(s.totals.sessions as u64, "session"),
        s.totals.cost_usd
    );
    Ok(ExitCode::from(end.exit_code()))
}

/// The files where runs record the process groups they start: the project's, and
/// one per working copy of a parallel run (`processes.a<k>`).
fn process_records(dir: &Path) -> Vec<PathBuf> {
    let main = dir.join(PROCESSES_FILE);
    let mut out = vec![main.clone()];
    let (Some(parent), Some(name)) = (main.parent(), main.file_name()) else {
        return out;
    };
    let prefix = format!("{}.", name.to_string_lossy());
    if let Ok(rd) = std::fs::read_dir(parent) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                out.push(e.path());
            }
        }
    }
    out
}

/// The working copies of a parallel run: each gets the tools, policy and sandbox
/// `baton run` gives the project, rooted at the copy, with a process registry of
/// its own (recorded in `.baton/processes.a<k>`, so one copy's shutdown never
/// stops another's commands).
struct Copies<'a> {
    cfg: &'a Config,
    main: &'a Path,
    run_id: &'a str,
    registries: std::sync::Mutex<Vec<Arc<baton_tools::ProcessRegistry>>>,
    /// With an agent CLI (provider `claude-code`): the keys and the `--provider`
    /// and `--model` flags each copy's CLI is set up with.
    cli: Option<(
        &'a crate::secrets::Secrets,
        Option<&'a str>,
        Option<&'a str>,
    )>,
}

impl Copies<'_> {
    /// Stop what the copies' commands left running.
    async fn shutdown(&self) -> usize {
        let all = self
            .registries
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default();
        let mut stopped = 0;
        for r in all {
            stopped += r.shutdown(Duration::from_secs(3)).await;
        }
        stopped
    }
}

impl Workspace for Copies<'_> {
    fn parts(
        &self,
        agent: u32,
        dir: &Path,
        env: Vec<(String, String)>,
    ) -> Result<AgentParts, baton_harness::HarnessError> {
        let record = self.main.join(format!("{PROCESSES_FILE}.a{agent}"));
        let processes = Arc::new(baton_tools::ProcessRegistry::recording(
            record,
            self.run_id.to_string(),
        ));
        if let Ok(mut r) = self.registries.lock() {
            r.push(Arc::clone(&processes));
        }
        let (tools, guard) = crate::setup::guarded_tools_with(dir, self.cfg, Some(processes), env)
            .map_err(|e| baton_harness::HarnessError::Agents(format!("{e:#}")))?;
        // The CLI's sandbox, hook configuration and MCP servers belong to the copy.
        let cli = match self.cli {
            Some((secrets, provider, model)) => {
                crate::setup::cli_backend(self.cfg, dir, secrets, provider, model)
                    .map_err(|e| baton_harness::HarnessError::Agents(format!("{e:#}")))?
            }
            None => None,
        };
        Ok(AgentParts {
            tools,
            kernel_binds: guard.policy.bubblewrap(),
            policy: Box::new(guard.policy),
            cli,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::memory_warning;

    #[test]
    fn too_many_agents_for_the_memory_are_warned_about_with_a_number_that_fits() {
        assert_eq!(memory_warning(4, true, Some(16_384)), None);
        let w = memory_warning(8, true, Some(6_144)).unwrap();
        assert!(
            w.contains("8 agents with a browser each may need about 12 GiB"),
            "{w}"
        );
        assert!(w.contains("6 GiB is available"), "{w}");
        assert!(w.ends_with("Consider --agents 4"), "{w}");
        // Without a browser an agent needs less; unknown memory says nothing.
        assert_eq!(memory_warning(8, false, Some(6_144)), None);
        assert_eq!(memory_warning(64, true, None), None);
        assert!(
            memory_warning(3, true, Some(512))
                .unwrap()
                .ends_with("--agents 1")
        );
    }
}
