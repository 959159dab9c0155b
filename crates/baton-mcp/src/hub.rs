//! The running servers and their tools.

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex, RwLock};
use std::time::Duration;

use baton_tools::process::signal_group;
use baton_tools::{ExternalTools, ToolOutput, ToolSpec};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use rustix::process::Signal;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::task::JoinHandle;

use crate::procs::{self, Proc};
use crate::spec::{ServerSpec, tool_name, valid_server_name};
use crate::{McpError, content};

/// Limits of a hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubOptions {
    /// How long one tool call may wait for its answer.
    pub call_timeout: Duration,
    /// How long a server may take to answer the handshake and list its tools.
    pub start_timeout: Duration,
    /// How many times one server is started again after it died, per hub.
    pub max_restarts: u32,
    /// Text of one result over this many bytes keeps its head and tail.
    pub max_text_bytes: usize,
}

impl Default for HubOptions {
    /// 120 s per call, 60 s to start, 3 restarts, 100,000 bytes of text.
    fn default() -> Self {
        Self {
            call_timeout: Duration::from_secs(120),
            start_timeout: Duration::from_secs(60),
            max_restarts: 3,
            max_text_bytes: 100_000,
        }
    }
}

/// The MCP servers of one run, offering their tools to the agent as
/// `mcp__<server>__<tool>` (see the crate docs for what it promises).
pub struct McpHub {
    servers: Vec<Server>,
    options: HubOptions,
}

struct Server {
    spec: ServerSpec,
    /// `mcp__<name>__`.
    prefix: String,
    tools: RwLock<Vec<Offered>>,
    state: tokio::sync::Mutex<State>,
}

/// A tool as offered, and its name on the server.
#[derive(Debug, Clone)]
struct Offered {
    spec: ToolSpec,
    tool: String,
}

struct State {
    live: Option<Live>,
    /// Counts the starts; a call knows which process it talked to.
    generation: u64,
    restarts: u32,
    /// Why the server is not running (when `live` is `None`).
    down: String,
    /// Shut down for good.
    stopped: bool,
}

struct Live {
    client: RunningService<RoleClient, ClientConfig>,
    pid: Option<i32>,
    stderr: Arc<StdMutex<Tail>>,
    reader: Option<JoinHandle<()>>,
}

/// The last lines a server wrote to stderr.
#[derive(Debug, Default)]
struct Tail {
    lines: VecDeque<String>,
}

const TAIL_LINES: usize = 20;
const TAIL_LINE_CHARS: usize = 400;

