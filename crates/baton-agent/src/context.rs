//! Keeping a session within its model's context window: the conversation's size in
//! tokens (measured by the usage each response reports, estimated for what was added
//! since), results too large for one turn saved whole under `.baton/outputs/`, and
//! old results taken out when even a wrap-up would not fit.

use std::path::{Path, PathBuf};

use crate::client::ContextOverflow;
use crate::model::{Block, Message};

/// Where oversized outputs are kept, relative to the project.
pub const OUTPUTS_DIR: &str = baton_records::layout::OUTPUTS;

/// Characters an image counts for (a screenshot is about 1,500 tokens).
const IMAGE_CHARS: usize = 6_000;
/// Characters per token assumed before the first response says better; low, so the
/// first estimates err on the large side.
const DEFAULT_CPT: f64 = 3.0;
/// Prefix of a result taken out of the conversation.
const REMOVED: &str = "[baton: this output was taken out";

/// The characters a message contributes to a request.
pub(crate) fn message_chars(m: &Message) -> usize {
    m.content.iter().map(block_chars).sum::<usize>() + 20
}

fn block_chars(b: &Block) -> usize {
    match b {
        Block::Text { text } => text.len(),
        Block::Thinking {
            thinking,
            signature,
        } => thinking.len() + signature.len() / 4,
        Block::RedactedThinking { data } => data.len() / 4,
        Block::Reasoning {
            summary,
            encrypted_content,
        } => summary.iter().map(String::len).sum::<usize>() + encrypted_content.len() / 4,
        Block::ToolUse { id, name, input } => id.len() + name.len() + input.to_string().len() + 30,
        Block::ToolResult {
            tool_use_id,
            content,
            images,
            ..
        } => tool_use_id.len() + content.len() + images.len() * IMAGE_CHARS + 30,
    }
}

/// The conversation's size, and what the session did about it.
#[derive(Debug)]
pub(crate) struct Ctx {
    /// The window in tokens (lowered when a server names a smaller one).
    pub window: u64,
    /// Share of the window at which to act.
    pub threshold: f64,
    /// Characters per token, calibrated from the usage responses report.
    cpt: f64,
    /// Characters of the system prompt and tool definitions.
    base_chars: usize,
    /// Characters of each message.
    chars: Vec<usize>,
    /// (characters, tokens) of the last request whose size the server reported.
    anchor: Option<(usize, u64)>,
    /// Turns left to wrap up, once the agent was told its context is nearly full.
    pub handoff_left: Option<u32>,
    /// Requests the server refused as too long.
    pub overflows: u32,
}

impl Ctx {
    pub(crate) fn new(window: u64, threshold: f64, base_chars: usize) -> Self {
        Self {
            window,
            threshold,
            cpt: DEFAULT_CPT,
            base_chars,
            chars: Vec::new(),
            anchor: None,
            handoff_left: None,
            overflows: 0,
        }
    }

    /// Recount the messages from index `from` on (after a push, an amended last
    /// message, or results taken out).
    pub(crate) fn recount_from(&mut self, messages: &[Message], from: usize) {
        self.chars.truncate(from.min(self.chars.len()));
        for m in &messages[self.chars.len()..] {
            self.chars.push(message_chars(m));
        }
    }

    /// Forget what was measured (the conversation was replaced).
    pub(crate) fn reset(&mut self, messages: &[Message]) {
        self.anchor = None;
        self.recount_from(messages, 0);
    }

    /// Characters of the whole request.
    pub(crate) fn total_chars(&self) -> usize {
        self.base_chars + self.chars.iter().sum::<usize>()
    }

    /// Estimated tokens of the next request's prompt: the last reported size plus
    /// what was added since, counted a quarter denser than the calibrated ratio (new
    /// content is mostly tool output, which tokenizes denser than prose).
    pub(crate) fn estimate(&self) -> u64 {
        let total = self.total_chars() as f64;
        let t = match self.anchor {
            Some((chars, tokens)) => {
                let added = total - chars as f64;
                let ratio = if added > 0.0 {
                    self.cpt * 0.75
                } else {
                    self.cpt
                };
                tokens as f64 + added / ratio
            }
            None => total / self.cpt,
        };
        t.max(0.0).ceil() as u64
    }

    /// The server reported `tokens` for a request of `chars` characters.
    pub(crate) fn observe(&mut self, chars: usize, tokens: u64) {
        if tokens == 0 {
            return;
        }
        self.cpt = (chars as f64 / tokens as f64).clamp(1.0, 8.0);
        self.anchor = Some((chars, tokens));
    }

