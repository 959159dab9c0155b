//! The coordinator's bookkeeping, with no I/O: which agents are idle, which
//! features this run holds and by whom, how many sessions run, which ended and
//! wait for the next batch, and what the batch being integrated holds. The
//! coordinator ([`super::coordinator`]) does the claiming, the starting, the
//! gathering and the merging; every change of state it makes goes through one of
//! these transitions, each with a unit test below.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use baton_records::State;

use super::settle::{Ended, Unmerged, unmerged_own};

/// The batch being integrated, as the board sees it.
struct BatchBook {
    /// Its features, still claimed.
    features: Vec<usize>,
    /// For the agents that built on its sessions: their tips and flips.
    own: Vec<Unmerged>,
    /// Its sessions' numbers and costs, counted against the budget until the
    /// main record holds them.
    spent: Vec<(u32, f64)>,
}

/// The run's sessions between the coordinator's turns.
pub(super) struct Board {
    /// Sessions handed out in this run (the initializer's and list-append
    /// sessions counted too), for `--max-sessions`.
    handed: u32,
    /// Features this run holds claimed, with the agent (index) working on each.
    held: BTreeMap<usize, usize>,
    /// Agents with nothing to do (indexes; the last is handed work first).
    idle: Vec<usize>,
    /// Sessions running in agents' threads.
    running: usize,
    /// Sessions that ended and wait for the next batch.
    ended: Vec<Ended>,
    /// Their features, and those of sessions that left nothing to settle: still
    /// claimed until the next batch settles.
    ended_features: Vec<usize>,
    batch: Option<BatchBook>,
}

impl Board {
    /// `agents` idle agents (agent 0 handed work first); `handed` sessions so
    /// far in this run.
    pub(super) fn new(agents: usize, handed: u32) -> Self {
        Self {
            handed,
            held: BTreeMap::new(),
            idle: (0..agents).rev().collect(),
            running: 0,
            ended: Vec::new(),
            ended_features: Vec::new(),
            batch: None,
        }
    }

    /// Sessions handed out in this run.
    pub(super) fn handed(&self) -> u32 {
        self.handed
    }

    /// Sessions running, ended and not settled, or in the batch: while any is,
    /// their features are claimed and the run is not idle.
    pub(super) fn busy(&self) -> usize {
        self.running
            + self.ended_features.len()
            + self.batch.as_ref().map_or(0, |b| b.features.len())
    }

    /// Sessions running in agents' threads.
    pub(super) fn running(&self) -> usize {
        self.running
    }

    /// Whether a batch is being integrated.
    pub(super) fn integrating(&self) -> bool {
        self.batch.is_some()
    }

    /// Whether this run holds feature `n`.
    pub(super) fn holds(&self, n: usize) -> bool {
        self.held.contains_key(&n)
    }

    /// An idle agent, taken for a hand-out (give it back with
    /// [`Board::not_handed`] if none follows).
    pub(super) fn take_idle(&mut self) -> Option<usize> {
        self.idle.pop()
    }

    /// Agent `a`, taken for a hand-out that did not happen, is idle again.
    pub(super) fn not_handed(&mut self, a: usize) {
        self.idle.push(a);
    }

    /// Agent `a` is handed feature `n`: held, counted.
    pub(super) fn hand(&mut self, a: usize, n: usize) {
        self.held.insert(n, a);
        self.handed += 1;
    }

    /// The session handed out last started in its agent's thread.
    pub(super) fn started(&mut self) {
        self.running += 1;
    }

    /// What agent `a`'s next session builds on: its sessions ended and not
    /// merged yet (the newest one's tip, every one's flips).
    pub(super) fn own(&self, a: usize) -> Option<(String, Vec<usize>)> {
        unmerged_own(
            self.batch
                .iter()
                .flat_map(|b| b.own.iter().cloned())
                .chain(self.ended.iter().filter_map(Ended::own)),
            a,
        )
    }

    /// Agent `a`'s session on `feature` ended: the agent is idle, the feature
    /// waits for the next batch, and so does the session (`None`: it left
    /// nothing to settle).
    pub(super) fn ended(&mut self, a: usize, feature: usize, session: Option<Ended>) {
        self.running -= 1;
        self.ended_features.push(feature);
        self.ended.extend(session);
        self.idle.push(a);
    }

    /// With no batch under way and something ended, the next batch: its
    /// sessions, to integrate.
    pub(super) fn start_batch(&mut self) -> Option<Vec<Ended>> {
        if self.batch.is_some() || self.ended_features.is_empty() {
            return None;
        }
        let sessions = std::mem::take(&mut self.ended);
        self.batch = Some(BatchBook {
            features: std::mem::take(&mut self.ended_features),
            own: sessions.iter().filter_map(Ended::own).collect(),
            spent: sessions.iter().map(Ended::spent).collect(),
        });
        Some(sessions)
    }