impl Tail {
    fn push(&mut self, line: &str) {
        let line: String = line.chars().take(TAIL_LINE_CHARS).collect();
        if self.lines.len() == TAIL_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }
    fn text(&self) -> String {
        self.lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

impl McpHub {
    /// Start every server with the default [`HubOptions`].
    pub async fn start(specs: Vec<ServerSpec>) -> Result<Arc<McpHub>, McpError> {
        Self::start_with(specs, HubOptions::default()).await
    }

    /// Start every server: spawn it in its own process group, run the MCP handshake
    /// and list its tools. If one fails, those already started are stopped and the
    /// error names the failing server.
    pub async fn start_with(
        specs: Vec<ServerSpec>,
        options: HubOptions,
    ) -> Result<Arc<McpHub>, McpError> {
        for (i, s) in specs.iter().enumerate() {
            if !valid_server_name(&s.name) {
                return Err(McpError::InvalidName {
                    name: s.name.clone(),
                });
            }
            if specs[..i].iter().any(|o| o.name == s.name) {
                return Err(McpError::Duplicate {
                    name: s.name.clone(),
                });
            }
        }
        let mut hub = McpHub {
            servers: Vec::with_capacity(specs.len()),
            options,
        };
        for spec in specs {
            match start_live(&spec, &hub.options).await {
                Ok((live, tools)) => hub.servers.push(Server {
                    prefix: format!("mcp__{}__", spec.name),
                    tools: RwLock::new(offered(&spec, tools)),
                    state: tokio::sync::Mutex::new(State {
                        live: Some(live),
                        generation: 1,
                        restarts: 0,
                        down: String::new(),
                        stopped: false,
                    }),
                    spec,
                }),
                Err(e) => {
                    hub.shutdown().await;
                    return Err(e);
                }
            }
        }
        Ok(Arc::new(hub))
    }

    /// The servers' names, in start order.
    pub fn servers(&self) -> Vec<String> {
        self.servers.iter().map(|s| s.spec.name.clone()).collect()
    }

    /// The process id of `server` while it runs (for diagnostics and tests).
    pub async fn server_pid(&self, server: &str) -> Option<u32> {
        let s = self.servers.iter().find(|s| s.spec.name == server)?;
        let st = s.state.lock().await;
        st.live.as_ref()?.pid.map(|p| p as u32)
    }

    /// Stop every server (the MCP way: close its input, then `SIGTERM`, then
    /// `SIGKILL` to its process group) and every process it started. Calls after
    /// this are errors. Safe to call more than once.
    pub async fn shutdown(&self) {
        for s in &self.servers {
            let mut st = s.state.lock().await;
            st.stopped = true;
            st.down = "baton stopped it at the end of the run".to_string();
            st.generation += 1;
            if let Some(live) = st.live.take() {
                stop(live).await;
            }
        }
    }

    async fn call_tool(&self, name: &str, input: &Value) -> ToolOutput {
        let Some(server) = self.servers.iter().find(|s| name.starts_with(&s.prefix)) else {
            return ToolOutput::error(format!("{name} is not a tool of any MCP server."));
        };
        let tool = server.tool_of(name);
        if server.spec.hidden_tools.contains(&tool) {
            return ToolOutput::error(format!(
                "{name} is not available: baton does not offer it (it would run code outside the command policy and the sandbox)."
            ));
        }
        let mut params = CallToolRequestParams::new(tool.clone());
        match input {
            Value::Object(m) => params = params.with_arguments(m.clone()),
            Value::Null => {}
            other => {
                return ToolOutput::error(format!(
                    "The input of {name} must be a JSON object, not {other}."
                ));
            }
        }
        let (peer, generation) = match server.peer(&self.options).await {
            Ok(p) => p,
            Err(msg) => return ToolOutput::error(msg),
        };
        let call = tokio::time::timeout(self.options.call_timeout, peer.call_tool(params)).await;
        match call {
            Ok(Ok(result)) => content::to_output(result, self.options.max_text_bytes),
            Ok(Err(e)) if died(&e) || peer.is_transport_closed() => {
                server.died(generation, &tool, &self.options).await
            }
            Ok(Err(e)) => ToolOutput::error(format!(
                "MCP server {:?} could not run {tool}: {}",
                server.spec.name,
                describe(&e)
            )),
            Err(_) if peer.is_transport_closed() => {
                server.died(generation, &tool, &self.options).await
            }
            Err(_) => ToolOutput::error(format!(
                "MCP server {:?} did not answer the call of {tool} within {} s; baton abandoned it. \
                 The server is still running: try a smaller step, or check the page or service it works on.",
                server.spec.name,
                self.options.call_timeout.as_secs_f64()
            )),
        }
    }
}

/// Whether a call failed because the connection to the server is gone.
fn died(e: &ServiceError) -> bool {
    matches!(
        e,
        ServiceError::TransportClosed
            | ServiceError::TransportSend(_)
            | ServiceError::Cancelled { .. }
    )
}

fn describe(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(d) => format!("error {}: {}", d.code.0, d.message),
        other => other.to_string(),
    }
}

impl Server {
    /// The server's name for the tool offered as `name`.
    fn tool_of(&self, name: &str) -> String {
        let known = self.tools.read().ok().and_then(|t| {
            t.iter()
                .find(|o| o.spec.name == name)
                .map(|o| o.tool.clone())
        });
        known.unwrap_or_else(|| name.strip_prefix(&self.prefix).unwrap_or(name).to_string())
    }

    /// A connection to call through, starting the server again if it is down and
    /// restarts are left.
    async fn peer(&self, options: &HubOptions) -> Result<(Peer<RoleClient>, u64), String> {
        let mut st = self.state.lock().await;
        if let Some(live) = &st.live {
            return Ok((live.client.peer().clone(), st.generation));
        }
        let name = &self.spec.name;
        if st.stopped || st.restarts >= options.max_restarts {
            return Err(format!(
                "MCP server {name:?} is gone: {}. Its tools cannot be used in this run.",
                st.down
            ));
        }
        st.restarts += 1;
        match start_live(&self.spec, options).await {
            Ok((live, tools)) => {
                let peer = live.client.peer().clone();
                self.set_tools(tools);
                st.live = Some(live);
                st.generation += 1;
                Ok((peer, st.generation))
            }
            Err(e) => {
                st.down = format!("it could not be started again: {e}");
                Err(format!("MCP server {name:?} is not running: {}", st.down))
            }
        }
    }

