//! Inbox latency over the Unix socket with a large store.
//!
//! `cargo bench -p amc-daemon --bench inbox` loads 1,000,000 messages in 500 channels
//! with 10 agents (agent k has read the oldest k/10 of everything), then measures
//! `GET /messages/unread?limit=100` and `GET /messages/context` through the real daemon
//! over its socket, and prints p50/p99. Every third channel is open to two agents only, so
//! each agent sees a different subset. Then `GET /messages/search` (the REST twin of
//! `search_messages`) for a rare word, two common words and a phrase.
//! `AMC_BENCH_MESSAGES` scales the data down.

#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::time::{Duration, Instant};

use amc_client::Connection;
use amc_core::config::RawConfig;
use amc_core::model::ChannelSpec;
use amc_core::model::{ChannelKind, HistoryRelease, IncomingMessage, SenderInfo, Source};
use amc_core::sender::Senders;
use amc_core::service::Amc;
use rand::{Rng, SeedableRng};

const CHANNELS: usize = 500;
const AGENTS: usize = 10;
const SAMPLES: usize = 2000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let total: usize = std::env::var("AMC_BENCH_MESSAGES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let per_channel = total / CHANNELS;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let dir = tempfile::tempdir()?;
    let config = RawConfig { data_dir: Some(dir.path().to_owned()), ..Default::default() }.validate()?;
    let amc = Amc::start(config.clone(), Senders::default())?;
    let store = amc.store().clone();

    // Load: message j of channel c is sent at base + (j * CHANNELS + c) seconds, so the
    // channels interleave in time as real conversations do.
    let started = Instant::now();
    let base = amc_core::time::now_ms() - (total as i64) * 1000;
    let mut by_channel: Vec<(String, Vec<String>)> = Vec::with_capacity(CHANNELS);
    for c in 0..CHANNELS {
        let spec =
            ChannelSpec { platform_id: format!("chat-{c}"), name: format!("Chat {c}"), kind: ChannelKind::Group };
        let msgs: Vec<IncomingMessage> = (0..per_channel)
            .map(|j| IncomingMessage {
                platform_id: format!("m-{c}-{j}"),
                sender: SenderInfo { id: format!("+1555000{:04}", j % 50), display_name: None, is_self: j % 7 == 0 },
                text: if j % 10_000 == 7 {
                    format!("message {j} in chat {c}: the zanzibar ferry leaves at noon")
                } else {
                    format!("message {j} in chat {c}: some ordinary text of ordinary length for a chat")
                },
                sent_at: base + ((j * CHANNELS + c) as i64) * 1000,
                reply_to_platform_id: (j % 5 == 0 && j > 0).then(|| format!("m-{c}-{}", j - 1)),
                attachments: vec![],
                edited_at: None,
                unsent: false,
                reactions: vec![],
            })
            .collect();
        let report = store.ingest(Source::Discord, &spec, &msgs, None)?;
        store.approve_channel(&report.channel_id, HistoryRelease::All, None)?;
        by_channel.push((report.channel_id, report.inserted));
    }
    let load_messages = started.elapsed();

    // Agent k has read the oldest k/10 of all messages.
    let started = Instant::now();
    let mut agents = Vec::new();
    for k in 0..AGENTS {
        let id = format!("agent-{k}");
        let (_, token) = store.create_agent(&id)?;
        let cut = per_channel * k / AGENTS;
        let read: Vec<String> = by_channel.iter().flat_map(|(_, ids)| ids[..cut].iter().cloned()).collect();
        for chunk in read.chunks(5000) {
            store.mark_read(&id, chunk)?;
        }
        agents.push((id, token));
    }
    let load_reads = started.elapsed();
    // Every third channel is open to two agents only: each agent sees its own subset.
    for (c, (ch, _)) in by_channel.iter().enumerate().filter(|(c, _)| c % 3 == 0) {
        let pair = [format!("agent-{}", c % AGENTS), format!("agent-{}", (c + 1) % AGENTS)];
        store.set_channel_agents(ch, Some(&pair))?;
    }
    let db_bytes = std::fs::metadata(config.db_path())?.len()
        + std::fs::metadata(config.db_path().with_extension("db-wal")).map(|m| m.len()).unwrap_or(0);
    println!(
        "loaded {total} messages in {CHANNELS} channels: {:.1} s ({:.0} msg/s); read state of {AGENTS} agents: {:.1} s; database {:.0} MB",
        load_messages.as_secs_f64(),
        total as f64 / load_messages.as_secs_f64(),
        load_reads.as_secs_f64(),
        db_bytes as f64 / 1e6
    );

    rt.block_on(async {
        let socket = amc_daemon::bind_socket(&config.run_dir(), &config.socket_path())?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(amc_daemon::serve(amc.clone(), socket, None, async move {
            let _ = stopped.await;
        }));
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);

        let mut conns = Vec::new();
        for (id, token) in &agents {
            conns.push(
                Connection::connect(&config.socket_path()).await?.with_bearer(token).with_header("x-agent-id", id),
            );
        }
        // Warm up: each agent's first call moves its unread floor past what it has read.
        for c in conns.iter_mut() {
            let r = c.get("/messages/unread?limit=100").await?;
            assert_eq!(r.status, 200);
        }
        let mut unread = Vec::with_capacity(SAMPLES);
        for i in 0..SAMPLES {
            let c = &mut conns[i % AGENTS];
            let t = Instant::now();
            let r = c.get("/messages/unread?limit=100").await?;
            unread.push(t.elapsed());
            assert_eq!(r.status, 200);
            assert_eq!(r.json()["messages"].as_array().map(Vec::len), Some(100));
        }
        println!("{}", amc_testkit::Latencies::of(unread).line("GET /messages/unread?limit=100 (scoped)"));

        let mut unread_ch = Vec::with_capacity(SAMPLES);
        for i in 0..SAMPLES {
            let (ch, _) = &by_channel[rng.random_range(0..CHANNELS)];
            let c = &mut conns[i % AGENTS];
            let t = Instant::now();
            let r = c.get(&format!("/messages/unread?limit=100&channel_id={ch}")).await?;
            unread_ch.push(t.elapsed());
            assert_eq!(r.status, 200);
        }
        println!("{}", amc_testkit::Latencies::of(unread_ch).line("GET /messages/unread?limit=100&channel_id=…"));

        for (before, after) in [(5, 5), (50, 50)] {
            let mut context = Vec::with_capacity(SAMPLES);
            for i in 0..SAMPLES {
                // A channel open to every agent (the scoped ones answer others 404).
                let c = (rng.random_range(0..CHANNELS / 3) * 3 + 1).min(CHANNELS - 1);
                let (ch, ids) = &by_channel[c];
                let target = &ids[rng.random_range(0..ids.len())];
                let c = &mut conns[i % AGENTS];
                let t = Instant::now();
                let r = c
                    .get(&format!(
                        "/messages/context?channel_id={ch}&around_message_id={target}&before={before}&after={after}"
                    ))
                    .await?;
                context.push(t.elapsed());
                assert_eq!(r.status, 200);
            }
            println!(
                "{}",
                amc_testkit::Latencies::of(context)
                    .line(&format!("GET /messages/context before={before} after={after}"))
            );
        }
        let searches = std::env::var("AMC_BENCH_SEARCHES").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
        for (what, q) in
            [("one rare word", "zanzibar"), ("two common words", "ordinary text"), ("a phrase", "\"ordinary length\"")]
        {
            let mut took = Vec::with_capacity(searches);
            for i in 0..searches {
                let c = &mut conns[i % AGENTS];
                let t = Instant::now();
                let r =
                    c.get(&format!("/messages/search?query={}&limit=20", amc_client::encode_query_value(q))).await?;
                took.push(t.elapsed());
                assert_eq!(r.status, 200, "{:?}", r.json());
                assert!(r.json()["results"].as_array().is_some_and(|h| !h.is_empty()), "{what}");
            }
            println!("{}", amc_testkit::Latencies::of(took).line(&format!("GET /messages/search, {what}, limit=20")));
        }
        let _ = stop.send(());
        server.await??;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}
