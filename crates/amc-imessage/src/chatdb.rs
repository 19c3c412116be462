//! chat.db, read-only. Messages writes to it constantly: AMC never writes, waits out
//! locks, and reads only rows after its checkpoint.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use imessage_database::tables::capabilities::Capabilities;
use imessage_database::tables::messages::Message;
use rusqlite::{Connection, OpenFlags};

use crate::SourceError;

/// A chat as chat.db describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatInfo {
    /// `chat.guid`, e.g. `iMessage;-;+15551234567` (macOS 26: `any;-;…`): what Messages
    /// is addressed with.
    pub guid: String,
    /// `chat.style`: 43 for a group, 45 for a one-to-one chat.
    pub style: i32,
    /// The group's name, if it has one.
    pub display_name: Option<String>,
    /// `chat.chat_identifier`.
    pub identifier: String,
    /// The participants' handles (phone numbers, addresses).
    pub participants: Vec<String>,
}

/// An attachment row of chat.db.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatAttachment {
    /// `attachment.guid`.
    pub guid: String,
    /// `attachment.filename`: a path, usually starting with `~/Library/Messages/Attachments`.
    pub filename: Option<String>,
    /// `attachment.mime_type`.
    pub mime_type: Option<String>,
    /// `attachment.total_bytes`.
    pub total_bytes: Option<i64>,
    /// `attachment.transfer_name`: the file's name as sent.
    pub transfer_name: Option<String>,
}

/// A row the person's Mac sent (`is_from_me`), with what Messages says of its delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentRow {
    /// `message.guid`.
    pub guid: String,
    /// The text, decoded from `attributedBody` when `text` is empty.
    pub text: String,
    /// `message.date` (Apple nanoseconds).
    pub date: i64,
    /// `message.is_sent`.
    pub is_sent: bool,
    /// `message.is_delivered`.
    pub is_delivered: bool,
    /// `message.error`: 0, or Messages' error (25: "Not Delivered").
    pub error: i64,
    /// The chat's `chat_identifier` (a handle, or `chatNNN` for a group).
    pub chat_identifier: String,
    /// The `transfer_name` of each attached file.
    pub transfer_names: Vec<String>,
}

/// What the sweep compares of a row of `message`: enough to tell whether AMC holds it as
/// it is now, without decoding its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowState {
    /// `message.ROWID`.
    pub rowid: i64,
    /// `message.guid`.
    pub guid: String,
    /// `message.date_edited` (Apple nanoseconds; 0 when never edited or not recorded).
    pub date_edited: i64,
    /// `message.date_retracted` (Apple nanoseconds; 0 when never unsent or not recorded).
    pub date_retracted: i64,
    /// Whether the row is in a chat that chat.db holds: joined (`chat_message_join`) to a
    /// `chat` row that exists. Messages may write the join, or the chat, after the row.
    pub joined: bool,
    /// Whether the row can be a message: a plain item (`item_type` 0), not a tapback, with
    /// text, an attributed body or files, or unsent.
    pub may_be_message: bool,
    /// Whether the row is a tapback (added or taken back).
    pub tapback: bool,
    /// A digest of everything AMC's copy of the row follows from: its guid, text, body,
    /// edit history, edit and unsend times, sender, chat, files, the message it replies
    /// to or reacts to. Any change Messages makes to the row changes it (SipHash-1-3 with
    /// fixed keys: the same on every run, so it can be kept).
    pub content: u64,
}

/// How Messages left a row it sent, looked at again later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentState {
    /// `message.error`: 0, or the error Messages set (25: "Not Delivered").
    pub error: i64,
    /// The `transfer_name` of its file, for a row that is a file.
    pub file: Option<String>,
}

/// An open chat.db.
pub struct ChatDb {
    path: PathBuf,
    conn: Connection,
    query: String,
    /// The query of [`RowState`]s, built from the columns this chat.db has.
    states_query: String,
    contacts: crate::contacts::Contacts,
    /// The first of the newest rows held back for want of a chat, and since when.
    held: Option<(i32, std::time::Instant)>,
    /// Rows sent longer ago than this that appear after the first import arrived late.
    late_horizon: Option<Duration>,
}

