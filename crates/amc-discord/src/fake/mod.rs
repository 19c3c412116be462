//! A local stand-in for Discord, for tests and benchmarks: the REST API under
//! `/api/v10` and the CDN, and a WebSocket gateway that speaks Discord's protocol (HELLO,
//! IDENTIFY, READY, heartbeats and their ACKs, dispatches with sequence numbers, RESUME
//! with replay, RECONNECT, INVALID_SESSION, close codes). Payloads are shaped as Discord
//! documents them, and REST answers carry Discord's rate-limit headers and 429s
//! ([`limits`]).
//!
//! AMC reaches it as it reaches Discord: `https://discord.com` through an HTTPS proxy
//! ([`FakeDiscord::config`], [`tls`]), so serenity's rate limiter is on. The REST API is
//! also served in plain HTTP at [`FakeDiscord::api_url`], a stand-in on this machine.
//!
//! Nothing in AMC itself uses it; it is public so the tests of other crates can.

pub mod limits;
pub mod tls;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Multipart, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, patch, post};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use amc_core::time::now_ms;

use crate::convert::DISCORD_EPOCH_MS;

/// The Message Content intent's bit.
const MESSAGE_CONTENT: u64 = 1 << 15;

/// A request to post a message, as the fake received it.
#[derive(Debug, Clone)]
pub struct RecordedPost {
    /// The channel in the path.
    pub channel_id: String,
    /// The `Content-Type` (`application/json` or `multipart/form-data; boundary=…`).
    pub content_type: String,
    /// The `Authorization` header.
    pub authorization: String,
    /// The JSON payload (the body, or the `payload_json` part).
    pub payload: Value,
    /// Uploaded files: the part's name (`files[0]`), its file name and bytes.
    pub files: Vec<(String, String, Vec<u8>)>,
}

/// A user of the fake.
#[derive(Debug, Clone)]
pub struct FakeUser {
    /// Snowflake.
    pub id: u64,
    /// User name.
    pub name: String,
}

/// How the fake fails a request for a channel's messages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HistoryFailure {
    /// `500 Internal Server Error`, as Discord answers when it has trouble of its own.
    ServerError,
    /// `429 Too Many Requests` with the body Discord documents (Rate Limits → Exceeding A
    /// Rate Limit: `message`, `retry_after` in seconds, `global`; no `code`), and its
    /// headers: `Retry-After` (whole seconds, rounded up) and `X-RateLimit-Scope: user`.
    RateLimited {
        /// Seconds to wait.
        retry_after: f64,
    },
}

/// A status, headers and a JSON body the fake answers a post with.
type CannedReply = (u16, Vec<(String, String)>, Value);

enum Command {
    Send(Value),
    Close(u16),
    Drop,
}

#[derive(Default)]
struct Session {
    id: String,
    /// Dispatches with their sequence numbers, kept for RESUME.
    log: Vec<(u64, Value)>,
    seq: u64,
}

struct Inner {
    token: String,
    gateway_url: String,
    /// The address READY gives as `resume_gateway_url`, where Discord wants RESUMEs
    /// (<https://discord.com/developers/docs/events/gateway#resuming>); one for all
    /// sessions here, apart from `gateway_url`.
    resume_url: String,
    /// Whether a RESUME sent to `gateway_url` instead of `resume_url` is refused with
    /// op 9 (d: false), as Discord may refuse it.
    refuse_misplaced_resumes: bool,
    /// RESUMEs refused for coming to the wrong address.
    misplaced_resumes: u32,
    api_url: String,
    proxy_url: String,
    /// Every `CONNECT` target the proxy was asked for.
    tunnels: Vec<String>,
    limits: limits::Limits,
    bot: FakeUser,
    guild: (u64, String),
    channels: Vec<(u64, String)>,
    messages: BTreeMap<u64, BTreeMap<u64, Value>>,
    dms: HashMap<u64, u64>,
    /// Each channel's and thread's newest message id ever: Discord's `last_message_id`,
    /// which a deletion does not lower.
    last_message: HashMap<u64, u64>,
    files: HashMap<String, Vec<u8>>,
    last_id: u64,
    session: Option<Session>,
    live: Option<mpsc::UnboundedSender<Command>>,
    accepting: bool,
    content_intent: bool,
    posts: Vec<RecordedPost>,
    post_replies: VecDeque<CannedReply>,
    identifies: u32,
    resumes: u32,
    heartbeats: u32,
    history_requests: u32,
    /// Failures queued for each channel's next requests for messages.
    history_failures: HashMap<u64, VecDeque<HistoryFailure>>,
    connected: Vec<oneshot::Sender<()>>,
    /// The interval HELLO tells a new connection (Discord's is about 41 s).
    heartbeat_interval_ms: u64,
    /// The live connection has gone silent: no ACKs, no dispatches (a zombie).
    dead: bool,
    /// When a heartbeat was last acknowledged.
    last_ack: Option<std::time::Instant>,
    /// The guild's users, by id, for the mentions in messages.
    users: HashMap<u64, FakeUser>,
    /// The bot was removed from the guild (or the guild deleted).
    removed: bool,
    /// Who reacted to each message with what, in order.
    reactions: HashMap<u64, Vec<(String, u64)>>,
    /// The guild's owner: a person, not the bot, so overwrites apply to the bot.
    owner: u64,
    /// Each channel's permission overwrites, as Discord's JSON.
    overwrites: HashMap<u64, Vec<Value>>,
    /// Forums among the channels (type 15): their posts are threads.
    forums: std::collections::HashSet<u64>,
    /// Threads and forum posts: each one's parent and name.
    threads: BTreeMap<u64, (u64, String)>,
    /// Buttons pressed (INTERACTION_CREATE), by interaction id.
    interactions: BTreeMap<u64, FakeInteraction>,
}

/// A button pressed, and how the bot answered it.
#[derive(Debug, Clone, Default)]
pub struct FakeInteraction {
    /// Who pressed it.
    pub user: u64,
    /// The interaction's token, for its callback and its webhook.
    token: String,
    /// The callbacks the bot made (`type` and `data`), in order: Discord takes one.
    pub callbacks: Vec<Value>,
    /// The content the bot last gave its answer (PATCH of `@original`).
    pub answer: Option<String>,
}

/// The fake Discord. Dropping it stops nothing; its tasks end with the runtime.
#[derive(Clone)]
pub struct FakeDiscord {
    inner: Arc<Mutex<Inner>>,
}

impl FakeDiscord {
    /// Starts the REST server and the gateway on loopback, with one guild
    /// ("Fake Guild") and the given text channels.
    pub async fn start(token: &str, channels: &[&str]) -> std::io::Result<Self> {
        let http = TcpListener::bind("127.0.0.1:0").await?;
        let ws = TcpListener::bind("127.0.0.1:0").await?;
        let resume_ws = TcpListener::bind("127.0.0.1:0").await?;
        let proxy = TcpListener::bind("127.0.0.1:0").await?;
        let api_url = format!("http://{}", http.local_addr()?);
        let gateway_url = format!("ws://{}", ws.local_addr()?);
        let mut inner = Inner {
            token: token.to_owned(),
            gateway_url,
            resume_url: format!("ws://{}", resume_ws.local_addr()?),
            refuse_misplaced_resumes: false,
            misplaced_resumes: 0,
            api_url,
            proxy_url: format!("http://{}", proxy.local_addr()?),
            tunnels: Vec::new(),
            limits: limits::Limits::default(),
            bot: FakeUser { id: 0, name: "AMC Bot".into() },
            guild: (0, "Fake Guild".into()),
            channels: Vec::new(),
            messages: BTreeMap::new(),
            dms: HashMap::new(),
            last_message: HashMap::new(),
            files: HashMap::new(),
            last_id: 0,
            session: None,
            live: None,
            accepting: true,
            content_intent: true,
            posts: Vec::new(),
            post_replies: VecDeque::new(),
            identifies: 0,
            resumes: 0,
            heartbeats: 0,
            history_requests: 0,
            history_failures: HashMap::new(),
            connected: Vec::new(),
            heartbeat_interval_ms: 41_250,
            dead: false,
            last_ack: None,
            users: HashMap::new(),
            removed: false,
            reactions: HashMap::new(),
            owner: 0,
            overwrites: HashMap::new(),
            forums: std::collections::HashSet::new(),
            threads: BTreeMap::new(),
            interactions: BTreeMap::new(),
        };
        inner.bot.id = inner.next_id();
        inner.owner = inner.next_id();
        inner.guild.0 = inner.next_id();
        for name in channels {
            let id = inner.next_id();
            inner.channels.push((id, (*name).to_owned()));
            inner.messages.insert(id, BTreeMap::new());
        }
        let fake = Self { inner: Arc::new(Mutex::new(inner)) };
        let app = router(fake.clone());
        tokio::spawn(async move {
            let _ = axum::serve(http, app).await;
        });
        tokio::spawn(accept_loop(fake.clone(), ws, Address::Gateway));
        tokio::spawn(accept_loop(fake.clone(), resume_ws, Address::Resume));
        tokio::spawn(tls::serve(fake.clone(), proxy));
        Ok(fake)
    }

