//! Ownership of the processes the tools start.
//!
//! Every `Bash` command runs in its own process group. The group is recorded here
//! and stays owned after the command returns, so that servers it left running in
//! the background are stopped when the owner shuts down: `SIGTERM` to each group,
//! a short grace period, then `SIGKILL`.

use std::sync::Mutex;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group, test_kill_process_group};

/// The process groups started for one agent session (or one run).
#[derive(Debug, Default)]
pub struct ProcessRegistry {
    groups: Mutex<Vec<i32>>,
    /// Where each adopted group is recorded as it starts, with the run's id, so a
    /// later run can stop what a crashed one left (see [`stop_leftovers`]).
    record: Option<(std::path::PathBuf, String)>,
}

/// The environment variable marking the processes of one run (its value is the
/// run's id), so leftovers are recognised by more than a recorded number.
pub const RUN_MARKER: &str = "BATON_RUN_ID";

impl ProcessRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty registry that records each group it adopts in `path` (one line
    /// `PGID START_TICKS RUN_ID`), for [`stop_leftovers`] after a crash. The tools
    /// must mark their processes with `RUN_MARKER=run_id` ([`Self::marker`]).
    pub fn recording(path: std::path::PathBuf, run_id: String) -> Self {
        Self {
            groups: Mutex::default(),
            record: Some((path, run_id)),
        }
    }

    /// The environment variable and value that mark this registry's processes.
    pub fn marker(&self) -> Option<(&'static str, &str)> {
        self.record
            .as_ref()
            .map(|(_, id)| (RUN_MARKER, id.as_str()))
    }

    /// Take ownership of the process group whose leader is `pid`.
    /// Groups whose members have all exited are forgotten here, so a long session
    /// does not accumulate them (and a reused id is not signalled later).
    pub fn adopt(&self, pid: u32) {
        if let Ok(mut g) = self.groups.lock() {
            g.retain(|&pg| group_alive(pg));
            g.push(pid as i32);
        }
        if let Some((path, run_id)) = &self.record {
            use std::io::Write as _;
            let line = format!("{pid} {} {run_id}\n", start_ticks(pid as i32).unwrap_or(0));
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(line.as_bytes()));
        }
    }

    /// Process groups that still have a living member.
    pub fn alive(&self) -> Vec<i32> {
        let groups = self.groups.lock().map(|g| g.clone()).unwrap_or_default();
        groups.into_iter().filter(|&g| group_alive(g)).collect()
    }

    /// Stop every owned group: `SIGTERM`, up to `grace` for them to exit, then `SIGKILL`.
    /// Returns how many groups were still running when this was called.
    pub async fn shutdown(&self, grace: Duration) -> usize {
        let groups = std::mem::take(&mut *self.groups.lock().unwrap_or_else(|e| e.into_inner()));
        if let Some((path, _)) = &self.record {
            let _ = std::fs::remove_file(path);
        }
        let alive: Vec<i32> = groups.into_iter().filter(|&g| group_alive(g)).collect();
        for &g in &alive {
            signal_group(g, Signal::TERM);
        }
        let deadline = tokio::time::Instant::now() + grace;
        while alive.iter().any(|&g| group_alive(g)) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for &g in &alive {
            signal_group(g, Signal::KILL);
        }
        alive.len()
    }

    /// Kill every owned group at once, without waiting (for use from `Drop`).
    pub fn kill_all_now(&self) {
        let groups = std::mem::take(&mut *self.groups.lock().unwrap_or_else(|e| e.into_inner()));
        for g in groups {
            signal_group(g, Signal::KILL);
        }
    }
}

impl Drop for ProcessRegistry {
    fn drop(&mut self) {
        self.kill_all_now();
    }
}

/// Send `sig` to the process group `pgid`; a group that is already gone is ignored.
pub fn signal_group(pgid: i32, sig: Signal) {
    if let Some(pid) = Pid::from_raw(pgid) {
        let _ = kill_process_group(pid, sig);
    }
}

/// Numeric field `field` (numbered from 1 as in proc(5): 5 is the process group,
/// 22 the start time) of `/proc/PID/stat`; the command name, which may hold spaces
/// and parentheses, is skipped safely.
pub fn proc_stat(pid: i32, field: usize) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace()
        .nth(field.checked_sub(3)?)?
        .parse()
        .ok()
}

