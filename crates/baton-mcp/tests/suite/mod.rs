mod browser;
mod hub;

use std::collections::BTreeMap;
use std::path::Path;

use baton_mcp::ServerSpec;

/// The test MCP server (`tests/support/test_server.py`) as server `name`, run in `cwd`.
pub fn test_server(name: &str, cwd: &Path, extra: &[&str]) -> ServerSpec {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/test_server.py");
    let mut args = vec![script.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    ServerSpec {
        name: name.to_string(),
        command: "python3".to_string(),
        args,
        env: BTreeMap::new(),
        env_remove: vec![],
        cwd: cwd.to_path_buf(),
        files: vec![],
        hidden_tools: vec![],
    }
}

/// Whether `pid` is a running process (not a zombie).
pub fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rfind(')')
            .and_then(|i| s[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

/// `root` and all its descendants now.
pub fn family(root: u32) -> Vec<u32> {
    let mut all = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(i) = s.rfind(')') else { continue };
        let ppid: u32 = s[i + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        all.push((pid, ppid));
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for &(pid, ppid) in &all {
            if ppid == parent && !found.contains(&pid) {
                found.push(pid);
            }
        }
        i += 1;
    }
    found
}

/// Wait (at most 10 s) until none of `pids` runs; the ones still running.
pub fn wait_gone(pids: &[u32]) -> Vec<u32> {
    for _ in 0..200 {
        if pids.iter().all(|&p| !running(p)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    pids.iter().copied().filter(|&p| running(p)).collect()
}

pub use baton_testkit::browser::browser_parts;
