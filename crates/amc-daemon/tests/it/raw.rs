//! HTTP/1.1 by hand over the socket or loopback TCP, for what a client library will not
//! send: targets over 64 KiB, malformed lines, too many headers.

use serde_json::Value;
use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, ReadHalf,
};

use super::harness::Daemon;

pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for S {}

/// A new raw connection: over loopback TCP when `tcp`, else over the socket.
pub async fn open(d: &Daemon, tcp: bool) -> Box<dyn Stream> {
    if tcp {
        Box::new(tokio::net::TcpStream::connect(d.tcp_addr.expect("tcp")).await.expect("connect"))
    } else {
        Box::new(tokio::net::UnixStream::connect(d.socket()).await.expect("connect"))
    }
}

/// A response read off a raw connection.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then_some(v.trim())
        })
    }

    /// What is wrong with this answer, if anything: a success, or the envelope with the
    /// response's status (the fuzz harness's rule).
    pub fn problem(&self) -> Option<String> {
        if self.status < 400 {
            return None;
        }
        let v: Value = serde_json::from_slice(&self.body).unwrap_or_default();
        let env = &v["error"];
        let ok = env["code"].is_string()
            && env["message"].as_str().is_some_and(|m| !m.is_empty())
            && env["status"].as_u64() == Some(u64::from(self.status))
            && self.header("content-type") == Some("application/json");
        (!ok).then(|| format!("{} without the envelope: {:?}", self.status, String::from_utf8_lossy(&self.body)))
    }

    /// The envelope's code, checked whole: its status is the response's, it is JSON of
    /// the length given, and the connection closes after it.
    pub fn refusal(&self) -> String {
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
pub async fn answer(r: &mut (impl AsyncBufRead + Unpin)) -> Answer {
    try_answer(r).await.unwrap_or_else(|e| panic!("{e}"))
}

/// The next response on `r`, or what stood in the way of reading one.
pub async fn try_answer(r: &mut (impl AsyncBufRead + Unpin)) -> Result<Answer, String> {
    let mut head = String::new();
    while !head.ends_with("\r\n\r\n") {
        match r.read_line(&mut head).await {
            Ok(0) => return Err(format!("the connection closed in a head: {head:?}")),
            Ok(_) => {}
            Err(e) => return Err(format!("{e} in a head: {head:?}")),
        }
    }
    let status = head.get(9..12).and_then(|s| s.parse().ok()).ok_or_else(|| format!("no status line: {head:?}"))?;
    let mut a = Answer { status, head, body: Vec::new() };
    if let Some(n) = a.header("content-length").and_then(|n| n.parse().ok()) {
        a.body = vec![0; n];
        r.read_exact(&mut a.body).await.map_err(|e| format!("{e} in a body of {n} bytes"))?;
    } else if a.header("transfer-encoding") == Some("chunked") {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).await.map_err(|e| format!("{e} in a chunk size"))?;
            let size = usize::from_str_radix(size.trim_end(), 16).map_err(|_| format!("a chunk size: {size:?}"))?;
            let mut chunk = vec![0; size + 2];
            r.read_exact(&mut chunk).await.map_err(|e| format!("{e} in a chunk"))?;
            if size == 0 {
                break;
            }
            a.body.extend_from_slice(&chunk[..size]);
        }
    }
    Ok(a)
}

/// Sends `request` on `stream` while reading the response (a head too large is refused
/// before the client is done sending it), within `within`; gives back the rest to read.
pub async fn exchange(
    stream: Box<dyn Stream>,
    request: Vec<u8>,
    within: std::time::Duration,
) -> (Result<Answer, String>, BufReader<ReadHalf<Box<dyn Stream>>>) {
    let (read, mut write) = tokio::io::split(stream);
    // The write half stays open until the answer is read: a client that closes it may see
    // its request dropped.
    let sending = tokio::spawn(async move {
        let _ = write.write_all(&request).await;
        write
    });
    let mut read = BufReader::new(read);
    let a = tokio::time::timeout(within, try_answer(&mut read))
        .await
        .unwrap_or_else(|_| Err(format!("no answer in {within:?}")));
    drop(sending.await);
    (a, read)
}
