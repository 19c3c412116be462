//! The relay's REST mirror under `/admin/relay`, for the tray UI: the same operations as
//! the relay's MCP tools, acting as the person (who sees every thread).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde::Deserialize;

use crate::AppState;
use crate::error::ApiResult;
use crate::extract::{Admin, ApiJson, ApiPath, ApiQuery};
use amc_relay::Principal;

/// The body of `POST /admin/relay/threads`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    title: String,
    idempotency_key: String,
}

/// `GET /admin/relay/threads`: every thread.
pub async fn threads(State(st): State<AppState>, _: Admin) -> ApiResult<impl IntoResponse> {
    Ok(Json(serde_json::json!({ "threads": st.relay.threads(&Principal::Person).await? })))
}

/// `POST /admin/relay/threads`: a thread owned by the person.
pub async fn create(
    State(st): State<AppState>,
    _: Admin,
    ApiJson(b): ApiJson<CreateBody>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.relay.create_thread(&Principal::Person, b.title, b.idempotency_key).await?))
}

/// The body of `POST /admin/relay/threads/{id}/join`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JoinBody {
    access_token: String,
}

/// `POST /admin/relay/threads/{id}/join`.
pub async fn join(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(b): ApiJson<JoinBody>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.relay.join(&Principal::Person, id, b.access_token).await?))
}

/// The query of `GET …/messages`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadQuery {
    after: Option<String>,
    limit: Option<i64>,
}

/// The query of `GET …/wait`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WaitQuery {
    after: Option<String>,
    limit: Option<i64>,
    timeout_seconds: Option<i64>,
}

/// `GET /admin/relay/threads/{id}/messages?after=&limit=`.
pub async fn read(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ReadQuery>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.relay.read(&Principal::Person, id, q.after, q.limit).await?))
}

/// `GET /admin/relay/threads/{id}/wait?after=&timeout_seconds=&limit=`: a long-poll. A
/// client that goes away drops the request, and with it the wait.
pub async fn wait(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<WaitQuery>,
) -> ApiResult<impl IntoResponse> {
    let after = q.after.unwrap_or_default();
    let shutdown = st.shutdown.clone();
    let page = st
        .relay
        .wait(&Principal::Person, id, after, q.timeout_seconds, q.limit, async move { shutdown.cancelled().await })
        .await?;
    Ok(Json(page))
}

/// `GET /admin/relay/threads/{id}/waiting`: how many agents' `wait_for_messages` calls
/// wait on the thread now.
pub async fn waiting(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(serde_json::json!({ "waiting": st.relay.waiting_on(&Principal::Person, id).await? })))
}

/// The body of `POST /admin/relay/threads/{id}/messages`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostBody {
    body: String,
    #[serde(default)]
    reply_to_seq: Option<String>,
    idempotency_key: String,
}

/// `POST /admin/relay/threads/{id}/messages`: post as the person.
pub async fn post(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(b): ApiJson<PostBody>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.relay.send(&Principal::Person, id, b.body, b.reply_to_seq, b.idempotency_key).await?))
}

/// The query of `GET /admin/relay/search`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    query: String,
    cursor: Option<String>,
    limit: Option<i64>,
}

/// `GET /admin/relay/search?query=&cursor=&limit=`.
pub async fn search(
    State(st): State<AppState>,
    _: Admin,
    ApiQuery(q): ApiQuery<SearchQuery>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.relay.search(&Principal::Person, q.query, q.cursor, q.limit).await?))
}

/// `GET /admin/relay/threads/{id}/invites`: the thread's tokens, never their secrets.
pub async fn invites(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(serde_json::json!({ "invites": st.relay.invites(&Principal::Person, id).await? })))
}

/// The body of `POST /admin/relay/threads/{id}/invites`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MintBody {
    kind: String,
    #[serde(default)]
    expires_in_seconds: Option<i64>,
}

/// `POST /admin/relay/threads/{id}/invites`: 201 with the token, shown this once.
pub async fn mint(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(b): ApiJson<MintBody>,
) -> ApiResult<impl IntoResponse> {
    Ok((StatusCode::CREATED, Json(st.relay.mint(&Principal::Person, id, b.kind, b.expires_in_seconds).await?)))
}

/// `POST /admin/relay/threads/{id}/invites/{token_id}/revoke`.
pub async fn revoke(
    State(st): State<AppState>,
    _: Admin,
    ApiPath((id, token_id)): ApiPath<(String, String)>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.relay.revoke(&Principal::Person, id, token_id).await?))
}
