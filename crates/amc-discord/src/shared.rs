//! What the gateway's event handler and the history fetches share: the core, Discord's
//! HTTP client, and what the bot learned of guilds, channels, threads and names.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use amc_core::model::{ChannelSpec, ThreadSpec};
use amc_core::model::{IncomingMessage, Source};
use amc_core::service::{Amc, SourceState, SourceStatus};
use serenity::all::{ChannelId, GuildChannel, GuildId, Message};

use crate::convert::{self, Selves};

/// How to turn on the Message Content intent.
pub const CONTENT_INTENT_FIX: &str = "Discord sends the bot messages without their text: turn on \
    \"Message Content Intent\" in the Discord Developer Portal (your application → Bot → Privileged \
    Gateway Intents), then restart AMC";

/// Why a channel the bot may not read is unavailable, and the fix.
pub(crate) const UNREADABLE: &str = "AMC cannot read this channel: give the bot View Channel and Read Message History \
                          here (Discord: the channel's settings → Permissions)";

/// Messages from others that arrive empty in a row before AMC concludes the intent is off.
const EMPTY_IN_A_ROW: u32 = 3;

/// What the event handler shares with the history fetches.
pub(crate) struct Shared {
    pub(crate) amc: Amc,
    pub(crate) http: Arc<serenity::http::Http>,
    pub(crate) history_limit: u32,
    pub(crate) selves: Mutex<Selves>,
    pub(crate) guild_names: Mutex<HashMap<GuildId, String>>,
    pub(crate) channel_names: Mutex<HashMap<ChannelId, String>>,
    /// Each guild's channels, as its GUILD_CREATE and channel events listed them.
    pub(crate) guild_channels: Mutex<HashMap<GuildId, HashSet<ChannelId>>>,
    /// What each guild grants the bot, for the channels it may read.
    pub(crate) access: Mutex<HashMap<GuildId, convert::GuildAccess>>,
    /// Threads (and forum posts) known: each one's parent channel and name.
    pub(crate) threads: Mutex<HashMap<ChannelId, (ChannelId, String)>>,
    /// Guild channels AMC asked Discord about that are no threads (voice channels' text,
    /// channels not followed), so it asks once.
    pub(crate) not_threads: Mutex<HashSet<ChannelId>>,
    /// Channel and role names, for mentions in messages' text.
    pub(crate) mention_names: Mutex<convert::MentionNames>,
    pub(crate) empty_in_a_row: AtomicU32,
    /// Channels whose earlier history was fetched since AMC started.
    pub(crate) history_done: Mutex<HashSet<String>>,
    /// The catch-up under way: cancelled when a newer connection's begins, which stops
    /// the older one's retries.
    pub(crate) catch_up: Mutex<tokio_util::sync::CancellationToken>,
    /// The channels the catch-up under way has not read to its end yet: the check leaves
    /// them to it.
    pub(crate) unread: Mutex<HashSet<String>>,
    /// How far each channel and thread (by platform id) is known read: every message up
    /// to this id was read through REST since AMC started, and is stored. The check reads
    /// on from here when Discord's `last_message_id` is past it.
    pub(crate) read: Mutex<HashMap<String, u64>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    pub(crate) fn new(
        amc: Amc,
        http: Arc<serenity::http::Http>,
        history_limit: u32,
        person: Option<serenity::all::UserId>,
    ) -> Self {
        Self {
            amc,
            http,
            history_limit,
            selves: Mutex::new(Selves { bot: None, person }),
            guild_names: Mutex::default(),
            channel_names: Mutex::default(),
            guild_channels: Mutex::default(),
            access: Mutex::default(),
            threads: Mutex::default(),
            not_threads: Mutex::default(),
            mention_names: Mutex::default(),
            empty_in_a_row: AtomicU32::new(0),
            history_done: Mutex::default(),
            catch_up: Mutex::default(),
            unread: Mutex::default(),
            read: Mutex::default(),
        }
    }

