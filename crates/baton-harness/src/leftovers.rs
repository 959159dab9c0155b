//! What baton's leftover commit takes and what it leaves out. A session that ends
//! with uncommitted work gets it committed under a labelled commit, so nothing is
//! lost; but dependencies, caches, logs, pid files, local databases, build output
//! the project does not track and very large files are junk in a repository, so
//! they stay where they are, untracked, and the gate records what it left out.

use std::collections::BTreeMap;
use std::path::Path;

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Untracked files bigger than this are left out of the leftover commit.
pub const MAX_BYTES: u64 = 5 * 1024 * 1024;

/// Directories that are never the project's own work, wherever they are.
const JUNK_DIRS: &[&str] = &[
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".next",
    ".nuxt",
    ".svelte-kit",
    ".parcel-cache",
    ".turbo",
    ".cache",
    ".gradle",
    "coverage",
    ".nyc_output",
    // Build output, when the project does not track it (only untracked paths
    // are judged here).
    "dist",
    "build",
    "target",
    "out",
];

/// File names that are never the project's own work.
const JUNK_FILES: &[&str] = &[
    "*.log",
    "*.pid",
    "*.pyc",
    "*.pyo",
    "*.swp",
    "*.tmp",
    ".DS_Store",
    "nohup.out",
    // Local databases and their journals: data, not code.
    "*.db",
    "*.sqlite",
    "*.sqlite3",
    "*.db-journal",
    "*.db-wal",
    "*.db-shm",
    "*.sqlite-journal",
    "*.sqlite3-journal",
];

/// One path `git status` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirty {
    /// Relative to the project.
    pub path: String,
    /// Not tracked by git (new), as opposed to a change to a tracked file.
    pub untracked: bool,
}

/// The leftover commit's decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// Paths to commit.
    pub keep: Vec<String>,
    /// What is left out, each with why, for people (a junk directory once, with
    /// its number of files).
    pub left_out: Vec<String>,
}

fn file_globs() -> Option<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for pattern in JUNK_FILES {
        b.add(Glob::new(pattern).ok()?);
    }
    b.build().ok()
}

/// Split the dirty paths of the project in `dir`: changes to tracked files are
/// always kept; untracked files under a junk directory, with a junk name, or
/// bigger than [`MAX_BYTES`] are left out.
pub fn split(dir: &Path, dirty: &[Dirty]) -> Split {
    let globs = file_globs();
    let mut out = Split::default();
    let mut dirs: BTreeMap<String, usize> = BTreeMap::new();
    for d in dirty {
        if !d.untracked {
            out.keep.push(d.path.clone());
            continue;
        }
        let parts: Vec<&str> = d.path.split('/').collect();
        let (dirs_only, name) = parts.split_at(parts.len().saturating_sub(1));
        if let Some(at) = dirs_only.iter().position(|p| JUNK_DIRS.contains(p)) {
            *dirs
                .entry(format!("{}/", parts[..=at].join("/")))
                .or_default() += 1;
            continue;
        }
        let name = name.first().copied().unwrap_or_default();
        if globs.as_ref().is_some_and(|g| g.is_match(name)) {
            out.left_out
                .push(format!("{} (junk: not committed)", d.path));
            continue;
        }
        match std::fs::symlink_metadata(dir.join(&d.path)) {
            Ok(m) if m.is_file() && m.len() > MAX_BYTES => out.left_out.push(format!(
                "{} ({} MB, over the {} MB limit for files baton commits)",
                d.path,
                m.len() / (1024 * 1024),
                MAX_BYTES / (1024 * 1024)
            )),
            _ => out.keep.push(d.path.clone()),
        }
    }
    for (d, n) in dirs {
        out.left_out.insert(
            0,
            format!("{d} ({n} file(s); dependencies, caches or build output)"),
        );
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn dirty(path: &str, untracked: bool) -> Dirty {
        Dirty {
            path: path.into(),
            untracked,
        }
    }

    #[test]
    fn junk_is_left_out_and_the_work_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("big.bin"),
            vec![0u8; (MAX_BYTES + 1) as usize],
        )
        .unwrap();
        std::fs::write(dir.path().join("small.bin"), b"x").unwrap();
        let s = split(
            dir.path(),
            &[
                dirty("src/app.js", true),
                dirty("node_modules/a/index.js", true),
                dirty("node_modules/b/index.js", true),
                dirty("web/node_modules/c.js", true),
                dirty("server.log", true),
                dirty("logs/dev.log", true),
                dirty("server.pid", true),
                dirty("data/app.db", true),
                dirty("app/__pycache__/m.cpython-311.pyc", true),
                dirty("big.bin", true),
                dirty("small.bin", true),
                // A tracked file is the project's, whatever its name.
                dirty("dist/bundle.js", false),
                dirty("fixtures/seed.db", false),
            ],
        );
        assert_eq!(
            s.keep,
            vec![
                "src/app.js",
                "small.bin",
                "dist/bundle.js",
                "fixtures/seed.db"
            ]
        );
        assert_eq!(s.left_out.len(), 8, "{:?}", s.left_out);
        assert!(
            s.left_out
                .iter()
                .any(|l| l.starts_with("node_modules/ (2 file(s)"))
        );
        assert!(
            s.left_out
                .iter()
                .any(|l| l.starts_with("web/node_modules/ (1 file(s)"))
        );
        assert!(
            s.left_out
                .iter()
                .any(|l| l.starts_with("big.bin (5 MB, over"))
        );
        assert!(s.left_out.iter().any(|l| l.starts_with("data/app.db")));
    }
}
