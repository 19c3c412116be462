//! `amc mcp`: the stdio bridge that MCP hosts launch.

use std::path::PathBuf;

use clap::Args;

use amc_core::config::RawConfig;
use amc_mcp::bridge::{Bridge, BridgeConfig, Problem, check};

#[derive(Args)]
pub struct McpArgs {
    /// Read the agent's token from this file instead of AMC_BEARER_TOKEN
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// The agent's id
    #[arg(long, env = "AMC_AGENT_ID", hide_env_values = true)]
    agent_id: Option<String>,
    /// Serve the relay's tools (threads between agents) instead of the inbox's
    #[arg(long)]
    relay: bool,
    /// Do not push new messages to the host (Claude Code channel notifications); agents
    /// still read them with list_unread_messages or wait_for_unread_messages
    #[arg(long)]
    no_push: bool,
}

pub async fn run(raw: RawConfig, args: McpArgs) -> anyhow::Result<()> {
    let endpoint = if args.relay { "/mcp/relay" } else { "/mcp" }.to_owned();
    let config = raw.clone().validate();
    let socket = match &config {
        Ok(c) => c.socket_path(),
        Err(_) => RawConfig { data_dir: raw.data_dir.clone(), ..Default::default() }
            .data_dir
            .map(|d| d.join("run/amc.sock"))
            .unwrap_or_default(),
    };
    let token = match &args.token_file {
        Some(path) => std::fs::read_to_string(path)
            .map(|t| Some(t.trim().to_owned()))
            .map_err(|e| Problem::Config(format!("cannot read the token file {}: {e}", path.display()))),
        None => {
            Ok(std::env::var("AMC_BEARER_TOKEN").ok().filter(|t| !t.trim().is_empty()).map(|t| t.trim().to_owned()))
        }
    };
    let cfg = BridgeConfig {
        socket,
        endpoint,
        token: token.clone().ok().flatten(),
        agent_id: args.agent_id.filter(|a| !a.is_empty()),
        push: !args.no_push,
    };
    // A broken setup is said at once, in one line, and every MCP request answers with it:
    // the host sees why rather than a process that died.
    let fixed = match (config, token) {
        (Err(e), _) => Some(Problem::Config(format!("AMC's configuration: {e}"))),
        (_, Err(p)) => Some(p),
        _ => None,
    };
    if let Some(problem) = fixed {
        eprintln!("amc mcp: {problem}");
        Bridge::broken(cfg, problem).serve_stdio().await?;
        return Ok(());
    }
    // Otherwise check now; a daemon started later is picked up by the next request.
    if let Err(problem) = check(&cfg).await {
        eprintln!("amc mcp: {problem}");
    } else if cfg.agent_id.is_none() && !args.relay {
        eprintln!(
            "amc mcp: AMC_AGENT_ID is not set: list_unread_messages, mark_read and get_message_context will answer AGENT_ID_REQUIRED"
        );
    }
    Bridge::new(cfg).serve_stdio().await?;
    Ok(())
}
