//! The few git operations baton needs, run with the real `git`.
//!
//! baton's git works in repositories the agent writes to, so it must never run
//! anything the agent configured. Two layers:
//!
//! - **A jail of its own** ([`jail`]): where bubblewrap works, every git command
//!   baton runs (but the network ones of [`git_network`], for the project's own
//!   remote) runs in a mount, PID and network namespace in which the file system is
//!   read-only except the repository it works in, the home directory is an empty
//!   tmpfs (only the user's own git config shows through), `/tmp` is private and the
//!   environment holds nothing but what git needs. Whatever git might start there
//!   (a filter of a nested repository, a configuration reached through a planted
//!   `.git/commondir`, a git feature nobody thought of) cannot read a secret, write
//!   outside the project or reach the network: the class "baton's git runs a program
//!   the agent configured" is harmless by construction, not closed one case at a
//!   time. The jail is kept warm for the run ([`warm`]): one per repository root,
//!   made fresh again after each command.
//! - **Hardening** ([`HARDENING`]): what a repository can make git run (hooks,
//!   fsmonitor, pagers, editors, ssh, credential helpers, signing programs,
//!   external diffs, textconv, submodules) is switched off, the system config is
//!   ignored, and `filter.*` drivers and `include.path` in the project's config are
//!   kept out by the gates' boundary snapshot check before any git
//!   command. Without bubblewrap this is the only layer.

use std::path::Path;
use std::process::Command;

use crate::error::HarnessError;

mod locks;
mod warm;

pub(crate) use locks::remove_stale_locks;
pub use warm::{enable as warm_jails, serve as serve_jail};

/// `-c` settings given to every git command baton runs: nothing the repository
/// configures may start a program in baton's (unsandboxed) process.
pub const HARDENING: &[&str] = &[
    // No hook runs (`--no-verify` does not skip post-commit, post-checkout…).
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.pager=cat",
    "pager.status=false",
    "pager.log=false",
    "pager.diff=false",
    "core.editor=true",
    "sequence.editor=true",
    "core.sshCommand=false",
    "core.askPass=",
    "credential.helper=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "diff.noprefix=false",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
    "status.submoduleSummary=false",
    // A nested repository (a gitlink, registered or not) is never entered: its
    // own config could name a filter.
    "diff.ignoreSubmodules=all",
    "fetch.recurseSubmodules=false",
    // No `git maintenance run --auto --detach` after each commit, merge or fetch:
    // a process each time (most of them finding nothing to do), and one that
    // outlives the command when it does work.
    "maintenance.auto=false",
    "gc.auto=0",
];

/// Run `git args…` in `dir`; stdout on success, git's stderr in the error. Runs
/// with [`HARDENING`], without the system config, and without the environment
/// variables that point git at other programs.
pub fn git(dir: &Path, args: &[&str]) -> Result<String, HarnessError> {
    run(dir, args, false)
}

/// What [`git_network`] keeps of [`HARDENING`]: everything but how to reach a
/// remote (ssh, askpass, credential helpers).
const NETWORK: &[&str] = &[
    "core.sshCommand=false",
    "core.askPass=",
    "credential.helper=",
];

/// [`git`] for talking to a shared remote (`baton run --remote`): the same
/// hardening, except that the user's ssh command, askpass and credential helpers
/// (from the environment and the user's own config, never the system's) are
/// kept, so an SSH or HTTPS remote can be reached. Only for the project's own
/// repository, whose config no agent can write.
pub fn git_network(dir: &Path, args: &[&str]) -> Result<String, HarnessError> {
    run(dir, args, true)
}

/// The `git` baton runs: found on the `PATH` baton trusts
/// ([`baton_policy::helpers`]), never one a sandboxed command could have
/// written; plain `git` when there is none (the error then says git is missing).
fn git_program() -> std::path::PathBuf {
    baton_policy::helpers::find("git").unwrap_or_else(|| "git".into())
}

/// The bubblewrap program baton's own git runs under, when one works here
/// (probed once per process).
pub fn jail() -> Option<&'static Path> {
    static BWRAP: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    BWRAP
        .get_or_init(|| {
            if cfg!(target_os = "linux") {
                baton_policy::sandbox::bwrap()
            } else {
                None
            }
        })
        .as_deref()
}

