//! AMC's one SQLite database, below the core: the connections and migrations ([`db`]),
//! the core's tables with their typed SQL (the only code of AMC that writes SQL to them;
//! the relay keeps its own tables, on the same [`db::Database`]), and the types they
//! hold. Only `amc-core` and `amc-relay` depend on this crate (a tidy test reads the
//! manifests): sources and edges go through the core's service layer.
//!
//! # Layout
//! - [`db`]: the connections, the checkpoints, the migrations and their progress.
//! - `lib.rs`: the core's migrations, the message id generator, [`Store`].
//! - `channels.rs`: channels and the person's approval.
//! - `messages.rs`: ingest, unread, context, read state.
//! - `agents.rs`: agents and their hashed tokens.
//! - `keys.rs`: the root secret the core derives its signing and sealing keys from.
//! - `outbox.rs`: agents' sends and their idempotency records.
//! - `claude_channel/`: the Claude Code channel's tables: where each agent's push of new
//!   messages stands (`push.rs`), and hosts' requests to use a tool (`tools.rs`).
//! - `search.rs`: full-text search of messages; [`rank`] orders its results.
//! - The types stored (messages, channels, ids, time, tokens, the error table) are the
//!   crate below's, `amc-types`, shared with every crate above.
//! - [`files`]: the files and folders AMC writes, private from the moment they exist.
//! - `codes.rs`: who may see one-time codes and sign-in links, which stored messages hold
//!   them (found by `amc-secrets`, a crate of rules with no database), and the backlog that
//!   classifies older messages again when the rules change; agents' searches never match
//!   what is hidden.
#![deny(missing_docs)]

/// The SQL condition that message `$m` (a table alias with its dot, or `""`) has the
/// platform id `$id` of the source `$source` (both SQL expressions): found through the
/// indexed `platform_key`, then compared as text, since keys of different ids may be
/// equal (see [`platform_key`]). Every lookup by platform id goes through it.
macro_rules! at_platform_id {
    ($m:literal, $source:literal, $id:literal) => {
        concat!(
            $m,
            "platform_key = amc_platform_key(",
            $source,
            ", ",
            $id,
            ") AND ",
            $m,
            "source = ",
            $source,
            " AND ",
            $m,
            "platform_id = ",
            $id
        )
    };
}

mod agents;
mod backlog;
#[cfg(test)]
mod behaviour;
mod channels;
mod claude_channel;
mod codes;
pub mod db;
pub mod files;
mod keys;
mod messages;
mod outbox;
mod phone;
pub mod rank;
mod reads;
mod search;

use std::path::Path;
use std::sync::{Arc, Mutex};

// The vocabulary the tables hold is the crate below's; named here as the store's own
// modules read it.
use amc_types::{error, ids, model, time, token};

use crate::db::{Database, Migration};
use crate::error::Result;

pub use backlog::IndexProgress;
pub use channels::{PHONE_CHANNEL_SETTING, PHONE_DISCORD_SETTING};
pub use claude_channel::{NewToolRequest, PushPosition, PushScan, ToolRequestBounds};
pub use messages::UnreadQuery;
pub use outbox::{HELD_BOUNDS, HeldBounds, NewSend, SEND_LOG_KEPT, SendLookup, SendOutcome};
pub use phone::{NewPhoneAsk, PHONE_SINCE_SETTING, PhoneChannelFacts};
pub use reads::{Crossings, READS_NOTED_EVERY};
#[cfg(any(test, feature = "test-support"))]
pub use search::RANK_UP_TO;
pub use search::{SearchQuery, excerpt_around, spaceless};

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
    ("0014_platform_key", include_str!("migrations/0014_platform_key.sql")),
    ("0015_read_marks", include_str!("migrations/0015_read_marks.sql")),
    ("0016_channel_keys", include_str!("migrations/0016_channel_keys.sql")),
    ("0017_read_marks_by_agent", include_str!("migrations/0017_read_marks_by_agent.sql")),
    ("0018_channels_by_state", include_str!("migrations/0018_channels_by_state.sql")),
    ("0019_failed_after_sent", include_str!("migrations/0019_failed_after_sent.sql")),
    ("0020_secrets", include_str!("migrations/0020_secrets.sql")),
    ("0021_one_to_one_senders", include_str!("migrations/0021_one_to_one_senders.sql")),
    ("0022_root_key", include_str!("migrations/0022_root_key.sql")),
    ("0023_not_a_code", include_str!("migrations/0023_not_a_code.sql")),
    ("0024_readers", include_str!("migrations/0024_readers.sql")),
    ("0025_phone", include_str!("migrations/0025_phone.sql")),
];

