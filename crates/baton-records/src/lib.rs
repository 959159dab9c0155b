//! `baton-records` owns a project's records: everything baton reads and writes about
//! a project, and where it lives.
//!
//! What it promises:
//! - [`features`]: the feature list parsed with positions (errors name
//!   the file, line and feature), validated, and reconciled with the accepted copy.
//! - [`ledger`]: `.baton/ledger.jsonl`, one line per change to the list (a
//!   [`LedgerKind`], never a free string), appended whole, read leniently (a line
//!   cut by a crash is counted, not fatal).
//! - [`state`]: `.baton/state.json`, what every session did, written atomically.
//!   Records written by older versions of baton load: every field added since the
//!   first version has a default.
//! - [`layout`]: every path under `.baton/`, spelled once.
//! - [`human`]: how durations and counts read to people, the same everywhere.
//! - [`beneath`]: every read, write and removal baton makes where the agent could
//!   have planted a link, refusing links and staying beneath the project.
//!
//! The harness writes these records and the report reads them, both through this
//! crate; it depends on nothing of baton's.

pub mod beneath;
pub mod cursor;
pub mod features;
pub mod forge;
pub mod human;
pub mod layout;
pub mod ledger;
pub mod numbers;
pub mod passed_on;
pub mod references;
pub mod runs;
pub mod state;
pub mod timing;

pub use cursor::SweepCursor;
pub use features::{
    DEPENDS_ON, Feature, FeatureList, FeatureListError, Reconciled, VERIFY, Violation, reconcile,
};
pub use ledger::{LedgerEntry, LedgerKind, Proof, Reference};
pub use numbers::SessionNumbers;
pub use passed_on::PassedOn;
pub use references::References;
pub use runs::RunRecord;
pub use state::{
    BaseCheck, CheckFailure, CheckRun, FeatureRecord, GateReport, InProgress, Integration,
    IntegrationOutcome, Parallelism, SessionKind, SessionOutcome, SessionRecord, State, Usage,
};
pub use timing::Timing;

use std::path::PathBuf;

/// A record that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not what baton wrote.
    #[error("{path}: not a baton {what} ({message}); move it aside to start the record afresh")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Which record, in words.
        what: &'static str,
        /// What is wrong.
        message: String,
    },
}

pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> RecordsError {
    let path = path.into();
    move |source| RecordsError::Io { path, source }
}

/// Read a file that may not exist, never through a link (see [`beneath`]).
pub(crate) fn read_optional(path: &std::path::Path) -> Result<Option<String>, RecordsError> {
    let (root, rel) = layout::split(path);
    match beneath::Beneath::new(root).read_to_string(&rel) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

/// Write a file whole: a temporary file beside it, then a rename, so a crash
/// leaves the old version or the new one, never half of one. Beneath its project
/// (for a path under `.baton/`) or its directory, never through a link.
pub fn write_atomic(path: &std::path::Path, text: &str) -> Result<(), RecordsError> {
    let (root, rel) = layout::split(path);
    // The root is baton's to make (the project exists; a state dir may not yet).
    std::fs::create_dir_all(&root).map_err(io(&root))?;
    beneath::Beneath::new(root)
        .write_atomic(&rel, text.as_bytes())
        .map_err(io(path))
}
