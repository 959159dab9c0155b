//! The user's home as confined commands see it: hidden, but for what a build
//! needs, named ([`view`]); and the agent's own homes: the coding sessions' one,
//! cleaned when each session starts ([`clean_home`]), and a fresh one for every
//! check run and verifier ([`FreshHome`]).
//!
//! Masking secrets by a list misses what the list does not name, and what appears
//! later: a `~/.netrc` written mid-run, a token file replaced by rename, a
//! credentials directory that is a mount point of its own. So in the run's
//! namespace the user's home is an empty read-only tmpfs, and only the paths of
//! [`view`] are bound back from the real one: a secret created, renamed or mounted
//! there later is never in sight. Under Landlock alone (no bubblewrap) the same
//! paths are the only ones of the home that may be read.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{SandboxSpec, main_of_copy, temp_dirs};

/// What of the user's home stays visible by default (relative to it), read-only:
/// the toolchains commands run, and git's ignore and attributes files (git's
/// config is baton's, [`super::write_git_config`]). Besides these: every `PATH` entry under the home (and where its
/// links lead there), and `[sandbox] readable`.
pub const TOOLCHAINS: &[&str] = &[
    ".rustup",
    ".cargo/bin",
    ".pyenv",
    ".volta",
    ".asdf",
    ".nvm",
    ".bun",
    ".sdkman",
    ".deno/bin",
    ".local/bin",
    ".config/git/ignore",
    ".config/git/attributes",
];

/// Where in the agent's home the browser's server (run inside the sandbox by an
/// agent CLI) writes its output files; made again after each cleaning, and
/// writable to checks and the verifier too (they may drive the browser).
pub const MCP_OUTPUT: &str = ".baton-mcp/output";

/// The first part of [`MCP_OUTPUT`].
pub(super) const MCP_DIR: &str = ".baton-mcp";

/// The most paths a `PATH` directory's links add to the view (a directory of
/// thousands of links would slow every namespace's start).
const MOST_LINKS: usize = 256;

/// The user's home and what of it confined commands see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeView {
    /// The user's home (`HOME`).
    pub user: PathBuf,
    /// Paths under it bound back, each read-only (`false`) or writable (`true`),
    /// parents before children.
    pub binds: Vec<(PathBuf, bool)>,
}

/// What of the user's home confined commands of `spec` see; `None` when the home
/// cannot be hidden: `HOME` unset or `/`, or the project is the home or holds it.
pub fn view(spec: &SandboxSpec) -> Option<HomeView> {
    view_in(spec, super::home()?, std::env::var_os("PATH"))
}

fn view_in(spec: &SandboxSpec, user: PathBuf, path: Option<OsString>) -> Option<HomeView> {
    if user == Path::new("/") || user.starts_with(&spec.project) {
        return None;
    }
    let under = |p: &Path| p.starts_with(&user) && p != user;
    // The agent's home and baton's state dir are bound in: they must exist first
    // (nothing inside can make them).
    let state = baton_config::state_dir(&spec.project);
    let stage = super::stage_dir(&spec.project);
    let _ = std::fs::create_dir_all(&spec.home);
    let _ = std::fs::create_dir_all(&state);
    let _ = std::fs::create_dir_all(&stage);
    let mut read: Vec<PathBuf> = TOOLCHAINS.iter().map(|r| user.join(r)).collect();
    for dir in path.iter().flat_map(std::env::split_paths) {
        if !under(&dir) {
            continue;
        }
        read.push(dir.clone());
        if let Ok(real) = dir.canonicalize()
            && under(&real)
        {
            read.push(real);
        }
        // `~/.local/bin/claude` → `~/.local/share/claude/versions/…`: where a
        // program's link leads must be there too.
        let links = std::fs::read_dir(&dir).into_iter().flatten().flatten();
        for e in links.take(MOST_LINKS) {
            if e.file_type().is_ok_and(|t| t.is_symlink())
                && let Ok(real) = e.path().canonicalize()
                && under(&real)
                && !real.starts_with(&dir)
            {
                read.push(real);
            }
        }
    }
    read.extend(spec.readable.iter().filter(|p| under(p)).cloned());
    // Where joins stage the binds they renew (they mount there; commands only read).
    read.push(stage);
    // baton itself: the namespace's holder and launcher run it from inside.
    read.extend(std::env::current_exe().ok().filter(|e| under(e)));
    let mut write: Vec<PathBuf> = vec![
        main_of_copy(&spec.project).unwrap_or_else(|| spec.project.clone()),
        spec.home.clone(),
        state,
        super::private_home(&spec.project).join(MCP_DIR),
    ];
    write.extend(spec.writable.iter().cloned());
    write.extend(temp_dirs());
    let mut binds: Vec<(PathBuf, bool)> = write
        .into_iter()
        .filter(|p| under(p))
        .map(|p| (p, true))
        .chain(read.into_iter().map(|p| (p, false)))
        .filter(|(p, _)| std::fs::symlink_metadata(p).is_ok())
        .collect();
    // Parents first (a child bound before its parent would be covered by it); a
    // path already inside another bind of the same kind is not bound again.
    binds.sort_by_key(|(p, _)| p.components().count());
    let mut kept: Vec<(PathBuf, bool)> = Vec::new();
    for (p, w) in binds {
        if !kept.iter().any(|(k, kw)| p.starts_with(k) && *kw == w) {
            kept.push((p, w));
        }
    }
    Some(HomeView { user, binds: kept })
}

