//! `amc mcp` on the kinds of stdin and stdout hosts give it: pipes (Python's subprocess,
//! the MCP Python SDK) and socket pairs (Node's child processes, which Claude Code and
//! Codex CLI run on), read and written by the runtime itself, and a regular file, which
//! goes through tokio's blocking stdio.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};

use super::{AMC, Serve, amc, json, stdout};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

fn bridge(dir: &std::path::Path, token: &str) -> Command {
    bridge_pushing(dir, token, false)
}

/// The bridge, with the push on or off.
fn bridge_pushing(dir: &std::path::Path, token: &str, push: bool) -> Command {
    let mut c = Command::new(AMC);
    c.args(if push { &["mcp"][..] } else { &["mcp", "--no-push"] })
        .env("AMC_DATA_DIR", dir)
        .env("AMC_BEARER_TOKEN", token)
        .env("AMC_AGENT_ID", "host")
        .stderr(Stdio::null());
    c
}

/// The bridge started on pipes: the process, its stdin and its stdout.
fn piped(mut bridge: Command) -> (std::process::Child, std::process::ChildStdin, BufReader<std::process::ChildStdout>) {
    let mut child = bridge.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn");
    let input = child.stdin.take().expect("stdin");
    let output = BufReader::new(child.stdout.take().expect("stdout"));
    (child, input, output)
}

/// Reads answers until the one with `id`.
fn answer(lines: &mut impl BufRead, id: i64) -> serde_json::Value {
    loop {
        let mut line = String::new();
        assert!(lines.read_line(&mut line).expect("read") > 0, "the bridge closed its output");
        let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON-RPC line");
        if v["id"] == id {
            return v;
        }
    }
}

fn tool_names(v: &serde_json::Value) -> Vec<String> {
    v["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn the_bridge_speaks_over_pipes_socket_pairs_and_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let _serve = Serve::start(dir);
    let token = json(&amc(dir, &["--json", "agent", "add", "host"]))["token"].as_str().expect("token").to_owned();

    // Pipes.
    let (mut child, mut input, mut output) = piped(bridge(dir, &token));
    writeln!(input, "{INIT}\n{INITIALIZED}\n{LIST}").expect("write");
    assert!(answer(&mut output, 1)["result"]["serverInfo"].is_object());
    let over_pipes = tool_names(&answer(&mut output, 2));
    assert!(over_pipes.contains(&"list_unread_messages".to_owned()), "{over_pipes:?}");
    drop(input);
    assert!(child.wait().expect("wait").success(), "the bridge ends when the host closes its stdin");

    // Socket pairs, one for each direction, as Node gives them.
    let (host_in, bridge_in) = UnixStream::pair().expect("pair");
    let (host_out, bridge_out) = UnixStream::pair().expect("pair");
    let mut child = bridge(dir, &token)
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(bridge_in)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(bridge_out)))
        .spawn()
        .expect("spawn");
    let mut input = host_in;
    let mut output = BufReader::new(host_out);
    writeln!(input, "{INIT}\n{INITIALIZED}\n{LIST}").expect("write");
    assert!(answer(&mut output, 1)["result"]["serverInfo"].is_object());
    assert_eq!(tool_names(&answer(&mut output, 2)), over_pipes);
    drop(input);
    assert!(child.wait().expect("wait").success());

    // A file of requests in, a file of answers out.
    let requests = dir.join("requests.jsonl");
    std::fs::write(&requests, format!("{INIT}\n{INITIALIZED}\n{LIST}\n")).expect("write");
    let answers = dir.join("answers.jsonl");
    let status = bridge(dir, &token)
        .stdin(std::fs::File::open(&requests).expect("open"))
        .stdout(std::fs::File::create(&answers).expect("create"))
        .status()
        .expect("run");
    assert!(status.success());
    let text = stdout(&std::process::Output { status, stdout: std::fs::read(&answers).expect("read"), stderr: vec![] });
    assert_eq!(tool_names(&answer(&mut text.as_bytes(), 2)), over_pipes);
}

