//! The provider-neutral conversation: messages, content blocks, responses, usage.
//!
//! Blocks serialize in the Anthropic Messages shape, which is also the shape the
//! transcript stores; the OpenAI client converts to and from chat completions.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user side: prompts and tool results.
    User,
    /// The model.
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// Extended thinking, kept with its signature and sent back unchanged.
    Thinking {
        /// The thinking text.
        thinking: String,
        /// The provider's signature over it.
        signature: String,
    },
    /// Thinking the provider returned encrypted.
    RedactedThinking {
        /// Opaque data, sent back unchanged.
        data: String,
    },
    /// A reasoning item of the OpenAI Responses API: its summary and its
    /// encrypted content, sent back in order before the calls it preceded (the
    /// other wire formats leave it out).
    Reasoning {
        /// The summary's texts, where the model gave one.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
        /// The reasoning, encrypted by the provider; empty when it gave none.
        #[serde(default)]
        encrypted_content: String,
    },
    /// A tool call by the model.
    ToolUse {
        /// Call id, echoed by the result.
        id: String,
        /// Tool name.
        name: String,
        /// Input object.
        input: Value,
    },
    /// The answer to a tool call.
    ToolResult {
        /// The id of the call answered.
        tool_use_id: String,
        /// Result text.
        content: String,
        /// The call failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// Images returned with the text (sent to the model, kept as evidence files).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageData>,
    },
}

/// A base64-encoded image in a tool result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageData {
    /// MIME type, e.g. `image/png`.
    pub media_type: String,
    /// The bytes, base64-encoded.
    pub data: String,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: Vec<Block>,
}

/// A tool call the model asked for: its id, the tool's name and the input.
pub type ToolCall = (String, String, Value);

/// The text blocks of `blocks`, joined by newlines.
pub fn text_of(blocks: &[Block]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The tool calls among `blocks`, in order.
pub fn tool_calls_of(blocks: &[Block]) -> Vec<ToolCall> {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect()
}

impl Message {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![Block::Text { text: text.into() }],
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// The output limit cut it off.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// It declined (or a content filter stopped it).
    Refusal,
    /// A long turn was paused by the provider; send it back to continue.
    PauseTurn,
    /// Anything else the provider said.
    Other(String),
}

impl StopReason {
    /// Map an Anthropic `stop_reason`.
    pub fn from_anthropic(s: &str) -> Self {
        match s {
            "end_turn" => Self::EndTurn,
            "tool_use" => Self::ToolUse,
            "max_tokens" => Self::MaxTokens,
            "stop_sequence" => Self::StopSequence,
            "refusal" => Self::Refusal,
            "pause_turn" => Self::PauseTurn,
            other => Self::Other(other.to_string()),
        }
    }

    /// Map an OpenAI `finish_reason`.
    pub fn from_openai(s: &str) -> Self {
        match s {
            "stop" => Self::EndTurn,
            "tool_calls" | "function_call" => Self::ToolUse,
            "length" => Self::MaxTokens,
            "content_filter" => Self::Refusal,
            other => Self::Other(other.to_string()),
        }
    }
}

/// Tokens used, by kind: a record of its own (sessions keep it in `state.json`).
pub use baton_records::Usage;

/// A complete model response, assembled from its stream.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// The assistant's content blocks, in order.
    pub content: Vec<Block>,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Tokens of this request.
    pub usage: Usage,
    /// Tool calls whose input could not be parsed: `(tool_use id, what was wrong)`.
    /// Their `input` in `content` is `{}`; the loop answers them with an error.
    pub invalid_inputs: Vec<(String, String)>,
}

impl ModelResponse {
    /// The text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }
}

/// A tool as described to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of the input.
    pub input_schema: Value,
}

/// Everything one model request carries.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// System prompt.
    pub system: &'a str,
    /// Tools offered.
    pub tools: &'a [ToolDef],
    /// The conversation so far.
    pub messages: &'a [Message],
    /// `max_tokens` of this request, where lower than the client's (so prompt and
    /// output fit the context window); `None` = the client's.
    pub max_tokens: Option<u32>,
    /// A key the provider routes the prompt cache by (the Responses API's
    /// `prompt_cache_key`): one per project, so its sessions share a cache.
    pub cache_key: Option<&'a str>,
}
