//! The bot on Discord's gateway: what it sees goes to the core (`Amc::ingest`), and every
//! (re)connection is followed by a history fetch so nothing sent meanwhile is missed.

use std::sync::Arc;
use std::time::Duration;

use amc_core::events::Event;
use amc_core::model::ReactionChange;
use amc_core::model::{ChannelState, Source};
use amc_core::service::SourceState;
use serenity::all::{
    ChannelId, ComponentInteraction, Context, EditInteractionResponse, EventHandler, GatewayIntents, Guild,
    GuildChannel, GuildId, Interaction, Message, MessageId, MessageType, MessageUpdateEvent, Reaction, Ready,
    ResumedEvent, ShardStageUpdateEvent, ThreadListSyncEvent, UnavailableGuild,
};
use serenity::async_trait;
use serenity::gateway::ConnectionStage;
use tokio_util::sync::CancellationToken;

use crate::convert::{self};
use crate::history;
use crate::shared::{CONTENT_INTENT_FIX, Shared, lock};

/// The intents the bot asks for: guild messages, DMs, their text, and reactions.
pub fn intents() -> GatewayIntents {
    GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT
        | GatewayIntents::GUILD_MESSAGE_REACTIONS
        | GatewayIntents::DIRECT_MESSAGE_REACTIONS
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
    /// A button of a message pressed (AMC's questions on the person's phone), with the
    /// client to answer it with.
    Pressed(Box<ComponentInteraction>, Arc<serenity::http::Http>, tokio::sync::oneshot::Receiver<bool>),
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

    /// A button pressed: deferred here, at once (Discord wants an answer within three
    /// seconds, whatever waits in the queue), then decided in order.
    async fn interaction_create(&self, ctx: Context, interaction: Interaction) {
        if let Interaction::Component(pressed) = interaction {
            // Queued before the first await, as every event is; the deferral is the press's
            // own, and its answer is edited only once Discord took it.
            let (deferred, taken) = tokio::sync::oneshot::channel();
            self.push(Incoming::Pressed(Box::new(pressed.clone()), ctx.http.clone(), taken));
            let done = pressed.defer_ephemeral(&ctx.http).await;
            if let Err(e) = &done {
                tracing::warn!(error = %e, "could not answer a button on Discord in time");
            }
            let _ = deferred.send(done.is_ok());
        }
    }
}

/// Answers a pressed button: Discord wants an answer within three seconds, so AMC defers
/// (an ephemeral "thinking", seen by the presser alone), decides, then says what it did in
/// that answer (<https://discord.com/developers/docs/interactions/receiving-and-responding>).
async fn answer_button(
    shared: Arc<Shared>,
    pressed: ComponentInteraction,
    http: Arc<serenity::http::Http>,
    deferred: tokio::sync::oneshot::Receiver<bool>,
) {
    let user = amc_core::model::SenderInfo {
        id: pressed.user.id.to_string(),
        display_name: None,
        // Whose press it is, the core decides by `discord_user_id` alone.
        is_self: false,
    };
    let said = shared
        .amc
        .phone_button(
            Source::Discord,
            &pressed.channel_id.to_string(),
            &pressed.message.id.to_string(),
            &user,
            &pressed.data.custom_id,
        )
        .await;
    // Decided whatever Discord said of the deferral; told only where it took it.
    if deferred.await != Ok(true) {
        return;
    }
    if let Err(e) = pressed.edit_response(&http, EditInteractionResponse::new().content(said)).await {
        tracing::warn!(error = %e, "could not tell Discord what a button did");
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
        // Deciding may take as long as the send it approves: apart from the queue.
        Incoming::Pressed(pressed, http, deferred) => {
            tokio::spawn(answer_button(shared.clone(), *pressed, http, deferred));
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
