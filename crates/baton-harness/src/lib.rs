//! `baton-harness` owns the sessions of a project: the initializer and
//! coding sessions with their prompts and brief, the gates after every session
//! (feature-list ledger, clean tree, progress notes), stop conditions and exit codes,
//! resume after a crash, and the record in `.baton/`.
//!
//! Where a change goes:
//! - **A run of one** — [`run`] (the `Runner`, its session loop and stop
//!   conditions), [`brief`] and [`prompts`] (what a session is told), [`queue`]
//!   (which feature next, attempts, stalls), `accept` (the list baton goes by).
//! - **The gates after a session** — [`gates`] (ledger, tree, notes, proof),
//!   `proof` (a flip's proof), [`checks`] (verify commands and the sweep),
//!   [`verifier`] (the independent verifier), [`leftovers`], [`boundary`] and
//!   [`guard`] (what the agent may not change), [`block`] (`BlockFeature`).
//! - **The planner** — [`plan`] (`baton plan`, `baton accept`, list-append
//!   sessions), [`new`] (`baton new`), [`kind`] (the kind of project).
//! - **Many agents** — [`parallel`]: the coordinator (hand-out, claims,
//!   settling), working copies, merging, and a shared remote for many machines.
//! - **Records and views** — [`files`] (the project's files), [`status`],
//!   [`summary`], [`git`] (baton's own git, jailed), [`lock`], [`running`].
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
mod session;
pub mod status;
pub mod summary;
pub mod verifier;

pub use error::HarnessError;
