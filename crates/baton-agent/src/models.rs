//! What baton knows of each model's size: its context window and the most output
//! tokens one response may have. Looked up by the longest matching name prefix;
//! `[agent] context_window` and `max_output_tokens` override it, and a server's
//! context-length error teaches the real window of a model the table does not know.

/// A model's limits, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelInfo {
    /// Prompt and output together.
    pub context_window: u64,
    /// Most output tokens of one response.
    pub max_output: u32,
}

/// The window assumed for a model the table does not know, until its server says.
pub const UNKNOWN_WINDOW: u64 = 128_000;
/// The output limit assumed for a model the table does not know.
pub const UNKNOWN_MAX_OUTPUT: u32 = 16_384;

/// Built-in figures: (model prefix, context window, max output).
const MODELS: &[(&str, u64, u32)] = &[
    ("claude-opus-4-5", 200_000, 64_000),
    ("claude-opus-4-6", 200_000, 64_000),
    ("claude-opus-4-1", 200_000, 32_000),
    ("claude-opus-4", 200_000, 32_000),
    ("claude-sonnet-4", 200_000, 64_000),
    ("claude-haiku-4", 200_000, 64_000),
    ("claude-3-7-sonnet", 200_000, 64_000),
    ("claude-3-5-haiku", 200_000, 8_192),
    ("claude-3-5-sonnet", 200_000, 8_192),
    ("claude-", 200_000, 32_000),
    ("gpt-4o", 128_000, 16_384),
    ("gpt-4.1", 1_047_576, 32_768),
    ("gpt-5", 400_000, 128_000),
    ("o3", 200_000, 100_000),
    ("o4-mini", 200_000, 100_000),
    ("codex-mini", 200_000, 100_000),
];

/// The figures for `model`: the table's longest matching prefix, else the defaults
/// for an unknown model.
pub fn info(model: &str) -> ModelInfo {
    MODELS
        .iter()
        .filter(|(prefix, _, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map_or(
            ModelInfo {
                context_window: UNKNOWN_WINDOW,
                max_output: UNKNOWN_MAX_OUTPUT,
            },
            |&(_, context_window, max_output)| ModelInfo {
                context_window,
                max_output,
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_and_unknown_models() {
        assert_eq!(info("claude-sonnet-4-5").max_output, 64_000);
        assert_eq!(info("claude-opus-4-1-20250805").max_output, 32_000);
        assert_eq!(info("claude-opus-4-5").max_output, 64_000);
        assert_eq!(info("gpt-4o-mini").context_window, 128_000);
        assert_eq!(info("gpt-4.1").context_window, 1_047_576);
        assert_eq!(
            info("qwen2.5-coder"),
            ModelInfo {
                context_window: UNKNOWN_WINDOW,
                max_output: UNKNOWN_MAX_OUTPUT
            }
        );
    }
}
