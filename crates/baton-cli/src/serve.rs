//! `baton serve DIR…`: a read-only live dashboard of projects in the browser.
//!
//! A small HTTP/1.1 server (GET only, bounded requests) on tokio: `/` lists the
//! projects, `/p/N` shows one (a board of its features, cost against budget, the
//! sessions, the notes' tail and the newest transcript's tail), `/p/N/board` is the
//! board as an HTML fragment and `/p/N/events` a server-sent-events stream that says
//! when the project's records changed (polled every 300 ms), so the page's script
//! fetches the board again; `/events` and `/list` do the same for the list of
//! projects. Nothing here writes anything.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, bail};
use baton_config::Config;
use baton_harness::files::Files;
use baton_records::FeatureList;
use baton_report::escape;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// `baton serve`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The project directories.
    #[arg(required = true)]
    dirs: Vec<PathBuf>,
    /// Where to listen, ADDR:PORT (port 0: any free port, printed).
    #[arg(long, default_value = "127.0.0.1:8787")]
    bind: String,
    /// The environment variable holding the token requests must carry (`?token=` or
    /// `Authorization: Bearer`); required for an address that is not loopback.
    #[arg(long, value_name = "NAME")]
    token_env: Option<String>,
}

/// Largest request head read, in bytes.
const MAX_REQUEST: usize = 8 * 1024;
/// How often the records are looked at for the events stream.
const POLL: Duration = Duration::from_millis(300);
/// How often the events stream sends a comment to keep the connection up.
const HEARTBEAT: Duration = Duration::from_secs(15);
/// Connections served at once.
const MAX_CONNECTIONS: usize = 64;
/// Lines of the notes and of the transcript shown.
const TAIL_LINES: usize = 30;

/// One project served.
struct Project {
    files: Files,
    budget_usd: f64,
}

impl Project {
    fn name(&self) -> String {
        self.files
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.files.dir.display().to_string())
    }
}

struct Server {
    projects: Vec<Project>,
    token: Option<String>,
}

/// Run `baton serve` until Ctrl-C.
pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let addr: SocketAddr = args
        .bind
        .parse()
        .with_context(|| format!("--bind {}: not an ADDR:PORT", args.bind))?;
    let token = match &args.token_env {
        Some(name) => match std::env::var(name) {
            Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
            _ => bail!("--token-env {name}: the environment variable {name} is not set or empty"),
        },
        None if !addr.ip().is_loopback() => bail!(
            "--bind {addr} is not a loopback address: anyone who can reach it could read the projects, so it needs a token (--token-env NAME, naming an environment variable that holds it)"
        ),
        None => None,
    };
    // As with the provider keys: git, which the pages run, never gets the token,
    // and /proc/<baton>/environ does not show it.
    if let Some(name) = &args.token_env
        && let Err(e) = crate::secrets::scrub_configured(std::slice::from_ref(name))
    {
        eprintln!("baton: warning: could not take {name} out of /proc/self/environ: {e}");
    }
    let mut projects = Vec::new();
    for dir in &args.dirs {
        let dir = crate::setup::project_dir(dir, crate::setup::CREATE_HINT)?;
        let cfg = Config::load(&dir).unwrap_or_else(|e| {
            eprintln!(
                "baton: warning: {e}; showing {} with the default settings",
                dir.display()
            );
            Config::default()
        });
        crate::run_cmd::require_project(&dir, &cfg)?;
        projects.push(Project {
            files: Files::new(dir, cfg.project),
            budget_usd: cfg.run.budget_usd,
        });
    }
    let server = Arc::new(Server { projects, token });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the runtime")?;
    rt.block_on(serve(server, addr))?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(server: Arc<Server>, addr: SocketAddr) -> anyhow::Result<()> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("listen on {addr}"))?;
    let local = listener.local_addr().context("the address listened on")?;
    eprintln!(
        "baton: serving {} project(s) at http://{local}/ (read-only; Ctrl-C stops)",
        server.projects.len()
    );
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    // One Ctrl-C listener for the server's life: one made afresh each turn of the
    // loop would miss a Ctrl-C that came while a connection was being taken.
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => {
                eprintln!("baton: stopped serving");
                return Ok(());
            }
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let Ok(permit) = slots.clone().try_acquire_owned() else {
                    // Full: say so without waiting on the client (one try, no task).
                    let _ = stream.try_write(
                        b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    );
                    continue;
                };
                let server = server.clone();
                tokio::spawn(async move {
                    let _ = handle(server, stream).await;
                    drop(permit);
                });
            }
        }
    }
}

