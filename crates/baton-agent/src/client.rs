//! The model client: one HTTP request per attempt, a streamed response assembled
//! into a [`ModelResponse`], and retries of transient failures.
//!
//! A response is only returned once its stream has ended properly; a stream cut
//! mid-way is discarded whole and the request is sent again, so a partial answer
//! never reaches the conversation.

use std::time::Duration;

use eventsource_stream::Eventsource as _;
use tokio_util::sync::CancellationToken;

use crate::model::{ModelResponse, Request};
use crate::wire::SseReader;
pub use crate::wire::{ClientConfig, ContextOverflow, ModelError, Provider};
use crate::{anthropic, openai, responses, retry};

/// A retry about to happen, for the live view and the transcript.
#[derive(Debug, Clone)]
pub struct RetryNotice {
    /// The attempt that failed (1-based).
    pub attempt: u32,
    /// Attempts allowed in all.
    pub max_attempts: u32,
    /// Why it failed.
    pub error: String,
    /// How long until the next attempt.
    pub delay: Duration,
    /// A long wait for a quota to reset, not an ordinary backoff.
    pub long_wait: bool,
}

/// A client for one provider and model.
#[derive(Debug, Clone)]
pub struct ModelClient {
    http: reqwest::Client,
    cfg: ClientConfig,
    url: String,
}

/// Attempts at an address that refuses the connection (nothing listens there:
/// a wrong base URL, a local server that is not up).
const REFUSED_ATTEMPTS: u32 = 2;

impl ModelClient {
    /// Build a client; fails on settings that cannot work.
    pub fn new(cfg: ClientConfig) -> Result<Self, ModelError> {
        if cfg.thinking_budget > 0 && cfg.thinking_budget >= cfg.max_output_tokens {
            return Err(ModelError::Config(format!(
                "agent.thinking_budget ({}) must be less than agent.max_output_tokens ({})",
                cfg.thinking_budget, cfg.max_output_tokens
            )));
        }
        if cfg.provider == Provider::Anthropic && cfg.api_key.is_none() {
            return Err(ModelError::Config(
                "ANTHROPIC_API_KEY is not set; export it (or choose another provider with --provider)".into(),
            ));
        }
        let base = cfg.base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ModelError::Config(format!(
                "{}: base URL {base:?} must start with http:// or https://",
                cfg.provider.base_url_var()
            )));
        }
        let url = match cfg.provider {
            Provider::Anthropic => format!("{base}/v1/messages"),
            Provider::OpenAi => format!("{base}/chat/completions"),
            Provider::OpenAiResponses => format!("{base}/responses"),
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .user_agent(concat!("baton/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ModelError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { http, cfg, url })
    }

    /// The client's settings.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// Send `req`, retrying transient failures per the retry policy. `on_retry` is
    /// told before each wait. Cancelling `cancel` abandons the request at once.
    pub async fn send(
        &self,
        req: &Request<'_>,
        cancel: &CancellationToken,
        on_retry: &mut (dyn FnMut(&RetryNotice) + Send),
    ) -> Result<ModelResponse, ModelError> {
        let body = match self.cfg.provider {
            Provider::Anthropic => anthropic::request_body(&self.cfg, req),
            Provider::OpenAi => openai::request_body(&self.cfg, req),
            Provider::OpenAiResponses => responses::request_body(&self.cfg, req),
        };
        let body = serde_json::to_vec(&body)
            .map_err(|e| ModelError::Config(format!("cannot encode the request: {e}")))?;
        let max = self.cfg.retry.max_attempts.max(1);
        let cap = Duration::from_millis(self.cfg.retry.max_delay_ms);
        let mut attempt = 1;
        let mut waited = Duration::ZERO;
        let mut probes = 0u32;
        loop {
            let result = tokio::select! {
                r = self.attempt(&body) => r,
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
            };
            let e = match result {
                Ok(r) => return Ok(r),
                Err(e) if e.is_transient() => e,
                Err(e) => return Err(e),
            };
            let hint = e.reset_hint();
            let beyond_cap = hint.is_some_and(|h| h > cap);
            // Nothing listens at the address: tried once more, then said, not
            // retried for a minute and a half.
            if e.is_refused() && attempt >= REFUSED_ATTEMPTS {
                return Err(e);
            }
            if !beyond_cap && attempt < max {
                let delay = retry::delay(&self.cfg.retry, attempt, hint);
                on_retry(&RetryNotice {
                    attempt,
                    max_attempts: max,
                    error: e.to_string(),
                    delay,
                    long_wait: false,
                });
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = cancel.cancelled() => return Err(ModelError::Cancelled),
                }
                attempt += 1;
                continue;
            }
            if !(beyond_cap || e.is_quota()) {
                return Err(e);
            }
            // A quota wall: wait until the reset the server named, or probe slowly
            // (`quota_probe_secs`, doubling) when it named none.
            let wait = match hint.filter(|_| beyond_cap) {
                Some(h) => h + Duration::from_millis(250),
                None => retry::probe_delay(&self.cfg.retry, probes).max(cap),
            };
            if waited + wait > self.cfg.max_wait {
                return Err(ModelError::QuotaExhausted {
                    message: e.to_string(),
                    reset_in: wait,
                    max_wait: self.cfg.max_wait,
                });
            }
            on_retry(&RetryNotice {
                attempt,
                max_attempts: max,
                error: e.to_string(),
                delay: wait,
                long_wait: true,
            });
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = cancel.cancelled() => return Err(ModelError::Cancelled),
            }
            waited += wait;
            probes += u32::from(!beyond_cap);
            attempt = 1;
        }
    }

    async fn attempt(&self, body: &[u8]) -> Result<ModelResponse, ModelError> {
        let provider = self.cfg.provider.name();
        let mut rb = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_vec());
        rb = match self.cfg.provider {
            Provider::Anthropic => rb
                .header("x-api-key", self.cfg.api_key.as_deref().unwrap_or_default())
                .header("anthropic-version", anthropic::API_VERSION),
            Provider::OpenAi | Provider::OpenAiResponses => match &self.cfg.api_key {
                Some(k) => rb.bearer_auth(k),
                None => rb,
            },
        };
        let resp = rb.send().await.map_err(|e| ModelError::Connect {
            provider,
            url: self.url.clone(),
            message: crate::wire::connect_cause(&e, &self.url),
        })?;
        let status = resp.status();
        if !status.is_success() {
            let retry_after = retry_after(resp.headers()).or_else(|| reset_after(resp.headers()));
            let text = resp.text().await.unwrap_or_default();
            let mut message = error_message(&text);
            if matches!(status.as_u16(), 401 | 403) {
                message.push_str(&format!(" (check {})", self.cfg.provider.key_var()));
            }
            return Err(ModelError::Http {
                provider,
                status: status.as_u16(),
                url: self.url.clone(),
                message,
                retry_after,
            });
        }
        let mut reader = SseReader {
            inner: Box::pin(resp.bytes_stream().eventsource()),
            idle: Duration::from_secs(self.cfg.retry.stream_idle_timeout_secs.max(1)),
            provider,
        };
        match self.cfg.provider {
            Provider::Anthropic => anthropic::read_stream(&mut reader).await,
            Provider::OpenAi => openai::read_stream(&mut reader).await,
            Provider::OpenAiResponses => responses::read_stream(&mut reader).await,
        }
    }
}

