//! The bridge's MCP connection to the daemon: made on first need, shared by every request,
//! and replaced once it is found dead. Both the host's requests and the bridge's own look at
//! the daemon's tools go through it.

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::{Peer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData as McpError, RoleClient, ServiceExt};
use tokio::io::AsyncReadExt;
use tokio::sync::Mutex;

use crate::reach::{BridgeConfig, CONNECT_TIMEOUT, Problem, check};

/// How long one call to the daemon may take before the bridge gives up on it. Long
/// enough for a send the platform takes its time to confirm.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

type Upstream = Arc<RunningService<RoleClient, ()>>;

/// How a relayed request failed.
pub(crate) enum Failure {
    /// The daemon answered with an MCP protocol error: pass it on as it is.
    Protocol(McpError),
    /// The bridge could not get an answer.
    Unreachable { problem: Problem, handed_over: bool },
}

/// The connection to the daemon as this agent.
pub(crate) struct Link {
    cfg: BridgeConfig,
    /// A problem no retry can fix (a broken config): every request fails with it.
    fixed_problem: Option<Problem>,
    upstream: Mutex<Option<Upstream>>,
}

impl Link {
    pub(crate) fn new(cfg: BridgeConfig, fixed_problem: Option<Problem>) -> Self {
        Self { cfg, fixed_problem, upstream: Mutex::new(None) }
    }

    pub(crate) fn cfg(&self) -> &BridgeConfig {
        &self.cfg
    }

    pub(crate) fn fixed_problem(&self) -> Option<&Problem> {
        self.fixed_problem.as_ref()
    }

    async fn connect(&self) -> Result<RunningService<RoleClient, ()>, Problem> {
        check(&self.cfg).await?;
        let uri = format!("http://localhost{}", self.cfg.endpoint);
        let mut headers = std::collections::HashMap::new();
        if let Some(id) = &self.cfg.agent_id {
            let value = id.parse().map_err(|_| Problem::Refused("AMC_AGENT_ID is not a valid header value".into()))?;
            headers.insert(http::HeaderName::from_static("x-agent-id"), value);
        }
        let config = StreamableHttpClientTransportConfig::with_uri(uri.as_str())
            .auth_header(self.cfg.token.clone().unwrap_or_default())
            .custom_headers(headers);
        let socket = self.cfg.socket.to_string_lossy().into_owned();
        // One client per connection to the daemon: its requests reuse open connections
        // to the socket rather than opening one each.
        let client = reqwest_mcp::Client::builder()
            .unix_socket(self.cfg.socket.as_path())
            .build()
            .map_err(|e| Problem::Other(e.to_string()))?;
        let transport = StreamableHttpClientTransport::with_client(client, config);
        match tokio::time::timeout(CONNECT_TIMEOUT, ().serve(transport)).await {
            Ok(Ok(running)) => Ok(running),
            Ok(Err(e)) => Err(check(&self.cfg).await.err().unwrap_or(Problem::Other(e.to_string()))),
            Err(_) => Err(Problem::NotResponding(socket)),
        }
    }

    /// The connection to the daemon, made if there is none. Connecting happens outside
    /// the lock, so a slow daemon never queues every other request behind it.
    async fn upstream(&self) -> Result<Upstream, Problem> {
        if let Some(p) = &self.fixed_problem {
            return Err(p.clone());
        }
        if let Some(up) = self.upstream.lock().await.as_ref().filter(|u| !u.is_closed()) {
            return Ok(up.clone());
        }
        let fresh = Arc::new(self.connect().await?);
        let mut slot = self.upstream.lock().await;
        match slot.as_ref().filter(|u| !u.is_closed()) {
            Some(other) => Ok(other.clone()),
            None => {
                *slot = Some(fresh.clone());
                Ok(fresh)
            }
        }
    }

    /// Runs `f` against the daemon. Calls run side by side; one call's failure never
    /// touches another's. A dead connection is replaced on the next request.
    pub(crate) async fn relay<T, F>(&self, f: F) -> Result<T, Failure>
    where
        F: AsyncFnOnce(&Peer<RoleClient>) -> Result<T, rmcp::ServiceError>,
    {
        let up = self.upstream().await.map_err(|problem| Failure::Unreachable { problem, handed_over: false })?;
        let problem = match tokio::time::timeout(CALL_TIMEOUT, f(up.peer())).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(rmcp::ServiceError::McpError(e))) => return Err(Failure::Protocol(e)),
            Ok(Err(e)) => check(&self.cfg).await.err().unwrap_or(Problem::Other(e.to_string())),
            Err(_) => Problem::NotResponding(self.cfg.socket.display().to_string()),
        };
        let mut slot = self.upstream.lock().await;
        if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, &up) && s.is_closed()) {
            *slot = None;
        }
        Err(Failure::Unreachable { problem, handed_over: true })
    }

    /// Resolves once the daemon is gone: it stopped, or never listened. It holds one idle
    /// connection to the socket meanwhile, which the daemon closes when it stops (and the
    /// system when it dies), so waiting costs neither side a wakeup.
    pub(crate) async fn gone(&self) {
        let Ok(mut idle) = tokio::net::UnixStream::connect(&self.cfg.socket).await else { return };
        let mut buf = [0u8; 64];
        while let Ok(n) = idle.read(&mut buf).await {
            if n == 0 {
                return;
            }
        }
    }

    /// Closes the connection to the daemon cleanly, if this is its last user.
    pub(crate) async fn close(&self) {
        if let Some(up) = self.upstream.lock().await.take()
            && let Ok(up) = Arc::try_unwrap(up)
        {
            let _ = up.cancel().await;
        }
    }
}
