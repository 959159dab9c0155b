//! What `baton run` and `baton exec` (and the other commands) set up alike: the
//! project directory, the async runtime, the model client or agent CLI backend,
//! and the tools under the command policy and OS sandbox.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use baton_agent::cli_session::{self, CliBackend};
use baton_agent::client::{ClientConfig, Provider};
use baton_config::Config;
use baton_harness::boundary::ConfigSource;
use baton_policy::SessionGuard;
use baton_tools::{ToolContext, Toolbox};

/// What to tell a user whose project directory is missing.
pub const CREATE_HINT: &str = " (create a project with `baton new DIR --spec FILE`)";

/// `dir` as the directory to work in: it must exist (else an error ending with
/// `hint`); returned canonical.
pub fn project_dir(dir: &Path, hint: &str) -> anyhow::Result<PathBuf> {
    if !dir.exists() {
        bail!("{} does not exist{hint}", dir.display());
    }
    if !dir.is_dir() {
        bail!("{} is not a directory{hint}", dir.display());
    }
    dir.canonicalize()
        .with_context(|| format!("cannot resolve {}", dir.display()))
}

/// What a command that may not put `baton.toml` back says when it goes by the
/// saved copy instead ([`load_config`]).
pub const CONFIG_NOT_TRUSTED: &str = "baton.toml was changed since the last run started, and that run has not ended cleanly; the agent's commands could write it then (it was not bound read-only by bubblewrap), so this command goes by baton.toml as that run found it. The run's gates, or the next `baton run`, put it back and keep the changed file aside";

/// `dir`'s `baton.toml` as a command may load it and run what it names: the
/// file, unless it changed after a run that has not ended cleanly while the
/// agent's commands could write it; then the copy baton saved when that run
/// started, with a warning (nothing is changed: the next `baton run` puts the
/// file back). See `baton_harness::boundary`.
pub fn load_config(dir: &Path) -> anyhow::Result<Config> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match baton_harness::boundary::config_source(&dir)? {
        ConfigSource::File => Ok(Config::load(&dir)?),
        ConfigSource::Saved(bytes) => {
            eprintln!("baton: warning: {CONFIG_NOT_TRUSTED}");
            match bytes {
                Some(b) => Ok(Config::for_project(&dir, &String::from_utf8_lossy(&b))?),
                None => Ok(Config::default()),
            }
        }
    }
}

/// Before a command that holds `dir`'s lock loads `baton.toml`: one an agent could
/// have changed before a run was killed is put back as that run found it, the
/// changed file kept aside, and the user told how to keep it if it was theirs
/// (`baton_harness::boundary::recover_config`).
pub fn recover_config(dir: &Path) -> anyhow::Result<()> {
    let Some(r) = baton_harness::boundary::recover_config(dir)? else {
        return Ok(());
    };
    let what = &r.what;
    let config = dir.join(baton_config::CONFIG_FILE);
    match &r.kept {
        Some(kept) => eprintln!(
            "baton: {what} after a run that did not end cleanly, while the agent's commands could write it (it was not bound read-only by bubblewrap); baton cannot tell your edit from the agent's, so it put back baton.toml as that run found it and kept the changed file as {kept}.\nbaton: if the change was yours: cp {} {}, then run baton again",
            dir.join(kept).display(),
            config.display()
        ),
        None => eprintln!(
            "baton: {what} after a run that did not end cleanly, while the agent's commands could write it (it was not bound read-only by bubblewrap); baton put back baton.toml as that run found it (what stood there was not a plain file; nothing kept)"
        ),
    }
    Ok(())
}

/// The single-threaded async runtime every command runs on.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A directory's parts for sessions, assembled one way for the project a run
/// works in (`baton run`, `baton plan`, `baton exec`) and for each working copy
/// of a parallel run: its tools under the command policy and OS sandbox, with
/// its process registry (a fresh one when `None`) and environment, and the agent
/// CLI set up for it (`cli`) when the provider is one. With the sandbox's
/// warning when it is weaker than asked.
pub fn dir_parts(
    dir: &Path,
    cfg: &Config,
    processes: Option<std::sync::Arc<baton_tools::ProcessRegistry>>,
    env: Vec<(String, String)>,
    cli: Option<CliBackend>,
) -> anyhow::Result<(baton_harness::parallel::AgentParts, Option<String>)> {
    let (tools, guard) = guarded_tools_with(dir, cfg, processes, env)?;
    let parts = baton_harness::parallel::AgentParts {
        tools,
        kernel_binds: guard.policy.bubblewrap(),
        policy: Box::new(guard.policy),
        cli,
    };
    Ok((parts, guard.warning))
}

