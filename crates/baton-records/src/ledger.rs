//! `.baton/ledger.jsonl`: one JSON line per change baton accepted or undid in the
//! feature list, with the session, the feature and the commit that holds it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{RecordsError, io, read_optional};

/// One line of `.baton/ledger.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// When, Unix ms.
    #[serde(default)]
    pub t_ms: u64,
    /// The session after which it happened.
    #[serde(default)]
    pub session: u32,
    /// What happened.
    pub kind: LedgerKind,
    /// The feature (1-based), where it concerns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature: Option<usize>,
    /// The feature's description, or what happened.
    #[serde(default)]
    pub detail: String,
    /// The commit that holds it, where there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Evidence files of the session (relative to the project), for flips.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// How a flip was proven (a `flip` entry), where baton recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
}

/// How baton knows a flipped feature works: the proof it accepted the flip on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Proof {
    /// The feature's `verify` command passes now and failed on the session's base
    /// commit, before the work.
    Check {
        /// The command.
        command: String,
        /// Who wrote the check: `the initializer`, `the planner (session 5)`, `a
        /// person (baton accept)`, `the verifier (session 7)`. Empty in records
        /// made before baton kept it.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        author: String,
        /// The commit its "before" was replayed against (in a clean checkout),
        /// and which commit that was. `None` in records made before baton kept it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reference: Option<Reference>,
    },
    /// The independent verifier passed it, citing what it ran in its own session.
    Verifier {
        /// The verifier's session.
        session: u32,
        /// What it did and saw, in its words.
        reason: String,
        /// The tools it called on this feature, with how often (`Bash ×3`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<String>,
        /// Its evidence files for the feature (screenshots), relative to the project.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        evidence: Vec<String>,
        /// The calls it cited as showing the feature works, each as it ran them
        /// with its outcome (`./todo add milk (exit 0)`); baton matched each to a
        /// call of its own session on this feature.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        cited: Vec<String>,
        /// The check it left, which baton ran itself: it failed before the work
        /// (at `reference`) and passes with the work, each in a clean checkout.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        check: Option<String>,
        /// The commit its check's "before" was replayed against.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reference: Option<Reference>,
    },
    /// Its check, written by nobody who gains from the flip, already passed
    /// where the feature entered the list, in a clean checkout of that commit,
    /// before any session worked on it (an adopted repository's working
    /// features, a planner's feature the code already does).
    Accepted {
        /// The command.
        command: String,
        /// Who wrote the check.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        author: String,
        /// Where the feature entered the list, and the check passed.
        commit: String,
    },
    /// Taken on the agent's word: `[verify] trust_agent = true`.
    Trusted,
}

/// The commit a check's "before" was replayed against, and what it was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// The commit.
    pub commit: String,
    /// What it was: `the session's base`, `the base of session 4`, `where it
    /// entered the list`.
    pub what: String,
}

impl Reference {
    /// `abc1234 (the session's base)`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({})",
            &self.commit[..self.commit.len().min(7)],
            self.what
        )
    }
}

/// `; replayed against abc1234 (…)` for a known reference, nothing otherwise.
fn at(reference: &Option<Reference>) -> String {
    reference
        .as_ref()
        .map(|r| format!("; replayed against {}", r.describe()))
        .unwrap_or_default()
}

impl Proof {
    /// The commit its "before" was replayed against, where it has one.
    pub fn reference(&self) -> Option<&Reference> {
        match self {
            Self::Check { reference, .. } | Self::Verifier { reference, .. } => reference.as_ref(),
            Self::Accepted { .. } | Self::Trusted => None,
        }
    }

