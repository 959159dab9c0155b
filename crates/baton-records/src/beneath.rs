//! baton's own hands on files the agent could have shaped. baton reads and writes
//! the project, its working copies, the agent's home and `.baton/` outside the
//! sandbox; any of them may hold a symbolic link the agent planted (the feature
//! list pointing at `~/.bashrc`, the notes at `~/.ssh/id_rsa`). Every such
//! operation goes through here: each path is opened relative to a directory baton
//! trusts (the project) with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, so
//! a link anywhere on the way, or a `..` out of the root, fails (see
//! [`is_link_refusal`]) and is never followed. Writes go to a fresh temporary file (`O_EXCL`, never through a
//! link) renamed over the name, which replaces a planted link rather than
//! writing through it.
//!
//! ```
//! let root = tempfile::tempdir()?;
//! let b = baton_records::beneath::Beneath::new(root.path());
//! b.write_atomic("notes.txt", b"hello\n")?;
//! assert_eq!(b.read_to_string("notes.txt")?, "hello\n");
//! std::os::unix::fs::symlink("/etc/hostname", root.path().join("link"))?;
//! let e = b.read_to_string("link").unwrap_err();
//! assert!(baton_records::beneath::is_link_refusal(&e));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::{Read as _, Write as _};
use std::path::{Component, Path, PathBuf};

/// The most baton reads of one file of the tree (64 MiB): a feature list, notes
/// or a record larger than this is refused, not read into memory.
pub const MAX_READ: u64 = 64 << 20;

/// `f` (named `name` in errors) when it is a regular file.
fn regular(f: std::fs::File, name: &Path) -> std::io::Result<std::fs::File> {
    if f.metadata()?.is_file() {
        Ok(f)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", name.display()),
        ))
    }
}

/// The content of `f` (named `name` in errors), at most `max` bytes: a larger
/// file, or one that grows past `max` while it is read, is an error.
fn read_bounded(f: std::fs::File, name: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let too_large = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} is larger than baton reads ({max} bytes)",
                name.display()
            ),
        )
    };
    if f.metadata()?.len() > max {
        return Err(too_large());
    }
    let mut out = Vec::new();
    f.take(max + 1).read_to_end(&mut out)?;
    if out.len() as u64 > max {
        return Err(too_large());
    }
    Ok(out)
}

/// `path` opened to read, for a file in a directory baton made or reached by a
/// walk that follows no link: not through a link at its last component, never
/// blocking on a FIFO or a device left in its place, and only when it is a
/// regular file.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    regular(fd.into(), path)
}

/// The content of the regular file `path` ([`open_regular`]), at most `max`
/// bytes.
pub fn read_regular(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    read_bounded(open_regular(path)?, path, max)
}

/// A directory baton trusts, and the files beneath it it may touch.
#[derive(Debug, Clone)]
pub struct Beneath {
    root: PathBuf,
}

/// Whether `e` is the refusal of a path through a symbolic link (or out of the
/// root): what a planted link gets.
pub fn is_link_refusal(e: &std::io::Error) -> bool {
    let refused = [rustix::io::Errno::LOOP, rustix::io::Errno::XDEV];
    e.raw_os_error()
        .is_some_and(|code| refused.iter().any(|r| r.raw_os_error() == code))
}

/// `rel` as a path beneath a root: relative, with no `..` (checked again by the
/// kernel).
fn relative(rel: &Path) -> std::io::Result<&Path> {
    let ok = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if ok && !rel.as_os_str().is_empty() {
        Ok(rel)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a path beneath the project", rel.display()),
        ))
    }
}

mod sys {
    use std::os::fd::{AsFd, OwnedFd};
    use std::path::Path;

