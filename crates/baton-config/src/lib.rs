//! `baton-config` owns `baton.toml`: the settings a project carries (provider, model,
//! session limits, retry policy, prices). Every field has a default, so a missing file
//! or an empty one is a valid configuration; an unknown key or a wrong type is an error
//! that names the file, line and column.
//!
//! ```
//! let cfg = baton_config::Config::from_toml_str("[agent]\nmodel = \"m\"\n", "baton.toml").unwrap();
//! assert_eq!(cfg.agent.model.as_deref(), Some("m"));
//! assert_eq!(cfg.retry.max_attempts, 8);
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

mod forge;
mod mcp;
mod notify;
mod policy;
mod verify;
pub use forge::*;
pub use mcp::*;
pub use notify::*;
pub use policy::*;
pub use verify::*;

/// Every `[agent] provider` (and `--provider`) baton knows: its own loop's wires,
/// then the agent CLIs it drives (each named by its profile in `baton-agent`,
/// whose test checks that every one is here).
pub const PROVIDERS: [&str; 5] = [
    "anthropic",
    "openai",
    "openai-responses",
    "claude-code",
    "codex",
];

/// [`PROVIDERS`] as an error names them: `"anthropic", …, "claude-code" or "codex"`.
pub fn providers_named() -> String {
    let quoted: Vec<String> = PROVIDERS.iter().map(|n| format!("{n:?}")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// File name of the project configuration inside a project directory.
pub const CONFIG_FILE: &str = "baton.toml";

/// An error reading or parsing `baton.toml`.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not match the schema.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message, including line and column.
        message: String,
    },
    /// A value is out of its allowed range.
    #[error("{path}: {field}: {message}{at}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Dotted key of the offending field.
        field: String,
        /// What is wrong.
        message: String,
        /// Where in the file, as the parser shows it (line, column and a caret
        /// under the value), when the field is written there; else empty.
        at: String,
    },
}

impl ConfigError {
    /// The same error with where its field is written in `text` (the file's
    /// text), as the parser shows a syntax error: line, column and a caret.
    pub fn placed(self, text: &str) -> Self {
        match self {
            ConfigError::Invalid {
                path,
                field,
                message,
                at,
            } if at.is_empty() => {
                let at = locate(text, &field).map_or_else(String::new, |(n, col, line, len)| {
                    let width = n.to_string().len();
                    let pad = " ".repeat(width);
                    format!(
                        " (line {n}, column {})\n{pad} |\n{n} | {line}\n{pad} | {}{}",
                        col + 1,
                        " ".repeat(col),
                        "^".repeat(len.max(1))
                    )
                });
                ConfigError::Invalid {
                    path,
                    field,
                    message,
                    at,
                }
            }
            other => other,
        }
    }
}

/// Where the dotted key `field` is written in `text`: its line (1-based), the
/// column (0-based, in characters) and length of its value, and the line. Only
/// `key = value` under a `[table]` header (or at the top); `None` otherwise.
fn locate(text: &str, field: &str) -> Option<(usize, usize, String, usize)> {
    let norm = |s: &str| -> String {
        s.split('.')
            .map(|p| p.trim().trim_matches('"').trim_matches('\''))
            .collect::<Vec<_>>()
            .join(".")
    };
    let (table, key) = match field.rsplit_once('.') {
        Some((t, k)) => (t.to_string(), k),
        None => (String::new(), field),
    };
    let mut current = String::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        if line.starts_with("[[") {
            current = format!("\0{line}");
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            if let Some(end) = rest.find(']') {
                current = norm(&rest[..end]);
            }
            continue;
        }
        if current != table {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if norm(k) != key {
            continue;
        }
        let indent = raw.len() - line.len();
        let value_start = indent + k.len() + 1 + (v.len() - v.trim_start().len());
        let value = v.trim_start();
        let value = match value.find(" #") {
            Some(c) => &value[..c],
            None => value,
        }
        .trim_end();
        let col = raw[..value_start].chars().count();
        return Some((i + 1, col, raw.to_string(), value.chars().count()));
    }
    None
}

