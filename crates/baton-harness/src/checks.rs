//! Checks baton runs itself (not the independent verifier, see `verifier`): a feature's `"verify"` command, run through the same
//! `Bash` tool, policy and sandbox as the agent's commands, after `init.sh` is up.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use baton_agent::transcript::now_ms;
use baton_records::{FeatureList, VERIFY};
use baton_tools::{GateDecision, ToolGate, Toolbox};

use serde_json::json;

use baton_records::{CheckFailure, CheckRun};

use crate::error::HarnessError;
use baton_records::{LedgerEntry, LedgerKind};

/// Characters of a failed check's output kept as its reason.
const REASON_CHARS: usize = 1_500;
/// Checks run in one shell at most: their reports (about 50 bytes each, plus the
/// tail of each failure's output) stay well inside the 30 KB the Bash tool keeps
/// of an output.
const SHELL_CHECKS: usize = 200;

fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.trim_end().to_string();
    }
    format!(
        "…{}",
        s.chars().skip(n - max).collect::<String>().trim_end()
    )
}

/// The `verify` command of a feature, if it has one.
pub fn command_of(list: &FeatureList, index: usize) -> Option<String> {
    list.features
        .get(index)?
        .fields
        .get(VERIFY)
        .and_then(|v| v.as_str())
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
}

/// Everything needed to run checks.
pub struct Checker<'a> {
    /// The tools (their `Bash` runs the checks, owned by the run).
    pub tools: &'a Toolbox,
    /// The command policy.
    pub policy: &'a dyn ToolGate,
    /// Time one check may take.
    pub timeout: Duration,
    /// The start script to run first (relative to the project), if any.
    pub init_script: Option<String>,
    /// How checks that share a runner run as one ([`crate::batch::Batching`]);
    /// `None`: each runs as its own command.
    pub batch: Option<crate::batch::Batching>,
}

