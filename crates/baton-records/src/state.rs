//! `.baton/state.json`: what every session of the project did, written atomically
//! after each step so a crash or `kill -9` loses nothing that was decided. Fields
//! added after the first version have defaults, so older records still load.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::timing::Timing;

use crate::{RecordsError, layout, read_optional, write_atomic};

/// Tokens used, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Uncached input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    /// All tokens of every kind.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// Add another usage to this one.
    pub fn add(&mut self, o: &Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cache_read_tokens += o.cache_read_tokens;
        self.cache_write_tokens += o.cache_write_tokens;
    }
}

/// A check that failed (a feature's `verify` command after a session, or in the
/// regression sweep before one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckFailure {
    /// The feature (1-based).
    pub feature: usize,
    /// The command.
    pub command: String,
    /// Why: the command's output and exit code (the end of it), or the policy's refusal.
    pub reason: String,
}

/// The result of running a set of checks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckRun {
    /// Features (1-based) whose check passed.
    pub passed: Vec<usize>,
    /// Checks that failed.
    pub failed: Vec<CheckFailure>,
    /// Checks the command policy refuses here: not run, so they neither pass nor
    /// fail (the reason says why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<CheckFailure>,
    /// Features not checked because the time box ran out.
    pub skipped: Vec<usize>,
    /// Features not checked because their check passed on this same tree.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchanged: Vec<usize>,
    /// `init.sh` failed (its output), if it was run and failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init_error: Option<String>,
    /// The end of what `init.sh` printed when it succeeded (where to reach the app).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub init_output: Option<String>,
    /// Whether the start script ran (not recorded).
    #[serde(skip)]
    pub init_ran: bool,
    /// How long it took, the start script included, in milliseconds.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ms: u64,
    /// How long each check that ran took, in milliseconds, by feature (1-based).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub check_ms: BTreeMap<usize, u64>,
}

fn yes() -> bool {
    true
}

/// What the gates found after one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GateReport {
    /// Features (1-based) newly passing, after every check.
    pub flipped: Vec<usize>,
    /// Features (1-based) set back to failing by the session itself.
    pub unflipped: Vec<usize>,
    /// Changes to the feature list that were not allowed, and were undone.
    pub violations: Vec<String>,
    /// Files baton guards (git's config, hooks and info, `baton.toml`) that the
    /// session changed, and baton put back.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boundary: Vec<String>,
    /// New flips whose `verify` command failed, and were reverted.
    pub verify_failed: Vec<CheckFailure>,
    /// New flips confirmed by their `verify` command.
    pub verified: Vec<usize>,
    /// Features that gained a `verify` command.
    pub verify_added: Vec<usize>,
    /// The independent verifier's rejections (feature, reason), reverted.
    pub verifier_rejected: Vec<(usize, String)>,
    /// The verifier's passes refused only for their check (feature, why): it
    /// was asked again, in a second round, for a check that stands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks_refused: Vec<(usize, String)>,
    /// The commit in which baton restored or corrected the feature list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_commit: Option<String>,
    /// Files the session left uncommitted.
    pub leftover_files: Vec<String>,
    /// The commit in which baton committed them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leftover_commit: Option<String>,
    /// Whether the progress notes changed during the session (true when a record
    /// does not say).
    #[serde(default = "yes")]
    pub notes_updated: bool,
    /// Tool calls refused during the session.
    pub refusals: u32,
    /// Hosts the session's commands asked for that the network boundary refused
    /// (not on `[sandbox] allow`), each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network_refused: Vec<String>,
    /// Evidence files kept for the session (relative to the project).
    pub evidence: Vec<String>,
    /// How each accepted flip was proven (feature, proof).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub proofs: Vec<(usize, crate::Proof)>,
    /// Flips nothing proved, reverted (feature, why).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unproven: Vec<(usize, String)>,
    /// Flips whose verify command already passed on the session's base commit, so
    /// it was not counted as proof.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vacuous: Vec<usize>,
    /// Flips whose check proved nothing for this session, with why: the session
    /// changed what it runs or reads, a coding session wrote it, or it only tests
    /// that paths exist. Each went to the verifier.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub weak_checks: Vec<(usize, String)>,
    /// Checks written into the list after it was accepted, each with its feature
    /// and who wrote it (`coding session 4`, `the verifier (session 6)`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks_added: Vec<(usize, String, String)>,
    /// Checks of new flips the command policy refuses here: not run, so they
    /// proved nothing and the flips went to the verifier.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unrunnable: Vec<CheckFailure>,
    /// Files the session left that baton did not commit (dependencies, logs, build
    /// output, files over the size limit), with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    /// History the session rewrote (a branch moved off its start), joined back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewound: Option<String>,
    /// The independent verifier's session that judged its flips (its transcript
    /// number: `baton log --session N`), when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verifier_session: Option<u32>,
}

