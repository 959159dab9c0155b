//! A minimal HTTP/1.1 server on 127.0.0.1: one request per connection, answered
//! from the script, with chunked SSE bodies written in small flushed pieces.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::script::{RBlock, Reply, Step, Wire};
use crate::wire;

/// Characters per token of the scripted model's tokenizer (a real one's is about
/// this for code and JSON; baton must not assume it).
const CHARS_PER_TOKEN: f64 = 3.5;

/// How a scripted model behaves beyond its script, like a real one. The default is a
/// polite model: no window, usage as scripted, no output limit, no think time.
#[derive(Debug, Clone, Default)]
pub struct Realism {
    /// Context window: a request whose prompt (or prompt + `max_tokens`) is larger is
    /// refused with the wire's context-length error, without using a step.
    pub context_window: Option<u64>,
    /// Usage from the request's real size (input grows with the conversation, the
    /// part seen in the previous request reported as cache reads) and the reply's.
    pub real_usage: bool,
    /// Honour the request's `max_tokens`: a longer reply is cut there, mid-block
    /// (a tool call's input left incomplete), with stop reason `max_tokens`/`length`.
    pub output_limit: bool,
    /// Delay before each answer.
    pub think_time: Duration,
}

type Matcher = Box<dyn Fn(&RecordedRequest) -> bool + Send + Sync>;
type Responder = Box<dyn Fn(&RecordedRequest) -> Option<Step> + Send + Sync>;

/// Builds a [`ScriptedServer`] that behaves like a real model in chosen respects.
pub struct ServerBuilder {
    wire: Wire,
    realism: Realism,
    hooks: Vec<(Matcher, VecDeque<Step>)>,
    responders: Vec<Responder>,
}

impl ServerBuilder {
    /// Refuse requests above `tokens` as the real API does.
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.realism.context_window = Some(tokens);
        self
    }

    /// Report usage from the real sizes of requests and replies.
    pub fn real_usage(mut self) -> Self {
        self.realism.real_usage = true;
        self
    }

    /// Cut replies longer than the request's `max_tokens`.
    pub fn output_limit(mut self) -> Self {
        self.realism.output_limit = true;
        self
    }

    /// Wait this long before each answer.
    pub fn think_time(mut self, d: Duration) -> Self {
        self.realism.think_time = d;
        self
    }

    /// A model like a real one: this window, real usage, the output limit honoured.
    pub fn like_a_real_model(self, window: u64) -> Self {
        self.context_window(window).real_usage().output_limit()
    }

    /// Answer requests that match `when` from `steps` (in order, while any are left)
    /// instead of the main script: how a model reacts to what baton tells it.
    pub fn when(
        mut self,
        when: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        steps: Vec<Step>,
    ) -> Self {
        self.hooks.push((Box::new(when), steps.into()));
        self
    }

    /// Answer every request for which `respond` gives a step with that step,
    /// before the hooks and the main script: a model that acts on what it reads
    /// (a verifier that judges by what its commands printed).
    pub fn respond(
        mut self,
        respond: impl Fn(&RecordedRequest) -> Option<Step> + Send + Sync + 'static,
    ) -> Self {
        self.responders.push(Box::new(respond));
        self
    }

    /// Start serving `steps`.
    pub fn start(self, steps: Vec<Step>) -> ScriptedServer {
        ScriptedServer::launch(self.wire, steps, self.realism, self.hooks, self.responders)
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// HTTP method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Headers, names lower-cased, in order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Null` if it was not JSON).
    pub body: Value,
    /// The prompt's size in tokens by the scripted model's count.
    pub tokens: u64,
    /// Why the server refused it without using a step: `context` (over the window)
    /// or `quota` (behind a quota wall); `None` when it was answered from the script.
    pub refused: Option<String>,
}

