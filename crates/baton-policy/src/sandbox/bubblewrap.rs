//! bubblewrap (`bwrap`) around the sandbox: the mount namespace in which
//! [`PROTECTED`](super::PROTECTED) are read-only binds and the ancestors' `/proc` entries are hidden
//! ([`bwrap_args`], [`hidden_procs`]), and the `Bash` tool's [`SandboxLauncher`],
//! which runs every command in the run's PID namespace, else in a `bwrap` of its
//! own, else under Landlock alone.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{FreshHome, NAMESPACE_VAR, SandboxError, SandboxSpec, protected_binds};

/// The `bwrap` program, when one on `PATH` works here (it can make a mount
/// namespace).
pub fn bwrap() -> Option<PathBuf> {
    // Never one a sandboxed command could have written ([`crate::helpers`]).
    let exe = crate::helpers::find("bwrap")?;
    let ok = std::process::Command::new(&exe)
        .args(["--dev-bind", "/", "/", "--", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(exe)
}

/// `bwrap` and its arguments, up to and including `--`, for one command confined to
/// `spec`: the whole file system as it is, except [`PROTECTED`](super::PROTECTED) (and, for the
/// verifier, the whole project) bound read-only, baton's state dir read-only, and the
/// `/proc` entries `hide` covered (see [`Hidden`]). The command after
/// `--` is baton's launcher, which applies Landlock inside (see [`NAMESPACE_VAR`]).
pub fn bwrap_args(bwrap: &Path, spec: &SandboxSpec, hide: &[Hidden]) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![
        bwrap.as_os_str().to_os_string(),
        "--die-with-parent".into(),
        "--dev-bind".into(),
        "/".into(),
        "/".into(),
    ];
    // A loopback of its own, and nothing else (no holder here to bridge out).
    if spec.network != baton_config::SandboxNetwork::Open {
        v.push("--unshare-net".into());
    }
    // The host's temp dirs replaced by the command's own.
    v.extend(private_temp_args(spec));
    // The user's home hidden but for what a build needs (first: the binds below
    // may lie in it).
    if let Some(view) = super::view(spec) {
        v.extend(view.bwrap_args());
    }
    let mut ro = |source: &Path, target: &Path| {
        v.push("--ro-bind".into());
        v.push(source.as_os_str().to_os_string());
        v.push(target.as_os_str().to_os_string());
    };
    // The verifier's commands: the whole project read-only (Landlock alone cannot
    // make it so when it lies inside a writable tree such as /tmp).
    if spec.read_only {
        ro(&spec.project, &spec.project);
    }
    for (target, source) in protected_binds(&spec.project) {
        ro(&source, &target);
    }
    // baton's state dir (the hook's frozen config, the MCP launch dir).
    let state = baton_config::state_dir(&spec.project);
    if state.is_dir() {
        ro(&state, &state);
    }
    for h in hide {
        let p = h.path.as_os_str().to_os_string();
        if h.thread {
            // A thread may end at any moment, and bwrap fails on a mount point that
            // is gone: bind a harmless directory of the same thread over it, which
            // `-try` skips once the thread (and so the source) is gone.
            let mut src = p.clone();
            src.push("/attr");
            v.extend(["--ro-bind-try".into(), src, p]);
        } else {
            v.extend(["--tmpfs".into(), p.clone(), "--remount-ro".into(), p]);
        }
    }
    v.extend([
        "--setenv".into(),
        NAMESPACE_VAR.into(),
        "1".into(),
        "--".into(),
    ]);
    v
}

/// The rendezvous points of the host that every namespace gets an empty copy of
/// its own: `/tmp`, `/var/tmp`, `/dev/shm`, `/run` and `$TMPDIR` (when it is
/// another directory that holds neither `/` nor the user's home), each by its
/// real path, none inside another. What a host program left there (a tmux or ssh
/// agent socket, an X11 socket, Chromium's singleton, the user's runtime dir with
/// its D-Bus and keyring sockets, a container daemon's socket, another run's
/// files) is out of sight and reach.
pub fn private_dirs() -> Vec<PathBuf> {
    let home = super::home();
    let mut found = vec![
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
        PathBuf::from("/run"),
    ];
    if let Some(t) = std::env::var_os("TMPDIR").map(PathBuf::from)
        && t.is_absolute()
    {
        found.push(t);
    }
    let mut dirs: Vec<PathBuf> = Vec::new();
    for d in found {
        let Ok(real) = d.canonicalize() else {
            continue;
        };
        if !real.is_dir() || real == Path::new("/") {
            continue;
        }
        if home.as_ref().is_some_and(|h| h.starts_with(&real)) {
            continue;
        }
        if dirs.iter().any(|o| real.starts_with(o)) {
            continue;
        }
        dirs.retain(|o| !o.starts_with(&real));
        dirs.push(real);
    }
    dirs
}

/// `bwrap` arguments that give a namespace for `spec` its own [`private_dirs`],
/// with what its commands need of them bound back at the same paths: the
/// project (read-only for the verifier), the home, `[sandbox] writable`, what
/// they may read (`readable`, another tree's project), baton's state dir and
/// itself. Nothing else of the host's temp dirs is there.
pub fn private_temp_args(spec: &SandboxSpec) -> Vec<OsString> {
    let dirs = private_dirs();
    let mut v: Vec<OsString> = Vec::new();
    for d in &dirs {
        v.extend([
            "--perms".into(),
            "01777".into(),
            "--tmpfs".into(),
            d.as_os_str().to_os_string(),
        ]);
    }
    let mut back: Vec<(PathBuf, bool)> = vec![
        (spec.project.clone(), !spec.read_only),
        (spec.home.clone(), true),
        (
            super::private_home(&spec.project).join(super::home::MCP_DIR),
            true,
        ),
        (baton_config::state_dir(&spec.project), false),
        (super::stage_dir(&spec.project), false),
    ];
    // A parallel run's copy borrows its main project's objects (and lies in
    // it): the main project is there to read.
    back.extend(super::main_of_copy(&spec.project).map(|m| (m, false)));
    back.extend(spec.writable.iter().map(|p| (p.clone(), true)));
    back.extend(spec.readable.iter().map(|p| (p.clone(), false)));
    back.extend(std::env::current_exe().ok().map(|e| (e, false)));
    // Where the resolver's configuration really is (systemd-resolved keeps it
    // in `/run`): names still resolve.
    back.push((PathBuf::from("/etc/resolv.conf"), false));
    let mut back: Vec<(PathBuf, bool)> = back
        .into_iter()
        .filter_map(|(p, rw)| p.canonicalize().ok().map(|p| (p, rw)))
        .filter(|(p, _)| dirs.iter().any(|d| p.starts_with(d) && p != d))
        .collect();
    // Parents first: a child bound before its parent would be covered by it.
    back.sort_by_key(|(p, _)| p.components().count());
    back.dedup_by(|a, b| a.0 == b.0);
    for (p, rw) in back {
        v.push(if rw { "--bind" } else { "--ro-bind" }.into());
        v.push(p.as_os_str().to_os_string());
        v.push(p.into_os_string());
    }
    v
}

/// A `/proc` entry to hide from sandboxed commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    /// `/proc/PID` or `/proc/TID`.
    pub path: PathBuf,
    /// A thread other than its process's main one: covered by a harmless directory
    /// of its own (`attr/`) and skipped once gone, where a process is covered by an
    /// empty read-only directory.
    pub thread: bool,
}