#[test]
fn every_line_a_host_writes_is_answered_or_passed_on_never_dropped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let _serve = Serve::start(dir);
    let token = json(&amc(dir, &["--json", "agent", "add", "host"]))["token"].as_str().expect("token").to_owned();
    let (mut child, mut input, mut output) = piped(bridge(dir, &token));
    writeln!(input, "{INIT}\n{INITIALIZED}").expect("write");
    assert!(answer(&mut output, 1)["result"]["serverInfo"].is_object());

    // A send of 1.1 MB is over what AMC takes: refused at once, with its id, and not
    // relayed (so no "may still be delivered").
    let big = serde_json::json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name":
        "send_message", "arguments": {"channel_id": "ch_01HZ0000000000000000000000", "text": "x".repeat(1_100_000)}}});
    writeln!(input, "{big}").expect("write");
    let refused = answer(&mut output, 13);
    assert_eq!(refused["error"]["data"]["error"]["code"], "PAYLOAD_TOO_LARGE", "{refused}");
    // Lines that are no JSON get -32700 with a null id, in order; the bridge goes on.
    input.write_all(b"{bad json\n\xff\xfe\n").expect("write");
    for _ in 0..2 {
        let mut line = String::new();
        output.read_line(&mut line).expect("read");
        let v: serde_json::Value = serde_json::from_str(&line).expect("a JSON-RPC line");
        assert_eq!((v["id"].is_null(), v["error"]["code"].as_i64()), (true, Some(-32700)), "{v}");
        assert_eq!(v["error"]["data"]["error"]["code"], "VALIDATION_FAILED", "{v}");
    }
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"mark_read","arguments":{{"message_ids":{}{}}}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    writeln!(input, "{deep}\n{LIST}").expect("write");
    let mut line = String::new();
    output.read_line(&mut line).expect("read");
    assert!(line.contains("-32700"), "{line}");
    assert!(!tool_names(&answer(&mut output, 2)).is_empty(), "the bridge still answers");
    drop(input);
    assert!(child.wait().expect("wait").success());
}

/// What a host may write first or wrongly: a notification or a response before
/// `initialize`, a request with a key given twice or a method that is not a string. The
/// bridge answers each request with its own id, answers no notification or response, and
/// keeps running, with the push on and off.
#[test]
fn a_host_that_starts_with_a_notification_or_errs_keeps_its_session_and_its_ids() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let _serve = Serve::start(dir);
    let token = json(&amc(dir, &["--json", "agent", "add", "host"]))["token"].as_str().expect("token").to_owned();
    for first in [
        INITIALIZED,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}"#,
        r#"{"jsonrpc":"2.0","method":"amc/unknown"}"#,
        r#"{"jsonrpc":"2.0","id":0,"result":{}}"#,
        r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"no"}}"#,
    ] {
        for push in [false, true] {
            let (mut child, mut input, mut output) = piped(bridge_pushing(dir, &token, push));
            writeln!(input, "{first}\n{INIT}\n{INITIALIZED}").expect("write");
            let init = answer(&mut output, 1);
            assert!(init["result"]["serverInfo"].is_object(), "after {first}: {init}");
            for (id, wrong) in [
                (
                    3,
                    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_channels","arguments":{},"_meta":{},"_meta":{}}}"#,
                ),
                (4, r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{},"_meta":{}}}"#),
                (5, r#"{"jsonrpc":"2.0","id":5,"method":7}"#),
            ] {
                writeln!(input, "{wrong}").expect("write");
                let refused = answer(&mut output, id);
                assert!(refused["error"]["data"]["error"]["code"].is_string(), "{wrong}: {refused}");
            }
            // Responses, however wrong, get nothing: the next answer is the list's.
            let both = r#"{"jsonrpc":"2.0","id":8,"result":{},"error":{"code":1,"message":"x"}}"#;
            let null_id = r#"{"jsonrpc":"2.0","id":null,"result":{}}"#;
            writeln!(input, "{both}\n{null_id}\n{LIST}").expect("write");
            let mut line = String::new();
            output.read_line(&mut line).expect("read");
            let next: serde_json::Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            assert_eq!(next["id"], 2, "only the list is answered: {next}");
            drop(input);
            let status = child.wait().expect("wait");
            assert!(status.success(), "after {first} (push {push}): {status}");
        }
    }
}
