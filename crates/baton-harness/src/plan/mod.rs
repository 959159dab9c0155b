//! The planner: a session that writes the specification from a person's idea
//! (`baton new --idea`), or appends features to a project's list for a new request
//! (`baton plan`, and the list-append sessions of a run whose initializer wrote
//! fewer features than asked), checked and recorded like every other change to the
//! list. This file runs the session and puts the project back when its work is
//! not accepted; `plan/check.rs` holds what its work is checked against. A
//! person's own edit of the list (`baton accept`) is [`crate::edit`].

mod check;

use baton_agent::transcript::now_ms;
use baton_records::{
    FeatureList, InProgress, LedgerEntry, LedgerKind, SessionKind, SessionOutcome, SessionRecord,
    State,
};

use crate::error::{HarnessError, io};
use crate::git;
use crate::guard::GateStack;
use crate::prompts;
use crate::runner::Runner;
use crate::session::Agent;
use crate::summary::{Summary, summarize};

/// What to plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Expand the idea that is the project's spec into a full specification.
    Spec,
    /// Append features for this request (and the request to the spec).
    More(String),
    /// The initializer's list is shorter than `[project] features`: append the
    /// rest of the spec, or say the list covers it (a list-append session).
    Rest,
}

/// What a planner session did.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The session's number.
    pub number: u32,
    /// The features appended (1-based), for [`Plan::More`].
    pub added: Vec<usize>,
    /// Lines of the specification after it.
    pub spec_lines: usize,
    /// The commit that holds the result.
    pub commit: Option<String>,
    /// A list-append session ([`Plan::Rest`]) said the list covers the spec.
    pub covered: bool,
}

/// The fewest non-empty lines a specification written from an idea may have.
pub const MIN_SPEC_LINES: usize = 20;

