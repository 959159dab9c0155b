//! `BlockFeature`: the tool with which the agent of a coding session declares a
//! feature blocked (it cannot be made to pass in this environment), with a reason a
//! person can act on; reading the blocks a session declared from its transcript; and
//! `baton unblock`, which hands a blocked feature out again.
//!
//! The tool only validates and answers: what counts is its successful results in the
//! transcript, read after the session, so a session killed mid-way keeps its blocks.
//! It is offered only while a coding session of baton's own agent loop runs (never to
//! the initializer or the independent verifier, for whom it is an unknown tool).

use std::path::Path;
use std::sync::Mutex;

use baton_agent::model::Block;
use baton_agent::transcript::{self, Event, now_ms};
use baton_records::FeatureList;
use baton_tools::{ExternalTools, ToolOutput, ToolSpec};
use serde_json::{Value, json};

use crate::error::HarnessError;
use crate::files::Files;
use baton_records::State;
use baton_records::{LedgerEntry, LedgerKind};

/// The tool's name.
pub const TOOL: &str = "BlockFeature";

/// The `BlockFeature` tool, offered while it is open (a coding session runs).
#[derive(Debug, Default)]
pub struct BlockTool {
    /// `passes` of each feature of the accepted list while open; `None` while closed.
    open: Mutex<Option<Vec<bool>>>,
}

impl BlockTool {
    /// Offer the tool from now on, judging calls against `list` (the accepted list).
    pub fn open(&self, list: &FeatureList) {
        if let Ok(mut o) = self.open.lock() {
            *o = Some(list.features.iter().map(|f| f.passes).collect());
        }
    }

    /// Stop offering the tool.
    pub fn close(&self) {
        if let Ok(mut o) = self.open.lock() {
            *o = None;
        }
    }

    fn passes(&self) -> Option<Vec<bool>> {
        self.open.lock().ok().and_then(|o| o.clone())
    }
}

/// The tool as offered to the model.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: TOOL.to_string(),
        description: "Declare a failing feature blocked: it cannot pass in this environment whatever you do. \
            baton stops handing it out until a person acts on your reason and runs `baton unblock`. Leave its \"passes\" false."
            .to_string(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "feature": {"type": "integer", "description": "Its 1-based position in the feature list"},
                "reason": {"type": "string", "description": "Why it cannot pass here, and what a person must do"}
            },
            "required": ["feature", "reason"]
        }),
    }
}

/// The feature number and reason of a call's input, if it has them.
fn parse(input: &Value) -> Option<(Option<usize>, String)> {
    let feature = match input.get("feature")? {
        Value::Number(n) => n.as_u64().map(|n| n as usize),
        Value::String(s) => s.trim().trim_start_matches('#').parse().ok(),
        _ => None,
    };
    let reason = input.get("reason")?.as_str()?.trim().to_string();
    Some((feature, reason))
}

/// Judge a call against `passes` (the accepted list's): the feature and reason to
/// record, or the error for the model.
pub fn check(passes: &[bool], input: &Value) -> Result<(usize, String), String> {
    let total = passes.len();
    let Some((feature, reason)) = parse(input) else {
        return Err(format!(
            "Invalid input for {TOOL}: expected {{\"feature\": integer, \"reason\": string}}."
        ));
    };
    let Some(n) = feature.filter(|n| (1..=total).contains(n)) else {
        return Err(format!(
            "{TOOL}: \"feature\" must be a feature's number, from 1 to {total} (its position in the feature list), got {}.",
            input["feature"]
        ));
    };
    if reason.is_empty() {
        return Err(format!(
            "{TOOL}: give a reason a person can act on: what is missing or contradictory, and what they must do."
        ));
    }
    if passes[n - 1] {
        return Err(format!(
            "{TOOL}: feature {n} passes; only a failing feature can be blocked. If it is broken, set its \"passes\" back to false first."
        ));
    }
    Ok((n, reason))
}

impl ExternalTools for BlockTool {
    fn specs(&self) -> Vec<ToolSpec> {
        match self.passes() {
            Some(_) => vec![spec()],
            None => Vec::new(),
        }
    }

    fn handles(&self, name: &str) -> bool {
        name == TOOL && self.passes().is_some()
    }

    fn call<'a>(
        &'a self,
        _name: &'a str,
        input: &'a Value,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ToolOutput> + Send + 'a>> {
        let out = match self.passes() {
            None => ToolOutput::error(format!("{TOOL} is only available in coding sessions.")),
            Some(passes) => match check(&passes, input) {
                Err(e) => ToolOutput::error(e),
                Ok((n, reason)) => ToolOutput::ok(format!(
                    "Feature {n} is recorded as blocked: {reason}\n\
                     baton will not hand it out again until a person acts on this and runs `baton unblock`. \
                     Leave its \"passes\" false. If it was the feature you were working on, write the block in the progress notes, commit, and end the session."
                )),
            },
        };
        Box::pin(std::future::ready(out))
    }
}

