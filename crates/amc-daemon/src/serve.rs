//! Serving a listener: the accept loop, and each connection on hyper's HTTP/1.1 with its
//! stream in a [`RefusalIo`].
//!
//! Our own loop rather than `axum::serve`, which keeps the error a connection ends with to
//! itself: the envelope in place of hyper's bare refusal needs that error, to know that a
//! write was the refusal ([`Refused::of`]), and the stream back afterwards to send it.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;

use axum::extract::Request;
use axum::response::Response;
use axum::serve::Listener;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::refusal::{RefusalIo, Refused};

/// On the loopback TCP listener, how long a connection may take to send a request's head,
/// and stay idle between requests: a client that stalls (or holds connections open to use
/// up the daemon's files) is closed, as HTTP servers close idle connections. Not on the
/// socket, whose clients are AMC's own: the bridge holds an idle connection to learn at
/// once that the daemon went away, and the CLI keeps one while the person answers a
/// question.
pub(crate) const HEAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a request's body may go without a byte before it is given up: a body shorter
/// than its `Content-Length` holds nothing open for longer.
pub(crate) const BODY_STALL: std::time::Duration = std::time::Duration::from_secs(30);

/// `req` with its body given up once it stalls for [`BODY_STALL`] (its reader then fails,
/// and the route answers that the body could not be read).
pub(crate) fn stall_limited(req: Request) -> Request {
    req.map(|body| axum::body::Body::new(tower_http::timeout::TimeoutBody::new(BODY_STALL, body)))
}

/// Serves `listener` until `stop` is cancelled, then waits for its connections: each ends
/// after the response it is writing (long-lived responses end on `stop` too). `head`: how
/// long a connection may take over a request's head or idle between requests, if bounded.
pub(crate) async fn serve<L: Listener>(
    mut listener: L,
    app: axum::Router,
    stop: CancellationToken,
    head: Option<std::time::Duration>,
) {
    let connections = TaskTracker::new();
    loop {
        let io = tokio::select! {
            (io, _) = listener.accept() => io,
            () = stop.cancelled() => break,
        };
        connections.spawn(connection(io, app.clone(), stop.clone(), head));
    }
    drop(listener);
    connections.close();
    connections.wait().await;
}

