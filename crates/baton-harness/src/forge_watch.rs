//! `baton issues watch`: one step of the watch of baton's pull request, a named
//! state machine ([`baton_records::forge::Phase`]) kept in `.baton/forge.json`.
//! Each step reads the checks of the head baton pushed and acts once:
//!
//! - a check failed: a feature "Fix CI on pull request #N" joins the list, with
//!   what the check said, for the next `baton run` (one per head: a feature whose
//!   source names this pull request and head is never added twice, whatever the
//!   record says after a crash);
//! - no check started within `[forge] checks_start_secs`: a person is told once
//!   (`[notify]`, event `ci_not_started`), and the pull request is never merged so;
//! - checks still running: nothing, the next step looks again;
//! - every check passed (at least one ran): with `[forge] merge` baton merges it
//!   at that head; a missing check is "not passed", never "passed".
//!
//! Review threads are read at every step ([`reviews`]): a collaborator's
//! unresolved thread becomes a feature; once that feature passes, baton replies
//! with how it was proven and resolves the thread; a stranger's thread is
//! ignored and reported; past `[forge] max_review_cycles` a person is told.

use baton_config::ForgeConfig;
use baton_forge::{Check, CheckState, Forge};
use baton_records::forge::{ForgeRecord, Phase};
use serde_json::{Value, json};

use crate::error::HarnessError;
use crate::files::Files;

/// What one step of the watch found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    /// baton has opened no pull request (`baton issues pr`).
    NoPullRequest,
    /// Checks are still running, or none started yet (within the wait).
    Waiting(Vec<String>),
    /// A check failed: the feature (1-based) that fixes it, `true` when added now.
    Failed(usize, bool, Vec<String>),
    /// A check failed after `[forge] max_ci_fixes` fixes: the person was told now
    /// (`true`) or before; no feature is added.
    FixesSpent(bool, Vec<String>),
    /// No check started in time: the person was told now (`true`) or before.
    NeverStarted(bool),
    /// Every check passed; merged now when `[forge] merge`.
    Passed(bool),
    /// Merged before.
    Merged,
}

/// One step of the watch of `files`' pull request on `forge`; `tell` reaches a
/// person (`event`, `text`).
pub async fn step(
    files: &Files,
    forge: &impl Forge,
    cfg: &ForgeConfig,
    tell: &dyn Fn(&str, &str),
) -> Result<Watched, HarnessError> {
    let forge_err = |e: baton_forge::ForgeError| HarnessError::Input(format!("forge: {e}"));
    let mut record = ForgeRecord::load(&files.dir);
    let Some(pull) = record.pull.clone() else {
        return Ok(Watched::NoPullRequest);
    };
    if pull.phase == Phase::Merged {
        return Ok(Watched::Merged);
    }
    let checks = forge.checks(&pull.head).await.map_err(forge_err)?;
    let failed: Vec<&Check> = checks
        .iter()
        .filter(|c| c.state == CheckState::Failed)
        .collect();
    let pending: Vec<String> = checks
        .iter()
        .filter(|c| c.state == CheckState::Pending)
        .map(|c| c.name.clone())
        .collect();
    let (phase, watched) = if !failed.is_empty() {
        let names: Vec<String> = failed.iter().map(|c| c.name.clone()).collect();
        match fix_feature(files, forge.name(), &pull, cfg.max_ci_fixes, &failed)? {
            Some((n, now)) => (Phase::ChecksFailed, Watched::Failed(n, now, names)),
            None => {
                let key = "ci_fixes".to_string();
                let now = !pull.told.contains(&key);
                if now {
                    tell(
                        "ci_fixes_spent",
                        &format!(
                            "baton: the CI of pull request #{} ({}) still fails ({}) after [forge] max_ci_fixes ({}) fixes: it is for a person now",
                            pull.number,
                            pull.url,
                            names.join(", "),
                            cfg.max_ci_fixes
                        ),
                    );
                    if let Some(p) = record.pull.as_mut() {
                        p.told.push(key);
                    }
                }
                (Phase::ChecksFailed, Watched::FixesSpent(now, names))
            }
        }
    } else if checks.is_empty() {
        let waited = baton_agent::transcript::now_ms().saturating_sub(pull.pushed_ms);
        if waited < cfg.checks_start_secs.saturating_mul(1000) {
            (Phase::WaitingForChecks, Watched::Waiting(Vec::new()))
        } else {
            let now = !pull.told.contains(&pull.head);
            if now {
                tell(
                    "ci_not_started",
                    &format!(
                        "baton: no check started on pull request #{} ({}) within {} s of the push of {}: it is not merged so; look at the repository's CI",
                        pull.number,
                        pull.url,
                        cfg.checks_start_secs,
                        &pull.head[..pull.head.len().min(10)]
                    ),
                );
                if let Some(p) = record.pull.as_mut() {
                    p.told.push(pull.head.clone());
                }
            }
            (Phase::ChecksNeverStarted, Watched::NeverStarted(now))
        }
    } else if !pending.is_empty() {
        (Phase::WaitingForChecks, Watched::Waiting(pending))
    } else if cfg.merge {
        forge
            .merge(pull.number, &pull.head)
            .await
            .map_err(forge_err)?;
        (Phase::Merged, Watched::Passed(true))
    } else {
        (Phase::ChecksPassed, Watched::Passed(false))
    };
    if let Some(p) = record.pull.as_mut() {
        p.phase = phase;
    }
    record.save(&files.dir)?;
    Ok(watched)
}

