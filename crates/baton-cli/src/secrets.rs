//! The provider keys, taken out of the process's environment block at start-up.
//!
//! A process's initial environment stays readable in `/proc/<pid>/environ` for as
//! long as it runs, and on some kernels a process of the same user can read it even
//! without `CAP_SYS_PTRACE`. So baton copies the keys it needs, then overwrites their
//! values in its own environment block (through `/proc/self/mem`, no unsafe code):
//! from then on neither `/proc/<baton>/environ` nor the environment its children
//! inherit holds them.

use std::collections::BTreeMap;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};

/// Secret values baton took out of its environment.
#[derive(Debug, Default, Clone)]
pub struct Secrets {
    values: BTreeMap<String, String>,
    /// Whether the environment block was scrubbed (false where /proc is unavailable).
    pub scrubbed: bool,
}

impl Secrets {
    /// The value of `name` if it was set (and not empty).
    pub fn get(&self, name: &str) -> Option<String> {
        self.values.get(name).filter(|v| !v.is_empty()).cloned()
    }
}

/// Copy every secret variable (`baton_tools::DEFAULT_SECRET_VARS`, and forges'
/// tokens, `baton_tools::FORGE_CREDENTIAL_VARS`), then scrub their values from
/// this process's environment block.
pub fn take() -> Secrets {
    let names: Vec<&str> = baton_tools::DEFAULT_SECRET_VARS
        .iter()
        .chain(baton_tools::FORGE_CREDENTIAL_VARS)
        .copied()
        .collect();
    let values: BTreeMap<String, String> = names
        .iter()
        .filter_map(|n| std::env::var(n).ok().map(|v| (n.to_string(), v)))
        .collect();
    let scrubbed = values.is_empty() || scrub(&names).is_ok();
    Secrets { values, scrubbed }
}

/// Scrub the values of more variables (`[policy] secret_env`) from this process's
/// environment block, once the project's configuration is known: agent processes
/// never get them, and from then on `/proc/<baton>/environ` does not show them.
pub fn scrub_configured(names: &[String]) -> std::io::Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    scrub(&names)
}

/// Overwrite the values of `names` with NUL bytes in the initial environment block.
fn scrub(names: &[&str]) -> std::io::Result<()> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name in parentheses start at field 3; env_start and
    // env_end are fields 50 and 51 (proc(5)).
    let rest = stat.rfind(')').map(|i| &stat[i + 2..]).unwrap_or_default();
    let fields: Vec<&str> = rest.split(' ').collect();
    let field = |n: usize| -> std::io::Result<u64> {
        fields
            .get(n - 3)
            .and_then(|f| f.trim().parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("/proc/self/stat has no field {n}")))
    };
    let (start, end) = (field(50)?, field(51)?);
    if end <= start {
        return Err(std::io::Error::other("empty environment block"));
    }
    let mut mem = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/proc/self/mem")?;
    let mut block = vec![0u8; (end - start) as usize];
    mem.seek(SeekFrom::Start(start))?;
    mem.read_exact(&mut block)?;
    let mut changed = false;
    let mut pos = 0;
    while pos < block.len() {
        let len = block[pos..]
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(block.len() - pos);
        let entry = &block[pos..pos + len];
        if let Some(name) = names.iter().find(|n| {
            entry.len() > n.len() && entry.starts_with(n.as_bytes()) && entry[n.len()] == b'='
        }) {
            let value_start = pos + name.len() + 1;
            block[value_start..pos + len].fill(0);
            changed = true;
        }
        pos += len + 1;
    }
    if changed {
        mem.seek(SeekFrom::Start(start))?;
        mem.write_all(&block)?;
    }
    Ok(())
}
