//! The agent CLIs baton drives (`BATON_PROVIDER=claude-code`, `codex`) on the same
//! scripted work as baton's own loop, set against baton's figures of the same run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use baton_testkit::{Reply, ScriptedServer, Step, Wire};
use serde_json::json;

use super::{CLI_RUNS, RUNS, Sample, TURNS, children_usage, median, ms, project};

/// Baton's own figures of this run, that the CLIs' are set against.
pub(crate) struct Baton {
    /// Median wall of the `TURNS`-turn session.
    pub(crate) full_wall: Duration,
    /// Baton's overhead per turn (wall), bash excluded.
    pub(crate) per_turn_wall: Duration,
    /// Median wall and CPU of `TURNS` × `bash -c echo`.
    pub(crate) bash_wall: Duration,
    pub(crate) bash_cpu: Duration,
}

/// An agent CLI baton can run a session through.
#[derive(Clone, Copy)]
enum Cli {
    ClaudeCode,
    Codex,
}

impl Cli {
    fn name(self) -> &'static str {
        match self {
            Cli::ClaudeCode => "Claude Code",
            Cli::Codex => "Codex",
        }
    }

    /// Where the CLI is: `$BATON_TEST_CLAUDE` / `$BATON_TEST_CODEX`, else what
    /// `.ci/run` installs into `.ci/npm`.
    fn path(self) -> PathBuf {
        let (var, bin) = match self {
            Cli::ClaudeCode => ("BATON_TEST_CLAUDE", "claude"),
            Cli::Codex => ("BATON_TEST_CODEX", "codex"),
        };
        std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
            // The workspace root, two levels above this crate.
            let root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2);
            root.unwrap().join(".ci/npm/node_modules/.bin").join(bin)
        })
    }

    /// The wire the CLI speaks to the scripted server.
    fn wire(self) -> Wire {
        match self {
            Cli::ClaudeCode => Wire::Anthropic,
            Cli::Codex => Wire::OpenAiResponses,
        }
    }

    /// Turn `i` of the script: one shell `echo`, in the CLI's own tool.
    fn turn(self, i: usize) -> Step {
        let reply = match self {
            Cli::ClaudeCode => Reply::tool("Bash", json!({"command": format!("echo turn {i}")})),
            Cli::Codex => Reply::tool("exec_command", json!({"cmd": format!("echo turn {i}")})),
        };
        Step::Reply(reply)
    }

    /// `baton` with this CLI as its provider, as the test suite runs it (Claude
    /// Code with its home in `home` and its optional traffic off).
    fn baton(self, cli: &Path, server: &ScriptedServer, home: &Path) -> Command {
        let mut c = crate::support::baton_on(server, self.wire());
        match self {
            Cli::ClaudeCode => {
                c.env("BATON_PROVIDER", "claude-code")
                    .env("BATON_CLAUDE", cli)
                    .env("HOME", home)
                    .env("IS_SANDBOX", "1")
                    .env("DISABLE_TELEMETRY", "1")
                    .env("DISABLE_AUTOUPDATER", "1")
                    .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
            }
            Cli::Codex => {
                c.env("BATON_PROVIDER", "codex")
                    .env("BATON_CODEX", cli)
                    .env("BATON_MODEL", "gpt-5-codex");
            }
        }
        c
    }
}

/// One `baton exec` through `cli` with `tool_turns` shell turns, or why it failed.
fn session(cli: Cli, path: &Path, tool_turns: usize) -> Result<Sample, String> {
    let dir = project();
    let home = tempfile::tempdir().unwrap();
    let mut steps: Vec<Step> = (0..tool_turns).map(|i| cli.turn(i)).collect();
    steps.push(Step::Reply(Reply::text("done")));
    let server = ScriptedServer::start(cli.wire(), steps);
    let (cpu0, _) = children_usage();
    let t0 = Instant::now();
    let out = cli
        .baton(path, &server, home.path())
        .arg("exec")
        .arg(dir.path())
        .args(["--prompt", "bench", "--max-turns", "1000"])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let wall = t0.elapsed();
    let (cpu1, _) = children_usage();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty());
        return Err(format!("baton exec {}: {}", out.status, last.unwrap_or("")));
    }
    if server.remaining() != 0 {
        return Err(format!(
            "{} of {} scripted replies left unplayed",
            server.remaining(),
            tool_turns + 1
        ));
    }
    Ok(Sample {
        wall,
        cpu: cpu1 - cpu0,
    })
}

/// Medians (wall, cpu) of the 0-turn and the `TURNS`-turn session.
struct Figures {
    empty: (Duration, Duration),
    full: (Duration, Duration),
}

fn measure(cli: Cli, path: &Path) -> Result<Figures, String> {
    // Warm up file caches and the CLI's own start.
    session(cli, path, 0)?;
    let mut empty = (Vec::new(), Vec::new());
    let mut full = (Vec::new(), Vec::new());
    for _ in 0..CLI_RUNS {
        let e = session(cli, path, 0)?;
        empty.0.push(e.wall);
        empty.1.push(e.cpu);
        let f = session(cli, path, TURNS)?;
        full.0.push(f.wall);
        full.1.push(f.cpu);
    }
    Ok(Figures {
        empty: (median(empty.0), median(empty.1)),
        full: (median(full.0), median(full.1)),
    })
}

fn ratio(a: Duration, b: Duration) -> String {
    if b.is_zero() {
        "n/a (baton's is 0)".into()
    } else {
        format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64())
    }
}

/// Runs each CLI's sessions and prints its rows against `baton`.
pub(crate) fn rows(baton: &Baton) {
    println!(
        "agent CLIs through baton exec, the same {TURNS}-turn scripted work; median of {CLI_RUNS} runs each (fewer than baton's {RUNS}: a CLI session takes seconds)"
    );
    for cli in [Cli::ClaudeCode, Cli::Codex] {
        let name = cli.name();
        let path = cli.path();
        if !path.exists() {
            println!("  {name}: skipped: not installed ({})", path.display());
            continue;
        }
        let f = match measure(cli, &path) {
            Ok(f) => f,
            Err(e) => {
                println!("  {name}: failed: {e}");
                continue;
            }
        };
        let ((ew, ec), (fw, fc)) = (f.empty, f.full);
        let per_turn_wall = fw.saturating_sub(ew).saturating_sub(baton.bash_wall) / TURNS as u32;
        let per_turn_cpu = fc.saturating_sub(ec).saturating_sub(baton.bash_cpu) / TURNS as u32;
        println!("  {name} ({})", path.display());
        println!(
            "    {:<42} wall {}   cpu {}",
            format!("{name}, 0 tool turns"),
            ms(ew),
            ms(ec)
        );
        println!(
            "    {:<42} wall {}   cpu {}",
            format!("{name}, {TURNS} tool turns"),
            ms(fw),
            ms(fc)
        );
        println!(
            "    {:<42} wall {}   cpu {}",
            "cost per turn, bash excluded:",
            ms(per_turn_wall),
            ms(per_turn_cpu)
        );
        println!(
            "    ratio: {TURNS}-turn wall / baton {TURNS}-turn wall = {}",
            ratio(fw, baton.full_wall)
        );
        println!(
            "    ratio: per-turn wall / baton per-turn wall = {}",
            ratio(per_turn_wall, baton.per_turn_wall)
        );
    }
}
