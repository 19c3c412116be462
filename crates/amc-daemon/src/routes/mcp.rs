//! In front of the MCP toolsets: the Origin check the MCP spec asks for, and the same
//! bearer-token authentication as the REST routes. The authenticated agent travels to
//! the tool handlers in the request's extensions.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::error::ApiError;
use crate::extract::Agent;
use amc_core::{Error, ErrorCode};
use amc_mcp::MAX_MCP_REQUEST_BYTES;
use amc_mcp::McpCaller;
use amc_mcp::direct::DirectCall;
use amc_mcp::jsonrpc::{INTERNAL, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, check_message, check_params};
use serde_json::Value;

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

/// In front of both MCP endpoints, in this order: [`authenticate`], then
/// [`json_rpc_only`]. One middleware, not two: each layer is a future every answer passes
/// back through, a thousand times when a post wakes a thousand waiting calls.
pub async fn guard(State(st): State<AppState>, req: Request, next: Next) -> Response {
    match authenticate(&st, req).await {
        Ok(req) => json_rpc_only(&st, req, next).await,
        Err(refused) => refused,
    }
}

/// Refuses foreign origins and unauthenticated requests, or gives the request back with
/// its [`McpCaller`].
///
/// A missing or refused token is `403 FORBIDDEN` here, not the REST routes' 401: MCP
/// clients (the MCP Inspector, Claude Code's HTTP transport) take any 401 as the start of
/// an OAuth flow, and AMC's agent tokens have none; the Inspector CLI 2.x runs its OAuth
/// flow on every 401 of an HTTP server. A 403 without a `WWW-Authenticate` challenge is
/// shown as it is, and the message names the two headers to send.
async fn authenticate(st: &AppState, req: Request) -> Result<Request, Response> {
    let origins = req.headers().get_all(header::ORIGIN);
    if origins.iter().count() > 1
        || origins.iter().any(|origin| !origin.to_str().is_ok_and(|o| loopback_origin(&o.to_ascii_lowercase())))
    {
        return Err(
            ApiError::new(ErrorCode::Forbidden, "MCP requests from this Origin are not allowed").into_response()
        );
    }
    let (mut parts, body) = req.into_parts();
    match Agent::from_request_parts(&mut parts, st).await {
        Err(ApiError(e)) if e.code == ErrorCode::Unauthorized => Err(ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "{}. AMC's MCP endpoint takes an agent's token, not OAuth: send the headers \
                 Authorization: Bearer <token> and X-Agent-ID: <agent id> (`amc agent add NAME` prints both)",
                e.message.split(':').next().unwrap_or_default().trim_end_matches('.')
            ),
        )
        .into_response()),
        Err(e) => Err(e.into_response()),
        Ok(Agent(agent)) => {
            let sent_agent_id = parts.headers.contains_key("x-agent-id");
            parts.extensions.insert(McpCaller { agent, sent_agent_id });
            Ok(Request::from_parts(parts, body))
        }
    }
}

/// What rmcp wants said that a client on the socket need not say: a client that takes
/// anything (`Accept: */*`, curl's default, or no `Accept` at all) takes what AMC answers,
/// and rmcp, which wants both its types named, is told so; a request without a Host (which
/// names nothing on a Unix socket; the loopback port refuses one before this) names
/// `localhost`.
fn tolerate(headers: &mut axum::http::HeaderMap) {
    if !headers.contains_key(header::HOST) {
        headers.insert(header::HOST, header::HeaderValue::from_static("localhost"));
    }
    let any = headers.get_all(header::ACCEPT).iter().all(|v| {
        v.to_str().is_ok_and(|v| v.split(',').any(|t| matches!(t.split(';').next().map(str::trim), Some("*/*"))))
    });
    if any {
        headers.insert(header::ACCEPT, header::HeaderValue::from_static("application/json, text/event-stream"));
    }
}

/// A JSON-RPC error object, with the envelope in `error.data`, as the HTTP answer.
fn json_rpc_error(id: Value, rpc_code: i64, e: &amc_core::Error) -> Response {
    let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(amc_mcp::jsonrpc::error(id, rpc_code, e))).into_response()
}

/// How much of a body over the limit is still read (and dropped) before answering, and for
/// how long: a client still writing when the answer comes would see its write fail rather
/// than the answer.
const DRAIN_BYTES: usize = 16 << 20;
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// A request body as read.
enum Read {
    /// Whole, and within the limit.
    Body(axum::body::Bytes),
    /// Over the limit.
    TooLarge,
    /// The connection failed while it was read.
    Broken,
}

