//! The trust boundary between the agent and baton's own unsandboxed work.
//!
//! baton runs `git` (and reads `baton.toml`) with the user's full rights, in a
//! directory the agent writes to. Files there that make git run programs (the
//! repository's config, its hooks, `info/attributes`, `commondir`…) or that set
//! baton's own rules (`baton.toml`) are therefore baton's, not the agent's: a
//! [`Snapshot`] of them is taken in baton's memory when a run starts, and
//! [`Snapshot::restore`] is called before any git command of the gates. Whatever
//! changed is put back as it was and reported, to be recorded like a feature-list
//! violation. Where bubblewrap is available the sandbox also binds these paths
//! read-only (`baton_policy::sandbox`), so the check finds nothing to undo.
//!
//! The snapshot is also saved in baton's state dir, outside the project and out of
//! the sandbox's reach ([`saved_path`]), and removed when a run ends. A run that
//! finds one was preceded by a run that did not end cleanly (killed, crashed): it
//! first puts git's guarded files back as that run found them
//! ([`Snapshot::restore_git`]), so a hook planted just before a crash never
//! outlives it to run in the user's own `git commit`. `baton.toml` is left as it is
//! then: the user may have edited it since, and it was loaded already.
//!
//! A run takes a [`Snapshot`] before each session and calls
//! [`Snapshot::restore`] after it: what it returns is what the session changed
//! and baton put back.

use baton_records::RecordsError;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::error::{HarnessError, io};

/// Files of the git directory that baton guards, relative to it (directories are
/// guarded with everything under them).
pub const GIT_GUARDED: &[&str] = &["config", "config.worktree", "commondir", "hooks", "info"];

/// Files of the project that baton guards, relative to it.
pub const PROJECT_GUARDED: &[&str] = &[baton_config::CONFIG_FILE];

/// One guarded file as it was: its bytes and permission bits, or a directory.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Entry {
    File { bytes: Vec<u8>, mode: u32 },
    Dir,
}

/// The guarded files of a project as they were when the run started.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    project: PathBuf,
    /// Guarded roots (absolute).
    roots: Vec<PathBuf>,
    /// Every entry under the roots that existed (absolute path → entry).
    entries: BTreeMap<PathBuf, Entry>,
    /// Whether `project/.git` was a directory (not a project inside another
    /// repository, or a worktree's `.git` file).
    git_dir: bool,
}

