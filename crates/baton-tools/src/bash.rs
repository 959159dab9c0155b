//! The `Bash` tool: one command in `bash -c`, in the project directory, in its own
//! process group, with stdout and stderr interleaved into one capped buffer.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use rustix::process::Signal;
use serde::Deserialize;
use tokio::io::AsyncReadExt as _;

use crate::process::signal_group;
use crate::spawn::{Channel, Event, SpawnRequest};
use crate::{ToolContext, ToolOutput};

/// Default timeout of a command.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout a command may ask for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output kept from the start of a command's output.
pub const HEAD_BYTES: usize = 15_000;
/// Output kept from the end of a command's output.
pub const TAIL_BYTES: usize = 15_000;
/// Where outputs too large to show whole are saved, relative to the project.
pub const OUTPUTS: &str = ".baton/outputs";

fn rand_suffix() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    std::process::id().wrapping_mul(7919) ^ NEXT.fetch_add(1, Ordering::Relaxed)
}

/// After the command exits, how long to keep reading output that its leftover
/// background processes may still hold open.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(100);

/// Input of the `Bash` tool.
#[derive(Debug, Deserialize)]
pub struct BashInput {
    /// The command line, run by `bash -c`.
    pub command: String,
    /// Timeout in milliseconds (default 120000, at most 600000).
    pub timeout: Option<u64>,
    /// What the command does, in a few words (shown to the user).
    pub description: Option<String>,
    /// Start the command and return at once; its output goes to a log file.
    pub run_in_background: Option<bool>,
}

/// Most bytes of one command's output saved whole under `.baton/outputs/`.
pub const SPILL_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Keeps the first `HEAD_BYTES` and the last `TAIL_BYTES` of a byte stream; with a
/// spill directory, an output larger than that is also saved whole (up to
/// `SPILL_MAX_BYTES`) so the model can search it instead of running it again.
#[derive(Debug, Default)]
pub struct CappedOutput {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    omitted: usize,
    spill_dir: Option<std::path::PathBuf>,
    /// The file the whole output goes to once it overflows, its name for people, and
    /// the bytes written.
    spill: Option<(std::fs::File, String, u64)>,
}

impl CappedOutput {
    /// A buffer that saves an overflowing output whole in `dir` (shown as `shown/…`).
    pub fn spilling_to(dir: std::path::PathBuf) -> Self {
        Self {
            spill_dir: Some(dir),
            ..Self::default()
        }
    }