impl Checker<'_> {
    async fn bash(&self, command: &str, timeout: Duration) -> (bool, String) {
        if let Some(why) = self.refused(command) {
            return (false, why);
        }
        self.allowed(command, timeout).await
    }

    /// Why the policy refuses `command`, if it does.
    fn refused(&self, command: &str) -> Option<String> {
        match self.policy.check("Bash", &json!({"command": command})) {
            GateDecision::Refuse(why) => Some(format!("refused by baton's policy: {why}")),
            _ => None,
        }
    }

    /// Run `command`, which the policy allowed, through the `Bash` tool.
    async fn allowed(&self, command: &str, timeout: Duration) -> (bool, String) {
        let input = json!({"command": command, "timeout": timeout.as_millis() as u64});
        let out = self.tools.call("Bash", &input).await;
        (!out.is_error, out.content)
    }

    /// Run the checks of `features` (0-based indices into `list`) in order, stopping
    /// when `budget` (if any) is spent. Features without a check are left out; a
    /// check the policy refuses is not run, and is reported in `refused`. The
    /// checks (and the start script before them) run with a home no command has
    /// written: a config the agent planted in its own (a `~/.npmrc` naming another
    /// `script-shell`) cannot make a failing check pass.
    pub async fn run(
        &self,
        list: &FeatureList,
        features: &[usize],
        budget: Option<Duration>,
    ) -> CheckRun {
        if !features.iter().any(|&i| command_of(list, i).is_some()) {
            return CheckRun::default();
        }
        // A time-boxed sweep may batch: its runner's report goes in a dir of this
        // run's, the one place of the host's temp dir its commands may write.
        let reports = match (&self.batch, budget) {
            (Some(b), Some(_)) => tempfile::Builder::new()
                .prefix("baton-batch-")
                .tempdir_in(&b.temp)
                .ok(),
            _ => None,
        };
        let tools = self
            .tools
            .with_fresh_home(reports.as_ref().map(|r| r.path()));
        let batch = match (&self.batch, &reports) {
            (Some(b), Some(r)) => Some(crate::batch::Batching {
                temp: r.path().to_path_buf(),
                ..b.clone()
            }),
            (b, _) => b.clone(),
        };
        Checker {
            tools: &tools,
            policy: self.policy,
            timeout: self.timeout,
            init_script: self.init_script.clone(),
            batch,
        }
        .run_here(list, features, budget)
        .await
    }

    /// [`Checker::run`] with these tools as they are (their home already one no
    /// command wrote: a clean world's, made for its checks).
    pub async fn run_as_is(
        &self,
        list: &FeatureList,
        features: &[usize],
        budget: Option<Duration>,
    ) -> CheckRun {
        self.run_here(list, features, budget).await
    }

    /// [`Checker::run`] with these tools as they are.
    async fn run_here(
        &self,
        list: &FeatureList,
        features: &[usize],
        budget: Option<Duration>,
    ) -> CheckRun {
        let mut run = CheckRun::default();
        let todo: Vec<(usize, String)> = features
            .iter()
            .filter_map(|&i| command_of(list, i).map(|c| (i, c)))
            .collect();
        if todo.is_empty() {
            return run;
        }
        let started = Instant::now();
        if let Some(init) = &self.init_script {
            let (ok, out) = self
                .bash(&format!("./{init}"), Duration::from_secs(600))
                .await;
            run.init_ran = true;
            if ok {
                let said = out.trim_end().trim_end_matches("Exit code: 0").trim_end();
                let last: Vec<&str> = said.lines().rev().take(4).collect();
                let last: Vec<&str> = last.into_iter().rev().collect();
                if !last.is_empty() {
                    run.init_output = Some(tail(&last.join("\n"), 400));
                }
            } else {
                run.init_error = Some(tail(&out, REASON_CHARS));
            }
        }
        // What the policy refuses is not run; the rest run in one shell, and what
        // that did not report (a hang, a cut, a broken script) one by one.
        let mut allowed = Vec::new();
        for (i, command) in todo {
            match self.refused(&command) {
                Some(reason) => run.refused.push(CheckFailure {
                    feature: i + 1,
                    command,
                    reason,
                }),
                None => allowed.push((i, command)),
            }
        }
        let mut reported = BTreeMap::new();
        let unreported = |reported: &BTreeMap<usize, _>| -> Vec<(usize, String)> {
            allowed
                .iter()
                .filter(|(i, _)| !reported.contains_key(i))
                .cloned()
                .collect()
        };
        // Only a time-boxed sweep batches: in one runner's process one spec can
        // make another's result (a spec a session added may patch the runner), so
        // a flip's proof, a base check and the sweep before "complete" keep
        // every check in a process of its own.
        if let (Some(batching), Some(b)) = (&self.batch, budget) {
            for cfg in &batching.configs {
                let left = unreported(&reported);
                let budget_left = b.saturating_sub(started.elapsed());
                reported.extend(self.batched(cfg, &batching.temp, &left, budget_left).await);
            }
        }
        let rest = unreported(&reported);
        if rest.len() > 1 {
            // In shells of SHELL_CHECKS checks each: what one shell reports must
            // fit in what the Bash tool keeps of an output, or the checks whose
            // reports were cut would run again one by one.
            for chunk in rest.chunks(SHELL_CHECKS) {
                // One check's limit for each check in the shell, within what
                // one Bash call may take and what is left of the sweep's box:
                // `timeout_secs` is one check's, never the lot's.
                let shell = self
                    .timeout
                    .saturating_mul(u32::try_from(chunk.len()).unwrap_or(u32::MAX))
                    .min(Duration::from_millis(baton_tools::bash::MAX_TIMEOUT_MS));
                let limit =
                    budget.map_or(shell, |b| shell.min(b.saturating_sub(started.elapsed())));
                if limit.is_zero() {
                    break;
                }
                reported.extend(self.in_one_shell(chunk, limit).await);
            }
        }
        for (i, command) in allowed {
            // A time-boxed sweep always finishes one check: one that takes longer
            // than the box alone would be its first every time and starve the rest.
            let none_yet = run.passed.is_empty() && run.failed.is_empty();
            let (ok, out, ms) = if let Some(r) = reported.remove(&i) {
                r
            } else if !none_yet && budget.is_some_and(|b| started.elapsed() >= b) {
                run.skipped.push(i + 1);
                continue;
            } else {
                let alone = Instant::now();
                let (ok, out) = self.allowed(&command, self.timeout).await;
                let ms = u64::try_from(alone.elapsed().as_millis()).unwrap_or(u64::MAX);
                (ok, out, Some(ms))
            };
            if let Some(ms) = ms {
                run.check_ms.insert(i + 1, ms);
            }
            if ok {
                run.passed.push(i + 1);
            } else {
                run.failed.push(CheckFailure {
                    feature: i + 1,
                    command,
                    reason: tail(&out, REASON_CHARS),
                });
            }
        }
        run.ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        run
    }

    /// Run the checks of `checks` that have the batch's shape as one command
    /// (within what is left of the sweep's box, `budget_left`), and return those
    /// its report says passed (with how long their tests took). The rest, and
    /// all of them when the report is missing or unreadable, are not in it: they
    /// run as before.
    async fn batched(
        &self,
        cfg: &baton_config::BatchConfig,
        temp: &std::path::Path,
        checks: &[(usize, String)],
        budget_left: Duration,
    ) -> BTreeMap<usize, (bool, String, Option<u64>)> {
        let joined: Vec<(usize, String)> = checks
            .iter()
            .filter_map(|(i, c)| crate::batch::file_of(cfg, c).map(|f| (*i, f)))
            .collect();
        if joined.len() < 2 {
            return BTreeMap::new();
        }
        // The batch's bound: one check's limit for each check in it, within what
        // one Bash call may take and what is left of the sweep's box.
        let n = u32::try_from(joined.len()).unwrap_or(u32::MAX);
        let limit = self
            .timeout
            .saturating_mul(n)
            .min(Duration::from_millis(baton_tools::bash::MAX_TIMEOUT_MS))
            .min(budget_left);
        if limit.is_zero() {
            return BTreeMap::new();
        }
        let Ok(dir) = tempfile::Builder::new()
            .prefix("baton-batch-")
            .tempdir_in(temp)
        else {
            return BTreeMap::new();
        };
        let report = dir.path().join("report.json");
        let files: Vec<String> = joined.iter().map(|(_, f)| f.clone()).collect();
        let command = crate::batch::command_for(cfg, &files, &report);
        if self.refused(&command).is_some() {
            return BTreeMap::new();
        }
        // Its exit status says nothing of one file: the report does.
        let _ = self.allowed(&command, limit).await;
        let text = crate::batch::read_report(&report).unwrap_or_default();
        let said = crate::batch::results(cfg.report, &text, &files);
        joined
            .into_iter()
            .filter_map(|(i, f)| match said.get(&f) {
                Some((true, ms)) => Some((i, (true, "passed in the batch".to_string(), *ms))),
                _ => None,
            })
            .collect()
    }

    /// Run `checks` (feature index, command; each allowed by the policy) in one
    /// shell, each in a subshell of its own with its output in a file, within
    /// `limit`: one process for the lot instead of one each (a sweep on a big
    /// project runs hundreds). Each check reports after it ends with a line
    /// carrying a nonce the commands cannot know in advance; what a check prints
    /// is kept only when it fails (its tail). Returns what was reported: a check
    /// that hung, or that broke the script, is not in it.
    async fn in_one_shell(
        &self,
        checks: &[(usize, String)],
        limit: Duration,
    ) -> BTreeMap<usize, (bool, String, Option<u64>)> {
        let nonce = format!(
            "baton-check-{:016x}{:016x}",
            rand::random::<u64>(),
            rand::random::<u64>()
        );
        let mut script = format!(
            "__baton_out=\"${{TMPDIR:-/tmp}}/{nonce}-$$\"\n\
             : >\"$__baton_out\" || exit 97\n\
             __baton_now() {{ __baton_n=${{EPOCHREALTIME/[.,]/}}; }}\n\
             __baton_said() {{ __baton_now; if [ \"$2\" -ne 0 ]; then __baton_o=$(<\"$__baton_out\"); if [ ${{#__baton_o}} -gt {REASON_CHARS} ]; then __baton_o=${{__baton_o: -{REASON_CHARS}}}; fi; printf '%s' \"$__baton_o\"; fi; __baton_ms=-; if [ -n \"$__baton_n\" ] && [ -n \"$3\" ]; then __baton_ms=$(( (__baton_n - $3) / 1000 )); fi; printf '\\n{nonce} %s %s %s\\n' \"$1\" \"$2\" \"$__baton_ms\"; }}\n"
        );
        for (k, (_, command)) in checks.iter().enumerate() {
            // The command on lines of its own: a comment or heredoc in it ends
            // where it would alone.
            script.push_str(&format!(
                "__baton_now; __baton_t=$__baton_n\n(\n{command}\n) >\"$__baton_out\" 2>&1 </dev/null\n__baton_said {k} $? $__baton_t\n"
            ));
        }
        script.push_str("rm -f \"$__baton_out\"\n");
        let input = json!({"command": script, "timeout": limit.as_millis() as u64});
        let out = self.tools.call("Bash", &input).await.content;
        let mut reported = BTreeMap::new();
        let mut since = 0;
        for line_start in line_starts(&out) {
            let line = out[line_start..].lines().next().unwrap_or_default();
            let Some(rest) = line.strip_prefix(&nonce) else {
                continue;
            };
            let mut parts = rest.split_whitespace();
            let (Some(k), Some(code)) = (
                parts.next().and_then(|k| k.parse::<usize>().ok()),
                parts.next().and_then(|c| c.parse::<i32>().ok()),
            ) else {
                continue;
            };
            // How long it took (absent where the shell has no EPOCHREALTIME).
            let ms = parts.next().and_then(|m| m.parse::<u64>().ok());
            if let Some((i, _)) = checks.get(k) {
                let said = out[since..line_start].trim_matches('\n');
                let text = if code == 0 {
                    "Exit code: 0".to_string()
                } else if said.is_empty() {
                    format!("Exit code: {code}")
                } else {
                    format!("{said}\nExit code: {code}")
                };
                reported.insert(*i, (code == 0, text, ms));
            }
            since = line_start + line.len();
        }
        reported
    }
}