/// The `/proc` entries of `pid` and of each of its ancestors (up to, not including,
/// pid 1): what a command started below them must not see. Their environments hold
/// what the user started baton with (and, with the claude-code backend, the CLI's
/// key), and `/proc/PID/root` of any of them leads around the read-only binds.
/// A process's threads have entries of their own (`/proc/TID`, unlisted but
/// readable with the same environment); they are hidden too.
pub fn hidden_procs(pid: u32) -> Vec<Hidden> {
    let mut out = Vec::new();
    let mut p = pid as i32;
    for _ in 0..64 {
        if p <= 1 {
            break;
        }
        out.push(Hidden {
            path: PathBuf::from(format!("/proc/{p}")),
            thread: false,
        });
        if let Ok(rd) = std::fs::read_dir(format!("/proc/{p}/task")) {
            for t in rd.flatten() {
                if let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<i32>().ok())
                    && tid != p
                {
                    out.push(Hidden {
                        path: PathBuf::from(format!("/proc/{tid}")),
                        thread: true,
                    });
                }
            }
        }
        match baton_tools::process::proc_stat(p, 4).and_then(|pp| i32::try_from(pp).ok()) {
            Some(parent) => p = parent,
            None => break,
        }
    }
    out
}

/// The `Bash` tool's way into the sandbox. Where bubblewrap works (probed once,
/// when the launcher is made), every command joins one PID namespace kept for the
/// run by a [`crate::namespace::Holder`] (started on first use, again if it died),
/// started there by the namespace's spawner ([`crate::spawner`]: one baton start
/// per run), else each through `baton __sandbox --join PID …`. Should the holder
/// not start, each command gets a `bwrap` of its own with its ancestors hidden
/// ([`bwrap_args`]). Without bubblewrap, Landlock alone.
#[derive(Debug, Clone)]
pub struct SandboxLauncher {
    spec: SandboxSpec,
    exe: PathBuf,
    bwrap: Option<PathBuf>,
    holder: std::sync::Arc<std::sync::Mutex<Option<Holding>>>,
    /// The home of its own a launcher for checks or the verifier has (removed when
    /// its last clone ends); `None` for the coding sessions' launcher.
    fresh: Option<std::sync::Arc<FreshHome>>,
    /// What its namespaces' commands may reach outside ([`crate::net`]).
    egress: std::sync::Arc<crate::net::Egress>,
    /// The browser's way into the namespace that started last (shared by the
    /// launchers made from this one: the verifier's too).
    browser: std::sync::Arc<crate::net::BrowserProxy>,
}

