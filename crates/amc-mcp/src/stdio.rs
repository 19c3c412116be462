//! The host's stdin and stdout as `amc mcp` speaks on them: an rmcp [`Transport`] of our
//! own, so rmcp is handed typed messages and nothing reads a line twice.
//!
//! - Lines are read once, by a bounded codec (`LinesCodec`, at most [`MAX_LINE`] bytes: a
//!   longer one is skipped to its end), and parsed once, into rmcp's own message type.
//! - What rmcp would drop without a word (not JSON, nested too deep, too long) or answer
//!   without its id gets a JSON-RPC error with AMC's envelope here, as the HTTP endpoint
//!   answers it, with the request's id whenever it has one JSON-RPC allows: a host waiting
//!   on it is never left waiting. Only a line that fails rmcp's reading is read again, as
//!   plain JSON, to find that id.
//! - Notifications and responses are never answered, however wrong (JSON-RPC answers
//!   neither), and before the session has begun they are let go: rmcp ends a session whose
//!   first message is not a request, and a host may well say `notifications/initialized`
//!   or cancel something first.
//! - Everything written to the host goes out a whole line at a time, in the order it was
//!   queued, by one writer task: answers and refusals never mix. rmcp races `receive`
//!   against its other work and drops it when that wins, so `receive` never waits once it
//!   has taken a line: a refusal is queued at once, and the line's answer is never lost.

use tokio::sync::{mpsc, oneshot};

use futures_util::StreamExt;
use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcMessage, ProtocolVersion, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::bytes::BytesMut;
use tokio_util::codec::{Decoder, FramedRead, LinesCodec, LinesCodecError};

use amc_core::{Error, ErrorCode};

use crate::MAX_MCP_REQUEST_BYTES;
use crate::jsonrpc::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, check_message, check_params, error};

/// The longest line read whole, to answer it with its id; a longer one is skipped to its
/// end and answered with a null id. rmcp's own limit.
const MAX_LINE: usize = 16 << 20;

/// `LinesCodec` at most [`MAX_LINE`] bytes a line, whose refusals of a line (too long, not
/// UTF-8) are lines of their own: a codec's error would stop the reading until the host
/// writes more, while the lines after it already wait in the buffer.
struct HostLines(LinesCodec);

/// A line of the host's, or why it cannot be read.
type HostLine = Result<String, LinesCodecError>;

impl HostLines {
    fn taken(read: Result<Option<String>, LinesCodecError>) -> std::io::Result<Option<HostLine>> {
        match read {
            Ok(line) => Ok(line.map(Ok)),
            Err(LinesCodecError::Io(e)) if e.kind() != std::io::ErrorKind::InvalidData => Err(e),
            Err(refused) => Ok(Some(Err(refused))),
        }
    }
}

impl Decoder for HostLines {
    type Item = HostLine;
    type Error = std::io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<HostLine>> {
        Self::taken(self.0.decode(buf))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> std::io::Result<Option<HostLine>> {
        Self::taken(self.0.decode_eof(buf))
    }
}

/// The host's stdio as rmcp's transport.
pub(crate) struct HostStdio<R> {
    lines: FramedRead<R, HostLines>,
    /// The writer task's queue: whole lines, each with where to say it was written.
    out: mpsc::UnboundedSender<Out>,
    /// Whether the session has begun (AMC was asked to `initialize`, or a first request
    /// carried the metadata of a lifecycle without it, or AMC answered one): until then
    /// notifications and responses are let go.
    begun: bool,
}

/// What the writer task is given.
enum Out {
    /// A whole line, and whom to tell once it is written (refusals tell no one).
    Line(Vec<u8>, Option<oneshot::Sender<std::io::Result<()>>>),
    /// Flush, shut the host's stdout, and end.
    Close(oneshot::Sender<std::io::Result<()>>),
}

impl<R: AsyncRead + Send + Unpin> HostStdio<R> {
    /// The transport on `host_in` and `host_out`; the writer task starts on the runtime.
    pub(crate) fn new<W: AsyncWrite + Send + Unpin + 'static>(host_in: R, host_out: W) -> Self {
        let (out, queued) = mpsc::unbounded_channel();
        tokio::spawn(write_lines(host_out, queued));
        Self {
            lines: FramedRead::new(host_in, HostLines(LinesCodec::new_with_max_length(MAX_LINE))),
            out,
            begun: false,
        }
    }