/// The feature that fixes the failed checks of `pull`'s head: the one on the
/// list already, or one appended now (`true`); `None` when `most` fixes of its
/// CI are on the list already.
fn fix_feature(
    files: &Files,
    forge: &str,
    pull: &baton_records::forge::PullRecord,
    most: u32,
    failed: &[&Check],
) -> Result<Option<(usize, bool)>, HarnessError> {
    let (number, head) = (pull.number, pull.head.as_str());
    let list = files.load_accepted()?.ok_or_else(|| {
        HarnessError::Input(format!(
            "{} has no accepted feature list",
            files.dir.display()
        ))
    })?;
    let known = list.features.iter().position(|f| {
        f.fields
            .get("source")
            .is_some_and(|s| s["forge"] == forge && s["pull"] == number && s["head"] == head)
    });
    if let Some(i) = known {
        return Ok(Some((i + 1, false)));
    }
    let fixes = list
        .features
        .iter()
        .filter(|f| {
            f.fields.get("source").is_some_and(|s| {
                s["forge"] == forge && s["pull"] == number && s.get("head").is_some()
            })
        })
        .count();
    if fixes >= most as usize {
        return Ok(None);
    }
    let names: Vec<String> = failed.iter().map(|c| c.name.clone()).collect();
    let said: String = failed
        .iter()
        .map(|c| format!("{}: {}", c.name, c.said.trim()))
        .collect::<Vec<_>>()
        .join("\n");
    let said: String = said.chars().take(2_000).collect();
    let feature = json!({
        "category": "ci",
        "description": format!("Fix CI on pull request #{number}: {} failed", names.join(", ")),
        "steps": [
            format!("Read what the failing check said: {said}"),
            "Find and fix the cause in the project's code".to_string(),
            "Run what the check runs, the way the project's CI does, and see it pass".to_string(),
        ],
        "passes": false,
        "source": {"forge": forge, "pull": number, "head": head, "checks": names, "urls": failed.iter().map(|c| Value::String(c.url.clone())).collect::<Vec<_>>()},
    });
    let detail = format!(
        "from the CI of pull request #{number} at {}: {} failed",
        &head[..head.len().min(10)],
        names.join(", ")
    );
    let message = format!(
        "baton issues watch: CI of pull request #{number} failed ({}): a feature to fix it",
        names.join(", ")
    );
    let added =
        crate::issues::append_features(files, &list, vec![(feature, detail, None)], &message)?;
    Ok(Some((added.first().map_or(0, |a| a.0), true)))
}

/// What one look at the review threads did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reviewed {
    /// Features added now (1-based), one a thread.
    pub added: Vec<usize>,
    /// Threads answered and resolved now, by the feature that answered each.
    pub answered: Vec<usize>,
    /// Threads opened by users without write access, by author: ignored.
    pub ignored: Vec<String>,
    /// Threads left for a person: the pull request reached
    /// `[forge] max_review_cycles` (told now when `true`).
    pub capped: Option<bool>,
}

/// The marker of baton's replies to review threads.
pub const REPLY_MARKER: &str = "<!-- baton: answered -->";

