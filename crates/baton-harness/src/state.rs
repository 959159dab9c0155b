//! `.baton/state.json`: what every session of the project did, written atomically
//! after each step so a crash or `kill -9` loses nothing that was decided.

use std::path::{Path, PathBuf};

use baton_agent::model::Usage;
use serde::{Deserialize, Serialize};

use crate::error::{HarnessError, io};
use crate::gates::GateReport;
use crate::verify::CheckRun;

/// The kind of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    /// Writes the feature list, init script, notes and first commit.
    Initializer,
    /// Implements one feature.
    Coding,
}

impl SessionKind {
    /// Name used in output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Initializer => "initializer",
            Self::Coding => "coding",
        }
    }
}

/// One finished (or killed) session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Session (and transcript) number.
    pub number: u32,
    /// Its kind.
    pub kind: SessionKind,
    /// Start, Unix ms.
    pub started_ms: u64,
    /// End, Unix ms.
    pub ended_ms: u64,
    /// `completed`, `context_full`, `max_turns`, `token_limit`, `time_limit`,
    /// `interrupted`, `usage_limit`, `killed` or `error`.
    pub outcome: String,
    /// Model turns.
    pub turns: u32,
    /// Tokens.
    pub usage: Usage,
    /// Cost in USD.
    pub cost_usd: f64,
    /// What the gates found after it.
    pub gates: GateReport,
    /// Commits made during the session (the agent's and baton's).
    pub commits: usize,
    /// The regression sweep run before the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<CheckRun>,
    /// Cost in USD of the independent verifier's session after it.
    #[serde(default)]
    pub verifier_cost_usd: f64,
    /// Time spent waiting for the provider's quota to reset, in ms (during the
    /// session, or after it for an agent CLI's usage limit).
    #[serde(default)]
    pub waited_ms: u64,
}

/// A session that was started and has not been recorded as ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InProgress {
    /// Session number.
    pub number: u32,
    /// Its kind.
    pub kind: SessionKind,
    /// Start, Unix ms.
    pub started_ms: u64,
    /// HEAD when it started.
    pub head_before: Option<String>,
    /// The progress notes when it started.
    pub notes_before: String,
    /// The regression sweep run before it.
    #[serde(default)]
    pub sweep: Option<CheckRun>,
}

/// The whole record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct State {
    /// Format version.
    pub version: u32,
    /// Sessions in order.
    pub sessions: Vec<SessionRecord>,
    /// The session running now, or killed before it was recorded.
    pub in_progress: Option<InProgress>,
    /// Coding sessions in a row without a newly passing feature.
    pub stalled: u32,
    /// While the run waits between sessions for a usage limit to reset: until when
    /// (Unix ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_until_ms: Option<u64>,
}

impl State {
    /// Where the state lives in a project.
    pub fn path(project: &Path) -> PathBuf {
        project.join(".baton/state.json")
    }

    /// Load the state; a missing file is an empty record.
    pub fn load(project: &Path) -> Result<Self, HarnessError> {
        let path = Self::path(project);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| HarnessError::State {
                path,
                message: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self {
                version: 1,
                ..Self::default()
            }),
            Err(e) => Err(io(path)(e)),
        }
    }

    /// Write the state atomically (temp file, then rename).
    pub fn save(&self, project: &Path) -> Result<(), HarnessError> {
        let path = Self::path(project);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).map_err(|e| HarnessError::State {
            path: path.clone(),
            message: e.to_string(),
        })?;
        std::fs::write(&tmp, text).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io(&path))
    }

    /// Total cost of every recorded session, verifiers included.
    pub fn total_cost(&self) -> f64 {
        self.sessions
            .iter()
            .fold(0.0, |a, s| a + s.cost_usd + s.verifier_cost_usd)
    }
}
