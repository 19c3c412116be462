//! The error envelope, `{"error": {"code", "message", "status"}}`: the one place where
//! the core's errors become HTTP responses.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use amc_core::{Error, ErrorCode};

/// A core error on its way out as an HTTP response.
#[derive(Debug)]
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        Self(e)
    }
}

impl ApiError {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self(Error::new(code, message))
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    error: Body<'a>,
}

#[derive(Serialize)]
struct Body<'a> {
    code: &'static str,
    message: &'a str,
    status: u16,
}

/// The envelope's JSON for an error, as the MCP tools also return it.
pub fn envelope_json(e: &Error) -> serde_json::Value {
    serde_json::json!({ "error": { "code": e.code.as_str(), "message": e.message, "status": e.code.status() } })
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.0.code.status();
        let body = Envelope { error: Body { code: self.0.code.as_str(), message: &self.0.message, status } };
        let mut resp = (StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), axum::Json(body))
            .into_response();
        if let Some(secs) = self.0.retry_after {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if self.0.code == ErrorCode::Unauthorized {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

/// The handlers' result type.
pub type ApiResult<T> = Result<T, ApiError>;