    /// The server refused a request of `chars` characters as too long; learn what it said.
    /// Returns a description of what was learnt.
    pub(crate) fn learn(&mut self, o: &ContextOverflow, chars: usize) -> String {
        self.overflows += 1;
        let mut said = Vec::new();
        if let Some(w) = o.window.filter(|&w| w >= 1_000 && w < self.window) {
            said.push(format!("the window is {w} tokens, not {}", self.window));
            self.window = w;
        } else if o.window.is_none() && o.tokens.is_none() {
            // A server that names no numbers (the Responses API): the request it
            // refused did not fit, so the window is at most about its size.
            let size = self.estimate();
            if size >= 1_000 && size < self.window {
                said.push(format!(
                    "the window is at most about {size} tokens, not {}",
                    self.window
                ));
                self.window = size;
            }
        }
        match o.tokens.filter(|&t| t > 0) {
            Some(t) => self.observe(chars, t),
            // No size given: estimate more cautiously from now on.
            None => self.cpt = (self.cpt * 0.75).max(1.0),
        }
        said.join("; ")
    }

    /// Whether the next request crosses the threshold.
    pub(crate) fn over_threshold(&self) -> bool {
        self.estimate() as f64 >= self.threshold * self.window as f64
    }

    /// Tokens kept free for the response when deciding whether a request fits.
    pub(crate) fn reserve(&self) -> u64 {
        (self.window / 16).clamp(256, 4_096)
    }

    /// Whether the next request fits, leaving `reserve()` for the answer.
    pub(crate) fn fits(&self) -> bool {
        self.estimate() + self.reserve() <= self.window
    }

    /// `max_tokens` for the next request where the client's would not fit beside the
    /// prompt (providers refuse prompt + max_tokens above the window).
    pub(crate) fn max_tokens(&self, client_max: u32) -> Option<u32> {
        let room = self
            .window
            .saturating_sub(self.estimate())
            .saturating_sub(self.window / 20);
        (room < u64::from(client_max)).then(|| room.max(self.reserve()) as u32)
    }

    /// Characters to take out so the estimate falls to `target` tokens.
    pub(crate) fn chars_over(&self, target: u64) -> usize {
        let over = self.estimate().saturating_sub(target);
        (over as f64 * self.cpt).ceil() as usize
    }
}

/// Saves outputs too large for the conversation, whole, under `.baton/outputs/`.
#[derive(Debug, Clone)]
pub(crate) struct Outputs {
    project: PathBuf,
    session: u32,
}

impl Outputs {
    pub(crate) fn new(project: &Path, session: u32) -> Self {
        Self {
            project: project.to_path_buf(),
            session,
        }
    }

    /// Save `text`; the path relative to the project, or `None` when it cannot be written.
    pub(crate) fn save(&self, turn: u32, index: usize, name: &str, text: &str) -> Option<String> {
        let dir = self.project.join(OUTPUTS_DIR);
        std::fs::create_dir_all(&dir).ok()?;
        let tool: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let file = format!("{:04}-t{turn:03}-{index}-{tool}.txt", self.session);
        std::fs::write(dir.join(&file), text).ok()?;
        Some(format!("{OUTPUTS_DIR}/{file}"))
    }
}

/// Characters a result of `max_tokens` may have (counted at the cautious ratio).
fn budget_chars(max_tokens: u64) -> usize {
    (max_tokens as f64 * DEFAULT_CPT) as usize
}

/// Whether `text` is over a result budget of `max_tokens`.
pub(crate) fn over_budget(text: &str, max_tokens: u64) -> bool {
    text.len() > budget_chars(max_tokens)
}

