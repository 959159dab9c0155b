//! What sandboxed commands see of a repository's `.git/config`: a view baton
//! writes, bound over it read-only, without what reaches a server with the
//! user's credentials.
//!
//! A project's config can carry a credential whatever its key is called: a CI
//! checkout's `http.<url>.extraheader` (`AUTHORIZATION: basic …`), a token in a
//! remote's URL (`https://x-access-token:…@github.com/…`) or in a
//! `url.<base>.insteadOf`, a credential helper's store file, an included file.
//! The view keeps every other key (the repository's format and extensions, its
//! remotes and branches, `core.*`), drops the sections `http`, `url`,
//! `credential`, `include` and `includeIf` and the keys `core.askPass` and
//! `core.sshCommand`, and takes the user and password out of every URL. It is
//! written again (a new file) whenever the config it shows changed, so a bind of
//! an older view is renewed like any replaced protected file.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

/// Sections left out of the view: each can name a credential or a program that
/// fetches one.
const DROPPED_SECTIONS: &[&str] = &["http", "url", "credential", "include", "includeif"];

/// Keys left out of the view (section and name, lowercase).
const DROPPED_KEYS: &[&str] = &["core.askpass", "core.sshcommand"];

/// Whether `target` is a repository's config (`…/.git/config`).
pub(crate) fn is_git_config(target: &Path) -> bool {
    target.file_name().is_some_and(|n| n == "config")
        && target
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == ".git")
}

/// The file bound at `target` for commands confined to `project`: for a
/// repository's config, its view (written now if the one there shows an older
/// config); else `target` itself, as when the view cannot be written.
pub(crate) fn source(project: &Path, target: &Path) -> PathBuf {
    if !is_git_config(target) {
        return target.to_path_buf();
    }
    view(project, target).unwrap_or_else(|| target.to_path_buf())
}

/// The view of `config` in `project`'s state dir, current.
fn view(project: &Path, config: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(config).ok()?;
    let dir = baton_config::state_dir(project).join("git-views");
    let name: String = config
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let path = dir.join(&name);
    let stamp = format!(
        "# baton: the commands' view of {} ({} {} {} {})\n",
        config.display(),
        meta.dev(),
        meta.ino(),
        meta.mtime_nsec() + meta.mtime() * 1_000_000_000,
        meta.size()
    );
    if first_line_is(&path, &stamp) {
        return Some(path);
    }
    let text = render(&stamp, &listed(config)?);
    std::fs::create_dir_all(&dir).ok()?;
    // Written beside it and renamed over it: a new file, never one half written.
    let tmp = dir.join(format!(".{name}.{}", std::process::id()));
    std::fs::write(&tmp, text).ok()?;
    if std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
        return None;
    }
    Some(path)
}

/// Whether the file at `path` starts with `line`.
fn first_line_is(path: &Path, line: &str) -> bool {
    use std::io::Read as _;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = vec![0u8; line.len()];
    file.take(line.len() as u64).read_exact(&mut head).is_ok() && head == line.as_bytes()
}

/// `config`'s entries as the trusted `git` reads them (no include followed):
/// `key\nvalue` (or a bare `key` for a value-less boolean), in order.
fn listed(config: &Path) -> Option<Vec<(String, Option<String>)>> {
    // Only a regular file is read: git would wait on a FIFO for ever, and
    // follow a link anywhere.
    if !std::fs::symlink_metadata(config).is_ok_and(|m| m.is_file()) {
        return Some(Vec::new());
    }
    let git = crate::helpers::find("git")?;
    let out = std::process::Command::new(git)
        .arg("config")
        .arg("--file")
        .arg(config)
        .args(["--list", "-z"])
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        // A config git cannot read: a view of nothing, not the file.
        return Some(Vec::new());
    }
    Some(
        out.stdout
            .split(|&b| b == 0)
            .filter(|e| !e.is_empty())
            .map(|e| {
                let e = String::from_utf8_lossy(e);
                match e.split_once('\n') {
                    Some((k, v)) => (k.to_string(), Some(v.to_string())),
                    None => (e.into_owned(), None),
                }
            })
            .collect(),
    )
}

/// The view's text: `stamp`, then the kept entries, one section header each
/// time the section changes (git reads repeated sections as one).
fn render(stamp: &str, entries: &[(String, Option<String>)]) -> String {
    let mut out = String::from(stamp);
    let mut current: Option<(String, Option<String>)> = None;
    for (key, value) in entries {
        let Some((section, rest)) = key.split_once('.') else {
            continue;
        };
        let section = section.to_ascii_lowercase();
        let (sub, name) = match rest.rsplit_once('.') {
            Some((sub, name)) => (Some(sub.to_string()), name.to_ascii_lowercase()),
            None => (None, rest.to_ascii_lowercase()),
        };
        if DROPPED_SECTIONS.contains(&section.as_str())
            || DROPPED_KEYS.contains(&format!("{section}.{name}").as_str())
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            continue;
        }
        let header = (section.clone(), sub.clone());
        if current.as_ref() != Some(&header) {
            match &sub {
                Some(sub) => out.push_str(&format!("[{section} {}]\n", quoted(sub))),
                None => out.push_str(&format!("[{section}]\n")),
            }
            current = Some(header);
        }
        match value {
            Some(v) => out.push_str(&format!("\t{name} = {}\n", written(&without_userinfo(v)))),
            None => out.push_str(&format!("\t{name}\n")),
        }
    }
    out
}