    fn set_tools(&self, tools: Vec<rmcp::model::Tool>) {
        if let Ok(mut t) = self.tools.write() {
            *t = offered(&self.spec, tools);
        }
    }

    /// The call through connection `generation` found the server dead: say so, and
    /// start it again if restarts are left.
    async fn died(&self, generation: u64, tool: &str, options: &HubOptions) -> ToolOutput {
        let name = &self.spec.name;
        let mut st = self.state.lock().await;
        if st.generation != generation {
            // Another call found it dead first.
            let now = match &st.live {
                Some(_) => "baton has started it again".to_string(),
                None => format!("it is not running: {}", st.down),
            };
            return ToolOutput::error(format!(
                "MCP server {name:?} died during the call of {tool}; {now}. \
                 Whatever it held (open pages, logins, state) is lost: repeat the steps that are still needed."
            ));
        }
        let mut printed = String::new();
        if let Some(mut live) = st.live.take() {
            if let Some(reader) = live.reader.take() {
                let _ = tokio::time::timeout(Duration::from_secs(1), reader).await;
            }
            printed = live.stderr.lock().map(|t| t.text()).unwrap_or_default();
            stop(live).await;
        }
        let printed = if printed.trim().is_empty() {
            String::new()
        } else {
            format!(" Its last output:\n{}\n", printed.trim_end())
        };
        st.generation += 1;
        if st.stopped || st.restarts >= options.max_restarts {
            st.down = format!(
                "it died {} times and was restarted {} times, the most baton allows in one run",
                st.restarts + 1,
                st.restarts
            );
            return ToolOutput::error(format!(
                "MCP server {name:?} died during the call of {tool}.{printed} baton does not start it \
                 again ({}): its tools are gone for the rest of this run. Verify another way \
                 (e.g. with a command) and say so in your notes.",
                st.down
            ));
        }
        st.restarts += 1;
        let n = st.restarts;
        let max = options.max_restarts;
        match start_live(&self.spec, options).await {
            Ok((live, tools)) => {
                self.set_tools(tools);
                st.live = Some(live);
                st.generation += 1;
                ToolOutput::error(format!(
                    "MCP server {name:?} died during the call of {tool}.{printed} baton restarted it \
                     (restart {n} of at most {max}). Whatever it held (open pages, logins, state) is lost: \
                     repeat the steps that are still needed, then this call."
                ))
            }
            Err(e) => {
                st.down = format!("it could not be started again: {e}");
                ToolOutput::error(format!(
                    "MCP server {name:?} died during the call of {tool}.{printed} baton tried to restart it \
                     (restart {n} of at most {max}) and failed: {e}"
                ))
            }
        }
    }
}

/// Offer the `tools` of `spec`'s server under their prefixed names, less its
/// hidden ones (the first of any two names that clean to the same one wins).
fn offered(spec: &ServerSpec, tools: Vec<rmcp::model::Tool>) -> Vec<Offered> {
    let mut out: Vec<Offered> = Vec::with_capacity(tools.len());
    for t in tools {
        if spec.hidden_tools.iter().any(|h| *h == t.name) {
            continue;
        }
        let name = tool_name(&spec.name, &t.name);
        if out.iter().any(|o| o.spec.name == name) {
            continue;
        }
        let description = t
            .description
            .as_deref()
            .map(str::to_string)
            .or_else(|| t.title.clone())
            .unwrap_or_default();
        out.push(Offered {
            spec: ToolSpec {
                name,
                description,
                input_schema: Value::Object((*t.input_schema).clone()),
            },
            tool: t.name.to_string(),
        });
    }
    out
}

/// Spawn `spec`, run the handshake and list its tools.
async fn start_live(
    spec: &ServerSpec,
    options: &HubOptions,
) -> Result<(Live, Vec<rmcp::model::Tool>), McpError> {
    if spec.command.is_empty() {
        return Err(McpError::NoCommand {
            server: spec.name.clone(),
        });
    }
    for (path, text) in &spec.files {
        let written = match path.parent() {
            Some(dir) => std::fs::create_dir_all(dir).and_then(|()| std::fs::write(path, text)),
            None => std::fs::write(path, text),
        };
        written.map_err(|source| McpError::WriteFile {
            server: spec.name.clone(),
            path: path.clone(),
            source,
        })?;
    }
    let mut cmd = tokio::process::Command::new(&spec.command);
    // The launch dir is baton's; create it, it may be the first start.
    let _ = std::fs::create_dir_all(&spec.cwd);
    cmd.args(&spec.args).current_dir(&spec.cwd);
    for k in &spec.env_remove {
        cmd.env_remove(k);
    }
    cmd.envs(&spec.env);
    let mut wrap = process_wrap::tokio::CommandWrap::from(cmd);
    wrap.wrap(process_wrap::tokio::ProcessGroup::leader());
    let (transport, stderr) = TokioChildProcess::builder(wrap)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| McpError::Spawn {
            server: spec.name.clone(),
            command: spec.command_line(),
            source,
        })?;
    let pid = transport.id().and_then(|p| i32::try_from(p).ok());
    let tail = Arc::new(StdMutex::new(Tail::default()));
    let reader = stderr.map(|e| tokio::spawn(read_stderr(e, tail.clone())));
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("baton", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
    let secs = options.start_timeout.as_secs_f64();
    let client = match tokio::time::timeout(options.start_timeout, info.serve(transport)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            let reason = format!("the MCP handshake failed: {e}");
            return Err(failed(spec, reason, pid, &tail, reader).await);
        }
        Err(_) => {
            let reason = format!("no answer to the MCP handshake within {secs} s");
            return Err(failed(spec, reason, pid, &tail, reader).await);
        }
    };
    let tools = match tokio::time::timeout(options.start_timeout, client.list_all_tools()).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            drop(client);
            let reason = format!("listing its tools failed: {e}");
            return Err(failed(spec, reason, pid, &tail, reader).await);
        }
        Err(_) => {
            drop(client);
            let reason = format!("no answer to tools/list within {secs} s");
            return Err(failed(spec, reason, pid, &tail, reader).await);
        }
    };
    Ok((
        Live {
            client,
            pid,
            stderr: tail,
            reader,
        },
        tools,
    ))
}

