//! The planner: a session that writes the specification from a person's idea
//! (`baton new --idea`), or appends features to a project's list for a new request
//! (`baton plan`), checked and recorded like every other change to the list; and
//! `baton accept`, which takes a person's own edit of the list the same way.

use baton_agent::transcript::{Transcript, now_ms};
use baton_records::{
    Feature, FeatureList, InProgress, LedgerEntry, LedgerKind, SessionKind, SessionOutcome,
    SessionRecord, State,
};

use crate::error::{HarnessError, io};
use crate::git;
use crate::guard::GateStack;
use crate::prompts;
use crate::run::Runner;
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
            "session {number:04} planner · {} · {} · {} tokens · ${:.4}",
            record.outcome,
            baton_records::human::plural(u64::from(record.turns), "turn"),
            record.usage.total(),
            record.cost_usd
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
        let spec_path = dir.join(&names.spec);
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
                let text = std::fs::read_to_string(self.files.feature_list())
                    .map_err(io(self.files.feature_list()))?;
                if FeatureList::parse(&text, &names.feature_list).ok().as_ref() != Some(list) {
                    return Err(HarnessError::Input(format!(
                        "{} differs from the accepted list: `baton accept {}` first (or undo the edit)",
                        names.feature_list,
                        dir.display()
                    )));
                }
                // The request goes into the spec first, in baton's words, so it is
                // on record whatever the session does.
                let mut spec = std::fs::read_to_string(&spec_path).unwrap_or_default();
                if !spec.is_empty() && !spec.ends_with('\n') {
                    spec.push('\n');
                }
                spec.push_str(&format!("\n## Added {}\n\n{}\n", today(), request.trim()));
                // Committed only with the features it produced (a failed plan
                // leaves the spec as it was).
                std::fs::write(&spec_path, spec).map_err(io(&spec_path))?;
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
        let spec_path = dir.join(&names.spec);
        let accepted = self.files.load_accepted()?;
        let accepted_before = accepted.clone();
        let request_before = std::fs::read_to_string(&spec_path).unwrap_or_default();
        let request = self.request(plan, accepted.as_ref())?;
        let head_before = git::head(dir);
        let spec_before = std::fs::read_to_string(&spec_path).unwrap_or_default();
        let mut transcript = Transcript::create_next_from(dir, 1)?;
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
        });
        running.save(dir)?;
        self.reporter
            .line(&format!("── session {number:04} · planner ──"));
        self.reporter.session_start(number, SessionKind::Planner);
        let prompt = match plan {
            Plan::Rest => {
                prompts::planner_rest(names, accepted.as_ref().map_or(0, |l| l.features.len()))
            }
            Plan::Spec | Plan::More(_) => prompts::planner(names, request.as_deref()),
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
                        if request.is_some() {
                            prompts::Handoff::PlannerMore
                        } else {
                            prompts::Handoff::PlannerSpec
                        },
                    ),
                },
                &mut transcript,
                &prompts::system(dir),
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
            None => self.check_spec(number, &spec_before, &mut record),
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
                Ok(kept) => Err(HarnessError::Input(format!(
                    "{e}{}",
                    kept.map(|k| format!("; what the planner wrote is kept in {k}"))
                        .unwrap_or_default()
                ))),
                Err(undo) => Err(HarnessError::Input(format!(
                    "{e}; and putting the project back failed: {undo}"
                ))),
            },
            ok => ok,
        };
        self.record_planner(&mut state, record, head_before.as_deref())?;
        match (checked, error) {
            (Ok(p), _) => Ok(p),
            (Err(e), Some(agent)) => {
                Err(HarnessError::Input(format!("{e} (the session: {agent})")))
            }
            (Err(e), None) => Err(e),
        }
    }

    /// Whether the feature list on disk is still `accepted` (a list-append session
    /// that says the spec is covered wrote nothing).
    fn list_unchanged(&self, accepted: Option<&FeatureList>) -> bool {
        let text = std::fs::read_to_string(self.files.feature_list()).unwrap_or_default();
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
        paths.retain(|p| !p.starts_with(".baton/"));
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
                    let at = dir.join(p);
                    std::fs::write(&at, spec_before).map_err(io(&at))?;
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
            let path = self.files.feature_list();
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if FeatureList::parse(&text, &names.feature_list).ok().as_ref() != Some(&accepted) {
                let kept = dir
                    .join(baton_records::layout::REPLACED)
                    .join(format!("{}.planner-{:04}", names.feature_list, ip.number));
                baton_records::write_atomic(&kept, &text)?;
                std::fs::write(&path, accepted.to_json()).map_err(io(&path))?;
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

    /// The specification the planner wrote from the idea: long enough, changed,
    /// committed with whatever else it left.
    fn check_spec(
        &self,
        number: u32,
        before: &str,
        record: &mut SessionRecord,
    ) -> Result<Planned, HarnessError> {
        let dir = &self.files.dir;
        let spec = &self.files.names.spec;
        let text = std::fs::read_to_string(dir.join(spec)).unwrap_or_default();
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
        if text == before || lines < MIN_SPEC_LINES {
            // The idea stays as it was, for the next attempt.
            std::fs::write(dir.join(spec), before).map_err(io(dir.join(spec)))?;
            let why = if text == before {
                "did not write it".to_string()
            } else {
                format!("wrote {lines} non-empty lines, fewer than {MIN_SPEC_LINES}")
            };
            let _ = record;
            return Err(HarnessError::Input(format!(
                "the planner did not write a specification in {spec} ({why}), and the project is as it was: `baton plan {}` runs the planner again, or write {spec} yourself and `baton run {}`",
                dir.display(),
                dir.display()
            )));
        }
        let commit = git::commit(
            dir,
            &format!("baton plan: the specification in {spec}, from the idea"),
            &[],
            &[],
        )?;
        self.files.append_ledger(&LedgerEntry {
            commit: commit.clone(),
            ..LedgerEntry::new(
                number,
                LedgerKind::Planned,
                format!("{spec}: {lines} lines, from the idea"),
            )
        })?;
        Ok(Planned {
            number,
            added: Vec::new(),
            spec_lines: lines,
            commit,
            covered: false,
        })
    }

    /// The features the planner appended for `request`: the existing entries as they
    /// were (a change is restored and recorded), at least one new entry, every new
    /// one failing; accepted, recorded as `added` and committed.
    fn check_more(
        &self,
        number: u32,
        request: &str,
        accepted: FeatureList,
        record: &mut SessionRecord,
    ) -> Result<Planned, HarnessError> {
        let dir = &self.files.dir;
        let names = &self.files.names;
        let path = self.files.feature_list();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        // The caller puts the project back as it was ([`Runner::undo_planner`]).
        let restore = |why: String| -> Result<Planned, HarnessError> {
            Err(HarnessError::Input(format!(
                "the planner's {} was not accepted: {why}; the list and the spec are as they were. Run the same `baton plan {}` again, or add the features yourself and `baton accept {}`",
                names.feature_list,
                dir.display(),
                dir.display()
            )))
        };
        let list = match FeatureList::parse(&text, &names.feature_list) {
            Ok(l) => l,
            Err(e) => return restore(e.to_string()),
        };
        let old = accepted.features.len();
        let mut merged = accepted.clone();
        let mut changed = Vec::new();
        for (i, f) in list.features.iter().enumerate().take(old) {
            if *f != accepted.features[i] {
                changed.push(i + 1);
            }
        }
        if list.features.len() < old {
            changed.push(old);
        }
        let mut entries = Vec::new();
        if !changed.is_empty() {
            let what = format!(
                "the planner changed existing feature(s) {}; restored (a plan only appends)",
                baton_records::human::features(&changed)
            );
            record.gates.violations.push(what.clone());
            entries.push(LedgerEntry::new(number, LedgerKind::Violation, what));
        }
        let mut added = Vec::new();
        for f in list.features.iter().skip(old) {
            let mut f: Feature = f.clone();
            let n = merged.features.len() + 1;
            if f.passes {
                f.passes = false;
                f.fields.insert("passes".into(), false.into());
                let what = format!("new feature #{n} was written passing; set to failing");
                record.gates.violations.push(what.clone());
                entries.push(LedgerEntry {
                    feature: Some(n),
                    ..LedgerEntry::new(number, LedgerKind::Violation, what)
                });
            }
            entries.push(LedgerEntry {
                feature: Some(n),
                ..LedgerEntry::new(
                    number,
                    LedgerKind::Added,
                    format!("{} — for: {}", f.description, first_line(request)),
                )
            });
            merged.features.push(f);
            added.push(n);
        }
        if added.is_empty() {
            return restore("no feature was added".into());
        }
        // The merged list must hold together (dependencies point inside it).
        let merged = match FeatureList::parse(&merged.to_json(), &names.feature_list) {
            Ok(l) => l,
            Err(e) => return restore(e.to_string()),
        };
        std::fs::write(&path, merged.to_json()).map_err(io(&path))?;
        self.files.save_accepted(&merged)?;
        let commit = git::commit(
            dir,
            &format!(
                "baton plan: {} feature(s) added ({}) for: {}",
                added.len(),
                baton_records::human::features(&added),
                first_line(request)
            ),
            &[],
            &[],
        )?;
        for mut e in entries {
            e.commit.clone_from(&commit);
            self.files.append_ledger(&e)?;
        }
        let spec_lines = std::fs::read_to_string(dir.join(&names.spec))
            .map(|t| t.lines().filter(|l| !l.trim().is_empty()).count())
            .unwrap_or(0);
        Ok(Planned {
            number,
            added,
            spec_lines,
            commit,
            covered: false,
        })
    }
}

/// A person's edit of the feature list, as `baton accept` shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Edit {
    /// Features appended (1-based) with their descriptions.
    pub added: Vec<(usize, String)>,
    /// Features changed (1-based), with what changed, for people.
    pub amended: Vec<(usize, String)>,
    /// The list as edited.
    pub list: FeatureList,
}

