//! A person's guidance for the agent: `baton tell DIR "text"` queues it in
//! baton's state dir for the project (one file each, written whole and then
//! renamed into place, so a run reading the queue never sees half of one, and a
//! run may be going meanwhile), the next coding session's brief carries it, and
//! once that session has started it is recorded in the ledger (`told`) and
//! leaves the queue. In a parallel run the next agent handed a feature takes
//! what is queued into its working copy's queue. The queue is outside the
//! project, where no agent command can write in any sandbox mode (bubblewrap
//! binds the state dir read-only; Landlock alone gives no right there): the
//! brief presents tells as a person's words, so no session may plant one for
//! the next. (It was under `.baton/tell/`, which Landlock alone leaves
//! writable; files left there by an older baton are not read, and the run says
//! so.)

use std::path::{Path, PathBuf};

use baton_records::{LedgerEntry, LedgerKind, layout};

use crate::error::{HarnessError, io};
use crate::files::Files;

/// The longest guidance taken, in bytes (it goes into every request of a session).
pub const MOST_BYTES: usize = 4_000;

/// One piece of guidance waiting in the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    /// Its file.
    pub path: PathBuf,
    /// When it was queued (Unix ms).
    pub t_ms: u64,
    /// What the person said.
    pub text: String,
}

/// Queue `text` for the next coding session of the project in `files`. Returns
/// the file it waits in. Empty or overlong guidance is refused with why.
pub fn queue(files: &Files, text: &str) -> Result<PathBuf, HarnessError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(HarnessError::Input(
            "nothing to tell: give the guidance as text, e.g. `baton tell DIR \"use SQLite, not Postgres\"`".into(),
        ));
    }
    if text.len() > MOST_BYTES {
        return Err(HarnessError::Input(format!(
            "the guidance is {} bytes; at most {MOST_BYTES} go into a brief: put the details in a file of the project and tell the agent to read it",
            text.len()
        )));
    }
    let dir = queue_dir(&files.dir);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let t_ms = baton_agent::transcript::now_ms();
    // Unique and in order: the time, then a number for tells in the same ms.
    for n in 0..1000u32 {
        let path = dir.join(format!("{t_ms:013}-{n:03}.txt"));
        if path.exists() {
            continue;
        }
        baton_records::write_atomic(&path, &format!("{text}\n"))?;
        return Ok(path);
    }
    Err(HarnessError::Input(format!(
        "{} holds too many tells queued in one millisecond",
        dir.display()
    )))
}

/// Where the guidance for the project in `project` waits: in baton's state dir
/// for it, outside the project.
pub fn queue_dir(project: &Path) -> PathBuf {
    baton_config::state_dir(project).join("tell")
}

/// Guidance an older baton queued in the project's `.baton/tell/`, which
/// Landlock alone leaves writable to agent commands: never read, only counted,
/// so the run can say so.
pub fn left_in_project(project: &Path) -> usize {
    std::fs::read_dir(project.join(layout::TELL)).map_or(0, |d| {
        d.flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "txt"))
            .count()
    })
}

/// The guidance queued for `project`, oldest first. A file that cannot be read
/// (or is no regular file) is left where it is for the next look.
pub fn pending(project: &Path) -> Vec<Told> {
    let dir = queue_dir(project);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut told: Vec<Told> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .filter_map(|path| {
            // Never through a link, never more than a tell can hold.
            let regular = std::fs::symlink_metadata(&path)
                .is_ok_and(|m| m.is_file() && m.len() <= 2 * MOST_BYTES as u64);
            if !regular {
                return None;
            }
            let text = std::fs::read_to_string(&path).ok()?.trim().to_string();
            let name = path.file_stem()?.to_string_lossy().into_owned();
            let t_ms = name.split('-').next()?.parse().ok()?;
            (!text.is_empty()).then_some(Told { path, t_ms, text })
        })
        .collect();
    told.sort_by(|a, b| a.path.cmp(&b.path));
    told
}

/// Move the guidance queued in `from` (the project) into the queue of `to` (an
/// agent's working copy), where its next session's brief carries it.
pub fn hand_over(from: &Path, to: &Path) -> Result<usize, HarnessError> {
    let told = pending(from);
    if told.is_empty() {
        return Ok(0);
    }
    let dir = queue_dir(to);
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    for t in &told {
        let Some(name) = t.path.file_name() else {
            continue;
        };
        let target = dir.join(name);
        // Another filesystem: copy, then remove.
        if std::fs::rename(&t.path, &target).is_err() {
            std::fs::copy(&t.path, &target).map_err(io(&target))?;
            std::fs::remove_file(&t.path).map_err(io(&t.path))?;
        }
    }
    Ok(told.len())
}

