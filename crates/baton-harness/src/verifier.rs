//! The independent verifier: a fresh session with its own skeptical prompt that
//! re-walks the steps of each newly flipped feature and may not edit the project.
//! Its structured verdict decides; a feature without a passing verdict is reverted.
//!
//! This module holds what is said to it ([`prompt`]) and how its session is read
//! back and judged ([`walk`], [`judge`], [`parse_verdict`]); they take their
//! inputs. The run starts its session among the proof gates (`proof.rs`), read-only
//! through [`crate::guard::GateStack`].

use std::collections::BTreeMap;

use baton_records::{FeatureList, Proof};
use serde_json::Value;

/// What the verifier is asked to check and how: the claimed features with their
/// steps, the commit the session under test started from, and how a user of this
/// kind of project exercises a feature.
pub struct Brief<'a> {
    /// The feature list as the session left it.
    pub list: &'a FeatureList,
    /// The features (1-based) to check.
    pub features: &'a [usize],
    /// `[project] kind`.
    pub kind: &'a str,
    /// The verifier has the browser (`mcp__playwright__` tools).
    pub browser: bool,
    /// The commit the session under test started from.
    pub base: Option<&'a str>,
    /// What baton's start of the app said (its last lines), or why it failed.
    pub app: Option<String>,
}

/// How the verifier exercises a feature of a project of `kind`.
fn method(kind: &str, browser: bool) -> &'static str {
    match (kind, browser) {
        ("web", true) => {
            "in the browser through the mcp__playwright__ tools, as a user: navigate, click and type (never browser_evaluate for a step a user would do), reload to check what must persist, read the console messages, and take a screenshot of what you checked"
        }
        ("web", false) => {
            "against the running app over HTTP (curl), requesting the pages and calling the routes a user's actions reach, and checking what persists across requests"
        }
        ("cli", _) => {
            "by running the program as its users would, with real arguments, input and files, and also with inputs other than the values in the steps, so that special-cased data shows"
        }
        ("library", _) => {
            "through its public interface: write a small program or test under /tmp that uses it as a caller would, with inputs other than the values in the steps"
        }
        ("service", _) => {
            "by sending the running service real requests (curl or a small client under /tmp), including inputs other than the values in the steps, and checking what persists"
        }
        _ => "by using it as its users would",
    }
}

/// The verifier's first message.
pub fn prompt(b: &Brief<'_>) -> String {
    let mut p = String::from(
        "Another engineer, in a session that just ended, claims the features below now work end to end. \
         Do not trust that claim, the code comments, the commit messages or the progress notes: check for yourself.\n\n",
    );
    let diff = match b.base {
        Some(base) => {
            let base = short(base);
            format!(
                "`git status`, `git diff --stat {base} HEAD`, then `git diff {base} HEAD -- . ':(exclude)*.lock' ':(exclude)package-lock.json'` (skip generated files)"
            )
        }
        None => "`git status`, `git log -5 --stat` and `git show`".to_string(),
    };
    let app = match &b.app {
        Some(said) => format!(
            "baton started the app for you just before this session (the project is read-only to you, so do not run the start script yourself); it said:\n{said}\nIf the app does not answer, that is a failure of the features that need it.",
        ),
        None => "baton did not start anything for you: this project has no start script (or it is not run for checks); start what a feature needs under /tmp, or in the background without writing into the project.".to_string(),
    };
    p.push_str(&format!(
        "1. Look at what the session changed: {diff}. Note special-cased data, weakened or deleted tests, checks that always pass.\n\
         2. {app}\n\
         3. For each feature, walk through every step {}, and look at what actually happens.\n\
         4. Right after checking a feature, write its verdict as one line: VERDICT {{\"feature\": <number>, \"pass\": true or false, \"reason\": \"what you did and saw at each step\"}}. A feature you run out of time for counts as failed.\n\
         5. A feature passes only if every step works as described. Anything missing, broken, faked or only partly done is a fail. Judge the steps as written: something they do not cover (a missing favicon, a style the feature does not ask for) is not a failure.\n\n\
         baton checks your verdicts: a pass with no tool call of yours since your previous VERDICT line, or whose reason does not say what you ran and saw, counts as a fail{}.\n\n",
        method(b.kind, b.browser),
        if b.browser && b.kind == "web" {
            "; so does a pass of a feature you did not check in the browser"
        } else {
            ""
        }
    ));
    p.push_str("Features to check:\n");
    for &n in b.features {
        if let Some(f) = b.list.features.get(n - 1) {
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

/// What the verifier ran for a feature: the tools it called (refused calls ran
/// nothing and are left out), and the evidence files they left.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Work {
    /// Tool name and how often it ran.
    pub tools: BTreeMap<String, u32>,
    /// Evidence files (screenshots), relative to the project.
    pub evidence: Vec<String>,
}

impl Work {
    fn describe(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|(t, n)| {
                if *n == 1 {
                    t.clone()
                } else {
                    format!("{t} ×{n}")
                }
            })
            .collect()
    }
}

/// The verifier's session read back: each `VERDICT {...}` line it wrote with the
/// work done since the previous one (the last verdict of a feature wins), and
/// the work done after its last verdict line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Walk {
    /// Feature, pass, reason, and what it ran for it.
    pub verdicts: Vec<(usize, bool, String, Work)>,
    /// What it ran after its last verdict line.
    pub after_last: Work,
}

