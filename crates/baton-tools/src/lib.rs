//! `baton-tools` owns the tools an agent acts through: `Bash`, `Read`, `Write`, `Edit`,
//! `Glob` and `Grep`, with the names and input shapes of the most widespread agent CLI
//!, and the [`ToolGate`] consulted before every call.
//!
//! A tool never fails the session: bad input, a missing file or a refused write comes
//! back as a [`ToolOutput`] with `is_error` set and a message the model can act on.
//!
//! ```no_run
//! # async fn demo() {
//! use baton_tools::{ToolContext, Toolbox};
//! let ctx = ToolContext::new("/path/to/project".into());
//! let tools = Toolbox::new(ctx);
//! let out = tools.call("Bash", &serde_json::json!({"command": "echo hi"})).await;
//! assert!(!out.is_error);
//! # }
//! ```

pub mod bash;
pub mod files;
pub mod paths;
pub mod process;
pub mod search;
pub mod spawn;

use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use process::ProcessRegistry;

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Text returned to the model.
    pub content: String,
    /// The call failed; `content` says why and what to do instead.
    pub is_error: bool,
    /// Images returned with the text (e.g. a browser screenshot).
    pub images: Vec<Image>,
}

/// An image in a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// MIME type, e.g. `image/png`.
    pub media_type: String,
    /// The bytes, base64-encoded.
    pub data: String,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }
    /// A failed result.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

/// Tools from outside baton (an MCP server's), offered next to the built-in ones.
/// Their names must not clash with the built-in tools' (`mcp__<server>__<tool>`).
pub trait ExternalTools: Send + Sync + std::fmt::Debug {
    /// Specs of the tools offered now.
    fn specs(&self) -> Vec<ToolSpec>;
    /// Whether `name` is one of these tools.
    fn handles(&self, name: &str) -> bool;
    /// Run one call. Failures (bad input, a dead server) are errors for the model.
    fn call<'a>(
        &'a self,
        name: &'a str,
        input: &'a Value,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ToolOutput> + Send + 'a>>;
}

/// A tool as offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Tool name, e.g. `Bash`.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// JSON Schema of its input object.
    pub input_schema: Value,
}

/// The decision of a [`ToolGate`] on one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    /// Run the call.
    Allow,
    /// Do not run it; the reason goes back to the model as the tool's error.
    Refuse(String),
}

/// Consulted before every tool call (the policy hook). The default allows everything.
pub trait ToolGate: Send + Sync {
    /// Decide on the call of `tool` with `input`.
    fn check(&self, tool: &str, input: &Value) -> GateDecision;
}

/// A gate that allows every call.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllowAll;

impl ToolGate for AllowAll {
    fn check(&self, _tool: &str, _input: &Value) -> GateDecision {
        GateDecision::Allow
    }
}

/// Everything a tool needs to act on one project.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The project directory, canonical.
    pub project_dir: PathBuf,
    /// Cancelled when the session stops; running commands are killed.
    pub cancel: CancellationToken,
    /// Owner of every process group `Bash` starts.
    pub processes: Arc<ProcessRegistry>,
    /// Environment variables removed from every command (API keys and other secrets).
    pub env_remove: Vec<String>,
    /// Environment variables set for every command (a parallel run's agent identity
    /// and port block: `BATON_AGENT`, `PORT`).
    pub env: Vec<(String, String)>,
    /// What `Bash` runs its commands through, e.g. baton's own OS sandbox;
    /// `bash -c COMMAND` is appended to its prefix. `None` runs bash directly.
    pub launcher: Option<Arc<dyn Launcher>>,
}

