//! Request heads the HTTP parser refuses before any route sees them: a target over 64 KiB,
//! too many header lines, a head over its buffer, a malformed line, name or version. Each
//! is answered with the envelope, on the socket and on loopback TCP, and what a kept-alive
//! connection carried before is untouched.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

use super::harness::{Daemon, attachment, msg};
use amc_core::model::Source;
use amc_core::time::now_ms;

trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for S {}

/// A new raw connection: over loopback TCP when `tcp`, else over the socket.
async fn open(d: &Daemon, tcp: bool) -> Box<dyn Stream> {
    if tcp {
        Box::new(tokio::net::TcpStream::connect(d.tcp_addr.expect("tcp")).await.expect("connect"))
    } else {
        Box::new(tokio::net::UnixStream::connect(d.socket()).await.expect("connect"))
    }
}

/// A response read off a raw connection.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then_some(v.trim())
        })
    }

    /// The envelope's code, checked whole: its status is the response's, it is JSON of
    /// the length given, and the connection closes after it.
    fn refusal(&self) -> String {
        assert_eq!(self.header("content-type"), Some("application/json"), "{}", self.head);
        assert_eq!(self.header("content-length"), Some(self.body.len().to_string().as_str()), "{}", self.head);
        assert_eq!(self.header("connection"), Some("close"), "{}", self.head);
        let v: Value = serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{e}: not JSON: {:?}", String::from_utf8_lossy(&self.body)));
        assert_eq!(v["error"]["status"].as_u64(), Some(u64::from(self.status)), "{v}");
        assert!(v["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
        v["error"]["code"].as_str().unwrap_or_else(|| panic!("not an envelope: {v}")).to_owned()
    }
}

/// The next response on `r`, its body by `content-length` or chunked.
async fn answer(r: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> Answer {
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        assert_ne!(r.read_line(&mut head).await.expect("read"), 0, "the connection closed in a head: {head:?}");
    }
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("a status line: {head:?}"));
    let mut a = Answer { status, head, body: Vec::new() };
    if let Some(n) = a.header("content-length").and_then(|n| n.parse().ok()) {
        a.body = vec![0; n];
        r.read_exact(&mut a.body).await.expect("body");
    } else if a.header("transfer-encoding") == Some("chunked") {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).await.expect("chunk size");
            let size = usize::from_str_radix(size.trim_end(), 16).expect("a chunk size");
            let mut chunk = vec![0; size + 2];
            r.read_exact(&mut chunk).await.expect("chunk");
            if size == 0 {
                break;
            }
            a.body.extend_from_slice(&chunk[..size]);
        }
    }
    a
}

