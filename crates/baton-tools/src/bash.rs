//! The `Bash` tool: one command in `bash -c`, in the project directory, in its own
//! process group, with stdout and stderr interleaved into one capped buffer.

use std::process::Stdio;
use std::time::Duration;

use rustix::process::Signal;
use serde::Deserialize;
use tokio::io::AsyncReadExt as _;

use crate::process::signal_group;
use crate::{ToolContext, ToolOutput};

/// Default timeout of a command.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout a command may ask for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output kept from the start of a command's output.
pub const HEAD_BYTES: usize = 15_000;
/// Output kept from the end of a command's output.
pub const TAIL_BYTES: usize = 15_000;
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

/// Keeps the first `HEAD_BYTES` and the last `TAIL_BYTES` of a byte stream.
#[derive(Debug, Default)]
pub struct CappedOutput {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    omitted: usize,
}

impl CappedOutput {
    /// Append bytes.
    pub fn push(&mut self, mut bytes: &[u8]) {
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
            s.push_str(&format!(
                "\n\n... [{} bytes of output omitted] ...\n\n",
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
    let mut cmd = match ctx.launcher.as_deref() {
        Some([program, args @ ..]) => {
            let mut c = tokio::process::Command::new(program);
            c.args(args).arg("bash");
            c
        }
        _ => tokio::process::Command::new("bash"),
    };
    cmd.arg("-c")
        .arg(line)
        .current_dir(&ctx.project_dir)
        .stdin(Stdio::null())
        .process_group(0);
    for key in &ctx.env_remove {
        cmd.env_remove(key);
    }
    cmd
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
    let mut cmd = command(ctx, line);
    cmd.stdout(Stdio::from(write_end.try_clone()?))
        .stderr(Stdio::from(write_end));
    let mut child = cmd.spawn()?;
    // The parent's copies of the write end live in `cmd`; drop them so that EOF
    // arrives when the command's processes close theirs.
    drop(cmd);
    let pgid = child.id().unwrap_or_default() as i32;
    if let Some(pid) = child.id() {
        ctx.processes.adopt(pid);
    }

    let mut out = CappedOutput::default();
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
                Some(Ok(s)) => s.code(),
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

enum End {
    Exited,
    TimedOut,
    Cancelled,
}

async fn run_background(ctx: &ToolContext, line: &str) -> ToolOutput {
    let dir = ctx.project_dir.join(".baton").join("background");
    let started = std::fs::create_dir_all(&dir).and_then(|()| {
        let n = std::fs::read_dir(&dir)?.count() + 1;
        let log_path = dir.join(format!("{n:04}.log"));
        let log = std::fs::File::create(&log_path)?;
        let mut cmd = command(ctx, line);
        cmd.stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log));
        let child = cmd.spawn()?;
        Ok((child, log_path))
    });
    match started {
        Ok((child, log_path)) => {
            let pid = child.id().unwrap_or_default();
            ctx.processes.adopt(pid);
            // The child is owned through its process group; reap it when it exits.
            tokio::spawn(async move {
                let mut child = child;
                let _ = child.wait().await;
            });
            ToolOutput::ok(format!(
                "Started in the background (pid {pid}). Its output goes to {}; read it with Read. It is stopped when the session ends.",
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
    fn small_output_is_kept_whole() {
        let mut c = CappedOutput::default();
        c.push(b"hello\n");
        c.push(b"world\n");
        assert_eq!(c.render(), "hello\nworld\n");
    }
}