/// Where each line of `text` starts.
fn line_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1))
}

impl<'a> Checker<'a> {
    /// The checker of the project in `dir` under `cfg`'s `[verify]` settings,
    /// through `tools` and `policy`; `init.sh` runs first where it exists.
    pub fn for_project(
        tools: &'a Toolbox,
        policy: &'a dyn ToolGate,
        cfg: &baton_config::Config,
        dir: &std::path::Path,
    ) -> Self {
        let init = &cfg.project.init_script;
        Checker {
            tools,
            policy,
            timeout: Duration::from_secs(cfg.verify.timeout_secs.max(1)),
            init_script: (cfg.verify.run_init && dir.join(init).is_file()).then(|| init.clone()),
            batch: Some(crate::batch::Batching::of(
                cfg.verify.batch.as_ref(),
                baton_policy::sandbox::temp_dir_for(dir),
            )),
        }
    }
}

/// The features (0-based) a sweep re-checks: the passing ones with a check.
pub fn passing_checks(list: &FeatureList) -> Vec<usize> {
    (0..list.features.len())
        .filter(|&i| list.features[i].passes && command_of(list, i).is_some())
        .collect()
}

/// The checks the independent verifier left and baton replayed (failed on the
/// base commit, passed on the head), from the ledger's `check_added` entries:
/// feature (1-based) to command, the last for each feature.
pub fn kept_checks(files: &crate::files::Files) -> BTreeMap<usize, String> {
    let ledger = baton_records::ledger::read(&files.ledger()).unwrap_or_default();
    ledger
        .entries
        .into_iter()
        .filter(|e| e.kind == LedgerKind::CheckAdded)
        .filter_map(|e| match (e.feature, e.proof) {
            (
                Some(n),
                Some(baton_records::Proof::Check {
                    command, author, ..
                }),
            ) if author.starts_with("the verifier") => Some((n, command)),
            _ => None,
        })
        .collect()
}

