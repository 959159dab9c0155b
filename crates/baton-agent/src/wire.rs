//! What the clients of every provider share, below all of them: how to reach a
//! model ([`ClientConfig`], [`Provider`]), how a request fails ([`ModelError`]), the
//! SSE reader with its idle timeout, and parsing a tool call's input. `client`
//! drives requests and retries; `anthropic`, `openai` and `responses` speak one wire
//! format each; they import from here, never from each other.

use std::pin::Pin;
use std::time::Duration;

use baton_config::RetryConfig;
use eventsource_stream::{Event, EventStreamError};
use futures_util::{Stream, StreamExt as _};
use serde_json::Value;

use crate::model::StopReason;

/// Which wire format to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// Anthropic Messages API.
    Anthropic,
    /// OpenAI-compatible chat completions.
    OpenAi,
    /// The OpenAI Responses API.
    OpenAiResponses,
}

impl Provider {
    /// Parse `anthropic`, `openai` or `openai-responses`.
    pub fn parse(s: &str) -> Result<Self, ModelError> {
        match s {
            "anthropic" => Ok(Self::Anthropic),
            "openai" => Ok(Self::OpenAi),
            "openai-responses" => Ok(Self::OpenAiResponses),
            other => Err(ModelError::Config(format!(
                "unknown provider {other:?}; expected {}",
                baton_config::providers_named()
            ))),
        }
    }

    /// The name used in config and messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAi => "openai",
            Self::OpenAiResponses => "openai-responses",
        }
    }

    /// The model used when none is configured.
    pub fn default_model(self) -> &'static str {
        match self {
            Self::Anthropic => "claude-sonnet-4-5",
            Self::OpenAi => "gpt-4.1",
            Self::OpenAiResponses => "gpt-5",
        }
    }

    /// Environment variable holding the API key.
    pub fn key_var(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_API_KEY",
            Self::OpenAi | Self::OpenAiResponses => "OPENAI_API_KEY",
        }
    }

    /// Environment variable overriding the base URL.
    pub fn base_url_var(self) -> &'static str {
        match self {
            Self::Anthropic => "ANTHROPIC_BASE_URL",
            Self::OpenAi | Self::OpenAiResponses => "OPENAI_BASE_URL",
        }
    }

    /// The base URL used when none is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Self::Anthropic => "https://api.anthropic.com",
            Self::OpenAi | Self::OpenAiResponses => "https://api.openai.com/v1",
        }
    }
}

/// How to reach the model.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Wire format.
    pub provider: Provider,
    /// Model name.
    pub model: String,
    /// Base URL (without `/v1/messages`, `/chat/completions` or `/responses`).
    pub base_url: String,
    /// API key, if any (local OpenAI-compatible servers may need none).
    pub api_key: Option<String>,
    /// `max_tokens` per request.
    pub max_output_tokens: u32,
    /// Anthropic extended-thinking budget; 0 = off.
    pub thinking_budget: u32,
    /// Retry policy.
    pub retry: RetryConfig,
    /// Longest wait for a quota to reset (a 429 or 529 whose reset lies beyond the
    /// retry cap, or one that outlasts every retry); zero = never wait that long.
    pub max_wait: Duration,
}

