//! `baton run --agents N` (or `--remote`): the coordinator with the working
//! copies' parts, and a warning when the agents would not fit in memory.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use baton_config::Config;
use baton_harness::parallel::{AgentParts, Parallel, ParallelParts, Workspace};
use tokio_util::sync::CancellationToken;

use super::args::{RunArgs, run_options};
use super::end::{PROCESSES_FILE, finish};
use super::prepare::Prepared;

/// `baton run --agents N` (or `--remote`): the agents in working copies of
/// their own, `main` the project's own parts (its initializer's session).
pub(super) async fn run_parallel(
    p: &Prepared<'_>,
    args: &RunArgs,
    run_id: &str,
    main: &AgentParts,
    stop: CancellationToken,
) -> anyhow::Result<ExitCode> {
    let workspace = Copies {
        cfg: &p.cfg,
        main: &p.dir,
        run_id,
        registries: std::sync::Mutex::default(),
        cli: p.cli.is_some().then_some((
            p.secrets,
            args.flags.provider.as_deref(),
            args.flags.model.as_deref(),
        )),
    };
    let parallel = Parallel::new(ParallelParts {
        files: p.files.clone(),
        cfg: p.cfg.clone(),
        agents: p.agents,
        client: p.client.as_ref(),
        prices: &p.prices,
        workspace: &workspace,
        main,
        reporter: &*p.view,
        stop,
        opts: run_options(args),
    })
    .with_remote(args.remote.clone());
    p.view.println(&format!(
        "baton: {} agents, each in a working copy under {}",
        p.agents,
        p.dir.join(baton_records::layout::AGENTS).display()
    ));
    if let Some(w) = memory_warning(p.agents, p.cfg.browser.enabled, mem_available()) {
        p.view.println(&format!("baton: warning: {w}"));
    }
    let result = parallel.run().await;
    let stopped = workspace.shutdown().await;
    if stopped > 0 {
        p.view.println(&format!(
            "baton: stopped {stopped} process group(s) started during the run"
        ));
    }
    finish(&p.view, &p.files, p.budget, result)
}

/// Memory one agent may use at its peak: its browser (Chromium with a page), its
/// dev servers and build tools. A guess on the safe side, for a warning only.
const AGENT_MEMORY_MIB: u64 = 1536;
/// The same without a browser.
const AGENT_MEMORY_NO_BROWSER_MIB: u64 = 768;

/// Memory the kernel says is available, in MiB (`MemAvailable`).
fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// A warning when `agents` agents (with a browser each when `browser`) would
/// likely need more memory than is available: an agent killed by the kernel's
/// out-of-memory killer loses its session.
fn memory_warning(agents: u32, browser: bool, available_mib: Option<u64>) -> Option<String> {
    let per = if browser {
        AGENT_MEMORY_MIB
    } else {
        AGENT_MEMORY_NO_BROWSER_MIB
    };
    let available = available_mib?;
    let need = per * u64::from(agents);
    if need <= available {
        return None;
    }
    let fit = (available / per).max(1);
    Some(format!(
        "{agents} agents{} may need about {} GiB at their peak, and {} GiB is available; an agent the kernel kills for memory loses its session. Consider --agents {fit}",
        if browser { " with a browser each" } else { "" },
        need.div_ceil(1024),
        available / 1024
    ))
}

/// The working copies of a parallel run: each gets the tools, policy and sandbox
/// `baton run` gives the project, rooted at the copy, with a process registry of
/// its own (recorded in `.baton/processes.a<k>`, so one copy's shutdown never
/// stops another's commands).
struct Copies<'a> {
    cfg: &'a Config,
    main: &'a Path,
    run_id: &'a str,
    registries: std::sync::Mutex<Vec<Arc<baton_tools::ProcessRegistry>>>,
    /// With an agent CLI (provider `claude-code`): the keys and the `--provider`
    /// and `--model` flags each copy's CLI is set up with.
    cli: Option<(
        &'a crate::secrets::Secrets,
        Option<&'a str>,
        Option<&'a str>,
    )>,
}

impl Copies<'_> {
    /// Stop what the copies' commands left running.
    async fn shutdown(&self) -> usize {
        let all = self
            .registries
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default();
        let mut stopped = 0;
        for r in all {
            stopped += r.shutdown(Duration::from_secs(3)).await;
        }
        stopped
    }
}

impl Workspace for Copies<'_> {
    fn parts(
        &self,
        agent: u32,
        dir: &Path,
        env: Vec<(String, String)>,
    ) -> Result<AgentParts, baton_harness::HarnessError> {
        let record = self.main.join(format!("{PROCESSES_FILE}.a{agent}"));
        let processes = Arc::new(baton_tools::ProcessRegistry::recording(
            record,
            self.run_id.to_string(),
        ));
        if let Ok(mut r) = self.registries.lock() {
            r.push(Arc::clone(&processes));
        }
        // The CLI's sandbox, hook configuration and MCP servers belong to the copy.
        let cli = match self.cli {
            Some((secrets, provider, model)) => {
                crate::setup::cli_backend(self.cfg, dir, secrets, provider, model)
                    .map_err(|e| baton_harness::HarnessError::Agents(format!("{e:#}")))?
            }
            None => None,
        };
        let (parts, _) = crate::setup::dir_parts(dir, self.cfg, Some(processes), env, cli)
            .map_err(|e| baton_harness::HarnessError::Agents(format!("{e:#}")))?;
        Ok(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::memory_warning;

    #[test]
    fn too_many_agents_for_the_memory_are_warned_about_with_a_number_that_fits() {
        assert_eq!(memory_warning(4, true, Some(16_384)), None);
        let w = memory_warning(8, true, Some(6_144)).unwrap();
        assert!(
            w.contains("8 agents with a browser each may need about 12 GiB"),
            "{w}"
        );
        assert!(w.contains("6 GiB is available"), "{w}");
        assert!(w.ends_with("Consider --agents 4"), "{w}");
        // Without a browser an agent needs less; unknown memory says nothing.
        assert_eq!(memory_warning(8, false, Some(6_144)), None);
        assert_eq!(memory_warning(64, true, None), None);
        assert!(
            memory_warning(3, true, Some(512))
                .unwrap()
                .ends_with("--agents 1")
        );
    }
}
