//! Messages: ingest from sources, and the agents' views (unread, context, get), which
//! only ever show messages of allowed channels inside their released history.

use std::collections::{BTreeSet, HashMap};

use rusqlite::{OptionalExtension, Row, Transaction, params};

use super::Store;
use super::channels::{VISIBLE, lower_floors, parse_col, unread_to, upsert, visible_to};
use super::channels::{agent_key, channel_key, open_channels_to, unread_in_scan_to};
use crate::error::{Error, Result};
use crate::model::{
    AttachmentFile, AttachmentInfo, ChannelKind, ChannelRef, ChannelSpec, Direction, Envelope, Held, IncomingMessage,
    IngestReport, Reaction, ReactionChange, RemoteFile, SenderInfo, Source, ThreadRef, ThreadSpec,
};
use crate::time::{Millis, now_ms};

/// How many columns [`ENVELOPE_COLS`] selects: a query's own columns come after them.
pub(super) const ENVELOPE_WIDTH: usize = 19;

/// The envelope's columns, for `FROM messages m JOIN channels c`.
/// `reply_to` is shown only when the parent is inside the channel's released history, so
/// an envelope never names a quarantined message.
pub(super) const ENVELOPE_COLS: &str = "m.id, m.source, c.id, c.name, c.kind, m.sender_id, m.sender_name, m.is_self, \
     m.text, m.sent_at, m.edited_at, m.unsent, \
     CASE WHEN m.reply_to IS NOT NULL AND EXISTS (SELECT 1 FROM messages p WHERE p.id = m.reply_to \
       AND p.channel = m.channel AND (c.visible_from IS NULL OR p.sent_at >= c.visible_from) \
       AND (c.stored_from IS NULL OR p.ingested_at >= c.stored_from)) \
       THEN m.reply_to END, \
     m.reactions, m.direction, m.agent_id, m.delivery_failed, m.not_a_code IS NOT NULL, \
     (SELECT t.name FROM threads t WHERE t.source = m.source AND t.platform_id = m.thread_id)";

/// A message's time as stored: never later than when AMC stored it. A sender's clock
/// ahead, or a damaged date (year 2100, 2286), would otherwise sort the message after
/// every message still to come and hide them from a client paging by `since`.
fn stored_sent_at(msg: &IncomingMessage, now: Millis) -> Millis {
    msg.sent_at.min(now)
}

pub(super) fn envelope_from_row(row: &Row<'_>) -> rusqlite::Result<Envelope> {
    let reactions: String = row.get(13)?;
    Ok(Envelope {
        id: row.get(0)?,
        source: parse_col(row, 1, Source::parse)?,
        channel_id: row.get(2)?,
        channel: ChannelRef { name: row.get(3)?, kind: parse_col(row, 4, ChannelKind::parse)? },
        sender: SenderInfo { id: row.get(5)?, display_name: row.get(6)?, is_self: row.get(7)? },
        text: row.get(8)?,
        sent_at: row.get(9)?,
        edited_at: row.get(10)?,
        unsent: row.get(11)?,
        reply_to: row.get(12)?,
        reactions: serde_json::from_str(&reactions).unwrap_or_default(),
        attachments: Vec::new(),
        direction: parse_col(row, 14, Direction::parse)?,
        agent_id: row.get(15)?,
        delivery_failed: row.get(16)?,
        not_a_code: row.get(17)?,
        untrusted_content: true,
        redacted: Vec::new(),
        secrets: Vec::new(),
        secret_spans: Vec::new(),
        thread: row.get::<_, Option<String>>(ENVELOPE_WIDTH - 1)?.map(|name| ThreadRef { name }),
    })
}

/// Fills in the attachments of a page of envelopes with one query per message.
pub(super) fn load_attachments(tx: &Transaction<'_>, envelopes: &mut [Envelope]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "SELECT id, filename, mime_type, size_bytes, available FROM attachments WHERE message_id = ?1 ORDER BY rowid",
    )?;
    for env in envelopes.iter_mut() {
        let rows = stmt.query_map([&env.id], |r| {
            let id: String = r.get(0)?;
            Ok(AttachmentInfo {
                download_path: format!("/attachments/{id}"),
                id,
                filename: r.get(1)?,
                mime_type: r.get(2)?,
                size_bytes: r.get(3)?,
                available: r.get(4)?,
            })
        })?;
        env.attachments = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    }
    Ok(())
}

fn collect(tx: &Transaction<'_>, stmt_rows: rusqlite::Result<Vec<Envelope>>) -> Result<Vec<Envelope>> {
    let mut envelopes = stmt_rows?;
    load_attachments(tx, &mut envelopes)?;
    Ok(envelopes)
}

/// How many messages [`raise_floor_past_read`] looks at, at most: it runs in a write.
const FLOOR_STEP: i64 = 2_000;

/// Raises the agent's unread floor over the messages at it that it has now read (or may
/// not see), so its next `list_unread` does not step over them again: an agent that
/// marks each page read would otherwise have every call scan the page before. Looks at
/// [`FLOOR_STEP`] messages at most; the floor then stops at the last one looked at.
fn raise_floor_past_read(tx: &Transaction<'_>, agent_id: &str) -> Result<()> {
    let Some(floor) = floor_of(tx, agent_id)? else {
        return Ok(());
    };
    let sql = format!(
        "SELECT m.sent_at, m.id, {} \
         FROM messages m INDEXED BY messages_by_time JOIN channels c ON c.key = m.channel \
         WHERE (m.sent_at, m.id) >= (?2, ?3) ORDER BY m.sent_at, m.id LIMIT ?4",
        unread_in_scan_to("?1")
    );
    let mut stmt = tx.prepare_cached(&sql)?;
    let mut rows = stmt.query(params![agent_id, floor.0, floor.1, FLOOR_STEP])?;
    let mut raised = None;
    while let Some(row) = rows.next()? {
        raised = Some((row.get::<_, Millis>(0)?, row.get::<_, String>(1)?));
        if row.get::<_, bool>(2)? {
            break;
        }
    }
    if let Some((at, id)) = raised.filter(|r| *r > floor) {
        tx.prepare_cached("UPDATE agents SET floor_at = ?2, floor_id = ?3 WHERE id = ?1")?
            .execute(params![agent_id, at, id])?;
    }
    Ok(())
}

