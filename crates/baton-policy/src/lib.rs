//! `baton-policy` owns what the agent may run: the **command policy** that judges
//! every `Bash` command before it runs, and the **OS sandbox** (Linux Landlock and
//! `no_new_privs`) that confines whatever does run.
//!
//! The policy parses the command with a real bash grammar (tree-sitter-bash) and walks
//! the whole tree: lists, pipelines, subshells, groups, `if`/`for`/`while`/`case`,
//! function bodies, command and process substitutions, here-documents, redirections
//! and assignments. Anything it cannot prove safe is refused: a command name that is
//! not a literal word, a program outside the allowlist, an interpreter given inline
//! code, a wrapper whose wrapped command is refused, a write outside the project,
//! a secret location, a change to `.git` or `.baton`, and the escape hatches of
//! allowed programs. Each refusal says which part was refused, why, and what to do
//! instead, in words written for the model that sent the command.
//!
//! Inside baton's bubblewrap sandbox ([`Policy::with_bubblewrap`]) the policy
//! refuses only what that sandbox cannot bound: inline code, `sqlite3` on the
//! project's databases, `PATH` with project directories, killing by name and
//! pushing to the repository's own remotes are then allowed.
//!
//! ```
//! use baton_config::PolicyConfig;
//! use baton_policy::Policy;
//!
//! let dir = tempfile::tempdir()?;
//! let policy = Policy::new(&PolicyConfig::default(), dir.path())?;
//! assert!(policy.check("npm test 2>&1 | tail -20 && git status").is_allowed());
//!
//! let verdict = policy.check("git -c core.pager='sh -c id' log");
//! assert!(!verdict.is_allowed());
//! let refusal = &verdict.refusals()[0];
//! assert!(refusal.reason.contains("-c"));
//! println!("{}", verdict.message());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The policy is a [`baton_tools::ToolGate`]: give it to the agent loop and every
//! `Bash` call (and every `Read` of a secret location) is judged before it runs.

mod braces;
mod check;
mod cmds;
pub mod helpers;
mod hidden;
#[cfg(target_os = "linux")]
pub mod namespace;
#[cfg(target_os = "linux")]
pub mod net;
mod places;
mod rules;
pub mod sandbox;
pub mod secrets;
pub mod simple;
#[cfg(target_os = "linux")]
pub mod spawner;
mod word;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use baton_config::{PolicyConfig, PolicyMode};
use baton_tools::{GateDecision, ProcessRegistry, ToolGate};
use serde::Serialize;
use serde_json::Value;

use crate::places::{Places, Secret};

