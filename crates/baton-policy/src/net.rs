//! The network boundary: a namespace's commands have a loopback of their own and
//! reach the rest only through baton.
//!
//! With `[sandbox] network = "allowlist"` (the default) or `"loopback"`, a
//! namespace's holder is started in a network namespace of its own
//! (`bwrap --unshare-net`: a loopback and nothing else), and every command joins
//! it. What must cross goes through the holder's **bridge**, a `SOCK_SEQPACKET`
//! pair between the holder (its standard output) and baton, over which open
//! connections themselves pass (`SCM_RIGHTS`):
//!
//! - **Out**: the holder listens inside on [`PROXY_PORT`] (under `"allowlist"`)
//!   and on each port baton exposes ([`expose_host_port`]: the key proxy), and
//!   hands each connection it accepts to baton. baton serves the egress proxy on
//!   one to [`PROXY_PORT`] ([`Egress::serve`]: `CONNECT` and plain HTTP, to the
//!   hosts of the allowlist only, names resolved by baton), and joins one to an
//!   exposed port with the same port of the host's loopback.
//! - **In**: baton asks the holder to connect to a port of the namespace's
//!   loopback ([`Bridge::connect_inside`]) and gets the connection back: the
//!   browser, which runs outside, reaches the app a session serves inside.
//!
//! DNS is never answered inside: a name is resolved by baton, for an allowed host
//! only. A command that sets its own proxy variable, or dials an address, finds
//! no route.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{IoSlice, IoSliceMut, Read as _, Write as _};
use std::mem::MaybeUninit;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs as _};
use std::os::fd::{AsFd as _, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

/// The port of the namespace's loopback where its egress proxy listens; its
/// commands get `HTTP_PROXY`/`HTTPS_PROXY` naming it.
pub const PROXY_PORT: u16 = 3128;

/// The largest request head the egress proxy reads.
const MAX_HEAD: usize = 16 * 1024;

/// How long the egress proxy waits for a request head, or a host to answer.
const WAIT: Duration = Duration::from_secs(30);

/// The most connections baton serves for one namespace (or for the browser) at
/// once: past it a new one is closed at once, so a command that opens
/// connections without end cannot exhaust baton's threads.
pub const MAX_CONNECTIONS: usize = 256;

/// Connections in service, counted against [`MAX_CONNECTIONS`].
#[derive(Debug, Clone, Default)]
struct Slots(Arc<AtomicUsize>);

/// One connection's place among [`Slots`], given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slots {
    /// A place for one more connection, unless [`MAX_CONNECTIONS`] are in service.
    fn take(&self) -> Option<Slot> {
        let before = self.0.fetch_add(1, Ordering::SeqCst);
        if before >= MAX_CONNECTIONS {
            self.0.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Slot(self.0.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Ports of the host's loopback that baton's own services listen on (the key
/// proxy), exposed at the same number inside every namespace started after.
static EXPOSED: Mutex<Vec<u16>> = Mutex::new(Vec::new());

/// Expose `port` of the host's loopback, where a service of baton's listens, at
/// the same port inside every namespace started from now on.
pub fn expose_host_port(port: u16) {
    if let Ok(mut v) = EXPOSED.lock()
        && !v.contains(&port)
    {
        v.push(port);
    }
}

/// The ports [`expose_host_port`] named.
pub fn exposed() -> Vec<u16> {
    EXPOSED.lock().map(|v| v.clone()).unwrap_or_default()
}

/// The variables that point a namespace's commands at its egress proxy.
pub fn proxy_env() -> Vec<(&'static str, String)> {
    let url = format!("http://127.0.0.1:{PROXY_PORT}");
    let local = "localhost,127.0.0.1,::1,.localhost".to_string();
    vec![
        ("HTTP_PROXY", url.clone()),
        ("HTTPS_PROXY", url.clone()),
        ("http_proxy", url.clone()),
        ("https_proxy", url),
        ("NO_PROXY", local.clone()),
        ("no_proxy", local),
    ]
}

/// The hosts a run may reach: names, `*.name` (the name and every name under
/// it), or addresses, each on any port or on one (`name:8443`, `[::1]:8080`);
/// compared without case and a trailing dot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist(Vec<(String, Option<u16>)>);

impl Allowlist {
    /// From `[sandbox] allow`'s entries (checked when `baton.toml` is read,
    /// [`baton_config::allow_entry`]; one that is not a host is left out).
    pub fn new<S: AsRef<str>>(entries: &[S]) -> Self {
        Self(
            entries
                .iter()
                .filter_map(|e| baton_config::allow_entry(e.as_ref()).ok())
                .collect(),
        )
    }

    /// Whether `host` is on it, at `port`.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = norm(host);
        self.0
            .iter()
            .any(|(e, on)| on.is_none_or(|p| p == port) && matches_host(e, &host))
    }

    /// Whether `host` is on it at some port (a refusal then names the port).
    fn names(&self, host: &str) -> bool {
        let host = norm(host);
        self.0
            .iter()
            .any(|(e, on)| on.is_some() && matches_host(e, &host))
    }

    /// Its entries, as written back (`name`, `name:port`).
    pub fn entries(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|(h, p)| match p {
                Some(p) if h.contains(':') => format!("[{h}]:{p}"),
                Some(p) => format!("{h}:{p}"),
                None => h.clone(),
            })
            .collect()
    }
}

/// Whether the entry `e` (a name, `*.name` or an address) covers `host`
/// (normalised).
fn matches_host(e: &str, host: &str) -> bool {
    match e.strip_prefix("*.") {
        Some(base) => host == base || host.ends_with(&format!(".{base}")),
        None => e == host,
    }
}

fn norm(h: &str) -> String {
    h.trim()
        .trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// The registries a project needs, by what its files suggest (none suggests
/// anything: a project grown from an idea, whose kind is not known yet, gets
/// all of them): npm's, PyPI's, the crates registry's, Go's module proxy,
/// RubyGems', and GitHub's, where lockfiles fetch git dependencies from.
pub fn default_allow(project: &std::path::Path) -> Vec<String> {
    let has = |f: &str| project.join(f).exists();
    let kinds: [(&[&str], &[&str]); 5] = [
        (
            &["package.json"],
            &["registry.npmjs.org", "registry.yarnpkg.com"],
        ),
        (
            &["requirements.txt", "pyproject.toml", "setup.py", "Pipfile"],
            &["pypi.org", "files.pythonhosted.org"],
        ),
        (
            &["Cargo.toml"],
            &["crates.io", "index.crates.io", "static.crates.io"],
        ),
        (&["go.mod"], &["proxy.golang.org", "sum.golang.org"]),
        (&["Gemfile"], &["rubygems.org", "index.rubygems.org"]),
    ];
    let found: Vec<&[&str]> = kinds
        .iter()
        .filter(|(files, _)| files.iter().any(|f| has(f)))
        .map(|(_, hosts)| *hosts)
        .collect();
    let chosen: Vec<&[&str]> = if found.is_empty() {
        kinds.iter().map(|(_, hosts)| *hosts).collect()
    } else {
        found
    };
    let mut out: Vec<String> = chosen
        .into_iter()
        .flatten()
        .map(|h| (*h).to_string())
        .collect();
    out.extend(
        [
            "github.com",
            "codeload.github.com",
            "objects.githubusercontent.com",
        ]
        .map(str::to_string),
    );
    out
}

/// Hosts the egress proxy refused, each once, for the person.
#[derive(Debug, Clone, Default)]
pub struct Refusals(Arc<Mutex<(BTreeSet<String>, Vec<String>)>>);

impl Refusals {
    fn add(&self, host: &str) {
        if let Ok(mut r) = self.0.lock()
            && r.0.insert(host.to_string())
        {
            r.1.push(host.to_string());
        }
    }

    /// The hosts refused for the first time since the last call.
    pub fn take_new(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut r| std::mem::take(&mut r.1))
            .unwrap_or_default()
    }
}

/// What a namespace's egress may reach, and where names resolve.
#[derive(Debug, Clone, Default)]
pub struct Egress {
    /// The hosts of `[sandbox] allow`.
    pub allow: Allowlist,
    /// `[sandbox] hosts`: names resolved to these addresses instead of by DNS.
    pub hosts: BTreeMap<String, String>,
    /// The hosts refused so far.
    pub refused: Refusals,
}

impl Egress {
    /// Serve one client of the egress proxy on `client` (a connection a
    /// namespace's command made to [`PROXY_PORT`]): one request, `CONNECT
    /// host:port` or plain HTTP by absolute URL, to an allowed host; anything
    /// else is refused with a reason the agent can act on.
    pub fn serve(&self, client: TcpStream) {
        self.serve_with(client, |_, _| None);
    }

    /// [`Egress::serve`], where `inside` may take a request for a loopback host
    /// (the browser's proxy reaching a namespace's app): it returns the
    /// connection, or `None` to treat the host as any other.
    pub fn serve_with(
        &self,
        mut client: TcpStream,
        inside: impl Fn(&str, u16) -> Option<std::io::Result<TcpStream>>,
    ) {
        let _ = client.set_read_timeout(Some(WAIT));
        let Some((head, rest)) = read_head(&mut client) else {
            return;
        };
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        if !matches!(req.parse(&head), Ok(httparse::Status::Complete(_))) {
            refuse(
                &mut client,
                400,
                "the request is not HTTP baton's proxy can read",
            );
            return;
        }
        let method = req.method.unwrap_or_default().to_string();
        let path = req.path.unwrap_or_default().to_string();
        let connect = method.eq_ignore_ascii_case("CONNECT");
        let (host, port, origin_form) = if connect {
            match split_host_port(&path, 443) {
                Some((h, p)) => (h, p, String::new()),
                None => {
                    refuse(&mut client, 400, "CONNECT needs host:port");
                    return;
                }
            }
        } else {
            match absolute(&path) {
                Some(t) => t,
                None => {
                    refuse(
                        &mut client,
                        400,
                        "baton's proxy forwards absolute http:// URLs and CONNECT only",
                    );
                    return;
                }
            }
        };
        let upstream = match inside(&host, port) {
            Some(Ok(s)) => s,
            Some(Err(e)) => {
                refuse(
                    &mut client,
                    502,
                    &format!("{host}:{port} inside the sandbox: {e}"),
                );
                return;
            }
            None => {
                if !self.allow.allows(&host, port) {
                    self.refused.add(&host);
                    let why = if self.allow.names(&host) {
                        format!(
                            "baton: {host} is on this run's allowlist at other ports than {port}; if the project needs it, say so in the progress notes (only a person can add {host}:{port} to [sandbox] allow)"
                        )
                    } else {
                        format!(
                            "baton: {host} is not on this run's allowlist of hosts; if the project needs it, say so in the progress notes (only a person can add it to [sandbox] allow)"
                        )
                    };
                    refuse(&mut client, 403, &why);
                    return;
                }
                match self.dial(&host, port) {
                    Ok(s) => s,
                    Err(e) => {
                        refuse(
                            &mut client,
                            502,
                            &format!("baton: cannot reach {host}:{port}: {e}"),
                        );
                        return;
                    }
                }
            }
        };
        let _ = client.set_read_timeout(None);
        let mut upstream = upstream;
        if connect {
            if client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .is_err()
            {
                return;
            }
            if !rest.is_empty() && upstream.write_all(&rest).is_err() {
                return;
            }
        } else {
            // The request again in origin form, one request on the connection.
            let mut out = format!("{method} {origin_form} HTTP/1.1\r\n");
            for h in req.headers.iter() {
                let name = h.name.to_ascii_lowercase();
                if name.starts_with("proxy-") || name == "connection" || name == "keep-alive" {
                    continue;
                }
                out.push_str(h.name);
                out.push_str(": ");
                out.push_str(&String::from_utf8_lossy(h.value));
                out.push_str("\r\n");
            }
            out.push_str("connection: close\r\n\r\n");
            if upstream.write_all(out.as_bytes()).is_err()
                || (!rest.is_empty() && upstream.write_all(&rest).is_err())
            {
                return;
            }
        }
        splice(client, upstream);
    }

    /// Connect to `host:port`: the name as `[sandbox] hosts` maps it, else as
    /// DNS answers baton (never the namespace).
    fn dial(&self, host: &str, port: u16) -> std::io::Result<TcpStream> {
        let name = norm(host);
        let addrs: Vec<SocketAddr> = match self.hosts.get(&name) {
            Some(ip) => (ip.as_str(), port).to_socket_addrs()?.collect(),
            None => (name.as_str(), port).to_socket_addrs()?.collect(),
        };
        let mut last = std::io::Error::other("no address");
        for a in addrs {
            match TcpStream::connect_timeout(&a, WAIT) {
                Ok(s) => return Ok(s),
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// A request's head (through the blank line) and the bytes read past it.
fn read_head(client: &mut TcpStream) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = client.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(at + 4);
            return Some((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            refuse(client, 431, "request head too large");
            return None;
        }
    }
}

/// Answer `status` with `why` as its reason and body, and close.
fn refuse(client: &mut TcpStream, status: u16, why: &str) {
    let reason: String = why
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let body = format!("{reason}\n");
    let _ = write!(
        client,
        "HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.shutdown(Shutdown::Both);
}

/// `host:port` (`[v6]:port`), with `default` when there is no port.
fn split_host_port(s: &str, default: u16) -> Option<(String, u16)> {
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && !p.contains(']') => (h, p.parse().ok()?),
        _ => (s, default),
    };
    let host = norm(host);
    (!host.is_empty()).then_some((host, port))
}

/// The host, port and origin-form path of an absolute `http://` URL.
fn absolute(url: &str) -> Option<(String, u16, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = split_host_port(authority, 80)?;
    Some((host, port, path.to_string()))
}

/// Copy both ways between `a` and `b` until both directions end.
fn splice(a: TcpStream, b: TcpStream) {
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    let one = std::thread::spawn(move || {
        let (mut from, mut to) = (a2, b2);
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Write);
    });
    let (mut from, mut to) = (b, a);
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(Shutdown::Write);
    let _ = one.join();
}

/// Hand each connection `listener` accepts to `serve` until it says to stop.
/// An accept that fails (out of descriptors) is retried after a pause, never in
/// a busy loop.
fn accept_each(listener: &TcpListener, mut serve: impl FnMut(TcpStream) -> bool) {
    loop {
        match listener.accept() {
            Ok((conn, _)) => {
                if !serve(conn) {
                    return;
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// What the holder tells baton: a connection it accepted on a port.
const ACCEPTED: u8 = b'A';
/// What baton asks the holder: connect to a port inside.
const CONNECT: u8 = b'C';
/// The holder's answer to [`CONNECT`].
const REPLY: u8 = b'R';

/// A `SOCK_SEQPACKET` pair: one end for baton, one for the holder.
pub fn bridge_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// Send `msg` with `fd` (if any) over `control`.
fn send(control: &OwnedFd, msg: &[u8], fd: Option<&OwnedFd>) -> std::io::Result<()> {
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = SendAncillaryBuffer::new(&mut space);
    let fds;
    if let Some(fd) = fd {
        fds = [fd.as_fd()];
        anc.push(SendAncillaryMessage::ScmRights(&fds));
    }
    rustix::net::sendmsg(control, &[IoSlice::new(msg)], &mut anc, SendFlags::NOSIGNAL)?;
    Ok(())
}

/// One message from `control`, and the descriptor it carried; `None` at its end.
fn receive(control: &OwnedFd) -> Option<(Vec<u8>, Option<OwnedFd>)> {
    let mut buf = [0u8; 16];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        control,
        &mut [IoSliceMut::new(&mut buf)],
        &mut anc,
        RecvFlags::CMSG_CLOEXEC,
    )
    .ok()?;
    if got.bytes == 0 {
        return None;
    }
    let mut fd = None;
    for m in anc.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = m {
            for f in fds {
                fd.get_or_insert(f);
            }
        }
    }
    Some((buf[..got.bytes].to_vec(), fd))
}

/// The holder's side of the bridge (run inside the namespace, where the
/// loopback is the namespace's own): listen on `listen`'s ports and hand each
/// connection to baton; connect to a port when baton asks and hand that back.
/// Returns at once; threads do the work for the holder's life.
pub fn serve_inside(control: OwnedFd, listen: &[u16]) {
    let control = Arc::new(control);
    for &port in listen {
        let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) else {
            continue;
        };
        let control = control.clone();
        std::thread::spawn(move || {
            accept_each(&listener, |conn| {
                let [hi, lo] = port.to_be_bytes();
                let fd = OwnedFd::from(conn);
                send(&control, &[ACCEPTED, hi, lo], Some(&fd)).is_ok()
            });
        });
    }
    std::thread::spawn(move || {
        while let Some((msg, _)) = receive(&control) {
            if msg.len() != 7 || msg[0] != CONNECT {
                continue;
            }
            let id = [msg[1], msg[2], msg[3], msg[4]];
            let port = u16::from_be_bytes([msg[5], msg[6]]);
            let control = control.clone();
            std::thread::spawn(move || {
                let addr = SocketAddr::from(([127, 0, 0, 1], port));
                let reply = [REPLY, id[0], id[1], id[2], id[3]];
                let _ = match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
                    Ok(s) => send(&control, &reply, Some(&OwnedFd::from(s))),
                    Err(_) => send(&control, &reply, None),
                };
            });
        }
        // baton is gone: the holder ends with its standard input.
    });
}

/// baton's side of a holder's bridge.
#[derive(Debug)]
pub struct Bridge {
    control: Arc<OwnedFd>,
    pending: Arc<Mutex<HashMap<u32, mpsc::Sender<Option<OwnedFd>>>>>,
    next: AtomicU32,
}

impl Bridge {
    /// Serve `control` (baton's end of the holder's pair): a connection the
    /// holder accepted on [`PROXY_PORT`] gets `egress`'s proxy, one on an exposed
    /// port the host's same port; the thread ends with the holder.
    pub fn start(control: OwnedFd, egress: Arc<Egress>) -> Arc<Bridge> {
        let bridge = Arc::new(Bridge {
            control: Arc::new(control),
            pending: Arc::default(),
            next: AtomicU32::new(1),
        });
        let (control, pending) = (bridge.control.clone(), bridge.pending.clone());
        let slots = Slots::default();
        std::thread::spawn(move || {
            while let Some((msg, fd)) = receive(&control) {
                match (msg.first(), fd) {
                    (Some(&ACCEPTED), Some(fd)) if msg.len() == 3 => {
                        let port = u16::from_be_bytes([msg[1], msg[2]]);
                        let conn = TcpStream::from(fd);
                        // Too many at once: this one is closed.
                        let Some(slot) = slots.take() else {
                            continue;
                        };
                        let egress = egress.clone();
                        std::thread::spawn(move || {
                            let _slot = slot;
                            if port == PROXY_PORT {
                                egress.serve(conn);
                            } else if exposed().contains(&port)
                                && let Ok(host) = TcpStream::connect(("127.0.0.1", port))
                            {
                                splice(conn, host);
                            }
                        });
                    }
                    (Some(&REPLY), fd) if msg.len() == 5 => {
                        let id = u32::from_be_bytes([msg[1], msg[2], msg[3], msg[4]]);
                        if let Some(tx) = pending.lock().ok().and_then(|mut p| p.remove(&id)) {
                            let _ = tx.send(fd);
                        }
                    }
                    _ => {}
                }
            }
            // The holder ended: nothing pending will be answered.
            if let Ok(mut p) = pending.lock() {
                p.clear();
            }
        });
        bridge
    }

    /// A connection to `port` of the namespace's loopback, made by its holder.
    ///
    /// # Errors
    /// When the holder is gone, or nothing listens on `port` inside.
    pub fn connect_inside(&self, port: u16) -> std::io::Result<TcpStream> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id, tx);
        }
        let [a, b, c, d] = id.to_be_bytes();
        let [hi, lo] = port.to_be_bytes();
        send(&self.control, &[CONNECT, a, b, c, d, hi, lo], None)?;
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(Some(fd)) => Ok(TcpStream::from(fd)),
            Ok(None) => Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                format!("nothing listens on port {port} inside the sandbox"),
            )),
            Err(_) => {
                if let Ok(mut p) = self.pending.lock() {
                    p.remove(&id);
                }
                Err(std::io::Error::other("the sandbox's namespace is gone"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_past_the_limit_get_no_place_until_one_ends() {
        let slots = Slots::default();
        let mut held: Vec<Slot> = (0..MAX_CONNECTIONS)
            .map(|_| slots.take().unwrap())
            .collect();
        assert!(slots.take().is_none());
        held.pop();
        held.push(slots.take().unwrap());
        assert!(slots.take().is_none());
        held.clear();
        assert!(slots.take().is_some());
    }

    #[test]
    fn the_allowlist_matches_names_and_their_subdomains_only() {
        let a = Allowlist::new(&["registry.npmjs.org", "*.github.com", "10.0.0.5"]);
        assert!(a.allows("registry.npmjs.org", 443));
        assert!(a.allows("Registry.NPMjs.org.", 80));
        assert!(a.allows("github.com", 443));
        assert!(a.allows("codeload.github.com", 443));
        assert!(a.allows("10.0.0.5", 8080));
        assert!(!a.allows("npmjs.org", 443));
        assert!(!a.allows("evilgithub.com", 443));
        assert!(!a.allows("registry.npmjs.org.evil.com", 443));
        assert!(!a.allows("10.0.0.6", 443));
    }

    /// `host:port` (and `[v6]:port`) allows that port only; a bare entry every port.
    #[test]
    fn an_entry_with_a_port_allows_that_port_only() {
        let a = Allowlist::new(&[
            "git.example.com:8443",
            "*.mirror.test:80",
            "[::1]:9000",
            "fd00::5",
        ]);
        assert!(a.allows("git.example.com", 8443));
        assert!(!a.allows("git.example.com", 443));
        assert!(a.allows("a.mirror.test", 80));
        assert!(!a.allows("a.mirror.test", 443));
        assert!(a.allows("::1", 9000));
        assert!(!a.allows("::1", 9001));
        assert!(a.allows("fd00::5", 22));
        assert!(a.names("git.example.com"));
        assert!(!a.names("other.example.com"));
        assert_eq!(
            a.entries(),
            [
                "git.example.com:8443",
                "*.mirror.test:80",
                "[::1]:9000",
                "fd00::5"
            ]
        );
    }

    #[test]
    fn absolute_urls_and_authorities_are_split() {
        assert_eq!(
            absolute("http://a.example:8080/x?y"),
            Some(("a.example".into(), 8080, "/x?y".into()))
        );
        assert_eq!(
            absolute("http://u:p@a.example"),
            Some(("a.example".into(), 80, "/".into()))
        );
        assert_eq!(absolute("/relative"), None);
        assert_eq!(split_host_port("[::1]:443", 1), Some(("::1".into(), 443)));
        assert_eq!(split_host_port("host", 443), Some(("host".into(), 443)));
    }

    #[test]
    fn a_project_gets_its_kinds_registries_and_an_unknown_one_all() {
        let t = tempfile::tempdir().unwrap();
        let all = default_allow(t.path());
        assert!(all.contains(&"registry.npmjs.org".to_string()));
        assert!(all.contains(&"pypi.org".to_string()));
        std::fs::write(t.path().join("package.json"), "{}").unwrap();
        let node = default_allow(t.path());
        assert!(node.contains(&"registry.npmjs.org".to_string()));
        assert!(!node.contains(&"pypi.org".to_string()));
        assert!(node.contains(&"github.com".to_string()));
    }

    /// The proxy on real sockets: an allowed name (mapped to a local server) is
    /// reached, by CONNECT and by plain HTTP; any other host is refused with the
    /// reason, and counted once.
    #[test]
    fn the_proxy_reaches_allowed_hosts_and_refuses_the_rest() {
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut c in server.incoming().flatten() {
                let mut buf = [0u8; 1024];
                let n = c.read(&mut buf).unwrap_or(0);
                let first = String::from_utf8_lossy(&buf[..n])
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string();
                let body = format!("seen: {first}");
                let _ = write!(
                    c,
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        let egress = Arc::new(Egress {
            allow: Allowlist::new(&["registry.test"]),
            hosts: [("registry.test".to_string(), "127.0.0.1".to_string())].into(),
            refused: Refusals::default(),
        });
        let proxy = TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy_addr = proxy.local_addr().unwrap();
        let e = egress.clone();
        std::thread::spawn(move || {
            for c in proxy.incoming().flatten() {
                let e = e.clone();
                std::thread::spawn(move || e.serve(c));
            }
        });
        let ask = |req: String| {
            let mut c = TcpStream::connect(proxy_addr).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            c.write_all(req.as_bytes()).unwrap();
            let mut out = String::new();
            let _ = c.read_to_string(&mut out);
            out
        };
        let plain = ask(format!(
            "GET http://registry.test:{port}/pkg HTTP/1.1\r\nhost: registry.test\r\nproxy-authorization: x\r\n\r\n"
        ));
        assert!(plain.contains("seen: GET /pkg HTTP/1.1"), "{plain}");
        let tunnel = ask(format!(
            "CONNECT registry.test:{port} HTTP/1.1\r\n\r\nGET /through HTTP/1.1\r\n\r\n"
        ));
        assert!(
            tunnel.starts_with("HTTP/1.1 200 Connection Established"),
            "{tunnel}"
        );
        assert!(tunnel.contains("seen: GET /through"), "{tunnel}");
        for req in [
            format!("CONNECT evil.test:{port} HTTP/1.1\r\n\r\n"),
            format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n"),
            format!("GET http://evil.test:{port}/ HTTP/1.1\r\n\r\n"),
        ] {
            let said = ask(req.clone());
            assert!(said.starts_with("HTTP/1.1 403 baton: "), "{req}: {said}");
            assert!(said.contains("[sandbox] allow"), "{said}");
        }
        assert_eq!(egress.refused.take_new(), ["evil.test", "127.0.0.1"]);
        assert!(egress.refused.take_new().is_empty());
    }

    /// The bridge over a real socket pair: a connection accepted "inside" reaches
    /// the egress proxy, and baton connects to a port "inside" through it.
    #[test]
    fn the_bridge_carries_connections_both_ways() {
        let (ours, theirs) = bridge_pair().unwrap();
        let app = TcpListener::bind("127.0.0.1:0").unwrap();
        let app_port = app.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut c in app.incoming().flatten() {
                let _ = c.write_all(b"hello from inside");
            }
        });
        serve_inside(theirs, &[]);
        let bridge = Bridge::start(ours, Arc::new(Egress::default()));
        let mut c = bridge.connect_inside(app_port).unwrap();
        let mut said = String::new();
        c.read_to_string(&mut said).unwrap();
        assert_eq!(said, "hello from inside");
        let closed = TcpListener::bind("127.0.0.1:0").unwrap();
        let free = closed.local_addr().unwrap().port();
        drop(closed);
        assert!(bridge.connect_inside(free).is_err());
    }
}

/// The browser's way in: a proxy on the host's loopback for a browser that runs
/// outside the sandbox (baton's own loop starts Playwright's MCP server there).
/// A request for a loopback host (`localhost`, `127.0.0.1`, `::1`, `*.localhost`)
/// goes to the namespace whose holder started last, through its bridge, so the
/// browser opens the app a session serves inside (where nothing listens on that
/// port inside, to the host's loopback, as a browser outside the sandbox would);
/// any other host, as for the commands, only when the allowlist names it.
#[derive(Debug, Default)]
pub struct BrowserProxy {
    port: std::sync::OnceLock<Option<u16>>,
    target: Arc<Mutex<std::sync::Weak<Bridge>>>,
}

/// Whether `host` names this machine's loopback.
fn loopback(host: &str) -> bool {
    let h = norm(host);
    h == "localhost"
        || h.ends_with(".localhost")
        || h == "::1"
        || h.parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback())
}

impl BrowserProxy {
    /// The namespace the browser reaches from now on: `bridge`'s.
    pub fn aim(&self, bridge: &Arc<Bridge>) {
        if let Ok(mut t) = self.target.lock() {
            *t = Arc::downgrade(bridge);
        }
    }

    /// The port of the host's loopback it listens on, started at the first call
    /// and serving `egress`'s allowlist for other hosts; `None` when it cannot
    /// listen.
    pub fn port(&self, egress: &Arc<Egress>) -> Option<u16> {
        *self.port.get_or_init(|| {
            let listener = TcpListener::bind(("127.0.0.1", 0)).ok()?;
            let port = listener.local_addr().ok()?.port();
            let (target, egress) = (self.target.clone(), egress.clone());
            let slots = Slots::default();
            std::thread::spawn(move || {
                accept_each(&listener, |client| {
                    let Some(slot) = slots.take() else {
                        return true;
                    };
                    let (target, egress) = (target.clone(), egress.clone());
                    std::thread::spawn(move || {
                        let _slot = slot;
                        egress.serve_with(client, |host, port| {
                            if !loopback(host) {
                                return None;
                            }
                            let bridge = target.lock().ok().and_then(|t| t.upgrade());
                            let inside = bridge.map(|b| b.connect_inside(port));
                            Some(match inside {
                                Some(Ok(s)) => Ok(s),
                                // Nothing serves it in the sandbox: a service of
                                // the host's, as a browser outside it finds one.
                                _ => TcpStream::connect(("127.0.0.1", port)),
                            })
                        });
                    });
                    true
                });
            });
            Some(port)
        })
    }
}
