//! A loopback reverse proxy that keeps a model provider's API key out of a sandbox.
//!
//! An agent CLI run inside the kernel sandbox (Codex) is pointed at
//! [`KeyProxy::base_url`](crate::key_proxy::KeyProxy::base_url) with the token of a
//! [`Grant`](crate::key_proxy::Grant) as its API key: one grant per session, revoked
//! when it is dropped. The proxy, outside the sandbox, accepts only requests that
//! carry a live grant's token, and forwards each one to the real upstream with the
//! real credentials in their place. The key itself never enters the sandbox, and
//! never appears in an error body or in `Debug` output.
//!
//! Each grant counts what its requests cost, as the provider said in its answers
//! ([`Metered`]): whatever in the session holds the token, the CLI or a command that
//! read it, what it spends is counted.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use baton_agent::key_proxy::KeyProxy;
//! let key = std::env::var("OPENAI_API_KEY").unwrap_or_default();
//! let proxy = KeyProxy::start(
//!     "https://api.openai.com/v1",
//!     vec![("authorization".into(), format!("Bearer {key}"))],
//! )
//! .await?;
//! let grant = proxy.grant();
//! // Give the sandboxed CLI `proxy.base_url()` and `grant.token()`; the token is
//! // refused once `grant` is dropped, and the proxy stops when `proxy` is.
//! let spent = grant.metered().total();
//! # let _ = spent;
//! # Ok(()) }
//! ```

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::TryStreamExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited, StreamBody};
use hyper::body::{Body as _, Bytes, Frame, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rand::Rng as _;
use subtle::ConstantTimeEq as _;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::{CancellationToken, DropGuard};

mod decode;
mod meter;
pub use meter::Metered;
use meter::{Metering, Tally};

/// The largest request body forwarded (64 MiB); a larger one is answered 413.
pub const MAX_REQUEST_BODY: u64 = 64 * 1024 * 1024;

/// Characters of the session token: 43 alphanumerics, about 256 bits.
const TOKEN_LEN: usize = 43;

/// The path prefix the proxy serves; `/v1/<rest>` goes to `{upstream}/<rest>`.
const PREFIX: &str = "/v1/";

/// Hop-by-hop headers (RFC 9110 §7.6.1), never forwarded in either direction.
const HOP_BY_HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
];

type ProxyBody = UnsyncBoxBody<Bytes, std::io::Error>;

/// A running key proxy on `127.0.0.1`; it stops serving when dropped.
pub struct KeyProxy {
    addr: SocketAddr,
    upstream: String,
    shared: Arc<Shared>,
    stop: CancellationToken,
    _stop: DropGuard,
}

impl std::fmt::Debug for KeyProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyProxy")
            .field("addr", &self.addr)
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

/// A token the proxy accepts until the grant is dropped, and what was spent with it.
pub struct Grant {
    token: String,
    tally: Tally,
    limit: u64,
    shared: std::sync::Weak<Shared>,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("token", &"<redacted>")
            .field("metered", &self.metered())
            .finish()
    }
}

impl Grant {
    /// The token the client sends as `authorization: Bearer <token>`.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// What the requests sent with this token have cost so far, as the provider
    /// reported in its answers (an answer counts as the part that reports its usage
    /// passes).
    pub fn metered(&self) -> Metered {
        self.tally.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Whether the grant's token limit is reached, so its requests are refused.
    pub fn spent(&self) -> bool {
        self.metered().reached(self.limit)
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade()
            && let Ok(mut grants) = shared.grants.lock()
        {
            grants.retain(|g| g.token != self.token);
        }
    }
}

/// A live grant as the proxy holds it: its token, its tally, its token limit (0:
/// none) and its one request in flight.
struct Live {
    token: String,
    tally: Tally,
    limit: u64,
    one: Arc<tokio::sync::Semaphore>,
}

/// What every connection's handler needs.
struct Shared {
    /// The live grants.
    grants: std::sync::Mutex<Vec<Live>>,
    /// The upstream base URL without a trailing `/`.
    upstream: String,
    /// Added to every forwarded request, marked sensitive.
    headers: Vec<(HeaderName, HeaderValue)>,
    client: reqwest::Client,
    /// When the upstream's last rate or quota limit (429) said it resets.
    limit: std::sync::Mutex<Option<std::time::Instant>>,
}

impl KeyProxy {
    /// Listen on a free port of `127.0.0.1`, forwarding requests with a live
    /// grant's token under `/v1/` to `upstream` (a base URL such as
    /// `https://api.openai.com/v1`) with `upstream_headers` added (the real
    /// credentials, e.g. `("authorization", "Bearer sk-…")`).
    ///
    /// # Errors
    /// When the port cannot be bound, a header name or value is invalid (the error
    /// names the header, never its value), or the HTTP client cannot be built.
    pub async fn start(
        upstream: &str,
        upstream_headers: Vec<(String, String)>,
    ) -> std::io::Result<KeyProxy> {
        let headers = upstream_headers
            .into_iter()
            .map(|(name, value)| sensitive_header(&name, &value))
            .collect::<std::io::Result<Vec<_>>>()?;
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            // Redirects go back to the client: following one would carry the key
            // wherever the upstream points.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| std::io::Error::other(format!("cannot build the HTTP client: {e}")))?;
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let upstream = upstream.trim_end_matches('/').to_string();
        let shared = Arc::new(Shared {
            grants: std::sync::Mutex::new(Vec::new()),
            upstream: upstream.clone(),
            headers,
            client,
            limit: std::sync::Mutex::new(None),
        });
        let stop = CancellationToken::new();
        tokio::spawn(accept_loop(listener, shared.clone(), stop.clone()));
        Ok(KeyProxy {
            addr,
            upstream,
            shared,
            stop: stop.clone(),
            _stop: stop.drop_guard(),
        })
    }

