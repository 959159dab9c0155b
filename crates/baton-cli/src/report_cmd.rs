//! `baton report`: the run report as one self-contained HTML file.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use baton_report::{Options, Records};

/// Arguments of `baton report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The project directory.
    dir: PathBuf,
    /// Where to write the page; `-` for stdout (default: DIR/.baton/report.html, which
    /// git ignores).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// The budget in USD, to show what is left (default: the last `baton run
    /// --budget-usd`, else baton.toml [run] budget_usd).
    #[arg(long)]
    budget_usd: Option<f64>,
}

/// Run `baton report`.
pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    let dir = crate::setup::project_dir(&args.dir, "")?;
    let cfg = crate::setup::load_config(&dir)?;
    crate::status_cmd::require_project(&dir, &cfg)?;
    if args
        .budget_usd
        .is_some_and(|b| !(b.is_finite() && b >= 0.0))
    {
        bail!("--budget-usd must be a non-negative number");
    }
    let budget = match args.budget_usd {
        Some(b) => b,
        None => baton_records::State::load(&dir)?.budget(cfg.run.budget_usd),
    }
    .max(0.0);
    let records = Records::load(&dir, &cfg.project.feature_list)?;
    let html = baton_report::render(
        &records,
        &Options {
            budget_usd: (budget > 0.0).then_some(budget),
            generated_ms: baton_agent::transcript::now_ms(),
            ..Options::default()
        },
    );
    let out = args
        .output
        .unwrap_or_else(|| dir.join(baton_records::layout::REPORT));
    if out.as_os_str() == "-" {
        let mut stdout = std::io::stdout().lock();
        return match stdout.write_all(html.as_bytes()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other.context("write to stdout"),
        };
    }
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&out, &html).with_context(|| format!("cannot write {}", out.display()))?;
    eprintln!(
        "baton: wrote {} ({} KB, {} sessions, {} features)",
        out.display(),
        html.len().div_ceil(1024),
        records.sessions.len(),
        records.features.len()
    );
    Ok(())
}