impl Snapshot {
    /// Record the guarded files of `project`: those of its git directory (and of the
    /// common one of a worktree, as git names them; `project/.git` when git cannot
    /// say) and its `baton.toml`.
    pub fn take(project: &Path) -> Result<Self, HarnessError> {
        let git_dir = project.join(".git");
        let mut dirs = vec![git_dir.canonicalize().unwrap_or_else(|_| git_dir.clone())];
        // The git directory and the common one, one line each.
        let named = crate::git::git(
            project,
            &["rev-parse", "--absolute-git-dir", "--git-common-dir"],
        )
        .unwrap_or_default();
        for line in named.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let d = PathBuf::from(line);
            let d = if d.is_absolute() { d } else { project.join(d) };
            let d = d.canonicalize().unwrap_or(d);
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
        let mut roots: Vec<PathBuf> = Vec::new();
        for d in &dirs {
            for g in GIT_GUARDED {
                let r = d.join(g);
                if !roots.contains(&r) {
                    roots.push(r);
                }
            }
        }
        roots.extend(PROJECT_GUARDED.iter().map(|p| project.join(p)));
        let mut entries = BTreeMap::new();
        for r in &roots {
            collect(r, &mut entries)?;
        }
        let git_dir = std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_dir());
        Ok(Self {
            project: project.to_path_buf(),
            roots,
            entries,
            git_dir,
        })
    }

    /// Save the snapshot to `path` (written whole, then renamed into place).
    pub fn save(&self, path: &Path) -> Result<(), HarnessError> {
        let text = serde_json::to_string(self).map_err(|e| RecordsError::Parse {
            path: path.to_path_buf(),
            what: "boundary snapshot",
            message: e.to_string(),
        })?;
        Ok(baton_records::write_atomic(path, &text)?)
    }

    /// The snapshot saved at `path` by a run of `project` that did not end cleanly,
    /// if there is one. One that cannot be read is an error naming the file.
    pub fn load(path: &Path, project: &Path) -> Result<Option<Self>, HarnessError> {
        let text = match std::fs::read(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(path)(e)),
        };
        let snap: Self = serde_json::from_slice(&text).map_err(|e| RecordsError::Parse {
            path: path.to_path_buf(),
            what: "boundary snapshot (the record of git's guarded files from a run that did not end cleanly)",
            message: e.to_string(),
        })?;
        Ok((snap.project == project).then_some(snap))
    }

    /// [`Self::restore`] limited to git's guarded files (`baton.toml` is left as it
    /// is): for a snapshot saved by a run that did not end cleanly.
    pub fn restore_git(&self) -> Result<Vec<String>, HarnessError> {
        let project_files: Vec<PathBuf> = PROJECT_GUARDED
            .iter()
            .map(|p| self.project.join(p))
            .collect();
        let mut git = self.clone();
        git.roots.retain(|r| !project_files.contains(r));
        git.entries
            .retain(|p, _| !project_files.iter().any(|f| p.starts_with(f)));
        git.restore()
    }

    /// The paths that differ from the snapshot now (changed, added, removed), for
    /// messages, relative to the project.
    pub fn changes(&self) -> Result<Vec<String>, HarnessError> {
        let git_dir = self.project.join(".git");
        let meta = std::fs::symlink_metadata(&git_dir);
        if self.git_dir && !meta.is_ok_and(|m| m.is_dir()) {
            return Err(HarnessError::Input(format!(
                "{} is no longer a directory: something in the session replaced the repository; baton runs no git command there",
                git_dir.display()
            )));
        }
        let mut now = BTreeMap::new();
        for r in &self.roots {
            collect(r, &mut now)?;
        }
        let mut changed: Vec<String> = Vec::new();
        for (p, e) in &self.entries {
            match now.get(p) {
                Some(n) if n == e => {}
                Some(_) => changed.push(format!("{} was changed", self.rel(p))),
                None => changed.push(format!("{} was removed", self.rel(p))),
            }
        }
        for p in now.keys() {
            if !self.entries.contains_key(p) {
                changed.push(format!("{} was added", self.rel(p)));
            }
        }
        Ok(changed)
    }

    /// Put every guarded file back as it was; returns what had changed (empty when
    /// nothing did). Symlinks planted in place of a guarded file are removed, never
    /// followed.
    pub fn restore(&self) -> Result<Vec<String>, HarnessError> {
        let changed = self.changes()?;
        if changed.is_empty() {
            return Ok(changed);
        }
        for r in &self.roots {
            let mut now = BTreeMap::new();
            collect(r, &mut now)?;
            // Remove what is new or of another kind, deepest first.
            for (p, e) in now.iter().rev() {
                let keep = matches!(
                    (self.entries.get(p), e),
                    (Some(Entry::Dir), Entry::Dir) | (Some(Entry::File { .. }), Entry::File { .. })
                );
                if !keep {
                    remove(p)?;
                }
            }
            // Anything that is not a plain file or directory (a symlink, a fifo).
            if let Ok(m) = std::fs::symlink_metadata(r)
                && !m.is_dir()
                && !m.is_file()
            {
                remove(r)?;
            }
        }
        for (p, e) in &self.entries {
            match e {
                Entry::Dir => {
                    std::fs::create_dir_all(p).map_err(io(p))?;
                }
                Entry::File { bytes, mode } => {
                    let same = std::fs::read(p).is_ok_and(|b| &b == bytes)
                        && std::fs::symlink_metadata(p)
                            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o7777 == *mode);
                    if !same {
                        if std::fs::symlink_metadata(p).is_ok() {
                            remove(p)?;
                        }
                        std::fs::write(p, bytes).map_err(io(p))?;
                        std::fs::set_permissions(p, std::fs::Permissions::from_mode(*mode))
                            .map_err(io(p))?;
                    }
                }
            }
        }
        Ok(changed)
    }

    fn rel(&self, p: &Path) -> String {
        let project = self
            .project
            .canonicalize()
            .unwrap_or_else(|_| self.project.clone());
        p.strip_prefix(&self.project)
            .or_else(|_| p.strip_prefix(&project))
            .unwrap_or(p)
            .display()
            .to_string()
    }
}

/// Where a run keeps its snapshot while it runs: baton's state dir for `project`.
pub fn saved_path(project: &Path) -> PathBuf {
    baton_config::state_dir(project).join("boundary.json")
}