/// The whole of `baton.toml`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Model provider, model and per-session limits.
    pub agent: AgentConfig,
    /// Retry policy for transient model failures.
    pub retry: RetryConfig,
    /// Prices in USD per million tokens, keyed by model name (or a prefix of it).
    pub prices: BTreeMap<String, Price>,
    /// File names of the project's handoff files and the feature-list targets.
    pub project: ProjectConfig,
    /// Limits and pacing of `baton run`.
    pub run: RunConfig,
    /// The identity of commits baton makes (its own and the agent's).
    pub git: GitConfig,
    /// Which `Bash` commands the agent may run.
    pub policy: PolicyConfig,
    /// OS-level confinement of the agent's processes.
    pub sandbox: SandboxConfig,
    /// Checks baton runs itself, and the independent verifier.
    pub verify: VerifyConfig,
    /// The built-in browser (Playwright MCP with the system Chromium).
    pub browser: BrowserConfig,
    /// MCP servers started for each run, by name.
    pub mcp: BTreeMap<String, McpServerConfig>,
    /// Notifications to a person.
    pub notify: NotifyConfig,
    /// The project's issues on a forge.
    pub forge: ForgeConfig,
}

/// The handoff files. The defaults are the pattern's well-known names, so
/// projects made by other harnesses of the pattern run unchanged.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ProjectConfig {
    /// What to build (a copy of the user's spec).
    pub spec: String,
    /// The feature list: a JSON array of `{category, description, steps, passes}`.
    pub feature_list: String,
    /// Human-readable handoff notes, appended each session.
    pub progress: String,
    /// Idempotent setup script: installs, starts the dev servers.
    pub init_script: String,
    /// How many features the initializer is asked for.
    pub features: u32,
    /// Fewest features baton accepts from the initializer.
    pub min_features: u32,
    /// What is built: `web` (verified in a browser), `cli`, `library` or `service`
    /// (verified through commands).
    pub kind: String,
    /// The project existed before baton (`baton new --adopt`): the initializer
    /// studies its code, tests and how to run it first, and lists what already
    /// works before the goal's features.
    pub adopt: bool,
}

impl Default for ProjectConfig {
    fn default() -> Self {
        Self {
            spec: "app_spec.txt".into(),
            feature_list: "feature_list.json".into(),
            progress: "claude-progress.txt".into(),
            init_script: "init.sh".into(),
            features: 200,
            min_features: 20,
            kind: "web".into(),
            adopt: false,
        }
    }
}

/// When `baton run` stops and how it paces sessions. Zero means no limit.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// Sessions in one `baton run`, the initializer included.
    pub max_sessions: u32,
    /// Spend in USD across the whole project.
    pub budget_usd: f64,
    /// Wall-clock hours of one `baton run`.
    pub max_hours: f64,
    /// Seconds between sessions.
    pub pause_secs: f64,
    /// Coding sessions in a row without a newly passing feature before the run stops.
    pub stall_sessions: u32,
    /// Longest wait for a provider's quota to reset (HTTP 429/529 with a reset time
    /// beyond the retry cap, a CLI's usage limit), in hours; a later reset stops the
    /// run with exit 2. 0 = never wait.
    pub max_wait_hours: f64,
    /// Failed attempts at a feature before it is deferred behind every other failing
    /// feature; 0 = never defer.
    pub feature_attempts: u32,
    /// Coding agents working at once, each in a working copy of its own
    /// (`docs/parallel.md`); 1 = one session at a time in the project itself.
    pub agents: u32,
    /// With `--remote`: minutes after which a claim on the remote is taken as
    /// abandoned (its machine died) and released.
    pub claim_ttl_minutes: f64,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            max_sessions: 0,
            budget_usd: 0.0,
            max_hours: 0.0,
            pause_secs: 3.0,
            stall_sessions: 3,
            max_wait_hours: 6.0,
            feature_attempts: 3,
            agents: 1,
            claim_ttl_minutes: 120.0,
        }
    }
}

