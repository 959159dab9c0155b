//! `baton-testkit` is test-only: it plays the model. [`ScriptedServer`] listens on
//! 127.0.0.1 and answers each request with the next [`Step`] of a script, in the
//! exact wire format of the Anthropic Messages API, of OpenAI chat completions or
//! of the OpenAI Responses API, streaming real SSE in small chunks. It can inject every transient fault baton must
//! survive, and records every request so tests can assert on what baton sent.
//!
//! [`ScriptedServer::builder`] makes it behave like a real model where a test needs
//! that: a context window it enforces with the provider's own error, usage counted
//! from the real sizes (growing with the conversation), replies cut at the request's
//! `max_tokens`, think time, quota walls that answer 429 until their reset, and
//! replies to what baton tells the model (a handoff note, a request to summarise).
//!
//! ```
//! use baton_testkit::{Reply, ScriptedServer, Step, Wire};
//! let server = ScriptedServer::start(Wire::Anthropic, vec![
//!     Step::Reply(Reply::tool("Bash", serde_json::json!({"command": "echo hi"}))),
//!     Step::Reply(Reply::text("done")),
//! ]);
//! assert!(server.base_url().starts_with("http://127.0.0.1:"));
//! ```

pub mod bounded;
pub mod browser;
pub mod forge;
mod http;
pub mod scenario;
mod script;
pub mod webbench;
mod wire;

pub use bounded::{Bounded, BoundedChild};
pub use http::{Realism, RecordedRequest, ScriptedServer, ServerBuilder};
pub use script::{RBlock, Reply, Step, Wire};

/// `toml` (a `baton.toml`) with flips taken on the agent's word and no
/// independent verifier, for tests about something else than proof (the loop,
/// the gates' other steps, records): their scripted agents flip features that
/// have no verify command, and a verifier session would need a script of its own.
/// A `toml` that already has a `[verify]` table naming `agent` is left as it is;
/// one with a `[verify]` table gets the two keys in it.
pub fn trusting(toml: &str) -> String {
    const KEYS: &str = "agent = false\ntrust_agent = true\n";
    match toml.find("[verify]\n") {
        Some(_) if toml.contains("agent =") => toml.to_string(),
        Some(at) => {
            let end = at + "[verify]\n".len();
            format!("{}{KEYS}{}", &toml[..end], &toml[end..])
        }
        None => {
            let sep = if toml.is_empty() || toml.ends_with('\n') {
                ""
            } else {
                "\n"
            };
            format!("{toml}{sep}[verify]\n{KEYS}")
        }
    }
}

/// Whether this is CI (`CI=true` or `CI=1`), where a missing part fails a test.
pub fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// A test that cannot run here says so: on CI it fails (`.ci/run` installs every
/// part), elsewhere it prints one `SKIPPED <test>: <why>` line (seen with
/// `-- --nocapture`, and counted by `grep -c SKIPPED`). The caller returns.
pub fn skip(test: &str, why: &str) {
    let msg = format!("{test}: {why}");
    assert!(
        !on_ci(),
        "{msg} (with CI=true every part must be here; .ci/run installs them)"
    );
    eprintln!("SKIPPED {msg}");
}

/// A fresh temporary directory for a test project, removed when dropped.
pub fn temp_project() -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix("baton-test-").tempdir()
}

/// Run git in `dir` (with a test identity, so commits work on any machine); its
/// output. Panics, naming the command and git's message, when git fails.
pub fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@localhost"])
        .args(args)
        .current_dir(dir)
        .output_bounded()
        .unwrap_or_else(|e| panic!("cannot run git: {e}"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The head of one HTTP request on `reader`: its request line and headers
/// (names lower-cased), for the test kit's small loopback servers.
pub(crate) fn request_head(reader: &mut impl std::io::BufRead) -> (String, Vec<(String, String)>) {
    let mut first = String::new();
    let _ = reader.read_line(&mut first);
    let mut headers = Vec::new();
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        line.clear();
    }
    (first, headers)
}
