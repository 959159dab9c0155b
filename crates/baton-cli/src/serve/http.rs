//! The dashboard's HTTP/1.1: a bounded request head, GET only, and responses
//! written with a time limit.

use std::fmt::Write as _;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::MAX_REQUEST;

/// A request's head: method, path, query, the bearer token and the host if any.
pub(super) struct Request {
    pub(super) method: String,
    pub(super) path: String,
    pub(super) query: String,
    pub(super) bearer: Option<String>,
    pub(super) host: Option<String>,
    /// The token from the `baton_token` cookie, if the browser sent one.
    pub(super) cookie: Option<String>,
}

/// Read a request head (bounded in size and time).
pub(super) async fn read_head(stream: &mut TcpStream) -> Option<Result<Request, &'static str>> {
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
    let cookie = header("cookie").and_then(|v| {
        v.split(';')
            .filter_map(|kv| kv.trim().strip_prefix("baton_token="))
            .map(|t| url_decode(t.trim()))
            .next()
    });
    Some(Ok(Request {
        method,
        path: path.to_string(),
        query: query.to_string(),
        bearer,
        host,
        cookie,
    }))
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

pub(super) async fn respond(
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
pub(super) const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// `io` within [`WRITE_TIMEOUT`].
pub(super) async fn bounded(io: impl Future<Output = std::io::Result<()>>) -> std::io::Result<()> {
    tokio::time::timeout(WRITE_TIMEOUT, io)
        .await
        .unwrap_or_else(|_| Err(std::io::ErrorKind::TimedOut.into()))
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