    /// The lines of `config.toml` that make AMC reach this fake as it reaches Discord:
    /// `https://discord.com` through the fake's proxy, trusting its CA (written into
    /// `dir`), serenity's rate limiter on.
    pub fn config(&self, dir: &std::path::Path) -> std::io::Result<String> {
        let ca = dir.join("local-discord-ca.pem");
        std::fs::write(&ca, tls::CA_PEM)?;
        Ok(format!("discord_proxy = \"{}\"\ndiscord_ca_file = {:?}\n", self.lock().proxy_url, ca.display().to_string()))
    }

    /// Every host and port AMC asked the proxy for, in order.
    pub fn tunnels(&self) -> Vec<String> {
        self.lock().tunnels.clone()
    }

    /// Sets a REST route's rate limit (`"GET /channels/{id}/messages"`, counted per
    /// channel); false for a route the fake does not limit.
    pub fn set_rate_limit(&self, route: &str, limit: limits::Limit) -> bool {
        self.lock().limits.set(route, limit)
    }

    /// Sets the global rate limit (50 requests a second by default).
    pub fn set_global_rate_limit(&self, limit: limits::Limit) {
        self.lock().limits.set_global(limit);
    }

    /// How many requests were answered 429: over a route's limit, and over the global one.
    pub fn rate_limited(&self) -> (u32, u32) {
        self.lock().limits.refused
    }

    /// Refuses a RESUME sent to the gateway's first address rather than to READY's
    /// `resume_gateway_url`: op 9 with `d: false`, so the client starts a new session.
    /// Discord documents that resumes belong on the session's own address and that
    /// clients resuming elsewhere are disconnected significantly faster; refusing the
    /// resume is the hardest form of that. Off by default, as a resume on the first
    /// address mostly still succeeds.
    pub fn refuse_misplaced_resumes(&self) {
        self.lock().refuse_misplaced_resumes = true;
    }

    /// How many RESUMEs were refused for coming to the first address.
    pub fn misplaced_resumes(&self) -> u32 {
        self.lock().misplaced_resumes
    }

    /// Every REST request's route (`"GET /channels/{id}/messages"`), in order.
    pub fn requests(&self) -> Vec<String> {
        self.lock().limits.log.iter().map(|(route, _)| route.clone()).collect()
    }

