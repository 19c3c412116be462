//! Channels and the person's approval of them.

use rusqlite::{OptionalExtension, Row, Transaction, params};

use super::Store;
use crate::error::{Error, Result};
use crate::model::{
    AllowedChannel, ChannelAdmin, ChannelAgent, ChannelInfo, ChannelKind, ChannelSpec, ChannelState, CodesShown,
    HistoryRelease, SendPolicy, SendTarget, Source, Waiting,
};
use crate::time::{Millis, now_ms};

/// The part of [`VISIBLE`] about time: message `m` of channel `c` falls in the history the
/// person released.
macro_rules! released {
    () => {
        "(c.visible_from IS NULL OR m.sent_at >= c.visible_from) AND (c.stored_from IS NULL OR m.ingested_at >= c.stored_from)"
    };
}

/// The SQL condition under which message `m` of channel `c` is released to agents: the
/// person's view of what agents may read. Agents' queries use [`visible_to`]. The unary
/// `+` keeps SQLite from starting such a query at `channels_by_state` (every allowed
/// channel, then all their messages, sorted): a search for a two-character Japanese word
/// took 650 ms at 1,000,000 messages that way, against 0.4 ms walking the index newest first.
pub(super) const VISIBLE: &str = concat!("+c.state = 'allowed' AND ", released!());

/// The SQL condition under which channel `c` is open to the agent bound to the parameter
/// `agent` (for example `?1`): every agent, or the ones the person listed.
pub(super) fn open_to(agent: &str) -> String {
    format!(
        "(c.audience = 'all' OR EXISTS (SELECT 1 FROM channel_agents ca WHERE ca.channel_id = c.id AND ca.agent_id = {agent}))"
    )
}

/// The SQL condition under which message `m` of channel `c` reaches the agent bound to the
/// parameter `agent`: [`VISIBLE`], in a channel [`open_to`] it.
pub(super) fn visible_to(agent: &str) -> String {
    format!("{VISIBLE} AND {}", open_to(agent))
}

/// [`visible_to`], for a query that walks many messages in time order: the channels
/// allowed and open to the agent become a list SQLite builds once per statement, so a
/// message of any other channel is passed over in the index, without reading its row, its
/// channel or who may see it. The same messages as [`visible_to`] (test
/// `both_forms_of_visibility_select_the_same_messages`); in a store where the person
/// allowed few of many channels, a page of unread messages costs a fraction of what it
/// does with the per-message test. Building the list costs a search of
/// `channels_by_state` per run, so queries that look at one message keep [`visible_to`].
pub(super) fn visible_in_scan_to(agent: &str) -> String {
    format!("m.channel IN ({}) AND {}", open_channels_to(agent), released!())
}

/// A query of the keys of the channels allowed and open to the agent bound to the
/// parameter `agent`.
pub(super) fn open_channels_to(agent: &str) -> String {
    format!(
        "SELECT key FROM channels WHERE state = 'allowed' AND audience = 'all' \
         UNION ALL SELECT o.key FROM channel_agents oa JOIN channels o ON o.id = oa.channel_id \
         WHERE oa.agent_id = {agent} AND o.state = 'allowed' AND o.audience <> 'all'"
    )
}

/// The SQL condition under which message `m` of channel `c` is unread for the agent bound
/// to the parameter `agent`: an inbound message from someone else, [`visible_to`] it, that
/// it has not marked read. `list_unread`, the push and the unread floor all count with it.
pub(super) fn unread_to(agent: &str) -> String {
    unread_given(agent, &visible_to(agent))
}

/// [`unread_to`] with [`visible_in_scan_to`], for the walks in time order of the unread
/// list and the unread floor.
pub(super) fn unread_in_scan_to(agent: &str) -> String {
    unread_given(agent, &visible_in_scan_to(agent))
}

fn unread_given(agent: &str, visible: &str) -> String {
    format!(
        "m.direction = 'inbound' AND NOT m.is_self AND {visible} \
         AND NOT EXISTS (SELECT 1 FROM read_marks r WHERE r.agent = {} AND r.message = m.rowid)",
        agent_key(agent)
    )
}