/// The tools for `dir` under the command policy and OS sandbox of `cfg`, with
/// `env` set for every command (a parallel run's agent): secrets stripped from
/// commands, `Bash` through the sandbox launcher where the kernel allows, and the
/// policy gate (in the guard) knowing the tools' processes.
fn guarded_tools_with(
    dir: &Path,
    cfg: &Config,
    processes: Option<std::sync::Arc<baton_tools::ProcessRegistry>>,
    env: Vec<(String, String)>,
) -> anyhow::Result<(Toolbox, SessionGuard)> {
    let mut ctx = ToolContext::new(dir.to_path_buf());
    ctx.env = env;
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

/// Who plays the agent: a model provider through baton's own loop, or an agent
/// CLI (`provider = "claude-code"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    /// baton's loop against this provider's API.
    Model(Provider),
    /// An agent CLI, driven as a session backend.
    Cli(cli_session::CliKind),
}

/// The provider from the flag, `BATON_PROVIDER` or `baton.toml`, in that order
/// (default `anthropic`); an unknown name is an error that lists the known ones.
pub fn agent_kind(cfg: &Config, provider_flag: Option<&str>) -> anyhow::Result<AgentKind> {
    let name = provider_flag
        .map(str::to_string)
        .or_else(|| {
            std::env::var("BATON_PROVIDER")
                .ok()
                .filter(|v| !v.is_empty())
        })
        .or_else(|| cfg.agent.provider.clone())
        .unwrap_or_else(|| "anthropic".to_string());
    if let Some(cli) = cli_session::CliKind::of_provider(&name) {
        return Ok(AgentKind::Cli(cli));
    }
    Ok(AgentKind::Model(Provider::parse(&name)?))
}