/// The directory a git command in `dir` may write: the topmost directory holding a
/// `.git`, from `dir` up (the project, for its agents' copies and its integration
/// worktree alike), never the home directory or above it.
fn writable_root(dir: &Path, home: Option<&Path>) -> std::path::PathBuf {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut root = dir.clone();
    for a in dir.ancestors() {
        if home.is_some_and(|h| h == a || h.starts_with(a)) {
            break;
        }
        if a.join(".git").exists() {
            root = a.to_path_buf();
        }
    }
    root
}

/// What git is told in the jail, whose environment starts empty: the same as
/// outside it ([`command`]).
const JAIL_ENV: &[(&str, &str)] = &[
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_PAGER", "cat"),
    ("GIT_EDITOR", "true"),
];

/// The absolute path of `dir` (bwrap changes directory inside the jail).
fn absolute(dir: &Path) -> std::path::PathBuf {
    dir.canonicalize().unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|c| c.join(dir))
            .unwrap_or_else(|_| dir.to_path_buf())
    })
}

/// The home directory the jail empties (and shows the user's git config in).
fn jail_home() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .filter(|h| h.is_absolute() && h.is_dir() && h.as_os_str() != "/")
}

/// `bwrap` arguments, up to and including `--`, that jail a git command in `dir`
/// ([`jail_mounts`] of its root, git's directory pinned, `dir` its working
/// directory).
fn jail_args(bwrap: &Path, dir: &Path, pinned: Option<&Path>) -> Vec<std::ffi::OsString> {
    let dir = absolute(dir);
    let root = writable_root(&dir, jail_home().as_deref());
    let mut v = jail_mounts(bwrap, &root);
    if let Some(g) = pinned {
        for k in ["GIT_DIR", "GIT_COMMON_DIR"] {
            v.extend(["--setenv".into(), k.into(), g.as_os_str().to_os_string()]);
        }
    }
    v.extend(["--chdir".into(), dir.into_os_string()]);
    v.push("--".into());
    v
}

/// The `bwrap` program and arguments of baton's git jail for the repository root
/// `root`, before what runs in it: everything read-only but `root`, an empty home
/// but the user's own git config, private `/tmp`, `/dev` and `/proc`, no network,
/// and an environment of `PATH`, `HOME`, `LANG` and git's own settings alone.
fn jail_mounts(bwrap: &Path, root: &Path) -> Vec<std::ffi::OsString> {
    let home = jail_home();
    let mut v: Vec<std::ffi::OsString> = vec![
        bwrap.into(),
        "--die-with-parent".into(),
        "--unshare-pid".into(),
        "--unshare-net".into(),
        "--unshare-ipc".into(),
        "--ro-bind".into(),
        "/".into(),
        "/".into(),
        "--dev".into(),
        "/dev".into(),
        "--proc".into(),
        "/proc".into(),
        "--tmpfs".into(),
        "/tmp".into(),
        "--clearenv".into(),
    ];
    let mut set = |k: &str, val: std::ffi::OsString| {
        v.extend(["--setenv".into(), k.into(), val]);
    };
    if let Some(path) = std::env::var_os("PATH") {
        set("PATH", path);
    }
    for (k, val) in JAIL_ENV {
        set(k, val.into());
    }
    for k in ["LANG", "LC_ALL", "TZ"] {
        if let Some(val) = std::env::var_os(k) {
            set(k, val);
        }
    }
    if let Some(h) = &home {
        set("HOME", h.clone().into_os_string());
        v.extend(["--tmpfs".into(), h.clone().into_os_string()]);
        for own in [".gitconfig", ".config/git"] {
            let p = h.join(own).into_os_string();
            v.extend(["--ro-bind-try".into(), p.clone(), p]);
        }
    }
    let root = root.as_os_str().to_os_string();
    v.extend(["--bind".into(), root.clone(), root]);
    v
}

/// `git args…` in `dir`, hardened (see [`git`]) and, unless `network` (which keeps
/// how to reach a remote, for the project's own), jailed where bubblewrap works.
fn command(dir: &Path, args: &[&str], network: bool) -> Command {
    let pinned = pinned_git_dir(dir, args);
    let mut cmd = match jail().filter(|_| !network) {
        Some(bwrap) => {
            let a = jail_args(bwrap, dir, pinned.as_deref());
            let mut c = Command::new(&a[0]);
            c.args(&a[1..]).arg(git_program());
            c
        }
        None => Command::new(git_program()),
    };
    git_part(&mut cmd, dir, args, network, pinned.as_deref());
    cmd
}