/// The key of the agent bound to the parameter `agent` in `read_marks`: its rowid,
/// looked up once per statement (SQLite runs a subquery that names no outer row once).
pub(super) fn agent_key(agent: &str) -> String {
    format!("(SELECT rowid FROM agents WHERE id = {agent})")
}

/// The key (`messages.channel`) of the channel whose `ch_` id is bound to the parameter
/// `channel`, looked up once per statement.
pub(super) fn channel_key(channel: &str) -> String {
    format!("(SELECT key FROM channels WHERE id = {channel})")
}

/// A channel's send policy for the agent bound to the parameter `agent`: its own on the
/// channel, else the channel's.
fn policy_for(agent: &str) -> String {
    format!(
        "coalesce((SELECT ca.send_policy FROM channel_agents ca WHERE ca.channel_id = c.id AND ca.agent_id = {agent}), \
         c.send_policy)"
    )
}

/// The setting naming the iMessage conversation AMC asks the person in on their phone: a
/// channel's id. That channel is never approved while set.
pub const PHONE_CHANNEL_SETTING: &str = "phone_imessage";
/// The same for the person's DM with the Discord bot.
pub const PHONE_DISCORD_SETTING: &str = "phone_discord";

const DAY_MS: i64 = 86_400_000;
/// How far before a "from now" approval a message stored after it may say it was sent.
pub const FROM_NOW_CLOCK_SKEW_MS: i64 = 2 * 60_000;

pub(super) fn parse_col<T>(row: &Row<'_>, idx: usize, parse: fn(&str) -> Option<T>) -> rusqlite::Result<T> {
    let s: String = row.get(idx)?;
    parse(&s).ok_or_else(|| rusqlite::Error::InvalidColumnType(idx, s, rusqlite::types::Type::Text))
}

const ADMIN_COLS: &str = "c.id, c.source, c.platform_id, c.name, c.kind, c.state, c.send_policy, c.visible_from, \
     c.created_at, c.last_message_at, \
     (SELECT count(*) FROM messages m WHERE m.channel = c.key), \
     CASE WHEN c.state = 'allowed' THEN (SELECT count(*) FROM messages m WHERE m.channel = c.key \
       AND (c.visible_from IS NULL OR m.sent_at >= c.visible_from) \
       AND (c.stored_from IS NULL OR m.ingested_at >= c.stored_from)) ELSE 0 END, c.audience, \
     (SELECT coalesce(json_group_array(json_array(ca.agent_id, ca.send_policy)), '[]') FROM \
       (SELECT agent_id, send_policy FROM channel_agents WHERE channel_id = c.id ORDER BY agent_id) ca), \
     c.gone_reason, c.codes, \
     (SELECT coalesce(json_group_array(k.agent_id), '[]') FROM \
       (SELECT agent_id FROM channel_code_agents WHERE channel_id = c.id ORDER BY agent_id) k), \
     (SELECT count(*) FROM messages m WHERE m.channel = c.key AND m.secrets > 0), c.open_to_anything";

fn admin_from_row(row: &Row<'_>) -> rusqlite::Result<ChannelAdmin> {
    let audience: String = row.get(12)?;
    let codes = parse_col(row, 15, CodesShown::parse)?;
    let agents = if audience == "all" {
        None
    } else {
        let listed: String = row.get(13)?;
        let listed: Vec<(String, Option<String>)> = serde_json::from_str(&listed).unwrap_or_default();
        Some(
            listed
                .into_iter()
                .map(|(id, policy)| ChannelAgent { id, send_policy: policy.as_deref().and_then(SendPolicy::parse) })
                .collect(),
        )
    };
    Ok(ChannelAdmin {
        agents,
        id: row.get(0)?,
        source: parse_col(row, 1, Source::parse)?,
        platform_id: row.get(2)?,
        name: row.get(3)?,
        kind: parse_col(row, 4, ChannelKind::parse)?,
        state: parse_col(row, 5, ChannelState::parse)?,
        send_policy: parse_col(row, 6, SendPolicy::parse)?,
        visible_from: row.get(7)?,
        created_at: row.get(8)?,
        last_message_at: row.get(9)?,
        message_count: row.get(10)?,
        visible_count: row.get(11)?,
        gone: row.get(14)?,
        codes,
        codes_agents: if codes == CodesShown::Some {
            serde_json::from_str(&row.get::<_, String>(16)?).unwrap_or_default()
        } else {
            Vec::new()
        },
        sensitive: amc_secrets::is_short_code_channel(&row.get::<_, String>(1)?, &row.get::<_, String>(2)?),
        secret_count: row.get(17)?,
        receives_anything: row.get(18)?,
    })
}