/// A failed model request.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The server answered with an error status.
    #[error("{provider}: HTTP {status} from {url}: {message}")]
    Http {
        /// Provider name.
        provider: &'static str,
        /// Status code.
        status: u16,
        /// Request URL.
        url: String,
        /// The server's error message (or the start of its body).
        message: String,
        /// The server's `retry-after`, if given.
        retry_after: Option<Duration>,
    },
    /// The server could not be reached, or the connection failed before a response.
    #[error("{provider}: cannot reach {url}: {message}")]
    Connect {
        /// Provider name.
        provider: &'static str,
        /// Request URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// The response stream broke off or stalled before it was complete.
    #[error("{provider}: the response stream broke off: {message}")]
    Stream {
        /// Provider name.
        provider: &'static str,
        /// What happened.
        message: String,
    },
    /// The stream carried an error event.
    #[error("{provider}: the stream reported an error ({kind}): {message}")]
    StreamError {
        /// Provider name.
        provider: &'static str,
        /// Error type, e.g. `overloaded_error`.
        kind: String,
        /// Error message.
        message: String,
    },
    /// The stream carried data that is not what the wire format promises.
    #[error("{provider}: unexpected data in the response stream: {message}")]
    Protocol {
        /// Provider name.
        provider: &'static str,
        /// What was wrong.
        message: String,
    },
    /// The provider's quota (or capacity) will not be back within the allowed wait.
    #[error(
        "{message}; the limit resets in {}, beyond the longest wait allowed ({}; raise [run] max_wait_hours in baton.toml)",
        baton_records::human::wait(*reset_in),
        baton_records::human::wait(*max_wait)
    )]
    QuotaExhausted {
        /// The last error the provider gave.
        message: String,
        /// When the limit resets (or the next probe would be), from now.
        reset_in: Duration,
        /// The wait allowed.
        max_wait: Duration,
    },
    /// The client is misconfigured.
    #[error("{0}")]
    Config(String),
    /// The request was cancelled.
    #[error("cancelled")]
    Cancelled,
}

impl ModelError {
    /// Whether sending the same request again may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Http { status, .. } => {
                matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529)
            }
            Self::Connect { .. } | Self::Stream { .. } | Self::Protocol { .. } => true,
            Self::StreamError { kind, .. } => !matches!(
                kind.as_str(),
                "invalid_request_error"
                    | "authentication_error"
                    | "permission_error"
                    | "not_found_error"
                    | "request_too_large"
                    | "invalid_request"
                    | "invalid_prompt"
                    | "context_length_exceeded"
            ),
            Self::Config(_) | Self::Cancelled | Self::QuotaExhausted { .. } => false,
        }
    }

    /// Whether the server refused the connection: nothing listens at the address.
    pub fn is_refused(&self) -> bool {
        matches!(self, Self::Connect { message, .. } if message.starts_with("connection refused"))
    }

    /// Whether this is a rate limit, a quota or lasting overload: worth waiting out
    /// (until the reset the server names, or with slow probes) rather than failing.
    pub fn is_quota(&self) -> bool {
        match self {
            Self::Http { status, .. } => matches!(status, 429 | 529),
            Self::StreamError { kind, .. } => {
                matches!(
                    kind.as_str(),
                    "rate_limit_error" | "overloaded_error" | "rate_limit_exceeded"
                )
            }
            _ => false,
        }
    }

    /// The server's word on when to try again: `retry-after(-ms)` or the latest of
    /// its rate-limit reset headers.
    pub fn reset_hint(&self) -> Option<Duration> {
        match self {
            Self::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether the request did not fit the model's context window, and what the
    /// server said of its size: `(tokens sent, window)` where it named them.
    pub fn context_overflow(&self) -> Option<ContextOverflow> {
        let message = match self {
            Self::Http {
                status: 400 | 413,
                message,
                ..
            } => message,
            Self::StreamError { message, .. } => message,
            _ => return None,
        };
        ContextOverflow::parse(message)
    }
}

/// A context-length error, with the numbers the server gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextOverflow {
    /// Tokens the request had, where said.
    pub tokens: Option<u64>,
    /// The model's window (or prompt limit), where said.
    pub window: Option<u64>,
}

