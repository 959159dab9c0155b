//! Which servers to start, from `baton.toml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_config::{BrowserConfig, Config};
use serde_json::json;

/// Name of the browser's server: its tools are `mcp__playwright__browser_*`.
pub const PLAYWRIGHT_SERVER: &str = "playwright";

/// Tools of `@playwright/mcp` baton does not offer: `browser_run_code_unsafe` runs
/// arbitrary JavaScript in the server's Node process (its own description says
/// "RCE-equivalent"), outside the command policy and the sandbox every `Bash`
/// command goes through.
pub const PLAYWRIGHT_HIDDEN_TOOLS: &[&str] = &["browser_run_code_unsafe"];

/// Flags baton gives Chromium besides those of `@playwright/mcp` (`--headless`,
/// `--no-sandbox`): no GPU, and none of the background traffic a closed network
/// refuses (update checks, sync, field trials, first-run pages, QUIC probes).
pub const CHROMIUM_ARGS: &[&str] = &[
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
];

/// One MCP server to start over stdio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Its name; its tools are offered as `mcp__<name>__<tool>`.
    pub name: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment (added to baton's own).
    pub env: BTreeMap<String, String>,
    /// Variables of baton's own environment the server does not get (secrets),
    /// unless `env` sets them.
    pub env_remove: Vec<String>,
    /// Working directory: baton's state dir of the project
    /// ([`baton_config::state_dir`]`/mcp`), never the project itself, so that nothing
    /// the agent writes (a `node_modules/`, a Python module) is what the server runs.
    pub cwd: PathBuf,
    /// Files written (parents created) before each start, e.g. the server's own
    /// configuration: `(path, contents)`.
    pub files: Vec<(PathBuf, String)>,
    /// Tools of the server baton does not offer, and refuses if called.
    pub hidden_tools: Vec<String>,
}

impl ServerSpec {
    /// The command line, for messages.
    pub fn command_line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The servers of a project: every `[mcp.<name>]` in name order, then, when
/// `[browser] enabled`, the browser as the server named `playwright` (see
/// [`playwright_spec`]). A `[mcp.playwright]` of the project's own replaces the
/// built-in browser server. No server gets the provider keys
/// ([`baton_tools::DEFAULT_SECRET_VARS`]) or the `[policy] secret_env` variables.
pub fn specs_from_config(cfg: &Config, project_dir: &Path) -> Vec<ServerSpec> {
    let mut secrets = default_secrets();
    for v in &cfg.policy.secret_env {
        if !secrets.contains(v) {
            secrets.push(v.clone());
        }
    }
    let mut specs: Vec<ServerSpec> = cfg
        .mcp
        .iter()
        .map(|(name, s)| ServerSpec {
            name: name.clone(),
            command: s.command.clone(),
            args: s.args.clone(),
            env: s.env.clone(),
            env_remove: secrets.clone(),
            cwd: launch_dir(project_dir),
            files: Vec::new(),
            hidden_tools: Vec::new(),
        })
        .collect();
    if cfg.browser.enabled && !cfg.mcp.contains_key(PLAYWRIGHT_SERVER) {
        let mut browser = playwright_spec(&cfg.browser, project_dir);
        browser.env_remove = secrets;
        specs.push(browser);
    }
    specs
}

/// Where MCP servers start: outside the project, which the agent writes (the
/// browser's `npx` would otherwise run a package the agent put in
/// `node_modules/`). The project is given to servers as `BATON_PROJECT_DIR`.
pub fn launch_dir(project_dir: &Path) -> PathBuf {
    baton_config::state_dir(project_dir).join("mcp")
}

fn default_secrets() -> Vec<String> {
    baton_tools::DEFAULT_SECRET_VARS
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The Playwright MCP server as `[browser]` configures it: `command` followed by
/// `--headless --isolated --no-sandbox --executable-path <chromium>`, output files
/// (screenshots, page snapshots) in `<project>/.baton/playwright/output`, and a
/// configuration file (`<project>/.baton/playwright/config.json`, written before
/// each start) that adds [`CHROMIUM_ARGS`] to Chromium's command line. `--isolated`
/// gives every start a new, empty profile; `--no-sandbox` because baton runs as
/// root in CI. The provider keys are removed from its environment, and
/// [`PLAYWRIGHT_HIDDEN_TOOLS`] are not offered. Temporary files (the profile) go to `<project>/.baton/playwright/tmp`
/// (`TMPDIR`), so a browser that was killed leaves nothing outside the project.
pub fn playwright_spec(browser: &BrowserConfig, project_dir: &Path) -> ServerSpec {
    let dir = project_dir.join(baton_records::layout::PLAYWRIGHT);
    let config_path = dir.join("config.json");
    let tmp = dir.join("tmp");
    let config = json!({
        "browser": {
            "browserName": "chromium",
            "launchOptions": { "args": CHROMIUM_ARGS },
        }
    });
    let mut parts = browser.command.iter();
    let command = parts.next().cloned().unwrap_or_default();
    let mut args: Vec<String> = parts.cloned().collect();
    args.extend([
        "--headless".to_string(),
        "--isolated".to_string(),
        "--no-sandbox".to_string(),
        "--executable-path".to_string(),
        browser.chromium.clone(),
        "--output-dir".to_string(),
        dir.join("output").display().to_string(),
        "--config".to_string(),
        config_path.display().to_string(),
    ]);
    ServerSpec {
        name: PLAYWRIGHT_SERVER.to_string(),
        command,
        args,
        env: BTreeMap::from([("TMPDIR".to_string(), tmp.display().to_string())]),
        env_remove: default_secrets(),
        cwd: launch_dir(project_dir),
        files: vec![
            (config_path, format!("{config:#}\n")),
            (
                tmp.join("README"),
                "The browser's temporary files (profiles). Safe to delete while no baton run is going.\n"
                    .to_string(),
            ),
        ],
        hidden_tools: PLAYWRIGHT_HIDDEN_TOOLS.iter().map(|s| s.to_string()).collect(),
    }
}

/// The name a server's tool is offered under: `mcp__<server>__<tool>`, with every
/// character model APIs do not accept in tool names (anything but letters, digits,
/// `_` and `-`) replaced by `_`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("mcp__{server}__{clean}")
}

/// Whether `name` can be a server name.
pub(crate) fn valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn cfg(toml: &str) -> Config {
        Config::from_toml_str(toml, "baton.toml").unwrap()
    }

