//! `baton policy check` (the command policy, from the command line) and the hidden
//! `baton __sandbox` launcher the `Bash` tool starts commands through.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use baton_config::{Config, SandboxNetwork};
use baton_policy::Policy;
use baton_policy::sandbox::{SandboxSpec, ShellSpec, exec_confined};

/// Arguments of `baton policy`.
#[derive(Debug, clap::Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    command: PolicyCommand,
}

#[derive(Debug, clap::Subcommand)]
enum PolicyCommand {
    /// Judge a bash command as the agent's Bash tool would, without running it.
    ///
    /// Exit codes: 0 allowed; 1 refused (the reasons are printed); 2 error (bad
    /// baton.toml or directory).
    Check(CheckArgs),
}

/// Arguments of `baton policy check`.
#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// The project directory whose baton.toml [policy] applies (default: the
    /// current directory, with the default policy).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print the verdict as JSON: {"command", "verdict", "refusals": [{part, reason, instead}]}.
    #[arg(long)]
    json: bool,
    /// The command (after --); several words are joined with spaces.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

/// Run `baton policy …`.
pub fn run(args: PolicyArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        PolicyCommand::Check(a) => match check(&a) {
            Ok(code) => Ok(code),
            Err(e) => {
                eprintln!("baton: error: {e:#}");
                Ok(ExitCode::from(2))
            }
        },
    }
}

fn check(a: &CheckArgs) -> anyhow::Result<ExitCode> {
    let (dir, cfg) = match &a.dir {
        Some(d) => (d.clone(), crate::setup::load_config(d)?),
        None => (
            std::env::current_dir().context("cannot read the current directory")?,
            Config::default(),
        ),
    };
    // As a run here would judge it: inside the bubblewrap sandbox where it works
    // and the sandbox is on.
    let bubblewrap = cfg.sandbox.enabled && baton_policy::sandbox::kernel_binds();
    let policy = Policy::new(&cfg.policy, &dir)?.with_bubblewrap(bubblewrap);
    let command = a.command.join(" ");
    let verdict = policy.check(&command);
    if a.json {
        let mut v = serde_json::to_value(&verdict)?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("command".into(), command.clone().into());
            obj.entry("refusals")
                .or_insert_with(|| serde_json::json!([]));
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if verdict.is_allowed() {
        println!("allowed");
    } else {
        println!("refused:");
        for r in verdict.refusals() {
            println!("- `{}`: {}.\n  Instead: {}", r.part, r.reason, r.instead);
        }
    }
    Ok(if verdict.is_allowed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Arguments of the hidden `baton __sandbox` launcher.
#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    /// The project directory (writable).
    #[arg(long)]
    project: PathBuf,
    /// More writable directories.
    #[arg(long)]
    writable: Vec<PathBuf>,
    /// More of the user's home to show, read-only.
    #[arg(long)]
    readable: Vec<PathBuf>,
    /// The commands' home.
    #[arg(long)]
    home: Option<PathBuf>,
    /// `loopback` to ask for the loopback-only network.
    #[arg(long)]
    network: Option<String>,
    /// The project is only readable (the verifier's commands).
    #[arg(long)]
    read_only: bool,
    /// A variable to remove from the command's environment (repeatable).
    #[arg(long)]
    unset: Vec<String>,
    /// Join the PID namespace held by this process (see `baton_policy::namespace`)
    /// and run the command as a child there.
    #[arg(long)]
    join: Option<i32>,
    /// With --join: stay, and start the commands baton sends on standard input (a
    /// socket) there (see `baton_policy::spawner`).
    #[arg(long, requires = "join")]
    serve: bool,
    /// The command to run confined (after --).
    #[arg(
        required_unless_present = "serve",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    command: Vec<OsString>,
}

/// Confine this process and become the command; returns only on error (exit 126).
pub fn sandbox(args: SandboxArgs) -> anyhow::Result<ExitCode> {
    let home = args
        .home
        .unwrap_or_else(|| baton_policy::sandbox::private_home(&args.project));
    let spec = SandboxSpec {
        project: args.project,
        writable: args.writable,
        network: args
            .network
            .as_deref()
            .and_then(SandboxNetwork::from_name)
            .unwrap_or(SandboxNetwork::Open),
        read_only: args.read_only,
        home,
        readable: args.readable,
    };
    if let Some(target) = args.join {
        if args.serve {
            return Ok(serve(&spec, target));
        }
        return Ok(join(&spec, target, &args.command, &args.unset, None));
    }
    let err = exec_confined(&spec, &args.command, &args.unset);
    eprintln!("baton: {err}");
    Ok(ExitCode::from(126))
}

/// Run `command` in the namespace `target` holds; the exit code is the command's
/// (126 when it could not be started there, with the reason on stderr).
fn join(
    spec: &SandboxSpec,
    target: i32,
    command: &[OsString],
    unset: &[String],
    log: Option<LauncherLog>,
) -> ExitCode {
    #[cfg(target_os = "linux")]
    match baton_policy::namespace::join(spec, target, command, unset) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            if let Some(log) = log {
                log.say(&e.to_string());
            }
            eprintln!("baton: {e}");
            ExitCode::from(126)
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (spec, target, command, unset, log);
        eprintln!("baton: --join needs Linux");
        ExitCode::from(126)
    }
}

/// Start the commands baton sends, inside the namespace `target` holds, until it
/// closes the socket (exit 126 when this process could not join and confine itself).
fn serve(spec: &SandboxSpec, target: i32) -> ExitCode {
    #[cfg(target_os = "linux")]
    match baton_policy::spawner::serve(spec, target) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("baton: {e}");
            ExitCode::from(126)
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (spec, target);
        eprintln!("baton: --serve needs Linux");
        ExitCode::from(126)
    }
}

