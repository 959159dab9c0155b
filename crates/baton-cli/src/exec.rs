//! `baton exec`: one agent session, no gates.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use baton_agent::cli_session::{self, CliBackend};
use baton_agent::client::{ClientConfig, ModelClient, Provider};
use baton_agent::pricing::PriceTable;
use baton_agent::session::{Limits, Outcome, Session};
use baton_agent::transcript::Transcript;
use baton_config::Config;
use baton_policy::SessionGuard;
use baton_tools::{ToolContext, Toolbox};

use crate::live::LiveView;

/// Arguments of `baton exec`.
#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// The project directory the agent works in.
    dir: PathBuf,
    /// The task for the agent.
    #[arg(long)]
    prompt: String,
    /// Model provider: anthropic, openai or claude-code (an installed Claude Code CLI).
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
fn system_prompt(dir: &Path) -> String {
    format!(
        "You are an expert software engineer working alone in a project directory on a Linux machine: {}.\n\n{}",
        dir.display(),
        baton_harness::prompts::PRACTICES
    )
}

/// The tools for `dir` under the command policy and OS sandbox of `cfg`: secrets
/// stripped from commands, `Bash` through the sandbox launcher where the kernel
/// allows, and the policy gate (in the guard) knowing the tools' processes.
pub fn guarded_tools(
    dir: &Path,
    cfg: &Config,
    processes: Option<std::sync::Arc<baton_tools::ProcessRegistry>>,
) -> anyhow::Result<(Toolbox, SessionGuard)> {
    let mut ctx = ToolContext::new(dir.to_path_buf());
    if let Some(p) = processes {
        ctx.processes = p;
    }
    let exe = std::env::current_exe().context("cannot find the baton executable")?;
    let guard = SessionGuard::new(&mut ctx, &cfg.policy, &cfg.sandbox, &exe)?;
    if let Err(e) = crate::secrets::scrub_configured(&cfg.policy.secret_env) {
        eprintln!(
            "baton: warning: could not take [policy] secret_env out of /proc/self/environ ({e}); the agent's commands may be able to read them there"
        );
    }
    Ok((Toolbox::new(ctx), guard))
}

/// The provider's name from the flag, `BATON_PROVIDER` or `baton.toml`, in that order.
fn provider_name(cfg: &Config, provider_flag: Option<&str>) -> String {
    provider_flag
        .map(str::to_string)
        .or_else(|| {
            std::env::var("BATON_PROVIDER")
                .ok()
                .filter(|v| !v.is_empty())
        })
        .or_else(|| cfg.agent.provider.clone())
        .unwrap_or_else(|| "anthropic".to_string())
}

/// The agent CLI backend when the provider is `claude-code`: the program is
/// `$BATON_CLAUDE` or `claude` on `PATH`; the API key baton holds (if any) is handed
/// to it, else the CLI uses its own login (a subscription). MCP servers of
/// `baton.toml` (the browser among them) go to it as `--mcp-config`.
pub fn cli_backend(
    cfg: &Config,
    dir: &Path,
    secrets: &crate::secrets::Secrets,
    provider_flag: Option<&str>,
    model_flag: Option<&str>,
) -> anyhow::Result<Option<CliBackend>> {
    if provider_name(cfg, provider_flag) != cli_session::PROVIDER {
        return Ok(None);
    }
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let model = model_flag
        .map(str::to_string)
        .or_else(|| env("BATON_MODEL"))
        .or_else(|| cfg.agent.model.clone())
        .unwrap_or_else(|| Provider::Anthropic.default_model().to_string());
    let keys = ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"];
    let specs = baton_mcp::specs_from_config(cfg, dir);
    let mcp_config = if specs.is_empty() {
        None
    } else {
        let mut servers = serde_json::Map::new();
        for s in &specs {
            for (path, contents) in &s.files {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)
                        .with_context(|| format!("cannot create {}", parent.display()))?;
                }
                std::fs::write(path, contents)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            // The CLI starts servers in the project; `env -C` starts them in
            // baton's launch dir instead (see baton_mcp::launch_dir).
            std::fs::create_dir_all(&s.cwd)
                .with_context(|| format!("cannot create {}", s.cwd.display()))?;
            let mut args = vec![
                "-C".to_string(),
                s.cwd.display().to_string(),
                s.command.clone(),
            ];
            args.extend(s.args.iter().cloned());
            servers.insert(
                s.name.clone(),
                serde_json::json!({"command": "env", "args": args, "env": s.env}),
            );
        }
        Some(serde_json::json!({ "mcpServers": servers }))
    };
    // The CLI's shell commands go through baton's sandbox as the built-in Bash's do.
    let project = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let (spec, warning) = baton_policy::session_sandbox(&cfg.sandbox, &project);
    if let Some(w) = warning {
        eprintln!("baton: warning: {w}");
    }
    let unset = baton_policy::secret_env(&cfg.policy);
    if let Err(e) = crate::secrets::scrub_configured(&cfg.policy.secret_env) {
        eprintln!(
            "baton: warning: could not take [policy] secret_env out of /proc/self/environ ({e}); the agent's commands may be able to read them there"
        );
    }
    // The CLI's commands join one PID namespace for the run, as baton's own do.
    let baton_exe = std::env::current_exe().context("cannot find the baton executable")?;
    let launcher = spec
        .clone()
        .map(|s| baton_policy::sandbox::SandboxLauncher::new(s, &baton_exe));
    let join = launcher
        .as_ref()
        .and_then(baton_policy::sandbox::SandboxLauncher::join_target);
    let command_sandbox = spec.map(|s| crate::policy_cmd::shell_spec(&s, &unset, join));
    let hook_config = freeze_config(&project)?;
    Ok(Some(CliBackend {
        program: env("BATON_CLAUDE").map_or_else(|| PathBuf::from("claude"), PathBuf::from),
        model,
        baton_exe,
        env: keys
            .iter()
            .filter_map(|k| secrets.get(k).map(|v| (k.to_string(), v)))
            .collect(),
        mcp_config,
        command_sandbox,
        hook_config: Some(hook_config),
        keep_alive: launcher
            .map(|l| std::sync::Arc::new(l) as std::sync::Arc<dyn std::any::Any + Send + Sync>),
    }))
}

