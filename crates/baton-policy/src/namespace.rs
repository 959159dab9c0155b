//! One PID namespace for all of a run's commands (Linux, with bubblewrap).
//!
//! Landlock does not keep a confined command from reading the `/proc` entries of
//! other processes of the same user: their environments, and `/proc/PID/root`,
//! which leads around any mount namespace. A PID namespace with a `/proc` of its
//! own shows a command only the run's own processes. It must outlive each command
//! (a dev server started with `&` runs on after the command that started it), so a
//! [`Holder`] keeps one for the run: `bwrap --unshare-pid --proc /proc … cat`. The
//! `Bash` tool's commands are started in it by the run's spawner
//! ([`crate::spawner`]), which [`enter`]ed it once: it entered the holder's
//! namespaces (`setns`), bound [`crate::sandbox::PROTECTED`] read-only there,
//! masked the secrets and applied Landlock, all inherited by its children. Without
//! a spawner (it failed, or for an agent CLI's `--sandbox-shell`) each command's
//! launcher [`join`]s it: the same steps (binds again when a file was replaced),
//! then it runs the command as its child, exiting as the child did. When baton
//! ends, or dies, the holder ends and with it every process in the namespace.
//!
//! Pids differ inside: [`visible_pid`] gives the one the agent sees for a process
//! baton started, and [`host_pid`] the other way round, for the `kill` rules.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use baton_tools::process::ns_pids;

use crate::sandbox::{SandboxError, SandboxSpec};

/// A process holding a PID namespace (and a mount namespace with its own `/proc`)
/// for the commands of one run, or of one verifier session. Dropping it ends the
/// namespace and every process still in it.
#[derive(Debug)]
pub struct Holder {
    bwrap: Child,
    /// baton's side of the bridge to the namespace's own network, when it has
    /// one ([`crate::net`]).
    bridge: Option<std::sync::Arc<crate::net::Bridge>>,
    /// The outer pid of a process inside (the `cat` bwrap runs), which joiners name.
    inside: i32,
    /// `pid:[inode]` of the namespace.
    ns: String,
}

