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
        Wire::OpenAiResponses => responses(reply, seq),
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

/// The Responses API's events: `response.created`, then per output item
/// `response.output_item.added`, its parts and deltas, `response.output_item.done`,
/// and `response.completed` (or `response.incomplete` when the stop reason is
/// `max_output_tokens` or `content_filter`) with the usage. Every event names its
/// type in `event:` and in `type`, with a `sequence_number`.
fn responses(reply: &Reply, seq: usize) -> Vec<String> {
    let mut n = 0u64;
    let mut out = Vec::new();
    let mut ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        data["sequence_number"] = json!(n);
        n += 1;
        out.push(sse(Some(name), &data.to_string()));
    };
    let id = format!("resp_{seq:04}");
    let stop = reply.stop.clone().unwrap_or_else(|| "completed".into());
    let incomplete = matches!(stop.as_str(), "max_output_tokens" | "content_filter");
    let response = |status: &str, output: Vec<Value>| {
        json!({"id": id, "object": "response", "created_at": 0, "status": status,
               "model": "scripted", "output": output, "usage": null,
               "incomplete_details": null, "error": null, "store": false})
    };
    ev(
        "response.created",
        json!({"response": response("in_progress", vec![])}),
    );
    ev(
        "response.in_progress",
        json!({"response": response("in_progress", vec![])}),
    );
    let last = reply.blocks.len().saturating_sub(1);
    let mut done_items = Vec::new();
    for (i, b) in reply.blocks.iter().enumerate() {
        let status = if incomplete && i == last {
            "incomplete"
        } else {
            "completed"
        };
        let done = match b {
            RBlock::Text(t) => {
                let item_id = format!("msg_{seq:03}_{i}");
                ev(
                    "response.output_item.added",
                    json!({"output_index": i, "item": {
                    "id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
                );
                ev(
                    "response.content_part.added",
                    json!({"item_id": item_id, "output_index": i, "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []}}),
                );
                for p in pieces(t) {
                    ev(
                        "response.output_text.delta",
                        json!({"item_id": item_id, "output_index": i, "content_index": 0, "delta": p, "logprobs": []}),
                    );
                }
                ev(
                    "response.output_text.done",
                    json!({"item_id": item_id, "output_index": i, "content_index": 0, "text": t, "logprobs": []}),
                );
                let part = json!({"type": "output_text", "text": t, "annotations": []});
                ev(
                    "response.content_part.done",
                    json!({"item_id": item_id, "output_index": i, "content_index": 0, "part": part}),
                );
                json!({"id": item_id, "type": "message", "status": status, "role": "assistant", "content": [part]})
            }
            RBlock::Thinking {
                thinking,
                signature,
            } => {
                let item_id = format!("rs_{seq:03}_{i}");
                ev(
                    "response.output_item.added",
                    json!({"output_index": i, "item": {
                    "id": item_id, "type": "reasoning", "summary": []}}),
                );
                ev(
                    "response.reasoning_summary_part.added",
                    json!({"item_id": item_id, "output_index": i, "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""}}),
                );
                for p in pieces(thinking) {
                    ev(
                        "response.reasoning_summary_text.delta",
                        json!({"item_id": item_id, "output_index": i, "summary_index": 0, "delta": p}),
                    );
                }
                ev(
                    "response.reasoning_summary_text.done",
                    json!({"item_id": item_id, "output_index": i, "summary_index": 0, "text": thinking}),
                );
                let part = json!({"type": "summary_text", "text": thinking});
                ev(
                    "response.reasoning_summary_part.done",
                    json!({"item_id": item_id, "output_index": i, "summary_index": 0, "part": part}),
                );
                json!({"id": item_id, "type": "reasoning", "summary": [part], "encrypted_content": signature})
            }
            RBlock::ToolUse {
                id,
                name,
                input_json,
            } => function_call_events(&mut ev, (seq, i), id, name, input_json, status),
        };
        ev(
            "response.output_item.done",
            json!({"output_index": i, "item": done.clone()}),
        );
        done_items.push(done);
    }
    let [input, output, cache_read, _] = reply.usage;
    let usage = json!({"input_tokens": input + cache_read, "input_tokens_details": {"cached_tokens": cache_read},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + cache_read + output});
    if incomplete {
        let mut r = response("incomplete", done_items);
        r["incomplete_details"] = json!({"reason": stop});
        r["usage"] = usage;
        ev("response.incomplete", json!({"response": r}));
    } else {
        let mut r = response("completed", done_items);
        r["usage"] = usage;
        ev("response.completed", json!({"response": r}));
    }
    out
}

/// The events of one function call on the Responses wire (`at`: the reply's
/// sequence number and the item's index); returns the finished item.
fn function_call_events(
    ev: &mut dyn FnMut(&str, Value),
    at: (usize, usize),
    id: &str,
    name: &str,
    input_json: &str,
    status: &str,
) -> Value {
    let (seq, i) = at;
    let item_id = format!("fc_{seq:03}_{i}");
    let call_id = if id.is_empty() {
        format!("call_{seq:03}_{i}")
    } else {
        id.to_string()
    };
    let call = |status: &str, args: &str| {
        function_call(
            json!({"id": item_id, "type": "function_call", "status": status,
            "call_id": call_id, "name": name, "arguments": args}),
        )
    };
    ev(
        "response.output_item.added",
        json!({"output_index": i, "item": call("in_progress", "")}),
    );
    for p in pieces(input_json) {
        ev(
            "response.function_call_arguments.delta",
            json!({"item_id": item_id, "output_index": i, "delta": p}),
        );
    }
    if status == "completed" {
        ev(
            "response.function_call_arguments.done",
            json!({"item_id": item_id, "output_index": i, "arguments": input_json}),
        );
    }
    call(status, input_json)
}

/// A function call item; a `name` of the form `NAMESPACE::name` is a call of a tool
/// in a namespace (as Codex offers an MCP server's tools), and the item names both.
fn function_call(mut item: Value) -> Value {
    let full = item["name"].as_str().unwrap_or_default().to_string();
    if let Some((ns, name)) = full.split_once("::") {
        item["name"] = json!(name);
        item["namespace"] = json!(ns);
    }
    item
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
        // A failure mid-stream ends the response as failed.
        Wire::OpenAiResponses => sse(
            Some("response.failed"),
            &json!({"type": "response.failed", "sequence_number": 9999, "response": {
                "id": "resp_failed", "object": "response", "status": "failed",
                "error": {"code": kind, "message": message}, "incomplete_details": null,
                "output": [], "usage": null}})
            .to_string(),
        ),
    }
}
