//! A warm jail for baton's git: one bubblewrap jail per repository root, started
//! once and kept, which runs each of baton's git commands as a child of its own
//! (`baton __gitjail`, [`serve`]) instead of starting a jail per command. A jail
//! costs about 5 ms to start and a gate runs a dozen git commands, so this is most
//! of what baton's own git costs. A root's first command still gets a jail of its
//! own: a process that runs one or two (`baton exec`, `baton status`) pays no
//! server start.
//!
//! It is the same jail ([`super::jail_mounts`]: the file system read-only but the
//! repository's root, an empty home, private `/tmp`, `/dev` and `/proc`, no
//! network, an environment of git's own), and nothing lives from one command into
//! the next, as with a jail per command: after each command the server kills every
//! other process in the jail's PID namespace (whatever git started: a filter a
//! nested repository configured, a detached helper) and empties `/tmp`, the home
//! and `/dev/shm`, before it answers. It is not dumpable, so nothing git starts can
//! trace it or open its pipes. A command that finds the jail busy (another thread's
//! git) or gone runs in a jail of its own, as before.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

/// The baton executable whose `__gitjail` serves the warm jails; unset, every git
/// command gets a jail of its own.
static EXE: OnceLock<PathBuf> = OnceLock::new();

/// Serve baton's git from warm jails run as `exe __gitjail` (the baton binary;
/// a library's tests leave it unset).
pub fn enable(exe: PathBuf) {
    let _ = EXE.set(exe);
}

/// Warm jails kept at once, at most (one per repository root baton works in).
const MAX_JAILS: usize = 8;

/// A running jail: the bubblewrap process and the server's pipes.
struct Jail {
    child: Child,
    to: ChildStdin,
    from: ChildStdout,
}

impl Jail {
    /// Stop it for good: killed (its namespace with it) and reaped.
    fn end(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Slot = Arc<Mutex<Option<Jail>>>;

/// The warm jails by repository root.
fn jails() -> &'static Mutex<Vec<(PathBuf, Slot)>> {
    static JAILS: OnceLock<Mutex<Vec<(PathBuf, Slot)>>> = OnceLock::new();
    JAILS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Start `cmd` from one thread that lives as long as the process: bubblewrap's
/// `--die-with-parent` ends a jail when the *thread* that started it ends, and the
/// thread that asks first may be a pool's, which ends when idle.
fn spawn(mut cmd: Command) -> std::io::Result<Child> {
    type Ask = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Ask>>> = OnceLock::new();
    let tx = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Ask>();
        std::thread::spawn(move || {
            for (mut cmd, back) in rx {
                let _ = back.send(cmd.spawn());
            }
        });
        Mutex::new(tx)
    });
    let (back, answer) = mpsc::channel();
    let sent = tx
        .lock()
        .map_err(|_| std::io::Error::other("spawner lost"))?
        .send((std::mem::replace(&mut cmd, Command::new("true")), back));
    if sent.is_err() {
        return Err(std::io::Error::other("spawner lost"));
    }
    answer
        .recv()
        .map_err(|_| std::io::Error::other("spawner lost"))?
}

/// One git command for a warm jail.
pub(super) struct Ask<'a> {
    /// The git program.
    pub git: &'a Path,
    /// The directory it runs in.
    pub dir: &'a Path,
    /// Its arguments (the hardening included).
    pub args: Vec<OsString>,
    /// Its environment beyond the jail's: `(name, Some(value))` set, `None` removed.
    pub env: Vec<(OsString, Option<OsString>)>,
    /// Its standard input, if any (else `/dev/null`).
    pub input: Option<&'a [u8]>,
}

/// What a warm jail made of a command.
pub(super) enum Warm {
    /// It ran: git's output, or why the jail could not say.
    Ran(std::io::Result<Output>),
    /// It did not finish within its limit; the jail was killed with it.
    Stopped,
    /// No warm jail took it (none enabled, busy, or none could start): run it
    /// in a jail of its own.
    Cold,
}

