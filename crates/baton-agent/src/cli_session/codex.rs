//! Codex as a session backend: `codex exec --json`, run whole inside baton's
//! sandbox.
//!
//! Codex applies its patches itself and runs its commands as its own children, so
//! baton does not confine its commands one by one (as it does Claude Code's): the
//! CLI process is started through `baton --sandbox-shell`, and everything it does,
//! its file edits and every command, is bounded by the run's sandbox (and, with
//! bubblewrap, joins the run's PID namespace). Its own sandbox and approvals are
//! off (`--dangerously-bypass-approvals-and-sandbox`, which its docs name for
//! "environments that are externally sandboxed").
//!
//! The key stays outside: Codex talks to baton's key proxy on 127.0.0.1
//! ([`crate::key_proxy`]) with a token of the session's own, revoked when it ends,
//! and the proxy forwards each request to the provider with the real key. The
//! session's usage is what the proxy saw the provider report for that token, so a
//! command that read the token and asked the model itself is counted too. Codex's
//! home (`CODEX_HOME`) is a fresh directory per session inside the agent's private
//! home, removed after it; the user's `~/.codex/config.toml` is not loaded
//! (`--ignore-user-config`) and nothing is persisted (`--ephemeral`).
//!
//! baton's rules reach inside through Codex's `PreToolUse` hook (Claude Code's hook
//! JSON: `Bash` with `command`, `apply_patch` with the patch), given with `-c`.
//! Refused calls appear only on Codex's stderr (`… blocked by PreToolUse hook: …`),
//! which is read line by line for them.
//!
//! The `--json` events become transcript events: a `command_execution` item a
//! `Bash` turn and its result, a `file_change` an `apply_patch` turn, an
//! `agent_message` a text turn, an `mcp_tool_call` a call whose text and images are
//! kept as evidence; `turn.completed`'s usage stands for the session's only when the
//! proxy saw no answer report any (Codex gives none per turn). Codex has no turn
//! limit of its own: baton counts the calls and stops it past `max_turns`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{
    AgentCli, CliKind, CliSession, Opening, Recorder, SANDBOX_SHELL_FLAG, SANDBOX_SPEC_VAR, Start,
    io_err, mentions_any, shell_quote, tail,
};
use crate::key_proxy::KeyProxy;
use crate::model::{Block, Usage};
use crate::session::{AgentError, Outcome};

/// The provider name of this backend in config and transcripts.
pub const PROVIDER: &str = "codex";

/// The variable Codex reads its "API key" from: the key proxy's token.
pub const TOKEN_VAR: &str = "BATON_CODEX_TOKEN";

/// What Codex says on stderr when its `PreToolUse` hook refused a call.
const HOOK_REFUSAL: &str = "blocked by PreToolUse hook: ";

/// What a Codex session needs besides the shared parts.
#[derive(Debug, Clone)]
pub struct Codex {
    /// baton's key proxy: each session gets a grant of its own, whose token is
    /// Codex's only "key".
    pub proxy: Arc<KeyProxy>,
    /// Where each session's Codex home is made (inside the agent's private home).
    pub homes: PathBuf,
}

/// A string as a TOML basic string (JSON's escapes are TOML's).
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

impl AgentCli for Codex {
    fn kind(&self) -> CliKind {
        CliKind::Codex
    }