/// Author and committer of the commits made in the project.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GitConfig {
    /// Name used when the environment and git config give none.
    pub user_name: String,
    /// Email used when the environment and git config give none.
    pub user_email: String,
    /// A remote of the project's own (a name in `.git/config`) that baton pushes
    /// the branch the run started on to, as `baton/<branch>`, after each session
    /// that committed: with its own git, outside the sandbox, with the user's
    /// credentials, never forced, never a commit that changes a CI or deployment
    /// definition. `None` (the default): baton never pushes.
    pub push: Option<String>,
    /// How long one of baton's own git commands may take before it is stopped
    /// with an error that says so (a FIFO or a lock where git reads would hang
    /// it); a push or fetch gets ten times as long.
    pub timeout_secs: u64,
}

impl Default for GitConfig {
    fn default() -> Self {
        Self {
            user_name: "baton".into(),
            user_email: "baton@localhost".into(),
            push: None,
            timeout_secs: 300,
        }
    }
}

/// Which model to drive and how long a session may run.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// `anthropic`, `openai` (chat completions), `openai-responses` (the OpenAI
    /// Responses API) or `claude-code` (an installed Claude Code CLI); `None` means the built-in default (`anthropic`).
    pub provider: Option<String>,
    /// Model name; `None` means the provider's default.
    pub model: Option<String>,
    /// `max_tokens` sent with each request; `None` means the model's own limit from the
    /// built-in table (16384 for a model it does not know).
    pub max_output_tokens: Option<u32>,
    /// Model turns per session before the session is stopped.
    pub max_turns: u32,
    /// Total tokens (input + output + cache) per session before it is stopped; 0 = no limit.
    pub max_session_tokens: u64,
    /// Wall-clock minutes per session before it is stopped (fractions allowed), a
    /// command still running then included; 0 = no limit.
    pub max_session_minutes: f64,
    /// Anthropic extended-thinking budget in tokens; 0 = thinking off.
    pub thinking_budget: u32,
    /// How many times in a row a response cut by `max_tokens` is continued before the
    /// session stops with an error.
    pub max_continuations: u32,
    /// The model's context window in tokens; 0 means the built-in table's figure (or,
    /// for a model it does not know, 128k until the server says otherwise).
    pub context_window: u64,
    /// Share of the context window at which baton acts (`context`), in (0, 1].
    pub context_threshold: f64,
    /// What baton does when the context is nearly full: `handoff` (the agent commits,
    /// writes its notes and the session ends as `context_full`) or `compact` (the older
    /// conversation is replaced by the model's own summary and the session goes on).
    pub context: ContextMode,
    /// A tool result larger than this many tokens keeps its head and tail; the whole
    /// text is saved under `.baton/outputs/`.
    pub tool_result_max_tokens: u64,
    /// Turns the agent gets to wrap up after being told its context is nearly full.
    pub handoff_turns: u32,
}

/// What baton does when a session's context window is nearly full.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextMode {
    /// Tell the agent to commit, write its notes and stop; the next session starts fresh.
    #[default]
    Handoff,
    /// Replace the older conversation with a summary the model writes, and go on.
    Compact,
}

impl ContextMode {
    /// The name used in `baton.toml` and the records.
    pub fn name(self) -> &'static str {
        match self {
            Self::Handoff => "handoff",
            Self::Compact => "compact",
        }
    }
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            provider: None,
            model: None,
            max_output_tokens: None,
            max_turns: 200,
            max_session_tokens: 0,
            max_session_minutes: 0.0,
            thinking_budget: 0,
            max_continuations: 3,
            context_window: 0,
            context_threshold: 0.8,
            context: ContextMode::Handoff,
            tool_result_max_tokens: 25_000,
            handoff_turns: 5,
        }
    }
}

