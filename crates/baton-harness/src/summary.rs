//! What a session's transcript says about it (outcome, turns, usage and cost,
//! refusals, evidence, waits, the last words), read back for its record and the
//! next brief; also for a session killed before it could say anything itself.

use std::path::PathBuf;

use baton_agent::model::Usage;
use baton_agent::transcript::{self, Event};

/// What a session's transcript says about it.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// How it ended, if it ended.
    pub outcome: Option<String>,
    /// Model turns.
    pub turns: u32,
    /// Tokens.
    pub usage: Usage,
    /// Cost in USD.
    pub cost: f64,
    /// Tool calls refused.
    pub refusals: u32,
    /// Evidence files kept for it.
    pub evidence: Vec<String>,
    /// Time spent waiting for quotas to reset, in ms.
    pub waited_ms: u64,
    /// Refused calls: (what was asked, baton's reason).
    pub refused: Vec<(String, String)>,
    /// The model's last text.
    pub final_text: String,
}

impl Summary {
    /// How the session ended, given the error its run returned: a usage limit or
    /// another error, else what its transcript says (a name this baton does not
    /// know: it ended, somehow), else it was killed before it could say.
    pub fn outcome_after(
        &self,
        error: Option<&baton_agent::session::AgentError>,
    ) -> baton_records::SessionOutcome {
        use baton_records::SessionOutcome;
        match (error, &self.outcome) {
            (Some(baton_agent::session::AgentError::UsageLimit { .. }), _) => {
                SessionOutcome::UsageLimit
            }
            (Some(_), _) => SessionOutcome::Error,
            (None, Some(o)) => SessionOutcome::from_name(o).unwrap_or(SessionOutcome::Error),
            (None, None) => SessionOutcome::Killed,
        }
    }
}

/// Read session `number`'s transcript into a [`Summary`] (empty if unreadable).
pub fn summarize(dir: &std::path::Path, number: u32) -> Summary {
    let path: PathBuf = dir
        .join(transcript::SESSIONS_DIR)
        .join(format!("{number:04}.jsonl"));
    let mut s = Summary::default();
    // Each call's key argument (a Bash command, a path), to name refused calls.
    let mut calls: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for r in transcript::read(&path).unwrap_or_default() {
        match r.event {
            Event::Assistant {
                turn,
                usage: u,
                cost_usd,
                content,
                ..
            } => {
                s.turns = s.turns.max(turn);
                s.usage.add(&u);
                s.cost += cost_usd;
                for b in content {
                    if let baton_agent::model::Block::ToolUse { id, name, input } = b {
                        let key = ["command", "file_path", "pattern", "url"]
                            .iter()
                            .find_map(|k| input.get(*k).and_then(|v| v.as_str()))
                            .map_or_else(|| name.clone(), |v| format!("{name} {v}"));
                        calls.insert(id, key);
                    }
                }
            }
            Event::ToolResult {
                refused,
                evidence,
                tool_use_id,
                name,
                content,
                ..
            } => {
                s.refusals += u32::from(refused);
                s.evidence.extend(evidence);
                if refused {
                    let what = calls
                        .get(&tool_use_id)
                        .cloned()
                        .unwrap_or_else(|| name.clone());
                    let why = content
                        .strip_prefix("Refused by baton's policy: ")
                        .unwrap_or(&content)
                        .to_string();
                    s.refused.push((what, why));
                }
            }
            Event::Compaction {
                usage: u, cost_usd, ..
            } => {
                s.usage.add(&u);
                s.cost += cost_usd;
            }
            Event::Wait { until_ms, .. } => s.waited_ms += until_ms.saturating_sub(r.t_ms),
            Event::SessionEnd {
                outcome,
                final_text,
                usage,
                cost_usd,
                ..
            } => {
                s.outcome = Some(outcome);
                s.final_text = final_text;
                // A CLI's session reports its whole usage only here (Codex gives
                // none per turn; Claude Code's total counts its subagents too).
                if usage.total() > s.usage.total() {
                    s.usage = usage;
                }
                s.cost = s.cost.max(cost_usd);
            }
            _ => {}
        }
    }
    s
}
