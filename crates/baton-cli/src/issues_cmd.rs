//! `baton issues pull DIR`: the forge's open issues with `[forge] label` become
//! features ([`baton_harness::issues`]). baton reads the forge with its own token
//! (`[forge] token_env`), which no agent command ever gets.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use baton_harness::files::Files;

use crate::secrets::Secrets;

/// What `baton issues` does.
#[derive(Debug, clap::Subcommand)]
pub enum IssuesCommand {
    /// Turn the forge's open issues with `[forge] label` into features appended to
    /// the accepted list (recorded and committed). Only issues opened or labelled
    /// by a user with write access are taken; others are listed and ignored. An
    /// issue without a fenced `verify` block is added blocked, for a person to
    /// write its check. Run it while no `baton run` works on DIR.
    ///
    /// Exit codes: 0 pulled (or nothing new); 1 error (no [forge] repo, the forge
    /// refused, no accepted list yet).
    Pull {
        /// The project directory.
        dir: PathBuf,
    },
}

/// Run `baton issues …`.
pub fn run(what: IssuesCommand, secrets: &Secrets) -> anyhow::Result<ExitCode> {
    match what {
        IssuesCommand::Pull { dir } => pull(&dir, secrets),
    }
}

fn pull(dir: &Path, secrets: &Secrets) -> anyhow::Result<ExitCode> {
    let dir = crate::setup::project_dir(dir, crate::setup::CREATE_HINT)?;
    let cfg = crate::setup::load_config(&dir)?;
    crate::status_cmd::require_project(&dir, &cfg)?;
    let forge_cfg = cfg.forge.clone();
    if forge_cfg.repo.is_empty() {
        bail!(
            "{} has no [forge] repo: add\n[forge]\nrepo = \"owner/name\"\nlabel = \"baton\"\ntoken_env = \"GITHUB_TOKEN\"\nto its {}",
            dir.display(),
            baton_config::CONFIG_FILE
        );
    }
    let token = secrets
        .get(&forge_cfg.token_env)
        .or_else(|| std::env::var(&forge_cfg.token_env).ok())
        .unwrap_or_default();
    if token.is_empty() {
        eprintln!(
            "baton: warning: ${} is not set: the forge is read without a token (a private repository, or who may write, needs one)",
            forge_cfg.token_env
        );
    }
    let mut forge = baton_forge::Rest::new(&forge_cfg, token)?;
    forge.on_wait = Box::new(|line| eprintln!("baton: {line}"));
    let lock = baton_harness::lock::ProjectLock::acquire(&dir, "baton issues pull")?;
    let files = Files::new(dir, cfg.project);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    let pulled = rt.block_on(baton_harness::issues::pull(
        &files,
        &forge,
        &forge_cfg.label,
    ));
    lock.release();
    let pulled = pulled?;
    let name = baton_forge::Forge::name(&forge);
    if pulled.added.is_empty() {
        eprintln!(
            "baton: no new issue labelled {:?} on {} {}",
            forge_cfg.label, name, forge_cfg.repo
        );
    } else {
        let each: Vec<String> = pulled
            .added
            .iter()
            .map(|(n, i)| {
                if pulled.blocked.contains(n) {
                    format!("#{n} (issue #{i}, blocked: it gives no runnable check)")
                } else {
                    format!("#{n} (issue #{i})")
                }
            })
            .collect();
        eprintln!(
            "baton: {} issue(s) from {name} {} are features now: {}",
            pulled.added.len(),
            forge_cfg.repo,
            each.join(", ")
        );
    }
    if !pulled.already.is_empty() {
        let each: Vec<String> = pulled.already.iter().map(|i| format!("#{i}")).collect();
        eprintln!("baton: already features: issue {}", each.join(", "));
    }
    for (i, who) in &pulled.ignored {
        eprintln!(
            "baton: ignored issue #{i} by {who}: opened and labelled only by users without write access"
        );
    }
    Ok(ExitCode::SUCCESS)
}
