//! A digest of what checks can read of a project's tree: every file git would see
//! (tracked or not, but not ignored), by path and content, and links by where
//! they point, without following them. baton's own records (`.baton/`), `.git/`
//! and the files named to leave out (the progress notes and the feature list,
//! which every session changes and no check should read) are not part of it.
//!
//! The sweep before a coding session leaves out a check whose command passed on
//! the same digest ([`baton_records::PassedOn`]): nothing it could read changed.
//! baton reads the files itself; no git index or cache the agent could shape
//! stands in for their content.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use sha2::{Digest as _, Sha256};

/// The digest of `dir`'s tree, leaving out `leave_out` (paths relative to `dir`),
/// as hex; `None` when part of it could not be read (then nothing is skipped).
pub fn tree_digest(dir: &Path, leave_out: &[&str]) -> Option<String> {
    let mut walk = ignore::WalkBuilder::new(dir);
    walk.hidden(false)
        .parents(false)
        .ignore(false)
        .git_global(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .filter_entry(|e| {
            let name = e.file_name();
            !(e.file_type().is_some_and(|t| t.is_dir()) && (name == ".git" || name == ".baton"))
        });
    let mut hash = Sha256::new();
    for entry in walk.build() {
        let entry = entry.ok()?;
        let Ok(rel) = entry.path().strip_prefix(dir) else {
            continue;
        };
        if rel.as_os_str().is_empty() || leave_out.iter().any(|l| rel == Path::new(l)) {
            continue;
        }
        let kind = entry.file_type()?;
        if kind.is_dir() {
            continue;
        }
        hash.update(rel.as_os_str().as_encoded_bytes());
        hash.update([0]);
        if kind.is_symlink() {
            let to = std::fs::read_link(entry.path()).ok()?;
            hash.update(b"l");
            hash.update(to.as_os_str().as_encoded_bytes());
        } else if kind.is_file() {
            hash.update(b"f");
            file_into(entry.path(), &mut hash)?;
        } else {
            // A FIFO, a socket or a device: its name alone, never read.
            hash.update(b"o");
        }
        hash.update([0]);
    }
    let digest = hash.finalize();
    Some(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// The digest of the project's tree, leaving out its progress notes and feature
/// list.
pub(crate) fn of_project(files: &crate::files::Files) -> Option<String> {
    let n = &files.names;
    tree_digest(&files.dir, &[&n.progress, &n.feature_list])
}

/// Hash a regular file's length and content into `hash`, opened without following
/// a link or blocking on a FIFO swapped into its place.
fn file_into(path: &Path, hash: &mut Sha256) -> Option<()> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    hash.update(meta.len().to_le_bytes());
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            return Some(());
        }
        hash.update(&buf[..n]);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn digest(dir: &Path) -> String {
        tree_digest(dir, &["notes.txt", "feature_list.json"]).unwrap()
    }

    /// A file's content, a new file, a removed one and a link's target change the
    /// digest; the notes, the feature list, ignored files and baton's records do
    /// not.
    #[test]
    fn the_digest_changes_with_what_a_check_can_read_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::write(p.join(".gitignore"), "node_modules/\n").unwrap();
        std::fs::create_dir_all(p.join("src")).unwrap();
        std::fs::write(p.join("src/app.js"), "one").unwrap();
        let first = digest(p);
        assert_eq!(digest(p), first, "the same tree, the same digest");

        std::fs::write(p.join("notes.txt"), "session 2 did this").unwrap();
        std::fs::write(p.join("feature_list.json"), "[]").unwrap();
        std::fs::create_dir_all(p.join("node_modules/x")).unwrap();
        std::fs::write(p.join("node_modules/x/i.js"), "ignored").unwrap();
        std::fs::create_dir_all(p.join(".baton")).unwrap();
        std::fs::write(p.join(".baton/state.json"), "{}").unwrap();
        assert_eq!(
            digest(p),
            first,
            "only left-out, ignored and baton's files changed"
        );

        std::fs::write(p.join("src/app.js"), "two").unwrap();
        let changed = digest(p);
        assert_ne!(changed, first, "a file's content");
        std::fs::write(p.join("src/new.js"), "").unwrap();
        let added = digest(p);
        assert_ne!(added, changed, "a new, empty file");
        std::fs::remove_file(p.join("src/new.js")).unwrap();
        assert_eq!(digest(p), changed, "removed again");
        std::os::unix::fs::symlink("/etc/hostname", p.join("src/l")).unwrap();
        let linked = digest(p);
        assert_ne!(linked, changed, "a link");
        std::fs::remove_file(p.join("src/l")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", p.join("src/l")).unwrap();
        assert_ne!(digest(p), linked, "where a link points");
    }

    /// A FIFO in the tree is named, never opened: the digest does not hang.
    #[test]
    fn a_fifo_in_the_tree_is_not_read() {
        let d = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(d.path().join("pipe"))
            .status()
            .unwrap();
        assert!(made.success());
        assert!(tree_digest(d.path(), &[]).is_some());
    }
}
