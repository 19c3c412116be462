//! A small HTTP/1.1 client over the daemon's Unix socket, for the `amc` CLI, the stdio
//! bridge and tests. One [`Connection`] keeps its socket open between requests.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;

/// Percent-encodes a query value: everything but RFC 3986's unreserved characters.
pub fn encode_query_value(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A response, fully read.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: hyper::HeaderMap,
    /// The body.
    pub body: Bytes,
}

impl Response {
    /// The body as JSON (`null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Why a request could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens on the socket: AMC is not running.
    #[error("AMC is not running (no daemon at {0}); start it with `amc serve` or the AMC app")]
    NotRunning(PathBuf),
    /// Another failure talking to the daemon.
    #[error("talking to AMC at {path}: {message}")]
    Io {
        /// The socket.
        path: PathBuf,
        /// What failed.
        message: String,
    },
}

/// One open connection to the daemon.
pub struct Connection {
    path: PathBuf,
    sender: SendRequest<Full<Bytes>>,
    bearer: Option<String>,
    headers: Vec<(String, String)>,
}

impl Connection {
    /// Connects to the daemon's socket.
    pub async fn connect(path: &Path) -> Result<Self, ClientError> {
        let stream = UnixStream::connect(path).await.map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused => {
                ClientError::NotRunning(path.to_owned())
            }
            _ => ClientError::Io { path: path.to_owned(), message: e.to_string() },
        })?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ClientError::Io { path: path.to_owned(), message: e.to_string() })?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Self { path: path.to_owned(), sender, bearer: None, headers: Vec::new() })
    }

    /// Sends `Authorization: Bearer <token>` with every request.
    pub fn with_bearer(mut self, token: &str) -> Self {
        self.bearer = Some(token.to_owned());
        self
    }

    /// Sends this header with every request.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sends a request with optional extra headers and JSON body.
    pub async fn request(
        &mut self,
        method: Method,
        path_and_query: &str,
        extra_headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Result<Response, ClientError> {
        let io = |e: &dyn std::fmt::Display| ClientError::Io { path: self.path.clone(), message: e.to_string() };
        let mut builder = Request::builder().method(method).uri(path_and_query).header("host", "localhost");
        if let Some(b) = &self.bearer {
            builder = builder.header("authorization", format!("Bearer {b}"));
        }
        for (k, v) in &self.headers {
            builder = builder.header(k, v);
        }
        for (k, v) in extra_headers {
            builder = builder.header(*k, *v);
        }
        if body.is_some() {
            builder = builder.header("content-type", "application/json");
        }
        let req = builder.body(Full::new(Bytes::from(body.unwrap_or_default()))).map_err(|e| io(&e))?;
        self.sender.ready().await.map_err(|e| io(&e))?;
        let resp = self.sender.send_request(req).await.map_err(|e| io(&e))?;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await.map_err(|e| io(&e))?.to_bytes();
        Ok(Response { status: parts.status, headers: parts.headers, body })
    }

    /// `GET`.
    pub async fn get(&mut self, path_and_query: &str) -> Result<Response, ClientError> {
        self.request(Method::GET, path_and_query, &[], None).await
    }

    /// `POST` with a JSON body.
    pub async fn post(&mut self, path: &str, body: &serde_json::Value) -> Result<Response, ClientError> {
        self.request(Method::POST, path, &[], Some(body.to_string().into_bytes())).await
    }
}
