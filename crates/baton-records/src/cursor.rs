//! Where the next time-boxed regression sweep starts among the passing checks
//! ([`crate::layout::SWEEP_CURSOR`]): each sweep goes on from where the last
//! one's time ran out, so every check runs every few sessions however many
//! there are.

use std::path::Path;

use crate::{RecordsError, layout, read_optional, write_atomic};

/// The index, among the passing checks, where the next sweep starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepCursor(pub usize);

impl SweepCursor {
    /// The project's cursor: 0 when there is none yet, or when what is there
    /// cannot be read as a number (a link planted there is not followed): a
    /// sweep that starts at the first check loses nothing.
    pub fn load(project: &Path) -> Self {
        let text = read_optional(&project.join(layout::SWEEP_CURSOR))
            .ok()
            .flatten();
        Self(text.and_then(|t| t.trim().parse().ok()).unwrap_or_default())
    }

    /// Where the sweep after one that started here and ran `ran` of `all`
    /// checks starts.
    pub fn after(self, ran: usize, all: usize) -> Self {
        Self((self.0 % all.max(1) + ran) % all.max(1))
    }

    /// Keep it (a temp file, then a rename; never through a link).
    pub fn save(self, project: &Path) -> Result<(), RecordsError> {
        write_atomic(
            &project.join(layout::SWEEP_CURSOR),
            &format!("{}\n", self.0),
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_is_kept_and_goes_round() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(SweepCursor::load(dir.path()), SweepCursor(0));
        SweepCursor(3).save(dir.path()).unwrap();
        assert_eq!(SweepCursor::load(dir.path()), SweepCursor(3));
        assert_eq!(SweepCursor(3).after(2, 4), SweepCursor(1));
        assert_eq!(SweepCursor(7).after(0, 4), SweepCursor(3));
        assert_eq!(SweepCursor(0).after(0, 0), SweepCursor(0));
        std::fs::write(dir.path().join(layout::SWEEP_CURSOR), "garbage").unwrap();
        assert_eq!(SweepCursor::load(dir.path()), SweepCursor(0));
    }

    #[test]
    fn a_cursor_planted_as_a_link_is_neither_read_nor_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("bashrc");
        std::fs::write(&target, "mine\n").unwrap();
        std::fs::create_dir_all(dir.path().join(layout::DIR)).unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join(layout::SWEEP_CURSOR)).unwrap();
        assert_eq!(SweepCursor::load(dir.path()), SweepCursor(0));
        SweepCursor(2).save(dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine\n");
        assert_eq!(SweepCursor::load(dir.path()), SweepCursor(2));
    }
}
