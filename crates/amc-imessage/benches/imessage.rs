//! The iMessage source's figures: initial ingest of a 250,000-message chat.db; a sweep of
//! that file (wall and CPU time) with nothing to repair, after a restart, and with rows to
//! repair; the watcher at rest as AMC runs it (new messages' latency and CPU, wake-ups
//! after them); the latency of new messages, edits and unsends while the watcher sweeps it; the latency
//! from a commit in chat.db to the message being returned by `GET /messages/unread` on
//! the real daemon, and to 100 agents waiting on `GET /messages/unread/wait`; and of an
//! edit, an unsend and a rename reaching AMC. `cargo bench -p amc-imessage --bench
//! imessage`; `AMC_BENCH_MESSAGES` sets the chat.db's size. With `AMC_BENCH_KEEP=DIR` the
//! generated chat.db is kept in DIR (to run imessage-exporter on the same file). With
//! `AMC_BENCH_BAD_ROW=1` the row in the middle has NULL `date` and `is_from_me`, and the
//! ingest must still store every row.
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use amc_testkit::Stored;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use amc_core::config::Config;
use amc_core::events::Event;
use amc_core::model::HistoryRelease;
use amc_core::model::Source;
use amc_core::sender::Senders;
use amc_core::service::Amc;
use amc_imessage::chatdb::ChatDb;
use amc_imessage::fixture::{ChatDbWriter, FixtureMessage, GroupEvent, apple_ns};
use amc_imessage::sweep::{SweepReport, Sweeper};
use amc_imessage::sync::{CHECKPOINT_KEY, Checkpoint, SharedChatDb, sync_once};
use amc_imessage::watch::WatchConfig;
use amc_testkit::bench::cpu_time;
use tokio_util::sync::CancellationToken;

