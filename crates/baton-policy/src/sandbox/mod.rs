//! The OS sandbox of the agent's processes (Linux, Landlock).
//!
//! baton cannot confine a child between `fork` and `exec` without `unsafe` code, so
//! the `Bash` tool starts every command through baton itself:
//! `baton __sandbox --project DIR [--writable DIR]... -- bash -c CMD`. That process
//! calls [`confine`] on itself (Landlock rules plus `no_new_privs`, both inherited by
//! everything it starts) and then replaces itself with the command.
//!
//! Under the sandbox, processes may **write** only under the project directory, the
//! temp dirs, a home of the agent's own ([`private_home`], its `HOME`, where package
//! caches go; the user's home is never writable), a few devices (`/dev/null`,
//! `/dev/tty`, …) and the directories listed in `[sandbox] writable`; they may **read** the system
//! except secret locations of [`crate::secrets::SECRET_LOCATIONS`] (`/etc/shadow`,
//! `/run/user`, …) and other users' homes, and of the user's home only what
//! [`view`] names (toolchains, `PATH` entries, `[sandbox] readable`).
//!
//! Landlock cannot make part of a writable tree read-only, nor hide other processes'
//! `/proc` entries (their environments). So where bubblewrap (`bwrap`) works, every
//! command joins the run's PID and mount namespace ([`crate::namespace`], through
//! [`SandboxLauncher`]), in which [`PROTECTED`] (git's config, hooks and info,
//! `.baton/`, `baton.toml`) are read-only binds and `/proc` shows only the run's
//! processes; the launcher then applies Landlock there (which also forbids
//! unmounting them). Should that namespace not start, each command gets a mount
//! namespace of its own ([`bwrap_args`]) with its ancestors hidden
//! ([`hidden_procs`]). Without bubblewrap, Landlock alone applies and baton's gates
//! undo changes to these files after the fact ([`kernel_binds`] says which).
//!
//! This file holds the spec, the agent's home and the Landlock rules; the
//! bubblewrap command line and the launcher are in `sandbox/bubblewrap.rs`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use baton_config::SandboxNetwork;

pub(crate) mod bubblewrap;
pub(crate) mod git_view;
mod home;
mod shell_spec;

pub use bubblewrap::{Hidden, SandboxLauncher, bwrap, bwrap_args, hidden_procs, kernel_binds};
pub use home::{FreshHome, HomeView, MCP_OUTPUT, TOOLCHAINS, clean_home, view};
pub use shell_spec::ShellSpec;

/// Paths of the project (relative) that sandboxed processes may read but not
/// write, where bubblewrap is available: what git runs programs from, and baton's
/// own records and rules.
pub const PROTECTED: &[&str] = &[
    ".git/config",
    ".git/hooks",
    ".git/info",
    baton_records::layout::DIR,
    "baton.toml",
];

/// Set inside bubblewrap's namespace, so the launcher there does not wrap again.
pub const NAMESPACE_VAR: &str = "BATON_IN_NAMESPACE";

/// The paths of [`PROTECTED`] that exist in `project` as plain files or
/// directories (a symlink is never bound: the gates undo it). For a parallel run's
/// working copy, which lies in the main project's `.baton/agents/`, also the main
/// project's but its `.baton/` (which holds the copy): Landlock alone leaves them
/// writable when the project lies in a writable tree such as /tmp.
pub fn protected_paths(project: &Path) -> Vec<PathBuf> {
    let exists =
        |p: &PathBuf| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir() || m.is_file());
    let mut out: Vec<PathBuf> = PROTECTED.iter().map(|p| project.join(p)).collect();
    if let Some(main) = main_of_copy(project) {
        out.extend(
            PROTECTED
                .iter()
                .filter(|p| **p != baton_records::layout::DIR)
                .map(|p| main.join(p)),
        );
    }
    out.retain(exists);
    out
}

/// [`protected_paths`] each with the file bound there read-only: itself, or for a
/// repository's `.git/config` the view of it commands see (no credential in it;
/// see [`git_view`]).
pub fn protected_binds(project: &Path) -> Vec<(PathBuf, PathBuf)> {
    protected_paths(project)
        .into_iter()
        .map(|target| {
            let source = git_view::source(project, &target);
            (target, source)
        })
        .collect()
}

