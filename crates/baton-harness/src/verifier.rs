//! The independent verifier: a fresh session with its own skeptical prompt that
//! re-walks the steps of each newly flipped feature and may not edit the project.
//! Its structured verdict decides; a feature without a passing verdict is reverted.

use baton_ledger::FeatureList;
use baton_tools::{GateDecision, ToolGate};
use serde_json::Value;

/// Refuses every edit; defers to the policy for the rest.
pub struct ReadOnly<'a> {
    /// The command policy.
    pub inner: &'a dyn ToolGate,
}

impl ToolGate for ReadOnly<'_> {
    fn check(&self, tool: &str, input: &Value) -> GateDecision {
        match tool {
            "Write" | "Edit" => GateDecision::Refuse(
                "you are the verifier: you may not edit the project. Inspect, run and test it, then give your verdict.".into(),
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

/// The verifier's first message: the claimed features with their steps; `base` is
/// the commit the session under test started from.
pub fn prompt(
    list: &FeatureList,
    features: &[usize],
    init_script: &str,
    browser: bool,
    base: Option<&str>,
) -> String {
    let mut p = String::from(
        "Another engineer, in a session that just ended, claims the features below now work end to end. \
         Do not trust that claim, the code comments, the commit messages or the progress notes: check for yourself.\n\n",
    );
    let diff = match base {
        Some(b) => format!(
            "`git diff {} HEAD` (and `git log {}..HEAD`)",
            short(b),
            short(b)
        ),
        None => "`git log -5 --stat` and `git show`".to_string(),
    };
    p.push_str(&format!(
        "1. Look at what the session changed: {diff}. Note special-cased data, weakened or deleted tests, checks that always pass.\n\
         2. Make sure the app runs: run ./{init_script} if it is not answering (it starts the servers in the background).\n\
         3. For each feature, walk through every step as a user would{}, and look at what actually happens.\n\
         4. Right after checking a feature, write its verdict as one line: VERDICT {{\"feature\": <number>, \"pass\": true or false, \"reason\": \"what you did and saw\"}}. A feature you run out of time for counts as failed.\n\
         5. A feature passes only if every step works as described. Anything missing, broken, faked or only partly done is a fail.\n\n",
        if browser {
            ", in the browser through the mcp__playwright__ tools (click and type as a user; reload to check what must persist; read the console messages), taking a screenshot of what you checked"
        } else {
            ""
        }
    ));
    p.push_str("Features to check:\n");
    for &n in features {
        if let Some(f) = list.features.get(n - 1) {
            p.push_str(&format!(
                "\nFeature {n} [{}]: {}\n",
                f.category, f.description
            ));
            for s in &f.steps {
                p.push_str(&format!("  - {s}\n"));
            }
        }
    }
    p.push_str(
        "\nEnd your answer with exactly one JSON object, and nothing after it:\n\
         {\"results\": [{\"feature\": <number>, \"pass\": true or false, \"reason\": \"what you did and saw at each step\"}]}\n\
         with one entry for every feature above.",
    );
    p
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// The `VERDICT {...}` lines the verifier wrote as it went, from its transcript's
/// assistant texts (the last verdict of a feature wins).
pub fn verdict_lines(transcript: &std::path::Path) -> Vec<(usize, bool, String)> {
    let mut out: Vec<(usize, bool, String)> = Vec::new();
    let records = baton_agent::transcript::read(transcript).unwrap_or_default();
    for r in records {
        let baton_agent::transcript::Event::Assistant { content, .. } = r.event else {
            continue;
        };
        for b in content {
            let baton_agent::model::Block::Text { text } = b else {
                continue;
            };
            for line in text.lines() {
                let Some(json) = line.trim().strip_prefix("VERDICT") else {
                    continue;
                };
                if let Some(v) = parse_verdict(&format!("{{\"results\": [{}]}}", json.trim()))
                    && let Some(verdict) = v.into_iter().next()
                {
                    out.retain(|(n, _, _)| *n != verdict.0);
                    out.push(verdict);
                }
            }
        }
    }
    out
}

/// The verdicts in the verifier's final text: (feature, pass, reason). `None` if it
/// holds no `{"results": [...]}` object.
pub fn parse_verdict(text: &str) -> Option<Vec<(usize, bool, String)>> {
    let starts: Vec<usize> = text
        .char_indices()
        .filter(|(_, c)| *c == '{')
        .map(|(i, _)| i)
        .collect();
    for &start in starts.iter().rev().chain(starts.iter()) {
        let mut it = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        if let Some(Ok(v)) = it.next()
            && let Some(results) = v.get("results").and_then(Value::as_array)
        {
            let verdicts = results
                .iter()
                .filter_map(|r| {
                    let n = r.get("feature")?.as_u64()? as usize;
                    let pass = r.get("pass")?.as_bool()?;
                    let reason = r
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    Some((n, pass, reason))
                })
                .collect();
            return Some(verdicts);
        }
    }
    None
}

/// The flips to reject: failed verdicts with their reason, and claims without a verdict.
pub fn rejections(
    features: &[usize],
    verdicts: Option<&[(usize, bool, String)]>,
) -> Vec<(usize, String)> {
    features
        .iter()
        .filter_map(
            |&n| match verdicts.and_then(|v| v.iter().find(|(f, _, _)| *f == n)) {
                Some((_, true, _)) => None,
                Some((_, false, reason)) => Some((
                    n,
                    if reason.is_empty() {
                        "failed, no reason given".into()
                    } else {
                        reason.clone()
                    },
                )),
                None => Some((
                    n,
                    "the verifier did not reach it (no verdict), so it is not confirmed".into(),
                )),
            },
        )
        .collect()
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

    #[test]
    fn verdicts_are_found_after_prose_and_in_fences() {
        let t = "I checked both.\n```json\n{\"results\": [{\"feature\": 2, \"pass\": true, \"reason\": \"works\"}, {\"feature\": 5, \"pass\": false, \"reason\": \"button does nothing\"}]}\n```";
        let v = parse_verdict(t).unwrap();
        assert_eq!(
            v,
            vec![
                (2, true, "works".into()),
                (5, false, "button does nothing".into())
            ]
        );
        assert_eq!(
            rejections(&[2, 5, 7], Some(&v)),
            vec![
                (5, "button does nothing".into()),
                (
                    7,
                    "the verifier did not reach it (no verdict), so it is not confirmed".into()
                )
            ]
        );
        assert_eq!(parse_verdict("all good {not json}"), None);
        assert_eq!(rejections(&[1], None).len(), 1);
    }
}
