//! A minimal HTTP/1.1 server on 127.0.0.1: one request per connection, answered
//! from the script, with chunked SSE bodies written in small flushed pieces.

use std::collections::VecDeque;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

use crate::script::{Step, Wire};
use crate::wire;

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
}

impl RecordedRequest {
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
    #[expect(
        clippy::expect_used,
        reason = "test kit: a test without its server cannot run"
    )]
    pub fn start(wire: Wire, steps: Vec<Step>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            wire,
            steps: Mutex::new(steps.into()),
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
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
    Ok(RecordedRequest {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

fn serve(s: &Shared, mut stream: TcpStream, seq: usize) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let req = read_request(&stream)?;
    let n = {
        let mut r = s
            .requests
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        r.push(req);
        r.len()
    };
    let step = s
        .steps
        .lock()
        .map_err(|_| std::io::Error::other("poisoned"))?
        .pop_front();
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