impl ContextOverflow {
    /// Recognise the context-length errors of Anthropic (`prompt is too long: 46112
    /// tokens > 40000 maximum`, `input length and max_tokens exceed context limit:
    /// 188240 + 21333 > 200000`), OpenAI (`context_length_exceeded`, `maximum context
    /// length is 8192 tokens. However, your messages resulted in 9000 tokens`) and the
    /// OpenAI-compatible servers that use the same words (vLLM, llama.cpp, Ollama).
    pub fn parse(message: &str) -> Option<Self> {
        let m = message.to_ascii_lowercase();
        let known = [
            "prompt is too long",
            "context_length_exceeded",
            "maximum context length",
            "context length",
            "exceed context limit",
            "exceeds the context",
            "context window",
            "too many tokens",
            "prompt too long",
        ];
        if !known.iter().any(|k| m.contains(k)) {
            return None;
        }
        let nums = numbers(&m);
        // "N tokens > M maximum" / "X + Y > Z" (prompt + max_tokens): the window
        // follows the last '>', the prompt's size is the first number before it.
        if let Some((before, after)) = m.rsplit_once('>') {
            let b = numbers(before);
            if let (Some(&w), Some(&t)) = (numbers(after).first(), b.first()) {
                return Some(Self {
                    tokens: Some(t),
                    window: Some(w),
                });
            }
        }
        // "maximum context length is W tokens. However, you requested T tokens (P in
        // the messages, C in the completion)" / "your messages resulted in P tokens".
        if let Some(i) = m.find("context length") {
            let w = numbers(&m[i..]).first().copied();
            let t = match m.find("in the messages") {
                Some(j) => numbers(&m[..j]).last().copied(),
                None => m
                    .find("resulted in")
                    .and_then(|j| numbers(&m[j..]).first().copied()),
            };
            return Some(Self {
                tokens: t,
                window: w,
            });
        }
        Some(Self {
            tokens: nums.get(1).copied(),
            window: nums.first().copied(),
        })
    }
}

/// The decimal numbers in `s`, in order (thousands separators allowed).
fn numbers(s: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            cur.push(c);
        } else if c == ',' && !cur.is_empty() && chars.peek().is_some_and(char::is_ascii_digit) {
            continue;
        } else if !cur.is_empty() {
            out.extend(cur.parse::<u64>().ok());
            cur.clear();
        }
    }
    out.extend(cur.parse::<u64>().ok());
    out
}

pub(crate) type SseStream =
    Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// Reads SSE events with an idle timeout, mapping failures to [`ModelError::Stream`].
pub(crate) struct SseReader {
    pub(crate) inner: SseStream,
    pub(crate) idle: Duration,
    pub(crate) provider: &'static str,
}

impl SseReader {
    pub(crate) async fn next(&mut self) -> Result<Option<Event>, ModelError> {
        match tokio::time::timeout(self.idle, self.inner.next()).await {
            Err(_) => Err(ModelError::Stream {
                provider: self.provider,
                message: format!("no data for {} s", self.idle.as_secs()),
            }),
            Ok(None) => Ok(None),
            Ok(Some(Err(e))) => Err(ModelError::Stream {
                provider: self.provider,
                message: error_chain(&e),
            }),
            Ok(Some(Ok(ev))) => Ok(Some(ev)),
        }
    }

    pub(crate) fn protocol(&self, message: String) -> ModelError {
        ModelError::Protocol {
            provider: self.provider,
            message,
        }
    }
}

/// Parse a tool call's accumulated input; explain a failure so the model can fix it.
pub(crate) fn parse_tool_input(json: &str, stop: &StopReason) -> Result<Value, String> {
    match serde_json::from_str::<Value>(json) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(format!(
            "the tool input must be a JSON object, got: {}",
            snippet(json)
        )),
        Err(e) if *stop == StopReason::MaxTokens => Err(format!(
            "the tool input was cut off by the output token limit ({e}); make the call again with a shorter input (for a large file, write it in parts)"
        )),
        Err(e) => Err(format!(
            "the tool input is not valid JSON ({e}): {}",
            snippet(json)
        )),
    }
}

pub(crate) fn snippet(s: &str) -> String {
    let cut: String = s.chars().take(200).collect();
    if cut.len() < s.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

/// Why a request to `url` could not be sent: the error's causes without the
/// URL (the error line names it once), and a refused connection said plainly.
pub(crate) fn connect_cause(e: &dyn std::error::Error, url: &str) -> String {
    let chain = error_chain(e);
    if chain.contains("Connection refused") || chain.contains("connection refused") {
        return "connection refused: nothing listens at that address (check the provider's base URL, or start the server)".to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut src = e.source();
    while let Some(c) = src {
        let m = c.to_string();
        if !m.contains(url) && !parts.iter().any(|p| p.contains(&m)) {
            parts.push(m);
        }
        src = c.source();
    }
    if parts.is_empty() {
        chain.replace(&format!(" for url ({url})"), "")
    } else {
        parts.join(": ")
    }
}

pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        src = c.source();
    }
    s
}