/// The holder of a launcher's namespace, or why there is none.
#[derive(Debug)]
enum Holding {
    /// The holder is up, with the spawner of its commands once one was started.
    #[cfg(target_os = "linux")]
    Up(crate::namespace::Holder, Spawning),
    /// It could not start: each command gets a namespace of its own.
    Failed,
}

/// The spawner of the commands in a launcher's namespace.
#[cfg(target_os = "linux")]
#[derive(Debug, Default)]
enum Spawning {
    /// Not started yet (it starts with the first command).
    #[default]
    NotYet,
    /// Up.
    Up(crate::spawner::Spawner),
    /// It could not start, or died: each command joins the namespace itself.
    Failed,
}

impl SandboxLauncher {
    /// The launcher confining commands to `spec`, with `exe` (the `baton` binary) as
    /// the Landlock launcher. Its commands reach no host outside until
    /// [`Self::with_egress`] names some.
    pub fn new(spec: SandboxSpec, exe: &Path) -> Self {
        // The commands' git config, written before any of them runs.
        if let Err(e) = super::write_git_config(&spec.project) {
            eprintln!(
                "baton: warning: cannot write the commands' git config ({e}); git in the sandbox has none"
            );
        }
        Self {
            spec,
            exe: exe.to_path_buf(),
            bwrap: if cfg!(target_os = "linux") {
                bwrap()
            } else {
                None
            },
            holder: std::sync::Arc::default(),
            fresh: None,
            // No host until [`Self::with_egress`] names some (closed by default).
            egress: std::sync::Arc::default(),
            browser: std::sync::Arc::default(),
        }
    }

    /// This launcher, whose namespaces' commands reach outside as `egress` says.
    #[must_use]
    pub fn with_egress(mut self, egress: crate::net::Egress) -> Self {
        self.egress = std::sync::Arc::new(egress);
        self
    }

    /// The hosts the egress proxy refused for the first time since the last call.
    pub fn refused_hosts(&self) -> Vec<String> {
        self.egress.refused.take_new()
    }

