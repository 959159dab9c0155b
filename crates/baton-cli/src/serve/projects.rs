//! The projects `baton serve` shows, and what it reads of them, each through
//! its records' own API.

use std::path::{Path, PathBuf};

use baton_harness::files::Files;
use baton_records::FeatureList;

/// Lines of the notes and of the transcript shown.
pub(super) const TAIL_LINES: usize = 30;

/// One project served.
pub(super) struct Project {
    pub(super) files: Files,
    pub(super) budget_usd: f64,
    /// `[run] stall_sessions`: a stalled project shows as stalled, not idle.
    pub(super) stall_sessions: u32,
}

impl Project {
    pub(super) fn name(&self) -> String {
        self.files
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.files.dir.display().to_string())
    }
}

pub(super) struct Server {
    pub(super) projects: Vec<Project>,
    pub(super) token: Option<String>,
}

/// The newest `.baton/sessions/NNNN.jsonl`.
pub(super) fn newest_transcript(dir: &Path) -> Option<PathBuf> {
    baton_agent::transcript::list_sessions(dir)
        .ok()?
        .pop()
        .map(|(_, p)| p)
}

/// What a parallel run's agents work on now: (agent, session, its claimed feature),
/// from each working copy's state.json (a session under way and its claim).
pub(super) fn agents_at_work(dir: &Path) -> Vec<(u32, u32, Option<usize>)> {
    baton_records::layout::agent_copies(dir)
        .into_iter()
        .filter_map(|(k, d)| {
            let st = baton_records::State::load(&d).ok()?;
            let ip = st.in_progress?;
            Some((k, ip.number, st.claim.or(ip.target)))
        })
        .collect()
}

/// Whether a `baton run` holds the project's lock now.
pub(super) fn running(dir: &Path) -> bool {
    baton_harness::lock::held(dir)
}

/// The list as accepted, else as the file is, else empty.
pub(super) fn feature_list(files: &Files) -> FeatureList {
    if let Ok(Some(l)) = files.load_accepted() {
        return l;
    }
    files
        .read_list()
        .ok()
        .flatten()
        .and_then(|t| FeatureList::parse(&t, &files.names.feature_list).ok())
        .unwrap_or_default()
}