/// The main project of `project` when it is a parallel run's working copy
/// (`<main>/.baton/agents/<id>`).
pub fn main_of_copy(project: &Path) -> Option<PathBuf> {
    let agents = project.parent()?;
    if !agents.ends_with(baton_records::layout::AGENTS) {
        return None;
    }
    agents.parent()?.parent().map(Path::to_path_buf)
}

/// An error setting up the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel refused the Landlock ruleset.
    #[error("sandbox: cannot apply the Landlock rules: {0}")]
    Landlock(String),
    /// The sandboxed command could not be started.
    #[error("sandbox: cannot run {program}: {source}")]
    Exec {
        /// The program.
        program: String,
        /// The error from `exec`.
        source: std::io::Error,
    },
    /// The launcher was called without a command.
    #[error("sandbox: no command given after --")]
    NoCommand,
}

/// What the sandbox of one process allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSpec {
    /// The project directory (read and write).
    pub project: PathBuf,
    /// More directories to make writable (`[sandbox] writable`, `~/` expanded).
    pub writable: Vec<PathBuf>,
    /// Network restriction asked for.
    pub network: SandboxNetwork,
    /// The project is only readable (the independent verifier's commands): nothing
    /// in it can be written, `.git` included.
    pub read_only: bool,
    /// The commands' `HOME`: the coding sessions' [`private_home`], or a
    /// [`FreshHome`] (checks, the verifier).
    pub home: PathBuf,
    /// More of the user's home the commands may read (`[sandbox] readable`, `~/`
    /// expanded); the rest of it is hidden ([`view`]).
    pub readable: Vec<PathBuf>,
}

/// How much of the sandbox the kernel enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Landlock is available (with this ABI version).
    Landlock(u8),
    /// The kernel has no Landlock (or it is disabled): commands run unconfined.
    Unsupported,
}

/// Where the user's toolchain managers keep their toolchains (relative to the
/// home directory), with the variable that points a command at them: confined
/// commands have a home of their own ([`private_home`]), so these are named for
/// them where they exist (read-only: running a toolchain writes nothing there).
pub const TOOLCHAIN_HOMES: &[(&str, &str)] = &[
    ("RUSTUP_HOME", ".rustup"),
    ("PYENV_ROOT", ".pyenv"),
    ("VOLTA_HOME", ".volta"),
    ("ASDF_DATA_DIR", ".asdf"),
    ("NVM_DIR", ".nvm"),
    ("BUN_INSTALL", ".bun"),
    ("SDKMAN_DIR", ".sdkman"),
];

/// The agent's own home for `project`: the `HOME` of every confined command, where
/// its package caches (npm, pip, cargo, Playwright), shell history and tool
/// configs go. The user's home stays read-only to the agent: nothing the agent
/// writes can land where the user's own programs load code from (`~/.local/lib`,
/// shell start-up files, `~/.config`, IDE and build-tool init scripts). Next to
/// baton's state dir for the project, which commands see read-only.
pub fn private_home(project: &Path) -> PathBuf {
    let mut s = baton_config::state_dir(project).into_os_string();
    s.push("-home");
    PathBuf::from(s)
}

/// Where a join stages the binds it renews (next to the project's state dir,
/// which commands see read-only; nothing under it is in their write rules).
pub fn stage_dir(project: &Path) -> PathBuf {
    let mut s = baton_config::state_dir(project).into_os_string();
    s.push("-stage");
    PathBuf::from(s)
}

/// The environment a confined command gets for its home: `HOME` is
/// [`private_home`]; the user's git config (`GIT_CONFIG_GLOBAL`, so commits keep
/// the user's identity) and toolchain managers ([`TOOLCHAIN_HOMES`]) are named
/// where they exist and the variable is not set already; and for a parallel run's
/// copy whose temp dir holds the main project (not writable from it, see
/// `write_rules`), `TMPDIR` is `<private home>/tmp`.
pub fn home_env(spec: &SandboxSpec) -> Vec<(&'static str, OsString)> {
    home_env_in(spec, &|k| std::env::var_os(k))
}

