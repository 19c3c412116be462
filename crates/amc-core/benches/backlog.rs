//! What classifying a store's older messages for one-time codes costs
//! (`Store::classify_more`, the backlog after an upgrade of the rules), over 1,000,000
//! messages of which one in fifty holds a code.
//!
//!     cargo bench -p amc-core --bench backlog

use std::time::Instant;

fn main() {
    backlog(1_000_000);
}

/// Classifies `n` stored messages as the backlog does after an upgrade.
fn backlog(n: i64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = amc_store::Store::open(&dir.path().join("amc.db")).expect("open");
    let spec = amc_types::model::ChannelSpec {
        platform_id: "any;-;+15551234567".into(),
        name: "Ada".into(),
        kind: amc_types::model::ChannelKind::Dm,
        readers: None,
    };
    let channel = store.ingest(amc_types::model::Source::Imessage, &spec, &[], None).expect("channel").channel_id;
    store.defer_indexing().expect("no index while filling");
    store
        .database()
        .write(|tx| {
            tx.execute(
                "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?2) \
                 INSERT INTO messages (id, channel, platform_id, source, sender_id, text, sent_at, direction, ingested_at) \
                 SELECT printf('msg_%026d', i), (SELECT key FROM channels WHERE id = ?1), 'p' || i, 'imessage', \
                 '+15551234567', CASE WHEN i % 50 = 0 THEN 'Your verification code is ' || (100000 + i % 900000) \
                 ELSE 'Are we still on for dinner tonight? The place by the park, table for ' || (i % 9) END, \
                 i, 'inbound', i FROM k",
                (channel.as_str(), n),
            )?;
            tx.execute("UPDATE messages SET secrets = NULL", [])?;
            tx.execute(
                "INSERT INTO secrets_backlog (id, lo, hi, total) SELECT 1, min(rowid), max(rowid), count(*) FROM messages",
                [],
            )?;
            Ok(())
        })
        .expect("fill");
    let started = Instant::now();
    let mut batches = 0;
    while store.classify_more(2_000).expect("classify").is_some() {
        batches += 1;
    }
    let took = started.elapsed().as_secs_f64();
    let held = store.admin_channel(&channel).expect("channel").secret_count;
    assert_eq!(held, n / 50, "every fiftieth holds a code");
    eprintln!(
        "Store::classify_more over {n} stored messages: {took:.1} s ({:.1} µs per message, {} transactions of 2,000)",
        took * 1e6 / n as f64,
        batches + 1
    );
}