/// Capped exponential backoff with jitter.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    /// Attempts per request, the first included.
    pub max_attempts: u32,
    /// Delay before the first retry, doubled each attempt.
    pub base_delay_ms: u64,
    /// Upper bound of any single delay, `retry-after` included.
    pub max_delay_ms: u64,
    /// A stream that sends nothing for this long is treated as cut.
    pub stream_idle_timeout_secs: u64,
    /// First wait at a quota wall whose provider names no reset time (doubled at each
    /// further probe, up to six times as long); bounded by `[run] max_wait_hours`.
    pub quota_probe_secs: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            base_delay_ms: 1_000,
            max_delay_ms: 60_000,
            stream_idle_timeout_secs: 300,
            quota_probe_secs: 300,
        }
    }
}

/// Price of one million tokens of each kind, in USD.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Price {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens (thinking included).
    pub output: f64,
    /// Input tokens read from the prompt cache.
    pub cache_read: f64,
    /// Input tokens written to the prompt cache.
    pub cache_write: f64,
}

/// The parser's Rust type names in words a user knows.
fn plain_types(message: &str) -> String {
    let mut m = message.to_string();
    for (rust, plain) in [
        ("f64", "a number"),
        ("f32", "a number"),
        ("u64", "a whole number (0 or more)"),
        ("u32", "a whole number (0 or more)"),
        ("u16", "a whole number (0 or more)"),
        ("usize", "a whole number (0 or more)"),
        ("i64", "a whole number"),
        ("i32", "a whole number"),
    ] {
        m = m.replace(&format!("expected {rust}"), &format!("expected {plain}"));
    }
    m
}

/// `p` with `.` and `..` taken out, without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A directory of baton's own for `project`, outside it and outside what the
/// sandbox may write: `$XDG_STATE_HOME/baton/<name>-<hash>` (default
/// `~/.local/state/baton/…`). MCP servers start there, and the policy the agent
/// CLI's hook applies is kept there. Not created.
pub fn state_dir(project: &Path) -> PathBuf {
    use std::hash::{Hash as _, Hasher as _};
    let base = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".local").join("state"))
        })
        .unwrap_or_else(|| PathBuf::from("/var/lib"))
        .join("baton");
    let mut h = std::collections::hash_map::DefaultHasher::new();
    project.hash(&mut h);
    let name = project
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    base.join(format!("{name}-{:016x}", h.finish()))
}