impl Holder {
    /// Start a holder with `bwrap`, whose process inside is `exe __hold` ([`hold`])
    /// as the namespace's pid 1; for a read-only spec the whole project is bound
    /// read-only in it. Unless the spec's network is open, the namespace has a
    /// network of its own, bridged to baton and served by `egress`
    /// ([`crate::net`]). Waits (at most 5 s) until the namespace is set up.
    pub fn start(
        bwrap: &Path,
        exe: &Path,
        spec: &SandboxSpec,
        egress: &std::sync::Arc<crate::net::Egress>,
    ) -> Result<Self, SandboxError> {
        use std::os::unix::process::CommandExt as _;
        // baton's and the holder's ends of the bridge, when it has a network of
        // its own.
        let (ours, theirs) = if spec.network == baton_config::SandboxNetwork::Open {
            (None, None)
        } else {
            let (ours, theirs) =
                crate::net::bridge_pair().map_err(|source| SandboxError::Exec {
                    program: bwrap.display().to_string(),
                    source,
                })?;
            (Some(ours), Some(theirs))
        };
        let mut cmd = Command::new(bwrap);
        if theirs.is_some() {
            cmd.arg("--unshare-net");
        }
        cmd.args([
            "--die-with-parent",
            "--unshare-pid",
            // The holder is the namespace's pid 1: a signal sent from inside (a
            // `pkill -x baton`, a `kill -9 1`) never reaches it, so no command can
            // end the namespace and every server of the run with it.
            "--as-pid-1",
            "--dev-bind",
            "/",
            "/",
            "--proc",
            "/proc",
        ]);
        // The host's temp dirs replaced by the namespace's own.
        cmd.args(crate::sandbox::bubblewrap::private_temp_args(spec));
        // The user's home hidden but for what a build needs.
        if let Some(view) = crate::sandbox::view(spec) {
            cmd.args(view.bwrap_args());
        }
        if spec.read_only {
            cmd.arg("--ro-bind").arg(&spec.project).arg(&spec.project);
        }
        // It waits on a pipe only baton writes to: it ends when baton does.
        cmd.arg("--").arg(exe).arg("__hold");
        if theirs.is_some() {
            cmd.arg("--bridge");
            let mut ports = crate::net::exposed();
            if spec.network == baton_config::SandboxNetwork::Allowlist {
                ports.push(crate::net::PROXY_PORT);
            }
            for p in ports {
                cmd.arg("--listen").arg(p.to_string());
            }
        }
        // Its standard output is its side of the bridge, when there is one.
        let stdout = theirs.map_or_else(Stdio::null, Stdio::from);
        cmd.stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(Stdio::null())
            // Its own process group: a Ctrl-C at the terminal is baton's to handle.
            .process_group(0);
        let mut child = cmd.spawn().map_err(|source| SandboxError::Exec {
            program: bwrap.display().to_string(),
            source,
        })?;
        let outer = child.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            // bwrap → the holder, pid 1 inside, once it runs `exe __hold`: bwrap's
            // child has bwrap's command line (which names `__hold` too) until the
            // mounts are done and it execs.
            let held = children(outer).into_iter().find(|&c| {
                std::fs::read(format!("/proc/{c}/cmdline")).is_ok_and(|l| {
                    let mut args = l.split(|b| *b == 0);
                    args.next() == Some(exe.as_os_str().as_encoded_bytes())
                        && args.next() == Some(b"__hold".as_slice())
                })
            });
            if let Some(inside) = held
                && let Ok(ns) = std::fs::read_link(format!("/proc/{inside}/ns/pid"))
            {
                drop(cmd);
                return Ok(Self {
                    bwrap: child,
                    bridge: ours.map(|o| crate::net::Bridge::start(o, egress.clone())),
                    inside,
                    ns: ns.to_string_lossy().into_owned(),
                });
            }
            if Instant::now() > deadline || child.try_wait().ok().flatten().is_some() {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SandboxError::Exec {
                    program: bwrap.display().to_string(),
                    source: std::io::Error::other("the PID namespace was not set up within 5 s"),
                });
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// The pid (outside) that joiners name: `baton __sandbox --join PID`.
    pub fn pid(&self) -> i32 {
        self.inside
    }

    /// `pid:[inode]`: the namespace's identity.
    pub fn ns(&self) -> &str {
        &self.ns
    }

    /// baton's side of the bridge to the namespace's network, if it has one.
    pub fn bridge(&self) -> Option<&std::sync::Arc<crate::net::Bridge>> {
        self.bridge.as_ref()
    }

    /// Whether the namespace still stands.
    pub fn alive(&self) -> bool {
        stands(self.inside, &self.ns)
    }
}

/// Whether the namespace `ns` whose pid 1 is `inside` (its outer pid) still
/// stands: that process runs in it, and is not a zombie nobody reaped yet (a
/// namespace's init becomes one only once every other process in it was killed).
pub fn stands(inside: i32, ns: &str) -> bool {
    std::fs::read_link(format!("/proc/{inside}/ns/pid")).is_ok_and(|l| l.to_string_lossy() == ns)
        && std::fs::read_to_string(format!("/proc/{inside}/stat")).is_ok_and(|st| {
            st.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next())
                .is_some_and(|state| state != 'Z' && state != 'X')
        })
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.bwrap.kill();
        let _ = self.bwrap.wait();
    }
}

