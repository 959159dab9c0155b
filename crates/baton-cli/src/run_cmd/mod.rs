//! `baton run` (and the driver `baton plan` shares): the project's lock, its
//! parts assembled once, then the run of one or the parallel coordinator.
//!
//! `args.rs` holds the arguments, `prepare.rs` what is checked and made before
//! the runtime starts, `parallel.rs` the run of many agents, `end.rs` what comes
//! before and after (leftovers, Ctrl-C, the end and its exit code).

mod args;
mod end;
mod parallel;
mod prepare;

pub use args::{ModelFlags, RunArgs, What};

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use baton_harness::run::RunEnd;
use tokio_util::sync::CancellationToken;

use args::run_options;
use end::{PROCESSES_FILE, finish, on_ctrl_c, planned_end, stop_leftovers};
use parallel::run_parallel;
use prepare::{prepare, start_line};

/// Run `baton run`, holding the project's lock: one run per project.
pub fn run(args: RunArgs, secrets: &crate::secrets::Secrets) -> anyhow::Result<ExitCode> {
    run_what(args, secrets, What::Run)
}

/// Run `what` in `args.dir` as `baton run` would (lock, model, policy, sandbox,
/// live view).
pub fn run_what(
    args: RunArgs,
    secrets: &crate::secrets::Secrets,
    what: What,
) -> anyhow::Result<ExitCode> {
    let dir = crate::setup::project_dir(&args.dir, crate::setup::CREATE_HINT)?;
    let command = match what {
        What::Run => "baton run",
        What::Plan(_) => "baton plan",
    };
    // A directory that is no project is left as it was found, `.baton/` included.
    let records = dir.join(baton_records::layout::DIR);
    let lock_file = dir.join(baton_records::layout::LOCK);
    let had_records = records.exists();
    let lock = baton_harness::lock::ProjectLock::acquire(&dir, command)?;
    if let Some(previous) = &lock.took_over {
        eprintln!(
            "baton: note: the lock of {previous} was left behind (it ended without releasing it); taking over"
        );
        // Its git processes died with it: a lock of git's they held would stop
        // every commit of this run, the agent's too.
        for removed in baton_harness::lock::remove_stale_git_locks(&dir) {
            eprintln!("baton: removed {removed}, git's lock that the run left behind");
        }
    }
    // Before anything loads baton.toml: an agent's change left by a killed run goes.
    let result =
        crate::setup::recover_config(&dir).and_then(|()| run_locked(args, secrets, dir, what));
    lock.release();
    if !had_records && result.is_err() {
        // The lock file goes, then the directory if nothing else was written.
        let _ = std::fs::remove_file(&lock_file);
        let _ = std::fs::remove_dir(&records);
    }
    result
}

fn run_locked(
    args: RunArgs,
    secrets: &crate::secrets::Secrets,
    dir: PathBuf,
    what: What,
) -> anyhow::Result<ExitCode> {
    let p = prepare(&args, secrets, dir)?;
    let runtime = crate::setup::runtime()?;
    runtime.block_on(async {
        stop_leftovers(&p.dir, &p.view).await;
        let run_id = format!(
            "{}-{}",
            std::process::id(),
            baton_agent::transcript::now_ms()
        );
        let processes = Arc::new(baton_tools::ProcessRegistry::recording(
            p.dir.join(PROCESSES_FILE),
            run_id.clone(),
        ));
        // The command policy and OS sandbox, as for `baton exec`, for the whole run.
        // A port of its own, as each agent of a parallel run has: init.sh, the
        // agent's commands and every check agree on where the app listens.
        let (main, warning) = crate::setup::dir_parts(
            &p.dir,
            &p.cfg,
            Some(Arc::clone(&processes)),
            baton_harness::parallel::agent_env(1),
            p.cli.clone(),
        )?;
        p.view.println(&start_line(&p));
        if let Some(w) = &warning {
            p.view.println(&format!("baton: warning: {w}"));
        }
        if p.cfg.sandbox.enabled && !baton_policy::sandbox::kernel_binds() {
            p.view.println(&format!(
                "baton: warning: {}",
                crate::doctor_cmd::BWRAP_MISSING
            ));
        }
        let stop = CancellationToken::new();
        on_ctrl_c(&p.view, stop.clone(), main.tools.context().cancel.clone());
        if (p.agents > 1 || args.remote.is_some()) && matches!(what, What::Run) {
            return run_parallel(&p, &args, &run_id, &main, stop).await;
        }
        let runner = main
            .runner(&p.cfg, &p.dir, p.client.as_ref(), &p.prices, &*p.view)?
            .with_observer(&*p.view)
            .with_stop(stop)
            .with_opts(run_options(&args));
        enum Ended<'p> {
            Run(Result<RunEnd, baton_harness::HarnessError>),
            Plan(
                &'p baton_harness::plan::Plan,
                Result<baton_harness::plan::Planned, baton_harness::HarnessError>,
            ),
        }
        let ended = match &what {
            What::Run => Ended::Run(runner.run().await),
            What::Plan(plan) => Ended::Plan(plan, runner.plan(plan).await),
        };
        let stopped = main
            .tools
            .context()
            .processes
            .shutdown(Duration::from_secs(3))
            .await;
        if stopped > 0 {
            p.view.println(&format!(
                "baton: stopped {stopped} process group(s) started during the run"
            ));
        }
        match ended {
            Ended::Run(result) => finish(&p.view, &p.files, p.budget, result),
            Ended::Plan(plan, planned) => planned_end(&p.view, &p.files, plan, planned),
        }
    })
}
