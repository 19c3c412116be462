//! The outbox of agents' sends, and their idempotency records.
//!
//! A send is recorded before the platform is called and its outcome after, so a crash
//! in between leaves a `sending` row that start-up turns into `unknown`: never sent twice.

use rusqlite::{OptionalExtension, Row, Transaction, params};

use super::Store;
use super::channels::parse_col;
use crate::error::{Error, ErrorCode, Result};
use crate::model::{DecidedVia, OutboxItem, OutboxStatus, ReadFrom, SentSend, Source, StagedAttachment};
use crate::time::{Millis, now_ms};

/// What one agent's sends waiting for review may take: 100 sends, and 256 MiB of their text
/// and staged files (`QUOTA_EXCEEDED` past either).
pub const HELD_BOUNDS: HeldBounds = HeldBounds { sends: 100, bytes: 256 << 20 };
/// The log of one agent's finished sends keeps its newest 10,000, and 64 MiB of their
/// text; older ones leave it once a day old (the housekeeping, every minute).
pub const SEND_LOG_KEPT: (u32, i64) = (10_000, 64 << 20);

/// How long an idempotency record is kept.
pub const IDEMPOTENCY_TTL_MS: i64 = 24 * 3_600_000;

/// A send to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSend<'a> {
    /// The agent.
    pub agent_id: &'a str,
    /// The `Idempotency-Key`, if any, and the hash of the request it came with.
    pub idempotency: Option<(&'a str, [u8; 32])>,
    /// The channel.
    pub channel_id: &'a str,
    /// The text.
    pub text: &'a str,
    /// The message replied to.
    pub reply_to: Option<&'a str>,
    /// The staged attachments.
    pub attachments: &'a [StagedAttachment],
    /// `Held` (review) or `Sending` (auto).
    pub status: OutboxStatus,
    /// What the agent's held sends may take, checked when this one is held too.
    pub held_bounds: HeldBounds,
    /// Why it is held beyond its channel's policy (`crosses_conversations`), if it is.
    pub held_reason: Option<&'a str>,
    /// The conversations it may carry text from, for the person's review.
    pub read_from: &'a [ReadFrom],
}

/// What one agent's sends waiting for the person may take in all: so many sends, so many
/// bytes of text and staged files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldBounds {
    /// Sends held at once.
    pub sends: u32,
    /// Bytes of their text and their staged files.
    pub bytes: i64,
}

/// How many sends of an agent are held, and the bytes of their text and staged files.
const HELD_BY_AGENT: &str = "SELECT count(*), coalesce(sum(length(CAST(o.text AS BLOB)) \
     + (SELECT coalesce(sum(json_extract(a.value, '$.size_bytes')), 0) FROM json_each(o.attachments) a)), 0) \
     FROM outbox o WHERE o.status = 'held' AND o.agent_id = ?1";

impl HeldBounds {
    /// `QUOTA_EXCEEDED` when `sends` held sends of `bytes`, and one more of `more` bytes,
    /// would be past the bounds.
    pub fn check(&self, sends: u32, bytes: i64, more: i64) -> Result<()> {
        if sends >= self.sends {
            return Err(Error::quota(format!(
                "{sends} of this agent's sends already wait for the person's review; send more once they are answered"
            )));
        }
        if bytes.saturating_add(more) > self.bytes {
            return Err(Error::quota(format!(
                "this agent's sends waiting for review already hold {bytes} bytes of text and files, and AMC keeps at \
                 most {} for one agent; send more once they are answered",
                self.bytes
            )));
        }
        Ok(())
    }
}

/// What recording a send found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendLookup {
    /// A new send was recorded.
    New(OutboxItem),
    /// The same key and payload were seen within 24 h: this is that send.
    Replay(OutboxItem),
}

const OUTBOX_COLS: &str = "o.id, o.agent_id, o.channel_id, c.name, c.source, o.text, o.reply_to, o.attachments, o.status, \
     o.created_at, o.sent_at, o.error_code, o.error_message, o.retry_after_at, o.held_reason, o.read_from, o.decided_via";

