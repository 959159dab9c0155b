//! `baton status`: where a project stands, as a table or stable JSON.

use baton_records::FeatureList;
use serde::Serialize;

use crate::error::HarnessError;
use crate::files::Files;
use crate::{git, queue};
use baton_records::{SessionOutcome, State};

/// Everything `baton status --json` prints (a stable contract; see docs).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Project directory.
    pub project: String,
    /// Whether baton has accepted the feature list (a run checked and recorded
    /// it). Until then nothing counts as passing, whatever the file claims.
    pub list_accepted: bool,
    /// Features passing (in the accepted list; 0 while there is none).
    pub passing: usize,
    /// Features in all.
    pub total: usize,
    /// Features asked for (`[project] features`) when baton's own initializer wrote
    /// the list (it and list-append sessions write up to this many); null for a
    /// list adopted from elsewhere.
    pub asked: Option<u32>,
    /// Per category, in order of first appearance.
    pub categories: Vec<CategoryStatus>,
    /// Every recorded session.
    pub sessions: Vec<SessionStatus>,
    /// Sum over sessions.
    pub totals: Totals,
    /// The next failing features (up to 5), in the order they are handed out.
    pub next: Vec<NextFeature>,
    /// Features set aside: blocked ones wait for a person, deferred ones for a later try.
    pub needs_person: NeedsPerson,
    /// Failing features not handed out yet because features they depend on
    /// (`depends_on`) do not pass.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<Waiting>,
    /// Whether git shows no uncommitted change.
    pub tree_clean: bool,
    /// A session that started and was not recorded as ended (a killed run).
    pub unfinished_session: Option<u32>,
    /// Cost in USD divided by the features passing (0 while none passes).
    pub cost_per_passing_usd: f64,
    /// The project's budget in USD, or null when none is set.
    pub budget_usd: Option<f64>,
    /// The budget the last `baton run --budget-usd` was given, which comes before
    /// `[run] budget_usd` (not printed: it is `budget_usd` once applied).
    #[serde(skip)]
    pub run_budget_usd: Option<f64>,
    /// `[run] budget_usd` when [`Status::run_budget_usd`] was given.
    #[serde(skip)]
    pub run_budget_toml_usd: Option<f64>,
    /// Coding sessions in a row without a newly passing feature, as recorded.
    #[serde(skip)]
    pub stall_count: u32,
    /// When the project has stalled ([`Status::with_stall_limit`]): the count and
    /// `[run] stall_sessions`; `baton run` stops at once until a person acts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stalled: Option<Stalled>,
    /// What is left of it (never below 0), or null when none is set.
    pub budget_left_usd: Option<f64>,
    /// While the run waits for the provider's quota to reset: until when (Unix ms).
    pub waiting_until_ms: Option<u64>,
    /// The sessions of parallel runs (`--agents`), when there were any: how many
    /// agents worked at once, on average.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel: Option<baton_records::Parallelism>,
    /// How each passing feature was proven, in list order.
    pub proofs: Vec<FeatureProof>,
    /// The features that came from the forge (an issue, a failed check of
    /// baton's pull request, a review thread of it).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forge: Vec<forge::FromForge>,
    /// baton's pull request and where its watch stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<forge::PullStatus>,
}

/// How one passing feature was proven: the proof of its last accepted flip.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FeatureProof {
    /// The feature (1-based).
    pub feature: usize,
    /// `check`, `verifier`, `screenshot` (the verifier, with screenshots),
    /// `trusted` (the agent's word, `[verify] trust_agent`), or `unrecorded` (it
    /// passed before baton recorded proofs, or was accepted as passing).
    pub by: String,
    /// What proved it, for people.
    pub detail: String,
    /// The session whose flip it proved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<u32>,
}

/// The proof of every passing feature of `list`, from the ledger's flips.
pub fn proofs(files: &Files, list: &FeatureList) -> Vec<FeatureProof> {
    let ledger = baton_records::ledger::read(&files.ledger()).unwrap_or_default();
    let mut last: std::collections::BTreeMap<usize, &baton_records::LedgerEntry> =
        std::collections::BTreeMap::new();
    for e in &ledger.entries {
        if let (baton_records::LedgerKind::Flip, Some(n)) = (e.kind, e.feature) {
            last.insert(n, e);
        }
    }
    (1..=list.features.len())
        .filter(|&n| list.features[n - 1].passes)
        .map(|n| match last.get(&n).and_then(|e| e.proof.as_ref().map(|p| (e, p))) {
            Some((e, p)) => FeatureProof {
                feature: n,
                by: p.kind().to_string(),
                detail: p.describe(),
                session: Some(e.session),
            },
            None => FeatureProof {
                feature: n,
                by: "unrecorded".to_string(),
                detail: "no proof on record (it passed before baton recorded proofs, or was accepted as passing)".to_string(),
                session: last.get(&n).map(|e| e.session),
            },
        })
        .collect()
}

