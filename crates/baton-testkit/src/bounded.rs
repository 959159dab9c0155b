//! Every process a test runs ends: [`Bounded`] is [`Command::output`] and
//! [`Command::status`] with a limit. A command still running at its limit is
//! killed with its process group, and the test fails there naming the command
//! and showing what it wrote, instead of holding CI until its own limit.

use std::os::unix::process::CommandExt as _;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long one process of a test may run: `$BATON_TEST_LIMIT_SECS`, else ten
/// minutes (the slowest whole run in the suite takes about one).
pub fn limit() -> Duration {
    let secs = std::env::var("BATON_TEST_LIMIT_SECS")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|&s| s > 0)
        .unwrap_or(600);
    Duration::from_secs(secs)
}

/// What a hung command's failure shows of an output: its end.
const SHOWN: usize = 3000;

/// [`Command::output`] and [`Command::status`], bounded.
pub trait Bounded {
    /// [`Command::output`] (standard input empty) within [`limit`].
    ///
    /// # Panics
    /// When the command, or what it started in its process group, is still
    /// running at the limit: it is killed and the panic names it.
    fn output_bounded(&mut self) -> std::io::Result<Output>;
    /// [`Bounded::output_bounded`] within `limit`.
    ///
    /// # Panics
    /// As [`Bounded::output_bounded`].
    fn output_within(&mut self, limit: Duration) -> std::io::Result<Output>;
    /// [`Command::status`] within [`limit`].
    ///
    /// # Panics
    /// As [`Bounded::output_bounded`].
    fn status_bounded(&mut self) -> std::io::Result<ExitStatus>;
    /// [`Bounded::status_bounded`] within `limit`.
    ///
    /// # Panics
    /// As [`Bounded::output_bounded`].
    fn status_within(&mut self, limit: Duration) -> std::io::Result<ExitStatus>;
}

/// The command as a person would type it, cut.
fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    if s.len() > 300 {
        let mut end = 300;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

fn tail(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let skip = s.len().saturating_sub(SHOWN);
    let mut start = skip;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}

/// Kill process group `pgid` (the command and what it started there).
fn kill_group(pgid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Wait for `child` at most until `deadline`; its status, or `None` when it was
/// killed there (with its group).
fn wait_until(
    child: std::process::Child,
    deadline: Instant,
) -> std::io::Result<Option<ExitStatus>> {
    let pgid = child.id();
    let (tx, rx) = mpsc::channel();
    let mut child = child;
    let waiter = std::thread::spawn(move || {
        let s = child.wait();
        let _ = tx.send(());
        s
    });
    let ended = rx
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .is_ok();
    if !ended {
        kill_group(pgid);
    }
    let status = waiter
        .join()
        .map_err(|_| std::io::Error::other("the waiting thread panicked"))??;
    Ok(ended.then_some(status))
}

/// Read `pipe` to its end on a thread of its own; the bytes arrive on the
/// returned channel.
fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut v);
        }
        let _ = tx.send(v);
    });
    rx
}

impl Bounded for Command {
    fn output_bounded(&mut self) -> std::io::Result<Output> {
        self.output_within(limit())
    }

    fn output_within(&mut self, limit: Duration) -> std::io::Result<Output> {
        let shown = describe(self);
        let deadline = Instant::now() + limit;
        let mut child = self
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let pgid = child.id();
        let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
        let status = wait_until(child, deadline)?;
        // Its output ends when everything holding its pipes has: what it left
        // running in its group is given until the deadline, then killed.
        let mut held = false;
        let mut take = |rx: &mpsc::Receiver<Vec<u8>>| -> Vec<u8> {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(v) => v,
                Err(_) => {
                    held = true;
                    kill_group(pgid);
                    rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default()
                }
            }
        };
        let (stdout, stderr) = (take(&out), take(&err));
        match status {
            None => panic!(
                "`{shown}` did not end within {} s: killed with its process group.\n--- its stdout (end) ---\n{}\n--- its stderr (end) ---\n{}",
                limit.as_secs(),
                tail(&stdout),
                tail(&stderr)
            ),
            Some(_) if held => panic!(
                "`{shown}` exited, but what it started still held its output {} s after it began: killed with its process group.\n--- its stderr (end) ---\n{}",
                limit.as_secs(),
                tail(&stderr)
            ),
            Some(status) => Ok(Output {
                status,
                stdout,
                stderr,
            }),
        }
    }

    fn status_bounded(&mut self) -> std::io::Result<ExitStatus> {
        self.status_within(limit())
    }

    fn status_within(&mut self, limit: Duration) -> std::io::Result<ExitStatus> {
        let shown = describe(self);
        let child = self.process_group(0).spawn()?;
        match wait_until(child, Instant::now() + limit)? {
            Some(s) => Ok(s),
            None => panic!(
                "`{shown}` did not end within {} s: killed with its process group",
                limit.as_secs()
            ),
        }
    }
}