impl Runner<'_> {
    /// Run one planner session and check what it wrote: a specification of at least
    /// [`MIN_SPEC_LINES`] lines ([`Plan::Spec`]), or at least one new failing feature
    /// after the existing ones, which stay as they were ([`Plan::More`]; an existing
    /// entry it changed is restored and recorded). The result is committed and
    /// recorded in the ledger; an unusable result is an error that says why, with
    /// the list as it was.
    pub async fn plan(&self, plan: &Plan) -> Result<Planned, HarnessError> {
        // git's config, hooks and info and baton.toml, guarded as in a run: what
        // the planner changes of them is put back before baton's git runs again.
        let snap = self.guard_start()?;
        let planned = self.plan_with(plan, &snap).await;
        // Done, nothing unfinished: the saved snapshot has done its job.
        let _ = std::fs::remove_file(crate::boundary::saved_path(&self.files.dir));
        planned
    }

    /// [`Runner::plan`] within a run or a plan that guards the boundary with `snap`.
    /// The planner session on the record, and said: its commits, outcome and
    /// the violations its checks found.
    fn record_planner(
        &self,
        state: &mut State,
        mut record: SessionRecord,
        head_before: Option<&str>,
    ) -> Result<(), HarnessError> {
        let dir = &self.files.dir;
        let number = record.number;
        record.commits = git::commits_since(dir, head_before);
        state.in_progress = None;
        state.sessions.push(record.clone());
        state.save(dir)?;
        let list = self.files.load_accepted()?;
        let (passing, total) = list
            .as_ref()
            .map_or((0, 0), |l| (l.passing(), l.features.len()));
        self.reporter.session_end(&record, passing, total);
        self.reporter.line(&format!(
            "session {number:04} planner · {} · {} · {} tokens · {}",
            record.outcome,
            baton_records::human::plural(u64::from(record.turns), "turn"),
            record.usage.total(),
            baton_records::human::cost(record.cost_usd, record.usage.total())
        ));
        for v in &record.gates.violations {
            self.reporter.line(&format!("  gate: {v}"));
        }
        Ok(())
    }

    /// What the planner is asked for `plan`, checked against the project: `None`
    /// for a spec from an idea (no list may exist yet); the rest of the spec; or
    /// a person's request, written into the spec in baton's words so that it is
    /// on record whatever the session does (committed only with the features it
    /// produces).
    fn request(
        &self,
        plan: &Plan,
        accepted: Option<&FeatureList>,
    ) -> Result<Option<String>, HarnessError> {
        let dir = &self.files.dir;
        let names = &self.files.names;
        Ok(match plan {
            Plan::Spec => {
                if accepted.is_some() || self.files.feature_list().exists() {
                    return Err(HarnessError::Input(format!(
                        "{} already has a feature list: add to it with `baton plan DIR --idea TEXT` (or --spec FILE)",
                        dir.display()
                    )));
                }
                None
            }
            Plan::Rest => {
                let Some(list) = accepted else {
                    return Err(HarnessError::Input(format!(
                        "{} has no accepted feature list to continue",
                        dir.display()
                    )));
                };
                Some(format!(
                    "the rest of {} ({} of the {} features asked were listed)",
                    names.spec,
                    list.features.len(),
                    names.features
                ))
            }
            Plan::More(request) => {
                let Some(list) = accepted else {
                    return Err(HarnessError::Input(format!(
                        "{} has no accepted feature list yet: `baton run` first (its initializer writes the list from {}), or edit {} before that",
                        dir.display(),
                        names.spec,
                        names.spec
                    )));
                };
                if request.trim().is_empty() {
                    return Err(HarnessError::Input(
                        "the request is empty; say what to add".into(),
                    ));
                }
                // The list on disk must be the accepted one: a person's edit goes
                // through `baton accept` first, so nothing of theirs is lost here.
                let text = self.files.read_list()?.unwrap_or_default();
                if FeatureList::parse(&text, &names.feature_list).ok().as_ref() != Some(list) {
                    return Err(HarnessError::Input(format!(
                        "{} differs from the accepted list: `baton accept {}` first (or undo the edit)",
                        names.feature_list,
                        dir.display()
                    )));
                }
                // The request goes into the spec first, in baton's words, so it is
                // on record whatever the session does.
                let mut spec = self.files.read_text(&names.spec);
                if !spec.is_empty() && !spec.ends_with('\n') {
                    spec.push('\n');
                }
                spec.push_str(&format!("\n## Added {}\n\n{}\n", today(), request.trim()));
                // Committed only with the features it produced (a failed plan
                // leaves the spec as it was).
                self.files.write_text(&names.spec, &spec)?;
                Some(request.trim().to_string())
            }
        })
    }

    pub(crate) async fn plan_with(
        &self,
        plan: &Plan,
        snap: &crate::boundary::Snapshot,
    ) -> Result<Planned, HarnessError> {
        let dir = &self.files.dir;
        let names = &self.files.names;
        let mut state = State::load(dir)?;
        if let Some(ip) = state.in_progress.clone() {
            if ip.kind != SessionKind::Planner {
                return Err(HarnessError::Input(format!(
                    "session {:04} ({}) did not finish; `baton run` first, which runs its gates",
                    ip.number,
                    ip.kind.name()
                )));
            }
            self.settle_stopped_planner(&mut state, &ip)?;
        }
        let accepted = self.files.load_accepted()?;
        let accepted_before = accepted.clone();
        let request_before = self.files.read_text(&names.spec);
        let request = self.request(plan, accepted.as_ref())?;
        let head_before = git::head(dir);
        let spec_before = self.files.read_text(&names.spec);
        let mut transcript = self.new_transcript(None)?;
        let number = transcript.number();
        let started_ms = now_ms();
        // On record while it runs: a planner stopped mid-way is settled next time.
        let mut running = state.clone();
        running.in_progress = Some(InProgress {
            number,
            kind: SessionKind::Planner,
            started_ms,
            head_before: head_before.clone(),
            notes_before: String::new(),
            sweep: None,
            target: None,
            base_check: None,
            timing: baton_records::Timing::default(),
        });
        running.save(dir)?;
        self.reporter
            .line(&format!("── session {number:04} · planner ──"));
        self.reporter.session_start(number, SessionKind::Planner);
        let prompt = match plan {
            Plan::Rest => prompts::planner_rest(
                names,
                accepted.as_ref().map_or(0, |l| l.features.len()),
                self.setting(),
            ),
            Plan::Spec | Plan::More(_) => {
                prompts::planner(names, request.as_deref(), self.setting())
            }
        };
        let result = self
            .run_agent(
                Agent {
                    tools: &self.tools,
                    gate: GateStack {
                        policy: self.policy,
                        allow_file_urls: self.cfg.policy.allow_file_urls,
                        feature_list: None,
                        read_only: false,
                    },
                    client: None,
                    model: None,
                    limits: self.limits(
                        self.cfg.agent.max_turns,
                        None,
                        // A list-append session appends features, as one
                        // asked for more does.
                        match plan {
                            Plan::Spec => prompts::Handoff::PlannerSpec,
                            Plan::More(_) | Plan::Rest => prompts::Handoff::PlannerMore,
                        },
                    ),
                },
                &mut transcript,
                &prompts::system(dir, names, self.setting()),
                &prompt,
            )
            .await;
        let error = result.err();
        let undone = snap.restore()?;
        for u in &undone {
            self.reporter
                .line(&format!("  boundary: {u}; restored from baton's snapshot"));
            self.files.append_ledger(&LedgerEntry::new(
                number,
                LedgerKind::BoundaryViolation,
                format!("{u}; restored from baton's snapshot"),
            ))?;
        }
        let summary = summarize(dir, number);
        let outcome = summary.outcome_after(error.as_ref());
        let mut record = planner_record(number, started_ms, outcome, &summary);
        record.gates.boundary = undone;
        let covered = matches!(plan, Plan::Rest)
            && summary
                .final_text
                .lines()
                .any(|l| l.trim() == prompts::SPEC_COVERED);
        let checked = match &request {
            None => self.check_spec(number, &spec_before, head_before.as_deref(), &mut record),
            Some(r) => self.check_more(number, r, accepted.unwrap_or_default(), &mut record),
        };
        // "Nothing to add" is an answer for a list-append session that says so.
        let checked = match checked {
            Err(_) if covered && self.list_unchanged(accepted_before.as_ref()) => Ok(Planned {
                number,
                added: Vec::new(),
                spec_lines: spec_before.lines().count(),
                commit: None,
                covered,
            }),
            other => other.map(|p| Planned { covered, ..p }),
        };
        // A failed plan changes nothing: what the planner wrote is set aside and
        // the tree is put back as it was before the request.
        let checked = match checked {
            Err(e) => match self.undo_planner(number, head_before.as_deref(), &request_before) {
                Ok(kept) => Err(HarnessError::Planner(format!(
                    "{e}{}",
                    kept.map(|k| format!("; what the planner wrote is kept in {k}"))
                        .unwrap_or_default()
                ))),
                Err(undo) => Err(HarnessError::Planner(format!(
                    "{e}; and putting the project back failed: {undo}"
                ))),
            },
            ok => ok,
        };
        self.record_planner(&mut state, record, head_before.as_deref())?;
        match (checked, error) {
            (Ok(p), _) => Ok(p),
            (Err(e), Some(agent)) => {
                Err(HarnessError::Planner(format!("{e} (the session: {agent})")))
            }
            (Err(e), None) => Err(e),
        }
    }

    /// Whether the feature list on disk is still `accepted` (a list-append session
    /// that says the spec is covered wrote nothing).
    fn list_unchanged(&self, accepted: Option<&FeatureList>) -> bool {
        let text = self.files.read_text(&self.files.names.feature_list);
        FeatureList::parse(&text, &self.files.names.feature_list)
            .ok()
            .as_ref()
            == accepted
    }

    /// After a failed planner session: every file that differs from the commit
    /// `head_before` (changed, committed since, or new) is kept in
    /// `.baton/replaced/planner-NNNN/` and put back as it was there (a new one
    /// removed), the spec included (`spec_before`: before the request), and that
    /// is committed when the planner committed anything. History is never
    /// rewritten. Returns where the planner's files are kept, if it left any.
    pub(crate) fn undo_planner(
        &self,
        number: u32,
        head_before: Option<&str>,
        spec_before: &str,
    ) -> Result<Option<String>, HarnessError> {
        let dir = &self.files.dir;
        let mut paths: Vec<String> = Vec::new();
        if let Some(h) = head_before {
            let out = git::git(dir, &["diff", "--name-only", "--no-renames", "-z", h, "--"])?;
            paths.extend(out.split('\0').filter(|p| !p.is_empty()).map(String::from));
        }
        for d in git::dirty(dir)? {
            if !paths.contains(&d.path) {
                paths.push(d.path);
            }
        }
        let records = format!("{}/", baton_records::layout::DIR);
        paths.retain(|p| !p.starts_with(&records));
        let spec = self.files.names.spec.clone();
        if paths.is_empty() {
            return Ok(None);
        }
        let rel = format!("{}/planner-{number:04}", baton_records::layout::REPLACED);
        let kept = dir.join(&rel);
        for p in &paths {
            let from = dir.join(p);
            if std::fs::symlink_metadata(&from).is_ok_and(|m| m.is_file()) {
                let to = kept.join(p);
                if let Some(parent) = to.parent() {
                    std::fs::create_dir_all(parent).map_err(io(parent))?;
                }
                std::fs::copy(&from, &to).map_err(io(&to))?;
            }
        }
        for p in &paths {
            let existed = head_before
                .is_some_and(|h| git::git(dir, &["cat-file", "-e", &format!("{h}:{p}")]).is_ok());
            match head_before {
                Some(h) if existed => {
                    git::git(dir, &["checkout", h, "--", p])?;
                }
                _ if *p == spec => {
                    // Beneath the project: a link the planner left there is
                    // replaced, never written through.
                    self.files.write_text(p, spec_before)?;
                }
                _ => {
                    let at = dir.join(p);
                    let _ = git::git(dir, &["rm", "-q", "--cached", "--ignore-unmatch", "--", p]);
                    if at.exists() {
                        std::fs::remove_file(&at).map_err(io(&at))?;
                    }
                }
            }
        }
        if git::head(dir).as_deref() != head_before {
            git::commit(
                dir,
                &format!(
                    "baton plan: put back what planner session {number:04} changed\n\nIts result was not accepted; what it wrote is kept in {rel}/."
                ),
                &[],
                &[],
            )?;
        }
        Ok(Some(rel))
    }

    /// A planner session that was stopped mid-way (killed, or the machine went
    /// down): recorded from its transcript, and a feature list it left half-written
    /// set aside in `.baton/replaced/` and put back to the accepted one (its spec
    /// is left as it is, for the next planner or a person).
    pub(crate) fn settle_stopped_planner(
        &self,
        state: &mut State,
        ip: &InProgress,
    ) -> Result<(), HarnessError> {
        let dir = &self.files.dir;
        let names = &self.files.names;
        let summary = summarize(dir, ip.number);
        let mut record = planner_record(ip.number, ip.started_ms, SessionOutcome::Killed, &summary);
        if let Some(accepted) = self.files.load_accepted()? {
            let text = self.files.read_text(&names.feature_list);
            if FeatureList::parse(&text, &names.feature_list).ok().as_ref() != Some(&accepted) {
                let kept = dir
                    .join(baton_records::layout::REPLACED)
                    .join(format!("{}.planner-{:04}", names.feature_list, ip.number));
                baton_records::write_atomic(&kept, &text)?;
                self.files
                    .write_text(&names.feature_list, &accepted.to_json())?;
                record.gates.violations.push(format!(
                    "the planner was stopped mid-way; the list it left is kept as {} and the accepted one is back",
                    self.files.rel(&kept)
                ));
            }
        }
        record.commits = git::commits_since(dir, ip.head_before.as_deref());
        self.reporter.line(&format!(
            "planner session {:04} was stopped before it finished; recorded",
            ip.number
        ));
        state.in_progress = None;
        state.sessions.push(record);
        state.save(dir)?;
        Ok(())
    }
}

/// A planner session's record, from its transcript's summary.
fn planner_record(
    number: u32,
    started_ms: u64,
    outcome: SessionOutcome,
    s: &Summary,
) -> SessionRecord {
    let mut record = SessionRecord::new(number, SessionKind::Planner, outcome);
    record.started_ms = started_ms;
    record.ended_ms = now_ms();
    record.turns = s.turns;
    record.usage = s.usage;
    record.cost_usd = s.cost;
    record.waited_ms = s.waited_ms;
    record
}

/// The first non-empty line of `text`, cut for a commit message or ledger line.
fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    crate::queue::cut(line.trim(), 101)
}

/// Today's date (UTC), `YYYY-MM-DD`.
fn today() -> String {
    chrono::Utc::now().format("%Y-%m-%d").to_string()
}
