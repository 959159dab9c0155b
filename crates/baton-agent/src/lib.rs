//! `baton-agent` owns one agent session: the model clients (Anthropic Messages,
//! OpenAI-compatible chat completions and the OpenAI Responses API, all streamed), retries of transient failures,
//! usage and cost, the loop that runs tool calls and returns their results, and the
//! transcript written as it happens.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use baton_agent::{client::*, pricing::PriceTable, session::*, transcript::Transcript};
//! use baton_tools::{AllowAll, ToolContext, Toolbox};
//! let dir = std::path::PathBuf::from("/path/to/project");
//! let client = ModelClient::new(ClientConfig {
//!     provider: Provider::Anthropic,
//!     model: "claude-sonnet-4-5".into(),
//!     base_url: Provider::Anthropic.default_base_url().into(),
//!     api_key: std::env::var("ANTHROPIC_API_KEY").ok(),
//!     max_output_tokens: 16_384,
//!     thinking_budget: 0,
//!     retry: Default::default(),
//!     max_wait: std::time::Duration::from_secs(6 * 3600),
//! })?;
//! let tools = Toolbox::new(ToolContext::new(dir.clone()));
//! let prices = PriceTable::new(&Default::default());
//! let session = Session {
//!     client: &client, tools: &tools, gate: &AllowAll, observer: &Quiet, prices: &prices,
//!     limits: Limits {
//!         max_turns: 50, max_tokens: 0, max_duration: None, max_cost_usd: 0.0,
//!         max_continuations: 3,
//!         context: Default::default(),
//!     },
//! };
//! let mut transcript = Transcript::create_next(&dir)?;
//! let result = session.run(&mut transcript, "You are a careful engineer.", "Run the tests.").await?;
//! println!("{}", result.final_text);
//! # Ok(()) }
//! ```

pub mod anthropic;
pub mod cli_session;
pub mod client;
pub mod context;
/// A loopback proxy that lets a sandboxed CLI reach the model without holding the API key.
pub mod key_proxy;
pub mod model;
pub mod models;
pub mod openai;
pub mod pricing;
pub mod responses;
pub mod retry;
pub mod session;
pub mod transcript;
pub mod wire;
