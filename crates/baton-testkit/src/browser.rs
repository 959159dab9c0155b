//! The real browser for tests: where the Playwright MCP server and Chromium are
//! (skipping a test where they are missing, failing it on CI, where `.ci/run`
//! installs them), and a page to drive, served on 127.0.0.1.

use crate::Bounded as _;
use std::io::{BufReader, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// The Playwright MCP server's `cli.js` and the Chromium binary.
#[derive(Debug, Clone)]
pub struct BrowserParts {
    /// `@playwright/mcp`'s `cli.js` (`$BATON_PLAYWRIGHT_MCP`, `.ci/npm`'s, or the
    /// global npm install's).
    pub cli: PathBuf,
    /// Chromium (`$BATON_CHROMIUM`, or `/usr/bin/chromium`).
    pub chromium: PathBuf,
}

/// The browser's parts for `test`, or `None` (with a `SKIPPED` note) where one is
/// missing; on CI (`CI=true`) a missing part fails the test instead.
pub fn browser_parts(test: &str) -> Option<BrowserParts> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Where `.ci/run` installs it, else a global npm install (where `baton
    // doctor` finds it too).
    let cli = std::env::var_os("BATON_PLAYWRIGHT_MCP")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let ci = root.join(".ci/npm/node_modules/@playwright/mcp/cli.js");
            if ci.is_file() {
                return ci;
            }
            std::process::Command::new("npm")
                .args(["root", "-g"])
                .output_bounded()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| {
                    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
                        .join("@playwright/mcp/cli.js")
                })
                .filter(|p| p.is_file())
                .unwrap_or(ci)
        });
    let chromium = std::env::var_os("BATON_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let node = std::process::Command::new("node")
        .arg("--version")
        .output_bounded()
        .is_ok_and(|o| o.status.success());
    let mut missing = Vec::new();
    if !node {
        missing.push("node (apt-get install nodejs)".to_string());
    }
    if !cli.is_file() {
        missing.push(format!(
            "{} (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix .ci/npm @playwright/mcp, or set BATON_PLAYWRIGHT_MCP)",
            cli.display()
        ));
    }
    if !chromium.is_file() {
        missing.push(format!("{} (apt-get install chromium)", chromium.display()));
    }
    if missing.is_empty() {
        return Some(BrowserParts {
            cli: cli.canonicalize().unwrap_or(cli),
            chromium,
        });
    }
    crate::skip(test, &format!("missing {}", missing.join(", ")));
    None
}

/// Serve [`PAGE`] at `/` on 127.0.0.1 (a port of its own, for the test's life);
/// returns its URL.
pub fn serve_page() -> String {
    let Ok(listener) = TcpListener::bind("127.0.0.1:0") else {
        panic!("cannot listen on 127.0.0.1");
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Ok(read_half) = stream.try_clone() else {
                continue;
            };
            let (request_line, _) = crate::request_head(&mut BufReader::new(read_half));
            let (status, body) = if request_line.starts_with("GET / ") {
                ("200 OK", PAGE)
            } else {
                ("404 Not Found", "not found")
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}/")
}

/// A page with a text input and a button that changes a text.
pub const PAGE: &str = r#"<!doctype html>
<html><head><title>Greeter</title></head>
<body>
<h1>Greeter</h1>
<label for="name">Your name</label>
<input id="name" type="text">
<button id="go" onclick="document.getElementById('out').textContent = 'Hello, ' + document.getElementById('name').value + '!'">Greet</button>
<p id="out">Nobody greeted yet</p>
</body></html>
"#;
