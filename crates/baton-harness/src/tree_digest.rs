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
use std::path::Path;

use sha2::{Digest as _, Sha256};

/// The digest of `dir`'s tree, leaving out `leave_out` (paths relative to `dir`),
/// as hex; `None` when part of it could not be read (then nothing is skipped).
///
/// The walk is baton's own: the ignore rules (each directory's `.gitignore`,
/// then `.git/info/exclude`) are read like every file of the tree, without
/// following a link, without blocking on a FIFO, regular files only and at most
/// [`MAX_IGNORE_FILE`] bytes; one that is none of these makes the digest `None`
/// (a `.gitignore` linked to `/dev/zero` or made a FIFO never hangs or aborts
/// baton).
pub fn tree_digest(dir: &Path, leave_out: &[&str]) -> Option<String> {
    let mut hash = Sha256::new();
    let mut rules = Vec::new();
    let exclude = dir.join(".git/info/exclude");
    if std::fs::symlink_metadata(&exclude).is_ok() {
        rules.push(ignore_rules(dir, &exclude)?);
    }
    walk(dir, dir, leave_out, &mut rules, &mut hash)?;
    let digest = hash.finalize();
    Some(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// The most an ignore file may hold.
pub const MAX_IGNORE_FILE: u64 = 1 << 20;

/// The rules of the ignore file `file`, for paths under `root`, read safely
/// ([`baton_records::beneath::read_regular`]); `None` when it cannot be.
fn ignore_rules(root: &Path, file: &Path) -> Option<ignore::gitignore::Gitignore> {
    let text = baton_records::beneath::read_regular(file, MAX_IGNORE_FILE).ok()?;
    let mut b = ignore::gitignore::GitignoreBuilder::new(root);
    for line in String::from_utf8_lossy(&text).lines() {
        let _ = b.add_line(Some(file.to_path_buf()), line);
    }
    b.build().ok()
}

/// Whether `path` is ignored by `rules` (innermost last): the innermost rule
/// that matches decides, a `!` pattern keeps it.
fn ignored(rules: &[ignore::gitignore::Gitignore], path: &Path, is_dir: bool) -> bool {
    for r in rules.iter().rev() {
        match r.matched(path, is_dir) {
            ignore::Match::Ignore(_) => return true,
            ignore::Match::Whitelist(_) => return false,
            ignore::Match::None => {}
        }
    }
    false
}

/// Hash what `dir` holds (under `root`) into `hash`, in path order, with the
/// ignore rules of its parents in `rules` (its own pushed, then popped).
fn walk(
    root: &Path,
    dir: &Path,
    leave_out: &[&str],
    rules: &mut Vec<ignore::gitignore::Gitignore>,
    hash: &mut Sha256,
) -> Option<()> {
    let own = dir.join(".gitignore");
    let pushed = match std::fs::symlink_metadata(&own) {
        Ok(_) => {
            rules.push(ignore_rules(dir, &own)?);
            true
        }
        Err(_) => false,
    };
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)
        .ok()?
        .collect::<Result<_, _>>()
        .ok()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let kind = entry.file_type().ok()?;
        let name = entry.file_name();
        if kind.is_dir() && (name == ".git" || name == baton_records::layout::DIR) {
            continue;
        }
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        if leave_out.iter().any(|l| rel == Path::new(l)) || ignored(rules, &path, kind.is_dir()) {
            continue;
        }
        if kind.is_dir() {
            walk(root, &path, leave_out, rules, hash)?;
            continue;
        }
        hash.update(rel.as_os_str().as_encoded_bytes());
        hash.update([0]);
        if kind.is_symlink() {
            let to = std::fs::read_link(&path).ok()?;
            hash.update(b"l");
            hash.update(to.as_os_str().as_encoded_bytes());
        } else if kind.is_file() {
            hash.update(b"f");
            file_into(&path, hash)?;
        } else {
            // A FIFO, a socket or a device: its name alone, never read.
            hash.update(b"o");
        }
        hash.update([0]);
    }
    if pushed {
        rules.pop();
    }
    Some(())
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
    let mut f = baton_records::beneath::open_regular(path).ok()?;
    hash.update(f.metadata().ok()?.len().to_le_bytes());
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
    use baton_testkit::Bounded as _;

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

    /// A `.gitignore` that is a link to `/dev/zero`, a FIFO, or too large is not
    /// read: no digest (so nothing is skipped), never a hang or an abort.
    #[test]
    fn an_ignore_file_that_is_no_regular_file_is_not_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("src")).unwrap();
        std::fs::write(p.join("src/app.js"), "one").unwrap();
        std::os::unix::fs::symlink("/dev/zero", p.join("src/.gitignore")).unwrap();
        assert_eq!(tree_digest(p, &[]), None);
        std::fs::remove_file(p.join("src/.gitignore")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(p.join(".gitignore"))
            .status_bounded()
            .unwrap();
        assert!(made.success());
        assert_eq!(tree_digest(p, &[]), None);
        std::fs::remove_file(p.join(".gitignore")).unwrap();
        std::fs::write(
            p.join(".gitignore"),
            vec![b'#'; (MAX_IGNORE_FILE + 1) as usize],
        )
        .unwrap();
        assert_eq!(tree_digest(p, &[]), None);
        std::fs::write(p.join(".gitignore"), "*.log\n!keep.log\n").unwrap();
        let a = tree_digest(p, &[]).unwrap();
        std::fs::write(p.join("x.log"), "noise").unwrap();
        assert_eq!(tree_digest(p, &[]).unwrap(), a, "ignored");
        std::fs::write(p.join("keep.log"), "kept").unwrap();
        assert_ne!(tree_digest(p, &[]).unwrap(), a, "a ! pattern keeps it");
    }

    /// A FIFO in the tree is named, never opened: the digest does not hang.
    #[test]
    fn a_fifo_in_the_tree_is_not_read() {
        let d = tempfile::tempdir().unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(d.path().join("pipe"))
            .status_bounded()
            .unwrap();
        assert!(made.success());
        assert!(tree_digest(d.path(), &[]).is_some());
    }
}