/// Undoes migrations 0025 and 0024, for tests that take a store back to a release before them.
#[cfg(any(test, feature = "test-support"))]
pub const UNDO_0024: &str = "DROP TABLE phone_asks; ALTER TABLE outbox DROP COLUMN decided_via; \
     ALTER TABLE tool_requests DROP COLUMN decided_via; DROP TABLE agent_reads; ALTER TABLE outbox DROP COLUMN held_reason; \
     ALTER TABLE outbox DROP COLUMN read_from; ALTER TABLE channels DROP COLUMN readers; \
     ALTER TABLE channels DROP COLUMN open_to_anything;";

/// Turns the database at `path` back into one from before migration 0010 (which started
/// the search index over), undoing every later migration first, for tests of what 0010
/// does to existing data. `messages` and `channels` go back to their layout of then
/// (migration 0016 rebuilt them), with their rowids. Keep it in step with each new
/// migration.
#[cfg(any(test, feature = "test-support"))]
pub fn back_to_0009(path: &Path) -> Result<()> {
    crate::db::rewrite_without_foreign_keys(path, BACK_TO_0009)
}

#[cfg(any(test, feature = "test-support"))]
const BACK_TO_0009: &str = "DROP TABLE phone_asks; ALTER TABLE outbox DROP COLUMN decided_via; \
     ALTER TABLE tool_requests DROP COLUMN decided_via; DROP TABLE agent_reads; ALTER TABLE outbox DROP COLUMN held_reason; \
     ALTER TABLE outbox DROP COLUMN read_from; DROP TABLE not_a_code_report; DROP TABLE secrets_backlog; DROP INDEX messages_with_secrets; \
     DROP TABLE channel_code_agents; DROP INDEX platform_aliases_by_message; DROP INDEX outbox_sent_by_time; \
     DROP TRIGGER read_marks_of_agent; DROP TABLE read_marks; \
     CREATE TABLE read_state (agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE, \
     message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE, read_at INTEGER NOT NULL, \
     PRIMARY KEY (agent_id, message_id)) WITHOUT ROWID; CREATE INDEX read_state_by_message ON read_state (message_id); \
     CREATE TABLE messages_then (id TEXT PRIMARY KEY, channel_id TEXT NOT NULL REFERENCES channels (id), \
     platform_id TEXT NOT NULL, source TEXT NOT NULL, sender_id TEXT NOT NULL, sender_name TEXT, \
     is_self INTEGER NOT NULL DEFAULT 0, text TEXT NOT NULL DEFAULT '', sent_at INTEGER NOT NULL, edited_at INTEGER, \
     unsent INTEGER NOT NULL DEFAULT 0, reply_to TEXT, reply_to_platform_id TEXT, reactions TEXT NOT NULL DEFAULT '[]', \
     direction TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')), agent_id TEXT, ingested_at INTEGER NOT NULL, \
     UNIQUE (source, platform_id)); \
     INSERT INTO messages_then (rowid, id, channel_id, platform_id, source, sender_id, sender_name, is_self, text, \
     sent_at, edited_at, unsent, reply_to, reply_to_platform_id, reactions, direction, agent_id, ingested_at) \
     SELECT m.rowid, m.id, c.id, m.platform_id, m.source, m.sender_id, m.sender_name, m.is_self, m.text, m.sent_at, \
     m.edited_at, m.unsent, m.reply_to, m.reply_to_platform_id, m.reactions, m.direction, m.agent_id, m.ingested_at \
     FROM messages m JOIN channels c ON c.key = m.channel; \
     DROP TABLE messages; ALTER TABLE messages_then RENAME TO messages; \
     CREATE INDEX messages_by_channel ON messages (channel_id, sent_at, id); \
     CREATE INDEX messages_by_time ON messages (sent_at, id, channel_id, direction); \
     CREATE INDEX messages_by_reply_platform_id ON messages (reply_to_platform_id) \
     WHERE reply_to IS NULL AND reply_to_platform_id IS NOT NULL; \
     CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages WHEN NOT new.unsent BEGIN \
     INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text); END; \
     CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages WHEN NOT old.unsent BEGIN \
     INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text); END; \
     CREATE TRIGGER messages_fts_update AFTER UPDATE OF text, unsent ON messages BEGIN \
     INSERT INTO messages_fts (messages_fts, rowid, text) SELECT 'delete', old.rowid, old.text WHERE NOT old.unsent; \
     INSERT INTO messages_fts (rowid, text) SELECT new.rowid, new.text WHERE NOT new.unsent; END; \
     CREATE TABLE channels_then (id TEXT PRIMARY KEY, \
     source TEXT NOT NULL CHECK (source IN ('imessage', 'discord')), platform_id TEXT NOT NULL, name TEXT NOT NULL, \
     kind TEXT NOT NULL CHECK (kind IN ('dm', 'group')), \
     state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'allowed', 'blocked')), visible_from INTEGER, \
     send_policy TEXT NOT NULL DEFAULT 'review' CHECK (send_policy IN ('read_only', 'review', 'auto')), \
     created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, last_message_at INTEGER, stored_from INTEGER, \
     audience TEXT NOT NULL DEFAULT 'all' CHECK (audience IN ('all', 'some')), UNIQUE (source, platform_id)); \
     INSERT INTO channels_then (rowid, id, source, platform_id, name, kind, state, visible_from, send_policy, \
     created_at, updated_at, last_message_at, stored_from, audience) \
     SELECT key, id, source, platform_id, name, kind, state, visible_from, send_policy, \
     created_at, updated_at, last_message_at, stored_from, audience FROM channels; \
     DROP TABLE channels; ALTER TABLE channels_then RENAME TO channels; \
     DROP TABLE threads; DROP TABLE messages_cjk; DROP TABLE search_backlog; PRAGMA user_version = 9;";