/// The agent CLI backend when the provider is `claude-code` or `codex`.
///
/// Claude Code: the program is `$BATON_CLAUDE` or `claude` on `PATH`; the API key
/// baton holds (if any) is handed to it, else the CLI uses its own login (a
/// subscription); its shell commands go through baton's sandbox one by one.
///
/// Codex: the program is `$BATON_CODEX` or `codex` on `PATH`; it runs whole inside
/// the sandbox and reaches the provider (`OPENAI_BASE_URL`, the Responses API) only
/// through baton's key proxy, so the key `OPENAI_API_KEY` never enters the sandbox.
///
/// MCP servers of `baton.toml` (the browser among them) go to either.
pub fn cli_backend(
    cfg: &Config,
    dir: &Path,
    secrets: &crate::secrets::Secrets,
    provider_flag: Option<&str>,
    model_flag: Option<&str>,
) -> anyhow::Result<Option<CliBackend>> {
    let AgentKind::Cli(kind) = agent_kind(cfg, provider_flag)? else {
        return Ok(None);
    };
    let profile = kind.profile();
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let model = model_flag
        .map(str::to_string)
        .or_else(|| env("BATON_MODEL"))
        .or_else(|| cfg.agent.model.clone())
        .unwrap_or_else(|| profile.wire.default_model().to_string());
    let keys = profile.keys;
    // The CLI's shell commands go through baton's sandbox as the built-in Bash's do.
    let project = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let (spec, warning) = baton_policy::session_sandbox(&cfg.sandbox, &project);
    if let Some(w) = warning {
        eprintln!("baton: warning: {w}");
    }
    let mut specs = baton_mcp::specs_from_config(cfg, dir);
    // Codex runs whole in the sandbox, and Claude Code starts its MCP servers
    // through its shell prefix, so in the sandbox too when there is one.
    if profile.inside_sandbox || spec.is_some() {
        inside_the_sandbox(&mut specs, dir)?;
    }
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
            // A server starts with the temp dir it would have had: the CLI's own
            // (`<agent's home>/tmp`, for its sandboxed commands) makes socket
            // paths too long for Chromium.
            let mut args: Vec<String> = if spec.is_some() {
                vec!["-u".to_string(), "TMPDIR".to_string()]
            } else {
                Vec::new()
            };
            args.extend([
                "-C".to_string(),
                s.cwd.display().to_string(),
                s.command.clone(),
            ]);
            args.extend(s.args.iter().cloned());
            let mut server = serde_json::json!({"command": "env", "args": args, "env": s.env});
            // How each CLI's MCP configuration says what baton's loop does.
            match kind {
                cli_session::CliKind::Codex => {
                    // Each server is waited for before the first turn, as long as baton's
                    // own loop waits for one: Codex would otherwise go on without a server
                    // slower than its 10 s and answer the model's first call of it
                    // "unsupported call".
                    let hub = baton_mcp::HubOptions::default();
                    server["required"] = true.into();
                    server["startup_timeout_sec"] = hub.start_timeout.as_secs_f64().into();
                    server["tool_timeout_sec"] = hub.call_timeout.as_secs_f64().into();
                }
                cli_session::CliKind::ClaudeCode => {}
            }
            servers.insert(s.name.clone(), server);
        }
        Some(serde_json::json!({ "mcpServers": servers }))
    };
    let unset = baton_policy::secret_env(&cfg.policy);
    if let Err(e) = crate::secrets::scrub_configured(&cfg.policy.secret_env) {
        eprintln!(
            "baton: warning: could not take [policy] secret_env out of /proc/self/environ ({e}); the agent's commands may be able to read them there"
        );
    }
    // Before any namespace starts: the key proxy's port is exposed in each.
    let program =
        env(profile.program_var).map_or_else(|| PathBuf::from(profile.program), PathBuf::from);
    let (cli, program) = match kind {
        cli_session::CliKind::Codex => (
            std::sync::Arc::new(codex_link(&project, secrets)?) as cli_session::Cli,
            installed(program, profile.install)?,
        ),
        cli_session::CliKind::ClaudeCode => (
            std::sync::Arc::new(cli_session::ClaudeCode) as cli_session::Cli,
            installed(program, profile.install)?,
        ),
    };
    // The CLI's commands join one PID namespace for the run, as baton's own do.
    let baton_exe = std::env::current_exe().context("cannot find the baton executable")?;
    let launcher = spec.clone().map(|s| {
        baton_policy::sandbox::SandboxLauncher::new(s, &baton_exe)
            .with_egress(baton_policy::egress(&cfg.sandbox, &project))
    });
    let join = launcher
        .as_ref()
        .and_then(baton_policy::sandbox::SandboxLauncher::join_target);
    let bubblewrap = join.is_some();
    let command_sandbox =
        spec.map(|spec| baton_policy::sandbox::ShellSpec { spec, unset, join }.to_env());
    let hook_config = freeze_config(&project)?;
    let mut keep_alive: Vec<std::sync::Arc<dyn std::any::Any + Send + Sync>> = Vec::new();
    if let Some(l) = launcher {
        keep_alive.push(std::sync::Arc::new(l));
    }
    Ok(Some(CliBackend {
        cli,
        program,
        model,
        baton_exe,
        env: keys
            .iter()
            .filter_map(|k| secrets.get(k).map(|v| (k.to_string(), v)))
            // The CLI's temp files (Claude Code's record of its shell's working
            // directory) where its sandboxed commands can reach them: their
            // namespace has a `/tmp` of its own, and the agent's home.
            .chain(bubblewrap.then(|| {
                (
                    "TMPDIR".to_string(),
                    baton_policy::sandbox::private_home(&project)
                        .join("tmp")
                        .display()
                        .to_string(),
                )
            }))
            .chain(trusted_path_for(kind, command_sandbox.is_some()))
            .collect(),
        mcp_config,
        command_sandbox,
        hook_config: Some(hook_config),
        keep_alive,
        bubblewrap,
    }))
}

/// The `PATH` of an agent CLI that runs outside the sandbox while its commands
/// run inside (Claude Code): the one baton trusts for the CLI itself, which then
/// finds `node`, `git` and `rg` in no directory a sandboxed command can write;
/// the user's for its commands, which `baton --sandbox-shell` gives back.
fn trusted_path_for(kind: cli_session::CliKind, sandboxed: bool) -> Vec<(String, String)> {
    if kind != cli_session::CliKind::ClaudeCode || !sandboxed {
        return Vec::new();
    }
    let user = std::env::var_os("PATH").unwrap_or_default();
    vec![
        (
            "PATH".to_string(),
            baton_policy::helpers::trusted_path()
                .to_string_lossy()
                .into_owned(),
        ),
        (
            cli_session::COMMAND_PATH_VAR.to_string(),
            user.to_string_lossy().into_owned(),
        ),
    ]
}