    /// Queues `line` for the host, without waiting.
    fn queue(&self, line: Vec<u8>) -> bool {
        self.out.send(Out::Line(line, None)).is_ok()
    }
}

/// Writes each queued line whole, in order, until told to close or the queue ends. After a
/// failed write nothing more is written, and each line says so.
async fn write_lines<W: AsyncWrite + Unpin>(mut host: W, mut queued: mpsc::UnboundedReceiver<Out>) {
    let mut broken = false;
    while let Some(out) = queued.recv().await {
        match out {
            Out::Line(line, done) => {
                let written = if broken {
                    Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the host's stdout is closed"))
                } else {
                    async { host.write_all(&line).await.and(host.flush().await) }.await
                };
                broken |= written.is_err();
                if let Some(done) = done {
                    let _ = done.send(written);
                }
            }
            Out::Close(done) => {
                let _ = done.send(host.shutdown().await);
                return;
            }
        }
    }
    let _ = host.shutdown().await;
}

fn line_of(v: &impl serde::Serialize) -> std::io::Result<Vec<u8>> {
    let mut out = serde_json::to_vec(v)?;
    out.push(b'\n');
    Ok(out)
}

/// Whether handing `request` to rmcp begins the session: an `initialize` (answered, or the
/// session ends), or a request with the metadata of the lifecycle without one (rmcp then
/// serves it in a session). A ping or a discovery begins nothing.
fn begins_the_session(request: &ClientRequest) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.protocol_version().is_some() && meta.missing_required_keys(&ProtocolVersion::V_2026_07_28).is_empty()
        }
    }
}

impl<R> Transport<RoleServer> for HostStdio<R>
where
    R: AsyncRead + Send + Unpin,
{
    type Error = std::io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // An answer to something other than a ping or a discovery means the session began.
        if let JsonRpcMessage::Response(r) = &item
            && !matches!(r.result, ServerResult::EmptyResult(_) | ServerResult::DiscoverResult(_))
        {
            self.begun = true;
        }
        let (done, written) = oneshot::channel();
        let queued = line_of(&item).map(|line| self.out.send(Out::Line(line, Some(done))).is_ok());
        async move {
            match queued? {
                true => written.await.unwrap_or_else(|_| Err(std::io::ErrorKind::BrokenPipe.into())),
                false => Err(std::io::ErrorKind::BrokenPipe.into()),
            }
        }
    }

    /// Cancel-safe: between taking a line and handling it nothing waits.
    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let verdict = match self.lines.next().await?.ok()? {
                Ok(line) => judge(&line),
                // The codec skips the rest of the line.
                Err(LinesCodecError::MaxLineLengthExceeded) => Verdict::Refuse(too_large(Value::Null)),
                // Not UTF-8: not JSON either (RFC 8259 §8.1).
                Err(LinesCodecError::Io(_)) => {
                    Verdict::Refuse(error(Value::Null, PARSE_ERROR, &Error::validation("the line is not UTF-8 JSON")))
                }
            };
            match verdict {
                Verdict::Take(message) => {
                    match &*message {
                        JsonRpcMessage::Request(r) if begins_the_session(&r.request) => self.begun = true,
                        JsonRpcMessage::Request(_) => {}
                        _ if !self.begun => continue,
                        _ => {}
                    }
                    return Some(*message);
                }
                Verdict::Refuse(refusal) => {
                    let queued = line_of(&refusal).is_ok_and(|line| self.queue(line));
                    if !queued {
                        return None;
                    }
                }
                Verdict::Skip => {}
            }
        }
    }

    /// Writes what is queued, then shuts the host's stdout: what is sent after fails.
    async fn close(&mut self) -> Result<(), Self::Error> {
        let (done, closed) = oneshot::channel();
        if self.out.send(Out::Close(done)).is_err() {
            return Ok(());
        }
        closed.await.unwrap_or(Ok(()))
    }
}