/// The holder's work as the namespace's pid 1 (`baton __hold`): reap the
/// processes orphaned inside (they are re-parented to it), and end when its
/// standard input closes (baton ended or died). Signals sent from inside the
/// namespace never reach it: the kernel delivers to a namespace's init only
/// those it handles, and it handles none. With `bridge`, it serves the bridge
/// of the namespace's own network on its standard output, listening on
/// `listen`'s ports ([`crate::net::serve_inside`]).
pub fn hold(bridge: bool, listen: &[u16]) -> ! {
    use std::io::Read as _;
    use std::os::fd::AsFd as _;
    // A network of its own: its standard output is the bridge to baton, which
    // also asks it to connect inside (the browser), whatever it listens on.
    if bridge && let Ok(control) = std::io::stdout().as_fd().try_clone_to_owned() {
        crate::net::serve_inside(control, listen);
    }
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        std::process::exit(0);
    });
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(_) => {}
            // No child yet: nothing to reap until a process is orphaned here.
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// The children of `pid` (`/proc/PID/task/*/children`).
fn children(pid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

/// The pid the agent sees for the process baton started as `spawned`: its own
/// inside the namespace when the spawner started it there, else (a joiner) its
/// child's. Waits (up to 5 s, for a loaded machine)
/// while `spawned` runs and its child has not started; `None` when there is none.
pub fn visible_pid(spawned: u32) -> Option<u32> {
    // Started by the spawner: the process is itself inside.
    let own = ns_pids(std::process::id() as i32).len();
    let its = ns_pids(spawned as i32);
    if own > 0 && its.len() > own {
        return its.last().and_then(|&p| u32::try_from(p).ok());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if !Path::new(&format!("/proc/{spawned}")).exists() {
            return None;
        }
        if let Some(&child) = children(spawned as i32).first()
            && let Some(&inner) = ns_pids(child).last()
        {
            return u32::try_from(inner).ok();
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The pid outside of the process the agent calls `visible` in namespace `ns`.
pub fn host_pid(visible: u32, ns: &str) -> Option<u32> {
    let rd = std::fs::read_dir("/proc").ok()?;
    rd.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .find(|&p| {
            ns_pids(p).last() == Some(&(visible as i32))
                && std::fs::read_link(format!("/proc/{p}/ns/pid"))
                    .is_ok_and(|l| l.to_string_lossy() == ns)
        })
        .and_then(|p| u32::try_from(p).ok())
}

/// Enter the namespaces of the holder whose inside process is `target`, bind the
/// protected paths read-only there, confine this process with Landlock, and run
/// `command` as a child without the variables `env_remove`. Returns the child's
/// exit code (a child killed by a signal is reported by this process dying of the
/// same signal).
pub fn join(
    spec: &SandboxSpec,
    target: i32,
    command: &[OsString],
    env_remove: &[String],
) -> Result<i32, SandboxError> {
    let Some((program, args)) = command.split_first() else {
        return Err(SandboxError::NoCommand);
    };
    enter(spec, target)?;
    let home = crate::sandbox::home_env(spec);
    let mut cmd = Command::new(program);
    cmd.args(args).envs(home).envs(net_env(spec));
    for v in env_remove {
        cmd.env_remove(v);
    }
    let status = cmd.status().map_err(|source| SandboxError::Exec {
        program: program.to_string_lossy().into_owned(),
        source,
    })?;
    use std::os::unix::process::ExitStatusExt as _;
    if let Some(sig) = status.signal() {
        // Die of the same signal, so the caller sees what the command saw.
        if let Some(s) = rustix::process::Signal::from_named_raw(sig) {
            let _ = rustix::process::kill_process(rustix::process::getpid(), s);
        }
        return Ok(128 + sig);
    }
    Ok(status.code().unwrap_or(1))
}

/// One protected path as it is bound now: where, from which file, and that
/// file's device and inode.
pub type Protected = (PathBuf, PathBuf, (u64, u64));

/// The files of [`crate::sandbox::PROTECTED`] (and baton's state dir) as they are
/// now, each with the file bound there ([`crate::sandbox::protected_binds`]) and
/// its device and inode: a bind inside that shows another file (replaced since,
/// e.g. by git's lock-and-rename, or a config's view written again) is renewed.
pub fn protected_ids(spec: &SandboxSpec) -> Vec<Protected> {
    let state = baton_config::state_dir(&spec.project);
    crate::sandbox::protected_binds(&spec.project)
        .into_iter()
        .chain(Some((state.clone(), state)).filter(|(d, _)| d.is_dir()))
        .filter_map(|(target, source)| {
            let m = std::fs::metadata(&source).ok()?;
            Some((target, source, (m.dev(), m.ino())))
        })
        .collect()
}

/// What a command in a namespace of `spec` gets to reach the outside: the egress
/// proxy's variables under `network = "allowlist"`, nothing otherwise.
pub fn net_env(spec: &SandboxSpec) -> Vec<(&'static str, String)> {
    if spec.network == baton_config::SandboxNetwork::Allowlist {
        crate::net::proxy_env()
    } else {
        Vec::new()
    }
}

/// Make this process one of the namespace's commands: enter the namespaces of the
/// holder whose inside process is `target` (children start in its PID namespace),
/// bind the protected paths read-only there (again when one was replaced), mask
/// the secret locations, and confine this process with Landlock. What this
/// process starts afterwards inherits all of it.
pub fn enter(spec: &SandboxSpec, target: i32) -> Result<(), SandboxError> {
    use rustix::thread::{LinkNameSpaceType, move_into_link_name_space};
    use std::os::fd::AsFd as _;
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        SandboxError::Landlock(format!("cannot join the run's namespace ({what}): {e}"))
    };
    let cwd = std::env::current_dir().map_err(|e| fail("working directory", &e))?;
    // Taken before the namespaces are entered (the state dir is read-only in
    // them), held until the binds and masks are done: two joins renewing one bind
    // at once could leave it writable for a moment while the other's command runs.
    let lock = BindLock::take(&spec.project);
    let protected = protected_ids(spec);
    // Each protected file as it is here, cloned as a mount of its own before the
    // namespace is entered (inside, its path may show an older bind), with the
    // node where it is made read-only before it is put in place.
    let stage = crate::sandbox::stage_dir(&spec.project);
    let fresh: Vec<Option<Fresh>> = protected
        .iter()
        .enumerate()
        .map(|(i, (_, source, _))| Fresh::clone(source, &stage.join(i.to_string())))
        .collect();
    let open = |kind: &str| {
        std::fs::File::open(format!("/proc/{target}/ns/{kind}")).map_err(|e| fail(kind, &e))
    };
    // Opened before any is entered: /proc changes with the mount namespace.
    let (user, mnt, pid) = (open("user")?, open("mnt")?, open("pid")?);
    let net = open("net")?;
    let own_user = std::fs::metadata("/proc/self/ns/user")
        .map(|m| m.ino())
        .ok();
    if user.metadata().map(|m| m.ino()).ok() != own_user {
        move_into_link_name_space(user.as_fd(), Some(LinkNameSpaceType::User))
            .map_err(|e| fail("user", &e))?;
    }
    move_into_link_name_space(mnt.as_fd(), Some(LinkNameSpaceType::Mount))
        .map_err(|e| fail("mnt", &e))?;
    move_into_link_name_space(pid.as_fd(), Some(LinkNameSpaceType::ProcessID))
        .map_err(|e| fail("pid", &e))?;
    let own_net = std::fs::metadata("/proc/self/ns/net").map(|m| m.ino()).ok();
    if net.metadata().map(|m| m.ino()).ok() != own_net {
        move_into_link_name_space(net.as_fd(), Some(LinkNameSpaceType::Network))
            .map_err(|e| fail("net", &e))?;
    }
    drop((user, mnt, pid, net));
    // Entering a mount namespace moves to its root: back to the same directory.
    std::env::set_current_dir(&cwd)
        .map_err(|e| fail(&format!("working directory {}", cwd.display()), &e))?;
    for ((path, source, id), fresh) in protected.iter().zip(fresh) {
        bind_read_only(path, source, *id, fresh)
            .map_err(|e| fail(&path.display().to_string(), &e))?;
    }
    // The secret locations are hidden by mounts here, so Landlock need not list
    // every other entry of /, /etc and the home directory (the costly part of a
    // command's start).
    for path in secret_paths() {
        mask(&path).map_err(|e| fail(&path.display().to_string(), &e))?;
    }
    drop(lock);
    crate::sandbox::confine_masked(spec)?;
    Ok(())
}

/// Where the secrets of [`crate::secrets::SECRET_LOCATIONS`] are that exist now
/// (home-relative ones under `$HOME`, the system ones but `/proc` patterns, which
/// the PID namespace covers), and the homes of other users.
fn secret_paths() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && h != Path::new("/"));
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(h) = &home {
        out.extend(crate::secrets::home_relative().map(|r| h.join(r)));
    }
    out.extend(
        crate::secrets::system()
            .filter(|s| !s.contains('*'))
            .map(PathBuf::from),
    );
    let mut homes: Vec<PathBuf> = std::fs::read_dir("/home")
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    homes.push(PathBuf::from("/root"));
    out.extend(homes.into_iter().filter(|o| {
        home.as_ref()
            .is_none_or(|h| !h.starts_with(o) && !o.starts_with(h))
    }));
    out.extend(agent_sockets());
    out.retain(|p| std::fs::metadata(p).is_ok());
    out
}

/// Where ssh agents listen outside the runtime dir: the directory of baton's own
/// `SSH_AUTH_SOCK` (never passed to commands, but a path in `/tmp` is found by
/// listing it) and every `/tmp/ssh-*` directory holding an `agent.*` socket.
fn agent_sockets() -> Vec<PathBuf> {
    use std::os::unix::fs::FileTypeExt as _;
    let mut out = Vec::new();
    if let Some(sock) = std::env::var_os("SSH_AUTH_SOCK").map(PathBuf::from)
        && sock.is_absolute()
    {
        match sock.parent() {
            Some(dir) if dir != Path::new("/") && dir != Path::new("/tmp") => {
                out.push(dir.to_path_buf());
            }
            _ => out.push(sock),
        }
    }
    let dirs = std::fs::read_dir("/tmp").into_iter().flatten().flatten();
    for d in dirs.filter(|d| d.file_name().to_string_lossy().starts_with("ssh-")) {
        let holds_agent = std::fs::read_dir(d.path())
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                e.file_name().to_string_lossy().starts_with("agent.")
                    && e.file_type().is_ok_and(|t| t.is_socket())
            });
        if holds_agent {
            out.push(d.path());
        }
    }
    out
}

