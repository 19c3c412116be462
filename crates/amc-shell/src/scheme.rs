//! The `amc:` URI scheme. The tray window loads `amc://localhost/ui/`; each request it
//! makes is handed to the daemon's in-process router, which acts as the person. So the
//! window needs no token and no TCP port is open.
//!
//! A custom scheme's response is one body, not a stream. The admin event stream
//! (`text/event-stream`) is therefore answered as a long poll: the response ends after the
//! first event (or a quiet [`EVENT_POLL`]), with a short `retry:` so that `EventSource`
//! reconnects at once.

use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, Request, Response, StatusCode, Uri, header};
use axum::response::IntoResponse;
use http_body_util::BodyExt;
use tower::ServiceExt;

use amc_core::{Error, ErrorCode};
use amc_daemon::error::ApiError;

/// The scheme's name, as registered with the webview.
pub const SCHEME: &str = "amc";

/// The only host the scheme answers: `amc://localhost/…` (macOS and Linux webviews).
pub const HOST: &str = "localhost";

/// The window's first page.
pub const START_URL: &str = "amc://localhost/ui/";

/// How long an event-stream request waits for an event before it ends empty.
pub const EVENT_POLL: Duration = Duration::from_secs(25);

/// What `EventSource` is told to wait before reconnecting, in milliseconds.
const EVENT_RETRY_MS: u32 = 100;

/// Answers one request of the window through `router` (the daemon's
/// `Running::in_process`). Requests for another host are refused with `FORBIDDEN`.
pub async fn dispatch(router: axum::Router, req: Request<Vec<u8>>) -> Response<Vec<u8>> {
    dispatch_with(router, req, EVENT_POLL).await
}

/// [`dispatch`] with the event-stream wait given (tests use a short one).
pub async fn dispatch_with(router: axum::Router, req: Request<Vec<u8>>, event_poll: Duration) -> Response<Vec<u8>> {
    let (mut parts, body) = req.into_parts();
    if parts.uri.host() != Some(HOST) {
        tracing::warn!(uri = %parts.uri, "amc: request for another host refused");
        let refused = ApiError(Error::new(ErrorCode::Forbidden, "the amc: scheme answers only amc://localhost/"));
        return collect(refused.into_response(), event_poll).await;
    }
    // The router routes on the path: keep only it and the query.
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = match Uri::try_from(path) {
        Ok(uri) => uri,
        Err(_) => {
            return collect(ApiError::new(ErrorCode::NotFound, "no such route").into_response(), event_poll).await;
        }
    };
    parts.headers.insert(header::HOST, HeaderValue::from_static(HOST));
    let req = Request::from_parts(parts, Body::from(body));
    match router.oneshot(req).await {
        Ok(res) => collect(res, event_poll).await,
        Err(never) => match never {},
    }
}

/// Turns a router response into one buffered response.
async fn collect(res: axum::response::Response, event_poll: Duration) -> Response<Vec<u8>> {
    let (parts, body) = res.into_parts();
    let is_stream =
        parts.headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let bytes = if is_stream { first_event(body, event_poll).await } else { whole(body).await };
    match bytes {
        Some(bytes) => {
            let mut res = Response::from_parts(parts, bytes);
            // The length is the buffered body's now.
            res.headers_mut().remove(header::CONTENT_LENGTH);
            res
        }
        None => {
            let mut res = Response::new(Vec::new());
            *res.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            res
        }
    }
}

async fn whole(body: Body) -> Option<Vec<u8>> {
    match body.collect().await {
        Ok(c) => Some(c.to_bytes().to_vec()),
        Err(e) => {
            tracing::warn!(error = %e, "amc: reading a response failed");
            None
        }
    }
}

/// Reads an event stream until its first event (a frame with a field other than a
/// comment), or until `wait` passes, or until it ends.
async fn first_event(mut body: Body, wait: Duration) -> Option<Vec<u8>> {
    let mut out = format!("retry: {EVENT_RETRY_MS}\n\n").into_bytes();
    let start = out.len();
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) | Ok(None) => return Some(out),
            Ok(Some(Err(e))) => {
                tracing::warn!(error = %e, "amc: reading the event stream failed");
                return Some(out);
            }
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    out.extend_from_slice(&data);
                }
                if has_event(&out[start..]) {
                    return Some(out);
                }
            }
        }
    }
}

/// Whether `sse` holds a complete event: a block ended by a blank line with a line that is
/// not a comment.
fn has_event(sse: &[u8]) -> bool {
    let text = String::from_utf8_lossy(sse).replace("\r\n", "\n");
    let mut blocks: Vec<&str> = text.split("\n\n").collect();
    // The last piece is not ended by a blank line yet.
    blocks.pop();
    blocks.iter().any(|b| b.lines().any(|l| !l.is_empty() && !l.starts_with(':')))
}

#[cfg(test)]
mod tests {
    use super::has_event;

    #[test]
    fn an_event_is_a_finished_block_with_a_field() {
        assert!(!has_event(b""));
        assert!(!has_event(b":\n\n"), "a keep-alive comment is no event");
        assert!(!has_event(b"data: {\"type\"\n"), "an unfinished block is no event yet");
        assert!(has_event(b":\n\ndata: {}\n\n"));
        assert!(has_event(b"event: resync\r\ndata: {}\r\n\r\n"));
    }
}
