//! Which failing feature a coding session is handed, and what baton remembers about
//! the features that do not pass: failed attempts, deferral behind the other failing
//! features, and blocks an agent declared (docs/harness.md, "Features that will not
//! pass").
//!
//! The order is: every failing feature that is neither deferred nor blocked, in list
//! order; then the deferred ones, the one deferred longest ago first. Blocked features
//! are never handed out.

use baton_records::FeatureList;

use baton_records::{FeatureRecord, SessionKind, SessionOutcome, SessionRecord, State};

/// Characters of a failure reason kept in the record.
const REASON_CHARS: usize = 300;

/// The failing features (1-based) in the order they are handed out; the first is the
/// next coding session's target. Blocked features are left out.
pub fn order(list: &FeatureList, state: &State) -> Vec<usize> {
    // An agent of a parallel run is handed the feature it claimed, alone.
    if let Some(n) = state.claim {
        return list
            .features
            .get(n.wrapping_sub(1))
            .filter(|f| !f.passes)
            .map(|_| vec![n])
            .unwrap_or_default();
    }
    let mut deferred: Vec<(u32, usize)> = Vec::new();
    let mut out = Vec::new();
    for (i, f) in list.features.iter().enumerate() {
        let n = i + 1;
        // A feature waits until every feature it depends on passes.
        if f.passes || !list.waiting_on(n).is_empty() {
            continue;
        }
        match state.features.get(&n) {
            Some(r) if r.blocked.is_some() => {}
            Some(FeatureRecord {
                deferred: Some(after),
                ..
            }) => deferred.push((*after, n)),
            _ => out.push(n),
        }
    }
    deferred.sort_unstable();
    out.extend(deferred.into_iter().map(|(_, n)| n));
    out
}

/// Whether `list` wants list-append sessions before the first coding session:
/// baton's own initializer wrote it (a list adopted from elsewhere is taken as
/// it is), no coding session has run, no list-append session said it covers
/// the spec or failed [`baton_records::state::APPEND_ATTEMPTS`] times in a row,
/// and it is shorter than the `asked` features. A run of one and a parallel run
/// both go by it.
pub fn wants_rest(list: &FeatureList, state: &State, asked: u32) -> bool {
    let ran = |kind: SessionKind| state.sessions.iter().any(|s| s.kind == kind);
    ran(SessionKind::Initializer)
        && !ran(SessionKind::Coding)
        && !state.list_covered
        && state.append_failures < baton_records::state::APPEND_ATTEMPTS
        && list.features.len() < asked as usize
}

/// Failing features (1-based) that wait on others (`depends_on`), with the
/// features they wait on, in list order.
pub fn waiting(list: &FeatureList) -> Vec<(usize, Vec<usize>)> {
    (1..=list.features.len())
        .filter(|&n| !list.features[n - 1].passes)
        .map(|n| (n, list.waiting_on(n)))
        .filter(|(_, on)| !on.is_empty())
        .collect()
}

/// The failing features (1-based) an agent declared blocked, in list order.
pub fn blocked(list: &FeatureList, state: &State) -> Vec<usize> {
    state
        .features
        .iter()
        .filter(|(n, r)| r.blocked.is_some() && fails(list, **n))
        .map(|(n, _)| *n)
        .collect()
}

/// The failing features (1-based) deferred and not blocked, in the order they come back.
pub fn deferred(list: &FeatureList, state: &State) -> Vec<usize> {
    let mut v: Vec<(u32, usize)> = state
        .features
        .iter()
        .filter(|(n, r)| r.blocked.is_none() && fails(list, **n))
        .filter_map(|(n, r)| r.deferred.map(|after| (after, *n)))
        .collect();
    v.sort_unstable();
    v.into_iter().map(|(_, n)| n).collect()
}

/// Whether feature `n` (1-based) is in the list and fails.
fn fails(list: &FeatureList, n: usize) -> bool {
    n.checked_sub(1)
        .and_then(|i| list.features.get(i))
        .is_some_and(|f| !f.passes)
}

/// A deferral decided by [`count_attempt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deferral {
    /// Failed attempts so far.
    pub attempts: u32,
    /// Whether this is the feature's first deferral (the stall count restarts).
    pub first: bool,
}