/// Lowers every agent's unread floor to `at` and bumps the unread generation: called
/// whenever messages sent at or after `at` may have become unread.
pub(super) fn lower_floors(tx: &Transaction<'_>, at: Millis, id: &str) -> Result<()> {
    tx.prepare_cached("UPDATE agents SET floor_at = ?1, floor_id = ?2 WHERE (floor_at, floor_id) > (?1, ?2)")?
        .execute(params![at, id])?;
    tx.prepare_cached("UPDATE unread_generation SET value = value + 1 WHERE id = 1")?.execute([])?;
    Ok(())
}

/// Lowers the floors for a channel whose messages from `from` on may have become unread
/// (an approval, a change of its agents): no lower than its oldest message, so the other
/// channels' read history is not walked again.
fn lower_floors_for(tx: &Transaction<'_>, channel_id: &str, from: Option<Millis>) -> Result<()> {
    let oldest: Option<Millis> = tx
        .prepare_cached(&format!("SELECT min(sent_at) FROM messages WHERE channel = {}", channel_key("?1")))?
        .query_row([channel_id], |r| r.get(0))?;
    match oldest {
        Some(oldest) => lower_floors(tx, oldest.max(from.unwrap_or(i64::MIN)), ""),
        // Nothing stored yet: nothing can have become unread.
        None => Ok(()),
    }
}

/// `NOT_FOUND` unless an agent named `agent` exists.
pub(super) fn known_agent(tx: &Transaction<'_>, agent: &str) -> Result<()> {
    let known: bool =
        tx.prepare_cached("SELECT EXISTS (SELECT 1 FROM agents WHERE id = ?1)")?.query_row([agent], |r| r.get(0))?;
    if !known {
        return Err(Error::new(crate::error::ErrorCode::NotFound, format!("no agent named {agent}")));
    }
    Ok(())
}

/// The name a new channel gets: the source's, or a placeholder when it has none yet.
fn display_name(spec: &ChannelSpec) -> &str {
    match (spec.name.is_empty(), spec.kind) {
        (false, _) => &spec.name,
        (true, ChannelKind::Dm) => "Direct message",
        (true, ChannelKind::Group) => "Group",
    }
}

/// A channel's readers as stored: a sorted JSON array of distinct handles, or `None` when
/// the source names nobody (nobody known is not nobody) or a handle with a quote or a
/// backslash.
fn readers_json(handles: &[String]) -> Option<String> {
    let mut handles: Vec<String> = handles.iter().map(|h| crate::model::reader_handle(h)).collect();
    handles.retain(|h| !h.is_empty());
    // A quote or a backslash in a handle could make one handle read as another in the
    // readers rule's match: none is one a platform gives, so such readers are unknown.
    if handles.iter().any(|h| h.contains(['"', '\\'])) {
        return None;
    }
    handles.sort();
    handles.dedup();
    (!handles.is_empty()).then(|| serde_json::to_string(&handles).unwrap_or_default())
}

/// A channel as ingest stores its messages: its `ch_` id, its key (`messages.channel`),
/// and whether it is new.
pub(super) struct Upserted {
    pub id: String,
    pub key: i64,
    pub created: bool,
    /// Whether a channel already stored changed its name, its kind, or came back.
    pub changed: bool,
}