impl Status {
    /// The same status with the project's budget: the last run's
    /// (`--budget-usd`) while `configured` (`[run] budget_usd`) is what it was
    /// then, else `configured` ([`baton_records::State::budget`]).
    pub fn with_project_budget(self, configured: f64) -> Self {
        let budget = match self.run_budget_usd {
            Some(b) if self.run_budget_toml_usd.unwrap_or(0.0) == configured => b,
            _ => configured,
        };
        self.with_budget(budget)
    }

    /// The same status knowing `[run] stall_sessions` (`limit`; 0: none): stalled
    /// when the recorded count has reached it.
    pub fn with_stall_limit(mut self, limit: u32) -> Self {
        self.stalled = (limit > 0 && self.stall_count >= limit).then_some(Stalled {
            sessions: self.stall_count,
            limit,
        });
        self
    }

    /// The same status with `budget` (USD; 0 or less means none) and what is left of it.
    pub fn with_budget(mut self, budget: f64) -> Self {
        if budget > 0.0 {
            self.budget_usd = Some(budget);
            self.budget_left_usd = Some((budget - self.totals.cost_usd).max(0.0));
        } else {
            self.budget_usd = None;
            self.budget_left_usd = None;
        }
        self
    }
}

/// A stalled project's count and limit.
#[derive(Debug, Clone, Serialize)]
pub struct Stalled {
    /// Coding sessions in a row without a newly passing feature.
    pub sessions: u32,
    /// `[run] stall_sessions`.
    pub limit: u32,
}

/// Passing and total of one category.
#[derive(Debug, Clone, Serialize)]
pub struct CategoryStatus {
    /// Category name.
    pub name: String,
    /// Passing.
    pub passing: usize,
    /// Total.
    pub total: usize,
}

/// One session's line.
#[derive(Debug, Clone, Serialize)]
pub struct SessionStatus {
    /// Number.
    pub number: u32,
    /// `initializer` or `coding`.
    pub kind: String,
    /// How it ended.
    pub outcome: SessionOutcome,
    /// Wall time in seconds.
    pub duration_secs: f64,
    /// Model turns.
    pub turns: u32,
    /// Tokens of every kind.
    pub tokens: u64,
    /// Cost in USD.
    pub cost_usd: f64,
    /// Cost in USD of the independent verifier's session after it.
    pub verifier_cost_usd: f64,
    /// Flips the verify commands or the verifier reverted.
    pub reverted: Vec<usize>,
    /// Features the regression sweep before it set back.
    pub regressions: Vec<usize>,
    /// Features (1-based) newly passing.
    pub flipped: Vec<usize>,
    /// Features set back to failing.
    pub unflipped: Vec<usize>,
    /// Feature-list changes undone.
    pub violations: Vec<String>,
    /// Files baton committed for the session.
    pub leftover_files: usize,
    /// Whether the notes were updated.
    pub notes_updated: bool,
    /// Tool calls refused.
    pub refusals: u32,
    /// Hosts the network boundary refused the session's commands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network_refused: Vec<String>,
    /// Commits made during the session.
    pub commits: usize,
    /// Seconds spent waiting for the provider's quota to reset.
    pub waited_secs: f64,
    /// The agent of a parallel run that ran it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<u32>,
    /// In a parallel run: how its branch went into the main branch (`merged`,
    /// `conflict`, `regressed`, `kept`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integration: Option<baton_records::IntegrationOutcome>,
    /// The independent verifier's session that judged its flips (`baton log
    /// --session N` reads it), when one ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verifier_session: Option<u32>,
    /// Seconds the regression sweep before it took (the start script included),
    /// when one ran: time no session's own clock shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep_secs: Option<f64>,
    /// Where its wall time went, in ms: before the agent (sweep, base check),
    /// the agent, after it (gates, proof). Absent in records from before baton
    /// kept it.
    #[serde(skip_serializing_if = "baton_records::Timing::is_zero")]
    pub timing: baton_records::Timing,
}

/// A failing feature that waits for others to pass first.
#[derive(Debug, Clone, Serialize)]
pub struct Waiting {
    /// The feature (1-based).
    pub feature: usize,
    /// The features it waits on (1-based), those of its `depends_on` that fail.
    pub on: Vec<usize>,
}

