//! `baton-mcp` owns baton's MCP client: the servers a project configures in
//! `baton.toml` (`[mcp.<name>]`), and the browser (`[browser] enabled = true`: the
//! Playwright MCP server driving the system Chromium), started for a run and offered
//! to the agent as tools named `mcp__<server>__<tool>`.
//!
//! What it promises:
//! - [`McpHub::start`] starts every server over child-process stdio, runs the MCP
//!   handshake and lists its tools; a server that cannot start is an error naming it,
//!   its command and the last lines it printed.
//! - Results come back as they are: text blocks joined, images as
//!   [`baton_tools::Image`], the server's `isError` as the tool's error.
//! - A call that gets no answer within the call timeout is a tool error.
//! - A server that dies (its process exits, its pipes close) turns the call into a
//!   tool error saying so, and baton starts it again, up to
//!   [`HubOptions::max_restarts`] times per server; after that the error says the
//!   server is gone.
//! - Every server runs in its own process group. [`McpHub::shutdown`] (and, as a last
//!   resort, dropping the hub) ends each server and every process it started, the
//!   browser's included.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::path::Path;
//! use baton_tools::{ToolContext, Toolbox};
//!
//! let project = Path::new("/path/to/project");
//! let cfg = baton_config::Config::load(project)?;
//! let hub = baton_mcp::McpHub::start(baton_mcp::specs_from_config(&cfg, project)).await?;
//! let tools = Toolbox::new(ToolContext::new(project.into()));
//! tools.attach(hub.clone());
//! let out = tools
//!     .call("mcp__playwright__browser_navigate", &serde_json::json!({"url": "http://127.0.0.1:8000"}))
//!     .await;
//! println!("{}", out.content);
//! hub.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod content;
mod hub;
mod procs;
mod spec;

pub use hub::{HubOptions, McpHub};
pub use spec::{
    CHROMIUM_ARGS, PLAYWRIGHT_HIDDEN_TOOLS, PLAYWRIGHT_SERVER, ServerSpec, launch_dir,
    playwright_spec, specs_from_config, tool_name,
};

/// Why servers could not be started.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The server's name cannot be used in tool names.
    #[error(
        "MCP server name {name:?} is not usable: names are letters, digits, '-' and '_' without \"__\" (tools are offered as mcp__<server>__<tool>)"
    )]
    InvalidName {
        /// The name.
        name: String,
    },
    /// Two servers have the same name.
    #[error("MCP server {name:?} is configured twice")]
    Duplicate {
        /// The name.
        name: String,
    },
    /// The server has no command.
    #[error("MCP server {server:?} has no command to run")]
    NoCommand {
        /// The server.
        server: String,
    },
    /// A file the server needs (its configuration) could not be written.
    #[error("MCP server {server:?}: cannot write {path}: {source}")]
    WriteFile {
        /// The server.
        server: String,
        /// The file.
        path: std::path::PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The process could not be started.
    #[error("MCP server {server:?}: cannot run `{command}`: {source}")]
    Spawn {
        /// The server.
        server: String,
        /// The command line.
        command: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The process started but did not complete the MCP handshake or list its tools.
    #[error(
        "MCP server {server:?} (`{command}`) did not start: {reason}{}",
        printed(stderr)
    )]
    Start {
        /// The server.
        server: String,
        /// The command line.
        command: String,
        /// What went wrong.
        reason: String,
        /// The last lines the server wrote to stderr.
        stderr: String,
    },
}

fn printed(stderr: &str) -> String {
    let s = stderr.trim();
    if s.is_empty() {
        "; it printed nothing".to_string()
    } else {
        format!("; it printed:\n{s}")
    }
}