    /// This launcher in a namespace of its own whose commands have a home no
    /// command has written ([`FreshHome`]); `read_only` makes the project only
    /// readable there, `also` is writable there too. Where the fresh home cannot
    /// be made, the commands keep the session's (with a warning): they still run.
    fn fresh(&self, read_only: bool, also: Option<&Path>) -> Self {
        let mut l = self.clone();
        l.spec.read_only |= read_only;
        l.spec.writable.extend(also.map(Path::to_path_buf));
        l.holder = std::sync::Arc::default();
        // A copy's own temp dir lies in the home this one replaces: baton makes
        // the verifier's scratch and the clean checkouts of proof there, so it
        // stays writable (`temp_dir_for`).
        if let Some(own) = super::own_temp_in(&self.spec.project, &self.spec.home, &|k| {
            std::env::var_os(k)
        }) {
            l.spec.writable.push(own);
        }
        match FreshHome::new(&self.spec.project) {
            Ok(home) => {
                l.spec.home = home.path().to_path_buf();
                l.fresh = Some(std::sync::Arc::new(home));
            }
            Err(e) => eprintln!(
                "baton: warning: cannot make a fresh home for checks or the verifier ({e}); their commands share the session's"
            ),
        }
        l
    }

    /// The pid to join, starting the holder if needed.
    #[cfg(target_os = "linux")]
    fn namespace(&self, bwrap: &Path) -> Option<i32> {
        self.holding(bwrap, false)
    }