impl RecordedRequest {
    /// The text of the last user message (its text blocks joined), where baton puts
    /// its notes to the model.
    pub fn last_user_text(&self) -> String {
        if let Some(items) = self.body["input"].as_array() {
            // The user's turn: the items after the model's last one.
            let start = items
                .iter()
                .rposition(|i| {
                    i["role"] == "assistant"
                        || i["type"] == "function_call"
                        || i["type"] == "reasoning"
                })
                .map_or(0, |p| p + 1);
            return items[start..]
                .iter()
                .filter(|i| i["role"] == "user")
                .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
                .filter(|b| b["type"] == "input_text")
                .filter_map(|b| b["text"].as_str().map(str::to_string))
                .collect::<Vec<_>>()
                .join("\n");
        }
        let msgs = self.messages();
        let Some(m) = msgs.iter().rev().find(|m| m["role"] == "user") else {
            return String::new();
        };
        match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b["type"] == "text" || b["type"] == "input_text")
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }

    /// The conversation's messages: `messages`, or on the Responses wire the
    /// `input` items that are messages.
    fn messages(&self) -> Vec<Value> {
        match self.body["messages"].as_array() {
            Some(m) => m.clone(),
            None => self.body["input"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|i| i.get("role").is_some())
                .cloned()
                .collect(),
        }
    }

    /// The text of the first message: the session's prompt (its brief). System and
    /// developer messages are not it, nor the environment context Codex sends
    /// before the prompt.
    pub fn first_user_text(&self) -> String {
        let msgs = self.messages();
        let Some(first) = msgs.iter().find(|m| {
            m["role"] != "system"
                && m["role"] != "developer"
                && !m["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("<environment_context>"))
        }) else {
            return String::new();
        };
        match &first["content"] {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }

    /// Whether the last user message holds `text`.
    pub fn says(&self, text: &str) -> bool {
        self.last_user_text().contains(text)
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    wire: Wire,
    steps: Mutex<VecDeque<Step>>,
    requests: Mutex<Vec<RecordedRequest>>,
    stop: AtomicBool,
    realism: Realism,
    hooks: Mutex<Vec<(Matcher, VecDeque<Step>)>>,
    responders: Vec<Responder>,
    /// The quota wall: until when, whether to send `retry-after`, whether hard.
    wall: Mutex<Option<(Instant, bool, bool)>>,
    /// Prompt tokens of the last request answered (the cached prefix of the next).
    last_tokens: Mutex<u64>,
}

/// A scripted model server; stops when dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl ScriptedServer {
    /// Start serving `steps` in `wire` format on a free loopback port.
    ///
    /// # Panics
    /// If no loopback port can be bound (the test cannot run at all then).
    pub fn start(wire: Wire, steps: Vec<Step>) -> Self {
        Self::launch(wire, steps, Realism::default(), Vec::new(), Vec::new())
    }

    /// A server to configure: a context window, real usage, output limits, think
    /// time, and replies to what baton tells the model.
    pub fn builder(wire: Wire) -> ServerBuilder {
        ServerBuilder {
            wire,
            realism: Realism::default(),
            hooks: Vec::new(),
            responders: Vec::new(),
        }
    }

    #[expect(
        clippy::expect_used,
        reason = "test kit: a test without its server cannot run"
    )]
    fn launch(
        wire: Wire,
        steps: Vec<Step>,
        realism: Realism,
        hooks: Vec<(Matcher, VecDeque<Step>)>,
        responders: Vec<Responder>,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            wire,
            steps: Mutex::new(steps.into()),
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            realism,
            hooks: Mutex::new(hooks),
            responders,
            wall: Mutex::new(None),
            last_tokens: Mutex::new(0),
        });
        let s = shared.clone();
        let thread = std::thread::spawn(move || {
            let mut seq = 0usize;
            for conn in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = conn else { continue };
                seq += 1;
                let s2 = s.clone();
                std::thread::spawn(move || {
                    let _ = serve(&s2, stream, seq);
                });
            }
        });
        Self {
            addr,
            shared,
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`: the Anthropic base URL; for OpenAI append `/v1`
    /// (see [`ScriptedServer::openai_base_url`]).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The OpenAI-style base URL, `http://127.0.0.1:PORT/v1`.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far, in order of arrival.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Requests the server refused without using a step, by reason (`context`, `quota`).
    pub fn refused(&self, reason: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.refused.as_deref() == Some(reason))
            .count()
    }

    /// Steps not yet consumed.
    pub fn remaining(&self) -> usize {
        self.shared
            .steps
            .lock()
            .map(|s| s.len())
            .unwrap_or_default()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read_request(stream: &TcpStream) -> std::io::Result<RecordedRequest> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body)?;
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let tokens = prompt_tokens(&body);
    Ok(RecordedRequest {
        method,
        path,
        headers,
        body,
        tokens,
        refused: None,
    })
}