/// The parts of a message (its text and each file) whose tapbacks [`ChatDb::tapbacks_on`]
/// finds. The reactions of a message with more parts are left as read, never reset
/// ([`ChatDb::parts_of`]).
pub const TAPBACK_PARTS: usize = 32;

/// How long the newest rows may wait for their chat before they are read as they are.
const JOIN_GRACE: Duration = Duration::from_secs(60);

/// The projection `imessage-database` decodes, built from the columns this chat.db has
/// (older macOS versions lack some), filtered to rows after a ROWID.
fn message_query(caps: &Capabilities) -> String {
    let mut projection: Vec<String> = caps
        .message_columns()
        .iter()
        .map(|column| match *column {
            "payload_data" => "(m.payload_data IS NOT NULL) as has_payload_data".to_owned(),
            // Some databases store these as text in UTF-16; read them as the raw bytes.
            "attributedbody" | "message_summary_info" => {
                format!("CASE WHEN typeof(m.{column}) = 'text' THEN CAST(m.{column} AS BLOB) ELSE m.{column} END as {column}")
            }
            // imessage-database requires these; chat.db does not (no NOT NULL), and one
            // row it cannot decode would stop every row after it. See `total_column`.
            "date" | "is_from_me" | "guid" => total_column(column),
            _ => format!("m.{column}"),
        })
        .collect();
    // One row per message, even for a message joined to several chats; only a chat that
    // is there counts (Messages may write the chat's row after the join).
    projection.push(format!("{CHAT_OF_ROW} as chat_id"));
    projection.push(
        "(SELECT COUNT(*) FROM message_attachment_join a WHERE m.ROWID = a.message_id) as num_attachments".to_owned(),
    );
    projection.push("NULL as deleted_from".to_owned());
    projection.push("0 as num_replies".to_owned());
    projection.push("NULL as filter_action".to_owned());
    projection.push("NULL as filter_sub_action".to_owned());
    format!("SELECT {} FROM message as m", projection.join(", "))
}

/// The chat a row of `message` (`m`) is in: the lowest of the chats it is joined to that
/// chat.db holds, or NULL.
const CHAT_OF_ROW: &str = "(SELECT min(c.chat_id) FROM chat_message_join c JOIN chat ch ON ch.ROWID = c.chat_id \
                           WHERE c.message_id = m.ROWID)";

/// The columns of [`RowState::content`] after the first [`STATE_COLUMNS`].
const STATE_COLUMNS: usize = 6;

/// The query of [`RowState`]s in a range of ROWIDs, from the columns this chat.db has
/// (macOS before 13 records no edit or unsend time: 0).
fn states_query(columns: &[String]) -> String {
    let has = |c: &str| columns.iter().any(|have| have.eq_ignore_ascii_case(c));
    let time = |c: &str| {
        if has(c) { format!("CASE typeof(m.{c}) WHEN 'integer' THEN m.{c} ELSE 0 END") } else { "0".to_owned() }
    };
    let column = |c: &str| if has(c) { format!("m.{c}") } else { "NULL".to_owned() };
    let (edited, retracted) = (time("date_edited"), time("date_retracted"));
    let tapback = "(coalesce(m.associated_message_type, 0) BETWEEN 2000 AND 2007 \
                   OR coalesce(m.associated_message_type, 0) BETWEEN 3000 AND 3007)";
    // What AMC's copy follows from, digested with the columns before it.
    let content = [
        "text",
        "attributedBody",
        "message_summary_info",
        "date",
        "is_from_me",
        "handle_id",
        "item_type",
        "associated_message_type",
        "associated_message_guid",
        "balloon_bundle_id",
        "thread_originator_guid",
        "other_handle",
        "group_title",
    ]
    .map(column)
    .join(", ");
    format!(
        "SELECT m.ROWID, {guid}, {edited}, {retracted}, {CHAT_OF_ROW}, \
         (SELECT group_concat(a.attachment_id) FROM message_attachment_join a WHERE a.message_id = m.ROWID), \
         coalesce(m.item_type, 0) = 0 AND NOT {tapback} AND (coalesce(length(m.text), 0) > 0 \
           OR m.attributedBody IS NOT NULL OR {retracted} <> 0 \
           OR EXISTS (SELECT 1 FROM message_attachment_join a WHERE a.message_id = m.ROWID)), \
         {tapback}, {content} \
         FROM message m WHERE m.ROWID > ?1 AND m.ROWID <= ?2 ORDER BY m.ROWID LIMIT ?3",
        guid = total_column("guid"),
    )
}

