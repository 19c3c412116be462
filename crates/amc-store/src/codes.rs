//! One-time codes and sign-in links: which agents a channel shows them to, and which
//! messages hold them (`messages.secrets`, migration 0020). What agents are given is hidden
//! as it is read (`amc_secrets`); the stored classification is what the person's
//! screens count and mark.

use std::collections::HashSet;

use rusqlite::{OptionalExtension, Transaction, params};

use super::Store;
use crate::backlog::{Backlog, IndexProgress};
use crate::error::{Error, Result};
use crate::model::{ChannelAdmin, CodesShown, NotACode};
use crate::time::now_ms;

/// The setting holding the version of the rules the stored classification was made by.
const RULES_SETTING: &str = "secrets_rules";

/// [`Store::codes_shown_to`], in the transaction `tx`.
pub(crate) fn shown_in(tx: &Transaction<'_>, agent_id: &str) -> Result<HashSet<String>> {
    let mut stmt = tx.prepare_cached(
        "SELECT id FROM channels WHERE codes = 'shown' \
         UNION SELECT k.channel_id FROM channel_code_agents k JOIN channels c ON c.id = k.channel_id \
         WHERE k.agent_id = ?1 AND c.codes = 'some'",
    )?;
    let ids = stmt.query_map([agent_id], |r| r.get(0))?;
    Ok(ids.collect::<rusqlite::Result<HashSet<String>>>()?)
}

impl Store {
    /// Which agents are given the channel's one-time codes and sign-in links: none
    /// (`Hidden`), every agent it is open to (`Shown`), or `agents` (`Some`).
    pub fn set_channel_codes(&self, id: &str, codes: CodesShown, agents: &[String]) -> Result<ChannelAdmin> {
        self.db.write(|tx| {
            let changed = tx
                .prepare_cached("UPDATE channels SET codes = ?2, updated_at = ?3 WHERE id = ?1")?
                .execute(params![id, codes.as_str(), now_ms()])?;
            if changed == 0 {
                return Err(Error::not_found("channel"));
            }
            tx.prepare_cached("DELETE FROM channel_code_agents WHERE channel_id = ?1")?.execute([id])?;
            if codes != CodesShown::Some {
                return Ok(());
            }
            for agent in agents {
                super::channels::known_agent(tx, agent)?;
                tx.prepare_cached("INSERT OR IGNORE INTO channel_code_agents (channel_id, agent_id) VALUES (?1, ?2)")?
                    .execute(params![id, agent])?;
            }
            Ok(())
        })?;
        self.admin_channel(id)
    }

    /// The channels (`ch_` ids) whose codes the agent is given. Read it after the messages
    /// it applies to, so a message read after the person hid the codes is never given
    /// whole (or read both in one transaction, as the search does).
    pub fn codes_shown_to(&self, agent_id: &str) -> Result<HashSet<String>> {
        self.db.read(|tx| shown_in(tx, agent_id))
    }

    /// Says that the message `id` holds no one-time code or sign-in link, as the person
    /// does (`not_a_code`), or takes that back. Said, the message is given to agents whole
    /// and counts as holding none; the report keeps `rules`, the rules that had found
    /// something in it. Taken back, it is classified again and leaves the report. Said
    /// only of the text the person saw (`seen`): an edit since then leaves it unsaid
    /// (`CONFLICT`), and an edit later clears it (see `ingest_many`).
    pub fn set_not_a_code(&self, id: &str, not_a_code: bool, rules: &[&str], seen: &str) -> Result<()> {
        self.db.write(|tx| {
            let now = now_ms();
            let changed = if not_a_code {
                tx.prepare_cached(
                    "UPDATE messages SET not_a_code = coalesce(not_a_code, ?2), secrets = 0 WHERE id = ?1 AND text = ?3",
                )?
                .execute(params![id, now, seen])?
            } else {
                tx.prepare_cached(
                    "UPDATE messages SET not_a_code = NULL, secrets = amc_secrets(source, sender_id, is_self, text) \
                     WHERE id = ?1",
                )?
                .execute([id])?
            };
            if changed == 0 {
                let exists = tx.prepare_cached("SELECT 1 FROM messages WHERE id = ?1")?.exists([id])?;
                return Err(if exists {
                    Error::conflict("the message changed since it was read; read it again")
                } else {
                    Error::not_found("message")
                });
            }
            if not_a_code {
                let rules = serde_json::to_string(rules).map_err(Error::internal)?;
                tx.prepare_cached(
                    "INSERT OR IGNORE INTO not_a_code_report (message_id, rules, marked_at) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![id, rules, now])?;
            } else {
                tx.prepare_cached("DELETE FROM not_a_code_report WHERE message_id = ?1")?.execute([id])?;
            }
            Ok(())
        })
    }

    /// What the person said holds no code, newest first: each message's id, its channel's
    /// name (if it is still stored), the rules that had found something and when.
    pub fn not_a_code_report(&self) -> Result<Vec<NotACode>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT r.message_id, c.name, r.rules, r.marked_at FROM not_a_code_report r \
                 LEFT JOIN messages m ON m.id = r.message_id LEFT JOIN channels c ON c.key = m.channel \
                 ORDER BY r.marked_at DESC, r.message_id",
            )?;
            let rows = stmt.query_map([], |r| {
                let rules: String = r.get(2)?;
                Ok(NotACode {
                    message_id: r.get(0)?,
                    channel_name: r.get(1)?,
                    rules: serde_json::from_str(&rules).unwrap_or_default(),
                    marked_at: r.get(3)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Starts classifying every message again when the stored classification was made by
    /// other rules than this build's ([`amc_secrets::RULES`]).
    pub fn reclassify_if_rules_changed(&self) -> Result<bool> {
        self.db.write(|tx| {
            let stored: Option<String> = tx
                .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
                .query_row([RULES_SETTING], |r| r.get(0))
                .optional()?;
            let current = amc_secrets::RULES.to_string();
            if stored.as_deref() == Some(current.as_str()) {
                return Ok(false);
            }
            // A store that never recorded its rules classified its messages with these
            // (migration 0020 left a backlog of the ones before it).
            let again = stored.is_some();
            if again {
                tx.execute(
                    "INSERT OR REPLACE INTO secrets_backlog (id, lo, hi, total, done) \
                     SELECT 1, min(rowid), max(rowid), count(*), 0 FROM messages HAVING count(*) > 0",
                    [],
                )?;
            }
            tx.prepare_cached("INSERT OR REPLACE INTO settings (key, value) VALUES (?1, ?2)")?
                .execute(params![RULES_SETTING, current])?;
            Ok(again)
        })
    }

    /// Classifies up to `batch` more messages of the backlog (stored before the
    /// classification existed, or under other rules), the newest first, in one short
    /// transaction; returns the progress, or `None` when the backlog is done.
    pub fn classify_more(&self, batch: u32) -> Result<Option<IndexProgress>> {
        self.db.write(|tx| {
            let Some(step) = Backlog::Secrets.next(tx, batch)? else {
                return Ok(None);
            };
            tx.prepare_cached(
                "UPDATE messages SET secrets = CASE WHEN not_a_code IS NULL THEN amc_secrets(source, sender_id, is_self, text) \
                 ELSE 0 END WHERE rowid BETWEEN ?1 AND ?2",
            )?
            .execute(params![step.from, step.hi])?;
            Backlog::Secrets.done(tx, &step)
        })
    }
}