/// `retry-after-ms` or `retry-after` (seconds, possibly fractional).
pub(crate) fn retry_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |k: &str| {
        h.get(k)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    if let Some(ms) = get("retry-after-ms").filter(|v| v.is_finite() && *v >= 0.0) {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    get("retry-after")
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(Duration::from_secs_f64)
}

/// The latest of the rate-limit reset headers, from now: Anthropic's
/// `anthropic-ratelimit-*-reset` (RFC 3339 times; `-unified-reset` in Unix seconds)
/// and OpenAI's `x-ratelimit-reset-*` (durations such as `6m0s`, `1.5s`, `20ms`).
pub(crate) fn reset_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    let now = std::time::SystemTime::now();
    let mut latest: Option<Duration> = None;
    for (name, value) in h {
        let (name, Ok(v)) = (name.as_str(), value.to_str()) else {
            continue;
        };
        let v = v.trim();
        let d = if name.starts_with("anthropic-ratelimit-") && name.ends_with("-reset") {
            match v.parse::<u64>() {
                Ok(unix) => std::time::UNIX_EPOCH
                    .checked_add(Duration::from_secs(unix))
                    .and_then(|t| t.duration_since(now).ok()),
                Err(_) => chrono::DateTime::parse_from_rfc3339(v)
                    .ok()
                    .and_then(|t| u64::try_from(t.timestamp_millis()).ok())
                    .and_then(|ms| {
                        std::time::UNIX_EPOCH
                            .checked_add(Duration::from_millis(ms))
                            .and_then(|t| t.duration_since(now).ok())
                    }),
            }
        } else if name.starts_with("x-ratelimit-reset") {
            go_duration(v)
        } else {
            None
        };
        if let Some(d) = d {
            latest = Some(latest.map_or(d, |l| l.max(d)));
        }
    }
    latest
}

