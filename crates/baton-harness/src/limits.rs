//! A run's limits and its stop rule, one for a run of one and for N agents.

use std::time::{Duration, Instant};

use baton_config::Config;
use baton_records::{FeatureList, State};

use crate::queue;

/// Limits given on the command line; `None` falls back to `baton.toml`.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Sessions in this run.
    pub max_sessions: Option<u32>,
    /// Spend in USD for the project.
    pub budget_usd: Option<f64>,
    /// Wall-clock hours of this run.
    pub max_hours: Option<f64>,
    /// Pause between sessions.
    pub pause: Option<Duration>,
    /// Number sessions from this one up (a parallel run keeps the project's
    /// numbering across its agents' working copies).
    pub first_number: Option<u32>,
    /// The agent (1-based) of a parallel run whose working copy this is.
    pub agent: Option<u32>,
    /// No regression sweep before a coding session, nor before "complete": a
    /// parallel run's working copy starts from the main branch's tip, which was
    /// swept when it was merged, and the coordinator sweeps the main branch before
    /// the run says complete.
    pub skip_sweep: bool,
    /// When the run began, for `--max-hours`: a parallel run's, from before its
    /// initializer, shared by its coordinator and every agent's session so the
    /// hours bound the run as a whole; `None` is when the limits are taken.
    pub started: Option<Instant>,
}

/// Why a run ended without an error.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// Every feature passes.
    Complete,
    /// Every feature passes but these (1-based), which an agent declared blocked.
    CompleteExceptBlocked(Vec<usize>),
    /// A limit was reached (which one).
    Limit(String),
    /// Sessions in a row without a newly passing feature.
    Stalled(u32),
    /// Stopped by Ctrl-C.
    Interrupted,
}

impl RunEnd {
    /// The exit code of `baton run`.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Complete => 0,
            Self::CompleteExceptBlocked(_) => 4,
            Self::Limit(_) => 2,
            Self::Stalled(_) => 3,
            Self::Interrupted => 130,
        }
    }
}

/// A run's limits: the command line's, else `baton.toml`'s (0 = none).
pub(crate) struct RunLimits {
    /// Sessions in the run.
    pub(crate) max_sessions: u32,
    /// Spend for the project, USD.
    pub(crate) budget: f64,
    /// Wall-clock hours of the run.
    pub(crate) max_hours: f64,
    /// When the run started.
    pub(crate) started: Instant,
    /// The stall rule's limit: coding sessions in a row without a newly passing
    /// feature (0: none). `stall_sessions` for each agent working at once.
    pub(crate) stall: u32,
}

impl RunLimits {
    pub(crate) fn new(opts: &RunOptions, cfg: &Config) -> Self {
        Self {
            max_sessions: opts.max_sessions.unwrap_or(cfg.run.max_sessions),
            budget: opts.budget_usd.unwrap_or(cfg.run.budget_usd),
            max_hours: opts.max_hours.unwrap_or(cfg.run.max_hours),
            started: opts.started.unwrap_or_else(Instant::now),
            stall: cfg.run.stall_sessions,
        }
    }

    /// The run's limits for a project whose record is `state`: the project's
    /// budget (recorded by [`RunLimits::record_budget`]) when none is given on
    /// the command line. A run of one and the coordinator both go by it.
    pub(crate) fn for_project(opts: &RunOptions, cfg: &Config, state: &State) -> Self {
        let mut limits = Self::new(opts, cfg);
        if opts.budget_usd.is_none() {
            limits.budget = state.budget(cfg.run.budget_usd);
        }
        limits
    }

    /// A budget given on the command line is the project's from now on, until
    /// `baton.toml`'s `[run] budget_usd` (`toml`) changes: put in `state` with
    /// that value; `true` when that changed it (the caller saves it).
    pub(crate) fn record_budget(opts: &RunOptions, state: &mut State, toml: f64) -> bool {
        match opts.budget_usd {
            Some(b) if state.budget_usd != Some(b) || state.budget_toml_usd != Some(toml) => {
                state.budget_usd = Some(b);
                state.budget_toml_usd = Some(toml);
                true
            }
            _ => false,
        }
    }

