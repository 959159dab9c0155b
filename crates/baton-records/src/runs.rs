//! One line a `baton run` of one agent ([`crate::layout::RUNS`]): when it started
//! and ended, and the time it spent outside every session's own clock that
//! baton measured (the sweep before "complete", the configured pauses). With the
//! sessions' timing it says where a run's wall time went; what is left is
//! baton's own work between sessions (briefs, git, records). A run killed before
//! it could write its line has one written for it by the next run
//! ([`killed_run`]), from its sessions' records.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{RecordsError, io, layout, read_optional};

/// One run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// When it started (Unix ms).
    pub started_ms: u64,
    /// When it ended (Unix ms).
    pub ended_ms: u64,
    /// The sweeps before "complete" (every check), in ms.
    #[serde(default)]
    pub complete_sweep_ms: u64,
    /// The pauses between sessions (`[run] pause_secs`, `--pause`), in ms.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pause_ms: u64,
    /// Written by the next run for a run that was killed: its sessions' span.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub killed: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The line a run killed before it wrote its own should have had, from the
/// sessions no recorded run holds (`sessions`: their start and end, Unix ms):
/// the first one's start to the last one's end. `None` when every session is
/// held.
pub fn killed_run(runs: &[RunRecord], sessions: &[(u64, u64)]) -> Option<RunRecord> {
    let orphans: Vec<&(u64, u64)> = sessions
        .iter()
        .filter(|(start, _)| !runs.iter().any(|r| r.holds(*start)))
        .collect();
    let started_ms = orphans.iter().map(|(s, _)| *s).min()?;
    let ended_ms = orphans.iter().map(|(s, e)| (*e).max(*s)).max()?;
    Some(RunRecord {
        started_ms,
        ended_ms,
        killed: true,
        ..RunRecord::default()
    })
}

impl RunRecord {
    /// Its wall time, in ms.
    pub fn wall_ms(&self) -> u64 {
        self.ended_ms.saturating_sub(self.started_ms)
    }

    /// Whether a session that started at `ms` belongs to it.
    pub fn holds(&self, ms: u64) -> bool {
        (self.started_ms..=self.ended_ms).contains(&ms)
    }

    /// Append it to the project's record (one `write` of one line).
    pub fn append(&self, project: &Path) -> Result<(), RecordsError> {
        let path = project.join(layout::RUNS);
        let mut line = serde_json::to_string(self).unwrap_or_default();
        line.push('\n');
        let (root, rel) = layout::split(&path);
        crate::beneath::Beneath::new(root)
            .append(&rel, line.as_bytes())
            .map_err(io(&path))
    }
}

/// The project's runs, oldest first; lines that are not a run are passed over.
pub fn load(project: &Path) -> Vec<RunRecord> {
    read_optional(&project.join(layout::RUNS))
        .ok()
        .flatten()
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_appended_and_read_back_past_a_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let one = RunRecord {
            started_ms: 1_000,
            ended_ms: 5_000,
            complete_sweep_ms: 700,
            pause_ms: 300,
            killed: false,
        };
        one.append(dir.path()).unwrap();
        let path = dir.path().join(layout::RUNS);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("garbage\n");
        std::fs::write(&path, text).unwrap();
        let two = RunRecord {
            started_ms: 6_000,
            ended_ms: 7_000,
            ..RunRecord::default()
        };
        two.append(dir.path()).unwrap();
        let runs = load(dir.path());
        assert_eq!(runs, vec![one.clone(), two]);
        assert_eq!(one.wall_ms(), 4_000);
        assert!(one.holds(1_000) && one.holds(5_000) && !one.holds(5_001));
    }

    #[test]
    fn a_killed_runs_line_spans_the_sessions_no_run_holds() {
        let runs = vec![RunRecord {
            started_ms: 1_000,
            ended_ms: 5_000,
            ..RunRecord::default()
        }];
        assert_eq!(killed_run(&runs, &[(1_500, 2_000), (3_000, 4_000)]), None);
        let k = killed_run(&runs, &[(1_500, 2_000), (6_000, 7_000), (8_000, 9_500)]).unwrap();
        assert_eq!((k.started_ms, k.ended_ms, k.killed), (6_000, 9_500, true));
    }
}