/// Sends `request` on a new connection while reading what comes back: a head too large is
/// refused before the client is done sending it.
async fn refused(d: &Daemon, tcp: bool, request: Vec<u8>) -> Answer {
    let (read, mut write) = tokio::io::split(open(d, tcp).await);
    let sending = tokio::spawn(async move {
        let _ = write.write_all(&request).await;
        write
    });
    let mut read = BufReader::new(read);
    let a = answer(&mut read).await;
    let mut rest = Vec::new();
    read.read_to_end(&mut rest).await.expect("the connection closes");
    assert!(rest.is_empty(), "nothing after the refusal: {:?}", String::from_utf8_lossy(&rest));
    drop(sending.await);
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_head_the_parser_refuses_gets_the_envelope() {
    let d = Daemon::start_with(|c| c.listen = Some("127.0.0.1:0".parse().expect("addr"))).await;
    let many_lines: String = (0..101).map(|i| format!("x-line-{i}: v\r\n")).collect();
    let cases: [(&str, String, u16, &str); 7] = [
        (
            "a 70 KiB target",
            format!("GET /channels?q={} HTTP/1.1\r\nhost: x\r\n\r\n", "a".repeat(70 * 1024)),
            431,
            "HEADERS_TOO_LARGE",
        ),
        (
            "101 header lines",
            format!("GET /channels HTTP/1.1\r\nhost: x\r\n{many_lines}\r\n"),
            431,
            "HEADERS_TOO_LARGE",
        ),
        (
            "a 1 MiB header",
            format!("GET /channels HTTP/1.1\r\nhost: x\r\nx-pad: {}\r\n\r\n", "z".repeat(1 << 20)),
            431,
            "HEADERS_TOO_LARGE",
        ),
        ("a malformed request line", "G(ET /channels HTTP/1.1\r\nhost: x\r\n\r\n".to_owned(), 400, "BAD_REQUEST"),
        ("a target with a space", "GET /chan nels HTTP/1.1\r\nhost: x\r\n\r\n".to_owned(), 400, "BAD_REQUEST"),
        (
            "a bad header name",
            "GET /channels HTTP/1.1\r\nhost: x\r\nbad name: v\r\n\r\n".to_owned(),
            400,
            "BAD_REQUEST",
        ),
        ("an unknown version", "GET /channels HTTP/9.1\r\nhost: x\r\n\r\n".to_owned(), 400, "BAD_REQUEST"),
    ];
    for tcp in [false, true] {
        for (what, request, status, code) in &cases {
            let a = refused(&d, tcp, request.clone().into_bytes()).await;
            assert_eq!((a.status, a.refusal().as_str()), (*status, *code), "{what} (tcp: {tcp}): {}", a.head);
        }
    }
    // The daemon serves on.
    let r = d.admin().await.get("/healthz").await.expect("get");
    assert_eq!(r.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_connection_is_untouched_until_its_bad_request_gets_the_envelope() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("claude").await;
    // An attachment whose bytes are what the parser answers a bad request with.
    let lookalike = "HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\
                     date: Thu, 03 Dec 2026 23:06:39 GMT\r\n\r\n";
    let file = d.dir.path().join("lookalike.txt");
    std::fs::write(&file, lookalike).expect("write");
    let mut with_file = msg("a-1", "a file", now_ms() - 10);
    with_file.attachments = vec![attachment(file.to_str().expect("utf-8"), "text/plain")];
    let (ch, ids) = d.ingest(Source::Imessage, "a", vec![with_file]).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let mut agent = d.connect_agent(&token, "claude").await;
    let m = agent.get(&format!("/messages/{}", ids[0])).await.expect("get").json();
    let attachment_id = m["attachments"][0]["id"].as_str().unwrap_or_else(|| panic!("an attachment: {m}")).to_owned();
    agent.post("/messages/mark_read", &json!({ "message_ids": ids })).await.expect("read");

    let auth = format!("host: x\r\nauthorization: Bearer {token}\r\nx-agent-id: claude\r\n");
    let mut c = BufReader::new(open(&d, false).await);
    c.get_mut()
        .write_all(format!("GET /attachments/{attachment_id} HTTP/1.1\r\n{auth}\r\n").as_bytes())
        .await
        .expect("write");
    let a = answer(&mut c).await;
    assert_eq!(a.status, 200, "{}", a.head);
    assert_eq!(a.body, lookalike.as_bytes(), "the attachment's bytes as they are");
    // A long-poll on the same connection, ended by a message.
    c.get_mut().write_all(format!("GET /messages/unread/wait HTTP/1.1\r\n{auth}\r\n").as_bytes()).await.expect("write");
    let (_, new) = d.ingest(Source::Imessage, "a", vec![msg("a-2", "new", now_ms())]).await;
    let a = answer(&mut c).await;
    let v: Value = serde_json::from_slice(&a.body).expect("json");
    assert_eq!((a.status, v["messages"][0]["id"].as_str()), (200, Some(new[0].as_str())), "{v}");
    // The attachment again, and a malformed request right behind it.
    c.get_mut()
        .write_all(format!("GET /attachments/{attachment_id} HTTP/1.1\r\n{auth}\r\nGET / HTTP/9.1\r\n\r\n").as_bytes())
        .await
        .expect("write");
    assert_eq!(answer(&mut c).await.body, lookalike.as_bytes());
    let a = answer(&mut c).await;
    assert_eq!((a.status, a.refusal().as_str()), (400, "BAD_REQUEST"), "{}", a.head);
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).await.expect("closed");
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
}
