//! `baton issues pull`: a forge's open issues with the configured label become
//! features appended to the accepted list, each recorded with its source (forge,
//! number, URL, author) in the list and the ledger (`added`), and committed.
//!
//! Only issues opened, or labelled, by a user with write access are taken; the
//! rest are listed and ignored, their text never read into anything. An issue
//! becomes a feature as written: its title the description, its list items the
//! steps, a fenced block tagged `verify` its check. One without such a block has
//! no runnable check: it is added blocked, for a person to write one (`baton
//! accept`) and `baton unblock` it. An issue taken before is not taken again.

use baton_forge::{Forge, Issue, PullRequest};
use baton_records::{FeatureList, LedgerEntry, LedgerKind, State};
use serde_json::{Value, json};

use crate::error::HarnessError;
use crate::files::Files;

/// What a pull did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pulled {
    /// Features added (1-based) with the issue each came from.
    pub added: Vec<(usize, u64)>,
    /// Of those, the ones added blocked, for want of a check.
    pub blocked: Vec<usize>,
    /// Issues already in the list, by number.
    pub already: Vec<u64>,
    /// Issues ignored: opened and labelled only by users without write access.
    pub ignored: Vec<(u64, String)>,
    /// Issues ignored because their title or text changed, by a user without
    /// write access, after a writer labelled them: the issue, who changed it,
    /// who labelled it.
    pub changed: Vec<(u64, String, String)>,
}

/// Who may write to the repository, asked of the forge once a user.
pub(crate) struct Writers<'f, F> {
    forge: &'f F,
    known: std::collections::BTreeMap<String, bool>,
}

impl<'f, F: Forge> Writers<'f, F> {
    /// Asking `forge`.
    pub(crate) fn new(forge: &'f F) -> Self {
        Self {
            forge,
            known: std::collections::BTreeMap::new(),
        }
    }

    /// Whether `user` may write (admin, maintain or write).
    pub(crate) async fn may_write(&mut self, user: &str) -> Result<bool, HarnessError> {
        if let Some(&w) = self.known.get(user) {
            return Ok(w);
        }
        let w = self
            .forge
            .can_write(user)
            .await
            .map_err(|e| HarnessError::Input(format!("forge: {e}")))?;
        self.known.insert(user.to_string(), w);
        Ok(w)
    }
}

/// Why an issue without a check is blocked.
pub fn no_check(issue: u64) -> String {
    format!(
        "issue #{issue} gives no runnable check (a fenced block tagged `verify`): write a verify command into the feature (edit the list, `baton accept`), then `baton unblock` it"
    )
}

