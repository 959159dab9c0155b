//! The `baton` command. See `baton --help` and DESIGN.md §5.

mod exec;
mod live;
mod log;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// baton: run AI coding agents that build real software over many sessions.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one agent session in DIR with PROMPT and print the model's final text.
    ///
    /// The live view (stderr) shows each tool call as it starts and how it ended,
    /// and every retry. The session is recorded in DIR/.baton/sessions/NNNN.jsonl.
    ///
    /// Provider: --provider, else $BATON_PROVIDER, else baton.toml [agent] provider,
    /// else anthropic. Keys and servers come from ANTHROPIC_API_KEY /
    /// ANTHROPIC_BASE_URL or OPENAI_API_KEY / OPENAI_BASE_URL.
    ///
    /// Exit codes: 0 the model finished its turn; 2 a limit stopped the session
    /// (turns, tokens, time); 130 interrupted (Ctrl-C); 1 error.
    Exec(exec::ExecArgs),
    /// Print a session transcript as a readable conversation.
    Log {
        /// The project directory.
        dir: PathBuf,
        /// Session number (default: the latest).
        #[arg(long)]
        session: Option<u32>,
        /// Print the transcript's JSON lines instead.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Exec(args) => exec::run(args),
        Command::Log { dir, session, json } => {
            log::run(&dir, session, json).map(|()| ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("baton: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