fn item_from_row(row: &Row<'_>) -> rusqlite::Result<OutboxItem> {
    let attachments: String = row.get(7)?;
    Ok(OutboxItem {
        id: row.get(0)?,
        agent_id: row.get(1)?,
        channel_id: row.get(2)?,
        channel_name: row.get(3)?,
        source: parse_col(row, 4, Source::parse)?,
        text: row.get(5)?,
        reply_to: row.get(6)?,
        attachments: serde_json::from_str(&attachments).unwrap_or_default(),
        status: parse_col(row, 8, OutboxStatus::parse)?,
        created_at: row.get(9)?,
        sent_at: row.get(10)?,
        error_code: row.get(11)?,
        error_message: row.get(12)?,
        retry_after_at: row.get(13)?,
        held_reason: row.get(14)?,
        read_from: row.get::<_, Option<String>>(15)?.and_then(|r| serde_json::from_str(&r).ok()).unwrap_or_default(),
        decided_via: row.get::<_, Option<String>>(16)?.as_deref().and_then(DecidedVia::parse),
    })
}

fn item(tx: &Transaction<'_>, id: &str) -> Result<Option<OutboxItem>> {
    let sql = format!("SELECT {OUTBOX_COLS} FROM outbox o JOIN channels c ON c.id = o.channel_id WHERE o.id = ?1");
    Ok(tx.prepare_cached(&sql)?.query_row([id], item_from_row).optional()?)
}

/// The outcome of a platform call, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendOutcome {
    /// Delivered: the platform's id for it and when.
    Sent {
        /// The platform's message id.
        platform_id: String,
        /// When the platform says it was sent.
        sent_at: Millis,
        /// The platform ids of the send's other parts.
        other_parts: Vec<String>,
    },
    /// Refused by the platform.
    Failed {
        /// The stable code.
        code: ErrorCode,
        /// What to tell the agent and the person.
        message: String,
        /// For `RATE_LIMITED`: seconds the platform asked to wait.
        retry_after: Option<u64>,
    },
    /// It may or may not have gone out.
    Unknown {
        /// Why the outcome is not known.
        reason: String,
    },
}

impl Store {
    /// How many of the agent's sends are held, and the bytes of their text and files.
    pub fn held_by(&self, agent_id: &str) -> Result<(u32, i64)> {
        self.db
            .read(|tx| Ok(tx.prepare_cached(HELD_BY_AGENT)?.query_row([agent_id], |r| Ok((r.get(0)?, r.get(1)?)))?))
    }