/// [`home_env`] for a command whose environment `var` reads (the spawner's
/// commands each bring their own).
pub fn home_env_in(
    spec: &SandboxSpec,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Vec<(&'static str, OsString)> {
    let mut env = vec![("HOME", spec.home.clone().into_os_string())];
    if let Some(own) = own_temp_in(&spec.project, &spec.home, var) {
        env.push(("TMPDIR", own.into_os_string()));
    }
    let Some(user) = var("HOME").map(PathBuf::from).filter(|h| h.is_absolute()) else {
        return env;
    };
    // Git's global config is the one baton wrote ([`write_git_config`]), never
    // the user's: theirs may hold a token (`url.….insteadOf`, a credential
    // helper, an `http.extraHeader`).
    let written = std::iter::once(&spec.project)
        .chain(&spec.readable)
        .map(|p| git_config_path(p))
        .find(|g| g.is_file());
    env.push((
        "GIT_CONFIG_GLOBAL",
        written.map_or_else(|| OsString::from("/dev/null"), PathBuf::into_os_string),
    ));
    if var("CARGO_HOME").is_none() && user.join(".cargo").is_dir() {
        env.push(("CARGO_HOME", spec.home.join(".cargo").into_os_string()));
    }
    for (name, dir) in TOOLCHAIN_HOMES {
        let d = user.join(dir);
        if var(name).is_none() && d.is_dir() {
            env.push((name, d.into_os_string()));
        }
    }
    env
}

/// The git keys a command sees of the user's global config: who they are and
/// how their history reads; nothing that reaches a server (`url.*`, `http.*`,
/// `credential.*`, `remote.*`), includes another file or runs a program.
const GIT_KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "init.defaultbranch",
    "core.autocrlf",
    "core.eol",
    "core.quotepath",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "merge.conflictstyle",
    "diff.algorithm",
    "color.ui",
];

/// Where [`write_git_config`] writes the commands' git config for `project`.
pub fn git_config_path(project: &Path) -> PathBuf {
    baton_config::state_dir(project).join("gitconfig")
}

/// Write the global git config the commands confined to `project` see
/// (`GIT_CONFIG_GLOBAL`, [`home_env`]): the user's [`GIT_KEYS`] (their includes
/// followed), the project as a safe directory, and their ignore and attributes
/// files where they have them. Read from the user's config by the `git` baton
/// trusts; written into baton's state dir, read-only to commands.
pub fn write_git_config(project: &Path) -> std::io::Result<PathBuf> {
    let path = git_config_path(project);
    // Written already, after the user's config files last changed: as it is (a
    // `git` process fewer at every start; a change in a file they include is
    // seen once one of them changes).
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(written), Some(h)) = (mtime(&path), home()) {
        let newer = [
            ".gitconfig",
            ".config/git/config",
            ".config/git/ignore",
            ".config/git/attributes",
        ]
        .iter()
        .filter_map(|f| mtime(&h.join(f)))
        .any(|m| m >= written);
        if !newer {
            return Ok(path);
        }
    }
    let mut by_section: std::collections::BTreeMap<String, Vec<(String, String)>> =
        std::collections::BTreeMap::new();
    let listed = crate::helpers::find("git").and_then(|git| {
        std::process::Command::new(git)
            .args(["config", "--global", "--includes", "--list", "-z"])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
    });
    let text = listed
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    for entry in text.split('\0') {
        let (key, value) = entry.split_once('\n').unwrap_or((entry, ""));
        let key = key.to_ascii_lowercase();
        if !GIT_KEYS.contains(&key.as_str()) {
            continue;
        }
        if let Some((section, name)) = key.split_once('.') {
            let values = by_section.entry(section.to_string()).or_default();
            values.retain(|(n, _)| n != name);
            values.push((name.to_string(), value.to_string()));
        }
    }
    let files = home()
        .map(|h| {
            [
                ("excludesfile", h.join(".config/git/ignore")),
                ("attributesfile", h.join(".config/git/attributes")),
            ]
        })
        .into_iter()
        .flatten()
        .filter(|(_, f)| f.is_file());
    for (name, f) in files {
        by_section
            .entry("core".to_string())
            .or_default()
            .push((name.to_string(), f.display().to_string()));
    }
    by_section
        .entry("safe".to_string())
        .or_default()
        .push(("directory".to_string(), project.display().to_string()));
    let quote = git_view::quoted;
    let mut out =
        String::from("# Written by baton: what the agent's commands see of git's global config.\n");
    for (section, values) in &by_section {
        out.push_str(&format!("[{section}]\n"));
        for (name, value) in values {
            out.push_str(&format!("\t{name} = {}\n", quote(value)));
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, out)?;
    Ok(path)
}

