//! A scripted forge on 127.0.0.1: the subset of GitHub's REST API (and, under
//! `/api/v1`, Forgejo's, whose shapes it shares) that `baton issues pull` reads —
//! open issues by label, a user's permission, an issue's events — with every
//! request recorded, and a rate limit on demand.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// What the forge holds.
#[derive(Debug, Clone, Default)]
pub struct ForgeScript {
    /// Open issues (as [`issue`] makes them), pull requests among them.
    pub issues: Vec<Value>,
    /// Users with write access.
    pub writers: Vec<String>,
    /// Users who may only read.
    pub readers: Vec<String>,
    /// Each issue's events (as [`labelled`] makes them).
    pub events: BTreeMap<u64, Vec<Value>>,
    /// The first request is answered `429` with this `Retry-After` (seconds).
    pub limited_first: Option<u64>,
}

/// One request the forge got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgeRequest {
    /// The path and query.
    pub path: String,
    /// Its `Authorization` header.
    pub authorization: Option<String>,
    /// When it came.
    pub at: std::time::Instant,
}

/// A scripted forge, serving for the test's life.
pub struct ScriptedForge {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    requests: Arc<Mutex<Vec<ForgeRequest>>>,
}

/// An open issue `number` of `author`.
pub fn issue(number: u64, title: &str, body: &str, author: &str) -> Value {
    json!({
        "number": number,
        "title": title,
        "body": body,
        "html_url": format!("https://forge.example/o/r/issues/{number}"),
        "user": {"login": author},
        "state": "open",
    })
}

/// An event: `who` put `label` on the issue.
pub fn labelled(who: &str, label: &str) -> Value {
    json!({"event": "labeled", "actor": {"login": who}, "label": {"name": label}})
}

impl ScriptedForge {
    /// Serve `script` on a port of its own.
    pub fn start(script: ForgeScript) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", listener.local_addr()?);
        let requests: Arc<Mutex<Vec<ForgeRequest>>> = Arc::default();
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Ok(read_half) = stream.try_clone() else {
                    continue;
                };
                let mut reader = BufReader::new(read_half);
                let mut first = String::new();
                let _ = reader.read_line(&mut first);
                let path = first.split_whitespace().nth(1).unwrap_or("/").to_string();
                let mut authorization = None;
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    if let Some((k, v)) = line.split_once(':')
                        && k.eq_ignore_ascii_case("authorization")
                    {
                        authorization = Some(v.trim().to_string());
                    }
                    line.clear();
                }
                let n = {
                    let Ok(mut r) = seen.lock() else { continue };
                    r.push(ForgeRequest {
                        path: path.clone(),
                        authorization,
                        at: std::time::Instant::now(),
                    });
                    r.len()
                };
                let (status, extra, body) = match script.limited_first {
                    Some(secs) if n == 1 => (
                        "429 Too Many Requests",
                        format!("retry-after: {secs}\r\n"),
                        json!({"message": "API rate limit exceeded"}).to_string(),
                    ),
                    _ => {
                        let (status, body) = answer(&script, &path);
                        (status, String::new(), body.to_string())
                    }
                };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Ok(Self { url, requests })
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<ForgeRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// The answer to `path` (under `/api/v1` or not).
fn answer(script: &ForgeScript, path: &str) -> (&'static str, Value) {
    let path = path.strip_prefix("/api/v1").unwrap_or(path);
    let (route, query) = path.split_once('?').unwrap_or((path, ""));
    let parts: Vec<&str> = route.trim_matches('/').split('/').collect();
    let page = query
        .split('&')
        .find_map(|kv| kv.strip_prefix("page="))
        .and_then(|p| p.parse::<u32>().ok())
        .unwrap_or(1);
    match parts.as_slice() {
        ["repos", _, _, "issues"] => {
            let label = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("labels="))
                .unwrap_or_default();
            if page > 1 || label.is_empty() {
                return ("200 OK", json!([]));
            }
            ("200 OK", Value::Array(script.issues.clone()))
        }
        ["repos", _, _, "collaborators", user, "permission"] => {
            let user = (*user).to_string();
            if script.writers.contains(&user) {
                (
                    "200 OK",
                    json!({"permission": "write", "role_name": "write"}),
                )
            } else if script.readers.contains(&user) {
                ("200 OK", json!({"permission": "read", "role_name": "read"}))
            } else {
                (
                    "404 Not Found",
                    json!({"message": format!("{user} is not a user")}),
                )
            }
        }
        ["repos", _, _, "issues", n, "events"] => {
            let n: u64 = n.parse().unwrap_or_default();
            let events = if page > 1 {
                Vec::new()
            } else {
                script.events.get(&n).cloned().unwrap_or_default()
            };
            ("200 OK", Value::Array(events))
        }
        _ => ("404 Not Found", json!({"message": "Not Found"})),
    }
}