/// Pull `label`'s open issues from `forge` into `files`' accepted list.
pub async fn pull(files: &Files, forge: &impl Forge, label: &str) -> Result<Pulled, HarnessError> {
    let forge_err = |e: baton_forge::ForgeError| HarnessError::Input(format!("forge: {e}"));
    let list = files.load_accepted()?.ok_or_else(|| {
        HarnessError::Input(format!(
            "{} has no accepted feature list yet: run `baton run` first (it adopts {} or writes one), then pull issues into it",
            files.dir.display(),
            files.names.feature_list
        ))
    })?;
    let taken: Vec<u64> = list
        .features
        .iter()
        .filter_map(|f| f.fields.get("source"))
        .filter(|s| s["forge"] == forge.name())
        .filter_map(|s| s["number"].as_u64())
        .collect();
    let mut out = Pulled::default();
    let mut features = Vec::new();
    let mut writers = Writers::new(forge);
    for issue in forge.open_issues(label).await.map_err(forge_err)? {
        if taken.contains(&issue.number) {
            out.already.push(issue.number);
            continue;
        }
        let mut trusted = writers.may_write(&issue.author).await?;
        let mut undone = None;
        if !trusted {
            let v = forge
                .vouching(issue.number, label)
                .await
                .map_err(forge_err)?;
            for (who, at) in &v.labels {
                if !writers.may_write(who).await? {
                    continue;
                }
                // The label vouches for the text as it was then: a later change
                // by someone who may not write is not vouched for.
                let mut later = None;
                for (by, when) in &v.changes {
                    if when > at && by != who && (by.is_empty() || !writers.may_write(by).await?) {
                        later = Some(by.clone());
                        break;
                    }
                }
                match later {
                    None => {
                        trusted = true;
                        break;
                    }
                    Some(by) => undone = Some((by, who.clone())),
                }
            }
        }
        if !trusted {
            match undone {
                Some((by, who)) => out.changed.push((issue.number, by, who)),
                None => out.ignored.push((issue.number, issue.author.clone())),
            }
            continue;
        }
        features.push(feature_of(&issue, forge.name()));
    }
    let items = features
        .into_iter()
        .map(|(feature, issue, check)| {
            let detail = format!(
                "from issue #{} ({}) by {}",
                issue.number, issue.url, issue.author
            );
            let blocked = (!check).then(|| no_check(issue.number));
            (feature, detail, blocked, issue.number)
        })
        .collect::<Vec<_>>();
    if items.is_empty() {
        return Ok(out);
    }
    let numbers: Vec<String> = items.iter().map(|i| format!("#{}", i.3)).collect();
    let message = format!(
        "baton issues pull: {} issue(s) from {} as features ({})",
        items.len(),
        forge.name(),
        numbers.join(", ")
    );
    let issues: Vec<u64> = items.iter().map(|i| i.3).collect();
    let added = append_features(
        files,
        &list,
        items.into_iter().map(|(f, d, b, _)| (f, d, b)).collect(),
        &message,
    )?;
    for ((n, blocked), issue) in added.into_iter().zip(issues) {
        out.added.push((n, issue));
        if blocked {
            out.blocked.push(n);
        }
    }
    Ok(out)
}

/// Append `items` (a feature, the ledger's words for where it came from, why it
/// is blocked if it is) to the accepted list `list`: saved, committed with
/// `message`, each recorded (`added`), the blocked ones blocked. Returns each
/// one's number (1-based) and whether it was blocked.
pub(crate) fn append_features(
    files: &Files,
    list: &FeatureList,
    items: Vec<(Value, String, Option<String>)>,
    message: &str,
) -> Result<Vec<(usize, bool)>, HarnessError> {
    let mut state = State::load(&files.dir)?;
    let session = state.sessions.iter().map(|s| s.number).max().unwrap_or(0);
    let mut entries = Vec::new();
    let mut added = Vec::new();
    let mut values: Vec<Value> = serde_json::from_str(&list.to_json()).unwrap_or_default();
    for (feature, detail, blocked) in items {
        values.push(feature);
        let n = values.len();
        entries.push(LedgerEntry {
            feature: Some(n),
            ..LedgerEntry::new(session, LedgerKind::Added, detail)
        });
        added.push((n, blocked.is_some()));
        if let Some(why) = blocked {
            state.features.entry(n).or_default().blocked = Some(why);
        }
    }
    let text = serde_json::to_string_pretty(&values).unwrap_or_default() + "\n";
    let list = FeatureList::parse(&text, &files.names.feature_list).map_err(|source| {
        HarnessError::FeatureList {
            what: "the forge's work did not make a valid feature list".into(),
            source,
        }
    })?;
    files.save_accepted(&list)?;
    state.save(&files.dir)?;
    files.commit_list(&list, message, entries)?;
    Ok(added)
}

/// What `publish` did: the pull request, whether it was opened now (else its
/// body was brought up to date), and the features (1-based) in its proof table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The pull request.
    pub pr: PullRequest,
    /// Opened now; else updated.
    pub opened: bool,
    /// The features it carries.
    pub features: Vec<usize>,
}

