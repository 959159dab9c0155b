//! The `baton` command. See `baton --help`.

// What baton prints never ends it: a standard output or error whose reader went
// away (a `| head`, a `| tee` that died) loses the line, not the run or its exit
// code. These shadow std's macros in every module of the crate.
macro_rules! eprintln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}
macro_rules! println {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}
macro_rules! print {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}

mod doctor_cmd;
mod events;
mod exec;
mod hook_cmd;
mod issues_cmd;
mod live;
mod log;
mod notify;
mod plan_cmd;
mod policy_cmd;
mod report_cmd;
mod run_cmd;
mod secrets;
mod serve;
mod setup;
mod status_cmd;

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
    /// Create a project from a spec, an idea, or an existing repository.
    ///
    /// From a spec (--spec FILE), from a one-line idea that a
    /// planner session expands into the spec (--idea TEXT), or by adopting an
    /// existing git repository (--adopt --goal TEXT). Writes a git repository of its
    /// own (even inside another one), app_spec.txt, a commented baton.toml (the
    /// project's kind, read from the spec unless --kind; the browser on for a web
    /// project when Chromium and @playwright/mcp are found; the independent verifier
    /// on) and a .gitignore for baton's records and common build junk.
    New(plan_cmd::NewArgs),
    /// Add features to a project through a planner session.
    ///
    /// A planner session reads the spec, the feature list
    /// and the code and appends new failing features for the request (never changing
    /// existing ones); baton checks them, records each as `added` in the ledger and
    /// commits. The request is appended to the spec. Then `baton run` carries on.
    ///
    /// Exit codes: 0 features added; 1 error (nothing was added; the list is as it was).
    Plan(plan_cmd::PlanArgs),
    /// Accept a person's own edit of the feature list.
    ///
    /// Shows what was added and
    /// changed since it was last accepted, asks (or --yes), then records each change
    /// in the ledger and commits the list. Removing or reordering features is refused
    /// (features are known by their number).
    Accept {
        /// The project directory.
        dir: PathBuf,
        /// Accept without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Build the project session by session until every feature passes.
    ///
    /// The first session (no feature list yet) is the initializer; every later one
    /// is a coding session with a brief computed by baton. After each session baton
    /// checks the feature list (only "passes" may change), commits leftovers, and
    /// records everything in DIR/.baton/. Rerunning resumes.
    ///
    /// A feature that fails [run] feature_attempts times (default 3) is deferred behind
    /// the other failing features; one the agent declares blocked (BlockFeature, with a
    /// reason) is not handed out until `baton unblock DIR N`.
    ///
    /// Exit codes: 0 every feature passes; 4 every feature passes except blocked ones
    /// (see `baton status`); 2 a limit was reached (--max-sessions, --budget-usd,
    /// --max-hours, a provider quota that resets beyond [run] max_wait_hours); 3 stalled
    /// (baton.toml [run] stall_sessions coding sessions in a row without a newly passing
    /// feature); 130 interrupted; 1 error.
    ///
    /// A session whose context window fills up hands off to a fresh one ([agent]
    /// context = "handoff") or goes on with its own summary ("compact"); a rate limit
    /// or quota is waited out until its reset.
    Run(run_cmd::RunArgs),
    /// Show where a project stands: features, sessions, cost, what needs a person.
    ///
    /// Features passing (overall and per category), sessions with their time,
    /// tokens, cost and gate findings, the next features, the features that need a
    /// person (blocked, deferred), and whether the tree is clean.
    Status {
        /// The project directory.
        dir: PathBuf,
        /// Print JSON (stable; see docs/harness.md).
        #[arg(long)]
        json: bool,
    },
    /// Hand a blocked feature out again, once you have acted on its reason.
    ///
    /// Hand a feature an agent declared blocked out again, once you have acted on its
    /// reason: clears the block and its failed attempts (recorded in the ledger).
    ///
    /// Run it while no `baton run` works on DIR. Exit codes: 0 unblocked; 1 error (no
    /// such feature, or it is not blocked).
    Unblock {
        /// The project directory.
        dir: PathBuf,
        /// The feature's number (its 1-based position in the feature list).
        feature: String,
        /// What you did about the agent's reason: the next coding session's brief
        /// carries it (as `baton tell` does).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
    },
    /// Tell the agent something in the next coding session's brief.
    ///
    /// TEXT goes into the brief of the next coding session
    /// (in a parallel run, the next one handed out), recorded in the ledger as
    /// `told`. Works while a run is going; queued in baton's state dir until then.
    ///
    /// Exit codes: 0 queued; 1 error (no project, empty or overlong text).
    Tell {
        /// The project directory.
        dir: PathBuf,
        /// The guidance, in words the agent can act on.
        text: String,
    },
    /// Turn the forge's labelled issues into features.
    ///
    /// Issues on the project's forge ([forge] in baton.toml): `baton issues pull DIR`
    /// turns the open issues with [forge] label, opened or labelled by users with
    /// write access, into features.
    Issues {
        #[command(subcommand)]
        what: issues_cmd::IssuesCommand,
    },
    /// Test the notifications to a person ([notify]).
    ///
    /// Notifications to a person ([notify] in baton.toml: a command and/or a webhook
    /// get run_end, blocked, waiting, budget and verifier_rejections events).
    /// `baton notify test DIR` sends a sample event now.
    ///
    /// Exit codes: 0 delivered; 1 nothing configured, or the delivery failed.
    Notify {
        #[command(subcommand)]
        what: NotifyCommand,
    },
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
    /// (turns, tokens, time, a full context window, a quota beyond [run]
    /// max_wait_hours); 130 interrupted (Ctrl-C); 1 error.
    Exec(exec::ExecArgs),
    /// Print a session transcript as a readable conversation.
    ///
    /// Tool calls show their key argument; results are cut after a few lines with a
    /// marker; refusals and errors are highlighted. Filter with --tool and --errors.
    Log(log::LogArgs),
    /// Write the run report, one self-contained HTML page.
    ///
    /// Charts, features with
    /// the session and commit that made them pass, gate findings, costs, budget left.
    Report(report_cmd::ReportArgs),
    /// Serve a live, read-only dashboard of projects in the browser.
    ///
    /// `/` lists them, `/p/N`
    /// shows one (its features as a board, cost against budget, sessions, the notes'
    /// tail and the running session's transcript), updated as the records change.
    /// Prints the URL on stderr and serves until Ctrl-C. An address that is not
    /// loopback needs --token-env.
    Serve(serve::ServeArgs),
    /// Judge a bash command as the agent's Bash tool would.
    ///
    /// `baton policy check [--json] [--dir DIR] -- COMMAND`
    /// judges a bash command as the agent's Bash tool would here (inside the bubblewrap
    /// sandbox where it works and [sandbox] is on; exit 0 allowed, 1 refused).
    Policy(policy_cmd::PolicyArgs),
    /// Check the parts baton uses outside itself, and how to install what is missing.
    ///
    /// git, bash, Node, @playwright/mcp (run
    /// as [browser] command would run it), Chromium, Landlock, bubblewrap and the
    /// Claude Code and Codex CLIs (each required with its provider), with the command
    /// to install what is missing.
    ///
    /// The browser's parts are required when DIR's baton.toml enables the browser (or
    /// with --browser). Exit codes: 0 every required part is present; 1 otherwise.
    Doctor(doctor_cmd::DoctorArgs),
    /// Hooks for agent CLIs driven as session backends.
    ///
    /// `baton hook pre-tool-use`
    /// judges a Claude Code tool call (hook JSON on stdin) by baton's rules.
    Hook(hook_cmd::HookArgs),
    /// Internal: run a command inside baton's OS sandbox (used by the Bash tool).
    #[command(name = "__sandbox", hide = true)]
    Sandbox(policy_cmd::SandboxArgs),
    /// Internal: serve baton's own git commands in a warm jail (one per
    /// repository root, started by baton).
    #[command(name = "__gitjail", hide = true)]
    GitJail,
    /// The pid 1 of the run's sandbox namespace (internal).
    #[command(name = "__hold", hide = true)]
    Hold {
        /// Its standard output is the bridge to baton of the namespace's own
        /// network.
        #[arg(long)]
        bridge: bool,
        /// Ports of the namespace's loopback to listen on and bridge to baton.
        #[arg(long)]
        listen: Vec<u16>,
    },
}