    /// How many requests for a route (`"GET /channels/{id}/messages"`) named `id` first.
    pub fn requests_for(&self, route: &str, id: u64) -> usize {
        let id = id.to_string();
        self.lock().limits.log.iter().filter(|(r, major)| r == route && *major == id).count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The base URL to give AMC as `discord_api_url`.
    pub fn api_url(&self) -> String {
        self.lock().api_url.clone()
    }

    /// The channels' ids, in the order given.
    pub fn channel_ids(&self) -> Vec<u64> {
        self.lock().channels.iter().map(|c| c.0).collect()
    }

    /// The bot's user.
    pub fn bot(&self) -> FakeUser {
        self.lock().bot.clone()
    }

    /// A new user of the guild.
    pub fn user(&self, name: &str) -> FakeUser {
        let mut inner = self.lock();
        let user = FakeUser { id: inner.next_id(), name: name.to_owned() };
        inner.users.insert(user.id, user.clone());
        user
    }

    /// Whether the bot's application has the Message Content intent enabled: without it,
    /// an IDENTIFY asking for it is closed with 4014.
    pub fn set_content_intent(&self, enabled: bool) {
        self.lock().content_intent = enabled;
    }

    /// Posts a message as `author`: stored in the channel's history and dispatched as
    /// MESSAGE_CREATE (logged for RESUME if no connection is live). Returns its id.
    pub fn post(&self, channel: u64, author: &FakeUser, content: &str) -> u64 {
        self.post_with(channel, author, content, None, &[])
    }

    /// `user` presses the button `custom_id` of message `id` in `channel` (a DM or a guild
    /// channel): INTERACTION_CREATE with a message component interaction, as Discord sends
    /// it (<https://discord.com/developers/docs/interactions/receiving-and-responding>).
    /// Returns the interaction's id. The bot must call back once, within the token's life.
    pub fn press(&self, channel: u64, id: u64, user: &FakeUser, custom_id: &str) -> u64 {
        let mut inner = self.lock();
        let message = inner.messages.get(&channel).and_then(|m| m.get(&id)).cloned().unwrap_or(Value::Null);
        let interaction = inner.next_id();
        let token = format!("interaction-token-{interaction}");
        let dm = inner.dms.values().any(|c| *c == channel);
        let mut d = json!({
            "id": interaction.to_string(),
            "application_id": inner.bot.id.to_string(),
            "type": 3,
            "token": token,
            "version": 1,
            "data": { "custom_id": custom_id, "component_type": 2 },
            "channel_id": channel.to_string(),
            "message": message,
            "app_permissions": "2248473465835073",
            "locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {},
            "context": if dm { 1 } else { 0 },
            "attachment_size_limit": 10_485_760,
        });
        if dm {
            d["user"] = user_json(user, false);
        } else {
            d["guild_id"] = json!(inner.guild.0.to_string());
            d["member"] = member(user);
        }
        inner.interactions.insert(interaction, FakeInteraction { user: user.id, token, ..Default::default() });
        inner.dispatch("INTERACTION_CREATE", d);
        interaction
    }

    /// The button presses so far, and how the bot answered each.
    pub fn interactions(&self) -> Vec<(u64, FakeInteraction)> {
        self.lock().interactions.iter().map(|(id, i)| (*id, i.clone())).collect()
    }

    /// Posts a message with a reply and attachments (`(file name, bytes)`), served by the
    /// fake's CDN.
    pub fn post_with(
        &self,
        channel: u64,
        author: &FakeUser,
        content: &str,
        reply_to: Option<u64>,
        files: &[(&str, &[u8])],
    ) -> u64 {
        let mut inner = self.lock();
        let msg = inner.new_message(channel, author, content, reply_to, files);
        let id = msg["id"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0);
        let guild = inner.guild.0;
        // The gateway tells the bot only of channels it may see.
        if inner.bot_can_read(channel) {
            inner.dispatch("MESSAGE_CREATE", with_guild(msg, guild));
        }
        id
    }

    /// `author` writes to the bot in a DM: a DM channel (made on first use) and its
    /// MESSAGE_CREATE, which carries no guild. Returns the DM channel's id.
    pub fn dm(&self, author: &FakeUser, content: &str) -> u64 {
        let mut inner = self.lock();
        let channel = match inner.dms.get(&author.id) {
            Some(c) => *c,
            None => {
                let c = inner.next_id();
                inner.dms.insert(author.id, c);
                c
            }
        };
        let msg = inner.new_message(channel, author, content, None, &[]);
        inner.dispatch("MESSAGE_CREATE", msg);
        channel
    }

    /// Adds a message to a channel's history without any dispatch: one the gateway never
    /// delivered (sent while the bot's session was lost).
    pub fn post_unseen(&self, channel: u64, author: &FakeUser, content: &str) -> u64 {
        let mut inner = self.lock();
        let msg = inner.new_message(channel, author, content, None, &[]);
        msg["id"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
    }

    /// Edits a message and dispatches MESSAGE_UPDATE with the whole message, as Discord does.
    pub fn edit(&self, channel: u64, id: u64, content: &str) {
        let mut inner = self.lock();
        let now = amc_core::time::format_ms(now_ms());
        let Some(msg) = inner.messages.get_mut(&channel).and_then(|m| m.get_mut(&id)) else { return };
        msg["content"] = json!(content);
        msg["edited_timestamp"] = json!(now);
        let mut msg = msg.clone();
        let (mentions, roles) = inner.mentions(channel, content);
        msg["mentions"] = json!(mentions);
        msg["mention_roles"] = json!(roles);
        if let Some(stored) = inner.messages.get_mut(&channel).and_then(|m| m.get_mut(&id)) {
            stored["mentions"] = msg["mentions"].clone();
            stored["mention_roles"] = msg["mention_roles"].clone();
        }
        let guild = inner.guild.0;
        inner.dispatch("MESSAGE_UPDATE", with_guild(msg, guild));
    }

    /// Deletes a channel with its messages and dispatches CHANNEL_DELETE; REST then answers
    /// 404 Unknown Channel (10003) for it, as Discord does.
    pub fn delete_channel(&self, channel: u64) {
        let mut inner = self.lock();
        let Some(at) = inner.channels.iter().position(|c| c.0 == channel) else { return };
        let (id, name) = inner.channels.remove(at);
        inner.messages.remove(&id);
        let guild = inner.guild.0;
        let overwrites = inner.overwrites.remove(&id).unwrap_or_default();
        inner.dispatch("CHANNEL_DELETE", channel_json(id, &name, guild, at, &overwrites));
    }

    /// Sets a channel's permission overwrites (Discord's JSON: `id`, `type` 0 for a role
    /// (the guild's id is @everyone) or 1 for a member, `allow`, `deny`) and dispatches
    /// CHANNEL_UPDATE. REST then answers 403 Missing Access (50001) for a channel the bot
    /// can no longer see or read.
    pub fn set_overwrites(&self, channel: u64, overwrites: Vec<Value>) {
        let mut inner = self.lock();
        inner.overwrites.insert(channel, overwrites);
        let position = inner.channels.iter().position(|c| c.0 == channel).unwrap_or(0);
        let json = inner.channel(channel, position);
        inner.dispatch("CHANNEL_UPDATE", json);
    }

    /// Adds a forum channel (type 15) and dispatches CHANNEL_CREATE. A forum has no
    /// messages of its own: reading them is refused with 50024, and its posts are
    /// threads ([`FakeDiscord::create_thread`]). Returns its id.
    pub fn create_forum(&self, name: &str) -> u64 {
        let mut inner = self.lock();
        let id = inner.next_id();
        inner.channels.push((id, name.to_owned()));
        inner.forums.insert(id);
        let json = inner.channel(id, inner.channels.len() - 1);
        inner.dispatch("CHANNEL_CREATE", json);
        id
    }

    /// Starts a thread in `parent` (a forum post when `parent` is a forum) and dispatches
    /// THREAD_CREATE. Messages are posted into it with its id. Returns its id.
    pub fn create_thread(&self, parent: u64, name: &str) -> u64 {
        let id = self.create_thread_unseen(parent, name);
        let mut inner = self.lock();
        let mut json = inner.thread_json(id);
        json["newly_created"] = json!(true);
        inner.dispatch("THREAD_CREATE", json);
        id
    }

    /// Starts a thread without telling the gateway (its THREAD_CREATE was lost): the bot
    /// learns of it from its first message. Returns its id.
    pub fn create_thread_unseen(&self, parent: u64, name: &str) -> u64 {
        let mut inner = self.lock();
        let id = inner.next_id();
        inner.threads.insert(id, (parent, name.to_owned()));
        inner.messages.insert(id, BTreeMap::new());
        // A forum's `last_message_id` is its newest post (thread).
        if inner.forums.contains(&parent) {
            inner.last_message.insert(parent, id);
        }
        id
    }

    /// An overwrite denying the bot (through @everyone) the sight of a channel.
    pub fn hidden_from_everyone(&self) -> Value {
        let guild = self.lock().guild.0;
        json!({ "id": guild.to_string(), "type": 0, "allow": "0", "deny": VIEW_CHANNEL.to_string() })
    }

    /// An overwrite letting the bot itself see and read a channel.
    pub fn shown_to_bot(&self) -> Value {
        let bot = self.lock().bot.id;
        json!({ "id": bot.to_string(), "type": 1, "allow": (VIEW_CHANNEL | READ_MESSAGE_HISTORY).to_string(), "deny": "0" })
    }

    /// The bot is removed from the guild (or the guild deleted): GUILD_DELETE without
    /// `unavailable`. Later sessions no longer list the guild, and REST answers 403 Missing
    /// Access (50001) for its channels.
    pub fn remove_bot_from_guild(&self) {
        let mut inner = self.lock();
        inner.removed = true;
        let guild = inner.guild.0.to_string();
        inner.dispatch("GUILD_DELETE", json!({ "id": guild }));
    }

    /// The guild is in an outage: GUILD_DELETE with `unavailable: true`. Nothing is gone.
    pub fn guild_outage(&self) {
        let mut inner = self.lock();
        let guild = inner.guild.0.to_string();
        inner.dispatch("GUILD_DELETE", json!({ "id": guild, "unavailable": true }));
    }

    /// Deletes a message and dispatches MESSAGE_DELETE.
    pub fn delete(&self, channel: u64, id: u64) {
        let mut inner = self.lock();
        inner.messages.get_mut(&channel).map(|m| m.remove(&id));
        let guild = inner.guild.0.to_string();
        inner.dispatch(
            "MESSAGE_DELETE",
            json!({ "id": id.to_string(), "channel_id": channel.to_string(), "guild_id": guild }),
        );
    }

    /// A user adds (or removes) a reaction: MESSAGE_REACTION_ADD / _REMOVE. The message's
    /// `reactions` (counts per emoji) and its reaction users change as on Discord.
    pub fn react(&self, channel: u64, id: u64, user: &FakeUser, emoji: &str, added: bool) {
        let mut inner = self.lock();
        let list = inner.reactions.entry(id).or_default();
        let had = list.iter().position(|(e, u)| e == emoji && *u == user.id);
        match (added, had) {
            (true, None) => list.push((emoji.to_owned(), user.id)),
            (false, Some(at)) => {
                list.remove(at);
            }
            _ => {}
        }
        inner.refresh_reactions(channel, id);
        let guild = inner.guild.0.to_string();
        let mut d = json!({
            "user_id": user.id.to_string(),
            "channel_id": channel.to_string(),
            "message_id": id.to_string(),
            "guild_id": guild,
            "emoji": { "id": null, "name": emoji },
            "burst": false,
            "type": 0,
        });
        if added {
            d["member"] = member(user);
            d["burst_colors"] = json!([]);
        }
        inner.dispatch(if added { "MESSAGE_REACTION_ADD" } else { "MESSAGE_REACTION_REMOVE" }, d);
    }

    /// A moderator takes away every reaction of a message (MESSAGE_REACTION_REMOVE_ALL), or
    /// every one with `emoji` (MESSAGE_REACTION_REMOVE_EMOJI).
    pub fn clear_reactions(&self, channel: u64, id: u64, emoji: Option<&str>) {
        let mut inner = self.lock();
        if let Some(list) = inner.reactions.get_mut(&id) {
            list.retain(|(e, _)| emoji.is_some_and(|x| x != e));
        }
        inner.refresh_reactions(channel, id);
        let guild = inner.guild.0.to_string();
        let mut d = json!({ "channel_id": channel.to_string(), "message_id": id.to_string(), "guild_id": guild });
        let event = match emoji {
            Some(e) => {
                d["emoji"] = json!({ "id": null, "name": e });
                "MESSAGE_REACTION_REMOVE_EMOJI"
            }
            None => "MESSAGE_REACTION_REMOVE_ALL",
        };
        inner.dispatch(event, d);
    }

    /// Ends the live connection without a close frame, as a network failure would; the
    /// session stays resumable.
    pub fn drop_connection(&self) {
        if let Some(live) = self.lock().live.take() {
            let _ = live.send(Command::Drop);
        }
    }

    /// Sends op 7 RECONNECT: the client should reconnect and resume.
    pub fn request_reconnect(&self) {
        self.send_op(json!({ "op": 7, "d": null }));
    }

    /// Sends op 9 INVALID_SESSION. Resumable: the client should RESUME, and is replayed
    /// what it missed. Not resumable: the session is forgotten, and events not yet
    /// delivered are lost, as with Discord.
    pub fn invalidate_session(&self, resumable: bool) {
        self.send_op(json!({ "op": 9, "d": resumable }));
        if !resumable {
            self.lock().session = None;
        }
    }

    /// Closes the live connection with a gateway close code, as Discord documents them
    /// (<https://discord.com/developers/docs/topics/opcodes-and-status-codes>): 4000 to
    /// 4005 and 4008 may be resumed; after 4007 (invalid seq) and 4009 (session timed
    /// out) the session is gone and a RESUME is refused; 4004 (authentication failed) and
    /// 4014 (disallowed intents) are not to be reconnected.
    pub fn close_with(&self, code: u16) {
        let mut inner = self.lock();
        if matches!(code, 4007 | 4009) {
            inner.session = None;
        }
        if let Some(live) = inner.live.take() {
            let _ = live.send(Command::Close(code));
        }
    }

    /// The interval HELLO gives new connections, in milliseconds (41,250 by default).
    pub fn set_heartbeat_interval(&self, ms: u64) {
        self.lock().heartbeat_interval_ms = ms;
    }

    /// The live connection goes silent without closing, as a connection whose network
    /// died: heartbeats are no longer acknowledged and dispatches no longer arrive (they
    /// are kept for a RESUME). Returns when a heartbeat was last acknowledged. The client
    /// must notice the missing ACK and connect again.
    pub fn play_dead(&self) -> Option<std::time::Instant> {
        let mut inner = self.lock();
        inner.dead = true;
        inner.last_ack
    }

    /// Whether a heartbeat has been acknowledged yet.
    pub fn heartbeat_acknowledged(&self) -> bool {
        self.lock().last_ack.is_some()
    }

    /// Sends op 1 HEARTBEAT: the client must answer with a heartbeat at once.
    pub fn request_heartbeat(&self) {
        let seq = self.lock().session.as_ref().map(|s| s.seq);
        self.send_op(json!({ "op": 1, "d": seq }));
    }

    /// Refuses (or accepts again) new gateway connections.
    pub fn set_accepting(&self, accepting: bool) {
        self.lock().accepting = accepting;
    }

    fn send_op(&self, op: Value) {
        if let Some(live) = &self.lock().live {
            let _ = live.send(Command::Send(op));
        }
    }

    /// Waits until a client has identified or resumed on a new connection.
    pub async fn connected(&self, timeout: Duration) -> bool {
        let rx = {
            let (tx, rx) = oneshot::channel();
            self.lock().connected.push(tx);
            rx
        };
        tokio::time::timeout(timeout, rx).await.is_ok_and(|r| r.is_ok())
    }

    /// The next answers to `POST /channels/{id}/messages`: a status, headers, and a JSON
    /// body (an error in Discord's shape), instead of creating the message.
    pub fn reply_next_post(&self, status: u16, headers: &[(&str, &str)], body: Value) {
        let headers = headers.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        self.lock().post_replies.push_back((status, headers, body));
    }

    /// Fails the next `times` requests for this channel's messages (`GET
    /// /channels/{id}/messages`) as Discord may: see [`HistoryFailure`].
    pub fn fail_history(&self, channel: u64, times: u32, failure: HistoryFailure) {
        self.lock().history_failures.entry(channel).or_default().extend(std::iter::repeat_n(failure, times as usize));
    }

    /// How many requests for messages the fake answered (or failed) so far.
    pub fn history_requests(&self) -> u32 {
        self.lock().history_requests
    }

    /// Every message-post request received.
    pub fn posts(&self) -> Vec<RecordedPost> {
        self.lock().posts.clone()
    }

    /// How many IDENTIFY, RESUME and heartbeat frames arrived, and history pages served.
    pub fn counts(&self) -> (u32, u32, u32, u32) {
        let i = self.lock();
        (i.identifies, i.resumes, i.heartbeats, i.history_requests)
    }

    /// A channel's messages as the fake holds them, oldest first.
    pub fn history(&self, channel: u64) -> Vec<Value> {
        self.lock().messages.get(&channel).map(|m| m.values().cloned().collect()).unwrap_or_default()
    }
}

fn user_json(u: &FakeUser, bot: bool) -> Value {
    json!({
        "id": u.id.to_string(),
        "username": u.name,
        "discriminator": "0",
        "global_name": u.name,
        "avatar": null,
        "bot": bot,
        "public_flags": 0,
    })
}

fn member(u: &FakeUser) -> Value {
    json!({
        "user": user_json(u, false),
        "nick": null,
        "roles": [],
        "joined_at": "2024-01-01T00:00:00.000000+00:00",
        "deaf": false,
        "mute": false,
        "flags": 0,
    })
}

fn with_guild(mut msg: Value, guild: u64) -> Value {
    msg["guild_id"] = json!(guild.to_string());
    msg["member"] = json!({
        "nick": null, "roles": [], "joined_at": "2024-01-01T00:00:00.000000+00:00",
        "deaf": false, "mute": false, "flags": 0,
    });
    msg
}

/// Discord's permission bits the fake checks (the guild's @everyone role has them all).
const VIEW_CHANNEL: u64 = 1 << 10;
const READ_MESSAGE_HISTORY: u64 = 1 << 16;

impl Inner {
    /// A guild channel as Discord sends it.
    fn channel(&self, id: u64, position: usize) -> Value {
        let name = self.channels.iter().find(|c| c.0 == id).map(|c| c.1.clone()).unwrap_or_default();
        let mut json =
            channel_json(id, &name, self.guild.0, position, self.overwrites.get(&id).map_or(&[], Vec::as_slice));
        if self.forums.contains(&id) {
            json["type"] = json!(15);
            json["available_tags"] = json!([]);
            json["default_reaction_emoji"] = Value::Null;
        }
        json["last_message_id"] = self.last_message_id(id);
        json
    }

    /// A channel's or thread's `last_message_id`: its newest message ever, or null.
    fn last_message_id(&self, channel: u64) -> Value {
        self.last_message.get(&channel).map_or(Value::Null, |id| json!(id.to_string()))
    }

    /// A DM channel as `GET /channels/{id}` answers it (type 1, its one recipient).
    fn dm_json(&self, id: u64) -> Option<Value> {
        let (user, _) = self.dms.iter().find(|(_, c)| **c == id)?;
        let recipient = self.users.get(user).cloned().unwrap_or(FakeUser { id: *user, name: "someone".into() });
        Some(json!({
            "id": id.to_string(), "type": 1, "last_message_id": self.last_message_id(id),
            "last_pin_timestamp": null, "flags": 0, "recipients": [user_json(&recipient, false)],
        }))
    }

    /// A thread as Discord sends it (type 11, a public thread; forum posts are too).
    fn thread_json(&self, id: u64) -> Value {
        let (parent, name) = self.threads.get(&id).cloned().unwrap_or_default();
        let created = amc_core::time::format_ms((id >> 22) as i64 + DISCORD_EPOCH_MS);
        json!({
            "id": id.to_string(), "type": 11, "guild_id": self.guild.0.to_string(), "parent_id": parent.to_string(),
            "name": name, "owner_id": self.owner.to_string(), "last_message_id": self.last_message_id(id),
            "rate_limit_per_user": 0,
            "message_count": 0, "member_count": 1, "total_message_sent": 0, "flags": 0,
            "thread_metadata": { "archived": false, "auto_archive_duration": 1440, "archive_timestamp": created,
                                 "locked": false, "create_timestamp": created },
        })
    }

    /// Whether the bot may see a channel and read its history. The bot has no role but
    /// @everyone, which allows both: an overwrite for @everyone may deny them, and one for
    /// the bot itself (type 1) allow or deny them again, applied in that order
    /// (<https://discord.com/developers/docs/topics/permissions#permission-overwrites>).
    fn bot_can_read(&self, channel: u64) -> bool {
        // A thread has its parent's permissions.
        let channel = self.threads.get(&channel).map_or(channel, |t| t.0);
        let bits = |o: &Value, k: &str| o[k].as_str().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        let mut p = VIEW_CHANNEL | READ_MESSAGE_HISTORY;
        let overwrites = self.overwrites.get(&channel).map_or(&[][..], Vec::as_slice);
        let guild = self.guild.0.to_string();
        let bot = self.bot.id.to_string();
        for target in [(0, guild.as_str()), (1, bot.as_str())] {
            for o in overwrites.iter().filter(|o| o["type"] == target.0 && o["id"] == target.1) {
                p = (p & !bits(o, "deny")) | bits(o, "allow");
            }
        }
        p & VIEW_CHANNEL != 0 && p & READ_MESSAGE_HISTORY != 0
    }

    /// A snowflake for now, always greater than the last one.
    fn next_id(&mut self) -> u64 {
        let id = ((now_ms() - DISCORD_EPOCH_MS) as u64) << 22;
        self.last_id = id.max(self.last_id + 1);
        self.last_id
    }

    /// A message's `reactions` as Discord lists them: each emoji once, with its count.
    fn refresh_reactions(&mut self, channel: u64, id: u64) {
        let list = self.reactions.get(&id).cloned().unwrap_or_default();
        let mut counts: Vec<(String, u64, bool)> = Vec::new();
        for (emoji, user) in &list {
            match counts.iter_mut().find(|(e, _, _)| e == emoji) {
                Some(c) => {
                    c.1 += 1;
                    c.2 |= *user == self.bot.id;
                }
                None => counts.push((emoji.clone(), 1, *user == self.bot.id)),
            }
        }
        let reactions: Vec<Value> = counts
            .into_iter()
            .map(|(emoji, count, me)| {
                json!({
                    "count": count, "count_details": { "burst": 0, "normal": count }, "me": me, "me_burst": false,
                    "emoji": { "id": null, "name": emoji }, "burst_colors": [],
                })
            })
            .collect();
        if let Some(msg) = self.messages.get_mut(&channel).and_then(|m| m.get_mut(&id)) {
            msg["reactions"] = json!(reactions);
        }
    }

    /// As Discord fills them: each user the text mentions as <@id> or <@!id>, with their
    /// guild member outside DMs, and the roles mentioned as <@&id>.
    fn mentions(&self, channel: u64, content: &str) -> (Vec<Value>, Vec<String>) {
        let in_guild = !self.dms.values().any(|c| *c == channel);
        let ids = |open: &str| -> Vec<u64> {
            content
                .split(open)
                .skip(1)
                .filter_map(|rest| rest.split_once('>').and_then(|(id, _)| id.parse::<u64>().ok()))
                .collect()
        };
        let mut mentioned: Vec<u64> = ids("<@").into_iter().chain(ids("<@!")).collect();
        mentioned.sort_unstable();
        mentioned.dedup();
        let mentions: Vec<Value> = mentioned
            .iter()
            .filter_map(|id| if *id == self.bot.id { Some(&self.bot) } else { self.users.get(id) })
            .map(|u| {
                let mut j = user_json(u, u.id == self.bot.id);
                if in_guild {
                    let mut m = member(u);
                    if let Some(o) = m.as_object_mut() {
                        o.remove("user");
                    }
                    j["member"] = m;
                }
                j
            })
            .collect();
        let mention_roles: Vec<String> = ids("<@&").into_iter().map(|id| id.to_string()).collect();
        (mentions, mention_roles)
    }

    fn new_message(
        &mut self,
        channel: u64,
        author: &FakeUser,
        content: &str,
        reply_to: Option<u64>,
        files: &[(&str, &[u8])],
    ) -> Value {
        let id = self.next_id();
        let mut attachments = Vec::new();
        for (name, bytes) in files {
            let att = self.next_id();
            let key = format!("{channel}/{att}/{name}");
            let url = format!("https://cdn.discordapp.com/attachments/{key}?ex=0&is=0&hm=0");
            self.files.insert(key, bytes.to_vec());
            attachments.push(json!({
                "id": att.to_string(), "filename": name, "size": bytes.len(), "url": url,
                "proxy_url": url, "content_type": mime(name),
            }));
        }
        let is_bot = author.id == self.bot.id;
        let (mentions, mention_roles) = self.mentions(channel, content);
        let mut msg = json!({
            "id": id.to_string(),
            "channel_id": channel.to_string(),
            "author": user_json(author, is_bot),
            "content": content,
            "timestamp": amc_core::time::format_ms((id >> 22) as i64 + DISCORD_EPOCH_MS),
            "edited_timestamp": null,
            "tts": false,
            "mention_everyone": false,
            "mentions": mentions,
            "mention_roles": mention_roles,
            "attachments": attachments,
            "embeds": [],
            "pinned": false,
            "type": if reply_to.is_some() { 19 } else { 0 },
            "flags": 0,
        });
        if let Some(parent) = reply_to {
            msg["message_reference"] =
                json!({ "type": 0, "message_id": parent.to_string(), "channel_id": channel.to_string() });
        }
        self.messages.entry(channel).or_default().insert(id, msg.clone());
        self.last_message.insert(channel, id);
        msg
    }

    /// A message as the gateway carries it: with its guild, unless it is in a DM.
    fn in_guild(&self, channel: u64, msg: Value) -> Value {
        if self.dms.values().any(|c| *c == channel) { msg } else { with_guild(msg, self.guild.0) }
    }

    /// Logs a dispatch in the session (for RESUME) and sends it if a connection is live.
    fn dispatch(&mut self, t: &str, d: Value) {
        let Some(session) = self.session.as_mut() else { return };
        session.seq += 1;
        let frame = json!({ "op": 0, "t": t, "s": session.seq, "d": d });
        session.log.push((session.seq, frame.clone()));
        if let Some(live) = self.live.as_ref().filter(|_| !self.dead) {
            let _ = live.send(Command::Send(frame));
        }
    }

    fn ready(&mut self) -> Vec<Value> {
        let session_id = format!("session-{}", self.next_id());
        self.session = Some(Session { id: session_id.clone(), ..Session::default() });
        let bot = user_json(&self.bot, true);
        let (guild_id, guild_name) = self.guild.clone();
        self.dispatch(
            "READY",
            json!({
                "v": 10,
                "user": { "id": bot["id"], "username": bot["username"], "discriminator": "0", "global_name": null,
                          "avatar": null, "bot": true, "verified": true, "mfa_enabled": false, "flags": 0 },
                "guilds": if self.removed { json!([]) } else { json!([{ "id": guild_id.to_string(), "unavailable": true }]) },
                "session_id": session_id,
                "resume_gateway_url": self.resume_url,
                "shard": [0, 1],
                "application": { "id": self.bot.id.to_string(), "flags": 0 },
                "private_channels": [],
                "presences": [],
                "relationships": [],
                "user_settings": {},
                "guild_join_requests": [],
                "geo_ordered_rtc_regions": [],
            }),
        );
        let channels: Vec<Value> = self.channels.iter().enumerate().map(|(i, (id, _))| self.channel(*id, i)).collect();
        if !self.removed {
            let mut guild = guild_json(guild_id, &guild_name, self.owner, channels);
            // The bot's own member, as GUILD_CREATE carries it.
            guild["members"] = json!([member(&self.bot)]);
            guild["threads"] = json!(self.threads.keys().map(|id| self.thread_json(*id)).collect::<Vec<_>>());
            self.dispatch("GUILD_CREATE", guild);
        }
        self.session.as_ref().map(|s| s.log.iter().map(|(_, f)| f.clone()).collect()).unwrap_or_default()
    }
}

fn channel_json(id: u64, name: &str, guild: u64, position: usize, overwrites: &[Value]) -> Value {
    json!({
        "id": id.to_string(), "type": 0, "guild_id": guild.to_string(), "name": name,
        "position": position, "permission_overwrites": overwrites, "topic": null, "nsfw": false,
        "last_message_id": null, "rate_limit_per_user": 0, "parent_id": null, "flags": 0,
    })
}

fn guild_json(id: u64, name: &str, owner: u64, channels: Vec<Value>) -> Value {
    let mut guild = json!({
        "id": id.to_string(), "name": name, "icon": null, "icon_hash": null, "splash": null,
        "discovery_splash": null, "owner_id": owner.to_string(), "afk_channel_id": null, "afk_timeout": 300,
        "widget_enabled": false, "widget_channel_id": null, "verification_level": 0,
        "default_message_notifications": 0, "explicit_content_filter": 0,
        "roles": [{
            "id": id.to_string(), "name": "@everyone", "color": 0, "colors": { "primary_color": 0 },
            "hoist": false, "icon": null, "unicode_emoji": null, "position": 0, "permissions": "1071698660929",
            "managed": false, "mentionable": false, "flags": 0,
        }],
        "emojis": [], "features": [], "mfa_level": 0, "application_id": null, "system_channel_id": null,
        "system_channel_flags": 0, "rules_channel_id": null, "max_presences": null, "max_members": 500000,
    });
    let rest = json!({
        "vanity_url_code": null, "description": null, "banner": null, "premium_tier": 0,
        "premium_subscription_count": 0, "preferred_locale": "en-US", "public_updates_channel_id": null,
        "max_video_channel_users": 25, "max_stage_video_channel_users": 50, "nsfw_level": 0, "stickers": [],
        "premium_progress_bar_enabled": false, "safety_alerts_channel_id": null,
        "joined_at": "2024-01-01T00:00:00.000000+00:00", "large": false, "unavailable": false,
        "member_count": 2, "voice_states": [], "members": [], "threads": [],
        "presences": [], "stage_instances": [], "guild_scheduled_events": [],
    });
    if let (Some(g), Value::Object(rest)) = (guild.as_object_mut(), rest) {
        g.extend(rest);
        g.insert("channels".into(), Value::Array(channels));
    }
    guild
}

fn mime(name: &str) -> &'static str {
    match name.rsplit('.').next() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Which of the gateway's addresses a connection came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Address {
    /// The one `GET /gateway/bot` gives, for identifying.
    Gateway,
    /// READY's `resume_gateway_url`, for resuming.
    Resume,
}

async fn accept_loop(fake: FakeDiscord, listener: TcpListener, address: Address) {
    while let Ok((stream, _)) = listener.accept().await {
        if !fake.lock().accepting {
            drop(stream);
            continue;
        }
        tokio::spawn(connection(fake.clone(), stream, address));
    }
}

/// One gateway connection: HELLO, then IDENTIFY or RESUME, heartbeats, dispatches.
async fn connection(fake: FakeDiscord, stream: tokio::net::TcpStream, address: Address) {
    let Ok(ws) = tokio_tungstenite::accept_async(stream).await else { return };
    let (mut sink, mut source) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Command>();
    let interval = fake.lock().heartbeat_interval_ms;
    let hello = json!({ "op": 10, "d": { "heartbeat_interval": interval } });
    if sink.send(Frame::Text(hello.to_string())).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            cmd = rx.recv() => match cmd {
                Some(Command::Send(v)) => {
                    if sink.send(Frame::Text(v.to_string())).await.is_err() { return; }
                }
                Some(Command::Close(code)) => {
                    let frame = CloseFrame { code: CloseCode::from(code), reason: "closed by the fake".into() };
                    let _ = sink.send(Frame::Close(Some(frame))).await;
                    return;
                }
                Some(Command::Drop) | None => return,
            },
            frame = source.next() => {
                let Some(Ok(frame)) = frame else { return };
                let text = match frame {
                    Frame::Text(t) => t,
                    Frame::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
                    Frame::Close(_) => return,
                    _ => continue,
                };
                let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
                if let Some(reply) = on_frame(&fake, &v, &tx, address) {
                    for f in reply {
                        if sink.send(f).await.is_err() { return; }
                    }
                }
            }
        }
    }
}

