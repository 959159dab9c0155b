//! `baton-report` owns the run report: one self-contained HTML page made from a
//! project's records (`.baton/state.json`, `.baton/ledger.jsonl`, the accepted
//! feature list, `.baton/evidence/`) that answers "how far, how much, what broke"
//! at a glance. The page has its style, its charts (SVG drawn here) and its
//! evidence images (base64, capped in size) inline, so it opens offline, in light
//! and dark themes.
//!
//! ```no_run
//! use baton_report::{Options, Records};
//! # fn demo() -> Result<(), baton_report::ReportError> {
//! let dir = std::path::Path::new("/path/to/project");
//! let records = Records::load(dir, "feature_list.json")?;
//! let html = baton_report::render(&records, &Options { budget_usd: Some(50.0), ..Options::default() });
//! std::fs::write(dir.join("report.html"), html).ok();
//! # Ok(()) }
//! ```

mod analysis;
mod fmt;
mod html;
mod records;
pub mod sample;
mod svg;

use std::path::PathBuf;

pub use analysis::{Analysis, FeatureFacts, Findings, Since};
pub use fmt::escape;
pub use records::{Feature, Records, flip_backs};

/// The report page's style sheet (light and dark themes), for other pages of
/// baton's (the `baton serve` dashboard) to look the same.
pub const STYLE: &str = include_str!("style.css");

/// An error reading a project's records.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A record that is not what baton writes.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
}

/// How the page is made.
#[derive(Debug, Clone)]
pub struct Options {
    /// The project's budget in USD, to show what is left.
    pub budget_usd: Option<f64>,
    /// When the report is made, Unix ms (shown in the page).
    pub generated_ms: u64,
    /// Largest image inlined, in bytes; larger ones are linked.
    pub image_max_bytes: u64,
    /// Bytes of images inlined in all; past it images are linked.
    pub images_max_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            budget_usd: None,
            generated_ms: 0,
            image_max_bytes: 200 * 1024,
            images_max_bytes: 1024 * 1024,
        }
    }
}

/// The report of `records` as one HTML document.
pub fn render(records: &Records, opts: &Options) -> String {
    html::page(records, opts)
}
