//! `baton status`: where a project stands, as a table or stable JSON.

use std::fmt::Write as _;

use baton_records::FeatureList;
use serde::Serialize;

use crate::error::HarnessError;
use crate::files::Files;
use crate::{git, queue};
use baton_records::human::{count, duration};
use baton_records::{SessionOutcome, State};

/// Everything `baton status --json` prints (a stable contract; see docs).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Project directory.
    pub project: String,
    /// Features passing.
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
    /// (`--budget-usd`), else `configured` (`[run] budget_usd`).
    pub fn with_project_budget(self, configured: f64) -> Self {
        let budget = self.run_budget_usd.unwrap_or(configured);
        self.with_budget(budget)
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

/// Compute the status of a project.
pub fn status(files: &Files) -> Result<Status, HarnessError> {
    let state = State::load(&files.dir)?;
    let list = match files.load_accepted()? {
        Some(l) => l,
        None => match std::fs::read_to_string(files.feature_list()) {
            Ok(t) => FeatureList::parse(&t, &files.names.feature_list).map_err(|source| {
                HarnessError::FeatureList {
                    what: "the project's feature list".into(),
                    source,
                }
            })?,
            Err(_) => FeatureList::default(),
        },
    };
    let sessions: Vec<SessionStatus> = state
        .sessions
        .iter()
        .map(|s| SessionStatus {
            number: s.number,
            kind: s.kind.name().to_string(),
            outcome: s.outcome,
            duration_secs: s.ended_ms.saturating_sub(s.started_ms) as f64 / 1000.0,
            turns: s.turns,
            tokens: s.usage.total(),
            cost_usd: s.cost_usd,
            verifier_cost_usd: s.verifier_cost_usd,
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
            commits: s.commits,
            waited_secs: s.waited_ms as f64 / 1000.0,
            agent: s.agent,
            integration: s.integration.as_ref().map(|i| i.outcome),
        })
        .collect();
    let totals = Totals {
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
    };
    let cost_usd = totals.cost_usd;
    Ok(Status {
        project: files.dir.display().to_string(),
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
        waiting_until_ms: waiting_until(files, &state),
        parallel: baton_records::state::parallelism(&state.sessions),
        proofs: proofs(files, &list),
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

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!(
            "{}…",
            s.chars().take(max.saturating_sub(1)).collect::<String>()
        )
    }
}

/// A path cut from the left so its end (the project's name) stays visible.
fn cut_left(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        s.to_string()
    } else {
        format!("…{}", s.chars().skip(n + 1 - max).collect::<String>())
    }
}

/// A 20-cell bar of `part` out of `whole`.
fn bar(part: usize, whole: usize) -> String {
    let filled = (part * 20).checked_div(whole).unwrap_or(0).min(20);
    format!("{}{}", "█".repeat(filled), "░".repeat(20 - filled))
}

/// Sessions shown in the text table (the most recent); `--json` has them all.
pub const TABLE_SESSIONS: usize = 20;

/// What the gates found after a session, in a few words.
fn findings(x: &SessionStatus) -> String {
    let mut f = Vec::new();
    if matches!(x.outcome, SessionOutcome::Error | SessionOutcome::Killed) {
        f.push(x.outcome.to_string());
    }
    if let Some(a) = x.agent {
        f.push(format!("agent {a}"));
    }
    match x.integration {
        Some(baton_records::IntegrationOutcome::Conflict) => f.push("conflict, requeued".into()),
        Some(baton_records::IntegrationOutcome::Regressed) => {
            f.push("broke a check when merged, requeued".into());
        }
        _ => {}
    }
    if !x.violations.is_empty() {
        f.push(format!("{} restore", x.violations.len()));
    }
    if !x.unflipped.is_empty() {
        f.push(format!("{} set back", x.unflipped.len()));
    }
    if !x.reverted.is_empty() {
        f.push(format!("{} reverted", x.reverted.len()));
    }
    if !x.regressions.is_empty() {
        f.push(format!("{} regressed", x.regressions.len()));
    }
    if x.leftover_files > 0 {
        f.push("dirty".to_string());
    }
    if !x.notes_updated {
        f.push("no notes".to_string());
    }
    if x.refusals > 0 {
        f.push(format!("{} refused", x.refusals));
    }
    if x.waited_secs >= 1.0 {
        f.push(format!("waited {}", duration(x.waited_secs)));
    }
    f.join(", ")
}

/// The status as text that fits 100 columns.
pub fn render(s: &Status) -> String {
    let mut o = String::new();
    standing(&mut o, s);
    session_table(&mut o, s);
    next_and_waiting(&mut o, s);
    needs_a_person(&mut o, &s.needs_person);
    o
}

/// Where the project stands: features, sessions, checks, proof, cost, tree,
/// limits, agents, a wait or an unfinished session.
fn standing(o: &mut String, s: &Status) {
    let pct = (s.passing * 100).checked_div(s.total).unwrap_or(0);
    let _ = writeln!(o, "{}", cut_left(&s.project, 100));
    let asked = match s.asked {
        Some(asked) if s.total > 0 && s.total < asked as usize => {
            format!(" · {} of {asked} asked", s.total)
        }
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "features  {}/{} passing ({pct}%){asked}",
        s.passing, s.total
    );
    for c in &s.categories {
        let _ = writeln!(
            o,
            "  {:<20} {:>5}/{:<5}",
            cut(&c.name, 20),
            c.passing,
            c.total
        );
    }
    if s.total > 0 {
        let _ = writeln!(o, "          {} {pct}%", bar(s.passing, s.total));
    }
    let _ = writeln!(
        o,
        "sessions  {} · {} tokens · ${:.4} · {} undone · {}",
        s.totals.sessions,
        s.totals.tokens,
        s.totals.cost_usd,
        baton_records::human::plural(s.totals.violations as u64, "violation"),
        baton_records::human::plural(u64::from(s.totals.refusals), "refusal")
    );
    if s.totals.verifier_cost_usd > 0.0 || s.totals.reverted > 0 || s.totals.regressions > 0 {
        let _ = writeln!(
            o,
            "checks    {} flips reverted · {} regressions set back · verifier ${:.4} (in the total)",
            s.totals.reverted, s.totals.regressions, s.totals.verifier_cost_usd
        );
    }
    if !s.proofs.is_empty() {
        let _ = writeln!(o, "proven    {}", proof_summary(&s.proofs));
    }
    let mut cost = format!("cost      ${:.2} in all", s.totals.cost_usd);
    if s.passing > 0 {
        let _ = write!(
            cost,
            " · ${:.2} per passing feature",
            s.cost_per_passing_usd
        );
    }
    if let (Some(b), Some(left)) = (s.budget_usd, s.budget_left_usd) {
        let _ = write!(cost, " · budget ${b:.2}, ${left:.2} left");
        if left <= 0.0 {
            cost.push_str(" (spent)");
        }
    }
    let _ = writeln!(o, "{cost}");
    let _ = writeln!(
        o,
        "tree      {}",
        if s.tree_clean {
            "clean"
        } else {
            "uncommitted changes"
        }
    );
    if s.totals.waited_secs >= 1.0 || s.totals.context_full > 0 {
        let _ = writeln!(
            o,
            "limits    {} waiting for quota resets · {} session(s) filled their context window",
            duration(s.totals.waited_secs),
            s.totals.context_full
        );
    }
    if let Some(p) = &s.parallel {
        let _ = writeln!(
            o,
            "agents    {} agents · {} sessions · {} of sessions in {} · {:.1}× one agent at a time",
            p.agents,
            p.sessions,
            duration(p.session_secs),
            duration(p.wall_secs),
            p.speed_up
        );
    }
    if let Some(until) = s.waiting_until_ms {
        let left = until.saturating_sub(baton_agent::transcript::now_ms()) as f64 / 1000.0;
        let _ = writeln!(
            o,
            "waiting   for the provider's quota to reset: {} left",
            duration(left)
        );
    }
    if let Some(n) = s.unfinished_session {
        let _ = writeln!(
            o,
            "unfinished session {n:04}: `baton run` resumes it (gates run first)"
        );
    }
}

/// The last sessions, one row each.
fn session_table(o: &mut String, s: &Status) {
    if s.sessions.is_empty() {
        return;
    }
    // The outcome column is as wide as its longest name shown ("context_full").
    let skip = s.sessions.len().saturating_sub(TABLE_SESSIONS);
    let width = s.sessions[skip..]
        .iter()
        .map(|x| x.outcome.name().len())
        .max()
        .unwrap_or(0)
        .max(10);
    let _ = writeln!(
        o,
        "\n   #  kind         {:<width$} {:>7}  turns tokens     cost  flipped     findings",
        "outcome", "time"
    );
    if skip > 0 {
        let _ = writeln!(
            o,
            "      … {skip} earlier session(s); `baton status --json` lists them all"
        );
    }
    for x in &s.sessions[skip..] {
        let _ = writeln!(o, "{}", session_row(x, width));
    }
}

/// The next features handed out, and those waiting for others to pass.
fn next_and_waiting(o: &mut String, s: &Status) {
    if !s.next.is_empty() {
        let _ = writeln!(o, "\nnext");
        for n in &s.next {
            let _ = writeln!(
                o,
                "  #{:<4} [{}] {}",
                n.number,
                cut(&n.category, 12),
                cut(&n.description, 75)
            );
        }
    }
    if !s.waiting.is_empty() {
        let shown: Vec<String> = s
            .waiting
            .iter()
            .take(8)
            .map(|w| {
                let on: Vec<String> = w.on.iter().map(|n| format!("#{n}")).collect();
                format!("#{} on {}", w.feature, on.join(", "))
            })
            .collect();
        let more = s.waiting.len().saturating_sub(shown.len());
        let more = if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "
waiting: {}{more}",
            shown.join("; ")
        );
    }
}

