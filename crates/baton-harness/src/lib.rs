//! `baton-harness` owns the sessions of a project: the initializer and
//! coding sessions with their prompts and brief, the gates after every session
//! (feature-list ledger, clean tree, progress notes), stop conditions and exit codes,
//! resume after a crash, and the record in `.baton/`.
//!
//! Where a change goes:
//! - **A run of one** — [`run`] (the `Runner`, its session loop and stop
//!   conditions), `session` (one session's start, agent, record), [`brief`] and
//!   [`prompts`] (what a session is told), `queue` (which feature next, attempts,
//!   stalls), `list` (the accepted list: adopted, restored, the initializer's
//!   accepted).
//! - **The gates after a session** — `gates` (ledger, tree, notes, flips),
//!   `proof` (a flip's proof: base check, checks, the verifier's session),
//!   [`checks`] (verify commands and the sweep), [`verifier`] (what the verifier is
//!   told, and its verdicts read back), `leftovers`, [`boundary`] and [`guard`] (what
//!   the agent may not change, and `baton.toml` after a crash; every tool-call
//!   gate, the verifier's read-only one included), [`block`] (`BlockFeature`).
//! - **The planner** — [`plan`] (the planner session for `baton new --idea`,
//!   `baton plan` and list-append sessions; `plan/check.rs`, what its work is
//!   checked against), [`edit`] (`baton accept`: a person's edit of the list),
//!   [`new`] (`baton new`), `kind` (the kind of project).
//! - **Many agents** — [`parallel`]: `coordinator.rs` (the named state machine:
//!   hand-out, session ended, released, settled), `claims.rs` (who works on what:
//!   local refs or the shared remote), `settle.rs` and `merge.rs` (a session's
//!   work merged or kept), `agents.rs` (working copies and their threads),
//!   `remote.rs` (many machines).
//! - **Records and views** — [`files`] (the project's files), [`status`],
//!   `summary`, `git` (baton's own git, jailed), [`lock`], `running`, [`tell`]
//!   (a person's guidance for the next brief).
//!
//! Only [`run`]'s `Runner` and its parts (`session`, `proof`, `list`, [`plan`])
//! are `impl Runner`; the rest take their inputs. Modules shown without a link
//! are the harness's own; the others are what the CLI uses.
//!
//! ```no_run
//! # async fn demo(runner: baton_harness::run::Runner<'_>) -> Result<(), baton_harness::HarnessError> {
//! let end = runner.run().await?;
//! std::process::exit(end.exit_code().into());
//! # }
//! ```

pub mod batch;
pub mod block;
pub mod boundary;
pub mod brief;
pub mod checks;
pub mod edit;
mod error;
pub mod files;
pub mod forge_watch;
mod gates;
mod git;
pub mod guard;
pub mod issues;
mod kind;
mod leftovers;
mod limits;
mod list;
pub mod lock;
pub mod new;
pub mod parallel;
pub mod plan;
pub mod prompts;
mod proof;
mod push;
mod queue;
mod ran;
pub mod run;
mod runner;
mod running;
pub mod scrutiny;
mod session;
pub mod status;
mod summary;
pub mod tell;
pub mod tree_digest;
pub mod verifier;
pub mod world;

pub use error::HarnessError;
/// baton's own git in warm jails: `baton __gitjail` serves them, `baton` enables them.
pub use git::{serve_jail, warm_jails};
