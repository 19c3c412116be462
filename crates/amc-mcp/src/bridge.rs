//! `amc mcp`: the stdio bridge MCP hosts launch. Hosts (Claude Code, Codex CLI, Claude
//! Desktop) cannot dial a Unix socket; they start a command and speak MCP on its stdin
//! and stdout. The bridge is an MCP server on stdio whose tools are the daemon's: it
//! relays `tools/list` and `tools/call` to the daemon's socket with the agent's token.
//!
//! It never hangs and never guesses: if the daemon is down or refuses the token, every
//! request gets an error that says so, and it keeps trying on each new request, so a
//! daemon started later is picked up.

use std::path::PathBuf;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::unix_socket::UnixSocketHttpClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData as McpError, RoleClient, RoleServer, ServerHandler, ServiceExt};
use tokio::sync::Mutex;

use amc_core::{Error, ErrorCode};

use crate::server::failure;

/// How long one call to the daemon may take before the bridge gives up on it. Long
/// enough for a send the platform takes its time to confirm.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// What the bridge needs to reach the daemon as an agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeConfig {
    /// The daemon's socket.
    pub socket: PathBuf,
    /// The MCP endpoint on it: `/mcp` (the inbox) or `/mcp/relay` (the relay).
    pub endpoint: String,
    /// The agent's bearer token (`AMC_BEARER_TOKEN`).
    pub token: Option<String>,
    /// The agent's id (`AMC_AGENT_ID`).
    pub agent_id: Option<String>,
}

/// Why the bridge cannot reach AMC as this agent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// No token was given.
    #[error("set AMC_BEARER_TOKEN (from `amc agent add NAME`) or pass --token-file")]
    MissingCredentials,
    /// Nothing listens on the socket.
    #[error("AMC is not running (no daemon at {0}); start it with `amc serve` or the AMC app")]
    NotRunning(String),
    /// The daemon refused the token or agent id.
    #[error("AMC refused this agent: {0}")]
    Refused(String),
    /// Anything else.
    #[error("cannot reach AMC: {0}")]
    Other(String),
}

impl Problem {
    fn envelope(&self) -> Error {
        match self {
            Self::MissingCredentials | Self::Refused(_) => Error::unauthorized(self.to_string()),
            Self::NotRunning(_) | Self::Other(_) => Error::new(ErrorCode::InternalError, self.to_string()),
        }
    }
}

/// Asks the daemon whether this agent may come in (`GET /healthz` with its token).
pub async fn check(cfg: &BridgeConfig) -> Result<(), Problem> {
    let Some(token) = &cfg.token else {
        return Err(Problem::MissingCredentials);
    };
    let conn = amc_client::Connection::connect(&cfg.socket).await.map_err(|e| match e {
        amc_client::ClientError::NotRunning(p) => Problem::NotRunning(p.display().to_string()),
        other => Problem::Other(other.to_string()),
    })?;
    let mut conn = conn.with_bearer(token);
    if let Some(agent_id) = &cfg.agent_id {
        conn = conn.with_header("x-agent-id", agent_id);
    }
    let resp = conn.get("/healthz").await.map_err(|e| Problem::Other(e.to_string()))?;
    if resp.status.is_success() {
        return Ok(());
    }
    let message = resp.json()["error"]["message"].as_str().unwrap_or("request refused").to_owned();
    Err(if resp.status.as_u16() == 401 {
        Problem::Refused(format!("{message} (check AMC_BEARER_TOKEN and AMC_AGENT_ID; `amc agent list` shows agents)"))
    } else {
        Problem::Other(message)
    })
}

/// The stdio side: an MCP server whose tools are the daemon's.
pub struct Bridge {
    cfg: BridgeConfig,
    upstream: std::sync::Arc<Mutex<Option<RunningService<RoleClient, ()>>>>,
}

impl Bridge {
    /// A bridge for `cfg`; it connects to the daemon on the first request.
    pub fn new(cfg: BridgeConfig) -> Self {
        Self { cfg, upstream: std::sync::Arc::new(Mutex::new(None)) }
    }

    /// Serves MCP on this process's stdin and stdout until the host closes them.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        let upstream = self.upstream.clone();
        let running = self.serve(rmcp::transport::stdio()).await.map_err(std::io::Error::other)?;
        running.waiting().await.map_err(std::io::Error::other)?;
        // The host closed stdin: close the daemon side cleanly too.
        if let Some(up) = upstream.lock().await.take() {
            let _ = up.cancel().await;
        }
        Ok(())
    }

    async fn connect(&self) -> Result<RunningService<RoleClient, ()>, Problem> {
        check(&self.cfg).await?;
        let uri = format!("http://localhost{}", self.cfg.endpoint);
        let mut headers = std::collections::HashMap::new();
        if let Some(id) = &self.cfg.agent_id {
            let value = id.parse().map_err(|_| Problem::Refused("AMC_AGENT_ID is not a valid header value".into()))?;
            headers.insert(axum::http::HeaderName::from_static("x-agent-id"), value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(uri.as_str())
            .auth_header(self.cfg.token.clone().unwrap_or_default())
            .custom_headers(headers);
        let socket = self.cfg.socket.to_string_lossy().into_owned();
        let transport = StreamableHttpClientTransport::with_client(UnixSocketHttpClient::new(&socket, &uri), config);
        ().serve(transport).await.map_err(|e| Problem::Other(e.to_string()))
    }

    /// Runs `f` against the daemon, connecting first if needed. A failure drops the
    /// connection (the next request reconnects) and is explained by asking the daemon
    /// again, so the host hears "not running" or "refused" rather than a transport error.
    async fn with_upstream<T, F>(&self, f: F) -> Result<T, Problem>
    where
        F: AsyncFnOnce(&Peer<RoleClient>) -> Result<T, rmcp::ServiceError>,
    {
        // The lock covers connecting only; calls run side by side on a shared peer.
        let peer = {
            let mut guard = self.upstream.lock().await;
            if guard.is_none() {
                *guard = Some(self.connect().await?);
            }
            match guard.as_ref() {
                Some(up) => up.peer().clone(),
                None => return Err(Problem::Other("no connection".into())),
            }
        };
        let outcome = tokio::time::timeout(CALL_TIMEOUT, f(&peer)).await;
        let failed = match outcome {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => check(&self.cfg).await.err().unwrap_or(Problem::Other(e.to_string())),
            Err(_) => Problem::Other("AMC did not answer in time".into()),
        };
        *self.upstream.lock().await = None;
        Err(failed)
    }
}

fn protocol_error(p: &Problem) -> McpError {
    McpError::internal_error(p.to_string(), None)
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                if self.cfg.endpoint.ends_with("/relay") { "amc-relay" } else { "amc" },
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(if self.cfg.endpoint.ends_with("/relay") {
                crate::relay::RELAY_INSTRUCTIONS
            } else {
                crate::server::INBOX_INSTRUCTIONS
            })
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.with_upstream(async |up| up.list_tools(request).await).await.map_err(|p| protocol_error(&p))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // A tool call is sent once: never retried here, so a send cannot go out twice.
        match self.with_upstream(async |up| up.call_tool(request).await).await {
            Ok(result) => Ok(result.into()),
            // The agent reads tool results, not protocol errors: say what is wrong there.
            Err(p) => Ok(failure(&p.envelope()).into()),
        }
    }
}
