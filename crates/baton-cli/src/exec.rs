//! `baton exec`: one agent session, no gates.

use baton_harness::prompts::{Setting, Toolset};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use baton_agent::cli_session::CliBackend;
use baton_agent::client::ModelClient;
use baton_agent::pricing::PriceTable;
use baton_agent::session::{Limits, Outcome, Session};
use baton_agent::transcript::Transcript;
use baton_config::Config;

use crate::live::LiveView;

/// Arguments of `baton exec`.
#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// The project directory the agent works in.
    dir: PathBuf,
    /// The task for the agent.
    #[arg(long)]
    prompt: String,
    /// Model provider: anthropic, openai (chat completions), openai-responses (the
    /// OpenAI Responses API), claude-code (an installed Claude Code CLI) or codex (an
    /// installed Codex CLI).
    #[arg(long)]
    provider: Option<String>,
    /// Model name (default: baton.toml, else the provider's default).
    #[arg(long)]
    model: Option<String>,
    /// Most model turns in the session (default: baton.toml [agent] max_turns, 200).
    #[arg(long)]
    max_turns: Option<u32>,
}

/// `baton exec`'s system prompt: who the agent is, then baton's working practices.
fn system_prompt(dir: &Path, cfg: &Config, setting: Setting) -> String {
    format!(
        "You are an expert software engineer working alone in a project directory on a Linux machine: {}.\n\n{}",
        dir.display(),
        baton_harness::prompts::practices(&cfg.project, setting)
    )
}

/// Run `baton exec`.
pub fn run(args: ExecArgs, secrets: &crate::secrets::Secrets) -> anyhow::Result<ExitCode> {
    let dir = crate::setup::project_dir(&args.dir, "")?;
    let cfg = crate::setup::load_config(&dir)?;
    let backend = crate::setup::cli_backend(
        &cfg,
        &dir,
        secrets,
        args.provider.as_deref(),
        args.model.as_deref(),
    )?;
    // git's config and hooks and baton.toml as they were: a session may not leave
    // a change there for the user's own git, or the next run, to trust.
    let guarded = Guarded::take(&dir);
    // The agent's home starts empty, as every session of a run does: nothing an
    // earlier session or exec left there is read again.
    if let Err(e) = baton_policy::sandbox::clean_home(&dir) {
        eprintln!(
            "baton: warning: cannot empty the agent's home ({e}); what the last session left there stays"
        );
    }
    if let Some(backend) = backend {
        for line in crate::setup::cli_caveats(&backend) {
            eprintln!("baton: {line}");
        }
        let code = run_cli(&dir, &cfg, &backend, &args);
        guarded.restore();
        return code;
    }
    let client = ModelClient::new(crate::setup::client_config(
        &cfg,
        secrets,
        args.provider.as_deref(),
        args.model.as_deref(),
    )?)?;
    let limits = limits(&cfg, &args);
    let prices = PriceTable::new(&cfg.prices);
    let runtime = crate::setup::runtime()?;
    runtime.block_on(async {
        // The parts a run assembles for its project, without an agent CLI.
        let (parts, warning) = crate::setup::dir_parts(&dir, &cfg, None, Vec::new(), None)?;
        let tools = parts.tools.clone();
        if let Some(w) = &warning {
            eprintln!("baton: warning: {w}");
        }
        // MCP servers of baton.toml and the browser: their tools join the built-in ones.
        let mut specs = baton_harness::run::mcp_specs(&cfg, &dir);
        baton_harness::run::browser_through(&mut specs, tools.context().launcher.as_deref());
        let hub = baton_mcp::McpHub::start(specs).await?;
        tools.attach(hub.clone());
        let cancel = tools.context().cancel.clone();
        on_ctrl_c(cancel);
        let mut transcript = baton_harness::run::new_transcript(&dir, None, None)?;
        let system = system_prompt(
            &dir,
            &cfg,
            Setting {
                tools: Toolset::Own,
                bubblewrap: parts.kernel_binds,
            },
        );
        let reach = baton_harness::guard::ReachGate {
            inner: &*parts.policy,
            allow_file_urls: cfg.policy.allow_file_urls,
        };
        let session = Session {
            client: &client,
            tools: &tools,
            gate: &reach,
            observer: &LiveView,
            prices: &prices,
            limits,
        };
        let result = session.run(&mut transcript, &system, &args.prompt).await;
        hub.shutdown().await;
        let stopped = tools
            .context()
            .processes
            .shutdown(Duration::from_secs(2))
            .await;
        if stopped > 0 {
            eprintln!("baton: stopped {stopped} background process group(s) left by the session");
        }
        guarded.restore();
        finish(&dir, &transcript, result)
    })
}

