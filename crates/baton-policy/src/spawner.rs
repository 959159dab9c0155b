//! One process inside the run's namespace that starts the `Bash` tool's commands.
//!
//! Joining the namespace for each command costs a start of the baton binary and
//! its setns, bind, mask and Landlock work: most of a command's cost. The spawner
//! does that once ([`crate::namespace::enter`], so it is confined exactly as a
//! command is) and then starts each command as its own child, which inherits all
//! of it: the PID and mount namespaces, the masks, Landlock, no `CAP_SYS_PTRACE`.
//!
//! Requests go one way only, from baton to the spawner, over a socket pair whose
//! other end only baton holds (the spawner's standard input when it starts, moved
//! to a close-on-exec descriptor at once): an agent's command can neither reach
//! nor name it, and the spawner is outside the commands' PID namespace (they
//! cannot see, signal or trace it). Each request carries the command (program,
//! arguments, working directory, whole environment), a fresh channel and the
//! command's standard output and error (`SCM_RIGHTS`). On the channel the spawner
//! answers [`Event`]s: `Started(pid)` (baton's view of the pid, also the process
//! group), then `Exited` or `Signaled`. A foreground command whose channel closes
//! before it ended has its process group killed (the call that started it was
//! dropped).
//!
//! The protected binds are renewed by baton before a request when a protected file
//! was replaced since they were made: a spawner, under Landlock, cannot mount.

use std::ffi::OsString;
use std::io::Read as _;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use baton_tools::spawn::{Event, SpawnRequest};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use crate::sandbox::{SandboxError, SandboxSpec};

/// How long a spawner may take to join the namespace and say it is ready.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// The environment variables a spawner itself keeps (what finding the secrets,
/// the agent's home and the temp dirs reads); each command gets its own whole
/// environment with its request.
const SPAWNER_ENV: &[&str] = &["HOME", "XDG_STATE_HOME", "TMPDIR", "PATH"];

/// baton's handle on a running spawner.
#[derive(Debug)]
pub(crate) struct Spawner {
    child: Child,
    control: UnixStream,
    /// The protected files (path, device, inode) as they were when the binds the
    /// spawner's commands see were made.
    pub(crate) bound: Vec<crate::namespace::Protected>,
}

