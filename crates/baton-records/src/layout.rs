//! Where everything under `.baton/` lives, relative to the project directory.
//! Every path baton keeps in a project is spelled here and nowhere else; the
//! project's own files (feature list, notes, `init.sh`) are named in `baton.toml`.

use std::path::{Path, PathBuf};

/// baton's directory in a project, never committed.
pub const DIR: &str = ".baton";
/// What every session did ([`crate::State`]).
pub const STATE: &str = ".baton/state.json";
/// Every change to the feature list ([`crate::LedgerEntry`]), one JSON line each.
pub const LEDGER: &str = ".baton/ledger.jsonl";
/// The last feature list baton accepted, the one every session is compared with.
pub const ACCEPTED: &str = ".baton/accepted_feature_list.json";
/// Session transcripts, `NNNN.jsonl`.
pub const SESSIONS: &str = ".baton/sessions";
/// Tool outputs too large for the conversation, kept whole.
pub const OUTPUTS: &str = ".baton/outputs";
/// Screenshots and snapshots kept as evidence, `NNNN/` per session.
pub const EVIDENCE: &str = ".baton/evidence";
/// The browser's MCP server: its configuration, output and temporary files.
pub const PLAYWRIGHT: &str = ".baton/playwright";
/// The agent CLI's per-session files (settings, raw output).
pub const CLAUDE_CODE: &str = ".baton/claude-code";
/// The lock held by the command working on the project.
pub const LOCK: &str = ".baton/run.lock";
/// Processes the run started, so a later run can stop what a killed one left.
pub const PROCESSES: &str = ".baton/processes";
/// A parallel run's agents' working copies, `a1/`, `a2/`, … (local clones).
pub const AGENTS: &str = ".baton/agents";
/// A parallel run's integration worktree, where agents' branches are merged and
/// swept before the main branch moves.
pub const INTEGRATE: &str = ".baton/integrate";
/// The git attributes a parallel run's merges read (`core.attributesFile`): the
/// progress notes merge as a union.
pub const MERGE_ATTRIBUTES: &str = ".baton/merge-attributes";
/// A parallel run's sessions that ended and are not yet on the project's record,
/// `<number>.json` each: settled first by the next run if this one is killed.
pub const SETTLING: &str = ".baton/settling";
/// Feature lists baton replaced with the accepted one, kept as they were.
pub const REPLACED: &str = ".baton/replaced";
/// `baton report`'s page, by default.
pub const REPORT: &str = ".baton/report.html";
/// Where the next time-boxed regression sweep starts among the passing checks:
/// each sweep goes on from where the last one's time ran out, so every check
/// runs every few sessions however many there are.
pub const SWEEP_CURSOR: &str = ".baton/sweep-cursor";
/// What each check last passed on (its command and a digest of the tree), so
/// that a per-session sweep need not run it again on the same tree.
pub const PASSED_ON: &str = ".baton/passed-on.json";
/// Where each feature entered the accepted list (the commit), the reference
/// its proof falls back to ([`crate::References`]).
pub const REFERENCES: &str = ".baton/references.json";
/// One line a run of one agent: its start, end and the sweep before "complete".
pub const RUNS: &str = ".baton/runs.jsonl";
/// baton's pull request on the forge and where its watch stands.
pub const FORGE: &str = ".baton/forge.json";

/// The highest session number handed out ([`crate::SessionNumbers`]).
pub const LAST_SESSION: &str = ".baton/last-session";
/// Notifications `[notify]` could not deliver, one line each.
pub const NOTIFY_LOG: &str = ".baton/notify.log";

/// A person's guidance waiting for the next coding session's brief (`baton tell`):
/// one file each, removed once a brief carried it.
pub const TELL: &str = ".baton/tell";

/// `path` as a directory baton trusts and the rest beneath it: for a path
/// under a project's `.baton/`, the project and `.baton/…` (so a link planted at
/// `.baton` or below is refused, see [`crate::beneath`]); for any other path, its
/// directory and its name.
pub fn split(path: &Path) -> (PathBuf, PathBuf) {
    let comps: Vec<_> = path.components().collect();
    if let Some(i) = comps
        .iter()
        .rposition(|c| c.as_os_str() == std::ffi::OsStr::new(DIR))
    {
        let root: PathBuf = comps[..i].iter().collect();
        let rel: PathBuf = comps[i..].iter().collect();
        if !root.as_os_str().is_empty() {
            return (root, rel);
        }
    }
    match (path.parent(), path.file_name()) {
        (Some(p), Some(n)) if !p.as_os_str().is_empty() => (p.to_path_buf(), PathBuf::from(n)),
        _ => (PathBuf::from("."), path.to_path_buf()),
    }
}

/// A session's evidence directory, relative to the project.
pub fn evidence(session: u32) -> String {
    format!("{EVIDENCE}/{session:04}")
}

/// A session's transcript, relative to the project.
pub fn transcript(session: u32) -> String {
    format!("{SESSIONS}/{session:04}.jsonl")
}

/// Agent `k`'s working copy in a parallel run, relative to the project.
pub fn agent(k: u32) -> String {
    format!("{AGENTS}/a{k}")
}

/// The agents' working copies there are in `project` (`.baton/agents/aK`), by
/// agent, at most 64.
pub fn agent_copies(project: &Path) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(project.join(AGENTS)) else {
        return Vec::new();
    };
    let mut found: Vec<(u32, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let k: u32 = e
                .file_name()
                .to_string_lossy()
                .strip_prefix('a')?
                .parse()
                .ok()?;
            (e.file_name().to_string_lossy() == format!("a{k}")).then(|| (k, e.path()))
        })
        .take(64)
        .collect();
    found.sort();
    found
}

/// `rel` (one of this module's paths) inside `project`.
pub fn at(project: &Path, rel: &str) -> PathBuf {
    project.join(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_is_under_the_records_directory() {
        for p in [
            STATE,
            NOTIFY_LOG,
            LAST_SESSION,
            LEDGER,
            ACCEPTED,
            SESSIONS,
            OUTPUTS,
            EVIDENCE,
            PLAYWRIGHT,
            CLAUDE_CODE,
            LOCK,
            PROCESSES,
            AGENTS,
            INTEGRATE,
            MERGE_ATTRIBUTES,
            SETTLING,
            REPORT,
        ] {
            assert!(p.starts_with(&format!("{DIR}/")), "{p}");
        }
        assert_eq!(evidence(7), ".baton/evidence/0007");
        assert_eq!(transcript(12), ".baton/sessions/0012.jsonl");
    }

    #[test]
    fn agent_copies_are_the_agents_working_copies_in_order() {
        let p = tempfile::tempdir().unwrap();
        assert!(agent_copies(p.path()).is_empty());
        for d in ["a10", "a2", "a1", "b1", "a01", "ax"] {
            std::fs::create_dir_all(p.path().join(AGENTS).join(d)).unwrap();
        }
        let found: Vec<(u32, PathBuf)> = agent_copies(p.path());
        assert_eq!(
            found,
            [1, 2, 10].map(|k| (k, p.path().join(agent(k)))).to_vec()
        );
    }
}
