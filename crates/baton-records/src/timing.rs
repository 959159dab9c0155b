//! Where a session's wall time went ([`Timing`]).

use serde::{Deserialize, Serialize};

/// Where a session's wall time went, in ms: what baton did before the agent
/// (the regression sweep, the target's check at the base commit), the agent's
/// own time, and what baton did after it (the gates, and the verifier's
/// session). All zero in records from before baton kept them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Timing {
    /// The regression sweep before the session.
    pub sweep_ms: u64,
    /// The target's check on the base commit, before the work.
    pub base_check_ms: u64,
    /// The agent's session itself.
    pub agent_ms: u64,
    /// The gates after it, the verifier aside.
    pub gates_ms: u64,
    /// Proving the session's flips: their checks at the base commit and now,
    /// and the verifier's session where one runs.
    pub verifier_ms: u64,
    /// The run's wait after it for a usage limit's reset (a wait inside the
    /// session is the agent's time).
    pub wait_after_ms: u64,
}

impl Timing {
    /// Nothing recorded.
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }

    /// All of it.
    pub fn total_ms(&self) -> u64 {
        self.sweep_ms
            + self.base_check_ms
            + self.agent_ms
            + self.gates_ms
            + self.verifier_ms
            + self.wait_after_ms
    }

    /// Add `o`, part by part.
    pub fn add(&mut self, o: &Timing) {
        self.sweep_ms += o.sweep_ms;
        self.base_check_ms += o.base_check_ms;
        self.agent_ms += o.agent_ms;
        self.gates_ms += o.gates_ms;
        self.verifier_ms += o.verifier_ms;
        self.wait_after_ms += o.wait_after_ms;
    }
}
