//! Fetching channel history through Discord's REST API: after every (re)connection,
//! each allowed channel from its newest stored message on; when the person approves a
//! channel with history, its earlier messages too. Bounded by `discord_history_limit`
//! per channel and pass, in pages of 100, stored idempotently by message id.

use std::sync::Arc;
use std::time::Duration;

use amc_core::model::Source;
use amc_core::model::{AllowedChannel, ChannelSpec, ThreadSpec};
use amc_core::service::CatchingUp;
use amc_core::time::Millis;
use serenity::all::{ChannelId, Message, MessageId, MessagePagination};
use tokio_util::sync::CancellationToken;

use crate::convert;
use crate::shared::{Shared, UNREADABLE};

/// Discord's largest page of messages.
const PAGE: u8 = 100;

/// Which way a fetch walks.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Walk {
    /// Newer than this message.
    After(u64),
    /// Older than this message, down to a time (`None`: as far as the limit allows).
    Before(u64, Option<Millis>),
    /// The newest page, for a channel with nothing stored.
    Latest,
}

/// Where each allowed Discord channel's catch-up starts: its newest stored message when
/// the connection was made. Taken before any event of the new connection is stored, so a
/// live message cannot move the start past the gap.
pub(crate) struct Anchors(Vec<Anchor>);

/// One allowed channel's catch-up: where it starts, and where each of its stored threads
/// starts.
struct Anchor {
    channel: AllowedChannel,
    from: Walk,
    threads: Vec<(ThreadSpec, Walk)>,
}

/// Reads the anchors (the gateway's consumer awaits this before the next event).
pub(crate) async fn anchors(shared: &Shared) -> Anchors {
    let channels = match shared.amc.allowed_channels(Source::Discord).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "could not list channels to catch up on");
            return Anchors(Vec::new());
        }
    };
    let mut out = Vec::new();
    for ch in channels {
        let from = match bounds(shared, &ch).await {
            Some((newest, _)) => Walk::After(newest.0),
            None => Walk::Latest,
        };
        let threads = match shared.amc.thread_anchors(ch.id.clone()).await {
            Ok(t) => t
                .into_iter()
                .map(|(thread, newest)| {
                    let from = newest.and_then(|n| n.parse().ok()).map_or(Walk::Latest, Walk::After);
                    (thread, from)
                })
                .collect(),
            Err(e) => {
                tracing::warn!(error = %e, "could not list threads to catch up on");
                Vec::new()
            }
        };
        out.push(Anchor { channel: ch, from, threads });
    }
    Anchors(out)
}

/// Why a channel's catch-up did not read to its end: a history request failed (a 5xx, a
/// network error, a timeout, or a 429 that serenity's rate limiter did not wait out), or
/// what it read could not be stored.
#[derive(Debug, Clone)]
pub(crate) struct Failed {
    /// What failed, as the person reads it.
    reason: String,
    /// Whether trying again can help: not after a refusal that stays (a 4xx other than
    /// 408 and 429: the token, the channel's permissions).
    transient: bool,
}

impl Failed {
    fn of(e: &serenity::Error) -> Self {
        let transient = match e {
            serenity::Error::Http(serenity::http::HttpError::UnsuccessfulRequest(r)) => {
                let status = r.status_code.as_u16();
                !(400..500).contains(&status) || matches!(status, 408 | 429)
            }
            _ => true,
        };
        Self { reason: format!("reading its history failed: {e}"), transient }
    }

    fn store(e: &amc_core::Error) -> Self {
        Self { reason: format!("storing what was read failed: {e}"), transient: true }
    }
}

/// The wait before a failed channel's next try: 1 s, doubling, at most [`MAX_BACKOFF`].
/// (A 429 from Discord itself is waited out by serenity's rate limiter, for as long as its
/// `Retry-After` says, before it ever reaches here.)
fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1).saturating_mul(1 << attempt.min(9)).min(MAX_BACKOFF)
}

