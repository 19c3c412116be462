//! `tools/call list_unread_messages` (20 messages) as an MCP host makes it, through
//! `amc mcp` on stdio, beside the same call straight to `/mcp` on the socket and the same
//! read over REST. `cargo bench -p amc-cli --bench mcp` prints p50 and p99 of each.
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use amc_client::Connection;
use serde_json::{Value, json};

mod common;

use common::AMC;

const SAMPLES: usize = 2000;

/// Prints the line and returns p50 and p99 in milliseconds.
fn report(name: &str, samples: Vec<Duration>) -> (f64, f64) {
    let l = amc_testkit::Latencies::of(samples);
    println!("{}", l.line(name));
    (l.p50.as_secs_f64() * 1000.0, l.p99.as_secs_f64() * 1000.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("amc");
    let serve = common::Serve::start(&data, &[])?;
    let (socket, admin_token) = (serve.socket.clone(), serve.admin_token.clone());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;

    let token = rt.block_on(async {
        let mut admin = Connection::connect(&socket).await?.with_bearer(&admin_token);
        let token = admin.post("/admin/agents", &json!({ "id": "bench" })).await?.json()["token"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let messages: Vec<Value> = (0..20)
            .map(|i| json!({ "id": format!("m{i}"), "text": format!("message {i}: an ordinary line of chat"), "sender_name": "Ada" }))
            .collect();
        let ingested = admin
            .post("/admin/test/ingest", &json!({ "source": "imessage", "chat_id": "c", "chat_name": "Ada", "messages": messages }))
            .await?
            .json();
        let ch = ingested["channel_id"].as_str().unwrap_or_default().to_owned();
        admin.post(&format!("/admin/channels/{ch}/approve"), &json!({ "history": "all" })).await?;
        Ok::<_, Box<dyn std::error::Error>>(token)
    })?;

    // REST over the socket, one kept-alive connection.
    let (rest_p50, _) = rt.block_on(async {
        let mut c = Connection::connect(&socket).await?.with_bearer(&token).with_header("x-agent-id", "bench");
        let mut samples = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            let t = Instant::now();
            let r = c.get("/messages/unread?limit=20").await?;
            samples.push(t.elapsed());
            assert_eq!(r.json()["messages"].as_array().map(Vec::len), Some(20));
        }
        Ok::<_, Box<dyn std::error::Error>>(report("REST GET /messages/unread?limit=20", samples))
    })?;

    // MCP straight to the daemon's /mcp (what the bridge does for each call).
    let (direct_p50, _) = rt.block_on(async {
        let mut c = Connection::connect(&socket).await?.with_bearer(&token).with_header("x-agent-id", "bench");
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": { "name": "list_unread_messages", "arguments": { "limit": 20 } } })
        .to_string()
        .into_bytes();
        let headers = [("accept", "application/json, text/event-stream"), ("mcp-protocol-version", "2025-11-25")];
        let mut samples = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            let t = Instant::now();
            let r = c.request(hyper::Method::POST, "/mcp", &headers, Some(body.clone())).await?;
            samples.push(t.elapsed());
            assert_eq!(r.json()["result"]["structuredContent"]["messages"].as_array().map(Vec::len), Some(20));
        }
        Ok::<_, Box<dyn std::error::Error>>(report("MCP tools/call on the socket (no bridge)", samples))
    })?;

    // MCP through `amc mcp` on stdio, as a host launches it.
    let mut bridge = Command::new(AMC);
    bridge.arg("mcp").env("AMC_DATA_DIR", &data).env("AMC_BEARER_TOKEN", &token).env("AMC_AGENT_ID", "bench");
    let (samples, reply) = stdio_calls(bridge)?;
    let (bridge_p50, _) = report("MCP tools/call through `amc mcp` (stdio bridge)", samples);
    println!(
        "ratios of p50: bridge / REST = {:.2}, bridge / socket MCP = {:.2}, socket MCP / REST = {:.2}",
        bridge_p50 / rest_p50,
        bridge_p50 / direct_p50,
        direct_p50 / rest_p50
    );

    // The peers: Python stdio MCP servers that do nothing but answer AMC's own reply,
    // driven by the same client: one written against the JSON-RPC lines alone, one with
    // the official MCP Python SDK (`AMC_BENCH_PYTHON` must then have it, as the tests'
    // virtualenv does).
    let python = std::env::var("AMC_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let canned = dir.path().join("reply.json");
    std::fs::write(&canned, serde_json::to_vec(&reply["result"])?)?;
    for (script, name) in [
        ("do_nothing_mcp.py", "a do-nothing Python stdio MCP server (plain JSON-RPC)"),
        ("do_nothing_sdk_mcp.py", "a do-nothing Python stdio MCP server (official SDK)"),
    ] {
        let mut peer = Command::new(&python);
        peer.arg(format!("{}/benches/{script}", env!("CARGO_MANIFEST_DIR"))).arg(&canned).stderr(Stdio::null());
        match stdio_calls(peer) {
            Ok((samples, _)) => {
                let (peer_p50, _) = report(&format!("the same call to {name}"), samples);
                println!("ratio of p50: bridge / {name} = {:.2}", bridge_p50 / peer_p50);
            }
            Err(e) => println!("{name} did not run ({python}: {e})"),
        }
    }
    drop(serve);
    Ok(())
}

/// `tools/call list_unread_messages` over stdio to the MCP server `cmd` starts, as a host
/// makes it: the latencies after 50 warm-up calls, and the last reply.
fn stdio_calls(mut cmd: Command) -> Result<(Vec<Duration>, Value), Box<dyn std::error::Error>> {
    let mut server = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    let mut stdin = server.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(server.stdout.take().ok_or("no stdout")?);
    let mut line = String::new();
    let mut rpc = |msg: Value, expect_reply: bool| -> Result<Value, Box<dyn std::error::Error>> {
        writeln!(stdin, "{msg}")?;
        stdin.flush()?;
        if !expect_reply {
            return Ok(Value::Null);
        }
        line.clear();
        if stdout.read_line(&mut line)? == 0 {
            return Err("the server closed its output".into());
        }
        Ok(serde_json::from_str(&line)?)
    };
    rpc(
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "bench", "version": "1" } } }),
        true,
    )?;
    rpc(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }), false)?;
    let mut samples = Vec::with_capacity(SAMPLES);
    let mut last = Value::Null;
    for i in 0..SAMPLES + 50 {
        let t = Instant::now();
        let reply = rpc(
            json!({ "jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                    "params": { "name": "list_unread_messages", "arguments": { "limit": 20 } } }),
            true,
        )?;
        let elapsed = t.elapsed();
        assert_eq!(reply["result"]["structuredContent"]["messages"].as_array().map(Vec::len), Some(20), "{reply}");
        if i >= 50 {
            samples.push(elapsed); // the first calls connect and warm up
        }
        last = reply;
    }
    drop(stdin);
    let _ = server.wait();
    Ok((samples, last))
}