    /// Whether `feature` is in the batch under way.
    pub(super) fn in_batch(&self, feature: usize) -> bool {
        self.batch
            .as_ref()
            .is_some_and(|b| b.features.contains(&feature))
    }

    /// `feature` of the batch was settled before the rest of it (its branch
    /// conflicted with the main branch): no longer held, no longer built on.
    pub(super) fn released(&mut self, feature: usize) {
        self.held.remove(&feature);
        if let Some(b) = self.batch.as_mut() {
            b.features.retain(|&f| f != feature);
            b.own.retain(|(_, _, flips)| !flips.contains(&feature));
        }
    }

    /// The batch was settled: its features, no longer held (their claims are
    /// to be released).
    pub(super) fn settled(&mut self) -> Vec<usize> {
        let features = self.batch.take().map(|b| b.features).unwrap_or_default();
        for f in &features {
            self.held.remove(f);
        }
        features
    }

    /// What the sessions cost while `state` (the main record) does not hold
    /// them yet: those still running, as far as `live` has seen them spend
    /// (their turns so far), and those that ended (waiting for a batch, or in
    /// one). A budget judged on the record alone hands out sessions after it is
    /// spent; one judged without the running ones, while an agent's gates run.
    pub(super) fn unsettled_cost(&self, state: &State, live: &BTreeMap<u32, f64>) -> f64 {
        let batch = self.batch.as_ref().map_or(&[][..], |b| &b.spent[..]);
        let mut by = live.clone();
        for (number, cost) in self
            .ended
            .iter()
            .map(Ended::spent)
            .chain(batch.iter().copied())
        {
            let known = by.entry(number).or_insert(0.0);
            *known = known.max(cost);
        }
        by.into_iter()
            .filter(|(number, _)| !state.sessions.iter().any(|s| s.number == *number))
            .map(|(_, cost)| cost)
            .sum()
    }
}

/// What the agents' sessions have spent so far, by session number, as their
/// turns end: the coordinator's budget counts a session from its first turn,
/// not from when its agent reports back after the gates.
#[derive(Debug, Clone, Default)]
pub(super) struct Spend(Arc<Mutex<BTreeMap<u32, f64>>>);

impl Spend {
    /// Session `number` spent `usd` more.
    pub(super) fn add(&self, number: u32, usd: f64) {
        if let Ok(mut m) = self.0.lock() {
            *m.entry(number).or_insert(0.0) += usd;
        }
    }