impl Default for GateReport {
    fn default() -> Self {
        Self {
            flipped: Vec::new(),
            unflipped: Vec::new(),
            violations: Vec::new(),
            boundary: Vec::new(),
            verify_failed: Vec::new(),
            verified: Vec::new(),
            verify_added: Vec::new(),
            verifier_rejected: Vec::new(),
            checks_refused: Vec::new(),
            restore_commit: None,
            leftover_files: Vec::new(),
            leftover_commit: None,
            notes_updated: true,
            refusals: 0,
            network_refused: Vec::new(),
            evidence: Vec::new(),
            proofs: Vec::new(),
            unproven: Vec::new(),
            vacuous: Vec::new(),
            weak_checks: Vec::new(),
            checks_added: Vec::new(),
            unrunnable: Vec::new(),
            left_out: Vec::new(),
            rewound: None,
            verifier_session: None,
        }
    }
}

impl GateReport {
    /// Whether anything needs the next session's attention.
    pub fn has_findings(&self) -> bool {
        !self.violations.is_empty()
            || !self.boundary.is_empty()
            || !self.verify_failed.is_empty()
            || !self.verifier_rejected.is_empty()
            || !self.unproven.is_empty()
            || !self.vacuous.is_empty()
            || self.rewound.is_some()
            || !self.leftover_files.is_empty()
            || !self.notes_updated
            || !self.unflipped.is_empty()
    }
}

/// The kind of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    /// Writes the feature list, init script, notes and first commit.
    Initializer,
    /// Implements one feature.
    Coding,
    /// Writes the specification from an idea, or appends features for a request
    /// (`baton new --idea`, `baton plan`).
    Planner,
}

impl SessionKind {
    /// Name used in output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Initializer => "initializer",
            Self::Coding => "coding",
            Self::Planner => "planner",
        }
    }
}

impl std::fmt::Display for SessionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
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
    /// The run's budget was spent during the session: it stopped at the turn
    /// that spent it.
    BudgetLimit,
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
            Self::BudgetLimit => "budget_limit",
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
            Self::MaxTurns
                | Self::TimeLimit
                | Self::TokenLimit
                | Self::BudgetLimit
                | Self::Killed
                | Self::Error
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
    #[serde(default)]
    pub started_ms: u64,
    /// End, Unix ms.
    #[serde(default)]
    pub ended_ms: u64,
    /// How it ended.
    pub outcome: SessionOutcome,
    /// Model turns.
    #[serde(default)]
    pub turns: u32,
    /// Tokens.
    #[serde(default)]
    pub usage: Usage,
    /// Cost in USD.
    #[serde(default)]
    pub cost_usd: f64,
    /// What the gates found after it.
    #[serde(default)]
    pub gates: GateReport,
    /// Commits made during the session (the agent's and baton's).
    #[serde(default)]
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
    /// The agent (1-based) of a parallel run that ran it; `None` for a run of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<u32>,
    /// Where its wall time went: before the agent, the agent, after it.
    #[serde(default, skip_serializing_if = "Timing::is_zero")]
    pub timing: Timing,
    /// In a parallel run: how the agent's branch went into the main branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration: Option<Integration>,
    /// HEAD when it started: a reference a later flip's proof may be replayed
    /// against (work that reached a commit in this session began after it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
}

/// What many agents bought: their sessions' time against the time in which any
/// of them ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Parallelism {
    /// The agents that ran sessions.
    pub agents: usize,
    /// Their sessions.
    pub sessions: usize,
    /// The sessions' durations added up, in seconds: about what one agent would
    /// have taken for them.
    pub session_secs: f64,
    /// The time in which at least one of them ran, in seconds (gaps between runs
    /// left out).
    pub wall_secs: f64,
    /// `session_secs / wall_secs`: the speed-up over one agent at a time.
    pub speed_up: f64,
}

