//! Writes chat.db files the way macOS Messages does: Apple's table layout (the column
//! lists of a real database, in `tests/fixtures/imessage/schema/`), Messages' indexes,
//! WAL mode, nanosecond dates since 2001, and real `attributedBody` and
//! `message_summary_info` blobs. Tests and benchmarks use it; AMC itself only reads.

use std::path::Path;

use rusqlite::{Connection, params};

const MESSAGE_SCHEMA: &str = include_str!("../../../tests/fixtures/imessage/schema/messages.md");
const CHAT_SCHEMA: &str = include_str!("../../../tests/fixtures/imessage/schema/chat.md");
const HANDLE_SCHEMA: &str = include_str!("../../../tests/fixtures/imessage/schema/handle.md");
const ATTACHMENT_SCHEMA: &str = include_str!("../../../tests/fixtures/imessage/schema/attachment.md");

/// Seconds from the Unix epoch to Apple's (2001-01-01 UTC).
pub const APPLE_EPOCH_OFFSET_SECS: i64 = 978_307_200;

/// Unix milliseconds as chat.db's `message.date` (nanoseconds since 2001).
pub fn apple_ns(unix_ms: i64) -> i64 {
    (unix_ms - APPLE_EPOCH_OFFSET_SECS * 1000) * 1_000_000
}

/// `CREATE TABLE` from a schema page's `| column | type | effect |` rows.
fn create_table(name: &str, page: &str) -> String {
    let columns: Vec<String> = page
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let (column, ty) = (cells.first()?, cells.get(1)?);
            let effect = cells.get(2).copied().unwrap_or("");
            (!column.is_empty()).then(|| format!("{column} {ty} {effect}").trim().to_owned())
        })
        .collect();
    format!("CREATE TABLE {name} ({});", columns.join(", "))
}

/// One row of `message`.
#[derive(Debug, Clone, Default)]
pub struct FixtureMessage {
    /// `guid`.
    pub guid: String,
    /// `text` (macOS 13 and later often leave it NULL).
    pub text: Option<String>,
    /// `attributedBody`, the typedstream of the text.
    pub attributed_body: Option<Vec<u8>>,
    /// The sender's handle ROWID (0 for the person's own messages).
    pub handle_id: i64,
    /// `is_from_me`.
    pub is_from_me: bool,
    /// Unix milliseconds.
    pub sent_at_ms: i64,
    /// Unix milliseconds of the last edit.
    pub edited_at_ms: Option<i64>,
    /// `message_summary_info` (edits and unsends).
    pub message_summary_info: Option<Vec<u8>>,
    /// `thread_originator_guid`: the message this one replies to.
    pub reply_to: Option<String>,
    /// `associated_message_guid` and `associated_message_type` (tapbacks).
    pub associated: Option<(String, i32)>,
}

/// A group event: a rename or a member change.
#[derive(Debug, Clone, Default)]
pub struct GroupEvent {
    /// `guid`.
    pub guid: String,
    /// Who did it.
    pub handle_id: i64,
    /// `item_type`: 1 member change, 2 rename, 3 left or photo.
    pub item_type: i32,
    /// `group_action_type`: for a member change, 0 added and 1 removed.
    pub group_action_type: i32,
    /// `group_title`: the new name, for a rename.
    pub group_title: Option<String>,
    /// `other_handle`: the member added or removed.
    pub other_handle: i64,
    /// Unix milliseconds.
    pub at_ms: i64,
}

/// A chat.db being written.
pub struct ChatDbWriter {
    conn: Connection,
    modern: bool,
}

/// The columns newer macOS versions add to `message` (the schema pages are older).
const MODERN_COLUMNS: &str = "ALTER TABLE message ADD COLUMN date_edited INTEGER DEFAULT 0; \
     ALTER TABLE message ADD COLUMN date_retracted INTEGER DEFAULT 0; \
     ALTER TABLE message ADD COLUMN part_count INTEGER DEFAULT 0;";

