//! A scripted forge on 127.0.0.1: the subset of GitHub's REST API (and, under
//! `/api/v1`, Forgejo's, whose shapes it shares) that `baton issues pull` reads —
//! open issues by label, a user's permission, an issue's events — with every
//! request recorded, and a rate limit on demand.

use std::collections::BTreeMap;
use std::io::{BufReader, Write as _};
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
    /// A request whose path or body holds one of these texts is acted on at once
    /// and answered only after its milliseconds (for killing its caller meanwhile).
    pub slow: Vec<(String, u64)>,
}

/// One request the forge got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgeRequest {
    /// Its method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// Its body.
    pub body: String,
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
    pulls: Arc<Mutex<Vec<Value>>>,
    checks: Checks,
    threads: Arc<Mutex<Vec<Value>>>,
}

/// A review thread `id` opened by `author` with `body` (GitHub's GraphQL shape).
pub fn review_thread(id: &str, author: &str, body: &str) -> Value {
    json!({
        "id": id,
        "isResolved": false,
        "path": "src/app.js",
        "line": 1,
        "comments": {"nodes": [{"author": {"login": author}, "body": body, "url": format!("https://forge.example/o/r/pull/100#{id}")}]},
    })
}

/// Check runs by commit.
type Checks = Arc<Mutex<BTreeMap<String, Vec<Value>>>>;