    #[test]
    fn no_servers_by_default() {
        assert_eq!(specs_from_config(&cfg(""), Path::new("/p")), vec![]);
    }

    #[test]
    fn mcp_sections_become_specs_in_name_order() {
        let c = cfg(
            "[policy]\nsecret_env = [\"DB_PASSWORD\"]\n[mcp.zeta]\ncommand = \"z\"\n[mcp.alpha]\ncommand = \"python3\"\nargs = [\"s.py\"]\nenv = { K = \"v\" }\n",
        );
        let specs = specs_from_config(&c, Path::new("/p"));
        assert_eq!(
            specs[0],
            ServerSpec {
                name: "alpha".into(),
                command: "python3".into(),
                args: vec!["s.py".into()],
                env: BTreeMap::from([("K".to_string(), "v".to_string())]),
                env_remove: vec![
                    "ANTHROPIC_API_KEY".into(),
                    "ANTHROPIC_AUTH_TOKEN".into(),
                    "OPENAI_API_KEY".into(),
                    "BATON_API_KEY".into(),
                    "DB_PASSWORD".into(),
                ],
                cwd: launch_dir(Path::new("/p")),
                files: vec![],
                hidden_tools: vec![],
            }
        );
        assert_eq!(specs[1].name, "zeta");
        assert_eq!(specs.len(), 2);
    }

    #[test]
    fn browser_runs_playwright_on_the_system_chromium() {
        let specs = specs_from_config(&cfg("[browser]\nenabled = true\n"), Path::new("/p"));
        assert_eq!(specs.len(), 1);
        let s = &specs[0];
        assert_eq!(s.name, "playwright");
        assert!(!s.cwd.starts_with("/p"), "{}", s.cwd.display());
        assert_eq!(
            s.command_line(),
            "npx --no-install @playwright/mcp --headless --isolated --no-sandbox \
             --executable-path /usr/bin/chromium --output-dir /p/.baton/playwright/output \
             --config /p/.baton/playwright/config.json"
        );
        assert_eq!(s.cwd, launch_dir(Path::new("/p")));
        assert_eq!(s.env["TMPDIR"], "/p/.baton/playwright/tmp");
        assert_eq!(s.hidden_tools, ["browser_run_code_unsafe"]);
        assert_eq!(
            s.files[1].0,
            PathBuf::from("/p/.baton/playwright/tmp/README")
        );
        let (path, text) = &s.files[0];
        assert_eq!(path, &PathBuf::from("/p/.baton/playwright/config.json"));
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            v["browser"]["launchOptions"]["args"],
            json!([
                "--disable-gpu",
                "--disable-quic",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run"
            ])
        );
    }

    #[test]
    fn browser_command_and_chromium_are_configurable() {
        let c = cfg(
            "[browser]\nenabled = true\nchromium = \"/opt/c\"\ncommand = [\"node\", \"/x/cli.js\"]\n",
        );
        let s = &specs_from_config(&c, Path::new("/p"))[0];
        assert_eq!(s.command, "node");
        assert_eq!(s.args[0], "/x/cli.js");
        assert!(s.command_line().contains("--executable-path /opt/c "));
    }

    #[test]
    fn a_projects_own_playwright_server_wins() {
        let c = cfg("[browser]\nenabled = true\n[mcp.playwright]\ncommand = \"mine\"\n");
        let specs = specs_from_config(&c, Path::new("/p"));
        assert_eq!(specs.len(), 1);
        assert_eq!(specs[0].command, "mine");
    }

    #[test]
    fn tool_names_are_prefixed_and_cleaned() {
        assert_eq!(
            tool_name("playwright", "browser_click"),
            "mcp__playwright__browser_click"
        );
        assert_eq!(tool_name("t", "odd.name/x"), "mcp__t__odd_name_x");
    }

    #[test]
    fn server_names() {
        assert!(valid_server_name("playwright"));
        assert!(valid_server_name("my-db_2"));
        assert!(!valid_server_name(""));
        assert!(!valid_server_name("a__b"));
        assert!(!valid_server_name("a.b"));
        assert!(!valid_server_name("a b"));
    }
}