impl Spawner {
    /// Start `exe ARGS…` (`__sandbox --join PID … --serve`) and wait until it has
    /// joined the namespace and confined itself.
    pub(crate) fn start(
        exe: &Path,
        args: &[OsString],
        spec: &SandboxSpec,
    ) -> Result<Spawner, SandboxError> {
        use std::os::unix::process::CommandExt as _;
        let fail = |e: &dyn std::fmt::Display| {
            SandboxError::Landlock(format!("cannot start the sandbox's spawner: {e}"))
        };
        let (control, theirs) = UnixStream::pair().map_err(|e| fail(&e))?;
        // Made before the spawner binds them.
        let bound = crate::namespace::protected_ids(spec);
        let mut cmd = Command::new(exe);
        cmd.args(args)
            .env_clear()
            .current_dir(&spec.project)
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            // Where it says why it stopped, should it stop before baton.
            .stderr(Stdio::inherit())
            // Its own process group: a Ctrl-C at the terminal is baton's to handle.
            .process_group(0);
        for var in SPAWNER_ENV {
            if let Some(v) = std::env::var_os(var) {
                cmd.env(var, v);
            }
        }
        let mut child = cmd.spawn().map_err(|source| SandboxError::Exec {
            program: exe.display().to_string(),
            source,
        })?;
        drop(cmd);
        let ready = control
            .set_read_timeout(Some(READY_TIMEOUT))
            .and_then(|()| {
                let mut said = Vec::new();
                let mut first = [0u8; 1];
                match (&control).read(&mut first)? {
                    0 => Ok(Err("it ended before it was ready".to_string())),
                    _ if first[0] == 0 => Ok(Ok(())),
                    _ => {
                        (&control).read_to_end(&mut said)?;
                        Ok(Err(String::from_utf8_lossy(&said).into_owned()))
                    }
                }
            })
            .and_then(|r| {
                control.set_read_timeout(None)?;
                control.set_write_timeout(Some(READY_TIMEOUT))?;
                Ok(r)
            });
        match ready {
            Ok(Ok(())) => Ok(Spawner {
                child,
                control,
                bound,
            }),
            Ok(Err(why)) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(fail(&why))
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(fail(&e))
            }
        }
    }

    /// Whether the spawner still runs.
    pub(crate) fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Hand `request` to the spawner; the command's channel.
    pub(crate) fn send(&mut self, request: &SpawnRequest) -> std::io::Result<UnixStream> {
        let (ours, theirs) = UnixStream::pair()?;
        let payload = encode(request);
        let header = (payload.len() as u64).to_le_bytes();
        let fds = [
            theirs.as_fd(),
            request.stdout.as_fd(),
            request.stderr.as_fd(),
        ];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
        let mut ancillary = SendAncillaryBuffer::new(&mut space);
        if !ancillary.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(std::io::Error::other("cannot attach the descriptors"));
        }
        let sent = rustix::net::sendmsg(
            &self.control,
            &[std::io::IoSlice::new(&header)],
            &mut ancillary,
            SendFlags::NOSIGNAL,
        )?;
        send_all(&self.control, &header[sent..])?;
        send_all(&self.control, &payload)?;
        Ok(ours)
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // The spawner ends when its control socket closes; do not wait for that.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn send_all(socket: &UnixStream, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let n = rustix::net::send(socket, bytes, SendFlags::NOSIGNAL)?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        bytes = &bytes[n..];
    }
    Ok(())
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// The request but its descriptors, as it goes on the control socket.
fn encode(r: &SpawnRequest) -> Vec<u8> {
    let mut out = vec![u8::from(r.foreground)];
    put(&mut out, r.program.as_bytes());
    out.extend_from_slice(&(r.args.len() as u32).to_le_bytes());
    for a in &r.args {
        put(&mut out, a.as_bytes());
    }
    put(&mut out, r.cwd.as_os_str().as_bytes());
    out.extend_from_slice(&(r.env.len() as u32).to_le_bytes());
    for (k, v) in &r.env {
        put(&mut out, k.as_bytes());
        put(&mut out, v.as_bytes());
    }
    out
}

/// A request as the spawner reads it.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    foreground: bool,
    program: OsString,
    args: Vec<OsString>,
    cwd: PathBuf,
    env: Vec<(OsString, OsString)>,
}

fn decode(mut b: &[u8]) -> Option<Request> {
    fn u32_at(b: &mut &[u8]) -> Option<usize> {
        let (n, rest) = b.split_first_chunk::<4>()?;
        *b = rest;
        usize::try_from(u32::from_le_bytes(*n)).ok()
    }
    fn bytes(b: &mut &[u8]) -> Option<OsString> {
        let n = u32_at(b)?;
        if b.len() < n {
            return None;
        }
        let (s, rest) = b.split_at(n);
        *b = rest;
        Some(OsString::from_vec(s.to_vec()))
    }
    let (&fg, rest) = b.split_first()?;
    b = rest;
    let program = bytes(&mut b)?;
    let argc = u32_at(&mut b)?;
    let args = (0..argc)
        .map(|_| bytes(&mut b))
        .collect::<Option<Vec<_>>>()?;
    let cwd = PathBuf::from(bytes(&mut b)?);
    let envc = u32_at(&mut b)?;
    let env = (0..envc)
        .map(|_| Some((bytes(&mut b)?, bytes(&mut b)?)))
        .collect::<Option<Vec<_>>>()?;
    b.is_empty().then_some(Request {
        foreground: fg != 0,
        program,
        args,
        cwd,
        env,
    })
}

/// The largest request the spawner accepts (a command line is at most 128 KiB).
const MAX_REQUEST: u64 = 16 << 20;