impl Config {
    /// Load `baton.toml` from a project directory; a missing file gives the defaults.
    pub fn load(project_dir: &Path) -> Result<Self, ConfigError> {
        let path = project_dir.join(CONFIG_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::for_project(project_dir, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(ConfigError::Read { path, source }),
        }
    }

    /// `text` taken as `project_dir`'s `baton.toml`, judged as [`Config::load`]
    /// judges the file (program paths inside the project refused): for a copy of
    /// the file kept elsewhere.
    pub fn for_project(project_dir: &Path, text: &str) -> Result<Self, ConfigError> {
        let path = project_dir.join(CONFIG_FILE);
        let cfg = Self::from_toml_str(text, &path)?;
        cfg.validate_programs(project_dir, &path)?;
        Ok(cfg)
    }

    /// Parse the text of a `baton.toml`; `path` is used in error messages only.
    pub fn from_toml_str(text: &str, path: impl AsRef<Path>) -> Result<Self, ConfigError> {
        let path = path.as_ref().to_path_buf();
        let mut cfg: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.clone(),
            message: plain_types(e.to_string().trim_end()),
        })?;
        cfg.validate(&path).map_err(|e| e.placed(text))?;
        // The webhook's URL and the forge's token are secrets like the keys: the
        // agent never gets them.
        let forge_token = if cfg.forge.repo.is_empty() {
            String::new()
        } else {
            cfg.forge.token_env.clone()
        };
        for var in [cfg.notify.webhook_env.clone(), forge_token] {
            if !var.is_empty() && !cfg.policy.secret_env.contains(&var) {
                cfg.policy.secret_env.push(var);
            }
        }
        Ok(cfg)
    }

    /// MCP servers and the browser server run outside the sandbox, with the user's
    /// rights: their program (and any argument naming a file) must not be in the
    /// project, which the agent writes.
    fn validate_programs(&self, project_dir: &Path, path: &Path) -> Result<(), ConfigError> {
        let project = project_dir
            .canonicalize()
            .unwrap_or_else(|_| project_dir.to_path_buf());
        // Servers start in baton's state dir (see `state_dir`), so a relative path
        // names a file there; an absolute one may point into the project.
        let inside = |word: &str| -> bool {
            let p = Path::new(word);
            p.is_absolute()
                && (normalize(p).starts_with(&project)
                    || normalize(p).starts_with(project_dir)
                    || p.canonicalize().is_ok_and(|r| r.starts_with(&project)))
        };
        let invalid = |field: String, word: &str| ConfigError::Invalid {
            path: path.to_path_buf(),
            field,
            message: format!(
                "{word:?} is inside the project directory, which the agent can write; MCP servers run outside the sandbox with your rights, so their program and files must live outside the project (install them elsewhere and give an absolute path)"
            ),
            at: String::new(),
        };
        for (name, s) in &self.mcp {
            if inside(&s.command) {
                return Err(invalid(format!("mcp.{name}.command"), &s.command));
            }
            if let Some(a) = s.args.iter().find(|a| !a.starts_with('-') && inside(a)) {
                return Err(invalid(format!("mcp.{name}.args"), a));
            }
        }
        if let Some(w) = self
            .browser
            .command
            .iter()
            .find(|a| !a.starts_with('-') && inside(a))
        {
            return Err(invalid("browser.command".to_string(), w));
        }
        if let Some(w) = self
            .notify
            .command
            .iter()
            .find(|a| !a.starts_with('-') && inside(a))
        {
            return Err(invalid("notify.command".to_string(), w));
        }
        Ok(())
    }

    fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let invalid = |field: &str, message: &str| ConfigError::Invalid {
            path: path.to_path_buf(),
            field: field.to_string(),
            message: message.to_string(),
            at: String::new(),
        };
        self.notify.validate(path)?;
        if let Some(p) = &self.agent.provider
            && !PROVIDERS.contains(&p.as_str())
        {
            return Err(invalid(
                "agent.provider",
                &format!("unknown provider {p:?}; expected {}", providers_named()),
            ));
        }
        if self.agent.max_turns == 0 {
            return Err(invalid("agent.max_turns", "must be at least 1"));
        }
        if self.verify.max_turns == 0 {
            return Err(invalid("verify.max_turns", "must be at least 1"));
        }
        if self.verify.turns_per_feature == 0 {
            return Err(invalid("verify.turns_per_feature", "must be at least 1"));
        }
        if let Some((field, why)) = self.sandbox.problem() {
            return Err(invalid(field, &why));
        }
        if let Some((field, why)) = self.forge.problem() {
            return Err(invalid(field, &why));
        }
        if let Some((field, why)) = self.verify.batch.as_ref().and_then(BatchConfig::problem) {
            return Err(invalid(field, why));
        }
        if self.agent.max_output_tokens == Some(0) {
            return Err(invalid("agent.max_output_tokens", "must be at least 1"));
        }
        let t = self.agent.context_threshold;
        if !(t.is_finite() && t > 0.0 && t <= 1.0) {
            return Err(invalid(
                "agent.context_threshold",
                "must be a number above 0 and at most 1",
            ));
        }
        if self.agent.context_window > 0 && self.agent.context_window < 1_000 {
            return Err(invalid(
                "agent.context_window",
                "must be at least 1000 tokens (or 0 for the model's own)",
            ));
        }
        if self.agent.tool_result_max_tokens < 100 {
            return Err(invalid(
                "agent.tool_result_max_tokens",
                "must be at least 100",
            ));
        }
        if self.agent.handoff_turns == 0 {
            return Err(invalid("agent.handoff_turns", "must be at least 1"));
        }
        if !(self.agent.max_session_minutes.is_finite() && self.agent.max_session_minutes >= 0.0) {
            return Err(invalid(
                "agent.max_session_minutes",
                "must be a non-negative number",
            ));
        }
        for (field, v) in [
            ("run.budget_usd", self.run.budget_usd),
            ("run.max_hours", self.run.max_hours),
            ("run.pause_secs", self.run.pause_secs),
            ("run.max_wait_hours", self.run.max_wait_hours),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(field, "must be a non-negative number"));
            }
        }
        for (field, v) in [
            ("project.spec", &self.project.spec),
            ("project.feature_list", &self.project.feature_list),
            ("project.progress", &self.project.progress),
            ("project.init_script", &self.project.init_script),
        ] {
            if v.is_empty() || v.starts_with('/') || v.split('/').any(|c| c == "..") {
                return Err(invalid(field, "must be a relative path inside the project"));
            }
        }
        if !["web", "cli", "library", "service"].contains(&self.project.kind.as_str()) {
            return Err(invalid(
                "project.kind",
                &format!(
                    "unknown kind {:?}; expected \"web\", \"cli\", \"library\" or \"service\"",
                    self.project.kind
                ),
            ));
        }
        for name in self.mcp.keys() {
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(invalid(
                    &format!("mcp.{name}"),
                    "server names may use letters, digits, - and _ only",
                ));
            }
        }
        if self.project.min_features > self.project.features {
            return Err(invalid(
                "project.min_features",
                "must not exceed project.features",
            ));
        }
        if self.retry.max_attempts == 0 {
            return Err(invalid("retry.max_attempts", "must be at least 1"));
        }
        if self.retry.quota_probe_secs == 0 {
            return Err(invalid("retry.quota_probe_secs", "must be at least 1"));
        }
        if self.retry.stream_idle_timeout_secs == 0 {
            return Err(invalid(
                "retry.stream_idle_timeout_secs",
                "must be at least 1",
            ));
        }
        for (model, price) in &self.prices {
            for (kind, v) in [
                ("input", price.input),
                ("output", price.output),
                ("cache_read", price.cache_read),
                ("cache_write", price.cache_write),
            ] {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(invalid(
                        &format!("prices.{model}.{kind}"),
                        "must be a non-negative number",
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn empty_file_gives_defaults() {
        assert_eq!(
            Config::from_toml_str("", "baton.toml").ok(),
            Some(Config::default())
        );
    }

    #[test]
    #[allow(clippy::unwrap_used)]
    fn mcp_programs_inside_the_project_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let write = |t: &str| std::fs::write(p.join(CONFIG_FILE), t).unwrap();
        write(&format!(
            "[mcp.x]\ncommand = {:?}\n",
            p.join("node_modules/.bin/srv").display().to_string()
        ));
        let e = Config::load(p).unwrap_err().to_string();
        assert!(e.contains("mcp.x.command"), "{e}");
        assert!(e.contains("inside the project directory"), "{e}");
        write(&format!(
            "[mcp.x]\ncommand = \"python3\"\nargs = [{:?}]\n",
            p.join("srv.py").display().to_string()
        ));
        let e = Config::load(p).unwrap_err().to_string();
        assert!(e.contains("mcp.x.args"), "{e}");
        write(&format!(
            "[browser]\nenabled = true\ncommand = [\"node\", {:?}]\n",
            p.join("x/../cli.js").display().to_string()
        ));
        let e = Config::load(p).unwrap_err().to_string();
        assert!(e.contains("browser.command"), "{e}");
        // Outside the project, and the default browser command, are fine.
        write(
            "[mcp.x]\ncommand = \"/usr/bin/python3\"\nargs = [\"-m\", \"srv\"]\n[browser]\nenabled = true\n",
        );
        assert!(Config::load(p).is_ok());
    }

    #[test]
    fn missing_file_gives_defaults() -> Result<(), ConfigError> {
        let dir = tempfile::tempdir().map_err(|source| ConfigError::Read {
            path: PathBuf::from("tmp"),
            source,
        })?;
        assert_eq!(Config::load(dir.path())?, Config::default());
        Ok(())
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let err = Config::from_toml_str("[agent]\nmodel = \"x\"\nmodle = \"y\"\n", "p/baton.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("p/baton.toml: "), "{err}");
        assert!(err.contains("line 3"), "{err}");
        assert!(err.contains("modle"), "{err}");
    }

    #[test]
    fn type_errors_name_no_rust_types() {
        let err = Config::from_toml_str("[run]\nbudget_usd = \"ten\"\n", "baton.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("expected a number"), "{err}");
        let err = Config::from_toml_str("[agent]\nmax_turns = -1\n", "baton.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!err.contains("u32"), "{err}");
    }

    #[test]
    fn wrong_type_is_an_error() {
        let err = Config::from_toml_str("[agent]\nmax_turns = \"ten\"\n", "baton.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("line 2"), "{err}");
    }

    #[test]
    fn bad_values_name_the_field() {
        let err = Config::from_toml_str("[agent]\nprovider = \"gemini\"\n", "baton.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            err,
            "baton.toml: agent.provider: unknown provider \"gemini\"; expected \"anthropic\", \"openai\", \"openai-responses\", \"claude-code\" or \"codex\" (line 2, column 12)\n  |\n2 | provider = \"gemini\"\n  |            ^^^^^^^^"
        );
        // A field the file does not write as `key = value` under its table is
        // said without a place, as before.
        let err = Config::from_toml_str("agent = { provider = \"x\" }\n", "baton.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.ends_with("or \"codex\""), "{err}");
        let err = Config::from_toml_str("[prices.m]\ninput = -1.0\n", "baton.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            err,
            "baton.toml: prices.m.input: must be a non-negative number (line 2, column 9)\n  |\n2 | input = -1.0\n  |         ^^^^"
        );
    }

    #[test]
    fn prices_parse() -> Result<(), ConfigError> {
        let cfg = Config::from_toml_str(
            "[prices.\"my-model\"]\ninput = 1.5\noutput = 2.0\n",
            "baton.toml",
        )?;
        assert_eq!(
            cfg.prices.get("my-model"),
            Some(&Price {
                input: 1.5,
                output: 2.0,
                cache_read: 0.0,
                cache_write: 0.0
            })
        );
        Ok(())
    }

    /// An allowlist entry that is not a host stops the run where it is written.
    #[test]
    fn a_url_in_the_network_allowlist_is_shown_where_it_is_written() {
        let bad = Config::from_toml_str(
            "[sandbox]\nallow = [\"registry.npmjs.org\", \"https://evil.test/x\"]\n",
            "baton.toml",
        );
        let Err(e) = bad else { panic!("{bad:?}") };
        let said = e.to_string();
        assert!(said.contains("sandbox.allow"), "{said}");
        assert!(said.contains("\"https://evil.test/x\" is a URL"), "{said}");
        assert!(said.contains("(line 2, column"), "{said}");
        assert!(
            Config::from_toml_str(
                "[sandbox]\nallow = [\"git.example.com:8443\", \"*.github.com\"]\n",
                "baton.toml"
            )
            .is_ok()
        );
    }

    #[test]
    fn notify_takes_a_known_format_and_the_webhooks_variable_not_its_url() {
        let bad = Config::from_toml_str("[notify]\nformat = \"xml\"\n", "baton.toml");
        assert!(
            matches!(&bad, Err(ConfigError::Invalid { field, .. }) if field == "notify.format"),
            "{bad:?}"
        );
        let url = Config::from_toml_str(
            "[notify]\nwebhook_env = \"https://hooks.example/x\"\n",
            "baton.toml",
        );
        assert!(
            matches!(&url, Err(ConfigError::Invalid { field, .. }) if field == "notify.webhook_env"),
            "{url:?}"
        );
        // The variable is a secret: the agent never gets it.
        let ok = Config::from_toml_str("[notify]\nwebhook_env = \"HOOK\"\n", "baton.toml")
            .unwrap_or_default();
        assert!(ok.policy.secret_env.contains(&"HOOK".to_string()));
    }
}
