//! `baton new`, `baton run` and `baton status`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use baton_agent::client::ModelClient;
use baton_agent::pricing::PriceTable;
use baton_config::Config;
use baton_harness::files::Files;
use baton_harness::run::{Reporter, RunOptions, Runner};
use baton_tools::{AllowAll, ToolContext, Toolbox};
use tokio_util::sync::CancellationToken;

use crate::exec::client_config;
use crate::live::LiveView;

/// Arguments of `baton run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The project directory (made by `baton new`, or by another harness of the pattern).
    dir: PathBuf,
    /// Sessions in this run, the initializer included (default: baton.toml [run], else no limit).
    #[arg(long)]
    max_sessions: Option<u32>,
    /// Stop once the project has cost this much in USD.
    #[arg(long)]
    budget_usd: Option<f64>,
    /// Stop after this many hours of wall time.
    #[arg(long)]
    max_hours: Option<f64>,
    /// Seconds between sessions (default: baton.toml [run] pause_secs, 3).
    #[arg(long)]
    pause: Option<f64>,
    /// Model provider: anthropic or openai.
    #[arg(long)]
    provider: Option<String>,
    /// Model name.
    #[arg(long)]
    model: Option<String>,
}

struct Lines;

impl Reporter for Lines {
    fn line(&self, text: &str) {
        eprintln!("{text}");
    }
}

fn project_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    if !dir.is_dir() {
        bail!(
            "{} is not a directory (create a project with `baton new DIR --spec FILE`)",
            dir.display()
        );
    }
    dir.canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))
}

/// Run `baton run`.
pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let dir = project_dir(&args.dir)?;
    let cfg = Config::load(&dir)?;
    if args.pause.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
        bail!("--pause must be a non-negative number of seconds");
    }
    let has_list = dir.join(&cfg.project.feature_list).exists()
        || dir.join(".baton/accepted_feature_list.json").exists();
    if !has_list && !dir.join(&cfg.project.spec).exists() {
        bail!(
            "{} has neither {} nor {}: nothing to build (create a project with `baton new DIR --spec FILE`)",
            dir.display(),
            cfg.project.spec,
            cfg.project.feature_list
        );
    }
    let client = ModelClient::new(client_config(
        &cfg,
        args.provider.as_deref(),
        args.model.as_deref(),
    )?)?;
    let prices = PriceTable::new(&cfg.prices);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let tools = Toolbox::new(ToolContext::new(dir.clone()));
        let hard = tools.context().cancel.clone();
        let stop = CancellationToken::new();
        let signal_stop = stop.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!(
                    "\nbaton: stopping after the current tool call (Ctrl-C again to stop now)"
                );
                signal_stop.cancel();
                if tokio::signal::ctrl_c().await.is_ok() {
                    eprintln!("\nbaton: stopping now");
                    hard.cancel();
                }
            }
        });
        let policy = AllowAll;
        let runner = Runner {
            files: Files::new(dir.clone(), cfg.project.clone()),
            cfg,
            client: &client,
            prices: &prices,
            policy: &policy,
            observer: &LiveView,
            reporter: &Lines,
            tools: tools.clone(),
            stop,
            opts: RunOptions {
                max_sessions: args.max_sessions,
                budget_usd: args.budget_usd,
                max_hours: args.max_hours,
                pause: args.pause.map(Duration::from_secs_f64),
            },
        };
        let result = runner.run().await;
        let stopped = tools
            .context()
            .processes
            .shutdown(Duration::from_secs(3))
            .await;
        if stopped > 0 {
            eprintln!("baton: stopped {stopped} process group(s) started during the run");
        }
        let end = result?;
        let files = Files::new(dir.clone(), Config::load(&dir)?.project);
        let s = baton_harness::status::status(&files)?;
        let why = match &end {
            baton_harness::run::RunEnd::Complete => "complete: every feature passes".to_string(),
            baton_harness::run::RunEnd::Limit(l) => format!("stopped: {l}"),
            baton_harness::run::RunEnd::Stalled(n) => {
                format!("stalled: {n} coding sessions in a row without a newly passing feature")
            }
            baton_harness::run::RunEnd::Interrupted => {
                "interrupted; `baton run` again resumes".to_string()
            }
        };
        eprintln!(
            "baton: {why} · {}/{} passing · {} sessions · ${:.4}",
            s.passing, s.total, s.totals.sessions, s.totals.cost_usd
        );
        Ok(ExitCode::from(end.exit_code()))
    })
}

/// Run `baton new`.
pub fn new(dir: &Path, spec: &Path, features: u32, force: bool) -> anyhow::Result<()> {
    baton_harness::new::create(dir, spec, features, force)?;
    eprintln!(
        "baton: created {} ({} features targeted); next: `baton run {}`",
        dir.display(),
        features,
        dir.display()
    );
    Ok(())
}

/// Run `baton status`.
pub fn status(dir: &Path, json: bool) -> anyhow::Result<()> {
    let dir = project_dir(dir)?;
    let cfg = Config::load(&dir)?;
    let s = baton_harness::status::status(&Files::new(dir, cfg.project))?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&s).context("encode status")?
        );
    } else {
        print!("{}", baton_harness::status::render(&s));
    }
    Ok(())
}
