//! The gates in front of the command policy, and [`GateStack`], the one order in
//! which every agent's tool call passes them (in baton's loop and in the agent
//! CLI's hook alike): the policy with the reach rules ([`ReachGate`]), then in a
//! coding session the feature-list guard ([`FeatureListGuard`]: `Write`/`Edit` that
//! would change anything in the feature list but `passes` are refused on the spot),
//! then for the verifier read-only ([`ReadOnly`]).

use std::path::Path;

use baton_records::{FeatureList, reconcile};
use baton_tools::{GateDecision, ToolGate, paths};
use serde_json::Value;

/// The feature-list guard in front of another gate.
pub struct FeatureListGuard<'a> {
    /// The gate consulted for everything the guard allows.
    pub inner: &'a dyn ToolGate,
    /// The project directory (canonical).
    pub project: &'a Path,
    /// The feature list's name relative to the project.
    pub feature_list: &'a str,
}

/// Every gate a tool call passes, in order (see the module's doc). One constructor
/// for baton's own loop, the verifier and the agent CLI's hook.
#[derive(Clone, Copy)]
pub struct GateStack<'a> {
    /// The command policy.
    pub policy: &'a dyn ToolGate,
    /// `[policy] allow_file_urls`.
    pub allow_file_urls: bool,
    /// The project directory and the feature list's name: the feature-list guard
    /// (coding sessions).
    pub feature_list: Option<(&'a Path, &'a str)>,
    /// Refuse every edit (the independent verifier).
    pub read_only: bool,
}

impl GateStack<'_> {
    /// The same gates as arguments of `baton hook pre-tool-use`, for an agent CLI.
    pub fn hook_args(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some((_, name)) = self.feature_list {
            v.extend(["--feature-list".to_string(), name.to_string()]);
        }
        if self.read_only {
            v.push("--read-only".to_string());
        }
        v
    }
}

impl ToolGate for GateStack<'_> {
    fn check(&self, tool: &str, input: &Value) -> GateDecision {
        let reach = ReachGate {
            inner: self.policy,
            allow_file_urls: self.allow_file_urls,
        };
        let guard;
        let gate: &dyn ToolGate = match self.feature_list {
            Some((project, feature_list)) => {
                guard = FeatureListGuard {
                    inner: &reach,
                    project,
                    feature_list,
                };
                &guard
            }
            None => &reach,
        };
        if self.read_only {
            ReadOnly { inner: gate }.check(tool, input)
        } else {
            gate.check(tool, input)
        }
    }
}

/// Refuses every edit; defers to the policy for the rest.
pub struct ReadOnly<'a> {
    /// The command policy.
    pub inner: &'a dyn ToolGate,
}

impl ToolGate for ReadOnly<'_> {
    fn check(&self, tool: &str, input: &Value) -> GateDecision {
        match tool {
            // Every edit tool: an agent CLI's run in the CLI itself, outside the
            // sandbox that makes the project read-only to commands.
            "Write" | "Edit" | "MultiEdit" | "NotebookEdit" | "apply_patch" => GateDecision::Refuse(
                "you are the verifier: you may not edit the project. Inspect, run and test it, then give your verdict; scratch files go into your temp dir through the shell (its path is in your instructions).".into(),
            ),
            // A subagent's calls are not in the verifier's record, which is what
            // its verdicts are judged by.
            "Task" | "Agent" => GateDecision::Refuse(
                "you are the verifier: only your own calls count as evidence for a verdict, and a subagent's are not yours; walk the steps with your own tools".into(),
            ),
            // Browser tools can write files (a screenshot's `filename`); the verifier's
            // screenshots go back to it and into the evidence without one.
            t if t.starts_with("mcp__") && input.get("filename").is_some() => GateDecision::Refuse(
                "you are the verifier: you may not write files into the project; call this tool without \"filename\" (screenshots are kept as evidence anyway)".into(),
            ),
            _ => self.inner.check(tool, input),
        }
    }
}

/// `current` with one `Edit`-shaped change (`old_string`, `new_string`,
/// `replace_all`) applied, or `None` where the tool itself would fail.
fn apply_edit(current: &str, edit: &Value) -> Option<String> {
    let old = edit["old_string"].as_str()?;
    let new = edit["new_string"].as_str()?;
    let all = edit["replace_all"].as_bool().unwrap_or(false);
    let n = if old.is_empty() {
        0
    } else {
        current.matches(old).count()
    };
    // A miss or an ambiguous match fails in the tool itself.
    (n == 1 || (n > 1 && all)).then(|| current.replace(old, new))
}

