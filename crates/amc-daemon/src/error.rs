//! The one place where the core's errors become HTTP responses: the status, the
//! core's envelope ([`amc_core::error::Envelope`]) and the `Retry-After` and
//! `WWW-Authenticate` headers.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

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

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.0.code.status();
        let mut resp =
            (StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), axum::Json(self.0.envelope()))
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
