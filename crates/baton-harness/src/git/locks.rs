//! Git's lock files that a killed run left behind.
//!
//! A git process that is killed while it writes (with the run that started it:
//! baton's git jails die with their parent) leaves its lock file, and every
//! later git command that writes there fails ("Unable to create
//! '…/index.lock': File exists"), the agent's commits included. A run that
//! takes over from one that ended without releasing the project's lock removes
//! them: that run's git processes died with it, so none of these is held.

use std::path::{Path, PathBuf};

/// Lock files git keeps at the top of a git directory (and of a linked
/// worktree's).
const TOP: [&str; 7] = [
    "index.lock",
    "HEAD.lock",
    "ORIG_HEAD.lock",
    "FETCH_HEAD.lock",
    "packed-refs.lock",
    "config.lock",
    "shallow.lock",
];

/// How deep `refs/` is walked, and how many entries at most: a ref namespace
/// is shallow, and a planted tree must not make this slow.
const MAX_DEPTH: usize = 12;
const MAX_ENTRIES: usize = 100_000;

/// Remove git's lock files from the repositories of the project in `dir` (its
/// `.git`, its linked worktrees', the parallel agents' working copies'): only
/// after taking over from a run that ended without releasing the project's
/// lock. Links are never followed; only regular files named `*.lock` go.
/// Returns what was removed, relative to `dir`.
pub fn remove_stale_locks(dir: &Path) -> Vec<String> {
    let mut git_dirs = vec![dir.join(".git")];
    if let Ok(agents) = std::fs::read_dir(dir.join(baton_records::layout::AGENTS)) {
        git_dirs.extend(agents.flatten().map(|a| a.path().join(".git")));
    }
    let mut found = Vec::new();
    for g in git_dirs.iter().filter(|g| is_dir(g)) {
        let mut tops = vec![g.clone()];
        if let Ok(trees) = std::fs::read_dir(g.join("worktrees")) {
            tops.extend(trees.flatten().map(|t| t.path()).filter(|t| is_dir(t)));
        }
        for t in &tops {
            found.extend(TOP.iter().map(|f| t.join(f)));
        }
        let mut budget = MAX_ENTRIES;
        refs_locks(&g.join("refs"), 0, &mut budget, &mut found);
    }
    found
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .filter(|p| std::fs::remove_file(p).is_ok())
        .map(|p| p.strip_prefix(dir).unwrap_or(&p).display().to_string())
        .collect()
}

/// A directory itself, not a link to one.
fn is_dir(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
}

/// The `*.lock` files under `refs`, depth- and count-bounded.
fn refs_locks(dir: &Path, depth: usize, budget: &mut usize, out: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let Ok(kind) = e.file_type() else {
            continue;
        };
        let path = e.path();
        if kind.is_dir() {
            refs_locks(&path, depth + 1, budget, out);
        } else if kind.is_file() && path.extension().is_some_and(|x| x == "lock") {
            out.push(path);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The locks a killed `git commit` leaves go; the repository and a link
    /// planted as a lock stay as they are.
    #[test]
    fn the_locks_a_killed_git_left_are_removed_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let g = d.join(".git");
        std::fs::create_dir_all(g.join("refs/heads/feat")).unwrap();
        std::fs::create_dir_all(g.join("worktrees/integrate")).unwrap();
        std::fs::create_dir_all(d.join(".baton/agents/a1/.git/refs/heads")).unwrap();
        for f in [
            ".git/index.lock",
            ".git/HEAD.lock",
            ".git/refs/heads/feat/x.lock",
            ".git/worktrees/integrate/index.lock",
            ".baton/agents/a1/.git/refs/heads/main.lock",
            ".git/refs/heads/main",
            ".git/index",
        ] {
            std::fs::write(d.join(f), "x").unwrap();
        }
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("keep.lock");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, g.join("config.lock")).unwrap();
        let mut removed = remove_stale_locks(d);
        removed.sort();
        assert_eq!(
            removed,
            [
                ".baton/agents/a1/.git/refs/heads/main.lock",
                ".git/HEAD.lock",
                ".git/index.lock",
                ".git/refs/heads/feat/x.lock",
                ".git/worktrees/integrate/index.lock",
            ]
        );
        assert!(d.join(".git/refs/heads/main").exists());
        assert!(d.join(".git/index").exists());
        assert!(g.join("config.lock").symlink_metadata().is_ok());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }
}
