//! Where each agent's push stands: a floor in storage order (message rowids), and the
//! channels that got ahead of it. The service layer (`service/claude_channel/push.rs`) decides what to
//! push; this module finds what is new and records what was handled.

use rusqlite::{OptionalExtension, params};

use crate::Store;
use crate::channels::{open_to, unread_to};
use crate::error::{Error, Result};
use crate::messages::{ENVELOPE_COLS, ENVELOPE_WIDTH, envelope_from_row, load_attachments};
use crate::model::Envelope;

/// What is new for an agent since its push position: the messages it would see in its
/// unread list, in storage order, each with its rowid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushScan {
    /// The position the scan started from.
    pub floor: i64,
    /// Oldest stored first.
    pub messages: Vec<(i64, Envelope)>,
    /// Every message at or below this rowid was looked at: returned, or not one to push.
    pub scanned_through: i64,
}

/// A position to record: the new floor, and channels pushed beyond it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushPosition {
    /// Everything at or below it is handled.
    pub floor: i64,
    /// Channels handled through a rowid above the floor.
    pub channels: Vec<(String, i64)>,
}

impl PushPosition {
    /// This position, then `next` told after it: the higher floor, and each channel at the
    /// furthest it was told, where that is above the floor.
    pub fn then(&self, next: PushPosition) -> PushPosition {
        let floor = self.floor.max(next.floor);
        let mut channels: Vec<(String, i64)> = Vec::new();
        for (channel, through) in self.channels.iter().cloned().chain(next.channels) {
            match channels.iter_mut().find(|(c, _)| *c == channel) {
                Some((_, t)) => *t = (*t).max(through),
                None => channels.push((channel, through)),
            }
        }
        channels.retain(|(_, t)| *t > floor);
        PushPosition { floor, channels }
    }
}

impl Store {
    /// The agent's push floor, set to the newest stored message the first time it is
    /// asked: a new agent is pushed what arrives from now on, not its whole history.
    pub fn push_floor(&self, agent_id: &str) -> Result<i64> {
        self.db.write(|tx| {
            tx.prepare_cached(
                "INSERT INTO push_floors (agent_id, floor) \
                 SELECT id, (SELECT coalesce(max(rowid), 0) FROM messages) FROM agents \
                 WHERE id = ?1 AND revoked_at IS NULL ON CONFLICT (agent_id) DO NOTHING",
            )?
            .execute([agent_id])?;
            tx.prepare_cached("SELECT floor FROM push_floors WHERE agent_id = ?1")?
                .query_row([agent_id], |r| r.get(0))
                .optional()?
                .ok_or_else(|| Error::unauthorized("unknown or revoked agent"))
        })
    }

    /// Up to `limit` messages to push to the agent, above its floor and above where their
    /// channel was pushed: inbound, not the person's own, visible, and still unread. `told`
    /// is a position a session was told through but has not recorded: the scan starts above
    /// it too, so the session is not told the same messages again.
    pub fn push_scan(&self, agent_id: &str, told: &PushPosition, limit: u32) -> Result<PushScan> {
        self.db.read(|tx| {
            let recorded: i64 = tx
                .prepare_cached("SELECT floor FROM push_floors WHERE agent_id = ?1")?
                .query_row([agent_id], |r| r.get(0))
                .optional()?
                .ok_or_else(|| Error::unauthorized("unknown agent"))?;
            let floor = recorded.max(told.floor);
            let told_channels = serde_json::to_string(&told.channels).map_err(Error::internal)?;
            let newest: i64 =
                tx.prepare_cached("SELECT coalesce(max(rowid), 0) FROM messages")?.query_row([], |r| r.get(0))?;
            let sql = format!(
                "SELECT {ENVELOPE_COLS}, m.rowid FROM messages m JOIN channels c ON c.key = m.channel \
                 LEFT JOIN push_channels p ON p.agent_id = ?1 AND p.channel_id = c.id \
                 WHERE m.rowid > ?2 AND m.rowid > coalesce(p.through, ?2) \
                 AND m.rowid > coalesce((SELECT max(t.value ->> 1) FROM json_each(?4) t WHERE t.value ->> 0 = c.id), ?2) \
                 AND {} ORDER BY m.rowid LIMIT ?3",
                unread_to("?1")
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt
                .query_map(params![agent_id, floor, limit, told_channels], |r| {
                    Ok((r.get::<_, i64>(ENVELOPE_WIDTH)?, envelope_from_row(r)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let (seqs, mut envelopes): (Vec<i64>, Vec<Envelope>) = rows.into_iter().unzip();
            load_attachments(tx, &mut envelopes)?;
            let scanned_through = match seqs.last() {
                Some(last) if seqs.len() as u32 == limit => *last,
                _ => newest.max(floor),
            };
            Ok(PushScan { floor, messages: seqs.into_iter().zip(envelopes).collect(), scanned_through })
        })
    }

    /// Records what was pushed (`told`: whether the batch told the agent anything).
    /// Positions only move forward, so a late or repeated record never makes anything be
    /// pushed again; and never past the newest message stored. A channel the agent cannot
    /// see now (the person blocked it since the batch) is not kept.
    pub fn record_push(&self, agent_id: &str, position: &PushPosition, told: bool) -> Result<()> {
        self.db.write(|tx| {
            tx.prepare_cached(
                "UPDATE push_floors SET floor = max(floor, min(?2, (SELECT coalesce(max(rowid), 0) FROM messages))), \
                 pushed_at = CASE WHEN ?3 THEN ?4 ELSE pushed_at END WHERE agent_id = ?1",
            )?
            .execute(params![agent_id, position.floor, told, crate::time::now_ms()])?;
            let mut ahead = tx.prepare_cached(&format!(
                "INSERT INTO push_channels (agent_id, channel_id, through) \
                 SELECT agent_id, ?2, ?3 FROM push_floors WHERE agent_id = ?1 AND floor < ?3 \
                 AND ?3 <= (SELECT coalesce(max(rowid), 0) FROM messages) \
                 AND EXISTS (SELECT 1 FROM channels c WHERE c.id = ?2 AND c.state = 'allowed' AND {}) \
                 ON CONFLICT (agent_id, channel_id) DO UPDATE SET through = max(through, excluded.through)",
                open_to("?1")
            ))?;
            for (channel_id, through) in &position.channels {
                ahead.execute(params![agent_id, channel_id, through])?;
            }
            tx.prepare_cached(
                "DELETE FROM push_channels WHERE agent_id = ?1 \
                 AND through <= (SELECT floor FROM push_floors WHERE agent_id = ?1)",
            )?
            .execute([agent_id])?;
            Ok(())
        })
    }
}
