//! The host's stdin and stdout as `amc mcp` speaks on them. Every line the host writes is
//! read whole and checked ([`crate::jsonrpc`]) before rmcp sees it: a line rmcp would drop
//! without a word (not JSON, nested too deep, too long) or answer without its id (JSON that
//! is no JSON-RPC message) gets a JSON-RPC error with AMC's envelope, as the HTTP endpoint
//! answers it, and a host waiting on it is not left waiting. What the bridge writes goes
//! out a whole line at a time, so its answers and those errors never mix.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use amc_core::{Error, ErrorCode};

use crate::MAX_MCP_REQUEST_BYTES;
use crate::jsonrpc::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, check_message, check_params, error};

/// The longest line read whole, to answer it with its id; a longer one is skipped to its
/// end and answered with a null id. rmcp's own limit.
const MAX_LINE: usize = 16 << 20;

/// How much each side buffers between the host and rmcp.
const PIPE: usize = 64 << 10;

/// rmcp's side of the host's stdio (what it reads, what it writes), and the task that
/// writes to the host, which ends once rmcp has closed its side and all is written.
pub(crate) fn guarded<R, W>(host_in: R, host_out: W) -> ((DuplexStream, DuplexStream), JoinHandle<()>)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (rmcp_in, feed) = tokio::io::duplex(PIPE);
    let (rmcp_out, drain) = tokio::io::duplex(PIPE);
    let (refusals, refused) = mpsc::channel(16);
    tokio::spawn(inbound(host_in, feed, refusals));
    ((rmcp_in, rmcp_out), tokio::spawn(outbound(drain, host_out, refused)))
}

/// Passes each line of the host's that rmcp can take on to it, and each refusal to
/// [`outbound`]. Ends when the host closes its stdin, which rmcp then sees.
async fn inbound<R: AsyncRead + Unpin>(host: R, mut feed: DuplexStream, refusals: mpsc::Sender<Value>) {
    let mut host = BufReader::new(host);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = match read_line(&mut host, &mut line).await {
            Ok(Some(read)) => read,
            Ok(None) | Err(_) => return,
        };
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        let verdict = match read {
            Line::Whole if text.iter().all(u8::is_ascii_whitespace) => continue,
            Line::Whole => judge(text),
            Line::Cut => Err(Some(too_large(Value::Null))),
        };
        let sent = match verdict {
            Ok(()) => feed.write_all(text).await.is_ok() && feed.write_all(b"\n").await.is_ok(),
            Err(Some(refusal)) => refusals.send(refusal).await.is_ok(),
            Err(None) => true,
        };
        if !sent {
            return;
        }
    }
}

/// How a line was read.
enum Line {
    /// All of it, in the buffer.
    Whole,
    /// Past [`MAX_LINE`]: skipped to its end, the buffer empty.
    Cut,
}