/// `list` with `kept` checks as the verify commands of features that have none:
/// what a sweep runs. The list baton commits is never this one.
pub fn with_kept(list: &FeatureList, kept: &BTreeMap<usize, String>) -> FeatureList {
    let mut probe = list.clone();
    for (&n, command) in kept {
        if let Some(f) = probe.features.get_mut(n.wrapping_sub(1))
            && !f.fields.contains_key(VERIFY)
        {
            f.fields.insert(
                VERIFY.to_string(),
                serde_json::Value::String(command.clone()),
            );
        }
    }
    probe
}

/// Keep, for each check of `run` that passed, the tree it passed on (as it stands
/// after the checks ran: what they wrote is no change of the session's), and
/// forget the ones that failed or were refused.
pub(crate) fn note_passed(
    passed_on: &mut baton_records::PassedOn,
    files: &crate::files::Files,
    list: &FeatureList,
    run: &CheckRun,
) {
    let tree = crate::tree_digest::of_project(files);
    for f in run.failed.iter().chain(&run.refused) {
        passed_on.forget(f.feature);
    }
    for &n in &run.passed {
        match (&tree, command_of(list, n - 1)) {
            (Some(t), Some(c)) => passed_on.passed(n, &c, t),
            _ => passed_on.forget(n),
        }
    }
}

