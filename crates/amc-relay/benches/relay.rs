//! The relay's three figures: how fast a post wakes 1,000 waiting `wait_for_messages`
//! calls, how many posts per second one thread takes (with search indexing; beside SQLite
//! alone committing each post and its search row, the floor for one caller), and search
//! latency over 1,000,000 messages. `cargo bench -p amc-relay --bench relay`;
//! `AMC_BENCH_MESSAGES` scales the search corpus, `AMC_BENCH_SETTLE_MS` pauses between
//! the waiters' start and the post (0 by default: a post landing while waiters start is
//! the common case), and `AMC_BENCH_PARTS` picks parts (`wake,posts,search`).
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::sync::Arc;
use std::time::{Duration, Instant};

use amc_core::config::Config;
use amc_core::sender::Senders;
use amc_core::service::Amc;
use amc_core::token::hash_token;
use amc_relay::{Principal, Relay};

const WAITERS_DEFAULT: usize = 1000;
const ROUNDS: usize = 20;

const WORDS: &[&str] = &[
    "deploy",
    "release",
    "budget",
    "review",
    "schedule",
    "incident",
    "customer",
    "invoice",
    "design",
    "meeting",
    "launch",
    "migration",
    "database",
    "latency",
    "roadmap",
    "contract",
    "hiring",
    "travel",
    "report",
    "backup",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let waiters: usize =
        std::env::var("AMC_BENCH_WAITERS").ok().and_then(|v| v.parse().ok()).unwrap_or(WAITERS_DEFAULT);
    let settle: u64 = std::env::var("AMC_BENCH_SETTLE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let corpus: usize = std::env::var("AMC_BENCH_MESSAGES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let parts = std::env::var("AMC_BENCH_PARTS").unwrap_or_else(|_| "wake,posts,search".into());
    let part = |name: &str| parts.split(',').any(|p| p.trim() == name);
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let dir = tempfile::tempdir()?;
    let config = Config::new(dir.path().to_owned());
    let amc = Amc::start(config, Senders::default())?;
    let relay = Relay::open(&amc)?;
    let owner = Principal::Person;

    rt.block_on(async {
        // 1. Wake latency with 1,000 waiters on one thread.
        if part("wake") {
            let thread = relay.create_thread(&owner, "wake".into(), "wake".into()).await?.thread_id;
            let mut cursor = relay.read(&owner, thread.clone(), None, None).await?.next_cursor;
            let mut samples = Vec::with_capacity(waiters * ROUNDS);
            for round in 0..ROUNDS {
                let mut waits = Vec::with_capacity(waiters);
                for _ in 0..waiters {
                    let (relay, thread, cursor) = (relay.clone(), thread.clone(), cursor.clone());
                    waits.push(tokio::spawn(async move {
                        let page = relay
                            .wait(&Principal::Person, thread, cursor, Some(25), Some(1), std::future::pending())
                            .await;
                        (Instant::now(), page)
                    }));
                }
                // Every waiter has subscribed; give them time to finish their first read and
                // park, so the figure is the wake itself, not the start of the waits.
                while relay.waiters() < waiters {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                tokio::time::sleep(Duration::from_millis(settle)).await;
                let t0 = Instant::now();
                relay.send(&owner, thread.clone(), format!("wake {round}"), None, format!("w{round}")).await?;
                for w in waits {
                    let (done, page) = w.await?;
                    let page = page?;
                    assert_eq!(page.messages.len(), 1);
                    cursor = page.next_cursor;
                    samples.push(done.saturating_duration_since(t0));
                }
            }
            println!(
                "{}",
                amc_testkit::Latencies::of(samples).line(&format!("wait_for_messages wake latency, {waiters} waiters"))
            );
        }

        // 2. Sustained posts into one thread, with search indexing.
        if part("posts") {
            let thread = relay.create_thread(&owner, "firehose".into(), "firehose".into()).await?.thread_id;
            let posts = 20_000;
            let t0 = Instant::now();
            for i in 0..posts {
                let body = format!("{} {} note {i}", WORDS[i % WORDS.len()], WORDS[(i * 7) % WORDS.len()]);
                relay.send(&owner, thread.clone(), body, None, format!("p{i}")).await?;
            }
            let one = t0.elapsed();
            println!(
                "send_message into one thread, one caller: {:.0} posts/s ({posts} posts)",
                posts as f64 / one.as_secs_f64()
            );
            let t0 = Instant::now();
            let callers = 8;
            let mut tasks = Vec::new();
            for c in 0..callers {
                let (relay, thread) = (relay.clone(), thread.clone());
                tasks.push(tokio::spawn(async move {
                    for i in 0..posts / callers {
                        let body = format!("{} parallel {c} {i}", WORDS[i % WORDS.len()]);
                        relay.send(&Principal::Person, thread.clone(), body, None, format!("c{c}-{i}")).await?;
                    }
                    Ok::<_, amc_core::Error>(())
                }));
            }
            for t in tasks {
                t.await??;
            }
            println!(
                "send_message into one thread, {callers} callers: {:.0} posts/s ({posts} posts)",
                posts as f64 / t0.elapsed().as_secs_f64()
            );
            let floor = sqlite_alone(posts)?;
            println!(
                "SQLite alone, one commit per post with its search row: {floor:.0} posts/s; \
                 ratio one caller / SQLite alone {:.2}",
                posts as f64 / one.as_secs_f64() / floor
            );
        }

        // 3. Search over a large corpus: many threads, the searcher a member of all.
        if !part("search") {
            return Ok(());
        }
        let store = relay.store().clone();
        let threads = 100;
        let t0 = Instant::now();
        let seeker = "agent:seeker";
        let store2 = store.clone();
        tokio::task::spawn_blocking(move || -> Result<(), amc_core::Error> {
            let now = amc_core::time::now_ms();
            for t in 0..threads {
                let id = format!("00000000-0000-4000-8000-{t:012}");
                store2.create_thread(
                    &id,
                    "person",
                    &format!("corpus {t} {}", WORDS[t % WORDS.len()]),
                    &format!("c{t}"),
                    now,
                )?;
                let token = format!("amc_relay_read_{t:064}");
                store2.mint_token(&id, amc_relay::Access::Read, &hash_token(&token), "person", None, now)?;
                store2.join(&id, &hash_token(&token), seeker, now)?;
                for i in 0..corpus / threads {
                    let body = format!(
                        "{} {} {} item {i} of thread {t}",
                        WORDS[(i * 3 + t) % WORDS.len()],
                        WORDS[(i * 11 + 5) % WORDS.len()],
                        WORDS[(i * 17 + t * 3) % WORDS.len()]
                    );
                    let key = format!("k{i}");
                    store2.post(&id, "person", &body, None, &key, &hash_token(&key), now)?;
                }
            }
            Ok(())
        })
        .await??;
        println!("loaded {corpus} messages in {threads} threads for search: {:.1} s", t0.elapsed().as_secs_f64());
        let who = Principal::Agent("seeker".into());
        let _ = Arc::new(());
        let mut samples = Vec::new();
        for i in 0..500 {
            let q = format!("{} {}", WORDS[i % WORDS.len()], WORDS[(i * 3 + 1) % WORDS.len()]);
            let t = Instant::now();
            let page = relay.search(&who, q, None, Some(20)).await?;
            samples.push(t.elapsed());
            assert!(!page.hits.is_empty());
        }
        println!(
            "{}",
            amc_testkit::Latencies::of(samples)
                .line(&format!("search_threads over {corpus} messages (2 words, 20 hits)"))
        );
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}

/// The floor under one caller's posts: SQLite alone, each post a row of a table keyed
/// as the relay's (thread, seq) and a row of an FTS5 index with the relay's tokenizer,
/// in a transaction of its own, in WAL with `synchronous = NORMAL` (as AMC's store), on
/// the same disk. Posts per second.
fn sqlite_alone(posts: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let mut conn = rusqlite::Connection::open(dir.path().join("alone.db"))?;
    conn.pragma_update(None, "journal_mode", "wal")?;
    conn.pragma_update(None, "synchronous", "normal")?;
    conn.execute_batch(
        "CREATE TABLE posts (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, \
         PRIMARY KEY (thread_id, seq)) WITHOUT ROWID; \
         CREATE VIRTUAL TABLE posts_fts USING fts5 (thread_id UNINDEXED, seq UNINDEXED, text, \
         tokenize = 'unicode61 remove_diacritics 2');",
    )?;
    let thread = uuid::Uuid::new_v4().to_string();
    let t0 = Instant::now();
    for i in 0..posts {
        let body = format!("{} {} note {i}", WORDS[i % WORDS.len()], WORDS[(i * 7) % WORDS.len()]);
        let tx = conn.transaction()?;
        tx.prepare_cached("INSERT INTO posts (thread_id, seq, body) VALUES (?1, ?2, ?3)")?
            .execute(rusqlite::params![thread, i as i64 + 1, body])?;
        tx.prepare_cached("INSERT INTO posts_fts (thread_id, seq, text) VALUES (?1, ?2, ?3)")?
            .execute(rusqlite::params![thread, i as i64 + 1, body])?;
        tx.commit()?;
    }
    Ok(posts as f64 / t0.elapsed().as_secs_f64())
}