impl HomeView {
    /// `bwrap` arguments that hide the home: an empty tmpfs over it, the binds,
    /// then the tmpfs made read-only (its mount points were made in it first).
    pub fn bwrap_args(&self) -> Vec<OsString> {
        let user = self.user.as_os_str().to_os_string();
        let mut v: Vec<OsString> = vec!["--tmpfs".into(), user.clone()];
        for (p, writable) in &self.binds {
            let p = p.as_os_str().to_os_string();
            let how = if *writable {
                "--bind-try"
            } else {
                "--ro-bind-try"
            };
            v.extend([how.into(), p.clone(), p]);
        }
        v.extend(["--remount-ro".into(), user]);
        v
    }
}

/// Empty the coding sessions' home of `project` ([`super::private_home`]): each
/// session starts from one the agent never wrote, so a config planted in one
/// session (a `~/.npmrc` naming another `script-shell`) cannot steer the next.
/// The directory itself stays (a namespace's bind of it stays valid); what is in
/// it is removed without following a link planted there.
pub fn clean_home(project: &Path) -> std::io::Result<()> {
    let home = super::private_home(project);
    let rd = match std::fs::read_dir(&home) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for e in rd {
        let e = e?;
        // `remove_dir_all` does not follow links; `file_type` does not either.
        if e.file_type()?.is_dir() {
            std::fs::remove_dir_all(e.path())?;
        } else {
            std::fs::remove_file(e.path())?;
        }
    }
    std::fs::create_dir_all(home.join(MCP_OUTPUT))?;
    // The agent CLI's temp dir (`TMPDIR`), which its sandboxed commands share.
    std::fs::create_dir_all(home.join("tmp"))
}

/// A home no command has written yet, for one check run or one verifier session
/// (next to the coding sessions' home); removed when dropped.
#[derive(Debug)]
pub struct FreshHome {
    path: PathBuf,
}

impl FreshHome {
    /// Make one for `project`.
    pub fn new(project: &Path) -> std::io::Result<Self> {
        let mut name = super::private_home(project).into_os_string();
        name.push(format!("-{}-{:08x}", std::process::id(), rand_u32(),));
        let path = PathBuf::from(name);
        std::fs::create_dir_all(path.parent().unwrap_or(Path::new("/")))?;
        std::fs::create_dir(&path)?;
        Ok(Self { path })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for FreshHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A number that differs between the fresh homes of one process.
fn rand_u32() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    n.wrapping_mul(0x9e37_79b9) ^ t
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_config::SandboxNetwork;

    fn spec(project: &Path) -> SandboxSpec {
        SandboxSpec::new(project, &[], SandboxNetwork::Open)
    }

    #[test]
    fn the_home_shows_only_toolchains_path_entries_and_what_is_named() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        for d in [
            ".rustup",
            ".cargo/bin",
            ".ssh",
            "tools/bin",
            "notes",
            ".local/share/x",
        ] {
            std::fs::create_dir_all(h.join(d)).unwrap();
        }
        std::fs::write(h.join(".local/share/x/prog"), "").unwrap();
        std::fs::create_dir_all(h.join(".local/bin")).unwrap();
        std::os::unix::fs::symlink(h.join(".local/share/x/prog"), h.join(".local/bin/prog"))
            .unwrap();
        let mut s = spec(Path::new("/elsewhere/p"));
        s.readable = vec![h.join("notes")];
        let path = std::env::join_paths([
            h.join("tools/bin"),
            h.join(".local/bin"),
            PathBuf::from("/usr/bin"),
        ])
        .unwrap();
        let v = view_in(&s, h.to_path_buf(), Some(path)).unwrap();
        let ro: Vec<&Path> = v
            .binds
            .iter()
            .filter(|b| !b.1)
            .map(|b| b.0.as_path())
            .collect();
        for want in [".rustup", ".cargo/bin", "tools/bin", "notes", ".local/bin"] {
            assert!(ro.contains(&h.join(want).as_path()), "{want}: {ro:?}");
        }
        assert!(
            ro.contains(
                &h.join(".local/share/x/prog")
                    .canonicalize()
                    .unwrap()
                    .as_path()
            )
        );
        assert!(!v.binds.iter().any(|b| b.0.starts_with(h.join(".ssh"))));
        // A project under the home is bound back writable; one that holds it cannot hide it.
        let inside = spec(&h.join("code/p"));
        std::fs::create_dir_all(h.join("code/p")).unwrap();
        let v = view_in(&inside, h.to_path_buf(), None).unwrap();
        assert!(v.binds.contains(&(h.join("code/p"), true)), "{v:?}");
        assert_eq!(view_in(&spec(h), h.to_path_buf(), None), None);
    }

    #[test]
    fn cleaning_the_home_never_follows_a_link_out_of_it() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "user's").unwrap();
        let project = tempfile::tempdir().unwrap();
        let home = super::super::private_home(project.path());
        std::fs::create_dir_all(home.join(".npm")).unwrap();
        std::fs::write(home.join(".npmrc"), "script-shell=/tmp/x\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), home.join("link")).unwrap();
        clean_home(project.path()).unwrap();
        let mut left: Vec<_> = std::fs::read_dir(&home)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        left.sort();
        assert_eq!(left, [MCP_DIR, "tmp"], "only what baton makes again");
        assert!(home.join(MCP_OUTPUT).is_dir());
        assert!(outside.path().join("keep").is_file());
        let fresh = FreshHome::new(project.path()).unwrap();
        let p = fresh.path().to_path_buf();
        assert!(p.is_dir() && p != home);
        drop(fresh);
        assert!(!p.exists());
        let _ = std::fs::remove_dir_all(home);
    }
}
