//! `amc mcp`: the stdio bridge MCP hosts launch. Hosts (Claude Code, Codex CLI, Claude
//! Desktop) cannot dial a Unix socket; they start a command and speak MCP on its stdin
//! and stdout. The bridge is an MCP server on stdio whose tools are the daemon's: it
//! relays `tools/list` and `tools/call` to the daemon's socket with the agent's token.
//!
//! It never hangs and never guesses: if the daemon is down or refuses the token, every
//! request gets an error that says so, and it keeps trying on each new request, so a
//! daemon started later is picked up.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomNotification, Implementation, ListToolsResult,
    PaginatedRequestParams, ResultType, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData as McpError, RoleClient, RoleServer, ServerHandler, ServiceExt};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use amc_core::{Error, ErrorCode};

use crate::server::failure;

/// How long one call to the daemon may take before the bridge gives up on it. Long
/// enough for a send the platform takes its time to confirm.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// How long checking on or connecting to the daemon may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the bridge needs to reach the daemon as an agent.
#[derive(Clone, PartialEq, Eq)]
pub struct BridgeConfig {
    /// The daemon's socket.
    pub socket: PathBuf,
    /// The MCP endpoint on it: `/mcp` (the inbox) or `/mcp/relay` (the relay).
    pub endpoint: String,
    /// The agent's bearer token (`AMC_BEARER_TOKEN`).
    pub token: Option<String>,
    /// The agent's id (`AMC_AGENT_ID`).
    pub agent_id: Option<String>,
    /// Whether to push new messages to the host as Claude Code channel notifications
    /// (the inbox only; `amc mcp --no-push` turns it off).
    pub push: bool,
}

impl std::fmt::Debug for BridgeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeConfig")
            .field("socket", &self.socket)
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("agent_id", &self.agent_id)
            .field("push", &self.push)
            .finish()
    }
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
    /// Something listens but does not answer.
    #[error("AMC is not responding (at {0}); restart it")]
    NotResponding(String),
    /// The daemon refused the token or agent id.
    #[error("AMC refused this agent: {0}")]
    Refused(String),
    /// The bridge's own configuration is broken.
    #[error("{0}")]
    Config(String),
    /// Anything else.
    #[error("cannot reach AMC: {0}")]
    Other(String),
}

impl Problem {
    /// What the agent is told. Every message here is one AMC wrote; the detail of an
    /// unexpected failure stays on the bridge's stderr.
    fn envelope(&self) -> Error {
        match self {
            Self::MissingCredentials | Self::Refused(_) => Error::unauthorized(self.to_string()),
            Self::NotRunning(_) | Self::NotResponding(_) => Error::new(ErrorCode::AmcUnavailable, self.to_string()),
            Self::Config(_) => Error::new(ErrorCode::InternalError, self.to_string()),
            Self::Other(detail) => {
                tracing::warn!(%detail, "amc mcp could not reach AMC");
                Error::new(ErrorCode::InternalError, "amc mcp could not reach AMC; see its stderr")
            }
        }
    }
}

/// Asks the daemon whether this agent may come in, on a route only agents may use.
pub async fn check(cfg: &BridgeConfig) -> Result<(), Problem> {
    let where_ = cfg.socket.display().to_string();
    match tokio::time::timeout(CONNECT_TIMEOUT, check_now(cfg)).await {
        Ok(r) => r,
        Err(_) => Err(Problem::NotResponding(where_)),
    }
}

