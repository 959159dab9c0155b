//! Figures derived from the records: passing counts after each session, when each
//! feature started passing, what each feature cost, what broke.

use std::path::PathBuf;

use baton_records::SessionOutcome;

use crate::records::{Records, SessionRecord as Session, flip_backs};

/// When a passing feature started passing.
#[derive(Debug, Clone, PartialEq)]
pub enum Since {
    /// Flipped after this session, held in this commit.
    Session {
        /// Session number.
        session: u32,
        /// Commit, where recorded.
        commit: Option<String>,
    },
    /// Passing when baton adopted the list (no flip recorded).
    Adopted,
}

/// What a report shows about one feature beyond the list itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeatureFacts {
    /// For passing features: since when.
    pub since: Option<Since>,
    /// Cost of the sessions that flipped it (each session's cost split evenly over
    /// the features it flipped).
    pub cost_usd: f64,
    /// Evidence images (absolute paths).
    pub evidence: Vec<PathBuf>,
    /// Times it was set back to failing.
    pub flip_backs: usize,
    /// For passing features: how the flip that made it pass was proven, where
    /// the ledger says.
    pub proof: Option<baton_records::Proof>,
}

/// Counts of what the gates caught, over all sessions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Findings {
    /// Feature-list changes undone (restores).
    pub restores: usize,
    /// Features set back to failing (by the session, a check, the verifier, a sweep).
    pub flip_backs: usize,
    /// Sessions that left uncommitted work.
    pub dirty_trees: usize,
    /// Refused tool calls.
    pub refusals: u32,
    /// Sessions that did not update the notes.
    pub notes_missing: usize,
    /// Sessions that ended in an error or were killed.
    pub failed_sessions: usize,
}

impl Findings {
    /// Whether nothing was caught.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Everything computed for the page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Analysis {
    /// Passing features before the first session (index 0) and after each session.
    pub passing_after: Vec<usize>,
    /// Per feature, in list order.
    pub features: Vec<FeatureFacts>,
    /// Sum of every session's cost (verifier included).
    pub total_cost: f64,
    /// Cost of sessions that flipped nothing.
    pub unattributed_cost: f64,
    /// Cost by session kind: (kind, sessions, cost).
    pub cost_by_kind: Vec<(String, usize, f64)>,
    /// Tokens in all.
    pub total_tokens: u64,
    /// What the gates caught.
    pub findings: Findings,
    /// Wall time covered by sessions, in seconds.
    pub session_secs: f64,
    /// Wall time of the regression sweeps before sessions, in seconds (outside
    /// the sessions' own).
    pub sweep_secs: f64,
}

/// Whether a session's outcome counts as a failure.
pub fn failed(s: &Session) -> bool {
    matches!(s.outcome, SessionOutcome::Error | SessionOutcome::Killed)
}