/// Read the verifier's transcript: its verdict lines and the work before each.
pub fn walk(transcript: &std::path::Path) -> Walk {
    use baton_agent::transcript::Event;
    let mut out = Walk::default();
    let mut current = Work::default();
    let records = baton_agent::transcript::read(transcript).unwrap_or_default();
    for r in records {
        match r.event {
            Event::Assistant { content, .. } => {
                for b in content {
                    let baton_agent::model::Block::Text { text } = b else {
                        continue;
                    };
                    for line in text.lines() {
                        let Some(json) = line.trim().strip_prefix("VERDICT") else {
                            continue;
                        };
                        if let Some(v) =
                            parse_verdict(&format!("{{\"results\": [{}]}}", json.trim()))
                            && let Some((n, pass, reason)) = v.into_iter().next()
                        {
                            out.verdicts.retain(|(f, ..)| *f != n);
                            out.verdicts
                                .push((n, pass, reason, std::mem::take(&mut current)));
                        }
                    }
                }
            }
            Event::ToolResult {
                name,
                refused,
                evidence,
                ..
            } if !refused => {
                *current.tools.entry(name).or_default() += 1;
                current.evidence.extend(evidence);
            }
            _ => {}
        }
    }
    out.after_last = current;
    out
}

/// The `VERDICT {...}` lines the verifier wrote as it went (the last verdict of a
/// feature wins).
pub fn verdict_lines(transcript: &std::path::Path) -> Vec<(usize, bool, String)> {
    walk(transcript)
        .verdicts
        .into_iter()
        .map(|(n, pass, reason, _)| (n, pass, reason))
        .collect()
}

/// Words a passing verdict's reason needs at least: "works" is no account of
/// what was run and seen.
const MIN_REASON_WORDS: usize = 5;

/// What [`judge`] finds: the proofs, then the rejections with their reasons.
pub type Judged = (Vec<(usize, Proof)>, Vec<(usize, String)>);