/// Run `ask` in the warm jail of `root` (started with `start` when there is none
/// or it ended), stopped after `limit`.
pub(super) fn run(
    root: &Path,
    start: impl FnOnce() -> Command,
    ask: &Ask<'_>,
    limit: Duration,
) -> Warm {
    let Some(exe) = EXE.get() else {
        return Warm::Cold;
    };
    let slot = {
        let Ok(mut all) = jails().lock() else {
            return Warm::Cold;
        };
        match all.iter().find(|(r, _)| r == root) {
            Some((_, s)) => s.clone(),
            // The first command in a root runs in a jail of its own: a process
            // that runs one or two (`baton exec`, `baton status`) would pay the
            // server's start for nothing. The next one starts the warm jail.
            None if all.len() < MAX_JAILS => {
                all.push((root.to_path_buf(), Arc::new(Mutex::new(None))));
                return Warm::Cold;
            }
            None => return Warm::Cold,
        }
    };
    let Ok(mut held) = slot.try_lock() else {
        return Warm::Cold;
    };
    let request = encode(ask);
    let mut start = Some(start);
    // A jail that ended since (or never started) is started; a request it could
    // not take ran nothing, so it is sent once more to a fresh one.
    for _ in 0..2 {
        if held
            .as_mut()
            .is_none_or(|j| !matches!(j.child.try_wait(), Ok(None)))
        {
            if let Some(old) = held.take() {
                old.end();
            }
            let Some(make) = start.take() else {
                return Warm::Cold;
            };
            let mut cmd = make();
            // The home is empty in the jail: baton itself may live there.
            cmd.arg("--ro-bind")
                .arg(exe)
                .arg(exe)
                .args(["--chdir", "/", "--"])
                .arg(exe)
                .arg("__gitjail")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null());
            let Ok(mut child) = spawn(cmd) else {
                return Warm::Cold;
            };
            let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
                let _ = child.kill();
                let _ = child.wait();
                return Warm::Cold;
            };
            let mut jail = Jail { child, to, from };
            // A server that does not say it is ready (its jail is not as it
            // must be) serves nothing: its commands run in jails of their own.
            match watched(&mut jail, Duration::from_secs(30), get) {
                Some(Ok(hello)) if hello == READY => *held = Some(jail),
                _ => {
                    jail.end();
                    return Warm::Cold;
                }
            }
        }
        let Some(jail) = held.as_mut() else {
            return Warm::Cold;
        };
        if jail
            .to
            .write_all(&request)
            .and_then(|()| jail.to.flush())
            .is_ok()
        {
            return answer(&mut held, limit);
        }
        if let Some(old) = held.take() {
            old.end();
        }
    }
    Warm::Cold
}

