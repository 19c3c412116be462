//! The store: AMC's one SQLite database. This module tree is the only code that writes
//! SQL; everything else calls the typed methods here.
//!
//! # Layout
//! - `mod.rs`: opening, pragmas, migrations, the connection pool.
//! - `channels.rs`: channels and the person's approval.
//! - `messages.rs`: ingest, unread, context, read state.
//! - `agents.rs`: agents and their hashed tokens.
//! - `outbox.rs`: agents' sends and their idempotency records.
//! - `relay.rs`: the agent relay's threads, tokens, messages and search index.

mod agents;
mod channels;
mod messages;
mod outbox;
mod relay;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::error::{Error, Result};

pub use agents::{AGENT_TOKEN_PREFIX, hash_token, new_token};
pub use channels::{AllowedChannel, ChannelSpec, SendTarget};
pub use messages::{AttachmentFile, IngestReport, ReactionChange, UnreadQuery};
pub use outbox::{NewSend, SendLookup, SendOutcome};
pub use relay::{Access, PERSON, RelayMessage, SearchHit, ThreadMeta, TokenInfo};

/// The migrations, in order; `PRAGMA user_version` is the number applied.
const MIGRATIONS: &[(&str, &str)] = &[
    ("0001_initial", include_str!("migrations/0001_initial.sql")),
    ("0002_relay", include_str!("migrations/0002_relay.sql")),
    ("0003_release_by_arrival", include_str!("migrations/0003_release_by_arrival.sql")),
    ("0004_platform_aliases", include_str!("migrations/0004_platform_aliases.sql")),
    ("0005_imessage_conversations", include_str!("migrations/0005_imessage_conversations.sql")),
];