/// What `baton notify` does.
#[derive(Debug, Subcommand)]
enum NotifyCommand {
    /// Send a sample event to DIR's [notify] command and webhook.
    Test {
        /// The project directory.
        dir: PathBuf,
    },
}

fn main() -> ExitCode {
    // Take the provider keys out of this process's environment block, so the agent's
    // commands cannot read them from /proc/<baton>/environ; baton keeps its own copy.
    let secrets = secrets::take();
    if !secrets.scrubbed {
        eprintln!(
            "baton: warning: could not take the API keys out of /proc/self/environ; the agent's commands may be able to read them there"
        );
    }
    // Defense in depth where the kernel honours it: no dumping, no reading our memory.
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    // Claude Code runs each shell command and MCP server of a sandboxed claude-code
    // session as `baton-sandbox-shell '<command string>'` (a link to baton), and
    // Codex runs as `baton --sandbox-shell '<command string>'` (see cli_session).
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let called = argv
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .is_some_and(|n| n == baton_agent::cli_session::SANDBOX_SHELL_NAME);
    if called {
        return policy_cmd::sandbox_shell(&argv[1..]);
    }
    if argv
        .get(1)
        .is_some_and(|a| a == baton_agent::cli_session::SANDBOX_SHELL_FLAG)
    {
        return policy_cmd::sandbox_shell(&argv[2..]);
    }
    // A usage error is an error (exit 1), not the limit code 2 clap would give;
    // `--help` and `--version` still print and exit 0.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 1 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // Every directory named on the command line may be a project, where the
    // agent's commands write: none of baton's helpers (bwrap, git, npx) is taken
    // from it, whatever the user's PATH says (baton_policy::helpers).
    for a in argv.iter().skip(1) {
        let p = std::path::Path::new(a);
        if p.is_dir() {
            baton_policy::helpers::distrust(p);
        }
    }
    // baton's own git runs in warm jails served by this executable.
    if let Ok(exe) = std::env::current_exe() {
        baton_harness::warm_jails(exe);
    }
    let result = match cli.command {
        Command::New(args) => plan_cmd::new(args, &secrets),
        Command::Plan(args) => plan_cmd::plan(args, &secrets),
        Command::Accept { dir, yes } => plan_cmd::accept(&dir, yes),
        Command::Run(args) => run_cmd::run(args, &secrets),
        Command::Status { dir, json } => status_cmd::status(&dir, json).map(|()| ExitCode::SUCCESS),
        Command::Unblock { dir, feature, note } => {
            status_cmd::unblock(&dir, &feature, note.as_deref()).map(|()| ExitCode::SUCCESS)
        }
        Command::Tell { dir, text } => status_cmd::tell(&dir, &text).map(|()| ExitCode::SUCCESS),
        Command::Notify {
            what: NotifyCommand::Test { dir },
        } => notify::test(&dir).map(|()| ExitCode::SUCCESS),
        Command::Issues { what } => issues_cmd::run(what, &secrets),
        Command::Exec(args) => exec::run(args, &secrets),
        Command::Log(args) => log::run(args).map(|()| ExitCode::SUCCESS),
        Command::Report(args) => report_cmd::run(args).map(|()| ExitCode::SUCCESS),
        Command::Serve(args) => serve::run(args),
        Command::Policy(args) => policy_cmd::run(args),
        Command::Doctor(args) => doctor_cmd::run(args),
        Command::Hook(args) => hook_cmd::run(args),
        Command::Sandbox(args) => policy_cmd::sandbox(args),
        Command::GitJail => return baton_harness::serve_jail(),
        #[cfg(target_os = "linux")]
        Command::Hold { bridge, listen } => baton_policy::namespace::hold(bridge, &listen),
        #[cfg(not(target_os = "linux"))]
        Command::Hold { .. } => anyhow::bail!("__hold needs Linux"),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "baton: error: {}",
                baton_records::human::terminal(&say_once(&e))
            );
            ExitCode::from(1)
        }
    }
}

/// An error and its causes on one line, each thing said once: a cause whose text the
/// message already holds (thiserror messages often quote their source) is left out.
fn say_once(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        let text = text.trim();
        if text.is_empty() || out.contains(text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(text);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_cause_is_said_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("turn 3: {0}")]
        struct Outer(#[source] Inner);
        #[derive(Debug, thiserror::Error)]
        #[error("anthropic: HTTP 404 from http://x/v1/messages: not_found_error: model m")]
        struct Inner;
        let e = anyhow::Error::new(Outer(Inner)).context("session 0002 failed");
        assert_eq!(
            super::say_once(&e),
            "session 0002 failed: turn 3: anthropic: HTTP 404 from http://x/v1/messages: not_found_error: model m"
        );
    }
}
