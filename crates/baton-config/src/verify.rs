//! `[verify]`: how baton checks the agent's claims.

use serde::Deserialize;

/// Checks baton runs itself, and the independent verifier.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    /// Seconds one `verify` command may run.
    pub timeout_secs: u64,
    /// Seconds the regression sweep before each coding session may take in all.
    pub sweep_secs: u64,
    /// Checks the regression sweep before each coding session runs at most, taken
    /// in turn (each sweep goes on where the last one stopped), so that its cost
    /// stays flat as the project grows; 0 = every passing check every time. Every
    /// check runs before the run says "complete" either way.
    pub sweep_checks: u32,
    /// Run `init.sh` before running checks (so servers are up).
    pub run_init: bool,
    /// After each coding session, a fresh verifier session re-walks the new flips
    /// that no verify command proved.
    pub agent: bool,
    /// Accept a flip that nothing proved on the agent's word. Off: such a flip is
    /// reverted and recorded as `unverified_flip`.
    pub trust_agent: bool,
    /// Model of the verifier (default: the coder's).
    pub model: Option<String>,
    /// Turns the verifier gets for each feature it checks (plus a few to start).
    pub turns_per_feature: u32,
    /// The most turns one verifier session may take, however many features.
    pub max_turns: u32,
    /// Files a check reads besides the ones baton finds itself (the paths its
    /// command names, the project's test files and test runners' configuration):
    /// globs relative to the project. A session that changes one proves no flip by
    /// check; the verifier judges it instead.
    pub protect: Vec<String>,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        Self {
            timeout_secs: 120,
            sweep_secs: 300,
            sweep_checks: 200,
            run_init: true,
            agent: true,
            trust_agent: false,
            model: None,
            turns_per_feature: 30,
            max_turns: 200,
            protect: Vec::new(),
        }
    }
}
