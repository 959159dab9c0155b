//! Running a response's tool calls: each through the gate and within the session's
//! bounds, its result capped to the result budget, and what a verifying call showed
//! kept as evidence.

use std::time::Instant;

use baton_tools::{GateDecision, ToolOutput};
use serde_json::Value;

use super::{AgentError, Session, State};
use crate::context;
use crate::model::{Block, ImageData};
use crate::transcript::{Event, Transcript};

impl Session<'_> {
    /// Run a response's tool calls in order, each through the gate and within the
    /// session's bounds, and answer each with its `tool_result` (capped to the
    /// result budget), recording each as it ends. Calls in `invalid` are answered
    /// with why and never run.
    pub(super) async fn run_tools(
        &self,
        transcript: &mut Transcript,
        st: &State,
        turn: u32,
        calls: &[(String, String, Value)],
        invalid: &[(String, String)],
        bounds: Bounds<'_>,
    ) -> Result<Vec<Block>, AgentError> {
        let Bounds { stopped, deadline } = bounds;
        let mut results = Vec::with_capacity(calls.len());
        let past = || deadline.is_some_and(|d| tokio::time::Instant::now() >= d);
        for (id, name, input) in calls {
            let t0 = Instant::now();
            self.observer.tool_start(name, input);
            let mut refused = false;
            let mut out = if stopped() {
                ToolOutput::error("Not run: the session was interrupted.")
            } else if past() {
                ToolOutput::error("Not run: the session's time limit was reached.")
            } else if let Some((_, why)) = invalid.iter().find(|(i, _)| i == id) {
                ToolOutput::error(format!("Invalid input for {name}: {why}"))
            } else {
                match self.gate.check(name, input) {
                    // The session's time limit bounds a call too: a command still
                    // running then is stopped (its process group killed).
                    GateDecision::Allow => match deadline {
                        Some(d) => tokio::select! {
                            out = self.tools.call(name, input) => out,
                            () = tokio::time::sleep_until(d) => ToolOutput::error(
                                "Stopped: the session's time limit was reached while this call ran.",
                            ),
                        },
                        None => self.tools.call(name, input).await,
                    },
                    GateDecision::Refuse(reason) => {
                        refused = true;
                        ToolOutput::error(format!("Refused by baton's policy: {reason}"))
                    }
                }
            };
            let took = t0.elapsed();
            // One result must not fill the window: keep head and tail, save the whole.
            let budget = self.limits.context.result_max_tokens;
            if context::over_budget(&out.content, budget) {
                let saved = st.outputs.save(turn, results.len(), name, &out.content);
                if let Some(capped) = context::cap(&out.content, budget, saved.as_deref()) {
                    out.content = capped;
                }
            }
            self.observer.tool_end(name, &out, refused, took);
            let evidence = keep_evidence(
                &self.tools.context().project_dir,
                transcript.number(),
                turn,
                results.len(),
                name,
                input,
                &out,
            );
            transcript.record(Event::ToolResult {
                turn,
                tool_use_id: id.clone(),
                name: name.clone(),
                content: out.content.clone(),
                is_error: out.is_error,
                refused,
                duration_ms: took.as_millis() as u64,
                evidence,
            })?;
            results.push(Block::ToolResult {
                tool_use_id: id.clone(),
                content: out.content,
                is_error: out.is_error,
                images: out
                    .images
                    .into_iter()
                    .map(|i| ImageData {
                        media_type: i.media_type,
                        data: i.data,
                    })
                    .collect(),
            });
        }
        Ok(results)
    }
}

/// What ends a batch of tool calls early: a stop, and the session's time limit.
pub(super) struct Bounds<'a> {
    /// True once the session is to stop.
    pub(super) stopped: &'a (dyn Fn() -> bool + Sync),
    /// When the session's time is up, if it has a limit.
    pub(super) deadline: Option<tokio::time::Instant>,
}

/// Keep what a verifying tool call showed: every image (a screenshot) and, for tools
/// from MCP servers (the browser), the call and its text, under
/// `.baton/evidence/<session>/`. Returns the files written, relative to the project.
pub(crate) fn keep_evidence(
    project: &std::path::Path,
    session: u32,
    turn: u32,
    index: usize,
    name: &str,
    input: &Value,
    out: &ToolOutput,
) -> Vec<String> {
    use base64::Engine as _;
    if out.images.is_empty() && !name.starts_with("mcp__") {
        return Vec::new();
    }
    let rel_dir = baton_records::layout::evidence(session);
    // Beneath the project, never through a link planted in `.baton/`.
    let b = baton_records::beneath::Beneath::new(project);
    if b.create_dir_all(&rel_dir).is_err() {
        return Vec::new();
    }
    let stem = format!("t{turn:03}-{index}-{}", name.replace("__", "-"));
    let mut files = Vec::new();
    let text = format!(
        "tool: {name}\ninput: {input}\nerror: {}\n\n{}\n",
        out.is_error, out.content
    );
    if b.write_atomic(format!("{rel_dir}/{stem}.txt"), text.as_bytes())
        .is_ok()
    {
        files.push(format!("{rel_dir}/{stem}.txt"));
    }
    for (k, img) in out.images.iter().enumerate() {
        let ext = match img.media_type.as_str() {
            "image/jpeg" => "jpg",
            "image/gif" => "gif",
            "image/webp" => "webp",
            _ => "png",
        };
        if let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(img.data.as_bytes()) {
            let file = format!("{stem}-{k}.{ext}");
            if b.write_atomic(format!("{rel_dir}/{file}"), &bytes).is_ok() {
                files.push(format!("{rel_dir}/{file}"));
            }
        }
    }
    files
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn evidence_is_never_written_through_a_planted_link() {
        let project = tempfile::tempdir().unwrap();
        let users = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join(".baton")).unwrap();
        std::os::unix::fs::symlink(users.path(), project.path().join(".baton/evidence")).unwrap();
        let out = ToolOutput {
            content: "page".into(),
            is_error: false,
            images: Vec::new(),
        };
        let kept = keep_evidence(
            project.path(),
            1,
            1,
            0,
            "mcp__playwright__browser_snapshot",
            &serde_json::json!({}),
            &out,
        );
        assert!(kept.is_empty(), "{kept:?}");
        assert_eq!(std::fs::read_dir(users.path()).unwrap().count(), 0);
        // Without the link, it is kept.
        std::fs::remove_file(project.path().join(".baton/evidence")).unwrap();
        let kept = keep_evidence(
            project.path(),
            1,
            1,
            0,
            "mcp__playwright__browser_snapshot",
            &serde_json::json!({}),
            &out,
        );
        assert_eq!(
            kept,
            vec![".baton/evidence/0001/t001-0-mcp-playwright-browser_snapshot.txt"]
        );
    }
}
