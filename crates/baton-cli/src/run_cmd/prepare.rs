//! Before a run's runtime starts: the project, the flags and the model
//! checked, the live view made, and the line that says what the run works with.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::bail;
use baton_agent::client::ModelClient;
use baton_agent::pricing::PriceTable;
use baton_config::Config;
use baton_harness::files::Files;
use indicatif::ProgressDrawTarget;

use super::args::RunArgs;
use crate::live::{Mode, RunView, Start};
use crate::setup::client_config;

/// What `baton run` works with once the project and the model are checked.
pub(super) struct Prepared<'s> {
    pub(super) dir: PathBuf,
    pub(super) cfg: Config,
    pub(super) files: Files,
    pub(super) secrets: &'s crate::secrets::Secrets,
    /// The agent CLI, when the provider is one.
    pub(super) cli: Option<baton_agent::cli_session::CliBackend>,
    /// baton's own loop's model client, otherwise.
    pub(super) client: Option<ModelClient>,
    pub(super) prices: PriceTable,
    pub(super) budget: Option<f64>,
    pub(super) agents: u32,
    pub(super) view: Arc<RunView>,
}

/// The project, the flags and the model checked, and the live view made: what
/// every `baton run` needs before its runtime starts.
pub(super) fn prepare<'s>(
    args: &RunArgs,
    secrets: &'s crate::secrets::Secrets,
    dir: PathBuf,
) -> anyhow::Result<Prepared<'s>> {
    let cfg = crate::setup::load_config(&dir)?;
    // Read before the secrets are scrubbed from baton's environment (the variable is
    // one of them: the agent never gets it).
    let webhook = crate::notify::webhook(&cfg.notify);
    if args.pause.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
        bail!("--pause must be a non-negative number of seconds");
    }
    let has_list = dir.join(&cfg.project.feature_list).exists()
        || dir.join(baton_records::layout::ACCEPTED).exists();
    if !has_list && !dir.join(&cfg.project.spec).exists() {
        bail!(
            "{} has neither {} nor {}: nothing to build (create a project with `baton new DIR --spec FILE`)",
            dir.display(),
            cfg.project.spec,
            cfg.project.feature_list
        );
    }
    let cli = crate::setup::cli_backend(
        &cfg,
        &dir,
        secrets,
        args.flags.provider.as_deref(),
        args.flags.model.as_deref(),
    )?;
    for line in cli.iter().flat_map(crate::setup::cli_caveats) {
        eprintln!("baton: {}", baton_records::human::terminal(line));
    }
    let agents = args.agents.unwrap_or(cfg.run.agents);
    if agents == 0 {
        bail!("--agents must be at least 1");
    }
    let client = match cli {
        Some(_) => None,
        None => Some(ModelClient::new(client_config(
            &cfg,
            secrets,
            args.flags.provider.as_deref(),
            args.flags.model.as_deref(),
        )?)?),
    };
    let prices = PriceTable::new(&cfg.prices);
    // The budget the run will stop at: the command line's, else the project's
    // (a remembered --budget-usd while baton.toml is unchanged since).
    let budget = match args.budget_usd {
        Some(b) => b,
        None => baton_records::State::load(&dir)
            .map(|s| s.budget(cfg.run.budget_usd))
            .unwrap_or(cfg.run.budget_usd),
    }
    .max(0.0);
    let budget = (budget > 0.0).then_some(budget);
    if let (Some(b), Some(client)) = (budget, &client) {
        refuse_unpriced_budget(b, &client.config().model, &cfg, &prices)?;
    }
    let files = Files::new(dir.clone(), cfg.project.clone());
    let view = live_view(args, &dir, &files, budget, &cfg, webhook)?;
    Ok(Prepared {
        dir,
        cfg,
        files,
        secrets,
        cli,
        client,
        prices,
        budget,
        agents,
        view,
    })
}