    /// [`Self::namespace`]; with `spawner`, a holder started now gets its spawner
    /// at once, which proves joining works (no separate probe: one baton start
    /// fewer per run).
    #[cfg(target_os = "linux")]
    fn holding(&self, bwrap: &Path, spawner: bool) -> Option<i32> {
        let mut h = self.holder.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Holding::Up(holder, _)) = &*h
            && !holder.alive()
        {
            *h = None;
        }
        if h.is_none() {
            let started =
                crate::namespace::Holder::start(bwrap, &self.exe, &self.spec, &self.egress)
                    .and_then(|holder| {
                        let spawning = if spawner {
                            match self.start_spawner(holder.pid()) {
                                Spawning::Up(s) => return Ok((holder, Spawning::Up(s))),
                                other => other,
                            }
                        } else {
                            Spawning::NotYet
                        };
                        // Joining needs rights a setuid bwrap's namespaces do not grant: try it
                        // once, so a failure costs a fallback, never every command.
                        let probe = std::process::Command::new(&self.exe)
                            .args(self.joining(holder.pid()))
                            .arg("true")
                            .stdin(std::process::Stdio::null())
                            .stdout(std::process::Stdio::null())
                            .stderr(std::process::Stdio::piped())
                            .output();
                        match probe {
                            Ok(o) if o.status.success() => Ok((holder, spawning)),
                            Ok(o) => Err(SandboxError::Landlock(format!(
                                "a command could not join the run's PID namespace: {}",
                                String::from_utf8_lossy(&o.stderr).trim()
                            ))),
                            Err(source) => Err(SandboxError::Exec {
                                program: self.exe.display().to_string(),
                                source,
                            }),
                        }
                    });
            *h = Some(match started {
                Ok((holder, spawning)) => {
                    if let Some(b) = holder.bridge() {
                        self.browser.aim(b);
                    }
                    Holding::Up(holder, spawning)
                }
                Err(e) => {
                    eprintln!(
                        "baton: warning: {e}; each command gets a namespace of its own instead"
                    );
                    Holding::Failed
                }
            });
        }
        match &*h {
            Some(Holding::Up(holder, _)) => Some(holder.pid()),
            _ => None,
        }
    }

    /// Start the spawner of the namespace `pid` holds (a warning when it cannot).
    #[cfg(target_os = "linux")]
    fn start_spawner(&self, pid: i32) -> Spawning {
        let mut args = self.joining(pid);
        args.pop(); // the `--` before a command
        args.push("--serve".into());
        match crate::spawner::Spawner::start(&self.exe, &args, &self.spec) {
            Ok(s) => Spawning::Up(s),
            Err(e) => {
                eprintln!(
                    "baton: warning: {e}; each command joins the run's namespace itself instead"
                );
                Spawning::Failed
            }
        }
    }

    /// Hand `request` to the spawner of the namespace `pid` holds, starting it
    /// first if needed; `None` when there is none (it failed to start, or died:
    /// the commands then join the namespace one by one, as the prefix says).
    #[cfg(target_os = "linux")]
    fn spawn_in(
        &self,
        pid: i32,
        request: &baton_tools::spawn::SpawnRequest,
    ) -> Option<std::io::Result<std::os::unix::net::UnixStream>> {
        let mut h = self.holder.lock().unwrap_or_else(|e| e.into_inner());
        let Some(Holding::Up(holder, spawning)) = &mut *h else {
            return None;
        };
        if holder.pid() != pid {
            return None;
        }
        if matches!(spawning, Spawning::NotYet) {
            *spawning = self.start_spawner(pid);
        }
        let Spawning::Up(spawner) = spawning else {
            return None;
        };
        if !spawner.alive() {
            *spawning = Spawning::Failed;
            return None;
        }
        // A protected file replaced since the binds were made: renew them as each
        // command's join would (the spawner, under Landlock, cannot mount).
        let now = crate::namespace::protected_ids(&self.spec);
        if now != spawner.bound {
            let renewed = std::process::Command::new(&self.exe)
                .args(self.joining(pid))
                .arg("true")
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !renewed {
                return None;
            }
            spawner.bound = now;
        }
        match spawner.send(request) {
            Ok(channel) => Some(Ok(channel)),
            Err(e) => {
                eprintln!(
                    "baton: warning: the sandbox's spawner is gone ({e}); each command joins the run's namespace itself instead"
                );
                *spawning = Spawning::Failed;
                None
            }
        }
    }

    /// No namespace off Linux.
    #[cfg(not(target_os = "linux"))]
    fn namespace(&self, _bwrap: &Path) -> Option<i32> {
        None
    }

    /// The launcher's arguments after the program, joining the namespace `pid`
    /// holds, ending with `--`.
    fn joining(&self, pid: i32) -> Vec<OsString> {
        let inner = self.spec.launcher(&self.exe);
        let mut v = Vec::with_capacity(inner.len() + 1);
        for a in inner.into_iter().skip(1) {
            let join = a == "__sandbox";
            v.push(a);
            if join {
                v.push("--join".into());
                v.push(pid.to_string().into());
            }
        }
        v
    }

    /// Whether the commands run under bubblewrap (it works here): `.git/config`,
    /// hooks, `.baton/` and `baton.toml` are read-only binds for them, and they
    /// share the run's PID namespace unless it fails to start
    /// ([`SandboxLauncher::pid_namespace`]).
    pub fn bubblewrap(&self) -> bool {
        self.bwrap.is_some()
    }

    /// Whether the commands run in the run's PID namespace (where they see and
    /// signal only the run's processes): bubblewrap works, and the namespace has not
    /// failed to start (it starts with the first command).
    pub fn pid_namespace(&self) -> bool {
        self.bwrap.is_some()
            && !matches!(
                *self.holder.lock().unwrap_or_else(|e| e.into_inner()),
                Some(Holding::Failed)
            )
    }

    /// The pid an agent CLI's `baton --sandbox-shell` joins (`"join"` in its spec),
    /// starting the holder now; `None` without bubblewrap or when it cannot start.
    pub fn join_target(&self) -> Option<i32> {
        let bw = self.bwrap.clone()?;
        self.namespace(&bw)
    }

    /// The namespace the commands run in, once one was made.
    fn current_ns(&self) -> Option<String> {
        match &*self.holder.lock().unwrap_or_else(|e| e.into_inner()) {
            #[cfg(target_os = "linux")]
            Some(Holding::Up(h, _)) => Some(h.ns().to_string()),
            _ => None,
        }
    }
}

impl baton_tools::Launcher for SandboxLauncher {
    /// The program and arguments a command is appended to: joining the run's
    /// namespace, else a `bwrap` of its own, else the Landlock launcher alone.
    fn prefix(&self) -> Vec<OsString> {
        let Some(bw) = &self.bwrap else {
            return self.spec.launcher(&self.exe);
        };
        match self.namespace(bw) {
            Some(pid) => {
                let mut v = vec![self.exe.as_os_str().to_os_string()];
                v.extend(self.joining(pid));
                v
            }
            None => {
                let mut v = bwrap_args(bw, &self.spec, &hidden_procs(std::process::id()));
                v.extend(self.spec.launcher(&self.exe));
                v
            }
        }
    }

