//! The time from a commit in chat.db to an MCP host being told, through `amc mcp` on stdio
//! with the official MCP Python SDK as the host (`push_client.py`), end to end as a person
//! meets it: `amc serve --chat-db` following the file, the bridge, the SDK's handler.
//!
//! - **Push**: one Claude Code-like session; each commit's `notifications/claude/channel`
//!   event, as the SDK's notification handler receives it.
//! - **Long-poll**: 100 sessions at once (100 `amc mcp` processes), each calling
//!   `wait_for_unread_messages` again and again; each commit's answer in every session.
//!
//! - **The same long-poll over REST** (`GET /messages/unread/wait`, no bridge, no SDK), in the
//!   same run: AMC's own share of the long-poll's figure.
//!
//! `cargo bench -p amc-cli --bench push`. The SDK is taken from `AMC_BENCH_PYTHON`, else
//! the test venv (`$CARGO_TARGET_DIR/venv`, made by `scripts/test`). `AMC_BENCH_ROUNDS=1`
//! prints each long-poll round too.
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use amc_client::Connection;
use amc_imessage::fixture::{ChatDbWriter, FixtureMessage};
use serde_json::json;

mod common;

use common::AMC;

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/push_client.py");
/// Conversations the commits go round, so no channel gets more than its three a second.
const CHATS: usize = 50;
const PUSH_SAMPLES: usize = 300;
const WAITERS: usize = 100;
const WAIT_ROUNDS: usize = 30;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn unix_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default()
}

fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("AMC_BENCH_PYTHON") {
        return p.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("venv/bin/python")
}

/// Kills the child when the bench ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `push_client.py` with `args`, writes `stdin` to it, and waits for its `READY`.
fn client(data: &Path, args: &[&str], stdin: &str) -> Result<(Killed, BufReader<ChildStdout>)> {
    let mut child = Command::new(python())
        .arg(CLIENT)
        .args(args)
        .env("AMC_DATA_DIR", data)
        .env("AMC_BIN", AMC)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    child.stdin.take().ok_or("stdin")?.write_all(stdin.as_bytes())?;
    let mut out = BufReader::new(child.stdout.take().ok_or("stdout")?);
    let child = Killed(child);
    let mut line = String::new();
    out.read_line(&mut line)?;
    if line.trim() != "READY" {
        return Err(format!("push_client.py did not start: {line:?}").into());
    }
    Ok((child, out))
}

/// The next `tag` line's text and time.
fn next(out: &mut BufReader<ChildStdout>, tag: &str) -> Result<(String, u128)> {
    loop {
        let mut line = String::new();
        if out.read_line(&mut line)? == 0 {
            return Err("push_client.py ended".into());
        }
        let Some(rest) = line.trim_end().strip_prefix(tag) else { continue };
        let (text, at) = rest.rsplit_once(' ').ok_or("malformed line")?;
        return Ok((text.to_owned(), at.parse()?));
    }
}

