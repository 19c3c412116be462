//! Relay wake end to end, as agents meet it: 1,000 MCP clients, each on its own
//! connection to `amc serve`'s socket, call `wait_for_messages` on one thread, and the
//! person posts as soon as the daemon counts them all waiting (some may still be
//! starting). Prints the latency from the post to each client's answer, and the
//! daemon's threads and memory at rest and while they wait.
//! `cargo bench -p amc-cli --bench relay_socket`; `AMC_BENCH_WAITERS` sets the clients,
//! `AMC_BENCH_ROUNDS` the posts, `AMC_BENCH_SETTLE_MS` a pause before each post.
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::time::{Duration, Instant};

use amc_client::Connection;
use serde_json::{Value, json};

mod common;

const HEADERS: [(&str, &str); 2] =
    [("accept", "application/json, text/event-stream"), ("mcp-protocol-version", "2025-11-25")];

async fn call(c: &mut Connection, name: &str, arguments: Value) -> Result<Value, Box<dyn std::error::Error>> {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": name, "arguments": arguments } });
    let r = c.request(hyper::Method::POST, "/mcp/relay", &HEADERS, Some(body.to_string().into_bytes())).await?;
    let v = r.json();
    let result = v["result"]["structuredContent"].clone();
    if result.is_null() {
        return Err(format!("{name}: {v}").into());
    }
    Ok(result)
}

/// A `tools/call` on `/mcp/relay` over a kept-alive connection: the time the answer
/// began to arrive, and its body, read whole. The body is parsed once every client has
/// its answer: the clients share one thread, and parsing one answer there would delay
/// the next client's reading of its own.
async fn raw_call(
    c: &mut tokio::net::UnixStream,
    authorization: &str,
    name: &str,
    arguments: &Value,
) -> Result<(Instant, Vec<u8>), Box<dyn std::error::Error + Send + Sync>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": name, "arguments": arguments } })
    .to_string();
    let head = format!(
        "POST /mcp/relay HTTP/1.1\r\nhost: localhost\r\nauthorization: {authorization}\r\nx-agent-id: bench\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    c.write_all(head.as_bytes()).await?;
    let mut buf = Vec::with_capacity(4096);
    let mut first = None;
    loop {
        let mut chunk = [0u8; 8192];
        let n = c.read(&mut chunk).await?;
        if n == 0 {
            return Err("the daemon closed the connection".into());
        }
        first.get_or_insert_with(Instant::now);
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let headers = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let body = &buf[end + 4..];
        let complete = match headers.lines().find_map(|l| l.strip_prefix("content-length:")) {
            Some(len) => body.len() >= len.trim().parse::<usize>()?,
            None => body.ends_with(b"0\r\n\r\n"),
        };
        if !complete {
            continue;
        }
        let first = first.ok_or("no answer")?;
        return Ok((first, body.to_vec()));
    }
}