/// How long a connection waits for a lock held by another before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A cheap, cloneable handle on the database: one writer connection, and a pool of
/// readers that WAL lets run beside it.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// Message ids made within one millisecond still sort in the order they were made.
    ids: Mutex<ulid::Generator>,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and applies pending migrations.
    #[tracing::instrument(skip_all, fields(path = %path.display()), err)]
    pub fn open(path: &Path) -> Result<Self> {
        let mut writer = open_connection(path, false)?;
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        writer.pragma_update(None, "journal_mode", "wal")?;
        migrate(&mut writer)?;
        Ok(Self {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
                ids: Mutex::new(ulid::Generator::new()),
            }),
        })
    }

    /// A new `msg_<ULID>`, later than every one this store made before.
    pub fn next_message_id(&self) -> String {
        let mut generator = self.inner.ids.lock().unwrap_or_else(|p| p.into_inner());
        match generator.generate() {
            Ok(id) => format!("msg_{id}"),
            // The random part ran out within one millisecond: a fresh id is still unique.
            Err(_) => crate::ids::new_message_id(),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` in one write transaction (`BEGIN IMMEDIATE`), committing if it returns `Ok`.
    pub fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        // A panic inside an earlier closure dropped its transaction, which rolled back:
        // the connection is still sound.
        let mut conn = self.inner.writer.lock().unwrap_or_else(|p| p.into_inner());
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = f(&tx)?;
        tx.commit()?;
        Ok(out)
    }

    /// Runs `f` in one read transaction on a pooled reader: every query in it sees the
    /// same snapshot.
    pub fn read<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let pooled = self.inner.readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut conn = match pooled {
            Some(c) => c,
            None => open_connection(&self.inner.path, true)?,
        };
        let out = {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Deferred)?;
            let out = f(&tx);
            tx.finish()?;
            out
        };
        if let Ok(mut pool) = self.inner.readers.lock()
            && pool.len() < 8
        {
            pool.push(conn);
        }
        out
    }
}

fn open_connection(path: &Path, read_only: bool) -> Result<Connection> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "synchronous", "normal")?;
    // The hot indexes of a large inbox stay in memory: 64 MiB of page cache per
    // connection (allocated as used), and reads through a memory map.
    conn.pragma_update(None, "cache_size", -65_536)?;
    conn.pragma_update(None, "mmap_size", 268_435_456)?;
    conn.pragma_update(None, "temp_store", "memory")?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Applies every migration newer than `PRAGMA user_version`, each in its own transaction.
fn migrate(conn: &mut Connection) -> Result<()> {
    let current: usize = conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0))?.try_into().unwrap_or(0);
    if current > MIGRATIONS.len() {
        return Err(Error::internal(format_args!(
            "the database is from a newer AMC (schema {current}, this build knows {})",
            MIGRATIONS.len()
        )));
    }
    for (i, (name, sql)) in MIGRATIONS.iter().enumerate().skip(current) {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute_batch(sql).map_err(|e| Error::internal(format_args!("migration {name}: {e}")))?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
        tracing::info!(migration = name, "applied");
    }
    Ok(())
}

/// The schema version this build writes.
pub fn schema_version() -> usize {
    MIGRATIONS.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_apply_to_an_empty_database_and_set_user_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        let store = Store::open(&path).expect("open");
        let (version, tables, journal): (i64, i64, String) = store
            .read(|tx| {
                Ok((
                    tx.pragma_query_value(None, "user_version", |r| r.get(0))?,
                    tx.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table'", [], |r| r.get(0))?,
                    tx.pragma_query_value(None, "journal_mode", |r| r.get(0))?,
                ))
            })
            .expect("read");
        assert_eq!(version as usize, schema_version());
        assert!(tables >= 9, "{tables} tables");
        assert_eq!(journal, "wal");
        drop(store);
        // Opening again applies nothing and keeps the data.
        let again = Store::open(&path).expect("reopen");
        let v: i64 = again.read(|tx| Ok(tx.pragma_query_value(None, "user_version", |r| r.get(0))?)).expect("v");
        assert_eq!(v as usize, schema_version());
    }

    /// A person's iMessage, SMS and macOS 26 chats were three channels: the migration makes
    /// them one, with every message, and with the most careful of their settings.
    #[test]
    fn imessage_channels_of_one_conversation_are_merged_with_the_most_careful_settings() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        drop(Store::open(&path).expect("open"));
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "INSERT INTO channels (id, source, platform_id, name, kind, state, visible_from, send_policy, created_at, updated_at, last_message_at) VALUES
               ('ch_a', 'imessage', 'iMessage;-;+15551234567', 'Ada', 'dm', 'allowed', NULL, 'auto', 1, 1, 10),
               ('ch_b', 'imessage', 'SMS;-;+15551234567', 'Ada', 'dm', 'allowed', 500, 'review', 2, 2, 30),
               ('ch_c', 'imessage', 'any;-;+15551234567', 'Ada', 'dm', 'allowed', 100, 'auto', 3, 3, 20),
               ('ch_g', 'imessage', 'iMessage;+;chat42', 'Trip', 'group', 'blocked', NULL, 'review', 4, 4, 5),
               ('ch_h', 'imessage', 'any;+;chat42', 'Trip', 'group', 'allowed', NULL, 'auto', 5, 5, 6),
               ('ch_d', 'discord', '123', 'Guild / #general', 'group', 'allowed', NULL, 'auto', 6, 6, 7);
             INSERT INTO messages (id, channel_id, platform_id, source, sender_id, sent_at, direction, ingested_at) VALUES
               ('msg_1', 'ch_a', 'g1', 'imessage', 'x', 10, 'inbound', 10),
               ('msg_2', 'ch_b', 'g2', 'imessage', 'x', 30, 'inbound', 30),
               ('msg_3', 'ch_c', 'g3', 'imessage', 'x', 20, 'inbound', 20),
               ('msg_4', 'ch_h', 'g4', 'imessage', 'x', 6, 'inbound', 6),
               ('msg_5', 'ch_d', 'd5', 'discord', 'x', 7, 'inbound', 7);
             PRAGMA user_version = 4;",
        )
        .expect("a database from before the merge");
        drop(conn);
        let store = Store::open(&path).expect("migrated");
        /// id, platform id, state, visible_from, send policy, last message, message count.
        type Row = (String, String, String, Option<i64>, String, i64, i64);
        let rows: Vec<Row> = store
            .read(|tx| {
                let mut stmt = tx.prepare(
                    "SELECT c.id, c.platform_id, c.state, c.visible_from, c.send_policy, c.last_message_at, \
                     (SELECT count(*) FROM messages m WHERE m.channel_id = c.id) FROM channels c ORDER BY c.id",
                )?;
                let rows = stmt.query_map([], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
                })?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .expect("read");
        let row = |id: &str, key: &str, state: &str, from: Option<i64>, policy: &str, last: i64, n: i64| {
            (id.to_owned(), key.to_owned(), state.to_owned(), from, policy.to_owned(), last, n)
        };
        assert_eq!(
            rows,
            vec![
                row("ch_a", "any;-;+15551234567", "allowed", Some(500), "review", 30, 3),
                row("ch_d", "123", "allowed", None, "auto", 7, 1),
                row("ch_g", "any;+;chat42", "blocked", None, "review", 6, 1),
            ]
        );
    }

    #[test]
    fn a_database_from_a_newer_build_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        let conn = Connection::open(&path).expect("open");
        conn.pragma_update(None, "user_version", 999).expect("pragma");
        drop(conn);
        let err = Store::open(&path).err().expect("refused");
        assert_eq!(err.code, crate::error::ErrorCode::InternalError);
    }

    #[test]
    fn foreign_keys_are_enforced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("amc.db")).expect("open");
        let res = store.write(|tx| {
            tx.execute("INSERT INTO read_state (agent_id, message_id, read_at) VALUES ('a', 'msg_x', 0)", [])?;
            Ok(())
        });
        assert!(res.is_err());
    }

    #[test]
    fn waiting_counts_pending_channels_and_held_sends() {
        use crate::model::{ChannelKind, HistoryRelease, OutboxStatus, Source};
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("amc.db")).expect("open");
        assert_eq!(store.waiting().expect("waiting"), crate::model::Waiting::default());
        let spec = |id: &str| ChannelSpec { platform_id: id.into(), name: id.into(), kind: ChannelKind::Dm };
        let (a, _) = store.ensure_channel(Source::Imessage, &spec("a")).expect("channel");
        store.ensure_channel(Source::Imessage, &spec("b")).expect("channel");
        assert_eq!(store.waiting().expect("waiting").channels, 2);
        store.approve_channel(&a, HistoryRelease::All, None).expect("approve");
        store.create_agent("bot").expect("agent");
        let send = |status| NewSend {
            agent_id: "bot",
            idempotency: None,
            channel_id: &a,
            text: "hi",
            reply_to: None,
            attachments: &[],
            status,
        };
        store.record_send(&send(OutboxStatus::Held)).expect("held");
        store.record_send(&send(OutboxStatus::Held)).expect("held");
        store.record_send(&send(OutboxStatus::Sending)).expect("sending");
        assert_eq!(store.waiting().expect("waiting"), crate::model::Waiting { channels: 1, sends: 2 });
    }
}