/// The blocks session `number` declared: successful `BlockFeature` results in its
/// transcript, with the input of their calls, in order. Empty if it has none or the
/// transcript cannot be read.
pub fn declared(dir: &Path, number: u32) -> Vec<(usize, String)> {
    let path = dir
        .join(transcript::SESSIONS_DIR)
        .join(format!("{number:04}.jsonl"));
    let mut calls: Vec<(String, Value)> = Vec::new();
    let mut out: Vec<(usize, String)> = Vec::new();
    for r in transcript::read(&path).unwrap_or_default() {
        match r.event {
            Event::Assistant { content, .. } => {
                calls.extend(content.into_iter().filter_map(|b| match b {
                    Block::ToolUse { id, name, input } if name == TOOL => Some((id, input)),
                    _ => None,
                }));
            }
            Event::ToolResult {
                tool_use_id,
                name,
                is_error: false,
                ..
            } if name == TOOL => {
                let input = calls.iter().find(|(id, _)| *id == tool_use_id);
                if let Some((Some(n), reason)) = input.and_then(|(_, i)| parse(i))
                    && !reason.is_empty()
                {
                    out.retain(|(m, _)| *m != n);
                    out.push((n, reason));
                }
            }
            _ => {}
        }
    }
    out
}

/// `baton unblock`: clear the block of feature `n` (1-based) and its attempt count,
/// so it is handed out again in list order. Returns what was done, for people.
pub fn unblock(files: &Files, n: usize) -> Result<String, HarnessError> {
    let list = files.load_accepted()?.ok_or_else(|| {
        HarnessError::Input(format!(
            "{} has no accepted feature list yet: nothing is blocked",
            files.dir.display()
        ))
    })?;
    let total = list.features.len();
    let Some(feature) = n.checked_sub(1).and_then(|i| list.features.get(i)) else {
        return Err(HarnessError::Input(format!(
            "there is no feature {n}: features are numbered 1 to {total}"
        )));
    };
    let mut state = State::load(&files.dir)?;
    // Blocked by the agent, or deferred by baton after failed attempts: either
    // way a person hands it out again.
    let blocked = state.features.get(&n).and_then(|r| {
        r.blocked.clone().map(|b| (b, r.attempts)).or_else(|| {
            r.deferred.map(|_| {
                (
                    format!(
                        "deferred after failed attempts; last: {}",
                        r.last_reason.clone().unwrap_or_default()
                    ),
                    r.attempts,
                )
            })
        })
    });
    let Some((reason, attempts)) = blocked else {
        let blocked: Vec<String> = crate::queue::blocked(&list, &state)
            .iter()
            .map(|n| format!("#{n}"))
            .collect();
        return Err(HarnessError::Input(format!(
            "feature {n} is neither blocked nor deferred (blocked: {})",
            if blocked.is_empty() {
                "none".to_string()
            } else {
                blocked.join(", ")
            }
        )));
    };
    state.features.remove(&n);
    // A person acted: the next run gets to work on it even after a stall.
    state.stalled = 0;
    let session = state.sessions.last().map_or(0, |s| s.number);
    files.append_ledger(&LedgerEntry {
        t_ms: now_ms(),
        session,
        kind: LedgerKind::Unblocked,
        feature: Some(n),
        detail: format!(
            "{}: unblocked by a person (was blocked: {reason}; {attempts} failed attempt(s) cleared)",
            feature.description
        ),
        commit: None,
        evidence: Vec::new(),
        proof: None,
    })?;
    state.save(&files.dir)?;
    Ok(format!(
        "unblocked feature {n} ({}); it was blocked: {reason}; cleared {attempts} failed attempt(s). The next `baton run` hands it out again in list order.",
        crate::queue::cut(&feature.description, 80)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn calls_are_refused_for_bad_numbers_empty_reasons_and_passing_features() {
        let passes = [true, false, false];
        let err = |input: Value| check(&passes, &input).unwrap_err();
        assert!(err(json!({"feature": 0, "reason": "x"})).contains("from 1 to 3"));
        assert!(err(json!({"feature": 4, "reason": "x"})).contains("from 1 to 3"));
        assert!(err(json!({"feature": -1, "reason": "x"})).contains("from 1 to 3"));
        assert!(err(json!({"feature": "two", "reason": "x"})).contains("from 1 to 3"));
        assert!(err(json!({"feature": 2, "reason": "  "})).contains("reason a person can act on"));
        assert!(err(json!({"feature": 1, "reason": "x"})).contains("feature 1 passes"));
        assert!(err(json!({"reason": "x"})).contains("Invalid input"));
        assert_eq!(
            check(&passes, &json!({"feature": 3, "reason": " needs a key "})),
            Ok((3, "needs a key".to_string()))
        );
        assert_eq!(
            check(&passes, &json!({"feature": "#2", "reason": "r"})),
            Ok((2, "r".to_string()))
        );
    }

    #[tokio::test]
    async fn the_tool_is_offered_only_while_open() {
        let list = FeatureList::parse(
            r#"[{"category":"c","description":"d","steps":[],"passes":false}]"#,
            "f.json",
        )
        .unwrap();
        let tool = BlockTool::default();
        assert!(tool.specs().is_empty());
        assert!(!tool.handles(TOOL));
        tool.open(&list);
        assert_eq!(tool.specs()[0].name, TOOL);
        assert!(tool.handles(TOOL) && !tool.handles("Bash"));
        let out = tool
            .call(TOOL, &json!({"feature": 1, "reason": "no SMTP server"}))
            .await;
        assert!(!out.is_error, "{}", out.content);
        tool.close();
        assert!(tool.specs().is_empty());
        assert!(tool.call(TOOL, &json!({})).await.is_error);
    }

    #[test]
    fn blocks_are_read_from_successful_results_only_even_without_a_session_end() {
        use baton_agent::model::StopReason;
        use baton_agent::transcript::Transcript;
        let dir = tempfile::tempdir().unwrap();
        let mut t = Transcript::create_next(dir.path()).unwrap();
        let call = |id: &str, input: Value| Block::ToolUse {
            id: id.into(),
            name: TOOL.into(),
            input,
        };
        t.record(Event::Assistant {
            turn: 1,
            content: vec![
                call("a", json!({"feature": 2, "reason": "needs a paid API key"})),
                call("b", json!({"feature": 1, "reason": "it passes"})),
                call("c", json!({"feature": 3, "reason": "no SMTP server here"})),
            ],
            stop_reason: StopReason::ToolUse,
            usage: Default::default(),
            cost_usd: 0.0,
        })
        .unwrap();
        let result = |id: &str, is_error: bool| Event::ToolResult {
            turn: 1,
            tool_use_id: id.into(),
            name: TOOL.into(),
            content: String::new(),
            is_error,
            refused: false,
            duration_ms: 0,
            evidence: Vec::new(),
        };
        t.record(result("a", false)).unwrap();
        t.record(result("b", true)).unwrap();
        t.record(result("c", false)).unwrap();
        // No session_end: the process was killed here.
        assert_eq!(
            declared(dir.path(), t.number()),
            vec![
                (2, "needs a paid API key".to_string()),
                (3, "no SMTP server here".to_string())
            ]
        );
        assert_eq!(declared(dir.path(), 99), Vec::new());
    }

    #[test]
    fn unblock_clears_the_block_attempts_and_stall_and_refuses_what_is_not_blocked() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(dir.path().to_path_buf(), Default::default());
        let err = |n: usize| unblock(&files, n).unwrap_err().to_string();
        assert!(err(1).contains("no accepted feature list"), "{}", err(1));
        let list = FeatureList::parse(
            r#"[{"category":"c","description":"One","steps":[],"passes":true},
                {"category":"c","description":"Two","steps":[],"passes":false}]"#,
            "f.json",
        )
        .unwrap();
        files.save_accepted(&list).unwrap();
        let mut state = State {
            stalled: 3,
            ..State::default()
        };
        state.features.insert(
            2,
            baton_records::FeatureRecord {
                attempts: 2,
                blocked: Some("needs a key".into()),
                blocked_in: Some(4),
                ..Default::default()
            },
        );
        state.save(&files.dir).unwrap();
        assert_eq!(
            err(0),
            "there is no feature 0: features are numbered 1 to 2"
        );
        assert_eq!(
            err(3),
            "there is no feature 3: features are numbered 1 to 2"
        );
        assert_eq!(
            err(1),
            "feature 1 is neither blocked nor deferred (blocked: #2)"
        );
        let done = unblock(&files, 2).unwrap();
        assert!(
            done.starts_with("unblocked feature 2 (Two); it was blocked: needs a key; cleared 2 failed attempt(s)."),
            "{done}"
        );
        let after = State::load(&files.dir).unwrap();
        assert!(after.features.is_empty());
        assert_eq!(after.stalled, 0);
        let ledger = std::fs::read_to_string(files.ledger()).unwrap();
        assert!(
            ledger.contains("\"kind\":\"unblocked\",\"feature\":2"),
            "{ledger}"
        );
        assert_eq!(
            err(2),
            "feature 2 is neither blocked nor deferred (blocked: none)"
        );
    }
}
