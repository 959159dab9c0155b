//! Scripted replies rendered as SSE events of each wire format.

use serde_json::{Value, json};

use crate::script::{RBlock, Reply, Wire};

/// Text is streamed in pieces of this many characters.
const PIECE: usize = 7;

fn pieces(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(PIECE).map(|c| c.iter().collect()).collect()
}

/// One SSE event as text, ending with the blank line.
pub(crate) fn sse(event: Option<&str>, data: &str) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// The events of `reply`, ids numbered from `seq`.
pub(crate) fn events(wire: Wire, reply: &Reply, seq: usize) -> Vec<String> {
    match wire {
        Wire::Anthropic => anthropic(reply, seq),
        Wire::OpenAi => openai(reply, seq),
    }
}

fn tool_id(id: &str, seq: usize, i: usize) -> String {
    if id.is_empty() {
        format!("toolu_{seq:03}_{i}")
    } else {
        id.to_string()
    }
}

fn anthropic(reply: &Reply, seq: usize) -> Vec<String> {
    let ev = |name: &str, data: Value| sse(Some(name), &data.to_string());
    let [input, output, cache_read, cache_write] = reply.usage;
    let mut out = vec![ev(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_{seq:04}"), "type": "message", "role": "assistant", "model": "scripted",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "output_tokens": 1,
                      "cache_read_input_tokens": cache_read, "cache_creation_input_tokens": cache_write}}}),
    )];
    out.push(ev("ping", json!({"type": "ping"})));
    for (i, b) in reply.blocks.iter().enumerate() {
        match b {
            RBlock::Text(t) => {
                out.push(ev("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}})));
                for p in pieces(t) {
                    out.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": p}})));
                }
            }
            RBlock::Thinking {
                thinking,
                signature,
            } => {
                out.push(ev("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": "thinking", "thinking": ""}})));
                for p in pieces(thinking) {
                    out.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "thinking_delta", "thinking": p}})));
                }
                out.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "signature_delta", "signature": signature}})));
            }
            RBlock::ToolUse {
                id,
                name,
                input_json,
            } => {
                out.push(ev("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": tool_id(id, seq, i), "name": name, "input": {}}})));
                for p in pieces(input_json) {
                    out.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": p}})));
                }
            }
        }
        out.push(ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        ));
    }
    let stop = reply.stop.clone().unwrap_or_else(|| {
        if reply.has_tools() {
            "tool_use".into()
        } else {
            "end_turn".into()
        }
    });
    out.push(ev("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": output}})));
    out.push(ev("message_stop", json!({"type": "message_stop"})));
    out
}

fn openai(reply: &Reply, seq: usize) -> Vec<String> {
    let id = format!("chatcmpl-{seq:04}");
    let chunk = |delta: Value, finish: Value| {
        sse(
            None,
            &json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": "scripted",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
        )
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    let mut tool_index = 0;
    for (i, b) in reply.blocks.iter().enumerate() {
        match b {
            RBlock::Text(t) => {
                for p in pieces(t) {
                    out.push(chunk(json!({"content": p}), Value::Null));
                }
            }
            RBlock::Thinking { .. } => {}
            RBlock::ToolUse {
                id,
                name,
                input_json,
            } => {
                let call_id = if id.is_empty() {
                    format!("call_{seq:03}_{i}")
                } else {
                    id.clone()
                };
                out.push(chunk(json!({"tool_calls": [{"index": tool_index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]}), Value::Null));
                for p in pieces(input_json) {
                    out.push(chunk(json!({"tool_calls": [{"index": tool_index, "function": {"arguments": p}}]}), Value::Null));
                }
                tool_index += 1;
            }
        }
    }
    let stop = reply.stop.clone().unwrap_or_else(|| {
        if reply.has_tools() {
            "tool_calls".into()
        } else {
            "stop".into()
        }
    });
    out.push(chunk(json!({}), Value::String(stop)));
    let [input, output, cache_read, _] = reply.usage;
    out.push(sse(None, &json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": "scripted", "choices": [],
        "usage": {"prompt_tokens": input + cache_read, "completion_tokens": output, "total_tokens": input + cache_read + output,
                  "prompt_tokens_details": {"cached_tokens": cache_read}}}).to_string()));
    out.push(sse(None, "[DONE]"));
    out
}

/// The SSE error event of each wire.
pub(crate) fn error_event(wire: Wire, kind: &str, message: &str) -> String {
    match wire {
        Wire::Anthropic => sse(
            Some("error"),
            &json!({"type": "error", "error": {"type": kind, "message": message}}).to_string(),
        ),
        Wire::OpenAi => sse(
            None,
            &json!({"error": {"type": kind, "message": message}}).to_string(),
        ),
    }
}