/// Finds or creates the channel.
pub(super) fn upsert(tx: &Transaction<'_>, source: Source, spec: &ChannelSpec, now: Millis) -> Result<Upserted> {
    let existing: Option<(String, i64, String, String, Option<String>)> = tx
        .prepare_cached("SELECT id, key, name, kind, readers FROM channels WHERE source = ?1 AND platform_id = ?2")?
        .query_row(params![source.as_str(), spec.platform_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()?;
    // A source that does not say who reads it (`None`) leaves the stored readers.
    let readers = spec.readers.as_deref().and_then(readers_json);
    if let Some((id, key, name, kind, stored_readers)) = existing {
        // Who reads it follows the source; a source that cannot tell leaves them.
        if readers.is_some() && readers != stored_readers {
            tx.prepare_cached("UPDATE channels SET readers = ?2 WHERE id = ?1")?.execute(params![id, readers])?;
        }
        // The platform told of the channel: it is there (again).
        let back = tx
            .prepare_cached(
                "UPDATE channels SET gone_at = NULL, gone_reason = NULL WHERE id = ?1 AND gone_at IS NOT NULL",
            )?
            .execute([&id])?;
        // An empty name is a source that does not know it: the stored one stays.
        let name_changed = !spec.name.is_empty() && name != spec.name;
        if name_changed || kind != spec.kind.as_str() {
            let name = if name_changed { spec.name.as_str() } else { name.as_str() };
            tx.prepare_cached("UPDATE channels SET name = ?2, kind = ?3, updated_at = ?4 WHERE id = ?1")?
                .execute(params![id, name, spec.kind.as_str(), now])?;
        }
        let changed = back > 0 || name_changed || kind != spec.kind.as_str();
        return Ok(Upserted { id, key, created: false, changed });
    }
    let id = crate::ids::new_channel_id();
    tx.prepare_cached(
        "INSERT INTO channels (id, source, platform_id, name, kind, created_at, updated_at, readers) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)",
    )?
    .execute(params![
        id,
        source.as_str(),
        spec.platform_id,
        display_name(spec),
        spec.kind.as_str(),
        now,
        readers
    ])?;
    Ok(Upserted { key: tx.last_insert_rowid(), id, created: true, changed: false })
}

impl Store {
    /// Records that the platform no longer has these channels for AMC (deleted, or AMC
    /// removed), with the reason for the person; returns the ids of those newly gone.
    pub fn mark_channels_gone(&self, source: Source, platform_ids: &[String], reason: &str) -> Result<Vec<String>> {
        self.db.write(|tx| {
            let mut gone = Vec::new();
            let mut stmt = tx.prepare_cached(
                "UPDATE channels SET gone_at = ?3, gone_reason = ?4, updated_at = ?3 \
                 WHERE source = ?1 AND platform_id = ?2 AND gone_at IS NULL RETURNING id",
            )?;
            for p in platform_ids {
                if let Some(id) =
                    stmt.query_row(params![source.as_str(), p, now_ms(), reason], |r| r.get(0)).optional()?
                {
                    gone.push(id);
                }
            }
            Ok(gone)
        })
    }

    /// The approved channels the platform took away (deleted, AMC removed or shut out),
    /// by source: their names, for the source's health.
    pub fn gone_allowed(&self) -> Result<Vec<(Source, String)>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT source, name FROM channels WHERE state = 'allowed' AND gone_at IS NOT NULL ORDER BY name",
            )?;
            let rows = stmt.query_map([], |r| Ok((parse_col(r, 0, Source::parse)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Finds or creates a channel (new channels start `pending`); returns its id and whether it is new.
    #[cfg(any(test, feature = "test-support"))]
    pub fn ensure_channel(&self, source: Source, spec: &ChannelSpec) -> Result<(String, bool)> {
        self.db.write(|tx| upsert(tx, source, spec, now_ms()).map(|c| (c.id, c.created)))
    }

    /// How many channels wait for the person's decision and how many sends for review.
    pub fn waiting(&self) -> Result<Waiting> {
        self.db.read(|tx| {
            let (channels, sends, tools) = tx.query_row(
                "SELECT (SELECT count(*) FROM channels WHERE state = 'pending'), \
                        (SELECT count(*) FROM outbox WHERE status = 'held'), \
                        (SELECT count(*) FROM tool_requests WHERE status = 'pending')",
                [],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)),
            )?;
            Ok(Waiting { channels: channels.max(0) as u64, sends: sends.max(0) as u64, tools: tools.max(0) as u64 })
        })
    }

    /// A source's allowed channels, without the counts the person's list shows.
    pub fn allowed_channels(&self, source: Source) -> Result<Vec<AllowedChannel>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT id, platform_id, kind, visible_from FROM channels WHERE source = ?1 AND state = 'allowed'",
            )?;
            let rows = stmt.query_map([source.as_str()], |r| {
                Ok(AllowedChannel {
                    id: r.get(0)?,
                    platform_id: r.get(1)?,
                    kind: parse_col(r, 2, ChannelKind::parse)?,
                    visible_from: r.get(3)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Every channel with its state and counts, newest activity first, for the person.
    /// `search` matches the name or platform id, case-insensitively.
    pub fn admin_channels(&self, state: Option<ChannelState>, search: Option<&str>) -> Result<Vec<ChannelAdmin>> {
        let pattern = search.map(|s| format!("%{}%", s.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")));
        self.db.read(|tx| {
            let sql = format!(
                "SELECT {ADMIN_COLS} FROM channels c WHERE (?1 IS NULL OR c.state = ?1) \
                 AND (?2 IS NULL OR c.name LIKE ?2 ESCAPE '\\' OR c.platform_id LIKE ?2 ESCAPE '\\') \
                 ORDER BY coalesce(c.last_message_at, c.created_at) DESC, c.id"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![state.map(ChannelState::as_str), pattern], admin_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// One channel for the person.
    pub fn admin_channel(&self, id: &str) -> Result<ChannelAdmin> {
        self.db.read(|tx| {
            let sql = format!("SELECT {ADMIN_COLS} FROM channels c WHERE c.id = ?1");
            tx.prepare_cached(&sql)?
                .query_row([id], admin_from_row)
                .optional()?
                .ok_or_else(|| Error::not_found("channel"))
        })
    }

    /// Approves a channel, releasing as much history as the person chose. A channel
    /// approved for the first time gets the `review` send policy unless `policy` says otherwise.
    /// A conversation with a short-code sender ([`ChannelAdmin::sensitive`]) is approved
    /// only when the person confirmed it (`sensitive`), else `CONFIRMATION_REQUIRED`.
    pub fn approve_channel(
        &self,
        id: &str,
        release: HistoryRelease,
        policy: Option<SendPolicy>,
        sensitive: bool,
    ) -> Result<ChannelAdmin> {
        let now = now_ms();
        // "From now": what AMC stores from now on (`stored_from`), whose own time is at
        // most a little before now (a sender's clock may be behind; a catch-up must not
        // bring back what was said before the approval).
        let (visible_from, stored_from) = match release {
            HistoryRelease::FromNow => (Some(now - FROM_NOW_CLOCK_SKEW_MS), Some(now)),
            HistoryRelease::All => (None, None),
            HistoryRelease::LastDays(days) => (Some(now - i64::from(days) * DAY_MS), None),
        };
        self.db.write(|tx| {
            let place: Option<(String, String)> = tx
                .prepare_cached("SELECT source, platform_id FROM channels WHERE id = ?1")?
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let Some((source, platform_id)) = place else {
                return Err(Error::not_found("channel"));
            };
            if !sensitive && amc_secrets::is_short_code_channel(&source, &platform_id) {
                return Err(Error::sensitive_unconfirmed());
            }
            // The conversation AMC asks the person in is theirs alone: no agent may reach it.
            if tx.prepare_cached("SELECT 1 FROM settings WHERE key IN (?1, ?2) AND value = ?3")?.exists(params![
                PHONE_CHANNEL_SETTING,
                PHONE_DISCORD_SETTING,
                id
            ])? {
                return Err(Error::conflict(
                    "AMC asks you for approvals in this conversation: agents never see it. \
                     Turn asking on your phone off first (amc phone off).",
                ));
            }
            let changed = tx
                .prepare_cached(
                    "UPDATE channels SET state = 'allowed', visible_from = ?2, stored_from = ?5, \
                     send_policy = coalesce(?3, send_policy), updated_at = ?4 WHERE id = ?1",
                )?
                .execute(params![id, visible_from, policy.map(SendPolicy::as_str), now, stored_from])?;
            if changed == 0 {
                return Err(Error::not_found("channel"));
            }
            lower_floors_for(tx, id, visible_from)
        })?;
        self.admin_channel(id)
    }

    /// Blocks a channel: from this moment nothing of it reaches agents.
    pub fn block_channel(&self, id: &str) -> Result<ChannelAdmin> {
        self.db.write(|tx| {
            let changed = tx
                .prepare_cached("UPDATE channels SET state = 'blocked', updated_at = ?2 WHERE id = ?1")?
                .execute(params![id, now_ms()])?;
            if changed == 0 {
                return Err(Error::not_found("channel"));
            }
            Ok(())
        })?;
        self.admin_channel(id)
    }

    /// Sets what an agent's send to this channel does.
    pub fn set_send_policy(&self, id: &str, policy: SendPolicy) -> Result<ChannelAdmin> {
        self.db.write(|tx| {
            let changed = tx
                .prepare_cached("UPDATE channels SET send_policy = ?2, updated_at = ?3 WHERE id = ?1")?
                .execute(params![id, policy.as_str(), now_ms()])?;
            if changed == 0 {
                return Err(Error::not_found("channel"));
            }
            Ok(())
        })?;
        self.admin_channel(id)
    }

    /// Sets who reads the source's channels already stored (by platform id), as the
    /// source reads its conversations now; channels not stored are left alone. Returns how
    /// many changed.
    pub fn set_readers(&self, source: Source, readers: &[(String, Vec<String>)]) -> Result<usize> {
        self.db.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE channels SET readers = ?3 WHERE source = ?1 AND platform_id = ?2 AND readers IS NOT ?3",
            )?;
            let mut changed = 0;
            for (platform_id, handles) in readers {
                if let Some(json) = readers_json(handles) {
                    changed += stmt.execute(params![source.as_str(), platform_id, json])?;
                }
            }
            Ok(changed)
        })
    }

    /// Turns the readers rule off for a channel (`anything`: it may receive whatever an
    /// agent read elsewhere) or back on.
    pub fn set_receives_anything(&self, id: &str, anything: bool) -> Result<ChannelAdmin> {
        self.db.write(|tx| {
            let changed = tx
                .prepare_cached("UPDATE channels SET open_to_anything = ?2, updated_at = ?3 WHERE id = ?1")?
                .execute(params![id, anything, now_ms()])?;
            if changed == 0 {
                return Err(Error::not_found("channel"));
            }
            Ok(())
        })?;
        self.admin_channel(id)
    }

    /// The channels the agent may use, most recently active first, each with the agent's
    /// send policy there.
    pub fn visible_channels(&self, agent_id: &str, source: Option<Source>) -> Result<Vec<ChannelInfo>> {
        self.db.read(|tx| {
            let sql = format!(
                "SELECT c.id, c.source, c.name, c.kind, {}, \
                 CASE WHEN (c.visible_from IS NULL OR c.last_message_at >= c.visible_from) \
                   AND (c.stored_from IS NULL OR c.last_message_at >= c.stored_from) THEN c.last_message_at END, \
                 c.gone_reason FROM channels c WHERE c.state = 'allowed' AND (?1 IS NULL OR c.source = ?1) AND {} \
                 ORDER BY coalesce(c.last_message_at, c.created_at) DESC, c.id",
                policy_for("?2"),
                open_to("?2")
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map(params![source.map(Source::as_str), agent_id], |r| {
                Ok(ChannelInfo {
                    id: r.get(0)?,
                    source: parse_col(r, 1, Source::parse)?,
                    name: r.get(2)?,
                    kind: parse_col(r, 3, ChannelKind::parse)?,
                    send_policy: parse_col(r, 4, SendPolicy::parse)?,
                    last_activity_at: r.get(5)?,
                    gone: r.get(6)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// The channel an agent wants to send to, if it may see it, with its send policy there.
    pub fn send_target(&self, agent_id: &str, id: &str) -> Result<Option<SendTarget>> {
        self.db.read(|tx| target(tx, id, Some(agent_id)))
    }

    /// The channel of a held send, whatever its state now (the person decides).
    pub fn channel_target(&self, id: &str) -> Result<Option<SendTarget>> {
        self.db.read(|tx| target(tx, id, None))
    }

    /// Opens the channel to every agent (`None`), or to these agents only, keeping the
    /// send policies of agents still listed. `NOT_FOUND` for an unknown channel or agent.
    pub fn set_channel_agents(&self, id: &str, agents: Option<&[String]>) -> Result<ChannelAdmin> {
        self.db.write(|tx| {
            let changed = tx
                .prepare_cached("UPDATE channels SET audience = ?2, updated_at = ?3 WHERE id = ?1")?
                .execute(params![id, if agents.is_some() { "some" } else { "all" }, now_ms()])?;
            if changed == 0 {
                return Err(Error::not_found("channel"));
            }
            let listed = agents.unwrap_or_default();
            for agent in listed {
                known_agent(tx, agent)?;
                tx.prepare_cached("INSERT OR IGNORE INTO channel_agents (channel_id, agent_id) VALUES (?1, ?2)")?
                    .execute(params![id, agent])?;
            }
            let keep = serde_json::to_string(listed).map_err(Error::internal)?;
            tx.prepare_cached(
                "DELETE FROM channel_agents WHERE channel_id = ?1 AND agent_id NOT IN (SELECT value FROM json_each(?2))",
            )?
            .execute(params![id, keep])?;
            // Messages may have become unread for agents that now see the channel.
            lower_floors_for(tx, id, None)?;
            Ok(())
        })?;
        self.admin_channel(id)
    }

    /// An agent's own send policy on a channel open to it (`None`: the channel's).
    /// `NOT_FOUND` when the channel is not listed as open to that agent.
    pub fn set_agent_send_policy(&self, id: &str, agent_id: &str, policy: Option<SendPolicy>) -> Result<ChannelAdmin> {
        self.db.write(|tx| {
            let changed = tx
                .prepare_cached("UPDATE channel_agents SET send_policy = ?3 WHERE channel_id = ?1 AND agent_id = ?2")?
                .execute(params![id, agent_id, policy.map(SendPolicy::as_str)])?;
            if changed == 0 {
                return Err(Error::new(
                    crate::error::ErrorCode::NotFound,
                    "the channel is not open to that agent by name; list the agents it is open to first",
                ));
            }
            Ok(())
        })?;
        self.admin_channel(id)
    }
}

fn target(tx: &Transaction<'_>, id: &str, agent: Option<&str>) -> Result<Option<SendTarget>> {
    let sql = format!(
        "SELECT c.id, c.source, c.platform_id, c.name, c.kind, {}, c.gone_reason FROM channels c \
         WHERE c.id = ?1 AND (?2 IS NULL OR (c.state = 'allowed' AND {}))",
        policy_for("?2"),
        open_to("?2")
    );
    Ok(tx
        .prepare_cached(&sql)?
        .query_row(params![id, agent], |r| {
            Ok(SendTarget {
                id: r.get(0)?,
                source: parse_col(r, 1, Source::parse)?,
                platform_id: r.get(2)?,
                name: r.get(3)?,
                kind: parse_col(r, 4, ChannelKind::parse)?,
                send_policy: parse_col(r, 5, SendPolicy::parse)?,
                gone: r.get(6)?,
            })
        })
        .optional()?)
}
