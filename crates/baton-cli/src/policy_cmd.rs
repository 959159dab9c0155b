//! `baton policy check` (the command policy, from the command line) and the hidden
//! `baton __sandbox` launcher the `Bash` tool starts commands through.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use baton_config::{Config, SandboxNetwork};
use baton_policy::Policy;
use baton_policy::sandbox::{SandboxSpec, exec_confined};

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
        Some(d) => (d.clone(), Config::load(d)?.policy),
        None => (
            std::env::current_dir().context("cannot read the current directory")?,
            Default::default(),
        ),
    };
    let policy = Policy::new(&cfg, &dir)?;
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
    /// `loopback` to ask for the loopback-only network.
    #[arg(long)]
    network: Option<String>,
    /// The command to run confined (after --).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<OsString>,
}

/// Confine this process and become the command; returns only on error (exit 126).
pub fn sandbox(args: SandboxArgs) -> anyhow::Result<ExitCode> {
    let spec = SandboxSpec {
        project: args.project,
        writable: args.writable,
        network: match args.network.as_deref() {
            Some("loopback") => SandboxNetwork::Loopback,
            _ => SandboxNetwork::Open,
        },
    };
    let err = exec_confined(&spec, &args.command);
    eprintln!("baton: {err}");
    Ok(ExitCode::from(126))
}
