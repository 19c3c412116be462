//! The questions AMC asked on the person's phone (`phone_asks`): one per held send or tool
//! request, with the short code the person answers with.

use rusqlite::{OptionalExtension, Row, Transaction, params};

use super::Store;
use crate::channels::parse_col;
use crate::error::{Error, Result};
use crate::model::{ChannelKind, PhoneAsk, PhoneAskKind, PhoneAskState, Source};
use crate::time::{Millis, now_ms};

/// The setting holding when the person turned asking on the phone on (Unix ms): what was
/// held before is answered in AMC.
pub const PHONE_SINCE_SETTING: &str = "phone_since";

/// What the rule of where AMC asks needs to know of a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhoneChannelFacts {
    /// `ch_<ULID>`.
    pub id: String,
    /// Its source.
    pub source: Source,
    /// One-to-one or a group.
    pub kind: ChannelKind,
    /// The platform's id (a chat's guid).
    pub platform_id: String,
    /// Its name.
    pub name: String,
    /// Who besides the person reads it, as the source said; `None` when unknown.
    pub readers: Option<Vec<String>>,
    /// Whether the platform deleted it or AMC lost its way in.
    pub gone: bool,
}

const COLS: &str = "id, code, kind, subject, channel_id, state, prompt_platform_id, asked_at, expires_at";

/// The states of a question the phone may still answer.
const OPEN: &str = "state IN ('asking', 'asked')";

fn from_row(r: &Row<'_>) -> rusqlite::Result<PhoneAsk> {
    Ok(PhoneAsk {
        id: r.get(0)?,
        code: r.get(1)?,
        kind: parse_col(r, 2, PhoneAskKind::parse)?,
        subject: r.get(3)?,
        channel_id: r.get(4)?,
        state: parse_col(r, 5, PhoneAskState::parse)?,
        prompt_platform_id: r.get(6)?,
        asked_at: r.get(7)?,
        expires_at: r.get(8)?,
    })
}

fn ask_where(tx: &Transaction<'_>, condition: &str, value: &str) -> Result<Option<PhoneAsk>> {
    let sql = format!("SELECT {COLS} FROM phone_asks WHERE {condition} = ?1");
    Ok(tx.prepare_cached(&sql)?.query_row([value], from_row).optional()?)
}

/// A question to record: what it asks about, where, and when it stops counting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPhoneAsk {
    /// What it asks about.
    pub kind: PhoneAskKind,
    /// The held send's or the tool request's id.
    pub subject: String,
    /// Where it is asked.
    pub channel_id: String,
    /// `asking`, or `skipped` when over the limit a minute.
    pub state: PhoneAskState,
    /// When.
    pub asked_at: Millis,
    /// When an answer stops counting.
    pub expires_at: Millis,
}

impl Store {
    /// What the rule of where AMC asks needs to know of channel `id`.
    pub fn phone_channel_facts(&self, id: &str) -> Result<PhoneChannelFacts> {
        self.db.read(|tx| {
            tx.prepare_cached(
                "SELECT id, source, kind, platform_id, name, readers, gone_reason IS NOT NULL FROM channels WHERE id = ?1",
            )?
            .query_row([id], |r| {
                Ok(PhoneChannelFacts {
                    id: r.get(0)?,
                    source: parse_col(r, 1, Source::parse)?,
                    kind: parse_col(r, 2, ChannelKind::parse)?,
                    platform_id: r.get(3)?,
                    name: r.get(4)?,
                    readers: r.get::<_, Option<String>>(5)?.and_then(|j| serde_json::from_str(&j).ok()),
                    gone: r.get(6)?,
                })
            })
            .optional()?
            .ok_or_else(|| Error::not_found("channel"))
        })
    }

