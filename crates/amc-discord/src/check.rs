//! The check that nothing was missed, the Discord counterpart of the chat.db sweep. The
//! gateway can lose a message without any reconnection following (a dispatch Discord
//! never sent, a live message that could not be stored); the catch-up after each
//! (re)connection cannot see that. So every `discord_check_seconds` AMC asks Discord
//! for the `last_message_id` of each followed channel and thread (two requests per
//! server, one per DM) and, where it is past what AMC has read through, reads the
//! difference, stored idempotently by message id.
//! <https://discord.com/developers/docs/resources/channel#channel-object>: a channel's
//! `last_message_id` "may not point to an existing or valid message": one that was
//! deleted, or one AMC does not keep (a pin notice); a check that finds nothing newer
//! takes it as read.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use amc_core::model::{AllowedChannel, ChannelKind, Source, ThreadSpec};
use serenity::all::{Channel, ChannelId, GuildId};
use tokio_util::sync::CancellationToken;

use crate::history::{self, Walk};
use crate::shared::{Shared, lock};

/// Runs the check every `period` until `stop`.
pub(crate) async fn run(shared: Arc<Shared>, period: Duration, stop: CancellationToken) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        // Before the first READY, the bot's own messages cannot be told from others'.
        if shared.selves().bot.is_none() {
            continue;
        }
        let read = check(&shared).await;
        tracing::debug!(channels = read, "checked Discord for messages past what was read");
    }
}

/// One check: how many channels and threads had messages past what was read, and were
/// read on.
async fn check(shared: &Shared) -> usize {
    let channels = match shared.amc.allowed_channels(Source::Discord).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "could not list the Discord channels to check");
            return 0;
        }
    };
    let latest = latest(shared, &channels).await;
    let mut found = 0;
    for ch in &channels {
        // The catch-up under way reads this one to its end itself.
        if shared.catching_up_on(&ch.platform_id) {
            continue;
        }
        if let Some(last) = latest.channels.get(&ch.platform_id) {
            found += usize::from(follow(shared, ch, None, *last).await);
        }
        // Its threads Discord listed as active (noted in `Shared` as they were listed).
        for thread in shared.threads_of(&ch.platform_id) {
            if let Some(last) = latest.threads.get(&thread.platform_id) {
                found += usize::from(follow(shared, ch, Some(&thread), *last).await);
            }
        }
    }
    found
}

/// Discord's `last_message_id` of each followed channel, and of each active thread in
/// their servers (`None`: no message ever).
#[derive(Default)]
struct Latest {
    channels: HashMap<String, Option<u64>>,
    threads: HashMap<String, Option<u64>>,
}

/// Asks Discord for the newest message id of each channel: a server's channels and its
/// active threads in one request each, a DM (or a channel of a server the gateway has
/// not described) on its own. A channel Discord could not be asked about is left out.
async fn latest(shared: &Shared, channels: &[AllowedChannel]) -> Latest {
    let mut out = Latest::default();
    let mut guilds: HashSet<GuildId> = HashSet::new();
    let mut alone = Vec::new();
    for ch in channels {
        let Ok(id) = ch.platform_id.parse::<u64>().map(ChannelId::new) else { continue };
        let guild = lock(&shared.guild_channels).iter().find(|(_, set)| set.contains(&id)).map(|(g, _)| *g);
        match guild {
            Some(g) if ch.kind == ChannelKind::Group => {
                guilds.insert(g);
            }
            _ => alone.push(id),
        }
    }
    let last = |id: Option<serenity::all::MessageId>| id.map(|m| m.get());
    for id in alone {
        match shared.http.get_channel(id).await {
            Ok(Channel::Private(c)) => {
                out.channels.insert(c.id.to_string(), last(c.last_message_id));
            }
            Ok(Channel::Guild(c)) => {
                guilds.insert(c.guild_id);
                out.channels.insert(c.id.to_string(), last(c.last_message_id));
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(channel = %id, error = %e, "could not ask Discord about a channel to check"),
        }
    }
    for guild in guilds {
        match shared.http.get_channels(guild).await {
            Ok(list) => out.channels.extend(list.iter().map(|c| (c.id.to_string(), last(c.last_message_id)))),
            Err(e) => tracing::warn!(guild = %guild, error = %e, "could not list a Discord server's channels to check"),
        }
        match shared.http.get_guild_active_threads(guild).await {
            Ok(data) => {
                for t in data.threads.iter().filter(|t| t.parent_id.is_some()) {
                    shared.note_thread(t);
                    out.threads.insert(t.id.to_string(), last(t.last_message_id));
                }
            }
            Err(e) => tracing::warn!(guild = %guild, error = %e, "could not list a Discord server's threads to check"),
        }
    }
    out
}

/// Reads a channel (or thread) on from where it is known read when Discord's newest
/// message is past it; true when it was. A thread not known read yet (started since the
/// catch-up) is read from its start; a channel not known read yet (its approval's read
/// failed) from its newest stored message.
async fn follow(shared: &Shared, ch: &AllowedChannel, thread: Option<&ThreadSpec>, last: Option<u64>) -> bool {
    let id = thread.map_or(&ch.platform_id, |t| &t.platform_id);
    let Some(last) = last else { return false };
    let from = match shared.read_until(id) {
        Some(read) if last <= read => return false,
        Some(read) => Walk::After(read),
        // A thread's id is that of its first message or earlier (a forum post's first
        // message has the thread's id).
        None if thread.is_some() => Walk::After(id.parse::<u64>().unwrap_or(1).saturating_sub(1)),
        None => match shared.amc.message_bounds(ch.id.clone()).await {
            Ok(Some((newest, _))) => match newest.parse::<u64>() {
                Ok(n) if last <= n => {
                    shared.read_through(id, None, Some(n));
                    return false;
                }
                Ok(n) => Walk::After(n),
                Err(_) => Walk::Latest,
            },
            Ok(None) => Walk::Latest,
            Err(e) => {
                tracing::warn!(channel = %ch.id, error = %e, "could not check a Discord channel");
                return false;
            }
        },
    };
    match history::walk(shared, ch, thread, from).await {
        Ok(newest) => {
            // Nothing newer than what was read: Discord's newest is deleted, or a message
            // AMC does not keep.
            let to = match (from, newest) {
                (_, Some(n)) => n,
                (Walk::After(read), None) => last.max(read),
                (_, None) => last,
            };
            tracing::debug!(channel = %ch.id, thread = ?thread.map(|t| &t.platform_id), "checked on Discord");
            shared.read_through(id, history::start_of(from), Some(to));
            true
        }
        Err(_) => false,
    }
}
