mod browser;
mod hub;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// What the browser tests need: the `@playwright/mcp` CLI script and Chromium.
/// Found at `$BATON_PLAYWRIGHT_MCP` (the package's `cli.js`), else where `.ci/run`
/// installs it (`.ci/npm/node_modules/@playwright/mcp/cli.js`); Chromium at
/// `$BATON_CHROMIUM`, else `/usr/bin/chromium`. On CI (`CI=true`) a missing part
/// fails the test; elsewhere the test is skipped with a note.
pub struct BrowserParts {
    pub cli: PathBuf,
    pub chromium: PathBuf,
}

pub fn browser_parts(test: &str) -> Option<BrowserParts> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cli = std::env::var_os("BATON_PLAYWRIGHT_MCP")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".ci/npm/node_modules/@playwright/mcp/cli.js"));
    let chromium = std::env::var_os("BATON_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let node = std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let mut missing = Vec::new();
    if !node {
        missing.push("node (apt-get install nodejs)".to_string());
    }
    if !cli.is_file() {
        missing.push(format!(
            "{} (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix .ci/npm @playwright/mcp, or set BATON_PLAYWRIGHT_MCP)",
            cli.display()
        ));
    }
    if !chromium.is_file() {
        missing.push(format!("{} (apt-get install chromium)", chromium.display()));
    }
    if missing.is_empty() {
        return Some(BrowserParts { cli, chromium });
    }
    let msg = format!("{test}: missing {}", missing.join(", "));
    if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
        panic!("{msg}; .ci/run installs these");
    }
    eprintln!("SKIPPED {msg}");
    None
}
