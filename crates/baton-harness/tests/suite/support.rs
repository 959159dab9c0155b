//! What the harness's tests and its parallel bench share: a reporter that keeps
//! its lines, working copies with every call allowed, a model client for a
//! scripted server, and git. The bench includes this file by path.
#![allow(dead_code, unused_imports)]

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use baton_agent::client::{ClientConfig, ModelClient, Provider};
use baton_config::Config;
use baton_harness::parallel::{AgentParts, Workspace};
use baton_harness::run::Reporter;
use baton_tools::{AllowAll, ToolContext, Toolbox};

/// Collects the run's lines, and its agents' statuses.
#[derive(Default)]
pub struct Lines(pub Mutex<Vec<String>>, pub Mutex<Vec<(u32, String)>>);

impl Lines {
    /// Every line so far, one per line.
    pub fn said(&self) -> String {
        self.0.lock().unwrap().join("\n")
    }

    /// Every agent status so far.
    pub fn statuses(&self) -> Vec<(u32, String)> {
        self.1.lock().unwrap().clone()
    }
}

impl Reporter for Lines {
    fn line(&self, text: &str) {
        self.0.lock().unwrap().push(text.to_string());
    }

    fn agent_status(&self, agent: u32, status: &str) {
        self.1.lock().unwrap().push((agent, status.to_string()));
    }

    fn agent_waits(&self, agent: u32, _notice: &baton_agent::client::RetryNotice) {
        self.0
            .lock()
            .unwrap()
            .push(format!("agent {agent} waits for a quota"));
    }
}

/// Working copies with every call allowed (the policy has tests of its own).
pub struct Plain;

impl Workspace for Plain {
    fn parts(
        &self,
        _agent: u32,
        dir: &Path,
        env: Vec<(String, String)>,
    ) -> Result<AgentParts, baton_harness::HarnessError> {
        let mut ctx = ToolContext::new(dir.to_path_buf());
        ctx.env = env;
        Ok(AgentParts {
            tools: Toolbox::new(ctx),
            policy: Box::new(AllowAll),
            cli: None,
            kernel_binds: false,
        })
    }
}

/// A client of the scripted model at `base_url`, with `cfg`'s retries.
pub fn client(base_url: String, cfg: &Config) -> ModelClient {
    ModelClient::new(ClientConfig {
        provider: Provider::Anthropic,
        model: "claude-sonnet-4-5".into(),
        base_url,
        api_key: Some("sk-test".into()),
        max_output_tokens: 4096,
        thinking_budget: 0,
        retry: cfg.retry.clone(),
        max_wait: Duration::from_secs(60),
    })
    .unwrap()
}

pub use baton_testkit::git;
