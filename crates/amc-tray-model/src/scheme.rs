//! The `amc:` URI scheme. The tray window loads `amc://localhost/ui/`; each request it
//! makes is handed to the daemon in this process ([`InProcess`]), which acts as the
//! person. So the window needs no token and no TCP port is open.
//!
//! A custom scheme's response is one body, not a stream. The admin event stream
//! (`GET /admin/events`) is therefore answered as a long poll: each response ends after
//! the next event (or a quiet [`EVENT_POLL`]), with a short `retry:` so that `EventSource`
//! reconnects at once. One subscription to the daemon's stream stays open between polls,
//! so events that happen while the page reconnects wait for the next poll rather than
//! being lost. (Polls take turns: the window is meant to hold one `EventSource`.)

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, Uri, header};
use http_body_util::BodyExt;
use tokio::sync::Mutex;

use amc_core::{Error, ErrorCode};
use amc_daemon::{InProcess, ResponseBody};

type Body = ResponseBody;

/// The scheme's name, as registered with the webview.
pub const SCHEME: &str = "amc";

/// The only host the scheme answers: `amc://localhost/…` (macOS and Linux webviews).
pub const HOST: &str = "localhost";

/// Where links of the window may lead outside it: Discord's own pages (the Developer Portal,
/// a bot's invite) open in the person's browser, and System Settings' panes (Full Disk
/// Access) in System Settings. Every other link opens nowhere.
pub const OPENED_OUTSIDE: &[&str] = &["https://discord.com/", "x-apple.systempreferences:"];