const CHATS: i64 = 200;
const SAMPLES: usize = 300;
/// Agents waiting at once, and how many commits they wait for.
const WAITERS: usize = 100;
const WAIT_ROUNDS: usize = 30;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let total: i64 = std::env::var("AMC_BENCH_MESSAGES").ok().and_then(|v| v.parse().ok()).unwrap_or(250_000);
    let tmp = tempfile::tempdir()?;
    let keep = std::env::var("AMC_BENCH_KEEP").ok().map(std::path::PathBuf::from);
    let dir = keep.clone().unwrap_or_else(|| tmp.path().to_owned());
    std::fs::create_dir_all(&dir)?;
    let chat_db = dir.join("chat.db");
    let _ = std::fs::remove_file(&chat_db);
    let body = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/imessage/attributed-body/AttributedBodyTextOnly"
    ))?;

    // A chat.db as Messages would have it: 200 chats, every third body only in attributedBody.
    let t = Instant::now();
    {
        let w = ChatDbWriter::create(&chat_db)?;
        w.connection().execute_batch("BEGIN")?;
        let mut chats = Vec::new();
        for c in 0..CHATS {
            let h = w.add_handle(&format!("+1555{c:07}"))?;
            chats.push((w.add_chat(&format!("iMessage;-;+1555{c:07}"), 45, None, &[h])?, h));
        }
        let base = amc_core::time::now_ms() - total * 1000;
        for i in 0..total {
            let (chat, handle) = chats[(i % CHATS) as usize];
            let m = FixtureMessage {
                guid: guid(i),
                text: (i % 3 != 0).then(|| format!("message {i}: see you at the usual place around seven")),
                attributed_body: (i % 3 == 0).then(|| body.clone()),
                handle_id: handle,
                is_from_me: i % 5 == 0,
                sent_at_ms: base + i * 1000,
                ..Default::default()
            };
            w.add_message(chat, &m)?;
        }
        if std::env::var_os("AMC_BENCH_BAD_ROW").is_some() {
            let middle = total / 2;
            w.connection()
                .execute("UPDATE message SET date = NULL, is_from_me = NULL WHERE guid = ?1", [guid(middle)])?;
            println!("row {} has NULL date and is_from_me", middle + 1);
        }
        w.connection().execute_batch("COMMIT")?;
    }
    println!("wrote a {total}-message chat.db in {:.1} s", t.elapsed().as_secs_f64());

    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        // Reading alone, for scale: imessage-database's decoding of every row.
        let reader = ChatDb::open(&chat_db)?;
        let t = Instant::now();
        let (mut after, mut read) = (0i64, 0usize);
        loop {
            let rows = reader.messages_after(after, 20_000)?;
            let Some(last) = rows.last() else { break };
            after = i64::from(last.rowid);
            read += rows.len();
        }
        println!(
            "reading chat.db alone: {read} rows in {:.2} s = {:.0} rows/s",
            t.elapsed().as_secs_f64(),
            read as f64 / t.elapsed().as_secs_f64()
        );
        drop(reader);

        // Initial ingest into an empty AMC.
        let data = tmp.path().join("amc-ingest");
        let config = Config::new(data);
        let amc = Amc::start(config, Senders::default())?;
        let db = Arc::new(Mutex::new(ChatDb::open(&chat_db)?));
        let t = Instant::now();
        let r = sync_once(&amc, &db).await?;
        let took = t.elapsed();
        println!(
            "initial ingest: {} rows in {:.2} s = {:.0} messages/s",
            r.rows,
            took.as_secs_f64(),
            r.rows as f64 / took.as_secs_f64()
        );
        let stored: i64 = amc.store().admin_channels(None, None)?.iter().map(|c| c.message_count).sum();
        println!("stored {stored} of {total} messages");
        if stored != total {
            return Err(format!("ingest stored {stored} of {total} messages").into());
        }
        sweeps(&amc, &db, &chat_db, total).await?;

        // Latency: a commit in a small chat.db to GET /messages/unread returning it.
        let small_dir = tmp.path().join("Messages");
        std::fs::create_dir_all(&small_dir)?;
        let small = small_dir.join("chat.db");
        let w = ChatDbWriter::create(&small)?;
        // As Messages: every commit synced to disk, the WAL kept open.
        w.connection().pragma_update(None, "synchronous", "FULL")?;
        let h = w.add_handle("+15550000001")?;
        let chat = w.add_chat("iMessage;-;+15550000001", 45, None, &[h])?;
        let seed = FixtureMessage {
            guid: "seed".into(),
            text: Some("seed".into()),
            handle_id: h,
            sent_at_ms: amc_core::time::now_ms(),
            ..Default::default()
        };
        w.add_message(chat, &seed)?;
        let data = tmp.path().join("amc-live");
        let config = Config::new(data);
        let socket = amc_daemon::bind_socket(&config.run_dir(), &config.socket_path())?;
        let amc = Amc::start(config.clone(), Senders::default())?;
        let stop = CancellationToken::new();
        let mut events = amc.events().subscribe();
        // The Messages folder's watch reports no writes, as FSEvents on a Mac: only the
        // file watch can see a commit. The fallback check is an hour away.
        let watch = watching(&small, Duration::from_secs(3600), amc_imessage::watch::SweepPeriods::default());
        tokio::spawn(amc_imessage::watch::run(amc.clone(), watch, stop.clone()));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(amc_daemon::serve(amc.clone(), socket, None, async move {
            let _ = stop_rx.await;
        }));
        let channel_id = loop {
            if let Ok(Event::ChannelCreated { channel_id }) = events.recv().await {
                break channel_id;
            }
        };
        amc.store().approve_channel(&channel_id, HistoryRelease::All, None, false)?;
        let (_, token) = amc.store().create_agent("bench")?;
        let mut client = amc_client::Connection::connect(&config.socket_path())
            .await?
            .with_bearer(&token)
            .with_header("x-agent-id", "bench");
        // A message from the chat's person, sent now, as Messages writes it.
        let incoming = |guid: String, text: &str| sent_now(guid, text, h);
        let mut samples = Vec::with_capacity(SAMPLES);
        for i in 0..SAMPLES {
            tokio::time::sleep(Duration::from_millis(5)).await;
            while events.try_recv().is_ok() {}
            let text = format!("live {i}");
            let m = incoming(format!("live-{i}"), &text);
            let t0 = Instant::now();
            w.add_message(chat, &m)?;
            loop {
                match tokio::time::timeout(Duration::from_secs(10), events.recv()).await {
                    Ok(Ok(Event::MessagesChanged { inserted, .. })) if inserted > 0 => break,
                    Ok(_) => {}
                    Err(_) => return Err("no event within 10 s".into()),
                }
            }
            let page = client.get("/messages/unread?limit=100").await?.json();
            samples.push(t0.elapsed());
            let listed: Vec<&serde_json::Value> = page["messages"].as_array().into_iter().flatten().collect();
            assert!(listed.iter().any(|m| m["text"] == text.as_str()), "{page}");
            let all: Vec<&str> = listed.iter().filter_map(|m| m["id"].as_str()).collect();
            client.post("/messages/mark_read", &serde_json::json!({ "message_ids": all })).await?;
        }
        println!("{}", amc_testkit::Latencies::of(samples).line("commit in chat.db → GET /messages/unread returns it"));

        // The same commit, told to agents that wait: WAITERS agents each hold
        // GET /messages/unread/wait (the REST twin of wait_for_unread_messages) open.
        let mut tokens = Vec::with_capacity(WAITERS);
        for a in 0..WAITERS {
            tokens.push(amc.store().create_agent(&format!("waiter-{a}"))?.1);
        }
        let mut samples = Vec::with_capacity(WAITERS * WAIT_ROUNDS);
        for round in 0..WAIT_ROUNDS {
            let since = amc_core::time::format_ms(amc_core::time::now_ms());
            let before = amc.events().listeners();
            let mut waits = Vec::with_capacity(WAITERS);
            for (a, token) in tokens.iter().enumerate() {
                let mut c = amc_client::Connection::connect(&config.socket_path())
                    .await?
                    .with_bearer(token)
                    .with_header("x-agent-id", &format!("waiter-{a}"));
                let path = format!("/messages/unread/wait?timeout_seconds=25&since={since}");
                waits.push(tokio::spawn(async move {
                    let page = c.get(&path).await.map(|r| r.json());
                    (Instant::now(), page)
                }));
            }
            // Every wait is in the daemon, listening, before the commit.
            while amc.events().listeners() < before + WAITERS {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let text = format!("to the waiters {round}");
            let m = incoming(format!("wait-{round}"), &text);
            let t0 = Instant::now();
            w.add_message(chat, &m)?;
            for wait in waits {
                let (done, page) = wait.await?;
                let page = page?;
                assert!(
                    page["messages"].as_array().into_iter().flatten().any(|m| m["text"] == text.as_str()),
                    "{page}"
                );
                samples.push(done.saturating_duration_since(t0));
            }
        }
        println!(
            "{}",
            amc_testkit::Latencies::of(samples)
                .line(&format!("commit in chat.db → {WAITERS} waiting GET /messages/unread/wait answer"))
        );
        changes(&amc, &w, h).await?;
        stop.cancel();
        let _ = stop_tx.send(());
        server.await??;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    Ok(())
}

