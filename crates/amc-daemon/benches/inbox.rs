//! Inbox latency over the Unix socket with a large store.
//!
//! `cargo bench -p amc-daemon --bench inbox` loads 1,000,000 messages in 500 channels
//! with 10 agents (agent k has read the oldest k/10 of everything), then measures
//! `GET /messages/unread?limit=100` and `GET /messages/context` through the real daemon
//! over its socket, and prints p50/p99. Every third channel is open to two agents only, so
//! each agent sees a different subset. Then `GET /messages/search` (the REST twin of
//! `search_messages`) for a rare word, two common words and a phrase, and in the channels
//! written in Japanese (every tenth) for a rare word and a common two-character one. It
//! prints the search indexes' size per message, and ingest throughput with the indexes
//! against without them, side by side on the same messages (the first 10% of the load).
//! Last, the unread lists again once all but 5 of the 500 channels are blocked, as in a
//! store where the person allowed a few of many conversations.
//! `AMC_BENCH_MESSAGES` scales the data down.

#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use amc_testkit::Stored;
use std::path::Path;
use std::time::{Duration, Instant};

use amc_client::Connection;
use amc_core::config::Config;
use amc_core::model::ChannelSpec;
use amc_core::model::{ChannelKind, HistoryRelease, IncomingMessage, SenderInfo, Source};
use amc_core::sender::Senders;
use amc_core::service::Amc;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