/// Read the next request: its data and its descriptors (channel, stdout, stderr);
/// `None` when baton closed the socket.
fn receive(control: &UnixStream) -> std::io::Result<Option<(Request, [OwnedFd; 3])>> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
    let mut header = [0u8; 8];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        control,
        &mut [std::io::IoSliceMut::new(&mut header)],
        &mut ancillary,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for msg in ancillary.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = msg {
            fds.extend(rights);
        }
    }
    if got.bytes == 0 {
        return Ok(None);
    }
    (&*control).read_exact(&mut header[got.bytes..])?;
    let len = u64::from_le_bytes(header);
    if len > MAX_REQUEST {
        return Err(bad("request too large"));
    }
    let mut payload = vec![0u8; len as usize];
    (&*control).read_exact(&mut payload)?;
    let request = decode(&payload).ok_or_else(|| bad("malformed request"))?;
    let fds: [OwnedFd; 3] = fds
        .try_into()
        .map_err(|_| bad("a request needs three descriptors"))?;
    Ok(Some((request, fds)))
}

/// `baton __sandbox --join PID … --serve`: enter the namespace `target` holds and
/// confine this process as a command would be ([`crate::namespace::enter`]), say
/// so on the control socket (standard input), then start each request's command
/// until baton closes the socket.
///
/// One thread: a process that entered a PID namespace cannot start threads (its
/// children live in another namespace than its own), so one `poll` watches the
/// control socket, each command (a pidfd) and each foreground command's channel.
pub fn serve(spec: &SandboxSpec, target: i32) -> Result<(), SandboxError> {
    use rustix::event::{PollFd, PollFlags, poll};
    let fail = |e: &dyn std::fmt::Display| SandboxError::Landlock(format!("sandbox spawner: {e}"));
    // The control socket leaves standard input for a close-on-exec descriptor, so
    // nothing this process starts can inherit it.
    let control =
        rustix::io::fcntl_dupfd_cloexec(std::io::stdin().as_fd(), 3).map_err(|e| fail(&e))?;
    let null = std::fs::File::open("/dev/null").map_err(|e| fail(&e))?;
    rustix::stdio::dup2_stdin(&null).map_err(|e| fail(&e))?;
    drop(null);
    let control = UnixStream::from(control);
    if let Err(e) = crate::namespace::enter(spec, target) {
        let mut said = vec![1u8];
        said.extend_from_slice(e.to_string().as_bytes());
        let _ = send_all(&control, &said);
        return Err(e);
    }
    send_all(&control, &[0]).map_err(|e| fail(&e))?;
    let mut running: Vec<Watched> = Vec::new();
    loop {
        // Without a pidfd for some command (an old kernel), look every few ms.
        let tick = running
            .iter()
            .any(|w| w.pidfd.is_none())
            .then_some(rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: 5_000_000,
            });
        let (control_ready, ready) = {
            let mut fds = vec![PollFd::new(&control, PollFlags::IN)];
            let mut slots = Vec::with_capacity(running.len());
            for w in &running {
                let pidfd = w.pidfd.as_ref().map(|p| {
                    fds.push(PollFd::new(p, PollFlags::IN));
                    fds.len() - 1
                });
                let channel = w.leashed().then(|| {
                    fds.push(PollFd::new(&w.channel, PollFlags::IN));
                    fds.len() - 1
                });
                slots.push((pidfd, channel));
            }
            match poll(&mut fds, tick.as_ref()) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(fail(&e)),
            }
            let any = |i: Option<usize>| i.is_some_and(|i| !fds[i].revents().is_empty());
            let ready: Vec<(bool, bool)> =
                slots.into_iter().map(|(p, c)| (any(p), any(c))).collect();
            (!fds[0].revents().is_empty(), ready)
        };
        // A channel closed before its command ended: the call was dropped.
        for (w, &(_, dropped)) in running.iter_mut().zip(&ready) {
            if dropped {
                w.kill();
            }
        }
        let mut i = 0;
        running.retain_mut(|w| {
            let (exited, _) = ready.get(i).copied().unwrap_or_default();
            i += 1;
            !(exited || w.pidfd.is_none()) || !w.reap()
        });
        if control_ready {
            match receive(&control) {
                Ok(Some((request, [channel, stdout, stderr]))) => {
                    if let Some(w) = run(spec, request, UnixStream::from(channel), stdout, stderr) {
                        running.push(w);
                    }
                }
                Ok(None) => return Ok(()),
                Err(e) => return Err(fail(&e)),
            }
        }
    }
}