    use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};

    const RESOLVE: ResolveFlags = ResolveFlags::BENEATH
        .union(ResolveFlags::NO_SYMLINKS)
        .union(ResolveFlags::NO_MAGICLINKS);

    pub fn root(path: &Path) -> std::io::Result<OwnedFd> {
        Ok(rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?)
    }

    pub fn open(dir: impl AsFd, rel: &Path, flags: OFlags, mode: u32) -> std::io::Result<OwnedFd> {
        Ok(rustix::fs::openat2(
            dir,
            rel,
            // RESOLVE_NO_SYMLINKS refuses a link at every component, the last
            // included, with ELOOP.
            flags | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
            RESOLVE,
        )?)
    }

    /// `rel` opened to read: never blocking on a FIFO or a device the agent
    /// left in its place, and only when it is a regular file.
    pub fn read(dir: impl AsFd, rel: &Path) -> std::io::Result<std::fs::File> {
        super::regular(
            open(dir, rel, OFlags::RDONLY | OFlags::NONBLOCK, 0)?.into(),
            rel,
        )
    }

    pub fn dir(dir: impl AsFd, rel: &Path) -> std::io::Result<OwnedFd> {
        open(dir, rel, OFlags::RDONLY | OFlags::DIRECTORY, 0)
    }

    pub fn append(dir: impl AsFd, rel: &Path) -> std::io::Result<std::fs::File> {
        Ok(open(
            dir,
            rel,
            OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE,
            0o644,
        )?
        .into())
    }

    pub fn create_new(dir: impl AsFd, name: &str) -> std::io::Result<std::fs::File> {
        Ok(rustix::fs::openat(
            dir,
            name,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )?
        .into())
    }

    pub fn rename(dir: impl AsFd, from: &str, to: &std::ffi::OsStr) -> std::io::Result<()> {
        let d = dir.as_fd();
        Ok(rustix::fs::renameat(d, from, d, to)?)
    }

    pub fn mkdir(dir: impl AsFd, name: &std::ffi::OsStr) -> std::io::Result<()> {
        match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Remove `name` in `dir`: a link or file is unlinked, a directory emptied
    /// (never following a link inside it) and removed.
    pub fn remove_all(dir: impl AsFd, name: &std::ffi::OsStr) -> std::io::Result<()> {
        let d = dir.as_fd();
        let st = match rustix::fs::statat(d, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
            return Ok(rustix::fs::unlinkat(d, name, AtFlags::empty())?);
        }
        let sub = rustix::fs::openat(
            d,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&sub)? {
            let entry = entry?;
            let n = entry.file_name().to_bytes();
            if n != b"." && n != b".." {
                names.push(
                    <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(n).to_os_string(),
                );
            }
        }
        for n in names {
            remove_all(&sub, &n)?;
        }
        Ok(rustix::fs::unlinkat(d, name, AtFlags::REMOVEDIR)?)
    }
}

impl Beneath {
    /// Files beneath `root`, a directory baton trusts (the project it was given,
    /// a directory of its own): `root` itself is taken as it is.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The whole of `rel`'s content: a regular file (never a FIFO or a device,
    /// opened without blocking) of at most [`MAX_READ`] bytes.
    pub fn read(&self, rel: impl AsRef<Path>) -> std::io::Result<Vec<u8>> {
        let rel = relative(rel.as_ref())?;
        read_bounded(sys::read(sys::root(&self.root)?, rel)?, rel, MAX_READ)
    }

    /// `rel`'s content as text (invalid UTF-8 replaced).
    pub fn read_to_string(&self, rel: impl AsRef<Path>) -> std::io::Result<String> {
        Ok(String::from_utf8_lossy(&self.read(rel)?).into_owned())
    }

    /// Make `rel` and the directories above it, none of them through a link.
    pub fn create_dir_all(&self, rel: impl AsRef<Path>) -> std::io::Result<()> {
        let rel = rel.as_ref();
        if rel.as_os_str().is_empty() {
            return Ok(());
        }
        let rel = relative(rel)?;
        let root = sys::root(&self.root)?;
        let mut at = PathBuf::new();
        for c in rel.components() {
            let Component::Normal(name) = c else { continue };
            let parent = if at.as_os_str().is_empty() {
                sys::dir(&root, Path::new("."))?
            } else {
                sys::dir(&root, &at)?
            };
            sys::mkdir(&parent, name)?;
            at.push(name);
        }
        sys::dir(&root, &at).map(drop)
    }

    /// Replace `rel` with `bytes`, whole: a fresh temporary file in its directory,
    /// then a rename over the name (a link there is replaced, never written
    /// through). Its directory is made where missing.
    pub fn write_atomic(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> std::io::Result<()> {
        let rel = relative(rel.as_ref())?;
        let (parent, name) = split(rel)?;
        self.create_dir_all(parent)?;
        let root = sys::root(&self.root)?;
        let dir = sys::dir(
            &root,
            if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            },
        )?;
        let tmp = format!(
            ".{}.baton-{:016x}",
            name.to_string_lossy(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                ^ u64::from(std::process::id()).rotate_left(32)
        );
        let mut f = sys::create_new(&dir, &tmp)?;
        let written = f.write_all(bytes).and_then(|()| f.flush());
        drop(f);
        match written.and_then(|()| sys::rename(&dir, &tmp, name)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), rustix::fs::AtFlags::empty());
                Err(e)
            }
        }
    }

    /// Append `bytes` to `rel` in one write, creating it (and its directory).
    pub fn append(&self, rel: impl AsRef<Path>, bytes: &[u8]) -> std::io::Result<()> {
        let rel = relative(rel.as_ref())?;
        let (parent, _) = split(rel)?;
        self.create_dir_all(parent)?;
        let mut f = sys::append(sys::root(&self.root)?, rel)?;
        f.write_all(bytes)
    }

    /// Remove `rel` and everything beneath it; a link (at `rel` or inside it) is
    /// removed, never followed. A missing `rel`, or one reached only through a
    /// link above it, is left alone.
    pub fn remove_all(&self, rel: impl AsRef<Path>) -> std::io::Result<()> {
        let rel = relative(rel.as_ref())?;
        let (parent, name) = split(rel)?;
        let root = sys::root(&self.root)?;
        let dir = match sys::dir(
            &root,
            if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            },
        ) {
            Ok(d) => d,
            // Nothing of it is beneath the root: missing, or reached only
            // through a link (which is not followed, so nothing is removed).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound || is_link_refusal(&e) => {
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        sys::remove_all(&dir, name)
    }
}

