//! One line a `baton run` of one agent ([`crate::layout::RUNS`]): when it started
//! and ended, and the time it spent outside every session's own clock that
//! baton measured (the sweep before "complete"). With the sessions' timing it
//! says where a run's wall time went; what is left is baton's own work between
//! sessions (briefs, git, records, pauses).

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
        };
        one.append(dir.path()).unwrap();
        let path = dir.path().join(layout::RUNS);
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("garbage\n");
        std::fs::write(&path, text).unwrap();
        let two = RunRecord {
            started_ms: 6_000,
            ended_ms: 7_000,
            complete_sweep_ms: 0,
        };
        two.append(dir.path()).unwrap();
        let runs = load(dir.path());
        assert_eq!(runs, vec![one.clone(), two]);
        assert_eq!(one.wall_ms(), 4_000);
        assert!(one.holds(1_000) && one.holds(5_000) && !one.holds(5_001));
    }
}