/// A request's head: method, path, query, the bearer token and the host if any.
struct Request {
    method: String,
    path: String,
    query: String,
    bearer: Option<String>,
    host: Option<String>,
}

/// Read a request head (bounded in size and time).
async fn read_head(stream: &mut TcpStream) -> Option<Result<Request, &'static str>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let read = async {
        loop {
            if buf.windows(4).any(|w| w == b"\r\n\r\n") {
                return Some(true);
            }
            if buf.len() > MAX_REQUEST {
                return Some(false);
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    match tokio::time::timeout(Duration::from_secs(10), read).await {
        Ok(Some(true)) => {}
        Ok(Some(false)) => return Some(Err("431 Request Header Fields Too Large")),
        _ => return None,
    }
    let text = String::from_utf8_lossy(&buf);
    let mut lines = text.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split(' ');
    let method = first.next().unwrap_or_default().to_string();
    let target = first.next().unwrap_or_default();
    if !first.next().is_some_and(|v| v.starts_with("HTTP/1.")) {
        return Some(Err("400 Bad Request"));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let headers: Vec<(&str, &str)> = lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    let host = header("host").map(str::to_string);
    let bearer = header("authorization").and_then(|v| {
        v.trim()
            .strip_prefix("Bearer ")
            .map(|t| t.trim().to_string())
    });
    Some(Ok(Request {
        method,
        path: path.to_string(),
        query: query.to_string(),
        bearer,
        host,
    }))
}

/// Whether a Host header names an IP address or localhost (with or without a port).
fn host_is_address(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((v6, _)) => return v6.parse::<std::net::Ipv6Addr>().is_ok(),
            None => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

/// Equal in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// `%XX` and `+` decoded.
fn url_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                match std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `s` with everything but unreserved characters `%XX`-encoded.
fn url_encode(s: &str) -> String {
    let mut o = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            o.push(b as char);
        } else {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &str,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\ncache-control: no-store\r\nx-content-type-options: nosniff\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await
    };
    bounded(write).await
}

/// How long a write to a client may take: one that does not read is let go.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// `io` within [`WRITE_TIMEOUT`].
async fn bounded(io: impl Future<Output = std::io::Result<()>>) -> std::io::Result<()> {
    tokio::time::timeout(WRITE_TIMEOUT, io)
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
}

const TEXT: &str = "text/plain; charset=utf-8";
const HTML: &str = "text/html; charset=utf-8";

async fn handle(server: Arc<Server>, mut stream: TcpStream) -> std::io::Result<()> {
    let req = match read_head(&mut stream).await {
        None => return Ok(()),
        Some(Err(status)) => return respond(&mut stream, status, TEXT, status).await,
        Some(Ok(r)) => r,
    };
    if req.method != "GET" {
        let body = "baton serve is read-only: GET is allowed\n";
        let head = format!(
            "HTTP/1.1 405 Method Not Allowed\r\nallow: GET\r\ncontent-type: {TEXT}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        return bounded(async {
            stream.write_all(head.as_bytes()).await?;
            stream.shutdown().await
        })
        .await;
    }
    // Without a token, only a page named by an address (or localhost) may read: a
    // web page whose own name was pointed at 127.0.0.1 (DNS rebinding) may not.
    if server.token.is_none() && !req.host.as_deref().is_some_and(host_is_address) {
        return respond(
            &mut stream,
            "403 Forbidden",
            TEXT,
            "the Host header must be an IP address or localhost\n",
        )
        .await;
    }
    let query_token = req
        .query
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(url_decode);
    if let Some(token) = &server.token {
        let given = req.bearer.as_deref().or(query_token.as_deref());
        if !given.is_some_and(|g| same(g, token)) {
            return respond(
                &mut stream,
                "401 Unauthorized",
                TEXT,
                "a token is needed: ?token=… or Authorization: Bearer …\n",
            )
            .await;
        }
    }
    // Links in the pages carry the token on, for a browser that came with ?token=.
    let q = match (&server.token, &query_token) {
        (Some(_), Some(t)) => format!("?token={}", url_encode(t)),
        _ => String::new(),
    };
    let parts: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let project = |n: &str| -> Option<usize> {
        n.parse::<usize>()
            .ok()
            .filter(|&i| i < server.projects.len() && n == i.to_string())
    };
    match parts.as_slice() {
        [""] => {
            let s = server.clone();
            let body = blocking(move || index(&s, &q)).await;
            respond(&mut stream, "200 OK", HTML, &body).await
        }
        ["list"] => {
            let s = server.clone();
            let body = blocking(move || project_list(&s, &q)).await;
            respond(&mut stream, "200 OK", HTML, &body).await
        }
        ["events"] => events(&server.projects, stream).await,
        ["p", n] if project(n).is_some() => {
            let (s, i) = (server.clone(), project(n).unwrap_or_default());
            let body = blocking(move || project_page(&s.projects[i], i, &q)).await;
            respond(&mut stream, "200 OK", HTML, &body).await
        }
        ["p", n, "board"] if project(n).is_some() => {
            let (s, i) = (server.clone(), project(n).unwrap_or_default());
            let body = blocking(move || board(&s.projects[i])).await;
            respond(&mut stream, "200 OK", HTML, &body).await
        }
        ["p", n, "events"] if project(n).is_some() => {
            let i = project(n).unwrap_or_default();
            events(std::slice::from_ref(&server.projects[i]), stream).await
        }
        _ => respond(&mut stream, "404 Not Found", TEXT, "not found\n").await,
    }
}

/// Run `f` (reads files, runs git) off the runtime's thread.
async fn blocking(f: impl FnOnce() -> String + Send + 'static) -> String {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|_| "<p>internal error</p>".to_string())
}

/// What the records look like from outside: sizes and times of the files a
/// session's end or progress changes.
fn fingerprint(p: &Project) -> Vec<(u64, Option<SystemTime>)> {
    let f = &p.files;
    let mut paths = vec![
        f.dir.join(baton_records::layout::STATE),
        f.ledger(),
        f.accepted(),
        f.feature_list(),
        f.progress(),
        f.dir.join(baton_records::layout::LOCK),
    ];
    if let Some(t) = newest_transcript(&f.dir) {
        paths.push(t);
    }
    paths.extend(
        agent_dirs(&f.dir)
            .into_iter()
            .map(|(_, d)| d.join(baton_records::layout::STATE)),
    );
    paths
        .iter()
        .map(|path| match std::fs::metadata(path) {
            Ok(m) => (m.len(), m.modified().ok()),
            Err(_) => (u64::MAX, None),
        })
        .collect()
}

/// The server-sent-events stream of some projects (one for `/p/N/events`, all
/// for `/events`): `event: change` whenever their records change, a comment every 15 s, until the client goes away.
async fn events(projects: &[Project], stream: TcpStream) -> std::io::Result<()> {
    let fingerprint = || projects.iter().flat_map(fingerprint).collect::<Vec<_>>();
    // Taken before the answer starts: a change right after the client sees the
    // stream open is reported.
    let mut last = fingerprint();
    let (mut rd, mut wr) = stream.into_split();
    bounded(wr.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-store\r\nconnection: close\r\n\r\nretry: 1000\n\n",
    ))
    .await?;
    let mut beat = tokio::time::Instant::now();
    let mut buf = [0u8; 256];
    loop {
        tokio::select! {
            n = rd.read(&mut buf) => {
                if matches!(n, Ok(0) | Err(_)) {
                    return Ok(());
                }
            }
            () = tokio::time::sleep(POLL) => {
                let now = fingerprint();
                if now != last {
                    last = now;
                    bounded(wr.write_all(b"event: change\ndata: records\n\n")).await?;
                } else if beat.elapsed() >= HEARTBEAT {
                    bounded(wr.write_all(b": heartbeat\n\n")).await?;
                } else {
                    continue;
                }
                beat = tokio::time::Instant::now();
            }
        }
    }
}