/// `v` as written in a config: as it is when it is plain (letters, digits and
/// `-_./:+@*,=`, nothing around it), else [`quoted`].
fn written(v: &str) -> String {
    let plain = !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:+@*,=".contains(c));
    if plain { v.to_string() } else { quoted(v) }
}

/// `v` in double quotes, with what git's config syntax escapes escaped and
/// other control characters dropped.
pub(crate) fn quoted(v: &str) -> String {
    let mut q = String::from("\"");
    for c in v.chars() {
        match c {
            '\\' => q.push_str("\\\\"),
            '"' => q.push_str("\\\""),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            c if c.is_control() => {}
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// `v` with the user and password taken out of every URL in it
/// (`https://user:token@host/…` → `https://host/…`).
fn without_userinfo(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(at) = rest.find("://") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let authority_end = after.find(['/', '?', '#', ' ']).unwrap_or(after.len());
        let authority = &after[..authority_end];
        match authority.rfind('@') {
            Some(i) => out.push_str(&authority[i + 1..]),
            None => out.push_str(authority),
        }
        rest = &after[authority_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_testkit::Bounded as _;

    fn repo_with(config: &str) -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let git = t.path().join(".git");
        std::fs::create_dir_all(&git).unwrap();
        std::fs::write(git.join("config"), config).unwrap();
        std::fs::create_dir_all(baton_config::state_dir(t.path())).unwrap();
        let config = git.join("config");
        (t, config)
    }

    const CI_CHECKOUT: &str = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tsshCommand = ssh -i /k/SECRET-1\n[extensions]\n\tobjectformat = sha1\n[remote \"origin\"]\n\turl = https://x-access-token:SECRET-2@github.com/o/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic SECRET-3\n[url \"https://u:SECRET-4@github.com/\"]\n\tinsteadOf = https://github.com/\n[credential]\n\thelper = store --file /x/SECRET-5\n[include]\n\tpath = /x/SECRET-6\n[includeIf \"gitdir:/x/\"]\n\tpath = /x/SECRET-7\n[branch \"feat.x/y\"]\n\tremote = origin\n\tmerge = refs/heads/feat.x/y\n[core]\n\tfilemode\n";

    #[test]
    fn the_view_keeps_the_repository_and_drops_every_credential() {
        if crate::helpers::find("git").is_none() {
            return;
        }
        let (t, config) = repo_with(CI_CHECKOUT);
        let view = source(t.path(), &config);
        assert_ne!(view, config);
        let text = std::fs::read_to_string(&view).unwrap();
        assert!(!text.contains("SECRET"), "{text}");
        // What git reads of the view is the repository's own.
        let read = std::process::Command::new("git")
            .arg("config")
            .arg("--file")
            .arg(&view)
            .arg("--list")
            .output_bounded()
            .unwrap();
        assert!(read.status.success());
        let read = String::from_utf8(read.stdout).unwrap();
        for kept in [
            "core.repositoryformatversion=0",
            "core.bare=false",
            "extensions.objectformat=sha1",
            "remote.origin.url=https://github.com/o/r.git",
            "remote.origin.fetch=+refs/heads/*:refs/remotes/origin/*",
            "branch.feat.x/y.remote=origin",
            "branch.feat.x/y.merge=refs/heads/feat.x/y",
            "core.filemode\n",
        ] {
            assert!(read.contains(kept), "{kept} in {read}");
        }
    }

    #[test]
    fn a_changed_config_gets_a_new_view_and_an_unchanged_one_keeps_it() {
        if crate::helpers::find("git").is_none() {
            return;
        }
        let (t, config) = repo_with("[core]\n\tbare = false\n");
        let first = source(t.path(), &config);
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        let before = ino(&first);
        assert_eq!(ino(&source(t.path(), &config)), before);
        // Replaced as git does (a lock file renamed over it).
        let lock = config.with_file_name("config.lock");
        std::fs::write(&lock, "[core]\n\tbare = false\n[user]\n\tname = N\n").unwrap();
        std::fs::rename(&lock, &config).unwrap();
        let again = source(t.path(), &config);
        assert_eq!(again, first);
        assert_ne!(ino(&again), before, "a new file, so the bind is renewed");
        assert!(
            std::fs::read_to_string(&again)
                .unwrap()
                .contains("name = N\n")
        );
    }

    #[test]
    fn other_protected_paths_are_their_own_source() {
        let t = tempfile::tempdir().unwrap();
        let hooks = t.path().join(".git/hooks");
        assert_eq!(source(t.path(), &hooks), hooks);
        let toml = t.path().join("baton.toml");
        assert_eq!(source(t.path(), &toml), toml);
    }

    #[test]
    fn userinfo_is_taken_out_of_every_url() {
        assert_eq!(
            without_userinfo("https://a:b@h.com/x and ssh://git@h2:22/y"),
            "https://h.com/x and ssh://h2:22/y"
        );
        assert_eq!(without_userinfo("git@github.com:o/r"), "git@github.com:o/r");
        assert_eq!(without_userinfo("/plain/path"), "/plain/path");
    }
}
