//! The bot on Discord's gateway: what it sees goes to the core (`Amc::ingest`), and every
//! (re)connection is followed by a history fetch so nothing sent meanwhile is missed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use amc_core::events::Event;
use amc_core::model::{ChannelSpec, ReactionChange, ThreadSpec};
use amc_core::model::{ChannelState, IncomingMessage, Source};
use amc_core::service::{Amc, SourceState, SourceStatus};
use serenity::all::{
    ChannelId, Context, EventHandler, GatewayIntents, Guild, GuildChannel, GuildId, Message, MessageId, MessageType,
    MessageUpdateEvent, Reaction, Ready, ResumedEvent, ShardStageUpdateEvent, ThreadListSyncEvent, UnavailableGuild,
};
use serenity::async_trait;
use serenity::gateway::ConnectionStage;
use tokio_util::sync::CancellationToken;

use crate::convert::{self, Selves};
use crate::history;

/// The intents the bot asks for: guild messages, DMs, their text, and reactions.
pub fn intents() -> GatewayIntents {
    GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
        | GatewayIntents::GUILD_MESSAGE_REACTIONS
        | GatewayIntents::DIRECT_MESSAGE_REACTIONS
}

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
    pub amc: Amc,
    pub http: Arc<serenity::http::Http>,
    pub history_limit: u32,
    selves: Mutex<Selves>,
    guild_names: Mutex<HashMap<GuildId, String>>,
    channel_names: Mutex<HashMap<ChannelId, String>>,
    /// Each guild's channels, as its GUILD_CREATE and channel events listed them.
    guild_channels: Mutex<HashMap<GuildId, HashSet<ChannelId>>>,
    /// What each guild grants the bot, for the channels it may read.
    access: Mutex<HashMap<GuildId, convert::GuildAccess>>,
    /// Threads (and forum posts) known: each one's parent channel and name.
    threads: Mutex<HashMap<ChannelId, (ChannelId, String)>>,
    /// Guild channels AMC asked Discord about that are no threads (voice channels' text,
    /// channels not followed), so it asks once.
    not_threads: Mutex<HashSet<ChannelId>>,
    /// Channel and role names, for mentions in messages' text.
    mention_names: Mutex<convert::MentionNames>,
    empty_in_a_row: AtomicU32,
    /// Channels whose earlier history was fetched since AMC started.
    history_done: Mutex<HashSet<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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
            return Some(ChannelSpec { platform_id, name, kind: amc_core::model::ChannelKind::Group });
        }
        if !self.selves().contains_id(m.author.id) {
            let spec = convert::dm_channel(&platform_id, &m.author);
            names.insert(m.channel_id, spec.name.clone());
            return Some(spec);
        }
        // The bot's own message in a DM carries only the bot: the name the other person
        // gave the channel stays (empty keeps the stored one).
        let name = names.get(&m.channel_id).cloned().unwrap_or_default();
        Some(ChannelSpec { platform_id, name, kind: amc_core::model::ChannelKind::Dm })
    }

    /// Records a thread (or forum post) and its parent.
    fn note_thread(&self, t: &GuildChannel) {
        if let Some(parent) = t.parent_id {
            lock(&self.threads).insert(t.id, (parent, t.name.clone()));
            self.mention_names().channels.insert(t.id.get(), t.name.clone());
        }
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
    async fn thread_of(&self, m: &Message) -> Option<(ChannelSpec, ThreadSpec)> {
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
        };
        Some((spec, ThreadSpec { platform_id: m.channel_id.to_string(), name }))
    }

    /// Stores a message: in its channel, or in its thread's parent channel.
    async fn store_message(&self, m: &Message) {
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

    async fn store(&self, spec: ChannelSpec, messages: Vec<IncomingMessage>) {
        if let Err(e) = self.amc.ingest(Source::Discord, spec, messages, None).await {
            tracing::warn!(error = %e, "could not store Discord messages");
        }
    }

    async fn register_channels(&self, guild: &str, channels: Vec<&GuildChannel>) {
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
    fn check_content(&self, m: &Message) {
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
    fn content_missing(&self) -> bool {
        self.empty_in_a_row.load(Ordering::SeqCst) >= EMPTY_IN_A_ROW
    }

    pub(crate) fn take_history(&self, channel_id: &str) -> bool {
        lock(&self.history_done).insert(channel_id.to_owned())
    }
}

impl Selves {
    fn contains_id(&self, id: serenity::all::UserId) -> bool {
        self.bot == Some(id) || self.person == Some(id)
    }
}

/// What the gateway delivered, in the order it delivered it.
pub(crate) enum Incoming {
    Ready(Box<Ready>),
    Resumed,
    Disconnected,
    Guild(Box<Guild>),
    /// A guild deleted, or the bot removed from it (not an outage).
    GuildGone(GuildId),
    Channel(Box<GuildChannel>),
    ChannelGone(ChannelId),
    /// A thread or forum post created, changed, or listed (THREAD_LIST_SYNC).
    Threads(Vec<GuildChannel>),
    Message(Box<Message>),
    Edit(Box<MessageUpdateEvent>),
    Deleted(Vec<MessageId>),
    Reaction(Box<Reaction>, bool),
    /// All reactions of a message taken away, or all with one emoji.
    ReactionsCleared(MessageId, Option<String>),
}

/// serenity's event handler. serenity runs each event on a task of its own; the handler
/// only queues it, before its first await, so that on the bot's single-threaded runtime
/// (whose tasks start in the order they were spawned) the queue holds the events in the
/// gateway's order. [`consume`] then applies them one at a time: an edit never lands
/// before its message, nor a reaction's removal before its addition.
pub(crate) struct Handler {
    pub queue: tokio::sync::mpsc::UnboundedSender<Incoming>,
}

impl Handler {
    fn push(&self, event: Incoming) {
        // Closed only while AMC stops.
        let _ = self.queue.send(event);
    }
}

#[async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _ctx: Context, ready: Ready) {
        self.push(Incoming::Ready(Box::new(ready)));
    }

    async fn resume(&self, _ctx: Context, _event: ResumedEvent) {
        self.push(Incoming::Resumed);
    }

    async fn shard_stage_update(&self, _ctx: Context, event: ShardStageUpdateEvent) {
        if event.new != ConnectionStage::Connected && event.old == ConnectionStage::Connected {
            self.push(Incoming::Disconnected);
        }
    }

    async fn guild_create(&self, _ctx: Context, guild: Guild, _is_new: Option<bool>) {
        self.push(Incoming::Guild(Box::new(guild)));
    }

    async fn channel_create(&self, _ctx: Context, channel: GuildChannel) {
        self.push(Incoming::Channel(Box::new(channel)));
    }

    async fn channel_update(&self, _ctx: Context, _old: Option<GuildChannel>, new: GuildChannel) {
        self.push(Incoming::Channel(Box::new(new)));
    }

    async fn thread_create(&self, _ctx: Context, thread: GuildChannel) {
        self.push(Incoming::Threads(vec![thread]));
    }

    async fn thread_update(&self, _ctx: Context, _old: Option<GuildChannel>, new: GuildChannel) {
        self.push(Incoming::Threads(vec![new]));
    }

    async fn thread_list_sync(&self, _ctx: Context, sync: ThreadListSyncEvent) {
        self.push(Incoming::Threads(sync.threads));
    }

    async fn channel_delete(&self, _ctx: Context, channel: GuildChannel, _messages: Option<Vec<Message>>) {
        self.push(Incoming::ChannelGone(channel.id));
    }

    /// GUILD_DELETE: with `unavailable` set, an outage (the guild comes back by itself);
    /// without it, the guild was deleted or the bot removed from it.
    async fn guild_delete(&self, _ctx: Context, incomplete: UnavailableGuild, _full: Option<Guild>) {
        if !incomplete.unavailable {
            self.push(Incoming::GuildGone(incomplete.id));
        }
    }

    async fn message(&self, _ctx: Context, m: Message) {
        self.push(Incoming::Message(Box::new(m)));
    }

    async fn message_update(&self, _ctx: Context, _old: Option<Message>, _new: Option<Message>, e: MessageUpdateEvent) {
        self.push(Incoming::Edit(Box::new(e)));
    }

    async fn message_delete(&self, _ctx: Context, _channel: ChannelId, id: MessageId, _guild: Option<GuildId>) {
        self.push(Incoming::Deleted(vec![id]));
    }

    async fn message_delete_bulk(&self, _ctx: Context, _channel: ChannelId, ids: Vec<MessageId>, _g: Option<GuildId>) {
        self.push(Incoming::Deleted(ids));
    }

    async fn reaction_add(&self, _ctx: Context, r: Reaction) {
        self.push(Incoming::Reaction(Box::new(r), true));
    }

    async fn reaction_remove(&self, _ctx: Context, r: Reaction) {
        self.push(Incoming::Reaction(Box::new(r), false));
    }

    async fn reaction_remove_all(&self, _ctx: Context, _channel: ChannelId, message: MessageId) {
        self.push(Incoming::ReactionsCleared(message, None));
    }

    async fn reaction_remove_emoji(&self, _ctx: Context, r: Reaction) {
        self.push(Incoming::ReactionsCleared(r.message_id, Some(convert::emoji(&r.emoji))));
    }
}

