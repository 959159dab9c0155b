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
    /// Push the project's HEAD to baton's own branch ([forge] branch, on [forge]
    /// remote; never forced) and open its pull request, or bring the body of the
    /// open one up to date: one pull request, whose body is the proof table of the
    /// passing features that came from issues (feature, issue, how it was proven,
    /// commit) and which closes those issues. Nothing is merged.
    ///
    /// Exit codes: 0 opened, updated, or nothing proven from issues yet; 1 error.
    Pr {
        /// The project directory.
        dir: PathBuf,
    },
    /// One step of the watch of baton's pull request (run it from cron or a loop;
    /// it goes on from .baton/forge.json, however the last one ended). A failed
    /// check becomes a feature "Fix CI on pull request #N" with what the check said
    /// (once per pushed commit); no check started within [forge] checks_start_secs
    /// tells a person ([notify], once) and the pull request is never merged so;
    /// with [forge] merge, baton merges it once every check passed (at least one ran).
    ///
    /// Exit codes: 0 the step was taken (with --every: the pull request was merged);
    /// 1 error; 130 interrupted.
    Watch {
        /// The project directory.
        dir: PathBuf,
        /// Take a step every SECS seconds until the pull request is merged or
        /// Ctrl-C (a step a `baton run` holds the project for is taken later).
        #[arg(long, value_name = "SECS")]
        every: Option<u64>,
    },
}

/// Run `baton issues …`.
pub fn run(what: IssuesCommand, secrets: &Secrets) -> anyhow::Result<ExitCode> {
    match what {
        IssuesCommand::Pull { dir } => pull(&dir, secrets),
        IssuesCommand::Pr { dir } => pr(&dir, secrets),
        IssuesCommand::Watch { dir, every } => watch(&dir, secrets, every),
    }
}

fn watch(dir: &Path, secrets: &Secrets, every: Option<u64>) -> anyhow::Result<ExitCode> {
    use baton_harness::forge_watch::Watched;
    let (dir, cfg, forge) = open(dir, secrets)?;
    let notifier =
        crate::notify::Notifier::new(&cfg.notify, crate::notify::webhook(&cfg.notify), &dir);
    let tell = |event: &str, text: &str| {
        eprintln!("{text}");
        if let Some(n) = &notifier {
            n.send(event, text, serde_json::json!({}));
        }
    };
    let files = Files::new(dir.clone(), cfg.project.clone());
    let rt = runtime()?;
    // A named loop: each turn takes a step (or finds the project busy), then
    // stops (merged, a single step, an error) or waits for the next turn.
    let code = loop {
        let step = match baton_harness::lock::ProjectLock::acquire(&dir, "baton issues watch") {
            Ok(lock) => {
                let step = watch_step(&files, &forge, &cfg.forge, &tell, &rt);
                lock.release();
                Some(step?)
            }
            Err(e) if every.is_some() => {
                eprintln!("baton: {e}; looking again later");
                None
            }
            Err(e) => return Err(e.into()),
        };
        let Some(secs) = every else {
            break ExitCode::SUCCESS;
        };
        if matches!(step, Some(Watched::Merged | Watched::Passed(true))) {
            break ExitCode::SUCCESS;
        }
        let interrupted = rt.block_on(async {
            tokio::select! {
                () = tokio::time::sleep(std::time::Duration::from_secs(secs.max(1))) => false,
                _ = tokio::signal::ctrl_c() => true,
            }
        });
        if interrupted {
            break ExitCode::from(130);
        }
    };
    if let Some(n) = &notifier {
        n.close(std::time::Duration::from_secs(
            cfg.notify.timeout_secs.max(1) * 2,
        ));
    }
    Ok(code)
}