const CHANNELS: usize = 500;
const AGENTS: usize = 10;
const SAMPLES: usize = 2000;
const RESTARTS: usize = 5;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let total: usize = std::env::var("AMC_BENCH_MESSAGES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let per_channel = total / CHANNELS;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let dir = tempfile::tempdir()?;
    let config = Config::new(dir.path().to_owned());
    let amc = Amc::start(config.clone(), Senders::default())?;
    let store = amc.store().clone();

    let base = amc_core::time::now_ms() - (total as i64) * 1000;
    ingest_with_and_without_index(&config, per_channel / 10, base)?;

    let started = Instant::now();
    let mut by_channel: Vec<(String, Vec<String>)> = Vec::with_capacity(CHANNELS);
    for c in 0..CHANNELS {
        let (spec, msgs) = channel(c, per_channel, base);
        let report = store.ingest(Source::Discord, &spec, &msgs, None)?;
        store.approve_channel(&report.channel_id, HistoryRelease::All, None, false)?;
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
    let index_bytes = |prefix: &str| -> amc_core::error::Result<i64> {
        store.database().read(|tx| {
            Ok(tx.query_row(
                "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name GLOB ?1",
                [format!("{prefix}*")],
                |r| r.get(0),
            )?)
        })
    };
    // The same messages as if stored before the index: the backlog, indexed in the background.
    store.database().write(|tx| {
        Ok(tx.execute_batch(
            "INSERT INTO messages_fts (messages_fts) VALUES ('delete-all'); DELETE FROM messages_cjk; \
             INSERT INTO search_backlog (id, lo, hi, total) SELECT 1, min(rowid), max(rowid), count(*) FROM messages;",
        )?)
    })?;
    let started = Instant::now();
    rt.block_on(amc.index_search_backlog());
    println!(
        "indexing {total} older messages in the background: {:.1} s ({:.0} msg/s)",
        started.elapsed().as_secs_f64(),
        total as f64 / started.elapsed().as_secs_f64()
    );
    let (fts, cjk) = (index_bytes("messages_fts")?, index_bytes("messages_cjk")?);
    let japanese = (0..CHANNELS).filter(|c| c % 10 == 9).count() * per_channel;
    println!(
        "search indexes: unicode61 {:.0} B per message ({:.0} MB); trigram {:.0} B per message in Japanese ({:.0} MB)",
        fts as f64 / total as f64,
        fts as f64 / 1e6,
        cjk as f64 / japanese.max(1) as f64,
        cjk as f64 / 1e6
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
            conns.push(connect_as(&config.socket_path(), id, token).await?);
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

        // Agents that mark what they read: each page is marked read before the agent's
        // next call, which must then answer the page after it. Agent 9 has a tenth of the
        // messages unread: a fifth of them is 200 pages at 1,000,000 messages.
        let pages = SAMPLES.min(total / 500);
        let (mut listed, mut marked) = (Vec::with_capacity(pages), Vec::with_capacity(pages));
        let mut last_first: Vec<Option<Value>> = vec![None; AGENTS];
        for i in 0..pages {
            let c = &mut conns[i % AGENTS];
            let t = Instant::now();
            let r = c.get("/messages/unread?limit=100").await?;
            listed.push(t.elapsed());
            assert_eq!(r.status, 200);
            let ids = page_ids(&r);
            assert_eq!(ids.len(), 100);
            assert_ne!(last_first[i % AGENTS].as_ref(), ids.first(), "the page marked read came back");
            last_first[i % AGENTS] = ids.first().cloned();
            let t = Instant::now();
            let r = c.post("/messages/mark_read", &json!({ "message_ids": ids })).await?;
            marked.push(t.elapsed());
            assert_eq!(r.status, 200);
        }
        println!(
            "{}",
            amc_testkit::Latencies::of(listed).line("GET /messages/unread?limit=100, each page then marked read")
        );
        println!("{}", amc_testkit::Latencies::of(marked).line("POST /messages/mark_read, 100 ids"));

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
        for (what, q) in [
            ("one rare word", "zanzibar"),
            ("two common words", "ordinary text"),
            ("a phrase", "\"ordinary length\""),
            ("a rare Japanese word", "ザンジバル"),
            ("a common two-character Japanese word", "文章"),
        ] {
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
    drop((store, amc));

    // Cold: the first call of each agent after a restart (a new store, new connections,
    // every token checked again; the system's file cache stays warm).
    let mut cold = Vec::new();
    for _ in 0..RESTARTS {
        let amc = Amc::start(config.clone(), Senders::default())?;
        rt.block_on(async {
            let socket = amc_daemon::bind_socket(&config.run_dir(), &config.socket_path())?;
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let server = tokio::spawn(amc_daemon::serve(amc.clone(), socket, None, async move {
                let _ = stopped.await;
            }));
            for (id, token) in &agents {
                let mut c = connect_as(&config.socket_path(), id, token).await?;
                let t = Instant::now();
                let r = c.get("/messages/unread?limit=100").await?;
                cold.push(t.elapsed());
                assert_eq!(r.status, 200);
                assert_eq!(r.json()["messages"].as_array().map(Vec::len), Some(100));
            }
            let _ = stop.send(());
            server.await??;
            Ok::<_, Box<dyn std::error::Error>>(())
        })?;
    }
    println!(
        "{}",
        amc_testkit::Latencies::of(cold)
            .line(&format!("first GET /messages/unread?limit=100 of each agent after a restart ({RESTARTS} restarts)"))
    );

    // A store where the person allowed few of many channels, as with most of a chat.db:
    // all but one channel in a hundred blocked, and the same lists again.
    let amc = Amc::start(config.clone(), Senders::default())?;
    for (_, (ch, _)) in by_channel.iter().enumerate().filter(|(c, _)| c % 100 != 7) {
        amc.store().block_channel(ch)?;
    }
    rt.block_on(async {
        let socket = amc_daemon::bind_socket(&config.run_dir(), &config.socket_path())?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(amc_daemon::serve(amc.clone(), socket, None, async move {
            let _ = stopped.await;
        }));
        let mut conns = Vec::new();
        for (id, token) in &agents {
            conns.push(connect_as(&config.socket_path(), id, token).await?);
        }
        let (mut listed, mut marking) = (Vec::with_capacity(SAMPLES), Vec::new());
        for i in 0..SAMPLES {
            let c = &mut conns[i % AGENTS];
            let t = Instant::now();
            let r = c.get("/messages/unread?limit=100").await?;
            listed.push(t.elapsed());
            assert_eq!(r.status, 200);
        }
        // Then each agent reads its way through, a page at a time, marking each page read.
        for i in 0..SAMPLES {
            let c = &mut conns[i % AGENTS];
            let t = Instant::now();
            let r = c.get("/messages/unread?limit=100").await?;
            marking.push(t.elapsed());
            let ids = page_ids(&r);
            if ids.is_empty() {
                break;
            }
            assert_eq!(c.post("/messages/mark_read", &json!({ "message_ids": ids })).await?.status, 200);
        }
        let few = "channels allowed: 5 of 500";
        println!("{}", amc_testkit::Latencies::of(listed).line(&format!("GET /messages/unread?limit=100, {few}")));
        println!(
            "{}",
            amc_testkit::Latencies::of(marking).line(&format!("the same, each page then marked read, {few}"))
        );
        let _ = stop.send(());
        server.await??;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}

/// Channel `c` and its messages: message j is sent at base + (j * CHANNELS + c) seconds, so
/// the channels interleave in time as real conversations do. Every tenth channel is in
/// Japanese.
/// A connection to the daemon's socket as the agent `id`.
async fn connect_as(socket: &Path, id: &str, token: &str) -> Result<Connection, Box<dyn std::error::Error>> {
    Ok(Connection::connect(socket).await?.with_bearer(token).with_header("x-agent-id", id))
}

/// The ids of the messages of a page of `GET /messages/unread`.
fn page_ids(page: &amc_client::Response) -> Vec<Value> {
    page.json()["messages"].as_array().map(|m| m.iter().map(|m| m["id"].clone()).collect()).unwrap_or_default()
}

fn channel(c: usize, per_channel: usize, base: i64) -> (ChannelSpec, Vec<IncomingMessage>) {
    let spec = ChannelSpec {
        platform_id: format!("chat-{c}"),
        name: format!("Chat {c}"),
        kind: ChannelKind::Group,
        readers: None,
    };
    let japanese = c % 10 == 9;
    let msgs = (0..per_channel)
        .map(|j| IncomingMessage {
            platform_id: format!("m-{c}-{j}"),
            sender: SenderInfo { id: format!("+1555000{:04}", j % 50), display_name: None, is_self: j % 7 == 0 },
            text: match (japanese, j % 10_000 == 7) {
                (false, true) => format!("message {j} in chat {c}: the zanzibar ferry leaves at noon"),
                (false, false) => format!("message {j} in chat {c}: some ordinary text of ordinary length for a chat"),
                (true, true) => format!("チャット{c}のメッセージ{j}：ザンジバル行きのフェリーは正午に出ます"),
                (true, false) => format!("チャット{c}のメッセージ{j}：普通の長さの普通の文章です"),
            },
            sent_at: base + ((j * CHANNELS + c) as i64) * 1000,
            reply_to_platform_id: (j % 5 == 0 && j > 0).then(|| format!("m-{c}-{}", j - 1)),
            attachments: vec![],
            edited_at: None,
            unsent: false,
            reactions: vec![],
        })
        .collect();
    (spec, msgs)
}

/// Ingest throughput with the search indexes and without them (their triggers dropped), on
/// the same messages, each channel written to both stores in turn.
fn ingest_with_and_without_index(
    config: &amc_core::config::Config,
    per_channel: usize,
    base: i64,
) -> Result<(), Box<dyn std::error::Error>> {
    let open = |name: &str| -> Result<(tempfile::TempDir, Amc), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir_in(config.data_dir.parent().unwrap_or(&config.data_dir))?;
        let c = Config::new(dir.path().join(name));
        Ok((dir, Amc::start(c, Senders::default())?))
    };
    let (_a, with) = open("with")?;
    let (_b, plain) = open("unicode61")?;
    let (_c, without) = open("without")?;
    let drop = "DROP TRIGGER messages_fts_insert; DROP TRIGGER messages_fts_update; DROP TRIGGER messages_fts_delete;";
    without.store().database().write(|tx| Ok(tx.execute_batch(drop)?))?;
    plain.store().database().write(|tx| {
        Ok(tx.execute_batch(
            "DROP TRIGGER messages_fts_insert; CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages \
             WHEN NOT new.unsent BEGIN INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text); END;",
        )?)
    })?;
    let mut took = [Duration::ZERO; 3];
    for c in 0..CHANNELS {
        let (spec, msgs) = channel(c, per_channel, base);
        for (amc, took) in [&with, &plain, &without].into_iter().zip(took.iter_mut()) {
            let t = Instant::now();
            amc.store().ingest(Source::Discord, &spec, &msgs, None)?;
            *took += t.elapsed();
        }
    }
    let n = (per_channel * CHANNELS) as f64;
    let rate = |d: Duration| n / d.as_secs_f64();
    println!(
        "ingest of {n} messages, a transaction per channel: with both search indexes {:.0} msg/s, \
         unicode61 alone {:.0} msg/s, without {:.0} msg/s; time ratio with/without {:.2}",
        rate(took[0]),
        rate(took[1]),
        rate(took[2]),
        took[0].as_secs_f64() / took[2].as_secs_f64()
    );
    Ok(())
}