    /// [`KeyProxy::start`] on a thread of its own with its own runtime, for callers
    /// outside one (a command sets its backend up before its runtime starts); the
    /// thread ends when the proxy is dropped.
    ///
    /// # Errors
    /// As [`KeyProxy::start`], or when the thread or its runtime cannot start.
    pub fn spawn(
        upstream: &str,
        upstream_headers: Vec<(String, String)>,
    ) -> std::io::Result<KeyProxy> {
        let (tx, rx) = std::sync::mpsc::channel();
        let upstream = upstream.to_string();
        std::thread::Builder::new()
            .name("baton-key-proxy".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(async move {
                    match KeyProxy::start(&upstream, upstream_headers).await {
                        Ok(p) => {
                            let stopped = p.stop.clone();
                            if tx.send(Ok(p)).is_ok() {
                                stopped.cancelled().await;
                            }
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                        }
                    }
                });
            })?;
        rx.recv()
            .map_err(|_| std::io::Error::other("the key proxy's thread ended at start"))?
    }

    /// How long until the limit the upstream last answered 429 with resets, when
    /// it named one that has not passed.
    pub fn limit_reset(&self) -> Option<Duration> {
        let until = (*self.shared.limit.lock().ok()?)?;
        until.checked_duration_since(std::time::Instant::now())
    }

    /// The port of `127.0.0.1` it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The base URL to give the client: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// A fresh random token the proxy accepts until the grant is dropped (one per
    /// session: nothing keeps using a session's token after it).
    pub fn grant(&self) -> Grant {
        self.grant_limited(0)
    }

    /// [`KeyProxy::grant`] whose requests are refused (400, `token_limit`) once
    /// the answers to it have reported `limit` tokens of every kind in all (0: no
    /// limit): a session's token limit, held between its model requests.
    pub fn grant_limited(&self, limit: u64) -> Grant {
        let token: String = rand::rng()
            .sample_iter(rand::distr::Alphanumeric)
            .take(TOKEN_LEN)
            .map(char::from)
            .collect();
        let tally = Tally::default();
        if let Ok(mut grants) = self.shared.grants.lock() {
            grants.push(Live {
                token: token.clone(),
                tally: tally.clone(),
                limit,
                one: Arc::new(tokio::sync::Semaphore::new(1)),
            });
        }
        Grant {
            token,
            tally,
            limit,
            shared: Arc::downgrade(&self.shared),
        }
    }
}

/// A header to add upstream, marked sensitive so `Debug` never shows its value.
fn sensitive_header(name: &str, value: &str) -> std::io::Result<(HeaderName, HeaderValue)> {
    let invalid = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("upstream header {name:?}: invalid {what}"),
        )
    };
    let header_name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid("name"))?;
    let mut value = HeaderValue::from_str(value).map_err(|_| invalid("value"))?;
    value.set_sensitive(true);
    Ok((header_name, value))
}

/// Accept connections until `stop` is cancelled; each is served on its own task,
/// which also ends then.
async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                tokio::spawn(serve_connection(stream, shared.clone(), stop.clone()));
            }
            // Out of file descriptors or the like: wait for some to be freed.
            Err(_) => tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
            },
        }
    }
}