/// What the verifier's session proves: for each of `features`, either a proof
/// (a pass backed by tool calls of its own on that feature, and by the browser
/// where `need_browser`) or a rejection with its reason. `verdicts` are the
/// final object's, when it gave one; verdict lines fill in the rest.
pub fn judge(
    features: &[usize],
    verdicts: Option<&[(usize, bool, String)]>,
    walk: &Walk,
    need_browser: bool,
    session: u32,
) -> Judged {
    let mut proofs = Vec::new();
    let mut rejected = Vec::new();
    for &n in features {
        let line = walk.verdicts.iter().find(|(f, ..)| *f == n);
        let last = verdicts
            .and_then(|v| v.iter().find(|(f, _, _)| *f == n))
            .map(|(_, pass, reason)| (*pass, reason.clone()))
            .or_else(|| line.map(|(_, pass, reason, _)| (*pass, reason.clone())));
        let work = line.map_or(&walk.after_last, |(.., w)| w);
        let verdict = match last {
            None => Err(
                "the verifier did not reach it (no verdict), so it is not confirmed".to_string(),
            ),
            Some((false, reason)) if reason.trim().is_empty() => {
                Err("failed, no reason given".to_string())
            }
            Some((false, reason)) => Err(reason),
            Some((true, _)) if work.tools.is_empty() => Err(
                "the verifier passed it without running anything for it (no tool call before its verdict), so the pass does not count".to_string(),
            ),
            Some((true, reason)) if reason.split_whitespace().count() < MIN_REASON_WORDS => Err(format!(
                "the verifier's pass does not say what it ran and saw ({:?}), so it does not count",
                reason.trim()
            )),
            Some((true, _)) if need_browser && !work.tools.keys().any(|t| t.starts_with("mcp__")) => Err(
                "the verifier passed it without checking it in the browser, so the pass does not count".to_string(),
            ),
            Some((true, reason)) => Ok(Proof::Verifier {
                session,
                reason,
                tools: work.describe(),
                evidence: work.evidence.clone(),
            }),
        };
        match verdict {
            Ok(p) => proofs.push((n, p)),
            Err(why) => rejected.push((n, why)),
        }
    }
    (proofs, rejected)
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(parse_verdict("all good {not json}"), None);
    }

    fn work(tools: &[&str]) -> Work {
        let mut w = Work::default();
        for t in tools {
            *w.tools.entry((*t).to_string()).or_default() += 1;
        }
        w
    }

    #[test]
    fn a_pass_counts_only_with_work_of_its_own_and_an_account_of_it() {
        let said = "opened the page, added a todo and saw it listed";
        let walked = Walk {
            verdicts: vec![
                (1, true, said.into(), work(&["Bash", "Bash"])),
                // Judged right after the previous verdict, with nothing run for it.
                (2, true, said.into(), Work::default()),
                (3, true, "works".into(), work(&["Bash"])),
                (4, false, "button does nothing".into(), work(&["Bash"])),
            ],
            after_last: work(&["Read"]),
        };
        // Feature 5 is judged only in the final object: the work after the last
        // verdict line is its.
        let finals = vec![(5, true, said.to_string())];
        let (proofs, rejected) = judge(&[1, 2, 3, 4, 5, 6], Some(&finals), &walked, false, 9);
        assert_eq!(
            proofs,
            vec![
                (
                    1,
                    Proof::Verifier {
                        session: 9,
                        reason: said.into(),
                        tools: vec!["Bash ×2".into()],
                        evidence: vec![]
                    }
                ),
                (
                    5,
                    Proof::Verifier {
                        session: 9,
                        reason: said.into(),
                        tools: vec!["Read".into()],
                        evidence: vec![]
                    }
                )
            ]
        );
        let why: Vec<(usize, &str)> = rejected.iter().map(|(n, w)| (*n, w.as_str())).collect();
        assert_eq!(why.len(), 4, "{why:?}");
        assert!(
            why[0].0 == 2 && why[0].1.contains("without running anything"),
            "{why:?}"
        );
        assert!(
            why[1].0 == 3 && why[1].1.contains("does not say what it ran"),
            "{why:?}"
        );
        assert_eq!(why[2], (4, "button does nothing"));
        assert!(why[3].0 == 6 && why[3].1.contains("no verdict"), "{why:?}");
        // A web app with the browser: a pass needs the browser.
        let (proofs, rejected) = judge(&[1], None, &walked, true, 9);
        assert!(proofs.is_empty());
        assert!(rejected[0].1.contains("in the browser"), "{rejected:?}");
        let browsed = Walk {
            verdicts: vec![(
                1,
                true,
                said.into(),
                work(&["mcp__playwright__browser_click"]),
            )],
            after_last: Work::default(),
        };
        assert_eq!(judge(&[1], None, &browsed, true, 9).0.len(), 1);
    }
}