    /// How it was proven, in a few words for people.
    pub fn describe(&self) -> String {
        match self {
            Self::Check {
                command,
                author,
                reference,
            } if author.is_empty() => {
                format!(
                    "verify command `{command}` (failed before, passes now{})",
                    at(reference)
                )
            }
            Self::Check {
                command,
                author,
                reference,
            } => {
                format!(
                    "verify command `{command}` by {author} (failed before, passes now{})",
                    at(reference)
                )
            }
            Self::Verifier {
                session,
                tools,
                evidence,
                cited,
                check,
                reference,
                ..
            } => {
                let mut s = format!("verifier session {session:04}");
                if !tools.is_empty() {
                    s.push_str(&format!(" ran {}", tools.join(", ")));
                }
                if !cited.is_empty() {
                    let shown: Vec<String> = cited.iter().map(|c| format!("`{c}`")).collect();
                    s.push_str(&format!(" · cited {}", shown.join(", ")));
                }
                if let Some(c) = check {
                    s.push_str(&format!(
                        " · its check `{c}` failed before, passes now{}",
                        at(reference)
                    ));
                }
                if !evidence.is_empty() {
                    s.push_str(&format!(" · {} screenshot(s)", evidence.len()));
                }
                s
            }
            Self::Accepted {
                command,
                author,
                commit,
            } => format!(
                "verify command `{command}`{} passed when it was accepted (at {}, where it entered the list, before any session worked on it)",
                if author.is_empty() {
                    String::new()
                } else {
                    format!(" by {author}")
                },
                &commit[..commit.len().min(7)]
            ),
            Self::Trusted => "the agent's word ([verify] trust_agent)".to_string(),
        }
    }

    /// One word for the kind of proof: `check`, `verifier`, `screenshot` (a
    /// verifier's pass with screenshots), `accepted` (passed when it entered
    /// the list) or `trusted`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Check { .. } => "check",
            Self::Verifier { evidence, .. } if !evidence.is_empty() => "screenshot",
            Self::Verifier { .. } => "verifier",
            Self::Accepted { .. } => "accepted",
            Self::Trusted => "trusted",
        }
    }
}

impl LedgerEntry {
    /// An entry of `kind` after `session`, at the current time, with nothing else.
    pub fn new(session: u32, kind: LedgerKind, detail: impl Into<String>) -> Self {
        let t_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        Self {
            t_ms,
            session,
            kind,
            feature: None,
            detail: detail.into(),
            commit: None,
            evidence: Vec::new(),
            proof: None,
        }
    }
}

/// What a line of `.baton/ledger.jsonl` records (its `kind`, in snake case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LedgerKind {
    /// A feature list was accepted: the initializer's, or one adopted as it was.
    Accepted,
    /// A feature newly passes, as the session's gates accepted it.
    Flip,
    /// A feature that passed no longer does (the session set it back).
    Unflip,
    /// A flip whose `verify` command failed, reverted.
    VerifyFailed,
    /// A flip the independent verifier rejected, reverted.
    VerifierRejected,
    /// A verifier's pass refused only for its check (none left, one that cannot
    /// stand alone, one that proves nothing when baton replays it): the verifier
    /// was asked again, in the same stage, for a check that stands.
    CheckRefused,
    /// A change to the feature list beyond `passes`, undone.
    Violation,
    /// A change to git's config, hooks or info, or to `baton.toml`, undone.
    BoundaryViolation,
    /// A passing feature the regression sweep found broken, set back.
    Regression,
    /// A feature set aside after `[run] feature_attempts` sessions without passing.
    Deferred,
    /// A feature the agent declared blocked, with its reason.
    Blocked,
    /// A blocked feature handed out again (`baton unblock`).
    Unblocked,
    /// In a parallel run: a flip whose branch could not go into the main branch (its
    /// files conflicted, or a check failed on the merged tree); the feature goes back
    /// to the queue and the branch is kept.
    Requeued,
    /// The specification written by the planner from a person's idea.
    Planned,
    /// A feature appended to the list: by the planner for a request (`baton
    /// plan`), or by a person (`baton accept`).
    Added,
    /// A person's change to an existing feature, accepted with `baton accept`.
    Amended,
    /// An existing repository made a baton project (`baton new --adopt`).
    Adopted,
    /// A flip nothing proved (no verify command that failed before the work, no
    /// verifier pass), reverted.
    UnverifiedFlip,
    /// A flip whose verify command already passed on the session's base commit:
    /// it proves nothing, so it was not counted.
    VacuousCheck,
    /// A person's guidance (`baton tell`) carried by the session's brief.
    Told,
    /// A verify command written into the list after it was accepted: by a coding
    /// session (a regression check, never proof) or kept from the verifier (its
    /// replayed check). `detail` holds the command, `proof`-less; `author` says who.
    CheckAdded,
    /// A flip whose check the session could have shaped: it changed what the check
    /// runs or reads (a test file, its config, a path the command names), so the
    /// check proved nothing for it.
    CheckTouched,
    /// A verify command baton cannot run here (the policy refuses it): it never
    /// proves or fails a flip, and the sweep leaves it out.
    CheckUnrunnable,
    /// baton pushed the run's branch to the remote `[git] push` names (`commit`:
    /// what it pushed; `detail`: remote and branch).
    Pushed,
    /// The remote refused baton's push (it never forces): `detail` says why.
    PushRefused,
}