/// Serve one HTTP/1.1 connection (keep-alive included) until it closes or `stop`.
async fn serve_connection(stream: TcpStream, shared: Arc<Shared>, stop: CancellationToken) {
    let service = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(&shared, req).await) }
    });
    let conn =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        () = stop.cancelled() => {}
        _ = conn => {}
    }
}

/// Answer one request: refuse it, or forward it and relay the answer as it comes.
async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<ProxyBody> {
    let Some((tally, limit, one)) = granted(req.headers(), shared) else {
        return error(
            StatusCode::UNAUTHORIZED,
            "invalid_api_key",
            "key proxy: missing, wrong or revoked bearer token",
        );
    };
    // A tally nobody can read counts as spent.
    let (over, spent) = tally
        .lock()
        .map(|m| (m.reached(limit), m.total().total()))
        .unwrap_or((limit > 0, u64::MAX));
    if over {
        let msg = format!(
            "key proxy: this session's token limit is spent ({spent} of {limit} tokens; [agent] max_session_tokens)"
        );
        return error(StatusCode::BAD_REQUEST, "token_limit", &msg);
    }
    let Some(url) = upstream_url(&shared.upstream, req.uri()) else {
        return error(
            StatusCode::NOT_FOUND,
            "not_found",
            "key proxy: only paths under /v1/ are served",
        );
    };
    if !endpoint(req.method(), req.uri().path()) {
        let msg = format!(
            "key proxy: {} {} is not an endpoint a session uses (only POST /v1/responses, POST /v1/chat/completions and GET /v1/models are forwarded)",
            req.method(),
            req.uri().path()
        );
        return error(StatusCode::FORBIDDEN, "endpoint_not_allowed", &msg);
    }
    // One request in flight per session token: each request's usage is counted
    // before the next is let through, so a limit holds before it is spent.
    let Ok(permit) = one.try_acquire_owned() else {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            "one_at_a_time",
            "key proxy: this session already has a request in flight; one at a time",
        );
    };
    if req.body().size_hint().lower() > MAX_REQUEST_BODY {
        return too_large();
    }
    let (parts, body) = req.into_parts();
    let body = match Limited::new(body, as_usize(MAX_REQUEST_BODY))
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<LengthLimitError>() => return too_large(),
        Err(e) => {
            let msg = format!("key proxy: cannot read the request body: {e}");
            return error(StatusCode::BAD_REQUEST, "invalid_request_error", &msg);
        }
    };
    // A compressed body is read like a plain one, and forwarded plain.
    let encoding = parts
        .headers
        .get(header::CONTENT_ENCODING)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let body = match decode::decoded(encoding.as_deref(), body, as_usize(MAX_REQUEST_BODY)) {
        Ok(b) => b,
        Err(decode::Undecodable::TooLarge) => return too_large(),
        Err(decode::Undecodable::Unknown(e)) => {
            let msg = format!(
                "key proxy: a request body encoded as {e} cannot be read, so it is not forwarded (send it plain, gzip, deflate or zstd)"
            );
            return error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "invalid_request_error",
                &msg,
            );
        }
        Err(decode::Undecodable::Broken(e)) => {
            let msg = format!("key proxy: the request body is not what its encoding says: {e}");
            return error(StatusCode::BAD_REQUEST, "invalid_request_error", &msg);
        }
    };
    let left = (limit > 0).then(|| limit - spent);
    let (body, cap) = match checked_body(&parts.method, parts.uri.path(), &body, left) {
        Ok(checked) => checked,
        Err(why) => return error(StatusCode::BAD_REQUEST, "invalid_request_error", &why),
    };
    let asked = meter::Asked {
        bytes: body.len(),
        cap,
    };
    let mut headers = allowed_headers(&parts.headers, !body.is_empty());
    for (name, _) in &shared.headers {
        headers.remove(name);
    }
    for (name, value) in &shared.headers {
        headers.append(name.clone(), value.clone());
    }
    if let Ok(mut m) = tally.lock() {
        m.requests += 1;
    }
    let sent = shared
        .client
        .request(parts.method, url)
        .headers(headers)
        .body(body)
        .send()
        .await;
    match sent {
        Ok(answer) => {
            if answer.status() == StatusCode::TOO_MANY_REQUESTS
                && let Some(d) = crate::client::reset_after(answer.headers())
                    .or_else(|| crate::client::retry_after(answer.headers()))
                && let Ok(mut limit) = shared.limit.lock()
            {
                *limit = Some(std::time::Instant::now() + d);
            }
            relay(answer, tally, permit, asked)
        }
        Err(e) => {
            if let Ok(mut m) = tally.lock() {
                m.unreported += 1;
            }
            let msg = format!(
                "key proxy: cannot reach the upstream {}: {}",
                shared.upstream,
                causes(&e.without_url())
            );
            error(StatusCode::BAD_GATEWAY, "upstream_unreachable", &msg)
        }
    }
}