fn token_matches(inner: &Inner, given: &str) -> bool {
    given.strip_prefix("Bot ").unwrap_or(given) == inner.token
}

fn on_frame(
    fake: &FakeDiscord,
    v: &Value,
    tx: &mpsc::UnboundedSender<Command>,
    address: Address,
) -> Option<Vec<Frame>> {
    let mut inner = fake.lock();
    let close = |code: u16, why: &str| {
        Some(vec![Frame::Close(Some(CloseFrame { code: CloseCode::from(code), reason: why.to_owned().into() }))])
    };
    let live = inner.live.as_ref().is_some_and(|l| l.same_channel(tx));
    if inner.dead && live {
        // A zombie: what the client says goes nowhere.
        return None;
    }
    match v["op"].as_u64() {
        Some(1) => {
            inner.heartbeats += 1;
            inner.last_ack = Some(std::time::Instant::now());
            Some(vec![Frame::Text(json!({ "op": 11 }).to_string())])
        }
        Some(2) => {
            let d = &v["d"];
            if !token_matches(&inner, d["token"].as_str().unwrap_or_default()) {
                return close(4004, "Authentication failed.");
            }
            let intents = d["intents"].as_u64().unwrap_or(0);
            if intents & MESSAGE_CONTENT != 0 && !inner.content_intent {
                return close(4014, "Disallowed intent(s).");
            }
            inner.identifies += 1;
            // READY and GUILD_CREATE go out once, as this answer: the connection becomes the
            // live one only after them, so they are not also sent as live dispatches.
            inner.live = None;
            let frames = inner.ready().into_iter().map(|f| Frame::Text(f.to_string())).collect();
            inner.live = Some(tx.clone());
            inner.dead = false;
            for c in inner.connected.drain(..) {
                let _ = c.send(());
            }
            Some(frames)
        }
        Some(6) => {
            let d = &v["d"];
            if !token_matches(&inner, d["token"].as_str().unwrap_or_default()) {
                return close(4004, "Authentication failed.");
            }
            let session_ok = inner.session.as_ref().is_some_and(|s| Some(s.id.as_str()) == d["session_id"].as_str());
            if !session_ok {
                return Some(vec![Frame::Text(json!({ "op": 9, "d": false }).to_string())]);
            }
            if address != Address::Resume && inner.refuse_misplaced_resumes {
                inner.misplaced_resumes += 1;
                inner.session = None;
                return Some(vec![Frame::Text(json!({ "op": 9, "d": false }).to_string())]);
            }
            inner.resumes += 1;
            inner.live = Some(tx.clone());
            inner.dead = false;
            let after = d["seq"].as_u64().unwrap_or(0);
            let mut frames: Vec<Frame> = inner
                .session
                .as_ref()
                .map(|s| {
                    s.log.iter().filter(|(seq, _)| *seq > after).map(|(_, f)| Frame::Text(f.to_string())).collect()
                })
                .unwrap_or_default();
            if let Some(s) = inner.session.as_mut() {
                s.seq += 1;
                let resumed = json!({ "op": 0, "t": "RESUMED", "s": s.seq, "d": {} });
                frames.push(Frame::Text(resumed.to_string()));
            }
            for c in inner.connected.drain(..) {
                let _ = c.send(());
            }
            Some(frames)
        }
        _ => None,
    }
}

