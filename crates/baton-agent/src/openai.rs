//! The OpenAI-compatible chat-completions wire format (OpenAI, Ollama, vLLM,
//! llama.cpp server, …): messages converted from the neutral shape, and streamed
//! `tool_calls` deltas assembled by index.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::model::{Block, Message, ModelResponse, Request, Role, StopReason, Usage};
use crate::wire::{ClientConfig, ModelError, SseReader, parse_tool_input, snippet};

/// The JSON body of a streaming chat-completions request.
pub fn request_body(cfg: &ClientConfig, req: &Request<'_>) -> Value {
    let mut messages = vec![json!({"role": "system", "content": req.system})];
    for m in req.messages {
        convert(m, &mut messages);
    }
    let mut body = json!({
        "model": cfg.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": req.max_tokens.unwrap_or(cfg.max_output_tokens).min(cfg.max_output_tokens),
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema}})
            })
            .collect();
    }
    body
}

fn convert(m: &Message, out: &mut Vec<Value>) {
    let text = crate::model::text_of(&m.content);
    match m.role {
        Role::User => {
            for b in &m.content {
                if let Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    images,
                } = b
                {
                    let mut content = if *is_error {
                        format!("Error: {content}")
                    } else {
                        content.clone()
                    };
                    if !images.is_empty() {
                        // Chat completions carry no images in tool messages.
                        content.push_str(&format!(
                            "\n[{} image(s) omitted: this API takes no images in tool results; they are kept as evidence files]",
                            images.len()
                        ));
                    }
                    out.push(
                        json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}),
                    );
                }
            }
            if !text.is_empty() {
                out.push(json!({"role": "user", "content": text}));
            }
        }
        Role::Assistant => {
            let calls: Vec<Value> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    Block::ToolUse { id, name, input } => Some(json!({
                        "id": id, "type": "function",
                        "function": {"name": name, "arguments": input.to_string()}})),
                    _ => None,
                })
                .collect();
            let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text) }});
            if !calls.is_empty() {
                msg["tool_calls"] = Value::Array(calls);
            }
            out.push(msg);
        }
    }
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Assemble a response from the chunk stream. Errors if the stream ends before a
/// `finish_reason`, carries an error object, or carries data that is not JSON.
pub(crate) async fn read_stream(r: &mut SseReader) -> Result<ModelResponse, ModelError> {
    let mut text = String::new();
    let mut calls: BTreeMap<u64, PartialCall> = BTreeMap::new();
    let mut finish: Option<StopReason> = None;
    let mut usage = Usage::default();
    while let Some(ev) = r.next().await? {
        let data = ev.data.trim();
        if data == "[DONE]" {
            break;
        }
        if data.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| r.protocol(format!("chunk is not JSON ({e}): {}", snippet(data))))?;
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            return Err(ModelError::StreamError {
                provider: r.provider,
                kind: err["type"]
                    .as_str()
                    .or_else(|| err["code"].as_str())
                    .unwrap_or("error")
                    .to_string(),
                message: err["message"]
                    .as_str()
                    .or_else(|| err.as_str())
                    .unwrap_or_default()
                    .to_string(),
            });
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            usage = usage_of(u);
        }
        let Some(choice) = v["choices"].as_array().and_then(|c| c.first()) else {
            continue;
        };
        let delta = &choice["delta"];
        if let Some(t) = delta["content"].as_str() {
            text.push_str(t);
        }
        if let Some(tcs) = delta["tool_calls"].as_array() {
            for (pos, tc) in tcs.iter().enumerate() {
                let index = tc["index"].as_u64().unwrap_or(pos as u64);
                let call = calls.entry(index).or_default();
                if let Some(id) = tc["id"].as_str().filter(|s| !s.is_empty()) {
                    call.id = id.to_string();
                }
                if let Some(n) = tc["function"]["name"].as_str() {
                    call.name.push_str(n);
                }
                if let Some(a) = tc["function"]["arguments"].as_str() {
                    call.arguments.push_str(a);
                }
            }
        }
        if let Some(f) = choice["finish_reason"].as_str() {
            finish = Some(StopReason::from_openai(f));
        }
    }
    let stop_reason = finish.ok_or_else(|| ModelError::Stream {
        provider: r.provider,
        message: "the stream ended before a finish_reason".into(),
    })?;
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(Block::Text { text });
    }
    let mut invalid_inputs = Vec::new();
    for (index, c) in calls {
        let id = if c.id.is_empty() {
            format!("call_{index}")
        } else {
            c.id
        };
        let input = if c.arguments.trim().is_empty() {
            json!({})
        } else {
            parse_tool_input(&c.arguments, &stop_reason).unwrap_or_else(|why| {
                invalid_inputs.push((id.clone(), why));
                json!({})
            })
        };
        content.push(Block::ToolUse {
            id,
            name: c.name,
            input,
        });
    }
    Ok(ModelResponse {
        content,
        stop_reason,
        usage,
        invalid_inputs,
    })
}

/// A chat completion's `usage` as a [`Usage`]: cached prompt tokens are cache reads.
pub(crate) fn usage_of(u: &Value) -> Usage {
    let prompt = u["prompt_tokens"].as_u64().unwrap_or(0);
    let cached = u["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or(0);
    Usage {
        input_tokens: prompt.saturating_sub(cached),
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}