/// The tally and token limit of the live grant whose token `headers` carry
/// exactly as `authorization: Bearer <token>`, each compared in constant time.
fn granted(
    headers: &HeaderMap,
    shared: &Shared,
) -> Option<(Tally, u64, Arc<tokio::sync::Semaphore>)> {
    let given = headers.get(header::AUTHORIZATION)?.as_bytes();
    let grants = shared.grants.lock().ok()?;
    let mut found = None;
    for g in grants.iter() {
        let expected = format!("Bearer {}", g.token);
        if bool::from(given.ct_eq(expected.as_bytes())) {
            found = Some((g.tally.clone(), g.limit, g.one.clone()));
        }
    }
    found
}

/// The endpoints a session uses, and nothing else: the Responses API, chat
/// completions, and the list of models. Files, batches, fine-tuning, images,
/// deletes and the organisation's administration never get the real key.
const ENDPOINTS: &[(&str, &str)] = &[
    ("POST", "responses"),
    ("POST", "chat/completions"),
    ("GET", "models"),
];

/// Whether `method` on `/v1/<rest>` is an endpoint a session uses, exactly.
fn endpoint(method: &hyper::Method, path: &str) -> bool {
    let Some(rest) = path.strip_prefix(PREFIX) else {
        return false;
    };
    ENDPOINTS
        .iter()
        .any(|(m, p)| method.as_str() == *m && rest == *p)
}

/// The request headers forwarded upstream: only those a model request needs
/// (what the client is, what it accepts, which beta it speaks), never a cookie, a
/// proxy header, the client's credentials or a header that would select another
/// organisation, project or account. No `accept-encoding`: answers come plain, so
/// their usage can be read. A body goes as JSON, as it was re-serialised.
fn allowed_headers(headers: &HeaderMap, json: bool) -> HeaderMap {
    const ALLOWED: [&str; 6] = [
        "accept",
        "user-agent",
        "openai-beta",
        "originator",
        "version",
        "session_id",
    ];
    let mut out = HeaderMap::new();
    for (name, value) in headers {
        if ALLOWED.contains(&name.as_str()) {
            out.append(name.clone(), value.clone());
        }
    }
    if json {
        out.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    out
}

/// The smallest output cap the proxy sets (providers refuse smaller ones).
const MIN_CAP: u64 = 16;

/// The request body as forwarded, and the output cap it carries: the proxy parses
/// the (decoded) body once, judges that value, and forwards it re-serialised, so
/// what the provider reads is what was checked (no duplicate key, no trailing
/// bytes, nothing but one JSON object). A `GET` carries no body.
///
/// Refused: a body that is not one JSON object; a `background` response (its cost
/// would come after the session, out of any count); a response that continues
/// context stored at the provider (`previous_response_id`, `conversation`: input
/// the proxy never sees). Set: `store: false` on a response (nothing of the session
/// is kept at the provider for a later request to reach), `include_usage` on a
/// streamed chat completion (so its cost is metered), and, when the session has
/// `left` tokens of its limit, an output cap no larger than that, so one answer
/// cannot spend past the limit and an answer the client cuts is charged in full.
fn checked_body(
    method: &hyper::Method,
    path: &str,
    body: &[u8],
    left: Option<u64>,
) -> Result<(Bytes, Option<u64>), String> {
    if *method == hyper::Method::GET {
        return if body.is_empty() {
            Ok((Bytes::new(), None))
        } else {
            Err("key proxy: a GET request carries no body".into())
        };
    }
    let mut v: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
        format!("key proxy: the request body is not JSON ({e}), so it is not forwarded")
    })?;
    let Some(o) = v.as_object_mut() else {
        return Err(
            "key proxy: the request body is not a JSON object, so it is not forwarded".into(),
        );
    };
    let set = |o: &serde_json::Map<String, serde_json::Value>, key: &str| {
        o.get(key).is_some_and(|v| !v.is_null() && *v != false)
    };
    if set(o, "background") {
        return Err(
            "key proxy: background requests are refused: their cost would come after the session, where no limit holds".into(),
        );
    }
    let chat = path.ends_with("/chat/completions");
    if chat {
        if set(o, "stream") {
            let opts = o
                .entry("stream_options")
                .or_insert_with(|| serde_json::json!({}));
            if let Some(opts) = opts.as_object_mut() {
                opts.insert("include_usage".into(), serde_json::Value::Bool(true));
            }
        }
        if o.contains_key("store") {
            o.insert("store".into(), serde_json::Value::Bool(false));
        }
    } else {
        if let Some(key) = ["previous_response_id", "conversation"]
            .into_iter()
            .find(|k| set(o, k))
        {
            return Err(format!(
                "key proxy: `{key}` is refused: it continues context stored at the provider, out of the proxy's sight; send the whole input (with `store: false`)"
            ));
        }
        o.insert("store".into(), serde_json::Value::Bool(false));
    }
    let field = if !chat {
        "max_output_tokens"
    } else if o.contains_key("max_tokens") && !o.contains_key("max_completion_tokens") {
        "max_tokens"
    } else {
        "max_completion_tokens"
    };
    let given = match o.get(field) {
        None | Some(serde_json::Value::Null) => None,
        Some(n) => Some(n.as_u64().ok_or_else(|| {
            format!("key proxy: `{field}` is not a whole number of tokens, so the request is not forwarded")
        })?),
    };
    let cap = match left {
        Some(left) => {
            let cap = given.map_or(left, |g| g.min(left)).max(MIN_CAP);
            o.insert(field.into(), cap.into());
            Some(cap)
        }
        None => given,
    };
    let body = serde_json::to_vec(&v)
        .map_err(|e| format!("key proxy: cannot write the request body again: {e}"))?;
    Ok((Bytes::from(body), cap))
}