/// Hide `path` in this mount namespace, unless it is hidden already: a directory
/// under an empty read-only tmpfs, anything else under a read-only `/dev/null`.
fn mask(path: &Path) -> std::io::Result<()> {
    use rustix::mount::{MountFlags, mount};
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let parent = path.parent().unwrap_or(Path::new("/"));
    if mnt_id(path)? != mnt_id(parent)? {
        return Ok(());
    }
    if meta.is_dir() {
        mount(
            "tmpfs",
            path,
            "tmpfs",
            MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            Some(c"size=4k,mode=0555"),
        )?;
        Ok(())
    } else {
        rustix::mount::mount_bind("/dev/null", path)?;
        remount_read_only(path)
    }
}

fn mnt_id(p: &Path) -> std::io::Result<u64> {
    use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
    Ok(statx(CWD, p, AtFlags::empty(), StatxFlags::MNT_ID)?.stx_mnt_id)
}

/// A protected file cloned as a detached mount where it really is (outside the
/// namespace), and the node it is staged on inside.
struct Fresh {
    tree: std::os::fd::OwnedFd,
    stage: PathBuf,
}

impl Fresh {
    /// The clone of `path`, with `stage` made (a directory or an empty file, as
    /// `path` is); `None` when either cannot be had (the bind is then made in
    /// place, as before).
    fn clone(path: &Path, stage: &Path) -> Option<Self> {
        use rustix::mount::{OpenTreeFlags, open_tree};
        let meta = std::fs::symlink_metadata(path).ok()?;
        let made = if meta.is_dir() {
            std::fs::create_dir_all(stage).is_ok()
        } else if meta.is_file() {
            std::fs::create_dir_all(stage.parent()?).is_ok()
                && (stage.is_file() || std::fs::File::create(stage).is_ok())
        } else {
            false
        };
        if !made {
            return None;
        }
        let tree = open_tree(
            rustix::fs::CWD,
            path,
            OpenTreeFlags::OPEN_TREE_CLONE
                | OpenTreeFlags::OPEN_TREE_CLOEXEC
                | OpenTreeFlags::AT_SYMLINK_NOFOLLOW,
        )
        .ok()?;
        Some(Self {
            tree,
            stage: stage.to_path_buf(),
        })
    }

