//! The Discord source's figure: from a gateway MESSAGE_CREATE leaving a local Discord to
//! the message being returned by `GET /messages/unread` on the real daemon (serenity's
//! client with its rate limiter on, the store, the socket). `cargo bench -p amc-discord --bench discord`;
//! `AMC_BENCH_SAMPLES` sets the number of messages (default 1,000). Then a zombie
//! Then catch-ups that meet a 500 and a 429, a message only the periodic check finds (up
//! to `discord_check_seconds`, 120 s), and a zombie
//! connection at Discord's heartbeat interval (about 90 s; `AMC_BENCH_ZOMBIE=0` skips it).
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use amc_testkit::Stored;
use std::time::{Duration, Instant};

use amc_client::Connection;
use amc_discord::fake::{FakeDiscord, HistoryFailure};
use serde_json::json;

const TOKEN: &str = "bench-token";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let samples: usize = std::env::var("AMC_BENCH_SAMPLES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let fake = FakeDiscord::start(TOKEN, &["general"]).await?;
    let dir = tempfile::tempdir()?;
    // As AMC reaches Discord: https://discord.com through a proxy, serenity's rate limiter on.
    let config = format!("discord_token = \"{TOKEN}\"\n{}imessage_chat_db = \"\"\n", fake.config(dir.path())?);
    std::fs::write(dir.path().join("config.toml"), config)?;
    let connected = fake.connected(Duration::from_secs(20));
    let raw = amc_runtime::RawConfig { data_dir: Some(dir.path().to_owned()), ..Default::default() };
    let running = amc_runtime::start(raw).await?;
    assert!(connected.await, "the bot connected");
    let socket = dir.path().join("run/amc.sock");
    let admin_token = std::fs::read_to_string(dir.path().join("admin-token"))?;
    let mut admin = Connection::connect(&socket).await?.with_bearer(admin_token.trim());
    let general = fake.channel_ids()[0].to_string();
    let channel = loop {
        let all = admin.get("/admin/channels").await?.json();
        let found =
            all["channels"].as_array().and_then(|c| c.iter().find(|c| c["platform_id"] == general.as_str()).cloned());
        if let Some(c) = found {
            break c["id"].as_str().unwrap_or_default().to_owned();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    admin.post(&format!("/admin/channels/{channel}/approve"), &json!({})).await?;
    let token = admin.post("/admin/agents", &json!({ "id": "bench" })).await?.json()["token"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut agent = Connection::connect(&socket).await?.with_bearer(&token).with_header("x-agent-id", "bench");
    let alice = fake.user("alice");
    let unread = format!("/messages/unread?channel_id={channel}&limit=100");

    let mut latencies = Vec::with_capacity(samples);
    for i in 0..samples + 20 {
        let text = format!("message {i}");
        let t = Instant::now();
        fake.post(fake.channel_ids()[0], &alice, &text);
        let id = loop {
            let page = agent.get(&unread).await?.json();
            let hit = page["messages"].as_array().and_then(|m| m.iter().find(|m| m["text"] == text.as_str()).cloned());
            if let Some(m) = hit {
                break m["id"].as_str().unwrap_or_default().to_owned();
            }
        };
        let elapsed = t.elapsed();
        if i >= 20 {
            latencies.push(elapsed); // the first few warm up serenity's and SQLite's paths
        }
        agent.post("/messages/mark_read", &json!({ "message_ids": [id] })).await?;
    }
    println!("{}", amc_testkit::Latencies::of(latencies).line("MESSAGE_CREATE -> GET /messages/unread"));

    // Catch-up: while AMC is away (its session lost, so nothing is replayed), 1,000
    // messages are said, and 100 of the 200 newest stored messages are edited and the
    // other 100 deleted. Timed from the new session to all of it stored.
    {
        let ch = fake.channel_ids()[0];
        let before: Vec<u64> = fake
            .history(ch)
            .iter()
            .rev()
            .take(200)
            .filter_map(|m| m["id"].as_str().and_then(|s| s.parse().ok()))
            .collect();
        let (away, session) = away(&fake, |fake| {
            for i in 0..1000 {
                fake.post_unseen(ch, &alice, &format!("away {i}"));
            }
            for id in &before[..100] {
                fake.edit(ch, *id, &format!("edited {id}"));
            }
            for id in &before[100..] {
                fake.delete(ch, *id);
            }
        })
        .await;
        let store = running.amc().store().clone();
        loop {
            let tail = store.channel_tail(&channel, 1500)?;
            let new = tail.iter().filter(|m| m.text.starts_with("away ")).count();
            let edited = tail.iter().filter(|m| m.text.starts_with("edited ")).count();
            let deleted = tail.iter().filter(|m| m.unsent).count();
            if (new, edited, deleted) == (1000, 100, 100) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        println!(
            "catch-up of 1,000 new messages, 100 edits, 100 deletions: {:.2} s from the new session ({:.2} s from the gateway's return); none missed",
            session.elapsed().as_secs_f64(),
            away.elapsed().as_secs_f64()
        );
    }

    // One failed history request during a catch-up: a 500, then a 429 with Discord's
    // documented body (`retry_after` 1.5 s, no `code`). While AMC is away 100 messages are
    // said; timed from the new session to all of them stored, each once.
    for (what, failure) in [
        ("a 500", HistoryFailure::ServerError),
        ("a 429 (retry_after 1.5 s)", HistoryFailure::RateLimited { retry_after: 1.5 }),
    ] {
        let ch = fake.channel_ids()[0];
        fake.fail_history(ch, 1, failure);
        let texts: Vec<String> = (0..100).map(|i| format!("{what} {i}")).collect();
        let (_, session) = away(&fake, |fake| {
            for text in &texts {
                fake.post_unseen(ch, &alice, text);
            }
        })
        .await;
        let store = running.amc().store().clone();
        loop {
            let tail = store.channel_tail(&channel, 300)?;
            let got = tail.iter().filter(|m| texts.contains(&m.text)).count();
            if got >= texts.len() {
                assert_eq!(got, texts.len(), "each once");
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        println!(
            "catch-up of 100 messages with {what} on the first page: all stored {:.2} s after the new session",
            session.elapsed().as_secs_f64()
        );
    }

    // A message the gateway never delivered, on a healthy connection: the check
    // (`discord_check_seconds`, default 120 s) stores it.
    {
        let ch = fake.channel_ids()[0];
        let said = Instant::now();
        fake.post_unseen(ch, &alice, "never delivered");
        let store = running.amc().store().clone();
        while !store.channel_tail(&channel, 5)?.iter().any(|m| m.text == "never delivered") {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (identifies, resumes, _, _) = fake.counts();
        println!(
            "a message the gateway never delivered: stored {:.1} s later by the check, with no reconnection ({identifies} sessions, {resumes} resumes so far)",
            said.elapsed().as_secs_f64()
        );
    }

    // A zombie connection at Discord's own heartbeat interval (41.25 s): the gateway goes
    // silent, 100 messages are said meanwhile, and the figures run from the last
    // acknowledged heartbeat to a fresh session and to every missed message stored.
    if std::env::var("AMC_BENCH_ZOMBIE").as_deref() != Ok("0") {
        while !fake.heartbeat_acknowledged() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let back = fake.connected(Duration::from_secs(300));
        let last_ack = fake.play_dead().ok_or("no heartbeat was acknowledged")?;
        let missed: Vec<String> = (0..100).map(|i| format!("missed {i}")).collect();
        for text in &missed {
            fake.post(fake.channel_ids()[0], &alice, text);
        }
        assert!(back.await, "a new session");
        let session = last_ack.elapsed();
        loop {
            let page = agent.get(&unread).await?.json();
            let got = page["messages"].as_array().map_or(0, |m| {
                m.iter().filter(|m| m["text"].as_str().is_some_and(|t| t.starts_with("missed "))).count()
            });
            if got == missed.len() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        println!(
            "zombie connection (heartbeat every 41.25 s): last ACK -> new session {:.1} s, -> all 100 missed messages stored {:.1} s",
            session.as_secs_f64(),
            last_ack.elapsed().as_secs_f64()
        );
    }
    running.run_until(async {}).await?;
    Ok(())
}

/// AMC is away (its session lost, so nothing is replayed) while `meanwhile` runs; then the
/// gateway takes connections again. Returns when it did, and when the new session began.
async fn away(fake: &FakeDiscord, meanwhile: impl FnOnce(&FakeDiscord)) -> (Instant, Instant) {
    fake.set_accepting(false);
    fake.invalidate_session(false);
    fake.drop_connection();
    meanwhile(fake);
    let back = fake.connected(Duration::from_secs(120));
    let open = Instant::now();
    fake.set_accepting(true);
    assert!(back.await, "a new session");
    (open, Instant::now())
}