/// `baton --sandbox-shell '<command string>'`, as Claude Code runs a shell command
/// with `CLAUDE_CODE_SHELL_PREFIX` set: confine this process to the spec in
/// `BATON_SANDBOX` and become `bash -c '<command string>'` without the secret
/// variables (nor `BATON_SANDBOX`). Without a valid spec nothing runs (exit 126).
pub fn sandbox_shell(args: &[OsString]) -> ExitCode {
    match shell_command(args) {
        Ok((spec, command, unset, join_target)) => {
            // Opened before anything is confined: a hook's stderr reaches nobody
            // (Claude Code only says the hook gave no answer), so a failure to
            // start the command is also written where baton reads it.
            let log = LauncherLog::open(&spec.project);
            // The verifier's read-only commands join the read-only namespace
            // baton made for its session (never the coders': baton names the
            // target), else get one of their own.
            if let Some(target) = join_target {
                return join(&spec, target, &command, &unset, Some(log));
            }
            let err = exec_confined(&spec, &command, &unset);
            log.say(&err.to_string());
            eprintln!("baton: {err}");
        }
        Err(e) => eprintln!("baton: {e:#}"),
    }
    ExitCode::from(126)
}

/// `baton --sandbox-shell`'s record of why it could not start a command, in
/// baton's state dir (see [`baton_agent::cli_session::LAUNCHER_LOG`]).
struct LauncherLog(Option<std::fs::File>);

impl LauncherLog {
    fn open(project: &std::path::Path) -> LauncherLog {
        let dir = baton_config::state_dir(project);
        let _ = std::fs::create_dir_all(&dir);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(baton_agent::cli_session::LAUNCHER_LOG))
            .ok();
        LauncherLog(file)
    }

    fn say(&self, what: &str) {
        use std::io::Write as _;
        if let Some(mut f) = self.0.as_ref() {
            let _ = writeln!(f, "pid {}: {}", std::process::id(), what.replace('\n', " "));
        }
    }
}

type ShellCommand = (SandboxSpec, Vec<OsString>, Vec<String>, Option<i32>);

fn shell_command(args: &[OsString]) -> anyhow::Result<ShellCommand> {
    let [script] = args else {
        anyhow::bail!(
            "--sandbox-shell takes one command string, got {}",
            args.len()
        );
    };
    let var = baton_agent::cli_session::SANDBOX_SPEC_VAR;
    let raw = std::env::var(var).with_context(|| format!("--sandbox-shell: ${var} is not set"))?;
    let ShellSpec {
        spec,
        mut unset,
        join,
    } = ShellSpec::from_env(var, &raw).map_err(anyhow::Error::msg)?;
    unset.push(var.to_string());
    let mut command: Vec<OsString> = Vec::new();
    // The CLI runs on the PATH baton trusts; its command gets the user's back
    // (`env` sets it, from inside the sandbox, before bash is looked up).
    let carried = baton_agent::cli_session::COMMAND_PATH_VAR;
    if let Some(path) = std::env::var_os(carried) {
        let env = baton_policy::helpers::find("env").unwrap_or_else(|| "/usr/bin/env".into());
        let mut set = OsString::from("PATH=");
        set.push(path);
        command.extend([env.into_os_string(), set]);
        unset.push(carried.to_string());
    }
    command.extend(["bash".into(), "-c".into(), script.clone()]);
    Ok((spec, command, unset, join))
}