/// A Go-style duration: `1h2m3.5s`, `6m0s`, `20ms`, `1.5s`, or plain seconds.
fn go_duration(s: &str) -> Option<Duration> {
    if let Ok(secs) = s.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let mut total = 0.0f64;
    let mut num = String::new();
    let mut chars = s.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let value: f64 = num.parse().ok()?;
        num.clear();
        let unit = match c {
            'h' => 3600.0,
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                0.001
            }
            'm' => 60.0,
            's' => 1.0,
            _ => return None,
        };
        total += value * unit;
        any = true;
    }
    (any && num.is_empty() && total.is_finite()).then(|| Duration::from_secs_f64(total))
}

/// The message of a JSON error body (`{"error": {"type", "message"}}` or
/// `{"error": "..."}`), or the start of a body that is not JSON.
pub(crate) fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        let err = &v["error"];
        let msg = err["message"]
            .as_str()
            .or_else(|| err.as_str())
            .or_else(|| v["message"].as_str());
        if let Some(msg) = msg {
            return match err["type"].as_str() {
                Some(t) => format!("{t}: {msg}"),
                None => msg.to_string(),
            };
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "(empty body)".to_string();
    }
    let snippet: String = trimmed.chars().take(300).collect();
    let more = if trimmed.chars().count() > 300 {
        "…"
    } else {
        ""
    };
    format!("(body is not JSON) {snippet}{more}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_are_summarised() {
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "overloaded_error: Overloaded"
        );
        assert_eq!(error_message(r#"{"error":"bad key"}"#), "bad key");
        assert_eq!(
            error_message("<html>502 Bad Gateway</html>"),
            "(body is not JSON) <html>502 Bad Gateway</html>"
        );
        assert_eq!(error_message(""), "(empty body)");
    }

    #[test]
    fn context_errors_are_recognised_with_their_numbers() {
        let p = ContextOverflow::parse;
        assert_eq!(
            p("invalid_request_error: prompt is too long: 46112 tokens > 40000 maximum"),
            Some(ContextOverflow {
                tokens: Some(46_112),
                window: Some(40_000)
            })
        );
        assert_eq!(
            p(
                "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again"
            ),
            Some(ContextOverflow {
                tokens: Some(188_240),
                window: Some(200_000)
            })
        );
        assert_eq!(
            p(
                "invalid_request_error: This model's maximum context length is 40000 tokens. However, you requested 70000 tokens (6000 in the messages, 64000 in the completion). Please reduce the length of the messages or completion."
            ),
            Some(ContextOverflow {
                tokens: Some(6_000),
                window: Some(40_000)
            })
        );
        assert_eq!(
            p(
                "invalid_request_error: This model's maximum context length is 8,192 tokens. However, your messages resulted in 9,000 tokens. Please reduce the length of the messages."
            ),
            Some(ContextOverflow {
                tokens: Some(9_000),
                window: Some(8_192)
            })
        );
        assert!(p("context_length_exceeded").is_some());
        assert_eq!(
            p("invalid_request_error: max_tokens: must be positive"),
            None
        );
        assert_eq!(p("rate_limit_error: slow down"), None);
    }

    #[test]
    fn reset_headers_and_durations() {
        assert_eq!(go_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(go_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(go_duration("1h2m3s"), Some(Duration::from_secs(3723)));
        assert_eq!(go_duration("17"), Some(Duration::from_secs(17)));
        assert_eq!(go_duration("soon"), None);
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("x-ratelimit-reset-requests", "2s".parse().unwrap());
        h.insert("x-ratelimit-reset-tokens", "1m30s".parse().unwrap());
        assert_eq!(reset_after(&h), Some(Duration::from_secs(90)));
        let mut h = reqwest::header::HeaderMap::new();
        let at = chrono::Utc::now() + chrono::Duration::seconds(600);
        h.insert(
            "anthropic-ratelimit-tokens-reset",
            at.to_rfc3339().parse().unwrap(),
        );
        let d = reset_after(&h).unwrap();
        assert!(
            d > Duration::from_secs(590) && d <= Duration::from_secs(600),
            "{d:?}"
        );
    }

    #[test]
    fn transient_classification() {
        let http = |status| ModelError::Http {
            provider: "x",
            status,
            url: String::new(),
            message: String::new(),
            retry_after: None,
        };
        for s in [429, 500, 502, 503, 504, 529] {
            assert!(http(s).is_transient(), "{s}");
        }
        for s in [400, 401, 403, 404, 413] {
            assert!(!http(s).is_transient(), "{s}");
        }
        let se = |kind: &str| ModelError::StreamError {
            provider: "x",
            kind: kind.into(),
            message: String::new(),
        };
        assert!(se("overloaded_error").is_transient());
        assert!(!se("invalid_request_error").is_transient());
    }
}
