//! Checks baton runs itself (not the independent verifier, see `verifier`): a feature's `"verify"` command, run through the same
//! `Bash` tool, policy and sandbox as the agent's commands, after `init.sh` is up.

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
}

impl Checker<'_> {
    async fn bash(&self, command: &str, timeout: Duration) -> (bool, String) {
        let input = json!({"command": command, "timeout": timeout.as_millis() as u64});
        if let GateDecision::Refuse(why) = self.policy.check("Bash", &input) {
            return (false, format!("refused by baton's policy: {why}"));
        }
        let out = self.tools.call("Bash", &input).await;
        (!out.is_error, out.content)
    }

    /// Run the checks of `features` (0-based indices into `list`) in order, stopping
    /// when `budget` (if any) is spent. Features without a check are left out.
    pub async fn run(
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
        for (i, command) in todo {
            if budget.is_some_and(|b| started.elapsed() >= b) {
                run.skipped.push(i + 1);
                continue;
            }
            let (ok, out) = self.bash(&command, self.timeout).await;
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
        run
    }
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
        }
    }
}

/// The features (0-based) a sweep re-checks: the passing ones with a check.
pub fn passing_checks(list: &FeatureList) -> Vec<usize> {
    (0..list.features.len())
        .filter(|&i| list.features[i].passes && command_of(list, i).is_some())
        .collect()
}

impl crate::run::Runner<'_> {
    /// The checker for verify commands, through the run's tools and policy.
    pub(crate) fn checker(&self) -> Checker<'_> {
        Checker::for_project(&self.tools, self.policy, &self.cfg, &self.files.dir)
    }

    /// The regression sweep: re-run the checks of every passing feature, in list
    /// order and time-boxed, and set back whatever broke, in a commit of baton's.
    pub(crate) async fn sweep(
        &self,
        number: u32,
        accepted: &mut Option<FeatureList>,
    ) -> Result<Option<CheckRun>, HarnessError> {
        let Some(list) = accepted.as_mut() else {
            return Ok(None);
        };
        let passing = passing_checks(list);
        if passing.is_empty() {
            return Ok(None);
        }
        let budget = Duration::from_secs(self.cfg.verify.sweep_secs.max(1));
        let run = self.checker().run(list, &passing, Some(budget)).await;
        if run.failed.is_empty() {
            self.reporter.line(&format!(
                "sweep: {} passing feature(s) re-checked, all still pass",
                run.passed.len()
            ));
            return Ok(Some(run));
        }
        for f in &run.failed {
            list.features[f.feature - 1].passes = false;
        }
        let broke = run
            .failed
            .iter()
            .map(|f| format!("#{}", f.feature))
            .collect::<Vec<_>>()
            .join(", ");
        let msg = format!(
            "baton: regression sweep before session {number} set back {broke}\n\n{}",
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
                detail: format!(
                    "`{}` failed before session {number}: {}",
                    f.command, f.reason
                ),
                commit: None,
                evidence: Vec::new(),
            })
            .collect();
        self.files.commit_list(list, &msg, entries)?;
        self.files.save_accepted(list)?;
        self.reporter.line(&format!(
            "sweep: {broke} broke and were set back to failing"
        ));
        Ok(Some(run))
    }
}
