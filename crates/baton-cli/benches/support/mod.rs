//! What the CLI's benches share: the `baton` binary pointed at a scripted model.

use std::process::{Command, Stdio};

use baton_testkit::ScriptedServer;

/// `baton ARGS` against `server` (Anthropic's wire), with its output discarded;
/// the caller adds the arguments and runs it.
pub fn baton(server: &ScriptedServer) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
    c.env("ANTHROPIC_API_KEY", "bench")
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env_remove("BATON_PROVIDER")
        .env_remove("BATON_MODEL")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}