/// Count a failed attempt at `feature` in session `session`, with why it failed. With
/// `limit` > 0, the feature is deferred once `limit` attempts have failed, and again
/// after each further failed attempt (back behind the other deferred features).
pub fn count_attempt(
    state: &mut State,
    feature: usize,
    session: u32,
    reason: String,
    limit: u32,
) -> Option<Deferral> {
    let r = state.features.entry(feature).or_default();
    r.attempts += 1;
    r.last_reason = Some(reason);
    if limit == 0 || (r.deferred.is_none() && r.attempts < limit) {
        return None;
    }
    let first = r.deferred.is_none();
    r.deferred = Some(session);
    Some(Deferral {
        attempts: r.attempts,
        first,
    })
}

/// Count a coding session towards a stall. Only a session that had an unblocked
/// feature to work on (`worked`) and made nothing newly pass counts. A feature's
/// first deferral starts the count afresh (the next session works on another
/// feature), but only once until a feature newly passes: an agent that makes nothing
/// pass still stalls, after about `feature_attempts + stall_sessions` sessions.
pub fn count_stall(state: &mut State, newly_passing: bool, worked: bool, first_deferral: bool) {
    if newly_passing {
        state.stalled = 0;
        state.restarted_by_deferral = false;
        return;
    }
    if worked {
        state.stalled += 1;
    }
    if first_deferral && !state.restarted_by_deferral {
        state.stalled = 0;
        state.restarted_by_deferral = true;
    }
}

/// Forget what is recorded about features that pass in `list` (or are not in it).
pub fn forget_passing(state: &mut State, list: &FeatureList) {
    state.features.retain(|&n, _| fails(list, n));
}

/// Whether a session that ended with `outcome` had a fair chance at its feature,
/// so that making nothing pass counts towards a stall: not one stopped by the
/// provider's usage limit, by Ctrl-C, or by baton being killed.
pub fn had_a_fair_chance(outcome: SessionOutcome) -> bool {
    !matches!(
        outcome,
        SessionOutcome::UsageLimit | SessionOutcome::Interrupted | SessionOutcome::Killed
    )
}

/// Whether a session with this outcome counts as an attempt at its target: not when
/// a person interrupted it, the model provider failed, or its quota ran out
/// (`usage_limit`).
pub fn counts_as_attempt(outcome: SessionOutcome) -> bool {
    !matches!(
        outcome,
        SessionOutcome::Interrupted | SessionOutcome::Error | SessionOutcome::UsageLimit
    )
}