/// How feature `n` (1-based) was proven, for people, and the commit of its flip
/// (10 characters), from the last flip on record with a proof.
pub(crate) fn proof_of(ledger: &baton_records::ledger::Ledger, n: usize) -> (String, String) {
    let flip = ledger
        .entries
        .iter()
        .rev()
        .find(|e| e.kind == LedgerKind::Flip && e.feature == Some(n) && e.proof.is_some());
    let proof = flip.and_then(|e| e.proof.as_ref()).map_or_else(
        || "no proof on record".to_string(),
        baton_records::Proof::describe,
    );
    let commit = flip
        .and_then(|e| e.commit.as_deref())
        .map_or_else(String::new, |c| c.chars().take(10).collect());
    (proof, commit)
}

/// The marker that opens the body of baton's pull request.
pub const PR_MARKER: &str = "<!-- baton: proof of this batch -->";

/// Push the project's `HEAD` to `branch` of `remote` (baton's own branch, never
/// forced) and open the pull request of `branch`, or bring its body up to date
/// when it is open already (one pull request per branch, however often this
/// runs). Its body is the proof table of the passing features that came from
/// the forge's issues, and closes those issues. `None` when none passes yet.
pub async fn publish(
    files: &Files,
    forge: &impl Forge,
    remote: &str,
    branch: &str,
) -> Result<Option<Published>, HarnessError> {
    let forge_err = |e: baton_forge::ForgeError| HarnessError::Input(format!("forge: {e}"));
    let Some(list) = files.load_accepted()? else {
        return Ok(None);
    };
    let ledger = baton_records::ledger::read(&files.ledger())?;
    let mut rows = Vec::new();
    for (i, f) in list.features.iter().enumerate() {
        let Some(src) = f
            .fields
            .get("source")
            .filter(|s| s["forge"] == forge.name())
        else {
            continue;
        };
        if !f.passes {
            continue;
        }
        let (proof, commit) = proof_of(&ledger, i + 1);
        let issue = src["number"].as_u64().unwrap_or_default();
        rows.push((i + 1, f.description.clone(), issue, proof, commit));
    }
    if rows.is_empty() {
        return Ok(None);
    }
    // Never a CI or deployment definition (crate::push): a person publishes
    // those, and baton's pull request waits for them.
    let tip = crate::git::rev(&files.dir, "HEAD")?;
    let there = crate::git::rev(&files.dir, &format!("refs/remotes/{remote}/{branch}")).ok();
    if let (_, Some(why)) = crate::push::publishable(&files.dir, &tip, there.as_deref(), remote)? {
        return Err(HarnessError::Input(format!(
            "forge: nothing was published to {branch}: {why}"
        )));
    }
    crate::git::git_network(
        &files.dir,
        &["push", "-q", remote, &format!("HEAD:refs/heads/{branch}")],
    )?;
    let base = forge.default_branch().await.map_err(forge_err)?;
    let mut body = format!(
        "{PR_MARKER}\nBuilt by baton: each feature below was proven before it was pushed.\n\n| feature | issue | proven by | commit |\n|---|---|---|---|\n"
    );
    for (n, description, issue, proof, commit) in &rows {
        let cell = |t: &str| t.replace('|', "\\|").replace('\n', " ");
        body.push_str(&format!(
            "| #{n} {} | #{issue} | {} | {commit} |\n",
            cell(description),
            cell(proof)
        ));
    }
    body.push('\n');
    for (_, _, issue, _, _) in &rows {
        body.push_str(&format!("Closes #{issue}\n"));
    }
    let features = rows.iter().map(|r| r.0).collect();
    let (pr, opened) = match forge.pull_request_of(branch).await.map_err(forge_err)? {
        Some(pr) => {
            forge
                .update_pull_request(pr.number, &body)
                .await
                .map_err(forge_err)?;
            (pr, false)
        }
        None => {
            let title = format!("baton: {} feature(s) from issues, proven", rows.len());
            let pr = forge
                .open_pull_request(branch, &base, &title, &body)
                .await
                .map_err(forge_err)?;
            (pr, true)
        }
    };
    // The watch goes on from here: a new head waits for its checks again.
    let head = crate::git::rev(&files.dir, "HEAD")?;
    let mut record = baton_records::forge::ForgeRecord::load(&files.dir);
    let same = record
        .pull
        .as_ref()
        .is_some_and(|p| p.number == pr.number && p.head == head);
    if !same {
        record.pull = Some(baton_records::forge::PullRecord {
            number: pr.number,
            url: pr.url.clone(),
            branch: branch.to_string(),
            head,
            pushed_ms: baton_agent::transcript::now_ms(),
            ..Default::default()
        });
        record.save(&files.dir)?;
    }
    Ok(Some(Published {
        pr,
        opened,
        features,
    }))
}