/// What becomes of one line of the host's.
enum Verdict {
    /// rmcp's message, for it to handle.
    Take(Box<ClientJsonRpcMessage>),
    /// This error goes back to the host.
    Refuse(Value),
    /// Nothing: a blank line, or a notification or response, which nothing answers.
    Skip,
}

/// The verdict on one line, without its line ending.
fn judge(line: &str) -> Verdict {
    let line = line.strip_suffix('\r').unwrap_or(line);
    // RFC 8259 lets a parser ignore a byte order mark, and rmcp does.
    let text = line.strip_prefix('\u{FEFF}').unwrap_or(line);
    if text.trim().is_empty() {
        return Verdict::Skip;
    }
    match serde_json::from_str::<ClientJsonRpcMessage>(text) {
        Ok(message) => judge_message(message, text.len()),
        Err(e) => judge_unreadable(text, &e),
    }
}

/// The checks rmcp's types leave to AMC: the size of a request, and the params of a
/// request rmcp took as a custom one.
fn judge_message(message: ClientJsonRpcMessage, len: usize) -> Verdict {
    let JsonRpcMessage::Request(request) = &message else {
        // A notification or a response AMC takes whatever its size: nothing answers it.
        return Verdict::Take(Box::new(message));
    };
    let id = serde_json::to_value(&request.id).unwrap_or_default();
    if len > MAX_MCP_REQUEST_BYTES {
        return Verdict::Refuse(too_large(id));
    }
    if let ClientRequest::CustomRequest(custom) = &request.request {
        // rmcp takes as custom both a method it does not know and one whose params it reads
        // itself but could not (and would answer that no such method exists): the params
        // are checked as the HTTP endpoint checks them.
        let shape = serde_json::json!({ "method": custom.method, "params": custom.params });
        let why = match check_params(&shape) {
            Err(why) => Some(why),
            Ok(()) if matches!(custom.method.as_str(), "tools/call" | "initialize") => {
                Some("params that are not the method's")
            }
            Ok(()) => None,
        };
        if let Some(why) = why {
            return Verdict::Refuse(error(id, INVALID_PARAMS, &Error::validation(why)));
        }
    }
    Verdict::Take(Box::new(message))
}

/// A line rmcp could not read: read again as plain JSON to answer it with its id, or not at
/// all when it is a notification or a response.
fn judge_unreadable(text: &str, rmcp_said: &serde_json::Error) -> Verdict {
    let Ok(message) = serde_json::from_str::<Value>(text) else {
        let why = Error::validation(format!("the line is not JSON: {rmcp_said}"));
        return Verdict::Refuse(error(Value::Null, PARSE_ERROR, &why));
    };
    let Some(obj) = message.as_object() else {
        let why = Error::validation("a JSON-RPC message must be an object (batches are not taken)");
        return Verdict::Refuse(error(Value::Null, INVALID_REQUEST, &why));
    };
    let has_method = obj.contains_key("method");
    // A response to the bridge, however wrong, is never answered: the host would take the
    // answer for one to a request of its own. Nor is a notification.
    if (!has_method && (obj.contains_key("result") || obj.contains_key("error")))
        || (has_method && !obj.contains_key("id"))
    {
        return Verdict::Skip;
    }
    // The request's id, when it is one JSON-RPC and rmcp allow; otherwise null. Then the
    // checks the HTTP endpoint makes, and what rmcp said when they all pass (a key twice).
    let id = obj.get("id").filter(|id| id.is_string() || id.is_i64()).cloned().unwrap_or(Value::Null);
    let (code, why) = if let Err(why) = check_message(&message) {
        (INVALID_REQUEST, why.to_owned())
    } else if id.is_null() {
        (INVALID_REQUEST, "\"id\" must be a string or an integer below 2^63".to_owned())
    } else if let Err(why) = check_params(&message) {
        (INVALID_PARAMS, why.to_owned())
    } else {
        (INVALID_PARAMS, format!("not a message AMC can read: {rmcp_said}"))
    };
    Verdict::Refuse(error(id, code, &Error::validation(why)))
}