/// Every plain file and directory at and under `p`; a symlink or other special file
/// is recorded as an empty file of mode 0 so that it always differs.
fn collect(p: &Path, out: &mut BTreeMap<PathBuf, Entry>) -> Result<(), HarnessError> {
    let meta = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(p)(e)),
    };
    if meta.is_dir() {
        out.insert(p.to_path_buf(), Entry::Dir);
        let rd = std::fs::read_dir(p).map_err(io(p))?;
        for e in rd {
            let e = e.map_err(io(p))?;
            collect(&e.path(), out)?;
        }
    } else if meta.is_file() {
        let bytes = std::fs::read(p).map_err(io(p))?;
        out.insert(
            p.to_path_buf(),
            Entry::File {
                bytes,
                mode: meta.permissions().mode() & 0o7777,
            },
        );
    } else {
        out.insert(
            p.to_path_buf(),
            Entry::File {
                bytes: b"\0special".to_vec(),
                mode: u32::MAX,
            },
        );
    }
    Ok(())
}

fn remove(p: &Path) -> Result<(), HarnessError> {
    let meta = match std::fs::symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io(p)(e)),
    };
    if meta.is_dir() {
        std::fs::remove_dir_all(p).map_err(io(p))
    } else {
        std::fs::remove_file(p).map_err(io(p))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn planted_hooks_config_and_symlinks_are_undone() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        std::fs::create_dir_all(p.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(p.join(".git/info")).unwrap();
        std::fs::write(p.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(p.join(".git/info/exclude"), ".baton/\n").unwrap();
        std::fs::write(p.join("baton.toml"), "[policy]\n").unwrap();
        let snap = Snapshot::take(p).unwrap();
        assert!(snap.restore().unwrap().is_empty());

        std::fs::write(p.join(".git/hooks/post-commit"), "#!/bin/sh\ntouch /x\n").unwrap();
        std::fs::write(p.join(".git/config"), "[core]\nfsmonitor = /x\n").unwrap();
        std::fs::remove_file(p.join("baton.toml")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", p.join("baton.toml")).unwrap();
        std::fs::write(p.join(".git/commondir"), "/tmp/evil\n").unwrap();
        std::fs::remove_file(p.join(".git/info/exclude")).unwrap();
        let undone = snap.restore().unwrap();
        assert_eq!(
            undone,
            [
                ".git/config was changed",
                ".git/info/exclude was removed",
                "baton.toml was changed",
                ".git/commondir was added",
                ".git/hooks/post-commit was added",
            ]
        );
        assert!(!p.join(".git/hooks/post-commit").exists());
        assert!(!p.join(".git/commondir").exists());
        assert_eq!(
            std::fs::read_to_string(p.join(".git/config")).unwrap(),
            "[core]\n"
        );
        assert_eq!(
            std::fs::read_to_string(p.join("baton.toml")).unwrap(),
            "[policy]\n"
        );
        assert!(
            !std::fs::symlink_metadata(p.join("baton.toml"))
                .unwrap()
                .is_symlink()
        );
        assert!(snap.changes().unwrap().is_empty());
    }

    #[test]
    fn a_saved_snapshot_restores_gits_files_but_leaves_baton_toml() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path();
        std::fs::create_dir_all(p.join(".git/hooks")).unwrap();
        std::fs::write(p.join(".git/config"), "[core]\n").unwrap();
        std::fs::write(p.join("baton.toml"), "[policy]\n").unwrap();
        let saved = p.join("state/boundary.json");
        Snapshot::take(p).unwrap().save(&saved).unwrap();
        // The run is killed; a hook was planted, and the user edits baton.toml.
        std::fs::write(p.join(".git/hooks/pre-commit"), "#!/bin/sh\ntouch /x\n").unwrap();
        std::fs::write(p.join("baton.toml"), "[run]\nmax_sessions = 3\n").unwrap();
        let old = Snapshot::load(&saved, p).unwrap().unwrap();
        assert_eq!(
            old.restore_git().unwrap(),
            [".git/hooks/pre-commit was added"]
        );
        assert!(!p.join(".git/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_to_string(p.join("baton.toml")).unwrap(),
            "[run]\nmax_sessions = 3\n"
        );
        // Another project's snapshot is not this one's; a damaged one is an error.
        assert!(
            Snapshot::load(&saved, Path::new("/elsewhere"))
                .unwrap()
                .is_none()
        );
        std::fs::write(&saved, "{").unwrap();
        let e = Snapshot::load(&saved, p).unwrap_err().to_string();
        assert!(e.contains("boundary.json"), "{e}");
        assert!(Snapshot::load(&p.join("none.json"), p).unwrap().is_none());
    }
}