/// What every git command of baton's is given: the hardening, `args`, its
/// directory and environment.
fn git_part(cmd: &mut Command, dir: &Path, args: &[&str], network: bool, pinned: Option<&Path>) {
    for h in HARDENING {
        if network && NETWORK.contains(h) {
            continue;
        }
        cmd.arg("-c").arg(h);
    }
    if !network {
        cmd.env_remove("GIT_SSH")
            .env_remove("GIT_SSH_COMMAND")
            .env_remove("GIT_ASKPASS");
    }
    cmd.args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PAGER", "cat")
        .env("GIT_EDITOR", "true")
        .env_remove("GIT_EXTERNAL_DIFF")
        .env_remove("GIT_DIR")
        .env_remove("GIT_COMMON_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_CONFIG")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .env_remove("GIT_CONFIG_COUNT");
    if let Some(g) = pinned {
        cmd.env("GIT_DIR", g).env("GIT_COMMON_DIR", g);
    }
}

/// `git args…` in `dir` (with `input`, if any) in the warm jail of its root
/// ([`warm`]); `None` when no warm jail took it (run it in a jail of its own).
fn run_warm(
    dir: &Path,
    args: &[&str],
    input: Option<&[u8]>,
) -> Option<Result<String, HarnessError>> {
    let bwrap = jail()?;
    let abs = absolute(dir);
    let git = git_program();
    let mut plain = Command::new(&git);
    git_part(
        &mut plain,
        &abs,
        args,
        false,
        pinned_git_dir(dir, args).as_deref(),
    );
    let ask = warm::Ask {
        git: &git,
        dir: &abs,
        args: plain.get_args().map(|a| a.to_os_string()).collect(),
        env: plain
            .get_envs()
            .map(|(k, v)| (k.to_os_string(), v.map(|v| v.to_os_string())))
            .collect(),
        input,
    };
    let root = writable_root(&abs, jail_home().as_deref());
    let start = || {
        let a = jail_mounts(bwrap, &root);
        let mut c = Command::new(&a[0]);
        c.args(&a[1..]);
        c
    };
    let limit = limit(false);
    match warm::run(&root, start, &ask, limit) {
        warm::Warm::Ran(out) => Some(finish(dir, args, out)),
        warm::Warm::Stopped => Some(Err(stopped_error(dir, args, limit))),
        warm::Warm::Cold => None,
    }
}

/// The git directory baton's git is pinned to in `dir`: its `.git` when that is a
/// directory (a repository of its own, not a linked worktree), for every command
/// but those that make a repository. git then never follows a `.git/commondir`
/// (which a process left running could plant between the gates' restore and
/// baton's next git command, sending git to another config) nor looks elsewhere.
fn pinned_git_dir(dir: &Path, args: &[&str]) -> Option<std::path::PathBuf> {
    let makes_one = matches!(args.first(), Some(&("clone" | "init" | "worktree")));
    // Absolute: git reads it relative to the directory it runs in.
    let g = dir.canonicalize().ok()?.join(".git");
    (!makes_one && std::fs::symlink_metadata(&g).is_ok_and(|m| m.is_dir())).then_some(g)
}

fn run(dir: &Path, args: &[&str], network: bool) -> Result<String, HarnessError> {
    if !network && let Some(out) = run_warm(dir, args, None) {
        return out;
    }
    let mut cmd = command(dir, args, network);
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    match cmd.spawn() {
        Ok(child) => bounded(dir, args, child, limit(network)),
        Err(e) => finish(dir, args, Err(e)),
    }
}

/// Wait for `child` (git `args` in `dir`) at most `limit`: a watchdog kills it
/// then, since git blocks on a FIFO or a lock the agent left where it reads, and
/// baton must never hang on one. Its stdout on success, else an error that says
/// what happened.
fn bounded(
    dir: &Path,
    args: &[&str],
    child: std::process::Child,
    limit: std::time::Duration,
) -> Result<String, HarnessError> {
    let pid = child.id();
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stopped.clone();
    let watchdog = std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            // Our child, not yet reaped: the waiting thread reaps it only after.
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    });
    let out = child.wait_with_output();
    let _ = done.send(());
    let _ = watchdog.join();
    if stopped.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(stopped_error(dir, args, limit));
    }
    finish(dir, args, out)
}