async fn check_now(cfg: &BridgeConfig) -> Result<(), Problem> {
    if cfg.token.is_none() {
        return Err(Problem::MissingCredentials);
    }
    let mut conn = agent_connection(cfg).await.map_err(|e| match e {
        amc_client::ClientError::NotRunning(p) => Problem::NotRunning(p.display().to_string()),
        other => Problem::Other(other.to_string()),
    })?;
    let resp = conn.get("/channels").await.map_err(|e| Problem::Other(e.to_string()))?;
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

/// A REST connection to the daemon as this agent: its token, and its id when given.
pub(crate) async fn agent_connection(cfg: &BridgeConfig) -> Result<amc_client::Connection, amc_client::ClientError> {
    let mut conn = amc_client::Connection::connect(&cfg.socket).await?;
    if let Some(token) = &cfg.token {
        conn = conn.with_bearer(token);
    }
    if let Some(agent_id) = &cfg.agent_id {
        conn = conn.with_header("x-agent-id", agent_id);
    }
    Ok(conn)
}

type Upstream = Arc<RunningService<RoleClient, ()>>;

/// The stdio side: an MCP server whose tools are the daemon's.
pub struct Bridge {
    cfg: BridgeConfig,
    /// A problem no retry can fix (a broken config): every request answers with it.
    fixed_problem: Option<Problem>,
    upstream: Arc<Mutex<Option<Upstream>>>,
    /// Cancelled when the host goes away: ends the push.
    stop_push: CancellationToken,
    /// The push, once the host is initialized (once per session).
    push: Arc<std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>>,
    /// This session's id at the daemon: its tool requests, and the answers to them.
    session: String,
}

/// How a relayed request failed.
enum Failure {
    /// The daemon answered with an MCP protocol error: pass it on as it is.
    Protocol(McpError),
    /// The bridge could not get an answer.
    Unreachable { problem: Problem, handed_over: bool },
}

impl Bridge {
    /// A bridge for `cfg`; it connects to the daemon on the first request.
    pub fn new(cfg: BridgeConfig) -> Self {
        Self {
            cfg,
            fixed_problem: None,
            upstream: Arc::new(Mutex::new(None)),
            stop_push: CancellationToken::new(),
            push: Default::default(),
            session: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    /// A bridge that answers every request with `problem`.
    pub fn broken(cfg: BridgeConfig, problem: Problem) -> Self {
        Self { fixed_problem: Some(problem), ..Self::new(cfg) }
    }

    /// Serves MCP on the host's stdin and stdout (`io`, which the binary opens) until the
    /// host closes them.
    pub async fn serve_stdio<R, W>(self, io: (R, W)) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let upstream = self.upstream.clone();
        let (stop_push, push, cfg, session) =
            (self.stop_push.clone(), self.push.clone(), self.cfg.clone(), self.session.clone());
        let running = self.serve(io).await.map_err(std::io::Error::other)?;
        let ended = running.waiting().await;
        // The push acknowledges what it wrote before it ends.
        stop_push.cancel();
        let push = push.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(push) = push {
            let _ = tokio::time::timeout(CONNECT_TIMEOUT, push).await;
            // Tool requests still waiting for the person leave the tray now.
            let _ = tokio::time::timeout(CONNECT_TIMEOUT, crate::push::end_session(&cfg, &session)).await;
        }
        ended.map_err(std::io::Error::other)?;
        // The host closed stdin: close the daemon side cleanly too.
        if let Some(up) = upstream.lock().await.take()
            && let Ok(up) = Arc::try_unwrap(up)
        {
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
    async fn relay<T, F>(&self, f: F) -> Result<T, Failure>
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
}

impl Bridge {
    fn relays_threads(&self) -> bool {
        self.cfg.endpoint.ends_with("/relay")
    }

    /// Whether this bridge pushes new messages to the host.
    fn pushes(&self) -> bool {
        self.cfg.push && !self.relays_threads() && self.fixed_problem.is_none() && self.cfg.agent_id.is_some()
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        let relay = self.relays_threads();
        let mut capabilities = ServerCapabilities::builder().enable_tools().build();
        let instructions = if relay {
            crate::relay::RELAY_INSTRUCTIONS.to_owned()
        } else if self.pushes() {
            capabilities.experimental = Some(
                [crate::channel::CHANNEL_CAPABILITY, crate::channel::PERMISSION_CAPABILITY]
                    .into_iter()
                    .map(|c| (c.to_owned(), Default::default()))
                    .collect(),
            );
            format!("{} {}", crate::server::INBOX_INSTRUCTIONS, crate::channel::PUSH_INSTRUCTIONS)
        } else {
            crate::server::INBOX_INSTRUCTIONS.to_owned()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(if relay { "amc-relay" } else { "amc" }, env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let mut push = self.push.lock().unwrap_or_else(|p| p.into_inner());
        if self.pushes() && push.is_none() {
            let run = crate::push::run(self.cfg.clone(), self.session.clone(), context.peer, self.stop_push.clone());
            *push = Some(tokio::spawn(run));
        }
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleServer>,
    ) {
        if notification.method != crate::channel::PERMISSION_REQUEST_METHOD || !self.pushes() {
            return;
        }
        // Claude Code waits on its own prompt meanwhile: relaying must not hold up the
        // session's other messages.
        let (cfg, session) = (self.cfg.clone(), self.session.clone());
        tokio::spawn(async move { crate::push::relay_tool_request(&cfg, &session, notification.params).await });
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut listed = self.relay(async |up| up.list_tools(request).await).await.map_err(|f| match f {
            Failure::Protocol(e) => e,
            Failure::Unreachable { problem, .. } => McpError::internal_error(problem.envelope().message, None),
        })?;
        // The daemon's answer came in the bridge's own (older) protocol, without
        // `resultType`; a host on 2026-07-28 requires it (rmcp strips it for older hosts).
        listed.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // A tool call is relayed once, never retried, so nothing can go out twice.
        let name = request.name.clone();
        // A host that cancels the call cancels it upstream too (dropping the request tells
        // the daemon), so a cancelled wait_for_messages does not linger there.
        let relayed = tokio::select! {
            r = self.relay(async |up| up.call_tool(request).await) => r,
            () = context.ct.cancelled() => return Err(McpError::internal_error("cancelled by the client", None)),
        };
        match relayed {
            Ok(mut result) => {
                result.result_type.get_or_insert(ResultType::COMPLETE);
                Ok(result.into())
            }
            Err(Failure::Protocol(e)) => Err(e),
            // The agent reads tool results, not protocol errors: say what is wrong there.
            Err(Failure::Unreachable { problem, handed_over }) => {
                let mut err = problem.envelope();
                if handed_over && name == "send_message" {
                    err.message = format!(
                        "{} The send may still be delivered: do not send it again; check the conversation with \
                         get_message_context, or ask the person.",
                        err.message
                    );
                }
                Ok(failure(&err).into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_agent_is_told_names_the_fix_and_never_an_internal_detail() {
        let down = Problem::NotRunning("/tmp/amc.sock".into()).envelope();
        assert_eq!((down.code, down.code.status()), (ErrorCode::AmcUnavailable, 503));
        assert!(down.message.contains("amc serve"), "{}", down.message);
        assert_eq!(Problem::NotResponding("/tmp/amc.sock".into()).envelope().code, ErrorCode::AmcUnavailable);
        assert_eq!(Problem::MissingCredentials.envelope().code, ErrorCode::Unauthorized);
        assert_eq!(Problem::Refused("revoked".into()).envelope().code, ErrorCode::Unauthorized);
        let other = Problem::Other("hyper::Error(Io, Os { code: 104, kind: ConnectionReset })".into()).envelope();
        assert_eq!(other.code, ErrorCode::InternalError);
        assert!(!other.message.contains("hyper") && !other.message.contains("104"), "{}", other.message);
    }
}
