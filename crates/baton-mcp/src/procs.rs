//! The processes a server started, found through `/proc`, so none outlives the hub.
//!
//! A server runs in its own process group, but not all of its children stay there:
//! Playwright starts Chromium in a new session of its own. So before a server is
//! stopped, its descendants are noted (with their start times, so a reused pid is
//! never mistaken for one of them), and any that survive the stop are killed.

use rustix::process::{Pid, Signal, kill_process};

/// One process: its pid and its start time (clock ticks after boot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Proc {
    pub pid: i32,
    start: u64,
}

/// `(ppid, start time, state)` of `pid`, from `/proc/<pid>/stat`.
fn stat(pid: i32) -> Option<(i32, u64, char)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: read after the last ')'.
    let rest = s.get(s.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ppid = fields.get(1)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((ppid, start, state))
}

/// `root` and every process descended from it, as they are now.
pub(crate) fn tree(root: i32) -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let all: Vec<(i32, i32, u64)> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| stat(pid).map(|(ppid, start, _)| (pid, ppid, start)))
        .collect();
    let mut found: Vec<Proc> = all
        .iter()
        .filter(|(pid, _, _)| *pid == root)
        .map(|&(pid, _, start)| Proc { pid, start })
        .collect();
    let mut i = 0;
    while i < found.len() {
        let parent = found[i].pid;
        for &(pid, ppid, start) in &all {
            if ppid == parent && !found.iter().any(|p| p.pid == pid) {
                found.push(Proc { pid, start });
            }
        }
        i += 1;
    }
    found
}

/// Whether `p` is still running (not a zombie, not replaced by a reused pid).
pub(crate) fn alive(p: Proc) -> bool {
    matches!(stat(p.pid), Some((_, start, state)) if start == p.start && state != 'Z')
}

/// Kill `p` if it is still the same process.
pub(crate) fn kill(p: Proc) {
    if alive(p)
        && let Some(pid) = Pid::from_raw(p.pid)
    {
        let _ = kill_process(pid, Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_children_and_kills_them() {
        let mut child = std::process::Command::new("bash")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let root = child.id() as i32;
        let mut procs = tree(root);
        for _ in 0..200 {
            if procs.len() >= 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            procs = tree(root);
        }
        assert_eq!(procs.len(), 2, "bash and its sleep: {procs:?}");
        assert_eq!(procs[0].pid, root);
        assert!(procs.iter().all(|&p| alive(p)));
        for &p in procs.iter().rev() {
            kill(p);
        }
        let _ = child.wait();
        assert!(!alive(procs[0]));
    }
}
