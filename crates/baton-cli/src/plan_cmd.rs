//! `baton new` (from a spec, an idea, or an existing repository), `baton plan` and
//! `baton accept`: how a project starts and grows.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use baton_harness::files::Files;
use baton_harness::new::{Browser, Kind};
use baton_harness::plan::Plan;

use crate::run_cmd::{ModelFlags, RunArgs, What};

/// Arguments of `baton new`.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The project directory to create (with --adopt: the existing repository).
    dir: PathBuf,
    /// The specification of what to build (a text file); with --adopt, the goal.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["idea", "goal"])]
    spec: Option<PathBuf>,
    /// A one-line idea instead of a spec: a planner session expands it into the
    /// full specification (app_spec.txt) and commits it, then the run goes on
    /// (with --plan-only it stops there, for you to read and edit the spec).
    #[arg(long, value_name = "TEXT", conflicts_with = "adopt")]
    idea: Option<String>,
    /// Stop after the planner has written the specification (with --idea).
    #[arg(long, requires = "idea")]
    plan_only: bool,
    /// Adopt the existing git repository DIR (no feature list yet): baton adds its
    /// files on top of the history, and the initializer studies the code, its tests
    /// and how to run it before listing what works and the goal's features. A tree
    /// with uncommitted changes is refused.
    #[arg(long)]
    adopt: bool,
    /// What to do with the adopted project (with --adopt; or --spec FILE).
    #[arg(long, value_name = "TEXT", requires = "adopt")]
    goal: Option<String>,
    /// What is built: web (tested in a browser), cli, library or service (tested
    /// through commands). Default: read from the spec, the idea or the goal by a few
    /// telling words (web when none; after --idea, read again from the spec the
    /// planner wrote); baton prints how it decided and writes it as
    /// [project] kind in baton.toml. A web project gets [browser] enabled = true when
    /// Chromium and @playwright/mcp are found (else a warning says how to install them).
    #[arg(long, value_name = "KIND", value_parser = ["web", "cli", "library", "service"])]
    kind: Option<String>,
    /// How many features the initializer is asked for. Default: from the spec's
    /// size (three per non-empty line, between 20 and 200; 200 for an idea, whose
    /// planner writes a full spec); baton prints the number and why.
    #[arg(long)]
    features: Option<u32>,
    /// Write into a directory that already has files.
    #[arg(long, conflicts_with = "adopt")]
    force: bool,
    #[command(flatten)]
    model: ModelFlags,
}