/// The sweep of the imported file: with nothing to repair, then with 1,000 rows edited far
/// back and 100 rows AMC lost; then new messages, edits and unsends while the watcher
/// sweeps without a pause between sweeps (each commit makes the next one due).
async fn sweeps(
    amc: &Amc,
    db: &SharedChatDb,
    chat_db: &std::path::Path,
    total: i64,
) -> Result<(), Box<dyn std::error::Error>> {
    let pid = std::process::id();
    let measure = |what: &str, t: Instant, cpu0: Duration, r: &SweepReport| {
        println!(
            "{what}: {} rows ({} in unchanged ranges) in {:.2} s wall, {:.2} s CPU; {} read again, {} stored, {} updated",
            r.rows,
            r.unchanged,
            t.elapsed().as_secs_f64(),
            (cpu_time(pid).saturating_sub(cpu0)).as_secs_f64(),
            r.decoded,
            r.inserted,
            r.updated
        );
    };
    let mut sweeper = Sweeper::default();
    let (t, cpu0) = (Instant::now(), cpu_time(pid));
    let first = sweeper.all(amc, db).await?;
    measure("first sweep (no memory: every range compared with the store), nothing to repair", t, cpu0, &first);
    let (t, cpu0) = (Instant::now(), cpu_time(pid));
    let quiet = sweeper.all(amc, db).await?;
    measure("next sweep, nothing changed", t, cpu0, &quiet);
    let (t, cpu0) = (Instant::now(), cpu_time(pid));
    let restarted = Sweeper::default().all(amc, db).await?;
    measure("first sweep after a restart (its memory read from the store), nothing changed", t, cpu0, &restarted);

    // 1,000 old rows edited, and 100 new rows the checkpoint passed without reading (as
    // after a rebuild): the sweep reads those again and nothing else.
    let writer = ChatDbWriter::open(chat_db)?;
    writer.connection().execute(
        "UPDATE message SET date_edited = date + 60000000000 WHERE ROWID % (?1 / 1000) = 0 AND ROWID <= ?1",
        [total],
    )?;
    let chat: i64 = writer.connection().query_row("SELECT min(ROWID) FROM chat", [], |r| r.get(0))?;
    let handle: i64 = writer.connection().query_row("SELECT min(ROWID) FROM handle", [], |r| r.get(0))?;
    writer.connection().execute_batch("BEGIN")?;
    for i in 0..100 {
        let m = sent_now(format!("lost-{i}"), &format!("lost {i}"), handle);
        writer.add_message(chat, &m)?;
    }
    writer.connection().execute_batch("COMMIT")?;
    let (rowid, rows): (i64, i64) =
        writer
            .connection()
            .query_row("SELECT max(ROWID), count(*) FROM message", [], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let passed = Checkpoint { rowid, guid: Some("lost-99".into()), rows: Some(rows) };
    amc.set_checkpoint(Source::Imessage, CHECKPOINT_KEY, &passed.encode()).await?;
    let (t, cpu0) = (Instant::now(), cpu_time(pid));
    let repaired = sweeper.all(amc, db).await?;
    measure("next sweep, 1,000 edits and 100 lost rows", t, cpu0, &repaired);
    if repaired.inserted != 100 || repaired.updated < 1000 {
        return Err(format!("the sweep repaired {repaired:?}").into());
    }

    at_rest(amc, chat_db, &writer, chat, handle).await?;

    // The watcher on this file, sweeping back to back: what a new message, an edit and an
    // unsend wait for while it does.
    let stop = CancellationToken::new();
    let watch = watching(chat_db, Duration::from_secs(3600), amc_imessage::watch::SweepPeriods::all(Duration::ZERO));
    let mut events = amc.events().subscribe();
    let watcher = tokio::spawn(amc_imessage::watch::run(amc.clone(), watch, stop.clone()));
    let cpu0 = cpu_time(pid);
    let t = Instant::now();
    let mut samples = Vec::new();
    for i in 0..100 {
        let m = sent_now(format!("swept-{i}"), &format!("while sweeping {i}"), handle);
        samples
            .push(timed(&mut events, SWEEP_PAUSE, "a new message", inserted, || writer.add_message(chat, &m)).await?);
    }
    println!("{}", amc_testkit::Latencies::of(samples).line("new message while sweeping back to back"));
    let mut samples = Vec::new();
    for i in 0..100 {
        let edit = || edit(writer.connection(), &format!("swept-{i}"), &format!("edited {i}"));
        samples.push(timed(&mut events, SWEEP_PAUSE, "an edit while sweeping", updated, edit).await?);
    }
    println!("{}", amc_testkit::Latencies::of(samples).line("edit while sweeping back to back"));
    println!(
        "watcher sweeping back to back over {total} rows for {:.1} s: {:.2} s CPU",
        t.elapsed().as_secs_f64(),
        cpu_time(pid).saturating_sub(cpu0).as_secs_f64()
    );
    stop.cancel();
    watcher.await?;
    Ok(())
}

/// The watcher as AMC runs it (the sweep's default periods) on this file: its first sweep
/// on opening, then new messages one every 2 s (each the event path's work: the read, the
/// newest 2,000 rows compared, the recent sends looked at), then three minutes at rest, then a message a minute for five. New
/// messages start no sweep, so an hour with one a minute costs 60 messages' work and a
/// sixth of a periodic sweep.
async fn at_rest(
    amc: &Amc,
    chat_db: &std::path::Path,
    writer: &ChatDbWriter,
    chat: i64,
    handle: i64,
) -> Result<(), Box<dyn std::error::Error>> {
    let pid = std::process::id();
    let stop = CancellationToken::new();
    let watch = watching(chat_db, Duration::from_secs(30), amc_imessage::watch::SweepPeriods::default());
    let mut events = amc.events().subscribe();
    let (t, cpu0) = (Instant::now(), cpu_time(pid));
    let watcher = tokio::spawn(amc_imessage::watch::run(amc.clone(), watch, stop.clone()));
    // The first sweep on opening is over when the process's CPU time stops growing.
    let mut last = cpu_time(pid);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = cpu_time(pid);
        if now.saturating_sub(last) <= Duration::from_millis(10) {
            break;
        }
        last = now;
    }
    println!(
        "watcher opening the file, with its first sweep: {:.2} s wall, {:.2} s CPU",
        t.elapsed().as_secs_f64(),
        last.saturating_sub(cpu0).as_secs_f64()
    );
    const MESSAGES: usize = 30;
    let cpu0 = cpu_time(pid);
    let mut samples = Vec::new();
    for i in 0..MESSAGES {
        let m = sent_now(format!("rest-{i}"), &format!("at rest {i}"), handle);
        samples.push(
            timed(&mut events, Duration::from_secs(2), "a new message", inserted, || writer.add_message(chat, &m))
                .await?,
        );
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let per_message = cpu_time(pid).saturating_sub(cpu0).as_secs_f64() / MESSAGES as f64;
    println!("{}", amc_testkit::Latencies::of(samples).line("new message, one every 2 s, default sweep periods"));
    // The first minute holds the slow look the change is owed (at the next 30 s check);
    // the next two are rest with nothing written.
    for what in
        ["the minute after them (the slow look after a change included)", "the two minutes after that (at rest)"]
    {
        let (switches0, cpu0, t) = (context_switches(), cpu_time(pid), Instant::now());
        let minutes = if what.contains("two") { 2 } else { 1 };
        tokio::time::sleep(Duration::from_secs(60 * minutes)).await;
        let at_rest = t.elapsed().as_secs_f64();
        let by_thread = switches_between(&switches0, &context_switches());
        let threads: Vec<String> = by_thread
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(name, n)| format!("{name} {:.2}", *n as f64 / at_rest))
            .collect();
        println!(
            "{what}: {:.2} wake-ups/s (context switches of every thread: {}), {:.3} s CPU in {at_rest:.0} s",
            by_thread.values().sum::<u64>() as f64 / at_rest,
            threads.join(", "),
            cpu_time(pid).saturating_sub(cpu0).as_secs_f64()
        );
    }
    // A person who gets a message a minute: each one's event path, and the slow look it
    // is owed at the next 30 s check, for five minutes; the whole process's CPU.
    let (cpu0, t) = (cpu_time(pid), Instant::now());
    for i in 0..5 {
        let m = sent_now(format!("minute-{i}"), &format!("a minute {i}"), handle);
        timed(&mut events, Duration::from_secs(2), "a new message", inserted, || writer.add_message(chat, &m)).await?;
        tokio::time::sleep_until((t + Duration::from_secs(60 * (i + 1))).into()).await;
    }
    let cpu = cpu_time(pid).saturating_sub(cpu0).as_secs_f64();
    let hour = cpu * 3600.0 / t.elapsed().as_secs_f64();
    println!(
        "one new message a minute for 5 minutes: {cpu:.2} s CPU, {hour:.1} s an hour ({:.3} % of a core), sweeps not included",
        hour / 36.0
    );
    stop.cancel();
    watcher.await?;
    println!("CPU per new message (event path, no sweep): {:.1} ms", per_message * 1000.0);
    Ok(())
}

