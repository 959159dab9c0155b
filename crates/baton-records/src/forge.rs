//! baton's pull request on the forge and where its watch stands
//! ([`crate::layout::FORGE`]): a named state machine, saved after every step, so
//! a watch killed at any point goes on from the record (what it acted on is also
//! on the feature list and the forge, which the watch reads before it acts).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{RecordsError, layout, read_optional, write_atomic};

/// Where the watch of baton's pull request stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Pushed; its checks have not all ended.
    #[default]
    WaitingForChecks,
    /// A check failed: a feature to fix it is on the list.
    ChecksFailed,
    /// No check started within `[forge] checks_start_secs`: a person was told;
    /// it is never merged so.
    ChecksNeverStarted,
    /// Every check passed (at least one ran).
    ChecksPassed,
    /// baton merged it (`[forge] merge`), every check having passed.
    Merged,
}

/// baton's pull request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRecord {
    /// Its number.
    pub number: u64,
    /// Its page.
    pub url: String,
    /// baton's branch.
    pub branch: String,
    /// The commit last pushed to it.
    pub head: String,
    /// When that commit was pushed (Unix ms).
    pub pushed_ms: u64,
    /// Where its watch stands, for `head`.
    pub phase: Phase,
    /// The commits whose failing checks a person was told never started.
    #[serde(default)]
    pub told: Vec<String>,
}

/// The record of baton's pull request, if it opened one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForgeRecord {
    /// The pull request.
    pub pull: Option<PullRecord>,
}

impl ForgeRecord {
    /// The project's record; empty when there is none (or it is not baton's).
    pub fn load(project: &Path) -> Self {
        read_optional(&project.join(layout::FORGE))
            .ok()
            .flatten()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Keep it (a temp file, then a rename; never through a link).
    pub fn save(&self, project: &Path) -> Result<(), RecordsError> {
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        write_atomic(&project.join(layout::FORGE), &format!("{text}\n"))
    }
}