    /// The send an agent made with this idempotency key in the last 24 hours, and the
    /// hash of its request.
    pub fn find_idempotent(&self, agent_id: &str, key: &str) -> Result<Option<([u8; 32], OutboxItem)>> {
        self.db.read(|tx| {
            let found: Option<(Vec<u8>, String)> = tx
                .prepare_cached(
                    "SELECT request_hash, outbox_id FROM idempotency WHERE agent_id = ?1 AND key = ?2 AND created_at > ?3",
                )?
                .query_row(params![agent_id, key, now_ms() - IDEMPOTENCY_TTL_MS], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let Some((hash, outbox_id)) = found else { return Ok(None) };
            let hash: [u8; 32] = hash.try_into().map_err(|_| Error::internal("idempotency hash of the wrong size"))?;
            let found = item(tx, &outbox_id)?.ok_or_else(|| Error::internal("idempotency record without send"))?;
            Ok(Some((hash, found)))
        })
    }

    /// Records a send, or finds the earlier send with the same idempotency key.
    /// The same key with another payload is `IDEMPOTENCY_KEY_REUSE`.
    pub fn record_send(&self, send: &NewSend<'_>) -> Result<SendLookup> {
        let now = now_ms();
        self.db.write(|tx| {
            if let Some((key, hash)) = send.idempotency {
                let earlier: Option<(Vec<u8>, String)> = tx
                    .prepare_cached(
                        "SELECT request_hash, outbox_id FROM idempotency WHERE agent_id = ?1 AND key = ?2 AND created_at > ?3",
                    )?
                    .query_row(params![send.agent_id, key, now - IDEMPOTENCY_TTL_MS], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?;
                if let Some((earlier_hash, outbox_id)) = earlier {
                    if earlier_hash != hash {
                        return Err(Error::new(
                            ErrorCode::IdempotencyKeyReuse,
                            "this Idempotency-Key was used for a different request in the last 24 hours",
                        ));
                    }
                    let found = item(tx, &outbox_id)?.ok_or_else(|| Error::internal("idempotency record without send"))?;
                    return Ok(SendLookup::Replay(found));
                }
            }
            if send.status == OutboxStatus::Held {
                let (sends, bytes) = tx
                    .prepare_cached(HELD_BY_AGENT)?
                    .query_row([send.agent_id], |r| Ok((r.get::<_, u32>(0)?, r.get::<_, i64>(1)?)))?;
                let more = send.text.len() as i64 + send.attachments.iter().map(|a| a.size_bytes as i64).sum::<i64>();
                send.held_bounds.check(sends, bytes, more)?;
            }
            let id = self.next_message_id();
            let attachments = serde_json::to_string(send.attachments).map_err(Error::internal)?;
            let read_from =
                (!send.read_from.is_empty()).then(|| serde_json::to_string(send.read_from)).transpose().map_err(Error::internal)?;
            tx.prepare_cached(
                "INSERT INTO outbox (id, agent_id, channel_id, text, reply_to, attachments, status, created_at, updated_at, \
                 held_reason, read_from) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10)",
            )?
            .execute(params![
                id,
                send.agent_id,
                send.channel_id,
                send.text,
                send.reply_to,
                attachments,
                send.status.as_str(),
                now,
                send.held_reason,
                read_from
            ])?;
            if let Some((key, hash)) = send.idempotency {
                tx.prepare_cached(
                    "INSERT INTO idempotency (agent_id, key, request_hash, outbox_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5) \
                     ON CONFLICT (agent_id, key) DO UPDATE SET request_hash = excluded.request_hash, \
                     outbox_id = excluded.outbox_id, created_at = excluded.created_at",
                )?
                .execute(params![send.agent_id, key, hash.as_slice(), id, now])?;
            }
            let created = item(tx, &id)?.ok_or_else(|| Error::internal("outbox row vanished"))?;
            Ok(SendLookup::New(created))
        })
    }

    /// Moves a held send to `sending` (the person approved it). Anything else is a conflict.
    pub fn claim_held(&self, id: &str, via: DecidedVia) -> Result<OutboxItem> {
        self.transition(id, OutboxStatus::Held, OutboxStatus::Sending, None, via)
    }

    /// Rejects a held send with the person's reason.
    pub fn reject_held(&self, id: &str, reason: Option<&str>, via: DecidedVia) -> Result<OutboxItem> {
        self.transition(id, OutboxStatus::Held, OutboxStatus::Rejected, reason, via)
    }

    fn transition(
        &self,
        id: &str,
        from: OutboxStatus,
        to: OutboxStatus,
        note: Option<&str>,
        via: DecidedVia,
    ) -> Result<OutboxItem> {
        self.db.write(|tx| {
            // Nothing goes to a conversation AMC asks the person in: it is theirs alone.
            let phone = tx
                .prepare_cached(
                    "SELECT 1 FROM outbox o JOIN settings s ON s.value = o.channel_id \
                     WHERE o.id = ?1 AND s.key IN (?2, ?3)",
                )?
                .exists(params![id, crate::channels::PHONE_CHANNEL_SETTING, crate::channels::PHONE_DISCORD_SETTING])?;
            if phone && to == OutboxStatus::Sending {
                return Err(Error::conflict(
                    "AMC asks you for approvals in this conversation: no agent's send goes there",
                ));
            }
            let changed = tx
                .prepare_cached(
                    "UPDATE outbox SET status = ?3, updated_at = ?4, error_message = coalesce(?5, error_message), \
                     decided_via = ?6 WHERE id = ?1 AND status = ?2",
                )?
                .execute(params![id, from.as_str(), to.as_str(), now_ms(), note, via.as_str()])?;
            let found = item(tx, id)?.ok_or_else(|| Error::not_found("send"))?;
            if changed == 0 {
                return Err(Error::conflict(format!("this send is {}, not {}", found.status, from)));
            }
            Ok(found)
        })
    }

    /// Records the platform's answer for a send in `sending`. A delivered send becomes an
    /// outbound message of its channel, with the send's id, in the same transaction.
    pub fn finish_send(&self, id: &str, outcome: &SendOutcome) -> Result<OutboxItem> {
        let now = now_ms();
        self.db.write(|tx| {
            let (status, sent_at, platform_id, code, message, retry_at) = match outcome {
                SendOutcome::Sent { platform_id, sent_at, .. } => {
                    (OutboxStatus::Sent, Some(*sent_at), Some(platform_id.as_str()), None, None, None)
                }
                SendOutcome::Failed { code, message, retry_after } => (
                    OutboxStatus::Failed,
                    None,
                    None,
                    Some(code.as_str()),
                    Some(message.as_str()),
                    retry_after.map(|s| now + (s as i64) * 1000),
                ),
                SendOutcome::Unknown { reason } => {
                    (OutboxStatus::Unknown, None, None, None, Some(reason.as_str()), None)
                }
            };
            let changed = tx
                .prepare_cached(
                    "UPDATE outbox SET status = ?2, sent_at = ?3, platform_id = ?4, error_code = ?5, error_message = ?6, \
                     retry_after_at = ?8, updated_at = ?7 WHERE id = ?1 AND status = 'sending'",
                )?
                .execute(params![id, status.as_str(), sent_at, platform_id, code, message, now, retry_at])?;
            if changed == 0 {
                return Err(Error::conflict("this send is not in flight"));
            }
            if let SendOutcome::Sent { platform_id, sent_at, other_parts } = outcome {
                store_outbound(tx, id, platform_id, *sent_at, now)?;
                alias_parts(tx, id, other_parts)?;
            }
            item(tx, id)?.ok_or_else(|| Error::internal("outbox row vanished"))
        })
    }

    /// The source's sends reported sent at `since` or later, newest first, at most
    /// `limit`, with the platform ids of their parts.
    pub fn sent_since(&self, source: Source, since: Millis, limit: u32) -> Result<Vec<SentSend>> {
        self.db.read(|tx| {
            let mut sends: Vec<SentSend> = tx
                .prepare_cached(
                    "SELECT o.id, o.platform_id FROM outbox o INDEXED BY outbox_sent_by_time \
                     JOIN channels c ON c.id = o.channel_id \
                     WHERE o.status = 'sent' AND o.sent_at >= ?2 AND c.source = ?1 AND o.platform_id IS NOT NULL \
                     ORDER BY o.sent_at DESC LIMIT ?3",
                )?
                .query_map(params![source.as_str(), since, limit], |r| {
                    Ok(SentSend { id: r.get(0)?, parts: vec![r.get(1)?] })
                })?
                .collect::<rusqlite::Result<_>>()?;
            let mut others = tx.prepare_cached(
                "SELECT platform_id FROM platform_aliases WHERE message_id = ?1 AND source = ?2 ORDER BY platform_id",
            )?;
            for send in &mut sends {
                let parts = others.query_map(params![send.id, source.as_str()], |r| r.get::<_, String>(0))?;
                for part in parts {
                    send.parts.push(part?);
                }
            }
            Ok(sends)
        })
    }

    /// A send reported sent that the platform failed afterwards becomes `failed` with
    /// `message` (`PLATFORM_SEND_FAILED`), and its message says so (`delivery_failed`), in
    /// one transaction. `None` if it is not `sent` (already failed, or pruned).
    pub fn fail_after_sent(&self, id: &str, message: &str) -> Result<Option<OutboxItem>> {
        self.db.write(|tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE outbox SET status = 'failed', error_code = ?2, error_message = ?3, updated_at = ?4 \
                     WHERE id = ?1 AND status = 'sent'",
                )?
                .execute(params![id, ErrorCode::PlatformSendFailed.as_str(), message, now_ms()])?;
            if changed == 0 {
                return Ok(None);
            }
            tx.prepare_cached("UPDATE messages SET delivery_failed = ?2 WHERE id = ?1 AND direction = 'outbound'")?
                .execute(params![id, message])?;
            item(tx, id)
        })
    }

