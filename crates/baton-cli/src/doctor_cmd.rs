//! `baton doctor`: are the outside parts baton uses on this machine, and how to
//! install what is missing.

use baton_agent::cli_session::CliKind;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use baton_policy::sandbox::{self, Support};

/// Arguments of `baton doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The project directory whose baton.toml says how the browser is run (default:
    /// the current directory; no baton.toml means the defaults).
    dir: Option<PathBuf>,
    /// Require the browser's parts (Node, @playwright/mcp, Chromium) even if the
    /// project does not enable the browser.
    #[arg(long)]
    browser: bool,
}

/// How long one probe may run (npx may be slow the first time).
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Oldest Node major version `@playwright/mcp` supports.
const MIN_NODE: u32 = 18;

/// One line of the report: `ok`, `missing` (a required part) or `absent` (an
/// optional one).
struct Check {
    name: &'static str,
    required: bool,
    result: Result<String, Missing>,
}

/// Why a part is missing and how to install it.
struct Missing {
    why: String,
    fix: String,
}

/// Run `baton doctor`.
pub fn run(args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let dir = args.dir.unwrap_or_else(|| PathBuf::from("."));
    if !dir.is_dir() {
        anyhow::bail!(
            "{} {}: give a project directory (or none for the current one)",
            dir.display(),
            if dir.exists() {
                "is not a directory"
            } else {
                "does not exist"
            }
        );
    }
    let cfg = crate::setup::load_config(&dir)?;
    let browser_required = args.browser || cfg.browser.enabled;
    let why_browser = if cfg.browser.enabled {
        "the browser is enabled in baton.toml"
    } else if args.browser {
        "--browser"
    } else {
        "the browser is off in baton.toml; [browser] enabled = true needs these"
    };
    println!("baton doctor: {} ({why_browser})", dir.display());

    let mut checks = vec![
        Check {
            name: "git",
            required: true,
            result: probe("git", &["--version"], &dir)
                .map_err(|why| missing(why, "apt-get install git")),
        },
        Check {
            name: "bash",
            required: true,
            result: probe("bash", &["--version"], &dir)
                .map_err(|why| missing(why, "apt-get install bash")),
        },
        Check {
            name: "node",
            required: browser_required,
            result: node(&dir),
        },
        Check {
            name: "playwright",
            required: browser_required,
            result: playwright_mcp(&cfg.browser.command, &dir),
        },
        Check {
            name: "chromium",
            required: browser_required,
            result: chromium(&cfg.browser.chromium, &dir),
        },
    ];
    // Each agent CLI baton drives, required where the project's provider names it.
    checks.extend(CliKind::ALL.into_iter().map(|kind| {
        let profile = kind.profile();
        Check {
            name: profile.program,
            required: cfg.agent.provider.as_deref() == Some(profile.provider),
            result: agent_cli(kind, &dir),
        }
    }));
    checks.extend([
        Check {
            name: "landlock",
            required: false,
            result: landlock(),
        },
        Check {
            name: "bubblewrap",
            required: false,
            result: bubblewrap(),
        },
    ]);

    let mut missing_required = 0;
    for c in &checks {
        match &c.result {
            Ok(found) => println!("  ok       {:<11} {found}", c.name),
            Err(m) => {
                let status = if c.required {
                    missing_required += 1;
                    "missing"
                } else {
                    "absent"
                };
                println!("  {status:<8} {:<11} {}", c.name, m.why);
                println!("  {:<20} {}", "", m.fix);
            }
        }
    }
    if missing_required == 0 {
        println!("all required parts are present");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{missing_required} required part(s) missing");
        Ok(ExitCode::from(1))
    }
}

fn missing(why: String, install: &str) -> Missing {
    Missing {
        why,
        fix: format!("install: {install}"),
    }
}

/// The agent CLI `kind` (`$BATON_CLAUDE` or `claude`, `$BATON_CODEX` or
/// `codex`, …), as its provider would start it.
fn agent_cli(kind: CliKind, dir: &Path) -> Result<String, Missing> {
    let profile = kind.profile();
    let program = std::env::var(profile.program_var)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| profile.program.to_string());
    // As a run finds it: on the PATH baton trusts, never in the project.
    let Some(found) = crate::setup::on_path(&program) else {
        return Err(missing(format!("{program} not found"), profile.install));
    };
    let program = found.display().to_string();
    probe(&program, &["--version"], dir)
        .map(|v| format!("{program}: {v}"))
        .map_err(|why| missing(why, profile.install))
}

fn node(dir: &Path) -> Result<String, Missing> {
    let fix = "apt-get install nodejs npm";
    let version = probe("node", &["--version"], dir).map_err(|why| missing(why, fix))?;
    let major: Option<u32> = version
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok());
    match major {
        Some(m) if m >= MIN_NODE => Ok(version),
        _ => Err(missing(
            format!("{version} is too old: @playwright/mcp needs Node {MIN_NODE} or newer"),
            fix,
        )),
    }
}