/// [`RowState::content`] of a row of the states query: its columns from the guid on
/// (but the two flags), each with its type and length.
fn content_of(r: &rusqlite::Row<'_>, count: usize) -> rusqlite::Result<u64> {
    use rusqlite::types::ValueRef;
    use std::hash::Hasher;
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0x616d_632d_726f_7773, 0x6368_6174_2e64_6230);
    for i in (1..count).filter(|i| !(STATE_COLUMNS..STATE_COLUMNS + 2).contains(i)) {
        match r.get_ref(i)? {
            ValueRef::Null => h.write_u8(0),
            ValueRef::Integer(v) => {
                h.write_u8(1);
                h.write_i64(v);
            }
            ValueRef::Real(v) => {
                h.write_u8(2);
                h.write_u64(v.to_bits());
            }
            ValueRef::Text(b) | ValueRef::Blob(b) => {
                h.write_u8(3);
                h.write_u64(b.len() as u64);
                h.write(b);
            }
        }
    }
    Ok(h.finish())
}

/// A required column read so that every row decodes: a missing or mistyped `date` takes
/// the date of the nearest earlier row that has one (so the message keeps its place and
/// is not taken for one that arrived late); a missing `is_from_me` reads as someone
/// else's message (shown to agents rather than hidden); a `guid` that is not text (the
/// schema says `UNIQUE NOT NULL`, but a damaged file may differ) is named after its ROWID.
fn total_column(column: &str) -> String {
    match column {
        "date" => "CASE typeof(m.date) WHEN 'integer' THEN m.date WHEN 'real' THEN CAST(m.date AS INTEGER) \
                   ELSE coalesce((SELECT p.date FROM message p WHERE p.ROWID < m.ROWID \
                   AND typeof(p.date) = 'integer' ORDER BY p.ROWID DESC LIMIT 1), 0) END as date"
            .to_owned(),
        "is_from_me" => {
            "CASE typeof(m.is_from_me) WHEN 'integer' THEN m.is_from_me ELSE 0 END as is_from_me".to_owned()
        }
        _ => "CASE typeof(m.guid) WHEN 'text' THEN m.guid ELSE 'amc-rowid-' || m.ROWID END as guid".to_owned(),
    }
}