impl ChatDbWriter {
    /// Creates an empty chat.db as a current macOS writes it (with edit and unsend
    /// columns), in WAL mode.
    pub fn create(path: &Path) -> rusqlite::Result<Self> {
        let w = Self::create_legacy(path)?;
        w.conn.execute_batch(MODERN_COLUMNS)?;
        Ok(Self { modern: true, ..w })
    }

    /// Creates an empty chat.db as older macOS versions wrote it: no `date_edited`.
    pub fn create_legacy(path: &Path) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "wal")?;
        conn.execute_batch(&format!(
            "{}\n{}\n{}\n{}\n\
             CREATE TABLE chat_message_join (chat_id INTEGER REFERENCES chat (ROWID) ON DELETE CASCADE, \
               message_id INTEGER REFERENCES message (ROWID) ON DELETE CASCADE, message_date INTEGER DEFAULT 0, \
               PRIMARY KEY (chat_id, message_id));\n\
             CREATE TABLE chat_handle_join (chat_id INTEGER REFERENCES chat (ROWID) ON DELETE CASCADE, \
               handle_id INTEGER REFERENCES handle (ROWID) ON DELETE CASCADE, UNIQUE (chat_id, handle_id));\n\
             CREATE TABLE message_attachment_join (message_id INTEGER REFERENCES message (ROWID) ON DELETE CASCADE, \
               attachment_id INTEGER REFERENCES attachment (ROWID) ON DELETE CASCADE, UNIQUE (message_id, attachment_id));\n\
             CREATE INDEX chat_message_join_idx_message_id_only ON chat_message_join (message_id);\n\
             CREATE INDEX chat_message_join_idx_message_date_id_chat_id ON chat_message_join (chat_id, message_date, message_id);\n\
             CREATE INDEX message_attachment_join_idx_message_id ON message_attachment_join (message_id);\n\
             CREATE INDEX chat_handle_join_idx_handle_id ON chat_handle_join (handle_id);\n\
             CREATE INDEX message_idx_date ON message (date);\n\
             CREATE INDEX message_idx_handle ON message (handle_id, date);\n\
             CREATE INDEX message_idx_associated_message2 ON message (associated_message_guid);\n\
             CREATE INDEX message_idx_thread_originator_guid ON message (thread_originator_guid);",
            create_table("message", MESSAGE_SCHEMA),
            create_table("chat", CHAT_SCHEMA),
            create_table("handle", HANDLE_SCHEMA),
            create_table("attachment", ATTACHMENT_SCHEMA),
        ))?;
        Ok(Self { conn, modern: false })
    }

    /// Opens a chat.db written before, to write more to it.
    pub fn open(path: &Path) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        let modern = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('message') WHERE name = 'date_edited')",
            [],
            |r| r.get(0),
        )?;
        Ok(Self { conn, modern })
    }

    /// The connection, for writing rows in bulk inside one transaction.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Adds a handle (a phone number or address); returns its ROWID.
    pub fn add_handle(&self, id: &str) -> rusqlite::Result<i64> {
        self.conn.execute("INSERT INTO handle (id, service) VALUES (?1, 'iMessage')", [id])?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Adds a chat (style 45: one-to-one, 43: group) with its participants.
    pub fn add_chat(
        &self,
        guid: &str,
        style: i32,
        display_name: Option<&str>,
        handles: &[i64],
    ) -> rusqlite::Result<i64> {
        let identifier = guid.rsplit(';').next().unwrap_or(guid);
        self.conn.execute(
            "INSERT INTO chat (guid, style, state, chat_identifier, service_name, display_name) \
             VALUES (?1, ?2, 3, ?3, 'iMessage', ?4)",
            params![guid, style, identifier, display_name.unwrap_or("")],
        )?;
        let chat = self.conn.last_insert_rowid();
        for h in handles {
            self.conn.execute("INSERT INTO chat_handle_join (chat_id, handle_id) VALUES (?1, ?2)", params![chat, h])?;
        }
        Ok(chat)
    }

    /// Adds an attachment to a message, as Messages records one (`filename` may start
    /// with `~`); returns its ROWID.
    pub fn add_attachment(
        &self,
        message: i64,
        guid: &str,
        filename: &str,
        mime_type: &str,
        total_bytes: i64,
    ) -> rusqlite::Result<i64> {
        let transfer_name = filename.rsplit('/').next().unwrap_or(filename);
        self.conn.execute(
            "INSERT INTO attachment (guid, filename, mime_type, transfer_name, total_bytes, transfer_state, is_outgoing) \
             VALUES (?1, ?2, ?3, ?4, ?5, 5, 0)",
            params![guid, filename, mime_type, transfer_name, total_bytes],
        )?;
        let id = self.conn.last_insert_rowid();
        self.conn.execute(
            "INSERT INTO message_attachment_join (message_id, attachment_id) VALUES (?1, ?2)",
            params![message, id],
        )?;
        Ok(id)
    }

    /// Puts the message just inserted into `chat`, as Messages does; returns its ROWID.
    fn join_last(&self, chat: i64, date: i64) -> rusqlite::Result<i64> {
        let rowid = self.conn.last_insert_rowid();
        self.conn.execute(
            "INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (?1, ?2, ?3)",
            params![chat, rowid, date],
        )?;
        Ok(rowid)
    }

    /// Adds a group event as Messages records one: a row with `item_type` ≠ 0 and no text.
    /// `item_type` 1 is a member change (`group_action_type` 0 added, 1 removed, with the
    /// member in `other_handle`), 2 a rename (the new name in `group_title`), 3 a member
    /// leaving or the group photo changing.
    pub fn add_group_event(&self, chat: i64, e: &GroupEvent) -> rusqlite::Result<i64> {
        let date = apple_ns(e.at_ms);
        self.conn.execute(
            "INSERT INTO message (guid, text, handle_id, service, is_from_me, date, item_type, group_action_type, \
             group_title, other_handle, is_finished, account) VALUES (?1, NULL, ?2, 'iMessage', 0, ?3, ?4, ?5, ?6, ?7, 1, 'e:')",
            params![e.guid, e.handle_id, date, e.item_type, e.group_action_type, e.group_title, e.other_handle],
        )?;
        let rowid = self.join_last(chat, date)?;
        if let Some(title) = &e.group_title {
            self.conn.execute("UPDATE chat SET display_name = ?2 WHERE ROWID = ?1", params![chat, title])?;
        }
        Ok(rowid)
    }

    /// Adds a message to a chat, as Messages does; returns its ROWID.
    pub fn add_message(&self, chat: i64, m: &FixtureMessage) -> rusqlite::Result<i64> {
        let date = apple_ns(m.sent_at_ms);
        let (assoc_guid, assoc_type) = match &m.associated {
            Some((g, t)) => (Some(g.as_str()), *t),
            None => (None, 0),
        };
        let sql = format!(
            "INSERT INTO message (guid, text, attributedBody, handle_id, service, is_from_me, date, date_read, \
             date_delivered, {}message_summary_info, thread_originator_guid, associated_message_guid, \
             associated_message_type, is_finished, is_sent, is_delivered, item_type, account) \
             VALUES (?1, ?2, ?3, ?4, 'iMessage', ?5, ?6, 0, 0, {}?8, ?9, ?10, ?11, 1, ?5, 1, 0, 'e:')",
            if self.modern { "date_edited, " } else { "" },
            if self.modern { "?7, " } else { "" },
        );
        self.conn.execute(
            &sql,
            params![
                m.guid,
                m.text,
                m.attributed_body,
                m.handle_id,
                m.is_from_me,
                date,
                m.edited_at_ms.map(apple_ns).unwrap_or(0),
                m.message_summary_info,
                m.reply_to,
                assoc_guid,
                assoc_type,
            ],
        )?;
        let rowid = self.join_last(chat, date)?;
        Ok(rowid)
    }
}
