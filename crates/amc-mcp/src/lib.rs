//! AMC's MCP face: the inbox toolset served on the daemon's socket, and the stdio bridge
//! (`amc mcp`) that MCP hosts launch.
//!
//! # Layout
//! - [`tools`]: the tools' names, input and output schemas, annotations.
//! - [`server`]: the rmcp server handler; it calls the core's service layer directly.
//! - [`relay`]: the relay toolset (threads between agents), its own server at `/mcp/relay`.
//! - [`bridge`]: stdio ⇄ the daemon's socket, for hosts that cannot dial a socket.
//! - [`reach`]: the bridge's configuration, and whether the daemon answers.
//! - `link`: the bridge's MCP connection to the daemon.
//! - `toolset`: what the host knows of the bridge's tools, and telling it they changed.
//! - [`claude_channel`]: the Claude Code channel: the bridge's push of new messages to a
//!   working session, its notifications, and the tool requests it relays to the person.
//! - [`direct`]: relay calls answered without rmcp's per-request service; `written`, the
//!   page it answered last, as written.
//! - [`fence`]: third-party text fenced in a result's text form (a nonce per result,
//!   images defused) and the `_meta` labels of results and pushes.
//! - [`jsonrpc`]: what a JSON-RPC message must be before rmcp reads it, on HTTP and stdio,
//!   and the errors refusals get; `stdio`, the bridge's side of the host's stdin and stdout.
#![deny(missing_docs)]

pub mod bridge;
pub mod claude_channel;
pub mod direct;
pub mod fence;
pub mod jsonrpc;
mod link;
pub mod reach;
pub mod relay;
pub mod server;
mod stdio;
pub mod tools;
mod toolset;
mod written;

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use rmcp::ServerHandler;
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
pub fn inbox_service(amc: Amc, shutdown: CancellationToken) -> Shared<InboxServer> {
    let factory = move || Ok(InboxServer::new(amc.clone()));
    Shared(Arc::new(StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), config(shutdown))))
}

/// The relay toolset as a tower service for `/mcp/relay`, set up like [`inbox_service`].
pub fn relay_service(relay: amc_relay::Relay, shutdown: CancellationToken) -> Shared<RelayServer> {
    let factory = move || Ok(RelayServer::new(relay.clone()));
    Shared(Arc::new(StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), config(shutdown))))
}

/// An MCP toolset's service, shared by every request. A router clones a route's service
/// for each request; rmcp's `StreamableHttpService` clones its whole configuration with
/// it, cancellation token included (a lock on the token's tree, taken again when the
/// clone is dropped), which showed in the daemon's profile with a thousand agents
/// waiting on a thread. This one clones an `Arc`.
pub struct Shared<H: ServerHandler>(Arc<StreamableHttpService<H, NeverSessionManager>>);

impl<H: ServerHandler> Clone for Shared<H> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<H, B> tower::Service<http::Request<B>> for Shared<H>
where
    H: ServerHandler + Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Error: std::fmt::Display,
{
    type Response = http::Response<BoxBody<Bytes, std::convert::Infallible>>;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let service = self.0.clone();
        Box::pin(async move { Ok(service.handle(req).await) })
    }
}

fn config(shutdown: CancellationToken) -> StreamableHttpServerConfig {
    // The daemon checks the Host itself where one means something, on its loopback TCP
    // port; on its Unix socket a Host names nothing, and any is taken.
    StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(MAX_MCP_REQUEST_BYTES)
        .with_cancellation_token(shutdown)
}
