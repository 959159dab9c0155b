//! Refuses, on the spot, `Write` and `Edit` calls that would change anything in the
//! feature list but `passes`, then defers to the policy for everything else.

use std::path::PathBuf;

use baton_ledger::{FeatureList, reconcile};
use baton_tools::{GateDecision, ToolGate, paths};
use serde_json::Value;

/// The feature-list guard in front of another gate.
pub struct FeatureListGuard<'a> {
    /// The gate consulted for everything the guard allows.
    pub inner: &'a dyn ToolGate,
    /// The project directory (canonical).
    pub project: PathBuf,
    /// The feature list's name relative to the project.
    pub feature_list: String,
}

impl FeatureListGuard<'_> {
    fn proposed(&self, tool: &str, input: &Value, current: &str) -> Option<String> {
        match tool {
            "Write" => input["content"].as_str().map(str::to_string),
            "Edit" => {
                let old = input["old_string"].as_str()?;
                let new = input["new_string"].as_str()?;
                let all = input["replace_all"].as_bool().unwrap_or(false);
                let n = if old.is_empty() {
                    0
                } else {
                    current.matches(old).count()
                };
                // A miss or an ambiguous match fails in the tool itself.
                (n == 1 || (n > 1 && all)).then(|| current.replace(old, new))
            }
            _ => None,
        }
    }
}

impl FeatureListGuard<'_> {
    /// Why this call may not run, if it writes more than `passes` into the list.
    fn refusal(&self, tool: &str, input: &Value) -> Option<String> {
        if !matches!(tool, "Write" | "Edit") {
            return None;
        }
        let target = paths::resolve(&self.project, input["file_path"].as_str()?);
        let list_path = self.project.join(&self.feature_list);
        if target != list_path {
            return None;
        }
        let current = std::fs::read_to_string(&list_path).unwrap_or_default();
        let base = FeatureList::parse(&current, &self.feature_list).ok()?;
        let next = self.proposed(tool, input, &current)?;
        let r = reconcile(&base, &next, &self.feature_list);
        if r.violations.is_empty() {
            return None;
        }
        let what: Vec<String> = r.violations.iter().map(ToString::to_string).collect();
        Some(format!(
            "{} may only change in \"passes\", and this {tool} would also change more: {}. \
             To record a feature you verified end to end, change only its \"passes\" from false to true \
             (for example with Edit on that feature's \"passes\" line).",
            self.feature_list,
            what.join("; ")
        ))
    }
}

impl ToolGate for FeatureListGuard<'_> {
    fn check(&self, tool: &str, input: &Value) -> GateDecision {
        match self.refusal(tool, input) {
            Some(reason) => GateDecision::Refuse(reason),
            None => self.inner.check(tool, input),
        }
    }
}