    /// Put the clone on `path` already read-only: attached on its stage, made
    /// read-only there (commands may not write beneath the stage), then moved onto
    /// `path` in one step, over whatever was bound there. A command never meets
    /// the file writable, nor the moment between an unmount and a mount.
    fn place(self, path: &Path) -> std::io::Result<()> {
        use rustix::mount::{MoveMountFlags, move_mount};
        move_mount(
            &self.tree,
            "",
            rustix::fs::CWD,
            &self.stage,
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )?;
        remount_read_only(&self.stage)?;
        move_mount(
            rustix::fs::CWD,
            &self.stage,
            rustix::fs::CWD,
            path,
            MoveMountFlags::empty(),
        )?;
        Ok(())
    }
}

/// Make `path` a read-only bind of `source` (itself, or a config's view) in this
/// mount namespace, unless it is one already of the file `id` (device, inode)
/// names: from `fresh` (see [`Fresh::place`]) where there is one, else by binding
/// it in place.
fn bind_read_only(
    path: &Path,
    source: &Path,
    id: (u64, u64),
    fresh: Option<Fresh>,
) -> std::io::Result<()> {
    use rustix::mount::{UnmountFlags, mount_bind, unmount};
    let parent = path.parent().unwrap_or(Path::new("/"));
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_symlink() {
        return Ok(());
    }
    let mounted = mnt_id(path)? != mnt_id(parent)?;
    if mounted && (meta.dev(), meta.ino()) == id {
        // Another join's bind, perhaps made in place and not yet read-only: make sure.
        let ro = rustix::fs::statvfs(path)?
            .f_flag
            .contains(rustix::fs::StatVfsMountFlags::RDONLY);
        return if ro { Ok(()) } else { remount_read_only(path) };
    }
    if let Some(f) = fresh
        && f.place(path).is_ok()
    {
        return Ok(());
    }
    if mounted {
        unmount(path, UnmountFlags::DETACH)?;
    }
    mount_bind(source, path)?;
    remount_read_only(path)
}