/// Where baton makes temporary directories that commands confined to `project`
/// must write (the verifier's scratch, a copy at the base commit): the temp dir,
/// or, for a parallel run's copy whose main project lies in it (then not writable
/// from the copy, see `write_rules`), the copy's own `<private home>/tmp`, made
/// here. The same rule gives those commands their `TMPDIR` ([`home_env`]).
pub fn temp_dir_for(project: &Path) -> PathBuf {
    own_temp_in(project, &private_home(project), &|k| std::env::var_os(k))
        .unwrap_or_else(std::env::temp_dir)
}

/// `<home>/tmp` (made) when `project` is a copy whose main project lies in the
/// temp dir `var` names; `None` when the temp dir itself will do.
fn own_temp_in(
    project: &Path,
    home: &Path,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Option<PathBuf> {
    let main = main_of_copy(project)?;
    let tmp = var("TMPDIR")
        .map(PathBuf::from)
        .filter(|t| t.is_absolute())
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    let own = home.join("tmp");
    (main.starts_with(&tmp) && std::fs::create_dir_all(&own).is_ok()).then_some(own)
}

impl SandboxSpec {
    /// The spec for `project` with extra writable dirs (absolute, or `~/…`).
    pub fn new(project: &Path, writable: &[String], network: SandboxNetwork) -> Self {
        Self {
            project: project.to_path_buf(),
            writable: expand(writable),
            network,
            read_only: false,
            home: private_home(project),
            readable: Vec::new(),
        }
    }

    /// The spec with more of the user's home readable (absolute, or `~/…`).
    #[must_use]
    pub fn with_readable(mut self, readable: &[String]) -> Self {
        self.readable = expand(readable);
        self
    }

    /// The arguments of `baton __sandbox` that confine a command to this spec,
    /// starting with `exe` and ending with `--` (append the command).
    pub fn launcher(&self, exe: &Path) -> Vec<OsString> {
        let mut v: Vec<OsString> = vec![
            exe.as_os_str().to_os_string(),
            "__sandbox".into(),
            "--project".into(),
            self.project.as_os_str().to_os_string(),
        ];
        for w in &self.writable {
            v.push("--writable".into());
            v.push(w.as_os_str().to_os_string());
        }
        for r in &self.readable {
            v.push("--readable".into());
            v.push(r.as_os_str().to_os_string());
        }
        v.push("--home".into());
        v.push(self.home.as_os_str().to_os_string());
        if self.network != SandboxNetwork::Open {
            v.push("--network".into());
            v.push(self.network.name().into());
        }
        if self.read_only {
            v.push("--read-only".into());
        }
        v.push("--".into());
        v
    }
}

/// `dirs` as paths, `~/…` under the user's home (left out when it is unknown).
fn expand(dirs: &[String]) -> Vec<PathBuf> {
    let home = home();
    dirs.iter()
        .filter_map(|w| match (w.strip_prefix("~/"), &home) {
            (Some(rest), Some(h)) => Some(h.join(rest)),
            (Some(_), None) => None,
            (None, _) => Some(PathBuf::from(w)),
        })
        .collect()
}

/// The user's home directory (`HOME`), when it is set to an absolute path.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
}

/// The temp dirs sandboxed processes may write: `/tmp`, `/var/tmp` and
/// `TMPDIR` when it is absolute and not `/`.
fn temp_dirs() -> Vec<PathBuf> {
    let mut v = vec![PathBuf::from("/tmp"), PathBuf::from("/var/tmp")];
    if let Some(t) = std::env::var_os("TMPDIR").map(PathBuf::from)
        && t.is_absolute()
        && t != Path::new("/")
    {
        v.push(t);
    }
    v
}