/// A command prefix `Bash` runs every command through (program first; `bash -c
/// COMMAND` is appended), made anew for each command so it can reflect the moment
/// (which files exist, which processes to hide).
pub trait Launcher: Send + Sync + std::fmt::Debug {
    /// The prefix for the next command.
    fn prefix(&self) -> Vec<std::ffi::OsString>;
    /// The same launcher for the verifier's commands: the project only readable,
    /// a home no command has written, and `scratch` (its temp dir) writable.
    fn read_only(&self, scratch: &std::path::Path) -> Arc<dyn Launcher>;
    /// The same launcher with a home no command has written (a run of checks),
    /// whose commands may also write `also` (a batch runner's report dir).
    fn fresh_home(&self, also: Option<&std::path::Path>) -> Arc<dyn Launcher>;
    /// A launcher for commands on another tree, `project` (a clean checkout of
    /// proof): a namespace and a home of their own, where `project` is what
    /// they may write and this launcher's project is only readable. Without
    /// such confinement, [`Launcher::fresh_home`].
    fn elsewhere(&self, project: &std::path::Path) -> Arc<dyn Launcher> {
        let _ = project;
        self.fresh_home(None)
    }
    /// Whether its commands have a network of their own (a loopback no other
    /// launcher's commands share): then two launchers' commands may listen on
    /// the same ports at once.
    fn own_network(&self) -> bool {
        false
    }
    /// The pid the command's own processes know the process baton started as
    /// `spawned` by (they may live in a PID namespace of their own).
    fn visible_pid(&self, spawned: u32) -> u32 {
        spawned
    }
    /// The pid baton knows the process the commands call `visible` by; `None` when
    /// there is no such process.
    fn host_pid(&self, visible: u32) -> Option<u32> {
        Some(visible)
    }
    /// End every process its commands started, however they left the process
    /// groups baton knows (a `setsid` double fork): where the commands share a
    /// namespace, the namespace and all in it. The next command starts afresh.
    /// Without one, nothing (the process groups are the registry's to stop).
    fn end_all(&self) {}
    /// The pid of the process holding the namespace the commands share, for an
    /// agent CLI's own shell to join (started now when none stands, so after
    /// [`Launcher::end_all`] a fresh one); `None` without such a namespace.
    fn join_target(&self) -> Option<i32> {
        None
    }
    /// The hosts the network boundary refused the commands for the first time
    /// since the last call (each once a run).
    fn refused_hosts(&self) -> Vec<String> {
        Vec::new()
    }
    /// The home its commands get, where it gives them one of their own.
    fn home(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// The port of the host's loopback where a browser outside the sandbox finds
    /// its proxy into the commands' network (their own loopback, and the hosts
    /// they may reach); `None` when the commands share the host's network.
    fn browser_proxy(&self) -> Option<u16> {
        None
    }
    /// Start `request` through a process the launcher keeps for it (one start of
    /// the command instead of one of the prefix and one of the command), returning
    /// the command's channel ([`spawn::Channel`]). `None` when the launcher has no
    /// such process, or not for this command: then [`Launcher::prefix`] applies.
    fn spawn(
        &self,
        request: &spawn::SpawnRequest,
    ) -> Option<std::io::Result<std::os::unix::net::UnixStream>> {
        let _ = request;
        None
    }
}

/// A launcher that is always the same prefix.
#[derive(Debug, Clone)]
pub struct FixedLauncher(pub Vec<std::ffi::OsString>);

impl Launcher for FixedLauncher {
    fn prefix(&self) -> Vec<std::ffi::OsString> {
        self.0.clone()
    }

    fn read_only(&self, _scratch: &std::path::Path) -> Arc<dyn Launcher> {
        Arc::new(self.clone())
    }

    fn fresh_home(&self, _also: Option<&std::path::Path>) -> Arc<dyn Launcher> {
        Arc::new(self.clone())
    }
}

impl ToolContext {
    /// A context for `project_dir` (canonicalized when possible) with a fresh
    /// cancellation token and process registry, removing the provider API keys.
    pub fn new(project_dir: PathBuf) -> Self {
        let project_dir = project_dir.canonicalize().unwrap_or(project_dir);
        Self {
            project_dir,
            cancel: CancellationToken::new(),
            processes: Arc::new(ProcessRegistry::new()),
            env_remove: DEFAULT_SECRET_VARS
                .iter()
                .chain(CREDENTIAL_BROKER_VARS)
                .chain(FORGE_CREDENTIAL_VARS)
                .map(|s| s.to_string())
                .collect(),
            env: Vec::new(),
            launcher: None,
        }
    }
}

/// Variables never passed to the agent's commands.
pub const DEFAULT_SECRET_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "BATON_API_KEY",
];

