//! The dashboard's HTTP on hyper: one request a connection (GET only), a bounded
//! request head, and writes that wait at most [`WRITE_TIMEOUT`] for the client.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A response's body: a page, or the events stream.
pub(super) type Body = BoxBody<Bytes, Infallible>;

/// What a request asks and carries: path, query, the bearer token, the host and
/// the `baton_token` cookie, if any.
pub(super) struct Request {
    pub(super) method: hyper::Method,
    pub(super) path: String,
    pub(super) query: String,
    pub(super) bearer: Option<String>,
    pub(super) host: Option<String>,
    /// The token from the `baton_token` cookie, if the browser sent one.
    pub(super) cookie: Option<String>,
}

impl Request {
    pub(super) fn of<B>(req: &hyper::Request<B>) -> Self {
        let headers = req.headers();
        let header = |name: header::HeaderName| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
        };
        let bearer = header(header::AUTHORIZATION)
            .and_then(|v| v.strip_prefix("Bearer ").map(|t| t.trim().to_string()));
        let cookie = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|kv| kv.trim().strip_prefix("baton_token="))
            .map(|t| url_decode(t.trim()))
            .next();
        Self {
            method: req.method().clone(),
            path: req.uri().path().to_string(),
            query: req.uri().query().unwrap_or_default().to_string(),
            bearer,
            host: header(header::HOST).map(str::to_string),
            cookie,
        }
    }
}

/// A whole response: `status`, `content_type` and `body`, never cached.
pub(super) fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: String,
) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)).boxed());
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// How long a write to a client may wait for it to read: one that does not
/// read is let go.
pub(super) const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// A client's socket whose writes wait at most [`WRITE_TIMEOUT`] for the
/// client to read.
pub(super) struct Bounded {
    stream: TcpStream,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Bounded {
    pub(super) fn new(stream: TcpStream) -> Self {
        Self {
            stream,
            stalled: None,
        }
    }

    /// `r`, or a time-out once a write has waited [`WRITE_TIMEOUT`].
    fn bound<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if r.is_ready() {
            self.stalled = None;
            return r;
        }
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(WRITE_TIMEOUT)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::ErrorKind::TimedOut.into())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for Bounded {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Bounded {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.stream).poll_write(cx, buf);
        me.bound(cx, r)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.stream).poll_flush(cx);
        me.bound(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        let r = Pin::new(&mut me.stream).poll_shutdown(cx);
        me.bound(cx, r)
    }
}

/// Whether a Host header names an IP address or localhost (with or without a port).
pub(super) fn host_is_address(host: &str) -> bool {
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
pub(super) fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// `%XX` and `+` decoded.
pub(super) fn url_decode(s: &str) -> String {
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
pub(super) fn url_encode(s: &str) -> String {
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

pub(super) const TEXT: &str = "text/plain; charset=utf-8";
pub(super) const HTML: &str = "text/html; charset=utf-8";

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
}