    /// The names mentions in messages' text read as.
    pub(crate) fn mention_names(&self) -> std::sync::MutexGuard<'_, convert::MentionNames> {
        lock(&self.mention_names)
    }

    /// A message as the store takes it, its mentions named.
    pub(crate) fn convert(&self, m: &Message) -> IncomingMessage {
        let selves = self.selves();
        convert::message(m, selves, &self.mention_names())
    }

    pub(crate) fn selves(&self) -> Selves {
        *lock(&self.selves)
    }

    pub(crate) fn set_status(&self, state: SourceState, reason: Option<String>) {
        if let Some(r) = &reason {
            tracing::info!(?state, reason = %r, "Discord");
        }
        self.amc.set_source_status(Source::Discord, SourceStatus::new(state, reason));
    }

    /// The channel a message belongs to, named from what the gateway told AMC; `None`
    /// for a server channel AMC does not follow (a thread, a forum post, a voice
    /// channel's text), which GUILD_CREATE and CHANNEL_CREATE did not register.
    pub(crate) fn spec_for(&self, m: &Message) -> Option<ChannelSpec> {
        let platform_id = m.channel_id.to_string();
        let mut names = lock(&self.channel_names);
        if m.guild_id.is_some() {
            let name = names.get(&m.channel_id).cloned()?;
            return Some(ChannelSpec { platform_id, name, kind: amc_core::model::ChannelKind::Group, readers: None });
        }
        // Someone's DM with the bot (the person's own too: they are its other side).
        if self.selves().bot != Some(m.author.id) {
            let spec = convert::dm_channel(&platform_id, &m.author);
            names.insert(m.channel_id, spec.name.clone());
            return Some(spec);
        }
        // The bot's own message in a DM carries only the bot: the name the other person
        // gave the channel stays (empty keeps the stored one).
        let name = names.get(&m.channel_id).cloned().unwrap_or_default();
        Some(ChannelSpec { platform_id, name, kind: amc_core::model::ChannelKind::Dm, readers: None })
    }

    /// Records a thread (or forum post) and its parent.
    pub(crate) fn note_thread(&self, t: &GuildChannel) {
        if let Some(parent) = t.parent_id {
            lock(&self.threads).insert(t.id, (parent, t.name.clone()));
            self.mention_names().channels.insert(t.id.get(), t.name.clone());
        }
    }

    /// A channel's name as AMC shows it (its id when it is not known yet).
    pub(crate) fn channel_name(&self, platform_id: &str) -> String {
        let id = platform_id.parse::<u64>().ok().map(ChannelId::new);
        id.and_then(|id| lock(&self.channel_names).get(&id).cloned()).unwrap_or_else(|| platform_id.to_owned())
    }

    /// Begins a catch-up of `channels` (platform ids): the one before it (and its
    /// retries) stops.
    pub(crate) fn begin_catch_up(&self, channels: HashSet<String>) -> tokio_util::sync::CancellationToken {
        let fresh = tokio_util::sync::CancellationToken::new();
        std::mem::replace(&mut *lock(&self.catch_up), fresh.clone()).cancel();
        *lock(&self.unread) = channels;
        fresh
    }

    /// The catch-up read a channel to its end.
    pub(crate) fn caught_up_on(&self, channel: &str) {
        lock(&self.unread).remove(channel);
    }

    /// Whether the catch-up under way still owns a channel.
    pub(crate) fn catching_up_on(&self, channel: &str) -> bool {
        lock(&self.unread).contains(channel)
    }

    /// A channel or thread was read through REST from after `from` to `to`, nothing left
    /// out (`from` is `None` when the read does not say where it began: the newest page).
    /// It moves how far the channel is known read only when it joins on to it: a read
    /// that began past that point leaves the gap between for the check. A channel not
    /// known read yet counts as read to `to` (the store holds what came before).
    pub(crate) fn read_through(&self, channel: &str, from: Option<u64>, to: Option<u64>) {
        let Some(to) = to else { return };
        let mut read = lock(&self.read);
        let at = joined(read.get(channel).copied(), from, to);
        read.insert(channel.to_owned(), at);
    }

    /// How far a channel or thread is known read.
    pub(crate) fn read_until(&self, channel: &str) -> Option<u64> {
        lock(&self.read).get(channel).copied()
    }

    /// Asks Discord for the active threads of the guilds these channels are in, and notes
    /// them. False when Discord could not be asked.
    pub(crate) async fn learn_active_threads(&self, channels: &[String]) -> bool {
        let mut guilds = HashSet::new();
        for id in channels.iter().filter_map(|c| c.parse::<u64>().ok()).map(ChannelId::new) {
            let known = lock(&self.guild_channels).iter().find(|(_, set)| set.contains(&id)).map(|(g, _)| *g);
            match known {
                Some(g) => {
                    guilds.insert(g);
                }
                None => match self.http.get_channel(id).await {
                    Ok(serenity::all::Channel::Guild(c)) => {
                        guilds.insert(c.guild_id);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(channel = %id, error = %e, "could not ask Discord about a channel");
                    }
                },
            }
        }
        let mut ok = true;
        for guild in guilds {
            match self.http.get_guild_active_threads(guild).await {
                Ok(data) => data.threads.iter().for_each(|t| self.note_thread(t)),
                // The bot left the guild: its channels say so already.
                Err(serenity::Error::Http(serenity::http::HttpError::UnsuccessfulRequest(r)))
                    if matches!(r.status_code.as_u16(), 403 | 404) => {}
                Err(e) => {
                    tracing::warn!(guild = %guild, error = %e, "could not list Discord's active threads");
                    ok = false;
                }
            }
        }
        ok
    }

    /// Whether the channel belongs to a server whose GUILD_CREATE this session applied:
    /// its permissions then follow the gateway's events.
    pub(crate) fn in_known_guild(&self, channel: ChannelId) -> bool {
        lock(&self.guild_channels).values().any(|set| set.contains(&channel))
    }

    /// The threads Discord listed in a channel (by the channel's platform id).
    pub(crate) fn threads_of(&self, channel: &str) -> Vec<ThreadSpec> {
        lock(&self.threads)
            .iter()
            .filter(|(_, (parent, _))| parent.to_string() == channel)
            .map(|(id, (_, name))| ThreadSpec { platform_id: id.to_string(), name: name.clone() })
            .collect()
    }

    /// The parent channel and the thread of a message written in a thread, asking
    /// Discord about a thread AMC has not heard of (one created while it was away).
    pub(crate) async fn thread_of(&self, m: &Message) -> Option<(ChannelSpec, ThreadSpec)> {
        m.guild_id?;
        let known = lock(&self.threads).get(&m.channel_id).cloned();
        let (parent, name) = match known {
            Some(k) => k,
            None if lock(&self.not_threads).contains(&m.channel_id) => return None,
            None => match self.http.get_channel(m.channel_id).await {
                Ok(serenity::all::Channel::Guild(t)) if t.thread_metadata.is_some() => {
                    self.note_thread(&t);
                    (t.parent_id?, t.name)
                }
                Ok(_) => {
                    lock(&self.not_threads).insert(m.channel_id);
                    return None;
                }
                Err(e) => {
                    tracing::warn!(channel = %m.channel_id, error = %e, "could not ask Discord about a channel");
                    return None;
                }
            },
        };
        let parent_name = lock(&self.channel_names).get(&parent).cloned()?;
        let spec = ChannelSpec {
            platform_id: parent.to_string(),
            name: parent_name,
            kind: amc_core::model::ChannelKind::Group,
            readers: None,
        };
        Some((spec, ThreadSpec { platform_id: m.channel_id.to_string(), name }))
    }

    /// Stores a message: in its channel, or in its thread's parent channel.
    pub(crate) async fn store_message(&self, m: &Message) {
        if !convert::is_conversation(m.kind) {
            return;
        }
        let known_channel = lock(&self.channel_names).contains_key(&m.channel_id);
        if !known_channel && let Some((spec, thread)) = self.thread_of(m).await {
            let msg = self.convert(m);
            if let Err(e) = self.amc.ingest_thread(Source::Discord, spec, thread, vec![msg]).await {
                tracing::warn!(error = %e, "could not store a Discord thread's message");
            }
            return;
        }
        if let Some(spec) = self.spec_for(m) {
            let msg = self.convert(m);
            self.store(spec, vec![msg]).await;
        }
    }

    /// Records channels Discord no longer has for the bot.
    pub(crate) async fn gone(&self, channels: Vec<ChannelId>, why: String) {
        let ids = channels.iter().map(ToString::to_string).collect();
        if let Err(e) = self.amc.mark_channels_gone(Source::Discord, ids, why).await {
            tracing::warn!(error = %e, "could not record Discord channels as gone");
        }
    }

    pub(crate) async fn store(&self, spec: ChannelSpec, messages: Vec<IncomingMessage>) {
        if let Err(e) = self.amc.ingest(Source::Discord, spec, messages, None).await {
            tracing::warn!(error = %e, "could not store Discord messages");
        }
    }

    pub(crate) async fn register_channels(&self, guild: &str, channels: Vec<&GuildChannel>) {
        // A channel the bot cannot read is not offered; one already known is marked.
        let channels: Vec<&GuildChannel> = channels.into_iter().filter(|c| convert::is_text_channel(c.kind)).collect();
        for c in &channels {
            lock(&self.guild_channels).entry(c.guild_id).or_default().insert(c.id);
        }
        let (readable, hidden): (Vec<&GuildChannel>, Vec<&GuildChannel>) = channels.into_iter().partition(|c| {
            lock(&self.access)
                .get(&c.guild_id)
                .is_none_or(|a| convert::can_read(convert::permissions_in(a, &c.permission_overwrites)))
        });
        if !hidden.is_empty() {
            self.gone(hidden.iter().map(|c| c.id).collect(), UNREADABLE.into()).await;
        }
        let batches: Vec<_> = readable
            .into_iter()
            .map(|c| {
                let spec = convert::guild_channel(guild, c);
                lock(&self.channel_names).insert(c.id, spec.name.clone());
                (spec, Vec::new())
            })
            .collect();
        if batches.is_empty() {
            return;
        }
        if let Err(e) = self.amc.ingest_many(Source::Discord, batches, None).await {
            tracing::warn!(error = %e, "could not store Discord channels");
        }
    }

    /// The Message Content intent check: text-less messages from others, in a row,
    /// where the text should have come.
    pub(crate) fn check_content(&self, m: &Message) {
        let selves = self.selves();
        if selves.contains_id(m.author.id) || m.author.bot || !convert::is_conversation(m.kind) {
            return;
        }
        // Text comes without the intent in DMs and when the bot is mentioned; forwards and
        // polls have none of their own.
        let exempt = m.guild_id.is_none()
            || selves.bot.is_some_and(|b| m.mentions.iter().any(|u| u.id == b))
            || !m.message_snapshots.is_empty()
            || m.poll.is_some();
        let empty =
            m.content.is_empty() && m.attachments.is_empty() && m.embeds.is_empty() && m.sticker_items.is_empty();
        if empty && !exempt {
            if self.empty_in_a_row.fetch_add(1, Ordering::SeqCst) + 1 == EMPTY_IN_A_ROW {
                self.set_status(SourceState::Degraded, Some(CONTENT_INTENT_FIX.into()));
            }
        } else if !m.content.is_empty() && self.empty_in_a_row.swap(0, Ordering::SeqCst) >= EMPTY_IN_A_ROW {
            self.set_status(SourceState::Connected, None);
        }
    }

    /// Whether the Message Content check currently finds the intent off.
    pub(crate) fn content_missing(&self) -> bool {
        self.empty_in_a_row.load(Ordering::SeqCst) >= EMPTY_IN_A_ROW
    }

    pub(crate) fn take_history(&self, channel_id: &str) -> bool {
        lock(&self.history_done).insert(channel_id.to_owned())
    }
}

