//! The answer to a request head hyper refuses, given the error envelope.
//!
//! hyper answers a request head it cannot parse before any service sees it: a malformed
//! request line, header or version (`400`), a request target over its fixed 64 KiB (`414`),
//! a head over its read buffer or with more than 100 header lines (`431`). Its answer is a
//! bare head with `content-length: 0`, the last thing written before the connection closes.
//! [`RefusalIo`], around each accepted stream, sends the envelope in its place.
//!
//! Why not raise hyper's limits so that our own header guard answers instead: that covers
//! neither a malformed head nor a target over hyper's fixed limit, and every raise lets a
//! bigger head into memory before the same refusal. hyper's limits stay as they are.
//!
//! Why a response cannot be altered: a write shaped exactly like hyper's refusal is held
//! back, never changed, and only until hyper next reads or writes. After a response it
//! reads the next request (the hold wakes it for that), or, with more requests already in
//! its buffer, writes the next answer. The envelope replaces the held bytes only when the
//! connection ended before that and hyper's own error says it refused a request head of
//! that status ([`Refused::of`]): after its refusal hyper stops reading and writes nothing
//! more, so the held bytes are that refusal. It may flush again, any number of times, so a
//! flush sends nothing held.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use amc_core::ErrorCode;

/// What hyper refused, from the error its connection ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// A request line, header or version it could not parse (its bare `400`).
    Malformed,
    /// A request target or head over its limits (its bare `414` or `431`).
    TooLarge,
}

impl Refused {
    /// What hyper's error says it refused, if it answered a request head itself. An HTTP/2
    /// preface is a parse error that hyper does not answer, so it is not a refusal here.
    pub(crate) fn of(e: &hyper::Error) -> Option<Self> {
        if e.is_parse_too_large() {
            Some(Self::TooLarge)
        } else if e.is_parse() && !e.is_parse_version_h2() && !e.is_parse_status() {
            Some(Self::Malformed)
        } else {
            None
        }
    }

    fn code(self) -> ErrorCode {
        match self {
            Self::Malformed => ErrorCode::BadRequest,
            // A target over hyper's limit is over ours too: the 32 KiB of headers count the
            // target, and our guard answers a shorter one over it with this same code.
            Self::TooLarge => ErrorCode::HeadersTooLarge,
        }
    }

    fn message(self) -> String {
        match self {
            Self::Malformed => {
                "the request is not valid HTTP/1.1: its request line, a header or its version could not be read"
                    .to_owned()
            }
            Self::TooLarge => format!(
                "the request target and headers are over {} bytes, or there are more than 100 header lines",
                crate::guard::MAX_HEADER_BYTES
            ),
        }
    }
}

/// A stream that sends the envelope in place of hyper's bare refusal of a request head.
pub(crate) struct RefusalIo<S> {
    inner: S,
    hold: Hold,
}

/// A write that may be hyper's refusal, from the moment it is held until it is sent.
enum Hold {
    None,
    /// Not yet sent.
    Held(Vec<u8>),
    /// Going out as it was written, `sent` bytes of it so far.
    Releasing {
        bytes: Vec<u8>,
        sent: usize,
    },
}

impl<S> RefusalIo<S> {
    pub(crate) fn new(inner: S) -> Self {
        Self { inner, hold: Hold::None }
    }
}

