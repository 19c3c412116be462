//! The daemon's routes for requests made inside AMC's own process (the tray window), as a
//! type the daemon owns: callers speak `http` types and never see the HTTP framework.
//! Each request acts as the person: the admin token is added to it.

use bytes::Bytes;
use http::{HeaderValue, Request, Response, header};
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use tower::ServiceExt;

use amc_core::Error;

use crate::error::ApiError;

/// A response body: buffered, or streamed (the admin event stream).
pub type ResponseBody = UnsyncBoxBody<Bytes, BoxError>;

/// What reading a response body can fail with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The daemon, answering requests from inside AMC's process. A cheap `Clone` handle.
#[derive(Clone)]
pub struct InProcess {
    router: axum::Router,
    bearer: Option<HeaderValue>,
}

impl InProcess {
    pub(crate) fn new(router: axum::Router, admin_token: &str) -> Self {
        Self { router, bearer: HeaderValue::from_str(&format!("Bearer {admin_token}")).ok() }
    }

    /// Answers one request, as the person. Long-lived responses end when the daemon stops.
    pub async fn call(&self, req: Request<Bytes>) -> Response<ResponseBody> {
        let (mut parts, body) = req.into_parts();
        if let Some(v) = &self.bearer {
            parts.headers.insert(header::AUTHORIZATION, v.clone());
        }
        let req = Request::from_parts(parts, axum::body::Body::from(body));
        match self.router.clone().oneshot(req).await {
            Ok(res) => boxed(res),
            Err(never) => match never {},
        }
    }

    /// The response the daemon gives for `e`: its status, the envelope and its headers.
    pub fn error(e: Error) -> Response<ResponseBody> {
        boxed(axum::response::IntoResponse::into_response(ApiError(e)))
    }
}

fn boxed(res: axum::response::Response) -> Response<ResponseBody> {
    res.map(|b| b.map_err(|e| -> BoxError { Box::new(e) }).boxed_unsync())
}