/// Variables that lead to a credential broker (an ssh or gpg agent, the session
/// bus and its keyrings, a Docker daemon, a Kerberos cache, an askpass helper)
/// or another of the host's rendezvous points (tmux, screen, a display, an
/// editor's or terminal's control socket):
/// never passed to the agent's commands, so none of them can ask a broker to
/// sign or unlock with the user's keys. baton keeps them for itself (pushing to
/// a run's remote over ssh).
pub const CREDENTIAL_BROKER_VARS: &[&str] = &[
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "GIT_ASKPASS",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "GNOME_KEYRING_CONTROL",
    "GNOME_KEYRING_PID",
    "XDG_RUNTIME_DIR",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CERT_PATH",
    "CONTAINER_HOST",
    "KRB5CCNAME",
    // Rendezvous points with the host's sessions: a terminal multiplexer that
    // runs commands outside the sandbox (`tmux -S … run-shell`), a display
    // server, an editor's or a terminal's control socket.
    "TMUX",
    "TMUX_PANE",
    "STY",
    "ZELLIJ",
    "ZELLIJ_SESSION_NAME",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
    "VSCODE_IPC_HOOK_CLI",
    "VSCODE_GIT_IPC_HANDLE",
    "VSCODE_GIT_ASKPASS_NODE",
    "VSCODE_GIT_ASKPASS_MAIN",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "PULSE_SERVER",
];

/// Forges' tokens and the way to them (the GitHub CLI's config directory): never
/// passed to the agent's commands, whatever baton was started with. Every forge
/// write is baton's; the agent gets results, never a token.
pub const FORGE_CREDENTIAL_VARS: &[&str] = &[
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "GH_CONFIG_DIR",
    "GITEA_TOKEN",
    "FORGEJO_TOKEN",
    "GITLAB_TOKEN",
    "GL_TOKEN",
    "CI_JOB_TOKEN",
    "BITBUCKET_TOKEN",
    "HUB_TOKEN",
];

/// The built-in tools, bound to one project, and any attached external tools.
#[derive(Debug, Clone)]
pub struct Toolbox {
    ctx: ToolContext,
    external: Arc<std::sync::RwLock<Vec<Arc<dyn ExternalTools>>>>,
}

/// Names of the built-in tools, in the order they are offered.
pub const BUILTIN_TOOLS: &[&str] = &["Bash", "Read", "Write", "Edit", "Glob", "Grep"];

impl Toolbox {
    /// The built-in tools acting in `ctx`.
    pub fn new(ctx: ToolContext) -> Self {
        Self {
            ctx,
            external: Arc::default(),
        }
    }

    /// The same tools (external ones included, and the same process registry if
    /// `ctx` shares it) acting in `ctx`, e.g. with another sandbox launcher.
    pub fn with_context(&self, ctx: ToolContext) -> Self {
        Self {
            ctx,
            external: Arc::clone(&self.external),
        }
    }

    /// The same tools whose commands have a home no command has written (see
    /// [`Launcher::fresh_home`]): one run of checks, which may also write `also`.
    /// Without a launcher, the same.
    pub fn with_fresh_home(&self, also: Option<&std::path::Path>) -> Self {
        let mut ctx = self.ctx.clone();
        ctx.launcher = ctx.launcher.as_ref().map(|l| l.fresh_home(also));
        self.with_context(ctx)
    }