/// Features set aside for a person: blocked (with the reason) and deferred.
fn needs_a_person(o: &mut String, p: &NeedsPerson) {
    if p.blocked.is_empty() && p.deferred.is_empty() {
        return;
    }
    let _ = writeln!(o, "\nneeds a person");
    for b in &p.blocked {
        let by = b
            .session
            .map(|n| format!(" by session {n}"))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "  #{:<4} blocked{by}: {}",
            b.number,
            cut(&b.description, 60)
        );
        let _ = writeln!(
            o,
            "{}",
            cut(&format!("        reason: {}", one_line(&b.reason)), 100)
        );
    }
    for d in &p.deferred {
        let _ = writeln!(
            o,
            "  #{:<4} deferred after {} failed attempts: {}",
            d.number,
            d.attempts,
            cut(&d.description, 55)
        );
        if let Some(why) = &d.last_reason {
            let _ = writeln!(
                o,
                "{}",
                cut(&format!("        last: {}", one_line(why)), 100)
            );
        }
    }
    if !p.blocked.is_empty() {
        let _ = writeln!(
            o,
            "  act on the reason, then `baton unblock DIR N` hands a blocked feature out again"
        );
    }
}

/// How the passing features were proven, by kind, each with its features:
/// `check #1, #4 · verifier #2 · trusted #3`.
fn proof_summary(proofs: &[FeatureProof]) -> String {
    let mut parts = Vec::new();
    for (by, label) in [
        ("check", "by check"),
        ("screenshot", "by verifier with screenshots"),
        ("verifier", "by verifier"),
        ("trusted", "on the agent's word"),
        ("unrecorded", "no proof on record"),
    ] {
        let ns: Vec<String> = proofs
            .iter()
            .filter(|p| p.by == by)
            .map(|p| format!("#{}", p.feature))
            .collect();
        if !ns.is_empty() {
            parts.push(format!("{label} {}", cut(&ns.join(", "), 60)));
        }
    }
    parts.join(" · ")
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One session's row of the table, its outcome in a column `width` wide (every
/// name whole: "interrupted", "context_full"), the findings cut to the line's
/// width.
fn session_row(x: &SessionStatus, width: usize) -> String {
    let flipped = x
        .flipped
        .iter()
        .map(|n| format!("#{n}"))
        .collect::<Vec<_>>()
        .join(",");
    let line = format!(
        "{:>4}  {:<11}  {:<width$} {:>7} {:>5} {:>6} {:>8}  {:<10}  {}",
        x.number,
        x.kind,
        x.outcome.name(),
        duration(x.duration_secs),
        x.turns,
        count(x.tokens),
        format!("${:.4}", x.cost_usd),
        cut(&flipped, 10),
        findings(x)
    );
    cut(line.trim_end(), 100)
}

#[cfg(test)]
mod render_tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(bar(1, 3), "██████░░░░░░░░░░░░░░");
        assert_eq!(cut_left("/a/very/long/path", 8), "…ng/path");
    }

    #[test]
    fn a_session_row_names_every_outcome_whole() {
        for outcome in [
            SessionOutcome::Interrupted,
            SessionOutcome::ContextFull,
            SessionOutcome::TokenLimit,
        ] {
            let row = session_row(
                &SessionStatus {
                    number: 12,
                    kind: "coding".into(),
                    outcome,
                    duration_secs: 61.0,
                    turns: 1,
                    tokens: 1200,
                    cost_usd: 0.5,
                    verifier_cost_usd: 0.0,
                    reverted: Vec::new(),
                    regressions: Vec::new(),
                    flipped: vec![3],
                    unflipped: Vec::new(),
                    violations: Vec::new(),
                    leftover_files: 0,
                    notes_updated: true,
                    refusals: 0,
                    commits: 1,
                    waited_secs: 0.0,
                    agent: None,
                    integration: None,
                },
                12,
            );
            assert!(row.contains(&format!("{} ", outcome.name())), "{row}");
            assert!(!row.contains('…'), "{row}");
        }
    }
}