fn router(fake: FakeDiscord) -> Router {
    Router::new()
        .route("/api/v10/gateway", get(gateway))
        .route("/api/v10/gateway/bot", get(gateway_bot))
        .route("/api/v10/users/@me", get(me))
        .route("/api/v10/oauth2/applications/@me", get(application))
        .route("/api/v10/channels/{channel}", get(channel))
        .route("/api/v10/guilds/{guild}/threads/active", get(active_threads))
        .route("/api/v10/guilds/{guild}/channels", get(guild_channels))
        .route("/api/v10/channels/{channel}/messages", get(messages).post(create))
        .route("/api/v10/channels/{channel}/messages/{id}", get(message))
        .route("/api/v10/channels/{channel}/messages/{id}/reactions/{emoji}", get(reaction_users))
        .route("/api/v10/interactions/{id}/{token}/callback", post(interaction_callback))
        .route("/api/v10/webhooks/{application}/{token}/messages/@original", patch(interaction_answer))
        .fallback(|| async { discord_error(StatusCode::NOT_FOUND, 0, "404: Not Found") })
        .route_layer(axum::middleware::from_fn_with_state(fake.clone(), limits::limit))
        .route("/attachments/{channel}/{id}/{name}", get(cdn))
        .with_state(fake)
}

fn discord_error(status: StatusCode, code: i64, message: &str) -> Response {
    (status, axum::Json(json!({ "message": message, "code": code }))).into_response()
}

