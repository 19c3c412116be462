//! Relay wake end to end, as agents meet it: 1,000 MCP clients, each on its own
//! connection to `amc serve`'s socket, call `wait_for_messages` on one thread, and the
//! person posts as soon as the daemon counts them all waiting (some may still be
//! starting). Prints the latency from the post to each client's answer, and the
//! daemon's threads and memory at rest and while they wait. Then the same clients, in the
//! same run, against a do-nothing long-poll server in Python (`do_nothing_wake.py`)
//! answering AMC's own answer, as a ratio: the floor that the machine, the clients and the
//! kernel's sockets set for such a fan-out.
//! `cargo bench -p amc-cli --bench relay_socket`; `AMC_BENCH_WAITERS` sets the clients,
//! `AMC_BENCH_ROUNDS` the posts, `AMC_BENCH_SETTLE_MS` a pause before each post,
//! `AMC_BENCH_PYTHON` the peer's Python (`python3`). An agent holds at most
//! `MAX_WAITS_PER_AGENT` waits, so the clients are spread over as many agents as that takes.
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
    who: &Who,
    name: &str,
    arguments: &Value,
) -> Result<(Instant, Vec<u8>), Box<dyn std::error::Error + Send + Sync>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": { "name": name, "arguments": arguments } })
    .to_string();
    let head = format!(
        "POST /mcp/relay HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {}\r\nx-agent-id: {}\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        who.token,
        who.agent,
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

type BoxError = Box<dyn std::error::Error>;

/// What the waiting clients call: where their calls wait, how a post wakes them, and what
/// their answers must say.
trait Target {
    /// The process answering.
    fn pid(&self) -> u32;
    /// The arguments of this round's `wait_for_messages`.
    fn args(&self) -> Value;
    /// How many calls wait now.
    async fn waiting(&mut self) -> Result<u64, BoxError>;
    /// The post that wakes them.
    async fn post(&mut self, round: usize) -> Result<(), BoxError>;
    /// Checks a round's answers (and keeps what the next round needs).
    fn answered(&mut self, round: usize, answers: &[Vec<u8>]) -> Result<(), BoxError>;
}

/// AMC: a relay thread the clients wait on, and the person's post into it.
struct Amc {
    pid: u32,
    admin: Connection,
    thread: String,
    cursor: String,
    /// The first answer, for the peer to give.
    first_answer: Option<Vec<u8>>,
}

impl Target for Amc {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn args(&self) -> Value {
        json!({ "thread_id": self.thread, "after": self.cursor, "timeout_seconds": 25 })
    }

    async fn waiting(&mut self) -> Result<u64, BoxError> {
        let waiting = format!("/admin/relay/threads/{}/waiting", self.thread);
        Ok(self.admin.get(&waiting).await?.json()["waiting"].as_u64().unwrap_or(0))
    }

    async fn post(&mut self, round: usize) -> Result<(), BoxError> {
        let post = json!({ "body": format!("wake {round}"), "idempotency_key": format!("w{round}") });
        self.admin.post(&format!("/admin/relay/threads/{}/messages", self.thread), &post).await?;
        Ok(())
    }

    fn answered(&mut self, round: usize, answers: &[Vec<u8>]) -> Result<(), BoxError> {
        let mut next_cursor: Option<String> = None;
        for body in answers {
            let page = structured(body)?;
            assert_eq!(page["messages"].as_array().map(Vec::len), Some(1), "{page}");
            assert_eq!(page["messages"][0]["body"], format!("wake {round}"), "{page}");
            let next = page["next_cursor"].as_str().ok_or("no cursor")?;
            assert!(next_cursor.as_deref().is_none_or(|c| c == next), "every waiter ends at the post");
            next_cursor = Some(next.to_owned());
        }
        self.cursor = next_cursor.ok_or("no answer")?;
        self.first_answer.get_or_insert_with(|| answers[0].clone());
        Ok(())
    }
}

/// The do-nothing peer: it holds every call until `/post`, then gives each AMC's answer.
struct Peer {
    pid: u32,
    conn: Connection,
    answer: Vec<u8>,
}

impl Target for Peer {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn args(&self) -> Value {
        json!({ "thread_id": "peer", "after": "", "timeout_seconds": 25 })
    }

    async fn waiting(&mut self) -> Result<u64, BoxError> {
        Ok(self.conn.get("/waiting").await?.json()["waiting"].as_u64().unwrap_or(0))
    }

    async fn post(&mut self, _round: usize) -> Result<(), BoxError> {
        self.conn.post("/post", &json!({})).await?;
        Ok(())
    }

    fn answered(&mut self, _round: usize, answers: &[Vec<u8>]) -> Result<(), BoxError> {
        assert!(answers.iter().all(|a| *a == self.answer), "the peer gives AMC's answer");
        Ok(())
    }
}

/// What a run of fan-outs measured.
struct Fanout {
    /// From each post to each answer's first bytes.
    samples: Vec<Duration>,
    /// The target's CPU from each post to its last answer, summed.
    cpu: Duration,
    /// Its most threads and resident memory while the calls waited.
    peak: (u64, f64),
}

/// An agent a client calls as.
#[derive(Debug, Clone)]
struct Who {
    agent: String,
    token: String,
}

/// `rounds` fan-outs: each client calls `wait_for_messages`, and as soon as the target
/// counts them all waiting (some may still be starting) the post lands.
async fn fan_out<T: Target>(
    target: &mut T,
    clients: &mut Vec<tokio::net::UnixStream>,
    rounds: usize,
    settle: u64,
    callers: &[Who],
) -> Result<Fanout, BoxError> {
    let waiters = clients.len();
    let mut out = Fanout { samples: Vec::with_capacity(waiters * rounds), cpu: Duration::ZERO, peak: (0, 0.0) };
    for round in 0..rounds {
        let mut tasks = Vec::with_capacity(waiters);
        for (i, mut c) in clients.drain(..).enumerate() {
            let args = target.args();
            let who = callers[i % callers.len()].clone();
            tasks.push(tokio::spawn(async move {
                let answer = raw_call(&mut c, &who, "wait_for_messages", &args).await;
                (answer.map_err(|e| e.to_string()), c)
            }));
        }
        while target.waiting().await? < waiters as u64 {
            // A call answered before the post was refused: say so rather than wait for ever.
            if let Some(t) = tasks.iter().position(tokio::task::JoinHandle::is_finished) {
                let (answer, _) = tasks.swap_remove(t).await?;
                let body = answer.map(|(_, body)| String::from_utf8_lossy(&body).into_owned());
                return Err(format!("a wait ended before the post: {body:?}").into());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if settle > 0 {
            tokio::time::sleep(Duration::from_millis(settle)).await;
        }
        let (threads, rss) = common::threads_and_rss(target.pid());
        out.peak = (out.peak.0.max(threads), out.peak.1.max(rss));
        let cpu0 = common::cpu_time(target.pid());
        let t0 = Instant::now();
        target.post(round).await?;
        let mut bodies = Vec::with_capacity(waiters);
        for t in tasks {
            let (answer, c) = t.await?;
            let (done, body) = answer?;
            out.samples.push(done.saturating_duration_since(t0));
            bodies.push(body);
            clients.push(c);
        }
        out.cpu += common::cpu_time(target.pid()).saturating_sub(cpu0);
        target.answered(round, &bodies)?;
    }
    Ok(out)
}

/// The do-nothing peer in Python, started on its own socket, stopped when dropped.
struct PeerProcess(std::process::Child);

impl Drop for PeerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The same fan-outs against the do-nothing peer, giving `answer`.
async fn peer_fan_out(
    dir: &std::path::Path,
    answer: &[u8],
    waiters: usize,
    rounds: usize,
    settle: u64,
) -> Result<Fanout, BoxError> {
    let python = std::env::var("AMC_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let socket = dir.join("peer.sock");
    let answer_file = dir.join("answer.json");
    std::fs::write(&answer_file, answer)?;
    let child = std::process::Command::new(&python)
        .arg(format!("{}/benches/do_nothing_wake.py", env!("CARGO_MANIFEST_DIR")))
        .arg(&socket)
        .arg(&answer_file)
        .stderr(std::process::Stdio::null())
        .spawn()?;
    let process = PeerProcess(child);
    let started = Instant::now();
    while !socket.exists() {
        if started.elapsed() > Duration::from_secs(10) {
            return Err(format!("{python} did not open the peer's socket in 10 s").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut peer = Peer { pid: process.0.id(), conn: Connection::connect(&socket).await?, answer: answer.to_vec() };
    let mut clients = Vec::with_capacity(waiters);
    for _ in 0..waiters {
        clients.push(tokio::net::UnixStream::connect(&socket).await?);
    }
    fan_out(&mut peer, &mut clients, rounds, settle, &[Who { agent: "peer".into(), token: "peer".into() }]).await
}

fn main() -> Result<(), BoxError> {
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
        let thread = admin.post("/admin/relay/threads", &json!({ "title": "wake", "idempotency_key": "wake" })).await?;
        let thread = thread.json()["thread_id"].as_str().ok_or("no thread")?.to_owned();
        let invite = admin.post(&format!("/admin/relay/threads/{thread}/invites"), &json!({ "kind": "read" })).await?;
        let access = invite.json()["access_token"].as_str().ok_or("no invite")?.to_owned();
        let (rest_threads, rest_rss) = common::threads_and_rss(pid);
        // As many agents as the waits take, each joined to the thread.
        let mut callers = Vec::new();
        for a in 0..waiters.div_ceil(amc_core::service::MAX_WAITS_PER_AGENT) {
            let agent = format!("bench-{a}");
            let added = admin.post("/admin/agents", &json!({ "id": agent })).await?.json();
            let token = added["token"].as_str().ok_or("no agent token")?.to_owned();
            let mut c = Connection::connect(&serve.socket).await?.with_bearer(&token).with_header("x-agent-id", &agent);
            call(&mut c, "join_thread", json!({ "thread_id": thread, "access_token": access })).await?;
            callers.push(Who { agent, token });
        }
        // The waiting clients speak HTTP/1.1 by hand and note the time when their answer's
        // first bytes arrive: the client's own parsing is no part of the figure.
        let mut clients = Vec::with_capacity(waiters);
        for _ in 0..waiters {
            clients.push(tokio::net::UnixStream::connect(&serve.socket).await?);
        }
        let (connected_threads, connected_rss) = common::threads_and_rss(pid);
        let mut amc = Amc { pid, admin, thread, cursor: String::new(), first_answer: None };
        let got = fan_out(&mut amc, &mut clients, rounds, settle, &callers).await?;
        let amc_p = amc_testkit::Latencies::of(got.samples);
        println!(
            "{}",
            amc_p.line(&format!("wait_for_messages over the socket, {waiters} MCP clients, post to answer"))
        );
        let per_answer = |cpu: Duration| cpu.as_secs_f64() * 1e6 / (waiters * rounds) as f64;
        println!("daemon CPU from the post to the last answer: {:.0} µs per answer", per_answer(got.cpu));
        let (after_threads, after_rss) = common::threads_and_rss(pid);
        let (peak_threads, peak_rss) = got.peak;
        println!(
            "daemon threads / RSS: {rest_threads} / {rest_rss:.1} MiB at rest, {connected_threads} / \
             {connected_rss:.1} MiB with {waiters} connections, {peak_threads} / {peak_rss:.1} MiB with \
             {waiters} waiting, {after_threads} / {after_rss:.1} MiB after"
        );
        drop(clients);
        let answer = amc.first_answer.take().ok_or("no answer")?;
        match peer_fan_out(dir.path(), &answer, waiters, rounds, settle).await {
            Ok(peer) => {
                let cpu = per_answer(peer.cpu);
                let peer_p = amc_testkit::Latencies::of(peer.samples);
                println!("{}", peer_p.line("the same clients against a do-nothing Python long-poll server"));
                println!("its CPU from the post to the last answer: {cpu:.0} µs per answer");
                println!(
                    "ratio AMC / do-nothing server: p50 {:.2}, p99 {:.2}",
                    amc_p.p50.as_secs_f64() / peer_p.p50.as_secs_f64(),
                    amc_p.p99.as_secs_f64() / peer_p.p99.as_secs_f64()
                );
            }
            Err(e) => println!("the do-nothing peer did not run: {e}"),
        }
        Ok::<_, BoxError>(())
    })?;
    drop(serve);
    Ok(())
}
