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
}

impl ProcessRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Take ownership of the process group whose leader is `pid`.
    /// Groups whose members have all exited are forgotten here, so a long session
    /// does not accumulate them (and a reused id is not signalled later).
    pub fn adopt(&self, pid: u32) {
        if let Ok(mut g) = self.groups.lock() {
            g.retain(|&pg| group_alive(pg));
            g.push(pid as i32);
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

fn group_alive(pgid: i32) -> bool {
    Pid::from_raw(pgid).is_some_and(|pid| test_kill_process_group(pid).is_ok())
}
