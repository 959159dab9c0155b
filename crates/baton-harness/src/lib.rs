//! `baton-harness` owns the sessions of a project: the initializer and
//! coding sessions with their prompts and brief, the gates after every session
//! (feature-list ledger, clean tree, progress notes), stop conditions and exit codes,
//! resume after a crash, and the record in `.baton/`.
//!
//! ```no_run
//! # async fn demo(runner: baton_harness::run::Runner<'_>) -> Result<(), baton_harness::HarnessError> {
//! let end = runner.run().await?;
//! std::process::exit(end.exit_code().into());
//! # }
//! ```

mod accept;
pub mod block;
pub mod boundary;
pub mod brief;
pub mod checks;
mod error;
pub mod files;
pub mod gates;
pub mod git;
pub mod guard;
pub mod kind;
pub mod leftovers;
pub mod lock;
pub mod new;
pub mod parallel;
pub mod plan;
pub mod prompts;
mod proof;
pub mod queue;
pub mod run;
pub mod running;
pub mod status;
pub mod summary;
pub mod verifier;

pub use error::HarnessError;