impl Analysis {
    /// Compute the figures of `r`.
    pub fn new(r: &Records) -> Self {
        let total = r.features.len();
        let passing_now = r.features.iter().filter(|f| f.passes).count();
        // Backwards from today's count, so the chart ends where the list stands.
        let mut passing_after = vec![0usize; r.sessions.len() + 1];
        let mut p = passing_now as i64;
        passing_after[r.sessions.len()] = passing_now;
        for (i, s) in r.sessions.iter().enumerate().rev() {
            let g = &s.gates;
            let swept = s.sweep.as_ref().map_or(0, |w| w.failed.len());
            p = p - g.flipped.len() as i64 + g.unflipped.len() as i64 + swept as i64;
            passing_after[i] = p.clamp(0, total as i64) as usize;
        }

        let mut features = vec![FeatureFacts::default(); total];
        let mut unattributed = 0.0;
        let mut findings = Findings::default();
        let mut by_kind: Vec<(String, usize, f64)> = Vec::new();
        for s in &r.sessions {
            let g = &s.gates;
            let cost = s.cost();
            let share = cost / g.flipped.len().max(1) as f64;
            let mut attributed = false;
            for &n in &g.flipped {
                if let Some(f) = features.get_mut(n.wrapping_sub(1)) {
                    f.cost_usd += share;
                    attributed = true;
                }
            }
            if !attributed {
                unattributed += cost;
            }
            let backs = flip_backs(s);
            for (n, _) in &backs {
                if let Some(f) = features.get_mut(n.wrapping_sub(1)) {
                    f.flip_backs += 1;
                }
            }
            findings.restores += g.violations.len();
            findings.flip_backs += backs.len();
            findings.dirty_trees += usize::from(!g.leftover_files.is_empty());
            findings.refusals += g.refusals;
            findings.notes_missing += usize::from(!g.notes_updated);
            findings.failed_sessions += usize::from(failed(s));
            match by_kind.iter_mut().find(|(k, _, _)| *k == s.kind.name()) {
                Some(k) => {
                    k.1 += 1;
                    k.2 += cost;
                }
                None => by_kind.push((s.kind.name().to_string(), 1, cost)),
            }
        }

        // Since when: the last flip in the ledger; evidence: the flip's own, else
        // the images kept for the session that flipped it.
        for e in &r.ledger {
            let Some(f) = e.feature.and_then(|n| features.get_mut(n.wrapping_sub(1))) else {
                continue;
            };
            if e.kind == crate::records::LedgerKind::Flip {
                f.since = Some(Since::Session {
                    session: e.session,
                    commit: e.commit.clone(),
                });
                let own: Vec<PathBuf> = e
                    .evidence
                    .iter()
                    .map(|p| r.project.join(p))
                    .filter(|p| crate::records::is_image(p))
                    .collect();
                f.evidence = if own.is_empty() {
                    r.evidence.get(&e.session).cloned().unwrap_or_default()
                } else {
                    own
                };
                f.proof = e.proof.clone();
                // The verifier's screenshots of this feature come first.
                if let Some(baton_records::Proof::Verifier { evidence, .. }) = &e.proof {
                    let mut shots: Vec<PathBuf> = evidence
                        .iter()
                        .map(|p| r.project.join(p))
                        .filter(|p| crate::records::is_image(p))
                        .collect();
                    shots.retain(|p| !f.evidence.contains(p));
                    shots.append(&mut f.evidence);
                    f.evidence = shots;
                }
            }
        }
        for (f, list) in features.iter_mut().zip(&r.features) {
            if !list.passes {
                f.since = None;
                f.evidence.clear();
                f.proof = None;
            } else if f.since.is_none() {
                f.since = Some(Since::Adopted);
            }
        }
        Self {
            passing_after,
            features,
            total_cost: r.sessions.iter().map(Session::cost).sum(),
            unattributed_cost: unattributed,
            cost_by_kind: by_kind,
            total_tokens: r.sessions.iter().map(|s| s.usage.total()).sum(),
            findings,
            session_secs: r.sessions.iter().map(Session::duration_secs).sum(),
            sweep_secs: r
                .sessions
                .iter()
                .filter_map(|s| s.sweep.as_ref())
                .map(|w| w.ms as f64 / 1000.0)
                .sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{Feature, LedgerEntry, LedgerKind, SessionKind};
    use baton_records::GateReport as Gates;
    use pretty_assertions::assert_eq;

    fn session(n: u32, flipped: &[usize], unflipped: &[usize], cost: f64) -> Session {
        Session {
            number: n,
            cost_usd: cost,
            gates: Gates {
                flipped: flipped.to_vec(),
                unflipped: unflipped.to_vec(),
                ..Gates::default()
            },
            ..Session::new(n, SessionKind::Coding, SessionOutcome::Completed)
        }
    }

    fn feature(passes: bool) -> Feature {
        Feature {
            category: "c".into(),
            description: "d".into(),
            passes,
            depends_on: Vec::new(),
            source: None,
        }
    }

    /// The sweeps' time, outside every session's own clock, is added up.
    #[test]
    fn the_time_of_the_sweeps_before_sessions_is_summed() {
        let mut swept = session(2, &[], &[], 0.0);
        swept.sweep = Some(baton_records::CheckRun {
            ms: 1_500,
            ..baton_records::CheckRun::default()
        });
        let mut again = session(3, &[], &[], 0.0);
        again.sweep = Some(baton_records::CheckRun {
            ms: 2_250,
            ..baton_records::CheckRun::default()
        });
        let r = Records {
            sessions: vec![session(1, &[], &[], 0.0), swept, again],
            ..Records::default()
        };
        assert_eq!(Analysis::new(&r).sweep_secs, 3.75);
    }

    #[test]
    fn passing_counts_costs_and_since() {
        let r = Records {
            features: vec![feature(true), feature(true), feature(false)],
            sessions: vec![
                session(1, &[], &[], 1.0),
                session(2, &[1, 2], &[], 2.0),
                session(3, &[3], &[], 0.5),
                session(4, &[], &[3], 0.25),
            ],
            ledger: vec![
                LedgerEntry {
                    feature: Some(1),
                    commit: Some("aaa".into()),
                    ..LedgerEntry::new(2, LedgerKind::Flip, "")
                },
                LedgerEntry {
                    feature: Some(3),
                    ..LedgerEntry::new(3, LedgerKind::Flip, "")
                },
            ],
            ..Records::default()
        };
        let a = Analysis::new(&r);
        assert_eq!(a.passing_after, vec![0, 0, 2, 3, 2]);
        assert_eq!(a.features[0].cost_usd, 1.0);
        assert_eq!(a.features[2].cost_usd, 0.5);
        assert_eq!(a.unattributed_cost, 1.25);
        assert_eq!(a.total_cost, 3.75);
        assert_eq!(
            a.features[0].since,
            Some(Since::Session {
                session: 2,
                commit: Some("aaa".into())
            })
        );
        // No flip recorded for feature 2: it passed when adopted.
        assert_eq!(a.features[1].since, Some(Since::Adopted));
        // Feature 3 was set back: no longer passing.
        assert_eq!(a.features[2].since, None);
        assert_eq!(a.findings.flip_backs, 1);
    }
}