/// Marks read, for the agent bound to `?1`, the messages of the JSON array of ids bound
/// to `?2` that it may see, at the time bound to `?3`: the ids are read first, each message
/// then found through the id index (`CROSS JOIN` keeps that order; test
/// `marking_read_starts_at_the_ids`).
pub(super) fn mark_read_sql() -> String {
    format!(
        "INSERT INTO read_marks (agent, message, read_at) \
         SELECT {}, m.rowid, ?3 FROM json_each(?2) j CROSS JOIN messages m ON m.id = j.value \
         JOIN channels c ON c.key = m.channel WHERE {} \
         ON CONFLICT (agent, message) DO NOTHING",
        agent_key("?1"),
        visible_to("?1")
    )
}

/// The agent's unread floor: no message before it is unread for the agent. None for an
/// unknown agent.
fn floor_of(tx: &Transaction<'_>, agent_id: &str) -> Result<Option<(Millis, String)>> {
    Ok(tx
        .prepare_cached("SELECT floor_at, floor_id FROM agents WHERE id = ?1")?
        .query_row([agent_id], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// The filters of `GET /messages/unread`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnreadQuery {
    /// Only messages sent at or after this time.
    pub since: Option<Millis>,
    /// Only messages after this one, by (time, id).
    pub after: Option<(Millis, String)>,
    /// Only this source.
    pub source: Option<Source>,
    /// Only this channel.
    pub channel_id: Option<String>,
    /// At most this many (1..=100).
    pub limit: u32,
}

impl Store {
    /// Stores messages of one channel from a source, creating the channel (pending) if
    /// new. Idempotent on the platform id: a message seen again updates its text, edit,
    /// unsend and reactions, and is never stored twice. `checkpoint`, if given, is written
    /// in the same transaction, so a source's high-water mark never runs ahead of its data.
    #[cfg(any(test, feature = "test-support"))]
    #[tracing::instrument(skip_all, fields(source = %source, channel = %channel.platform_id, n = messages.len()), err)]
    pub fn ingest(
        &self,
        source: Source,
        channel: &ChannelSpec,
        messages: &[IncomingMessage],
        checkpoint: Option<(&str, &str)>,
    ) -> Result<IngestReport> {
        let mut reports = self.ingest_batches(source, [(channel, messages)], checkpoint, None)?;
        reports.pop().ok_or_else(|| Error::internal("ingest reported nothing"))
    }

    /// Stores messages of a thread inside `channel` (a Discord thread or forum post): in
    /// the channel, each naming the thread, whose name is kept up to date.
    pub fn ingest_thread(
        &self,
        source: Source,
        channel: &ChannelSpec,
        thread: &ThreadSpec,
        messages: &[IncomingMessage],
    ) -> Result<IngestReport> {
        let mut reports = self.ingest_batches(source, [(channel, messages)], None, Some(thread))?;
        reports.pop().ok_or_else(|| Error::internal("ingest reported nothing"))
    }

    /// [`Store::ingest`] for several channels in one transaction: a source reading many
    /// chats at once writes them, and its checkpoint, together.
    pub fn ingest_many(
        &self,
        source: Source,
        batches: &[(ChannelSpec, Vec<IncomingMessage>)],
        checkpoint: Option<(&str, &str)>,
    ) -> Result<Vec<IngestReport>> {
        self.ingest_batches(source, batches.iter().map(|(c, m)| (c, m.as_slice())), checkpoint, None)
    }

    fn ingest_batches<'a>(
        &self,
        source: Source,
        batches: impl IntoIterator<Item = (&'a ChannelSpec, &'a [IncomingMessage])>,
        checkpoint: Option<(&str, &str)>,
        thread: Option<&ThreadSpec>,
    ) -> Result<Vec<IngestReport>> {
        let now = now_ms();
        self.db.write(|tx| {
            let mut reports = Vec::new();
            let mut lowest: Option<(Millis, String)> = None;
            let mut pending = Pending::read(tx)?;
            for (channel, messages) in batches {
                let stored = upsert(tx, source, channel, now)?;
                let (channel_id, channel_created) = (stored.id, stored.created);
                if let Some(t) = thread {
                    tx.prepare_cached(
                        "INSERT INTO threads (source, platform_id, channel_id, name) VALUES (?1, ?2, ?3, ?4) \
                         ON CONFLICT (source, platform_id) DO UPDATE SET name = excluded.name, channel_id = excluded.channel_id",
                    )?
                    .execute(params![source.as_str(), t.platform_id, channel_id, t.name])?;
                }
                let mut report = IngestReport {
                    channel_id: channel_id.clone(),
                    channel_created,
                    channel_changed: stored.changed,
                    ..Default::default()
                };
                let mut newest: Option<Millis> = None;
                for msg in messages {
                    let place = Place { channel: stored.key, thread_id: thread.map(|t| t.platform_id.as_str()) };
                    match ingest_one(tx, source, place, msg, now, || self.next_message_id(), &mut pending)? {
                        Ingested::Inserted(id) => {
                            let sent_at = stored_sent_at(msg, now);
                            if lowest.as_ref().is_none_or(|(at, lid)| (sent_at, &id) < (*at, lid)) {
                                lowest = Some((sent_at, id.clone()));
                            }
                            newest = newest.max(Some(sent_at));
                            report.inserted.push(id);
                            report.inserted_platform_ids.push(msg.platform_id.clone());
                        }
                        Ingested::Updated(id) => report.updated.push(id),
                        Ingested::Unchanged => {}
                    }
                }
                if let Some(newest) = newest {
                    tx.prepare_cached(
                        "UPDATE channels SET last_message_at = max(coalesce(last_message_at, ?2), ?2) WHERE key = ?1",
                    )?
                    .execute(params![stored.key, newest])?;
                }
                reports.push(report);
            }
            if let Some((at, id)) = lowest {
                lower_floors(tx, at, &id)?;
            }
            if let Some((key, value)) = checkpoint {
                set_source_state(tx, source, key, value)?;
            }
            Ok(reports)
        })
    }

    /// A source's checkpoint value, if any.
    pub fn source_state(&self, source: Source, key: &str) -> Result<Option<String>> {
        self.db.read(|tx| {
            Ok(tx
                .prepare_cached("SELECT value FROM source_state WHERE source = ?1 AND key = ?2")?
                .query_row(params![source.as_str(), key], |r| r.get(0))
                .optional()?)
        })
    }

    /// Sets a source's checkpoint value on its own (ingest can write it with the data).
    pub fn set_source_state(&self, source: Source, key: &str, value: &str) -> Result<()> {
        self.db.write(|tx| set_source_state(tx, source, key, value))
    }

    /// The agent's unread messages, oldest first, and `next_since`.
    pub fn unread(&self, agent_id: &str, q: &UnreadQuery) -> Result<(Vec<Envelope>, Option<Millis>)> {
        self.unread_merging(agent_id, q, MERGED_CHANNELS)
    }

    /// [`Store::unread`], merging the channels' own walks for up to `merged` open channels.
    pub(super) fn unread_merging(
        &self,
        agent_id: &str,
        q: &UnreadQuery,
        merged: usize,
    ) -> Result<(Vec<Envelope>, Option<Millis>)> {
        if q.limit == 0 {
            return Ok((Vec::new(), q.since));
        }
        let (messages, advance) = self.db.read(|tx| {
            let generation: i64 =
                tx.prepare_cached("SELECT value FROM unread_generation WHERE id = 1")?.query_row([], |r| r.get(0))?;
            let floor = floor_of(tx, agent_id)?.ok_or_else(|| Error::unauthorized("unknown agent"))?;
            let since = q.since.unwrap_or(i64::MIN);
            // Message ids all have one length, so `id + " "` sorts after `id` and before
            // every id above it: a start inclusive of it is exclusive of `id`.
            let after = q.after.as_ref().map(|(at, id)| (*at, format!("{id} ")));
            let (start_at, start_id) =
                [Some(floor.clone()), Some((since, String::new())), after].into_iter().flatten().max().unwrap_or(floor.clone());
            // The channels open to the agent, when they are few; past MERGED_CHANNELS the
            // list is cut short and only its length matters.
            let merged = merged.min(MERGED_CHANNELS);
            let open = if q.channel_id.is_some() { Vec::new() } else { open_channel_keys(tx, agent_id)? };
            let merging = q.channel_id.is_none() && open.len() <= merged;
            let sql = if q.channel_id.is_some() {
                let unread = unread_to("?1");
                format!(
                    "SELECT {ENVELOPE_COLS} FROM messages m INDEXED BY messages_by_channel JOIN channels c ON c.key = m.channel \
                     WHERE m.channel = {} AND (m.sent_at, m.id) >= (?2, ?3) AND (?4 IS NULL OR m.source = ?4) \
                     AND {unread} ORDER BY m.sent_at, m.id LIMIT ?6",
                    channel_key("?5")
                )
            } else if merging {
                unread_merged_sql(open.len())
            } else {
                let unread = unread_in_scan_to("?1");
                format!(
                    "SELECT {ENVELOPE_COLS} FROM messages m INDEXED BY messages_by_time JOIN channels c ON c.key = m.channel \
                     WHERE (m.sent_at, m.id) >= (?2, ?3) AND (?4 IS NULL OR m.source = ?4) AND (?5 IS NULL) \
                     AND {unread} ORDER BY m.sent_at, m.id LIMIT ?6"
                )
            };
            let messages = if sql.is_empty() {
                Vec::new()
            } else {
                let mut stmt = tx.prepare_cached(&sql)?;
                let fixed = params![agent_id, start_at, start_id, q.source.map(Source::as_str), q.channel_id, q.limit];
                let keys = open.iter().filter(|_| merging).map(|k| k as &dyn rusqlite::ToSql);
                let bound: Vec<&dyn rusqlite::ToSql> = fixed.iter().copied().chain(keys).collect();
                let rows = stmt.query_map(bound.as_slice(), envelope_from_row)?.collect();
                collect(tx, rows)?
            };
            // Without filters, the scan proves that nothing before its first result (or,
            // when empty, before the newest message) is unread: remember that.
            let unfiltered = q.source.is_none() && q.channel_id.is_none() && (start_at, &start_id) == (floor.0, &floor.1);
            let advance = if unfiltered {
                let candidate = match messages.first() {
                    Some(m) => Some((m.sent_at, m.id.clone())),
                    None => tx
                        .prepare_cached("SELECT max(sent_at) FROM messages")?
                        .query_row([], |r| r.get::<_, Option<Millis>>(0))?
                        .map(|max| (max.saturating_add(1), String::new())),
                };
                candidate.filter(|c| *c > floor).map(|c| (generation, floor, c))
            } else {
                None
            };
            Ok((messages, advance))
        })?;
        if let Some((generation, old, new)) = advance {
            // Only if nothing that could add an older unread message happened since the
            // read. An optimisation: failing it changes nothing the agent sees.
            let raised = self.db.write(|tx| {
                tx.prepare_cached(
                    "UPDATE agents SET floor_at = ?3, floor_id = ?4 WHERE id = ?1 AND floor_at = ?5 AND floor_id = ?6 \
                     AND (SELECT value FROM unread_generation WHERE id = 1) = ?2",
                )?
                .execute(params![agent_id, generation, new.0, new.1, old.0, old.1])?;
                Ok(())
            });
            if let Err(e) = raised {
                tracing::debug!(error = %e, "unread floor not raised");
            }
        }
        let next_since = messages.last().map(|m| m.sent_at).or(q.since);
        Ok((messages, next_since))
    }

    /// Marks messages read for an agent; returns the number of unique ids submitted.
    /// Unknown and hidden ids are skipped but counted, so the count reveals nothing.
    pub fn mark_read(&self, agent_id: &str, ids: &[String]) -> Result<usize> {
        let unique: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
        // One statement for all of them, the ids as one JSON array.
        let listed = serde_json::to_string(&unique).map_err(Error::internal)?;
        let now = now_ms();
        self.db.write(|tx| {
            tx.prepare_cached(&mark_read_sql())?.execute(params![agent_id, listed, now])?;
            raise_floor_past_read(tx, agent_id)
        })?;
        Ok(unique.len())
    }

    /// A message visible to the agent, or `MESSAGE_NOT_FOUND`.
    pub fn visible_message(&self, agent_id: &str, id: &str) -> Result<Envelope> {
        self.db.read(|tx| visible_one(tx, agent_id, id, None))
    }

    /// The target message with up to `before` and `after` visible neighbours in its
    /// channel, chronologically.
    pub fn context(
        &self,
        agent_id: &str,
        channel_id: &str,
        around: &str,
        before: u32,
        after: u32,
    ) -> Result<Vec<Envelope>> {
        self.db.read(|tx| {
            let target = visible_one(tx, agent_id, around, Some(channel_id))?;
            let visible = visible_to("?5");
            let channel = channel_key("?1");
            let older_sql = format!(
                "SELECT {ENVELOPE_COLS} FROM messages m JOIN channels c ON c.key = m.channel \
                 WHERE m.channel = {channel} AND (m.sent_at, m.id) < (?2, ?3) AND {visible} \
                 ORDER BY m.sent_at DESC, m.id DESC LIMIT ?4"
            );
            let newer_sql = format!(
                "SELECT {ENVELOPE_COLS} FROM messages m JOIN channels c ON c.key = m.channel \
                 WHERE m.channel = {channel} AND (m.sent_at, m.id) > (?2, ?3) AND {visible} \
                 ORDER BY m.sent_at, m.id LIMIT ?4"
            );
            let mut older: Vec<Envelope> = tx
                .prepare_cached(&older_sql)?
                .query_map(params![channel_id, target.sent_at, target.id, before, agent_id], envelope_from_row)?
                .collect::<rusqlite::Result<_>>()?;
            older.reverse();
            let newer: Vec<Envelope> = tx
                .prepare_cached(&newer_sql)?
                .query_map(params![channel_id, target.sent_at, target.id, after, agent_id], envelope_from_row)?
                .collect::<rusqlite::Result<_>>()?;
            let mut all = older;
            all.push(target);
            all.extend(newer);
            load_attachments(tx, &mut all)?;
            Ok(all)
        })
    }

    /// The agents that have read each of `ids`.
    pub fn readers(&self, ids: &[String]) -> Result<HashMap<String, Vec<String>>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached(
                // Agent by agent, through the marks' primary key (CROSS JOIN keeps that
                // order; read marks have no index by message since migration 0017).
                "SELECT a.id FROM agents a CROSS JOIN read_marks r ON r.agent = a.rowid \
                     AND r.message = (SELECT rowid FROM messages WHERE id = ?1) ORDER BY r.read_at",
            )?;
            let mut out = HashMap::new();
            for id in ids {
                let agents = stmt.query_map([id], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
                out.insert(id.clone(), agents);
            }
            Ok(out)
        })
    }

    /// Recent messages of allowed channels, newest first, for the person's inbox view.
    pub fn recent_visible(&self, limit: u32) -> Result<Vec<Envelope>> {
        self.db.read(|tx| {
            let sql = format!(
                "SELECT {ENVELOPE_COLS} FROM messages m INDEXED BY messages_by_time JOIN channels c ON c.key = m.channel \
                 WHERE {VISIBLE} ORDER BY m.sent_at DESC, m.id DESC LIMIT ?1"
            );
            let rows = tx.prepare_cached(&sql)?.query_map([limit], envelope_from_row)?.collect();
            collect(tx, rows)
        })
    }

    /// The message `id`, whatever its channel's state: what the person sees of it.
    pub fn message_for_person(&self, id: &str) -> Result<Envelope> {
        self.db.read(|tx| {
            let sql =
                format!("SELECT {ENVELOPE_COLS} FROM messages m JOIN channels c ON c.key = m.channel WHERE m.id = ?1");
            let rows = tx.prepare_cached(&sql)?.query_map([id], envelope_from_row)?.collect();
            collect(tx, rows)?.pop().ok_or_else(|| Error::not_found("message"))
        })
    }

    /// Messages of any channel, visible or not, newest first: the person sees the
    /// conversation around a held send even in a channel agents cannot read.
    pub fn channel_tail(&self, channel_id: &str, limit: u32) -> Result<Vec<Envelope>> {
        self.db.read(|tx| {
            let sql = format!(
                "SELECT {ENVELOPE_COLS} FROM messages m JOIN channels c ON c.key = m.channel \
                 WHERE m.channel = {} ORDER BY m.sent_at DESC, m.id DESC LIMIT ?2",
                channel_key("?1")
            );
            let rows = tx.prepare_cached(&sql)?.query_map(params![channel_id, limit], envelope_from_row)?.collect();
            let mut out = collect(tx, rows)?;
            out.reverse();
            Ok(out)
        })
    }

    /// The local file of an attachment visible to the agent, if AMC has one.
    pub fn visible_attachment(&self, agent_id: &str, id: &str) -> Result<AttachmentFile> {
        self.db.read(|tx| {
            let sql = format!(
                "SELECT a.local_path, a.filename, a.mime_type, a.available, a.size_bytes, a.remote_url, a.platform_id, \
                 m.platform_id, c.platform_id, m.source, c.id, c.name FROM attachments a \
                 JOIN messages m ON m.id = a.message_id JOIN channels c ON c.key = m.channel WHERE a.id = ?1 AND {}",
                visible_to("?2")
            );
            tx.prepare_cached(&sql)?
                .query_row([id, agent_id], |r| {
                    let remote = r.get::<_, Option<String>>(5)?.map(|url| -> rusqlite::Result<_> {
                        Ok(RemoteFile {
                            url,
                            attachment_platform_id: r.get(6)?,
                            message_platform_id: r.get(7)?,
                            channel_platform_id: r.get(8)?,
                        })
                    });
                    let source: String = r.get(9)?;
                    Ok(AttachmentFile {
                        local_path: r.get(0)?,
                        filename: r.get(1)?,
                        mime_type: r.get(2)?,
                        available: r.get(3)?,
                        size_bytes: r.get(4)?,
                        remote: remote.transpose()?,
                        source: Source::parse(&source).unwrap_or(Source::Imessage),
                        channel: (r.get(10)?, r.get(11)?),
                    })
                })
                .optional()?
                .ok_or_else(|| Error::not_found("attachment"))
        })
    }
}