/// The ledger as read: its entries in order, and how many lines could not be read
/// (a line cut by a crash, or written by a newer baton).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ledger {
    /// Entries, in order.
    pub entries: Vec<LedgerEntry>,
    /// Lines that were not a ledger entry.
    pub unreadable: usize,
}

/// Append one entry to the ledger at `path` (one `write` of one line, so entries
/// never interleave).
pub fn append(path: &Path, entry: &LedgerEntry) -> Result<(), RecordsError> {
    let mut line = serde_json::to_string(entry).map_err(|e| RecordsError::Parse {
        path: path.to_path_buf(),
        what: "ledger",
        message: e.to_string(),
    })?;
    line.push('\n');
    let (root, rel) = crate::layout::split(path);
    crate::beneath::Beneath::new(root)
        .append(&rel, line.as_bytes())
        .map_err(io(path))
}

/// Read the ledger at `path`; a missing file is an empty ledger.
pub fn read(path: &Path) -> Result<Ledger, RecordsError> {
    let mut ledger = Ledger::default();
    if let Some(text) = read_optional(path)? {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<LedgerEntry>(line) {
                Ok(e) => ledger.entries.push(e),
                Err(_) => ledger.unreadable += 1,
            }
        }
    }
    Ok(ledger)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ledger_kinds_are_written_as_the_documented_names() {
        let kinds = [
            (LedgerKind::Accepted, "accepted"),
            (LedgerKind::Flip, "flip"),
            (LedgerKind::Unflip, "unflip"),
            (LedgerKind::VerifyFailed, "verify_failed"),
            (LedgerKind::VerifierRejected, "verifier_rejected"),
            (LedgerKind::CheckRefused, "check_refused"),
            (LedgerKind::Violation, "violation"),
            (LedgerKind::BoundaryViolation, "boundary_violation"),
            (LedgerKind::Regression, "regression"),
            (LedgerKind::Deferred, "deferred"),
            (LedgerKind::Blocked, "blocked"),
            (LedgerKind::Unblocked, "unblocked"),
            (LedgerKind::Requeued, "requeued"),
            (LedgerKind::Planned, "planned"),
            (LedgerKind::Added, "added"),
            (LedgerKind::Amended, "amended"),
            (LedgerKind::Adopted, "adopted"),
            (LedgerKind::UnverifiedFlip, "unverified_flip"),
            (LedgerKind::VacuousCheck, "vacuous_check"),
            (LedgerKind::Told, "told"),
            (LedgerKind::CheckAdded, "check_added"),
            (LedgerKind::CheckTouched, "check_touched"),
            (LedgerKind::CheckUnrunnable, "check_unrunnable"),
            (LedgerKind::Pushed, "pushed"),
            (LedgerKind::PushRefused, "push_refused"),
        ];
        let doc = include_str!("../../../docs/harness.md");
        for (k, name) in kinds {
            assert_eq!(serde_json::to_value(k).unwrap(), name);
            assert!(
                doc.contains(&format!("`{name}`")),
                "{name} is not in docs/harness.md"
            );
            let line = format!(r#"{{"t_ms":1,"session":2,"kind":"{name}","detail":"d"}}"#);
            let e: LedgerEntry = serde_json::from_str(&line).unwrap();
            assert_eq!(e.kind, k);
        }
    }

    #[test]
    fn appended_entries_read_back_and_a_cut_line_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".baton/ledger.jsonl");
        assert_eq!(read(&path).unwrap(), Ledger::default());
        let e = LedgerEntry {
            t_ms: 1,
            session: 2,
            kind: LedgerKind::Flip,
            feature: Some(3),
            detail: "d".into(),
            commit: Some("abc".into()),
            evidence: vec![],
            proof: Some(Proof::Check {
                command: "true".into(),
                author: "the initializer".into(),
                reference: None,
            }),
        };
        append(&path, &e).unwrap();
        append(&path, &e).unwrap();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"t_ms\":2,\"ses");
        std::fs::write(&path, text).unwrap();
        let l = read(&path).unwrap();
        assert_eq!(l.entries, vec![e.clone(), e]);
        assert_eq!(l.unreadable, 1);
    }
}
