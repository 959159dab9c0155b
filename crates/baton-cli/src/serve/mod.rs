//! `baton serve DIR…`: a read-only live dashboard of projects in the browser.
//!
//! A small HTTP/1.1 server (GET only, bounded requests) on tokio: `/` lists the
//! projects, `/p/N` shows one (a board of its features, cost against budget, the
//! sessions, the notes' tail and the newest transcript's tail), `/p/N/board` is the
//! board as an HTML fragment and `/p/N/events` a server-sent-events stream that says
//! when the project's records changed (polled every 300 ms), so the page's script
//! fetches the board again; `/events` and `/list` do the same for the list of
//! projects. Nothing here writes anything.
//!
//! `http.rs` reads requests and writes responses; `pages.rs` renders the pages and
//! the board; this file serves them and watches the records.

mod http;
mod pages;

use http::{
    HTML, TEXT, bounded, host_is_address, read_head, respond, same, url_decode, url_encode,
};
use pages::{board, index, project_list, project_page};

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{Context as _, bail};
use baton_config::Config;
use baton_harness::files::Files;
use baton_records::FeatureList;
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

/// Serve one connection: one request, answered (the events streams stay open).
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
        let given = req
            .bearer
            .as_deref()
            .or(req.cookie.as_deref())
            .or(query_token.as_deref());
        if !given.is_some_and(|g| same(g, token)) {
            return respond(
                &mut stream,
                "401 Unauthorized",
                TEXT,
                "a token is needed: open ?token=… once, or send Authorization: Bearer …\n",
            )
            .await;
        }
        // A token that came in the address is exchanged for a cookie and taken
        // out of the address at once: it never stays in links, history or logs.
        if let Some(t) = &query_token {
            let head = format!(
                "HTTP/1.1 303 See Other\r\nlocation: {}\r\nset-cookie: baton_token={}; HttpOnly; SameSite=Strict; Path=/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                if req.path.is_empty() { "/" } else { &req.path },
                url_encode(t)
            );
            return bounded(async {
                stream.write_all(head.as_bytes()).await?;
                stream.shutdown().await
            })
            .await;
        }
    }
    let parts: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    let project = |n: &str| -> Option<usize> {
        n.parse::<usize>()
            .ok()
            .filter(|&i| i < server.projects.len() && n == i.to_string())
    };
    match parts.as_slice() {
        [""] => {
            let s = server.clone();
            let body = blocking(move || index(&s)).await;
            respond(&mut stream, "200 OK", HTML, &body).await
        }
        ["list"] => {
            let s = server.clone();
            let body = blocking(move || project_list(&s)).await;
            respond(&mut stream, "200 OK", HTML, &body).await
        }
        ["events"] => events(&server.projects, stream).await,
        ["p", n] if project(n).is_some() => {
            let (s, i) = (server.clone(), project(n).unwrap_or_default());
            let body = blocking(move || project_page(&s.projects[i], i)).await;
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
    files
        .read_list()
        .ok()
        .flatten()
        .and_then(|t| FeatureList::parse(&t, &files.names.feature_list).ok())
        .unwrap_or_default()
}