/// Reads one line into `buf` (`None` at the end of the input), never holding more than
/// [`MAX_LINE`] bytes of it.
async fn read_line<R: AsyncRead + Unpin>(host: &mut BufReader<R>, buf: &mut Vec<u8>) -> std::io::Result<Option<Line>> {
    let mut cut = false;
    loop {
        let available = host.fill_buf().await?;
        if available.is_empty() {
            // A last line without its newline is a line too.
            return Ok((cut || !buf.is_empty()).then_some(if cut { Line::Cut } else { Line::Whole }));
        }
        let newline = available.iter().position(|b| *b == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        if !cut && buf.len() + take > MAX_LINE {
            cut = true;
            buf.clear();
        }
        if !cut {
            buf.extend_from_slice(&available[..take]);
        }
        host.consume(take);
        if newline.is_some() {
            return Ok(Some(if cut { Line::Cut } else { Line::Whole }));
        }
    }
}

/// Whether rmcp may read the line: `Err` with the error to answer, or with none for a
/// notification (JSON-RPC answers no notification, however wrong).
fn judge(text: &[u8]) -> Result<(), Option<Value>> {
    // RFC 8259 lets a parser ignore a byte order mark, and rmcp does.
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    let message: Value = serde_json::from_slice(text)
        .map_err(|e| Some(error(Value::Null, PARSE_ERROR, &Error::validation(format!("the line is not JSON: {e}")))))?;
    // The id to answer with: a request's own, when it is one JSON-RPC allows. A line with
    // no id at all and a method is a notification, which nothing answers; a response to
    // the bridge (no method) is never answered with its id, which the host would take for
    // one of its own requests.
    let request = message.get("method").is_some_and(Value::is_string);
    let id = message.get("id").filter(|id| request && (id.is_string() || id.is_i64())).cloned();
    let notification = request && message.get("id").is_none();
    let answer = |code: i64, e: Error| match &id {
        Some(id) => Some(error(id.clone(), code, &e)),
        None if notification => None,
        None => Some(error(Value::Null, code, &e)),
    };
    check_message(&message, true).map_err(|why| answer(INVALID_REQUEST, Error::validation(why)))?;
    if text.len() > MAX_MCP_REQUEST_BYTES {
        return Err(answer(INVALID_REQUEST, too_large_error()));
    }
    check_params(&message).map_err(|why| answer(INVALID_PARAMS, Error::validation(why)))?;
    // What rmcp cannot read it answers without the id, or ends the session over (a wrong
    // `initialize`): read it as rmcp would, and answer here instead.
    let unreadable = |e: serde_json::Error| {
        let code = if request { INVALID_PARAMS } else { INVALID_REQUEST };
        answer(code, Error::validation(format!("not a message AMC can read: {e}")))
    };
    // What rmcp's reading refuses: a key of the message given twice, an id it cannot take
    // (null, past 2^63), `_meta` that is not an object. (Its own reading of the whole
    // message tries every kind of request in turn: too slow to repeat on every line.)
    serde_json::from_slice::<Top>(text).map_err(unreadable)?;
    if message.get("id").is_some_and(|_| request && id.is_none()) {
        return Err(answer(INVALID_REQUEST, Error::validation("\"id\" must be a string or an integer below 2^63")));
    }
    let params = message.get("params").cloned().unwrap_or_default();
    if params.get("_meta").is_some_and(|m| !m.is_object()) {
        return Err(unreadable(serde::de::Error::custom("params._meta must be an object")));
    }
    // A request rmcp does not know it takes as a custom one, whatever its params: the two
    // whose params it reads itself are read here as it reads them.
    match message["method"].as_str() {
        Some("initialize") => serde_json::from_value::<rmcp::model::InitializeRequestParams>(params).map(drop),
        Some("tools/call") => serde_json::from_value::<rmcp::model::CallToolRequestParams>(params).map(drop),
        _ => Ok(()),
    }
    .map_err(unreadable)
}

/// A message's own keys, each of which may be given once.
#[derive(serde::Deserialize)]
struct Top {
    #[serde(rename = "jsonrpc")]
    _jsonrpc: serde::de::IgnoredAny,
    #[serde(rename = "id")]
    _id: Option<serde::de::IgnoredAny>,
    #[serde(rename = "method")]
    _method: Option<serde::de::IgnoredAny>,
    #[serde(rename = "params")]
    _params: Option<serde::de::IgnoredAny>,
    #[serde(rename = "result")]
    _result: Option<serde::de::IgnoredAny>,
    #[serde(rename = "error")]
    _error: Option<serde::de::IgnoredAny>,
}

fn too_large_error() -> Error {
    Error::new(ErrorCode::PayloadTooLarge, format!("a message over {MAX_MCP_REQUEST_BYTES} bytes"))
}

fn too_large(id: Value) -> Value {
    error(id, INVALID_REQUEST, &too_large_error())
}

/// `v` as one line of JSON.
fn line_of(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(v).unwrap_or_default();
    out.push(b'\n');
    out
}

/// Writes to the host what rmcp writes, a whole line at a time, and the refusals between
/// them. Ends when rmcp has closed its side (the refusals end before: they come from the
/// host's input, which ended first).
async fn outbound<W: AsyncWrite + Unpin>(drain: DuplexStream, mut host: W, mut refused: mpsc::Receiver<Value>) {
    let mut from_rmcp = BufReader::new(drain);
    let mut line = Vec::new();
    let mut refusals = true;
    loop {
        // Partly read lines stay in `line` when a refusal comes first (and the next read
        // goes on with them).
        let out = tokio::select! {
            // Refusals first: at the end both may be ready, and a refusal is not lost.
            biased;
            refusal = refused.recv(), if refusals => match refusal {
                Some(refusal) => line_of(&refusal),
                None => {
                    refusals = false;
                    continue;
                }
            },
            read = from_rmcp.read_until(b'\n', &mut line) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) if line.ends_with(b"\n") => std::mem::take(&mut line),
                Ok(_) => continue,
            },
        };
        if host.write_all(&out).await.is_err() || host.flush().await.is_err() {
            return;
        }
    }
    // What is left: a refusal of the last lines.
    while let Ok(refusal) = refused.try_recv() {
        let _ = host.write_all(&line_of(&refusal)).await;
    }
    // A line rmcp left unfinished as it stopped is no message: it is not written.
    let _ = host.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(line: &str) -> Option<Value> {
        judge(line.as_bytes()).expect_err(line)
    }

    #[test]
    fn each_wrong_line_gets_its_error_and_its_id_when_it_has_one() {
        for (line, code, id) in [
            ("{bad json", PARSE_ERROR, Value::Null),
            ("\u{FEFF}{", PARSE_ERROR, Value::Null),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, INVALID_REQUEST, Value::Null),
            (r#""str""#, INVALID_REQUEST, Value::Null),
            (r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#, INVALID_REQUEST, 7.into()),
            (r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}"#, INVALID_PARAMS, "a".into()),
        ] {
            let e = refusal(line).expect("an answer");
            assert_eq!((e["error"]["code"].as_i64(), &e["id"]), (Some(code), &id), "{line}: {e}");
            assert!(e["error"]["data"]["error"]["code"].is_string(), "the envelope: {e}");
        }
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        assert_eq!(refusal(&deep).expect("an answer")["error"]["code"], PARSE_ERROR);
        // A notification is never answered, however wrong; an id JSON-RPC does not allow
        // is answered with a null one, and so is a wrong response to the bridge.
        assert_eq!(refusal(r#"{"jsonrpc":"2.0","method":"tools/call","params":[]}"#), None);
        for line in [
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":3,"result":{}}"#,
        ] {
            let e = refusal(line).expect("an answer");
            assert!(e["id"].is_null() && e["error"]["data"]["error"]["code"].is_string(), "{line}: {e}");
        }
        // What rmcp could not read is answered here, with its id, whatever the method; a
        // notification it could not read is dropped, as JSON-RPC answers none.
        for line in [
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":5},"clientInfo":{"name":"x","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"list_channels","arguments":{},"_meta":5}}"#,
            r#"{"jsonrpc":"2.0","id":0,"id":1,"method":"ping"}"#,
        ] {
            let e = refusal(line).expect("an answer");
            assert!(e["id"].is_i64() && e["error"]["data"]["error"]["code"].is_string(), "{line}: {e}");
        }
        assert_eq!(refusal(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"_meta":5}}"#), None);
    }

    #[test]
    fn messages_rmcp_takes_pass_and_responses_to_the_bridge_too() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            "\u{FEFF}{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}",
        ] {
            assert!(judge(line.as_bytes()).is_ok(), "{line}");
        }
    }

    #[test]
    fn a_message_over_the_limit_is_refused_with_its_id() {
        let text = "x".repeat(MAX_MCP_REQUEST_BYTES);
        let line = serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "send_message", "arguments": {"channel_id": "ch", "text": text}}})
        .to_string();
        let e = refusal(&line).expect("an answer");
        assert_eq!(
            (e["id"].as_i64(), e["error"]["data"]["error"]["code"].as_str()),
            (Some(9), Some("PAYLOAD_TOO_LARGE"))
        );
    }

    #[tokio::test]
    async fn a_line_past_the_longest_read_is_skipped_and_the_next_is_read() {
        let input = [vec![b'x'; MAX_LINE + 10], b"\n{\"a\":1}\n".to_vec()].concat();
        let mut host = BufReader::new(input.as_slice());
        let mut buf = Vec::new();
        assert!(matches!(read_line(&mut host, &mut buf).await, Ok(Some(Line::Cut))) && buf.is_empty());
        assert!(matches!(read_line(&mut host, &mut buf).await, Ok(Some(Line::Whole))));
        assert_eq!(buf, b"{\"a\":1}\n");
        buf.clear();
        assert!(matches!(read_line(&mut host, &mut buf).await, Ok(None)));
    }
}