impl Edit {
    /// Whether there is nothing to accept.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.amended.is_empty()
    }
}

/// The difference between the accepted list and the project's list as a person
/// edited it. Removing or reordering features is refused: features are known by
/// their number in the ledger, the records and the claims of parallel runs.
pub fn edit(files: &crate::files::Files) -> Result<Edit, HarnessError> {
    let names = &files.names;
    let Some(accepted) = files.load_accepted()? else {
        return Err(HarnessError::Input(format!(
            "{} has no accepted feature list yet: `baton run` adopts {} as it is",
            files.dir.display(),
            names.feature_list
        )));
    };
    let path = files.feature_list();
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    let list = FeatureList::parse(&text, &names.feature_list).map_err(|source| {
        HarnessError::FeatureList {
            what: "cannot accept the edited feature list".into(),
            source,
        }
    })?;
    let old = accepted.features.len();
    if list.features.len() < old {
        return Err(HarnessError::Input(format!(
            "{} has {} features, {old} were accepted: removing features renumbers the ones after them, which the ledger and records name by number. Put the entries back; to drop one, change its description to say it is dropped and leave it failing, or mark it blocked with `BlockFeature` notes",
            names.feature_list,
            list.features.len()
        )));
    }
    let mut e = Edit {
        list: list.clone(),
        ..Edit::default()
    };
    for (i, (before, after)) in accepted.features.iter().zip(&list.features).enumerate() {
        if before == after {
            continue;
        }
        // The same entry further down means entries were moved or inserted.
        if let Some(j) = list.features.iter().position(|f| f == before)
            && j != i
        {
            return Err(HarnessError::Input(format!(
                "feature #{} of the accepted list is now #{}: inserting or moving features renumbers them, which the ledger and records name by number. Append new features at the end instead",
                i + 1,
                j + 1
            )));
        }
        let mut what = describe_change(before, after);
        // A feature whose content changed must be proven again: what passed was
        // the old one. (A person's change of `passes` alone stands.)
        let unproven = |f: &Feature| {
            let mut f = f.clone();
            f.passes = false;
            f.fields.insert("passes".into(), false.into());
            f
        };
        if after.passes && unproven(before) != unproven(after) {
            let f = &mut e.list.features[i];
            f.passes = false;
            f.fields.insert("passes".into(), false.into());
            what.push_str("; set back to failing: it must be proven again");
        }
        e.amended.push((i + 1, what));
    }
    for (i, f) in list.features.iter().enumerate().skip(old) {
        e.added.push((i + 1, f.description.clone()));
    }
    Ok(e)
}

