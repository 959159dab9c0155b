//! The key proxy over real HTTP on 127.0.0.1: against the scripted model server,
//! and against a hand-written upstream that holds its stream until told to go on.

use std::time::Duration;

use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use pretty_assertions::assert_eq;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::time::timeout;

use super::{KeyProxy, MAX_REQUEST_BODY};

const KEY: &str = "sk-the-real-key-0123456789";
const WAIT: Duration = Duration::from_secs(5);

fn real_key() -> Vec<(String, String)> {
    vec![
        ("authorization".into(), format!("Bearer {KEY}")),
        ("openai-organization".into(), "org-test".into()),
    ]
}

/// The scripted Responses server with `steps`, and a proxy to it with the real key.
async fn proxied(steps: Vec<Step>) -> (ScriptedServer, KeyProxy) {
    let server = ScriptedServer::start(Wire::OpenAiResponses, steps);
    let proxy = KeyProxy::start(&server.openai_base_url(), real_key())
        .await
        .unwrap();
    (server, proxy)
}

fn request_body() -> String {
    serde_json::json!({"model": "gpt-test", "input": "hi", "stream": true}).to_string()
}

/// POST `body` to `url` with `authorization: {auth}` when given.
/// Wait (at most [`WAIT`]) until `done` holds: an answer is settled.
async fn settled(done: impl Fn() -> bool) {
    timeout(WAIT, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the answer is settled");
}

async fn post(url: &str, auth: Option<&str>, body: String) -> reqwest::Response {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("x-client-tag", "codex-test")
        .body(body);
    if let Some(auth) = auth {
        req = req.header("authorization", auth);
    }
    timeout(WAIT, req.send())
        .await
        .expect("an answer in time")
        .expect("an HTTP answer")
}

/// The proxy's first answer to a request head written as is (no body follows),
/// authorised, with `content-length` when given.
async fn raw_head(proxy: &KeyProxy, method: &str, path: &str, len: Option<u64>) -> String {
    let grant = proxy.grant();
    let addr = proxy.base_url().replace("http://", "").replace("/v1", "");
    let mut conn = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let len = len.map_or(String::new(), |n| format!("content-length: {n}\r\n"));
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {}\r\n{len}\r\n",
        grant.token()
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 256];
    let n = timeout(WAIT, conn.read(&mut answer))
        .await
        .unwrap()
        .unwrap();
    String::from_utf8_lossy(&answer[..n]).into_owned()
}

#[tokio::test]
async fn forwards_with_the_real_key_and_relays_the_stream_byte_for_byte() {
    let script = || vec![Step::Reply(Reply::text("hello through the proxy"))];
    let via = ScriptedServer::start(Wire::OpenAiResponses, script());
    let direct = ScriptedServer::start(Wire::OpenAiResponses, script());
    let proxy = KeyProxy::start(&via.openai_base_url(), real_key())
        .await
        .unwrap();
    let grant = proxy.grant();
    let bearer = format!("Bearer {}", grant.token());

    let url = format!("{}/responses?trace=1", proxy.base_url());
    let proxied = post(&url, Some(&bearer), request_body()).await;
    assert_eq!(proxied.status(), 200);
    assert_eq!(proxied.headers()["content-type"], "text/event-stream");
    let proxied = proxied.bytes().await.unwrap();
    let url = format!("{}/responses?trace=1", direct.openai_base_url());
    let expected = post(&url, Some(&format!("Bearer {KEY}")), request_body())
        .await
        .bytes()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&expected).contains("response.completed"));
    assert_eq!(proxied, expected);

    let seen = via.requests();
    assert_eq!(seen.len(), 1);
    let seen = &seen[0];
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.path, "/v1/responses?trace=1");
    assert_eq!(
        seen.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(seen.header("openai-organization"), Some("org-test"));
    // Only the headers a model request needs go on: not the client's own.
    assert_eq!(seen.header("x-client-tag"), None);
    let host = via.base_url().replace("http://", "");
    assert_eq!(seen.header("host"), Some(host.as_str()));
    assert!(
        seen.headers.iter().all(|(_, v)| !v.contains(grant.token())),
        "the proxy token went upstream: {:?}",
        seen.headers
    );
    let mut sent: serde_json::Value = serde_json::from_str(&request_body()).unwrap();
    sent["store"] = false.into();
    assert_eq!(seen.body, sent);
}