/// The error of a git command stopped at its time limit.
fn stopped_error(dir: &Path, args: &[&str], limit: std::time::Duration) -> HarnessError {
    HarnessError::Git {
        args: args.join(" "),
        dir: dir.to_path_buf(),
        message: format!(
            "git did not finish within {}s and was stopped ([git] timeout_secs): something it reads may be a FIFO, a device or a lock left in .git or the tree",
            limit.as_secs()
        ),
    }
}

/// How long one of baton's git commands may take ([`set_timeout`]); a network
/// one ten times as long.
fn limit(network: bool) -> std::time::Duration {
    let secs = TIMEOUT_SECS.load(std::sync::atomic::Ordering::Relaxed);
    std::time::Duration::from_secs(if network {
        secs.saturating_mul(10)
    } else {
        secs
    })
}

/// `[git] timeout_secs`, for every git command of this process.
static TIMEOUT_SECS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(300);

/// Bound every git command baton runs from now on to `secs` (`[git]
/// timeout_secs`; at least one second).
pub fn set_timeout(secs: u64) {
    TIMEOUT_SECS.store(secs.max(1), std::sync::atomic::Ordering::Relaxed);
}

/// [`git`] with `input` on its standard input.
fn git_with_input(dir: &Path, args: &[&str], input: &[u8]) -> Result<String, HarnessError> {
    use std::io::Write as _;
    if let Some(out) = run_warm(dir, args, Some(input)) {
        return out;
    }
    let mut cmd = command(dir, args, false);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return finish(dir, args, Err(e)),
    };
    // Written beside the wait, so a git that never reads cannot block baton; a
    // write that fails shows in git's exit.
    let writer = child.stdin.take().map(|mut stdin| {
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    });
    let out = bounded(dir, args, child, limit(false));
    if let Some(w) = writer {
        let _ = w.join();
    }
    out
}

/// [`git`] without blocking the thread: for work that runs while the same task
/// does other things (a parallel run's integration, while agents are handed
/// work).
pub async fn git_async(dir: &Path, args: &[&str]) -> Result<String, HarnessError> {
    let mut cmd = tokio::process::Command::from(command(dir, args, false));
    cmd.kill_on_drop(true);
    let limit = limit(false);
    match tokio::time::timeout(limit, cmd.output()).await {
        Ok(out) => finish(dir, args, out),
        // Dropped, the child is killed.
        Err(_) => Err(stopped_error(dir, args, limit)),
    }
}