fn too_large(id: Value) -> Value {
    let e = Error::new(ErrorCode::PayloadTooLarge, format!("a message over {MAX_MCP_REQUEST_BYTES} bytes"));
    error(id, INVALID_REQUEST, &e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(line: &str) -> Value {
        match judge(line) {
            Verdict::Refuse(e) => e,
            Verdict::Take(m) => panic!("{line} taken as {m:?}"),
            Verdict::Skip => panic!("{line} skipped"),
        }
    }

    fn skipped(line: &str) -> bool {
        matches!(judge(line), Verdict::Skip)
    }

    #[test]
    fn each_wrong_request_gets_its_error_and_its_id_when_it_has_one() {
        for (line, code, id) in [
            ("{bad json", PARSE_ERROR, Value::Null),
            ("\u{FEFF}{", PARSE_ERROR, Value::Null),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, INVALID_REQUEST, Value::Null),
            (r#""str""#, INVALID_REQUEST, Value::Null),
            (r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#, INVALID_REQUEST, 7.into()),
            (r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}"#, INVALID_PARAMS, "a".into()),
            (r#"{"jsonrpc":"2.0","id":5,"method":5}"#, INVALID_REQUEST, 5.into()),
            (r#"{"jsonrpc":"2.0","id":6,"method":["tools/list"]}"#, INVALID_REQUEST, 6.into()),
            (r#"{"jsonrpc":"2.0","id":8,"method":"tools/list","params":[1]}"#, INVALID_PARAMS, 8.into()),
            (r#"{"jsonrpc":"2.0","id":9,"method":"amc/custom","params":[1]}"#, INVALID_PARAMS, 9.into()),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, INVALID_REQUEST, Value::Null),
            (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, INVALID_REQUEST, Value::Null),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, INVALID_REQUEST, Value::Null),
            (r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#, INVALID_REQUEST, Value::Null),
            (r#"{"jsonrpc":"2.0","id":1}"#, INVALID_REQUEST, 1.into()),
        ] {
            let e = refusal(line);
            assert_eq!((e["error"]["code"].as_i64(), &e["id"]), (Some(code), &id), "{line}: {e}");
            assert!(e["error"]["data"]["error"]["code"].is_string(), "the envelope: {e}");
        }
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        assert_eq!(refusal(&deep)["error"]["code"], PARSE_ERROR);
    }

    #[test]
    fn what_rmcp_could_not_read_is_answered_with_its_id() {
        for line in [
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":5},"clientInfo":{"name":"x","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"list_channels","arguments":{},"_meta":5}}"#,
            r#"{"jsonrpc":"2.0","id":0,"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"list_channels","_meta":{},"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{"_meta":{},"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":5}}"#,
        ] {
            let e = refusal(line);
            assert!(e["id"].is_i64() && e["error"]["data"]["error"]["code"].is_string(), "{line}: {e}");
        }
    }

    #[test]
    fn notifications_and_responses_are_never_answered_however_wrong() {
        for line in [
            r#"{"jsonrpc":"2.0","method":"tools/call","params":[]}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":5}}"#,
            r#"{"jsonrpc":"1.0","id":3,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#,
            "",
            "  ",
        ] {
            assert!(skipped(line) || matches!(judge(line), Verdict::Take(_)), "{line} answered");
        }
    }

    #[test]
    fn messages_rmcp_takes_pass_and_responses_to_the_bridge_too() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            "\u{FEFF}{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\r",
        ] {
            assert!(matches!(judge(line), Verdict::Take(_)), "{line}");
        }
    }

    #[test]
    fn a_message_over_the_limit_is_refused_with_its_id() {
        let text = "x".repeat(MAX_MCP_REQUEST_BYTES);
        let line = serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "send_message", "arguments": {"channel_id": "ch", "text": text}}})
        .to_string();
        let e = refusal(&line);
        assert_eq!(
            (e["id"].as_i64(), e["error"]["data"]["error"]["code"].as_str()),
            (Some(9), Some("PAYLOAD_TOO_LARGE"))
        );
    }

    /// What the host reads from a transport fed `input` until it ends, and the messages
    /// rmcp was handed.
    async fn run(input: Vec<u8>, begun: bool) -> (Vec<Value>, Vec<ClientJsonRpcMessage>) {
        let (out, mut host_reads) = tokio::io::duplex(1 << 16);
        let mut t = HostStdio::new(input.as_slice(), out);
        t.begun = begun;
        let mut handed = Vec::new();
        while let Some(m) = t.receive().await {
            handed.push(m);
        }
        t.close().await.expect("close");
        let mut written = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut host_reads, &mut written).await.expect("read");
        let lines = written.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
        (lines, handed)
    }

    #[tokio::test]
    async fn a_line_past_the_longest_read_is_refused_and_the_next_is_read() {
        let input =
            [vec![b'x'; MAX_LINE + 10], b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n".to_vec()].concat();
        let (written, handed) = run(input, true).await;
        assert_eq!(written.len(), 1);
        assert!(written[0]["id"].is_null());
        assert_eq!(written[0]["error"]["data"]["error"]["code"], "PAYLOAD_TOO_LARGE");
        assert_eq!(handed.len(), 1, "the next line is read");
    }

    #[tokio::test]
    async fn before_the_session_notifications_and_responses_are_let_go() {
        let input = [
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.as_slice(),
            b"\n",
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            b"\n",
            br#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            b"\n\xff\xfe\n",
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            b"\n",
        ]
        .concat();
        let (written, handed) = run(input.clone(), false).await;
        assert_eq!(handed.len(), 1, "only the request: {handed:?}");
        assert!(matches!(handed[0], JsonRpcMessage::Request(_)));
        assert_eq!(written.len(), 1, "only the line that is not UTF-8 is answered: {written:?}");
        assert_eq!((written[0]["id"].is_null(), written[0]["error"]["code"].as_i64()), (true, Some(PARSE_ERROR)));
        let (_, handed) = run(input, true).await;
        assert_eq!(handed.len(), 4, "once begun, each goes to rmcp");
    }

    /// rmcp drops `receive` whenever its other work wins a race: so `receive` never waits
    /// on the host's stdout. With nobody reading the host's side, refusals queue while the
    /// next request still reaches rmcp, and once the host reads, every refusal is there,
    /// whole and in order.
    #[tokio::test]
    async fn receiving_never_waits_on_the_hosts_stdout() {
        let bad: String = (0..10).map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":{i}}}\n")).collect();
        let input = format!("{bad}{{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"ping\"}}\n");
        let (out, mut host_reads) = tokio::io::duplex(64);
        let mut t = HostStdio::new(input.as_bytes(), out);
        let handed = tokio::time::timeout(std::time::Duration::from_secs(30), t.receive())
            .await
            .expect("receive never waits on the host's stdout");
        assert!(matches!(handed, Some(JsonRpcMessage::Request(_))), "{handed:?}");
        let (reading, closing) = tokio::join!(
            async {
                let mut written = String::new();
                tokio::io::AsyncReadExt::read_to_string(&mut host_reads, &mut written).await.expect("read");
                written
            },
            async {
                assert!(t.receive().await.is_none(), "the input ended");
                t.close().await
            }
        );
        closing.expect("closed");
        let ids: Vec<i64> = reading
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a whole JSON line")["id"].as_i64().expect("an id"))
            .collect();
        assert_eq!(ids, (0..10).collect::<Vec<_>>());
    }
}