/// The prompt's tokens by the scripted tokenizer: system, tools and messages.
fn prompt_tokens(body: &Value) -> u64 {
    let chars: usize = ["system", "instructions", "tools", "messages", "input"]
        .iter()
        .map(|k| match &body[*k] {
            Value::Null => 0,
            Value::String(s) => s.len(),
            v => v.to_string().len(),
        })
        .sum();
    (chars as f64 / CHARS_PER_TOKEN).ceil() as u64
}

fn poisoned<T>(_: T) -> std::io::Error {
    std::io::Error::other("poisoned")
}

fn unix_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// The quota wall's answer: 429 with the reset in the wire's headers.
fn quota_answer(
    wire: Wire,
    left: Duration,
    retry_after: bool,
    hard: bool,
) -> (Vec<(String, String)>, String) {
    let secs = left.as_secs_f64().ceil().max(1.0) as u64;
    let mut headers = Vec::new();
    if retry_after {
        headers.push(("retry-after".to_string(), secs.to_string()));
    }
    if hard {
        headers.push(("x-should-retry".into(), "false".into()));
        if wire == Wire::Anthropic {
            let reset = (unix_now() + left).as_secs();
            headers.push((
                "anthropic-ratelimit-unified-status".into(),
                "rejected".into(),
            ));
            headers.push((
                "anthropic-ratelimit-unified-reset".into(),
                reset.to_string(),
            ));
        }
    }
    match wire {
        Wire::Anthropic => {
            let at = unix_now() + left;
            let rfc3339 = rfc3339(at);
            for k in ["requests", "tokens", "input-tokens"] {
                headers.push((format!("anthropic-ratelimit-{k}-reset"), rfc3339.clone()));
            }
            headers.push(("anthropic-ratelimit-requests-remaining".into(), "0".into()));
            let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed your organization's rate limit. Please try again later."}}"#;
            (headers, body.to_string())
        }
        Wire::OpenAi | Wire::OpenAiResponses => {
            headers.push(("x-ratelimit-reset-requests".into(), format!("{secs}s")));
            headers.push(("x-ratelimit-remaining-requests".into(), "0".into()));
            let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"rate_limit_exceeded"}}"#;
            (headers, body.to_string())
        }
    }
}

