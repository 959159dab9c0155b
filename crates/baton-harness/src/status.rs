//! `baton status`: where a project stands, as a table or stable JSON.

use std::fmt::Write as _;

use baton_ledger::FeatureList;
use serde::Serialize;

use crate::error::HarnessError;
use crate::files::Files;
use crate::git;
use crate::state::State;

/// Everything `baton status --json` prints (a stable contract; see docs).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// Project directory.
    pub project: String,
    /// Features passing.
    pub passing: usize,
    /// Features in all.
    pub total: usize,
    /// Per category, in order of first appearance.
    pub categories: Vec<CategoryStatus>,
    /// Every recorded session.
    pub sessions: Vec<SessionStatus>,
    /// Sum over sessions.
    pub totals: Totals,
    /// The next failing features (up to 5).
    pub next: Vec<NextFeature>,
    /// Whether git shows no uncommitted change.
    pub tree_clean: bool,
    /// A session that started and was not recorded as ended (a killed run).
    pub unfinished_session: Option<u32>,
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
    pub outcome: String,
    /// Wall time in seconds.
    pub duration_secs: f64,
    /// Model turns.
    pub turns: u32,
    /// Tokens of every kind.
    pub tokens: u64,
    /// Cost in USD.
    pub cost_usd: f64,
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
}

/// Sums over all sessions.
#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    /// Sessions recorded.
    pub sessions: usize,
    /// Tokens of every kind.
    pub tokens: u64,
    /// Cost in USD.
    pub cost_usd: f64,
    /// Refused tool calls.
    pub refusals: u32,
    /// Feature-list violations undone.
    pub violations: usize,
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

/// Compute the status of a project.
pub fn status(files: &Files) -> Result<Status, HarnessError> {
    let state = State::load(&files.dir)?;
    let list = match files.load_accepted()? {
        Some(l) => l,
        None => match std::fs::read_to_string(files.feature_list()) {
            Ok(t) => FeatureList::parse(&t, &files.names.feature_list)
                .map_err(|e| HarnessError::Input(e.to_string()))?,
            Err(_) => FeatureList::default(),
        },
    };
    let sessions: Vec<SessionStatus> = state
        .sessions
        .iter()
        .map(|s| SessionStatus {
            number: s.number,
            kind: s.kind.name().to_string(),
            outcome: s.outcome.clone(),
            duration_secs: s.ended_ms.saturating_sub(s.started_ms) as f64 / 1000.0,
            turns: s.turns,
            tokens: s.usage.total(),
            cost_usd: s.cost_usd,
            flipped: s.gates.flipped.clone(),
            unflipped: s.gates.unflipped.clone(),
            violations: s.gates.violations.clone(),
            leftover_files: s.gates.leftover_files.len(),
            notes_updated: s.gates.notes_updated,
            refusals: s.gates.refusals,
            commits: s.commits,
        })
        .collect();
    let totals = Totals {
        sessions: sessions.len(),
        tokens: sessions.iter().map(|s| s.tokens).sum(),
        cost_usd: sessions.iter().map(|s| s.cost_usd).sum(),
        refusals: sessions.iter().map(|s| s.refusals).sum(),
        violations: sessions.iter().map(|s| s.violations.len()).sum(),
    };
    Ok(Status {
        project: files.dir.display().to_string(),
        passing: list.passing(),
        total: list.features.len(),
        categories: list
            .by_category()
            .into_iter()
            .map(|(name, passing, total)| CategoryStatus {
                name,
                passing,
                total,
            })
            .collect(),
        next: list
            .features
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.passes)
            .take(5)
            .map(|(i, f)| NextFeature {
                number: i + 1,
                category: f.category.clone(),
                description: f.description.clone(),
            })
            .collect(),
        sessions,
        totals,
        tree_clean: git::dirty_paths(&files.dir)
            .map(|d| d.is_empty())
            .unwrap_or(false),
        unfinished_session: state.in_progress.map(|i| i.number),
    })
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

/// The status as text that fits 100 columns.
pub fn render(s: &Status) -> String {
    let mut o = String::new();
    let pct = (s.passing * 100).checked_div(s.total).unwrap_or(0);
    let _ = writeln!(o, "{}", cut(&s.project, 100));
    let _ = writeln!(o, "features  {}/{} passing ({pct}%)", s.passing, s.total);
    for c in &s.categories {
        let _ = writeln!(
            o,
            "  {:<20} {:>5}/{:<5}",
            cut(&c.name, 20),
            c.passing,
            c.total
        );
    }
    let _ = writeln!(
        o,
        "sessions  {} · {} tokens · ${:.4} · {} violations undone · {} refusals",
        s.totals.sessions,
        s.totals.tokens,
        s.totals.cost_usd,
        s.totals.violations,
        s.totals.refusals
    );
    let _ = writeln!(
        o,
        "tree      {}",
        if s.tree_clean {
            "clean"
        } else {
            "uncommitted changes"
        }
    );
    if let Some(n) = s.unfinished_session {
        let _ = writeln!(
            o,
            "unfinished session {n:04}: `baton run` resumes it (gates run first)"
        );
    }
    if !s.sessions.is_empty() {
        let _ = writeln!(
            o,
            "\n  #  kind         outcome       time   turns     tokens      cost  flipped     findings"
        );
        for x in &s.sessions {
            let mut findings = Vec::new();
            if !x.violations.is_empty() {
                findings.push(format!("{} restored", x.violations.len()));
            }
            if x.leftover_files > 0 {
                findings.push("dirty".to_string());
            }
            if !x.notes_updated {
                findings.push("no notes".to_string());
            }
            if x.refusals > 0 {
                findings.push(format!("{} refused", x.refusals));
            }
            let flipped = x
                .flipped
                .iter()
                .map(|n| format!("#{n}"))
                .collect::<Vec<_>>()
                .join(",");
            let _ = writeln!(
                o,
                "{:>3}  {:<11}  {:<11} {:>6} {:>7} {:>10} {:>9}  {:<10}  {}",
                x.number,
                x.kind,
                cut(&x.outcome, 11),
                format!("{:.0}s", x.duration_secs),
                x.turns,
                x.tokens,
                format!("${:.4}", x.cost_usd),
                cut(&flipped, 10),
                cut(&findings.join(", "), 22)
            );
        }
    }
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
    o
}