/// The newest `.baton/sessions/NNNN.jsonl`.
fn newest_transcript(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir.join(baton_records::layout::SESSIONS))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl")
                && p.file_stem()
                    .is_some_and(|s| s.to_string_lossy().bytes().all(|b| b.is_ascii_digit()))
        })
        .max()
}

/// The working copies of a parallel run's agents (`.baton/agents/aK`), at most 64.
fn agent_dirs(dir: &Path) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir.join(baton_records::layout::AGENTS)) else {
        return Vec::new();
    };
    let mut found: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let k = e
                .file_name()
                .to_string_lossy()
                .strip_prefix('a')?
                .parse()
                .ok()?;
            Some((k, e.path()))
        })
        .take(64)
        .collect();
    found.sort();
    found
}

/// What a parallel run's agents work on now: (agent, session, its claimed feature),
/// from each working copy's state.json (a session under way and its claim).
fn agents_at_work(dir: &Path) -> Vec<(u32, u32, Option<usize>)> {
    agent_dirs(dir)
        .into_iter()
        .filter_map(|(k, d)| {
            let st = baton_records::State::load(&d).ok()?;
            let ip = st.in_progress?;
            Some((k, ip.number, st.claim.or(ip.target)))
        })
        .collect()
}

/// Whether a `baton run` holds the project's lock now: its record names a live pid.
fn running(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join(baton_records::layout::LOCK)) else {
        return false;
    };
    text.lines()
        .find_map(|l| l.strip_prefix("pid "))
        .and_then(|p| p.trim().parse::<u32>().ok())
        .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists())
}