/// The longest wait between two tries of a channel's catch-up.
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// After a (re)connection: every allowed Discord channel, from its anchor on, and then
/// its recent window compared with what is stored. A channel whose history could not be
/// read (a 5xx, a 429, a network error or a timeout) is tried again from the same anchor,
/// on its own, with backoff, until it is read to its end or a newer connection's catch-up
/// takes over; the source's health lists it meanwhile ([`CatchingUp`]). Only once every
/// channel is read does the source count as caught up.
pub(crate) async fn catch_up(shared: Arc<Shared>, anchors: Anchors) {
    let current = shared.begin_catch_up(anchors.0.iter().map(|a| a.channel.platform_id.clone()).collect());
    shared.amc.note_catching_up(Source::Discord, None, None);
    // The threads active now in the guilds of the allowed channels, those created while
    // AMC was away among them (GUILD_CREATE may not have been applied yet).
    let channels: Vec<String> = anchors.0.iter().map(|a| a.channel.platform_id.clone()).collect();
    let complete = shared.learn_active_threads(&channels).await;
    let mut retries = tokio::task::JoinSet::new();
    for anchor in anchors.0 {
        if let Err(failed) = channel(&shared, &anchor).await {
            tracing::warn!(channel = %anchor.channel.id, error = %failed.reason, "Discord catch-up of a channel failed; trying it again");
            retries.spawn(again(shared.clone(), anchor, failed, current.clone()));
        }
    }
    let mut all = complete;
    while let Some(done) = retries.join_next().await {
        all &= done.unwrap_or(false);
    }
    // Only a catch-up that read every channel to its end counts as caught up.
    if all && !current.is_cancelled() {
        shared.amc.note_caught_up(Source::Discord);
    }
}

/// One channel's catch-up: from its anchor on, its recent window, and its threads.
async fn channel(shared: &Shared, anchor: &Anchor) -> Result<(), Failed> {
    let Anchor { channel: ch, from, threads } = anchor;
    let newest = walk(shared, ch, None, *from).await?;
    let mut start = start_of(*from);
    if let Walk::After(anchor) = from {
        // The recheck read the window before the anchor: the read began there.
        start = Some(recheck(shared, ch, *anchor).await?.min(*anchor));
    }
    let mut read = vec![(ch.platform_id.clone(), start, read_to(*from, newest))];
    // Its threads: those stored from their newest message, and those Discord listed
    // that nothing is stored of yet (created while AMC was away) from their newest page.
    let stored: std::collections::HashSet<String> = threads.iter().map(|(t, _)| t.platform_id.clone()).collect();
    let new = shared.threads_of(&ch.platform_id).into_iter().filter(|t| !stored.contains(&t.platform_id));
    for (thread, from) in threads.iter().cloned().chain(new.map(|t| (t, Walk::Latest))) {
        let newest = walk(shared, ch, Some(&thread), from).await?;
        read.push((thread.platform_id, start_of(from), read_to(from, newest)));
    }
    // The check that nothing was missed goes on from here.
    for (id, start, to) in read {
        shared.read_through(&id, start, to);
    }
    shared.caught_up_on(&ch.platform_id);
    Ok(())
}

/// Where a complete forward walk leaves the channel read to: the newest message it read,
/// or its start when there was nothing newer.
fn read_to(from: Walk, newest: Option<u64>) -> Option<u64> {
    match from {
        Walk::After(start) => Some(newest.unwrap_or(start).max(start)),
        Walk::Latest | Walk::Before(..) => newest,
    }
}

/// Where a forward walk began reading every message: after its start; `None` for the
/// newest page, which leaves out whatever came before it.
pub(crate) fn start_of(from: Walk) -> Option<u64> {
    match from {
        Walk::After(start) => Some(start),
        Walk::Latest | Walk::Before(..) => None,
    }
}

/// Tries a channel's catch-up again, with backoff, until it reads to its end (true) or
/// the catch-up it belongs to is superseded by a newer connection's (false).
async fn again(shared: Arc<Shared>, anchor: Anchor, mut failed: Failed, current: CancellationToken) -> bool {
    let id = anchor.channel.id.clone();
    for attempt in 0.. {
        // A newer catch-up owns the channel's entry now; a refusal that stays is not tried
        // again (the entry says why until the next connection).
        if current.is_cancelled() {
            return false;
        }
        let wait = backoff(attempt);
        let entry = CatchingUp {
            channel_id: id.clone(),
            channel: shared.channel_name(&anchor.channel.platform_id),
            reason: failed.reason.clone(),
            attempts: attempt + 1,
            next_try_at: failed.transient.then(|| amc_core::time::now_ms() + wait.as_millis() as i64),
        };
        shared.amc.note_catching_up(Source::Discord, Some(&id), Some(entry));
        if !failed.transient {
            tracing::warn!(channel = %id, error = %failed.reason, "Discord refused the catch-up of a channel; the check tries it from now on");
            // The check reads it from the anchor on, once Discord lets it.
            shared.read_through(&anchor.channel.platform_id, None, start_of(anchor.from));
            shared.caught_up_on(&anchor.channel.platform_id);
            return false;
        }
        tokio::select! {
            () = current.cancelled() => return false,
            () = tokio::time::sleep(wait) => {}
        }
        let read = channel(&shared, &anchor).await;
        if current.is_cancelled() {
            return false;
        }
        match read {
            Ok(()) => {
                tracing::info!(channel = %id, tries = attempt + 2, "Discord catch-up of a channel done");
                shared.amc.note_catching_up(Source::Discord, Some(&id), None);
                return true;
            }
            Err(f) => failed = f,
        }
    }
    false
}