    /// Sends stuck in `sending` since before `older_than` (their delivery task died)
    /// become `unknown`; returns their ids.
    pub fn expire_stale_sends(&self, older_than: Millis) -> Result<Vec<String>> {
        self.db.write(|tx| {
            let ids: Vec<String> = tx
                .prepare_cached("SELECT id FROM outbox WHERE status = 'sending' AND updated_at < ?1")?
                .query_map([older_than], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            tx.prepare_cached(
                "UPDATE outbox SET status = 'unknown', updated_at = ?2, \
                 error_message = 'the platform never confirmed this send; check the conversation' \
                 WHERE status = 'sending' AND updated_at < ?1",
            )?
            .execute(params![older_than, now_ms()])?;
            Ok(ids)
        })
    }

    /// Sends that were in flight when AMC stopped become `unknown`: they may have gone
    /// out, so they are shown to the person and never retried by AMC. Returns their ids.
    pub fn recover_interrupted_sends(&self) -> Result<Vec<String>> {
        self.db.write(|tx| {
            let ids: Vec<String> = tx
                .prepare_cached("SELECT id FROM outbox WHERE status = 'sending'")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            tx.prepare_cached(
                "UPDATE outbox SET status = 'unknown', updated_at = ?1, \
                 error_message = 'AMC stopped while this send was in flight; check the conversation' WHERE status = 'sending'",
            )?
            .execute([now_ms()])?;
            Ok(ids)
        })
    }

    /// Moves a send's last change back to `at`, as if it had waited since then.
    #[cfg(any(test, feature = "test-support"))]
    pub fn backdate_send(&self, id: &str, at: Millis) -> Result<()> {
        self.db
            .write(|tx| Ok(tx.execute("UPDATE outbox SET updated_at = ?2 WHERE id = ?1", params![id, at]).map(drop)?))
    }

    /// One send.
    pub fn outbox_item(&self, id: &str) -> Result<OutboxItem> {
        self.db.read(|tx| item(tx, id)?.ok_or_else(|| Error::not_found("send")))
    }

    /// Sends, newest first, optionally of one status.
    pub fn outbox(&self, status: Option<OutboxStatus>, limit: u32) -> Result<Vec<OutboxItem>> {
        self.db.read(|tx| {
            let sql = format!(
                "SELECT {OUTBOX_COLS} FROM outbox o JOIN channels c ON c.id = o.channel_id \
                 WHERE (?1 IS NULL OR o.status = ?1) ORDER BY o.created_at DESC, o.id DESC LIMIT ?2"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![status.map(OutboxStatus::as_str), limit], item_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Lets the oldest finished sends (sent, failed, rejected) of each agent leave the log
    /// past its newest `kept` sends or `kept_bytes` of their text and files' names, once
    /// they are a day old and no idempotency record names them (so a retried request is
    /// still answered as the first one was, and never sent again). A delivered send stays
    /// in its conversation as a message. Returns how many left.
    pub fn prune_send_log(&self, kept: u32, kept_bytes: i64) -> Result<usize> {
        self.db.write(|tx| {
            Ok(tx
                .prepare_cached(
                    "DELETE FROM outbox WHERE id IN (SELECT id FROM ( \
                       SELECT id, status, created_at, row_number() OVER w AS n, \
                         sum(length(CAST(text AS BLOB)) + length(CAST(attachments AS BLOB)) \
                           + coalesce(length(CAST(error_message AS BLOB)), 0)) OVER w AS bytes \
                       FROM outbox WINDOW w AS (PARTITION BY agent_id ORDER BY created_at DESC, rowid DESC)) \
                     WHERE status IN ('sent', 'failed', 'rejected') AND created_at <= ?3 AND (n > ?1 OR bytes > ?2)) \
                     AND NOT EXISTS (SELECT 1 FROM idempotency i WHERE i.outbox_id = outbox.id)",
                )?
                .execute(params![kept, kept_bytes, now_ms() - IDEMPOTENCY_TTL_MS])?)
        })
    }

    /// Forgets idempotency records older than 24 hours; returns how many.
    pub fn purge_idempotency(&self) -> Result<usize> {
        self.db.write(|tx| {
            Ok(tx
                .prepare_cached("DELETE FROM idempotency WHERE created_at <= ?1")?
                .execute([now_ms() - IDEMPOTENCY_TTL_MS])?)
        })
    }
}

/// Points the send's other parts at its message; a part already ingested (its echo read
/// first) is removed, as the outbound message holds the send's files.
fn alias_parts(tx: &Transaction<'_>, id: &str, parts: &[String]) -> Result<()> {
    for part in parts {
        let echo: Option<String> = tx
            .prepare_cached(concat!(
                "SELECT m.id FROM messages m JOIN channels c ON c.key = m.channel JOIN outbox o ON o.id = ?1 \
                     WHERE c.id = o.channel_id AND ",
                at_platform_id!("m.", "c.source", "?2"),
                " AND m.direction = 'inbound'"
            ))?
            .query_row(params![id, part], |r| r.get(0))
            .optional()?;
        if let Some(echo) = echo {
            tx.prepare_cached("UPDATE messages SET reply_to = ?2 WHERE reply_to = ?1")?.execute(params![echo, id])?;
            tx.prepare_cached("DELETE FROM attachments WHERE message_id = ?1")?.execute([&echo])?;
            tx.prepare_cached("DELETE FROM messages WHERE id = ?1")?.execute([&echo])?;
        }
        tx.prepare_cached(
            "INSERT OR IGNORE INTO platform_aliases (source, platform_id, message_id) \
             SELECT c.source, ?2, ?1 FROM outbox o JOIN channels c ON c.id = o.channel_id WHERE o.id = ?1",
        )?
        .execute(params![id, part])?;
    }
    Ok(())
}

/// Makes a delivered send an outbound message of its channel, with the send's id and
/// its staged attachments. If the platform's echo of it was ingested first (as an
/// inbound message), the echo is folded into it, so the message exists once.
fn store_outbound(tx: &Transaction<'_>, id: &str, platform_id: &str, sent_at: Millis, now: Millis) -> Result<()> {
    // The messages already stored under the platform id: the platform's echo of the send
    // (inbound), which it replaces; or, had the platform given one id twice, an outbound
    // message, and the send fails here rather than store a second (the ingest looks before
    // it inserts; no unique index says so since migration 0014).
    let mut echo: Option<String> = None;
    let mut stmt = tx.prepare_cached(concat!(
        "SELECT m.id, m.direction = 'outbound' FROM messages m JOIN outbox o ON o.id = ?1 \
         JOIN channels c ON c.id = o.channel_id WHERE ",
        at_platform_id!("m.", "c.source", "?2")
    ))?;
    for row in stmt.query_map(params![id, platform_id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?)))? {
        match row? {
            (_, true) => return Err(Error::internal(format_args!("send {id}: its platform id is stored already"))),
            (m, false) => echo = Some(m),
        }
    }
    drop(stmt);
    if let Some(echo) = &echo {
        tx.prepare_cached("UPDATE messages SET platform_id = platform_id || '#echo-' || id WHERE id = ?1")?
            .execute([echo])?;
    }
    tx.prepare_cached(
        "INSERT INTO messages (id, channel, platform_id, source, sender_id, sender_name, is_self, text, \
         sent_at, reply_to, direction, agent_id, ingested_at, thread_id, secrets) \
         SELECT o.id, c.key, ?2, c.source, 'agent:' || o.agent_id, o.agent_id, 1, o.text, ?3, o.reply_to, \
         'outbound', o.agent_id, ?4, (SELECT p.thread_id FROM messages p WHERE p.id = o.reply_to), \
         amc_secrets(c.source, 'agent:' || o.agent_id, 1, o.text) \
         FROM outbox o JOIN channels c ON c.id = o.channel_id WHERE o.id = ?1",
    )?
    .execute(params![id, platform_id, sent_at, now])?;
    // The message's files are the staged copies, what the person reviewed: an echo's own
    // (none when the platform wrote the files as parts of their own) are dropped.
    if let Some(echo) = &echo {
        tx.prepare_cached("DELETE FROM attachments WHERE message_id = ?1")?.execute([echo])?;
        tx.prepare_cached("UPDATE messages SET reply_to = ?2 WHERE reply_to = ?1")?.execute(params![echo, id])?;
        tx.prepare_cached("DELETE FROM messages WHERE id = ?1")?.execute([echo])?;
    }
    let staged: String =
        tx.prepare_cached("SELECT attachments FROM outbox WHERE id = ?1")?.query_row([id], |r| r.get(0))?;
    let staged: Vec<StagedAttachment> = serde_json::from_str(&staged).unwrap_or_default();
    let mut insert = tx.prepare_cached(
        "INSERT INTO attachments (id, message_id, filename, size_bytes, local_path, available) \
         VALUES (?1, ?2, ?3, ?4, ?5, 1)",
    )?;
    for a in staged {
        insert.execute(params![crate::ids::new_attachment_id(), id, a.filename, a.size_bytes as i64, a.path])?;
    }
    tx.prepare_cached(
        "UPDATE channels SET last_message_at = max(coalesce(last_message_at, ?2), ?2) \
         WHERE id = (SELECT channel_id FROM outbox WHERE id = ?1)",
    )?
    .execute(params![id, sent_at])?;
    Ok(())
}