/// Why `target` did not pass after the session `record`, as far as the gates know.
pub fn failure_reason(record: &SessionRecord, target: usize) -> String {
    let g = &record.gates;
    let why = if let Some(f) = g.verify_failed.iter().find(|f| f.feature == target) {
        format!(
            "its verify command `{}` failed: {}",
            f.command,
            one_line(&f.reason)
        )
    } else if let Some((_, why)) = g.verifier_rejected.iter().find(|(n, _)| *n == target) {
        format!("the independent verifier rejected it: {}", one_line(why))
    } else if let Some((_, why)) = g.unproven.iter().find(|(n, _)| *n == target) {
        format!(
            "its flip was reverted because nothing proved it: {}",
            one_line(why)
        )
    } else if record.outcome != SessionOutcome::Completed {
        format!("the session ended ({}) without it passing", record.outcome)
    } else {
        "the session ended without flipping it".to_string()
    };
    cut(&why, REASON_CHARS)
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `s` cut to `max` characters, with `…` where it was cut.
pub(crate) fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let c: String = s.chars().take(max.saturating_sub(1)).collect();
    format!("{c}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_records::CheckFailure;
    use baton_records::SessionKind;
    use pretty_assertions::assert_eq;

    fn list(passes: &[bool]) -> FeatureList {
        let v: Vec<serde_json::Value> = passes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                serde_json::json!({"category": "c", "description": format!("F{}", i + 1),
                                   "steps": [], "passes": p})
            })
            .collect();
        FeatureList::parse(&serde_json::to_string(&v).unwrap(), "f.json").unwrap()
    }

    /// Features 1–4, failing unless in `passing`; feature 1 depends on 3, feature 2
    /// on 1 and 4.
    fn with_deps(passing: &[usize]) -> FeatureList {
        let deps = [vec![3], vec![1, 4], vec![], vec![]];
        let v: Vec<serde_json::Value> = deps
            .iter()
            .enumerate()
            .map(|(i, d)| {
                serde_json::json!({"category": "c", "description": format!("F{}", i + 1),
                    "steps": [], "passes": passing.contains(&(i + 1)), "depends_on": d})
            })
            .collect();
        FeatureList::parse(&serde_json::to_string(&v).unwrap(), "f.json").unwrap()
    }

    #[test]
    fn features_are_handed_out_only_when_what_they_depend_on_passes() {
        let state = State::default();
        // Nothing passes: 3 and 4 depend on nothing; 1 waits on 3; 2 on 1 and 4.
        assert_eq!(order(&with_deps(&[]), &state), [3, 4]);
        assert_eq!(waiting(&with_deps(&[])), [(1, vec![3]), (2, vec![1, 4])]);
        // 3 passes: 1 may go, first in list order; 2 still waits on 1 and 4.
        assert_eq!(order(&with_deps(&[3]), &state), [1, 4]);
        // 1, 3 and 4 pass: 2 at last.
        assert_eq!(order(&with_deps(&[1, 3, 4]), &state), [2]);
        assert!(waiting(&with_deps(&[1, 3, 4])).is_empty());
        // A list without the key behaves as before.
        assert_eq!(order(&list(&[false, true, false]), &state), [1, 3]);
    }

    fn record(f: impl FnOnce(&mut FeatureRecord)) -> FeatureRecord {
        let mut r = FeatureRecord::default();
        f(&mut r);
        r
    }

    #[test]
    fn deferred_features_come_after_the_others_and_blocked_ones_never() {
        let l = list(&[true, false, false, false, false, false]);
        let mut s = State::default();
        assert_eq!(order(&l, &s), vec![2, 3, 4, 5, 6]);
        // #2 deferred after session 9, #4 after session 7: #4 waited longer.
        s.features.insert(2, record(|r| r.deferred = Some(9)));
        s.features.insert(4, record(|r| r.deferred = Some(7)));
        // #3 blocked (even though once deferred); #5 only has attempts.
        s.features.insert(
            3,
            record(|r| {
                r.blocked = Some("needs a key".into());
                r.deferred = Some(1);
            }),
        );
        s.features.insert(5, record(|r| r.attempts = 2));
        assert_eq!(order(&l, &s), vec![5, 6, 4, 2]);
        assert_eq!(blocked(&l, &s), vec![3]);
        assert_eq!(deferred(&l, &s), vec![4, 2]);
        // A record of a passing feature does not count.
        s.features
            .insert(1, record(|r| r.blocked = Some("x".into())));
        assert_eq!(blocked(&l, &s), vec![3]);
        // Nothing left but blocked: nothing to hand out.
        let only_blocked = list(&[true, true, false, true, true, true]);
        assert_eq!(order(&only_blocked, &s), Vec::<usize>::new());
        assert_eq!(blocked(&only_blocked, &s), vec![3]);
    }

    #[test]
    fn attempts_defer_at_the_limit_and_again_after_each_further_failure() {
        let mut s = State::default();
        assert_eq!(count_attempt(&mut s, 2, 5, "a".into(), 3), None);
        assert_eq!(count_attempt(&mut s, 2, 6, "b".into(), 3), None);
        assert_eq!(
            count_attempt(&mut s, 2, 7, "c".into(), 3),
            Some(Deferral {
                attempts: 3,
                first: true
            })
        );
        assert_eq!(s.features[&2].deferred, Some(7));
        assert_eq!(s.features[&2].last_reason.as_deref(), Some("c"));
        // Tried again later and failed: back again, at once, not a first deferral.
        assert_eq!(
            count_attempt(&mut s, 2, 12, "d".into(), 3),
            Some(Deferral {
                attempts: 4,
                first: false
            })
        );
        assert_eq!(s.features[&2].deferred, Some(12));
        // 0 never defers, but still counts.
        assert_eq!(count_attempt(&mut s, 3, 13, "e".into(), 0), None);
        assert_eq!(count_attempt(&mut s, 3, 14, "e".into(), 0), None);
        assert_eq!(s.features[&3].attempts, 2);
        assert_eq!(s.features[&3].deferred, None);
        // A limit of 1 defers after the first failure.
        assert_eq!(
            count_attempt(&mut s, 4, 15, "f".into(), 1),
            Some(Deferral {
                attempts: 1,
                first: true
            })
        );
        // Once passing, the record is forgotten.
        forget_passing(&mut s, &list(&[false, true, false, false]));
        assert_eq!(s.features.keys().copied().collect::<Vec<_>>(), vec![3, 4]);
    }

    #[test]
    fn a_first_deferral_restarts_the_stall_count_once_until_something_passes() {
        let mut s = State::default();
        count_stall(&mut s, false, true, false);
        count_stall(&mut s, false, true, false);
        assert_eq!(s.stalled, 2);
        // The third failure defers the feature: the count starts afresh.
        count_stall(&mut s, false, true, true);
        assert_eq!((s.stalled, s.restarted_by_deferral), (0, true));
        // The next feature fails three times too: no second restart without progress.
        count_stall(&mut s, false, true, false);
        count_stall(&mut s, false, true, false);
        count_stall(&mut s, false, true, true);
        assert_eq!(s.stalled, 3);
        // A session that blocked its target (nothing to work on) does not count.
        count_stall(&mut s, false, false, false);
        assert_eq!(s.stalled, 3);
        // Progress: the count and the restart are back.
        count_stall(&mut s, true, true, false);
        assert_eq!((s.stalled, s.restarted_by_deferral), (0, false));
        count_stall(&mut s, false, true, false);
        count_stall(&mut s, false, true, true);
        assert_eq!(s.stalled, 0);
    }

    #[test]
    fn a_short_list_of_batons_own_initializer_wants_the_rest_until_coding_starts() {
        let short = list(&[false, false]);
        let session = |kind| SessionRecord::new(1, kind, SessionOutcome::Completed);
        let mut s = State::default();
        assert!(!wants_rest(&short, &s, 5), "a list adopted from elsewhere");
        s.sessions.push(session(SessionKind::Initializer));
        assert!(wants_rest(&short, &s, 5));
        assert!(!wants_rest(&short, &s, 2), "as long as asked");
        s.append_failures = baton_records::state::APPEND_ATTEMPTS;
        assert!(!wants_rest(&short, &s, 5), "list-append failed too often");
        s.append_failures = 0;
        s.list_covered = true;
        assert!(!wants_rest(&short, &s, 5), "the spec is covered");
        s.list_covered = false;
        s.sessions.push(session(SessionKind::Coding));
        assert!(!wants_rest(&short, &s, 5), "coding has started");
    }

    #[test]
    fn the_reason_of_a_failed_attempt_names_the_check_that_failed() {
        let mut r = SessionRecord {
            turns: 1,
            target: Some(2),
            ..SessionRecord::new(4, SessionKind::Coding, SessionOutcome::Completed)
        };
        assert_eq!(
            failure_reason(&r, 2),
            "the session ended without flipping it"
        );
        r.outcome = SessionOutcome::MaxTurns;
        assert_eq!(
            failure_reason(&r, 2),
            "the session ended (max_turns) without it passing"
        );
        r.gates.verifier_rejected = vec![(2, "the button\n does nothing".into())];
        assert_eq!(
            failure_reason(&r, 2),
            "the independent verifier rejected it: the button does nothing"
        );
        r.gates.verify_failed = vec![CheckFailure {
            feature: 2,
            command: "test -f x".into(),
            reason: "Exit code: 1".into(),
        }];
        assert_eq!(
            failure_reason(&r, 2),
            "its verify command `test -f x` failed: Exit code: 1"
        );
        use SessionOutcome as O;
        assert!(counts_as_attempt(O::Killed) && counts_as_attempt(O::MaxTurns));
        assert!(!counts_as_attempt(O::Interrupted) && !counts_as_attempt(O::Error));
        assert!(!counts_as_attempt(O::UsageLimit));
    }
}