/// Whether `a` and `b` are the same file (after symlinks; hard links included).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => paths::real_path(a) == paths::real_path(b),
    }
}

impl FeatureListGuard<'_> {
    fn proposed(&self, tool: &str, input: &Value, current: &str) -> Option<String> {
        match tool {
            "Write" => input["content"].as_str().map(str::to_string),
            "Edit" => apply_edit(current, input),
            "MultiEdit" => {
                let mut text = current.to_string();
                for e in input["edits"].as_array()? {
                    text = apply_edit(&text, e)?;
                }
                Some(text)
            }
            _ => None,
        }
    }
}

impl FeatureListGuard<'_> {
    /// Why this call may not run, if it writes more than `passes` into the list.
    fn refusal(&self, tool: &str, input: &Value) -> Option<String> {
        let key = match tool {
            "Write" | "Edit" | "MultiEdit" => "file_path",
            "NotebookEdit" => "notebook_path",
            _ => return None,
        };
        // The feature list by any name: through a symlink, a hard link, `..`.
        let target = paths::resolve(self.project, input[key].as_str()?);
        let list_path = self.project.join(self.feature_list);
        if target != list_path && !same_file(&target, &list_path) {
            return None;
        }
        if tool == "NotebookEdit" {
            return Some(format!(
                "{} is the feature list, not a notebook; change only a feature's \"passes\" with Edit",
                self.feature_list
            ));
        }
        let current = std::fs::read_to_string(&list_path).unwrap_or_default();
        let base = FeatureList::parse(&current, self.feature_list).ok()?;
        let Some(next) = self.proposed(tool, input, &current) else {
            // Through another name, a change baton cannot follow is refused.
            return (target != list_path).then(|| {
                format!(
                    "{} is another name of the feature list {}; edit the feature list by its own name",
                    input[key].as_str().unwrap_or_default(),
                    self.feature_list
                )
            });
        };
        let r = reconcile(&base, &next, self.feature_list);
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

/// Reads by other names, in front of another gate: `Grep` and `Glob` paths are
/// judged as a `Read` of that path (no `~/.ssh`), and `WebFetch` or a browser's
/// `browser_navigate` may not open a `file://` URL unless `allow_file_urls`.
pub struct ReachGate<'a> {
    /// The gate consulted for everything (and for the translated `Read`).
    pub inner: &'a dyn ToolGate,
    /// `[policy] allow_file_urls`.
    pub allow_file_urls: bool,
}

impl ReachGate<'_> {
    fn refusal(&self, tool: &str, input: &Value) -> Option<String> {
        match tool {
            "Grep" | "Glob" => {
                let path = input["path"].as_str()?;
                match self
                    .inner
                    .check("Read", &serde_json::json!({ "file_path": path }))
                {
                    GateDecision::Allow => None,
                    GateDecision::Refuse(r) => Some(format!("{tool} in {path}: {r}")),
                }
            }
            _ => {
                let is_fetch = tool == "WebFetch"
                    || (tool.starts_with("mcp__") && tool.ends_with("__browser_navigate"));
                if !is_fetch || self.allow_file_urls {
                    return None;
                }
                let url = input["url"].as_str()?;
                let scheme = url.trim_start().split(':').next().unwrap_or_default();
                scheme.eq_ignore_ascii_case("file").then(|| {
                    format!(
                        "{tool} may not open file:// URLs ({url}); read project files with Read, or serve them over http (only a person can allow file:// with [policy] allow_file_urls)"
                    )
                })
            }
        }
    }
}

impl ToolGate for ReachGate<'_> {
    fn check(&self, tool: &str, input: &Value) -> GateDecision {
        match self.refusal(tool, input) {
            Some(reason) => GateDecision::Refuse(reason),
            None => self.inner.check(tool, input),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verifier_may_not_write_even_through_the_browser() {
        let gate = ReadOnly {
            inner: &baton_tools::AllowAll,
        };
        let refused =
            |tool: &str, input: Value| matches!(gate.check(tool, &input), GateDecision::Refuse(_));
        assert!(refused(
            "Write",
            serde_json::json!({"file_path": "a", "content": ""})
        ));
        assert!(refused("Edit", serde_json::json!({})));
        assert!(refused(
            "mcp__playwright__browser_take_screenshot",
            serde_json::json!({"filename": "x.png"})
        ));
        assert!(!refused(
            "mcp__playwright__browser_take_screenshot",
            serde_json::json!({})
        ));
        assert!(!refused("Bash", serde_json::json!({"command": "ls"})));
        assert!(!refused("Read", serde_json::json!({"file_path": "a"})));
    }
}