fn visible_one(tx: &Transaction<'_>, agent_id: &str, id: &str, channel_id: Option<&str>) -> Result<Envelope> {
    let sql = format!(
        "SELECT {ENVELOPE_COLS} FROM messages m JOIN channels c ON c.key = m.channel \
         WHERE m.id = ?1 AND (?2 IS NULL OR c.id = ?2) AND {}",
        visible_to("?3")
    );
    let found = tx.prepare_cached(&sql)?.query_row(params![id, channel_id, agent_id], envelope_from_row).optional()?;
    let mut found: Vec<Envelope> = found.into_iter().collect();
    load_attachments(tx, &mut found)?;
    found.pop().ok_or_else(Error::message_not_found)
}

fn set_source_state(tx: &Transaction<'_>, source: Source, key: &str, value: &str) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO source_state (source, key, value) VALUES (?1, ?2, ?3) \
         ON CONFLICT (source, key) DO UPDATE SET value = excluded.value",
    )?
    .execute(params![source.as_str(), key, value])?;
    Ok(())
}

enum Ingested {
    Inserted(String),
    Updated(String),
    Unchanged,
}

/// What ingest looks for per message only while the store holds any: replies still
/// waiting for their parent, and parts of agents' sends that the platform stored apart.
struct Pending {
    orphans: bool,
    aliases: bool,
}

