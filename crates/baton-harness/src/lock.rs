//! One run per project: an exclusive lock on `.baton/run.lock`, held by `baton run`
//! (and by anything else that writes the records, such as `baton unblock`) for as
//! long as it works on the project. The kernel releases it when the holder exits,
//! however it exits, so a crashed run never leaves a project locked; the next holder
//! says it took over. Reading commands (`status`, `log`, `report`) take no lock.

use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

use crate::error::{HarnessError, io};

/// The lock file, relative to the project.
pub const LOCK_FILE: &str = baton_records::layout::LOCK;

/// A held project lock; released when dropped.
#[derive(Debug)]
pub struct ProjectLock {
    _file: File,
    /// What the previous holder wrote, when it ended without releasing the file's
    /// record (a crash or `kill -9`): for a note to people.
    pub took_over: Option<String>,
}

/// Who holds (or last held) a lock, as its file says: `pid N, started T, baton run`.
fn holder(text: &str) -> String {
    let mut pid = "?";
    let mut started: Option<u64> = None;
    let mut what = "a baton command";
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("pid ") {
            pid = v.trim();
        } else if let Some(v) = line.strip_prefix("started_ms ") {
            started = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("command ") {
            what = v.trim();
        }
    }
    let when = started.map_or_else(String::new, |ms| {
        let ago = baton_agent::transcript::now_ms().saturating_sub(ms) / 1000;
        format!(
            ", started {} ago",
            baton_records::human::wait(std::time::Duration::from_secs(ago))
        )
    });
    format!("{what} (pid {pid}{when})")
}

impl ProjectLock {
    /// Take the lock of `project` for `command` (e.g. `baton run`), or fail at once
    /// naming the holder.
    pub fn acquire(project: &Path, command: &str) -> Result<Self, HarnessError> {
        let path: PathBuf = project.join(LOCK_FILE);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let mut file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io(&path))?;
        let mut previous = String::new();
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let _ = file.read_to_string(&mut previous);
                return Err(HarnessError::Locked {
                    path,
                    holder: holder(&previous),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(&path)(e)),
        }
        let _ = file.read_to_string(&mut previous);
        let took_over = previous
            .lines()
            .any(|l| l.starts_with("pid "))
            .then(|| holder(&previous));
        let record = format!(
            "pid {}\nstarted_ms {}\ncommand {command}\n",
            std::process::id(),
            baton_agent::transcript::now_ms()
        );
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(record.as_bytes()))
            .map_err(io(&path))?;
        Ok(Self {
            _file: file,
            took_over,
        })
    }

    /// Release the lock and clear the holder's record (a clean end). Dropping the
    /// lock without this (a crash) keeps the record for the next holder's note.
    pub fn release(self) {
        let _ = self._file.set_len(0);
    }
}

/// Whether a baton command holds `project`'s lock now, as the lock's record says:
/// it names a process that is alive. For readers (the dashboard), which must not
/// take the lock even for a moment: a run starting then would be refused.
pub fn held(project: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(project.join(LOCK_FILE)) else {
        return false;
    };
    text.lines()
        .find_map(|l| l.strip_prefix("pid "))
        .and_then(|p| p.trim().parse::<u32>().ok())
        .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists())
}

/// After taking over from a run that ended without releasing the project's
/// lock: remove the lock files of git's its git processes held when they died
/// with it (see `git::remove_stale_locks`). What was removed, relative to `dir`.
pub fn remove_stale_git_locks(dir: &std::path::Path) -> Vec<String> {
    crate::git::remove_stale_locks(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry(mut f: impl FnMut() -> Result<ProjectLock, HarnessError>) -> ProjectLock {
        for _ in 0..50 {
            if let Ok(l) = f() {
                return l;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        f().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_second_holder_is_refused_with_the_first_named_and_a_release_frees_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let first = ProjectLock::acquire(dir.path(), "baton run").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.took_over, None);
        let err = ProjectLock::acquire(dir.path(), "baton unblock")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains(&format!("baton run (pid {}", std::process::id())),
            "{err}"
        );
        first.release();
        // (A process another test forks at that moment holds the file until it execs.)
        let again = retry(|| ProjectLock::acquire(dir.path(), "baton run"));
        assert_eq!(again.took_over, None, "a clean release leaves no record");
        // Dropped without release (as by a crash): the next holder takes over.
        drop(again);
        let next = retry(|| ProjectLock::acquire(dir.path(), "baton run"));
        assert!(
            next.took_over
                .as_deref()
                .is_some_and(|h| h.starts_with("baton run (pid ")),
            "{:?}",
            next.took_over
        );
    }
}