/// When a regression sweep runs.
#[derive(Debug, Clone, Copy)]
pub enum Sweep {
    /// Before coding session N, time-boxed.
    Before(u32),
    /// Before the run says "complete", after session N: every check.
    Complete(u32),
}

impl Sweep {
    /// The session its findings are recorded under.
    fn number(self) -> u32 {
        match self {
            Sweep::Before(n) | Sweep::Complete(n) => n,
        }
    }

    /// When, in words: "before session 7", "before declaring the project complete".
    fn words(self) -> String {
        match self {
            Sweep::Before(n) => format!("before session {n}"),
            Sweep::Complete(_) => "before declaring the project complete".to_string(),
        }
    }
}

/// What a sweep works with: the checker, the project's files (the list is set back
/// and committed there, the cursor kept), `[verify] sweep_checks`, and where its
/// lines go.
pub struct Sweeper<'a> {
    /// Runs the checks.
    pub checker: Checker<'a>,
    /// The project's files.
    pub files: &'a crate::files::Files,
    /// `[verify] sweep_checks`: the most checks a time-boxed sweep runs (0 = all).
    pub most: usize,
    /// `[verify] skip_unchanged`: a time-boxed sweep leaves out a check whose
    /// command passed on the same tree.
    pub skip_unchanged: bool,
    /// A line for people.
    pub say: &'a (dyn Fn(&str) + Sync),
}

/// The checks a sweep runs, and those it leaves out.
#[derive(Default)]
struct Picked {
    /// Features (0-based) whose checks run, in order.
    run: Vec<usize>,
    /// Where each stands among the passing checks, from the cursor.
    at: Vec<usize>,
    /// Features (1-based) left out: their checks passed on this same tree.
    unchanged: Vec<usize>,
}

