//! Reaching the daemon: the bridge's configuration (socket, token, agent), the check that
//! the daemon answers, and the problems a host is told when it does not.

use std::path::PathBuf;
use std::time::Duration;

use amc_core::{Error, ErrorCode};

/// How long checking on or connecting to the daemon may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// How long a session must stay open, having called a tool, before what it was pushed
    /// is recorded as told (`claude_channel::working::SETTLE` unless a test wants it shorter).
    pub push_settle: Duration,
}

impl std::fmt::Debug for BridgeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridgeConfig")
            .field("socket", &self.socket)
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("agent_id", &self.agent_id)
            .field("push", &self.push)
            .field("push_settle", &self.push_settle)
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
    pub(crate) fn envelope(&self) -> Error {
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