/// Context switches so far of each thread of this process, by thread id, with its name.
fn context_switches() -> std::collections::HashMap<String, (String, u64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Default::default() };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| {
            let status = std::fs::read_to_string(t.path().join("status")).ok()?;
            let name = status.lines().find_map(|l| l.strip_prefix("Name:")).unwrap_or_default().trim().to_owned();
            let switches = status
                .lines()
                .filter(|l| l.starts_with("voluntary_ctxt_switches") || l.starts_with("nonvoluntary_ctxt_switches"))
                .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
                .sum();
            Some((t.file_name().to_string_lossy().into_owned(), (name, switches)))
        })
        .collect()
}

/// The context switches between two counts, by thread name: each thread's since the
/// first, a thread started since counting all of its own (one that ended is not counted).
fn switches_between(
    before: &std::collections::HashMap<String, (String, u64)>,
    after: &std::collections::HashMap<String, (String, u64)>,
) -> std::collections::BTreeMap<String, u64> {
    let mut by_name = std::collections::BTreeMap::new();
    for (tid, (name, n)) in after {
        let was = before.get(tid).map_or(0, |(_, n)| *n);
        *by_name.entry(name.clone()).or_default() += n.saturating_sub(was);
    }
    by_name
}

/// A message from `handle`, sent now, as Messages writes it.
fn sent_now(guid: String, text: &str, handle: i64) -> FixtureMessage {
    FixtureMessage {
        guid,
        text: Some(text.to_owned()),
        handle_id: handle,
        sent_at_ms: amc_core::time::now_ms(),
        ..Default::default()
    }
}