/// The parallelism of the sessions that had an agent, from their start and end
/// times; `None` when none had.
pub fn parallelism(sessions: &[SessionRecord]) -> Option<Parallelism> {
    let timed: Vec<(u32, u64, u64)> = sessions
        .iter()
        .filter(|s| s.ended_ms >= s.started_ms)
        .filter_map(|s| Some((s.agent?, s.started_ms, s.ended_ms)))
        .collect();
    if timed.is_empty() {
        return None;
    }
    let agents: std::collections::BTreeSet<u32> = timed.iter().map(|t| t.0).collect();
    let mut spans: Vec<(u64, u64)> = timed.iter().map(|&(_, a, b)| (a, b)).collect();
    let session_ms: u64 = spans.iter().map(|(a, b)| b - a).sum();
    // The union of the spans: time with at least one session running.
    spans.sort_unstable();
    let (mut wall_ms, mut open) = (0u64, None::<(u64, u64)>);
    for (a, b) in spans.iter().copied() {
        open = match open {
            Some((s, e)) if a <= e => Some((s, e.max(b))),
            Some((s, e)) => {
                wall_ms += e - s;
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((s, e)) = open {
        wall_ms += e - s;
    }
    let (session_secs, wall_secs) = (session_ms as f64 / 1000.0, wall_ms as f64 / 1000.0);
    Some(Parallelism {
        agents: agents.len(),
        sessions: spans.len(),
        session_secs,
        wall_secs,
        speed_up: if wall_ms > 0 {
            session_secs / wall_secs
        } else {
            1.0
        },
    })
}

/// How a parallel run's agent's work went into the main branch after its session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Integration {
    /// What happened.
    pub outcome: IntegrationOutcome,
    /// The main branch's commit that holds the work, when merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The ref that keeps the agent's branch when it was not merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
    /// The conflicting files or the checks that failed, for people.
    #[serde(default)]
    pub detail: String,
}

/// What integrating an agent's branch came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntegrationOutcome {
    /// Merged into the main branch after the sweep passed on the merged tree.
    Merged,
    /// Its files conflicted with the main branch: the main branch did not move.
    Conflict,
    /// A check failed on the merged tree: the main branch did not move.
    Regressed,
    /// Nothing newly passed: the branch is kept, the main branch did not move.
    Kept,
}

impl SessionRecord {
    /// A session with nothing recorded yet but its number, kind and outcome.
    pub fn new(number: u32, kind: SessionKind, outcome: SessionOutcome) -> Self {
        Self {
            number,
            kind,
            started_ms: 0,
            ended_ms: 0,
            outcome,
            turns: 0,
            usage: Usage::default(),
            cost_usd: 0.0,
            gates: GateReport::default(),
            commits: 0,
            sweep: None,
            verifier_cost_usd: 0.0,
            waited_ms: 0,
            target: None,
            agent: None,
            timing: Timing::default(),
            integration: None,
            base: None,
        }
    }

    /// Everything the session cost, the verifier's check after it included.
    pub fn cost(&self) -> f64 {
        self.cost_usd + self.verifier_cost_usd
    }

    /// Wall time in seconds.
    pub fn duration_secs(&self) -> f64 {
        self.ended_ms.saturating_sub(self.started_ms) as f64 / 1000.0
    }
}

/// A session that was started and has not been recorded as ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InProgress {
    /// Session number.
    pub number: u32,
    /// Its kind.
    pub kind: SessionKind,
    /// Start, Unix ms.
    #[serde(default)]
    pub started_ms: u64,
    /// HEAD when it started.
    #[serde(default)]
    pub head_before: Option<String>,
    /// The progress notes when it started.
    #[serde(default)]
    pub notes_before: String,
    /// The regression sweep run before it.
    #[serde(default)]
    pub sweep: Option<CheckRun>,
    /// The feature (1-based) it was handed, for a coding session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<usize>,
    /// The target's verify command as run on the session's base commit, before
    /// the work: a check that passed already proves nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_check: Option<BaseCheck>,
    /// What baton did before the agent started (sweep, base check), in ms.
    #[serde(default, skip_serializing_if = "Timing::is_zero")]
    pub timing: Timing,
}

/// A feature's verify command run before a session, on its base commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseCheck {
    /// The feature (1-based).
    pub feature: usize,
    /// The command run.
    pub command: String,
    /// Whether it passed there.
    pub passed: bool,
    /// Why it could not run (the command policy refuses it here); then it proves
    /// nothing either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
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
#[serde(default)]
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
    /// In an agent's working copy of a parallel run: the one feature (1-based) this
    /// agent has claimed; it is handed out alone. `None` in a project's own record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<usize>,
    /// The initializer's list was shorter than asked, and a list-append session
    /// stated that it covers the specification: no more are run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub list_covered: bool,
    /// List-append sessions in a row that added nothing usable; at
    /// [`APPEND_ATTEMPTS`] baton stops asking and codes with the list it has.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub append_failures: u32,
    /// The budget (USD) the last `baton run` was given on its command line
    /// (`--budget-usd`): what `baton status` and the report measure spending
    /// against, before `[run] budget_usd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// `[run] budget_usd` when [`State::budget_usd`] was given: once
    /// `baton.toml` says otherwise, its word is the later one and wins. Absent
    /// in older records: read as 0 (no budget in `baton.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_toml_usd: Option<f64>,
}