/// The joins of one namespace renew its binds one at a time: a lock on a file in
/// the project's state dir, waited for at most [`BIND_LOCK_WAIT`] (a command that
/// holds it, being able to read the file, delays a join by that much, no more).
struct BindLock {
    /// The lock file, locked while held; `None` when it could not be had in time.
    _held: Option<std::fs::File>,
}

/// The longest a join waits for another's renewal of the binds.
const BIND_LOCK_WAIT: Duration = Duration::from_secs(3);

impl BindLock {
    fn take(project: &Path) -> Self {
        use rustix::fs::{FlockOperation, flock};
        let path = baton_config::state_dir(project).join("binds.lock");
        let Ok(file) = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
        else {
            return Self { _held: None };
        };
        let deadline = Instant::now() + BIND_LOCK_WAIT;
        while flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
            if Instant::now() > deadline {
                return Self { _held: None };
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Self { _held: Some(file) }
    }
}

/// Remount the bind at `path` read-only, keeping the flags the kernel locks
/// (nosuid, nodev, …).
fn remount_read_only(path: &Path) -> std::io::Result<()> {
    use rustix::fs::{StatVfsMountFlags, statvfs};
    use rustix::mount::{MountFlags, mount_remount};
    let have = statvfs(path)?.f_flag;
    let mut flags = MountFlags::BIND | MountFlags::RDONLY;
    for (st, ms) in [
        (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
        (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
    ] {
        if have.contains(st) {
            flags |= ms;
        }
    }
    mount_remount(path, flags, "")?;
    Ok(())
}
