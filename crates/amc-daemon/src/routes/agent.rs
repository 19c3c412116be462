//! The agents' routes: the four endpoints of the inbox tools and those around them.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Agent, AgentWithId, ApiJson, ApiPath, ApiQuery, IdempotencyKey};
use amc_core::service::{
    ContextParams, PushParams, SearchParams, SendRequest, ToolAsk, UnreadParams, WaitUnreadParams,
};
use amc_core::{Error, ErrorCode};

/// `GET /messages/unread`.
pub async fn unread(
    State(st): State<AppState>,
    AgentWithId(agent): AgentWithId,
    ApiQuery(p): ApiQuery<UnreadParams>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.list_unread(&agent, p).await?))
}

/// `GET /messages/unread/wait`: `GET /messages/unread` that, when nothing is unread,
/// waits up to `timeout_seconds` (1-25, default 25) for a message. A stopping daemon ends
/// the wait with what there is.
pub async fn wait_unread(
    State(st): State<AppState>,
    AgentWithId(agent): AgentWithId,
    ApiQuery(p): ApiQuery<WaitUnreadParams>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.wait_for_unread(&agent, p, st.shutdown.cancelled()).await?))
}

/// `GET /messages/push`: what to tell the agent now (`amc mcp` turns it into Claude Code
/// channel notifications); when nothing is new, waits up to `timeout_seconds` (1-25,
/// default 25). The batch's `ack` goes back to `POST /messages/push/ack` once it is out.
pub async fn push(
    State(st): State<AppState>,
    AgentWithId(agent): AgentWithId,
    ApiQuery(p): ApiQuery<PushParams>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.next_push(&agent, p, st.shutdown.cancelled()).await?))
}

/// The body of `POST /messages/push/ack`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushAckBody {
    ack: String,
}

/// `POST /messages/push/ack`: a batch of `GET /messages/push` went out.
pub async fn push_ack(
    State(st): State<AppState>,
    AgentWithId(agent): AgentWithId,
    ApiJson(body): ApiJson<PushAckBody>,
) -> ApiResult<impl IntoResponse> {
    st.amc.ack_push(&agent, &body.ack).await?;
    Ok(Json(serde_json::json!({})))
}

/// `POST /tool-requests`: a host asks whether a tool may run (relayed by `amc mcp`). The
/// person answers in the tray; the answer reaches the session through its push.
pub async fn ask_tool(
    State(st): State<AppState>,
    AgentWithId(agent): AgentWithId,
    ApiJson(ask): ApiJson<ToolAsk>,
) -> ApiResult<impl IntoResponse> {
    Ok((StatusCode::CREATED, Json(st.amc.ask_tool(&agent, ask).await?)))
}

/// The body of `POST /tool-requests/end`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndSessionBody {
    session: String,
}

/// `POST /tool-requests/end`: the bridge session ended; its unanswered requests go.
pub async fn end_tool_session(
    State(st): State<AppState>,
    AgentWithId(agent): AgentWithId,
    ApiJson(body): ApiJson<EndSessionBody>,
) -> ApiResult<impl IntoResponse> {
    st.amc.end_tool_session(&agent, body.session).await?;
    Ok(Json(serde_json::json!({})))
}

/// `GET /messages/search`: words and quoted phrases over the messages this agent may see,
/// best first (the REST twin of `search_messages`).
pub async fn search(
    State(st): State<AppState>,
    Agent(agent): Agent,
    ApiQuery(p): ApiQuery<SearchParams>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.search_messages(&agent, p).await?))
}

/// `GET /messages/context`.
pub async fn context(
    State(st): State<AppState>,
    AgentWithId(agent): AgentWithId,
    ApiQuery(p): ApiQuery<ContextParams>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.message_context(&agent, p).await?))
}

/// The body of `POST /messages/mark_read`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkReadBody {
    message_ids: Vec<String>,
}

/// `POST /messages/mark_read`.
pub async fn mark_read(
    State(st): State<AppState>,
    AgentWithId(agent): AgentWithId,
    ApiJson(body): ApiJson<MarkReadBody>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.mark_read(&agent, body.message_ids).await?))
}

/// `POST /messages/send`: 200 when sent, 202 when held for review or of unknown outcome.
pub async fn send(
    State(st): State<AppState>,
    Agent(agent): Agent,
    IdempotencyKey(key): IdempotencyKey,
    ApiJson(req): ApiJson<SendRequest>,
) -> ApiResult<Response> {
    let receipt = st.amc.send(&agent, req, key).await?;
    let status = if receipt.status == "sent" { StatusCode::OK } else { StatusCode::ACCEPTED };
    let replayed = receipt.replayed;
    let mut resp = (status, Json(receipt)).into_response();
    if replayed {
        resp.headers_mut().insert("idempotency-replayed", HeaderValue::from_static("true"));
    }
    Ok(resp)
}

/// `GET /messages/{id}`.
pub async fn get_message(
    State(st): State<AppState>,
    Agent(agent): Agent,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.get_message(&agent, id).await?))
}

/// The query of `GET /channels`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelsQuery {
    source: Option<String>,
}

/// `GET /channels`: the allowed channels an agent may use.
pub async fn channels(
    State(st): State<AppState>,
    Agent(agent): Agent,
    ApiQuery(q): ApiQuery<ChannelsQuery>,
) -> ApiResult<impl IntoResponse> {
    let channels = st.amc.list_channels(&agent, q.source).await?;
    Ok(Json(serde_json::json!({ "channels": channels })))
}

/// `GET /attachments/{id}`: the file of an attachment of a visible message.
pub async fn attachment(
    State(st): State<AppState>,
    Agent(agent): Agent,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Response> {
    let found = st.amc.attachment_file(&agent, id).await?;
    file_response(&found.local_path.unwrap_or_default(), found.filename, found.mime_type).await
}

/// Streams a local file with its type and name, or `NOT_FOUND` if it is not on disk.
pub(crate) async fn file_response(path: &str, filename: Option<String>, mime: Option<String>) -> ApiResult<Response> {
    let file = tokio::fs::File::open(path).await.map_err(|_| {
        ApiError::new(
            ErrorCode::NotFound,
            "this attachment is not available on this Mac (for example, offloaded to iCloud)",
        )
    })?;
    let mut resp = Body::from_stream(tokio_util::io::ReaderStream::new(file)).into_response();
    let mime = mime.unwrap_or_else(|| "application/octet-stream".to_owned());
    if let Ok(v) = HeaderValue::from_str(&mime) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    if let Some(name) = filename {
        let safe: String = name.chars().filter(|c| c.is_ascii_graphic() && *c != '"' && *c != '\\').collect();
        if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{safe}\"")) {
            resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
        }
    }
    Ok(resp)
}

/// `GET /healthz`: with an agent's token or the admin token.
pub async fn healthz(State(st): State<AppState>, parts: axum::http::request::Parts) -> ApiResult<impl IntoResponse> {
    let mut parts = parts;
    let admin =
        <crate::extract::Admin as axum::extract::FromRequestParts<AppState>>::from_request_parts(&mut parts, &st)
            .await
            .is_ok();
    if !admin {
        <Agent as axum::extract::FromRequestParts<AppState>>::from_request_parts(&mut parts, &st).await?;
    }
    Ok(Json(st.amc.health().await))
}

/// Any route that does not exist.
pub async fn not_found() -> ApiError {
    ApiError(Error::new(ErrorCode::NotFound, "no such route; see docs/api.md"))
}

/// A route that exists, called with the wrong method.
pub async fn method_not_allowed() -> ApiError {
    ApiError(Error::new(ErrorCode::MethodNotAllowed, "this route does not take this method"))
}
