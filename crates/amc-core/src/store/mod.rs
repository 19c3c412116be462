//! The store: the core's typed access to AMC's database ([`crate::db::Database`]). This
//! module tree is the only code of the core that writes SQL; the service layer calls the
//! typed methods here. It is crate-private: sources and edges go through the service
//! layer (`Amc`), never here.
//!
//! # Layout
//! - `mod.rs`: the core's migrations and the message id generator.
//! - `channels.rs`: channels and the person's approval.
//! - `messages.rs`: ingest, unread, context, read state.
//! - `agents.rs`: agents and their hashed tokens.
//! - `outbox.rs`: agents' sends and their idempotency records.
//! - `push.rs`: where each agent's push of new messages stands.
//! - `tools.rs`: hosts' requests to use a tool, and the person's decisions.
//! - `search.rs`: full-text search of messages.

mod agents;
#[cfg(test)]
mod behaviour;
mod channels;
mod messages;
mod outbox;
mod push;
mod search;
mod tools;

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::db::{Database, Migration};
use crate::error::Result;

pub use channels::{AllowedChannel, ChannelSpec, SendTarget, ThreadSpec};
pub use messages::{AttachmentFile, IngestReport, ReactionChange, UnreadQuery};
pub use outbox::{NewSend, SendLookup, SendOutcome};
pub use push::{PushPosition, PushScan};
#[cfg(any(test, feature = "test-support"))]
pub use search::RANK_UP_TO;
pub use search::{IndexProgress, SearchQuery, spaceless};
pub use tools::NewToolRequest;

/// The core's migrations, in order; `PRAGMA user_version` is the number applied.
const MIGRATIONS: &[Migration] = &[
    ("0001_initial", include_str!("migrations/0001_initial.sql")),
    // The relay's tables now migrate with the relay (crates/amc-relay); the slot stays so
    // every database keeps its number.
    ("0002_relay_moved", include_str!("migrations/0002_relay_moved.sql")),
    ("0003_release_by_arrival", include_str!("migrations/0003_release_by_arrival.sql")),
    ("0004_platform_aliases", include_str!("migrations/0004_platform_aliases.sql")),
    ("0005_imessage_conversations", include_str!("migrations/0005_imessage_conversations.sql")),
    ("0006_push", include_str!("migrations/0006_push.sql")),
    ("0007_tool_requests", include_str!("migrations/0007_tool_requests.sql")),
    ("0008_channel_agents", include_str!("migrations/0008_channel_agents.sql")),
    ("0009_search", include_str!("migrations/0009_search.sql")),
    ("0010_search_backlog", include_str!("migrations/0010_search_backlog.sql")),
    ("0011_channel_gone", include_str!("migrations/0011_channel_gone.sql")),
    ("0012_threads", include_str!("migrations/0012_threads.sql")),
    ("0013_defer_index", include_str!("migrations/0013_defer_index.sql")),
];

/// SQL that turns a database back into one from before migration 0010 (which started
/// the search index over), undoing every later migration first, for tests of what 0010
/// does to existing data. Keep it in step with each new migration.
#[cfg(any(test, feature = "test-support"))]
pub const BACK_TO_0009: &str = "DROP INDEX messages_by_thread; DROP TABLE threads; \
     ALTER TABLE messages DROP COLUMN thread_id; \
     ALTER TABLE channels DROP COLUMN gone_at; ALTER TABLE channels DROP COLUMN gone_reason; \
     DROP TABLE messages_cjk; DROP TABLE search_backlog; PRAGMA user_version = 9;";

/// The core's typed store: the database, and the generator of message ids.
#[derive(Clone)]
pub struct Store {
    db: Database,
    /// Message ids made within one millisecond still sort in the order they were made.
    ids: Arc<Mutex<ulid::Generator>>,
}

impl std::ops::Deref for Store {
    type Target = Database;

    fn deref(&self) -> &Database {
        &self.db
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path` and applies pending migrations.
    pub fn open(path: &Path) -> Result<Self> {
        Ok(Self { db: Database::open(path, MIGRATIONS)?, ids: Arc::new(Mutex::new(ulid::Generator::new())) })
    }

    /// The database under the store, for parts with their own tables (the relay).
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// A new `msg_<ULID>`, later than every one this store made before.
    pub fn next_message_id(&self) -> String {
        let mut generator = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        match generator.generate() {
            Ok(id) => format!("msg_{id}"),
            // The random part ran out within one millisecond: a fresh id is still unique.
            Err(_) => crate::ids::new_message_id(),
        }
    }
}

/// The core's schema version this build writes.
#[cfg(test)]
fn schema_version() -> usize {
    MIGRATIONS.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

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
        assert!(tables >= 7, "{tables} tables");
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
        // A database as the build before the merge left it: the first four migrations.
        drop(Database::open(&path, &MIGRATIONS[..4]).expect("open"));
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
               ('msg_5', 'ch_d', 'd5', 'discord', 'x', 7, 'inbound', 7);",
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
        assert_eq!(store.waiting().expect("waiting"), crate::model::Waiting { channels: 1, sends: 2, tools: 0 });
    }
}