/// The `Authorization` header, if it carries the bot's token.
fn authorized(fake: &FakeDiscord, headers: &HeaderMap) -> Option<String> {
    let auth = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let inner = fake.lock();
    (auth.strip_prefix("Bot ") == Some(inner.token.as_str())).then_some(auth)
}

fn unauthorized() -> Response {
    discord_error(StatusCode::UNAUTHORIZED, 0, "401: Unauthorized")
}

async fn gateway(State(fake): State<FakeDiscord>) -> Response {
    axum::Json(json!({ "url": fake.lock().gateway_url })).into_response()
}

async fn gateway_bot(State(fake): State<FakeDiscord>, headers: HeaderMap) -> Response {
    if authorized(&fake, &headers).is_none() {
        return unauthorized();
    }
    let url = fake.lock().gateway_url.clone();
    axum::Json(json!({
        "url": url, "shards": 1,
        "session_start_limit": { "total": 1000, "remaining": 999, "reset_after": 14_400_000, "max_concurrency": 1 },
    }))
    .into_response()
}

async fn me(State(fake): State<FakeDiscord>, headers: HeaderMap) -> Response {
    if authorized(&fake, &headers).is_none() {
        return unauthorized();
    }
    let bot = fake.lock().bot.clone();
    axum::Json(user_json(&bot, true)).into_response()
}

/// `GET /oauth2/applications/@me`: the bot's application, whose id is the bot's (as for
/// every application made since 2016), with the Message Content intent in its flags
/// (`GATEWAY_MESSAGE_CONTENT`, 1 << 18) while it is on.
async fn application(State(fake): State<FakeDiscord>, headers: HeaderMap) -> Response {
    if authorized(&fake, &headers).is_none() {
        return unauthorized();
    }
    let inner = fake.lock();
    let flags = if inner.content_intent { 1 << 18 } else { 0 };
    axum::Json(json!({
        "id": inner.bot.id.to_string(),
        "name": inner.bot.name,
        "icon": null,
        "description": "",
        "bot_public": false,
        "bot_require_code_grant": false,
        "verify_key": "0".repeat(64),
        "team": null,
        "owner": user_json(&inner.bot, false),
        "flags": flags,
        "bot": user_json(&inner.bot, true),
    }))
    .into_response()
}

