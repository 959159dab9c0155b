//! `baton run`'s arguments, the model flags it shares with `baton plan` and
//! `baton new --idea`, and the limits they set.

use std::path::PathBuf;
use std::time::Duration;

use baton_harness::run::RunOptions;

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
    pub(super) dir: PathBuf,
    /// Sessions in this run, the initializer included (default: baton.toml [run], else no limit).
    #[arg(long)]
    pub(super) max_sessions: Option<u32>,
    /// Stop once the project has cost this much in USD. Remembered as the
    /// project's budget for later runs, `baton status` and the report.
    #[arg(long)]
    pub(super) budget_usd: Option<f64>,
    /// Stop after this many hours of wall time.
    #[arg(long)]
    pub(super) max_hours: Option<f64>,
    /// Seconds between sessions (default: baton.toml [run] pause_secs, 3).
    #[arg(long)]
    pub(super) pause: Option<f64>,
    /// The model and how the run shows.
    #[command(flatten)]
    pub(super) flags: ModelFlags,
    /// Coding agents at once, each in a working copy of its own, merged into the
    /// main branch after the gates and a sweep (default: baton.toml [run] agents, 1).
    /// See docs/parallel.md.
    #[arg(long)]
    pub(super) agents: Option<u32>,
    /// A git remote shared with baton runs on other machines: claims and the main
    /// branch live there, nothing else is shared (DIR must be a clone of it). See
    /// docs/parallel.md.
    #[arg(long, value_name = "URL")]
    pub(super) remote: Option<String>,
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

/// The run's limits given on the command line.
pub(super) fn run_options(args: &RunArgs) -> RunOptions {
    RunOptions {
        max_sessions: args.max_sessions,
        budget_usd: args.budget_usd,
        max_hours: args.max_hours,
        pause: args.pause.map(Duration::from_secs_f64),
        ..RunOptions::default()
    }
}
