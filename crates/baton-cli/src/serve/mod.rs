//! `baton serve DIR…`: a read-only live dashboard of projects in the browser.
//!
//! A small HTTP/1.1 server (GET only, bounded requests) on hyper: `/` lists the
//! projects, `/p/N` shows one (a board of its features, cost against budget, the
//! sessions, the notes' tail and the newest transcript's tail), `/p/N/board` is the
//! board as an HTML fragment and `/p/N/events` a server-sent-events stream that says
//! when the project's records changed (polled every 300 ms), so the page's script
//! fetches the board again; `/events` and `/list` do the same for the list of
//! projects. Nothing here writes anything.
//!
//! `http.rs` is the HTTP on hyper; `projects.rs` the projects served and what
//! is read of them; `pages.rs` renders the pages and the board; this file routes
//! requests and streams the records' changes.

mod http;
mod pages;
mod projects;

use http::{
    Body, Bounded, HTML, Request, TEXT, host_is_address, respond, same, url_decode, url_encode,
};
use pages::{board, index, project_list, project_page};
use projects::{Project, Server, newest_transcript};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, bail};
use baton_config::Config;
use baton_harness::files::Files;
use http_body_util::BodyExt as _;
use hyper::body::{Bytes, Frame};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
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
    /// The environment variable holding the token requests must carry (`?token=`
    /// once, exchanged for a cookie, or
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
        let cfg = crate::setup::load_config(&dir).unwrap_or_else(|e| {
            eprintln!(
                "baton: warning: {e}; showing {} with the default settings",
                dir.display()
            );
            Config::default()
        });
        crate::status_cmd::require_project(&dir, &cfg)?;
        projects.push(Project {
            files: Files::new(dir, cfg.project),
            budget_usd: cfg.run.budget_usd,
            stall_sessions: cfg.run.stall_sessions,
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
                    connection(server, stream).await;
                    drop(permit);
                });
            }
        }
    }
}

/// Serve one connection: one request, answered (an events stream stays open),
/// its head read within 10 s and at most [`MAX_REQUEST`] bytes.
async fn connection(server: Arc<Server>, stream: TcpStream) {
    let service = hyper::service::service_fn(move |req| {
        let server = server.clone();
        async move { Ok::<_, std::convert::Infallible>(handle(server, Request::of(&req)).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10))
        .max_buf_size(MAX_REQUEST)
        .keep_alive(false)
        .serve_connection(hyper_util::rt::TokioIo::new(Bounded::new(stream)), service)
        .await;
}

/// The answer to one request.
async fn handle(server: Arc<Server>, req: Request) -> Response<Body> {
    if req.method != hyper::Method::GET {
        let mut r = respond(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            "baton serve is read-only: GET is allowed\n".into(),
        );
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET"));
        return r;
    }
    // Without a token, only a page named by an address (or localhost) may read: a
    // web page whose own name was pointed at 127.0.0.1 (DNS rebinding) may not.
    if server.token.is_none() && !req.host.as_deref().is_some_and(host_is_address) {
        return respond(
            StatusCode::FORBIDDEN,
            TEXT,
            "the Host header must be an IP address or localhost\n".into(),
        );
    }
    let query_token = req
        .query
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(url_decode);
    if let Some(token) = &server.token {
        let given = req
            .bearer
            .as_deref()
            .or(req.cookie.as_deref())
            .or(query_token.as_deref());
        if !given.is_some_and(|g| same(g, token)) {
            return respond(
                StatusCode::UNAUTHORIZED,
                TEXT,
                "a token is needed: open ?token=… once, or send Authorization: Bearer …\n".into(),
            );
        }
        // A token that came in the address is exchanged for a cookie and taken
        // out of the address at once: it never stays in links, history or logs.
        if let Some(t) = &query_token {
            let mut r = respond(StatusCode::SEE_OTHER, TEXT, String::new());
            let location = if req.path.is_empty() { "/" } else { &req.path };
            let cookie = format!(
                "baton_token={}; HttpOnly; SameSite=Strict; Path=/",
                url_encode(t)
            );
            // Both come from the request's own path and an encoded token: valid.
            if let (Ok(l), Ok(c)) = (
                HeaderValue::from_str(location),
                HeaderValue::from_str(&cookie),
            ) {
                r.headers_mut().insert(header::LOCATION, l);
                r.headers_mut().insert(header::SET_COOKIE, c);
            }
            return r;
        }
    }
    let parts: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let project = |n: &str| -> Option<usize> {
        n.parse::<usize>()
            .ok()
            .filter(|&i| i < server.projects.len() && n == i.to_string())
    };
    let page = |body: String| respond(StatusCode::OK, HTML, body);
    match parts.as_slice() {
        [""] => {
            let s = server.clone();
            page(blocking(move || index(&s)).await)
        }
        ["list"] => {
            let s = server.clone();
            page(blocking(move || project_list(&s)).await)
        }
        ["events"] => events(server.clone(), None),
        ["p", n] if project(n).is_some() => {
            let (s, i) = (server.clone(), project(n).unwrap_or_default());
            page(blocking(move || project_page(&s.projects[i], i)).await)
        }
        ["p", n, "board"] if project(n).is_some() => {
            let (s, i) = (server.clone(), project(n).unwrap_or_default());
            page(blocking(move || board(&s.projects[i])).await)
        }
        ["p", n, "events"] if project(n).is_some() => events(server.clone(), project(n)),
        _ => respond(StatusCode::NOT_FOUND, TEXT, "not found\n".into()),
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
        baton_records::layout::agent_copies(&f.dir)
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

/// The server-sent-events stream of one project (`/p/N/events`) or all
/// (`/events`): `event: change` whenever their records change, a comment every
/// 15 s, until the client goes away.
fn events(server: Arc<Server>, one: Option<usize>) -> Response<Body> {
    let look = move || {
        let projects = match one {
            Some(i) => std::slice::from_ref(&server.projects[i]),
            None => &server.projects[..],
        };
        projects.iter().flat_map(fingerprint).collect::<Vec<_>>()
    };
    // Taken before the answer starts: a change right after the client sees the
    // stream open is reported.
    let last = look();
    let first = Bytes::from_static(b"retry: 1000\n\n");
    let said = futures_util::stream::unfold(
        (Some(first), last, tokio::time::Instant::now()),
        move |(first, mut last, mut beat)| {
            let look = look.clone();
            async move {
                if let Some(b) = first {
                    return Some((b, (None, last, beat)));
                }
                loop {
                    tokio::time::sleep(POLL).await;
                    let now = look();
                    let line: &'static [u8] = if now != last {
                        last = now;
                        b"event: change\ndata: records\n\n"
                    } else if beat.elapsed() >= HEARTBEAT {
                        b": heartbeat\n\n"
                    } else {
                        continue;
                    };
                    beat = tokio::time::Instant::now();
                    return Some((Bytes::from_static(line), (None, last, beat)));
                }
            }
        },
    );
    let frames =
        futures_util::StreamExt::map(said, |b| Ok::<_, std::convert::Infallible>(Frame::data(b)));
    let mut r = Response::new(http_body_util::StreamBody::new(frames).boxed());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