async fn messages(
    State(fake): State<FakeDiscord>,
    Path(channel): Path<u64>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if authorized(&fake, &headers).is_none() {
        return unauthorized();
    }
    let mut inner = fake.lock();
    inner.history_requests += 1;
    match inner.history_failures.get_mut(&channel).and_then(VecDeque::pop_front) {
        Some(HistoryFailure::ServerError) => {
            return discord_error(StatusCode::INTERNAL_SERVER_ERROR, 0, "500: Internal Server Error");
        }
        Some(HistoryFailure::RateLimited { retry_after }) => {
            let body = json!({ "message": "You are being rate limited.", "retry_after": retry_after, "global": false });
            let wait = (retry_after.ceil() as u64).to_string();
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER.as_str(), wait.as_str()), ("x-ratelimit-scope", "user")],
                axum::Json(body),
            )
                .into_response();
        }
        None => {}
    }
    let guild_channel = inner.channels.iter().any(|c| c.0 == channel) || inner.threads.contains_key(&channel);
    if guild_channel && (inner.removed || !inner.bot_can_read(channel)) {
        return discord_error(StatusCode::FORBIDDEN, 50001, "Missing Access");
    }
    if inner.forums.contains(&channel) {
        return discord_error(StatusCode::BAD_REQUEST, 50024, "Cannot execute action on this channel type");
    }
    let Some(all) = inner.messages.get(&channel) else {
        return discord_error(StatusCode::NOT_FOUND, 10003, "Unknown Channel");
    };
    let limit = q.get("limit").and_then(|l| l.parse::<usize>().ok()).unwrap_or(50).clamp(1, 100);
    let num = |k: &str| q.get(k).and_then(|v| v.parse::<u64>().ok());
    // Discord answers newest first; `after` takes the oldest `limit` after the id.
    let mut page: Vec<Value> = if let Some(after) = num("after") {
        all.range(after + 1..).take(limit).map(|(_, m)| m.clone()).collect()
    } else if let Some(before) = num("before") {
        all.range(..before).rev().take(limit).map(|(_, m)| m.clone()).collect()
    } else {
        all.values().rev().take(limit).cloned().collect()
    };
    page.sort_by_key(|m| std::cmp::Reverse(m["id"].as_str().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)));
    axum::Json(page).into_response()
}

/// `GET /guilds/{id}/threads/active`: every thread of the guild (none is archived here).
async fn active_threads(State(fake): State<FakeDiscord>, Path(guild): Path<u64>, headers: HeaderMap) -> Response {
    guild_route(&fake, &headers, guild, |inner| {
        let threads: Vec<Value> = inner.threads.keys().map(|id| inner.thread_json(*id)).collect();
        json!({ "threads": threads, "members": [] })
    })
}

/// A route under `/guilds/{id}`: `answer`, or 401 without the bot's token, or Unknown
/// Guild for another guild or one the bot was removed from.
fn guild_route(fake: &FakeDiscord, headers: &HeaderMap, guild: u64, answer: impl FnOnce(&Inner) -> Value) -> Response {
    if authorized(fake, headers).is_none() {
        return unauthorized();
    }
    let inner = fake.lock();
    if guild != inner.guild.0 || inner.removed {
        return discord_error(StatusCode::NOT_FOUND, 10004, "Unknown Guild");
    }
    axum::Json(answer(&inner)).into_response()
}

/// `GET /guilds/{id}/channels`: the guild's channels, threads not among them.
async fn guild_channels(State(fake): State<FakeDiscord>, Path(guild): Path<u64>, headers: HeaderMap) -> Response {
    guild_route(&fake, &headers, guild, |inner| {
        json!(inner.channels.iter().enumerate().map(|(i, (id, _))| inner.channel(*id, i)).collect::<Vec<_>>())
    })
}

/// `GET /channels/{id}`: a guild channel, a thread or a DM.
async fn channel(State(fake): State<FakeDiscord>, Path(id): Path<u64>, headers: HeaderMap) -> Response {
    if authorized(&fake, &headers).is_none() {
        return unauthorized();
    }
    let inner = fake.lock();
    if inner.threads.contains_key(&id) {
        return axum::Json(inner.thread_json(id)).into_response();
    }
    if let Some(dm) = inner.dm_json(id) {
        return axum::Json(dm).into_response();
    }
    match inner.channels.iter().position(|c| c.0 == id) {
        Some(at) => axum::Json(inner.channel(id, at)).into_response(),
        None => discord_error(StatusCode::NOT_FOUND, 10003, "Unknown Channel"),
    }
}

async fn message(
    State(fake): State<FakeDiscord>,
    Path((channel, id)): Path<(u64, u64)>,
    headers: HeaderMap,
) -> Response {
    if authorized(&fake, &headers).is_none() {
        return unauthorized();
    }
    match fake.lock().messages.get(&channel).and_then(|m| m.get(&id)).cloned() {
        Some(m) => axum::Json(m).into_response(),
        None => discord_error(StatusCode::NOT_FOUND, 10008, "Unknown Message"),
    }
}

/// `GET /channels/{id}/messages/{id}/reactions/{emoji}`: the users who reacted with it.
async fn reaction_users(
    State(fake): State<FakeDiscord>,
    Path((channel, id, emoji)): Path<(u64, u64, String)>,
    headers: HeaderMap,
) -> Response {
    if authorized(&fake, &headers).is_none() {
        return unauthorized();
    }
    let inner = fake.lock();
    if !inner.messages.get(&channel).is_some_and(|m| m.contains_key(&id)) {
        return discord_error(StatusCode::NOT_FOUND, 10008, "Unknown Message");
    }
    let users: Vec<Value> = inner
        .reactions
        .get(&id)
        .into_iter()
        .flatten()
        .filter(|(e, _)| *e == emoji)
        .filter_map(|(_, u)| if *u == inner.bot.id { Some(&inner.bot) } else { inner.users.get(u) })
        .map(|u| user_json(u, u.id == inner.bot.id))
        .collect();
    axum::Json(users).into_response()
}

