//! Shared fixtures: a real temporary project directory and a toolbox bound to it.

mod bash;
mod dispatch;
mod edit;
mod glob;
mod grep;
mod read;
mod write;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use baton_tools::{ToolContext, ToolOutput, Toolbox};
use serde_json::Value;
use tempfile::TempDir;

/// A temporary project directory with a toolbox acting in it.
pub struct Project {
    /// Keeps the directory alive for the test.
    _dir: TempDir,
    /// The canonical project directory.
    pub root: PathBuf,
    pub tools: Toolbox,
}

impl Project {
    pub fn new() -> Self {
        Self::with_context(|_| {})
    }

    /// A project whose context is adjusted by `adjust` before the toolbox is built.
    pub fn with_context(adjust: impl FnOnce(&mut ToolContext)) -> Self {
        let dir = tempfile::tempdir().expect("create temp dir");
        let mut ctx = ToolContext::new(dir.path().to_path_buf());
        adjust(&mut ctx);
        let root = ctx.project_dir.clone();
        assert_eq!(root, dir.path().canonicalize().unwrap());
        Self {
            _dir: dir,
            root,
            tools: Toolbox::new(ctx),
        }
    }

    pub fn ctx(&self) -> &ToolContext {
        self.tools.context()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Create `rel` (and its parent directories) with `content`.
    pub fn file(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Create `rel` with `content` and set its modification time to `secs` after the epoch.
    pub fn file_at(&self, rel: &str, content: &str, secs: u64) -> PathBuf {
        let path = self.file(rel, content);
        set_mtime(&path, secs);
        path
    }

    pub fn dir(&self, rel: &str) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub async fn call(&self, tool: &str, input: Value) -> ToolOutput {
        self.tools.call(tool, &input).await
    }
}

pub fn set_mtime(path: &Path, secs: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
        .unwrap();
}

pub fn ok(content: impl Into<String>) -> ToolOutput {
    ToolOutput::ok(content)
}

pub fn err(content: impl Into<String>) -> ToolOutput {
    ToolOutput::error(content)
}

/// The process `pid` has exited (it no longer exists, or is a zombie nobody reaped yet).
pub fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

/// Poll `cond` every 20 ms until it holds or `limit` has passed; returns whether it held.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() > limit {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