/// [`std::process::Child::wait`] and [`std::process::Child::wait_with_output`],
/// bounded, for a process a test spawned itself (to signal it, to read it as it
/// goes).
pub trait BoundedChild {
    /// [`std::process::Child::wait`] within [`limit`].
    ///
    /// # Panics
    /// When it is still running at the limit: it is killed (with the process
    /// group it leads, if any) and the panic names its pid.
    fn wait_bounded(&mut self) -> std::io::Result<ExitStatus>;
    /// [`std::process::Child::wait_with_output`] within [`limit`].
    ///
    /// # Panics
    /// As [`BoundedChild::wait_bounded`], and when what it started still holds
    /// its output at the limit.
    fn wait_with_output_bounded(self) -> std::io::Result<Output>;
}

/// Kill `child` and the process group it leads, if it leads one.
fn kill_child(child: &mut std::process::Child) {
    kill_group(child.id());
    let _ = child.kill();
}

impl BoundedChild for std::process::Child {
    fn wait_bounded(&mut self) -> std::io::Result<ExitStatus> {
        let limit = limit();
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.try_wait()? {
                return Ok(s);
            }
            if Instant::now() >= deadline {
                kill_child(self);
                let _ = self.wait();
                panic!(
                    "a process the test started (pid {}) did not end within {} s: killed",
                    self.id(),
                    limit.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn wait_with_output_bounded(mut self) -> std::io::Result<Output> {
        let limit = limit();
        let deadline = Instant::now() + limit;
        let (out, err) = (drain(self.stdout.take()), drain(self.stderr.take()));
        let status = self.wait_bounded()?;
        let pid = self.id();
        let take = |rx: &mpsc::Receiver<Vec<u8>>| -> Option<Vec<u8>> {
            rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .ok()
        };
        match (take(&out), take(&err)) {
            (Some(stdout), Some(stderr)) => Ok(Output {
                status,
                stdout,
                stderr,
            }),
            _ => {
                kill_group(pid);
                panic!(
                    "a process the test started (pid {pid}) exited, but what it started still held its output {} s after: killed its process group",
                    limit.as_secs()
                );
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn panic_text(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let e = std::panic::catch_unwind(f).unwrap_err();
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_string()))
            .unwrap_or_default()
    }

    #[test]
    fn a_command_that_ends_gives_its_output() {
        let out = Command::new("bash")
            .args(["-c", "echo out; echo err >&2; exit 3"])
            .output_bounded()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
    }

    /// The deliberately hung test: it fails, naming the command and what it
    /// said, and the test itself ends.
    #[test]
    fn a_hung_command_fails_naming_itself() {
        let text = panic_text(|| {
            let _ = Command::new("bash")
                .args(["-c", "echo started; exec sleep 300"])
                .output_within(Duration::from_secs(1));
        });
        assert!(
            text.contains("`bash -c echo started; exec sleep 300` did not end within 1 s"),
            "{text}"
        );
        assert!(text.contains("started"), "{text}");
    }

    /// A command that exits leaving a process that holds its output fails too
    /// (`Command::output` would wait for ever), and the process is killed.
    #[test]
    fn a_leftover_holding_the_output_is_killed_and_said() {
        let marker = tempfile::NamedTempFile::new().unwrap();
        let m = marker.path().display().to_string();
        let text = panic_text(|| {
            let _ = Command::new("bash")
                .args(["-c", &format!("(sleep 300; rm -f {m}) & echo left")])
                .output_within(Duration::from_secs(1));
        });
        assert!(text.contains("still held its output"), "{text}");
        // (The pattern does not match this check's own command line.)
        let status = Command::new("bash")
            .args([
                "-c",
                "sleep 0.5; pgrep -f 'sleep 30[0]; rm -f' >/dev/null && echo alive || echo gone",
            ])
            .output_bounded()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&status.stdout).trim(), "gone");
        assert!(marker.path().exists());
    }

    #[test]
    fn a_spawned_child_is_waited_for_with_its_output() {
        let child = Command::new("bash")
            .args(["-c", "echo out; echo err >&2"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.wait_with_output_bounded().unwrap();
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
        let mut c = Command::new("true").spawn().unwrap();
        assert!(c.wait_bounded().unwrap().success());
    }

    #[test]
    fn a_hung_status_fails_naming_itself() {
        let text = panic_text(|| {
            let _ = Command::new("sleep")
                .arg("300")
                .status_within(Duration::from_secs(1));
        });
        assert!(
            text.contains("`sleep 300` did not end within 1 s"),
            "{text}"
        );
        assert!(Command::new("true").status_bounded().unwrap().success());
    }
}