/// One step of the watch (its checks, then its review threads), said on stderr.
fn watch_step(
    files: &Files,
    forge: &baton_forge::Rest,
    cfg: &baton_config::ForgeConfig,
    tell: &dyn Fn(&str, &str),
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<baton_harness::forge_watch::Watched> {
    use baton_harness::forge_watch::Watched;
    let step = rt.block_on(baton_harness::forge_watch::step(files, forge, cfg, tell))?;
    let reviewed = rt.block_on(baton_harness::forge_watch::reviews(files, forge, cfg, tell));
    let line = match &step {
        Watched::NoPullRequest => {
            "baton: no pull request of baton's yet (`baton issues pr`)".to_string()
        }
        Watched::Waiting(running) if running.is_empty() => {
            "baton: waiting for the pull request's checks to start".to_string()
        }
        Watched::Waiting(running) => format!("baton: checks still running: {}", running.join(", ")),
        Watched::Failed(n, true, names) => format!(
            "baton: CI failed ({}): feature #{n} to fix it is on the list for the next `baton run`",
            names.join(", ")
        ),
        Watched::Failed(n, false, names) => format!(
            "baton: CI failed ({}): feature #{n} to fix it is on the list already",
            names.join(", ")
        ),
        Watched::FixesSpent(_, names) => format!(
            "baton: CI failed ({}) after [forge] max_ci_fixes fixes: a person was told; no more fix features",
            names.join(", ")
        ),
        Watched::NeverStarted(_) => {
            "baton: no check started in time: a person was told; not merged".to_string()
        }
        Watched::Passed(true) => "baton: every check passed: merged".to_string(),
        Watched::Passed(false) => {
            "baton: every check passed ([forge] merge is off: a person merges)".to_string()
        }
        Watched::Merged => "baton: merged already".to_string(),
    };
    eprintln!("{line}");
    {
        let r = reviewed?;
        let list = |v: &[usize]| {
            v.iter()
                .map(|n| format!("#{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !r.added.is_empty() {
            eprintln!(
                "baton: review threads are features now: {} (for the next `baton run`)",
                list(&r.added)
            );
        }
        if !r.answered.is_empty() {
            eprintln!(
                "baton: answered and resolved the review threads of features {}",
                list(&r.answered)
            );
        }
        for who in &r.ignored {
            eprintln!("baton: ignored a review thread by {who}: no write access");
        }
        if r.capped.is_some() {
            eprintln!(
                "baton: [forge] max_review_cycles reached: the review threads left are for a person"
            );
        }
    }
    Ok(step)
}

/// The project, its config, and its forge with baton's token.
fn open(
    dir: &Path,
    secrets: &Secrets,
) -> anyhow::Result<(PathBuf, baton_config::Config, baton_forge::Rest)> {
    let dir = crate::setup::project_dir(dir, crate::setup::CREATE_HINT)?;
    let cfg = crate::setup::load_config(&dir)?;
    crate::status_cmd::require_project(&dir, &cfg)?;
    let forge_cfg = &cfg.forge;
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
            "baton: warning: ${} is not set: the forge is called without a token (a private repository, who may write, and every write need one)",
            forge_cfg.token_env
        );
    }
    let mut forge = baton_forge::Rest::new(forge_cfg, token)?;
    forge.on_wait = Box::new(|line| eprintln!("baton: {line}"));
    Ok((dir, cfg, forge))
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")
}

fn pr(dir: &Path, secrets: &Secrets) -> anyhow::Result<ExitCode> {
    let (dir, cfg, forge) = open(dir, secrets)?;
    let lock = baton_harness::lock::ProjectLock::acquire(&dir, "baton issues pr")?;
    let files = Files::new(dir, cfg.project);
    let f = &cfg.forge;
    let done = runtime()?.block_on(baton_harness::issues::publish(
        &files, &forge, &f.remote, &f.branch,
    ));
    lock.release();
    match done? {
        None => eprintln!("baton: no feature from an issue passes yet: no pull request"),
        Some(p) => eprintln!(
            "baton: {} pull request #{} ({}) from {}: {} feature(s) with their proof",
            if p.opened { "opened" } else { "updated" },
            p.pr.number,
            p.pr.url,
            f.branch,
            p.features.len()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn pull(dir: &Path, secrets: &Secrets) -> anyhow::Result<ExitCode> {
    let (dir, cfg, forge) = open(dir, secrets)?;
    let forge_cfg = cfg.forge.clone();
    let lock = baton_harness::lock::ProjectLock::acquire(&dir, "baton issues pull")?;
    let files = Files::new(dir, cfg.project);
    let pulled = runtime()?.block_on(baton_harness::issues::pull(
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
    for (i, by, who) in &pulled.changed {
        let by = if by.is_empty() {
            "a deleted account"
        } else {
            by
        };
        eprintln!(
            "baton: ignored issue #{i}: changed by {by}, who has no write access, after {who} labelled it; label it again to take it as it reads now"
        );
    }
    Ok(ExitCode::SUCCESS)
}
