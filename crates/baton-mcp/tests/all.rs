//! Integration tests of baton-mcp, against a real MCP server script and the real
//! Playwright MCP server driving Chromium.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod suite;
