//! Path resolution and write confinement for the file tools.
//!
//! Paths given by the model may be absolute or relative to the project directory.
//! Reads may go anywhere the process can read; writes must land inside the project
//! directory, after resolving `..` and symlinks, and never inside `.git/` or `.baton/`.

use std::path::{Component, Path, PathBuf};

/// Directories inside the project that the agent's file tools may never write.
pub const PROTECTED_DIRS: &[&str] = &[".git", ".baton"];

/// Join `file_path` onto `project` (when relative) and remove `.` and `..` lexically.
pub fn resolve(project: &Path, file_path: &str) -> PathBuf {
    let joined = if Path::new(file_path).is_absolute() {
        PathBuf::from(file_path)
    } else {
        project.join(file_path)
    };
    normalize(&joined)
}

/// Remove `.` and `..` components without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => {
                out.push(c.as_os_str())
            }
        }
    }
    out
}

/// Resolve `file_path` for writing: it must stay inside `project` (canonical) once
/// symlinks of its existing ancestors (and of the file itself) are followed, and must
/// not be inside a protected directory. Returns the path to write, or a reason.
pub fn resolve_for_write(project: &Path, file_path: &str) -> Result<PathBuf, String> {
    let path = resolve(project, file_path);
    let real = real_path(&path);
    let rel = real.strip_prefix(project).map_err(|_| {
        if path.starts_with(project) {
            format!(
                "{file_path} resolves through a symlink to {}, outside the project directory {}; writes are allowed only inside the project",
                real.display(),
                project.display()
            )
        } else {
            format!(
                "{} is outside the project directory {}; writes are allowed only inside the project",
                path.display(),
                project.display()
            )
        }
    })?;
    let first = match rel.components().next() {
        Some(Component::Normal(first)) => Some(first),
        _ => None,
    };
    if let Some(dir) = first.and_then(|first| PROTECTED_DIRS.iter().find(|d| first == **d)) {
        return Err(format!(
            "{} is inside {dir}/, which only git and baton may change; edit project files instead",
            path.display()
        ));
    }
    if rel == Path::new("baton.toml") {
        return Err(format!(
            "{} holds baton's own rules (read once when the run starts); only the user changes it",
            path.display()
        ));
    }
    if rel.as_os_str().is_empty() {
        return Err(format!(
            "{} is the project directory itself, not a file",
            path.display()
        ));
    }
    Ok(path)
}

/// Symlinks followed by hand (dangling ones) before giving up on a path.
const MAX_LINKS: usize = 40;

/// The path with every existing ancestor canonicalized (symlinks followed); the
/// part that does not exist yet is appended unchanged. Dangling symlinks are
/// followed lexically, at most [`MAX_LINKS`] deep (a loop stops there).
pub fn real_path(path: &Path) -> PathBuf {
    real_path_depth(path, 0)
}

fn real_path_depth(path: &Path, depth: usize) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(canon) = existing.canonicalize() {
            let mut out = canon;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        // A dangling symlink: follow its target lexically.
        if depth < MAX_LINKS
            && let Ok(target) = std::fs::read_link(&existing)
        {
            let parent = existing.parent().map(Path::to_path_buf).unwrap_or_default();
            let mut next = normalize(&parent.join(target));
            for part in rest.iter().rev() {
                next.push(part);
            }
            return real_path_depth(&next, depth + 1);
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// How a path is shown back to the model: relative to the project when inside it.
pub fn display(project: &Path, path: &Path) -> String {
    match path.strip_prefix(project) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let canon = dir.path().canonicalize().unwrap();
        (dir, canon)
    }

    #[test]
    fn relative_and_dotdot_resolve_lexically() {
        assert_eq!(
            resolve(Path::new("/p"), "a/../b/./c.txt"),
            PathBuf::from("/p/b/c.txt")
        );
        assert_eq!(resolve(Path::new("/p"), "/etc/x"), PathBuf::from("/etc/x"));
    }

    #[test]
    fn writes_inside_are_allowed() {
        let (_d, p) = project();
        assert_eq!(
            resolve_for_write(&p, "src/new.rs").unwrap(),
            p.join("src/new.rs")
        );
    }

    #[test]
    fn escapes_are_refused() {
        let (_d, p) = project();
        let err = resolve_for_write(&p, "../outside.txt").unwrap_err();
        assert!(err.contains("outside the project"), "{err}");
        let err = resolve_for_write(&p, "/etc/passwd").unwrap_err();
        assert!(err.contains("outside the project"), "{err}");
    }

    #[test]
    fn symlink_escapes_are_refused() {
        let (_d, p) = project();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), p.join("link")).unwrap();
        let err = resolve_for_write(&p, "link/file.txt").unwrap_err();
        assert!(err.contains("symlink"), "{err}");
        std::os::unix::fs::symlink("/tmp/nowhere-baton-test", p.join("dangling")).unwrap();
        let err = resolve_for_write(&p, "dangling").unwrap_err();
        assert!(err.contains("symlink"), "{err}");
    }

    #[test]
    fn a_symlink_loop_does_not_hang_and_stays_inside() {
        let (_d, p) = project();
        std::os::unix::fs::symlink(p.join("b"), p.join("a")).unwrap();
        std::os::unix::fs::symlink(p.join("a"), p.join("b")).unwrap();
        // Resolves (without recursing forever) to a path inside the project.
        let r = resolve_for_write(&p, "a/file.txt");
        assert!(r.is_ok(), "{r:?}");
    }

    #[test]
    fn protected_dirs_are_refused() {
        let (_d, p) = project();
        let err = resolve_for_write(&p, ".git/hooks/pre-commit").unwrap_err();
        assert!(err.contains(".git/"), "{err}");
        let err = resolve_for_write(&p, "./.baton/state.json").unwrap_err();
        assert!(err.contains(".baton/"), "{err}");
        assert!(resolve_for_write(&p, ".gitignore").is_ok());
    }
}