    /// The same tools acting on `project`, another tree (a clean checkout of
    /// proof), through [`Launcher::elsewhere`]: one namespace and one fresh home
    /// for all their commands, which may write `project` and only read this
    /// toolbox's.
    pub fn elsewhere(&self, project: &std::path::Path) -> Self {
        let mut ctx = self.ctx.clone();
        ctx.project_dir = project.to_path_buf();
        ctx.launcher = ctx.launcher.as_ref().map(|l| l.elsewhere(project));
        self.with_context(ctx)
    }

    /// Offer `tools` too, from now on, in this toolbox and every clone of it.
    pub fn attach(&self, tools: Arc<dyn ExternalTools>) {
        if let Ok(mut e) = self.external.write() {
            e.push(tools);
        }
    }

    fn externals(&self) -> Vec<Arc<dyn ExternalTools>> {
        self.external.read().map(|e| e.clone()).unwrap_or_default()
    }

    /// The context the tools act in.
    pub fn context(&self) -> &ToolContext {
        &self.ctx
    }

    /// Specs of every tool, as offered to the model.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = builtin_specs();
        for e in self.externals() {
            specs.extend(e.specs());
        }
        specs
    }

    /// Run one call. Unknown tools and malformed input are errors for the model.
    pub async fn call(&self, name: &str, input: &Value) -> ToolOutput {
        let ctx = &self.ctx;
        match name {
            "Bash" => match parse::<bash::BashInput>(name, input) {
                Ok(i) => bash::run(ctx, i).await,
                Err(e) => e,
            },
            "Read" => match parse(name, input) {
                Ok(i) => files::read(ctx, i),
                Err(e) => e,
            },
            "Write" => match parse(name, input) {
                Ok(i) => files::write(ctx, i),
                Err(e) => e,
            },
            "Edit" => match parse(name, input) {
                Ok(i) => files::edit(ctx, i),
                Err(e) => e,
            },
            "Glob" => match parse(name, input) {
                Ok(i) => blocking(ctx, move |c| search::glob(c, i)).await,
                Err(e) => e,
            },
            "Grep" => match parse(name, input) {
                Ok(i) => blocking(ctx, move |c| search::grep(c, i)).await,
                Err(e) => e,
            },
            other => {
                let externals = self.externals();
                match externals.iter().find(|e| e.handles(other)) {
                    Some(e) => e.call(other, input).await,
                    None => {
                        let mut names: Vec<String> =
                            BUILTIN_TOOLS.iter().map(|s| s.to_string()).collect();
                        names.extend(externals.iter().flat_map(|e| e.specs()).map(|s| s.name));
                        ToolOutput::error(format!(
                            "Unknown tool {other:?}. Available tools: {}.",
                            names.join(", ")
                        ))
                    }
                }
            }
        }
    }
}

async fn blocking<F>(ctx: &ToolContext, f: F) -> ToolOutput
where
    F: FnOnce(&ToolContext) -> ToolOutput + Send + 'static,
{
    let ctx = ctx.clone();
    tokio::task::spawn_blocking(move || f(&ctx))
        .await
        .unwrap_or_else(|e| ToolOutput::error(format!("tool task failed: {e}")))
}