    fn missing_end(&self) -> &'static str {
        "finishing its turn"
    }

    fn counts_turns(&self) -> bool {
        true // `codex exec` has no turn limit of its own.
    }

    fn in_home(&self, home: &Path) -> Arc<dyn AgentCli> {
        Arc::new(Codex {
            proxy: self.proxy.clone(),
            homes: home.join(".baton-codex"),
        })
    }

    /// Make the session's Codex home and say how to start Codex in the sandbox.
    fn start(&self, s: &CliSession<'_>, opening: &Opening<'_>) -> Result<Start, AgentError> {
        let Opening { n, system, prompt } = *opening;
        // The session's own token, revoked when the grant drops at its end.
        let grant = self.proxy.grant_limited(s.limits.max_tokens);
        let home = self.homes.join(format!("{n:04}"));
        // In the agent's private home, which its commands can write: made and
        // removed beneath that home, never through a link planted there.
        let scratch = super::Scratch::of(&home);
        let _ = scratch.remove();
        scratch.create().map_err(io_err(&home))?;
        let mut args: Vec<String> = [
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "--dangerously-bypass-hook-trust",
            "--ephemeral",
            "--ignore-user-config",
            "--color",
            "never",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(["-C".into(), s.project_dir.display().to_string()]);
        args.extend(["-m".into(), s.model.clone()]);
        let provider = [
            "model_provider=\"baton\"".to_string(),
            "model_providers.baton.name=\"baton\"".to_string(),
            format!(
                "model_providers.baton.base_url={}",
                toml_str(&self.proxy.base_url())
            ),
            "model_providers.baton.wire_api=\"responses\"".to_string(),
            format!("model_providers.baton.env_key=\"{TOKEN_VAR}\""),
            // A quota is baton's to wait out; a few retries of a blip are Codex's.
            "model_providers.baton.request_max_retries=2".to_string(),
            "model_providers.baton.stream_max_retries=2".to_string(),
            format!("developer_instructions={}", toml_str(system)),
            format!(
                "hooks.PreToolUse=[{{matcher=\"*\", hooks=[{{type=\"command\", command={}}}]}}]",
                toml_str(&s.hook_command)
            ),
            "web_search=\"disabled\"".to_string(),
        ];
        for kv in provider {
            args.extend(["-c".into(), kv]);
        }
        if let Some(servers) = s
            .mcp_config
            .as_ref()
            .and_then(|m| m["mcpServers"].as_object())
        {
            for (name, s) in servers {
                args.extend([
                    "-c".into(),
                    format!("mcp_servers.{name}={}", toml_inline(s)),
                ]);
            }
        }
        // The prompt comes on stdin.
        args.push("-".into());
        let mut cmd = match &s.command_sandbox {
            Some(spec) => {
                let mut script = format!("exec {}", shell_quote(&s.program.display().to_string()));
                for a in &args {
                    script.push(' ');
                    script.push_str(&shell_quote(a));
                }
                let mut cmd = tokio::process::Command::new(&s.baton_exe);
                cmd.arg(SANDBOX_SHELL_FLAG)
                    .arg(script)
                    .env(SANDBOX_SPEC_VAR, spec);
                cmd
            }
            None => {
                let mut cmd = tokio::process::Command::new(&s.program);
                cmd.args(&args).env_remove(SANDBOX_SPEC_VAR);
                cmd
            }
        };
        cmd.current_dir(&s.project_dir)
            .env("CODEX_HOME", &home)
            .env(TOKEN_VAR, grant.token());
        Ok(Start {
            cmd,
            stdin: Some(prompt.to_string()),
            scratch: Some(scratch),
            grant: Some(grant),
        })
    }

    /// How the session ended, from Codex's last turn event.
    fn outcome(&self, s: &CliSession<'_>, r: &Value, stderr: &str) -> Result<Outcome, AgentError> {
        if r["type"] == "turn.completed" {
            return Ok(Outcome::Completed);
        }
        let said = r["error"]["message"]
            .as_str()
            .or_else(|| r["message"].as_str())
            .unwrap_or("no message")
            .to_string();
        if usage_limited(&said) {
            return Err(AgentError::UsageLimit {
                program: s.program.display().to_string(),
                message: said,
                reset_in: self.proxy.limit_reset(),
            });
        }
        Err(s.cli_err(format!("Codex reported an error: {said} {}", tail(stderr))))
    }

    /// One event of Codex's `--json` stream.
    fn event(&self, r: &mut Recorder<'_, '_>, v: Value) -> Result<(), AgentError> {
        let item = &v["item"];
        let id = item["id"].as_str().unwrap_or_default().to_string();
        match (
            v["type"].as_str().unwrap_or_default(),
            item["type"].as_str(),
        ) {
            ("item.started", Some("command_execution")) => {
                let input = json!({"command": item["command"]});
                r.call(id, "Bash".into(), input)?;
            }
            ("item.completed", Some("command_execution")) => {
                if !r.p.calls.contains_key(&id) {
                    let input = json!({"command": item["command"]});
                    r.call(id.clone(), "Bash".into(), input)?;
                }
                let text = item["aggregated_output"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let failed = item["exit_code"].as_i64().is_some_and(|c| c != 0)
                    || item["status"] == "failed";
                r.tool_result(id, text, failed, false)?;
            }
            ("item.completed", Some("file_change")) => {
                let input = json!({"changes": item["changes"]});
                r.call(id.clone(), "apply_patch".into(), input)?;
                let failed = item["status"] == "failed";
                let text = if failed {
                    "the patch failed"
                } else {
                    "patch applied"
                };
                r.tool_result(id, text.to_string(), failed, false)?;
            }
            ("item.completed", Some("mcp_tool_call")) => {
                let name = format!(
                    "mcp__{}__{}",
                    item["server"].as_str().unwrap_or_default(),
                    item["tool"].as_str().unwrap_or_default()
                );
                r.call(id.clone(), name, item["arguments"].clone())?;
                let failed = item["status"] == "failed" || !item["error"].is_null();
                let text = if failed {
                    item["error"].to_string()
                } else {
                    super::result_text(&item["result"]["content"])
                };
                let out = baton_tools::ToolOutput {
                    content: text,
                    is_error: failed,
                    images: super::images_of(&item["result"]["content"]),
                };
                r.tool_output(id, out, false)?;
            }
            ("item.completed", Some("agent_message")) => {
                let text = item["text"].as_str().unwrap_or_default().to_string();
                r.turn(vec![Block::Text { text }])?;
            }
            ("turn.completed", _) => {
                let usage = usage_of(&v["usage"]);
                r.p.totals = Some((usage, Some(r.s.prices.cost(&r.s.model, &usage))));
                r.p.result = Some(v);
            }
            ("turn.failed", _) | ("error", _)
                if r.p
                    .result
                    .as_ref()
                    .is_none_or(|r| r["type"] != "turn.failed") =>
            {
                r.p.result = Some(v);
            }
            _ => {}
        }
        Ok(())
    }

    /// One line of Codex's stderr: a call its hook refused becomes a refused turn.
    fn stderr_line(&self, r: &mut Recorder<'_, '_>, line: &str) -> Result<(), AgentError> {
        let Some((_, rest)) = line.split_once(HOOK_REFUSAL) else {
            return Ok(());
        };
        let (reason, command) = rest.rsplit_once(". Command: ").unwrap_or((rest, ""));
        let id = format!("refused-{}", r.p.turns + 1);
        let input = json!({"command": command});
        r.call(id.clone(), "Bash".into(), input)?;
        r.tool_result(id, reason.to_string(), true, true)
    }
}

/// Whether Codex's error says a quota or rate limit stopped it.
fn usage_limited(said: &str) -> bool {
    mentions_any(said, LIMIT_WORDS)
}

/// What Codex's error says when a quota or rate limit stopped it.
const LIMIT_WORDS: &[&str] = &[
    "quota",
    "rate limit",
    "usage limit",
    "429",
    "too many requests",
];

/// `turn.completed`'s usage as baton's [`Usage`]: cached input tokens are cache reads.
fn usage_of(u: &Value) -> Usage {
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    let cached = n("cached_input_tokens");
    Usage {
        input_tokens: n("input_tokens").saturating_sub(cached),
        output_tokens: n("output_tokens"),
        cache_read_tokens: cached,
        cache_write_tokens: n("cache_write_input_tokens"),
    }
}

/// A JSON object of strings, string lists, string maps, numbers and booleans as a
/// TOML inline table.
fn toml_inline(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}={}", toml_str(k), toml_inline(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(toml_inline).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::String(s) => toml_str(s),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_recognised_in_codexs_words() {
        assert!(usage_limited(
            "Quota exceeded. Check your plan and billing details."
        ));
        assert!(usage_limited(
            "exceeded retry limit, last status: 429 Too Many Requests"
        ));
        assert!(!usage_limited("unexpected status 400 Bad Request"));
    }

    #[test]
    fn cached_input_is_a_cache_read() {
        let u = usage_of(
            &json!({"input_tokens": 300, "cached_input_tokens": 200, "output_tokens": 60}),
        );
        assert_eq!(
            (u.input_tokens, u.cache_read_tokens, u.output_tokens),
            (100, 200, 60)
        );
    }

    #[test]
    fn mcp_servers_become_inline_tables() {
        let t = toml_inline(
            &json!({"command": "env", "args": ["-C", "/x y"], "env": {"A": "b\"c"}, "required": true, "startup_timeout_sec": 60.0}),
        );
        assert_eq!(
            t,
            r#"{"command"="env", "args"=["-C", "/x y"], "env"={"A"="b\"c"}, "required"=true, "startup_timeout_sec"=60.0}"#
        );
        let parsed: toml::Value = toml::from_str(&format!("x = {t}")).unwrap();
        assert_eq!(parsed["x"]["env"]["A"].as_str(), Some("b\"c"));
        assert_eq!(parsed["x"]["required"].as_bool(), Some(true));
        assert_eq!(parsed["x"]["startup_timeout_sec"].as_float(), Some(60.0));
    }
}