/// Run `baton new`.
pub fn new(args: NewArgs, secrets: &crate::secrets::Secrets) -> anyhow::Result<ExitCode> {
    let dir = &args.dir;
    let kind = |text: &str, source: &str| kind_of(args.kind.as_deref(), text, source);
    let features = |text: Option<&str>| features_for(args.features, text);
    if args.adopt {
        let (spec, kind) = match (&args.goal, &args.spec) {
            (Some(goal), None) => (baton_harness::new::goal_spec(goal)?, kind(goal, "the goal")),
            (None, Some(file)) => {
                let spec = baton_harness::new::read_spec(file)?;
                let kind = kind(&spec, "the spec");
                (spec, kind)
            }
            _ => bail!("--adopt needs the goal: --goal TEXT or --spec FILE"),
        };
        baton_harness::new::adopt(dir, &spec, features(Some(&spec)), kind, browser)?;
        eprintln!(
            "baton: adopted {} (its history is untouched; baton.toml, app_spec.txt and .gitignore committed on top); next: `baton run {}`, whose first session studies the code",
            dir.display(),
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    match (&args.spec, &args.idea) {
        (Some(spec), None) => {
            let text = baton_harness::new::read_spec(spec)?;
            let kind = kind(&text, "the spec");
            let features = features(Some(&text));
            baton_harness::new::create_with(dir, &text, features, kind, args.force, browser)?;
            eprintln!(
                "baton: created {} ({features} features targeted); next: `baton run {}`",
                dir.display(),
                dir.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        (None, Some(idea)) => {
            let text = baton_harness::new::idea_spec(idea)?;
            let kind = kind(idea, "the idea");
            let features = features(None);
            baton_harness::new::create_with(dir, &text, features, kind, args.force, browser)?;
            eprintln!(
                "baton: created {}; a planner session now expands the idea into app_spec.txt",
                dir.display()
            );
            let run = || RunArgs::for_dir(dir.clone()).with(args.model.clone());
            let planned = crate::run_cmd::run_what(run(), secrets, What::Plan(Plan::Spec));
            let code = match planned {
                Ok(code) => code,
                Err(e) => {
                    eprintln!(
                        "baton: {} holds the idea as app_spec.txt; once this is fixed, `baton plan {}` runs the planner again",
                        dir.display(),
                        dir.display()
                    );
                    return Err(e);
                }
            };
            if code != ExitCode::SUCCESS {
                return Ok(code);
            }
            // The idea is a line; the spec the planner wrote says what is built.
            if args.kind.is_none()
                && let Some(g) =
                    baton_harness::new::kind_from_planned_spec(dir, kind, features, browser)?
            {
                eprintln!(
                    "baton: kind: {} ({}), not {} as the idea suggested; baton.toml says so now",
                    g.kind.as_str(),
                    g.reason("the planner's spec"),
                    kind.as_str()
                );
            }
            if args.plan_only {
                return Ok(code);
            }
            crate::run_cmd::run(run(), secrets)
        }
        _ => bail!(
            "say what to build: --spec FILE (a specification), --idea TEXT (a planner writes the specification), or --adopt --goal TEXT (an existing repository)"
        ),
    }
}

/// How many features the initializer is asked for: `flag` (`--features`), else
/// from the size of the spec `text` (three per non-empty line, rounded up to ten,
/// between 20 and 200: a page of spec does not warrant 200 features, and asking
/// for them made a small spec's initializer fail twice), else 200 (an idea, whose
/// planner writes a full spec). Says which on stderr.
fn features_for(flag: Option<u32>, text: Option<&str>) -> u32 {
    if let Some(n) = flag {
        return n;
    }
    let Some(text) = text else {
        return 200;
    };
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count() as u32;
    let n = (lines * 3).div_ceil(10).saturating_mul(10).clamp(20, 200);
    eprintln!(
        "baton: features: {n} asked (from the spec's {lines} non-empty lines); change [project] features in baton.toml or pass --features"
    );
    n
}

/// The project's kind: `flag` (`--kind`), else read from `text` (named `source`,
/// e.g. `the spec`); says which and why on stderr.
fn kind_of(flag: Option<&str>, text: &str, source: &str) -> Kind {
    if let Some(kind) = flag.and_then(Kind::parse) {
        eprintln!("baton: kind: {} (--kind)", kind.as_str());
        return kind;
    }
    let guess = baton_harness::new::guess_kind(text);
    eprintln!(
        "baton: kind: {} ({}); change [project] kind in baton.toml or pass --kind",
        guess.kind.as_str(),
        guess.reason(source)
    );
    guess.kind
}

/// `[browser]` of a new web project in `project` (its canonical path): on when
/// Chromium and the Playwright MCP server are found from where a run starts MCP
/// servers, else off with a warning that says how to install them.
fn browser(project: &Path) -> Browser {
    let launch = baton_mcp::launch_dir(project);
    if let Err(e) = std::fs::create_dir_all(&launch) {
        eprintln!(
            "baton: warning: cannot create {} ({e}); the browser is off in baton.toml",
            launch.display()
        );
        return Browser::Missing;
    }
    match crate::doctor_cmd::browser_for_new(&launch) {
        Ok(found) => {
            eprintln!(
                "baton: browser: on ({}); the agent tests in headless Chromium",
                found.found
            );
            Browser::On {
                chromium: found.chromium,
            }
        }
        Err(missing) => {
            let mut msg = String::from(
                "baton: warning: this is a web project, but the browser is off in baton.toml: its parts are missing, so the agent cannot test in a browser:",
            );
            for m in &missing {
                msg.push_str(&format!("\n  {m}"));
            }
            msg.push_str(&format!(
                "\n  then set [browser] enabled = true in {}/baton.toml (`baton doctor {} --browser` checks)",
                project.display(),
                project.display()
            ));
            eprintln!("{msg}");
            Browser::Missing
        }
    }
}

/// Arguments of `baton plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    /// The project directory.
    dir: PathBuf,
    /// What to add, as a text file. Without --spec and --idea, on a project that
    /// has no feature list yet: expand the idea in its spec into a full
    /// specification (again, after `baton new --idea`).
    #[arg(long, value_name = "FILE", conflicts_with = "idea")]
    spec: Option<PathBuf>,
    /// What to add, in a sentence or a few.
    #[arg(long, value_name = "TEXT")]
    idea: Option<String>,
    #[command(flatten)]
    model: ModelFlags,
}

/// Run `baton plan`.
pub fn plan(args: PlanArgs, secrets: &crate::secrets::Secrets) -> anyhow::Result<ExitCode> {
    let dir = crate::setup::project_dir(&args.dir, crate::setup::CREATE_HINT)?;
    let cfg = crate::setup::load_config(&dir)?;
    crate::status_cmd::require_project(&dir, &cfg)?;
    let plan = match (&args.spec, &args.idea) {
        (Some(file), None) => Plan::More(baton_harness::new::read_spec(file)?),
        (None, Some(idea)) => Plan::More(idea.clone()),
        _ if !dir.join(&cfg.project.feature_list).exists()
            && !dir.join(baton_records::layout::ACCEPTED).exists() =>
        {
            Plan::Spec
        }
        _ => bail!("say what to add: --spec FILE or --idea TEXT"),
    };
    let run = RunArgs::for_dir(dir).with(args.model.clone());
    crate::run_cmd::run_what(run, secrets, What::Plan(plan))
}

/// Run `baton accept`: show a person's edit of the feature list, ask (unless
/// `yes`), and accept it.
pub fn accept(dir: &Path, yes: bool) -> anyhow::Result<ExitCode> {
    let dir = crate::setup::project_dir(dir, crate::setup::CREATE_HINT)?;
    let lock = baton_harness::lock::ProjectLock::acquire(&dir, "baton accept")?;
    let result = accept_locked(&dir, yes);
    lock.release();
    result
}

fn accept_locked(dir: &Path, yes: bool) -> anyhow::Result<ExitCode> {
    let cfg = crate::setup::load_config(dir)?;
    let files = Files::new(dir.to_path_buf(), cfg.project);
    let edit = baton_harness::edit::read(&files)?;
    if edit.is_empty() {
        eprintln!(
            "baton: {} is the accepted list; nothing to accept",
            files.names.feature_list
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    for (n, what) in &edit.added {
        out.push_str(&format!("  + #{n} {what}\n"));
    }
    for (n, what) in &edit.amended {
        out.push_str(&format!("  ~ #{n} {what}\n"));
    }
    eprint!(
        "baton: {} changed since it was accepted:\n{out}",
        files.names.feature_list
    );
    if !yes {
        if !std::io::stdin().is_terminal() {
            bail!(
                "not accepted: run `baton accept {} --yes` to accept without a question",
                dir.display()
            );
        }
        eprint!("Accept these changes? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("baton: not accepted; the accepted list is unchanged");
            return Ok(ExitCode::from(1));
        }
    }
    let commit = baton_harness::edit::accept(&files, &edit)?;
    eprintln!(
        "baton: accepted ({} added, {} changed), recorded in the ledger{}",
        edit.added.len(),
        edit.amended.len(),
        commit
            .map(|c| format!(", committed as {}", &c[..c.len().min(12)]))
            .unwrap_or_default()
    );
    Ok(ExitCode::SUCCESS)
}