/// Look at the review threads of `files`' pull request on `forge` once.
pub async fn reviews(
    files: &Files,
    forge: &impl Forge,
    cfg: &ForgeConfig,
    tell: &dyn Fn(&str, &str),
) -> Result<Reviewed, HarnessError> {
    let forge_err = |e: baton_forge::ForgeError| HarnessError::Input(format!("forge: {e}"));
    let mut out = Reviewed::default();
    let mut record = ForgeRecord::load(&files.dir);
    let Some(pull) = record.pull.clone() else {
        return Ok(out);
    };
    let Some(list) = files.load_accepted()? else {
        return Ok(out);
    };
    let ledger = baton_records::ledger::read(&files.ledger())?;
    let source_of = |i: usize| {
        list.features[i]
            .fields
            .get("source")
            .cloned()
            .unwrap_or(Value::Null)
    };
    let of_thread = |id: &str| {
        (0..list.features.len()).find(|&i| {
            let s = source_of(i);
            s["pull"] == pull.number && s["thread"] == id
        })
    };
    let cycles = (0..list.features.len())
        .filter(|&i| {
            let s = source_of(i);
            s["pull"] == pull.number && s.get("thread").is_some()
        })
        .count();
    let mut items = Vec::new();
    let mut writers = crate::issues::Writers::new(forge);
    for t in forge.review_threads(pull.number).await.map_err(forge_err)? {
        if t.resolved {
            continue;
        }
        if let Some(i) = of_thread(&t.id) {
            if !list.features[i].passes {
                continue;
            }
            // Answered before a crash kept it from resolving: no second reply.
            if !t.comments.iter().any(|(_, b)| b.contains(REPLY_MARKER)) {
                let (proof, commit) = crate::issues::proof_of(&ledger, i + 1);
                let at = if commit.is_empty() {
                    String::new()
                } else {
                    format!(" (commit {commit})")
                };
                let body = format!(
                    "{REPLY_MARKER}\nDone by baton as feature #{}, proven by {proof}{at}.",
                    i + 1
                );
                forge.reply(&t.id, &body).await.map_err(forge_err)?;
            }
            forge.resolve(&t.id).await.map_err(forge_err)?;
            out.answered.push(i + 1);
            continue;
        }
        let Some((author, body)) = t.comments.first().cloned() else {
            continue;
        };
        if !writers.may_write(&author).await? {
            out.ignored.push(author);
            continue;
        }
        if cycles + items.len() >= cfg.max_review_cycles as usize {
            let key = "reviews".to_string();
            let now = !pull.told.contains(&key);
            if now {
                tell(
                    "review_cycles",
                    &format!(
                        "baton: pull request #{} ({}) reached [forge] max_review_cycles ({}): the review threads left are for a person",
                        pull.number, pull.url, cfg.max_review_cycles
                    ),
                );
                if let Some(p) = record.pull.as_mut() {
                    p.told.push(key);
                }
                record.save(&files.dir)?;
            }
            out.capped = Some(now);
            break;
        }
        items.push(review_feature(
            forge.name(),
            pull.number,
            &t,
            &author,
            &body,
        ));
    }
    if !items.is_empty() {
        let message = format!(
            "baton issues watch: {} review thread(s) of pull request #{} as features",
            items.len(),
            pull.number
        );
        let added = crate::issues::append_features(files, &list, items, &message)?;
        out.added = added.into_iter().map(|a| a.0).collect();
    }
    Ok(out)
}

/// The feature that answers thread `t` of pull request `number`, opened by
/// `author` with `body`, and the ledger's words for it.
fn review_feature(
    forge: &str,
    number: u64,
    t: &baton_forge::Thread,
    author: &str,
    body: &str,
) -> (Value, String, Option<String>) {
    let first = body
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    let first: String = first.trim().chars().take(120).collect();
    let said: String = body.chars().take(2_000).collect();
    let at = if t.place.is_empty() {
        String::new()
    } else {
        format!(" at {}", t.place)
    };
    let feature = json!({
        "category": "review",
        "description": format!("Address review on pull request #{number}: {first}"),
        "steps": [
            format!("Read what {author} asked{at}: {said}"),
            "Change the code as asked".to_string(),
            "Check the change the way the reviewer would".to_string(),
        ],
        "passes": false,
        "source": {"forge": forge, "pull": number, "thread": t.id, "url": t.url, "author": author},
    });
    let detail = format!(
        "from a review of pull request #{number} by {author} ({})",
        t.url
    );
    (feature, detail, None)
}