/// Sums over all sessions.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    /// Sessions recorded.
    pub sessions: usize,
    /// Tokens of every kind.
    pub tokens: u64,
    /// Cost in USD, the verifiers' included.
    pub cost_usd: f64,
    /// Cost in USD of the independent verifiers alone.
    pub verifier_cost_usd: f64,
    /// Refused tool calls.
    pub refusals: u32,
    /// Feature-list violations undone.
    pub violations: usize,
    /// Flips reverted by verify commands or the verifier.
    pub reverted: usize,
    /// Features the regression sweeps set back.
    pub regressions: usize,
    /// Seconds spent waiting for quotas to reset.
    pub waited_secs: f64,
    /// Sessions that ended because their context window filled up.
    pub context_full: usize,
    /// Where the sessions' wall time went, in ms, added up (quota waits are
    /// `waited_secs`).
    pub timing: baton_records::Timing,
}

/// A failing feature.
#[derive(Debug, Clone, Serialize)]
pub struct NextFeature {
    /// 1-based position.
    pub number: usize,
    /// Category.
    pub category: String,
    /// Description.
    pub description: String,
}

/// Features set aside (`needs_person` in `--json`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct NeedsPerson {
    /// Failing features an agent declared blocked, in list order: never handed out
    /// until a person acts on the reason and runs `baton unblock`.
    pub blocked: Vec<BlockedFeature>,
    /// Failing features deferred after failed attempts, in the order they come back.
    pub deferred: Vec<DeferredFeature>,
}

/// A blocked feature.
#[derive(Debug, Clone, Serialize)]
pub struct BlockedFeature {
    /// 1-based position.
    pub number: usize,
    /// Description.
    pub description: String,
    /// Why, as the agent gave it.
    pub reason: String,
    /// The session that blocked it.
    pub session: Option<u32>,
    /// Failed attempts before it was blocked.
    pub attempts: u32,
}

/// A deferred feature.
#[derive(Debug, Clone, Serialize)]
pub struct DeferredFeature {
    /// 1-based position.
    pub number: usize,
    /// Description.
    pub description: String,
    /// Failed attempts.
    pub attempts: u32,
    /// Why the last attempt failed, where known.
    pub last_reason: Option<String>,
}

fn needs_person(list: &FeatureList, state: &State) -> NeedsPerson {
    let desc = |n: usize| {
        list.features
            .get(n - 1)
            .map(|f| f.description.clone())
            .unwrap_or_default()
    };
    NeedsPerson {
        blocked: queue::blocked(list, state)
            .into_iter()
            .filter_map(|n| {
                let r = state.features.get(&n)?;
                Some(BlockedFeature {
                    number: n,
                    description: desc(n),
                    reason: r.blocked.clone().unwrap_or_default(),
                    session: r.blocked_in,
                    attempts: r.attempts,
                })
            })
            .collect(),
        deferred: queue::deferred(list, state)
            .into_iter()
            .filter_map(|n| {
                let r = state.features.get(&n)?;
                Some(DeferredFeature {
                    number: n,
                    description: desc(n),
                    attempts: r.attempts,
                    last_reason: r.last_reason.clone(),
                })
            })
            .collect(),
    }
}

impl SessionStatus {
    /// What `status` shows of one recorded session.
    fn of(s: &baton_records::SessionRecord) -> Self {
        SessionStatus {
            number: s.number,
            kind: s.kind.name().to_string(),
            outcome: s.outcome,
            duration_secs: s.ended_ms.saturating_sub(s.started_ms) as f64 / 1000.0,
            turns: s.turns,
            tokens: s.usage.total(),
            cost_usd: s.cost_usd,
            verifier_cost_usd: s.verifier_cost_usd,
            verifier_session: s.gates.verifier_session,
            sweep_secs: s
                .sweep
                .as_ref()
                .filter(|w| w.ms > 0)
                .map(|w| w.ms as f64 / 1000.0),
            reverted: s
                .gates
                .verify_failed
                .iter()
                .map(|f| f.feature)
                .chain(s.gates.verifier_rejected.iter().map(|r| r.0))
                .chain(s.gates.unproven.iter().map(|r| r.0))
                .collect(),
            regressions: s
                .sweep
                .as_ref()
                .map(|w| w.failed.iter().map(|f| f.feature).collect())
                .unwrap_or_default(),
            flipped: s.gates.flipped.clone(),
            unflipped: s.gates.unflipped.clone(),
            violations: s
                .gates
                .violations
                .iter()
                .chain(&s.gates.boundary)
                .chain(&s.gates.rewound)
                .cloned()
                .collect(),
            leftover_files: s.gates.leftover_files.len(),
            notes_updated: s.gates.notes_updated,
            refusals: s.gates.refusals,
            network_refused: s.gates.network_refused.clone(),
            commits: s.commits,
            waited_secs: s.waited_ms as f64 / 1000.0,
            agent: s.agent,
            integration: s.integration.as_ref().map(|i| i.outcome),
            timing: s.timing,
        }
    }
}