impl Pending {
    fn read(tx: &Transaction<'_>) -> Result<Self> {
        let exists = |sql: &str| -> Result<bool> { Ok(tx.prepare_cached(sql)?.query_row([], |r| r.get(0))?) };
        Ok(Self {
            orphans: exists(
                "SELECT EXISTS (SELECT 1 FROM messages WHERE reply_to IS NULL AND reply_to_platform_id IS NOT NULL)",
            )?,
            aliases: exists("SELECT EXISTS (SELECT 1 FROM platform_aliases)")?,
        })
    }
}

/// Where an ingested message goes: its channel (its key), and the thread inside it, if any.
#[derive(Clone, Copy)]
struct Place<'a> {
    channel: i64,
    thread_id: Option<&'a str>,
}

fn ingest_one(
    tx: &Transaction<'_>,
    source: Source,
    place: Place<'_>,
    msg: &IncomingMessage,
    now: Millis,
    new_id: impl FnOnce() -> String,
    pending: &mut Pending,
) -> Result<Ingested> {
    let Place { channel, thread_id } = place;
    let reactions = if msg.reactions.is_empty() {
        "[]".to_owned()
    } else {
        serde_json::to_string(&msg.reactions).map_err(Error::internal)?
    };
    let existing: Option<String> = tx
        .prepare_cached(concat!("SELECT id FROM messages WHERE ", at_platform_id!("", "?1", "?2")))?
        .query_row(params![source.as_str(), msg.platform_id], |r| r.get(0))
        .optional()?;
    // A part of an agent's send that the platform stored as a message of its own.
    if existing.is_none()
        && pending.aliases
        && tx
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM platform_aliases WHERE source = ?1 AND platform_id = ?2)")?
            .query_row(params![source.as_str(), msg.platform_id], |r| r.get::<_, bool>(0))?
    {
        return Ok(Ingested::Unchanged);
    }
    if let Some(id) = existing {
        let changed = tx
            .prepare_cached(
                // A source that reports no reactions leaves the stored ones alone: reactions
                // that come as their own rows (iMessage tapbacks) are kept by apply_reactions.
                // An older version of the message (one read before an edit, or before it
                // was unsent, arriving late) never replaces a newer one, unless the source
                // reads the platform's current rows in order (?6): then chat.db's row as
                // it is now wins, as when a second edit is stamped before the first one,
                // or a text changed with no edit time. Nothing brings back an unsent
                // message. An unsend keeps
                // the text AMC last saw (the platform no longer has it) and its last edit
                // time: an unsend is not an edit. An unsent message keeps no reactions.
                "UPDATE messages SET text = CASE WHEN ?4 AND ?2 = '' THEN text ELSE ?2 END, \
                 secrets = CASE WHEN (?4 AND ?2 = '') OR (not_a_code IS NOT NULL AND text IS ?2) THEN secrets \
                 ELSE amc_secrets(source, sender_id, is_self, ?2) END, \
                 not_a_code = CASE WHEN text IS ?2 OR (?4 AND ?2 = '') THEN not_a_code END, \
                 edited_at = CASE WHEN ?4 THEN edited_at ELSE ?3 END, unsent = ?4, \
                 reactions = CASE WHEN ?4 THEN '[]' WHEN ?5 = '[]' THEN reactions ELSE ?5 END WHERE id = ?1 \
                 AND (unsent IS NOT ?4 OR (NOT ?4 AND (text IS NOT ?2 OR edited_at IS NOT ?3)) \
                      OR (?5 != '[]' AND reactions IS NOT ?5)) \
                 AND (?6 OR ?4 OR coalesce(?3, 0) >= coalesce(edited_at, 0)) AND NOT (unsent = 1 AND ?4 = 0)",
            )?
            .execute(params![id, msg.text, msg.edited_at, msg.unsent, reactions, source.reads_current_rows()])?;
        // Attachments change after the message: a download finishes, a file is offloaded.
        let mut refreshed = 0;
        for att in msg.attachments.iter().filter(|a| a.platform_id.is_some()) {
            refreshed += tx
                .prepare_cached(
                    "UPDATE attachments SET local_path = ?3, available = ?4, size_bytes = coalesce(?5, size_bytes), \
                     filename = coalesce(?6, filename), mime_type = coalesce(?7, mime_type) \
                     WHERE message_id = ?1 AND platform_id = ?2 \
                     AND (local_path IS NOT ?3 OR available IS NOT ?4 OR (?5 IS NOT NULL AND size_bytes IS NOT ?5))",
                )?
                .execute(params![
                    id,
                    att.platform_id,
                    att.local_path,
                    att.available,
                    att.size_bytes,
                    att.filename,
                    att.mime_type
                ])?;
        }
        return Ok(if changed + refreshed > 0 { Ingested::Updated(id) } else { Ingested::Unchanged });
    }
    let id = new_id();
    let reply_to: Option<String> = match &msg.reply_to_platform_id {
        Some(parent) => tx
            .prepare_cached(concat!("SELECT id FROM messages WHERE ", at_platform_id!("", "?1", "?2")))?
            .query_row(params![source.as_str(), parent], |r| r.get(0))
            .optional()?,
        None => None,
    };
    tx.prepare_cached(
        "INSERT INTO messages (id, channel, platform_id, source, sender_id, sender_name, is_self, text, sent_at, \
         edited_at, unsent, reply_to, reply_to_platform_id, reactions, direction, agent_id, ingested_at, thread_id, \
         secrets) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 'inbound', NULL, ?15, ?16, \
         amc_secrets(?4, ?5, ?7, ?8))",
    )?
    .execute(params![
        id,
        channel,
        msg.platform_id,
        source.as_str(),
        msg.sender.id,
        msg.sender.display_name,
        msg.sender.is_self,
        msg.text,
        stored_sent_at(msg, now),
        msg.edited_at,
        msg.unsent,
        reply_to,
        msg.reply_to_platform_id,
        reactions,
        now,
        thread_id
    ])?;
    if msg.reply_to_platform_id.is_some() && reply_to.is_none() {
        pending.orphans = true;
    }
    // Replies that arrived before their parent now point at it (only looked for while
    // some reply is still waiting for its parent).
    if pending.orphans {
        tx.prepare_cached(
            "UPDATE messages SET reply_to = ?1 WHERE source = ?2 AND reply_to_platform_id = ?3 AND reply_to IS NULL",
        )?
        .execute(params![id, source.as_str(), msg.platform_id])?;
    }
    if msg.attachments.is_empty() {
        return Ok(Ingested::Inserted(id));
    }
    let mut att_stmt = tx.prepare_cached(
        "INSERT INTO attachments (id, message_id, platform_id, filename, mime_type, size_bytes, local_path, remote_url, available) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for a in &msg.attachments {
        att_stmt.execute(params![
            crate::ids::new_attachment_id(),
            id,
            a.platform_id,
            a.filename,
            a.mime_type,
            a.size_bytes,
            a.local_path,
            a.remote_url,
            a.available
        ])?;
    }
    Ok(Ingested::Inserted(id))
}

