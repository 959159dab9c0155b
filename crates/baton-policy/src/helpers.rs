//! baton's own helper programs (`bwrap`, `git`, the MCP servers' `npx`), found
//! by absolute path on a `PATH` baton trusts: no relative entry, and no
//! directory a sandboxed command can write (the project, where a virtualenv's
//! `bin`, `node_modules/.bin` or a direnv entry may stand first on the user's
//! `PATH`; the temp dirs). A `bwrap` or `git` the agent wrote there would
//! otherwise run outside the sandbox, as baton, at the next start.
//!
//! A project is distrusted as soon as baton opens it ([`distrust`], called by
//! [`crate::Policy::new`] and the commands that name a project); the working
//! directory always is.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Directories no helper is taken from, beyond the temp dirs and the working
/// directory.
static DISTRUSTED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// What [`find`] found, by name: every git command asks for `git`, and the
/// answer changes only when a directory is distrusted.
static FOUND: Mutex<Vec<(String, Option<PathBuf>)>> = Mutex::new(Vec::new());

/// Take no helper from `dir` or below it: sandboxed commands may write there.
pub fn distrust(dir: &Path) {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    if let Ok(mut d) = DISTRUSTED.lock()
        && !d.contains(&dir)
    {
        d.push(dir);
        if let Ok(mut found) = FOUND.lock() {
            found.clear();
        }
    }
}

/// Where sandboxed commands may write, as far as baton knows here.
fn writable() -> Vec<PathBuf> {
    let mut w: Vec<PathBuf> = ["/tmp", "/var/tmp", "/dev/shm"]
        .iter()
        .map(PathBuf::from)
        .collect();
    if let Some(t) = std::env::var_os("TMPDIR") {
        w.push(PathBuf::from(t));
    }
    if let Ok(cwd) = std::env::current_dir() {
        w.push(cwd);
    }
    if let Ok(d) = DISTRUSTED.lock() {
        w.extend(d.iter().cloned());
    }
    w.into_iter()
        .map(|p| p.canonicalize().unwrap_or(p))
        .collect()
}

/// Whether helpers may be taken from `dir`: absolute, and neither in nor
/// below a directory sandboxed commands may write.
fn trusted(dir: &Path, writable: &[PathBuf]) -> bool {
    if !dir.is_absolute() {
        return false;
    }
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    !writable.iter().any(|w| dir.starts_with(w))
}

/// The user's `PATH` without the entries helpers may not come from: what
/// baton's helpers, and the programs they start (`npx` finding `node`), search.
pub fn trusted_path() -> OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let w = writable();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .filter(|d| trusted(d, &w))
        .collect();
    std::env::join_paths(dirs).unwrap_or_default()
}

/// `name` found on the [`trusted_path`], by absolute path; `None` when it is
/// nowhere there.
pub fn find(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    if let Ok(found) = FOUND.lock()
        && let Some((_, p)) = found.iter().find(|(n, _)| n == name)
    {
        return p.clone();
    }
    use std::os::unix::fs::PermissionsExt as _;
    let p = std::env::split_paths(&trusted_path())
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        });
    if let Ok(mut found) = FOUND.lock() {
        found.push((name.to_string(), p.clone()));
    }
    p
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn no_helper_from_a_distrusted_directory_or_a_relative_entry() {
        let w = vec![PathBuf::from("/work/p"), PathBuf::from("/tmp")];
        assert!(trusted(Path::new("/usr/bin"), &w));
        assert!(!trusted(Path::new("/work/p/.venv/bin"), &w));
        assert!(!trusted(Path::new("/tmp/x"), &w));
        assert!(!trusted(Path::new("node_modules/.bin"), &w));
        assert!(trusted(Path::new("/work/other/bin"), &w));
    }
}