/// An error building a [`Policy`].
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The project directory does not exist or cannot be resolved.
    #[error("policy: cannot resolve the project directory {path}: {source}")]
    ProjectDir {
        /// The directory given.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A name in `[policy]` is not usable.
    #[error("policy: [policy] {field}: {message}")]
    Config {
        /// The key, e.g. `allow`.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

/// One part of a command that was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The refused part of the command, as written (shortened when long).
    pub part: String,
    /// Why it was refused.
    pub reason: String,
    /// What is allowed instead.
    pub instead: String,
    /// Refused because the command is beyond the checker's limits or the checker
    /// failed, not for what it does.
    #[serde(skip)]
    pub(crate) unjudged: bool,
}

/// The policy's judgement of one command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "lowercase")]
pub enum Verdict {
    /// The command may run.
    Allowed,
    /// The command must not run, for these reasons (at least one).
    Refused {
        /// Every refused part, in the order found.
        refusals: Vec<Refusal>,
    },
}

impl Verdict {
    /// Whether the command may run.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Verdict::Allowed)
    }

    /// Whether the command was refused unjudged: too long, too deeply nested or too
    /// costly to check, or the checker failed (see `docs/policy.md`, "Limits"). The
    /// Claude Code hook answers these with exit 2.
    pub fn beyond_limits(&self) -> bool {
        self.refusals().iter().any(|r| r.unjudged)
    }

    /// The refusals (empty when allowed).
    pub fn refusals(&self) -> &[Refusal] {
        match self {
            Verdict::Allowed => &[],
            Verdict::Refused { refusals } => refusals,
        }
    }

    /// The refusal as text for the model: one line per refused part, each saying
    /// the part, the reason and what to do instead.
    pub fn message(&self) -> String {
        let r = self.refusals();
        match r {
            [] => "allowed".to_string(),
            [one] => format_refusal(one),
            many => many
                .iter()
                .map(|x| format!("- {}", format_refusal(x)))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

fn format_refusal(r: &Refusal) -> String {
    format!("`{}`: {}. Instead: {}", r.part, r.reason, r.instead)
}

/// The command policy of one project. Cheap to share (`Arc`); checks are
/// independent and may run from several threads.
#[derive(Debug)]
pub struct Policy {
    mode: PolicyMode,
    pub(crate) places: Places,
    pub(crate) user_allow: HashSet<String>,
    pub(crate) deny: HashSet<String>,
    pub(crate) npx_packages: HashSet<String>,
    pub(crate) processes: Option<Arc<ProcessRegistry>>,
    /// The commands' launcher, which knows the pids inside their PID namespace.
    pub(crate) launcher: Option<Arc<dyn baton_tools::Launcher>>,
    /// `[policy] remotes`: remote names and URL prefixes git, npm and pip may reach.
    pub(crate) remotes: Vec<String>,
    /// The commands run inside baton's bubblewrap sandbox ([`Policy::with_bubblewrap`]).
    pub(crate) bubblewrap: bool,
    /// The sandbox launcher the commands go through, when the policy knows it: it
    /// tells whether the run's PID namespace is (still) in force.
    pub(crate) sandbox_launcher: Option<sandbox::SandboxLauncher>,
    /// The remotes named in the repository's configuration when the policy was made.
    pub(crate) configured_remotes: Vec<String>,
}

/// What a refusal adds when the command is one baton allows inside its bubblewrap
/// sandbox (the run's PID namespace, read-only binds, Landlock): a fact the agent
/// can act on (its "instead" says how), with no advice for a person in it.
pub const BUBBLEWRAP_HINT: &str =
    "this run's sandbox (Landlock without bubblewrap) cannot bound it";

/// What a person can do about a refusal that says [`BUBBLEWRAP_HINT`]: told in
/// the run's output, never to the agent.
pub const BUBBLEWRAP_FIX: &str = "apt-get install bubblewrap (and keep [sandbox] enabled = true): inside baton's bubblewrap sandbox the agent may do this";

impl Policy {
    /// The policy configured by `cfg` for the project at `project_dir`.
    pub fn new(cfg: &PolicyConfig, project_dir: &Path) -> Result<Policy, PolicyError> {
        let project = project_dir
            .canonicalize()
            .map_err(|source| PolicyError::ProjectDir {
                path: project_dir.to_path_buf(),
                source,
            })?;
        // Its commands write there: none of baton's helpers comes from it.
        helpers::distrust(&project);
        for (field, names) in [
            ("allow", &cfg.allow),
            ("deny", &cfg.deny),
            ("dev_server_names", &cfg.dev_server_names),
        ] {
            if let Some(bad) = names
                .iter()
                .find(|n| n.is_empty() || n.contains(['/', ' ', '\t', '\n']))
            {
                return Err(PolicyError::Config {
                    field,
                    message: format!("{bad:?} is not a command name (no spaces or slashes)"),
                });
            }
        }
        let mut npx_packages: HashSet<String> =
            rules::NPX_PACKAGES.iter().map(|s| s.to_string()).collect();
        npx_packages.extend(cfg.npx_packages.iter().cloned());
        Ok(Policy {
            mode: cfg.mode,
            places: Places::new(&project),
            user_allow: cfg.allow.iter().cloned().collect(),
            deny: cfg.deny.iter().cloned().collect(),
            npx_packages,
            processes: None,
            launcher: None,
            remotes: cfg.remotes.clone(),
            bubblewrap: false,
            sandbox_launcher: None,
            configured_remotes: cmds::configured_remotes(&project),
        })
    }

    /// The same policy, told whether the commands it judges run inside baton's
    /// bubblewrap sandbox: one PID namespace for the run with a `/proc` of its own
    /// (only the run's processes), `.git/config`, `.git/hooks`, `.git/info`,
    /// `.baton/` and `baton.toml` bound read-only, and Landlock (see
    /// `docs/policy.md`, "What the sandbox bounds"). Then it also allows what that
    /// sandbox bounds: inline code for python, node, ruby and perl (and programs
    /// read from standard input or a here-document), `sqlite3` on a database file
    /// of the project, `PATH` extended with project directories, `pkill`,
    /// `killall`, `fuser -k` and `kill` of any process of the run, and `git
    /// push`/`pull`/`fetch` to a remote named in the repository's configuration
    /// (as it was when the policy was made). Without it (the default), those are
    /// refused with a reason that says so.
    ///
    /// Set it only when every command this policy judges runs through a
    /// [`sandbox::SandboxLauncher`] that found bubblewrap working
    /// ([`sandbox::SandboxLauncher::bubblewrap`]), or through
    /// `baton --sandbox-shell` with a `"join"` target. [`SessionGuard::new`] sets it
    /// itself, with [`Policy::with_sandbox_launcher`].
    pub fn with_bubblewrap(mut self, in_force: bool) -> Policy {
        self.bubblewrap = in_force;
        self
    }

    /// [`Policy::with_bubblewrap`] as `launcher` says
    /// ([`sandbox::SandboxLauncher::bubblewrap`]), following it through the run: if
    /// the run's PID namespace fails to start (each command then gets a bubblewrap
    /// of its own, without it), `pkill`, `killall`, `fuser -k` and `kill` of other
    /// processes are refused again.
    pub fn with_sandbox_launcher(mut self, launcher: &sandbox::SandboxLauncher) -> Policy {
        self.bubblewrap = launcher.bubblewrap();
        self.sandbox_launcher = Some(launcher.clone());
        self
    }

    /// The same policy, taking `names` as the remotes the user configured for the
    /// repository (inside bubblewrap, `git push`/`pull`/`fetch` may reach them). By
    /// default they are the `[remote "NAME"]` sections of `.git/config` when the
    /// policy is made; a harness that recorded them when the run started (before
    /// any agent command) can give those instead.
    pub fn with_repository_remotes(mut self, names: Vec<String>) -> Policy {
        self.configured_remotes = names;
        self
    }

    /// Whether the policy judges commands as running inside baton's bubblewrap
    /// sandbox ([`Policy::with_bubblewrap`]).
    pub fn bubblewrap(&self) -> bool {
        self.bubblewrap
    }

    /// Whether the commands share the run's PID namespace (bubblewrap in force,
    /// and the namespace did not fail to start): signals reach only the run's own
    /// processes.
    pub(crate) fn pid_namespace(&self) -> bool {
        self.bubblewrap
            && self
                .sandbox_launcher
                .as_ref()
                .is_none_or(sandbox::SandboxLauncher::pid_namespace)
    }

    /// The same policy, also allowing `kill` of the processes in the groups `registry`
    /// owns (the processes started in this run). Without it, `kill` of a pid is
    /// always refused (only `kill $!`, `kill %N` and `kill $(jobs -p)` remain).
    pub fn with_processes(mut self, registry: Arc<ProcessRegistry>) -> Policy {
        self.processes = Some(registry);
        self
    }

    /// The same policy, reading the pids in `kill` commands as the commands that
    /// `launcher` starts see them (they may have a PID namespace of their own).
    pub fn with_launcher(mut self, launcher: Option<Arc<dyn baton_tools::Launcher>>) -> Policy {
        self.launcher = launcher;
        self
    }

    /// The project directory (canonical).
    pub fn project_dir(&self) -> &Path {
        &self.places.project
    }

    /// Whether the policy checks anything (`mode = "allowlist"`).
    pub fn enforcing(&self) -> bool {
        self.mode == PolicyMode::Allowlist
    }

    /// Judge one `Bash` command line, as `bash -c` would run it in the project dir.
    ///
    /// Fails closed: a command too long, too deeply nested or too costly to check
    /// (see `docs/policy.md`, "Limits") is refused, and so is any command whose
    /// judgement fails internally (a panic in the checker is caught and becomes a
    /// refusal; every profile of this workspace unwinds).
    pub fn check(&self, command: &str) -> Verdict {
        self.check_counted(command).0
    }

    /// [`Policy::check`], also returning the checker's work in steps (statements,
    /// words and syntax nodes visited): at most about 400,000 for any input. For tests
    /// and benchmarks that bound the checker's cost without timing it.
    pub fn check_counted(&self, command: &str) -> (Verdict, u64) {
        match self.mode {
            PolicyMode::Off => (Verdict::Allowed, 0),
            PolicyMode::Allowlist => {
                let (refusals, work) = self.judge_isolated(command);
                if refusals.is_empty() {
                    (Verdict::Allowed, work)
                } else {
                    (Verdict::Refused { refusals }, work)
                }
            }
        }
    }

    /// Run the checker on its own thread with a large stack, so no input can
    /// overflow the caller's stack, and turn any failure into a refusal.
    fn judge_isolated(&self, command: &str) -> (Vec<Refusal>, u64) {
        let failed = |what: String| {
            (
                vec![Refusal {
                    part: check::short(command),
                    reason: format!(
                        "baton's checker failed on this command ({what}), so it cannot prove it safe"
                    ),
                    instead: "write the command more simply, or split it into several commands"
                        .into(),
                    unjudged: true,
                }],
                0,
            )
        };
        std::thread::scope(|scope| {
            let spawned = std::thread::Builder::new()
                .name("baton-policy-check".into())
                .stack_size(CHECK_STACK)
                .spawn_scoped(scope, || {
                    #[cfg(debug_assertions)]
                    if command.contains(FAULT_MARKER) {
                        panic!("fault injected for a test");
                    }
                    check::check(self, command)
                });
            match spawned {
                Ok(handle) => match handle.join() {
                    Ok(out) => out,
                    Err(_) => failed("internal error".into()),
                },
                Err(e) => failed(format!("cannot start the checker thread: {e}")),
            }
        })
    }

    /// Judge a `Read` of `file_path` (absolute or relative to the project): refused
    /// when it reaches a secret location.
    pub fn check_read(&self, file_path: &str) -> Verdict {
        if self.mode == PolicyMode::Off {
            return Verdict::Allowed;
        }
        let project = &self.places.project;
        let path = if Path::new(file_path).is_absolute() {
            PathBuf::from(file_path)
        } else {
            project.join(file_path)
        };
        let mut candidates = vec![path.to_string_lossy().into_owned()];
        let real = places::real_path(&path);
        if real != path {
            candidates.push(real.to_string_lossy().into_owned());
        }
        for c in candidates {
            let escaped = crate::word::escape(&c);
            if let Some(Secret::Inside(what)) = self.places.secret(&escaped, project, false) {
                return Verdict::Refused {
                    refusals: vec![Refusal {
                        part: file_path.to_string(),
                        reason: format!(
                            "{what} is a secret location (credentials, keys or other users' files)"
                        ),
                        instead:
                            "read files of the project; credentials are never shown to the agent"
                                .into(),
                        unjudged: false,
                    }],
                };
            }
        }
        Verdict::Allowed
    }
}

/// Stack of the checker's thread: the walk recurses along the syntax tree, whose
/// depth is bounded, with room to spare.
const CHECK_STACK: usize = 64 * 1024 * 1024;

/// In debug builds, a command containing this text makes the checker panic: tests use
/// it to prove that an internal failure refuses the command (and exits 2 in the hook).
#[cfg(debug_assertions)]
#[doc(hidden)]
pub const FAULT_MARKER: &str = "__baton_test_fault_in_checker__";

impl ToolGate for Policy {
    fn check(&self, tool: &str, input: &Value) -> GateDecision {
        let verdict = match tool {
            "Bash" => match input.get("command").and_then(Value::as_str) {
                Some(cmd) => Policy::check(self, cmd),
                // Malformed input is reported by the tool itself.
                None => Verdict::Allowed,
            },
            "Read" => match input.get("file_path").and_then(Value::as_str) {
                Some(p) => self.check_read(p),
                None => Verdict::Allowed,
            },
            _ => Verdict::Allowed,
        };
        match verdict {
            Verdict::Allowed => GateDecision::Allow,
            v @ Verdict::Refused { .. } => GateDecision::Refuse(v.message()),
        }
    }
}

/// Everything an agent session needs from this crate, set up from `baton.toml`.
#[derive(Debug)]
pub struct SessionGuard {
    /// The gate to give the agent loop.
    pub policy: Policy,
    /// A warning for the user, when the OS sandbox is enabled but not available.
    pub warning: Option<String>,
}

impl SessionGuard {
    /// Set up `ctx` for an agent session: remove the secret variables from its
    /// commands, route `Bash` through the OS sandbox when `[sandbox] enabled` (and the
    /// kernel supports it), and build the policy gate knowing the session's processes.
    ///
    /// `exe` is the `baton` binary that provides the hidden `__sandbox` launcher
    /// (normally `std::env::current_exe()`).
    pub fn new(
        ctx: &mut baton_tools::ToolContext,
        policy: &PolicyConfig,
        sandbox: &baton_config::SandboxConfig,
        exe: &Path,
    ) -> Result<SessionGuard, PolicyError> {
        ctx.env_remove = secret_env(policy);
        let gate = Policy::new(policy, &ctx.project_dir)?.with_processes(ctx.processes.clone());
        let (spec, warning) = session_sandbox(sandbox, &ctx.project_dir);
        let launcher = spec.map(|s| {
            sandbox::SandboxLauncher::new(s, exe).with_egress(egress(sandbox, &ctx.project_dir))
        });
        ctx.launcher = launcher
            .clone()
            .map(|l| std::sync::Arc::new(l) as std::sync::Arc<dyn baton_tools::Launcher>);
        let mut gate = gate.with_launcher(ctx.launcher.clone());
        if let Some(l) = &launcher {
            gate = gate.with_sandbox_launcher(l);
        }
        Ok(SessionGuard {
            policy: gate,
            warning,
        })
    }
}

/// What the commands confined to `project` may reach outside under `[sandbox]`:
/// the hosts of `allow` (by default, the registries of the project's kind:
/// [`net::default_allow`]) with `hosts`' addresses.
/// The ports of `host_ports` are exposed in every namespace started after.
#[cfg(target_os = "linux")]
pub fn egress(sandbox: &baton_config::SandboxConfig, project: &Path) -> net::Egress {
    for p in &sandbox.host_ports {
        net::expose_host_port(*p);
    }
    let allow = sandbox
        .allow
        .clone()
        .unwrap_or_else(|| net::default_allow(project));
    net::Egress {
        allow: net::Allowlist::new(&allow),
        hosts: sandbox
            .hosts
            .iter()
            .map(|(k, v)| (k.trim_end_matches('.').to_ascii_lowercase(), v.clone()))
            .collect(),
        refused: net::Refusals::default(),
    }
}

/// The OS sandbox for the agent's commands in `project`: the spec when `[sandbox]
/// enabled` and the kernel enforces Landlock, and a warning for the user when it is
/// enabled but not (fully) enforced.
pub fn session_sandbox(
    sandbox: &baton_config::SandboxConfig,
    project: &Path,
) -> (Option<sandbox::SandboxSpec>, Option<String>) {
    if !sandbox.enabled {
        return (None, None);
    }
    match sandbox::probe() {
        sandbox::Support::Landlock(_) => {
            let spec = sandbox::SandboxSpec::new(project, &sandbox.writable, sandbox.network)
                .with_readable(&sandbox.readable);
            let warning = (sandbox.network != baton_config::SandboxNetwork::Open && sandbox::bwrap().is_none()).then(|| format!("[sandbox] network = \"{}\" is enforced only where bubblewrap runs, and it does not here: the commands reach the network as the host does (the command policy still limits curl and wget); install bubblewrap (apt-get install bubblewrap)", sandbox.network.name()));
            (Some(spec), warning)
        }
        sandbox::Support::Unsupported => (None, Some("this kernel does not enforce Landlock, so the agent's commands run without the OS sandbox (the command policy still applies); set [sandbox] enabled = false to silence this".to_string())),
    }
}

/// Environment variables to remove from every agent process: the provider keys
/// ([`baton_tools::DEFAULT_SECRET_VARS`]), the variables that lead to a credential
/// broker ([`baton_tools::CREDENTIAL_BROKER_VARS`]), forges' tokens
/// ([`baton_tools::FORGE_CREDENTIAL_VARS`]) and those listed in `[policy]
/// secret_env`.
pub fn secret_env(cfg: &PolicyConfig) -> Vec<String> {
    let mut v: Vec<String> = baton_tools::DEFAULT_SECRET_VARS
        .iter()
        .chain(baton_tools::CREDENTIAL_BROKER_VARS)
        .chain(baton_tools::FORGE_CREDENTIAL_VARS)
        .map(|s| s.to_string())
        .collect();
    for s in &cfg.secret_env {
        if !v.contains(s) {
            v.push(s.clone());
        }
    }
    v
}