/// The error of a server that started but failed: kill it, and quote what it printed.
async fn failed(
    spec: &ServerSpec,
    reason: String,
    pid: Option<i32>,
    tail: &StdMutex<Tail>,
    reader: Option<JoinHandle<()>>,
) -> McpError {
    if let Some(pid) = pid {
        signal_group(pid, Signal::KILL);
    }
    if let Some(r) = reader {
        let _ = tokio::time::timeout(Duration::from_secs(2), r).await;
    }
    let reason = if spec.name == crate::PLAYWRIGHT_SERVER {
        format!("{reason} (`baton doctor` checks Node, @playwright/mcp and Chromium)")
    } else {
        reason
    };
    McpError::Start {
        server: spec.name.clone(),
        command: spec.command_line(),
        reason,
        stderr: tail.lock().map(|t| t.text()).unwrap_or_default(),
    }
}

async fn read_stderr(stderr: ChildStderr, tail: Arc<StdMutex<Tail>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Ok(mut t) = tail.lock() {
            t.push(&line);
        }
    }
}

/// End a server and everything it started.
async fn stop(mut live: Live) {
    let family: Vec<Proc> = live.pid.map(procs::tree).unwrap_or_default();
    let _ = live.client.close_with_timeout(Duration::from_secs(8)).await;
    if let Some(pid) = live.pid {
        signal_group(pid, Signal::KILL);
    }
    kill_family(&family);
    if let Some(r) = live.reader.take() {
        r.abort();
    }
}

/// Kill what is left of `family`, giving a process that is closing a moment first.
fn kill_family(family: &[Proc]) {
    for &p in family {
        procs::kill(p);
    }
}

impl Drop for McpHub {
    /// The last resort when [`McpHub::shutdown`] was not called: kill every server's
    /// process group and the processes it started, at once.
    fn drop(&mut self) {
        for s in &self.servers {
            if let Ok(st) = s.state.try_lock()
                && let Some(live) = &st.live
                && let Some(pid) = live.pid
            {
                let family = procs::tree(pid);
                signal_group(pid, Signal::KILL);
                kill_family(&family);
            }
        }
    }
}

impl fmt::Debug for McpHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.servers())
            .field("options", &self.options)
            .finish()
    }
}

impl ExternalTools for McpHub {
    fn specs(&self) -> Vec<ToolSpec> {
        self.servers
            .iter()
            .flat_map(|s| {
                s.tools
                    .read()
                    .map(|t| t.iter().map(|o| o.spec.clone()).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .collect()
    }

    fn handles(&self, name: &str) -> bool {
        self.servers.iter().any(|s| name.starts_with(&s.prefix))
    }

    fn call<'a>(
        &'a self,
        name: &'a str,
        input: &'a Value,
    ) -> Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>> {
        Box::pin(self.call_tool(name, input))
    }
}