/// Cut `text` to about `max_tokens`, keeping its head and tail, when it is larger;
/// `saved` is where the whole text is (or `None`).
pub(crate) fn cap(text: &str, max_tokens: u64, saved: Option<&str>) -> Option<String> {
    if !over_budget(text, max_tokens) {
        return None;
    }
    let budget = budget_chars(max_tokens);
    let half = budget / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let omitted = tail_start - head_end;
    let where_ = match saved {
        Some(p) => format!(
            "The whole output ({} characters) is in {p}: search it with Grep or read parts with Read (offset, limit) instead of printing it again.",
            text.len()
        ),
        None => "The whole output could not be saved; narrow the command (grep, head, tail) to see the rest.".to_string(),
    };
    Some(format!(
        "{}\n\n[baton: {omitted} characters left out here: this result was over the {max_tokens}-token budget of one tool result. {where_}]\n\n{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

/// Take the largest tool results out of the conversation (newest last, so the
/// latest survive longest) until about `chars` characters are gone; each is saved
/// whole first. Returns (results taken out, index of the first message changed).
pub(crate) fn take_out_results(
    messages: &mut [Message],
    chars: usize,
    outputs: &Outputs,
    turn: u32,
) -> (usize, Option<usize>) {
    let mut candidates: Vec<(usize, usize, usize)> = Vec::new();
    for (mi, m) in messages.iter().enumerate().skip(1) {
        for (bi, b) in m.content.iter().enumerate() {
            if let Block::ToolResult {
                content, images, ..
            } = b
                && !content.starts_with(REMOVED)
                && content.len() + images.len() * IMAGE_CHARS > 400
            {
                candidates.push((content.len() + images.len() * IMAGE_CHARS, mi, bi));
            }
        }
    }
    candidates.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut removed = 0usize;
    let mut count = 0usize;
    let mut first: Option<usize> = None;
    for (len, mi, bi) in candidates {
        if removed >= chars {
            break;
        }
        if let Block::ToolResult {
            content, images, ..
        } = &mut messages[mi].content[bi]
        {
            let saved = outputs.save(turn, 900 + count, "removed", content);
            let stub = match saved {
                Some(p) => format!(
                    "{REMOVED} to keep the conversation within the context window; the whole text is in {p}]"
                ),
                None => format!("{REMOVED} to keep the conversation within the context window]"),
            };
            removed += len.saturating_sub(stub.len());
            *content = stub;
            images.clear();
            count += 1;
            first = Some(first.map_or(mi, |f: usize| f.min(mi)));
        }
    }
    (count, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(text: &str) -> Message {
        Message {
            role: crate::model::Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: "t".into(),
                content: text.into(),
                is_error: false,
                images: Vec::new(),
            }],
        }
    }

    #[test]
    fn estimates_follow_reported_usage_and_growth() {
        let msgs = vec![Message::user_text("x".repeat(3_000))];
        let mut c = Ctx::new(10_000, 0.8, 0);
        c.recount_from(&msgs, 0);
        assert_eq!(c.estimate(), (3_020f64 / 3.0).ceil() as u64);
        c.observe(c.total_chars(), 755);
        assert_eq!(c.estimate(), 755);
        let mut msgs = msgs;
        msgs.push(result(&"y".repeat(4_000)));
        c.recount_from(&msgs, 1);
        // 4,000 more characters at three quarters of the calibrated 4 characters a token.
        let e = c.estimate();
        assert!((2_090..2_110).contains(&e), "{e}");
        assert!(!c.over_threshold());
        msgs.push(result(&"z".repeat(40_000)));
        c.recount_from(&msgs, 2);
        assert!(c.over_threshold());
        assert!(!c.fits());
    }

    #[test]
    fn a_servers_numbers_are_learnt() {
        let mut c = Ctx::new(200_000, 0.8, 0);
        let said = c.learn(
            &ContextOverflow {
                tokens: Some(46_112),
                window: Some(40_000),
            },
            150_000,
        );
        assert_eq!(said, "the window is 40000 tokens, not 200000");
        assert_eq!(c.window, 40_000);
        assert_eq!(c.overflows, 1);
    }

    #[test]
    fn a_refusal_without_numbers_bounds_the_window_by_the_request() {
        let msgs = vec![Message::user_text("x".repeat(150_000))];
        let mut c = Ctx::new(200_000, 0.8, 0);
        c.recount_from(&msgs, 0);
        c.observe(c.total_chars(), 50_000);
        let said = c.learn(
            &ContextOverflow {
                tokens: None,
                window: None,
            },
            c.total_chars(),
        );
        assert_eq!(said, "the window is at most about 50000 tokens, not 200000");
        assert_eq!(c.window, 50_000);
        assert!(!c.fits());
    }

    #[test]
    fn max_tokens_shrinks_only_near_the_window() {
        let mut c = Ctx::new(40_000, 0.8, 0);
        c.observe(0, 10_000);
        assert_eq!(c.max_tokens(16_000), None);
        c.observe(0, 30_000);
        assert_eq!(c.max_tokens(16_000), Some(8_000));
    }

    #[test]
    fn capped_results_keep_head_and_tail_and_say_where_the_rest_is() {
        let text = format!("{}{}", "a".repeat(5_000), "b".repeat(5_000));
        assert_eq!(cap(&text, 10_000, None), None);
        let c = cap(&text, 1_000, Some(".baton/outputs/x.txt")).unwrap_or_default();
        assert!(c.starts_with(&"a".repeat(1_500)), "{c}");
        assert!(c.ends_with(&"b".repeat(1_500)));
        assert!(c.contains("7000 characters left out"));
        assert!(c.contains(".baton/outputs/x.txt"));
    }

    #[test]
    fn the_largest_results_are_taken_out_and_saved() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let outputs = Outputs::new(dir.path(), 2);
        let mut msgs = vec![
            Message::user_text("prompt"),
            result(&"s".repeat(1_000)),
            result(&"L".repeat(20_000)),
            result(&"m".repeat(5_000)),
        ];
        let (n, first) = take_out_results(&mut msgs, 15_000, &outputs, 7);
        assert_eq!((n, first), (1, Some(2)));
        let Block::ToolResult { content, .. } = &msgs[2].content[0] else {
            panic!("not a result")
        };
        assert!(content.starts_with(REMOVED), "{content}");
        let saved =
            std::fs::read_to_string(dir.path().join(".baton/outputs/0002-t007-900-removed.txt"))
                .unwrap_or_default();
        assert_eq!(saved.len(), 20_000);
    }
}