/// Whether a link of the window to `url` is opened outside it, by the system.
pub fn opened_outside(url: &str) -> bool {
    OPENED_OUTSIDE.iter().any(|p| url.starts_with(p)) && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// How long an event-stream request waits for an event before it ends empty.
pub const EVENT_POLL: Duration = Duration::from_secs(25);

/// What `EventSource` is told to wait before reconnecting, in milliseconds.
const EVENT_RETRY_MS: u32 = 100;

/// The admin event stream's path.
const EVENTS: &str = "/admin/events";

/// Where the window reads and sets launch at login (`{"on": true}`): answered by the app,
/// which holds the login item, not by the daemon. A browser on `amc serve` gets `404`.
pub const LOGIN: &str = "/tray/login";

/// Launch at login, as the app (the shell) turns it on and off.
pub trait LaunchAtLogin: Send + Sync {
    /// Whether AMC starts when the person logs in.
    fn is_on(&self) -> Result<bool, String>;
    /// Turns it on or off.
    fn set(&self, on: bool) -> Result<(), String>;
}

/// Answers one request of the window once AMC runs (`scheme` holds its way to the daemon):
/// a window shown earlier (a second launch during a store update) waits for it, and is
/// answered `503` if AMC could not start. `csp`, the app's Content-Security-Policy, is
/// given to every page that has none: the app applies it to its own assets only.
pub async fn answer(
    mut scheme: tokio::sync::watch::Receiver<Option<Scheme>>,
    req: Request<Vec<u8>>,
    csp: Option<String>,
) -> Response<Vec<u8>> {
    let ready = scheme.wait_for(Option::is_some).await.ok().and_then(|s| s.clone());
    let Some(scheme) = ready else {
        let mut unavailable = Response::new(b"AMC is not running".to_vec());
        *unavailable.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        return unavailable;
    };
    let mut response = scheme.dispatch(req).await;
    if let Some(value) = csp.and_then(|c| HeaderValue::from_str(&c).ok()) {
        response.headers_mut().entry(header::CONTENT_SECURITY_POLICY).or_insert(value);
    }
    response
}

/// Answers the window's requests through the daemon in this process
/// (`Running::in_process`). A cheap `Clone` handle: clones share the event subscription.
#[derive(Clone)]
pub struct Scheme {
    daemon: InProcess,
    events: Arc<Mutex<Option<Body>>>,
    event_poll: Duration,
    login: Option<Arc<dyn LaunchAtLogin>>,
}

impl Scheme {
    /// Answers through `daemon`.
    pub fn new(daemon: InProcess) -> Self {
        Self { daemon, events: Arc::default(), event_poll: EVENT_POLL, login: None }
    }

    /// Answers [`LOGIN`] with `login`.
    pub fn with_login(self, login: Option<Arc<dyn LaunchAtLogin>>) -> Self {
        Self { login, ..self }
    }

    /// How long an event-stream request waits for an event (tests use a short one).
    pub fn event_poll(self, wait: Duration) -> Self {
        Self { event_poll: wait, ..self }
    }

    /// Answers one request of the window. Requests for another host are refused with
    /// `FORBIDDEN`.
    pub async fn dispatch(&self, req: Request<Vec<u8>>) -> Response<Vec<u8>> {
        let (mut parts, body) = req.into_parts();
        if parts.uri.host() != Some(HOST) {
            tracing::warn!(uri = %parts.uri, "amc: request for another host refused");
            let refused = Error::new(ErrorCode::Forbidden, "the amc: scheme answers only amc://localhost/");
            return collect(InProcess::error(refused)).await;
        }
        // The router routes on the path: keep only it and the query.
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        parts.uri = match Uri::try_from(path) {
            Ok(uri) => uri,
            Err(_) => return collect(InProcess::error(Error::new(ErrorCode::NotFound, "no such route"))).await,
        };
        parts.headers.insert(header::HOST, HeaderValue::from_static(HOST));
        if parts.method == Method::GET && parts.uri.path() == EVENTS {
            return self.poll_events(parts).await;
        }
        if parts.uri.path() == LOGIN
            && let Some(login) = &self.login
        {
            return at_login(login.as_ref(), &parts.method, &body);
        }
        let (method, path) = (parts.method.clone(), parts.uri.path().to_owned());
        let res = self.daemon.call(Request::from_parts(parts, Bytes::from(body))).await;
        tracing::debug!(%method, %path, status = res.status().as_u16(), "amc: answered");
        collect(res).await
    }

    /// Reads the kept event stream (opening it if needed) until its next event, or until
    /// the wait passes, or until it ends.
    async fn poll_events(&self, parts: http::request::Parts) -> Response<Vec<u8>> {
        let mut kept = self.events.lock().await;
        let stream = match kept.take() {
            Some(body) => body,
            None => {
                let res = self.daemon.call(Request::from_parts(parts, Bytes::new())).await;
                if !res.status().is_success() {
                    return collect(res).await;
                }
                res.into_body()
            }
        };
        let (bytes, open) = next_event(stream, self.event_poll).await;
        *kept = open;
        let mut res = Response::new(bytes);
        let headers = res.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        res
    }
}

/// Turns a streamed response into one buffered response.
/// `GET` or `POST {"on": bool}` of [`LOGIN`]: launch at login, as it is after.
fn at_login(login: &dyn LaunchAtLogin, method: &Method, body: &[u8]) -> Response<Vec<u8>> {
    let set = || -> Result<(), Error> {
        let asked: serde_json::Value =
            serde_json::from_slice(body).map_err(|e| Error::validation(format!("the body must be JSON: {e}")))?;
        let on = asked.get("on").and_then(serde_json::Value::as_bool);
        let Some(on) = on.filter(|_| asked.as_object().is_some_and(|o| o.len() == 1)) else {
            return Err(Error::validation("send {\"on\": true} or {\"on\": false}"));
        };
        login.set(on).map_err(|e| Error::conflict(format!("macOS did not change the login item: {e}")))
    };
    let answered = match *method {
        Method::GET => Ok(()),
        Method::POST => set(),
        _ => Err(Error::new(ErrorCode::MethodNotAllowed, "GET or POST")),
    }
    .and_then(|()| login.is_on().map_err(|e| Error::conflict(format!("the login item cannot be read: {e}"))));
    let (status, json) = match answered {
        Ok(on) => (StatusCode::OK, serde_json::json!({ "on": on })),
        Err(e) => {
            (StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), e.envelope_json())
        }
    };
    let mut res = Response::new(json.to_string().into_bytes());
    *res.status_mut() = status;
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

async fn collect(res: Response<Body>) -> Response<Vec<u8>> {
    let (parts, body) = res.into_parts();
    match body.collect().await {
        Ok(c) => {
            let mut res = Response::from_parts(parts, c.to_bytes().to_vec());
            // The length is the buffered body's now.
            res.headers_mut().remove(header::CONTENT_LENGTH);
            res
        }
        Err(e) => {
            tracing::warn!(error = %e, "amc: reading a response failed");
            let mut res = Response::new(Vec::new());
            *res.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            res
        }
    }
}

/// Reads `stream` until its next event (a frame with a field other than a comment), or
/// until `wait` passes. Returns what was read, after a `retry:` line, and the stream if it
/// is still open.
async fn next_event(mut stream: Body, wait: Duration) -> (Vec<u8>, Option<Body>) {
    let mut out = format!("retry: {EVENT_RETRY_MS}\n\n").into_bytes();
    let start = out.len();
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match tokio::time::timeout_at(deadline, stream.frame()).await {
            Err(_) => return (out, Some(stream)),
            Ok(None) => return (out, None),
            Ok(Some(Err(e))) => {
                tracing::warn!(error = %e, "amc: reading the event stream failed");
                return (out, None);
            }
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    out.extend_from_slice(&data);
                }
                if has_event(&out[start..]) {
                    return (out, Some(stream));
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
    #[test]
    fn only_discords_pages_and_system_settings_open_outside_the_window() {
        for url in [
            "https://discord.com/developers/applications",
            "https://discord.com/oauth2/authorize?client_id=1&scope=bot&permissions=274878008384",
            "x-apple.systempreferences:com.apple.preference.security?Privacy_AllFiles",
        ] {
            assert!(super::opened_outside(url), "{url}");
        }
        for url in [
            "https://discord.com.evil.example/",
            "http://discord.com/",
            "file:///etc/passwd",
            "https://example.com/",
            "x-apple.systempreferences:a b",
        ] {
            assert!(!super::opened_outside(url), "{url}");
        }
    }

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