/// The list as accepted, else as the file is, else empty.
fn feature_list(files: &Files) -> FeatureList {
    if let Ok(Some(l)) = files.load_accepted() {
        return l;
    }
    std::fs::read_to_string(files.feature_list())
        .ok()
        .and_then(|t| FeatureList::parse(&t, &files.names.feature_list).ok())
        .unwrap_or_default()
}

fn head(o: &mut String, title: &str, script: &str) {
    let _ = write!(
        o,
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark"><link rel="icon" href="data:,"><title>{}</title><style>{}{EXTRA_STYLE}</style></head><body><main>{script}"#,
        escape(title),
        baton_report::STYLE
    );
}

/// The board's own style, on top of the report's.
const EXTRA_STYLE: &str = ".board{display:grid;grid-template-columns:repeat(auto-fit,minmax(190px,1fr));gap:10px;margin-top:12px}
.col{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:8px}
.col h3{margin:0 0 6px;font-size:13px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.col ul{list-style:none;margin:0;padding:0}.col li{border-top:1px solid var(--line);padding:6px 2px;font-size:13px}
.col li small{display:block;color:var(--muted)}.col.passing h3{color:var(--pass)}.col.blocked h3{color:var(--fail)}
.col.deferred h3{color:var(--warn)}.col.progress h3{color:var(--accent)}
pre.tail{white-space:pre-wrap;word-break:break-word;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px;font:12px ui-monospace,monospace;max-height:420px;overflow:auto}
ol.transcript{list-style:none;padding:0;margin:0;font:12px ui-monospace,monospace}ol.transcript li{padding:3px 6px;border-bottom:1px solid var(--line);white-space:pre-wrap;word-break:break-word}
ol.transcript .tool{color:var(--accent)}ol.transcript .err{color:var(--fail)}ol.transcript .res{color:var(--muted)}";

/// `/`: every project in a line (swapped in live).
fn index(s: &Server, q: &str) -> String {
    let mut o = String::new();
    head(&mut o, "baton · projects", "");
    let _ = write!(
        o,
        r#"<header><h1>baton projects <span class="pill run" id="live">live</span></h1><div class="sub">read-only</div></header><div id="list">{}</div>{}</main></body></html>"#,
        project_list(s, q),
        live_script(&format!("/events{q}"), &format!("/list{q}"), "list")
    );
    o
}

/// `/list`: the projects' table.
fn project_list(s: &Server, q: &str) -> String {
    let mut o = String::from(
        r#"<table><thead><tr><th>Project</th><th class="n">Passing</th><th>Run</th><th class="n">Cost</th></tr></thead><tbody>"#,
    );
    for (i, p) in s.projects.iter().enumerate() {
        let (passing, total, cost) = match baton_harness::status::status(&p.files) {
            Ok(st) => (st.passing, st.total, st.totals.cost_usd),
            Err(_) => (0, 0, 0.0),
        };
        let run = if running(&p.files.dir) {
            r#"<span class="pill run">running</span>"#
        } else {
            "idle"
        };
        let _ = write!(
            o,
            r#"<tr><td><a href="/p/{i}{q}">{}</a> <code>{}</code></td><td class="n">{passing}/{total}</td><td>{run}</td><td class="n">${cost:.4}</td></tr>"#,
            escape(&p.name()),
            escape(&p.files.dir.display().to_string())
        );
    }
    o.push_str("</tbody></table>");
    o
}

/// The script that keeps element `target` live: on each `change` from `events`
/// (and on each (re)connect, for a change in between) it fetches `fragment` and
/// swaps it in, one fetch at a time. The URLs are made here, never from a request
/// but for the token, which is `%`-encoded.
fn live_script(events: &str, fragment: &str, target: &str) -> String {
    format!(
        r#"<script>(function(){{var busy=false,again=false,live=document.getElementById('live');
function load(){{if(busy){{again=true;return;}}busy=true;fetch('{fragment}',{{cache:'no-store'}}).then(function(r){{return r.ok?r.text():Promise.reject(r.status);}}).then(function(t){{document.getElementById('{target}').innerHTML=t;}}).catch(function(){{}}).finally(function(){{busy=false;if(again){{again=false;load();}}}});}}
var es=new EventSource('{events}');es.addEventListener('change',load);
es.onopen=function(){{live.textContent='live';live.className='pill ok';load();}};es.onerror=function(){{live.textContent='reconnecting';live.className='pill warn';}};}})();</script>"#
    )
}