/// The key a message's platform id is looked up by (`messages.platform_key`): FNV-1a,
/// 64 bits, over the source, a unit separator and the platform id. SQLite computes it
/// with `amc_platform_key` (see `db.rs`); it is stored, so it must never
/// change. It is not unique, and it need not be: every lookup compares the source and the
/// platform id too. Ids crafted to collide only make their own lookups walk a few more
/// index entries.
pub fn platform_key(source: &[u8], platform_id: &[u8]) -> i64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let bytes = source.iter().chain(&[0x1f]).chain(platform_id);
    bytes.fold(OFFSET, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(PRIME)) as i64
}

/// The core's typed store: the database, and the generator of message ids.
#[derive(Clone)]
pub struct Store {
    db: Database,
    /// Message ids made within one millisecond still sort in the order they were made.
    ids: Arc<Mutex<ulid::Generator>>,
    /// When each agent's read of each conversation was last written (`reads.rs`).
    noted: reads::Noted,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and applies pending migrations.
    #[cfg(any(test, feature = "test-support"))]
    pub fn open(path: &Path) -> Result<Self> {
        Self::open_reporting(path, &crate::db::UpdateReporter::default())
    }

    /// [`open`](Self::open), telling `updates` how far the migrations are.
    pub fn open_reporting(path: &Path, updates: &crate::db::UpdateReporter) -> Result<Self> {
        let db = Database::open_reporting(path, MIGRATIONS, updates)?;
        Ok(Self { db, ids: Arc::new(Mutex::new(ulid::Generator::new())), noted: reads::Noted::default() })
    }