/// `read` from `jail`'s server, killing the jail at `limit`: `None` when it was
/// killed.
fn watched<T>(
    jail: &mut Jail,
    limit: Duration,
    read: impl FnOnce(&mut ChildStdout) -> T,
) -> Option<T> {
    let pid = jail.child.id();
    let (done, wait) = mpsc::channel::<()>();
    let stopped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stopped.clone();
    let watchdog = std::thread::spawn(move || {
        if let Err(mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(limit) {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            // Not reaped before this thread is joined: the pid is still the jail's.
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    });
    let out = read(&mut jail.from);
    let _ = done.send(());
    let _ = watchdog.join();
    (!stopped.load(std::sync::atomic::Ordering::SeqCst)).then_some(out)
}

/// Read the answer to the request just sent to `held`'s jail, killing the jail
/// at `limit`.
fn answer(held: &mut Option<Jail>, limit: Duration) -> Warm {
    let Some(jail) = held.as_mut() else {
        return Warm::Cold;
    };
    let Some(read) = watched(jail, limit, read_answer) else {
        if let Some(old) = held.take() {
            old.end();
        }
        return Warm::Stopped;
    };
    match read {
        Ok((out, more)) => {
            if !more && let Some(old) = held.take() {
                old.end();
            }
            Warm::Ran(Ok(out))
        }
        Err(e) => {
            if let Some(old) = held.take() {
                old.end();
            }
            Warm::Ran(Err(std::io::Error::other(format!(
                "baton's git jail ended before it answered ({e})"
            ))))
        }
    }
}

/// Frames: a little-endian `u32` length, then that many bytes.
fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// The largest frame either side reads (git's whole output included).
const MAX_FRAME: usize = 1 << 30;

fn get(r: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_FRAME {
        return Err(std::io::Error::other("a frame too large"));
    }
    let mut v = vec![0u8; len];
    r.read_exact(&mut v)?;
    Ok(v)
}

fn count(r: &mut impl Read) -> std::io::Result<usize> {
    let v = get(r)?;
    std::str::from_utf8(&v)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("a count that is not a number"))
}

/// A request: the git program, the directory, the arguments, the environment
/// (`NAME=VALUE` set, `NAME` removed), whether there is input and the input.
fn encode(ask: &Ask<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    put(&mut out, ask.git.as_os_str().as_bytes());
    put(&mut out, ask.dir.as_os_str().as_bytes());
    put(&mut out, ask.args.len().to_string().as_bytes());
    for a in &ask.args {
        put(&mut out, a.as_bytes());
    }
    put(&mut out, ask.env.len().to_string().as_bytes());
    for (k, v) in &ask.env {
        let mut e = k.as_bytes().to_vec();
        if let Some(v) = v {
            e.push(b'=');
            e.extend_from_slice(v.as_bytes());
        }
        put(&mut out, &e);
    }
    put(&mut out, if ask.input.is_some() { b"1" } else { b"0" });
    put(&mut out, ask.input.unwrap_or_default());
    out
}

/// git's output, and whether the jail serves more commands.
fn read_answer(r: &mut impl Read) -> std::io::Result<(Output, bool)> {
    use std::os::unix::process::ExitStatusExt as _;
    let status = get(r)?;
    let raw = i32::from_le_bytes(
        status
            .as_slice()
            .try_into()
            .map_err(|_| std::io::Error::other("a status that is not four bytes"))?,
    );
    let stdout = get(r)?;
    let stderr = get(r)?;
    let more = get(r)? == b"1";
    Ok((
        Output {
            status: std::process::ExitStatus::from_raw(raw),
            stdout,
            stderr,
        },
        more,
    ))
}

/// A request as the server reads it.
struct Request {
    git: OsString,
    dir: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    input: Option<Vec<u8>>,
}

fn read_request(r: &mut impl Read) -> std::io::Result<Request> {
    let os = |v: Vec<u8>| OsString::from_vec(v);
    let git = os(get(r)?);
    let dir = os(get(r)?);
    let n = count(r)?;
    let mut args = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        args.push(os(get(r)?));
    }
    let n = count(r)?;
    let mut env = Vec::with_capacity(n.min(4096));
    for _ in 0..n {
        let e = get(r)?;
        match e.iter().position(|&b| b == b'=') {
            Some(i) => env.push((os(e[..i].to_vec()), Some(os(e[i + 1..].to_vec())))),
            None => env.push((os(e), None)),
        }
    }
    let has = get(r)? == b"1";
    let input = get(r)?;
    Ok(Request {
        git,
        dir,
        args,
        env,
        input: has.then_some(input),
    })
}

/// `baton __gitjail`: serve git commands on standard input, one at a time, each
/// answered on standard output once git and everything it started are gone and
/// the jail's writable places outside the repository are empty again. Ends at
/// the end of its input, or when it cannot make the jail clean (its namespace
/// then ends with it).
pub fn serve() -> std::process::ExitCode {
    // It kills every other process it sees: only ever as the second process of
    // a PID namespace of its own (bubblewrap's init is the first).
    if std::process::id() != 2 {
        eprintln!("baton: __gitjail runs only inside the git jail baton starts");
        return std::process::ExitCode::FAILURE;
    }
    // Nothing git starts may trace this process or open its pipes.
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    // It empties the places a command may write outside the repository: only
    // where each is a file system of the jail's own (a tmpfs), never a real home.
    if let Err(why) = places() {
        eprintln!("baton: __gitjail: {why}");
        return std::process::ExitCode::FAILURE;
    }
    let mut hello = Vec::new();
    put(&mut hello, READY);
    if output
        .write_all(&hello)
        .and_then(|()| output.flush())
        .is_err()
    {
        return std::process::ExitCode::FAILURE;
    }
    loop {
        let req = match read_request(&mut input) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return std::process::ExitCode::SUCCESS;
            }
            Err(_) => return std::process::ExitCode::FAILURE,
        };
        let out = run_one(&req);
        // Nothing git started lives into the answer; if something could not be
        // killed, the jail ends unanswered (its namespace, and that, with it).
        kill_the_rest();
        if !others().is_empty() {
            return std::process::ExitCode::FAILURE;
        }
        let wiped = wipe();

        let (status, stdout, stderr) = match out {
            Ok(o) => {
                use std::os::unix::process::ExitStatusExt as _;
                (o.status.into_raw(), o.stdout, o.stderr)
            }
            // 127, as a shell says of a program it cannot run.
            Err(e) => (
                127 << 8,
                Vec::new(),
                format!("cannot run git: {e}").into_bytes(),
            ),
        };
        let mut answer = Vec::with_capacity(stdout.len() + stderr.len() + 16);
        put(&mut answer, &status.to_le_bytes());
        put(&mut answer, &stdout);
        put(&mut answer, &stderr);
        // A jail that is not as fresh as a new one serves no more commands: the
        // answer says so, and baton starts another for the next.
        put(&mut answer, if wiped { b"1" } else { b"0" });
        if output
            .write_all(&answer)
            .and_then(|()| output.flush())
            .is_err()
            || !wiped
        {
            return std::process::ExitCode::FAILURE;
        }
    }
}