/// Reads a body of at most `limit` bytes. A longer one, or one `declared` longer (its
/// Content-Length), is read on and dropped (up to [`DRAIN_BYTES`] more, for at most
/// [`DRAIN_TIME`]) so that its sender, still writing, gets the answer.
async fn read_capped(mut body: axum::body::Body, declared: Option<usize>, limit: usize) -> Read {
    use http_body_util::BodyExt;
    let mut kept = Vec::new();
    loop {
        // A body whose Content-Length is over the limit is refused without waiting for it.
        if declared.is_some_and(|n| n > limit) {
            break;
        }
        match body.frame().await {
            None => return Read::Body(kept.into()),
            Some(Err(_)) => return Read::Broken,
            Some(Ok(frame)) => {
                let Ok(data) = frame.into_data() else { continue };
                if kept.len() + data.len() > limit {
                    break;
                }
                kept.extend_from_slice(&data);
            }
        }
    }
    let drain = async {
        let mut dropped = 0usize;
        while let Some(Ok(frame)) = body.frame().await {
            dropped += frame.into_data().map(|d| d.len()).unwrap_or(0);
            if dropped > DRAIN_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
    Read::TooLarge
}

/// What a call cut short by AMC's stop is told.
const STOPPING: &str = "AMC is stopping; call again once it is back";

/// What the MCP endpoints take and give is JSON-RPC, whatever the client sends: a body
/// over [`MAX_MCP_REQUEST_BYTES`], one that is not UTF-8 JSON (or nests too deep), or JSON that
/// is not a JSON-RPC 2.0 message gets a JSON-RPC error here, before rmcp sees it; a
/// relay `tools/call` rmcp would take as it is is answered here (see
/// [`amc_mcp::direct`]); and any error rmcp answers in plain text (a wrong media type, a
/// request cut short by shutdown) is turned into one on the way out.
async fn json_rpc_only(st: &AppState, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    tolerate(&mut parts.headers);
    let mut id = Value::Null;
    let req = if parts.method == Method::POST {
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<usize>().ok());
        let bytes = match read_capped(body, declared, MAX_MCP_REQUEST_BYTES).await {
            Read::Body(b) => b,
            Read::Broken => {
                let e = Error::validation("could not read the request body");
                return json_rpc_error(Value::Null, INVALID_REQUEST, &e);
            }
            Read::TooLarge => {
                let e =
                    Error::new(ErrorCode::PayloadTooLarge, format!("request body over {MAX_MCP_REQUEST_BYTES} bytes"));
                return json_rpc_error(Value::Null, INVALID_REQUEST, &e);
            }
        };
        let parsed = std::str::from_utf8(&bytes)
            .map_err(|_| "the body is not UTF-8".to_owned())
            .and_then(|text| serde_json::from_str::<Value>(text).map_err(|e| format!("the body is not JSON: {e}")));
        let message = match parsed {
            Ok(v) => v,
            Err(why) => return json_rpc_error(Value::Null, PARSE_ERROR, &Error::validation(why)),
        };
        if let Err(why) = check_message(&message) {
            return json_rpc_error(Value::Null, INVALID_REQUEST, &Error::validation(why));
        }
        id = message.get("id").cloned().unwrap_or(Value::Null);
        if let Err(why) = check_params(&message) {
            return json_rpc_error(id, INVALID_PARAMS, &Error::validation(why));
        }
        if parts.uri.path() == "/mcp/relay"
            && let Some(caller) = parts.extensions.get::<McpCaller>()
            && let Some(call) = DirectCall::of(&parts.headers, &bytes)
        {
            // The request is let go now, not when a post wakes a waiting call: a post that
            // wakes a thousand calls then frees a thousand requests' headers and bodies
            // no more.
            let caller = caller.clone();
            drop((parts, bytes, message));
            return tokio::select! {
                body = call.answer(&st.relay_mcp, &caller) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
                () = st.shutdown.cancelled() => json_rpc_error(id, INTERNAL, &Error::new(ErrorCode::InternalError, STOPPING)),
            };
        }
        Request::from_parts(parts, axum::body::Body::from(bytes))
    } else {
        Request::from_parts(parts, body)
    };
    let resp = next.run(req).await;
    let content_type = resp.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    if resp.status().as_u16() < 400 || content_type.starts_with("text/event-stream") {
        return resp;
    }
    let json = content_type.starts_with("application/json");
    let status = resp.status();
    // The code whose status is rmcp's, where there is one (the answer keeps it).
    let (code, rpc_code) = match status.as_u16() {
        400 => (ErrorCode::BadRequest, INVALID_REQUEST),
        404 => (ErrorCode::NotFound, INVALID_REQUEST),
        405 => (ErrorCode::MethodNotAllowed, INVALID_REQUEST),
        413 => (ErrorCode::PayloadTooLarge, INVALID_REQUEST),
        401..=499 => (ErrorCode::ValidationFailed, INVALID_REQUEST),
        _ => (ErrorCode::InternalError, INTERNAL),
    };
    if code == ErrorCode::InternalError {
        let message = if st.shutdown.is_cancelled() { STOPPING } else { "internal error; see AMC's log" };
        return json_rpc_error(id, rpc_code, &Error::new(code, message));
    }
    let text = axum::body::to_bytes(resp.into_body(), 64 << 10).await.unwrap_or_default();
    // rmcp's own JSON-RPC errors (a 2026-07-28 request without its headers, a method it
    // does not route) keep their code and message, and are given the envelope.
    let said: Value = if json { serde_json::from_slice(&text).unwrap_or_default() } else { Value::Null };
    if let Some(message) = said["error"]["message"].as_str().filter(|m| !m.is_empty()) {
        let rpc_code = said["error"]["code"].as_i64().unwrap_or(rpc_code);
        let id = if said["id"].is_null() { id } else { said["id"].clone() };
        return json_rpc_error(id, rpc_code, &Error::new(code, message));
    }
    let text = String::from_utf8_lossy(&text).chars().take(300).collect::<String>();
    let message =
        if text.trim().is_empty() { status.canonical_reason().unwrap_or("bad request").to_owned() } else { text };
    json_rpc_error(id, rpc_code, &Error::new(code, message))
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