/// Accept `edit`: the list becomes the accepted one, each change goes to the
/// ledger (`added`, `amended`), the per-feature records of amended features start
/// afresh, and the list is committed. Returns the commit.
pub fn accept(files: &crate::files::Files, edit: &Edit) -> Result<Option<String>, HarnessError> {
    let dir = &files.dir;
    let mut state = State::load(dir)?;
    let number = state.sessions.iter().map(|s| s.number).max().unwrap_or(0);
    let mut entries = Vec::new();
    for (n, what) in &edit.added {
        entries.push(LedgerEntry {
            feature: Some(*n),
            ..LedgerEntry::new(number, LedgerKind::Added, format!("{what} — by a person"))
        });
    }
    for (n, what) in &edit.amended {
        entries.push(LedgerEntry {
            feature: Some(*n),
            ..LedgerEntry::new(number, LedgerKind::Amended, format!("by a person: {what}"))
        });
        state.features.remove(n);
    }
    files.save_accepted(&edit.list)?;
    state.save(dir)?;
    let mut parts = Vec::new();
    if !edit.added.is_empty() {
        parts.push(format!("{} added", edit.added.len()));
    }
    if !edit.amended.is_empty() {
        parts.push(format!("{} changed", edit.amended.len()));
    }
    files.commit_list(
        &edit.list,
        &format!(
            "baton accept: a person's edit of {} ({})",
            files.names.feature_list,
            parts.join(", ")
        ),
        entries,
    )
}

/// What changed in one feature, in a line: the fields, with the description's
/// old and new text.
fn describe_change(before: &Feature, after: &Feature) -> String {
    let mut what = Vec::new();
    if before.description != after.description {
        what.push(format!(
            "description {:?} → {:?}",
            before.description, after.description
        ));
    }
    if before.category != after.category {
        what.push(format!("category {} → {}", before.category, after.category));
    }
    if before.steps != after.steps {
        what.push(format!(
            "steps ({} → {})",
            before.steps.len(),
            after.steps.len()
        ));
    }
    if before.passes != after.passes {
        what.push(format!("passes {} → {}", before.passes, after.passes));
    }
    let keys: std::collections::BTreeSet<&String> =
        before.fields.keys().chain(after.fields.keys()).collect();
    for k in keys {
        if ["description", "category", "steps", "passes"].contains(&k.as_str()) {
            continue;
        }
        if before.fields.get(k) != after.fields.get(k) {
            what.push(k.clone());
        }
    }
    what.join("; ")
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
