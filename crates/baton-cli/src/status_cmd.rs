//! The verbs a person uses on a project between runs, or beside one: `baton
//! status` (where it stands), `baton tell` (guidance for the next session) and
//! `baton unblock` (a feature handed out again).

use std::path::Path;

use anyhow::{Context as _, bail};
use baton_config::Config;
use baton_harness::files::Files;

/// Run `baton unblock`.
pub fn unblock(dir: &Path, feature: &str, note: Option<&str>) -> anyhow::Result<()> {
    let Ok(feature) = feature.trim().trim_start_matches('#').parse::<usize>() else {
        bail!(
            "{feature:?} is not a feature number (features are numbered from 1, as in `baton status`)"
        );
    };
    let dir = crate::setup::project_dir(dir, crate::setup::CREATE_HINT)?;
    let lock = baton_harness::lock::ProjectLock::acquire(&dir, "baton unblock")?;
    let cfg = crate::setup::load_config(&dir)?;
    let files = Files::new(dir, cfg.project);
    let done = baton_harness::block::unblock(&files, feature);
    lock.release();
    eprintln!("baton: {}", done?);
    if let Some(note) = note {
        baton_harness::tell::queue(
            &files,
            &format!(
                "About feature #{feature}, which you declared blocked and a person has unblocked: {note}"
            ),
        )?;
        eprintln!("baton: the note goes into the next coding session's brief");
    }
    Ok(())
}

/// Run `baton tell`: queue guidance for the next coding session's brief. No lock:
/// a run may be going, and it takes the queue as it finds it.
pub fn tell(dir: &Path, text: &str) -> anyhow::Result<()> {
    let dir = crate::setup::project_dir(dir, crate::setup::CREATE_HINT)?;
    let cfg = crate::setup::load_config(&dir)?;
    require_project(&dir, &cfg)?;
    let files = Files::new(dir, cfg.project);
    baton_harness::tell::queue(&files, text)?;
    let waiting = baton_harness::tell::pending(&files.dir).len();
    eprintln!(
        "baton: queued for the next coding session's brief ({waiting} waiting); it is recorded in the ledger as `told` once a session has it"
    );
    Ok(())
}

/// Refuse a directory that holds no project: no `baton.toml`, no feature list and no
/// `.baton/` records (reading it would show an empty project as if it were one).
pub fn require_project(dir: &Path, cfg: &Config) -> anyhow::Result<()> {
    if dir.join(baton_config::CONFIG_FILE).exists()
        || dir.join(&cfg.project.feature_list).exists()
        || dir.join(baton_records::layout::DIR).is_dir()
    {
        return Ok(());
    }
    bail!(
        "{} is not a baton project (no {}, {} or .baton/ records): create one with `baton new DIR --spec FILE`",
        dir.display(),
        baton_config::CONFIG_FILE,
        cfg.project.feature_list
    )
}

/// Run `baton status`.
pub fn status(dir: &Path, json: bool) -> anyhow::Result<()> {
    let dir = crate::setup::project_dir(dir, crate::setup::CREATE_HINT)?;
    // A mistake in baton.toml does not hide where the project stands: say what is
    // wrong and show it with the default settings (the file names included).
    let cfg = crate::setup::load_config(&dir).unwrap_or_else(|e| {
        eprintln!(
            "baton: warning: {e}
baton: showing the status with the default settings; fix baton.toml before `baton run`"
        );
        Config::default()
    });
    require_project(&dir, &cfg)?;
    // The state is read once, by `status`.
    let s = baton_harness::status::status(&Files::new(dir, cfg.project))?
        .with_project_budget(cfg.run.budget_usd)
        .with_stall_limit(cfg.run.stall_sessions);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&s).context("encode status")?
        );
    } else {
        print!(
            "{}",
            baton_records::human::terminal(&baton_harness::status::render(&s))
        );
    }
    Ok(())
}
