//! What the processes a run owns are doing, for the brief: each process group's
//! command, the ports it listens on and the log its output goes to, read from
//! `/proc` (Linux). Nothing here signals or changes a process.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// One process group the run started and that still runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Running {
    /// The group's id (its leader's pid).
    pub pgid: i32,
    /// The pid the agent's commands know the group by: where they run in a PID
    /// namespace of their own (the sandbox's), the first member's pid there;
    /// otherwise the group's id.
    pub pid: i32,
    /// The leader's command line.
    pub command: String,
    /// TCP ports any member listens on.
    pub ports: Vec<u16>,
    /// Where the leader's output goes, when it is a file under the project.
    pub log: Option<String>,
}

/// Describe the groups `pgids` (the tools' registry's living groups) as seen from
/// `project` (log paths are shown relative to it).
pub fn describe(pgids: &[i32], project: &Path) -> Vec<Running> {
    if pgids.is_empty() {
        return Vec::new();
    }
    let listening = listening_inodes();
    let mut members: HashMap<i32, Vec<i32>> = HashMap::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                continue;
            };
            if let Some(pg) = pgrp_of(pid).filter(|pg| pgids.contains(pg)) {
                members.entry(pg).or_default().push(pid);
            }
        }
    }
    pgids
        .iter()
        .map(|&pgid| {
            let mut ports = BTreeSet::new();
            for &pid in members.get(&pgid).map(Vec::as_slice).unwrap_or_default() {
                for inode in socket_inodes(pid) {
                    if let Some(&port) = listening.get(&inode) {
                        ports.insert(port);
                    }
                }
            }
            let inside = members
                .get(&pgid)
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .filter_map(|&m| inner_pid(m))
                .min();
            Running {
                pgid,
                pid: inside.unwrap_or(pgid),
                command: command_of(pgid),
                ports: ports.into_iter().collect(),
                log: std::fs::read_link(format!("/proc/{pgid}/fd/1"))
                    .ok()
                    .filter(|p| p.starts_with(project))
                    .map(|p| p.strip_prefix(project).unwrap_or(&p).display().to_string()),
            }
        })
        .collect()
}

/// `pid`'s pid in the innermost PID namespace it is in, when that is not ours.
fn inner_pid(pid: i32) -> Option<i32> {
    let ids = baton_tools::process::ns_pids(pid);
    (ids.len() > 1).then(|| ids.last().copied()).flatten()
}

fn pgrp_of(pid: i32) -> Option<i32> {
    baton_tools::process::proc_stat(pid, 5).and_then(|g| i32::try_from(g).ok())
}

fn command_of(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let words: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    // `bash -c CMD` (through baton's sandbox launcher or not): show CMD.
    match words.iter().position(|w| w == "-c") {
        Some(i) if i + 1 < words.len() => words[i + 1..].join(" "),
        _ => words.join(" "),
    }
}

fn socket_inodes(pid: i32) -> Vec<u64> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            l.to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// Listening TCP sockets (IPv4 and IPv6) by inode: their port.
fn listening_inodes() -> HashMap<u64, u16> {
    let mut out = HashMap::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 10 || cols[3] != "0A" {
                continue;
            }
            let port = cols[1]
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            if let (Some(port), Ok(inode)) = (port, cols[9].parse::<u64>()) {
                out.insert(inode, port);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_child_of_a_group_is_described_with_its_port_and_log() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let log = dir.path().join("server.log");
        let out = std::fs::File::create(&log).unwrap_or_else(|e| panic!("{e}"));
        // A group whose child listens on a free port (python's http.server).
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        drop(listener);
        use std::os::unix::process::CommandExt as _;
        let mut child = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("python3 -m http.server {port} --bind 127.0.0.1"))
            .stdout(out)
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let pgid = child.id() as i32;
        let mut seen = Vec::new();
        for _ in 0..100 {
            seen = describe(&[pgid], dir.path());
            if seen.first().is_some_and(|r| !r.ports.is_empty()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // The shell execs into python (one process): killing the child ends the group.
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            seen.iter()
                .map(|r| (r.pgid, r.ports.clone(), r.log.clone()))
                .collect::<Vec<_>>(),
            vec![(pgid, vec![port], Some("server.log".into()))]
        );
        assert!(
            seen[0]
                .command
                .ends_with(&format!("-m http.server {port} --bind 127.0.0.1")),
            "{seen:?}"
        );
    }
}