/// What sandboxed processes may read in `dir`: every entry except the secret
/// locations `secrets` (paths relative to `dir`); a directory that holds secrets
/// deeper down is opened up entry by entry in the same way.
fn readable_except(dir: &Path, secrets: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.filter_map(Result::ok) {
        let name = e.file_name();
        let Some(name) = name.to_str() else {
            out.push(e.path());
            continue;
        };
        if secrets.contains(&name) {
            continue;
        }
        let prefix = format!("{name}/");
        let deeper: Vec<&str> = secrets
            .iter()
            .filter_map(|s| s.strip_prefix(prefix.as_str()))
            .collect();
        // `is_dir` follows symlinks, as Landlock rules do.
        if !deeper.is_empty() && e.path().is_dir() {
            readable_except(&e.path(), &deeper, out);
        } else {
            out.push(e.path());
        }
    }
}

/// Where sandboxed processes may read, and where they may write. The secret
/// locations of [`crate::secrets::SECRET_LOCATIONS`] that are plain paths (not
/// `/proc/*/…` patterns, which Landlock's path rules cannot express) are left out.
pub fn rules(spec: &SandboxSpec) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let home = home();
    let view = view(spec);
    // Everything but the homes (`/home`, `/root`, the user's wherever it is) and
    // the system's secrets; of the user's home only what [`view`] shows.
    let mut hidden: Vec<String> = vec!["home".into(), "root".into()];
    hidden.extend(crate::secrets::system().filter_map(|s| s.strip_prefix('/').map(str::to_string)));
    if let Some(v) = &view
        && let Ok(rel) = v.user.strip_prefix("/")
    {
        hidden.push(rel.display().to_string());
    }
    let hidden: Vec<&str> = hidden.iter().map(String::as_str).collect();
    let mut read = Vec::new();
    readable_except(Path::new("/"), &hidden, &mut read);
    match (&view, &home) {
        (Some(v), _) => read.extend(v.binds.iter().map(|(p, _)| p.clone())),
        (None, Some(h)) => {
            let in_home: Vec<&str> = crate::secrets::home_relative().collect();
            readable_except(h, &in_home, &mut read);
        }
        (None, None) => {}
    }
    if spec.read_only {
        read.push(spec.project.clone());
    }
    (read, write_rules(spec))
}

/// Where sandboxed processes may write: the project (unless read-only), the temp
/// dirs, the package caches, `[sandbox] writable` and a few devices.
///
/// A parallel run's working copy lies inside the main project
/// (`.baton/agents/<id>`), which may lie inside a tree the commands may write (a
/// project in /tmp). Landlock cannot make part of a writable tree read-only, and
/// bubblewrap's binds cover only the main project's git config, hooks and
/// `baton.toml`, not its records in `.baton/`: so from a copy no tree that holds the
/// main project is writable but the copy itself, and the commands get a temp dir
/// of their own ([`home_env_in`]).
fn write_rules(spec: &SandboxSpec) -> Vec<PathBuf> {
    let mut write = Vec::new();
    if !spec.read_only {
        write.push(spec.project.clone());
    }
    write.extend(temp_dirs());
    write.push(spec.home.clone());
    write.push(private_home(&spec.project).join(home::MCP_DIR));
    write.extend(spec.writable.iter().cloned());
    if let Some(main) = main_of_copy(&spec.project) {
        write.retain(|w| *w == spec.project || !main.starts_with(w));
    }
    for dev in [
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/ptmx",
        "/dev/pts",
        "/dev/shm",
        "/dev/random",
        "/dev/urandom",
    ] {
        write.push(PathBuf::from(dev));
    }
    write
}

