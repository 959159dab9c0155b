//! The egress proxy's cost per request: the same small HTTP request to a local
//! server, made directly and through [`baton_policy::net::Egress::serve`] (a
//! `CONNECT` tunnel and a plain `GET` by absolute URL), each a new connection as
//! a package manager's first request is. Prints the medians, the proxy's added
//! time per request, and the ratios against the direct baseline measured in the
//! same run (absolute times on a shared machine are noise).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::io::{Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_policy::net::{Allowlist, Egress, Refusals};

const RUNS: usize = 400;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A server answering each connection's request with a short body.
fn server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                let _ = c.read(&mut buf);
                let _ = c.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                );
            });
        }
    });
    port
}

/// The proxy on a port of its own, allowing `registry.bench` (mapped to
/// 127.0.0.1).
fn proxy() -> u16 {
    let egress = Arc::new(Egress {
        allow: Allowlist::new(&["registry.bench"]),
        hosts: [("registry.bench".to_string(), "127.0.0.1".to_string())].into(),
        refused: Refusals::default(),
    });
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let e = egress.clone();
            std::thread::spawn(move || e.serve(c));
        }
    });
    port
}

/// Send `first` then `then` (if any, after the tunnel's answer) to `port`, read
/// to the end; the time it took.
fn exchange(port: u16, first: &str, then: Option<&str>) -> Duration {
    let t = Instant::now();
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.write_all(first.as_bytes()).unwrap();
    if let Some(then) = then {
        let mut head = [0u8; 39];
        c.read_exact(&mut head).unwrap();
        c.write_all(then.as_bytes()).unwrap();
    }
    let mut out = Vec::new();
    c.read_to_end(&mut out).unwrap();
    assert!(out.ends_with(b"ok"), "{}", String::from_utf8_lossy(&out));
    t.elapsed()
}

fn main() {
    let (up, px) = (server(), proxy());
    let get = "GET / HTTP/1.1\r\nhost: registry.bench\r\n\r\n";
    let connect = format!("CONNECT registry.bench:{up} HTTP/1.1\r\n\r\n");
    let absolute =
        format!("GET http://registry.bench:{up}/ HTTP/1.1\r\nhost: registry.bench\r\n\r\n");
    let sample = |f: &dyn Fn() -> Duration| {
        for _ in 0..RUNS / 10 {
            f();
        }
        median((0..RUNS).map(|_| f()).collect())
    };
    let direct = sample(&|| exchange(up, get, None));
    let tunnel = sample(&|| exchange(px, &connect, Some(get)));
    let plain = sample(&|| exchange(px, &absolute, None));
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!("egress proxy: one request on a new connection, median of {RUNS}");
    println!(
        "  baseline: direct                    {:8.1} µs",
        us(direct)
    );
    for (name, d) in [("CONNECT tunnel", tunnel), ("plain GET by URL", plain)] {
        println!(
            "  through the proxy, {name:<17}{:8.1} µs   +{:.1} µs a request   ratio {:.2}x",
            us(d),
            us(d) - us(direct),
            d.as_secs_f64() / direct.as_secs_f64()
        );
    }
}