/// Up to this many channels open to an agent, its unread list merges their own walks
/// ([`unread_merged_sql`]); past it, it walks every message in time order.
const MERGED_CHANNELS: usize = 16;

/// The keys of the channels allowed and open to the agent (at most one more than
/// [`MERGED_CHANNELS`]).
fn open_channel_keys(tx: &Transaction<'_>, agent_id: &str) -> Result<Vec<i64>> {
    let rows = tx
        .prepare_cached(&format!("{} LIMIT ?2", open_channels_to("?1")))?
        .query_map(params![agent_id, MERGED_CHANNELS as i64 + 1], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows)
}

/// The unread list of an agent with `n` open channels (their keys bound from `?7`): each
/// channel's unread messages in time order from its own index, at most a page of each,
/// merged, and the envelopes of the page read last. The walk in time order passes over
/// every message of every other channel; with 5 of 500 channels allowed, about 10,000
/// index entries for a page of 100. Empty for no channel: nothing is unread.
fn unread_merged_sql(n: usize) -> String {
    if n == 0 {
        return String::new();
    }
    let unread = unread_to("?1");
    let arms: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "SELECT * FROM (SELECT m.sent_at AS at, m.id AS mid, m.rowid AS rid FROM messages m \
                 INDEXED BY messages_by_channel JOIN channels c ON c.key = m.channel WHERE m.channel = ?{} \
                 AND (m.sent_at, m.id) >= (?2, ?3) AND (?4 IS NULL OR m.source = ?4) AND {unread} \
                 ORDER BY m.sent_at, m.id LIMIT ?6)",
                7 + i
            )
        })
        .collect();
    format!(
        "SELECT {ENVELOPE_COLS} FROM ({} ORDER BY 1, 2 LIMIT ?6) k JOIN messages m ON m.rowid = k.rid \
         JOIN channels c ON c.key = m.channel WHERE ?5 IS NULL ORDER BY k.at, k.mid",
        arms.join(" UNION ALL ")
    )
}

