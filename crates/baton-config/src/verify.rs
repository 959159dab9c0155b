//! `[verify]`: how baton checks the agent's claims.

use serde::Deserialize;

/// Checks baton runs itself, and the independent verifier.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    /// Seconds one `verify` command may run.
    pub timeout_secs: u64,
    /// Seconds the regression sweep before each coding session may take in all.
    pub sweep_secs: u64,
    /// Checks the regression sweep before each coding session runs at most, taken
    /// in turn (each sweep goes on where the last one stopped), so that its cost
    /// stays flat as the project grows; 0 = every passing check every time. Every
    /// check runs before the run says "complete" either way.
    pub sweep_checks: u32,
    /// The regression sweep before each coding session leaves out a check whose
    /// command already passed on the same tree (every file git would see but the
    /// progress notes and the feature list, by content). Off: every sweep runs
    /// its checks whatever changed. "complete" runs every check either way.
    pub skip_unchanged: bool,
    /// Run `init.sh` before running checks (so servers are up).
    pub run_init: bool,
    /// After each coding session, a fresh verifier session re-walks the new flips
    /// that no verify command proved.
    pub agent: bool,
    /// Accept a flip that nothing proved on the agent's word. Off: such a flip is
    /// reverted and recorded as `unverified_flip`.
    pub trust_agent: bool,
    /// Model of the verifier (default: the coder's).
    pub model: Option<String>,
    /// Turns the verifier gets for each feature it checks (plus a few to start).
    pub turns_per_feature: u32,
    /// The most turns one verifier session may take, however many features.
    pub max_turns: u32,
    /// Files a check reads besides the ones baton finds itself (the paths its
    /// command names, the project's test files and test runners' configuration):
    /// globs relative to the project. A session that changes one proves no flip by
    /// check; the verifier judges it instead.
    pub protect: Vec<String>,
    /// Checks that share a test runner run as one command (`[verify.batch]`),
    /// besides Playwright's shape, which baton knows ([`BatchConfig::playwright`]).
    pub batch: Option<BatchConfig>,
}

/// `[verify.batch]`: how the checks of many features run as one runner's
/// invocation, and how its report maps back to each feature.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BatchConfig {
    /// The command for many files: `{files}` (their paths, quoted) and `{report}`
    /// (where it writes its report), e.g. `PLAYWRIGHT_JSON_OUTPUT_NAME={report} npx
    /// playwright test --reporter=json {files}`.
    pub command: String,
    /// The shape of one feature's check that joins the batch, `{file}` its file:
    /// `npx playwright test {file}`. Other checks run as before.
    pub check: String,
    /// The report's format.
    pub report: ReportFormat,
}

/// A test runner's report of many files.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ReportFormat {
    /// Playwright's JSON reporter (`--reporter=json`).
    Playwright,
    /// Jest's `--json` (Vitest's `--reporter=json` writes the same shape).
    Jest,
}

impl BatchConfig {
    /// Playwright's shape, which baton knows without configuration: checks
    /// written `npx playwright test <file>` run as one, with its JSON report.
    pub fn playwright() -> Self {
        Self {
            command:
                "PLAYWRIGHT_JSON_OUTPUT_NAME={report} npx playwright test --reporter=json {files}"
                    .to_string(),
            check: "npx playwright test {file}".to_string(),
            report: ReportFormat::Playwright,
        }
    }

    /// What is wrong with it, as the dotted field and why.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        if !self.command.contains("{files}") || !self.command.contains("{report}") {
            return Some((
                "verify.batch.command",
                "must name {files} (the files of the checks that join it) and {report} (where the runner writes its report)",
            ));
        }
        if self.check.matches("{file}").count() != 1 {
            return Some((
                "verify.batch.check",
                "must name {file} once: the shape of one feature's check, e.g. \"npx playwright test {file}\"",
            ));
        }
        None
    }
}

impl Default for VerifyConfig {
    fn default() -> Self {
        Self {
            timeout_secs: 120,
            sweep_secs: 300,
            sweep_checks: 200,
            skip_unchanged: true,
            run_init: true,
            agent: true,
            trust_agent: false,
            model: None,
            turns_per_feature: 30,
            max_turns: 200,
            protect: Vec::new(),
            batch: None,
        }
    }
}