impl ChatDb {
    /// Opens chat.db read-only. On macOS a failure here usually means AMC lacks Full
    /// Disk Access.
    pub fn open(path: &Path) -> Result<Self, SourceError> {
        let cannot = |e: &dyn std::fmt::Display| SourceError::CannotOpen {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        // Only a file that is not there is missing: a folder macOS keeps from AMC without
        // Full Disk Access answers "operation not permitted", not "no such file".
        match path.try_exists() {
            Ok(true) => {}
            Ok(false) => return Err(SourceError::Missing(path.display().to_string())),
            Err(e) => return Err(cannot(&e)),
        }
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(|e| cannot(&e))?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(|e| cannot(&e))?;
        // Cached statements compiled once, not again on every poll (see `open_connection`
        // in amc-core's db.rs).
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map_err(|e| cannot(&e))?;
        let caps = Capabilities::determine(&conn).map_err(|e| match e {
            imessage_database::error::table::TableError::CannotConnect(_) => {
                SourceError::NotMessages(path.display().to_string())
            }
            other => cannot(&other),
        })?;
        let query = message_query(&caps);
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('message')")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| cannot(&e))?;
        Ok(Self {
            path: path.to_owned(),
            conn,
            query,
            states_query: states_query(&columns),
            contacts: crate::contacts::Contacts::default(),
            held: None,
            late_horizon: Some(crate::settings::LATE_HORIZON),
        })
    }

    /// Counts rows sent longer ago than `horizon` that appear after the first import as
    /// late (`None`: none is).
    pub fn with_late_horizon(mut self, horizon: Option<Duration>) -> Self {
        self.late_horizon = horizon;
        self
    }

    /// How old a row that appears after the first import must be to have arrived late.
    pub fn late_horizon(&self) -> Option<Duration> {
        self.late_horizon
    }

    /// Names senders and chats from these Contacts.
    pub fn with_contacts(mut self, contacts: crate::contacts::Contacts) -> Self {
        self.contacts = contacts;
        self
    }

    /// The Contacts names in use.
    pub fn contacts(&self) -> &crate::contacts::Contacts {
        &self.contacts
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// SQLite's `data_version`: it changes when another connection (Messages) commits.
    pub fn data_version(&self) -> Result<i64, SourceError> {
        Ok(self.conn.pragma_query_value(None, "data_version", |r| r.get(0))?)
    }

    /// The service (`iMessage`, `SMS`, `RCS`) of the newest message in the conversation
    /// with this `chat_identifier`, whatever its chat's guid.
    pub fn last_service(&self, chat_identifier: &str) -> Result<Option<String>, SourceError> {
        use rusqlite::OptionalExtension;
        Ok(self
            .conn
            .query_row(
                "SELECT m.service FROM chat c JOIN chat_message_join cm ON cm.chat_id = c.ROWID \
                 JOIN message m ON m.ROWID = cm.message_id \
                 WHERE c.chat_identifier = ?1 AND m.service IS NOT NULL ORDER BY cm.message_date DESC LIMIT 1",
                [chat_identifier],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// The guids of the chats chat.db holds for the conversation with this
    /// `chat_identifier` (one per service it was on, and macOS 26's `any;` one), the chat
    /// with the newest message first and chats without messages last: only the chat
    /// holding the conversation's messages is one Messages' AppleScript resolves
    /// (nixfred/blip#8).
    pub fn chat_guids(&self, chat_identifier: &str) -> Result<Vec<String>, SourceError> {
        // The newest message of each chat is one seek of the (chat_id, message_date) index.
        let mut stmt = self.conn.prepare_cached(
            "SELECT c.guid, (SELECT max(cm.message_date) FROM chat_message_join cm WHERE cm.chat_id = c.ROWID) AS last \
             FROM chat c WHERE c.chat_identifier = ?1 AND c.guid IS NOT NULL \
             ORDER BY last IS NULL, last DESC, c.ROWID DESC",
        )?;
        let guids = stmt.query_map([chat_identifier], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(guids)
    }

    /// How Messages left the row with this guid (`None`: no such row), by the guid's
    /// unique index.
    pub fn sent_state(&self, guid: &str) -> Result<Option<SentState>, SourceError> {
        use rusqlite::OptionalExtension;
        let mut stmt = self.conn.prepare_cached(
            "SELECT coalesce(m.error, 0), \
             (SELECT a.transfer_name FROM message_attachment_join j JOIN attachment a ON a.ROWID = j.attachment_id \
              WHERE j.message_id = m.ROWID LIMIT 1) \
             FROM message m WHERE m.guid = ?1",
        )?;
        Ok(stmt.query_row([guid], |r| Ok(SentState { error: r.get(0)?, file: r.get(1)? })).optional()?)
    }

    /// The guid of the message at `rowid`, if there is one.
    pub fn guid_of(&self, rowid: i64) -> Result<Option<String>, SourceError> {
        use rusqlite::OptionalExtension;
        Ok(self.conn.query_row("SELECT guid FROM message WHERE ROWID = ?1", [rowid], |r| r.get(0)).optional()?)
    }

    /// The highest ROWID of `message` and the table's AUTOINCREMENT sequence (0 where
    /// chat.db keeps none): neither goes back unless the rows were rewritten.
    pub fn high_marks(&self) -> Result<(i64, i64), SourceError> {
        let sequence = self
            .conn
            .query_row("SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'message'), 0)", [], |r| r.get(0))
            .unwrap_or(0);
        Ok((self.max_rowid()?, sequence))
    }

    /// The highest ROWID of `message`.
    pub fn max_rowid(&self) -> Result<i64, SourceError> {
        Ok(self.conn.query_row("SELECT coalesce(max(ROWID), 0) FROM message", [], |r| r.get(0))?)
    }

    /// How many rows `message` has at or below `rowid`.
    pub fn rows_up_to(&self, rowid: i64) -> Result<i64, SourceError> {
        // A count of the whole table reads its smallest index (4 ms on 1,000,000 rows)
        // where a ROWID range reads the table itself, text and all (118 ms). When few rows
        // come after `rowid`, as after a read, the whole count less those is the answer, in
        // one statement (one snapshot).
        const FEW: i64 = 10_000;
        let after: i64 = self.conn.query_row(
            "SELECT count(*) FROM (SELECT 1 FROM message WHERE ROWID > ?1 LIMIT ?2)",
            [rowid, FEW],
            |r| r.get(0),
        )?;
        let sql = if after < FEW {
            "SELECT (SELECT count(*) FROM message) - (SELECT count(*) FROM message WHERE ROWID > ?1)"
        } else {
            "SELECT count(*) FROM message WHERE ROWID <= ?1"
        };
        Ok(self.conn.query_row(sql, [rowid], |r| r.get(0))?)
    }

    /// Up to `limit` messages after `rowid`, oldest first, bodies decoded.
    pub fn messages_after(&self, rowid: i64, limit: u32) -> Result<Vec<Message>, SourceError> {
        let mut out = Vec::new();
        self.each_message_after(rowid, limit, |m| {
            out.push(m);
            Ok(())
        })?;
        Ok(out)
    }

    /// Hands `each` up to `limit` messages after `rowid`, oldest first, bodies decoded,
    /// one at a time: a decoded row (a kilobyte or so) need not outlive its turn.
    pub fn each_message_after(
        &self,
        rowid: i64,
        limit: u32,
        mut each: impl FnMut(Message) -> Result<(), SourceError>,
    ) -> Result<(), SourceError> {
        let mut stmt =
            self.conn.prepare_cached(&format!("{} WHERE m.ROWID > ?1 ORDER BY m.ROWID LIMIT ?2", self.query))?;
        for row in Message::rows(&mut stmt, rusqlite::params![rowid, limit])? {
            each(row?)?;
        }
        Ok(())
    }

    /// The person's rows after `rowid` with their delivery state, oldest first.
    pub fn sent_rows_after(&self, rowid: i64) -> Result<Vec<SentRow>, SourceError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT m.ROWID, m.guid, m.date, coalesce(m.is_sent, 0), coalesce(m.is_delivered, 0), \
             coalesce(m.error, 0), coalesce(c.chat_identifier, ''), \
             (SELECT group_concat(coalesce(a.transfer_name, ''), char(31)) FROM message_attachment_join j \
              JOIN attachment a ON a.ROWID = j.attachment_id WHERE j.message_id = m.ROWID) \
             FROM message m JOIN chat_message_join cm ON cm.message_id = m.ROWID JOIN chat c ON c.ROWID = cm.chat_id \
             WHERE m.ROWID > ?1 AND m.is_from_me = 1 ORDER BY m.ROWID",
        )?;
        let rows = stmt.query_map([rowid], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                SentRow {
                    guid: r.get(1)?,
                    text: String::new(),
                    date: r.get::<_, Option<i64>>(2)?.unwrap_or(0),
                    is_sent: r.get::<_, i64>(3)? != 0,
                    is_delivered: r.get::<_, i64>(4)? != 0,
                    error: r.get(5)?,
                    chat_identifier: r.get(6)?,
                    transfer_names: r
                        .get::<_, Option<String>>(7)?
                        .map(|names| names.split('\u{1f}').map(str::to_owned).collect())
                        .unwrap_or_default(),
                },
            ))
        })?;
        let mut out = rows.collect::<rusqlite::Result<Vec<_>>>()?;
        // The text as Messages shows it: decoded like every row AMC reads.
        let rowids: Vec<i64> = out.iter().map(|(r, _)| *r).collect();
        let texts: std::collections::HashMap<i64, String> =
            self.messages_at(&rowids)?.into_iter().map(|m| (i64::from(m.rowid), m.text.unwrap_or_default())).collect();
        for (rowid, row) in &mut out {
            row.text = texts.get(rowid).cloned().unwrap_or_default();
        }
        Ok(out.into_iter().map(|(_, r)| r).collect())
    }

    /// Whether to leave out the newest rows that have no chat yet, from `first` on (the
    /// first row after the last one in a chat or a tapback, or `None` when there is
    /// none): a writer may commit a message before the row that puts it in its chat, and
    /// a read in between would pass the message by for good. They come back with the next
    /// read, joined; rows that stay without a chat for a minute are let through as they are.
    pub fn holds_tail_from(&mut self, first: Option<i32>) -> bool {
        let Some(first) = first else {
            self.held = None;
            return false;
        };
        match self.held {
            Some((rowid, since)) if rowid == first && since.elapsed() >= JOIN_GRACE => {
                self.held = None;
                return false;
            }
            Some((rowid, _)) if rowid == first => {}
            _ => self.held = Some((first, std::time::Instant::now())),
        }
        true
    }

    /// For tests of the minute above: as if the rows held back now had waited `by` longer.
    #[doc(hidden)]
    pub fn backdate_hold(&mut self, by: Duration) {
        if let Some((_, since)) = &mut self.held {
            *since = since.checked_sub(by).expect("the clock reaches back that far");
        }
    }

    /// The messages at these ROWIDs (those that still exist), bodies decoded.
    pub fn messages_at(&self, rowids: &[i64]) -> Result<Vec<Message>, SourceError> {
        let mut stmt = self.conn.prepare_cached(&format!("{} WHERE m.ROWID = ?1", self.query))?;
        let mut out = Vec::new();
        for rowid in rowids {
            for row in Message::rows(&mut stmt, [rowid])? {
                out.push(row?);
            }
        }
        Ok(out)
    }

    /// Up to `limit` rows' [`RowState`]s after `rowid`, oldest first. Decodes no body: a
    /// sweep of the whole file costs one pass over `message` by ROWID.
    pub fn row_states_after(&self, rowid: i64, limit: u32) -> Result<Vec<RowState>, SourceError> {
        self.row_states_in(rowid, i64::MAX, limit)
    }

    /// Up to `limit` rows' [`RowState`]s with ROWIDs after `after` and up to `upto`.
    pub fn row_states_in(&self, after: i64, upto: i64, limit: u32) -> Result<Vec<RowState>, SourceError> {
        let mut stmt = self.conn.prepare_cached(&self.states_query)?;
        let count = stmt.column_count();
        let rows = stmt.query_map(rusqlite::params![after, upto, limit], |r| {
            Ok(RowState {
                rowid: r.get(0)?,
                guid: r.get(1)?,
                date_edited: r.get(2)?,
                date_retracted: r.get(3)?,
                joined: r.get::<_, Option<i64>>(4)?.is_some(),
                may_be_message: r.get(STATE_COLUMNS)?,
                tapback: r.get(STATE_COLUMNS + 1)?,
                content: content_of(r, count)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// How many parts the message with this guid has at most: its files and its text (0
    /// when there is no such message).
    pub fn parts_of(&self, guid: &str) -> Result<i64, SourceError> {
        use rusqlite::OptionalExtension;
        let mut stmt = self.conn.prepare_cached(
            "SELECT 1 + (SELECT count(*) FROM message_attachment_join j WHERE j.message_id = m.ROWID) \
             FROM message m WHERE m.guid = ?1",
        )?;
        Ok(stmt.query_row([guid], |r| r.get(0)).optional()?.unwrap_or(0))
    }

    /// The first ROWID of `message` after `rowid`, if any.
    pub fn first_rowid_after(&self, rowid: i64) -> Result<Option<i64>, SourceError> {
        Ok(self.conn.query_row("SELECT min(ROWID) FROM message WHERE ROWID > ?1", [rowid], |r| r.get(0))?)
    }

    /// Whether a row of `message` has this guid (by the guid's unique index).
    pub fn has_guid(&self, guid: &str) -> Result<bool, SourceError> {
        let mut stmt = self.conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM message WHERE guid = ?1)")?;
        Ok(stmt.query_row([guid], |r| r.get(0))?)
    }

    /// The ROWIDs of the tapback rows that name any of these messages, in ROWID order, by
    /// the index on `associated_message_guid`: a tapback names a message's part
    /// (`p:N/guid`; the first [`TAPBACK_PARTS`] parts are asked for), its whole bubble
    /// (`bp:guid`), or the message itself (older macOS).
    pub fn tapbacks_on(&self, guids: &[String]) -> Result<Vec<i64>, SourceError> {
        let names: Vec<String> = ["?1".to_owned(), "'bp:' || ?1".to_owned()]
            .into_iter()
            .chain((0..TAPBACK_PARTS).map(|n| format!("'p:{n}/' || ?1")))
            .collect();
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT ROWID FROM message WHERE associated_message_guid IN ({}) \
             AND (associated_message_type BETWEEN 2000 AND 2007 OR associated_message_type BETWEEN 3000 AND 3007)",
            names.join(", ")
        ))?;
        let mut rowids = Vec::new();
        for guid in guids {
            for rowid in stmt.query_map([guid], |r| r.get::<_, i64>(0))? {
                rowids.push(rowid?);
            }
        }
        rowids.sort_unstable();
        rowids.dedup();
        Ok(rowids)
    }

    /// How many chats chat.db holds of each form, by the service its guids start with
    /// (`iMessage`, `SMS`, `RCS`, macOS 26's `any`), most first: what `amc doctor --deep`
    /// reports of this Mac's Messages.
    pub fn chat_forms(&self) -> Result<Vec<(String, i64)>, SourceError> {
        let mut stmt = self.conn.prepare(
            "SELECT CASE WHEN instr(guid, ';') > 0 THEN substr(guid, 1, instr(guid, ';') - 1) ELSE '?' END AS form, \
             count(*) FROM chat GROUP BY form ORDER BY 2 DESC, 1",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The person's own addresses as Messages records them on what they sent: the address
    /// a message went out from (`message.destination_caller_id`) and the account it was sent
    /// with (`message.account`, `E:` or `P:` before it), since a self-chat may be keyed by
    /// the one or the other (anthropics/claude-plugins-official#4503). A column chat.db does
    /// not have gives none.
    pub fn own_addresses(&self) -> Result<Vec<String>, SourceError> {
        self.own_addresses_after(0)
    }

    /// [`ChatDb::own_addresses`] of the rows after `rowid` alone (the rows just read: a
    /// range of the table's own key, so cheap on any chat.db).
    pub fn own_addresses_after(&self, rowid: i64) -> Result<Vec<String>, SourceError> {
        let has = |column: &str| -> Result<bool, SourceError> {
            Ok(self.conn.prepare("SELECT 1 FROM pragma_table_info('message') WHERE name = ?1")?.exists([column])?)
        };
        let mut parts = Vec::new();
        if has("destination_caller_id")? {
            parts.push(
                "SELECT destination_caller_id FROM message \
                 WHERE ROWID > ?1 AND is_from_me = 1 AND coalesce(destination_caller_id, '') != ''",
            );
        }
        if has("account")? {
            parts.push(
                "SELECT substr(account, 3) FROM message \
                 WHERE ROWID > ?1 AND is_from_me = 1 AND account LIKE '_:%' AND length(account) > 2",
            );
        }
        if parts.is_empty() {
            return Ok(Vec::new());
        }
        // UNION keeps each address once.
        let mut stmt = self.conn.prepare(&format!("{} LIMIT 20", parts.join(" UNION ")))?;
        let rows = stmt.query_map([rowid], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Every chat's name and number of participants, by ROWID: what names its channel, read
    /// cheaply to tell when it changed.
    pub fn chat_states(&self) -> Result<HashMap<i32, (String, i64)>, SourceError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT c.ROWID, coalesce(c.display_name, ''), \
             (SELECT count(*) FROM chat_handle_join j WHERE j.chat_id = c.ROWID) FROM chat c",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i32>(0)?, (r.get(1)?, r.get(2)?))))?;
        Ok(rows.collect::<rusqlite::Result<HashMap<_, _>>>()?)
    }

    /// Every chat, by ROWID, with its participants.
    pub fn chats(&self) -> Result<HashMap<i32, ChatInfo>, SourceError> {
        let mut chats = HashMap::new();
        let mut stmt = self.conn.prepare_cached(
            "SELECT ROWID, guid, coalesce(style, 45), display_name, coalesce(chat_identifier, '') FROM chat",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, i32>(0)?,
                ChatInfo {
                    guid: r.get(1)?,
                    style: r.get(2)?,
                    display_name: r.get::<_, Option<String>>(3)?.filter(|n| !n.trim().is_empty()),
                    identifier: r.get(4)?,
                    participants: Vec::new(),
                },
            ))
        })?;
        for row in rows {
            let (id, chat) = row?;
            chats.insert(id, chat);
        }
        let mut stmt = self.conn.prepare_cached(
            "SELECT j.chat_id, h.id FROM chat_handle_join j JOIN handle h ON h.ROWID = j.handle_id ORDER BY j.chat_id, h.ROWID",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i32>(0)?, r.get::<_, String>(1)?)))?;
        for row in rows {
            let (chat_id, handle) = row?;
            if let Some(chat) = chats.get_mut(&chat_id) {
                chat.participants.push(handle);
            }
        }
        Ok(chats)
    }

    /// The attachments of a message: guid, file name (with `~` for the home folder, as
    /// Messages writes it), MIME type, size, and the name it was sent under.
    pub fn attachments_of(&self, message_rowid: i32) -> Result<Vec<ChatAttachment>, SourceError> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT a.guid, a.filename, a.mime_type, a.total_bytes, a.transfer_name FROM attachment a \
             JOIN message_attachment_join j ON j.attachment_id = a.ROWID WHERE j.message_id = ?1 ORDER BY a.ROWID",
        )?;
        let rows = stmt.query_map([message_rowid], |r| {
            Ok(ChatAttachment {
                guid: r.get(0)?,
                filename: r.get(1)?,
                mime_type: r.get(2)?,
                total_bytes: r.get(3)?,
                transfer_name: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Every handle's address, by ROWID.
    pub fn handles(&self) -> Result<HashMap<i32, String>, SourceError> {
        let mut stmt = self.conn.prepare_cached("SELECT ROWID, id FROM handle")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i32>(0)?, r.get::<_, String>(1)?)))?;
        let mut out = HashMap::new();
        for row in rows {
            let (id, handle) = row?;
            out.insert(id, handle);
        }
        Ok(out)
    }
}
