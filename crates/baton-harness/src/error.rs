//! Errors of the harness, each naming what to fix.

use std::path::PathBuf;

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A git command failed.
    #[error("git {args} failed in {dir}: {message}")]
    Git {
        /// The arguments given.
        args: String,
        /// The project directory.
        dir: PathBuf,
        /// git's own message.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A record under `.baton/` could not be read or written.
    #[error(transparent)]
    Records(#[from] baton_records::RecordsError),
    /// The initializer did not produce a usable feature list.
    #[error(
        "the initializer did not produce a valid feature list after {attempts} sessions: {problem}"
    )]
    Initializer {
        /// Sessions tried.
        attempts: u32,
        /// The last problem found.
        problem: String,
    },
    /// Another baton command holds the project's lock.
    #[error(
        "another {holder} is working on this project ({path} is locked); wait for it to end or stop it. `baton status`, `log` and `report` work meanwhile"
    )]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// Who holds it.
        holder: String,
    },
    /// The spec given to `baton new` cannot be read.
    #[error("cannot read the spec {path}: {source}")]
    Spec {
        /// The spec's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The project or its input is not usable.
    #[error("{0}")]
    Input(String),
    /// A planner's work was not accepted: the project is as it was before the
    /// session (a run's list-append session counts it as a failed attempt).
    #[error("{0}")]
    Planner(String),
    /// An agent of a parallel run (its thread, its working copy, its tools) failed.
    #[error("{0}")]
    Agents(String),
    /// A feature list could not be read; `what` says which and what to do.
    #[error("{what}: {source}")]
    FeatureList {
        /// Which list, in words.
        what: String,
        /// The parse error, with file, line and field.
        source: baton_records::FeatureListError,
    },
    /// The MCP servers (the browser among them) could not start.
    #[error("cannot start the MCP servers: {0}")]
    Mcp(#[source] baton_mcp::McpError),
    /// The verifier's model client could not be made.
    #[error("verifier: {0}")]
    VerifierClient(#[source] baton_agent::client::ModelError),
    /// The agent session failed.
    #[error(transparent)]
    Agent(#[from] baton_agent::session::AgentError),
    /// A transcript could not be written or read.
    #[error(transparent)]
    Transcript(#[from] baton_agent::transcript::TranscriptError),
    /// `baton.toml` is not usable.
    #[error(transparent)]
    Config(#[from] baton_config::ConfigError),
}

/// Wrap an I/O error with its path.
pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> HarnessError {
    let path = path.into();
    move |source| HarnessError::Io { path, source }
}
