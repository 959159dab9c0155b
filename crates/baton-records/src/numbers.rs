//! Session numbers ([`crate::layout::LAST_SESSION`]): the records hand each one
//! out once, in order, and keep the highest before a session with it starts, so
//! no two sessions of a project share one: a run's, their verifiers', a
//! parallel run's agents' (whose transcripts live in their working copies until
//! they are settled), a planner's, `baton exec`'s.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::{RecordsError, State, layout, read_optional, write_atomic};

/// A project's session numbers. Clones share one count: a parallel run's
/// agents, in threads of one process, take from the same.
#[derive(Debug, Clone)]
pub struct SessionNumbers {
    file: PathBuf,
    last: Arc<Mutex<u32>>,
}

impl SessionNumbers {
    /// The numbers of `project`. A project whose record predates this one
    /// counts from what is there: its sessions and the one under way on record,
    /// and the transcripts in it and in its agents' working copies.
    pub fn open(project: &Path) -> Result<Self, RecordsError> {
        let file = project.join(layout::LAST_SESSION);
        let last = match read_optional(&file)? {
            Some(text) => text.trim().parse().map_err(|e| RecordsError::Parse {
                path: file.clone(),
                what: "session number record",
                message: format!("{e}"),
            })?,
            None => found(project)?,
        };
        Ok(Self {
            file,
            last: Arc::new(Mutex::new(last)),
        })
    }

    /// The next number, kept before it is returned.
    pub fn take(&self) -> Result<u32, RecordsError> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let n = *last + 1;
        write_atomic(&self.file, &format!("{n}\n"))?;
        *last = n;
        Ok(n)
    }

    /// `n` is taken, whoever took it (a transcript numbered past a file in the
    /// way): later numbers are higher.
    pub fn saw(&self, n: u32) -> Result<(), RecordsError> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if n > *last {
            write_atomic(&self.file, &format!("{n}\n"))?;
            *last = n;
        }
        Ok(())
    }

    /// The highest number handed out so far (0 before any).
    pub fn last(&self) -> u32 {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The highest session number a project shows without the record.
fn found(project: &Path) -> Result<u32, RecordsError> {
    let state = State::load(project)?;
    let recorded = state
        .sessions
        .iter()
        .map(|s| s.number.max(s.gates.verifier_session.unwrap_or(0)))
        .chain(state.in_progress.iter().map(|ip| ip.number))
        .max()
        .unwrap_or(0);
    let copies = layout::agent_copies(project).into_iter().map(|(_, d)| d);
    let transcripts = std::iter::once(project.to_path_buf())
        .chain(copies)
        .filter_map(|d| highest_transcript(&d))
        .max()
        .unwrap_or(0);
    Ok(recorded.max(transcripts))
}

/// The highest `NNNN` of `dir`'s `.baton/sessions/NNNN.jsonl`.
fn highest_transcript(dir: &Path) -> Option<u32> {
    std::fs::read_dir(dir.join(layout::SESSIONS))
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".jsonl")?.parse().ok())
        .max()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_handed_out_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let n = SessionNumbers::open(dir.path()).unwrap();
        assert_eq!(n.last(), 0);
        let shared = n.clone();
        assert_eq!((n.take().unwrap(), shared.take().unwrap()), (1, 2));
        n.saw(1).unwrap();
        n.saw(5).unwrap();
        assert_eq!(SessionNumbers::open(dir.path()).unwrap().take().unwrap(), 6);
        assert_eq!(n.last(), 5, "a second opening counts on its own");
        std::fs::write(dir.path().join(layout::LAST_SESSION), "six\n").unwrap();
        let bad = SessionNumbers::open(dir.path()).unwrap_err().to_string();
        assert!(
            bad.contains("last-session") && bad.contains("not a baton"),
            "{bad}"
        );
    }

    #[test]
    fn a_project_without_the_record_counts_from_what_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let mut state = State::default();
        let mut r = crate::SessionRecord::new(
            3,
            crate::SessionKind::Coding,
            crate::SessionOutcome::Completed,
        );
        r.gates.verifier_session = Some(4);
        state.sessions.push(r);
        state.save(p).unwrap();
        assert_eq!(SessionNumbers::open(p).unwrap().last(), 4);
        std::fs::create_dir_all(p.join(layout::SESSIONS)).unwrap();
        std::fs::write(p.join(layout::transcript(6)), "").unwrap();
        assert_eq!(SessionNumbers::open(p).unwrap().last(), 6);
        let copy = p.join(layout::agent(2));
        std::fs::create_dir_all(copy.join(layout::SESSIONS)).unwrap();
        std::fs::write(copy.join(layout::transcript(9)), "").unwrap();
        let n = SessionNumbers::open(p).unwrap();
        assert_eq!(n.take().unwrap(), 10);
        // From then on the record counts, whatever else is there.
        std::fs::write(p.join(layout::transcript(40)), "").unwrap();
        assert_eq!(SessionNumbers::open(p).unwrap().last(), 10);
    }
}