/// Whether this kernel enforces Landlock, and which ABI.
#[cfg(target_os = "linux")]
pub fn probe() -> Support {
    use landlock::{ABI, Access, AccessFs, Compatible, Ruleset, RulesetAttr};
    // Try each ABI from the newest; creating a ruleset succeeds only where the
    // kernel knows every right asked for.
    for (abi, n) in [
        (ABI::V6, 6u8),
        (ABI::V5, 5),
        (ABI::V4, 4),
        (ABI::V3, 3),
        (ABI::V2, 2),
        (ABI::V1, 1),
    ] {
        let created = Ruleset::default()
            .set_compatibility(landlock::CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .and_then(|r| r.create());
        if created.is_ok() {
            return Support::Landlock(n);
        }
    }
    Support::Unsupported
}

/// Whether this kernel enforces Landlock (never, off Linux).
#[cfg(not(target_os = "linux"))]
pub fn probe() -> Support {
    Support::Unsupported
}

/// Confine this process (and everything it starts) to `spec`, and set
/// `no_new_privs`. Returns what the kernel enforces; where Landlock is missing the
/// process stays unconfined (best effort) and [`Support::Unsupported`] is returned.
#[cfg(target_os = "linux")]
pub fn confine(spec: &SandboxSpec) -> Result<Support, SandboxError> {
    confine_with(spec, rules(spec))
}

/// [`confine`] where the secret locations are already out of sight (masked by
/// mounts in the run's namespace, see `crate::namespace`): everything is readable,
/// the write rules are the same. One read rule instead of one per entry of `/`,
/// `/etc` and the home directory.
#[cfg(target_os = "linux")]
pub fn confine_masked(spec: &SandboxSpec) -> Result<Support, SandboxError> {
    confine_with(spec, (vec![PathBuf::from("/")], write_rules(spec)))
}

/// Apply the Landlock rules `reads` and `writes` to this process (making the
/// agent's home first), then drop `CAP_SYS_PTRACE`; what the kernel enforces.
#[cfg(target_os = "linux")]
fn confine_with(
    spec: &SandboxSpec,
    (reads, writes): (Vec<PathBuf>, Vec<PathBuf>),
) -> Result<Support, SandboxError> {
    // The agent's home exists before the rule that lets it be written.
    let _ = std::fs::create_dir_all(&spec.home);
    use landlock::{
        ABI, Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus,
    };
    let err = |e: &dyn std::fmt::Display| SandboxError::Landlock(e.to_string());
    let abi = ABI::V5;
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let file_only = AccessFs::from_file(abi);
    let mut rs = Ruleset::default()
        .handle_access(all)
        .map_err(|e| err(&e))?
        .create()
        .map_err(|e| err(&e))?;
    for (paths, access) in [(reads, read), (writes, all)] {
        for p in paths {
            let Ok(fd) = PathFd::new(&p) else { continue };
            let access = if p.is_dir() {
                access
            } else {
                access & file_only
            };
            rs = rs
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| err(&e))?;
        }
    }
    let status = rs.restrict_self().map_err(|e| err(&e))?;
    drop_ptrace();
    Ok(match status.ruleset {
        RulesetStatus::NotEnforced => Support::Unsupported,
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => match probe() {
            Support::Landlock(n) => Support::Landlock(n),
            Support::Unsupported => Support::Landlock(1),
        },
    })
}

/// Give up `CAP_SYS_PTRACE` for good (bounding set and current sets), so confined
/// commands, even run as root, cannot read the memory or `/proc/<pid>/environ` of
/// baton itself, which holds the provider keys and is made non-dumpable for this.
/// Best effort: without the right to change capabilities there are none to drop.
#[cfg(target_os = "linux")]
fn drop_ptrace() {
    use rustix::thread::{
        CapabilitySet, capabilities, remove_capability_from_bounding_set, set_capabilities,
    };
    let _ = remove_capability_from_bounding_set(CapabilitySet::SYS_PTRACE);
    if let Ok(mut sets) = capabilities(None) {
        sets.effective.remove(CapabilitySet::SYS_PTRACE);
        sets.permitted.remove(CapabilitySet::SYS_PTRACE);
        sets.inheritable.remove(CapabilitySet::SYS_PTRACE);
        let _ = set_capabilities(None, sets);
    }
}

/// Off Linux there is no sandbox: the process stays unconfined.
#[cfg(not(target_os = "linux"))]
pub fn confine(_spec: &SandboxSpec) -> Result<Support, SandboxError> {
    Ok(Support::Unsupported)
}