/// The pids of `pid` in each PID namespace it is in, outermost first (`NSpid` of
/// `/proc/PID/status`); empty when it cannot be read.
pub fn ns_pids(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("NSpid:")).map(|v| {
                v.split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// When process `pid` started, in clock ticks since boot.
fn start_ticks(pid: i32) -> Option<u64> {
    proc_stat(pid, 22)
}

/// Whether process `pid` carries `RUN_MARKER=run_id` in its environment.
fn marked(pid: i32, run_id: &str) -> bool {
    let want = format!("{RUN_MARKER}={run_id}");
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|&b| b == 0).any(|kv| kv == want.as_bytes()))
        .unwrap_or(false)
}

/// Stop the process groups a run recorded in `path` and did not stop itself (it
/// crashed or was killed): a group is stopped only while its leader is the very
/// process recorded (same start time) and carries the run's marker, so a recycled
/// pid or a forged line stops nothing. `SIGTERM`, up to `grace`, then `SIGKILL`.
/// The record is removed. Returns how many groups were stopped.
pub async fn stop_leftovers(path: &std::path::Path, grace: Duration) -> usize {
    let Ok(text) = std::fs::read_to_string(path) else {
        return 0;
    };
    let mut groups: Vec<i32> = Vec::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(pgid), Some(ticks), Some(run)) = (
            f.next().and_then(|v| v.parse::<i32>().ok()),
            f.next().and_then(|v| v.parse::<u64>().ok()),
            f.next(),
        ) else {
            continue;
        };
        if pgid > 1
            && !groups.contains(&pgid)
            && group_alive(pgid)
            && start_ticks(pgid) == Some(ticks)
            && marked(pgid, run)
        {
            groups.push(pgid);
        }
    }
    for &g in &groups {
        signal_group(g, Signal::TERM);
    }
    let deadline = tokio::time::Instant::now() + grace;
    while groups.iter().any(|&g| group_alive(g)) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for &g in &groups {
        signal_group(g, Signal::KILL);
    }
    let _ = std::fs::remove_file(path);
    groups.len()
}

fn group_alive(pgid: i32) -> bool {
    Pid::from_raw(pgid).is_some_and(|pid| test_kill_process_group(pid).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt as _;

    fn sleeper(marker: Option<&str>) -> std::process::Child {
        let mut c = std::process::Command::new("sleep");
        c.arg("30").process_group(0);
        if let Some(id) = marker {
            c.env(RUN_MARKER, id);
        }
        let mut child = c.spawn().unwrap_or_else(|e| panic!("{e}"));
        // `spawn` returns once exec has begun, before the kernel has set up the
        // new image's arguments and environment: wait (bounded) until both show,
        // or a check of the marker may read an empty environment.
        let pid = child.id();
        for _ in 0..500 {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let env_ready = marker.is_none_or(|id| marked(pid as i32, id));
            if cmdline.starts_with(b"sleep\0") && env_ready {
                return child;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("sleep {pid} did not finish starting within 5 s");
    }

    #[tokio::test]
    async fn only_the_recorded_and_marked_process_is_stopped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("processes");
        // A forged line: an unrelated process (no marker) is never stopped.
        let mut stranger = sleeper(None);
        let pid = stranger.id() as i32;
        let line = format!("{pid} {} run-1\n", start_ticks(pid).unwrap_or(0));
        std::fs::write(&path, &line).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stop_leftovers(&path, Duration::from_secs(1)).await, 0);
        assert!(group_alive(pid));
        let _ = stranger.kill();
        let _ = stranger.wait();
        // A wrong start time (a recycled pid) stops nothing either.
        let mut ours = sleeper(Some("run-1"));
        let pid = ours.id() as i32;
        std::fs::write(&path, format!("{pid} 1 run-1\n")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stop_leftovers(&path, Duration::from_secs(1)).await, 0);
        assert!(group_alive(pid));
        // The recorded, marked process is stopped and the record removed.
        let registry = ProcessRegistry::recording(path.clone(), "run-1".into());
        registry.adopt(pid as u32);
        std::mem::forget(registry); // as after a crash: nothing shut down
        assert_eq!(stop_leftovers(&path, Duration::from_secs(2)).await, 1);
        let _ = ours.wait();
        assert!(!path.exists());
    }
}
