//! The OpenAI Responses API wire format (`POST {base}/responses`): the conversation
//! as `input` items (messages, `function_call`, `function_call_output`, and the
//! model's `reasoning` items carried back with their encrypted content, since
//! nothing is stored on the server), and the semantic SSE events
//! (`response.output_item.*`, `response.*.delta`, `response.completed`,
//! `response.incomplete`, `response.failed`, `error`) assembled into a
//! [`ModelResponse`].

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::model::{Block, Message, ModelResponse, Request, Role, StopReason, Usage};
use crate::wire::{ClientConfig, ModelError, SseReader, parse_tool_input, snippet};

/// The JSON body of a streaming Responses request.
pub fn request_body(cfg: &ClientConfig, req: &Request<'_>) -> Value {
    let mut input = Vec::new();
    // Screenshots are sent from the newest back, at most `IMAGES_KEPT` of them.
    let mut images_left = req
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .map(|b| match b {
            Block::ToolResult { images, .. } => images.len(),
            _ => 0,
        })
        .sum::<usize>()
        .saturating_sub(IMAGES_KEPT);
    for m in req.messages {
        convert(m, &mut input, &mut images_left);
    }
    let mut body = json!({
        "model": cfg.model,
        "instructions": req.system,
        "input": input,
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": req.max_tokens.unwrap_or(cfg.max_output_tokens).min(cfg.max_output_tokens),
    });
    if !req.tools.is_empty() {
        // `strict` is off: in strict mode every property must be required and no
        // others allowed, which the tools' schemas do not promise.
        body["tools"] = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                       "parameters": t.input_schema, "strict": false})
            })
            .collect();
    }
    if let Some(key) = req.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    body
}

/// Images the conversation keeps sending, newest first; older ones are replaced by a
/// note (they stay on disk as evidence), so screenshots do not grow every request.
const IMAGES_KEPT: usize = 4;