/// Confine this process to `spec`, then replace it with `command` (program and
/// arguments) without the variables `env_remove` in its environment. Returns only on
/// error.
pub fn exec_confined(
    spec: &SandboxSpec,
    command: &[OsString],
    env_remove: &[String],
) -> SandboxError {
    use std::os::unix::process::CommandExt as _;
    let Some((program, args)) = command.split_first() else {
        return SandboxError::NoCommand;
    };
    if std::env::var_os(NAMESPACE_VAR).is_none()
        && let Some(bw) = bwrap()
        && let Ok(exe) = std::env::current_exe()
    {
        // Run by an agent CLI (`--sandbox-shell`): hide the CLI (which holds its key)
        // and every other ancestor; this process becomes bwrap itself.
        let hide = hidden_procs(std::os::unix::process::parent_id());
        let args = bwrap_args(&bw, spec, &hide);
        let mut cmd = std::process::Command::new(&bw);
        cmd.args(&args[1..]).args(spec.launcher(&exe)).args(command);
        for v in env_remove {
            cmd.env_remove(v);
        }
        let source = cmd.exec();
        return SandboxError::Exec {
            program: bw.display().to_string(),
            source,
        };
    }
    let home = home_env(spec);
    if let Err(e) = confine(spec) {
        return e;
    }
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).envs(home);
    for v in env_remove {
        cmd.env_remove(v);
    }
    let source = cmd.exec();
    SandboxError::Exec {
        program: program.to_string_lossy().into_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parallel run's working copy guards the main project's git config, hooks
    /// and info and its baton.toml too (but its `.baton/`, which holds the copy).
    #[test]
    fn a_working_copy_guards_the_main_projects_files_too() {
        let t = tempfile::tempdir().unwrap();
        let main = t.path();
        let copy = main.join(baton_records::layout::AGENTS).join("a1");
        for d in [main.join(".git/hooks"), copy.join(".git/hooks")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(main.join("baton.toml"), "").unwrap();
        assert_eq!(main_of_copy(&copy).as_deref(), Some(main));
        assert_eq!(main_of_copy(main), None);
        let guarded = protected_paths(&copy);
        for p in [
            copy.join(".git/hooks"),
            main.join(".git/hooks"),
            main.join("baton.toml"),
        ] {
            assert!(guarded.contains(&p), "{p:?} in {guarded:?}");
        }
        assert!(!guarded.contains(&main.join(".baton")), "{guarded:?}");
        assert_eq!(
            protected_paths(main),
            [
                main.join(".git/hooks"),
                main.join(".baton"),
                main.join("baton.toml")
            ]
        );
    }

    #[test]
    fn launcher_lists_the_spec_and_ends_with_dashdash() {
        let spec = SandboxSpec {
            project: PathBuf::from("/p"),
            writable: vec![PathBuf::from("/w")],
            network: SandboxNetwork::Open,
            read_only: false,
            home: PathBuf::from("/h"),
            readable: vec![PathBuf::from("/r")],
        };
        let v = spec.launcher(Path::new("/bin/baton"));
        let v: Vec<String> = v.iter().map(|s| s.to_string_lossy().into_owned()).collect();
        assert_eq!(
            v,
            [
                "/bin/baton",
                "__sandbox",
                "--project",
                "/p",
                "--writable",
                "/w",
                "--readable",
                "/r",
                "--home",
                "/h",
                "--"
            ]
        );
    }

    #[test]
    fn secrets_are_not_readable_and_caches_are_writable() {
        let spec = SandboxSpec::new(Path::new("/p"), &[], SandboxNetwork::Open);
        let (read, write) = rules(&spec);
        let home = home().unwrap_or_default();
        assert!(!read.contains(&home.join(".ssh")));
        assert!(!read.contains(&PathBuf::from("/etc/shadow")));
        assert!(!read.contains(&PathBuf::from("/etc/security")));
        // Every plain secret location of the one list is outside every read rule.
        for s in crate::secrets::home_relative() {
            let secret = home.join(s);
            assert!(!read.iter().any(|r| secret.starts_with(r)), "{s} readable");
        }
        assert!(
            !read
                .iter()
                .any(|p| p == Path::new("/home") || p == Path::new("/root"))
        );
        assert!(write.contains(&PathBuf::from("/p")));
        // The agent's caches live in a home of its own; the user's is not writable.
        assert!(write.contains(&private_home(Path::new("/p"))));
        assert!(
            !write
                .iter()
                .any(|w| w.starts_with(&home) && !w.starts_with(private_home(Path::new("/p"))))
        );
        let env = home_env(&spec);
        assert_eq!(
            env[0],
            ("HOME", private_home(Path::new("/p")).into_os_string())
        );
    }
}
