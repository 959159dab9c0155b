//! `[browser]` and `[mcp.<name>]`: the MCP servers a run starts for the agent (the
//! browser among them), whose tools it is offered as `mcp__<name>__<tool>`.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The built-in browser: the Playwright MCP server driving the system Chromium.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BrowserConfig {
    /// Offer the browser tools (`mcp__playwright__*`).
    pub enabled: bool,
    /// The Chromium binary.
    pub chromium: String,
    /// How to start the Playwright MCP server (command and arguments before baton's own).
    pub command: Vec<String>,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            chromium: "/usr/bin/chromium".into(),
            command: vec![
                "npx".into(),
                "--no-install".into(),
                "@playwright/mcp".into(),
            ],
        }
    }
}

/// One MCP server started for the run; its tools are offered as `mcp__<name>__<tool>`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Program to run.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}