fn parse<T: DeserializeOwned>(tool: &str, input: &Value) -> Result<T, ToolOutput> {
    if !input.is_object() {
        return Err(ToolOutput::error(format!(
            "Invalid input for {tool}: expected a JSON object, got {}. Expected fields: {}",
            kind(input),
            expected_fields(tool)
        )));
    }
    serde_json::from_value(input.clone()).map_err(|e| {
        ToolOutput::error(format!(
            "Invalid input for {tool}: {e}. Expected fields: {}",
            expected_fields(tool)
        ))
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn expected_fields(tool: &str) -> String {
    let Some(spec) = builtin_specs().into_iter().find(|s| s.name == tool) else {
        return String::new();
    };
    let required: Vec<&str> = spec.input_schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut parts = Vec::new();
    if let Some(props) = spec.input_schema["properties"].as_object() {
        for (name, p) in props {
            let ty = p["type"].as_str().unwrap_or("any");
            let opt = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            parts.push(format!("{name}{opt}: {ty}"));
        }
    }
    // Alphabetical whatever the map's order (serde_json's preserve_order feature may be
    // on in the workspace), so the message is the same in every build.
    parts.sort();
    format!("{{{}}}", parts.join(", "))
}

/// The specs of the built-in tools.
pub fn builtin_specs() -> Vec<ToolSpec> {
    let spec = |name: &str, description: &str, input_schema: Value| ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        input_schema,
    };
    vec![
        spec(
            "Bash",
            "Run a bash command in the project directory; returns its stdout and stderr combined and its exit code.\n\
             - Each call is a fresh shell in the project directory (cd and variables do not carry over) with stdin closed: anything interactive \
             (questions, pagers, editors) hangs until the timeout, so use -y, --yes, CI=1, --no-pager.\n\
             - timeout: 120000 ms by default, at most 600000; then the command and its children are killed.\n\
             - Output over 30000 bytes keeps its head and tail; the whole is saved under .baton/outputs/ (Grep or Read that file rather than running the command again).\n\
             - run_in_background=true returns at once with the pid and a log file; the process keeps running until your session ends \
             (the start script starts servers again next time). Stop it with kill PID.\n\
             - Commands pass baton's policy and run in a sandbox without secrets; they write the project, /tmp and a home of this project's own, emptied when every session starts (global installs there do not last: dependencies belong in the project, installed by the start script). A refusal says why and what to do instead.",
            json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "timeout": {"type": "integer", "description": "Timeout in milliseconds (max 600000)"},
                    "description": {"type": "string", "description": "What the command does, in 5-10 words"},
                    "run_in_background": {"type": "boolean"}
                },
                "required": ["command"]
            }),
        ),
        spec(
            "Read",
            "Read a text file; returns its lines numbered (a number and a tab before each line, not part of the file). \
             2000 lines by default, lines over 2000 characters cut; read a range of a large file with offset (first line, from 1) and limit. \
             Binary files are refused. Paths are absolute or relative to the project directory.",
            json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "offset": {"type": "integer"},
                    "limit": {"type": "integer"}
                },
                "required": ["file_path"]
            }),
        ),
        spec(
            "Write",
            "Write a file, replacing it if it exists and creating parent directories. Only paths inside the project may be written, not .git/ or .baton/. \
             A call's input counts against your output limit: write a large file in parts (Write the first, then add the rest with Edit).",
            json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "content": {"type": "string"}
                },
                "required": ["file_path", "content"]
            }),
        ),
        spec(
            "Edit",
            "Replace old_string with new_string in a file you have Read: old_string must match its text exactly (whitespace and indentation included, \
             without Read's line numbers) and be unique in the file unless replace_all is true (include a few surrounding lines to make it unique).",
            json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string"},
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                    "replace_all": {"type": "boolean"}
                },
                "required": ["file_path", "old_string", "new_string"]
            }),
        ),
        spec(
            "Glob",
            "Find files by glob pattern (e.g. \"**/*.ts\", \"src/*.rs\"; * does not cross /, ** does), honouring .gitignore. \
             Returns paths, most recently modified first, 200 at most: narrow the pattern or path when there are more.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string", "description": "Default: the project directory"}
                },
                "required": ["pattern"]
            }),
        ),
        spec(
            "Grep",
            "Search file contents with a regular expression (Rust regex syntax, like ripgrep: no look-around or backreferences; escape ( [ { . * + ? literally), \
             honouring .gitignore, skipping binary files. output_mode is files_with_matches by default; content gives the matching lines (-n numbers them). \
             500 lines at most: narrow with path or glob when there are more.",
            json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string", "description": "File or directory; default: the project directory"},
                    "glob": {"type": "string", "description": "Only files matching this glob, e.g. \"*.js\""},
                    "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"]},
                    "-i": {"type": "boolean", "description": "Case-insensitive"},
                    "-n": {"type": "boolean"}
                },
                "required": ["pattern"]
            }),
        ),
    ]
}