/// A command the spawner started and has not reaped yet.
struct Watched {
    child: Child,
    pidfd: Option<OwnedFd>,
    channel: UnixStream,
    foreground: bool,
    killed: bool,
}

impl Watched {
    /// Whether its channel closing kills it (a foreground command not killed yet).
    fn leashed(&self) -> bool {
        self.foreground && !self.killed
    }

    /// Kill its process group: not reaped yet, so the number is still its own.
    fn kill(&mut self) {
        self.killed = true;
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }

    /// Reap it if it ended and tell baton how; whether it ended.
    fn reap(&mut self) -> bool {
        use std::os::unix::process::ExitStatusExt as _;
        let event = match self.child.try_wait() {
            Ok(None) => return false,
            Ok(Some(s)) => match (s.code(), s.signal()) {
                (Some(c), _) => Event::Exited(c),
                (None, Some(sig)) => Event::Signaled(sig),
                (None, None) => Event::Exited(1),
            },
            Err(_) => Event::Exited(1),
        };
        let _ = send_all(&self.channel, &event.encode());
        true
    }
}

/// Where `program` is on the command's `PATH` (absolute entries only; as it is
/// when it names a path, or another entry comes first). Started by its path, a
/// command needs no fork of the spawner (std uses `posix_spawn` then; with a `PATH`
/// of the command's own it forks to search it).
fn resolve(program: &std::ffi::OsStr, env: &[(OsString, OsString)]) -> PathBuf {
    if program.as_bytes().contains(&b'/') {
        return PathBuf::from(program);
    }
    let path = env
        .iter()
        .find(|(k, _)| k.as_bytes() == b"PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        if !dir.is_absolute() {
            break;
        }
        let candidate = dir.join(program);
        if candidate.is_file()
            && rustix::fs::access(&candidate, rustix::fs::Access::EXEC_OK).is_ok()
        {
            return candidate;
        }
    }
    PathBuf::from(program)
}

/// Start one request's command; it is to be watched unless it could not start.
fn run(
    spec: &SandboxSpec,
    r: Request,
    channel: UnixStream,
    stdout: OwnedFd,
    stderr: OwnedFd,
) -> Option<Watched> {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = Command::new(resolve(&r.program, &r.env));
    cmd.arg0(&r.program)
        .args(&r.args)
        .current_dir(&r.cwd)
        .env_clear()
        .envs(r.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0);
    let lookup = |k: &str| {
        r.env
            .iter()
            .find(|(key, _)| key.as_bytes() == k.as_bytes())
            .map(|(_, v)| v.clone())
    };
    cmd.envs(crate::sandbox::home_env_in(spec, &lookup))
        .envs(crate::namespace::net_env(spec));
    let spawned = cmd.spawn();
    // This process's copies of the output descriptors go now: EOF reaches baton
    // when the command's processes close theirs.
    drop(cmd);
    match spawned {
        Err(e) => {
            let _ = send_all(
                &channel,
                &Event::Failed(e.raw_os_error().unwrap_or(5)).encode(),
            );
            None
        }
        Ok(child) => {
            let _ = send_all(&channel, &Event::Started(child.id()).encode());
            let pidfd = rustix::process::pidfd_open(
                rustix::process::Pid::from_child(&child),
                rustix::process::PidfdFlags::empty(),
            )
            .ok();
            Some(Watched {
                child,
                pidfd,
                channel,
                foreground: r.foreground,
                killed: false,
            })
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        let null = || OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        let r = SpawnRequest {
            program: "bash".into(),
            args: vec!["-c".into(), "echo ü\n".into()],
            cwd: PathBuf::from("/p"),
            env: vec![("A".into(), "1".into()), ("EMPTY".into(), "".into())],
            stdout: null(),
            stderr: null(),
            foreground: true,
        };
        let back = decode(&encode(&r)).unwrap();
        assert_eq!(
            back,
            Request {
                foreground: true,
                program: r.program.clone(),
                args: r.args.clone(),
                cwd: r.cwd.clone(),
                env: r.env.clone(),
            }
        );
        let bytes = encode(&r);
        assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
    }
}