/// One message of the conversation as input items, in order. `skip_images` counts
/// down the older images to leave out.
fn convert(m: &Message, out: &mut Vec<Value>, skip_images: &mut usize) {
    match m.role {
        Role::User => {
            let mut texts = Vec::new();
            // A function call's output is text; its images follow in a user message.
            let mut shown = Vec::new();
            for b in &m.content {
                match b {
                    Block::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                        images,
                    } => {
                        let mut output = if *is_error {
                            format!("Error: {content}")
                        } else {
                            content.clone()
                        };
                        let mut parts = Vec::new();
                        for img in images {
                            if *skip_images > 0 {
                                *skip_images -= 1;
                                output.push_str("\n[an older screenshot was left out; it is kept as an evidence file]");
                            } else {
                                parts.push(json!({"type": "input_image",
                                    "image_url": format!("data:{};base64,{}", img.media_type, img.data)}));
                            }
                        }
                        if !parts.is_empty() {
                            output.push_str(&format!(
                                "\n[{} image(s) of this result follow in the next user message]",
                                parts.len()
                            ));
                            parts.insert(
                                0,
                                json!({"type": "input_text", "text": format!("Image(s) returned by call {tool_use_id}:")}),
                            );
                            shown.extend(parts);
                        }
                        out.push(json!({"type": "function_call_output", "call_id": tool_use_id, "output": output}));
                    }
                    Block::Text { text } => {
                        texts.push(json!({"type": "input_text", "text": text}));
                    }
                    _ => {}
                }
            }
            if !shown.is_empty() {
                out.push(json!({"type": "message", "role": "user", "content": shown}));
            }
            if !texts.is_empty() {
                out.push(json!({"type": "message", "role": "user", "content": texts}));
            }
        }
        Role::Assistant => {
            for b in &m.content {
                match b {
                    Block::Text { text } => out.push(json!({
                        "type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]})),
                    // Without its encrypted content a reasoning item cannot be
                    // sent back (it is not stored), so it is left out.
                    Block::Reasoning {
                        summary,
                        encrypted_content,
                    } if !encrypted_content.is_empty() => out.push(json!({
                        "type": "reasoning",
                        "summary": summary.iter().map(|s| json!({"type": "summary_text", "text": s})).collect::<Vec<_>>(),
                        "encrypted_content": encrypted_content})),
                    Block::ToolUse { id, name, input } => out.push(json!({
                        "type": "function_call", "call_id": id, "name": name,
                        "arguments": input.to_string()})),
                    // Anthropic's thinking cannot be read here.
                    _ => {}
                }
            }
        }
    }
}

/// An output item as far as the stream has carried it.
enum Item {
    /// An assistant message: its text.
    Message(String),
    /// A function call.
    Call {
        /// `call_id`, echoed by the output.
        call_id: String,
        /// The function's name.
        name: String,
        /// Its arguments as streamed JSON so far.
        arguments: String,
    },
    /// Reasoning: its summary texts and encrypted content.
    Reasoning {
        /// Summary texts.
        summary: Vec<String>,
        /// Encrypted content (arrives with `output_item.done`).
        encrypted: String,
    },
    /// An item type this client does not use.
    Other,
}

impl Item {
    /// The item an `output_item` event carries, as far as it goes.
    fn from_json(v: &Value) -> Self {
        let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
        match v["type"].as_str() {
            // A refusal is the model's words too.
            Some("message") => Self::Message(
                v["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| match p["type"].as_str() {
                        Some("output_text") => p["text"].as_str(),
                        Some("refusal") => p["refusal"].as_str(),
                        _ => None,
                    })
                    .collect(),
            ),
            Some("function_call") => Self::Call {
                call_id: s("call_id"),
                name: s("name"),
                arguments: s("arguments"),
            },
            Some("reasoning") => Self::Reasoning {
                summary: v["summary"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| p["text"].as_str().map(str::to_string))
                    .collect(),
                encrypted: s("encrypted_content"),
            },
            _ => Self::Other,
        }
    }
}

/// The error a `response.failed` or `error` event reports.
fn stream_error(r: &SseReader, err: &Value) -> ModelError {
    let kind = err["code"]
        .as_str()
        .or_else(|| err["type"].as_str())
        .unwrap_or("error")
        .to_string();
    let message = err["message"].as_str().unwrap_or_default();
    // The code says what the message may not: keep it where it is the only
    // sign of a context-length error.
    let message = if kind == "context_length_exceeded" && !message.contains(&kind) {
        format!("{kind}: {message}")
    } else {
        message.to_string()
    };
    ModelError::StreamError {
        provider: r.provider,
        kind,
        message,
    }
}

/// Take `response.usage` into a [`Usage`]: cached input tokens are cache reads.
pub(crate) fn usage_of(u: &Value) -> Usage {
    let input = u["input_tokens"].as_u64().unwrap_or(0);
    let cached = u["input_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or(0);
    Usage {
        input_tokens: input.saturating_sub(cached),
        output_tokens: u["output_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    }
}

/// Assemble a response from the event stream. Errors if the stream ends before
/// `response.completed` or `response.incomplete`, reports a failure or an error,
/// or carries data that is not JSON.
pub(crate) async fn read_stream(r: &mut SseReader) -> Result<ModelResponse, ModelError> {
    let mut items: BTreeMap<u64, Item> = BTreeMap::new();
    let (stop, usage) = loop {
        let Some(ev) = r.next().await? else {
            return Err(ModelError::Stream {
                provider: r.provider,
                message: "the stream ended before response.completed".into(),
            });
        };
        let data = ev.data.trim();
        if data.is_empty() || data == "[DONE]" {
            continue;
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            r.protocol(format!(
                "{} event data is not JSON ({e}): {}",
                ev.event,
                snippet(data)
            ))
        })?;
        let kind = v["type"].as_str().unwrap_or(ev.event.as_str()).to_string();
        let index = v["output_index"].as_u64();
        match (kind.as_str(), index) {
            ("response.output_item.added" | "response.output_item.done", Some(i)) => {
                items.insert(i, Item::from_json(&v["item"]));
            }
            ("response.output_text.delta" | "response.refusal.delta", Some(i)) => {
                if let Some(Item::Message(t)) = items.get_mut(&i) {
                    t.push_str(v["delta"].as_str().unwrap_or_default());
                }
            }
            ("response.function_call_arguments.delta", Some(i)) => {
                if let Some(Item::Call { arguments, .. }) = items.get_mut(&i) {
                    arguments.push_str(v["delta"].as_str().unwrap_or_default());
                }
            }
            ("response.function_call_arguments.done", Some(i)) => {
                if let (Some(Item::Call { arguments, .. }), Some(a)) =
                    (items.get_mut(&i), v["arguments"].as_str())
                {
                    *arguments = a.to_string();
                }
            }
            ("response.completed", _) => {
                let usage = usage_of(&v["response"]["usage"]);
                let calls = items.values().any(|i| matches!(i, Item::Call { .. }));
                break (
                    if calls {
                        StopReason::ToolUse
                    } else {
                        StopReason::EndTurn
                    },
                    usage,
                );
            }
            ("response.incomplete", _) => {
                let reason = v["response"]["incomplete_details"]["reason"]
                    .as_str()
                    .unwrap_or("incomplete");
                let stop = match reason {
                    "max_output_tokens" => StopReason::MaxTokens,
                    "content_filter" => StopReason::Refusal,
                    other => StopReason::Other(other.to_string()),
                };
                break (stop, usage_of(&v["response"]["usage"]));
            }
            ("response.failed", _) => return Err(stream_error(r, &v["response"]["error"])),
            ("error", _) => {
                let err = if v["error"].is_object() {
                    &v["error"]
                } else {
                    &v
                };
                return Err(stream_error(r, err));
            }
            // Other events (created, in_progress, content parts, summaries'
            // deltas, annotations) carry nothing the done items do not.
            _ => {}
        }
    };
    Ok(assemble(items, stop, usage))
}

/// The response the items make, in output order. A call's arguments that do not
/// parse become `{}`, the call listed in `invalid_inputs`.
fn assemble(items: BTreeMap<u64, Item>, stop_reason: StopReason, usage: Usage) -> ModelResponse {
    let mut content = Vec::new();
    let mut invalid_inputs = Vec::new();
    for (index, item) in items {
        match item {
            Item::Message(text) if !text.is_empty() => content.push(Block::Text { text }),
            Item::Call {
                call_id,
                name,
                arguments,
            } => {
                let id = if call_id.is_empty() {
                    format!("call_{index}")
                } else {
                    call_id
                };
                let input = if arguments.trim().is_empty() {
                    json!({})
                } else {
                    parse_tool_input(&arguments, &stop_reason).unwrap_or_else(|why| {
                        invalid_inputs.push((id.clone(), why));
                        json!({})
                    })
                };
                content.push(Block::ToolUse { id, name, input });
            }
            Item::Reasoning { summary, encrypted } => content.push(Block::Reasoning {
                summary,
                encrypted_content: encrypted,
            }),
            Item::Message(_) | Item::Other => {}
        }
    }
    ModelResponse {
        content,
        stop_reason,
        usage,
        invalid_inputs,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use eventsource_stream::Eventsource as _;

    use super::*;
    use crate::model::ToolDef;
    use crate::wire::Provider;

    fn cfg() -> ClientConfig {
        ClientConfig {
            provider: Provider::OpenAiResponses,
            model: "gpt-5".into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            api_key: None,
            max_output_tokens: 4000,
            thinking_budget: 0,
            retry: Default::default(),
            max_wait: Duration::ZERO,
        }
    }

    async fn read(events: &[(&str, Value)]) -> Result<ModelResponse, ModelError> {
        let text: String = events
            .iter()
            .map(|(e, d)| format!("event: {e}\ndata: {d}\n\n"))
            .collect();
        let chunks: Vec<Result<String, reqwest::Error>> = vec![Ok(text)];
        let mut r = SseReader {
            inner: Box::pin(futures_util::stream::iter(chunks).eventsource()),
            idle: Duration::from_secs(5),
            provider: "openai-responses",
        };
        read_stream(&mut r).await
    }

    #[test]
    fn the_conversation_becomes_input_items_in_order() {
        let tools = [ToolDef {
            name: "Bash".into(),
            description: "run".into(),
            input_schema: json!({"type": "object"}),
        }];
        let messages = [
            Message::user_text("fix it"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Reasoning {
                        summary: vec!["look first".into()],
                        encrypted_content: "ENC1".into(),
                    },
                    Block::Reasoning {
                        summary: vec![],
                        encrypted_content: String::new(),
                    },
                    Block::Text {
                        text: "Looking.".into(),
                    },
                    Block::ToolUse {
                        id: "call_1".into(),
                        name: "Bash".into(),
                        input: json!({"command": "ls"}),
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    Block::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: "no such dir".into(),
                        is_error: true,
                        images: vec![],
                    },
                    Block::Text {
                        text: "[baton: note]".into(),
                    },
                ],
            },
        ];
        let body = request_body(
            &cfg(),
            &Request {
                system: "be careful",
                tools: &tools,
                messages: &messages,
                max_tokens: Some(1000),
                cache_key: Some("baton-abc"),
            },
        );
        pretty_assertions::assert_eq!(
            body,
            json!({
                "model": "gpt-5",
                "instructions": "be careful",
                "input": [
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
                    {"type": "reasoning", "summary": [{"type": "summary_text", "text": "look first"}], "encrypted_content": "ENC1"},
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]},
                    {"type": "function_call", "call_id": "call_1", "name": "Bash", "arguments": "{\"command\":\"ls\"}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "Error: no such dir"},
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "[baton: note]"}]},
                ],
                "stream": true,
                "store": false,
                "include": ["reasoning.encrypted_content"],
                "max_output_tokens": 1000,
                "tools": [{"type": "function", "name": "Bash", "description": "run", "parameters": {"type": "object"}, "strict": false}],
                "prompt_cache_key": "baton-abc",
            })
        );
    }

    #[test]
    fn screenshots_follow_their_output_and_only_the_newest_are_sent() {
        let shot = |n: usize| crate::model::ImageData {
            media_type: "image/png".into(),
            data: format!("PNG{n}"),
        };
        let result = |id: &str, images: Vec<crate::model::ImageData>| Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: id.into(),
                content: "shot".into(),
                is_error: false,
                images,
            }],
        };
        let messages = [
            result("a", vec![shot(1), shot(2)]),
            result("b", vec![shot(3), shot(4), shot(5)]),
        ];
        let body = request_body(
            &cfg(),
            &Request {
                system: "s",
                tools: &[],
                messages: &messages,
                max_tokens: None,
                cache_key: None,
            },
        );
        let input = body["input"].as_array().unwrap();
        assert_eq!(input.len(), 4);
        assert_eq!(input[0]["type"], "function_call_output");
        let first = input[0]["output"].as_str().unwrap();
        assert!(
            first.contains("an older screenshot was left out"),
            "{first}"
        );
        assert!(
            first.contains("1 image(s) of this result follow"),
            "{first}"
        );
        let urls = |i: &Value| -> Vec<String> {
            i["content"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["type"] == "input_image")
                .map(|p| p["image_url"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(input[1]["role"], "user");
        assert_eq!(urls(&input[1]), ["data:image/png;base64,PNG2"]);
        assert_eq!(input[2]["call_id"], "b");
        assert_eq!(
            urls(&input[3]),
            [
                "data:image/png;base64,PNG3",
                "data:image/png;base64,PNG4",
                "data:image/png;base64,PNG5"
            ]
        );
    }

    #[tokio::test]
    async fn a_streamed_call_with_reasoning_is_assembled() {
        let r = read(&[
            ("response.created", json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "output": []}})),
            ("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "rs_1", "type": "reasoning", "summary": []}})),
            ("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 0, "item": {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "ENC"}})),
            ("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 1, "item": {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}})),
            ("response.output_text.delta", json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "Hel"})),
            ("response.output_text.delta", json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 1, "content_index": 0, "delta": "lo"})),
            ("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 2, "item": {"id": "fc_1", "type": "function_call", "call_id": "call_9", "name": "Bash", "arguments": ""}})),
            ("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2, "delta": "{\"command\":"})),
            ("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 2, "delta": "\"ls\"}"})),
            ("response.completed", json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                "usage": {"input_tokens": 1000, "input_tokens_details": {"cached_tokens": 800}, "output_tokens": 50, "total_tokens": 1050}}})),
        ])
        .await
        .unwrap();
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(
            r.content,
            vec![
                Block::Reasoning {
                    summary: vec!["think".into()],
                    encrypted_content: "ENC".into()
                },
                Block::Text {
                    text: "Hello".into()
                },
                Block::ToolUse {
                    id: "call_9".into(),
                    name: "Bash".into(),
                    input: json!({"command": "ls"})
                },
            ]
        );
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 200,
                output_tokens: 50,
                cache_read_tokens: 800,
                cache_write_tokens: 0
            }
        );
    }

    #[tokio::test]
    async fn cut_by_the_output_limit_the_call_is_invalid() {
        let r = read(&[
            ("response.output_item.added", json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "call_id": "c", "name": "Write", "arguments": ""}})),
            ("response.function_call_arguments.delta", json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"path\": \"a"})),
            ("response.incomplete", json!({"type": "response.incomplete", "response": {"status": "incomplete",
                "incomplete_details": {"reason": "max_output_tokens"}, "usage": {"input_tokens": 10, "output_tokens": 5}}})),
        ])
        .await
        .unwrap();
        assert_eq!(r.stop_reason, StopReason::MaxTokens);
        assert_eq!(r.invalid_inputs.len(), 1);
        assert!(r.invalid_inputs[0].1.contains("output token limit"));
    }

    #[tokio::test]
    async fn a_refusal_is_kept_as_text() {
        let r = read(&[
            ("response.output_item.done", json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "role": "assistant",
                "content": [{"type": "refusal", "refusal": "I can't help with that."}]}})),
            ("response.completed", json!({"type": "response.completed", "response": {"status": "completed", "usage": {"input_tokens": 5, "output_tokens": 5}}})),
        ])
        .await
        .unwrap();
        assert_eq!(r.stop_reason, StopReason::EndTurn);
        assert_eq!(r.text(), "I can't help with that.");
    }

    #[tokio::test]
    async fn failures_and_errors_are_classified() {
        let e = read(&[(
            "response.failed",
            json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "server_error", "message": "The server had an error"}}}),
        )])
        .await
        .unwrap_err();
        assert!(e.is_transient() && !e.is_quota(), "{e}");
        let e = read(&[("error", json!({"type": "error", "code": "rate_limit_exceeded", "message": "Rate limit reached", "param": null}))])
            .await
            .unwrap_err();
        assert!(e.is_transient() && e.is_quota(), "{e}");
        let e = read(&[("response.failed", json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}}))])
        .await
        .unwrap_err();
        assert!(!e.is_transient(), "{e}");
        assert!(e.context_overflow().is_some(), "{e}");
        let e = read(&[(
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "content": []}}),
        )])
        .await
        .unwrap_err();
        assert!(
            matches!(e, ModelError::Stream { .. }) && e.is_transient(),
            "{e}"
        );
    }

    #[test]
    fn anthropic_never_sees_reasoning_items() {
        let messages = [Message {
            role: Role::Assistant,
            content: vec![
                Block::Reasoning {
                    summary: vec![],
                    encrypted_content: "ENC".into(),
                },
                Block::Text { text: "hi".into() },
            ],
        }];
        let mut c = cfg();
        c.provider = Provider::Anthropic;
        let body = crate::anthropic::request_body(
            &c,
            &Request {
                system: "s",
                tools: &[],
                messages: &messages,
                max_tokens: None,
                cache_key: None,
            },
        );
        assert_eq!(body["messages"][0]["content"].as_array().unwrap().len(), 1);
        assert_eq!(body["messages"][0]["content"][0]["type"], "text");
    }
}