    fn spill(&mut self, bytes: &[u8]) {
        use std::io::Write as _;
        if self.spill.is_none()
            && let Some(dir) = &self.spill_dir
            && self.head.len() + self.tail.len() + bytes.len() > HEAD_BYTES + TAIL_BYTES
        {
            let name = format!(
                "bash-{}-{}.log",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis())
                    .unwrap_or_default(),
                rand_suffix()
            );
            let opened =
                std::fs::create_dir_all(dir).and_then(|()| std::fs::File::create(dir.join(&name)));
            if let Ok(mut f) = opened {
                let (a, b) = self.tail.as_slices();
                let ok = f
                    .write_all(&self.head)
                    .and_then(|()| f.write_all(a))
                    .and_then(|()| f.write_all(b));
                if ok.is_ok() {
                    let n = (self.head.len() + self.tail.len()) as u64;
                    self.spill = Some((f, format!("{OUTPUTS}/{name}"), n));
                }
            }
            self.spill_dir = None;
        }
        if let Some((f, _, n)) = self.spill.as_mut()
            && *n < SPILL_MAX_BYTES
        {
            let take = bytes.len().min((SPILL_MAX_BYTES - *n) as usize);
            if f.write_all(&bytes[..take]).is_ok() {
                *n += take as u64;
            }
        }
    }

    /// Append bytes.
    pub fn push(&mut self, mut bytes: &[u8]) {
        if self.spill_dir.is_some() || self.spill.is_some() {
            self.spill(bytes);
        }
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        if room > 0 {
            let take = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(TAIL_BYTES);
        if excess > 0 {
            self.tail.drain(..excess);
            self.omitted += excess;
        }
    }

    /// The kept output as text, with a marker where bytes were left out.
    pub fn render(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.omitted > 0 {
            let whole = match &self.spill {
                Some((_, name, n)) if *n >= SPILL_MAX_BYTES => format!(
                    "; the first {n} bytes are in {name}: search it with Grep or read parts with Read (offset, limit)"
                ),
                Some((_, name, _)) => format!(
                    "; the whole output is in {name}: search it with Grep or read parts with Read (offset, limit) instead of running the command again"
                ),
                None => String::new(),
            };
            s.push_str(&format!(
                "\n\n... [{} bytes of output omitted{whole}] ...\n\n",
                self.omitted
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        s.push_str(&String::from_utf8_lossy(&tail));
        s
    }
}

fn command(ctx: &ToolContext, line: &str) -> tokio::process::Command {
    let prefix = ctx
        .launcher
        .as_ref()
        .map(|l| l.prefix())
        .unwrap_or_default();
    let mut cmd = match prefix.as_slice() {
        [program, args @ ..] => {
            let mut c = tokio::process::Command::new(program);
            c.args(args).arg("bash");
            c
        }
        [] => tokio::process::Command::new("bash"),
    };
    cmd.arg("-c")
        .arg(line)
        .current_dir(&ctx.project_dir)
        .stdin(Stdio::null())
        .process_group(0);
    for (key, value) in &ctx.env {
        cmd.env(key, value);
    }
    for key in &ctx.env_remove {
        cmd.env_remove(key);
    }
    if let Some((k, v)) = ctx.processes.marker() {
        cmd.env(k, v);
    }
    cmd
}

/// The whole environment `command` gives a command: baton's own, with the
/// context's variables set and its removed ones (the secrets) taken out, and the
/// run's marker.
fn environment(ctx: &ToolContext) -> Vec<(OsString, OsString)> {
    let mut env: std::collections::BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (key, value) in &ctx.env {
        env.insert(key.into(), value.into());
    }
    for key in &ctx.env_remove {
        env.remove(std::ffi::OsStr::new(key));
    }
    if let Some((k, v)) = ctx.processes.marker() {
        env.insert(k.into(), v.into());
    }
    env.into_iter().collect()
}

/// How long a spawner may take to say it started a command.
const SPAWN_TIMEOUT: Duration = Duration::from_secs(10);

/// A command started by [`start`]: baton's child, or a child of the launcher's
/// spawner.
enum Running {
    Child(tokio::process::Child),
    Spawned { pid: u32, channel: Channel },
}

impl Running {
    /// Its pid, which is also its process group.
    fn id(&self) -> u32 {
        match self {
            Running::Child(c) => c.id().unwrap_or_default(),
            Running::Spawned { pid, .. } => *pid,
        }
    }

    /// Wait until it ends: its exit code, `None` when a signal killed it.
    /// Cancel-safe.
    async fn wait(&mut self) -> std::io::Result<Option<i32>> {
        match self {
            Running::Child(c) => c.wait().await.map(|s| s.code()),
            Running::Spawned { channel, .. } => loop {
                match channel.next().await? {
                    Event::Exited(code) => return Ok(Some(code)),
                    Event::Signaled(_) => return Ok(None),
                    Event::Started(_) | Event::Failed(_) => {}
                }
            },
        }
    }
}

/// Start `bash -c LINE` for `ctx` with its output to `stdout` and `stderr`: through
/// the launcher's spawner when it has one (a `foreground` command dies with its
/// channel), else through the launcher's prefix.
async fn start(
    ctx: &ToolContext,
    line: &str,
    stdout: OwnedFd,
    stderr: OwnedFd,
    foreground: bool,
) -> std::io::Result<Running> {
    let (stdout, stderr) = match &ctx.launcher {
        Some(launcher) => {
            let request = SpawnRequest {
                program: "bash".into(),
                args: vec!["-c".into(), line.into()],
                cwd: ctx.project_dir.clone(),
                env: environment(ctx),
                stdout,
                stderr,
                foreground,
            };
            match launcher.spawn(&request) {
                Some(sent) => {
                    let mut channel = Channel::new(sent?)?;
                    match tokio::time::timeout(SPAWN_TIMEOUT, channel.next()).await {
                        Ok(Ok(Event::Started(pid))) => {
                            return Ok(Running::Spawned { pid, channel });
                        }
                        Ok(Ok(Event::Failed(errno))) => {
                            return Err(std::io::Error::from_raw_os_error(errno));
                        }
                        Ok(Ok(other)) => {
                            return Err(std::io::Error::other(format!(
                                "the sandbox's spawner said {other:?} before the command started"
                            )));
                        }
                        Err(_) => {
                            return Err(std::io::Error::other(
                                "the sandbox's spawner did not start the command within 10 s",
                            ));
                        }
                        // The spawner went away before it started the command (the
                        // launcher knows it is gone now): start it the other way.
                        Ok(Err(_)) => (request.stdout, request.stderr),
                    }
                }
                None => (request.stdout, request.stderr),
            }
        }
        None => (stdout, stderr),
    };
    let mut cmd = command(ctx, line);
    cmd.stdout(Stdio::from(stdout)).stderr(Stdio::from(stderr));
    let child = cmd.spawn()?;
    // The parent's copies of the output fds live in `cmd`: closed here.
    drop(cmd);
    Ok(Running::Child(child))
}

/// Run the `Bash` tool.
pub async fn run(ctx: &ToolContext, input: BashInput) -> ToolOutput {
    if input.command.trim().is_empty() {
        return ToolOutput::error("Bash: command is empty");
    }
    if input.run_in_background == Some(true) {
        return run_background(ctx, &input.command).await;
    }
    let timeout_ms = input
        .timeout
        .unwrap_or(DEFAULT_TIMEOUT_MS)
        .clamp(1, MAX_TIMEOUT_MS);
    match run_foreground(ctx, &input.command, Duration::from_millis(timeout_ms)).await {
        Ok(out) => out,
        Err(e) => ToolOutput::error(format!("Bash: could not start bash: {e}")),
    }
}

async fn run_foreground(
    ctx: &ToolContext,
    line: &str,
    timeout: Duration,
) -> std::io::Result<ToolOutput> {
    let (tx, mut rx) = tokio::net::unix::pipe::pipe()?;
    let write_end = tx.into_blocking_fd()?;
    // baton's copies of the write end are gone once it started: EOF arrives when
    // the command's processes close theirs.
    let mut child = start(ctx, line, write_end.try_clone()?, write_end, true).await?;
    let pgid = child.id() as i32;
    ctx.processes.adopt(child.id());
    // Dropped before the command ended (the session's time limit raced it): its
    // whole process group goes with it.
    let mut group = KillOnDrop(Some(pgid));

    let mut out = CappedOutput::spilling_to(ctx.project_dir.join(OUTPUTS));
    let mut buf = vec![0u8; 16 * 1024];
    let mut status = None;
    let mut eof = false;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let drain = tokio::time::sleep(Duration::MAX);
    tokio::pin!(drain);
    let ended = loop {
        if eof && status.is_some() {
            break End::Exited;
        }
        tokio::select! {
            n = rx.read(&mut buf), if !eof => match n {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => out.push(&buf[..n]),
            },
            s = child.wait(), if status.is_none() => {
                status = Some(s);
                drain.as_mut().reset(tokio::time::Instant::now() + DRAIN_AFTER_EXIT);
            }
            () = &mut drain, if status.is_some() => break End::Exited,
            () = &mut deadline => break End::TimedOut,
            () = ctx.cancel.cancelled() => break End::Cancelled,
        }
    };
    match ended {
        End::Exited => {}
        End::TimedOut | End::Cancelled => {
            signal_group(pgid, Signal::KILL);
            let _ = child.wait().await;
        }
    }
    group.0 = None;
    let mut text = out.render();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let result = match ended {
        End::TimedOut => ToolOutput::error(format!(
            "{text}Command timed out after {} ms and was killed. For long-running servers use run_in_background.",
            timeout.as_millis()
        )),
        End::Cancelled => ToolOutput::error(format!(
            "{text}Command interrupted: the session is stopping."
        )),
        End::Exited => {
            let code = match status {
                Some(Ok(code)) => code,
                _ => None,
            };
            match code {
                Some(0) => ToolOutput::ok(format!("{text}Exit code: 0")),
                Some(c) => ToolOutput::error(format!("{text}Exit code: {c}")),
                None => ToolOutput::error(format!("{text}Command was killed by a signal.")),
            }
        }
    };
    Ok(result)
}

/// Kills a foreground command's process group when dropped while armed.
struct KillOnDrop(Option<i32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take()
            && pgid > 0
        {
            signal_group(pgid, Signal::KILL);
        }
    }
}

enum End {
    Exited,
    TimedOut,
    Cancelled,
}

async fn run_background(ctx: &ToolContext, line: &str) -> ToolOutput {
    let dir = ctx.project_dir.join(".baton").join("background");
    let opened = std::fs::create_dir_all(&dir).and_then(|()| {
        let n = std::fs::read_dir(&dir)?.count() + 1;
        let log_path = dir.join(format!("{n:04}.log"));
        let log = std::fs::File::create(&log_path)?;
        Ok((
            OwnedFd::from(log.try_clone()?),
            OwnedFd::from(log),
            log_path,
        ))
    });
    let started = match opened {
        Ok((out, err, log_path)) => start(ctx, line, out, err, false)
            .await
            .map(|child| (child, log_path)),
        Err(e) => Err(e),
    };
    match started {
        Ok((child, log_path)) => {
            let spawned = child.id();
            ctx.processes.adopt(spawned);
            // The pid the agent's own commands know it by (the sandbox may give
            // them a PID namespace of their own).
            let pid = match ctx.launcher.clone() {
                Some(l) => tokio::task::spawn_blocking(move || l.visible_pid(spawned))
                    .await
                    .unwrap_or(spawned),
                None => spawned,
            };
            // The child is owned through its process group; reap it when it exits
            // (a spawner reaps its own).
            if let Running::Child(mut child) = child {
                tokio::spawn(async move {
                    let _ = child.wait().await;
                });
            }
            ToolOutput::ok(format!(
                "Started in the background (pid {pid}). Its output goes to {}; read it with Read. It keeps running after this call (baton stops it when the run or exec ends); stop it yourself with `kill {pid}`.",
                crate::paths::display(&ctx.project_dir, &log_path)
            ))
        }
        Err(e) => ToolOutput::error(format!("Bash: could not start the background command: {e}")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn capped_output_keeps_head_and_tail() {
        let mut c = CappedOutput::default();
        let data: Vec<u8> = (0..50_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for chunk in data.chunks(777) {
            c.push(chunk);
        }
        let s = c.render();
        assert!(s.starts_with(std::str::from_utf8(&data[..HEAD_BYTES]).unwrap()));
        assert!(s.ends_with(std::str::from_utf8(&data[data.len() - TAIL_BYTES..]).unwrap()));
        assert!(
            s.contains("[20000 bytes of output omitted]"),
            "{}",
            &s[14_990..15_060]
        );
    }

    #[test]
    fn an_overflowing_output_is_saved_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = CappedOutput::spilling_to(dir.path().join("out"));
        let data: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for chunk in data.chunks(4096) {
            c.push(chunk);
        }
        let s = c.render();
        let name = s
            .split("the whole output is in ")
            .nth(1)
            .and_then(|r| r.split(':').next())
            .unwrap()
            .to_string();
        let file = name.strip_prefix(".baton/outputs/").unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("out").join(file)).unwrap(),
            data
        );
        // A small output is not saved.
        let mut small = CappedOutput::spilling_to(dir.path().join("small"));
        small.push(b"hello\n");
        assert_eq!(small.render(), "hello\n");
        assert!(!dir.path().join("small").exists());
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = CappedOutput::default();
        c.push(b"hello\n");
        c.push(b"world\n");
        assert_eq!(c.render(), "hello\nworld\n");
    }
}