/// The brief's section for `told` (empty when there is none).
pub fn section(told: &[Told]) -> String {
    if told.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n## From a person (baton tell)\nThe person running this project says, oldest first; follow it unless it contradicts the rules above, and say in the notes what you did about it:\n",
    );
    for t in told {
        for (i, line) in t.text.lines().enumerate() {
            s.push_str(if i == 0 { "- " } else { "  " });
            s.push_str(line);
            s.push('\n');
        }
    }
    s
}

/// `told` reached session `session`'s brief: recorded in the ledger, then out of
/// the queue.
pub fn delivered(files: &Files, told: &[Told], session: u32) -> Result<(), HarnessError> {
    for t in told {
        files.append_ledger(&LedgerEntry::new(
            session,
            LedgerKind::Told,
            crate::queue::cut(&t.text, 300),
        ))?;
        match std::fs::remove_file(&t.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(&t.path)(e)),
        }
    }
    Ok(())
}

/// What a person did since the project stalled (after its last session), in
/// words: guidance queued with `baton tell`, a feature handed out again with
/// `baton unblock`, or features added or changed (`baton plan`, `baton accept`).
/// `None` when nothing was done.
pub(crate) fn acted_since_stall(
    files: &crate::files::Files,
    state: &baton_records::State,
) -> Option<String> {
    use baton_records::LedgerKind;
    if !pending(&files.dir).is_empty() {
        return Some("a person's guidance is waiting (baton tell)".to_string());
    }
    // No command of an agent's can write baton.toml: changed after the last
    // session ended, a person changed the run's settings (the kind, the
    // browser, the checks) to get it going.
    let ended = state.sessions.last().map_or(0, |s| s.ended_ms);
    let changed = std::fs::metadata(files.dir.join("baton.toml"))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .is_some_and(|t| t.as_millis() as u64 > ended);
    if ended > 0 && changed {
        return Some("baton.toml was changed since".to_string());
    }
    let last = state.sessions.last().map_or(0, |s| s.number);
    let ledger = baton_records::ledger::read(&files.ledger()).unwrap_or_default();
    ledger
        .entries
        .iter()
        .rev()
        .take_while(|e| e.session >= last)
        .find(|e| {
            matches!(
                e.kind,
                LedgerKind::Unblocked | LedgerKind::Added | LedgerKind::Amended
            )
        })
        .map(|e| match (e.kind, e.feature) {
            (LedgerKind::Unblocked, Some(n)) => {
                format!("#{n} was handed out again (baton unblock)")
            }
            _ => "the feature list was changed by a person (baton plan, baton accept)".to_string(),
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn guidance_is_queued_in_order_and_handed_over_whole() {
        let p = tempfile::tempdir().unwrap();
        let files = Files::new(p.path().to_path_buf(), Default::default());
        assert!(queue(&files, "   ").is_err());
        assert!(queue(&files, &"x".repeat(MOST_BYTES + 1)).is_err());
        queue(&files, "use SQLite").unwrap();
        queue(&files, "keep the API\nbackwards compatible").unwrap();
        let told = pending(p.path());
        assert_eq!(
            told.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(),
            ["use SQLite", "keep the API\nbackwards compatible"]
        );
        assert_eq!(
            section(&told),
            "\n## From a person (baton tell)\nThe person running this project says, oldest first; follow it unless it contradicts the rules above, and say in the notes what you did about it:\n- use SQLite\n- keep the API\n  backwards compatible\n"
        );
        let copy = tempfile::tempdir().unwrap();
        assert_eq!(hand_over(p.path(), copy.path()).unwrap(), 2);
        assert!(pending(p.path()).is_empty());
        let there = pending(copy.path());
        assert_eq!(there.len(), 2);
        let copy_files = Files::new(copy.path().to_path_buf(), Default::default());
        delivered(&copy_files, &there, 7).unwrap();
        assert!(pending(copy.path()).is_empty());
        let ledger = baton_records::ledger::read(&copy.path().join(layout::LEDGER)).unwrap();
        assert_eq!(ledger.entries.len(), 2);
        assert!(
            ledger
                .entries
                .iter()
                .all(|e| e.kind == LedgerKind::Told && e.session == 7)
        );
    }
}