/// Read `path`, a record under a project's `.baton/` (beneath the project) or
/// any other file (beneath its directory), never through a link.
pub fn read_record(path: &Path) -> std::io::Result<Vec<u8>> {
    let (root, rel) = crate::layout::split(path);
    Beneath::new(root).read(rel)
}

/// `rel`'s directory and file name.
fn split(rel: &Path) -> std::io::Result<(&Path, &std::ffi::OsStr)> {
    match (rel.parent(), rel.file_name()) {
        (Some(p), Some(n)) => Ok((p, n)),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} names no file", rel.display()),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, Beneath) {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("bashrc"), "user's own\n").unwrap();
        let b = Beneath::new(root.path());
        (root, outside, b)
    }

    #[test]
    fn a_planted_link_is_never_followed_to_read_or_write() {
        let (root, outside, b) = setup();
        let target = outside.path().join("bashrc");
        symlink(&target, root.path().join("feature_list.json")).unwrap();
        // Reading through it is refused.
        assert!(is_link_refusal(&b.read("feature_list.json").unwrap_err()));
        // Writing replaces the link; the target is untouched.
        b.write_atomic("feature_list.json", b"[]\n").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "user's own\n");
        assert!(!root.path().join("feature_list.json").is_symlink());
        assert_eq!(b.read_to_string("feature_list.json").unwrap(), "[]\n");
        // A linked directory on the way is refused, for reads, writes and appends.
        symlink(outside.path(), root.path().join(".baton")).unwrap();
        assert!(is_link_refusal(&b.read(".baton/bashrc").unwrap_err()));
        assert!(is_link_refusal(
            &b.write_atomic(".baton/bashrc", b"x").unwrap_err()
        ));
        assert!(is_link_refusal(
            &b.append(".baton/bashrc", b"x").unwrap_err()
        ));
        assert!(b.read("../x").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "user's own\n");
        // An append to a link is refused too.
        symlink(&target, root.path().join("ledger.jsonl")).unwrap();
        assert!(is_link_refusal(
            &b.append("ledger.jsonl", b"x\n").unwrap_err()
        ));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "user's own\n");
    }

    #[test]
    fn removal_takes_links_away_and_never_what_they_point_to() {
        let (root, outside, b) = setup();
        std::fs::create_dir_all(root.path().join("home/scratch/deep")).unwrap();
        std::fs::write(root.path().join("home/scratch/deep/f"), "x").unwrap();
        symlink(outside.path(), root.path().join("home/scratch/out")).unwrap();
        b.remove_all("home/scratch").unwrap();
        assert!(!root.path().join("home/scratch").exists());
        assert!(outside.path().join("bashrc").is_file());
        // The scratch dir itself replaced by a link: the link goes, the target stays.
        symlink(outside.path(), root.path().join("home/scratch")).unwrap();
        b.remove_all("home/scratch").unwrap();
        assert!(!root.path().join("home/scratch").is_symlink());
        assert!(outside.path().join("bashrc").is_file());
        b.remove_all("home/nothing-here").unwrap();
    }

    /// A FIFO where a file should be is refused at once, never waited on.
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let d = tempfile::tempdir().unwrap();
        let made = baton_testkit::Bounded::status_bounded(
            std::process::Command::new("mkfifo").arg(d.path().join("feature_list.json")),
        )
        .unwrap();
        assert!(made.success());
        let e = Beneath::new(d.path())
            .read("feature_list.json")
            .unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
    }

    #[test]
    fn appends_and_directories_are_made_beneath() {
        let (root, _outside, b) = setup();
        b.append(".baton/ledger.jsonl", b"a\n").unwrap();
        b.append(".baton/ledger.jsonl", b"b\n").unwrap();
        assert_eq!(b.read_to_string(".baton/ledger.jsonl").unwrap(), "a\nb\n");
        b.write_atomic(".baton/evidence/0001/t.png", b"png")
            .unwrap();
        assert_eq!(
            std::fs::read(root.path().join(".baton/evidence/0001/t.png")).unwrap(),
            b"png"
        );
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(root.path().join(".baton/evidence/0001"))
            .unwrap()
            .collect();
        assert_eq!(names.len(), 1);
    }
}