/// A channel the person just approved: what came since its newest stored message, and
/// the history before its oldest, down to the approval's start.
pub(crate) async fn approved(shared: Arc<Shared>, ch: AllowedChannel) {
    forward(&shared, &ch).await;
    // Once per approval: approving again with more history reads again.
    if !shared.take_history(&format!("{}@{:?}", ch.id, ch.visible_from)) {
        return;
    }
    let Some((_, oldest)) = bounds(&shared, &ch).await else { return };
    if ch.visible_from.is_some_and(|from| oldest.1 <= from) {
        return;
    }
    // A failure here is left to the next approval or connection: nothing is lost.
    let _ = walk(&shared, &ch, None, Walk::Before(oldest.0, ch.visible_from)).await;
}

/// The newest and oldest stored messages as (snowflake, time).
async fn bounds(shared: &Shared, ch: &AllowedChannel) -> Option<((u64, Millis), (u64, Millis))> {
    let (newest, oldest) = shared.amc.message_bounds(ch.id.clone()).await.ok().flatten()?;
    let parse = |s: String| s.parse::<u64>().ok().map(|id| (id, convert::snowflake_ms(id)));
    Some((parse(newest)?, parse(oldest)?))
}

async fn forward(shared: &Shared, ch: &AllowedChannel) {
    let walk_from = match bounds(shared, ch).await {
        Some((newest, _)) => Walk::After(newest.0),
        None => Walk::Latest,
    };
    if let Ok(newest) = walk(shared, ch, None, walk_from).await {
        shared.read_through(&ch.platform_id, start_of(walk_from), read_to(walk_from, newest));
    }
}

/// How many messages up to the catch-up's anchor (the newest stored when the connection
/// was made) are read again, to find the edits, deletions and reaction changes made while
/// AMC was away (at most `discord_history_limit`). What came after the anchor the forward
/// walk reads as it is now.
const RECHECK: u32 = 200;

