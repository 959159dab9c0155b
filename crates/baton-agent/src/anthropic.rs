//! The Anthropic Messages API wire format: request bodies with prompt caching, and
//! the SSE stream (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`, `ping`, `error`) assembled into a [`ModelResponse`].

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::model::{Block, ModelResponse, Request, StopReason, Usage};
use crate::wire::{ClientConfig, ModelError, SseReader, parse_tool_input, snippet};

/// The `anthropic-version` header value.
pub const API_VERSION: &str = "2023-06-01";

/// The JSON body of a streaming Messages request. Cache breakpoints go on the system
/// prompt, the last tool and the last block of the last message, so each turn reads
/// the previous turn's prefix from the cache.
pub fn request_body(cfg: &ClientConfig, req: &Request<'_>) -> Value {
    let ephemeral = json!({"type": "ephemeral"});
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = ephemeral.clone();
    }
    let mut messages = serde_json::to_value(req.messages).unwrap_or(Value::Array(Vec::new()));
    without_reasoning(&mut messages);
    images_as_content(&mut messages);
    if let Some(block) = messages
        .as_array_mut()
        .and_then(|m| m.last_mut())
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|c| c.last_mut())
    {
        block["cache_control"] = ephemeral.clone();
    }
    let mut body = json!({
        "model": cfg.model,
        "max_tokens": req.max_tokens.unwrap_or(cfg.max_output_tokens).min(cfg.max_output_tokens),
        "stream": true,
        "system": [{"type": "text", "text": req.system, "cache_control": ephemeral}],
        "messages": messages,
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if cfg.thinking_budget > 0 {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": cfg.thinking_budget});
    }
    body
}

/// Take out the Responses API's reasoning items, which this API does not know (a
/// conversation begun on `openai-responses` may be continued here).
fn without_reasoning(messages: &mut Value) {
    for m in messages.as_array_mut().into_iter().flatten() {
        if let Some(blocks) = m["content"].as_array_mut() {
            blocks.retain(|b| b["type"] != "reasoning");
        }
    }
}

/// Images the conversation keeps sending, newest first; older ones are replaced by a
/// note (they stay on disk as evidence), so screenshots do not grow every request.
const IMAGES_KEPT: usize = 4;

/// Turn `tool_result` blocks with `images` into the API's content arrays.
fn images_as_content(messages: &mut Value) {
    let mut seen = 0;
    let Some(msgs) = messages.as_array_mut() else {
        return;
    };
    for m in msgs.iter_mut().rev() {
        let Some(blocks) = m["content"].as_array_mut() else {
            continue;
        };
        for b in blocks.iter_mut().rev() {
            let Some(images) = b.as_object_mut().and_then(|o| o.shift_remove("images")) else {
                continue;
            };
            let text = b["content"].as_str().unwrap_or_default().to_string();
            let mut content = vec![json!({"type": "text", "text": text})];
            for img in images
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .rev()
            {
                seen += 1;
                if seen <= IMAGES_KEPT {
                    content.insert(
                        1,
                        json!({"type": "image", "source": {
                        "type": "base64", "media_type": img["media_type"], "data": img["data"]}}),
                    );
                } else {
                    content.push(json!({"type": "text", "text": "[an older screenshot was left out; it is kept as an evidence file]"}));
                }
            }
            b["content"] = Value::Array(content);
        }
    }
}

/// A content block as far as the stream has carried it.
enum Partial {
    /// Text.
    Text(String),
    /// Extended thinking and its signature.
    Thinking {
        /// The thinking so far.
        thinking: String,
        /// Its signature so far.
        signature: String,
    },
    /// Redacted thinking: its opaque data.
    Redacted(String),
    /// A tool call.
    Tool {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// Its input as streamed JSON so far.
        json: String,
        /// The input the start of the block carried.
        start_input: Value,
    },
}

/// Take the token counts a `usage` object carries into `u`, leaving the others.
fn usage_from(v: &Value, u: &mut Usage) {
    let get = |k: &str| v.get(k).and_then(Value::as_u64);
    if let Some(n) = get("input_tokens") {
        u.input_tokens = n;
    }
    if let Some(n) = get("output_tokens") {
        u.output_tokens = n;
    }
    if let Some(n) = get("cache_read_input_tokens") {
        u.cache_read_tokens = n;
    }
    if let Some(n) = get("cache_creation_input_tokens") {
        u.cache_write_tokens = n;
    }
}

/// Assemble a response from the event stream. Errors if the stream ends before
/// `message_stop`, carries an `error` event, or carries data that is not JSON.
pub(crate) async fn read_stream(r: &mut SseReader) -> Result<ModelResponse, ModelError> {
    let mut blocks: BTreeMap<u64, Partial> = BTreeMap::new();
    let mut usage = Usage::default();
    let mut stop_reason: Option<StopReason> = None;
    let mut started = false;
    loop {
        let Some(ev) = r.next().await? else {
            return Err(ModelError::Stream {
                provider: r.provider,
                message: if started {
                    "the stream ended before message_stop".into()
                } else {
                    "the stream ended before message_start".into()
                },
            });
        };
        if ev.event == "ping" {
            continue;
        }
        let data: Value = serde_json::from_str(&ev.data).map_err(|e| {
            r.protocol(format!(
                "{} event data is not JSON ({e}): {}",
                ev.event,
                snippet(&ev.data)
            ))
        })?;
        let kind = data["type"]
            .as_str()
            .unwrap_or(ev.event.as_str())
            .to_string();
        match kind.as_str() {
            "message_start" => {
                started = true;
                usage_from(&data["message"]["usage"], &mut usage);
            }
            "content_block_start" => {
                let (index, p) = block_start(r, &data)?;
                blocks.insert(index, p);
            }
            "content_block_delta" => block_delta(r, &data, &mut blocks)?,
            "content_block_stop" => {}
            "message_delta" => {
                if let Some(s) = data["delta"]["stop_reason"].as_str() {
                    stop_reason = Some(StopReason::from_anthropic(s));
                }
                usage_from(&data["usage"], &mut usage);
            }
            "message_stop" => break,
            "error" => return Err(stream_error(r, &data)),
            _ => {} // Unknown event types are ignored, as the API's versioning policy asks.
        }
    }
    let stop_reason =
        stop_reason.ok_or_else(|| r.protocol("message_stop without a stop_reason".into()))?;
    Ok(assemble(blocks, stop_reason, usage))
}

/// A `content_block_start` event: the block's index and the block begun, with what
/// the event already carries of it. Errors on a block type this client does not know.
fn block_start(r: &SseReader, data: &Value) -> Result<(u64, Partial), ModelError> {
    let index = index_of(r, data)?;
    let cb = &data["content_block"];
    let p = match cb["type"].as_str() {
        Some("text") => Partial::Text(cb["text"].as_str().unwrap_or_default().to_string()),
        Some("thinking") => Partial::Thinking {
            thinking: cb["thinking"].as_str().unwrap_or_default().to_string(),
            signature: cb["signature"].as_str().unwrap_or_default().to_string(),
        },
        Some("redacted_thinking") => {
            Partial::Redacted(cb["data"].as_str().unwrap_or_default().to_string())
        }
        Some("tool_use") => Partial::Tool {
            id: cb["id"].as_str().unwrap_or_default().to_string(),
            name: cb["name"].as_str().unwrap_or_default().to_string(),
            json: String::new(),
            start_input: cb.get("input").cloned().unwrap_or_else(|| json!({})),
        },
        other => {
            return Err(r.protocol(format!(
                "content_block_start with unsupported block type {other:?}"
            )));
        }
    };
    Ok((index, p))
}

/// A `content_block_delta` event: its text, thinking, signature or tool input added
/// to the block it names. Errors when that block was never started or the delta does
/// not fit it; citations are ignored.
fn block_delta(
    r: &SseReader,
    data: &Value,
    blocks: &mut BTreeMap<u64, Partial>,
) -> Result<(), ModelError> {
    let index = index_of(r, data)?;
    let d = &data["delta"];
    let dtype = d["type"].as_str().unwrap_or_default();
    let block = blocks.get_mut(&index).ok_or_else(|| {
        r.protocol(format!(
            "content_block_delta for block {index}, which was never started"
        ))
    })?;
    match (dtype, block) {
        ("text_delta", Partial::Text(t)) => t.push_str(d["text"].as_str().unwrap_or_default()),
        ("thinking_delta", Partial::Thinking { thinking, .. }) => {
            thinking.push_str(d["thinking"].as_str().unwrap_or_default())
        }
        ("signature_delta", Partial::Thinking { signature, .. }) => {
            signature.push_str(d["signature"].as_str().unwrap_or_default())
        }
        ("input_json_delta", Partial::Tool { json, .. }) => {
            json.push_str(d["partial_json"].as_str().unwrap_or_default())
        }
        ("citations_delta", _) => {}
        (other, _) => {
            return Err(r.protocol(format!("delta type {other:?} does not fit block {index}")));
        }
    }
    Ok(())
}

/// The error an `error` event reports: its type and message.
fn stream_error(r: &SseReader, data: &Value) -> ModelError {
    ModelError::StreamError {
        provider: r.provider,
        kind: data["error"]["type"]
            .as_str()
            .unwrap_or("error")
            .to_string(),
        message: data["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    }
}

/// The response the finished blocks make, in index order. A tool call's input is
/// parsed from its streamed JSON (or taken from its start when none was streamed);
/// input that does not parse becomes `{}`, its call listed in `invalid_inputs`.
fn assemble(
    blocks: BTreeMap<u64, Partial>,
    stop_reason: StopReason,
    usage: Usage,
) -> ModelResponse {
    let mut content = Vec::with_capacity(blocks.len());
    let mut invalid_inputs = Vec::new();
    for p in blocks.into_values() {
        content.push(match p {
            Partial::Text(text) => Block::Text { text },
            Partial::Thinking {
                thinking,
                signature,
            } => Block::Thinking {
                thinking,
                signature,
            },
            Partial::Redacted(data) => Block::RedactedThinking { data },
            Partial::Tool {
                id,
                name,
                json,
                start_input,
            } => {
                let input = if json.trim().is_empty() {
                    start_input
                } else {
                    match parse_tool_input(&json, &stop_reason) {
                        Ok(v) => v,
                        Err(why) => {
                            invalid_inputs.push((id.clone(), why));
                            json!({})
                        }
                    }
                };
                Block::ToolUse { id, name, input }
            }
        });
    }
    ModelResponse {
        content,
        stop_reason,
        usage,
        invalid_inputs,
    }
}

/// The `index` of a content block event; an error when it has none.
fn index_of(r: &SseReader, data: &Value) -> Result<u64, ModelError> {
    data["index"]
        .as_u64()
        .ok_or_else(|| r.protocol(format!("{} without an index", data["type"])))
}