impl Store {
    /// How each of these platform ids is held, for those that are: one indexed look per id
    /// in one read transaction.
    pub fn held(&self, source: Source, platform_ids: &[String]) -> Result<HashMap<String, Held>> {
        self.db.read(|tx| {
            let mut message = tx.prepare_cached(concat!(
                "SELECT edited_at, unsent FROM messages WHERE ",
                at_platform_id!("", "?1", "?2")
            ))?;
            let mut part = tx.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM platform_aliases WHERE source = ?1 AND platform_id = ?2)",
            )?;
            let mut held = HashMap::new();
            for id in platform_ids {
                let found = message
                    .query_row(params![source.as_str(), id], |r| {
                        Ok(Held::Message { edited_at: r.get(0)?, unsent: r.get(1)? })
                    })
                    .optional()?;
                let found = match found {
                    Some(h) => Some(h),
                    None => {
                        part.query_row(params![source.as_str(), id], |r| r.get::<_, bool>(0))?.then_some(Held::Part)
                    }
                };
                if let Some(h) = found {
                    held.insert(id.clone(), h);
                }
            }
            Ok(held)
        })
    }

    /// Whether a message with this platform id is stored (a source checking what it read).
    pub fn has_platform_message(&self, source: Source, platform_id: &str) -> Result<bool> {
        self.db.read(|tx| {
            Ok(tx
                .prepare_cached(concat!(
                    "SELECT EXISTS (SELECT 1 FROM messages WHERE ",
                    at_platform_id!("", "?1", "?2"),
                    ")"
                ))?
                .query_row(params![source.as_str(), platform_id], |r| r.get(0))?)
        })
    }

    /// A message's platform id and, when it is in a thread, the thread's platform id: a
    /// reply to it goes there.
    pub fn reply_target(&self, id: &str) -> Result<Option<(String, Option<String>)>> {
        self.db.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT platform_id, thread_id FROM messages WHERE id = ?1 AND platform_id IS NOT NULL",
                )?
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?)
        })
    }

    /// A setting the person changed, if any.
    pub fn setting(&self, key: &str) -> Result<Option<String>> {
        self.db.read(|tx| {
            Ok(tx
                .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
                .query_row([key], |r| r.get(0))
                .optional()?)
        })
    }

    /// Changes a setting.
    pub fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        self.db.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )?
            .execute(params![key, value])?;
            Ok(())
        })
    }
}