fn main() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("amc");
    let chat_db = dir.path().join("chat.db");
    let w = ChatDbWriter::create(&chat_db)?;
    let mut chats = Vec::new();
    for c in 0..CHATS {
        let h = w.add_handle(&format!("+1555{c:07}"))?;
        let chat = w.add_chat(&format!("iMessage;-;+1555{c:07}"), 45, None, &[h])?;
        let hello = FixtureMessage {
            guid: format!("hello-{c}"),
            text: Some("hello".into()),
            handle_id: h,
            sent_at_ms: amc_core::time::now_ms(),
            ..Default::default()
        };
        w.add_message(chat, &hello)?;
        chats.push((chat, h));
    }
    let serve = common::Serve::start(&data, &["--chat-db".as_ref(), chat_db.as_os_str()])?;
    let (socket, admin_token) = (serve.socket.clone(), serve.admin_token.clone());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut tokens: HashMap<String, String> = HashMap::new();
    rt.block_on(async {
        let mut admin = Connection::connect(&socket).await?.with_bearer(&admin_token);
        // Every conversation, approved as it is stored.
        let mut approved = 0;
        while approved < CHATS {
            let listed = admin.get("/admin/channels?state=pending").await?.json();
            for ch in listed["channels"].as_array().into_iter().flatten() {
                let id = ch["id"].as_str().unwrap_or_default();
                admin.post(&format!("/admin/channels/{id}/approve"), &json!({ "history": "all" })).await?;
                approved += 1;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        for id in std::iter::once("claude".to_owned()).chain((0..WAITERS).map(|i| format!("waiter-{i}"))) {
            let made = admin.post("/admin/agents", &json!({ "id": id })).await?.json();
            tokens.insert(id, made["token"].as_str().unwrap_or_default().to_owned());
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    let commit = |i: usize, text: &str| -> Result<u128> {
        let (chat, handle) = chats[i % CHATS];
        let m = FixtureMessage {
            guid: format!("{text}-guid"),
            text: Some(text.to_owned()),
            handle_id: handle,
            sent_at_ms: amc_core::time::now_ms(),
            ..Default::default()
        };
        let t0 = unix_ns();
        w.add_message(chat, &m)?;
        Ok(t0)
    };
    let ms = |ns: u128| Duration::from_nanos(ns as u64);

    // Push: one session told each commit.
    let (_push, mut events) = client(&data, &["push", "claude", &tokens["claude"]], "")?;
    rt.block_on(async {
        let mut admin = Connection::connect(&socket).await?.with_bearer(&admin_token);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let agents = admin.get("/admin/agents").await?.json();
            let pushing = agents["agents"].as_array().into_iter().flatten().any(|a| a["pushing"] == true);
            if pushing {
                return Ok::<_, Box<dyn std::error::Error>>(());
            }
            assert!(Instant::now() < deadline, "the bridge's push never reached AMC");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })?;
    let mut samples = Vec::with_capacity(PUSH_SAMPLES);
    for i in 0..PUSH_SAMPLES {
        std::thread::sleep(Duration::from_millis(20));
        let text = format!("push {i}");
        let t0 = commit(i, &text)?;
        let (got, at) = next(&mut events, "E ")?;
        assert_eq!(got, text, "events come in order, one per commit");
        samples.push(ms(at.saturating_sub(t0)));
    }
    println!("{}", amc_testkit::Latencies::of(samples).line("commit in chat.db → channel event in the SDK's handler"));

    // Long-poll: WAITERS sessions each waiting, with nothing unread when they start.
    rt.block_on(async {
        for i in 0..WAITERS {
            let id = format!("waiter-{i}");
            let mut agent =
                Connection::connect(&socket).await?.with_bearer(&tokens[&id]).with_header("x-agent-id", &id);
            loop {
                let unread = agent.get("/messages/unread?limit=100").await?.json();
                let ids: Vec<&serde_json::Value> =
                    unread["messages"].as_array().into_iter().flatten().map(|m| &m["id"]).collect();
                if ids.is_empty() {
                    break;
                }
                agent.post("/messages/mark_read", &json!({ "message_ids": ids })).await?;
            }
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    let stdin: String = (0..WAITERS).map(|i| format!("{}\n", tokens[&format!("waiter-{i}")])).collect();
    let (wait_client, mut answers) = client(&data, &["wait", &WAITERS.to_string()], &stdin)?;
    let mut samples = Vec::with_capacity(WAITERS * WAIT_ROUNDS);
    for round in 0..WAIT_ROUNDS {
        // Time for every session to mark the last round read and wait again.
        std::thread::sleep(Duration::from_millis(500));
        let text = format!("wait {round}");
        let t0 = commit(round, &text)?;
        let mut answered = 0;
        let round_start = samples.len();
        while answered < WAITERS {
            let (got, at) = next(&mut answers, "W ")?;
            if got == text {
                answered += 1;
                samples.push(ms(at.saturating_sub(t0)));
            }
        }
        if std::env::var_os("AMC_BENCH_ROUNDS").is_some() {
            let first = samples[round_start..].iter().min().copied().unwrap_or_default();
            let line = amc_testkit::Latencies::of(samples[round_start..].to_vec()).line(&format!("round {round}"));
            println!("{line}  first={:.3} ms", first.as_secs_f64() * 1000.0);
        }
    }
    println!(
        "{}",
        amc_testkit::Latencies::of(samples)
            .line(&format!("commit in chat.db → {WAITERS} waiting wait_for_unread_messages"))
    );
    drop((wait_client, answers));

    // The same waits without a bridge or an SDK: AMC's own share, in the same run.
    let samples = rt.block_on(async {
        let mut samples = Vec::with_capacity(WAITERS * WAIT_ROUNDS);
        for round in 0..WAIT_ROUNDS {
            let text = format!("rest {round}");
            let mut waits = Vec::with_capacity(WAITERS);
            for i in 0..WAITERS {
                let id = format!("waiter-{i}");
                let mut c =
                    Connection::connect(&socket).await?.with_bearer(&tokens[&id]).with_header("x-agent-id", &id);
                let since = amc_core::time::format_ms(amc_core::time::now_ms());
                waits.push(tokio::spawn(async move {
                    let page = c.get(&format!("/messages/unread/wait?timeout_seconds=25&since={since}")).await;
                    (unix_ns(), page.map(|p| p.json()))
                }));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
            let t0 = commit(round, &text)?;
            for w in waits {
                let (at, page) = w.await?;
                let page = page?;
                assert!(
                    page["messages"].as_array().into_iter().flatten().any(|m| m["text"] == text.as_str()),
                    "{page}"
                );
                samples.push(ms(at.saturating_sub(t0)));
            }
        }
        Ok::<_, Box<dyn std::error::Error>>(samples)
    })?;
    println!(
        "{}",
        amc_testkit::Latencies::of(samples)
            .line(&format!("commit in chat.db → {WAITERS} waiting GET /messages/unread/wait"))
    );
    Ok(())
}
