//! The independent verifier: a fresh session with its own skeptical prompt that
//! re-walks the steps of each newly flipped feature and may not edit the project.
//! Its structured verdict decides; a feature without a passing verdict is reverted.

use std::time::Instant;

use baton_agent::client::ModelClient;
use baton_agent::transcript::Transcript;
use baton_records::FeatureList;
use baton_tools::{GateDecision, ToolGate, Toolbox};
use serde_json::Value;

use crate::error::HarnessError;
use crate::gates::Gates;
use crate::guard::GateStack;
use crate::prompts;
use crate::run::{Agent, Backend, list};

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

impl crate::run::Runner<'_> {
    /// Run the independent verifier over the session's new flips and reject those
    /// it does not confirm. Returns its cost.
    pub(crate) async fn verifier(
        &self,
        g: &mut Gates<'_>,
        base: Option<&str>,
        app_started: bool,
        deadline: Option<Instant>,
    ) -> Result<f64, HarnessError> {
        let Some(current) = g.list.clone() else {
            return Ok(0.0);
        };
        // The verifier sees the project read-only, so baton starts the app for it
        // (unless the verify gate just ran the start script).
        if !app_started {
            self.start_app_for_verifier().await;
        }
        let flips = g.report.flipped.clone();
        let limits = self.limits(
            self.cfg.verify.max_turns,
            deadline,
            crate::prompts::Handoff::Verifier,
        );
        let gate = GateStack {
            policy: self.policy,
            allow_file_urls: self.cfg.policy.allow_file_urls,
            feature_list: None,
            read_only: true,
        };
        let mut transcript = Transcript::create_next(&self.files.dir)?;
        self.reporter.line(&format!(
            "── session {:04} · verifier of session {:04} · checking {} ──",
            transcript.number(),
            g.session,
            list(&flips)
        ));
        let browser = self.cfg.browser.enabled && self.cfg.project.kind == "web";
        let prompt = prompt(
            &current,
            &flips,
            &self.files.names.init_script,
            browser,
            base,
        );
        let system = prompts::verifier_system(&self.files.dir);
        // Another model for the verifier: its own client in baton's loop.
        let own_client = match (&self.backend, &self.cfg.verify.model) {
            (Backend::Loop(client), Some(m)) => {
                let mut cfg = client.config().clone();
                cfg.model = m.clone();
                Some(ModelClient::new(cfg).map_err(HarnessError::VerifierClient)?)
            }
            _ => None,
        };
        // The verifier's commands see the project read-only (kernel-enforced where
        // the sandbox runs).
        let ro_tools = self.read_only_tools();
        let result = self
            .run_agent(
                Agent {
                    tools: &ro_tools,
                    gate,
                    client: own_client.as_ref(),
                    model: self.cfg.verify.model.as_deref(),
                    limits,
                },
                &mut transcript,
                &system,
                &prompt,
            )
            .await?;
        // The final verdict object; else (out of turns, cut off) the verdicts it gave
        // one by one as it went: a feature it did not reach is not confirmed.
        let verdicts = (result.outcome == baton_agent::session::Outcome::Completed)
            .then(|| parse_verdict(&result.final_text))
            .flatten()
            .or_else(|| Some(verdict_lines(transcript.path())));
        let rejected = rejections(&flips, verdicts.as_deref());
        if !rejected.is_empty() {
            self.reporter.line(&format!(
                "  verifier rejected {}",
                list(&rejected.iter().map(|r| r.0).collect::<Vec<_>>())
            ));
        }
        g.reject(rejected);
        Ok(result.cost_usd)
    }

    /// The run's tools with the project read-only for `Bash` (through the sandbox
    /// launcher, where one is in use): the verifier's commands cannot write it.
    pub(crate) fn read_only_tools(&self) -> Toolbox {
        let mut ctx = self.tools.context().clone();
        ctx.launcher = ctx.launcher.as_ref().map(|l| l.read_only());
        self.tools.with_context(ctx)
    }

    /// Run the start script (writable, through the policy) so the read-only verifier
    /// finds the app running; its failure is the verifier's to see.
    pub(crate) async fn start_app_for_verifier(&self) {
        let init = &self.files.names.init_script;
        if !(self.cfg.verify.run_init && self.files.dir.join(init).is_file()) {
            return;
        }
        let input = serde_json::json!({"command": format!("./{init}"), "timeout": 600_000});
        if self.policy.check("Bash", &input) == baton_tools::GateDecision::Allow {
            let _ = self.tools.call("Bash", &input).await;
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