#[tokio::test]
async fn a_wrong_or_missing_token_is_refused_and_nothing_is_forwarded() {
    let (server, proxy) = proxied(vec![Step::Reply(Reply::text("never"))]).await;
    let grant = proxy.grant();
    let url = format!("{}/responses", proxy.base_url());
    let wrong = format!("Bearer {}x", grant.token());
    let bare = grant.token().to_string();
    for auth in [None, Some(wrong.as_str()), Some(bare.as_str())] {
        let answer = post(&url, auth, request_body()).await;
        assert_eq!(answer.status(), 401, "authorization {auth:?}");
        let body: serde_json::Value = serde_json::from_str(&answer.text().await.unwrap()).unwrap();
        assert_eq!(body["error"]["type"], "invalid_api_key");
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_path_outside_v1_is_not_found() {
    let (server, proxy) = proxied(vec![Step::Reply(Reply::text("never"))]).await;
    let grant = proxy.grant();
    let bearer = format!("Bearer {}", grant.token());
    let root = proxy.base_url().replace("/v1", "");
    for path in ["/responses", "/v2/responses", "/v1"] {
        let answer = post(&format!("{root}{path}"), Some(&bearer), request_body()).await;
        assert_eq!(answer.status(), 404, "path {path}");
    }
    // Dot segments, which reqwest would resolve before sending.
    for path in ["/v1/a/../../admin", "/v1/%2E%2e/admin", "/v1/./responses"] {
        let answer = raw_head(&proxy, "GET", path, None).await;
        assert!(answer.starts_with("HTTP/1.1 404"), "path {path}: {answer}");
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_bad_gateway_that_keeps_the_key() {
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = gone.local_addr().unwrap();
    drop(gone);
    let proxy = KeyProxy::start(&format!("http://{addr}/v1"), real_key())
        .await
        .unwrap();
    let grant = proxy.grant();
    let bearer = format!("Bearer {}", grant.token());
    let url = format!("{}/responses", proxy.base_url());
    let answer = post(&url, Some(&bearer), request_body()).await;
    assert_eq!(answer.status(), 502);
    let body = answer.text().await.unwrap();
    assert!(body.contains(&addr.to_string()), "{body}");
    assert!(!body.contains(KEY), "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["error"]["type"], "upstream_unreachable");
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_before_it_is_read() {
    let (server, proxy) = proxied(vec![Step::Reply(Reply::text("never"))]).await;
    let answer = raw_head(&proxy, "POST", "/v1/responses", Some(MAX_REQUEST_BODY + 1)).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn requests_share_one_kept_alive_connection() {
    let steps = vec![
        Step::Reply(Reply::text("one")),
        Step::Reply(Reply::text("two")),
    ];
    let (server, proxy) = proxied(steps).await;
    let grant = proxy.grant();
    let addr = proxy.base_url().replace("http://", "").replace("/v1", "");
    let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake::<_, Full<Bytes>>(hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    let conn = tokio::spawn(conn);
    for text in ["one", "two"] {
        timeout(WAIT, sender.ready()).await.unwrap().unwrap();
        let req = hyper::Request::post("/v1/responses")
            .header("host", &addr)
            .header("authorization", format!("Bearer {}", grant.token()))
            .body(Full::new(Bytes::from(request_body())))
            .unwrap();
        let answer = timeout(WAIT, sender.send_request(req))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(answer.status(), 200);
        let body = timeout(WAIT, answer.into_body().collect())
            .await
            .unwrap()
            .unwrap()
            .to_bytes();
        assert!(String::from_utf8_lossy(&body).contains(text));
    }
    assert!(!conn.is_finished(), "the connection was closed");
    assert_eq!(server.requests().len(), 2);
}

/// One connection's request as the upstream received it: head and body.
struct Received {
    head: String,
    body: Vec<u8>,
}

/// A hand-written upstream on 127.0.0.1 for one request: it answers with a chunked
/// `text/event-stream` whose `first` chunk it sends at once and whose `rest` it
/// sends once `go` fires. Returns the base URL and the request it received.
async fn held_upstream(
    first: &'static str,
    rest: &'static str,
    go: oneshot::Receiver<()>,
) -> (String, oneshot::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tell, received) = oneshot::channel();
    tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let end = loop {
            let mut chunk = [0u8; 4096];
            let n = conn.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the request ended early");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        let mut body = buf[end..].to_vec();
        body.resize(len, 0);
        conn.read_exact(&mut body[buf.len() - end..]).await.unwrap();
        let _ = tell.send(Received { head, body });
        let chunk = |s: &str| format!("{:x}\r\n{s}\r\n", s.len());
        let start = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{}",
            chunk(first)
        );
        conn.write_all(start.as_bytes()).await.unwrap();
        conn.flush().await.unwrap();
        let _ = go.await;
        let end = format!("{}0\r\n\r\n", chunk(rest));
        conn.write_all(end.as_bytes()).await.unwrap();
        conn.flush().await.unwrap();
    });
    (base, received)
}

#[tokio::test]
async fn a_stream_is_relayed_as_it_comes() {
    const FIRST: &str = "event: response.created\ndata: {\"n\":1}\n\n";
    const REST: &str = "event: response.completed\ndata: {\"n\":2}\n\n";
    let (go, held) = oneshot::channel();
    let (upstream, _) = held_upstream(FIRST, REST, held).await;
    let proxy = KeyProxy::start(&upstream, real_key()).await.unwrap();
    let grant = proxy.grant();
    let bearer = format!("Bearer {}", grant.token());
    let url = format!("{}/responses", proxy.base_url());
    let mut answer = post(&url, Some(&bearer), request_body()).await;
    let mut got = Vec::new();
    while got.len() < FIRST.len() {
        let chunk = timeout(WAIT, answer.chunk())
            .await
            .expect("the first event before the rest is released")
            .unwrap()
            .expect("more body");
        got.extend_from_slice(&chunk);
    }
    assert_eq!(String::from_utf8_lossy(&got), FIRST);
    go.send(()).unwrap();
    while let Some(chunk) = timeout(WAIT, answer.chunk()).await.unwrap().unwrap() {
        got.extend_from_slice(&chunk);
    }
    assert_eq!(String::from_utf8_lossy(&got), format!("{FIRST}{REST}"));
}

/// A compressed body is read as a plain one would be: one asking for a
/// `background` response is refused even as zstd; another is forwarded plain
/// (no `content-encoding`), with the real key and without the session's token;
/// an encoding the proxy cannot read is refused, never forwarded unread.
#[tokio::test]
async fn a_compressed_body_is_read_and_forwarded_plain() {
    let (go, held) = oneshot::channel();
    go.send(()).unwrap();
    let (upstream, received) = held_upstream("data: {}\n\n", "data: {}\n\n", held).await;
    // The key in a header of its own: the client's authorization must still go.
    let key = vec![("x-api-key".to_string(), KEY.to_string())];
    let proxy = KeyProxy::start(&upstream, key).await.unwrap();
    let grant = proxy.grant();
    let send = |encoding: &'static str, body: Vec<u8>| {
        let url = format!("{}/responses", proxy.base_url());
        let token = grant.token().to_string();
        async move {
            timeout(
                WAIT,
                reqwest::Client::new()
                    .post(url)
                    .bearer_auth(token)
                    .header("content-encoding", encoding)
                    .header("content-type", "application/json")
                    .body(body)
                    .send(),
            )
            .await
            .unwrap()
            .unwrap()
        }
    };
    let background = br#"{"model":"m","input":"hi","background":true}"#;
    let zstd = ruzstd::encoding::compress_to_vec(
        &background[..],
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    let refused = send("zstd", zstd).await;
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("background"));
    assert_eq!(send("br", b"x".to_vec()).await.status(), 415);
    let plain = br#"{"model":"m","input":"hi","stream":true}"#;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, plain).unwrap();
    let answer = send("gzip", gz.finish().unwrap()).await;
    assert_eq!(answer.status(), 200);
    let received = timeout(WAIT, received).await.unwrap().unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&received.body).unwrap();
    let mut expected: serde_json::Value = serde_json::from_slice(plain).unwrap();
    expected["store"] = false.into();
    assert_eq!(sent, expected);
    assert!(
        !received.head.contains("content-encoding"),
        "{}",
        received.head
    );
    let key = format!("\r\nx-api-key: {}\r\n", KEY.to_ascii_lowercase());
    assert!(received.head.contains(&key), "{}", received.head);
    assert!(
        !received.head.contains("authorization"),
        "{}",
        received.head
    );
    assert!(!received.head.contains(&grant.token().to_ascii_lowercase()));
}

/// A stream the client cuts before the provider reported its usage is charged
/// by what was sent (the request's bytes, the text relayed so far, four bytes a
/// token), so a session cannot spend tokens no limit sees by hanging up early.
#[tokio::test]
async fn a_stream_the_client_cuts_is_charged_by_what_was_sent() {
    const FIRST: &str = concat!(
        "event: response.output_text.delta\n",
        "data: {\"type\":\"response.output_text.delta\",\"delta\":\"",
        "0123456789012345678901234567890123456789",
        "\"}\n\n"
    );
    const REST: &str = "event: response.output_text.delta\ndata: {\"delta\":\"more\"}\n\n";
    let (go, held) = oneshot::channel();
    let (upstream, _) = held_upstream(FIRST, REST, held).await;
    let proxy = KeyProxy::start(&upstream, real_key()).await.unwrap();
    let grant = proxy.grant();
    let bearer = format!("Bearer {}", grant.token());
    let url = format!("{}/responses", proxy.base_url());
    let body = request_body();
    let mut answer = post(&url, Some(&bearer), body.clone()).await;
    let mut got = 0;
    while got < FIRST.len() {
        got += timeout(WAIT, answer.chunk())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
            .len();
    }
    // The client hangs up; the provider goes on writing.
    drop(answer);
    go.send(()).unwrap();
    settled(|| grant.metered().estimated > 0).await;
    let m = grant.metered();
    assert_eq!((m.requests, m.unreported, m.estimated), (1, 0, 1));
    let u = m.by_model[""];
    // The body as forwarded: with `store: false`.
    let mut forwarded: serde_json::Value = serde_json::from_str(&body).unwrap();
    forwarded["store"] = false.into();
    assert_eq!(
        u.input_tokens,
        forwarded.to_string().len().div_ceil(4) as u64
    );
    // 40 bytes of text read before the cut (and perhaps the 4 after it).
    assert!((10..=11).contains(&u.output_tokens), "{u:?}");
}

#[tokio::test]
async fn the_token_is_fresh_and_no_secret_shows_in_debug() {
    let proxy = KeyProxy::start("http://127.0.0.1:9/v1", real_key())
        .await
        .unwrap();
    let (a, b) = (proxy.grant(), proxy.grant());
    assert!(a.token().len() >= 32);
    assert!(a.token().chars().all(|c| c.is_ascii_alphanumeric()));
    assert_ne!(a.token(), b.token());
    assert!(proxy.base_url().starts_with("http://127.0.0.1:"));
    assert!(proxy.base_url().ends_with("/v1"));
    let shown = format!("{proxy:?} {a:?}");
    assert!(
        !shown.contains(a.token()) && !shown.contains(KEY),
        "{shown}"
    );
}

#[tokio::test]
async fn dropping_the_proxy_stops_it() {
    let proxy = KeyProxy::start("http://127.0.0.1:9/v1", real_key())
        .await
        .unwrap();
    let addr = proxy.base_url().replace("http://", "").replace("/v1", "");
    drop(proxy);
    // The accept loop ends at its next turn; then its port refuses connections.
    timeout(WAIT, async {
        while tokio::net::TcpStream::connect(&addr).await.is_ok() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the port closes once the proxy is dropped");
}

/// A proxy started on a thread of its own (as a command sets its backend up before
/// its runtime) serves, and remembers when the upstream's quota resets: Codex
/// reports a 429 only in words, so baton learns the reset here.
#[tokio::test]
async fn a_spawned_proxy_remembers_when_a_quota_resets() {
    let server = ScriptedServer::start(
        Wire::OpenAiResponses,
        vec![Step::quota_wall(Duration::from_secs(30))],
    );
    let proxy = KeyProxy::spawn(&server.openai_base_url(), real_key()).unwrap();
    let grant = proxy.grant();
    assert_eq!(proxy.limit_reset(), None);
    let url = format!("{}/responses", proxy.base_url());
    let auth = format!("Bearer {}", grant.token());
    let answer = post(&url, Some(&auth), request_body()).await;
    assert_eq!(answer.status(), 429);
    let reset = proxy.limit_reset().expect("the reset is remembered");
    assert!(
        reset > Duration::from_secs(20) && reset <= Duration::from_secs(30),
        "{reset:?}"
    );
    drop(proxy);
}

/// Each grant counts what its own requests cost, read from the answers the
/// provider streamed; a dropped grant's token is refused and nothing is forwarded.
#[tokio::test]
async fn each_grant_meters_its_own_answers_and_a_dropped_one_is_refused() {
    let steps = vec![
        Step::Reply(Reply::text("one").with_usage(100, 20, 400, 0)),
        Step::Reply(Reply::text("two").with_usage(7, 3, 0, 0)),
        Step::Reply(Reply::text("never")),
    ];
    let (server, proxy) = proxied(steps).await;
    let (a, b) = (proxy.grant(), proxy.grant());
    let url = format!("{}/responses", proxy.base_url());
    for grant in [&a, &b] {
        let auth = format!("Bearer {}", grant.token());
        let answer = post(&url, Some(&auth), request_body()).await;
        assert_eq!(answer.status(), 200);
        answer.bytes().await.unwrap();
    }
    // The answer's end is counted as the stream is dropped, just after the client
    // has read it: wait for it, boundedly.
    let settled = |g: &super::Grant| g.metered().requests == 1 && g.metered().total().total() > 0;
    timeout(WAIT, async {
        while !(settled(&a) && settled(&b)) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("both answers metered");
    let (ma, mb) = (a.metered(), b.metered());
    let ua = ma.total();
    assert_eq!(
        (ua.input_tokens, ua.cache_read_tokens, ua.output_tokens),
        (100, 400, 20),
        "{ma:?}"
    );
    assert_eq!(mb.total().input_tokens + mb.total().output_tokens, 10);
    assert_eq!(ma.unreported, 0);
    let revoked = format!("Bearer {}", a.token());
    drop(a);
    let answer = post(&url, Some(&revoked), request_body()).await;
    assert_eq!(answer.status(), 401);
    assert_eq!(server.requests().len(), 2);
}

/// An answer without usage (an error) counts as a request that reported none.
#[tokio::test]
async fn an_answer_without_usage_is_counted_as_unreported() {
    let (_server, proxy) = proxied(vec![Step::quota_wall(Duration::from_secs(30))]).await;
    let grant = proxy.grant();
    let auth = format!("Bearer {}", grant.token());
    let url = format!("{}/responses", proxy.base_url());
    let answer = post(&url, Some(&auth), request_body()).await;
    assert_eq!(answer.status(), 429);
    answer.bytes().await.unwrap();
    settled(|| grant.metered().unreported > 0).await;
    let m = grant.metered();
    assert_eq!((m.requests, m.unreported), (1, 1));
    assert_eq!(m.total().total(), 0);
}

/// A limited grant's requests are refused once its answers reported the limit,
/// before they reach the provider; another grant goes on.
#[tokio::test]
async fn a_grant_past_its_token_limit_is_refused_before_the_provider() {
    let steps = vec![
        Step::Reply(Reply::text("one").with_usage(90, 20, 0, 0)),
        Step::Reply(Reply::text("two")),
    ];
    let (server, proxy) = proxied(steps).await;
    let (limited, other) = (proxy.grant_limited(100), proxy.grant());
    let url = format!("{}/responses", proxy.base_url());
    let auth = format!("Bearer {}", limited.token());
    let answer = post(&url, Some(&auth), request_body()).await;
    assert_eq!(answer.status(), 200);
    answer.bytes().await.unwrap();
    assert!(limited.spent(), "{:?}", limited.metered());
    let refused = post(&url, Some(&auth), request_body()).await;
    assert_eq!(refused.status(), 400);
    let body: serde_json::Value = serde_json::from_str(&refused.text().await.unwrap()).unwrap();
    assert_eq!(body["error"]["type"], "token_limit");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("110 of 100 tokens"),
        "{body}"
    );
    assert_eq!(server.requests().len(), 1);
    let auth = format!("Bearer {}", other.token());
    let answer = post(&url, Some(&auth), request_body()).await;
    assert_eq!(answer.status(), 200);
    assert!(!other.spent());
}

#[tokio::test]
async fn only_the_endpoints_a_session_uses_get_the_real_key() {
    let (server, proxy) = proxied(vec![Step::Reply(Reply::text("never"))]).await;
    let grant = proxy.grant();
    for (method, path) in [
        ("GET", "/v1/files"),
        ("POST", "/v1/files"),
        ("POST", "/v1/fine_tuning/jobs"),
        ("POST", "/v1/batches"),
        ("POST", "/v1/images/generations"),
        ("DELETE", "/v1/models/ft-mine"),
        ("GET", "/v1/organization/admin_api_keys"),
        ("GET", "/v1/responses"),
        ("GET", "/v1/a\\..\\..\\admin"),
        ("POST", "/v1/responses%2F..%2F..%2Fadmin"),
    ] {
        let answer = raw_head(&proxy, method, path, Some(0)).await;
        assert!(
            answer.starts_with("HTTP/1.1 403") || answer.starts_with("HTTP/1.1 404"),
            "{method} {path}: {answer}"
        );
    }
    drop(grant);
    assert!(
        server.requests().is_empty(),
        "forwarded: {:?}",
        server.requests().len()
    );
}

#[tokio::test]
async fn a_background_request_is_refused_and_a_chat_stream_reports_its_usage() {
    let (server, proxy) = proxied(vec![Step::Reply(Reply::text("never"))]).await;
    let grant = proxy.grant();
    let bearer = format!("Bearer {}", grant.token());
    let body =
        serde_json::json!({"model": "gpt-test", "input": "hi", "background": true}).to_string();
    let answer = post(
        &format!("{}/responses", proxy.base_url()),
        Some(&bearer),
        body,
    )
    .await;
    assert_eq!(answer.status(), 400);
    assert!(answer.text().await.unwrap().contains("background"));
    assert!(server.requests().is_empty());
    // A streamed chat completion without include_usage gets it.
    let chat = ScriptedServer::start(Wire::OpenAi, vec![Step::Reply(Reply::text("hi"))]);
    let proxy = KeyProxy::start(&chat.openai_base_url(), real_key())
        .await
        .unwrap();
    let grant = proxy.grant();
    let body = serde_json::json!({"model": "gpt-test", "stream": true,
        "messages": [{"role": "user", "content": "hi"}]})
    .to_string();
    let answer = post(
        &format!("{}/chat/completions", proxy.base_url()),
        Some(&format!("Bearer {}", grant.token())),
        body,
    )
    .await;
    assert_eq!(answer.status(), 200);
    let _ = answer.bytes().await;
    let sent = &chat.requests()[0].body;
    assert_eq!(sent["stream_options"]["include_usage"], true, "{sent}");
}

#[tokio::test]
async fn answers_come_plain_and_one_request_per_session_is_in_flight() {
    let (go, held) = oneshot::channel();
    let (upstream, received) = held_upstream("data: {}\n\n", "data: {}\n\n", held).await;
    let proxy = KeyProxy::start(&upstream, real_key()).await.unwrap();
    let grant = proxy.grant();
    let bearer = format!("Bearer {}", grant.token());
    let url = format!("{}/responses", proxy.base_url());
    let first = timeout(
        WAIT,
        reqwest::Client::new()
            .post(&url)
            .header("authorization", &bearer)
            .header("accept-encoding", "gzip, br")
            .body(request_body())
            .send(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(first.status(), 200);
    let head = timeout(WAIT, received).await.unwrap().unwrap().head;
    assert!(!head.contains("accept-encoding"), "{head}");
    // While the first answer streams, a second request of the same session waits
    // its turn: refused, never forwarded.
    let second = post(&url, Some(&bearer), request_body()).await;
    assert_eq!(second.status(), 429);
    assert!(second.text().await.unwrap().contains("one at a time"));
    go.send(()).unwrap();
    let _ = timeout(WAIT, first.bytes()).await.unwrap();
}

/// The proxy judges one parse of the body and forwards that value: what is not
/// one JSON object is refused, and a key given twice cannot say one thing to the
/// proxy and another to the provider.
#[tokio::test]
async fn a_body_is_parsed_once_and_what_was_judged_is_what_goes() {
    let (server, proxy) = proxied(vec![Step::Reply(Reply::text("never"))]).await;
    let grant = proxy.grant();
    let bearer = format!("Bearer {}", grant.token());
    let url = format!("{}/responses", proxy.base_url());
    for body in [
        "not json",
        r#"{"model": "gpt-test"} {"background": true}"#,
        r#"[{"model": "gpt-test"}]"#,
        r#"{"model": "gpt-test", "input": "hi", "background": false, "background": true}"#,
        r#"{"model": "gpt-test", "input": "hi", "max_output_tokens": "lots"}"#,
    ] {
        let answer = post(&url, Some(&bearer), body.to_string()).await;
        assert_eq!(answer.status(), 400, "{body}");
        let text = answer.text().await.unwrap();
        assert!(text.contains("key proxy"), "{body}: {text}");
    }
    assert!(server.requests().is_empty());

    // The other order is forwarded, as the one value the proxy read.
    let (go, held) = oneshot::channel();
    let (upstream, received) = held_upstream("data: {}\n\n", "data: {}\n\n", held).await;
    let proxy = KeyProxy::start(&upstream, real_key()).await.unwrap();
    let grant = proxy.grant();
    let body = r#"{"model": "gpt-test", "input": "hi", "background": true, "background": false}"#;
    let answer = post(
        &format!("{}/responses", proxy.base_url()),
        Some(&format!("Bearer {}", grant.token())),
        body.to_string(),
    )
    .await;
    assert_eq!(answer.status(), 200);
    let got = timeout(WAIT, received).await.unwrap().unwrap();
    let raw = String::from_utf8(got.body).unwrap();
    assert_eq!(raw.matches("background").count(), 1, "{raw}");
    let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(v["background"], false, "{raw}");
    assert!(
        got.head.contains("content-type: application/json"),
        "{}",
        got.head
    );
    go.send(()).unwrap();
    let _ = timeout(WAIT, answer.bytes()).await.unwrap();
}

/// Nothing of a session is kept at the provider, and no request reaches context
/// kept there: its input would be out of the proxy's sight.
#[tokio::test]
async fn stored_context_is_refused_and_nothing_is_stored() {
    let (server, proxy) = proxied(vec![Step::Reply(Reply::text("ok"))]).await;
    let grant = proxy.grant();
    let bearer = format!("Bearer {}", grant.token());
    let url = format!("{}/responses", proxy.base_url());
    for (key, value) in [
        ("previous_response_id", serde_json::json!("resp_123")),
        ("conversation", serde_json::json!({"id": "conv_1"})),
    ] {
        let mut body = serde_json::json!({"model": "gpt-test", "input": "hi"});
        body[key] = value;
        let answer = post(&url, Some(&bearer), body.to_string()).await;
        assert_eq!(answer.status(), 400, "{key}");
        assert!(answer.text().await.unwrap().contains(key));
    }
    assert!(server.requests().is_empty());
    let body = serde_json::json!({"model": "gpt-test", "input": "hi", "store": true});
    let answer = post(&url, Some(&bearer), body.to_string()).await;
    assert_eq!(answer.status(), 200);
    let _ = answer.bytes().await;
    assert_eq!(server.requests()[0].body["store"], false);
}

/// A limited session's request goes with an output cap no larger than what is
/// left of its limit, and an answer it cuts is charged that cap in full: hanging
/// up early spends nothing the limit does not see.
#[tokio::test]
async fn a_limited_request_is_capped_and_a_cut_one_is_charged_in_full() {
    let (go, held) = oneshot::channel();
    let (upstream, received) = held_upstream(
        "event: response.output_text.delta\ndata: {\"delta\":\"abcd\"}\n\n",
        "data: {}\n\n",
        held,
    )
    .await;
    let proxy = KeyProxy::start(&upstream, real_key()).await.unwrap();
    let grant = proxy.grant_limited(5000);
    let body = serde_json::json!({"model": "gpt-test", "input": "hi", "stream": true,
        "max_output_tokens": 100_000})
    .to_string();
    let mut answer = post(
        &format!("{}/responses", proxy.base_url()),
        Some(&format!("Bearer {}", grant.token())),
        body,
    )
    .await;
    assert_eq!(answer.status(), 200);
    let got = timeout(WAIT, received).await.unwrap().unwrap();
    let sent: serde_json::Value = serde_json::from_slice(&got.body).unwrap();
    assert_eq!(sent["max_output_tokens"], 5000, "{sent}");
    let _ = timeout(WAIT, answer.chunk()).await.unwrap();
    drop(answer);
    go.send(()).unwrap();
    settled(|| grant.metered().estimated > 0).await;
    let u = grant.metered().by_model[""];
    assert_eq!(u.output_tokens, 5000, "{u:?}");
    assert_eq!(u.input_tokens, got.body.len().div_ceil(4) as u64);
    assert!(grant.spent());
}
