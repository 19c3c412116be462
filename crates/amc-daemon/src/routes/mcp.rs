//! In front of the MCP toolsets: the Origin check the MCP spec asks for, and the same
//! bearer-token authentication as the REST routes. The authenticated agent travels to
//! the tool handlers in the request's extensions.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::ApiError;
use crate::extract::Agent;
use amc_core::ErrorCode;
use amc_mcp::McpCaller;

/// Whether an `Origin` is this machine's loopback (any port).
fn loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().map(|h| format!("[{h}]")),
        None => rest.split(':').next().map(str::to_owned),
    };
    matches!(host.as_deref(), Some("localhost" | "127.0.0.1" | "[::1]")) && !rest.contains('/') && !rest.contains('@')
}

/// Refuses foreign origins (403) and unauthenticated requests (401), then hands the
/// request on with its [`McpCaller`].
pub async fn authenticate(State(st): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(origin) = req.headers().get(header::ORIGIN)
        && !origin.to_str().is_ok_and(|o| loopback_origin(&o.to_ascii_lowercase()))
    {
        return ApiError::new(ErrorCode::Forbidden, "MCP requests from this Origin are not allowed").into_response();
    }
    let (mut parts, body) = req.into_parts();
    match Agent::from_request_parts(&mut parts, &st).await {
        Err(e) => e.into_response(),
        Ok(Agent(agent)) => {
            let sent_agent_id = parts.headers.contains_key("x-agent-id");
            parts.extensions.insert(McpCaller { agent, sent_agent_id });
            next.run(Request::from_parts(parts, body)).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::loopback_origin;

    #[test]
    fn only_loopback_origins_pass() {
        for ok in ["http://localhost", "http://localhost:6274", "http://127.0.0.1:9", "https://[::1]:443"] {
            assert!(loopback_origin(ok), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.nip.io",
            "null",
            "file://",
            "http://localhost@evil.example",
            "ftp://localhost",
        ] {
            assert!(!loopback_origin(bad), "{bad}");
        }
    }
}
