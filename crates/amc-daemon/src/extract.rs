//! Extractors that turn every malformed request into the error envelope: JSON bodies,
//! query strings, and the agent's and the person's credentials.

use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use crate::AppState;
use crate::error::ApiError;
use amc_core::ErrorCode;
use amc_core::service::AgentCtx;

/// The largest REST request body accepted (a send with its JSON).
pub const MAX_REST_BODY_BYTES: usize = 1024 * 1024;

/// A JSON body, with unknown fields, wrong types and bad syntax as `VALIDATION_FAILED`
/// and bodies over the limit as `PAYLOAD_TOO_LARGE`.
pub struct ApiJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = axum::body::Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(ErrorCode::PayloadTooLarge, format!("request body is over {} bytes", MAX_REST_BODY_BYTES))
            } else {
                ApiError::new(ErrorCode::ValidationFailed, "could not read the request body")
            }
        })?;
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let value =
            T::deserialize(&mut de).map_err(|e| ApiError::new(ErrorCode::ValidationFailed, json_message(&e)))?;
        de.end().map_err(|e| ApiError::new(ErrorCode::ValidationFailed, json_message(&e)))?;
        Ok(Self(value))
    }
}

fn json_message(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match e.classify() {
        Category::Syntax | Category::Eof => format!("the body is not valid JSON: {e}"),
        Category::Data => format!("invalid request: {e}"),
        Category::Io => "could not read the request body".to_owned(),
    }
}

/// Query parameters, with anything malformed as `VALIDATION_FAILED`.
pub struct ApiQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Query(value) = Query::<T>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::new(ErrorCode::ValidationFailed, format!("invalid query: {}", e.body_text())))?;
        Ok(Self(value))
    }
}

/// The header `name`, if sent once; sent twice, a credential is ambiguous (which one was
/// checked?), so it is refused.
fn one_header<'a>(parts: &'a Parts, name: &'static str) -> Result<Option<&'a HeaderValue>, ApiError> {
    let mut all = parts.headers.get_all(name).iter();
    let first = all.next();
    if all.next().is_some() {
        return Err(ApiError::new(ErrorCode::Unauthorized, format!("send one {name} header, not several")));
    }
    Ok(first)
}

/// The bearer token of `Authorization`, if one.
fn bearer(parts: &Parts) -> Result<Option<&str>, ApiError> {
    let Some(value) = one_header(parts, "authorization")?.and_then(|v| v.to_str().ok()) else { return Ok(None) };
    let token = value.split_once(' ').and_then(|(scheme, token)| {
        scheme.eq_ignore_ascii_case("bearer").then_some(token.trim()).filter(|t| !t.is_empty())
    });
    Ok(token)
}

fn agent_id_header(parts: &Parts) -> Result<Option<&str>, ApiError> {
    match one_header(parts, "x-agent-id")? {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .ok()
            .filter(|s| !s.is_empty())
            .map(Some)
            .ok_or_else(|| ApiError::new(ErrorCode::AgentIdRequired, "X-Agent-ID is empty or not ASCII")),
    }
}

async fn authenticate(parts: &Parts, state: &AppState, need_agent_id: bool) -> Result<AgentCtx, ApiError> {
    let token = bearer(parts)?.ok_or_else(|| {
        ApiError::new(ErrorCode::Unauthorized, "missing bearer token: send Authorization: Bearer <agent token>")
    })?;
    let agent = state.amc.authenticate(token, None).await?;
    let claimed = agent_id_header(parts)?;
    if let Some(claimed) = claimed
        && claimed != agent.agent_id
    {
        return Err(ApiError::new(ErrorCode::Unauthorized, "X-Agent-ID does not match the token's agent"));
    }
    if need_agent_id && claimed.is_none() {
        return Err(ApiError::new(ErrorCode::AgentIdRequired, "this route needs the X-Agent-ID header"));
    }
    Ok(agent)
}

/// An agent authenticated by its bearer token; `X-Agent-ID`, if sent, must match it.
pub struct Agent(pub AgentCtx);

impl FromRequestParts<AppState> for Agent {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        Ok(Self(authenticate(parts, state, false).await?))
    }
}

/// An agent authenticated by its bearer token that also sent a matching `X-Agent-ID`
/// (the routes that read or change per-agent state).
pub struct AgentWithId(pub AgentCtx);

impl FromRequestParts<AppState> for AgentWithId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        Ok(Self(authenticate(parts, state, true).await?))
    }
}

/// The person, through the admin credential (the tray UI and the CLI).
pub struct Admin;

impl FromRequestParts<AppState> for Admin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        match bearer(parts)? {
            Some(token) if bool::from(token.as_bytes().ct_eq(state.admin_token.as_bytes())) => Ok(Self),
            _ => Err(ApiError::new(ErrorCode::Unauthorized, "the admin API needs the admin token")),
        }
    }
}

/// A path parameter. One that cannot be read (not UTF-8 once decoded) is `VALIDATION_FAILED`
/// on an agent's route, and on the person's (`/admin`) `NOT_FOUND`, as any other unknown id
/// there.
pub struct ApiPath<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let admin = parts.uri.path().starts_with("/admin/");
        let axum::extract::Path(value) =
            axum::extract::Path::<T>::from_request_parts(parts, state).await.map_err(|e| {
                if admin {
                    ApiError::new(ErrorCode::NotFound, "no such item")
                } else {
                    ApiError::new(ErrorCode::ValidationFailed, format!("invalid path: {}", e.body_text()))
                }
            })?;
        Ok(Self(value))
    }
}

/// The `Idempotency-Key` header, if sent.
pub struct IdempotencyKey(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        match parts.headers.get("idempotency-key") {
            None => Ok(Self(None)),
            Some(v) => v.to_str().map(|s| Self(Some(s.to_owned()))).map_err(|_| {
                ApiError::new(ErrorCode::ValidationFailed, "Idempotency-Key must be visible ASCII characters")
            }),
        }
    }
}
