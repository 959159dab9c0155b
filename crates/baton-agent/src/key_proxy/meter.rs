//! What each answer relayed through the key proxy cost, as the provider said in it.
//!
//! A session's CLI reports its own tokens, but anything that holds the session's
//! token can send requests of its own; the proxy reads the usage every answer
//! carries (a Responses stream's `response.completed`, a chat completion's `usage`,
//! a JSON body's `usage`) while relaying it unchanged, so what the key paid for is
//! counted whoever asked.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures_util::Stream;
use hyper::body::Bytes;
use serde_json::Value;

use crate::model::Usage;

/// The longest SSE line, or JSON body, read for its usage (16 MiB); past it the
/// answer is still relayed whole, but what it said it cost is not read.
const MAX_READ: usize = 16 << 20;

/// What the requests sent with one grant's token cost, as the provider reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metered {
    /// Requests forwarded upstream.
    pub requests: u64,
    /// Answers that reported no usage (an error, a listing).
    pub unreported: u64,
    /// Answers the client cut before they reported their usage, charged in
    /// full: the request's bytes at four bytes a token, and the output cap the
    /// request went with (the text relayed so far, at four bytes a token, when it
    /// went with none), under the model `""`.
    pub estimated: u64,
    /// The usage reported, by the model named in the answer (`""` when none was).
    pub by_model: BTreeMap<String, Usage>,
}

impl Metered {
    /// The usage of every model together.
    pub fn total(&self) -> Usage {
        let mut all = Usage::default();
        for u in self.by_model.values() {
            all.add(u);
        }
        all
    }

    /// Whether tokens of every kind in all reached `limit` (0: no limit).
    pub fn reached(&self, limit: u64) -> bool {
        limit > 0 && self.total().total() >= limit
    }
}

/// One grant's running count, shared by its requests in flight.
pub(super) type Tally = Arc<Mutex<Metered>>;

/// The usage `v` (one SSE event's data, or a JSON body) reports, with its model.
fn usage_in(v: &Value) -> Option<(String, Usage)> {
    let (u, model) = if v["response"]["usage"].is_object() {
        (&v["response"]["usage"], &v["response"]["model"])
    } else if v["usage"].is_object() {
        (&v["usage"], &v["model"])
    } else {
        return None;
    };
    let usage = if u.get("prompt_tokens").is_some() {
        crate::openai::usage_of(u)
    } else {
        crate::responses::usage_of(u)
    };
    Some((model.as_str().unwrap_or_default().to_string(), usage))
}

/// The bytes of generated text one event carries: a Responses delta
/// (`response.output_text.delta`, reasoning and function-call argument deltas:
/// `delta` is a string) or a chat chunk's `choices[].delta` content and
/// tool-call arguments.
fn delta_text(v: &Value) -> usize {
    if let Some(d) = v["delta"].as_str() {
        return d.len();
    }
    let Some(choices) = v["choices"].as_array() else {
        return 0;
    };
    choices
        .iter()
        .map(|c| {
            let d = &c["delta"];
            let calls: usize = d["tool_calls"].as_array().map_or(0, |calls| {
                calls
                    .iter()
                    .map(|t| t["function"]["arguments"].as_str().map_or(0, str::len))
                    .sum()
            });
            d["content"].as_str().map_or(0, str::len) + calls
        })
        .sum()
}

/// Reads an answer's bytes as they pass for the usage in them.
struct Reader {
    /// An event stream, read line by line; else one JSON body.
    sse: bool,
    /// A JSON body's length, when the answer gave it: read once it is all there.
    length: Option<usize>,
    buf: Vec<u8>,
    /// The current line (or the body) grew past [`MAX_READ`]: skip it.
    skipping: bool,
    found: Vec<(String, Usage)>,
    /// Bytes of generated text seen in the stream's deltas.
    text: usize,
}

impl Reader {
    fn new(sse: bool, length: Option<usize>) -> Self {
        Reader {
            sse,
            length,
            buf: Vec::new(),
            skipping: false,
            found: Vec::new(),
            text: 0,
        }
    }

    fn feed(&mut self, mut chunk: &[u8]) {
        if !self.sse {
            if !self.skipping {
                self.buf.extend_from_slice(chunk);
                if self.buf.len() > MAX_READ {
                    self.skipping = true;
                    self.buf = Vec::new();
                } else if self.length.is_some_and(|n| self.buf.len() >= n) {
                    self.body();
                }
            }
            return;
        }
        while let Some(at) = chunk.iter().position(|&b| b == b'\n') {
            if !self.skipping {
                self.buf.extend_from_slice(&chunk[..at]);
                self.line();
            }
            self.buf.clear();
            self.skipping = false;
            chunk = &chunk[at + 1..];
        }
        if !self.skipping {
            self.buf.extend_from_slice(chunk);
            if self.buf.len() > MAX_READ {
                self.skipping = true;
                self.buf = Vec::new();
            }
        }
    }

    /// One whole SSE line in `buf`.
    fn line(&mut self) {
        let line = self.buf.strip_suffix(b"\r").unwrap_or(&self.buf);
        let Some(data) = line.strip_prefix(b"data:") else {
            return;
        };
        let Ok(v) = serde_json::from_slice::<Value>(data.trim_ascii_start()) else {
            return;
        };
        self.text += delta_text(&v);
        if let Some(found) = usage_in(&v) {
            self.found.push(found);
        }
    }

    /// The whole JSON body is in `buf`: read it, once.
    fn body(&mut self) {
        if let Ok(v) = serde_json::from_slice::<Value>(&self.buf)
            && let Some(found) = usage_in(&v)
        {
            self.found.push(found);
        }
        self.skipping = true;
        self.buf = Vec::new();
    }