/// `program` as found: a path that exists, or a name on `PATH` (its path). Codex
/// starts inside the sandbox's shell, where a missing program would only show as
/// a failed session: say so before the run, with how to install it.
fn installed(program: PathBuf, install: &str) -> anyhow::Result<PathBuf> {
    let found = if program.components().count() > 1 {
        program.is_file().then(|| program.clone())
    } else {
        on_path(&program.to_string_lossy())
    };
    found.with_context(|| {
        format!(
            "{} not found; install it: {install} (`baton doctor` checks)",
            program.display()
        )
    })
}

/// The CLI starts the MCP servers itself, inside the sandbox (Codex, whole; Claude
/// Code runs them through its shell prefix), where `.baton/` is read-only: the
/// browser's output files go to the agent's private home instead, and its
/// temporary files (the profile, whose socket path must stay short) to the
/// sandbox's temp dir; its configuration, written by baton, stays where it is.
fn inside_the_sandbox(specs: &mut [baton_mcp::ServerSpec], dir: &Path) -> anyhow::Result<()> {
    let project = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let output =
        baton_policy::sandbox::private_home(&project).join(baton_policy::sandbox::MCP_OUTPUT);
    std::fs::create_dir_all(&output)
        .with_context(|| format!("cannot create {}", output.display()))?;
    let own = dir
        .join(baton_records::layout::PLAYWRIGHT)
        .join("output")
        .display()
        .to_string();
    for s in specs.iter_mut() {
        s.env.remove("TMPDIR");
        for a in s.args.iter_mut().filter(|a| **a == own) {
            *a = output.display().to_string();
        }
    }
    Ok(())
}

/// What an agent CLI backend does not give that baton's own loop does, said once
/// when a command starts (docs/cli-backends.md says the same).
pub fn cli_caveats(b: &CliBackend) -> Vec<&'static str> {
    let mut said = Vec::new();
    let profile = b.cli.kind().profile();
    said.extend(profile.caveats);
    if profile.inside_sandbox && b.command_sandbox.is_none() {
        said.push(profile.unsandboxed);
    }
    said
}

/// Codex's way to the provider: baton's key proxy on 127.0.0.1, forwarding to
/// `OPENAI_BASE_URL` (default OpenAI's) with `OPENAI_API_KEY`, which stays in baton;
/// the proxy lives as long as the backend.
fn codex_link(
    project: &Path,
    secrets: &crate::secrets::Secrets,
) -> anyhow::Result<cli_session::codex::Codex> {
    let p = Provider::OpenAiResponses;
    let upstream = base_url(p);
    let headers = secrets
        .get(p.key_var())
        .map(|k| vec![("authorization".to_string(), format!("Bearer {k}"))])
        .unwrap_or_default();
    let proxy = baton_agent::key_proxy::KeyProxy::spawn(&upstream, headers)
        .context("cannot start the key proxy for Codex")?;
    // Codex, in the sandbox's network, reaches it at the same port there.
    #[cfg(target_os = "linux")]
    baton_policy::net::expose_host_port(proxy.port());
    Ok(cli_session::codex::Codex {
        proxy: std::sync::Arc::new(proxy),
        homes: baton_policy::sandbox::private_home(project).join(".baton-codex"),
    })
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

/// The provider's base URL: its variable (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`)
/// when set, else its default.
fn base_url(provider: Provider) -> String {
    std::env::var(provider.base_url_var())
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| provider.default_base_url().to_string())
}

/// Settings resolved from flags, environment and `baton.toml`, in that order.
pub fn client_config(
    cfg: &Config,
    secrets: &crate::secrets::Secrets,
    provider_flag: Option<&str>,
    model_flag: Option<&str>,
) -> anyhow::Result<ClientConfig> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let AgentKind::Model(provider) = agent_kind(cfg, provider_flag)? else {
        bail!("the provider is an agent CLI (claude-code or codex), not a model API");
    };
    let model = model_flag
        .map(str::to_string)
        .or_else(|| env("BATON_MODEL"))
        .or_else(|| cfg.agent.model.clone())
        .unwrap_or_else(|| provider.default_model().to_string());
    Ok(ClientConfig {
        provider,
        base_url: base_url(provider),
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

/// The program `name` in a directory of `PATH` baton trusts (no relative
/// entry, none a sandboxed command can write: [`baton_policy::helpers`]), if
/// there is one. What baton starts outside the sandbox (an agent CLI, the
/// browser, a `[notify]` program) is found here, never in the project.
pub(crate) fn on_path(name: &str) -> Option<PathBuf> {
    baton_policy::helpers::find(name)
}