/// `{upstream}/<rest>?<query>` for a request to `/v1/<rest>?<query>`; `None` for
/// any other path, and for one with a `.` or `..` segment (which would climb out of
/// the upstream base once the URL is resolved).
fn upstream_url(upstream: &str, uri: &hyper::Uri) -> Option<String> {
    let rest = uri.path().strip_prefix(PREFIX)?;
    let dot_segment = rest.split('/').any(|seg| {
        let seg = seg.to_ascii_lowercase().replace("%2e", ".");
        seg == "." || seg == ".."
    });
    if dot_segment {
        return None;
    }
    Some(match uri.query() {
        Some(query) => format!("{upstream}/{rest}?{query}"),
        None => format!("{upstream}/{rest}"),
    })
}

/// `headers` without hop-by-hop ones (those listed and those named in
/// `connection`), `proxy-*`, `content-length` (the body's length is set anew) and
/// `also`.
fn forwarded(headers: &HeaderMap, also: &[HeaderName]) -> HeaderMap {
    let named_by_connection: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let n = name.as_str();
        let dropped = HOP_BY_HOP.contains(&n)
            || n.starts_with("proxy-")
            || *name == header::CONTENT_LENGTH
            || also.contains(name)
            || named_by_connection.iter().any(|c| c == n);
        if !dropped {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

/// The upstream's answer with its status and end-to-end headers, its body relayed
/// chunk by chunk as it arrives, and what it reports it cost added to `tally`.
fn relay(
    answer: reqwest::Response,
    tally: Tally,
    permit: tokio::sync::OwnedSemaphorePermit,
    asked: meter::Asked,
) -> Response<ProxyBody> {
    let status = answer.status();
    let headers = forwarded(answer.headers(), &[]);
    let kind = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let length = answer
        .content_length()
        .and_then(|n| usize::try_from(n).ok());
    // The session's request stays in flight until its answer is relayed whole.
    let chunks = Metering::new(Box::pin(answer.bytes_stream()), &kind, length, tally, asked)
        .map_ok(move |b| {
            let _in_flight = &permit;
            Frame::data(b)
        })
        .map_err(std::io::Error::other);
    let mut response = Response::new(StreamBody::new(chunks).boxed_unsync());
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// A short JSON error in the OpenAI shape, `{"error": {"message", "type"}}`.
fn error(status: StatusCode, kind: &str, message: &str) -> Response<ProxyBody> {
    let body = serde_json::json!({"error": {"message": message, "type": kind}}).to_string();
    let mut response = Response::new(Full::new(Bytes::from(body)).map_err(never).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn too_large() -> Response<ProxyBody> {
    let msg = format!("key proxy: request body over {MAX_REQUEST_BODY} bytes");
    error(StatusCode::PAYLOAD_TOO_LARGE, "invalid_request_error", &msg)
}

fn never(e: Infallible) -> std::io::Error {
    match e {}
}

fn as_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// `e` and its sources, joined by `: `.
fn causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests;