    /// Makes channel `id` a conversation AMC asks in (the setting `key`), from `since` on,
    /// and blocks it in the same transaction: no agent ever reads, searches, is pushed or
    /// sends to it. `None` stops asking there (the channel stays blocked until the person
    /// approves it).
    pub fn set_phone_channel(&self, key: &str, id: Option<&str>, since: Millis) -> Result<()> {
        self.db.write(|tx| {
            let Some(id) = id else {
                tx.prepare_cached("DELETE FROM settings WHERE key = ?1")?.execute([key])?;
                return Ok(());
            };
            let blocked = tx
                .prepare_cached("UPDATE channels SET state = 'blocked', updated_at = ?2 WHERE id = ?1")?
                .execute(params![id, now_ms()])?;
            if blocked == 0 {
                return Err(Error::not_found("channel"));
            }
            // Agents' sends to it that wait for review never go: it is the person's alone now.
            tx.prepare_cached(
                "UPDATE outbox SET status = 'rejected', updated_at = ?2, decided_via = 'mac', \
                 error_message = 'AMC asks you for approvals in this conversation: no agent sends to it' \
                 WHERE channel_id = ?1 AND status = 'held'",
            )?
            .execute(params![id, now_ms()])?;
            for (key, value) in [(key, id.to_owned()), (PHONE_SINCE_SETTING, since.to_string())] {
                tx.prepare_cached(
                    "INSERT INTO settings (key, value) VALUES (?1, ?2) \
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )?
                .execute(params![key, value])?;
            }
            Ok(())
        })
    }

    /// Records a question with a new code, unique among those kept. `None` when one was
    /// asked about the same subject in the same conversation already (once in each).
    pub fn open_phone_ask(&self, new: &NewPhoneAsk, code: &mut dyn FnMut() -> String) -> Result<Option<PhoneAsk>> {
        self.db.write(|tx| {
            if tx
                .prepare_cached("SELECT 1 FROM phone_asks WHERE kind = ?1 AND subject = ?2 AND channel_id = ?3")?
                .exists(params![new.kind.as_str(), new.subject, new.channel_id])?
            {
                return Ok(None);
            }
            let id = crate::ids::new_ask_id();
            for _ in 0..32 {
                let code = code();
                let taken = tx.prepare_cached("SELECT 1 FROM phone_asks WHERE code = ?1")?.exists([&code])?;
                if taken {
                    continue;
                }
                tx.prepare_cached(
                    "INSERT INTO phone_asks (id, code, kind, subject, channel_id, state, asked_at, expires_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                )?
                .execute(params![
                    id,
                    code,
                    new.kind.as_str(),
                    new.subject,
                    new.channel_id,
                    new.state.as_str(),
                    new.asked_at,
                    new.expires_at
                ])?;
                return ask_where(tx, "id", &id);
            }
            Err(Error::internal("no free phone code"))
        })
    }

    /// Notes that the question reached the phone as the message `prompt_platform_id`, or
    /// that it could not (`failed`); only while it is being asked.
    pub fn phone_asked(&self, id: &str, prompt_platform_id: Option<&str>) -> Result<Option<PhoneAsk>> {
        self.db.write(|tx| {
            let state = if prompt_platform_id.is_some() { PhoneAskState::Asked } else { PhoneAskState::Failed };
            tx.prepare_cached(
                "UPDATE phone_asks SET state = ?2, prompt_platform_id = ?3 WHERE id = ?1 AND state = 'asking'",
            )?
            .execute(params![id, state.as_str(), prompt_platform_id])?;
            ask_where(tx, "id", id)
        })
    }

    /// The question with this code (any case).
    pub fn phone_ask_by_code(&self, code: &str) -> Result<Option<PhoneAsk>> {
        self.db.read(|tx| ask_where(tx, "code", &code.to_ascii_uppercase()))
    }

    /// The question whose asking message is `platform_id`.
    pub fn phone_ask_by_prompt(&self, platform_id: &str) -> Result<Option<PhoneAsk>> {
        self.db.read(|tx| ask_where(tx, "prompt_platform_id", platform_id))
    }

    /// Ends the questions about this subject, in every conversation, in `state` (`settled`,
    /// `withdrawn`, `expired`) where the phone may still answer them; how many changed.
    pub fn end_phone_ask(&self, kind: PhoneAskKind, subject: &str, state: PhoneAskState, at: Millis) -> Result<usize> {
        self.db.write(|tx| {
            Ok(tx
                .prepare_cached(&format!(
                    "UPDATE phone_asks SET state = ?3, settled_at = ?4 WHERE kind = ?1 AND subject = ?2 AND {OPEN}"
                ))?
                .execute(params![kind.as_str(), subject, state.as_str(), at])?)
        })
    }

    /// Ends the questions the phone may still answer whose time is up (`expired`), or all
    /// of them (`withdrawn`, `before` none): those that changed.
    pub fn end_open_phone_asks(&self, state: PhoneAskState, before: Option<Millis>) -> Result<Vec<PhoneAsk>> {
        self.db.write(|tx| {
            let sql = format!("SELECT {COLS} FROM phone_asks WHERE {OPEN} AND (?1 IS NULL OR expires_at <= ?1)");
            let ended =
                tx.prepare_cached(&sql)?.query_map([before], from_row)?.collect::<rusqlite::Result<Vec<_>>>()?;
            let now = crate::time::now_ms();
            for a in &ended {
                tx.prepare_cached("UPDATE phone_asks SET state = ?2, settled_at = ?3 WHERE id = ?1")?
                    .execute(params![a.id, state.as_str(), now])?;
            }
            Ok(ended)
        })
    }

    /// The questions asked, newest first.
    pub fn phone_asks(&self, limit: u32) -> Result<Vec<PhoneAsk>> {
        self.db.read(|tx| {
            let sql = format!("SELECT {COLS} FROM phone_asks ORDER BY asked_at DESC, id DESC LIMIT ?1");
            Ok(tx.prepare_cached(&sql)?.query_map([limit], from_row)?.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// What was asked about where, of every question kept: `(kind, subject, channel_id)`.
    pub fn phone_asked_about(&self) -> Result<std::collections::HashSet<(String, String, String)>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached("SELECT kind, subject, channel_id FROM phone_asks")?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// How many questions were asked in conversation `channel_id` since `since` (those
    /// over the limit, only counted, left out).
    pub fn phone_asked_since(&self, channel_id: &str, since: Millis) -> Result<u32> {
        self.db.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT count(*) FROM phone_asks WHERE channel_id = ?1 AND asked_at >= ?2 AND state <> 'skipped'",
                )?
                .query_row(params![channel_id, since], |r| r.get(0))?)
        })
    }

    /// Ends the questions of conversation `channel_id` the phone may still answer, in
    /// `state`; how many.
    pub fn end_phone_asks_in(&self, channel_id: &str, state: PhoneAskState) -> Result<usize> {
        self.db.write(|tx| {
            Ok(tx
                .prepare_cached(&format!(
                    "UPDATE phone_asks SET state = ?2, settled_at = ?3 WHERE channel_id = ?1 AND {OPEN}"
                ))?
                .execute(params![channel_id, state.as_str(), now_ms()])?)
        })
    }

    /// Forgets the questions ended before `before`; how many.
    pub fn prune_phone_asks(&self, before: Millis) -> Result<usize> {
        self.db.write(|tx| {
            Ok(tx
                .prepare_cached(&format!("DELETE FROM phone_asks WHERE NOT ({OPEN}) AND asked_at < ?1"))?
                .execute([before])?)
        })
    }
}