impl Store {
    /// Applies reaction changes in order, in one transaction. An added reaction replaces
    /// the sender's earlier one on that message (one reaction per person, as iMessage
    /// has it); a removal takes away the sender's reaction with that emoji. Returns the
    /// ids of the messages whose reactions changed, each once, with their channels.
    pub fn apply_reactions(&self, source: Source, changes: &[ReactionChange]) -> Result<Vec<(String, String)>> {
        self.db.write(|tx| {
            let mut changed: Vec<(String, String)> = Vec::new();
            for c in changes {
                let Some((id, channel_id, json)) = reactions_of(tx, source, &c.target_platform_id)? else { continue };
                let mut reactions: Vec<Reaction> = serde_json::from_str(&json).unwrap_or_default();
                let before = reactions.clone();
                replay(&mut reactions, std::slice::from_ref(c), source);
                if reactions != before {
                    set_reactions(tx, &id, &reactions)?;
                    if !changed.iter().any(|(m, _)| *m == id) {
                        changed.push((id, channel_id));
                    }
                }
            }
            Ok(changed)
        })
    }

    /// Sets each target's reactions to what its changes give, applied in order to none: a
    /// source that reads the platform's whole record of a message's reactions (every
    /// iMessage tapback row that names it) makes AMC's copy equal to it, whatever AMC
    /// applied before. Targets AMC does not hold are passed by. Returns the messages whose
    /// reactions changed, with their channels.
    pub fn reset_reactions(
        &self,
        source: Source,
        targets: &[(String, Vec<ReactionChange>)],
    ) -> Result<Vec<(String, String)>> {
        self.db.write(|tx| {
            let mut changed = Vec::new();
            for (target, changes) in targets {
                let Some((id, channel_id, json)) = reactions_of(tx, source, target)? else { continue };
                let before: Vec<Reaction> = serde_json::from_str(&json).unwrap_or_default();
                let mut now = Vec::new();
                replay(&mut now, changes, source);
                if now != before {
                    set_reactions(tx, &id, &now)?;
                    changed.push((id, channel_id));
                }
            }
            Ok(changed)
        })
    }

    /// The platform ids of the messages stored in a channel from this sender at this
    /// time: where a message the platform now names with another id would already be.
    pub fn stored_at(
        &self,
        source: Source,
        channel_platform_id: &str,
        sent_at: Millis,
        sender: &SenderInfo,
    ) -> Result<Vec<String>> {
        self.db.read(|tx| {
            let rows = tx
                .prepare_cached(
                    "SELECT m.platform_id FROM messages m INDEXED BY messages_by_channel \
                     WHERE m.channel = (SELECT c.key FROM channels c WHERE c.source = ?1 AND c.platform_id = ?2) \
                     AND m.sent_at = ?3 AND m.sender_id = ?4 AND m.is_self = ?5 AND m.source = ?1",
                )?
                .query_map(params![source.as_str(), channel_platform_id, sent_at, sender.id, sender.is_self], |r| {
                    r.get(0)
                })?
                .collect::<rusqlite::Result<_>>()?;
            Ok(rows)
        })
    }