impl Totals {
    /// The sessions' totals.
    fn of(sessions: &[SessionStatus]) -> Self {
        Totals {
            sessions: sessions.len(),
            tokens: sessions.iter().map(|s| s.tokens).sum(),
            // fold from +0.0: an empty f64 sum is -0.0, which prints as "$-0.0000".
            cost_usd: sessions
                .iter()
                .fold(0.0, |a, s| a + s.cost_usd + s.verifier_cost_usd),
            verifier_cost_usd: sessions.iter().fold(0.0, |a, s| a + s.verifier_cost_usd),
            refusals: sessions.iter().map(|s| s.refusals).sum(),
            violations: sessions.iter().map(|s| s.violations.len()).sum(),
            reverted: sessions.iter().map(|s| s.reverted.len()).sum(),
            regressions: sessions.iter().map(|s| s.regressions.len()).sum(),
            waited_secs: sessions.iter().fold(0.0, |a, s| a + s.waited_secs),
            context_full: sessions
                .iter()
                .filter(|s| s.outcome == SessionOutcome::ContextFull)
                .count(),
            timing: sessions
                .iter()
                .fold(baton_records::Timing::default(), |mut t, s| {
                    t.add(&s.timing);
                    t
                }),
        }
    }
}

/// Compute the status of a project.
pub fn status(files: &Files) -> Result<Status, HarnessError> {
    let state = State::load(&files.dir)?;
    let (list, list_accepted) = match files.load_accepted()? {
        Some(l) => (l, true),
        // Never read through a link planted in the list's place.
        None => match files.read_list() {
            Ok(Some(t)) => {
                let mut l =
                    FeatureList::parse(&t, &files.names.feature_list).map_err(|source| {
                        HarnessError::FeatureList {
                            what: "the project's feature list".into(),
                            source,
                        }
                    })?;
                // Not accepted: what it claims passes, nothing has proven.
                for f in &mut l.features {
                    f.passes = false;
                }
                (l, false)
            }
            Ok(None) | Err(_) => (FeatureList::default(), false),
        },
    };
    let sessions: Vec<SessionStatus> = state.sessions.iter().map(SessionStatus::of).collect();
    let totals = Totals::of(&sessions);
    let cost_usd = totals.cost_usd;
    Ok(Status {
        project: files.dir.display().to_string(),
        list_accepted,
        passing: list.passing(),
        total: list.features.len(),
        asked: state
            .sessions
            .iter()
            .any(|s| s.kind == baton_records::SessionKind::Initializer)
            .then_some(files.names.features),
        categories: list
            .by_category()
            .into_iter()
            .map(|(name, passing, total)| CategoryStatus {
                name,
                passing,
                total,
            })
            .collect(),
        next: queue::order(&list, &state)
            .into_iter()
            .take(5)
            .filter_map(|n| {
                let f = list.features.get(n - 1)?;
                Some(NextFeature {
                    number: n,
                    category: f.category.clone(),
                    description: f.description.clone(),
                })
            })
            .collect(),
        needs_person: needs_person(&list, &state),
        waiting: queue::waiting(&list)
            .into_iter()
            .map(|(feature, on)| Waiting { feature, on })
            .collect(),
        sessions,
        totals,
        tree_clean: git::dirty_paths(&files.dir)
            .map(|d| d.is_empty())
            .unwrap_or(false),
        unfinished_session: state.in_progress.as_ref().map(|i| i.number),
        cost_per_passing_usd: if list.passing() > 0 {
            cost_usd / list.passing() as f64
        } else {
            0.0
        },
        budget_usd: None,
        budget_left_usd: None,
        run_budget_usd: state.budget_usd,
        run_budget_toml_usd: state.budget_toml_usd,
        stall_count: state.stalled,
        stalled: None,
        waiting_until_ms: waiting_until(files, &state),
        parallel: baton_records::state::parallelism(&state.sessions),
        proofs: proofs(files, &list),
        forge: forge::from_forge(&list),
        pull_request: forge::pull(files),
    })
}

/// Until when the run waits for a quota to reset, if it does now: between sessions
/// (an agent CLI's usage limit) or inside the running session (its last event).
fn waiting_until(files: &Files, state: &State) -> Option<u64> {
    let now = baton_agent::transcript::now_ms();
    if let Some(t) = state.waiting_until_ms.filter(|&t| t > now) {
        return Some(t);
    }
    let ip = state.in_progress.as_ref()?;
    let path = files
        .dir
        .join(baton_agent::transcript::SESSIONS_DIR)
        .join(format!("{:04}.jsonl", ip.number));
    let records = baton_agent::transcript::read(&path).ok()?;
    match records.last().map(|r| &r.event) {
        Some(baton_agent::transcript::Event::Wait { until_ms, .. }) if *until_ms > now => {
            Some(*until_ms)
        }
        _ => None,
    }
}

pub mod forge;
mod text;
pub use text::{TABLE_SESSIONS, render, time_line};