/// The `structuredContent` of an answer's body: JSON, or server-sent events whose `data:`
/// line holds it.
fn structured(body: &[u8]) -> Result<Value, Box<dyn std::error::Error>> {
    let text = String::from_utf8_lossy(body);
    let json_text = text.lines().find_map(|l| l.strip_prefix("data:")).unwrap_or(&text).trim().to_owned();
    let json_text = if json_text.starts_with('{') {
        json_text
    } else {
        text.lines().filter(|l| l.starts_with('{')).collect::<String>()
    };
    let v: Value = serde_json::from_str(&json_text)?;
    Ok(v["result"]["structuredContent"].clone())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let waiters: usize = std::env::var("AMC_BENCH_WAITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let settle: u64 = std::env::var("AMC_BENCH_SETTLE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let rounds: usize = std::env::var("AMC_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(10);
    let dir = tempfile::tempdir()?;
    let serve = common::Serve::start(&dir.path().join("amc"), &[])?;
    let pid = serve.pid();
    // The clients take one core; the daemon has the rest.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let mut admin = Connection::connect(&serve.socket).await?.with_bearer(&serve.admin_token);
        let agent = admin.post("/admin/agents", &json!({ "id": "bench" })).await?.json();
        let token = agent["token"].as_str().ok_or("no agent token")?.to_owned();
        let thread = admin.post("/admin/relay/threads", &json!({ "title": "wake", "idempotency_key": "wake" })).await?;
        let thread = thread.json()["thread_id"].as_str().ok_or("no thread")?.to_owned();
        let invite = admin.post(&format!("/admin/relay/threads/{thread}/invites"), &json!({ "kind": "read" })).await?;
        let access = invite.json()["access_token"].as_str().ok_or("no invite")?.to_owned();
        let (rest_threads, rest_rss) = common::threads_and_rss(pid);
        let mut agent =
            Connection::connect(&serve.socket).await?.with_bearer(&token).with_header("x-agent-id", "bench");
        call(&mut agent, "join_thread", json!({ "thread_id": thread, "access_token": access })).await?;
        // The waiting clients speak HTTP/1.1 by hand and note the time when their answer's
        // first bytes arrive: the client's own parsing is no part of the figure.
        let token_header: &'static str = Box::leak(format!("Bearer {token}").into_boxed_str());
        let mut clients = Vec::with_capacity(waiters);
        for _ in 0..waiters {
            clients.push(tokio::net::UnixStream::connect(&serve.socket).await?);
        }
        let (connected_threads, connected_rss) = common::threads_and_rss(pid);

        let mut cursor = String::new();
        let mut samples = Vec::with_capacity(waiters * rounds);
        let (mut peak_threads, mut peak_rss) = (0, 0.0f64);
        let mut wake_cpu = Duration::ZERO;
        for round in 0..rounds {
            let mut tasks = Vec::with_capacity(waiters);
            for mut c in clients.drain(..) {
                let args = json!({ "thread_id": thread, "after": cursor, "timeout_seconds": 25 });
                tasks.push(tokio::spawn(async move {
                    let answer = raw_call(&mut c, token_header, "wait_for_messages", &args).await;
                    (answer.map_err(|e| e.to_string()), c)
                }));
            }
            let waiting = format!("/admin/relay/threads/{thread}/waiting");
            while admin.get(&waiting).await?.json()["waiting"].as_u64().unwrap_or(0) < waiters as u64 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            if settle > 0 {
                tokio::time::sleep(Duration::from_millis(settle)).await;
            }
            let (threads, rss) = common::threads_and_rss(pid);
            (peak_threads, peak_rss) = (peak_threads.max(threads), peak_rss.max(rss));
            let cpu0 = common::cpu_time(pid);
            let t0 = Instant::now();
            let post = json!({ "body": format!("wake {round}"), "idempotency_key": format!("w{round}") });
            admin.post(&format!("/admin/relay/threads/{thread}/messages"), &post).await?;
            let mut answers = Vec::with_capacity(waiters);
            for t in tasks {
                answers.push(t.await?);
            }
            let mut next_cursor: Option<String> = None;
            for (answer, c) in answers {
                let (done, body) = answer?;
                let page = structured(&body)?;
                assert_eq!(page["messages"].as_array().map(Vec::len), Some(1), "{page}");
                assert_eq!(page["messages"][0]["body"], format!("wake {round}"), "{page}");
                let next = page["next_cursor"].as_str().ok_or("no cursor")?;
                assert!(next_cursor.as_deref().is_none_or(|c| c == next), "every waiter ends at the post");
                next_cursor = Some(next.to_owned());
                samples.push(done.saturating_duration_since(t0));
                clients.push(c);
            }
            cursor = next_cursor.ok_or("no answer")?;
            wake_cpu += common::cpu_time(pid).saturating_sub(cpu0);
        }
        println!(
            "{}",
            amc_testkit::Latencies::of(samples)
                .line(&format!("wait_for_messages over the socket, {waiters} MCP clients, post to answer"))
        );
        let per_answer = wake_cpu.as_secs_f64() * 1e6 / (waiters * rounds) as f64;
        println!("daemon CPU from the post to the last answer: {per_answer:.0} µs per answer");
        let (after_threads, after_rss) = common::threads_and_rss(pid);
        println!(
            "daemon threads / RSS: {rest_threads} / {rest_rss:.1} MiB at rest, {connected_threads} / \
             {connected_rss:.1} MiB with {waiters} connections, {peak_threads} / {peak_rss:.1} MiB with \
             {waiters} waiting, {after_threads} / {after_rss:.1} MiB after"
        );
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    drop(serve);
    Ok(())
}