    /// Gives a stored message the id the platform now knows it by (Messages changed the
    /// row's guid): the message keeps its AMC id, its read state and everything agents
    /// were told, and replies that named the old id name the new one. Nothing happens
    /// when no message has `old` or one already has `new`. Returns the message and its
    /// channel when it was re-keyed.
    pub fn rekey(&self, source: Source, old: &str, new: &str) -> Result<Option<(String, String)>> {
        self.db.write(|tx| {
            let taken: bool = tx
                .prepare_cached(concat!(
                    "SELECT EXISTS (SELECT 1 FROM messages WHERE ",
                    at_platform_id!("", "?1", "?2"),
                    ")"
                ))?
                .query_row(params![source.as_str(), new], |r| r.get(0))?;
            if taken {
                return Ok(None);
            }
            let moved: Option<(String, String)> = tx
                .prepare_cached(concat!(
                    "UPDATE messages SET platform_id = ?3 WHERE ",
                    at_platform_id!("", "?1", "?2"),
                    " RETURNING id, (SELECT c.id FROM channels c WHERE c.key = channel)"
                ))?
                .query_row(params![source.as_str(), old, new], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            if moved.is_some() {
                tx.prepare_cached(
                    "UPDATE messages SET reply_to_platform_id = ?3 WHERE reply_to_platform_id = ?2 AND source = ?1",
                )?
                .execute(params![source.as_str(), old, new])?;
            }
            Ok(moved)
        })
    }
}

/// A stored message's id, channel and reactions (as stored, JSON), by its platform id.
/// A message's id, its channel's id and its reactions (JSON); `None` when AMC does not
/// hold it, or holds it unsent: an unsent message keeps no reactions, whatever tapback or
/// reaction still names it.
fn reactions_of(tx: &Transaction<'_>, source: Source, platform_id: &str) -> Result<Option<(String, String, String)>> {
    Ok(tx
        .prepare_cached(concat!(
            "SELECT id, (SELECT c.id FROM channels c WHERE c.key = channel), reactions FROM messages WHERE NOT unsent AND ",
            at_platform_id!("", "?1", "?2")
        ))?
        .query_row(params![source.as_str(), platform_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .optional()?)
}

fn set_reactions(tx: &Transaction<'_>, id: &str, reactions: &[Reaction]) -> Result<()> {
    let json = serde_json::to_string(reactions).map_err(Error::internal)?;
    tx.prepare_cached("UPDATE messages SET reactions = ?2 WHERE id = ?1")?.execute(params![id, json])?;
    Ok(())
}

/// Applies reaction changes in order: an added reaction replaces the sender's earlier one
/// where the source allows one per person; a removal takes away the sender's reaction
/// with that emoji.
fn replay(reactions: &mut Vec<Reaction>, changes: &[ReactionChange], source: Source) {
    for c in changes {
        let exclusive = c.added && source.one_reaction_per_person();
        reactions.retain(|r| r.sender.id != c.reaction.sender.id || (!exclusive && r.emoji != c.reaction.emoji));
        if c.added {
            reactions.push(c.reaction.clone());
        }
    }
}

impl Store {
    /// Takes away every reaction on a message, or every reaction with one emoji (a
    /// moderator clearing them). Returns the message and its channel if it changed.
    pub fn clear_reactions(
        &self,
        source: Source,
        platform_id: &str,
        emoji: Option<&str>,
    ) -> Result<Option<(String, String)>> {
        self.db.write(|tx| {
            let Some((id, channel_id, json)) = reactions_of(tx, source, platform_id)? else { return Ok(None) };
            let mut reactions: Vec<Reaction> = serde_json::from_str(&json).unwrap_or_default();
            let before = reactions.len();
            reactions.retain(|r| emoji.is_some_and(|e| r.emoji != e));
            if reactions.len() == before {
                return Ok(None);
            }
            set_reactions(tx, &id, &reactions)?;
            Ok(Some((id, channel_id)))
        })
    }

    /// Marks messages the platform deleted as unsent: the rows stay with the text AMC
    /// last saw (agents may have seen it; the API promises it), their reactions and files
    /// are dropped, and the edit time is left alone (a deletion is not an edit). Returns
    /// the ids of the messages that changed, with their channels.
    pub fn mark_unsent(&self, source: Source, platform_ids: &[String]) -> Result<Vec<(String, String)>> {
        self.db.write(|tx| {
            let mut changed = Vec::new();
            let mut stmt = tx.prepare_cached(concat!(
                "UPDATE messages SET unsent = 1, reactions = '[]' WHERE ",
                at_platform_id!("", "?1", "?2"),
                " AND unsent = 0 RETURNING id, (SELECT c.id FROM channels c WHERE c.key = channel)"
            ))?;
            for pid in platform_ids {
                if let Some(row) =
                    stmt.query_row(params![source.as_str(), pid], |r| Ok((r.get(0)?, r.get(1)?))).optional()?
                {
                    changed.push(row);
                }
            }
            let mut files = tx.prepare_cached(
                "UPDATE attachments SET available = 0, remote_url = NULL, local_path = NULL WHERE message_id = ?1",
            )?;
            for (id, _) in &changed {
                files.execute([id])?;
            }
            Ok(changed)
        })
    }

    /// The platform ids of a channel's newest and oldest stored messages (by the time
    /// they were sent) among those with numeric ids (Discord's snowflakes; not the test
    /// sender's) and not in a thread, for a source that fetches history from there.
    pub fn message_bounds(&self, channel_id: &str) -> Result<Option<(String, String)>> {
        self.db.read(|tx| {
            let channel = channel_key("?1");
            let newest: Option<String> = tx
                .prepare_cached(&format!(
                    "SELECT platform_id FROM messages WHERE channel = {channel} AND platform_id NOT GLOB '*[^0-9]*' \
                     AND thread_id IS NULL ORDER BY sent_at DESC, length(platform_id) DESC, platform_id DESC LIMIT 1",
                ))?
                .query_row([channel_id], |r| r.get(0))
                .optional()?;
            let oldest: Option<String> = tx
                .prepare_cached(&format!(
                    "SELECT platform_id FROM messages WHERE channel = {channel} AND platform_id NOT GLOB '*[^0-9]*' \
                     AND thread_id IS NULL ORDER BY sent_at, length(platform_id), platform_id LIMIT 1",
                ))?
                .query_row([channel_id], |r| r.get(0))
                .optional()?;
            Ok(newest.zip(oldest))
        })
    }

    /// A channel's own stored messages (not those of its threads) sent at or after `since`
    /// that are not unsent, with
    /// their reactions: what a source compares with the platform's recent window to find
    /// edits, deletions and reaction changes made while AMC was away.
    pub fn stored_since(&self, channel_id: &str, since: Millis) -> Result<Vec<(String, Vec<Reaction>)>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT platform_id, reactions FROM messages WHERE channel = {} AND sent_at >= ?2 \
                 AND NOT unsent AND platform_id IS NOT NULL AND thread_id IS NULL",
                channel_key("?1")
            ))?;
            let rows = stmt.query_map(params![channel_id, since], |r| {
                let reactions: String = r.get(1)?;
                Ok((r.get::<_, String>(0)?, serde_json::from_str(&reactions).unwrap_or_default()))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// A channel's threads as stored: each one's platform id, name, and newest stored
    /// message's platform id, for a source that reads each thread back from there.
    pub fn thread_anchors(&self, channel_id: &str) -> Result<Vec<(ThreadSpec, Option<String>)>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT t.platform_id, t.name, (SELECT m.platform_id FROM messages m INDEXED BY messages_by_thread \
                   WHERE m.thread_id = t.platform_id AND m.source = t.source AND m.platform_id NOT GLOB '*[^0-9]*' \
                   ORDER BY m.sent_at DESC, length(m.platform_id) DESC, m.platform_id DESC LIMIT 1) \
                 FROM threads t WHERE t.channel_id = ?1 ORDER BY t.platform_id",
            )?;
            let rows = stmt
                .query_map([channel_id], |r| Ok((ThreadSpec { platform_id: r.get(0)?, name: r.get(1)? }, r.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Marks messages read for every agent: messages that arrived late (an old message
    /// synced from iCloud long after it was sent) are kept, but not surfaced as new.
    pub fn mark_read_for_all_agents(&self, ids: &[String]) -> Result<()> {
        let now = now_ms();
        self.db.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO read_marks (agent, message, read_at) SELECT a.rowid, m.rowid, ?2 \
                 FROM agents a JOIN messages m ON m.id = ?1 WHERE true ON CONFLICT (agent, message) DO NOTHING",
            )?;
            for id in ids {
                stmt.execute(params![id, now])?;
            }
            Ok(())
        })
    }
}