/// Copy the project's `baton.toml`, as baton loaded it for this command, to baton's
/// state dir (outside the project and the sandbox's writable places): the agent
/// CLI's hook judges every call by this copy, never by the project's file, which
/// the agent could change mid-session. Returns the copy's path.
pub fn freeze_config(project: &Path) -> anyhow::Result<PathBuf> {
    let dir = baton_config::state_dir(project);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let src = project.join(baton_config::CONFIG_FILE);
    let text = match std::fs::read_to_string(&src) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", src.display())),
    };
    // Only what parses as a valid config is frozen.
    Config::from_toml_str(&text, &src)?;
    let path = dir.join("hook-baton.toml");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Settings resolved from flags, environment and `baton.toml`, in that order.
pub fn client_config(
    cfg: &Config,
    secrets: &crate::secrets::Secrets,
    provider_flag: Option<&str>,
    model_flag: Option<&str>,
) -> anyhow::Result<ClientConfig> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let provider = Provider::parse(&provider_name(cfg, provider_flag))?;
    let model = model_flag
        .map(str::to_string)
        .or_else(|| env("BATON_MODEL"))
        .or_else(|| cfg.agent.model.clone())
        .unwrap_or_else(|| provider.default_model().to_string());
    Ok(ClientConfig {
        provider,
        base_url: env(provider.base_url_var())
            .unwrap_or_else(|| provider.default_base_url().to_string()),
        api_key: secrets.get(provider.key_var()),
        max_output_tokens: cfg
            .agent
            .max_output_tokens
            .unwrap_or_else(|| baton_agent::models::info(&model).max_output),
        thinking_budget: cfg.agent.thinking_budget,
        retry: cfg.retry.clone(),
        max_wait: Duration::from_secs_f64(cfg.run.max_wait_hours * 3600.0),
        model,
    })
}

/// Run `baton exec`.
pub fn run(args: ExecArgs, secrets: &crate::secrets::Secrets) -> anyhow::Result<ExitCode> {
    if !args.dir.is_dir() {
        bail!("{} is not a directory", args.dir.display());
    }
    let dir = args
        .dir
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", args.dir.display()))?;
    let cfg = Config::load(&dir)?;
    let backend = cli_backend(
        &cfg,
        &dir,
        secrets,
        args.provider.as_deref(),
        args.model.as_deref(),
    )?;
    if let Some(backend) = backend {
        return run_cli(&dir, &cfg, &backend, &args);
    }
    let client = ModelClient::new(client_config(
        &cfg,
        secrets,
        args.provider.as_deref(),
        args.model.as_deref(),
    )?)?;
    let limits = limits(&cfg, &args);
    let prices = PriceTable::new(&cfg.prices);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let (tools, guard) = guarded_tools(&dir, &cfg, None)?;
        if let Some(w) = &guard.warning {
            eprintln!("baton: warning: {w}");
        }
        // MCP servers of baton.toml and the browser: their tools join the built-in ones.
        let hub = baton_mcp::McpHub::start(baton_mcp::specs_from_config(&cfg, &dir)).await?;
        tools.attach(hub.clone());
        let cancel = tools.context().cancel.clone();
        on_ctrl_c(cancel);
        let mut transcript = Transcript::create_next(&dir)?;
        let system = system_prompt(&dir);
        let reach = baton_harness::guard::ReachGate {
            inner: &guard.policy,
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
        finish(&dir, &transcript, result)
    })
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let stop = tokio_util::sync::CancellationToken::new();
        on_ctrl_c(stop.clone());
        let mut transcript = Transcript::create_next(dir)?;
        let system = system_prompt(dir);
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
        "session {:04} · {} · {} turns · {} tokens · ${:.4} · {rel}",
        r.session,
        r.outcome.name(),
        r.turns,
        r.usage.total(),
        r.cost_usd
    );
    Ok(match r.outcome {
        Outcome::Completed => ExitCode::SUCCESS,
        Outcome::MaxTurns | Outcome::TokenLimit | Outcome::TimeLimit | Outcome::ContextFull => {
            ExitCode::from(2)
        }
        Outcome::Interrupted => ExitCode::from(130),
    })
}