/// Run one request's git; its output once it exited and all that held its pipes
/// is gone (what git started is killed first, so a leftover holding a pipe does
/// not keep the answer waiting).
fn run_one(req: &Request) -> std::io::Result<Output> {
    let mut cmd = Command::new(&req.git);
    cmd.args(&req.args)
        .current_dir(&req.dir)
        .stdin(if req.input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in &req.env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let mut child = cmd.spawn()?;
    let writer = child.stdin.take().map(|mut stdin| {
        let input = req.input.clone().unwrap_or_default();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    });
    let drain = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut v);
            }
            v
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = child.wait()?;
    // What git left running holds its pipes: killed before they are read out.
    kill_the_rest();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if let Some(w) = writer {
        let _ = w.join();
    }
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// The processes of this PID namespace other than its init and this server that
/// are not yet dead.
fn others() -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&p| p != 1 && p != me)
        .filter(|p| {
            // A zombie waits for init to reap it: it holds nothing.
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit_once(')')
                        .map(|(_, r)| r.trim_start().starts_with('Z'))
                })
                .is_some_and(|zombie| !zombie)
        })
        .collect()
}

/// Kill every other live process of the namespace, a few rounds (one may fork as
/// it is killed).
fn kill_the_rest() {
    for _ in 0..200 {
        let left = others();
        if left.is_empty() {
            return;
        }
        for p in left {
            if let Some(pid) = rustix::process::Pid::from_raw(p) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What a server says first, once it found its jail as it must be.
const READY: &[u8] = b"ready";

/// `statfs`'s word for a tmpfs.
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// The places [`wipe`] empties, each checked to be a tmpfs (as the jail mounts
/// them): a server started anywhere else refuses to serve.
fn places() -> Result<Vec<PathBuf>, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut out = Vec::new();
    for dir in [
        Some(PathBuf::from("/tmp")),
        home,
        Some(PathBuf::from("/dev/shm")),
    ]
    .into_iter()
    .flatten()
    {
        let Ok(fs) = rustix::fs::statfs(&dir) else {
            continue;
        };
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        let kind = fs.f_type as i64;
        if kind != TMPFS_MAGIC {
            return Err(format!(
                "{} is not a file system of the jail's own (a tmpfs)",
                dir.display()
            ));
        }
        out.push(dir);
    }
    Ok(out)
}

/// Empty what the jail's earlier commands could write outside the repository:
/// `/tmp`, the home and `/dev/shm`, as a fresh jail has them (what is mounted
/// there, the repository and the user's git config, untouched). Whether all of
/// it went.
fn wipe() -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    // Every one is emptied, whether or not an earlier one could be.
    let emptied: Vec<bool> = [
        Some(PathBuf::from("/tmp")),
        home,
        Some(PathBuf::from("/dev/shm")),
    ]
    .into_iter()
    .flatten()
    .map(|dir| empty(&dir))
    .collect();
    emptied.into_iter().all(|e| e)
}

/// How deep [`empty`] goes.
const MAX_DEPTH: usize = 64;

/// Remove what `dir` holds on its own file system, never crossing into another
/// (a mount point, such as the repository bound under `/tmp` or the home: its
/// files are the user's) and never following a link. Whether nothing of `dir`'s
/// file system is left in it.
fn empty(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(top) = std::fs::symlink_metadata(dir) else {
        return true;
    };
    if !top.is_dir() {
        return true;
    }
    let dev = top.dev();
    // Directories that hold a mount point (however deep) stay, as bubblewrap
    // made them.
    let mut keep: std::collections::HashSet<PathBuf> = std::collections::HashSet::new();
    // Depth first, by hand: a tree deeper than MAX_DEPTH is left, and said.
    let mut all = true;
    let mut stack: Vec<(PathBuf, usize, bool)> = vec![(dir.to_path_buf(), 0, false)];
    while let Some((d, depth, listed)) = stack.pop() {
        if listed {
            if d != dir && !keep.contains(&d) && std::fs::remove_dir(&d).is_err() {
                all = false;
            }
            continue;
        }
        stack.push((d.clone(), depth, true));
        let Ok(entries) = std::fs::read_dir(&d) else {
            all = false;
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if m.dev() != dev {
                // Another file system mounted here: not the jail's to empty.
                keep.extend(
                    p.ancestors()
                        .skip(1)
                        .take_while(|a| a.starts_with(dir) && *a != dir)
                        .map(Path::to_path_buf),
                );
                continue;
            }
            if m.is_dir() {
                if depth + 1 > MAX_DEPTH {
                    all = false;
                    continue;
                }
                stack.push((p, depth + 1, false));
            } else if std::fs::remove_file(&p).is_err() {
                all = false;
            }
        }
    }
    all
}

/// Whether `a` names the same bytes as `b` (for tests).
#[cfg(test)]
fn same(a: &std::ffi::OsStr, b: &[u8]) -> bool {
    a.as_bytes() == b
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_it_was_sent() {
        let ask = Ask {
            git: Path::new("/usr/bin/git"),
            dir: Path::new("/p/q r"),
            args: vec!["-c".into(), "a=b".into(), "status".into()],
            env: vec![
                ("GIT_DIR".into(), Some("/p/.git".into())),
                ("GIT_SSH".into(), None),
            ],
            input: Some(b"x\0y"),
        };
        let bytes = encode(&ask);
        let req = read_request(&mut bytes.as_slice()).unwrap();
        assert!(same(&req.git, b"/usr/bin/git"));
        assert!(same(&req.dir, b"/p/q r"));
        assert_eq!(req.args, ask.args);
        assert_eq!(req.env, ask.env);
        assert_eq!(req.input.as_deref(), Some(&b"x\0y"[..]));
        let none = encode(&Ask { input: None, ..ask });
        assert_eq!(read_request(&mut none.as_slice()).unwrap().input, None);
    }

    #[test]
    fn emptying_removes_what_is_there_and_follows_no_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "mine").unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("a/b/c")).unwrap();
        std::fs::write(d.join("a/b/c/f"), "x").unwrap();
        std::fs::write(d.join("top"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.join("a/link")).unwrap();
        assert!(empty(d));
        assert_eq!(std::fs::read_dir(d).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_to_string(outside.path().join("keep")).unwrap(),
            "mine"
        );
        // Deeper than it goes: what is left is said.
        let mut deep = d.to_path_buf();
        for _ in 0..=MAX_DEPTH + 1 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        assert!(!empty(d));
    }

    #[test]
    fn a_cut_answer_is_an_error_not_an_empty_output() {
        let mut a = Vec::new();
        put(&mut a, &0i32.to_le_bytes());
        put(&mut a, b"out");
        assert!(read_answer(&mut a.as_slice()).is_err());
        put(&mut a, b"err");
        assert!(read_answer(&mut a.as_slice()).is_err());
        put(&mut a, b"0");
        let (o, more) = read_answer(&mut a.as_slice()).unwrap();
        assert!(!more);
        assert!(o.status.success());
        assert_eq!(
            (o.stdout.as_slice(), o.stderr.as_slice()),
            (&b"out"[..], &b"err"[..])
        );
    }
}