/// `2026-12-01T05:42:20.123Z` for a time since the Unix epoch.
fn rfc3339(t: Duration) -> String {
    chrono::DateTime::from_timestamp_millis(i64::try_from(t.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The wire's context-length error for a prompt of `tokens` (+ `max_tokens`).
fn context_error(wire: Wire, tokens: u64, max_tokens: u64, window: u64) -> String {
    match wire {
        Wire::Anthropic if tokens > window => serde_json::json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": format!("prompt is too long: {tokens} tokens > {window} maximum")}})
        .to_string(),
        Wire::Anthropic => serde_json::json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": format!("input length and `max_tokens` exceed context limit: {tokens} + {max_tokens} > {window}, decrease input length or `max_tokens` and try again")}})
        .to_string(),
        Wire::OpenAi => serde_json::json!({"error": {
            "message": format!("This model's maximum context length is {window} tokens. However, you requested {} tokens ({tokens} in the messages, {max_tokens} in the completion). Please reduce the length of the messages or completion.", tokens + max_tokens),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        .to_string(),
        // The Responses API names no numbers.
        Wire::OpenAiResponses => serde_json::json!({"error": {
            "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}})
        .to_string(),
    }
}

/// The request's output limit: `max_tokens`, or the Responses API's `max_output_tokens`.
fn max_tokens(body: &Value) -> Option<u64> {
    body["max_tokens"]
        .as_u64()
        .or_else(|| body["max_output_tokens"].as_u64())
}

fn block_chars(b: &RBlock) -> usize {
    match b {
        RBlock::Text(t) => t.len(),
        RBlock::Thinking { thinking, .. } => thinking.len(),
        RBlock::ToolUse {
            name, input_json, ..
        } => name.len() + input_json.len(),
    }
}

fn cut_str(s: &str, max: usize) -> String {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The reply as a real model would send it for this request: usage from the real
/// sizes, and cut at `max_tokens`.
fn realistic(
    wire: Wire,
    realism: &Realism,
    reply: Reply,
    req: &RecordedRequest,
    cached: u64,
) -> Reply {
    let mut reply = reply;
    let out_chars: usize = reply.blocks.iter().map(block_chars).sum();
    let mut output = (out_chars as f64 / CHARS_PER_TOKEN).ceil() as u64;
    if realism.output_limit
        && let Some(max) = max_tokens(&req.body)
        && output > max
    {
        let mut budget = (max as f64 * CHARS_PER_TOKEN) as usize;
        let mut kept = Vec::new();
        for b in reply.blocks {
            let n = block_chars(&b);
            if n <= budget {
                budget -= n;
                kept.push(b);
                continue;
            }
            match b {
                RBlock::Text(t) => kept.push(RBlock::Text(cut_str(&t, budget))),
                RBlock::Thinking {
                    thinking,
                    signature,
                } => kept.push(RBlock::Thinking {
                    thinking: cut_str(&thinking, budget),
                    signature,
                }),
                RBlock::ToolUse {
                    id,
                    name,
                    input_json,
                } => kept.push(RBlock::ToolUse {
                    id,
                    input_json: cut_str(&input_json, budget.saturating_sub(name.len())),
                    name,
                }),
            }
            break;
        }
        reply.blocks = kept;
        reply.stop = Some(match wire {
            Wire::Anthropic => "max_tokens".into(),
            Wire::OpenAi => "length".into(),
            Wire::OpenAiResponses => "max_output_tokens".into(),
        });
        output = max;
    }
    if realism.real_usage {
        let read = cached.min(req.tokens);
        reply.usage = [req.tokens - read, output.max(1), read, 0];
    }
    reply
}

fn serve(s: &Shared, mut stream: TcpStream, seq: usize) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut req = read_request(&stream)?;
    if !s.realism.think_time.is_zero() {
        std::thread::sleep(s.realism.think_time);
    }
    // Behind a quota wall: 429 until it resets, no step used.
    let wall = *s.wall.lock().map_err(poisoned)?;
    if let Some((until, retry_after, hard)) = wall {
        let now = Instant::now();
        if now < until {
            req.refused = Some("quota".into());
            s.requests.lock().map_err(poisoned)?.push(req);
            let (headers, body) = quota_answer(s.wire, until - now, retry_after, hard);
            return status(&mut stream, 429, &headers, &body);
        }
    }
    // Over the context window: the wire's error, no step used.
    if let Some(window) = s.realism.context_window {
        let max_tokens = max_tokens(&req.body).unwrap_or(0);
        if req.tokens + max_tokens > window {
            let body = context_error(s.wire, req.tokens, max_tokens, window);
            req.refused = Some("context".into());
            s.requests.lock().map_err(poisoned)?.push(req);
            return status(&mut stream, 400, &[], &body);
        }
    }
    let hooked = match s.responders.iter().find_map(|r| r(&req)) {
        Some(step) => Some(step),
        None => {
            let mut hooks = s.hooks.lock().map_err(poisoned)?;
            hooks
                .iter_mut()
                .find(|(when, steps)| !steps.is_empty() && when(&req))
                .and_then(|(_, steps)| steps.pop_front())
        }
    };
    let cached = std::mem::replace(&mut *s.last_tokens.lock().map_err(poisoned)?, req.tokens);
    let real = s.realism.real_usage || s.realism.output_limit;
    let req_copy = real.then(|| req.clone());
    let n = {
        let mut r = s.requests.lock().map_err(poisoned)?;
        r.push(req);
        r.len()
    };
    let step = match hooked {
        Some(step) => Some(step),
        None => s.steps.lock().map_err(poisoned)?.pop_front(),
    };
    let step = match (step, req_copy) {
        (Some(Step::Reply(reply)), Some(req)) => Some(Step::Reply(realistic(
            s.wire, &s.realism, reply, &req, cached,
        ))),
        (step, _) => step,
    };
    let Some(step) = step else {
        let body = format!(
            r#"{{"type":"error","error":{{"type":"invalid_request_error","message":"scripted server: the script has no step left for request {n}"}}}}"#
        );
        return status(&mut stream, 400, &[], &body);
    };
    match step {
        Step::Reply(reply) => stream_events(&mut stream, &wire::events(s.wire, &reply, seq), true),
        Step::Status {
            status: code,
            headers,
            body,
        } => status(&mut stream, code, &headers, &body),
        Step::Reset => stream.shutdown(Shutdown::Both),
        Step::Cut { reply, events } => {
            let evs = wire::events(s.wire, &reply, seq);
            stream_events(&mut stream, &evs[..events.min(evs.len())], false)?;
            stream.shutdown(Shutdown::Both)
        }
        Step::SseError {
            reply,
            events,
            kind,
            message,
        } => {
            let mut evs = wire::events(s.wire, &reply, seq);
            evs.truncate(events);
            evs.push(wire::error_event(s.wire, &kind, &message));
            stream_events(&mut stream, &evs, true)
        }
        Step::Raw(body) => stream_events(&mut stream, &[body], true),
        Step::Stall { reply, events } => {
            let evs = wire::events(s.wire, &reply, seq);
            stream_events(&mut stream, &evs[..events.min(evs.len())], false)?;
            std::thread::sleep(Duration::from_secs(5));
            stream.shutdown(Shutdown::Both)
        }
        Step::QuotaWall {
            reset_in,
            retry_after,
            hard,
        } => {
            *s.wall.lock().map_err(poisoned)? =
                Some((Instant::now() + reset_in, retry_after, hard));
            if let Ok(mut r) = s.requests.lock()
                && let Some(last) = r.last_mut()
            {
                last.refused = Some("quota".into());
            }
            let (headers, body) = quota_answer(s.wire, reset_in, retry_after, hard);
            status(&mut stream, 429, &headers, &body)
        }
    }
}

fn status(
    stream: &mut TcpStream,
    code: u16,
    headers: &[(String, String)],
    body: &str,
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {code} Scripted\r\ncontent-type: {}\r\ncontent-length: {}\r\nconnection: close\r\n",
        if body.trim_start().starts_with('{') {
            "application/json"
        } else {
            "text/html"
        },
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// Write `events` as a chunked body, each event in two flushed chunks; `finish`
/// writes the terminating chunk.
fn stream_events(stream: &mut TcpStream, events: &[String], finish: bool) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    stream.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
    )?;
    for ev in events {
        let mut mid = ev.len() / 2;
        while !ev.is_char_boundary(mid) {
            mid += 1;
        }
        for part in [&ev[..mid], &ev[mid..]] {
            if part.is_empty() {
                continue;
            }
            write!(stream, "{:x}\r\n{part}\r\n", part.len())?;
            stream.flush()?;
        }
    }
    if finish {
        stream.write_all(b"0\r\n\r\n")?;
        stream.flush()?;
    }
    Ok(())
}