/// The watcher's settings for `chat_db`: a fallback check every `poll`, sweeps as
/// `sweeps` says, and only the folder events a Mac's FSEvents delivers.
fn watching(chat_db: &std::path::Path, poll: Duration, sweeps: amc_imessage::watch::SweepPeriods) -> WatchConfig {
    WatchConfig {
        chat_db: chat_db.to_owned(),
        poll,
        sweeps,
        contacts: Vec::new(),
        late_horizon: Some(amc_imessage::settings::LATE_HORIZON),
        dir_events: amc_imessage::watch::DirEvents::Namespace,
    }
}

/// Edits, unsends and renames in the live chat.db: from the commit to AMC's event.
async fn changes(amc: &Amc, w: &ChatDbWriter, handle: i64) -> Result<(), Box<dyn std::error::Error>> {
    let mut events = amc.events().subscribe();
    let group = w.add_chat("any;+;chat1234567890", 43, Some("Trip"), &[handle])?;
    let (mut edits, mut unsends, mut renames) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..SAMPLES / 3 {
        let m = sent_now(format!("change-{i}"), &format!("to change {i}"), handle);
        timed(&mut events, PAUSE, "a new message", inserted, || w.add_message(group, &m)).await?;
        let edit = || edit(w.connection(), &m.guid, &format!("changed {i}"));
        edits.push(timed(&mut events, PAUSE, "an edit", updated, edit).await?);
        let unsend = || {
            w.connection().execute(
                "UPDATE message SET date_edited = ?1, date_retracted = ?1, message_summary_info = ?2, text = NULL \
                 WHERE guid = ?3",
                rusqlite::params![apple_ns(amc_core::time::now_ms()), unsent_info(), m.guid],
            )
        };
        unsends.push(timed(&mut events, PAUSE, "an unsend", updated, unsend).await?);
        let rename = GroupEvent {
            guid: format!("rename-{i}"),
            handle_id: handle,
            item_type: 2,
            group_title: Some(format!("Trip {i}")),
            at_ms: amc_core::time::now_ms(),
            ..Default::default()
        };
        let renamed = |e: &Event| matches!(e, Event::ChannelChanged { .. });
        renames.push(
            timed(&mut events, PAUSE, &format!("rename {i}"), renamed, || w.add_group_event(group, &rename)).await?,
        );
    }
    println!("{}", amc_testkit::Latencies::of(edits).line("edit in chat.db → AMC has it"));
    println!("{}", amc_testkit::Latencies::of(unsends).line("unsend in chat.db → AMC has it"));
    println!("{}", amc_testkit::Latencies::of(renames).line("rename in chat.db → AMC has it"));
    Ok(())
}