    /// What each session has spent so far, but those `state` holds (their
    /// cost is on the record).
    pub(super) fn unrecorded(&self, state: &State) -> BTreeMap<u32, f64> {
        let Ok(mut m) = self.0.lock() else {
            return BTreeMap::new();
        };
        m.retain(|n, _| !state.sessions.iter().any(|s| s.number == *n));
        m.clone()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Agent `a`'s session `number` on `feature`, which cost `cost` and flipped
    /// the feature when `flipped`, its branch at `tip`.
    fn ended(a: usize, feature: usize, number: u32, cost: f64, flipped: bool, tip: &str) -> Ended {
        let flips: Vec<usize> = if flipped { vec![feature] } else { vec![] };
        serde_json::from_value(json!({
            "agent": a, "feature": feature, "number": number,
            "record": {"number": number, "kind": "coding", "outcome": "completed",
                       "cost_usd": cost, "gates": {"flipped": flips}},
            "feature_record": null, "theirs": tip,
        }))
        .unwrap()
    }

    /// A board whose agents each started a session on its feature, as `(agent,
    /// feature)` in hand-out order.
    fn working(sessions: &[(usize, usize)]) -> Board {
        let mut b = Board::new(sessions.len(), 0);
        for &(a, f) in sessions {
            assert_eq!(b.take_idle(), Some(a));
            b.hand(a, f);
            b.started();
        }
        b
    }

    #[test]
    fn a_new_board_hands_agent_0_first_and_is_not_busy() {
        let mut b = Board::new(3, 1);
        assert_eq!((b.handed(), b.busy(), b.running()), (1, 0, 0));
        assert!(!b.integrating());
        assert_eq!(b.take_idle(), Some(0));
        assert_eq!(b.take_idle(), Some(1));
    }

    #[test]
    fn a_hand_out_holds_the_feature_and_counts_it() {
        let mut b = Board::new(2, 1);
        let a = b.take_idle().unwrap();
        b.hand(a, 5);
        b.started();
        assert!(b.holds(5));
        assert_eq!((b.handed(), b.running(), b.busy()), (2, 1, 1));
        let a = b.take_idle().unwrap();
        b.hand(a, 6);
        assert_eq!(b.handed(), 3);
        assert_eq!(b.take_idle(), None);
    }

    #[test]
    fn an_agent_not_handed_out_is_idle_again() {
        let mut b = Board::new(1, 0);
        let a = b.take_idle().unwrap();
        b.not_handed(a);
        assert_eq!(b.take_idle(), Some(a));
        assert_eq!(b.handed(), 0);
    }

    #[test]
    fn an_ended_session_frees_its_agent_and_keeps_its_feature_busy() {
        let mut b = Board::new(1, 0);
        let a = b.take_idle().unwrap();
        b.hand(a, 4);
        b.started();
        b.ended(a, 4, Some(ended(a, 4, 1, 0.5, true, "t1")));
        assert_eq!((b.running(), b.busy()), (0, 1));
        assert!(b.holds(4));
        assert_eq!(b.take_idle(), Some(a));
        // Its next session builds on the unmerged one.
        assert_eq!(b.own(a), Some(("t1".to_string(), vec![4])));
    }

    #[test]
    fn a_batch_takes_everything_ended_and_only_one_runs_at_a_time() {
        let mut b = working(&[(0, 1), (1, 2)]);
        assert!(b.start_batch().is_none(), "nothing ended");
        b.ended(0, 1, Some(ended(0, 1, 1, 0.1, true, "t1")));
        // A session that left nothing to settle still waits with its feature.
        b.ended(1, 2, None);
        let sessions = b.start_batch().unwrap();
        assert_eq!(sessions.len(), 1);
        assert!(b.integrating());
        assert!(b.in_batch(1) && b.in_batch(2));
        assert_eq!(b.busy(), 2);
        // What ends meanwhile waits for the next batch.
        b.take_idle();
        b.hand(0, 3);
        b.started();
        b.ended(0, 3, Some(ended(0, 3, 3, 0.1, false, "t3")));
        assert!(b.start_batch().is_none(), "one batch at a time");
        assert!(!b.in_batch(3));
        assert_eq!(b.busy(), 3);
    }

    #[test]
    fn a_feature_released_early_leaves_the_batch_and_is_not_built_on() {
        let mut b = working(&[(0, 7)]);
        b.ended(0, 7, Some(ended(0, 7, 1, 0.1, true, "t7")));
        b.start_batch().unwrap();
        assert!(b.own(0).is_some());
        b.released(7);
        assert!(!b.holds(7));
        assert!(!b.in_batch(7));
        assert_eq!(b.own(0), None);
        assert!(b.integrating(), "the batch goes on");
        assert_eq!(b.settled(), Vec::<usize>::new());
    }

    #[test]
    fn a_settled_batch_releases_its_features_and_a_next_batch_may_start() {
        let mut b = working(&[(0, 1), (1, 2)]);
        b.ended(0, 1, Some(ended(0, 1, 1, 0.1, true, "t1")));
        b.start_batch().unwrap();
        b.ended(1, 2, Some(ended(1, 2, 2, 0.1, true, "t2")));
        assert_eq!(b.settled(), vec![1]);
        assert!(!b.holds(1) && b.holds(2));
        assert!(!b.integrating());
        assert_eq!(b.start_batch().unwrap().len(), 1);
        assert_eq!(b.settled(), vec![2]);
        assert_eq!(b.busy(), 0);
    }

    #[test]
    fn what_ended_costs_until_the_record_holds_it() {
        let mut b = working(&[(0, 1), (1, 2)]);
        b.ended(0, 1, Some(ended(0, 1, 1, 0.25, true, "t1")));
        b.start_batch().unwrap();
        b.ended(1, 2, Some(ended(1, 2, 2, 0.5, true, "t2")));
        let mut state = State::default();
        let none = BTreeMap::new();
        assert!((b.unsettled_cost(&state, &none) - 0.75).abs() < 1e-9);
        // The batch's session is on the record (settled, the batch not ended
        // yet): counted there, not twice.
        let on_record = ended(0, 1, 1, 0.25, true, "t1").record;
        state.sessions.push(on_record);
        assert!((b.unsettled_cost(&state, &none) - 0.5).abs() < 1e-9);
    }

    /// A running session costs what its turns spent so far; once it ended, what
    /// its agent reported (its verifier included), never both.
    #[test]
    fn a_running_session_costs_what_it_spent_so_far() {
        let mut b = working(&[(0, 1), (1, 2)]);
        let spend = Spend::default();
        spend.add(1, 0.125);
        spend.add(2, 0.25);
        spend.add(2, 0.25);
        let state = State::default();
        assert!((b.unsettled_cost(&state, &spend.unrecorded(&state)) - 0.625).abs() < 1e-9);
        b.ended(0, 1, Some(ended(0, 1, 1, 0.375, true, "t1")));
        assert!((b.unsettled_cost(&state, &spend.unrecorded(&state)) - 0.875).abs() < 1e-9);
        let mut state = State::default();
        state
            .sessions
            .push(ended(0, 1, 1, 0.375, true, "t1").record);
        assert!((b.unsettled_cost(&state, &spend.unrecorded(&state)) - 0.5).abs() < 1e-9);
        assert_eq!(spend.unrecorded(&state).len(), 1);
    }
}
