//! What the scripted model says.

use serde_json::Value;

/// The wire format a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages API (`POST /v1/messages`).
    Anthropic,
    /// OpenAI chat completions (`POST /chat/completions` under the base URL).
    OpenAi,
    /// The OpenAI Responses API (`POST /responses` under the base URL).
    OpenAiResponses,
}

/// One content block of a scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum RBlock {
    /// Text.
    Text(String),
    /// Extended thinking with its signature (Anthropic); on the Responses wire a
    /// reasoning item, `thinking` its summary and `signature` its encrypted content.
    /// Chat completions leave it out.
    Thinking {
        /// Thinking text.
        thinking: String,
        /// Signature.
        signature: String,
    },
    /// A tool call; `input_json` is sent verbatim, so it may be invalid on purpose.
    ToolUse {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// The input's JSON text.
        input_json: String,
    },
}

/// A complete model reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// Its blocks, in order.
    pub blocks: Vec<RBlock>,
    /// Stop reason in the wire's vocabulary; `None` derives it (tool use or end of turn).
    pub stop: Option<String>,
    /// Input, output, cache-read and cache-write tokens reported.
    pub usage: [u64; 4],
}

impl Reply {
    /// A text-only reply that ends the turn.
    pub fn text(text: &str) -> Self {
        Self {
            blocks: vec![RBlock::Text(text.into())],
            stop: None,
            usage: [100, 20, 0, 0],
        }
    }

    /// A reply with one tool call.
    pub fn tool(name: &str, input: Value) -> Self {
        Self::tools(&[(name, input)])
    }

    /// A reply with several tool calls in one turn.
    pub fn tools(calls: &[(&str, Value)]) -> Self {
        let blocks = calls
            .iter()
            .map(|(name, input)| RBlock::ToolUse {
                id: String::new(),
                name: (*name).into(),
                input_json: input.to_string(),
            })
            .collect();
        Self {
            blocks,
            stop: None,
            usage: [100, 20, 0, 0],
        }
    }

    /// A reply with one tool call whose input text is sent as given (valid JSON or not).
    pub fn raw_tool(name: &str, input_json: &str) -> Self {
        Self {
            blocks: vec![RBlock::ToolUse {
                id: String::new(),
                name: name.into(),
                input_json: input_json.into(),
            }],
            stop: None,
            usage: [100, 20, 0, 0],
        }
    }

    /// Put a text block before the others.
    pub fn with_text(mut self, text: &str) -> Self {
        self.blocks.insert(0, RBlock::Text(text.into()));
        self
    }

    /// Put a thinking block first.
    pub fn with_thinking(mut self, thinking: &str, signature: &str) -> Self {
        self.blocks.insert(
            0,
            RBlock::Thinking {
                thinking: thinking.into(),
                signature: signature.into(),
            },
        );
        self
    }

    /// Set the stop reason explicitly (e.g. `max_tokens`).
    pub fn with_stop(mut self, stop: &str) -> Self {
        self.stop = Some(stop.into());
        self
    }

    /// Set the reported usage.
    pub fn with_usage(
        mut self,
        input: u64,
        output: u64,
        cache_read: u64,
        cache_write: u64,
    ) -> Self {
        self.usage = [input, output, cache_read, cache_write];
        self
    }

    pub(crate) fn has_tools(&self) -> bool {
        self.blocks
            .iter()
            .any(|b| matches!(b, RBlock::ToolUse { .. }))
    }
}

/// One answer of the server, consumed in order, one per request.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Stream a complete reply.
    Reply(Reply),
    /// Answer with an HTTP status, extra headers and a body (JSON or not).
    Status {
        /// Status code.
        status: u16,
        /// Extra headers, e.g. `retry-after`.
        headers: Vec<(String, String)>,
        /// Body text.
        body: String,
    },
    /// Read the request, then close the connection without answering.
    Reset,
    /// Stream the first `events` SSE events of a reply, then close the connection mid-body.
    Cut {
        /// The reply begun.
        reply: Reply,
        /// Events sent before the cut.
        events: usize,
    },
    /// Stream the first `events` events of a reply, then an SSE error event, then end the body.
    SseError {
        /// The reply begun.
        reply: Reply,
        /// Events sent before the error.
        events: usize,
        /// Error type, e.g. `overloaded_error`.
        kind: String,
        /// Error message.
        message: String,
    },
    /// Send this SSE body text verbatim with status 200.
    Raw(String),
    /// Stream the first `events` events of a reply, then send nothing more for
    /// 5 seconds before closing (a stalled stream).
    Stall {
        /// The reply begun.
        reply: Reply,
        /// Events sent before the stall.
        events: usize,
    },
    /// A quota wall, as a real provider puts it up: from this request on, every
    /// request is answered HTTP 429 until `reset_in` has passed (those answers use no
    /// step), with the reset time in the wire's headers (`retry-after` too when
    /// `retry_after`); then the script goes on with the next step.
    QuotaWall {
        /// How long until the quota resets.
        reset_in: std::time::Duration,
        /// Also send `retry-after` (seconds), not only the reset headers.
        retry_after: bool,
        /// A hard usage limit: `x-should-retry: false` and the subscription headers
        /// (`anthropic-ratelimit-unified-status: rejected`, `-unified-reset`), which make
        /// clients such as Claude Code give up at once instead of retrying.
        hard: bool,
    },
}

impl Step {
    /// A quota wall for `reset_in` whose reset time is only in the rate-limit headers.
    pub fn quota_wall(reset_in: std::time::Duration) -> Self {
        Self::QuotaWall {
            reset_in,
            retry_after: false,
            hard: false,
        }
    }

    /// HTTP 429 with `retry-after` in seconds.
    pub fn rate_limited(retry_after_secs: u32) -> Self {
        Self::Status {
            status: 429,
            headers: vec![("retry-after".into(), retry_after_secs.to_string())],
            body: r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}"#.into(),
        }
    }

    /// HTTP 529 overloaded (Anthropic).
    pub fn overloaded() -> Self {
        Self::Status {
            status: 529,
            headers: vec![],
            body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                .into(),
        }
    }

    /// An HTTP status with a JSON error body.
    pub fn error(status: u16, kind: &str, message: &str) -> Self {
        Self::Status {
            status,
            headers: vec![],
            body: serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
                .to_string(),
        }
    }
}