/// The pause before a timed change: the watcher's quick looks after the last one settle.
const PAUSE: Duration = Duration::from_millis(5);
/// The same while the watcher sweeps: a chunk or two of the sweep between changes.
const SWEEP_PAUSE: Duration = Duration::from_millis(20);

/// Makes `change` (a commit in chat.db) after a pause, and times it until AMC's event that
/// `wanted` accepts.
async fn timed<T>(
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    pause: Duration,
    what: &str,
    wanted: impl Fn(&Event) -> bool,
    change: impl FnOnce() -> rusqlite::Result<T>,
) -> Result<Duration, Box<dyn std::error::Error>> {
    tokio::time::sleep(pause).await;
    while events.try_recv().is_ok() {}
    let t0 = Instant::now();
    change()?;
    wait_for(events, what, wanted).await?;
    Ok(t0.elapsed())
}

/// A message stored for the first time.
fn inserted(e: &Event) -> bool {
    matches!(e, Event::MessagesChanged { inserted, .. } if *inserted > 0)
}

/// A stored message changed.
fn updated(e: &Event) -> bool {
    matches!(e, Event::MessagesChanged { updated, .. } if *updated > 0)
}

/// Edits the row with this guid to `text`, now, as Messages records an edit.
fn edit(c: &rusqlite::Connection, guid: &str, text: &str) -> rusqlite::Result<usize> {
    c.execute(
        "UPDATE message SET date_edited = ?1, text = ?2 WHERE guid = ?3",
        rusqlite::params![apple_ns(amc_core::time::now_ms()), text, guid],
    )
}