/// Reads the [`RECHECK`] messages up to `anchor` again and brings the store in line: new
/// text and edits are stored, stored messages in that span that Discord no longer has are
/// marked unsent, and reactions whose counts differ are read per emoji and replaced.
/// Returns where the window began (every message from there to the anchor was read);
/// fails when a page could not be read.
async fn recheck(shared: &Shared, ch: &AllowedChannel, anchor: u64) -> Result<u64, Failed> {
    let Ok(channel) = ch.platform_id.parse::<u64>().map(ChannelId::new) else { return Ok(anchor) };
    let total = RECHECK.min(shared.history_limit);
    let mut window: Vec<Message> = Vec::new();
    let mut reached_start = false;
    while (window.len() as u32) < total {
        let want = (total - window.len() as u32).min(u32::from(PAGE)) as u8;
        let before = window.iter().map(|m| m.id.get()).min().unwrap_or(anchor.saturating_add(1));
        let target = Some(MessagePagination::Before(MessageId::new(before)));
        let page = match shared.http.get_messages(channel, target, Some(want)).await {
            Ok(p) => p,
            Err(e) if discord_code(&e) == Some(UNKNOWN_CHANNEL) => {
                shared.gone(vec![channel], "Discord deleted this channel".into()).await;
                return Ok(anchor);
            }
            Err(e) if discord_code(&e) == Some(WRONG_CHANNEL_TYPE) => return Ok(anchor),
            Err(e) if discord_code(&e) == Some(MISSING_ACCESS) => {
                if !shared.in_known_guild(channel) {
                    shared.gone(vec![channel], UNREADABLE.into()).await;
                }
                return Ok(anchor);
            }
            Err(e) => {
                tracing::warn!(channel = %ch.id, error = %e, "could not read Discord history again");
                return Err(Failed::of(&e));
            }
        };
        reached_start = page.len() < usize::from(want);
        window.extend(page);
        if reached_start {
            break;
        }
    }
    // The span the window covers, up to the anchor: every message Discord has in it was
    // listed.
    let hi = anchor;
    let lo = if reached_start { 0 } else { window.iter().map(|m| m.id.get()).min().unwrap_or(hi) };
    let stored = match shared.amc.stored_since(ch.id.clone(), convert::snowflake_ms(lo).saturating_sub(1_000)).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(channel = %ch.id, error = %e, "could not compare Discord history");
            return Err(Failed::store(&e));
        }
    };
    let stored: std::collections::HashMap<String, Vec<amc_core::model::Reaction>> = stored.into_iter().collect();
    let listed: std::collections::HashSet<String> = window.iter().map(|m| m.id.to_string()).collect();
    let deleted: Vec<String> = stored
        .keys()
        .filter(|id| id.parse::<u64>().is_ok_and(|n| (lo..=hi).contains(&n)) && !listed.contains(*id))
        .cloned()
        .collect();
    let mut page = Vec::new();
    for m in window.iter().filter(|m| convert::is_conversation(m.kind)) {
        let mut msg = shared.convert(m);
        let known = stored.get(&msg.platform_id).cloned().unwrap_or_default();
        match reactions(shared, m, &known).await {
            Some(now) if now.is_empty() => {
                if let Err(e) = shared.amc.clear_reactions(Source::Discord, msg.platform_id.clone(), None).await {
                    tracing::warn!(error = %e, "could not clear reactions");
                }
            }
            Some(now) => msg.reactions = now,
            None => {}
        }
        page.push(msg);
    }
    let spec = ChannelSpec { platform_id: ch.platform_id.clone(), name: String::new(), kind: ch.kind, readers: None };
    if let Err(e) = shared.amc.ingest(Source::Discord, spec, page, None).await {
        tracing::warn!(error = %e, "could not store Discord history");
        return Err(Failed::store(&e));
    }
    if !deleted.is_empty() {
        tracing::info!(channel = %ch.id, count = deleted.len(), "messages deleted while AMC was away");
        if let Err(e) = shared.amc.mark_unsent(Source::Discord, deleted).await {
            tracing::warn!(error = %e, "could not record deleted Discord messages");
            return Err(Failed::store(&e));
        }
    }
    Ok(lo)
}

/// A message's reactions as Discord has them now, when they differ from `known`: the
/// counts per emoji are compared, and each emoji whose count differs is read in full
/// (who reacted). `None` when nothing changed or they could not be read.
async fn reactions(
    shared: &Shared,
    m: &Message,
    known: &[amc_core::model::Reaction],
) -> Option<Vec<amc_core::model::Reaction>> {
    let count = |emoji: &str| known.iter().filter(|r| r.emoji == emoji).count() as u64;
    let now: Vec<(String, u64, &serenity::all::ReactionType)> =
        m.reactions.iter().map(|r| (convert::emoji(&r.reaction_type), r.count, &r.reaction_type)).collect();
    let same =
        now.iter().all(|(e, n, _)| count(e) == *n) && known.iter().all(|r| now.iter().any(|(e, _, _)| *e == r.emoji));
    if same {
        return None;
    }
    let selves = shared.selves();
    let mut out = Vec::new();
    for (emoji, n, kind) in now {
        if count(&emoji) == n {
            out.extend(known.iter().filter(|r| r.emoji == emoji).cloned());
            continue;
        }
        let users = shared.http.get_reaction_users(m.channel_id, m.id, kind, 100, None).await.ok()?;
        out.extend(
            users
                .iter()
                .map(|u| amc_core::model::Reaction { emoji: emoji.clone(), sender: convert::sender(u, None, selves) }),
        );
    }
    Some(out)
}

/// Discord's JSON error code for an unknown channel
/// (<https://discord.com/developers/docs/topics/opcodes-and-status-codes#json>).
pub(crate) const UNKNOWN_CHANNEL: isize = 10003;
/// Discord's JSON error code for an action a channel's type does not allow (reading a
/// forum's messages: its posts are threads).
const WRONG_CHANNEL_TYPE: isize = 50024;
/// Discord's JSON error code for a channel the bot may not read.
const MISSING_ACCESS: isize = 50001;

