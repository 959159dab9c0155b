//! Which agent CLIs baton drives, and what it needs to know of each to set it
//! up: one [`CliProfile`] per [`CliKind`].

use super::{claude, codex};

/// Which agent CLI, before it is set up. Every match on it is exhaustive: a
/// third CLI is one more variant, its [`CliProfile`] and its module, and the
/// compiler names every place that must say what it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CliKind {
    /// Claude Code.
    ClaudeCode,
    /// Codex.
    Codex,
}

/// What baton needs to know of an agent CLI to set it up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CliProfile {
    /// The provider name that chooses it (`[agent] provider`, `--provider`).
    pub provider: &'static str,
    /// The environment variable naming its program.
    pub program_var: &'static str,
    /// Its program's name on `PATH`, when that variable is not set.
    pub program: &'static str,
    /// How a person installs it.
    pub install: &'static str,
    /// The wire of the models it drives (their default model and prices).
    pub wire: crate::wire::Provider,
    /// The user's secrets baton hands it (none for a CLI that reaches the model
    /// through baton's key proxy).
    pub keys: &'static [&'static str],
    /// It runs whole inside baton's sandbox (its MCP servers too), reaching the
    /// model only through baton's key proxy; otherwise only its shell commands
    /// do, through baton's sandbox shell.
    pub inside_sandbox: bool,
    /// What it does not give that baton's own loop does, said when a command
    /// starts (`docs/cli-backends.md` says the same).
    pub caveats: &'static [&'static str],
    /// Said when it runs whole inside the sandbox but the sandbox is off.
    pub unsandboxed: &'static str,
    /// How the texts a model reads name its tools.
    pub tool_words: ToolWords,
}

/// How the texts a model reads (prompts, handoff notes, the verifier's) name its
/// tools: what to search, read, write and edit files with, how to flip a
/// feature, how to keep a server running past one shell call. Data of each
/// backend, so a text never names a tool its agent lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolWords {
    /// Searching files.
    pub grep: &'static str,
    /// Reading part of a file.
    pub read: &'static str,
    /// Writing a file.
    pub write: &'static str,
    /// Editing a file.
    pub edit: &'static str,
    /// Flipping one feature's `passes` in the list, touching nothing else.
    pub flip_steps: &'static str,
    /// Starting a server that outlives the shell call.
    pub background: &'static str,
}

/// The words for baton's own loop, whose tools Claude Code shares by name.
pub const OWN_TOOL_WORDS: ToolWords = ToolWords {
    grep: "Grep",
    read: "Read (offset, limit)",
    write: "Write",
    edit: "Edit",
    flip_steps: "Grep (-n) its description, Read only that entry (offset, limit), and Edit it with an old_string from its description to its \"passes\": false, changing only false to true",
    background: "the Bash tool's run_in_background",
};

impl CliKind {
    /// Every agent CLI baton drives.
    pub const ALL: [CliKind; 2] = [CliKind::ClaudeCode, CliKind::Codex];

    /// Its profile.
    pub fn profile(self) -> CliProfile {
        match self {
            CliKind::ClaudeCode => CliProfile {
                provider: claude::PROVIDER,
                program_var: "BATON_CLAUDE",
                program: "claude",
                install: "npm install -g @anthropic-ai/claude-code",
                wire: crate::wire::Provider::Anthropic,
                keys: &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"],
                inside_sandbox: false,
                caveats: &[],
                unsandboxed: "",
                tool_words: OWN_TOOL_WORDS,
            },
            CliKind::Codex => CliProfile {
                provider: codex::PROVIDER,
                program_var: "BATON_CODEX",
                program: "codex",
                install: "npm install -g @openai/codex",
                wire: crate::wire::Provider::OpenAiResponses,
                keys: &[],
                inside_sandbox: true,
                caveats: &[
                    "note: with codex, an apply_patch of the feature list is checked after the session (the gates undo what it may not change), not refused on the spot",
                    "note: with codex, a session's tokens are counted at its end (what baton's key proxy saw the provider report), so cost and the budget move then",
                ],
                unsandboxed: "warning: codex runs without baton's sandbox ([sandbox] is off, or the kernel lacks Landlock): only baton's hook judges its edits and commands, and it holds the key proxy's token",
                tool_words: ToolWords {
                    grep: "`grep -rn`",
                    read: "`sed -n 'FROM,TOp' FILE`",
                    write: "apply_patch",
                    edit: "apply_patch",
                    flip_steps: "find its line with `grep -n`, read only that entry with `sed -n`, and change it with apply_patch, in a hunk from its description to its \"passes\": false, changing only false to true",
                    background: "with nohup and &, its output to a log file: nohup CMD > /tmp/NAME.log 2>&1 &",
                },
            },
        }
    }

    /// The CLI a provider name chooses, if it names one.
    pub fn of_provider(name: &str) -> Option<CliKind> {
        Self::ALL.into_iter().find(|k| k.profile().provider == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cli_is_chosen_by_its_own_provider_name() {
        for kind in CliKind::ALL {
            assert_eq!(CliKind::of_provider(kind.profile().provider), Some(kind));
        }
        let names: std::collections::BTreeSet<_> =
            CliKind::ALL.iter().map(|k| k.profile().provider).collect();
        assert_eq!(names.len(), CliKind::ALL.len());
        assert_eq!(CliKind::of_provider("anthropic"), None);
        // `baton.toml` and `--provider` take each of them.
        for name in &names {
            assert!(baton_config::PROVIDERS.contains(name), "{name}");
        }
        // A CLI that holds no key of the user's reaches its model through the
        // key proxy, so it runs whole inside the sandbox.
        for kind in CliKind::ALL {
            let p = kind.profile();
            assert_eq!(p.keys.is_empty(), p.inside_sandbox, "{kind:?}");
            assert_eq!(p.unsandboxed.is_empty(), !p.inside_sandbox, "{kind:?}");
        }
    }
}