/// The feature an issue asks for, the issue, and whether it has a check.
fn feature_of(issue: &Issue, forge: &str) -> (Value, Issue, bool) {
    let (steps, verify) = read_body(&issue.body);
    let steps = if steps.is_empty() {
        vec![issue.title.clone()]
    } else {
        steps
    };
    let mut f = json!({
        "category": "issue",
        "description": format!("{} (issue #{})", issue.title.trim(), issue.number),
        "steps": steps,
        "passes": false,
        "source": {"forge": forge, "number": issue.number, "url": issue.url, "author": issue.author},
    });
    let check = verify.is_some();
    if let Some(v) = verify {
        f["verify"] = Value::String(v);
    }
    (f, issue.clone(), check)
}

/// An issue's steps (its list items, outside code blocks) and its check (the
/// first fenced block tagged `verify`).
fn read_body(body: &str) -> (Vec<String>, Option<String>) {
    let mut steps = Vec::new();
    let mut verify: Option<String> = None;
    let mut fence: Option<(String, bool)> = None; // (marker, is a verify block)
    let mut block = Vec::new();
    for line in body.lines() {
        let t = line.trim();
        if let Some((marker, is_verify)) = &fence {
            if t.starts_with(marker.as_str()) {
                if *is_verify && verify.is_none() {
                    let cmd = block.join("\n").trim().to_string();
                    if !cmd.is_empty() {
                        verify = Some(cmd);
                    }
                }
                fence = None;
                block.clear();
            } else {
                block.push(line.to_string());
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            let marker = t[..3].to_string();
            let info = t[3..].trim();
            fence = Some((marker, info == "verify"));
            continue;
        }
        let item = t
            .strip_prefix("- [ ] ")
            .or_else(|| t.strip_prefix("- [x] "))
            .or_else(|| t.strip_prefix("- "))
            .or_else(|| t.strip_prefix("* "))
            .or_else(|| {
                let (n, rest) = t.split_once(". ")?;
                n.chars().all(|c| c.is_ascii_digit()).then_some(rest)
            });
        if let Some(item) = item.map(str::trim).filter(|i| !i.is_empty()) {
            steps.push(item.to_string());
        }
    }
    (steps, verify)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_issue_body_gives_steps_and_a_check() {
        let body = "Users want to clear done todos.\n\n## Steps\n- [ ] Add two todos\n- [ ] Mark one done\n1. Click *Clear completed*\n* See one left\n\n```verify\ncurl -fsS http://127.0.0.1:3000/api/todos | grep -q one\n```\n\n```\n- not a step\n```\n";
        let (steps, verify) = read_body(body);
        assert_eq!(
            steps,
            [
                "Add two todos",
                "Mark one done",
                "Click *Clear completed*",
                "See one left"
            ]
        );
        assert_eq!(
            verify.as_deref(),
            Some("curl -fsS http://127.0.0.1:3000/api/todos | grep -q one")
        );
        let (steps, verify) = read_body("Just words.");
        assert!(steps.is_empty() && verify.is_none());
    }
}
