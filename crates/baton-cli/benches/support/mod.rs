//! What the CLI's benches share: the `baton` binary pointed at a scripted model.

use std::process::{Command, Stdio};

use baton_testkit::{ScriptedServer, Wire};

/// `baton ARGS` against `server` (Anthropic's wire), with its output discarded;
/// the caller adds the arguments and runs it.
pub fn baton(server: &ScriptedServer) -> Command {
    baton_on(server, Wire::Anthropic)
}

/// [`baton`] against `server` speaking `wire`: that wire's key and base URL are
/// set, no provider or model is; the caller sets `BATON_PROVIDER` for a provider
/// other than the wire's default (Anthropic's). `$BATON_BENCH_BIN` names another
/// `baton` binary to measure (an earlier build, back to back with this one).
pub fn baton_on(server: &ScriptedServer, wire: Wire) -> Command {
    let exe =
        std::env::var_os("BATON_BENCH_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_baton").into());
    baton_exe(server, wire, exe.as_ref())
}

/// [`baton_on`] with `exe` as the `baton` binary.
pub fn baton_exe(server: &ScriptedServer, wire: Wire, exe: &std::ffi::OsStr) -> Command {
    let mut c = Command::new(exe);
    for k in [
        "BATON_PROVIDER",
        "BATON_MODEL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ] {
        c.env_remove(k);
    }
    match wire {
        Wire::Anthropic => {
            c.env("ANTHROPIC_API_KEY", "bench")
                .env("ANTHROPIC_BASE_URL", server.base_url());
        }
        Wire::OpenAi | Wire::OpenAiResponses => {
            c.env("OPENAI_API_KEY", "bench")
                .env("OPENAI_BASE_URL", server.openai_base_url());
        }
    }
    c.stdout(Stdio::null()).stderr(Stdio::null());
    c
}