impl<S: AsyncWrite + Unpin> RefusalIo<S> {
    /// Sends a held write as it was: hyper has called again, so the write was not its refusal.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if let Hold::Held(head) = &mut self.hold {
            self.hold = Hold::Releasing { bytes: std::mem::take(head), sent: 0 };
        }
        if let Hold::Releasing { bytes, sent } = &mut self.hold {
            while *sent < bytes.len() {
                let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*sent..]))?;
                if n == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                *sent += n;
            }
            self.hold = Hold::None;
        }
        Poll::Ready(Ok(()))
    }

    /// Holds `head`, hyper's refusal or not: hyper's next read or write on this stream sends
    /// it if it was not, and the wake makes sure there is a next poll to make that call.
    fn hold(&mut self, head: &[u8], cx: &Context<'_>) -> Poll<io::Result<usize>> {
        self.hold = Hold::Held(head.to_vec());
        cx.waker().wake_by_ref();
        Poll::Ready(Ok(head.len()))
    }

    /// After the connection: the envelope in place of a held refusal that `refused` confirms,
    /// anything else held as it was; then the stream is closed.
    pub(crate) async fn finish(mut self, refused: Option<Refused>) -> io::Result<()>
    where
        S: AsyncRead,
    {
        let answered = match std::mem::replace(&mut self.hold, Hold::None) {
            Hold::None => false,
            Hold::Releasing { bytes, sent } => {
                self.inner.write_all(&bytes[sent..]).await?;
                false
            }
            Hold::Held(head) => match parse_refusal(&head).filter(|h| Some(h.refused) == refused) {
                Some(bare) => {
                    tracing::debug!(
                        status = bare.refused.code().status(),
                        "refused a request head hyper could not read"
                    );
                    self.inner.write_all(&bare.with_envelope()).await?;
                    true
                }
                None => {
                    self.inner.write_all(&head).await?;
                    false
                }
            },
        };
        self.inner.shutdown().await?;
        if answered {
            self.drain().await;
        }
        Ok(())
    }

    /// Reads what the client still sends after a refusal (the rest of a head too large, say),
    /// within bounds: closing on unread bytes makes TCP reset the connection, and a client
    /// can then lose the envelope before reading it.
    async fn drain(&mut self)
    where
        S: AsyncRead,
    {
        const AT_MOST: usize = 4 * 1024 * 1024;
        const FOR_AT_MOST: Duration = Duration::from_secs(2);
        let mut buf = [0u8; 8192];
        let mut read = 0;
        let _ = tokio::time::timeout(FOR_AT_MOST, async {
            while read < AT_MOST {
                match self.inner.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => read += n,
                }
            }
        })
        .await;
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RefusalIo<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !matches!(this.hold, Hold::None) {
            // A release that must wait for the socket goes on at the next call; the read
            // need not wait for it.
            if let Poll::Ready(Err(e)) = this.poll_release(cx) {
                return Poll::Ready(Err(e));
            }
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for RefusalIo<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_release(cx))?;
        match refusal_start(buf) {
            None => Pin::new(&mut this.inner).poll_write(cx, buf),
            Some(0) => this.hold(buf, cx),
            // What comes before first; hyper then writes the rest again, on its own.
            Some(start) => Pin::new(&mut this.inner).poll_write(cx, &buf[..start]),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_release(cx))?;
        // hyper writes a head from one buffer of its own, so only the last slice can end
        // with its refusal.
        let Some(last) = bufs.iter().rposition(|b| !b.is_empty()) else {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        };
        let before = &bufs[..last];
        match refusal_start(&bufs[last]) {
            None => Pin::new(&mut this.inner).poll_write_vectored(cx, bufs),
            // The slices before the refusal first; hyper then writes it again, on its own.
            Some(_) if before.iter().any(|b| !b.is_empty()) => {
                Pin::new(&mut this.inner).poll_write_vectored(cx, before)
            }
            Some(0) => this.hold(&bufs[last], cx),
            Some(start) => Pin::new(&mut this.inner).poll_write(cx, &bufs[last][..start]),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        // A release under way goes on; a hold does not end here (see the module's notes).
        if let Hold::Releasing { .. } = this.hold {
            ready!(this.poll_release(cx))?;
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_release(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// The longest bare refusal hyper writes (a 431 with `connection: keep-alive`).
const LONGEST_REFUSAL: usize = 160;

/// Where a bare refusal starts if one ends `buf`: at most one can, since a refusal is read
/// from its status line to the end.
fn refusal_start(buf: &[u8]) -> Option<usize> {
    if !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    let from = buf.len().saturating_sub(LONGEST_REFUSAL);
    (from..buf.len()).find(|&i| buf[i..].starts_with(b"HTTP/1.") && parse_refusal(&buf[i..]).is_some())
}

/// hyper's bare refusal, read back.
#[derive(Debug, PartialEq, Eq)]
struct BareRefusal<'a> {
    /// `HTTP/1.1` or `HTTP/1.0`, as hyper answered.
    version: &'a [u8],
    refused: Refused,
    /// hyper's `date` line, kept for the envelope's answer.
    date: Option<&'a [u8]>,
}

/// `head` if it is exactly a head hyper writes for a refused request: a status line of
/// 400, 414 or 431, then `content-length: 0`, and only `connection` and `date` besides.
/// Every error of ours carries a body, so none of our responses has this form.
fn parse_refusal(head: &[u8]) -> Option<BareRefusal<'_>> {
    let (version, rest) = head.split_at_checked(8)?;
    if version != b"HTTP/1.1" && version != b"HTTP/1.0" {
        return None;
    }
    let (refused, mut rest) = [
        (Refused::Malformed, &b" 400 Bad Request\r\n"[..]),
        (Refused::TooLarge, b" 414 URI Too Long\r\n"),
        (Refused::TooLarge, b" 431 Request Header Fields Too Large\r\n"),
    ]
    .into_iter()
    .find_map(|(refused, line)| rest.strip_prefix(line).map(|rest| (refused, rest)))?;
    let (mut empty_body, mut date) = (false, None);
    while rest != b"\r\n" {
        let end = rest.windows(2).position(|w| w == b"\r\n")?;
        let line = &rest[..end];
        match line {
            b"content-length: 0" => empty_body = true,
            b"connection: close" | b"connection: keep-alive" => {}
            // An HTTP date is always 29 characters.
            _ if line.len() == 35 && line.starts_with(b"date: ") => date = Some(line),
            _ => return None,
        }
        rest = &rest[end + 2..];
    }
    empty_body.then_some(BareRefusal { version, refused, date })
}

impl BareRefusal<'_> {
    /// The whole answer: hyper's status as the envelope's code says it, the envelope, and
    /// `connection: close`, since hyper closes the connection after its refusal.
    fn with_envelope(&self) -> Vec<u8> {
        let error = amc_core::Error::new(self.refused.code(), self.refused.message());
        let body = serde_json::to_vec(&error.envelope()).unwrap_or_default();
        let status = error.code.status();
        let reason = http::StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
        let mut out = Vec::with_capacity(160 + body.len());
        out.extend_from_slice(self.version);
        out.extend_from_slice(
            format!(
                " {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            )
            .as_bytes(),
        );
        if let Some(date) = self.date {
            out.extend_from_slice(date);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&body);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &str = "date: Thu, 03 Dec 2026 23:06:39 GMT";

    /// Each form hyper writes is read back; anything else, however close, is not.
    #[test]
    fn only_hyper_s_bare_refusals_are_read_as_refusals() {
        let refusals = [
            (
                format!("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n{DATE}\r\n\r\n"),
                Refused::Malformed,
            ),
            (format!("HTTP/1.0 400 Bad Request\r\ncontent-length: 0\r\n{DATE}\r\n\r\n"), Refused::Malformed),
            (
                format!("HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\n{DATE}\r\n\r\n"),
                Refused::TooLarge,
            ),
            (
                format!(
                    "HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: keep-alive\r\ncontent-length: 0\r\n{DATE}\r\n\r\n"
                ),
                Refused::TooLarge,
            ),
            ("HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n".to_owned(), Refused::TooLarge),
        ];
        for (head, refused) in &refusals {
            assert!(head.len() <= LONGEST_REFUSAL, "{head:?}");
            assert_eq!(parse_refusal(head.as_bytes()).map(|b| b.refused), Some(*refused), "{head:?}");
            assert_eq!(refusal_start(head.as_bytes()), Some(0), "{head:?}");
            let after = format!("some body bytes{head}");
            assert_eq!(refusal_start(after.as_bytes()), Some("some body bytes".len()), "{head:?}");
        }
        for head in [
            format!("HTTP/1.1 400 Bad Request\r\nconnection: close\r\n{DATE}\r\n\r\n"),
            format!("HTTP/1.1 400 Bad Request\r\ncontent-length: 1\r\n{DATE}\r\n\r\nx"),
            format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n{DATE}\r\n\r\n"
            ),
            format!("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n{DATE}\r\n\r\n"),
            format!("HTTP/2.0 400 Bad Request\r\ncontent-length: 0\r\n{DATE}\r\n\r\n"),
            format!("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n{DATE}\r\n\r\n\r\n"),
            format!("HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n{DATE}\r\n"),
            "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: soon\r\n\r\n".to_owned(),
        ] {
            assert_eq!(parse_refusal(head.as_bytes()), None, "{head:?}");
            assert_eq!(refusal_start(head.as_bytes()), None, "{head:?}");
        }
    }

    /// The envelope's answer keeps hyper's version and date and says how long its body is.
    #[test]
    fn a_refusal_is_answered_with_the_envelope() {
        let head = format!("HTTP/1.0 414 URI Too Long\r\ncontent-length: 0\r\n{DATE}\r\n\r\n");
        let answer = parse_refusal(head.as_bytes()).expect("a refusal").with_envelope();
        let text = String::from_utf8(answer).expect("utf-8");
        let (head, body) = text.split_once("\r\n\r\n").expect("a head");
        assert!(head.starts_with("HTTP/1.0 431 Request Header Fields Too Large\r\n"), "{head}");
        assert!(head.contains("\r\ncontent-type: application/json\r\n"), "{head}");
        assert!(head.contains(&format!("\r\ncontent-length: {}\r\n", body.len())), "{head}");
        assert!(head.contains("\r\nconnection: close\r\n") && head.ends_with(DATE), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(
            (v["error"]["code"].as_str(), v["error"]["status"].as_u64()),
            (Some("HEADERS_TOO_LARGE"), Some(431))
        );
    }

    /// hyper itself, without AMC around it, refuses each bad head with bytes this module
    /// reads as its refusal, and ends with the error [`Refused::of`] reads. hyper is pinned
    /// (`=` in the root Cargo.toml) because this module depends on those bytes: an upgrade
    /// that changes them fails here first.
    #[tokio::test]
    async fn hyper_refuses_bad_heads_with_the_bytes_this_module_reads() {
        let many_lines: String = (0..101).map(|i| format!("x-{i}: v\r\n")).collect();
        for (request, want) in [
            ("GET / HTTP/1.1\r\nbad header\r\n\r\n".to_owned(), Refused::Malformed),
            ("GET / HTTP/9.9\r\n\r\n".to_owned(), Refused::Malformed),
            (format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(70 * 1024)), Refused::TooLarge),
            (format!("GET / HTTP/1.1\r\n{many_lines}\r\n"), Refused::TooLarge),
        ] {
            let (mut client, server) = tokio::io::duplex(1 << 20);
            let service = hyper::service::service_fn(|_req| async {
                Ok::<_, std::convert::Infallible>(hyper::Response::new(String::new()))
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(server), service);
            client.write_all(request.as_bytes()).await.expect("write");
            let ended = conn.await.expect_err("hyper refuses the head");
            let mut written = Vec::new();
            client.read_to_end(&mut written).await.expect("read");
            let bare = parse_refusal(&written);
            assert_eq!(bare.map(|b| b.refused), Some(want), "{:?}", String::from_utf8_lossy(&written));
            assert_eq!(Refused::of(&ended), Some(want), "{ended:?}");
        }
    }
}