    /// The run's stop rule, one for one agent and for N, judged before a session
    /// is handed out: every feature passes; Ctrl-C; nothing left to hand out but
    /// blocked features (once no session is under way: `idle`); a limit reached
    /// after `sessions` sessions of the run, with `unsettled` USD spent by
    /// sessions the record does not hold yet; the stall count at its limit.
    /// `list` is `None` before the initializer's list is accepted.
    pub(crate) fn stop_rule(
        &self,
        list: Option<&FeatureList>,
        state: &State,
        unsettled: f64,
        sessions: u32,
        idle: bool,
        cancelled: bool,
    ) -> Option<RunEnd> {
        if list.is_some_and(FeatureList::all_pass) {
            return Some(RunEnd::Complete);
        }
        if cancelled {
            return Some(RunEnd::Interrupted);
        }
        if let Some(list) = list
            && idle
            && queue::order(list, state).is_empty()
        {
            return Some(RunEnd::CompleteExceptBlocked(queue::blocked(list, state)));
        }
        if let Some(l) = self.reached(sessions, state.total_cost() + unsettled) {
            return Some(RunEnd::Limit(l));
        }
        (list.is_some() && self.stall > 0 && state.stalled >= self.stall)
            .then_some(RunEnd::Stalled(state.stalled))
    }

    /// When `--max-hours` (or `[run] max_hours`) runs out, if it is set.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        (self.max_hours > 0.0)
            .then(|| self.started + std::time::Duration::from_secs_f64(self.max_hours * 3600.0))
    }

    /// The limit reached, in words, after `sessions` sessions of the run with
    /// `spent` USD spent on the project.
    pub(crate) fn reached(&self, sessions: u32, spent: f64) -> Option<String> {
        let (max_sessions, budget, max_hours) = (self.max_sessions, self.budget, self.max_hours);
        if max_sessions > 0 && sessions >= max_sessions {
            return Some(format!("--max-sessions {max_sessions} reached"));
        }
        // In millionths of a dollar: sums of float prices fall a hair short of the
        // budget they reach ($0.0012 + 3 × $0.0006 is $0.0029999… in f64).
        let micro = |usd: f64| (usd * 1e6).round() as u64;
        if budget > 0.0 && micro(spent) >= micro(budget) {
            return Some(format!(
                "budget {} reached (spent ${spent:.4})",
                baton_records::human::usd(budget)
            ));
        }
        if self.deadline().is_some_and(|d| Instant::now() >= d) {
            return Some(format!("--max-hours {max_hours} reached"));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A budget given on the command line becomes the project's, and the
    /// project's is gone by when none is given (a run of one and a parallel run
    /// alike), until baton.toml's budget changes.
    #[test]
    fn the_budget_given_once_is_the_projects_from_then_on() {
        use super::RunLimits;
        let cfg = baton_config::Config::default();
        let mut state = baton_records::State::default();
        let given = RunOptions {
            budget_usd: Some(2.5),
            ..RunOptions::default()
        };
        assert!(RunLimits::record_budget(&given, &mut state, 0.0));
        assert!(
            !RunLimits::record_budget(&given, &mut state, 0.0),
            "unchanged"
        );
        let none = RunOptions::default();
        assert!(!RunLimits::record_budget(&none, &mut state, 0.0));
        assert_eq!(RunLimits::for_project(&none, &cfg, &state).budget, 2.5);
        let other = RunOptions {
            budget_usd: Some(1.0),
            ..RunOptions::default()
        };
        assert_eq!(RunLimits::for_project(&other, &cfg, &state).budget, 1.0);
        // baton.toml's budget set since: the later word wins.
        let mut later = cfg.clone();
        later.run.budget_usd = 0.05;
        assert_eq!(RunLimits::for_project(&none, &later, &state).budget, 0.05);
        // A record from before the toml's value was kept reads it as 0.
        state.budget_toml_usd = None;
        assert_eq!(RunLimits::for_project(&none, &cfg, &state).budget, 2.5);
        assert_eq!(RunLimits::for_project(&none, &later, &state).budget, 0.05);
    }

    /// A budget is reached when the sessions' costs add up to it, though their
    /// sum in floating point falls a hair short.
    #[test]
    fn a_budget_the_costs_add_up_to_is_reached() {
        let limits = RunLimits {
            max_sessions: 0,
            budget: 0.003,
            max_hours: 0.0,
            started: std::time::Instant::now(),
            stall: 0,
        };
        let spent = 0.0012 + 0.0006 + 0.0006 + 0.0006;
        assert!(spent < 0.003);
        let said = limits.reached(0, spent).unwrap();
        assert!(said.starts_with("budget $0.003 reached"), "{said}");
        assert_eq!(limits.reached(0, 0.0029), None);
    }
}