/// A connection is up: the source is connected (unless the Message Content intent is
/// off), and every allowed channel is read back from where the store stood.
async fn connected(shared: &Arc<Shared>) {
    match shared.content_missing() {
        true => shared.set_status(SourceState::Degraded, Some(CONTENT_INTENT_FIX.into())),
        false => shared.set_status(SourceState::Connected, None),
    }
    let anchors = history::anchors(shared).await;
    tokio::spawn(history::catch_up(shared.clone(), anchors));
}

/// Applies the gateway's events in order, one at a time, until the queue closes.
pub(crate) async fn consume(shared: Arc<Shared>, mut queue: tokio::sync::mpsc::UnboundedReceiver<Incoming>) {
    while let Some(event) = queue.recv().await {
        apply(&shared, event).await;
    }
}

async fn apply(shared: &Arc<Shared>, event: Incoming) {
    match event {
        Incoming::Ready(ready) => {
            lock(&shared.selves).bot = Some(ready.user.id);
            tracing::info!(bot = %ready.user.name, guilds = ready.guilds.len(), "connected to Discord");
            connected(shared).await;
        }
        Incoming::Resumed => {
            tracing::info!("resumed the Discord session");
            connected(shared).await;
        }
        Incoming::Disconnected => shared.set_status(
            SourceState::Degraded,
            Some("reconnecting to Discord; messages sent meanwhile are fetched once it is back".into()),
        ),
        Incoming::Guild(guild) => {
            lock(&shared.guild_names).insert(guild.id, guild.name.clone());
            let bot = shared.selves().bot;
            let access = convert::GuildAccess {
                guild_id: guild.id.get(),
                bot: bot.map_or(0, |b| b.get()),
                owner: bot == Some(guild.owner_id),
                roles: guild.roles.values().map(|r| (r.id.get(), r.permissions.bits())).collect(),
                bot_roles: bot
                    .and_then(|b| guild.members.get(&b))
                    .map(|m| m.roles.iter().map(|r| r.get()).collect())
                    .unwrap_or_default(),
            };
            lock(&shared.access).insert(guild.id, access);
            for t in &guild.threads {
                shared.note_thread(t);
            }
            {
                let mut names = shared.mention_names();
                names.channels.extend(guild.channels.values().map(|c| (c.id.get(), c.name.clone())));
                names.roles.extend(guild.roles.values().map(|r| (r.id.get(), r.name.clone())));
            }
            shared.register_channels(&guild.name, guild.channels.values().collect()).await;
        }
        Incoming::Channel(channel) => {
            shared.mention_names().channels.insert(channel.id.get(), channel.name.clone());
            let guild = lock(&shared.guild_names).get(&channel.guild_id).cloned();
            if let Some(guild) = guild {
                shared.register_channels(&guild, vec![&channel]).await;
            }
        }
        Incoming::ChannelGone(channel) => {
            for set in lock(&shared.guild_channels).values_mut() {
                set.remove(&channel);
            }
            shared.gone(vec![channel], "Discord deleted this channel".into()).await;
        }
        Incoming::GuildGone(guild) => {
            let name = lock(&shared.guild_names).remove(&guild).unwrap_or_else(|| "its server".into());
            let channels: Vec<ChannelId> =
                lock(&shared.guild_channels).remove(&guild).unwrap_or_default().into_iter().collect();
            let why = format!("the bot is no longer in {name} (the server was deleted, or the bot removed)");
            shared.gone(channels, why).await;
        }
        Incoming::Threads(threads) => {
            for t in &threads {
                shared.note_thread(t);
            }
        }
        Incoming::Message(m) => {
            shared.check_content(&m);
            shared.store_message(&m).await;
        }
        Incoming::Edit(e) => {
            // An edit carries the whole message; an update without text (an embed
            // resolved) changes nothing AMC keeps.
            let (Some(author), Some(content), Some(timestamp)) = (e.author.clone(), e.content.clone(), e.timestamp)
            else {
                return;
            };
            let mut m = Message::default();
            m.id = e.id;
            m.channel_id = e.channel_id;
            m.guild_id = e.guild_id;
            m.author = author;
            m.content = content;
            m.timestamp = timestamp;
            m.edited_timestamp = e.edited_timestamp;
            m.attachments = e.attachments.clone().unwrap_or_default();
            m.message_reference = e.message_reference.clone().flatten();
            m.member = e.member.clone().flatten();
            m.kind = e.kind.unwrap_or(MessageType::Regular);
            m.mentions = e.mentions.clone().unwrap_or_default();
            shared.store_message(&m).await;
        }
        Incoming::Deleted(ids) => {
            let ids = ids.iter().map(ToString::to_string).collect();
            if let Err(e) = shared.amc.mark_unsent(Source::Discord, ids).await {
                tracing::warn!(error = %e, "could not record deleted Discord messages");
            }
        }
        Incoming::ReactionsCleared(message, emoji) => {
            if let Err(e) = shared.amc.clear_reactions(Source::Discord, message.to_string(), emoji).await {
                tracing::warn!(error = %e, "could not clear a Discord message's reactions");
            }
        }
        Incoming::Reaction(r, added) => {
            let Some(reaction) = convert::reaction(&r, shared.selves()) else { return };
            let change = ReactionChange { target_platform_id: r.message_id.to_string(), reaction, added };
            if let Err(e) = shared.amc.apply_reactions(Source::Discord, vec![change]).await {
                tracing::warn!(error = %e, "could not store a Discord reaction");
            }
        }
    }
}

/// Follows the person's approvals: a Discord channel that becomes allowed gets its
/// history fetched through the same path as a reconnection.
pub(crate) async fn follow_approvals(shared: Arc<Shared>, stop: CancellationToken) {
    let mut events = shared.amc.events().subscribe();
    loop {
        let event = tokio::select! {
            () = stop.cancelled() => return,
            e = events.recv() => e,
        };
        match event {
            Ok(Event::ChannelChanged { channel_id }) => {
                let Ok(ch) = shared.amc.admin_channel(channel_id).await else { continue };
                if ch.source == Source::Discord && ch.state == ChannelState::Allowed {
                    tokio::spawn(history::approved(shared.clone(), (&ch).into()));
                }
            }
            Ok(_) => {}
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// How long to wait before connecting again after the gateway failed.
pub(crate) fn backoff(attempt: u32) -> Duration {
    Duration::from_secs((5u64 << attempt.min(6)).min(300))
}
