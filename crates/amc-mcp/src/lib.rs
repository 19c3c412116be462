//! AMC's MCP face: the inbox toolset served on the daemon's socket, and the stdio bridge
//! (`amc mcp`) that MCP hosts launch.
//!
//! # Layout
//! - [`tools`]: the tools' names, input and output schemas, annotations.
//! - [`server`]: the rmcp server handler; it calls the core's service layer directly.
//! - [`relay`]: the relay toolset (threads between agents), its own server at `/mcp/relay`.
//! - [`bridge`]: stdio ⇄ the daemon's socket, for hosts that cannot dial a socket.
//! - [`channel`]: Claude Code channel notifications, for the bridge's push.
#![deny(missing_docs)]

pub mod bridge;
pub mod channel;
mod push;
pub mod relay;
pub mod server;
pub mod tools;

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use amc_core::service::Amc;

pub use relay::RelayServer;
pub use server::{InboxServer, McpCaller};

/// The largest MCP request body accepted (a JSON-RPC message).
pub const MAX_MCP_REQUEST_BYTES: usize = 1024 * 1024;

/// The inbox toolset as a tower service for `/mcp`: streamable HTTP, stateless, plain
/// JSON replies. The daemon authenticates each request and puts an [`McpCaller`] in its
/// extensions before it reaches this service.
pub fn inbox_service(amc: Amc, shutdown: CancellationToken) -> StreamableHttpService<InboxServer, NeverSessionManager> {
    let factory = move || Ok(InboxServer::new(amc.clone()));
    StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), config(shutdown))
}

/// The relay toolset as a tower service for `/mcp/relay`, set up like [`inbox_service`].
pub fn relay_service(
    relay: amc_relay::Relay,
    shutdown: CancellationToken,
) -> StreamableHttpService<RelayServer, NeverSessionManager> {
    let factory = move || Ok(RelayServer::new(relay.clone()));
    StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), config(shutdown))
}

fn config(shutdown: CancellationToken) -> StreamableHttpServerConfig {
    StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(MAX_MCP_REQUEST_BYTES)
        .with_cancellation_token(shutdown)
}