    /// The answer ended (or was dropped): read what is left.
    fn finish(&mut self) {
        if !self.skipping {
            if self.sse {
                if !self.buf.is_empty() {
                    self.line();
                }
            } else {
                self.body();
            }
        }
        self.buf = Vec::new();
    }
}

/// What a request was sent with, for the charge of an answer the client cuts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asked {
    /// The forwarded body's length in bytes.
    pub bytes: usize,
    /// The output cap it carried (`max_output_tokens` and the like), if any.
    pub cap: Option<u64>,
}

/// An answer's body stream that adds what the answer reports to a tally as it
/// passes (before the client has the bytes that report it), and, when it ends or
/// is dropped (the client went away mid-stream), counts it unreported if it
/// reported nothing.
pub(super) struct Metering<S> {
    inner: S,
    reader: Reader,
    tally: Tally,
    reported: bool,
    done: bool,
    /// What the request was sent with, for the charge should the client cut.
    asked: Asked,
    /// The upstream's answer ended (not cut by the client).
    ended: bool,
}

impl<S> Metering<S> {
    /// Meter `inner`, an answer whose `content-type` was `content_type`, into
    /// `tally`, which has counted the request already.
    /// `length` is its `content-length`, when it had one.
    /// `asked` is what the request was sent with (for the charge of a cut answer).
    pub(super) fn new(
        inner: S,
        content_type: &str,
        length: Option<usize>,
        tally: Tally,
        asked: Asked,
    ) -> Self {
        Metering {
            inner,
            reader: Reader::new(content_type.starts_with("text/event-stream"), length),
            tally,
            reported: false,
            done: false,
            asked,
            ended: false,
        }
    }

    /// Add what the reader found since last time to the tally.
    fn count(&mut self) {
        if self.reader.found.is_empty() {
            return;
        }
        self.reported = true;
        if let Ok(mut m) = self.tally.lock() {
            for (model, usage) in self.reader.found.drain(..) {
                m.by_model.entry(model).or_default().add(&usage);
            }
        }
    }

    fn settle(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        self.reader.finish();
        self.count();
        if self.reported {
            return;
        }
        let Ok(mut m) = self.tally.lock() else {
            return;
        };
        if self.ended {
            m.unreported += 1;
        } else {
            // Cut by the client before the usage came: the provider bills what it
            // read and writes all the same, up to the cap the request went with.
            m.estimated += 1;
            let seen = self.reader.text.div_ceil(4) as u64;
            let estimate = Usage {
                input_tokens: self.asked.bytes.div_ceil(4) as u64,
                output_tokens: self.asked.cap.map_or(seen, |cap| cap.max(seen)),
                ..Usage::default()
            };
            m.by_model.entry(String::new()).or_default().add(&estimate);
        }
    }
}

impl<S, E> Stream for Metering<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = Pin::new(&mut self.inner).poll_next(cx);
        match &next {
            Poll::Ready(Some(Ok(chunk))) => {
                let chunk = chunk.clone();
                self.reader.feed(&chunk);
                self.count();
            }
            Poll::Ready(None) => {
                self.ended = true;
                self.settle();
            }
            // The upstream failed mid-answer: not the client's cut.
            Poll::Ready(Some(Err(_))) => self.ended = true,
            Poll::Pending => {}
        }
        next
    }
}

impl<S> Drop for Metering<S> {
    fn drop(&mut self) {
        self.settle();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sse: bool, chunks: &[&[u8]]) -> Vec<(String, Usage)> {
        let mut r = Reader::new(sse, None);
        for c in chunks {
            r.feed(c);
        }
        r.finish();
        r.found
    }

    #[test]
    fn a_responses_stream_split_anywhere_reports_its_completed_usage() {
        let stream = b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\nevent: response.completed\r\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-5\",\"usage\":{\"input_tokens\":1000,\"input_tokens_details\":{\"cached_tokens\":800},\"output_tokens\":50}}}\r\n\r\n";
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            let found = read(true, &[a, b]);
            assert_eq!(found.len(), 1, "cut at {cut}");
            let (model, u) = &found[0];
            assert_eq!(model, "gpt-5");
            assert_eq!(
                (u.input_tokens, u.cache_read_tokens, u.output_tokens),
                (200, 800, 50)
            );
        }
    }

    #[test]
    fn chat_completions_and_json_bodies_are_read_too() {
        let chunk = b"data: {\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n";
        let found = read(true, &[chunk]);
        assert_eq!(found[0].1.output_tokens, 3);
        let body = b"{\"model\": \"m2\",\n \"usage\": {\"input_tokens\": 7, \"output_tokens\": 2}}";
        let found = read(false, &[&body[..5], &body[5..]]);
        assert_eq!(found, vec![("m2".to_string(), found[0].1)]);
        assert_eq!(found[0].1.input_tokens, 7);
        assert!(read(false, &[b"{\"error\": {}}"]).is_empty());
    }

    #[test]
    fn a_json_body_of_known_length_is_read_as_its_last_byte_passes() {
        let body = b"{\"usage\": {\"input_tokens\": 7, \"output_tokens\": 2}}";
        let mut r = Reader::new(false, Some(body.len()));
        r.feed(&body[..10]);
        assert!(r.found.is_empty());
        r.feed(&body[10..]);
        assert_eq!(r.found.len(), 1, "read before the stream's end");
        r.finish();
        assert_eq!(r.found.len(), 1, "and only once");
    }

    #[test]
    fn a_line_past_the_limit_is_skipped_and_the_next_is_read() {
        let long = vec![b'x'; MAX_READ + 10];
        let next = b"\ndata: {\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}\n";
        let found = read(true, &[b"data: ", &long, next]);
        assert_eq!(found.len(), 1);
    }
}