/// `/p/N`: the board (swapped in live) around the page.
fn project_page(p: &Project, i: usize, q: &str) -> String {
    let mut o = String::new();
    head(&mut o, &format!("baton · {}", p.name()), "");
    let _ = write!(
        o,
        r#"<header><h1>{} <span class="pill run" id="live">live</span></h1><div class="sub"><a href="/{q}">all projects</a> · <code>{}</code></div></header><div id="board">{}</div>"#,
        escape(&p.name()),
        escape(&p.files.dir.display().to_string()),
        board(p)
    );
    o.push_str(&live_script(
        &format!("/p/{i}/events{q}"),
        &format!("/p/{i}/board{q}"),
        "board",
    ));
    o.push_str("</main></body></html>");
    o
}

/// One card of the board.
fn card(o: &mut String, n: usize, desc: &str, note: &str) {
    let _ = write!(
        o,
        r#"<li id="f-{n}"><b>#{n}</b> {}<small>{}</small></li>"#,
        escape(desc),
        escape(note)
    );
}

/// `/p/N/board`: everything that changes, as a fragment.
fn board(p: &Project) -> String {
    let mut o = String::new();
    let st = match baton_harness::status::status(&p.files) {
        Ok(s) => s.with_project_budget(p.budget_usd),
        Err(e) => {
            return format!(
                "<p class=\"note\">cannot read the records: {}</p>",
                escape(&e.to_string())
            );
        }
    };
    let list = feature_list(&p.files);
    let is_running = running(&p.files.dir);
    let transcript = newest_transcript(&p.files.dir);
    // Headline boxes.
    let spend = match st.budget_usd {
        Some(b) => format!(
            "${:.4} of ${b:.2} <span class=\"meter spend\"><i style=\"width:{:.1}%\"></i></span>",
            st.totals.cost_usd,
            (st.totals.cost_usd / b * 100.0).clamp(0.0, 100.0)
        ),
        None => format!(
            "${:.4} <span class=\"sub\">(no budget set)</span>",
            st.totals.cost_usd
        ),
    };
    let _ = write!(
        o,
        r#"<section class="kpis"><div class="kpi"><h3>Passing</h3><div class="big" id="passing">{}/{}</div><span class="meter"><i style="width:{:.1}%"></i></span></div><div class="kpi"><h3>Cost</h3><div>{spend}</div></div><div class="kpi"><h3>Sessions</h3><div class="big">{}</div></div><div class="kpi"><h3>Run</h3><div class="big">{}</div></div></section>"#,
        st.passing,
        st.total,
        if st.total == 0 {
            0.0
        } else {
            st.passing as f64 * 100.0 / st.total as f64
        },
        st.totals.sessions,
        if is_running { "running" } else { "idle" }
    );
    // The board.
    let blocked: std::collections::BTreeSet<usize> =
        st.needs_person.blocked.iter().map(|b| b.number).collect();
    let deferred: std::collections::BTreeSet<usize> =
        st.needs_person.deferred.iter().map(|d| d.number).collect();
    o.push_str(r#"<h2>Board</h2><section class="board">"#);
    // In progress: the session running now (state.json's in_progress) and its target.
    let mut progress = String::new();
    let in_progress = baton_records::State::load(&p.files.dir)
        .ok()
        .and_then(|s| s.in_progress);
    let in_progress = in_progress.filter(|_| is_running);
    let target = in_progress.as_ref().and_then(|ip| ip.target);
    if let Some(ip) = in_progress {
        let _ = write!(
            progress,
            "<li>session {} ({})<small>running now</small></li>",
            ip.number,
            escape(ip.kind.name())
        );
        if let Some(n) = ip.target {
            let desc = list
                .features
                .get(n.wrapping_sub(1))
                .map(|f| f.description.as_str())
                .unwrap_or_default();
            card(
                &mut progress,
                n,
                desc,
                &format!("in progress · session {}'s target", ip.number),
            );
        }
    }
    // A parallel run's agents, each on the feature it claimed.
    let mut claimed = std::collections::BTreeSet::new();
    if is_running {
        for (agent, session, feature) in agents_at_work(&p.files.dir) {
            match feature {
                Some(n) => {
                    claimed.insert(n);
                    let desc = list
                        .features
                        .get(n.wrapping_sub(1))
                        .map(|f| f.description.as_str())
                        .unwrap_or_default();
                    card(
                        &mut progress,
                        n,
                        desc,
                        &format!("in progress · agent {agent}, session {session}"),
                    );
                }
                None => {
                    let _ = write!(
                        progress,
                        "<li>agent {agent}: session {session}<small>running now</small></li>"
                    );
                }
            }
        }
    }
    if is_running && progress.is_empty() {
        progress.push_str("<li>a run holds the project<small>between sessions</small></li>");
    }
    column(&mut o, "progress", "In progress", &progress);
    let mut failing = String::new();
    for (i, f) in list.features.iter().enumerate() {
        let n = i + 1;
        if !f.passes
            && !blocked.contains(&n)
            && !deferred.contains(&n)
            && target != Some(n)
            && !claimed.contains(&n)
        {
            card(
                &mut failing,
                n,
                &f.description,
                &format!("failing · {}", f.category),
            );
        }
    }
    column(&mut o, "failing", "Failing", &failing);
    let mut d = String::new();
    for f in &st.needs_person.deferred {
        let why = f.last_reason.as_deref().unwrap_or("no reason recorded");
        card(
            &mut d,
            f.number,
            &f.description,
            &format!("deferred after {} attempts: {why}", f.attempts),
        );
    }
    column(&mut o, "deferred", "Deferred", &d);
    let mut b = String::new();
    for f in &st.needs_person.blocked {
        card(
            &mut b,
            f.number,
            &f.description,
            &format!("blocked: {}", f.reason),
        );
    }
    column(&mut o, "blocked", "Blocked", &b);
    let mut pass = String::new();
    for proof in &st.proofs {
        let desc = list
            .features
            .get(proof.feature - 1)
            .map(|f| f.description.as_str())
            .unwrap_or_default();
        let by = if proof.by == "unrecorded" {
            "passing · no proof on record".to_string()
        } else {
            match proof.session {
                Some(s) => format!(
                    "passing · proven by {} in session {s}: {}",
                    proof.by, proof.detail
                ),
                None => format!("passing · proven by {}: {}", proof.by, proof.detail),
            }
        };
        card(&mut pass, proof.feature, desc, &by);
    }
    column(&mut o, "passing", "Passing", &pass);
    o.push_str("</section>");
    // Sessions.
    o.push_str(r#"<h2>Sessions</h2><div class="scroll"><table><thead><tr><th class="n">#</th><th>Kind</th><th>Outcome</th><th class="n">Time</th><th class="n">Turns</th><th class="n">Cost</th><th>Newly passing</th></tr></thead><tbody>"#);
    for s in st.sessions.iter().rev() {
        let outcome = serde_json::to_value(s.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let flipped: Vec<String> = s.flipped.iter().map(|n| format!("#{n}")).collect();
        let _ = write!(
            o,
            r#"<tr><td class="n">{}</td><td>{}</td><td>{}</td><td class="n">{:.0}s</td><td class="n">{}</td><td class="n">${:.4}</td><td>{}</td></tr>"#,
            s.number,
            escape(&s.kind),
            escape(&outcome),
            s.duration_secs,
            s.turns,
            s.cost_usd + s.verifier_cost_usd,
            flipped.join(" ")
        );
    }
    o.push_str("</tbody></table></div>");
    // Notes.
    let notes = p.files.read_notes();
    let lines: Vec<&str> = notes.lines().collect();
    let tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    let _ = write!(
        o,
        r#"<h2>Notes (last lines)</h2><pre class="tail">{}</pre>"#,
        escape(&tail)
    );
    // Transcript.
    if let Some(t) = &transcript {
        let _ = write!(
            o,
            r#"<h2>Transcript {} (last lines)</h2><ol class="transcript">"#,
            escape(&t.file_name().unwrap_or_default().to_string_lossy())
        );
        for (class, line) in transcript_tail(t) {
            let _ = write!(o, r#"<li class="{class}">{}</li>"#, escape(&line));
        }
        o.push_str("</ol>");
    }
    o
}

fn column(o: &mut String, class: &str, title: &str, items: &str) {
    let count = items.matches(r#"<li id="f-"#).count();
    let _ = write!(
        o,
        r#"<div class="col {class}"><h3>{title} ({count})</h3><ul>{items}</ul></div>"#
    );
}

/// `s` cut to `n` characters, with a marker.
fn cut(s: &str, n: usize) -> String {
    let s = s.trim();
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// The last events of a transcript as readable lines: (CSS class, text).
fn transcript_tail(path: &Path) -> Vec<(&'static str, String)> {
    const MAX_BYTES: u64 = 256 * 1024;
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    use std::io::{Read as _, Seek as _};
    let _ = f.seek(std::io::SeekFrom::Start(len.saturating_sub(MAX_BYTES)));
    let mut text = String::new();
    let mut raw = Vec::new();
    let _ = f.take(MAX_BYTES).read_to_end(&mut raw);
    text.push_str(&String::from_utf8_lossy(&raw));
    let mut out = Vec::new();
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match v["type"].as_str().unwrap_or_default() {
            "session_start" => out.push((
                "res",
                format!(
                    "session started · {}",
                    v["model"].as_str().unwrap_or_default()
                ),
            )),
            "user" | "assistant" => {
                let who = if v["type"] == "user" { "user" } else { "agent" };
                for b in v["content"].as_array().into_iter().flatten() {
                    match b["type"].as_str().unwrap_or_default() {
                        "text" => out.push((
                            "",
                            format!(
                                "{who}: {}",
                                cut(b["text"].as_str().unwrap_or_default(), 600)
                            ),
                        )),
                        "tool_use" => out.push((
                            "tool",
                            format!(
                                "→ {} {}",
                                b["name"].as_str().unwrap_or_default(),
                                cut(&b["input"].to_string(), 200)
                            ),
                        )),
                        _ => {}
                    }
                }
            }
            "tool_result" => {
                let err = v["is_error"].as_bool().unwrap_or(false)
                    || v["refused"].as_bool().unwrap_or(false);
                let first = v["content"]
                    .as_str()
                    .unwrap_or_default()
                    .lines()
                    .next()
                    .unwrap_or_default();
                out.push((
                    if err { "err" } else { "res" },
                    format!(
                        "← {}{}: {}",
                        v["name"].as_str().unwrap_or_default(),
                        if err { " (error)" } else { "" },
                        cut(first, 200)
                    ),
                ));
            }
            "retry" | "wait" => out.push((
                "err",
                format!(
                    "{}: {}",
                    v["type"].as_str().unwrap_or_default(),
                    cut(v["error"].as_str().unwrap_or_default(), 200)
                ),
            )),
            "session_end" => out.push((
                "res",
                format!(
                    "session ended: {}",
                    v["outcome"].as_str().unwrap_or_default()
                ),
            )),
            _ => {}
        }
    }
    let skip = out.len().saturating_sub(TAIL_LINES);
    out.split_off(skip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_url_coding_round_trips_and_tokens_compare() {
        assert_eq!(url_decode(&url_encode("a b/&?=é")), "a b/&?=é");
        assert_eq!(url_decode("%zz+x%4"), "%zz x%4");
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
        for ok in [
            "127.0.0.1:8787",
            "localhost:1",
            "LOCALHOST",
            "[::1]:80",
            "10.0.0.2",
        ] {
            assert!(host_is_address(ok), "{ok}");
        }
        for bad in [
            "evil.example:8787",
            "evil.example",
            "[::1",
            "127.0.0.1.nip.io:80",
            "",
        ] {
            assert!(!host_is_address(bad), "{bad}");
        }
    }

    #[test]
    fn serve_transcript_tail_reads_tool_calls_and_text() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0001.jsonl");
        std::fs::write(
            &p,
            concat!(
                r#"{"t_ms":1,"type":"assistant","turn":1,"content":[{"type":"text","text":"Let me <look>"},{"type":"tool_use","id":"a","name":"Bash","input":{"command":"ls"}}]}"#,
                "\n",
                r#"{"t_ms":2,"type":"tool_result","turn":1,"tool_use_id":"a","name":"Bash","content":"boom\nmore","is_error":true,"duration_ms":3}"#,
                "\nnot json\n"
            ),
        )
        .unwrap();
        let t = transcript_tail(&p);
        assert_eq!(
            t,
            vec![
                ("", "agent: Let me <look>".to_string()),
                ("tool", "→ Bash {\"command\":\"ls\"}".to_string()),
                ("err", "← Bash (error): boom".to_string()),
            ]
        );
    }
}
