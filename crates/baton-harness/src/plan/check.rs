//! What a planner's work is checked against: a specification written from an idea
//! must be long enough and committed; features appended for a request must leave
//! the existing entries as they were (a change is restored and recorded) and add
//! at least one new, failing feature.

use baton_records::{Feature, FeatureList, LedgerEntry, LedgerKind, SessionRecord};

use super::{MIN_SPEC_LINES, Planned, first_line};
use crate::error::{HarnessError, io};
use crate::git;
use crate::runner::Runner;

impl Runner<'_> {
    /// A planner that writes a spec from an idea writes the spec alone: a feature
    /// list, start script or progress notes it wrote besides (new since
    /// `head_before`, with no accepted list yet) are the initializer's to write, and
    /// would be adopted unchecked by the next run. They are kept in
    /// `.baton/replaced/planner-NNNN/`, taken out of the tree, and said.
    fn set_aside_initializers_files(
        &self,
        number: u32,
        head_before: Option<&str>,
        record: &mut SessionRecord,
    ) -> Result<(), HarnessError> {
        if self.files.load_accepted()?.is_some() {
            return Ok(());
        }
        let dir = &self.files.dir;
        let names = &self.files.names;
        let kept = format!("{}/planner-{number:04}", baton_records::layout::REPLACED);
        for name in [&names.feature_list, &names.init_script, &names.progress] {
            let was = head_before.is_some_and(|h| {
                git::git(dir, &["cat-file", "-e", &format!("{h}:{name}")]).is_ok()
            });
            let Ok(meta) = std::fs::symlink_metadata(dir.join(name)) else {
                continue;
            };
            if was {
                continue;
            }
            if meta.is_file() {
                let text = self.files.read_text(name);
                baton_records::write_atomic(&dir.join(&kept).join(name), &text)?;
            }
            // A link is removed as a link, never followed.
            let at = dir.join(name);
            std::fs::remove_file(&at).map_err(io(&at))?;
            let why = format!(
                "the planner wrote {name}, which the initializer writes after checking the spec; set aside as {kept}/{name}"
            );
            self.reporter.line(&format!("  gate: {why}"));
            self.files.append_ledger(&LedgerEntry::new(
                number,
                LedgerKind::Violation,
                why.clone(),
            ))?;
            record.gates.violations.push(why);
        }
        Ok(())
    }

    /// The specification the planner wrote from the idea: long enough, changed,
    /// committed with whatever else it left.
    pub(super) fn check_spec(
        &self,
        number: u32,
        before: &str,
        head_before: Option<&str>,
        record: &mut SessionRecord,
    ) -> Result<Planned, HarnessError> {
        let dir = &self.files.dir;
        let spec = &self.files.names.spec;
        // Beneath the project: never through a link the planner planted there.
        let text = self.files.read_text(spec);
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
        if text == before || lines < MIN_SPEC_LINES {
            // The idea stays as it was, for the next attempt.
            self.files.write_text(spec, before)?;
            let why = if text == before {
                "did not write it".to_string()
            } else {
                format!("wrote {lines} non-empty lines, fewer than {MIN_SPEC_LINES}")
            };
            let _ = record;
            return Err(HarnessError::Planner(format!(
                "the planner did not write a specification in {spec} ({why}), and the project is as it was: `baton plan {}` runs the planner again, or write {spec} yourself and `baton run {}`",
                dir.display(),
                dir.display()
            )));
        }
        self.set_aside_initializers_files(number, head_before, record)?;
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
    pub(super) fn check_more(
        &self,
        number: u32,
        request: &str,
        accepted: FeatureList,
        record: &mut SessionRecord,
    ) -> Result<Planned, HarnessError> {
        let dir = &self.files.dir;
        let names = &self.files.names;
        let path = self.files.feature_list();
        // Through baton's one opener: no link followed, no FIFO, bounded.
        let beneath = baton_records::beneath::Beneath::new(dir);
        let text = beneath
            .read_to_string(&names.feature_list)
            .unwrap_or_default();
        // The caller puts the project back as it was ([`Runner::undo_planner`]).
        let restore = |why: String| -> Result<Planned, HarnessError> {
            Err(HarnessError::Planner(format!(
                "the planner's {} was not accepted: {why}; the list and the spec are as they were. Run `baton plan {}` again with the same `--spec FILE` or `--idea TEXT`, or add the features yourself and `baton accept {}`",
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
        beneath
            .write_atomic(&names.feature_list, merged.to_json().as_bytes())
            .map_err(io(&path))?;
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
        let spec_lines = self
            .files
            .read_text(&names.spec)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count();
        Ok(Planned {
            number,
            added,
            spec_lines,
            commit,
            covered: false,
        })
    }
}