/// A check run of GitHub's: `status` (`queued`, `in_progress`, `completed`) and,
/// once completed, `conclusion` (`success`, `failure`, …), with what it said.
pub fn check_run(name: &str, status: &str, conclusion: Option<&str>, summary: &str) -> Value {
    json!({
        "name": name,
        "status": status,
        "conclusion": conclusion,
        "output": {"title": format!("{name}"), "summary": summary, "text": null},
        "html_url": format!("https://forge.example/o/r/runs/{name}"),
    })
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

/// An event: `who` put `label` on the issue at `at` (ISO 8601 UTC).
pub fn labelled_at(who: &str, label: &str, at: &str) -> Value {
    json!({"event": "labeled", "actor": {"login": who}, "label": {"name": label}, "created_at": at})
}

/// An event: `who` changed the issue's title at `at`.
pub fn renamed(who: &str, at: &str) -> Value {
    json!({"event": "renamed", "actor": {"login": who}, "created_at": at,
        "rename": {"from": "before", "to": "after"}})
}

/// `issue` whose text `who` last edited at `at` (GitHub tells it in GraphQL's
/// `lastEditedAt` and `editor`, never among the events).
pub fn edited(mut issue: Value, who: &str, at: &str) -> Value {
    issue["last_edited"] = json!({"at": at, "by": who});
    issue
}

/// GitHub's GraphQL for an issue's last edit, if `body` asks for it.
fn edit_answer(script: &ForgeScript, path: &str, body: &str) -> Option<(&'static str, Value)> {
    if path != "/graphql" {
        return None;
    }
    let asked: Value = serde_json::from_str(body).ok()?;
    if !asked["query"].as_str()?.contains("lastEditedAt") {
        return None;
    }
    let number = &asked["variables"]["number"];
    let issue = script.issues.iter().find(|i| i["number"] == *number)?;
    let edit = &issue["last_edited"];
    let found = json!({
        "lastEditedAt": edit["at"],
        "editor": if edit["by"].is_null() { Value::Null } else { json!({"login": edit["by"]}) },
    });
    Some(("200 OK", json!({"data": {"repository": {"issue": found}}})))
}

impl ScriptedForge {
    /// Serve `script` on a port of its own.
    pub fn start(script: ForgeScript) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", listener.local_addr()?);
        let requests: Arc<Mutex<Vec<ForgeRequest>>> = Arc::default();
        let seen = requests.clone();
        let pulls: Arc<Mutex<Vec<Value>>> = Arc::default();
        let held = pulls.clone();
        let checks: Checks = Arc::default();
        let runs = checks.clone();
        let threads: Arc<Mutex<Vec<Value>>> = Arc::default();
        let reviews = threads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Ok(read_half) = stream.try_clone() else {
                    continue;
                };
                let mut reader = BufReader::new(read_half);
                let (first, headers) = crate::request_head(&mut reader);
                let method = first.split_whitespace().next().unwrap_or("GET").to_string();
                let path = first.split_whitespace().nth(1).unwrap_or("/").to_string();
                let header = |name: &str| {
                    headers
                        .iter()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.clone())
                };
                let authorization = header("authorization");
                let length: usize = header("content-length")
                    .and_then(|l| l.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; length.min(1 << 20)];
                let _ = std::io::Read::read_exact(&mut reader, &mut body);
                let body = String::from_utf8_lossy(&body).into_owned();
                let asked_body = body.clone();
                let n = {
                    let Ok(mut r) = seen.lock() else { continue };
                    r.push(ForgeRequest {
                        method: method.clone(),
                        path: path.clone(),
                        body: body.clone(),
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
                        let (status, body) = match pull_answer(&held, &method, &path, &body)
                            .or_else(|| edit_answer(&script, &path, &body))
                            .or_else(|| graphql_answer(&reviews, &path, &body))
                        {
                            Some(a) => a,
                            None => {
                                check_answer(&runs, &path).unwrap_or_else(|| answer(&script, &path))
                            }
                        };
                        (status, String::new(), body.to_string())
                    }
                };
                for (text, ms) in &script.slow {
                    if path.contains(text.as_str()) || asked_body.contains(text.as_str()) {
                        std::thread::sleep(std::time::Duration::from_millis(*ms));
                    }
                }
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Ok(Self {
            url,
            requests,
            pulls,
            checks,
            threads,
        })
    }

    /// From now on, the pull request's review threads are `threads` (as
    /// [`review_thread`] makes them).
    pub fn set_threads(&self, threads: Vec<Value>) {
        if let Ok(mut t) = self.threads.lock() {
            *t = threads;
        }
    }

    /// The review threads as they stand (replies added, resolved or not).
    pub fn threads(&self) -> Vec<Value> {
        self.threads.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// From now on, commit `sha`'s check runs are `runs` (as [`check_run`] makes
    /// them).
    pub fn set_checks(&self, sha: &str, runs: Vec<Value>) {
        if let Ok(mut c) = self.checks.lock() {
            c.insert(sha.to_string(), runs);
        }
    }

    /// The pull requests opened on it, as it holds them (`number`, `head`,
    /// `base`, `title`, `body`).
    pub fn pulls(&self) -> Vec<Value> {
        self.pulls.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<ForgeRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// The answer about pull requests and the repository, if `path` asks of them:
/// open one (POST), list the open ones (GET, `head` filtered as GitHub does),
/// change one's body (PATCH), the repository itself (its default branch).
fn pull_answer(
    pulls: &Mutex<Vec<Value>>,
    method: &str,
    path: &str,
    body: &str,
) -> Option<(&'static str, Value)> {
    let path = path.strip_prefix("/api/v1").unwrap_or(path);
    let (route, query) = path.split_once('?').unwrap_or((path, ""));
    let parts: Vec<&str> = route.trim_matches('/').split('/').collect();
    let mut held = pulls.lock().ok()?;
    let asked: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    match (method, parts.as_slice()) {
        ("GET", ["repos", _, _]) => Some(("200 OK", json!({"default_branch": "main"}))),
        ("POST", ["repos", o, r, "pulls"]) => {
            let number = 100 + held.len() as u64;
            let pr = json!({
                "number": number,
                "html_url": format!("https://forge.example/{o}/{r}/pull/{number}"),
                "head": {"ref": asked["head"]},
                "base": {"ref": asked["base"]},
                "title": asked["title"],
                "body": asked["body"],
            });
            held.push(pr.clone());
            Some(("201 Created", pr))
        }
        ("GET", ["repos", _, _, "pulls"]) => {
            let head = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("head="))
                .and_then(|h| h.split_once(':'))
                .map(|(_, branch)| branch.to_string());
            let open: Vec<Value> = held
                .iter()
                .filter(|p| head.as_ref().is_none_or(|h| p["head"]["ref"] == h.as_str()))
                .cloned()
                .collect();
            Some(("200 OK", Value::Array(open)))
        }
        ("PUT" | "POST", ["repos", _, _, "pulls", n, "merge"]) => {
            let n: u64 = n.parse().ok()?;
            let pr = held.iter_mut().find(|p| p["number"] == n)?;
            pr["merged"] = json!(true);
            pr["merged_at"] = asked["sha"].clone();
            Some(("200 OK", json!({"merged": true})))
        }
        ("PATCH", ["repos", _, _, "pulls", n]) => {
            let n: u64 = n.parse().ok()?;
            let pr = held.iter_mut().find(|p| p["number"] == n)?;
            if let Some(b) = asked.get("body") {
                pr["body"] = b.clone();
            }
            Some(("200 OK", pr.clone()))
        }
        _ => None,
    }
}

/// GitHub's GraphQL at `/graphql`: the review threads, a reply to one, resolving
/// one.
fn graphql_answer(
    threads: &Mutex<Vec<Value>>,
    path: &str,
    body: &str,
) -> Option<(&'static str, Value)> {
    if path != "/graphql" {
        return None;
    }
    let asked: Value = serde_json::from_str(body).ok()?;
    let query = asked["query"].as_str().unwrap_or_default();
    let vars = &asked["variables"];
    let mut held = threads.lock().ok()?;
    if query.contains("reviewThreads") {
        let data =
            json!({"repository": {"pullRequest": {"reviewThreads": {"nodes": held.clone()}}}});
        return Some(("200 OK", json!({"data": data})));
    }
    let Some(t) = held.iter_mut().find(|t| t["id"] == vars["id"]) else {
        return Some((
            "200 OK",
            json!({"errors": [{"message": "Could not resolve to a node"}]}),
        ));
    };
    if query.contains("addPullRequestReviewThreadReply") {
        if let Some(nodes) = t["comments"]["nodes"].as_array_mut() {
            nodes.push(json!({"author": {"login": "baton-bot"}, "body": vars["body"], "url": "x"}));
        }
    } else if query.contains("resolveReviewThread") {
        t["isResolved"] = json!(true);
    }
    Some(("200 OK", json!({"data": {}})))
}

/// The check runs of a commit (GitHub's route), if `path` asks for them.
fn check_answer(
    checks: &Mutex<BTreeMap<String, Vec<Value>>>,
    path: &str,
) -> Option<(&'static str, Value)> {
    let (route, _) = path.split_once('?').unwrap_or((path, ""));
    let parts: Vec<&str> = route.trim_matches('/').split('/').collect();
    let ["repos", _, _, "commits", sha, "check-runs"] = parts.as_slice() else {
        return None;
    };
    let runs = checks.lock().ok()?.get(*sha).cloned().unwrap_or_default();
    Some((
        "200 OK",
        json!({"total_count": runs.len(), "check_runs": runs}),
    ))
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