/// List-append sessions in a row that may fail before baton codes with the list
/// it has.
pub const APPEND_ATTEMPTS: u32 = 2;

fn is_zero<N: Default + PartialEq>(n: &N) -> bool {
    *n == N::default()
}

impl State {
    /// Where the state lives in a project.
    pub fn path(project: &Path) -> PathBuf {
        layout::at(project, layout::STATE)
    }

    /// The project's budget (USD; 0 or less: none), given `toml` (`[run]
    /// budget_usd`): the last `baton run --budget-usd`, while `baton.toml`
    /// says what it said when that was given; else `toml`. The run's limit,
    /// its start line, `status` and the report all go by it.
    pub fn budget(&self, toml: f64) -> f64 {
        match self.budget_usd {
            Some(b) if self.budget_toml_usd.unwrap_or(0.0) == toml => b,
            _ => toml,
        }
    }

    /// Load the state; a missing file is an empty record.
    pub fn load(project: &Path) -> Result<Self, RecordsError> {
        let path = Self::path(project);
        match read_optional(&path)? {
            Some(text) => serde_json::from_str(&text).map_err(|e| RecordsError::Parse {
                path,
                what: "state file",
                message: e.to_string(),
            }),
            None => Ok(Self {
                version: 1,
                ..Self::default()
            }),
        }
    }

    /// Write the state atomically (temp file, then rename).
    pub fn save(&self, project: &Path) -> Result<(), RecordsError> {
        let path = Self::path(project);
        let text = serde_json::to_string_pretty(self).map_err(|e| RecordsError::Parse {
            path: path.clone(),
            what: "state file",
            message: e.to_string(),
        })?;
        write_atomic(&path, &text)
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
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn outcomes_round_trip_by_name() {
        for name in [
            "completed",
            "context_full",
            "usage_limit",
            "error",
            "killed",
        ] {
            let o = SessionOutcome::from_name(name).unwrap();
            assert_eq!(serde_json::to_value(o).unwrap(), name);
            assert_eq!(o.to_string(), name);
        }
        assert_eq!(SessionOutcome::from_name("exploded"), None);
    }

    #[test]
    fn a_bare_record_loads_with_defaults_and_a_bad_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".baton")).unwrap();
        std::fs::write(
            State::path(dir.path()),
            r#"{"sessions":[{"number":1,"kind":"initializer","outcome":"completed",
                "gates":{"flipped":[],"future_field":7}}],"in_progress":{"number":2,"kind":"coding"}}"#,
        )
        .unwrap();
        let s = State::load(dir.path()).unwrap();
        assert!(s.sessions[0].gates.notes_updated);
        assert_eq!(s.sessions[0].cost(), 0.0);
        assert_eq!(s.in_progress.unwrap().number, 2);
        std::fs::write(State::path(dir.path()), "{").unwrap();
        let e = State::load(dir.path()).unwrap_err().to_string();
        assert!(
            e.contains("state.json") && e.contains("move it aside"),
            "{e}"
        );
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

    fn session(agent: Option<u32>, started_ms: u64, ended_ms: u64) -> SessionRecord {
        serde_json::from_value(serde_json::json!({
            "number": 1, "kind": "coding", "started_ms": started_ms, "ended_ms": ended_ms,
            "outcome": "completed", "turns": 1, "usage": {}, "cost_usd": 0.0,
            "gates": {}, "commits": 0, "agent": agent
        }))
        .unwrap()
    }

    #[test]
    fn parallelism_is_session_time_over_the_time_any_ran() {
        // A run of one: nothing to say.
        assert_eq!(parallelism(&[session(None, 0, 10_000)]), None);
        // Two agents overlapping for 5 s, then a later run's session 90 s after:
        // 30 s of sessions in 15 + 10 s (the gap between runs left out).
        let p = parallelism(&[
            session(None, 0, 1_000),
            session(Some(1), 0, 10_000),
            session(Some(2), 5_000, 15_000),
            session(Some(1), 105_000, 115_000),
        ])
        .unwrap();
        assert_eq!((p.agents, p.sessions), (2, 3));
        assert!((p.session_secs - 30.0).abs() < 1e-9, "{p:?}");
        assert!((p.wall_secs - 25.0).abs() < 1e-9, "{p:?}");
        assert!((p.speed_up - 1.2).abs() < 1e-9, "{p:?}");
        // A span inside another counts once in the wall time.
        let p =
            parallelism(&[session(Some(1), 0, 10_000), session(Some(2), 2_000, 4_000)]).unwrap();
        assert!((p.wall_secs - 10.0).abs() < 1e-9, "{p:?}");
    }
}