    /// The same launcher for the verifier: a namespace of its own in which the
    /// whole project is read-only, with a home of its own (both end with the
    /// verifier's tools), and `scratch` writable.
    fn read_only(&self, scratch: &Path) -> std::sync::Arc<dyn baton_tools::Launcher> {
        std::sync::Arc::new(self.fresh(true, Some(scratch)))
    }

    /// The same launcher for one run of checks: a namespace and a home of its
    /// own, and `also` writable.
    fn fresh_home(&self, also: Option<&Path>) -> std::sync::Arc<dyn baton_tools::Launcher> {
        std::sync::Arc::new(self.fresh(false, also))
    }

    /// End the namespace its commands share, and every process in it (a daemon
    /// that double-forked out of its group included); the next command starts
    /// a new one. Waits (2 s at most) until the namespace is gone.
    fn join_target(&self) -> Option<i32> {
        SandboxLauncher::join_target(self)
    }

    fn refused_hosts(&self) -> Vec<String> {
        SandboxLauncher::refused_hosts(self)
    }

    fn home(&self) -> Option<PathBuf> {
        Some(self.spec.home.clone())
    }

    fn browser_proxy(&self) -> Option<u16> {
        if self.bwrap.is_none() || self.spec.network == baton_config::SandboxNetwork::Open {
            return None;
        }
        self.browser.port(&self.egress)
    }

    fn end_all(&self) {
        #[cfg(target_os = "linux")]
        {
            let mut h = self.holder.lock().unwrap_or_else(|e| e.into_inner());
            let Some(Holding::Up(holder, _)) = &*h else {
                return;
            };
            let (pid, ns) = (holder.pid(), holder.ns().to_string());
            let ended = h.take();
            drop(h);
            drop(ended);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while crate::namespace::stands(pid, &ns) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }

    /// A namespace and a home of their own for commands on `project`, which they
    /// may write; this launcher's project they may only read.
    fn elsewhere(&self, project: &Path) -> std::sync::Arc<dyn baton_tools::Launcher> {
        let mut l = self.clone();
        l.spec.readable.push(self.spec.project.clone());
        l.spec
            .readable
            .extend(super::main_of_copy(&self.spec.project));
        l.spec.project = project.to_path_buf();
        std::sync::Arc::new(l.fresh(false, None))
    }

    /// Each namespace has its own loopback unless the network is open.
    fn own_network(&self) -> bool {
        !matches!(self.spec.network, super::SandboxNetwork::Open)
    }

    /// The pid a spawned command has inside the run's namespace, once there is one.
    fn visible_pid(&self, spawned: u32) -> u32 {
        #[cfg(target_os = "linux")]
        if self.current_ns().is_some() {
            return crate::namespace::visible_pid(spawned).unwrap_or(spawned);
        }
        spawned
    }

    /// The host pid of a pid seen inside the run's namespace.
    fn host_pid(&self, visible: u32) -> Option<u32> {
        #[cfg(target_os = "linux")]
        if let Some(ns) = self.current_ns() {
            return crate::namespace::host_pid(visible, &ns);
        }
        Some(visible)
    }

    /// Where the run's namespace stands, its spawner starts the command: one
    /// process start (the command's) instead of two (baton's join, then the
    /// command).
    fn spawn(
        &self,
        request: &baton_tools::spawn::SpawnRequest,
    ) -> Option<std::io::Result<std::os::unix::net::UnixStream>> {
        #[cfg(target_os = "linux")]
        {
            let bw = self.bwrap.as_ref()?;
            let pid = self.holding(bw, true)?;
            self.spawn_in(pid, request)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = request;
            None
        }
    }
}

/// Whether the kernel keeps [`PROTECTED`](super::PROTECTED) read-only for sandboxed commands
/// (bubblewrap works here).
pub fn kernel_binds() -> bool {
    cfg!(target_os = "linux") && bwrap().is_some()
}