/// The files baton guards (git's config, hooks and info, `baton.toml`) as they were
/// before the session; where bubblewrap binds them read-only there is nothing to
/// undo, and without it (Landlock alone) this puts back what the session changed.
struct Guarded(Option<baton_harness::boundary::Snapshot>);

impl Guarded {
    fn take(dir: &Path) -> Self {
        match baton_harness::boundary::Snapshot::take(dir) {
            Ok(s) => Self(Some(s)),
            Err(e) => {
                eprintln!(
                    "baton: warning: cannot record git's config and hooks before the session ({e}); what it changes there stays"
                );
                Self(None)
            }
        }
    }

    /// Put back what the session changed, and say what that was.
    fn restore(&self) {
        let Some(s) = &self.0 else { return };
        match s.restore() {
            Ok(changed) if changed.is_empty() => {}
            Ok(changed) => eprintln!(
                "baton: the session changed what baton guards; put back as it was: {}",
                changed.join("; ")
            ),
            Err(e) => eprintln!("baton: warning: cannot put back git's config and hooks: {e}"),
        }
    }
}

/// The session limits of `baton exec`.
fn limits(cfg: &Config, args: &ExecArgs) -> Limits {
    Limits::from_config(&cfg.agent, args.max_turns.unwrap_or(cfg.agent.max_turns))
}

/// Cancel `cancel` on Ctrl-C; exit at once on a second one.
fn on_ctrl_c(cancel: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("\nbaton: interrupted; stopping the session (Ctrl-C again to quit at once)");
            cancel.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
}

/// `baton exec` through an agent CLI: baton's rules apply through its hook.
fn run_cli(
    dir: &Path,
    cfg: &Config,
    backend: &CliBackend,
    args: &ExecArgs,
) -> anyhow::Result<ExitCode> {
    let prices = PriceTable::new(&cfg.prices);
    let runtime = crate::setup::runtime()?;
    runtime.block_on(async {
        let stop = tokio_util::sync::CancellationToken::new();
        on_ctrl_c(stop.clone());
        let mut transcript = baton_harness::run::new_transcript(dir, None, None)?;
        let system = system_prompt(
            dir,
            cfg,
            Setting {
                tools: Toolset::of_cli(backend.cli.kind()),
                bubblewrap: backend.bubblewrap,
            },
        );
        let session = backend.session(dir, &[], limits(cfg, args), &LiveView, &prices);
        let result = session
            .run_until(&mut transcript, &system, &args.prompt, &stop)
            .await;
        finish(dir, &transcript, result)
    })
}

/// Print the session's final text and summary line; the exit code of its outcome.
fn finish(
    dir: &Path,
    transcript: &Transcript,
    result: Result<baton_agent::session::SessionResult, baton_agent::session::AgentError>,
) -> anyhow::Result<ExitCode> {
    use baton_agent::session::AgentError;
    // A quota that will not reset within the allowed wait is a limit (exit 2).
    if let Err(
        e @ (AgentError::UsageLimit { .. }
        | AgentError::Model {
            source: baton_agent::client::ModelError::QuotaExhausted { .. },
            ..
        }),
    ) = &result
    {
        eprintln!(
            "baton: session {:04} stopped by a limit: {e}",
            transcript.number()
        );
        return Ok(ExitCode::from(2));
    }
    let r = result.with_context(|| {
        format!(
            "session {:04} failed (transcript: {})",
            transcript.number(),
            transcript.path().display()
        )
    })?;
    if !r.final_text.is_empty() {
        println!("{}", r.final_text.trim_end());
    }
    let rel = r
        .transcript
        .strip_prefix(dir)
        .unwrap_or(&r.transcript)
        .display()
        .to_string();
    eprintln!(
        "session {:04} · {} · {} · {} tokens · {} · {rel}",
        r.session,
        r.outcome.name(),
        baton_records::human::plural(u64::from(r.turns), "turn"),
        r.usage.total(),
        baton_records::human::cost(r.cost_usd, r.usage.total())
    );
    Ok(match r.outcome {
        Outcome::Completed => ExitCode::SUCCESS,
        Outcome::MaxTurns
        | Outcome::TokenLimit
        | Outcome::TimeLimit
        | Outcome::BudgetLimit
        | Outcome::ContextFull => ExitCode::from(2),
        Outcome::Interrupted => ExitCode::from(130),
    })
}