/// What the run works with, said once at its start: who plays the agent and with
/// which model, whether its tokens are priced (an unpriced model's costs show as
/// $0, and say so here), the project's kind and browser, the verifier (and
/// `trust_agent`, where it is on), the budget, the network.
pub(super) fn start_line(p: &Prepared) -> String {
    let (provider, model) = match (&p.cli, &p.client) {
        (Some(cli), _) => (cli.cli.provider().to_string(), cli.model.clone()),
        (None, Some(c)) => (
            c.config().provider.name().to_string(),
            c.config().model.clone(),
        ),
        (None, None) => ("?".to_string(), "?".to_string()),
    };
    let priced = |m: &str| match p.prices.lookup(m) {
        Some(pr) => format!("${} in, ${} out per million tokens", pr.input, pr.output),
        None => format!("not priced: its costs show as $0 (add [prices.\"{m}\"] to baton.toml)"),
    };
    let mut verifier = match (p.cfg.verify.agent, p.cfg.verify.model.as_deref()) {
        (false, _) => "no verifier".to_string(),
        (true, None) => "verifier: the same model".to_string(),
        (true, Some(v)) => format!("verifier: {v} ({})", priced(v)),
    };
    // The one setting that lets a false "done" through is said where the run
    // starts, not left in baton.toml.
    if p.cfg.verify.trust_agent {
        verifier.push_str(
            " · flips nothing proves taken on the agent's word ([verify] trust_agent = true)",
        );
    }
    let budget = p.budget.map_or("no budget".to_string(), |b| {
        format!("budget {}", baton_records::human::usd(b))
    });
    let browser = if p.cfg.browser.enabled {
        "browser on"
    } else {
        "browser off"
    };
    let sandbox = &p.cfg.sandbox;
    let network = match sandbox.network {
        _ if !sandbox.enabled => "network: open (sandbox off)".to_string(),
        baton_config::SandboxNetwork::Open => "network: open".to_string(),
        baton_config::SandboxNetwork::Loopback => "network: loopback only".to_string(),
        baton_config::SandboxNetwork::Allowlist => {
            let hosts = sandbox
                .allow
                .clone()
                .unwrap_or_else(|| baton_policy::net::default_allow(&p.dir));
            format!("network: allowlist of {} hosts", hosts.len())
        }
    };
    format!(
        "baton: {provider} · {model} ({}) · a {} project ([project] kind), {browser} · {verifier} · {budget} · {network}",
        priced(&model),
        p.cfg.project.kind
    )
}

/// A budget baton cannot count would never stop the run: refuse it up front.
fn refuse_unpriced_budget(
    b: f64,
    model: &str,
    cfg: &Config,
    prices: &PriceTable,
) -> anyhow::Result<()> {
    let verifier = cfg
        .verify
        .agent
        .then_some(cfg.verify.model.as_deref())
        .flatten();
    for m in std::iter::once(model).chain(verifier) {
        if prices.lookup(m).is_none() {
            bail!(
                "a budget of ${b:.2} cannot be counted: model {m:?} has no price, so every session would cost $0 in baton's records. \
                 Add its prices (USD per million tokens) to baton.toml:\n\n[prices.\"{m}\"]\ninput = 3.0\noutput = 15.0\n\n\
                 or run without --budget-usd / [run] budget_usd"
            );
        }
    }
    Ok(())
}

/// The run's view: bars on a terminal, plain lines otherwise (or with
/// `--quiet`), JSON events with `--json`; it starts from the project's standing.
fn live_view(
    args: &RunArgs,
    dir: &Path,
    files: &Files,
    budget: Option<f64>,
    cfg: &Config,
    webhook: Option<String>,
) -> anyhow::Result<Arc<RunView>> {
    let before = baton_harness::status::status(files)?;
    let mode = if args.flags.json {
        Mode::Json
    } else if args.flags.quiet || !std::io::stderr().is_terminal() {
        Mode::Lines {
            quiet: args.flags.quiet,
        }
    } else {
        Mode::Bars
    };
    let mut view = RunView::new(
        mode,
        &Start {
            project: dir.display().to_string(),
            passing: before.passing,
            total: before.total,
            sessions: before.totals.sessions,
            spent_usd: before.totals.cost_usd,
            budget_usd: budget,
        },
        ProgressDrawTarget::stderr(),
        Box::new(std::io::stdout()),
    );
    if let Some(n) = crate::notify::Notifier::new(&cfg.notify, webhook, dir) {
        view = view.with_listener(crate::notify::RunNotices::new(n, dir));
    }
    Ok(Arc::new(view))
}