/// The `message_summary_info` Messages writes for an unsent message.
fn unsent_info() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/imessage/message-summary-info/Deleted.plist"
    ))
    .expect("the unsend fixture")
}

/// Waits (10 s at most) for an event that `wanted` accepts.
async fn wait_for(
    events: &mut tokio::sync::broadcast::Receiver<Event>,
    what: &str,
    wanted: impl Fn(&Event) -> bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(e)) if wanted(&e) => return Ok(()),
            Ok(_) => {}
            Err(_) => return Err(format!("no event within 10 s: {what}").into()),
        }
    }
}

/// Message `i`'s guid, shaped as Messages writes them: a random uppercase UUID (the real
/// chat properties in imessage-database's test data name `87D5257D-6536-4067-A8A0-…`),
/// so rows in ROWID order have guids in no order at all. The same `i` gives the same guid.
fn guid(i: i64) -> String {
    // splitmix64, twice: 128 well-mixed bits from the row's number.
    let mix = |mut z: u64| {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let (a, b) = (mix(i as u64), mix(!(i as u64)));
    format!(
        "{:08X}-{:04X}-4{:03X}-{:04X}-{:012X}",
        a >> 32,
        (a >> 16) & 0xFFFF,
        a & 0xFFF,
        0x8000 | ((b >> 48) & 0x3FFF),
        b & 0xFFFF_FFFF_FFFF
    )
}
