//! Session transcripts: `.baton/sessions/NNNN.jsonl`, one JSON object per line,
//! written and flushed as each thing happens, so a killed process loses nothing
//! that was already done.
//!
//! Every line has `t_ms` (milliseconds since the Unix epoch) and `type`. The
//! conversation is complete: the `user` and `assistant` events hold every message
//! except tool results, which are the `tool_result` events of the turn, in order.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::model::{Block, StopReason, Usage};

/// Directory of transcripts inside a project.
pub const SESSIONS_DIR: &str = baton_records::layout::SESSIONS;

/// An error writing or reading a transcript.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    /// File system failure.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line that is not a transcript event.
    #[error("{path}:{line}: not a transcript event: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        message: String,
    },
}

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// When it happened, in milliseconds since the Unix epoch.
    pub t_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The session began.
    SessionStart {
        /// Session number.
        session: u32,
        /// Provider name.
        provider: String,
        /// Model name.
        model: String,
        /// Project directory.
        project_dir: String,
        /// The system prompt.
        system: String,
        /// Names of the tools offered.
        tools: Vec<String>,
    },
    /// A user message that is not only tool results (the prompt, a continuation note).
    User {
        /// Its content.
        content: Vec<Block>,
    },
    /// A model request is about to be sent.
    Request {
        /// Turn number (1-based).
        turn: u32,
        /// Messages in the conversation sent.
        messages: usize,
    },
    /// An attempt failed transiently and will be retried.
    Retry {
        /// Turn number.
        turn: u32,
        /// The failed attempt (1-based).
        attempt: u32,
        /// Attempts allowed.
        max_attempts: u32,
        /// What failed.
        error: String,
        /// Wait before the next attempt.
        delay_ms: u64,
    },
    /// The provider's quota or capacity is exhausted: the session waits for the reset
    /// (or probes slowly) instead of failing. Written when the wait begins.
    Wait {
        /// Turn number.
        turn: u32,
        /// What the provider said.
        error: String,
        /// When the next attempt is made, Unix ms.
        until_ms: u64,
    },
    /// The context window is nearly full: the agent was told to wrap up (commit, write
    /// its notes, stop). The note itself is the `user` event that follows.
    Handoff {
        /// The turn after which it was told.
        turn: u32,
        /// Estimated tokens of the conversation.
        tokens: u64,
        /// The context window.
        window: u64,
        /// Why now (the threshold, or the server's context-length error).
        reason: String,
    },
    /// The older conversation was replaced by a summary the model wrote.
    Compaction {
        /// The turn after which it happened.
        turn: u32,
        /// Estimated tokens before.
        tokens_before: u64,
        /// Estimated tokens after.
        tokens_after: u64,
        /// Why now (the threshold, or the server's context-length error).
        reason: String,
        /// The summary that now stands for the older conversation.
        summary: String,
        /// Tokens of the summarising request.
        usage: Usage,
        /// Its cost in USD.
        cost_usd: f64,
    },
    /// The model's complete answer for a turn.
    Assistant {
        /// Turn number.
        turn: u32,
        /// Its content blocks.
        content: Vec<Block>,
        /// Why it stopped.
        stop_reason: StopReason,
        /// Tokens of this request.
        usage: Usage,
        /// Cost of this request in USD.
        cost_usd: f64,
    },
    /// A tool call's result, as sent back to the model.
    ToolResult {
        /// Turn number.
        turn: u32,
        /// The call answered.
        tool_use_id: String,
        /// Tool name.
        name: String,
        /// Result text.
        content: String,
        /// The call failed.
        is_error: bool,
        /// The gate refused the call; it did not run.
        #[serde(default)]
        refused: bool,
        /// How long it ran.
        duration_ms: u64,
        /// Evidence files kept for it (images, browser calls), relative to the project.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        evidence: Vec<String>,
    },
    /// The session ended.
    SessionEnd {
        /// `completed`, `context_full`, `max_turns`, `token_limit`, `time_limit`,
        /// `interrupted` or `error`.
        outcome: String,
        /// Model turns taken.
        turns: u32,
        /// Tokens used in all.
        usage: Usage,
        /// Cost in USD in all.
        cost_usd: f64,
        /// The model's last text.
        final_text: String,
        /// What went wrong, for `error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// An open transcript, appended to line by line.
#[derive(Debug)]
pub struct Transcript {
    file: File,
    path: PathBuf,
    number: u32,
}

impl Transcript {
    /// Create the next session's transcript in `project_dir/.baton/sessions/`.
    pub fn create_next(project_dir: &Path) -> Result<Self, TranscriptError> {
        Self::create_next_from(project_dir, 1)
    }

    /// Like [`Transcript::create_next`], numbered `at_least` or higher.
    pub fn create_next_from(project_dir: &Path, at_least: u32) -> Result<Self, TranscriptError> {
        let number = list_sessions(project_dir)?
            .last()
            .map_or(1, |(n, _)| n + 1)
            .max(at_least);
        Self::create(project_dir, number)
    }

    /// The transcript of session `number`, handed out by the project's records
    /// (`baton_records::SessionNumbers`); numbered past it only if a file is in
    /// the way ([`Transcript::number`] says, to be kept on record).
    pub fn create(project_dir: &Path, number: u32) -> Result<Self, TranscriptError> {
        let dir = project_dir.join(SESSIONS_DIR);
        std::fs::create_dir_all(&dir).map_err(|source| TranscriptError::Io {
            path: dir.clone(),
            source,
        })?;
        let mut number = number.max(1);
        loop {
            let path = dir.join(format!("{number:04}.jsonl"));
            match File::options().append(true).create_new(true).open(&path) {
                Ok(file) => return Ok(Self { file, path, number }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => number += 1,
                Err(source) => return Err(TranscriptError::Io { path, source }),
            }
        }
    }

    /// The session number.
    pub fn number(&self) -> u32 {
        self.number
    }

    /// The file path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one event and flush it to the file.
    pub fn record(&mut self, event: Event) -> Result<(), TranscriptError> {
        let rec = Record {
            t_ms: now_ms(),
            event,
        };
        let mut line = serde_json::to_vec(&rec).map_err(|e| TranscriptError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(|source| TranscriptError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

/// The sessions recorded in a project, by number, ascending.
pub fn list_sessions(project_dir: &Path) -> Result<Vec<(u32, PathBuf)>, TranscriptError> {
    let dir = project_dir.join(SESSIONS_DIR);
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(TranscriptError::Io { path: dir, source }),
    };
    let mut out: Vec<(u32, PathBuf)> = rd
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            let n = p
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .parse()
                .ok()?;
            Some((n, p))
        })
        .collect();
    out.sort();
    Ok(out)
}

/// Read a whole transcript. A last line without its newline (a write cut by a
/// crash) is left out; any other line that does not parse is an error naming it.
pub fn read(path: &Path) -> Result<Vec<Record>, TranscriptError> {
    let text = std::fs::read_to_string(path).map_err(|source| TranscriptError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let complete = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(line) {
            Ok(r) => out.push(r),
            Err(_) if !complete && i + 1 == lines.len() => {}
            Err(e) => {
                return Err(TranscriptError::Parse {
                    path: path.to_path_buf(),
                    line: i + 1,
                    message: e.to_string(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_grow_and_lines_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut t1 = Transcript::create_next(dir.path()).unwrap();
        assert_eq!(t1.number(), 1);
        t1.record(Event::User {
            content: vec![Block::Text { text: "hi".into() }],
        })
        .unwrap();
        let t2 = Transcript::create_next(dir.path()).unwrap();
        assert_eq!(t2.number(), 2);
        assert!(t2.path().ends_with(".baton/sessions/0002.jsonl"));
        let recs = read(t1.path()).unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(
            recs[0].event,
            Event::User {
                content: vec![Block::Text { text: "hi".into() }]
            }
        );
    }

    #[test]
    fn cut_last_line_is_skipped_and_bad_lines_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.jsonl");
        let good = r#"{"t_ms":1,"type":"user","content":[{"type":"text","text":"a"}]}"#;
        std::fs::write(&p, format!("{good}\n{{\"t_ms\":2,\"ty")).unwrap();
        assert_eq!(read(&p).unwrap().len(), 1);
        std::fs::write(&p, format!("{good}\nnot json\n{good}\n")).unwrap();
        let err = read(&p).unwrap_err().to_string();
        assert!(err.contains("x.jsonl:2:"), "{err}");
    }
}