/// Serves one connection; a request head hyper refuses is answered with the envelope.
/// `head`: how long it may take over a request's head or idle between requests, if bounded.
pub(crate) async fn connection<I, S>(io: I, service: S, stop: CancellationToken, head: Option<std::time::Duration>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: tower::Service<Request<Incoming>, Response = Response, Error = Infallible> + Clone + Send + Unpin + 'static,
    S::Future: Send + Unpin + 'static,
{
    let mut conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(head)
        .serve_connection(TokioIo::new(RefusalIo::new(io)), TowerToHyperService::new(service));
    let mut stopping = std::pin::pin!(stop.cancelled());
    let mut closing = false;
    // Without hyper's shutdown of the stream, so that it can be taken back below to send
    // what a refusal is answered with.
    let ended = std::future::poll_fn(|cx| {
        if !closing && stopping.as_mut().poll(cx).is_ready() {
            closing = true;
            Pin::new(&mut conn).graceful_shutdown();
        }
        conn.poll_without_shutdown(cx)
    })
    .await;
    let refused = ended.as_ref().err().and_then(Refused::of);
    if let Err(e) = &ended
        && refused.is_none()
    {
        tracing::trace!(error = %e, "connection ended");
    }
    let _ = conn.into_parts().io.into_inner().finish(refused).await;
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::routing::get;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

    /// A body shaped exactly like hyper's bare refusal: it must reach the client as it is.
    const LOOKALIKE: &str =
        "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: Thu, 03 Dec 2026 23:06:39 GMT\r\n\r\n";

    /// A stream that says it writes vectored, so that hyper queues a body apart from its
    /// head; the duplex stream alone makes hyper flatten them into one buffer.
    struct Vectored(tokio::io::DuplexStream);

    impl tokio::io::AsyncRead for Vectored {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::pin::Pin::new(&mut self.0).poll_read(cx, buf)
        }
    }

    impl tokio::io::AsyncWrite for Vectored {
        fn poll_write(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<std::io::Result<usize>> {
            std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
        }
        fn is_write_vectored(&self) -> bool {
            true
        }
        fn poll_flush(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::pin::Pin::new(&mut self.0).poll_flush(cx)
        }
        fn poll_shutdown(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
        }
    }

    /// One connection of `connection` over an in-memory stream, with a route answering the
    /// lookalike and one that answers only once `go` is notified.
    fn connect(vectored: bool) -> (BufReader<tokio::io::DuplexStream>, std::sync::Arc<tokio::sync::Notify>) {
        let go = std::sync::Arc::new(tokio::sync::Notify::new());
        let waits = go.clone();
        let app = axum::Router::new()
            .route("/lookalike", get(|| async { LOOKALIKE }))
            .route("/streamed", get(|| async { axum::body::Body::from_stream(streamed()) }))
            .route(
                "/after",
                get(move || {
                    let waits = waits.clone();
                    async move {
                        waits.notified().await;
                        "after"
                    }
                }),
            );
        let (client, server) = tokio::io::duplex(64 * 1024);
        let stop = tokio_util::sync::CancellationToken::new();
        if vectored {
            tokio::spawn(super::connection(Vectored(server), app, stop, None));
        } else {
            tokio::spawn(super::connection(server, app, stop, None));
        }
        (BufReader::new(client), go)
    }

    /// A body read in pieces on another thread, as a file's is.
    fn streamed() -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::io::Error>> {
        futures_util::stream::unfold(0, |n| async move {
            tokio::task::spawn_blocking(|| ()).await.expect("a blocking task");
            (n < 3).then(|| (Ok(bytes::Bytes::from_static(LOOKALIKE.as_bytes())), n + 1))
        })
    }

    /// The next response on `c`: its head and its body (by `content-length`, or chunked).
    async fn response(c: &mut BufReader<tokio::io::DuplexStream>) -> (String, Vec<u8>) {
        let read = async {
            let mut head = String::new();
            while !head.ends_with("\r\n\r\n") {
                assert_ne!(c.read_line(&mut head).await.expect("read"), 0, "closed in a head: {head:?}");
            }
            let mut body = Vec::new();
            if let Some(length) = head.lines().find_map(|l| l.strip_prefix("content-length: ")) {
                body = vec![0; length.parse().expect("a length")];
                c.read_exact(&mut body).await.expect("body");
                return (head, body);
            }
            assert!(head.contains("\r\ntransfer-encoding: chunked\r\n"), "{head}");
            loop {
                let mut size = String::new();
                c.read_line(&mut size).await.expect("a chunk size");
                let size = usize::from_str_radix(size.trim_end(), 16).expect("hex");
                let mut chunk = vec![0; size + 2];
                c.read_exact(&mut chunk).await.expect("a chunk");
                if size == 0 {
                    return (head, body);
                }
                body.extend_from_slice(&chunk[..size]);
            }
        };
        tokio::time::timeout(Duration::from_secs(10), read).await.expect("a response, not a stall")
    }

    /// A body that looks like hyper's refusal goes out as it is, on a kept-alive connection,
    /// pipelined behind a request that waits, and before a close; the bad request after
    /// it gets the envelope.
    #[tokio::test]
    async fn a_body_like_hyper_s_refusal_is_sent_as_it_is() {
        for vectored in [false, true] {
            let (mut c, go) = connect(vectored);
            c.get_mut().write_all(b"GET /lookalike HTTP/1.1\r\nhost: x\r\n\r\n").await.expect("write");
            let (head, body) = response(&mut c).await;
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
            assert_eq!(body, LOOKALIKE.as_bytes(), "vectored: {vectored}");

            // The lookalike arrives while the request behind it still waits.
            let pipelined = b"GET /lookalike HTTP/1.1\r\nhost: x\r\n\r\nGET /after HTTP/1.1\r\nhost: x\r\n\r\n";
            c.get_mut().write_all(pipelined).await.expect("write");
            assert_eq!(response(&mut c).await.1, LOOKALIKE.as_bytes(), "vectored: {vectored}");
            go.notify_one();
            assert_eq!(response(&mut c).await.1, b"after");

            c.get_mut()
                .write_all(b"GET /lookalike HTTP/1.1\r\nhost: x\r\n\r\nGET / HTTP/9.1\r\n\r\n")
                .await
                .expect("write");
            assert_eq!(response(&mut c).await.1, LOOKALIKE.as_bytes(), "vectored: {vectored}");
            let (head, body) = response(&mut c).await;
            assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{head}");
            let v: serde_json::Value = serde_json::from_slice(&body).expect("the envelope");
            assert_eq!(v["error"]["code"], "BAD_REQUEST");

            let (mut c, _) = connect(vectored);
            c.get_mut()
                .write_all(b"GET /lookalike HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
                .await
                .expect("write");
            let mut all = Vec::new();
            c.read_to_end(&mut all).await.expect("read");
            assert!(all.ends_with(format!("\r\n\r\n{LOOKALIKE}").as_bytes()), "{:?}", String::from_utf8_lossy(&all));
        }
    }

    /// hyper may flush again after its refusal (it did behind a body read on another
    /// thread): the refusal gets the envelope wherever it falls among requests before it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refusal_behind_pipelined_requests_gets_the_envelope() {
        for vectored in [false, true] {
            for before in 0..40 {
                let (mut c, _) = connect(vectored);
                let path = if before % 2 == 0 { "/lookalike" } else { "/streamed" };
                let mut requests = format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").repeat(before);
                requests.push_str("GET / HTTP/9.1\r\n\r\n");
                c.get_mut().write_all(requests.as_bytes()).await.expect("write");
                for _ in 0..before {
                    response(&mut c).await;
                }
                let (head, body) = response(&mut c).await;
                assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"), "after {before}: {head}");
                assert!(
                    head.contains("content-type: application/json"),
                    "after {before} (vectored: {vectored}): {head}"
                );
                assert!(!body.is_empty());
            }
        }
    }

    /// A client that stops in the middle of a head (on the TCP listener), or of a body
    /// shorter than its `Content-Length`, holds its connection no longer than the limits:
    /// the head's is closed, the body's is answered (time runs on by itself here, paused).
    #[tokio::test(start_paused = true)]
    async fn a_stalled_head_or_body_holds_nothing_open() {
        let app = axum::Router::new()
            .route("/echo", axum::routing::post(|b: axum::body::Bytes| async move { b.len().to_string() }))
            .layer(axum::middleware::map_request(|r: axum::extract::Request| async move { super::stall_limited(r) }));
        let start = tokio::time::Instant::now();
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        let head = Some(super::HEAD_TIMEOUT);
        tokio::spawn(super::connection(server, app.clone(), tokio_util::sync::CancellationToken::new(), head));
        client.write_all(b"POST /echo HTTP/1.1\r\nhost: x\r\n").await.expect("write");
        let mut all = Vec::new();
        client.read_to_end(&mut all).await.expect("closed");
        assert!(start.elapsed() >= super::HEAD_TIMEOUT, "closed after {:?}", start.elapsed());

        let start = tokio::time::Instant::now();
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        tokio::spawn(super::connection(server, app.clone(), tokio_util::sync::CancellationToken::new(), head));
        client.write_all(b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 5242880\r\n\r\nab").await.expect("write");
        let mut head = [0u8; 12];
        client.read_exact(&mut head).await.expect("an answer");
        assert_eq!(&head, b"HTTP/1.1 400", "the body could not be read");

        let waited = start.elapsed();
        assert!(waited >= super::BODY_STALL && waited < super::BODY_STALL * 2, "answered after {waited:?}");

        // On the socket, a connection may idle as long as its client likes.
        let (mut client, server) = tokio::io::duplex(64 * 1024);
        tokio::spawn(super::connection(server, app, tokio_util::sync::CancellationToken::new(), None));
        tokio::time::advance(10 * super::HEAD_TIMEOUT).await;
        client.write_all(b"POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nab").await.expect("write");
        let mut head = [0u8; 12];
        client.read_exact(&mut head).await.expect("an answer");
        assert_eq!(&head, b"HTTP/1.1 200", "still open");
    }
}