/// git's stdout on success, else its stderr in the error.
fn finish(
    dir: &Path,
    args: &[&str],
    out: std::io::Result<std::process::Output>,
) -> Result<String, HarnessError> {
    let out = out.map_err(|e| HarnessError::Git {
        args: args.join(" "),
        dir: dir.to_path_buf(),
        message: format!("cannot run git: {e}"),
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(HarnessError::Git {
            args: args.join(" "),
            dir: dir.to_path_buf(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// Whether `dir` is inside a git work tree.
pub fn is_repo(dir: &Path) -> bool {
    git(dir, &["rev-parse", "--is-inside-work-tree"]).is_ok_and(|s| s.trim() == "true")
}

/// Whether `dir` is the top of a git repository of its own, not merely a directory
/// inside another one (whose commits would then land in that repository): it has a
/// `.git` (no process to ask), or git names it as its work tree's top.
pub fn is_top(dir: &Path) -> bool {
    if dir.join(".git").exists() {
        return true;
    }
    let Ok(top) = git(dir, &["rev-parse", "--show-toplevel"]) else {
        return false;
    };
    match (Path::new(top.trim()).canonicalize(), dir.canonicalize()) {
        (Ok(top), Ok(dir)) => top == dir,
        _ => false,
    }
}

/// The commit `rev` names in `dir` (`HEAD`, a ref), or the error naming it.
pub fn rev(dir: &Path, rev: &str) -> Result<String, HarnessError> {
    Ok(git(dir, &["rev-parse", rev])?.trim().to_string())
}

/// The commit at `HEAD` in `dir`, read from the repository's files without
/// starting git: a detached `HEAD`, or a branch whose ref is a loose file (what
/// git writes after a commit, merge or fetch). `None` whenever it is anything
/// else (packed refs, reftable, an unborn branch, a file that is not a regular
/// one): ask git then. Only for repositories no agent writes (the project's,
/// its integration worktree): an agent's copy is read through git.
pub fn head_from_files(dir: &Path) -> Option<String> {
    let dot = dir.join(".git");
    let meta = std::fs::symlink_metadata(&dot).ok()?;
    let gitdir = if meta.is_dir() {
        dot
    } else if meta.is_file() {
        // A worktree: `gitdir: <path>`.
        let text = std::fs::read_to_string(&dot).ok()?;
        let path = Path::new(text.strip_prefix("gitdir:")?.trim());
        dir.join(path)
    } else {
        return None;
    };
    let read = |p: &Path| -> Option<String> {
        std::fs::symlink_metadata(p).ok().filter(|m| m.is_file())?;
        Some(std::fs::read_to_string(p).ok()?.trim().to_string())
    };
    let object =
        |s: &str| (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit());
    let head = read(&gitdir.join("HEAD"))?;
    if object(&head) {
        return Some(head);
    }
    let name = head.strip_prefix("ref:")?.trim();
    if !name.starts_with("refs/heads/") || name.split('/').any(|c| c.is_empty() || c == "..") {
        return None;
    }
    // Branches live in the common directory (a worktree's `commondir` names it).
    let common = match read(&gitdir.join("commondir")) {
        Some(c) => gitdir.join(c),
        None => gitdir,
    };
    let commit = read(&common.join(name))?;
    object(&commit).then_some(commit)
}

/// The commit at `HEAD` of a repository no agent writes: from its files when
/// they say it plainly ([`head_from_files`]), else from git.
pub fn own_head(dir: &Path) -> Result<String, HarnessError> {
    match head_from_files(dir) {
        Some(h) => Ok(h),
        None => rev(dir, "HEAD"),
    }
}

/// The commit at HEAD, or `None` before the first commit.
pub fn head(dir: &Path) -> Option<String> {
    git(dir, &["rev-parse", "--verify", "-q", "HEAD"])
        .ok()
        .map(|s| s.trim().to_string())
}

/// After a session that started at `before`: when the branch no longer holds
/// `before` (the session ran `git reset`, a rebase or an amend, in a command or a
/// script, which the policy cannot stop), join the dropped history back with a
/// commit whose parents are `before` and the session's head and whose tree is the
/// session's, so nothing earlier is lost. Returns what was done, for the record:
/// `None` when the history was whole.
pub fn rejoin(dir: &Path, before: &str, session: u32) -> Result<Option<String>, HarnessError> {
    let Some(now) = head(dir) else {
        return Ok(None);
    };
    if now == before
        || git(dir, &["cat-file", "-e", &format!("{before}^{{commit}}")]).is_err()
        || git(dir, &["merge-base", "--is-ancestor", before, &now]).is_ok()
    {
        return Ok(None);
    }
    let dropped = git(dir, &["rev-list", "--count", &format!("{now}..{before}")])?;
    let dropped = dropped.trim();
    let tree = rev(dir, &format!("{now}^{{tree}}"))?;
    let short = &before[..before.len().min(9)];
    let msg = format!(
        "baton: rejoin the history session {session} rewound\n\nThe session moved the branch off {short} (git reset, rebase or amend): {dropped} commit(s) were no longer on it. baton joins them back so nothing earlier is lost; the tree is the session's."
    );
    let joined = git(
        dir,
        &["commit-tree", &tree, "-p", before, "-p", &now, "-m", &msg],
    )?;
    let joined = joined.trim();
    git(
        dir,
        &[
            "update-ref",
            "-m",
            "baton: rejoin rewound history",
            "HEAD",
            joined,
        ],
    )?;
    Ok(Some(format!(
        "the session rewrote history (the branch no longer held {short}: {dropped} commit(s) dropped by git reset, rebase or amend); baton joined them back in {}",
        &joined[..joined.len().min(9)]
    )))
}

/// Make commits possible without touching the user's global config: when git
/// resolves no author name or email in this repository, set the configured identity
/// in the repository's own config (so the agent's commits work too). Also make sure
/// `.baton/` is never committed, via `.git/info/exclude` when `.gitignore` misses it.
pub fn prepare(dir: &Path, name: &str, email: &str) -> Result<(), HarnessError> {
    // Both keys in one git call (it runs before every session); the last value
    // of a key is the one git uses.
    let found = git(dir, &["config", "--get-regexp", r"^user\.(name|email)$"]).unwrap_or_default();
    for (key, value) in [("user.name", name), ("user.email", email)] {
        let resolved = found
            .lines()
            .filter_map(|l| l.split_once(' ').or(Some((l, ""))))
            .filter(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.trim())
            .next_back()
            .unwrap_or_default();
        if resolved.is_empty() {
            git(dir, &["config", "--local", key, value])?;
        }
    }
    // The places the sandbox binds read-only must exist before a session, or the
    // agent could create them.
    for d in ["hooks", "info"] {
        let p = dir.join(".git").join(d);
        if dir.join(".git").is_dir() {
            std::fs::create_dir_all(&p).map_err(crate::error::io(&p))?;
        }
    }
    if git(dir, &["check-ignore", "-q", ".baton/"]).is_err() {
        let info = dir.join(".git/info");
        std::fs::create_dir_all(&info).map_err(crate::error::io(&info))?;
        let exclude = info.join("exclude");
        let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("# baton's records\n.baton/\n");
        std::fs::write(&exclude, text).map_err(crate::error::io(&exclude))?;
    }
    Ok(())
}

/// Paths with uncommitted changes (untracked files included), as `git status` names them.
pub fn dirty_paths(dir: &Path) -> Result<Vec<String>, HarnessError> {
    Ok(dirty(dir)?.into_iter().map(|d| d.path).collect())
}

/// Clear the skip-worktree and assume-unchanged bits of every index entry that
/// has one: with them a session can hide a change from `git status`, and so from
/// the gates' commit of leftovers and from the user. Returns the paths.
pub fn unhide(dir: &Path) -> Result<Vec<String>, HarnessError> {
    let listed = git(dir, &["ls-files", "-v", "-z"])?;
    let mut skipped = Vec::new();
    let mut assumed = Vec::new();
    for e in listed.split('\0') {
        let Some((tag, path)) = e.split_once(' ') else {
            continue;
        };
        if tag == "S" || tag == "s" {
            skipped.push(path.to_string());
        }
        if !tag.is_empty() && tag.chars().all(|c| c.is_ascii_lowercase()) {
            assumed.push(path.to_string());
        }
    }
    // One bit per call: git applies only the last of the two flags.
    for (paths, flag) in [
        (&skipped, "--no-skip-worktree"),
        (&assumed, "--no-assume-unchanged"),
    ] {
        if paths.is_empty() {
            continue;
        }
        let mut input = paths.join("\0").into_bytes();
        input.push(0);
        git_with_input(dir, &["update-index", "-z", flag, "--stdin"], &input)?;
    }
    let mut hidden = skipped;
    for p in assumed {
        if !hidden.contains(&p) {
            hidden.push(p);
        }
    }
    Ok(hidden)
}

/// When the commits since `before` changed `path` (a file baton guards, whose
/// work-tree copy baton's snapshot has just put back), commit the work-tree copy
/// again, so history holds baton's file for a clone, a worker or a checkout.
/// Returns what was done, for the record (nothing when history already holds
/// baton's file).
pub fn restore_committed(
    dir: &Path,
    before: &str,
    path: &str,
    session: u32,
) -> Result<Option<String>, HarnessError> {
    let same = git(
        dir,
        &[
            "diff",
            "--quiet",
            "--no-ext-diff",
            "--no-textconv",
            before,
            "HEAD",
            "--",
            path,
        ],
    );
    if same.is_ok() {
        return Ok(None);
    }
    let msg = format!(
        "baton: put back {path} after session {session}\n\nThe session's commits changed {path}, a file baton guards; this commit restores it as baton's snapshot holds it."
    );
    // Nothing to put back when the session committed the file as baton holds it
    // (a change of the user's that was not committed yet).
    Ok(commit(dir, &msg, &[path], &[])?.map(|_| {
        format!("{path} was changed in the session's commits; put back in a commit of baton's")
    }))
}

/// Put tracked `paths` back as HEAD holds them (a check run changed them).
pub fn restore_tracked(dir: &Path, paths: &[String]) -> Result<(), HarnessError> {
    if paths.is_empty() {
        return Ok(());
    }
    let mut input: Vec<u8> = Vec::new();
    for p in paths {
        input.extend_from_slice(format!(":(literal){p}").as_bytes());
        input.push(0);
    }
    git_with_input(
        dir,
        &[
            "checkout",
            "-q",
            "HEAD",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
        ],
        &input,
    )
    .map(drop)
}

/// Every changed, new or deleted path of the work tree, and whether git tracks it.
pub fn dirty(dir: &Path) -> Result<Vec<crate::leftovers::Dirty>, HarnessError> {
    let out = git(
        dir,
        &["status", "--porcelain=v1", "--untracked-files=all", "-z"],
    )?;
    let mut paths = Vec::new();
    let mut parts = out.split('\0').filter(|s| !s.is_empty());
    while let Some(entry) = parts.next() {
        if entry.len() > 3 {
            paths.push(crate::leftovers::Dirty {
                path: entry[3..].to_string(),
                untracked: entry.starts_with("??"),
            });
            // A rename is followed by its source path.
            if entry.starts_with('R') || entry.starts_with('C') {
                parts.next();
            }
        }
    }
    Ok(paths)
}

/// Stage `paths` (all changes when empty) except `exclude`, and commit with `message`,
/// bypassing the project's hooks. Returns the new commit, or `None` if nothing was staged.
pub fn commit(
    dir: &Path,
    message: &str,
    paths: &[&str],
    exclude: &[&str],
) -> Result<Option<String>, HarnessError> {
    // The pathspecs go through standard input: a session can leave more files
    // than a command line holds.
    let mut specs: Vec<String> = if paths.is_empty() {
        vec![".".into()]
    } else {
        paths.iter().map(|p| p.to_string()).collect()
    };
    specs.extend(exclude.iter().map(|e| format!(":(exclude){e}")));
    let mut input = specs.join("\0").into_bytes();
    input.push(0);
    git_with_input(
        dir,
        &["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"],
        &input,
    )?;
    if git(
        dir,
        &[
            "diff",
            "--cached",
            "--quiet",
            "--no-ext-diff",
            "--no-textconv",
        ],
    )
    .is_ok()
    {
        return Ok(None);
    }
    git(dir, &["commit", "-q", "--no-verify", "-m", message])?;
    Ok(head(dir))
}

/// Whether `ancestor` is an ancestor of (or the same commit as) `of`.
pub fn is_ancestor(dir: &Path, ancestor: &str, of: &str) -> bool {
    git(dir, &["merge-base", "--is-ancestor", ancestor, of]).is_ok()
}

/// `git log --oneline -N`, or an empty string before the first commit.
pub fn log_oneline(dir: &Path, n: usize) -> String {
    git(dir, &["log", "--oneline", &format!("-{n}")]).unwrap_or_default()
}

/// Commits between `from` (exclusive) and HEAD.
pub fn commits_since(dir: &Path, from: Option<&str>) -> usize {
    let range = match from {
        Some(f) => format!("{f}..HEAD"),
        None => "HEAD".to_string(),
    };
    git(dir, &["rev-list", "--count", &range])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// Both ways of hiding a change from `git status` are undone, each path named
    /// once, and the change shows again.
    #[test]
    fn hidden_changes_are_made_visible() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        git(dir, &["init", "-q"]).unwrap();
        prepare(dir, "t", "t@localhost").unwrap();
        for f in ["a", "b", "c"] {
            std::fs::write(dir.join(f), "1\n").unwrap();
        }
        commit(dir, "files", &[], &[]).unwrap();
        git(dir, &["update-index", "--skip-worktree", "a"]).unwrap();
        git(dir, &["update-index", "--assume-unchanged", "b"]).unwrap();
        for f in ["a", "b"] {
            std::fs::write(dir.join(f), "2\n").unwrap();
        }
        assert!(dirty_paths(dir).unwrap().is_empty());
        assert_eq!(unhide(dir).unwrap(), ["a", "b"]);
        assert_eq!(dirty_paths(dir).unwrap(), ["a", "b"]);
        assert!(unhide(dir).unwrap().is_empty());
    }

    /// More paths than a command line holds (over 2 MB of them) are committed:
    /// the leftover commit names every file it keeps.
    #[test]
    fn a_commit_of_more_paths_than_a_command_line_holds() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        git(dir, &["init", "-q"]).unwrap();
        prepare(dir, "t", "t@localhost").unwrap();
        let deep = dir.join("d".repeat(150)).join("e".repeat(50));
        std::fs::create_dir_all(&deep).unwrap();
        let rel = deep.strip_prefix(dir).unwrap().display().to_string();
        let mut paths = Vec::new();
        for i in 0..11_000 {
            std::fs::write(deep.join(format!("{i:05}")), "").unwrap();
            paths.push(format!(":(literal){rel}/{i:05}"));
        }
        assert!(paths.iter().map(String::len).sum::<usize>() > 2 * 1024 * 1024);
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        assert!(commit(dir, "many", &refs, &[]).unwrap().is_some());
        assert!(dirty_paths(dir).unwrap().is_empty());
    }

    #[test]
    fn a_directory_inside_a_repository_is_not_its_top() {
        let t = tempfile::tempdir().unwrap();
        let outer = t.path();
        assert!(!is_top(outer));
        git(outer, &["init", "-q"]).unwrap();
        assert!(is_top(outer));
        let inner = outer.join("inner");
        std::fs::create_dir(&inner).unwrap();
        assert!(is_repo(&inner), "inside the outer repository");
        assert!(!is_top(&inner), "but not its top");
        git(&inner, &["init", "-q"]).unwrap();
        assert!(is_top(&inner));
    }

    #[test]
    fn head_read_from_files_is_gits_head_or_none() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        git(dir, &["init", "-q"]).unwrap();
        prepare(dir, "t", "t@example.com").unwrap();
        // Unborn: nothing to read, and git has no HEAD either.
        assert_eq!(head_from_files(dir), None);
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        commit(dir, "one", &[], &[]).unwrap();
        let gits = rev(dir, "HEAD").unwrap();
        assert_eq!(head_from_files(dir), Some(gits.clone()));
        // A detached worktree: its HEAD in the main repository's git dir.
        let wt = dir.join("wt");
        git(
            dir,
            &[
                "worktree",
                "add",
                "-q",
                "--detach",
                &wt.display().to_string(),
                "HEAD",
            ],
        )
        .unwrap();
        assert_eq!(head_from_files(&wt), Some(gits.clone()));
        // A worktree on a branch: the ref from the common directory.
        git(&wt, &["checkout", "-q", "-b", "side"]).unwrap();
        std::fs::write(wt.join("b.txt"), "b\n").unwrap();
        commit(&wt, "two", &[], &[]).unwrap();
        assert_eq!(head_from_files(&wt), Some(rev(&wt, "HEAD").unwrap()));
        // Packed refs: not read by hand, git answers.
        git(dir, &["pack-refs", "--all"]).unwrap();
        assert_eq!(head_from_files(dir), None);
        assert_eq!(own_head(dir).unwrap(), gits);
    }

    #[test]
    fn planted_hooks_fsmonitor_and_pager_do_not_run_in_batons_git() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let marker = outside.path().join("ran");
        let dir = t.path();
        git(dir, &["init", "-q"]).unwrap();
        prepare(dir, "t", "t@example.com").unwrap();
        let evil = dir.join(".git/evil");
        std::fs::write(&evil, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
        std::fs::set_permissions(&evil, std::fs::Permissions::from_mode(0o755)).unwrap();
        for hook in [
            "post-commit",
            "pre-commit",
            "commit-msg",
            "post-index-change",
        ] {
            std::fs::copy(&evil, dir.join(".git/hooks").join(hook)).unwrap();
        }
        let e = evil.display().to_string();
        for (k, v) in [
            ("core.fsmonitor", e.as_str()),
            ("core.pager", e.as_str()),
            ("core.editor", e.as_str()),
            ("gpg.program", e.as_str()),
            ("commit.gpgSign", "true"),
        ] {
            git(dir, &["config", k, v]).unwrap();
        }
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        let _ = dirty_paths(dir).unwrap();
        let c = commit(dir, "msg", &[], &[]).unwrap();
        assert!(c.is_some());
        let _ = log_oneline(dir, 5);
        assert!(!marker.exists(), "a program of the repository's ran");
    }
}