async fn cdn(State(fake): State<FakeDiscord>, Path((channel, id, name)): Path<(u64, u64, String)>) -> Response {
    match fake.lock().files.get(&format!("{channel}/{id}/{name}")).cloned() {
        Some(bytes) => ([(header::CONTENT_TYPE, mime(&name))], bytes).into_response(),
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

async fn create(State(fake): State<FakeDiscord>, Path(channel): Path<u64>, req: Request) -> Response {
    let headers = req.headers().clone();
    let Some(authorization) = authorized(&fake, &headers) else { return unauthorized() };
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let mut files = Vec::new();
    let payload: Value = if content_type.starts_with("multipart/form-data") {
        let Ok(mut form) = <Multipart as axum::extract::FromRequest<()>>::from_request(req, &()).await else {
            return discord_error(StatusCode::BAD_REQUEST, 50035, "Invalid Form Body");
        };
        let mut payload = Value::Null;
        while let Ok(Some(field)) = form.next_field().await {
            let name = field.name().unwrap_or_default().to_owned();
            let file_name = field.file_name().map(str::to_owned);
            let Ok(bytes) = field.bytes().await else { break };
            if name == "payload_json" {
                payload = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            } else {
                files.push((name, file_name.unwrap_or_default(), bytes.to_vec()));
            }
        }
        payload
    } else {
        let Ok(bytes) = axum::body::to_bytes(req.into_body(), 1 << 20).await else {
            return discord_error(StatusCode::BAD_REQUEST, 50109, "The request body contains invalid JSON.");
        };
        let bytes: Bytes = bytes;
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    let mut inner = fake.lock();
    inner.posts.push(RecordedPost {
        channel_id: channel.to_string(),
        content_type,
        authorization,
        payload: payload.clone(),
        files: files.clone(),
    });
    if let Some((status, headers, body)) = inner.post_replies.pop_front() {
        let mut resp = (StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), axum::Json(body))
            .into_response();
        for (k, v) in headers {
            if let (Ok(k), Ok(v)) = (k.parse::<axum::http::HeaderName>(), v.parse::<axum::http::HeaderValue>()) {
                resp.headers_mut().insert(k, v);
            }
        }
        return resp;
    }
    let guild_channel = inner.channels.iter().any(|c| c.0 == channel);
    if guild_channel && (inner.removed || !inner.bot_can_read(channel)) {
        return discord_error(StatusCode::FORBIDDEN, 50001, "Missing Access");
    }
    if !inner.messages.contains_key(&channel) && !inner.dms.values().any(|c| *c == channel) {
        return discord_error(StatusCode::NOT_FOUND, 10003, "Unknown Channel");
    }
    let content = payload["content"].as_str().unwrap_or_default().to_owned();
    if content.chars().count() > 2000 || !valid_components(&payload["components"]) {
        return discord_error(StatusCode::BAD_REQUEST, 50035, "Invalid Form Body");
    }
    let reply_to = payload["message_reference"]["message_id"].as_str().and_then(|s| s.parse().ok());
    let bot = inner.bot.clone();
    let uploads: Vec<(String, Vec<u8>)> = files.into_iter().map(|(_, name, bytes)| (name, bytes)).collect();
    let refs: Vec<(&str, &[u8])> = uploads.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect();
    let mut msg = inner.new_message(channel, &bot, &content, reply_to, &refs);
    if payload["components"].is_array() {
        msg["components"] = payload["components"].clone();
        if let Some(stored) = inner
            .messages
            .get_mut(&channel)
            .and_then(|m| msg["id"].as_str().and_then(|id| id.parse::<u64>().ok()).and_then(|id| m.get_mut(&id)))
        {
            stored["components"] = payload["components"].clone();
        }
    }
    let event = inner.in_guild(channel, msg.clone());
    inner.dispatch("MESSAGE_CREATE", event);
    axum::Json(msg).into_response()
}

/// Whether `components` are as Discord takes them on a message: at most 5 action rows
/// (type 1) of at most 5 buttons (type 2), each with a label of at most 80 characters and,
/// but for a link button (style 5), a `custom_id` of 1 to 100 characters
/// (<https://discord.com/developers/docs/components/reference>). None at all is fine.
fn valid_components(components: &Value) -> bool {
    let Some(rows) = components.as_array() else { return components.is_null() };
    rows.len() <= 5
        && rows.iter().all(|row| {
            row["type"] == 1
                && row["components"].as_array().is_some_and(|buttons| {
                    (1..=5).contains(&buttons.len())
                        && buttons.iter().all(|b| {
                            let label = b["label"].as_str().map_or(0, |l| l.chars().count());
                            let custom = b["custom_id"].as_str().map_or(0, |c| c.chars().count());
                            b["type"] == 2 && label <= 80 && (b["style"] == 5 || (1..=100).contains(&custom))
                        })
                })
        })
}

/// `POST /interactions/{id}/{token}/callback`: the bot's one answer to a pressed button. An
/// unknown interaction or token is 404 (10062, "Unknown interaction"); a second answer is
/// 400 (40060, "Interaction has already been acknowledged.").
async fn interaction_callback(
    State(fake): State<FakeDiscord>,
    Path((id, token)): Path<(u64, String)>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut inner = fake.lock();
    let Some(interaction) = inner.interactions.get_mut(&id).filter(|i| i.token == token) else {
        return discord_error(StatusCode::NOT_FOUND, 10062, "Unknown interaction");
    };
    if !interaction.callbacks.is_empty() {
        return discord_error(StatusCode::BAD_REQUEST, 40060, "Interaction has already been acknowledged.");
    }
    if !matches!(body["type"].as_u64(), Some(4..=7)) {
        return discord_error(StatusCode::BAD_REQUEST, 50035, "Invalid Form Body");
    }
    if let Some(content) = body["data"]["content"].as_str() {
        interaction.answer = Some(content.to_owned());
    }
    interaction.callbacks.push(body);
    StatusCode::NO_CONTENT.into_response()
}

/// `PATCH /webhooks/{application}/{token}/messages/@original`: the bot edits its answer to
/// a pressed button (after deferring it). Unknown before the interaction was answered
/// (10008, "Unknown Message"), as Discord has no message to edit yet.
async fn interaction_answer(
    State(fake): State<FakeDiscord>,
    Path((application, token)): Path<(u64, String)>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut inner = fake.lock();
    let bot = inner.bot.clone();
    let id = inner.next_id();
    let Some((_, interaction)) =
        inner.interactions.iter_mut().find(|(_, i)| i.token == token && !i.callbacks.is_empty())
    else {
        return discord_error(StatusCode::NOT_FOUND, 10008, "Unknown Message");
    };
    if application != bot.id {
        return discord_error(StatusCode::NOT_FOUND, 10015, "Unknown Webhook");
    }
    let content = body["content"].as_str().unwrap_or_default().to_owned();
    interaction.answer = Some(content.clone());
    // An ephemeral message: the presser's alone, in no channel's history.
    axum::Json(json!({
        "id": id.to_string(),
        "channel_id": "0",
        "author": user_json(&bot, true),
        "content": content,
        "timestamp": amc_core::time::format_ms((id >> 22) as i64 + DISCORD_EPOCH_MS),
        "edited_timestamp": null,
        "tts": false,
        "mention_everyone": false,
        "mentions": [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "pinned": false,
        "type": 0,
        "flags": 64,
    }))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fake's payloads are what serenity reads from Discord.
    #[tokio::test]
    async fn payloads_deserialize_as_serenity_models() {
        let fake = FakeDiscord::start("t", &["general"]).await.expect("fake");
        let frames = fake.lock().ready();
        let ready: serenity::all::Ready = serde_json::from_value(frames[0]["d"].clone()).expect("READY");
        assert_eq!(ready.user.id.get(), fake.bot().id);
        let guild: serenity::all::Guild = serde_json::from_value(frames[1]["d"].clone()).expect("GUILD_CREATE");
        assert_eq!(guild.channels.len(), 1);
        let channel = fake.channel_ids()[0];
        let alice = fake.user("alice");
        let parent = fake.post(channel, &alice, "hello");
        fake.post_with(channel, &alice, "see this", Some(parent), &[("a.png", b"png")]);
        for m in fake.history(channel) {
            let m: serenity::all::Message = serde_json::from_value(with_guild(m, 1)).expect("message");
            assert_eq!(m.author.id.get(), alice.id);
        }
        let reaction = json!({
            "user_id": "1", "channel_id": "2", "message_id": "3", "guild_id": "4",
            "emoji": { "id": null, "name": "👍" }, "burst": false, "type": 0, "member": member(&alice),
        });
        // Channels, threads and DMs carry their newest message's id.
        let thread = fake.create_thread(channel, "plans");
        let in_thread = fake.post(thread, &alice, "in the thread");
        let dm = fake.dm(&alice, "hi bot");
        let inner = fake.lock();
        let listed: serenity::all::GuildChannel = serde_json::from_value(inner.channel(channel, 0)).expect("channel");
        assert_eq!(listed.last_message_id.map(|m| m.get()), fake_last(&inner, channel));
        let t: serenity::all::GuildChannel = serde_json::from_value(inner.thread_json(thread)).expect("thread");
        assert_eq!(t.last_message_id.map(|m| m.get()), Some(in_thread));
        let d: serenity::all::Channel = serde_json::from_value(inner.dm_json(dm).expect("a DM")).expect("DM");
        let serenity::all::Channel::Private(d) = d else { panic!("a DM reads as a private channel") };
        assert_eq!((d.recipient.id.get(), d.last_message_id.map(|m| m.get())), (alice.id, fake_last(&inner, dm)));
        drop(inner);
        let r: serenity::all::Reaction = serde_json::from_value(reaction).expect("reaction");
        assert_eq!(crate::convert::emoji(&r.emoji), "👍");
    }

    /// An IDENTIFY is answered with READY and GUILD_CREATE once: not also as live
    /// dispatches on the same connection.
    #[tokio::test]
    async fn ready_comes_once() {
        let fake = FakeDiscord::start("t", &["general"]).await.expect("fake");
        let (tx, mut rx) = mpsc::unbounded_channel();
        let identify = json!({ "op": 2, "d": { "token": "t", "intents": 0 } });
        let frames = on_frame(&fake, &identify, &tx, Address::Gateway).expect("an answer");
        let events: Vec<String> = frames
            .iter()
            .filter_map(|f| match f {
                Frame::Text(t) => serde_json::from_str::<Value>(t).ok()?["t"].as_str().map(str::to_owned),
                _ => None,
            })
            .collect();
        assert_eq!(events, ["READY", "GUILD_CREATE"]);
        assert!(rx.try_recv().is_err(), "nothing sent twice");
    }

    fn fake_last(inner: &Inner, channel: u64) -> Option<u64> {
        inner.messages.get(&channel).and_then(|m| m.keys().next_back().copied())
    }
}
