//! Around a run: what an earlier run left running stopped first, Ctrl-C, and
//! how the run (or a planner session) ended, with its exit code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use baton_harness::files::Files;
use baton_harness::run::RunEnd;
use tokio_util::sync::CancellationToken;

use crate::live::RunView;

/// Where a run records the process groups its tools start, relative to the project.
pub(super) const PROCESSES_FILE: &str = baton_records::layout::PROCESSES;

/// Processes a crashed or killed run left behind (dev servers, long commands)
/// are stopped before this run starts its own.
pub(super) async fn stop_leftovers(dir: &Path, view: &RunView) {
    let mut left = 0;
    for r in process_records(dir) {
        left += baton_tools::process::stop_leftovers(&r, Duration::from_secs(3)).await;
    }
    if left > 0 {
        view.println(&format!(
            "baton: stopped {left} process group(s) left running by an earlier run that did not end cleanly"
        ));
    }
}

/// The first Ctrl-C cancels `stop` (the current tool call ends, then the run);
/// a second cancels `hard` (running commands are killed).
pub(super) fn on_ctrl_c(view: &Arc<RunView>, stop: CancellationToken, hard: CancellationToken) {
    let view = Arc::clone(view);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            view.stopping();
            stop.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                view.println("\nbaton: stopping now");
                hard.cancel();
            }
        }
    });
}

/// Say what a planner session did, and give the exit code.
pub(super) fn planned_end(
    view: &RunView,
    files: &Files,
    plan: &baton_harness::plan::Plan,
    planned: Result<baton_harness::plan::Planned, baton_harness::HarnessError>,
) -> anyhow::Result<ExitCode> {
    let p = match planned {
        Ok(p) => p,
        Err(e) => {
            view.finish(Err(&format!("{e:#}")));
            return Err(e.into());
        }
    };
    let reason = if p.added.is_empty() {
        format!("planner session {:04}", p.number)
    } else {
        format!(
            "planner session {:04} added {}",
            p.number,
            baton_records::human::features(&p.added)
        )
    };
    view.finish_with("planned", 0, reason);
    let dir = files.dir.display();
    match plan {
        baton_harness::plan::Plan::Spec => eprintln!(
            "baton: the planner wrote {} ({}), committed; read and edit it, then `baton run {dir}`",
            files.names.spec,
            baton_records::human::plural(p.spec_lines as u64, "line")
        ),
        baton_harness::plan::Plan::More(_) | baton_harness::plan::Plan::Rest => {
            let list = files.load_accepted()?.unwrap_or_default();
            eprintln!(
                "baton: {} feature(s) added to {} ({}), committed and recorded; {}/{} passing; next: `baton run {dir}`",
                p.added.len(),
                files.names.feature_list,
                baton_records::human::features(&p.added),
                list.passing(),
                list.features.len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Say how the run ended, with the project's status, and give its exit code.
pub(super) fn finish(
    view: &RunView,
    files: &Files,
    budget: Option<f64>,
    result: Result<RunEnd, baton_harness::HarnessError>,
) -> anyhow::Result<ExitCode> {
    let end = match result {
        Ok(end) => end,
        Err(e) => {
            view.finish(Err(&format!("{e:#}")));
            return Err(e.into());
        }
    };
    view.finish(Ok(&end));
    // baton.toml as the run loaded it (a change by the agent was undone).
    let s = baton_harness::status::status(files)?;
    // The project by the name the person can type again (quoted only where a
    // shell needs it).
    let dir = files.dir.display().to_string();
    let plain = dir
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+~,:@".contains(&b));
    let d = if plain {
        dir
    } else {
        baton_agent::cli_session::shell_quote(&dir)
    };
    let why = match &end {
        RunEnd::Complete => "complete: every feature passes".to_string(),
        RunEnd::CompleteExceptBlocked(b) => format!(
            "complete except blocked feature(s) {}: see `baton status {d}`, then `baton unblock {d} N`",
            baton_records::human::features(b)
        ),
        RunEnd::Limit(l) => format!("stopped: {l}"),
        RunEnd::Stalled(n) => format!(
            "stalled: {n} coding sessions in a row without a newly passing feature. To go on, act, then `baton run {d}` again: `baton status {d}` says what failed; `baton tell {d} \"…\"` guides the next session, `baton unblock {d} N` hands a deferred or blocked feature out again, `baton plan {d} --idea \"…\"` adds or changes features, and a change to baton.toml (the kind, the browser, the checks, a higher [run] stall_sessions) lets it go on"
        ),
        RunEnd::Interrupted => "interrupted; `baton run` again resumes".to_string(),
    };
    let left = budget
        .map(|b| {
            format!(
                " · {} of {} budget left",
                baton_records::human::usd((b - s.totals.cost_usd).max(0.0)),
                baton_records::human::usd(b)
            )
        })
        .unwrap_or_default();
    eprintln!(
        "baton: {why} · {}/{} passing · {} · ${:.4}{left}",
        s.passing,
        s.total,
        baton_records::human::plural(s.totals.sessions as u64, "session"),
        s.totals.cost_usd
    );
    Ok(ExitCode::from(end.exit_code()))
}

/// The files where runs record the process groups they start: the project's, and
/// one per working copy of a parallel run (`processes.a<k>`).
fn process_records(dir: &Path) -> Vec<PathBuf> {
    let main = dir.join(PROCESSES_FILE);
    let mut out = vec![main.clone()];
    let (Some(parent), Some(name)) = (main.parent(), main.file_name()) else {
        return out;
    };
    let prefix = format!("{}.", name.to_string_lossy());
    if let Ok(rd) = std::fs::read_dir(parent) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                out.push(e.path());
            }
        }
    }
    out
}