/// The JSON error code of a refusal from Discord, if it was one.
fn discord_code(e: &serenity::Error) -> Option<isize> {
    match e {
        serenity::Error::Http(serenity::http::HttpError::UnsuccessfulRequest(r)) => Some(r.error.code),
        _ => None,
    }
}

/// Reads `ch`'s history from `from`, or that of one of its threads: the id of the newest
/// message read (of any kind), if any. Fails when a page could not be read or stored.
pub(crate) async fn walk(
    shared: &Shared,
    ch: &AllowedChannel,
    thread: Option<&ThreadSpec>,
    mut from: Walk,
) -> Result<Option<u64>, Failed> {
    let id = thread.map_or(&ch.platform_id, |t| &t.platform_id);
    let Ok(channel) = id.parse::<u64>().map(ChannelId::new) else { return Ok(None) };
    let mut fetched: u32 = 0;
    let mut newest: Option<u64> = None;
    while fetched < shared.history_limit {
        let want = (shared.history_limit - fetched).min(u32::from(PAGE)) as u8;
        let target = match from {
            Walk::After(id) => Some(MessagePagination::After(MessageId::new(id))),
            Walk::Before(id, _) => Some(MessagePagination::Before(MessageId::new(id))),
            Walk::Latest => None,
        };
        let mut page = match shared.http.get_messages(channel, target, Some(want)).await {
            Ok(p) => p,
            Err(e) => {
                // 10003 Unknown Channel: deleted while AMC was away (a thread's messages
                // stay, as a deleted message's do).
                if discord_code(&e) == Some(UNKNOWN_CHANNEL) {
                    if thread.is_none() {
                        shared.gone(vec![channel], "Discord deleted this channel".into()).await;
                    }
                    return Ok(newest);
                }
                // A forum has no messages of its own: its posts are threads.
                if discord_code(&e) == Some(WRONG_CHANNEL_TYPE) {
                    return Ok(newest);
                }
                // 50001 Missing Access: the bot may no longer read it; nothing more can be
                // read. A channel of a server the bot is in now follows the gateway's
                // permission events (an answer given before a change must not undo it);
                // one of a server the bot left while away is marked here.
                if discord_code(&e) == Some(MISSING_ACCESS) {
                    if thread.is_none() && !shared.in_known_guild(channel) {
                        shared.gone(vec![channel], UNREADABLE.into()).await;
                    }
                    return Ok(newest);
                }
                tracing::warn!(channel = %ch.id, error = %e, "could not fetch Discord history");
                return Err(Failed::of(&e));
            }
        };
        let full = page.len() == usize::from(want);
        page.sort_by_key(|m| m.id);
        newest = newest.max(page.last().map(|m| m.id.get()));
        if let Walk::Before(_, Some(until)) = from {
            page.retain(|m| convert::snowflake_ms(m.id.get()) >= until);
        }
        let (Some(first), Some(last)) = (page.first().map(|m| m.id.get()), page.last().map(|m| m.id.get())) else {
            return Ok(newest);
        };
        fetched += page.len() as u32;
        store(shared, ch, thread, &page).await?;
        from = match from {
            Walk::After(_) if full => Walk::After(last),
            Walk::Before(_, until) if full && page.len() == usize::from(want) => Walk::Before(first, until),
            _ => return Ok(newest),
        };
    }
    tracing::info!(channel = %ch.id, limit = shared.history_limit, "stopped fetching history at the limit");
    Ok(newest)
}

async fn store(
    shared: &Shared,
    ch: &AllowedChannel,
    thread: Option<&ThreadSpec>,
    page: &[Message],
) -> Result<(), Failed> {
    // Messages read through REST carry no guild: the channel is the one already stored,
    // and its name stays as it is (an empty name keeps the stored one).
    let spec = ChannelSpec { platform_id: ch.platform_id.clone(), name: String::new(), kind: ch.kind, readers: None };
    let messages = page.iter().filter(|m| convert::is_conversation(m.kind)).map(|m| shared.convert(m)).collect();
    let stored = match thread {
        Some(t) => shared.amc.ingest_thread(Source::Discord, spec, t.clone(), messages).await.map(|_| ()),
        None => shared.amc.ingest(Source::Discord, spec, messages, None).await.map(|_| ()),
    };
    stored.map_err(|e| {
        tracing::warn!(error = %e, "could not store Discord history");
        Failed::store(&e)
    })
}
