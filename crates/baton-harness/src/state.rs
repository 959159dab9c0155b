//! `.baton/state.json`: what every session of the project did, written atomically
//! after each step so a crash or `kill -9` loses nothing that was decided.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_agent::model::Usage;
use serde::{Deserialize, Serialize};

use crate::checks::CheckRun;
use crate::error::{HarnessError, io};
use crate::gates::GateReport;

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

/// How a session ended, as `state.json` and `baton status --json` spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionOutcome {
    /// The agent ended its turn.
    Completed,
    /// Its context window filled up: it was told to wrap up and hand off.
    ContextFull,
    /// `[agent] max_turns` was reached.
    MaxTurns,
    /// The session's token limit was reached.
    TokenLimit,
    /// The session's time limit was reached.
    TimeLimit,
    /// Stopped by Ctrl-C.
    Interrupted,
    /// The agent CLI's usage limit stopped it (the run waited for the reset).
    UsageLimit,
    /// An error ended it.
    Error,
    /// baton was killed while it ran; the next run finished its gates.
    Killed,
}

impl SessionOutcome {
    /// The name in the records (`completed`, `context_full`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::ContextFull => "context_full",
            Self::MaxTurns => "max_turns",
            Self::TokenLimit => "token_limit",
            Self::TimeLimit => "time_limit",
            Self::Interrupted => "interrupted",
            Self::UsageLimit => "usage_limit",
            Self::Error => "error",
            Self::Killed => "killed",
        }
    }

    /// The outcome a transcript's `session_end` names; `None` for a name baton
    /// does not know.
    pub fn from_name(name: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(name.to_string())).ok()
    }

    /// Whether the session was cut off before the agent finished (limits, errors,
    /// a kill): its work may be half done.
    pub fn cut_off(self) -> bool {
        matches!(
            self,
            Self::MaxTurns | Self::TimeLimit | Self::TokenLimit | Self::Killed | Self::Error
        )
    }
}

impl std::fmt::Display for SessionOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
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
    /// How it ended.
    pub outcome: SessionOutcome,
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
    /// The feature (1-based) the session was handed: the first of its brief's list.
    /// `None` for the initializer and for sessions recorded before baton kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<usize>,
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
    /// The feature (1-based) it was handed, for a coding session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<usize>,
}

/// What baton remembers about a failing feature that was handed out and did not
/// pass, or that an agent declared blocked. Forgotten once the feature passes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FeatureRecord {
    /// Coding sessions handed this feature that ended without it passing.
    pub attempts: u32,
    /// Deferred behind every failing feature that is not: the session after which
    /// it was (last) deferred. Features deferred later are handed out later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deferred: Option<u32>,
    /// Declared blocked by an agent (`BlockFeature`), with its reason: never handed
    /// out until a person runs `baton unblock`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked: Option<String>,
    /// The session that declared the block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocked_in: Option<u32>,
    /// Why the last attempt failed, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reason: Option<String>,
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
    /// A first deferral restarted `stalled` and no feature newly passed since: the next
    /// deferral does not restart it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restarted_by_deferral: bool,
    /// Failing features with failed attempts, deferred or blocked, by number (1-based).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: BTreeMap<usize, FeatureRecord>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_outcome_a_transcript_names_is_known_and_round_trips() {
        use baton_agent::session::Outcome;
        for o in [
            Outcome::Completed,
            Outcome::ContextFull,
            Outcome::MaxTurns,
            Outcome::TokenLimit,
            Outcome::TimeLimit,
            Outcome::Interrupted,
        ] {
            let known = SessionOutcome::from_name(o.name());
            assert_eq!(known.map(SessionOutcome::name), Some(o.name()));
        }
        for name in ["usage_limit", "error", "killed"] {
            let o = SessionOutcome::from_name(name).unwrap();
            assert_eq!(serde_json::to_value(o).unwrap(), name);
            assert_eq!(o.to_string(), name);
        }
        assert_eq!(SessionOutcome::from_name("exploded"), None);
    }

    #[test]
    fn a_state_file_without_targets_or_feature_records_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".baton")).unwrap();
        // As written before baton kept targets and per-feature records.
        let old = r#"{"version": 1, "stalled": 2,
            "sessions": [{"number": 2, "kind": "coding", "started_ms": 1, "ended_ms": 2,
                "outcome": "completed", "turns": 3, "cost_usd": 0.5, "usage": {"input_tokens": 1,
                "output_tokens": 2, "cache_read_tokens": 0, "cache_write_tokens": 0},
                "gates": {"flipped": [], "unflipped": [], "violations": [], "leftover_files": [],
                          "notes_updated": true, "refusals": 0},
                "commits": 1}],
            "in_progress": {"number": 3, "kind": "coding", "started_ms": 5,
                "head_before": null, "notes_before": ""}}"#;
        std::fs::write(State::path(dir.path()), old).unwrap();
        let s = State::load(dir.path()).unwrap();
        assert_eq!(s.sessions[0].target, None);
        assert_eq!(s.in_progress.as_ref().unwrap().target, None);
        assert!(s.features.is_empty());
        assert_eq!(s.stalled, 2);
        // And what is written now reads back the same.
        let mut s = s;
        s.features.insert(
            4,
            FeatureRecord {
                attempts: 3,
                deferred: Some(9),
                last_reason: Some("why".into()),
                ..FeatureRecord::default()
            },
        );
        s.sessions[0].target = Some(4);
        s.save(dir.path()).unwrap();
        assert_eq!(State::load(dir.path()).unwrap(), s);
        let text = std::fs::read_to_string(State::path(dir.path())).unwrap();
        assert!(text.contains("\"features\": {\n    \"4\": {"), "{text}");
    }
}