impl Sweeper<'_> {
    /// The checks of `passing` a sweep runs: a time-boxed one (`boxed`) starts at
    /// the cursor, leaves out what passed on this same tree (`[verify]
    /// skip_unchanged`) and runs `most` at most; the one before "complete" runs
    /// them all.
    fn pick(
        &self,
        probe: &FeatureList,
        mut passing: Vec<usize>,
        boxed: bool,
        start: baton_records::SweepCursor,
        passed_on: &baton_records::PassedOn,
    ) -> Picked {
        if boxed {
            let all = passing.len().max(1);
            passing.rotate_left(start.0 % all);
        }
        let tree = (boxed && self.skip_unchanged)
            .then(|| crate::tree_digest::of_project(self.files))
            .flatten();
        let mut picked = Picked::default();
        for (k, i) in passing.into_iter().enumerate() {
            let same = tree.as_ref().is_some_and(|t| {
                command_of(probe, i).is_some_and(|c| passed_on.unchanged(i + 1, &c, t))
            });
            if same {
                picked.unchanged.push(i + 1);
            } else if boxed && self.most > 0 && picked.run.len() >= self.most {
                break;
            } else {
                picked.run.push(i);
                picked.at.push(k);
            }
        }
        picked
    }

    /// Re-run the checks of the passing features of `accepted` and set back what
    /// broke, in a commit of baton's. With a `budget` (the sweep before a session)
    /// at most `most` checks run, time-boxed, starting where the last sweep stopped
    /// (so every check runs every few sessions however many there are, at a cost
    /// that stays flat); without one (before "complete") every check runs.
    pub async fn sweep(
        &self,
        when: Sweep,
        accepted: &mut Option<FeatureList>,
        budget: Option<Duration>,
    ) -> Result<Option<CheckRun>, HarnessError> {
        let Some(list) = accepted.as_mut() else {
            return Ok(None);
        };
        // The checks the verifier left and baton replayed run too, where the
        // list has none of its own; what breaks is set back in the list itself.
        let probe = with_kept(list, &kept_checks(self.files));
        let passing = passing_checks(&probe);
        if passing.is_empty() {
            return Ok(None);
        }
        let mut passed_on = baton_records::PassedOn::load(&self.files.dir);
        let start = baton_records::SweepCursor::load(&self.files.dir);
        let all = passing.len();
        let picked = self.pick(&probe, passing, budget.is_some(), start, &passed_on);
        if picked.run.is_empty() {
            (self.say)(&format!(
                "sweep: {} passing feature(s) unchanged since their checks passed, none re-run",
                picked.unchanged.len()
            ));
            return Ok(Some(CheckRun {
                unchanged: picked.unchanged,
                ..CheckRun::default()
            }));
        }
        let mut run = self.checker.run(&probe, &picked.run, budget).await;
        run.unchanged = picked.unchanged;
        if self.skip_unchanged {
            note_passed(&mut passed_on, self.files, &probe, &run);
            passed_on.save(&self.files.dir)?;
        }
        if budget.is_some() {
            // The next sweep starts after the last check this one ran.
            let ran = run.passed.len() + run.failed.len();
            let past = ran
                .checked_sub(1)
                .and_then(|r| picked.at.get(r))
                .map_or(0, |k| k + 1);
            start.after(past, all).save(&self.files.dir)?;
        }
        let number = when.number();
        let said = match when {
            Sweep::Before(_) => "sweep",
            Sweep::Complete(_) => "sweep before declaring the project complete",
        };
        let later = if run.skipped.is_empty() {
            String::new()
        } else {
            format!(
                " ({} more not reached within [verify] sweep_secs: the next sweep starts there)",
                run.skipped.len()
            )
        };
        let same = if run.unchanged.is_empty() {
            String::new()
        } else {
            format!(
                " ({} more unchanged since their checks passed)",
                run.unchanged.len()
            )
        };
        if run.failed.is_empty() {
            (self.say)(&format!(
                "{said}: {} passing feature(s) re-checked, all still pass{same}{later}",
                run.passed.len()
            ));
            return Ok(Some(run));
        }
        for f in &run.failed {
            list.features[f.feature - 1].passes = false;
        }
        let broke = baton_records::human::features(
            &run.failed.iter().map(|f| f.feature).collect::<Vec<_>>(),
        );
        let msg = format!(
            "baton: regression sweep {} set back {broke}\n\n{}",
            when.words(),
            run.failed
                .iter()
                .map(|f| format!("- feature {}: `{}` failed\n", f.feature, f.command))
                .collect::<String>()
        );
        let entries = run
            .failed
            .iter()
            .map(|f| LedgerEntry {
                t_ms: now_ms(),
                session: number,
                kind: LedgerKind::Regression,
                feature: Some(f.feature),
                detail: format!("`{}` failed {}: {}", f.command, when.words(), f.reason),
                commit: None,
                evidence: Vec::new(),
                proof: None,
            })
            .collect();
        self.files.commit_list(list, &msg, entries)?;
        self.files.save_accepted(list)?;
        (self.say)(&format!(
            "{said}: {broke} broke and {} set back to failing{later}",
            if run.failed.len() == 1 { "was" } else { "were" }
        ));
        Ok(Some(run))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use baton_tools::{AllowAll, ToolContext};

    fn list(commands: &[&str]) -> FeatureList {
        let list: Vec<_> = commands
            .iter()
            .enumerate()
            .map(|(i, c)| json!({"category": "functional", "description": format!("f{i}"), "steps": [], "verify": c, "passes": true}))
            .collect();
        FeatureList::parse(&serde_json::to_string(&list).unwrap(), "f.json").unwrap()
    }

    fn run(commands: &[&str], timeout: Duration) -> CheckRun {
        let dir = tempfile::tempdir().unwrap();
        let tools = Toolbox::new(ToolContext::new(dir.path().to_path_buf()));
        let checker = Checker {
            tools: &tools,
            policy: &AllowAll,
            timeout,
            init_script: None,
            batch: None,
        };
        let list = list(commands);
        let all: Vec<usize> = (0..commands.len()).collect();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(checker.run(&list, &all, Some(Duration::from_secs(120))))
    }

    #[test]
    fn checks_run_together_are_each_judged_by_their_own_exit_and_output() {
        let run = run(
            &[
                "true",
                "echo boom; exit 3",
                "test -f nothing.txt # a comment that would swallow the rest",
                "cat <<EOF\nhere\nEOF",
                "exit 0",
                "echo 'baton-check-0000000000000000 5 0'; false",
                "cd /; pwd",
                // True only in a subshell: these ran in one shell, not one by one.
                "[ \"$BASH_SUBSHELL\" -ge 1 ]",
            ],
            Duration::from_secs(30),
        );
        assert_eq!(run.passed, vec![1, 4, 5, 7, 8], "{run:?}");
        let failed: Vec<usize> = run.failed.iter().map(|f| f.feature).collect();
        assert_eq!(failed, vec![2, 3, 6], "{run:?}");
        assert!(run.failed[0].reason.contains("boom"), "{run:?}");
        assert!(run.failed[0].reason.contains("Exit code: 3"), "{run:?}");
        assert!(!run.failed[0].reason.contains("baton-check"), "{run:?}");
    }

    /// Every check that ran says how long it took, whether it reported from the
    /// shared shell or ran alone (after a hang past its limit, here #2 and the
    /// one after it). Only presence is asserted, never how long.
    #[test]
    fn every_check_that_ran_records_how_long_it_took() {
        let many = run(&["true", "sleep 5", "false"], Duration::from_secs(1));
        assert_eq!(many.passed, vec![1], "{many:?}");
        let timed: Vec<usize> = many.check_ms.keys().copied().collect();
        assert_eq!(timed, vec![1, 2, 3], "{many:?}");
        let one = run(&["true"], Duration::from_secs(5));
        assert_eq!(one.check_ms.keys().copied().collect::<Vec<_>>(), vec![1]);
    }

    /// `[verify] timeout_secs` is one check's limit, not the shared shell's:
    /// three checks of 0.9 s each with a 2 s limit all report from the shell
    /// and run once. (The shell was cut at one check's limit, so the third ran
    /// twice, and past about 30 real checks at the default the rest of a sweep
    /// ran one process each.)
    #[test]
    fn one_checks_timeout_does_not_cut_the_shell_of_many() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("ran.txt");
        let command = format!("echo ran >> {}; sleep 0.9", log.display());
        let run = run(&[&command, &command, &command], Duration::from_secs(2));
        assert_eq!(run.passed, vec![1, 2, 3], "{run:?}");
        let ran = std::fs::read_to_string(&log).unwrap();
        assert_eq!(ran.lines().count(), 3, "each check runs once");
    }

    /// A sweep of many checks is as linear as a few: every check reports from
    /// the shared shell and runs exactly once. (The reports of one shell for 1,500
    /// checks are ~75 KB, past what the Bash tool keeps of an output, so the
    /// middle ones went unreported and ran again one process each: 3-4 ms a
    /// check above ~600 checks instead of under 1 ms.)
    #[test]
    fn a_sweep_of_many_checks_runs_each_check_once() {
        let dir = tempfile::tempdir().unwrap();
        let tools = Toolbox::new(ToolContext::new(dir.path().to_path_buf()));
        let checker = Checker {
            tools: &tools,
            policy: &AllowAll,
            timeout: Duration::from_secs(120),
            init_script: None,
            batch: None,
        };
        let commands: Vec<String> = (0..1_500).map(|k| format!("echo {k} >> ran.txt")).collect();
        let refs: Vec<&str> = commands.iter().map(String::as_str).collect();
        let list = list(&refs);
        let all: Vec<usize> = (0..commands.len()).collect();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let run = rt.block_on(checker.run(&list, &all, None));
        assert_eq!(run.passed.len(), 1_500, "{:?}", run.failed.first());
        let ran = std::fs::read_to_string(dir.path().join("ran.txt")).unwrap();
        assert_eq!(ran.lines().count(), 1_500, "checks ran again one by one");
    }

    #[test]
    fn a_check_that_breaks_the_shared_script_is_judged_alone() {
        // An unbalanced parenthesis is a syntax error for the whole script: nothing
        // is reported from it, and each check runs on its own as before.
        let alone = "[ \"$BASH_SUBSHELL\" -eq 0 ]";
        let run = run(
            &["true", "echo ')' ; ( true", alone],
            Duration::from_secs(30),
        );
        assert_eq!(run.passed, vec![1, 3], "{run:?}");
        assert_eq!(run.failed.len(), 1, "{run:?}");
        assert_eq!(run.failed[0].feature, 2);
    }

    #[test]
    fn a_hanging_check_is_timed_out_alone_and_the_others_still_count() {
        let run = run(&["true", "sleep 30", "true"], Duration::from_secs(1));
        assert_eq!(run.passed, vec![1, 3], "{run:?}");
        assert_eq!(run.failed.len(), 1, "{run:?}");
        assert!(run.failed[0].reason.contains("timed out"), "{run:?}");
    }
}
