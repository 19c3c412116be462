//! Middleware in front of every route: header size, panics, and for the TCP listener
//! the Host and Origin checks that stop DNS rebinding.

use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;
use amc_core::ErrorCode;

/// The most header bytes a request may carry.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;

/// Refuses requests whose headers are over [`MAX_HEADER_BYTES`] with the envelope.
///
/// A layer of its own rather than `from_fn`, which boxes the rest of the stack's future and
/// clones its service for every request: a call that waits would hold both while it waits.
#[derive(Clone, Copy)]
pub struct HeaderLimitLayer;

impl<S> tower::Layer<S> for HeaderLimitLayer {
    type Service = HeaderLimit<S>;

    fn layer(&self, inner: S) -> HeaderLimit<S> {
        HeaderLimit(inner)
    }
}

/// The service [`HeaderLimitLayer`] puts in front of `S`.
#[derive(Clone)]
pub struct HeaderLimit<S>(S);

impl<S> tower::Service<Request> for HeaderLimit<S>
where
    S: tower::Service<Request, Response = Response, Error = std::convert::Infallible>,
{
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = futures_util::future::Either<std::future::Ready<Result<Response, Self::Error>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let size: usize =
            req.headers().iter().map(|(k, v)| k.as_str().len() + v.len() + 4).sum::<usize>() + displayed_len(req.uri());
        if size > MAX_HEADER_BYTES {
            let refused =
                ApiError::new(ErrorCode::HeadersTooLarge, format!("request headers are over {MAX_HEADER_BYTES} bytes"));
            return futures_util::future::Either::Left(std::future::ready(Ok(refused.into_response())));
        }
        futures_util::future::Either::Right(self.0.call(req))
    }
}

/// The length of `value` as displayed, counted without building the text.
fn displayed_len(value: &impl std::fmt::Display) -> usize {
    struct Count(usize);
    impl std::fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = std::fmt::write(&mut count, format_args!("{value}"));
    count.0
}

/// Turns a panic in a handler into `INTERNAL_ERROR` without details.
pub fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("a request handler panicked");
    ApiError::new(ErrorCode::InternalError, "internal error; see AMC's log").into_response()
}

/// For the loopback TCP listener only: the Host must name the loopback address and
/// port, and an Origin, if sent, must be that same origin. A web page the person opens
/// cannot reach AMC through a rebound DNS name or a cross-origin request.
pub async fn loopback_only(State(addr): State<SocketAddr>, req: Request, next: Next) -> Response {
    let port = addr.port();
    let allowed_hosts = [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
    // Exactly one Host and at most one Origin: with two, a check of the first could pass
    // while something behind AMC reads the second.
    let single = req.headers().get_all(header::HOST).iter().count() == 1
        && req.headers().get_all(header::ORIGIN).iter().count() <= 1;
    let host = req.headers().get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_ascii_lowercase);
    // A target in absolute form names its own host, which HTTP puts before the header's.
    let authority_ok = req.uri().authority().is_none_or(|a| {
        let a = a.as_str().to_ascii_lowercase();
        allowed_hosts.contains(&a)
    });
    let host_ok = single && authority_ok && host.as_deref().is_some_and(|h| allowed_hosts.iter().any(|a| a == h));
    let origin_ok = match req.headers().get(header::ORIGIN) {
        None => true,
        Some(o) => o
            .to_str()
            .ok()
            .map(str::to_ascii_lowercase)
            .is_some_and(|o| allowed_hosts.iter().any(|a| o == format!("http://{a}"))),
    };
    if !host_ok || !origin_ok {
        return ApiError::new(ErrorCode::Forbidden, "requests must come from this machine's loopback origin")
            .into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    /// The header limit counts a URI as long as its text is, without building the text.
    #[test]
    fn a_uri_is_counted_as_long_as_its_text() {
        for uri in ["/", "/messages/unread?limit=100&after=x%20y", "http://127.0.0.1:7878/ui/#token"] {
            let parsed: axum::http::Uri = uri.parse().expect("uri");
            assert_eq!(super::displayed_len(&parsed), parsed.to_string().len(), "{uri}");
        }
    }
}