/// How far a channel is known read after a read from after `from` to `to`, when it was
/// known read to `at` before (see [`Shared::read_through`]).
fn joined(at: Option<u64>, from: Option<u64>, to: u64) -> u64 {
    match at {
        Some(at) if from.is_some_and(|f| f <= at) => at.max(to),
        Some(at) => at,
        None => to,
    }
}

impl Selves {
    fn contains_id(&self, id: serenity::all::UserId) -> bool {
        self.bot == Some(id) || self.person == Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::joined;

    #[test]
    fn a_read_moves_how_far_a_channel_is_read_only_when_it_joins_on() {
        // Read to 10; a read after 8 to 20 joins on.
        assert_eq!(joined(Some(10), Some(8), 20), 20);
        assert_eq!(joined(Some(10), Some(10), 20), 20);
        // A read that began past 10 (the catch-up from a newer stored message) leaves the
        // messages between 10 and 15 to the check.
        assert_eq!(joined(Some(10), Some(15), 20), 10);
        // The newest page says nothing of what came before it.
        assert_eq!(joined(Some(10), None, 20), 10);
        // Never backwards.
        assert_eq!(joined(Some(30), Some(8), 20), 30);
        // Not known read yet: the store holds what came before.
        assert_eq!(joined(None, Some(15), 20), 20);
        assert_eq!(joined(None, None, 20), 20);
    }
}