    /// The database under the store: its upkeep (checkpoints, memory), and the parts with
    /// tables of their own (the relay).
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// The same store, its transactions no use of the database for releasing memory
    /// ([`Database::uncounted`]): the housekeeping's.
    pub fn uncounted(&self) -> Self {
        Self { db: self.db.uncounted(), ids: self.ids.clone(), noted: self.noted.clone() }
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
    use crate::model::ChannelSpec;
    use rusqlite::Connection;

    #[test]
    fn migrations_apply_to_an_empty_database_and_set_user_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        let store = Store::open(&path).expect("open");
        let (version, tables, journal): (i64, i64, String) = store
            .database()
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
        let v: i64 =
            again.database().read(|tx| Ok(tx.pragma_query_value(None, "user_version", |r| r.get(0))?)).expect("v");
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
            .database()
            .read(|tx| {
                let mut stmt = tx.prepare(
                    "SELECT c.id, c.platform_id, c.state, c.visible_from, c.send_policy, c.last_message_at, \
                     (SELECT count(*) FROM messages m WHERE m.channel = c.key) FROM channels c ORDER BY c.id",
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

    /// Migration 0014 rebuilds `messages` without its unique index on platform ids, 0015
    /// keys read marks by rowids, and 0016 names each message's channel by its key: every
    /// message (in its channel), rowid, channel, file, read mark and alias stays, search
    /// still finds them, and a message read again from its platform is still stored once.
    #[test]
    fn messages_and_read_marks_keep_everything_through_the_rebuilds() {
        use crate::model::{ChannelKind, Source};
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("amc.db");
        drop(Database::open(&path, &MIGRATIONS[..13]).expect("open"));
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "INSERT INTO channels (id, source, platform_id, name, kind, state, created_at, updated_at) VALUES
               ('ch_a', 'imessage', 'iMessage;-;+15551234567', 'Ada', 'dm', 'allowed', 1, 1),
               ('ch_d', 'discord', '123', 'Guild / #general', 'group', 'allowed', 2, 2);
             INSERT INTO messages (rowid, id, channel_id, platform_id, source, sender_id, text, sent_at, reply_to,
                                   reply_to_platform_id, reactions, direction, agent_id, ingested_at, thread_id) VALUES
               (7, 'msg_1', 'ch_a', 'C0FFEE-1', 'imessage', '+15551234567', 'lunch at noon', 10, NULL, NULL, '[]', 'inbound', NULL, 10, NULL),
               (9, 'msg_2', 'ch_a', 'C0FFEE-2', 'imessage', 'agent:bot', 'see you there', 20, 'msg_1', 'C0FFEE-1', '[]', 'outbound', 'bot', 20, NULL),
               (12, 'msg_3', 'ch_d', '1234567890', 'discord', '42', 'ship it', 30, NULL, NULL, '[{\"emoji\":\"👍\"}]', 'inbound', NULL, 30, '555');
             WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
             INSERT INTO messages (id, channel_id, platform_id, source, sender_id, text, sent_at, direction, ingested_at)
             SELECT 'msg_f' || i, 'ch_d', 'f' || i, 'discord', '42', printf('%.300c', 'x'), 100 + i, 'inbound', 100 + i FROM n;
             INSERT INTO attachments (id, message_id, filename, available) VALUES ('att_1', 'msg_1', 'menu.pdf', 1);
             INSERT INTO agents (id, token_hash, created_at) VALUES ('bot', x'00', 1);
             INSERT INTO read_state (agent_id, message_id, read_at) VALUES ('bot', 'msg_1', 5);
             INSERT INTO platform_aliases (source, platform_id, message_id) VALUES ('imessage', 'C0FFEE-3', 'msg_2');",
        )
        .expect("a database from before the rebuild");
        let rows = |conn: &Connection, channel: &str| -> Vec<Vec<rusqlite::types::Value>> {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT rowid, id, {channel}, platform_id, source, sender_id, sender_name, is_self, text, sent_at, \
                     edited_at, unsent, reply_to, reply_to_platform_id, reactions, direction, agent_id, ingested_at, \
                     thread_id FROM messages ORDER BY rowid"
                ))
                .expect("prepare");
            let all = stmt.query_map([], |r| (0..19).map(|i| r.get(i)).collect()).expect("query");
            all.collect::<rusqlite::Result<_>>().expect("rows")
        };
        let before = rows(&conn, "channel_id");
        let channels_before: Vec<(i64, String)> = conn
            .prepare("SELECT rowid, id FROM channels ORDER BY rowid")
            .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
            .expect("channels");
        drop(conn);

        let store = Store::open(&path).expect("migrated");
        store
            .database().read(|tx| {
                let channel = "(SELECT c.id FROM channels c WHERE c.key = channel)";
                assert_eq!(rows(tx, channel), before, "every message, with its rowid, in its channel");
                let channels: Vec<(i64, String)> = tx
                    .prepare("SELECT key, id FROM channels ORDER BY key")?
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
                assert_eq!(channels, channels_before, "each channel's key is its rowid of before");
                let kept: (i64, i64, i64) = tx.query_row(
                    "SELECT (SELECT count(*) FROM attachments), (SELECT count(*) FROM read_marks), \
                     (SELECT count(*) FROM platform_aliases)",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )?;
                assert_eq!(kept, (1, 1, 1), "files, read marks and aliases");
                let mut keys = tx.prepare("SELECT source, platform_id, platform_key FROM messages")?;
                for key in keys.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?)))? {
                    let (source, id, key): (String, String, i64) = key?;
                    assert_eq!(key, platform_key(source.as_bytes(), id.as_bytes()), "{id}");
                }
                let found: String = tx.query_row(
                    "SELECT m.id FROM messages_fts f JOIN messages m ON m.rowid = f.rowid WHERE messages_fts MATCH 'noon'",
                    [],
                    |r| r.get(0),
                )?;
                assert_eq!(found, "msg_1", "the search index still points at its messages");
                let unique: i64 = tx.query_row(
                    "SELECT count(*) FROM pragma_index_list('messages') WHERE \"unique\" AND origin = 'u'",
                    [],
                    |r| r.get(0),
                )?;
                assert_eq!(unique, 0, "no unique index on platform ids is left");
                Ok(())
            })
            .expect("read");
        let readers = store.readers(&["msg_1".to_owned()]).expect("readers");
        assert_eq!(readers["msg_1"], ["bot"], "the read mark names its agent and message (0015)");
        assert!(store.has_platform_message(Source::Discord, "1234567890").expect("lookup"));
        assert!(!store.has_platform_message(Source::Imessage, "1234567890").expect("lookup"));
        let again = amc_testkit::incoming("C0FFEE-1", "lunch at noon").at(10).from("+15551234567", None).build();
        let chat = ChannelSpec {
            platform_id: "iMessage;-;+15551234567".into(),
            name: "Ada".into(),
            kind: ChannelKind::Dm,
            readers: None,
        };
        let report = store.ingest(Source::Imessage, &chat, &[again], None).expect("ingest");
        assert!(report.inserted_platform_ids.is_empty(), "read again, it is not stored twice");
        let count: i64 = store
            .database()
            .read(|tx| Ok(tx.query_row("SELECT count(*) FROM messages", [], |r| r.get(0))?))
            .expect("n");
        assert_eq!(count, 2003);
        // A message's read marks go with it, as its foreign key's cascade took them.
        store.database().write(|tx| Ok(tx.execute("DELETE FROM messages WHERE id = 'msg_1'", [])?)).expect("delete");
        let marks: i64 = store
            .database()
            .read(|tx| Ok(tx.query_row("SELECT count(*) FROM read_marks", [], |r| r.get(0))?))
            .expect("n");
        assert_eq!(marks, 0);
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
        let res = store.database().write(|tx| {
            tx.execute("INSERT INTO attachments (id, message_id) VALUES ('att_x', 'msg_x')", [])?;
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
        let spec =
            |id: &str| ChannelSpec { platform_id: id.into(), name: id.into(), kind: ChannelKind::Dm, readers: None };
        let (a, _) = store.ensure_channel(Source::Imessage, &spec("a")).expect("channel");
        store.ensure_channel(Source::Imessage, &spec("b")).expect("channel");
        assert_eq!(store.waiting().expect("waiting").channels, 2);
        store.approve_channel(&a, HistoryRelease::All, None, false).expect("approve");
        store.create_agent("bot").expect("agent");
        let send = |status| NewSend {
            agent_id: "bot",
            idempotency: None,
            channel_id: &a,
            text: "hi",
            reply_to: None,
            attachments: &[],
            status,
            held_bounds: HELD_BOUNDS,
            held_reason: None,
            read_from: &[],
        };
        store.record_send(&send(OutboxStatus::Held)).expect("held");
        store.record_send(&send(OutboxStatus::Held)).expect("held");
        store.record_send(&send(OutboxStatus::Sending)).expect("sending");
        assert_eq!(store.waiting().expect("waiting"), crate::model::Waiting { channels: 1, sends: 2, tools: 0 });
    }
}