/// `@playwright/mcp`, resolved the way `[browser] command` runs it, from `dir`.
fn playwright_mcp(command: &[String], dir: &Path) -> Result<String, Missing> {
    let install = "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install -g @playwright/mcp";
    let Some((program, args)) = command.split_first() else {
        return Err(Missing {
            why: "[browser] command is empty".to_string(),
            fix: "set [browser] command in baton.toml, e.g. [\"npx\", \"--no-install\", \"@playwright/mcp\"]".to_string(),
        });
    };
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.push("--version");
    let line = command.join(" ");
    match probe(program, &args, dir) {
        Ok(v) => Ok(format!(
            "@playwright/mcp {} ({line})",
            v.trim_start_matches("Version ")
        )),
        Err(why) => Err(missing(format!("`{line}` does not run: {why}"), install)),
    }
}

/// The browser's parts of a new web project, found as a run would start them:
/// Chromium at the default `[browser] chromium`, else `chromium` or
/// `chromium-browser` on `PATH`; the Playwright MCP server by the default
/// `[browser] command`, run from `launch` (where a run starts MCP servers, see
/// `baton_mcp::launch_dir`). What was found, or each missing part with how to
/// install it.
pub fn browser_for_new(launch: &Path) -> Result<BrowserFound, Vec<String>> {
    let defaults = baton_config::BrowserConfig::default();
    let mut missing = Vec::new();
    let chromium = match chromium(&defaults.chromium, launch) {
        Ok(found) => Some((None, found)),
        Err(first) => {
            let on_path = ["chromium", "chromium-browser"]
                .iter()
                .filter_map(|name| crate::setup::on_path(name))
                .find_map(|p| {
                    let p = p.display().to_string();
                    chromium(&p, launch).ok().map(|found| (Some(p), found))
                });
            if on_path.is_none() {
                missing.push(format!("{}; {}", first.why, first.fix));
            }
            on_path
        }
    };
    let playwright = playwright_mcp(&defaults.command, launch)
        .map_err(|m| missing.push(format!("{}; {}", m.why, m.fix)))
        .ok();
    match (chromium, playwright) {
        (Some((path, chromium)), Some(playwright)) => Ok(BrowserFound {
            chromium: path,
            found: format!("{chromium}, {playwright}"),
        }),
        _ => Err(missing),
    }
}

/// The browser's parts [`browser_for_new`] found.
#[derive(Debug)]
pub struct BrowserFound {
    /// Chromium's path when it is not the default `[browser] chromium`.
    pub chromium: Option<String>,
    /// What was found, for a person.
    pub found: String,
}

fn chromium(path: &str, dir: &Path) -> Result<String, Missing> {
    let install = "apt-get install chromium";
    if !Path::new(path).exists() {
        return Err(missing(
            format!("{path} not found ([browser] chromium)"),
            install,
        ));
    }
    probe(path, &["--version"], dir)
        .map(|v| format!("{v} ({path})"))
        .map_err(|why| missing(why, install))
}

fn bubblewrap() -> Result<String, Missing> {
    match sandbox::bwrap() {
        Some(p) => Ok(format!(
            "{}: git's config, hooks and info, .baton/ and baton.toml are read-only inside the sandbox",
            p.display()
        )),
        None => Err(Missing {
            why: BWRAP_MISSING.to_string(),
            fix: "apt-get install bubblewrap (or your system's package of bwrap)".to_string(),
        }),
    }
}

/// Why a missing bubblewrap matters (`baton doctor`, and once per `baton run`).
pub const BWRAP_MISSING: &str = "bubblewrap (bwrap) is not available: a sandboxed command can still write git's config and hooks, .baton/ and baton.toml (Landlock cannot make them read-only; baton's gates undo such changes after each session), and read the environment of other processes of yours";

fn landlock() -> Result<String, Missing> {
    match sandbox::probe() {
        Support::Landlock(abi) => Ok(format!(
            "ABI {abi}: Bash commands can run in baton's OS sandbox"
        )),
        Support::Unsupported => Err(Missing {
            why: "this kernel does not enforce Landlock: Bash commands run without the OS sandbox (the command policy still applies)".to_string(),
            fix: "use a Linux kernel 5.13 or newer with Landlock enabled (lsm=landlock)".to_string(),
        }),
    }
}

/// Run `program args` in `dir` with no input; the first non-empty line it printed
/// (stdout, else stderr) if it exits 0, else why not.
fn probe(program: &str, args: &[&str], dir: &Path) -> Result<String, String> {
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("{program} not found"),
            _ => format!("cannot run {program}: {e}"),
        })?;
    // Read both pipes while waiting, so a chatty program cannot block on a full pipe.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < PROBE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{program} did not answer within {} s",
                    PROBE_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("cannot wait for {program}: {e}")),
        }
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    let first = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    };
    let text = first(&stdout).or_else(|| first(&stderr));
    if status.success() {
        Ok(text.unwrap_or_else(|| "(no version printed)".to_string()))
    } else {
        Err(format!(
            "exit {}{}",
            status
                .code()
                .map_or("by signal".to_string(), |c| c.to_string()),
            text.map(|t| format!(": {t}")).unwrap_or_default()
        ))
    }
}
