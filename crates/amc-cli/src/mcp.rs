//! `amc mcp`: the stdio bridge that MCP hosts launch.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use amc_core::config::RawConfig;
use amc_mcp::bridge::{Bridge, BridgeConfig, check};

#[derive(Args)]
pub struct McpArgs {
    /// Read the agent's token from this file instead of AMC_BEARER_TOKEN
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// The agent's id [env: AMC_AGENT_ID]
    #[arg(long, env = "AMC_AGENT_ID", hide_env_values = true)]
    agent_id: Option<String>,
    /// Serve the relay's tools (threads between agents) instead of the inbox's
    #[arg(long)]
    relay: bool,
}

pub async fn run(raw: RawConfig, args: McpArgs) -> anyhow::Result<()> {
    let config = raw.validate()?;
    let token = match &args.token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading the token file {}", path.display()))?
                .trim()
                .to_owned(),
        ),
        None => std::env::var("AMC_BEARER_TOKEN").ok().filter(|t| !t.trim().is_empty()).map(|t| t.trim().to_owned()),
    };
    let cfg = BridgeConfig {
        socket: config.socket_path(),
        endpoint: if args.relay { "/mcp/relay" } else { "/mcp" }.into(),
        token,
        agent_id: args.agent_id.filter(|a| !a.is_empty()),
    };
    // Say what is wrong at once, in one line; then serve anyway, answering every
    // request with that error until it is fixed (a daemon started later is picked up).
    if let Err(problem) = check(&cfg).await {
        eprintln!("amc mcp: {problem}");
    } else if cfg.agent_id.is_none() {
        eprintln!(
            "amc mcp: AMC_AGENT_ID is not set: list_unread_messages, mark_read and get_message_context will answer AGENT_ID_REQUIRED"
        );
    }
    Bridge::new(cfg).serve_stdio().await?;
    Ok(())
}
