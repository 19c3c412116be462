//! Approvals from the person's phone: AMC asks about each held send and tool request in the
//! person's own conversations (their iMessage conversation with themselves, their DM with the
//! Discord bot), and the person's answer there decides it as the window would: in Messages a
//! 👍 or 👎 tapback on the question or a reply `yes CODE` / `no CODE`; on Discord the
//! question's Approve and Reject buttons, a 👍 or 👎 reaction, or the same reply.
//!
//! What keeps it the person's alone:
//! - **Where.** Only a conversation of the person with themselves ([`refusal`]): in Messages,
//!   one whose one participant is one of the person's own addresses, as Messages records
//!   them; on Discord, the bot's DM with the person's own account (`discord_user_id`).
//!   Checked when the person sets it, and again before every message AMC sends there.
//!   Setting it blocks the channel: no agent reads, searches, is pushed or sends to it, and
//!   it cannot be approved while it is set.
//! - **Who answers.** A row of that conversation written by the person (their own devices,
//!   the echo Messages writes from one of their own addresses, their Discord account),
//!   never a question AMC sent itself (its platform id is the question's), and only in the
//!   answer's exact form: a question never reads as an answer, whatever an agent wrote in it.
//!   A button pressed by anyone else is refused.
//! - **When.** The first answer wins, wherever given; a question expires (a setting, 30
//!   minutes by default) and a late answer is refused; pausing AMC or revoking the agent
//!   withdraws it. Held sends and requests from before the person turned this on are
//!   answered in AMC.
//! - **How much.** At most a few questions a minute in each conversation
//!   ([`PHONE_ASKS_A_MINUTE`] unless set); past that one line says how many more wait in AMC.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Deserializer, Serialize};

use super::Amc;
use crate::error::{Error, ErrorCode, Result};
use crate::events::Event;
use crate::model::{
    ChannelKind, DecidedVia, IncomingMessage, OutboxItem, OutboxStatus, PhoneAsk, PhoneAskKind, PhoneAskState,
    ReactionChange, SenderInfo, Source, ToolRequest, ToolRequestStatus,
};
use crate::sender::OutgoingSend;
use crate::time::{Millis, now_ms};
use amc_store::{
    NewPhoneAsk, PHONE_CHANNEL_SETTING, PHONE_DISCORD_SETTING, PHONE_SINCE_SETTING, PhoneChannelFacts, Store,
};

/// At most this many questions reach each conversation a minute, unless set
/// (`asks_a_minute`).
pub const PHONE_ASKS_A_MINUTE: u32 = 3;
/// How long the phone may answer a question, unless set (`expire_minutes`).
pub const PHONE_EXPIRES_MINUTES: u32 = 30;
/// How long questions are kept once ended.
const PHONE_ASKS_KEPT_FOR: Duration = Duration::from_secs(30 * 86_400);
/// How often the phone's questions are looked over without an event (expiry, a missed
/// event).
const PHONE_LOOK_EVERY: Duration = Duration::from_secs(15);

const KINDS_SETTING: &str = "phone_kinds";
const EXPIRE_SETTING: &str = "phone_expire_minutes";
const A_MINUTE_SETTING: &str = "phone_asks_a_minute";
/// The person's own addresses, as each source last said them (a JSON array): their
/// addresses in Messages, their Discord user id.
const OWN_ADDRESSES_KEY: &str = "own_addresses";

/// The emoji of the tapbacks and reactions that answer.
const YES: &str = "👍";
const NO: &str = "👎";

/// The custom id of a question's buttons on Discord: `amc-phone:yes:K7QF`.
const BUTTON_PREFIX: &str = "amc-phone:";

/// The setting that names the conversation AMC asks in on `source`.
fn setting_key(source: Source) -> &'static str {
    match source {
        Source::Imessage => PHONE_CHANNEL_SETTING,
        Source::Discord => PHONE_DISCORD_SETTING,
    }
}

/// Where the person decided, answering in a conversation of `source`.
fn decided_via(source: Source) -> DecidedVia {
    match source {
        Source::Imessage => DecidedVia::PhoneImessage,
        Source::Discord => DecidedVia::PhoneDiscord,
    }
}

/// A button's custom id for `code`, and what a pressed one says: `(yes, code)`.
pub fn button_id(yes: bool, code: &str) -> String {
    format!("{BUTTON_PREFIX}{}:{code}", if yes { "yes" } else { "no" })
}

/// What a pressed button's custom id says, if it is one of AMC's questions'.
pub fn pressed(custom_id: &str) -> Option<(bool, String)> {
    let rest = custom_id.strip_prefix(BUTTON_PREFIX)?;
    let (word, code) = rest.split_once(':')?;
    let yes = match word {
        "yes" => true,
        "no" => false,
        _ => return None,
    };
    crate::ids::is_phone_code(code).then(|| (yes, code.to_ascii_uppercase()))
}

/// Where AMC asks and what, as the person set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhoneSettings {
    /// The iMessage conversation AMC asks in, or `null`.
    pub imessage: Option<PhoneConversation>,
    /// The DM with the Discord bot AMC asks in, or `null`.
    pub discord: Option<PhoneConversation>,
    /// Whether held sends are asked about.
    pub sends: bool,
    /// Whether tool requests are asked about.
    pub tools: bool,
    /// How long the phone may answer a question, in minutes.
    pub expire_minutes: u32,
    /// At most this many questions a minute in each conversation.
    pub asks_a_minute: u32,
    /// The person's own addresses, as Messages records them: a conversation with one of
    /// them alone is one AMC may ask in.
    pub own_addresses: Vec<String>,
    /// The person's own Discord account (`discord_user_id`), if AMC knows it.
    pub discord_user_id: Option<String>,
    /// The conversations AMC could ask in: the person's own.
    pub candidates: Vec<PhoneConversation>,
}

/// A conversation AMC asks (or could ask) in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhoneConversation {
    /// Its channel.
    pub channel_id: String,
    /// Its source.
    pub source: Source,
    /// Its name.
    pub name: String,
    /// The person's address (or Discord user id) it is with.
    pub address: String,
}

/// `POST /admin/phone`: what to change; what is left out stays.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PhoneChange {
    /// An iMessage channel's id to ask in, or `null` to stop asking there.
    #[serde(default, deserialize_with = "given")]
    pub imessage: Option<Option<String>>,
    /// A Discord DM channel's id to ask in, or `null` to stop asking there.
    #[serde(default, deserialize_with = "given")]
    pub discord: Option<Option<String>>,
    /// Whether held sends are asked about.
    pub sends: Option<bool>,
    /// Whether tool requests are asked about.
    pub tools: Option<bool>,
    /// How long the phone may answer, 1 to 1,440 minutes.
    pub expire_minutes: Option<u32>,
    /// At most this many questions a minute in each conversation, 1 to 30.
    pub asks_a_minute: Option<u32>,
}

/// A field that is there, `null` included: `Some(None)`.
fn given<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// A conversation AMC asks in, as the running core holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::service) struct PhoneTarget {
    channel_id: String,
    platform_id: String,
    source: Source,
}

/// What the core keeps in memory about the phone.
#[derive(Debug, Default)]
pub(in crate::service) struct PhoneState {
    targets: Mutex<Vec<PhoneTarget>>,
    /// Questions over the limit not counted on the phone yet: when the last was skipped,
    /// and when the last line counting them was sent.
    skips: Mutex<Skips>,
    /// Wakes the phone's loop.
    wake: tokio::sync::Notify,
    /// The questions whose late answer the phone was told of (once each).
    told: Mutex<std::collections::HashSet<String>>,
}

/// The conversations the store says AMC asks in.
fn targets_in(store: &Store) -> Result<Vec<PhoneTarget>> {
    let mut targets = Vec::new();
    for source in [Source::Imessage, Source::Discord] {
        if let Some(id) = store.setting(setting_key(source))?
            && let Ok(facts) = store.phone_channel_facts(&id)
        {
            targets.push(PhoneTarget { channel_id: facts.id, platform_id: facts.platform_id, source });
        }
    }
    Ok(targets)
}

impl PhoneState {
    /// The state for a store, with the conversations it says AMC asks in.
    pub(in crate::service) fn load(store: &Store) -> Result<Self> {
        let state = Self::default();
        *lock(&state.targets) = targets_in(store)?;
        Ok(state)
    }
}

/// The line counting questions over the limit: sent once they stop coming for
/// [`SKIPS_SETTLE`], at most once a minute.
#[derive(Debug, Default)]
struct Skips {
    last_skip: Option<Instant>,
    last_line: Option<Instant>,
}

/// How long questions over the limit must stop coming before the line counts them.
const SKIPS_SETTLE: Duration = Duration::from_secs(2);

impl Skips {
    /// Whether the line is due now.
    fn due(&self) -> bool {
        self.last_skip.is_some_and(|s| s.elapsed() >= SKIPS_SETTLE)
            && self.last_line.is_none_or(|l| l.elapsed() >= Duration::from_secs(60))
    }

    /// How soon the loop should look again: when the line is due, if one waits.
    fn next_look(&self) -> Duration {
        let Some(skip) = self.last_skip else { return PHONE_LOOK_EVERY };
        let settled = SKIPS_SETTLE.saturating_sub(skip.elapsed());
        let minute = self.last_line.map_or(Duration::ZERO, |l| Duration::from_secs(60).saturating_sub(l.elapsed()));
        settled.max(minute).min(PHONE_LOOK_EVERY)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why channel `facts` cannot be where AMC asks the person, or `None` when it can, given
/// the person's own addresses on its source (`own`): one-to-one, still there, and the
/// person's alone. In Messages, its one participant (as chat.db's `chat_handle_join` gives
/// it) is one of the person's addresses and keys its chat; on Discord, it is the bot's DM
/// with the person's own account.
pub fn refusal(facts: &PhoneChannelFacts, own: &[String]) -> Option<&'static str> {
    let norm = |a: &str| crate::model::reader_handle(a);
    if facts.kind != ChannelKind::Dm {
        return Some("a group is read by others: AMC asks only in your conversation with yourself");
    }
    if facts.gone {
        return Some("this conversation is gone");
    }
    if own.is_empty() {
        return Some(match facts.source {
            Source::Imessage => "AMC does not know your own addresses yet: it reads them from chat.db once it has one",
            Source::Discord => "AMC does not know your Discord account: set discord_user_id in config.toml",
        });
    }
    let [reader] = facts.readers.as_deref().unwrap_or_default() else {
        return Some("AMC cannot tell that you alone are in this conversation");
    };
    let yours = own.iter().any(|a| norm(a) == norm(reader));
    // A one-to-one chat's guid names its participant: `iMessage;-;+15551234567`. A
    // Discord DM's id names nobody: its other side is the reader.
    let keyed = match facts.source {
        Source::Imessage => facts.platform_id.split_once(";-;").is_some_and(|(_, id)| norm(id) == norm(reader)),
        Source::Discord => true,
    };
    if !yours || !keyed {
        return Some("this conversation is with someone else: AMC asks only in your conversation with yourself");
    }
    None
}

/// An answer in the conversation AMC asks in: `yes K7QF` or `no K7QF` (any case, a full
/// stop or an exclamation mark after), and nothing else.
pub fn answer(text: &str) -> Option<(bool, String)> {
    let text = text.trim().trim_end_matches(['.', '!']);
    let (word, code) = text.split_once(char::is_whitespace)?;
    let code = code.trim();
    let yes = match word.to_ascii_lowercase().as_str() {
        "yes" => true,
        "no" => false,
        _ => return None,
    };
    crate::ids::is_phone_code(code).then(|| (yes, code.to_ascii_uppercase()))
}

/// How to answer, on every question: in Messages a tapback or a reply; on Discord the
/// message's buttons or a reply.
fn how_to_answer(code: &str, source: Source) -> String {
    match source {
        Source::Discord => format!("Press Approve or Reject, or reply \"yes {code}\" or \"no {code}\"."),
        Source::Imessage => format!("Reply \"yes {code}\" or \"no {code}\", or tap 👍 or 👎 on this message."),
    }
}

/// Text of others, as the phone shows it: escaped as in the terminal, one-time codes and
/// sign-in links hidden, at most `chars` characters.
fn quoted(text: &str, chars: usize, on: Source) -> String {
    let hidden = amc_secrets::hide(text, &amc_secrets::find(text, false));
    let mut shown = crate::text::shown(&hidden);
    if shown.chars().count() > chars {
        shown = shown.chars().take(chars).collect::<String>() + "…";
    }
    match on {
        // Discord draws markdown: a masked link, a spoiler or a heading would show the person
        // something else than what goes out. Each character that marks it is escaped.
        Source::Discord => shown.chars().fold(String::with_capacity(shown.len()), |mut out, c| {
            if matches!(c, '\\' | '*' | '_' | '~' | '|' | '`' | '>' | '#' | '[' | ']' | '(' | ')' | '-' | '<' | ':') {
                out.push('\\');
            }
            out.push(c);
            out
        }),
        Source::Imessage => shown,
    }
}

/// The question about a held send.
fn send_question(item: &OutboxItem, readers: &[String], code: &str, on: Source) -> String {
    let mut q = format!(
        "AMC: {} wants to send to {} ({}):\n“{}”",
        quoted(&item.agent_id, 64, on),
        quoted(&item.channel_name, 80, on),
        item.source.display_name(),
        quoted(&item.text, 600, on)
    );
    if !item.attachments.is_empty() {
        // At most five named: a question stays within Discord's 2,000 characters.
        let names: Vec<String> = item.attachments.iter().take(5).map(|a| quoted(&a.filename, 80, on)).collect();
        q.push_str(&format!("\nFiles: {}", names.join(", ")));
        if item.attachments.len() > 5 {
            q.push_str(&format!(" and {} more", item.attachments.len() - 5));
        }
    }
    if !readers.is_empty() {
        let shown: Vec<String> = readers.iter().take(8).map(|r| quoted(r, 64, on)).collect();
        let more = readers.len().saturating_sub(8);
        q.push_str(&format!("\nWho gets it: {}", shown.join(", ")));
        if more > 0 {
            q.push_str(&format!(" and {more} more"));
        }
    }
    if item.held_reason.is_some() {
        q.push_str("\nHeld because the agent read other conversations that not everyone here can read.");
    }
    q.push('\n');
    q.push_str(&how_to_answer(code, on));
    q
}

/// The question about a tool request.
fn tool_question(r: &ToolRequest, code: &str, on: Source) -> String {
    let mut q = format!("AMC: {} asks to use {}", quoted(&r.agent_id, 64, on), quoted(&r.tool_name, 80, on));
    if !r.description.trim().is_empty() {
        q.push_str(&format!(": {}", quoted(&r.description, 300, on)));
    }
    if !r.input_preview.trim().is_empty() {
        q.push_str(&format!("\n“{}”", quoted(&r.input_preview, 400, on)));
    }
    q.push('\n');
    q.push_str(&how_to_answer(code, on));
    q
}

/// Something waiting for the person that the phone may be asked about.
enum Waiting {
    Send(OutboxItem),
    Tool(ToolRequest),
}

impl Waiting {
    fn kind(&self) -> PhoneAskKind {
        match self {
            Waiting::Send(_) => PhoneAskKind::Send,
            Waiting::Tool(_) => PhoneAskKind::Tool,
        }
    }

    fn subject(&self) -> &str {
        match self {
            Waiting::Send(s) => &s.id,
            Waiting::Tool(t) => &t.id,
        }
    }

    fn agent(&self) -> &str {
        match self {
            Waiting::Send(s) => &s.agent_id,
            Waiting::Tool(t) => &t.agent_id,
        }
    }

    fn created_at(&self) -> Millis {
        match self {
            Waiting::Send(s) => s.created_at,
            Waiting::Tool(t) => t.created_at,
        }
    }
}

/// What the phone's loop reads in one look: the settings, what waits, the questions open.
struct Look {
    expire_minutes: u32,
    asks_a_minute: u32,
    waiting: Vec<Waiting>,
    open: Vec<PhoneAsk>,
    revoked: Vec<String>,
    /// What was asked about where already (`kind`, subject, channel): asked once only.
    asked: std::collections::HashSet<(String, String, String)>,
}

fn kinds(store: &Store) -> Result<(bool, bool)> {
    let kinds = store.setting(KINDS_SETTING)?.unwrap_or_else(|| "sends,tools".to_owned());
    Ok((kinds.split(',').any(|k| k == "sends"), kinds.split(',').any(|k| k == "tools")))
}

fn expire_minutes(store: &Store) -> Result<u32> {
    Ok(store.setting(EXPIRE_SETTING)?.and_then(|m| m.parse().ok()).unwrap_or(PHONE_EXPIRES_MINUTES))
}

fn asks_a_minute(store: &Store) -> Result<u32> {
    Ok(store.setting(A_MINUTE_SETTING)?.and_then(|m| m.parse().ok()).unwrap_or(PHONE_ASKS_A_MINUTE))
}

fn own_addresses(store: &Store, source: Source) -> Result<Vec<String>> {
    Ok(store.source_state(source, OWN_ADDRESSES_KEY)?.and_then(|j| serde_json::from_str(&j).ok()).unwrap_or_default())
}

fn conversation(facts: PhoneChannelFacts) -> PhoneConversation {
    let address = facts.readers.as_deref().and_then(<[String]>::first).cloned().unwrap_or_default();
    PhoneConversation { channel_id: facts.id, source: facts.source, name: facts.name, address }
}

impl Amc {
    /// Where AMC asks on the phone and what, with the conversations it could ask in.
    pub async fn phone_settings(&self) -> Result<PhoneSettings> {
        self.blocking(|s| {
            let (sends, tools) = kinds(s)?;
            let set = |source: Source| -> Result<Option<PhoneConversation>> {
                Ok(match s.setting(setting_key(source))? {
                    Some(id) => s.phone_channel_facts(&id).ok().map(conversation),
                    None => None,
                })
            };
            let mut candidates = Vec::new();
            for ch in s.admin_channels(None, None)? {
                if ch.kind != ChannelKind::Dm {
                    continue;
                }
                let facts = s.phone_channel_facts(&ch.id)?;
                if refusal(&facts, &own_addresses(s, facts.source)?).is_none() {
                    candidates.push(conversation(facts));
                }
            }
            Ok(PhoneSettings {
                imessage: set(Source::Imessage)?,
                discord: set(Source::Discord)?,
                sends,
                tools,
                expire_minutes: expire_minutes(s)?,
                asks_a_minute: asks_a_minute(s)?,
                own_addresses: own_addresses(s, Source::Imessage)?,
                discord_user_id: own_addresses(s, Source::Discord)?.into_iter().next(),
                candidates,
            })
        })
        .await
    }

    /// Changes where AMC asks on the phone and what. A conversation that is not the
    /// person's own (or not of the source its field names) is refused (`VALIDATION_FAILED`,
    /// saying why); one that is becomes blocked to agents.
    pub async fn set_phone(&self, change: PhoneChange) -> Result<PhoneSettings> {
        if let Some(m) = change.expire_minutes
            && !(1..=1_440).contains(&m)
        {
            return Err(Error::validation("expire_minutes must be from 1 to 1440"));
        }
        if let Some(n) = change.asks_a_minute
            && !(1..=30).contains(&n)
        {
            return Err(Error::validation("asks_a_minute must be from 1 to 30"));
        }
        let targets = self
            .blocking(move |s| {
                if let Some(m) = change.expire_minutes {
                    s.set_setting(EXPIRE_SETTING, &m.to_string())?;
                }
                if let Some(n) = change.asks_a_minute {
                    s.set_setting(A_MINUTE_SETTING, &n.to_string())?;
                }
                if change.sends.is_some() || change.tools.is_some() {
                    let (sends, tools) = kinds(s)?;
                    let (sends, tools) = (change.sends.unwrap_or(sends), change.tools.unwrap_or(tools));
                    let list: Vec<&str> = [(sends, "sends"), (tools, "tools")]
                        .into_iter()
                        .filter_map(|(on, name)| on.then_some(name))
                        .collect();
                    s.set_setting(KINDS_SETTING, &list.join(","))?;
                }
                for (source, wanted) in [(Source::Imessage, change.imessage), (Source::Discord, change.discord)] {
                    let key = setting_key(source);
                    match wanted {
                        None => {}
                        Some(None) => {
                            if let Some(was) = s.setting(key)? {
                                s.end_phone_asks_in(&was, PhoneAskState::Withdrawn)?;
                            }
                            s.set_phone_channel(key, None, now_ms())?;
                        }
                        Some(Some(id)) => {
                            let facts = s.phone_channel_facts(&id)?;
                            if facts.source != source {
                                return Err(Error::validation(format!(
                                    "this is a {} conversation: give it as `{}`",
                                    facts.source.display_name(),
                                    facts.source
                                )));
                            }
                            if let Some(why) = refusal(&facts, &own_addresses(s, source)?) {
                                return Err(Error::validation(why));
                            }
                            // Held sends and requests from before any conversation was
                            // chosen are answered in AMC; choosing a second keeps the first's.
                            let since = match targets_in(s)?.is_empty() {
                                true => now_ms(),
                                false => {
                                    s.setting(PHONE_SINCE_SETTING)?.and_then(|v| v.parse().ok()).unwrap_or_else(now_ms)
                                }
                            };
                            // Switched from another conversation: its questions are withdrawn.
                            if let Some(was) = s.setting(key)?.filter(|was| *was != id) {
                                s.end_phone_asks_in(&was, PhoneAskState::Withdrawn)?;
                            }
                            s.set_phone_channel(key, Some(&id), since)?;
                        }
                    }
                }
                targets_in(s)
            })
            .await?;
        let before = std::mem::replace(&mut *lock(&self.inner.phone.targets), targets.clone());
        for t in targets.iter().filter(|t| !before.contains(t)) {
            self.publish(Event::ChannelChanged { channel_id: t.channel_id.clone() });
        }
        self.inner.phone.wake.notify_one();
        self.phone_settings().await
    }

    /// Sends a test message to each conversation AMC asks in: the platform ids of the
    /// messages sent. `CONFLICT` when none is set.
    pub async fn phone_test(&self) -> Result<Vec<String>> {
        let targets = lock(&self.inner.phone.targets).clone();
        if targets.is_empty() {
            return Err(Error::conflict(
                "AMC asks on no phone: choose your own conversation first (amc phone set CHANNEL_ID)",
            ));
        }
        let mut sent = Vec::new();
        for target in &targets {
            let text = "AMC: this is where AMC will ask you to approve what agents want to send, and the tools \
                        they want to use. Nothing to answer now."
                .to_owned();
            sent.push(self.tell_phone(target, text, None).await?);
        }
        Ok(sent)
    }

    /// Sends the person a test message in their own conversation with themselves on
    /// `source` (Setup's "Send a test message to myself"): on a Mac the first send through
    /// Messages brings up macOS's Automation prompt, and the answer says how the send went.
    /// Their platform id of the message, or why it was not sent.
    pub async fn test_self_message(&self, source: Source) -> Result<String> {
        let settings = self.phone_settings().await?;
        let own = settings
            .imessage
            .iter()
            .chain(settings.discord.iter())
            .chain(settings.candidates.iter())
            .find(|c| c.source == source)
            .cloned()
            .ok_or_else(|| {
                Error::conflict(
                    "AMC has not found your own conversation yet: send yourself a message in Messages (or the bot a \
                     DM on Discord), then try again",
                )
            })?;
        let id = own.channel_id.clone();
        let platform_id = self
            .blocking(move |s| Ok(s.channel_target(&id)?.ok_or_else(Error::channel_not_found)?.platform_id))
            .await?;
        let target = PhoneTarget { channel_id: own.channel_id, platform_id, source };
        let text = "AMC: a test message from AMC's Setup. AMC can send in Messages; nothing to answer.".to_owned();
        self.tell_phone(&target, text, None).await
    }

    /// The person's own addresses on `source`, as last recorded.
    pub async fn own_addresses(&self, source: Source) -> Result<Vec<String>> {
        self.blocking(move |s| own_addresses(s, source)).await
    }

    /// Records the person's own addresses on `source` as it reads them: their addresses in
    /// chat.db, their Discord account.
    pub async fn set_own_addresses(&self, source: Source, addresses: Vec<String>) -> Result<()> {
        let mut addresses: Vec<String> =
            addresses.iter().map(|a| a.trim().to_owned()).filter(|a| !a.is_empty()).collect();
        addresses.sort();
        addresses.dedup();
        let json = serde_json::to_string(&addresses).map_err(Error::internal)?;
        self.blocking(move |s| s.set_source_state(source, OWN_ADDRESSES_KEY, &json)).await
    }

    /// The questions asked on the phone, newest first.
    pub async fn phone_asks(&self, limit: u32) -> Result<Vec<PhoneAsk>> {
        self.blocking(move |s| s.phone_asks(limit)).await
    }

    /// Runs the phone's questions until `stop`: on every change of a held send, a tool
    /// request, the pause or the agents, and every [`PHONE_LOOK_EVERY`].
    pub async fn run_phone(&self, stop: impl std::future::Future<Output = ()>) {
        let mut events = self.events().subscribe();
        tokio::pin!(stop);
        loop {
            if let Err(e) = self.phone_round().await {
                tracing::warn!(error = %e, "asking on the phone failed; trying again shortly");
            }
            let next = lock(&self.inner.phone.skips).next_look();
            let relevant = async {
                loop {
                    match events.recv().await {
                        Ok(
                            Event::SendChanged { .. }
                            | Event::ToolRequestChanged { .. }
                            | Event::PauseChanged { .. }
                            | Event::AgentsChanged,
                        ) => return true,
                        // Messages and the rest change nothing the phone is asked about.
                        Ok(_) => {}
                        // Missed events: the next look reads the store whole anyway.
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return true,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return false,
                    }
                }
            };
            tokio::select! {
                () = &mut stop => return,
                () = self.inner.phone.wake.notified() => {}
                () = tokio::time::sleep(next) => {}
                going = relevant => if !going { return },
            }
        }
    }

    /// One look: questions whose time is up expire; those about what was decided elsewhere,
    /// or whose agent was revoked, end; what waits and was not asked about is asked in each
    /// conversation (or counted, past the limit a minute).
    async fn phone_round(&self) -> Result<()> {
        let targets = lock(&self.inner.phone.targets).clone();
        if targets.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        self.blocking(move |s| {
            s.end_open_phone_asks(PhoneAskState::Expired, Some(now))?;
            s.prune_phone_asks(now - PHONE_ASKS_KEPT_FOR.as_millis() as i64)?;
            Ok(())
        })
        .await?;
        if self.paused() {
            self.blocking(|s| s.end_open_phone_asks(PhoneAskState::Withdrawn, None)).await?;
            return Ok(());
        }
        let look = self
            .blocking(move |s| {
                let since = s.setting(PHONE_SINCE_SETTING)?.and_then(|v| v.parse().ok()).unwrap_or(now);
                let (sends, tools) = kinds(s)?;
                let mut waiting: Vec<Waiting> = Vec::new();
                if sends {
                    waiting.extend(s.outbox(Some(OutboxStatus::Held), 500)?.into_iter().map(Waiting::Send));
                }
                if tools {
                    let pending = s.tool_requests(Some(ToolRequestStatus::Pending), 500)?;
                    waiting.extend(pending.into_iter().map(Waiting::Tool));
                }
                waiting.retain(|w| w.created_at() >= since);
                waiting.sort_by_key(Waiting::created_at);
                let open: Vec<PhoneAsk> = s
                    .phone_asks(1_000)?
                    .into_iter()
                    .filter(|a| matches!(a.state, PhoneAskState::Asking | PhoneAskState::Asked))
                    .collect();
                let revoked = s.agents()?.into_iter().filter(|a| a.revoked_at.is_some()).map(|a| a.id).collect();
                let asked = s.phone_asked_about()?;
                Ok(Look {
                    expire_minutes: expire_minutes(s)?,
                    asks_a_minute: asks_a_minute(s)?,
                    waiting,
                    open,
                    revoked,
                    asked,
                })
            })
            .await?;
        // Questions about what no longer waits: decided elsewhere, or its agent revoked.
        for ask in &look.open {
            let subject = look.waiting.iter().find(|w| w.kind() == ask.kind && w.subject() == ask.subject);
            let state = match subject {
                None => PhoneAskState::Settled,
                Some(w) if look.revoked.iter().any(|r| r == w.agent()) => PhoneAskState::Withdrawn,
                Some(_) => continue,
            };
            let (kind, subject) = (ask.kind, ask.subject.clone());
            self.blocking(move |s| s.end_phone_ask(kind, &subject, state, now_ms())).await?;
        }
        let waiting: Vec<&Waiting> =
            look.waiting.iter().filter(|w| !look.revoked.iter().any(|r| r == w.agent())).collect();
        let mut skipped = 0u32;
        for target in &targets {
            skipped += self.ask_in(target, &waiting, &look).await?;
        }
        if skipped > 0 {
            lock(&self.inner.phone.skips).last_skip = Some(Instant::now());
        }
        if lock(&self.inner.phone.skips).due() {
            self.count_skipped(&targets, look.asks_a_minute).await?;
        }
        Ok(())
    }

    /// Asks in `target` about what waits and was not asked there yet: how many were over
    /// the limit a minute.
    async fn ask_in(&self, target: &PhoneTarget, waiting: &[&Waiting], look: &Look) -> Result<u32> {
        let channel = target.channel_id.clone();
        let mut asked = self.blocking(move |s| s.phone_asked_since(&channel, now_ms() - 60_000)).await?;
        let mut skipped = 0;
        // Only what was not asked about here yet: a round writes nothing for the rest.
        let new_here = waiting.iter().filter(|w| {
            let key = (w.kind().as_str().to_owned(), w.subject().to_owned(), target.channel_id.clone());
            !look.asked.contains(&key)
        });
        for w in new_here {
            let state = if asked < look.asks_a_minute { PhoneAskState::Asking } else { PhoneAskState::Skipped };
            let new = NewPhoneAsk {
                kind: w.kind(),
                subject: w.subject().to_owned(),
                channel_id: target.channel_id.clone(),
                state,
                asked_at: now_ms(),
                expires_at: now_ms() + i64::from(look.expire_minutes) * 60_000,
            };
            let Some(ask) = self.blocking(move |s| s.open_phone_ask(&new, &mut crate::ids::new_phone_code)).await?
            else {
                continue;
            };
            if state == PhoneAskState::Skipped {
                skipped += 1;
                continue;
            }
            asked += 1;
            let question = match w {
                Waiting::Send(item) => {
                    let channel = item.channel_id.clone();
                    let readers = self
                        .blocking(move |s| Ok(s.phone_channel_facts(&channel)?.readers.unwrap_or_default()))
                        .await
                        .unwrap_or_default();
                    send_question(item, &readers, &ask.code, target.source)
                }
                Waiting::Tool(r) => tool_question(r, &ask.code, target.source),
            };
            let sent = self.tell_phone(target, question, Some(ask.code.clone())).await;
            if let Err(e) = &sent {
                tracing::warn!(error = %e, "could not ask on the phone");
            }
            let prompt = sent.ok();
            self.blocking(move |s| s.phone_asked(&ask.id, prompt.as_deref())).await?;
        }
        Ok(skipped)
    }

    /// Tells each conversation how many questions over the limit still wait in AMC.
    async fn count_skipped(&self, targets: &[PhoneTarget], asks_a_minute: u32) -> Result<()> {
        let count = self
            .blocking(move |s| {
                let mut subjects: Vec<(PhoneAskKind, String)> = s
                    .phone_asks(1_000)?
                    .into_iter()
                    .filter(|a| a.state == PhoneAskState::Skipped)
                    .map(|a| (a.kind, a.subject))
                    .collect();
                subjects.sort_by(|a, b| (a.0.as_str(), &a.1).cmp(&(b.0.as_str(), &b.1)));
                subjects.dedup();
                // One forgotten since (the log keeps so many) waits no more.
                let waits = |(kind, subject): &(PhoneAskKind, String)| match kind {
                    PhoneAskKind::Send => s.outbox_item(subject).is_ok_and(|i| i.status == OutboxStatus::Held),
                    PhoneAskKind::Tool => s.tool_request(subject).is_ok_and(|r| r.status == ToolRequestStatus::Pending),
                };
                Ok(subjects.iter().filter(|s| waits(s)).count())
            })
            .await?;
        *lock(&self.inner.phone.skips) = Skips { last_skip: None, last_line: Some(Instant::now()) };
        if count == 0 {
            return Ok(());
        }
        let line =
            format!("AMC: {count} more waiting for you on your Mac; AMC asks at most {asks_a_minute} a minute here.");
        for target in targets {
            if let Err(e) = self.tell_phone(target, line.clone(), None).await {
                tracing::warn!(error = %e, "could not tell the phone how many wait");
            }
        }
        Ok(())
    }

    /// Sends `text` to `target`, after checking once more that it is the person's own
    /// conversation: the platform id of the message. `answers`: the code of the question it
    /// asks, for the platform's buttons.
    async fn tell_phone(&self, target: &PhoneTarget, text: String, answers: Option<String>) -> Result<String> {
        let id = target.channel_id.clone();
        let (facts, own, send_target) = self
            .blocking(move |s| {
                let target = s.channel_target(&id)?.ok_or_else(Error::channel_not_found)?;
                let facts = s.phone_channel_facts(&id)?;
                let own = own_addresses(s, facts.source)?;
                Ok((facts, own, target))
            })
            .await?;
        if let Some(why) = refusal(&facts, &own) {
            tracing::warn!(reason = why, "the phone's conversation is no longer the person's own; not telling it");
            return Err(Error::validation(why));
        }
        let sender = self.inner.senders.get(send_target.source).ok_or_else(|| {
            Error::new(ErrorCode::PlatformSendFailed, format!("the {} source is not running", send_target.source))
        })?;
        let msg = OutgoingSend {
            send_id: crate::ids::new_ask_id(),
            channel_platform_id: target.platform_id.clone(),
            channel: send_target,
            text,
            reply_to_platform_id: None,
            attachments: Vec::new(),
            answers,
        };
        match tokio::time::timeout(self.send_timeout(), sender.send(msg)).await {
            Ok(Ok(d)) => Ok(d.platform_id),
            Ok(Err(e)) => Err(Error::new(ErrorCode::PlatformSendFailed, e.to_string())),
            Err(_) => Err(Error::new(ErrorCode::PlatformSendFailed, "the platform did not confirm in time")),
        }
    }

    /// The conversation AMC asks in, if it is `channel_platform_id` of `source`.
    pub(in crate::service) fn phone_target_is(&self, source: Source, channel_platform_id: &str) -> Option<PhoneTarget> {
        lock(&self.inner.phone.targets)
            .iter()
            .find(|t| t.source == source && t.platform_id == channel_platform_id)
            .cloned()
    }

    /// The conversation AMC asks in whose channel is `channel_id`.
    fn phone_target_of(&self, channel_id: &str) -> Option<PhoneTarget> {
        lock(&self.inner.phone.targets).iter().find(|t| t.channel_id == channel_id).cloned()
    }

    /// Reads answers among new messages of a conversation AMC asks in.
    pub(in crate::service) async fn phone_messages(&self, source: Source, channel: &str, new: Vec<IncomingMessage>) {
        let Some(target) = self.phone_target_is(source, channel) else { return };
        for m in new {
            let Some((yes, code)) = answer(&m.text) else { continue };
            if !self.is_the_person(&m.sender, source).await {
                continue;
            }
            let platform_id = m.platform_id.clone();
            let found = self
                .blocking(move |s| {
                    // A question AMC sent is never an answer, whatever it says.
                    if s.phone_ask_by_prompt(&platform_id)?.is_some() {
                        return Ok(None);
                    }
                    s.phone_ask_by_code(&code)
                })
                .await;
            match found {
                Ok(Some(ask)) if ask.channel_id == target.channel_id => self.phone_answer(&target, ask, yes).await,
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "could not read an answer from the phone"),
            }
        }
    }

    /// Reads answers among tapbacks and reactions: a 👍 or 👎 added on one of AMC's
    /// questions by the person.
    pub(in crate::service) async fn phone_reactions(&self, source: Source, changes: &[ReactionChange]) {
        if !lock(&self.inner.phone.targets).iter().any(|t| t.source == source) {
            return;
        }
        for c in changes.iter().filter(|c| c.added && [YES, NO].contains(&c.reaction.emoji.as_str())) {
            if !self.is_the_person(&c.reaction.sender, source).await {
                continue;
            }
            let prompt = c.target_platform_id.clone();
            match self.blocking(move |s| s.phone_ask_by_prompt(&prompt)).await {
                Ok(Some(ask)) => {
                    let Some(target) = self.phone_target_of(&ask.channel_id).filter(|t| t.source == source) else {
                        continue;
                    };
                    self.phone_answer(&target, ask, c.reaction.emoji == YES).await;
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "could not read a tapback from the phone"),
            }
        }
    }

    /// A button of a question pressed on `source` (Discord's Approve or Reject) by `user`,
    /// on the message `message_platform_id` of `channel_platform_id`: what to show the one
    /// who pressed it. Only the person's own press, on the question the code belongs to, in
    /// a conversation AMC asks in, decides anything.
    pub async fn phone_button(
        &self,
        source: Source,
        channel_platform_id: &str,
        message_platform_id: &str,
        user: &SenderInfo,
        custom_id: &str,
    ) -> String {
        let Some((yes, code)) = pressed(custom_id) else {
            return "AMC does not know this button.".to_owned();
        };
        let Some(target) = self.phone_target_is(source, channel_platform_id) else {
            return "AMC no longer asks here.".to_owned();
        };
        if !self.is_the_person(user, source).await {
            return "Only the person who set up AMC can answer its questions.".to_owned();
        }
        let found = self.blocking(move |s| s.phone_ask_by_code(&code)).await;
        match found {
            Ok(Some(ask))
                if ask.channel_id == target.channel_id
                    && ask.prompt_platform_id.as_deref() == Some(message_platform_id) =>
            {
                self.phone_verdict(source, &ask, yes).await.unwrap_or_else(|| format!("AMC: {} is settled.", ask.code))
            }
            Ok(_) => "AMC does not know this question.".to_owned(),
            Err(e) => {
                tracing::warn!(error = %e, "could not read a button from the phone");
                "AMC could not read this answer; decide in AMC.".to_owned()
            }
        }
    }

    /// Whether `sender` is the person on `source`: their own devices or account
    /// (`is_self`), or one of their own addresses (Messages may write a self-chat's row as
    /// received from it).
    async fn is_the_person(&self, sender: &SenderInfo, source: Source) -> bool {
        // On Discord the bot is "self" too: only the person's own account counts there.
        if sender.is_self && source == Source::Imessage {
            return true;
        }
        let id = crate::model::reader_handle(&sender.id);
        match self.blocking(move |s| own_addresses(s, source)).await {
            Ok(own) => own.iter().any(|a| crate::model::reader_handle(a) == id),
            Err(_) => false,
        }
    }

    /// The person answered `ask` in `target`: the verdict, told there.
    async fn phone_answer(&self, target: &PhoneTarget, ask: PhoneAsk, yes: bool) {
        let open = matches!(ask.state, PhoneAskState::Asking | PhoneAskState::Asked) && ask.expires_at > now_ms();
        let Some(reply) = self.phone_verdict(target.source, &ask, yes).await else { return };
        // A late answer is told once: a source that reads its rows again (a rescan of
        // chat.db's newest rows) does not tell it again.
        if !open && !lock(&self.inner.phone.told).insert(ask.id.clone()) {
            return;
        }
        if let Err(e) = self.tell_phone(target, reply, None).await {
            tracing::warn!(error = %e, "could not answer the phone");
        }
    }

    /// Decides `ask` as the person answered on `source`: the first answer wins; a late
    /// one, or one after a decision elsewhere, is refused. What to tell the person, or
    /// nothing (the same answer read twice).
    async fn phone_verdict(&self, source: Source, ask: &PhoneAsk, yes: bool) -> Option<String> {
        let reply = match ask.state {
            // Paused, or its agent revoked since: withdrawn now, whatever the loop did yet.
            PhoneAskState::Asking | PhoneAskState::Asked if self.paused() || self.subject_revoked(ask).await => {
                let (kind, subject) = (ask.kind, ask.subject.clone());
                let _ =
                    self.blocking(move |s| s.end_phone_ask(kind, &subject, PhoneAskState::Withdrawn, now_ms())).await;
                format!("AMC: {} was withdrawn; your answer changed nothing.", ask.code)
            }
            PhoneAskState::Asking | PhoneAskState::Asked if ask.expires_at > now_ms() => {
                match self.phone_decide(source, ask, yes).await {
                    Ok(said) => said,
                    Err(e) if e.code == ErrorCode::Conflict => {
                        format!("AMC: {} was settled already; your answer changed nothing.", ask.code)
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "could not apply an answer from the phone");
                        format!("AMC: {} could not be decided from here; decide it in AMC.", ask.code)
                    }
                }
            }
            PhoneAskState::Asking | PhoneAskState::Asked | PhoneAskState::Expired => {
                let (kind, subject) = (ask.kind, ask.subject.clone());
                let _ = self.blocking(move |s| s.end_phone_ask(kind, &subject, PhoneAskState::Expired, now_ms())).await;
                format!("AMC: {} expired; your answer changed nothing. It waits for you in AMC.", ask.code)
            }
            PhoneAskState::Settled if self.decided_from_phone(ask).await => return None,
            PhoneAskState::Settled => format!("AMC: {} was settled already; your answer changed nothing.", ask.code),
            PhoneAskState::Withdrawn => format!("AMC: {} was withdrawn; your answer changed nothing.", ask.code),
            PhoneAskState::Skipped | PhoneAskState::Failed => return None,
        };
        Some(reply)
    }

    /// The agent of the send or request `ask` is about, and where it was decided.
    async fn subject_of(&self, ask: &PhoneAsk) -> Result<(String, Option<DecidedVia>)> {
        let (kind, subject) = (ask.kind, ask.subject.clone());
        self.blocking(move |s| {
            Ok(match kind {
                PhoneAskKind::Send => s.outbox_item(&subject).map(|i| (i.agent_id, i.decided_via))?,
                PhoneAskKind::Tool => s.tool_request(&subject).map(|r| (r.agent_id, r.decided_via))?,
            })
        })
        .await
    }

    /// Whether the agent whose send or request `ask` is about was revoked.
    async fn subject_revoked(&self, ask: &PhoneAsk) -> bool {
        match self.subject_of(ask).await {
            Ok((agent, _)) => self.is_agent_revoked(agent).await.unwrap_or(true),
            Err(_) => false,
        }
    }

    /// Approves or rejects what `ask` is about, as from the phone on `source`: what to
    /// tell the person.
    async fn phone_decide(&self, source: Source, ask: &PhoneAsk, yes: bool) -> Result<String> {
        let via = decided_via(source);
        let said = match (ask.kind, yes) {
            (PhoneAskKind::Send, true) => {
                let item = self.approve_send(ask.subject.clone(), via).await?;
                format!("AMC: {} approved; the send is {}.", ask.code, item.status)
            }
            (PhoneAskKind::Send, false) => {
                self.reject_send(ask.subject.clone(), Some("rejected from the phone".into()), via).await?;
                format!("AMC: {} rejected; nothing was sent.", ask.code)
            }
            (PhoneAskKind::Tool, allow) => {
                self.decide_tool(ask.subject.clone(), allow, via).await?;
                format!("AMC: {} {}.", ask.code, if allow { "allowed" } else { "denied" })
            }
        };
        let (kind, subject) = (ask.kind, ask.subject.clone());
        self.blocking(move |s| s.end_phone_ask(kind, &subject, PhoneAskState::Settled, now_ms())).await?;
        Ok(said)
    }

    /// Whether what `ask` is about was decided from a phone (the same answer read twice is
    /// passed over in silence).
    async fn decided_from_phone(&self, ask: &PhoneAsk) -> bool {
        let via = self.subject_of(ask).await.map(|(_, via)| via);
        matches!(via, Ok(Some(DecidedVia::PhoneImessage | DecidedVia::PhoneDiscord)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(kind: ChannelKind, platform_id: &str, readers: Option<&[&str]>) -> PhoneChannelFacts {
        PhoneChannelFacts {
            id: "ch_x".into(),
            source: Source::Imessage,
            kind,
            platform_id: platform_id.into(),
            name: "x".into(),
            readers: readers.map(|r| r.iter().map(|s| (*s).to_owned()).collect()),
            gone: false,
        }
    }

    #[test]
    fn only_the_persons_own_one_to_one_conversation_is_where_amc_asks() {
        let own = vec!["+15550001111".to_owned(), "me@icloud.com".to_owned()];
        let me = facts(ChannelKind::Dm, "any;-;+15550001111", Some(&["+15550001111"]));
        assert_eq!(refusal(&me, &own), None);
        let by_mail = facts(ChannelKind::Dm, "iMessage;-;Me@iCloud.com", Some(&["me@icloud.com"]));
        assert_eq!(refusal(&by_mail, &own), None, "addresses differ in case in chat.db");
        let refused = [
            ("someone else", facts(ChannelKind::Dm, "any;-;+15559990000", Some(&["+15559990000"]))),
            ("a group with me in it", facts(ChannelKind::Group, "any;+;chat1", Some(&["+15550001111"]))),
            ("me and another", facts(ChannelKind::Dm, "any;-;+15550001111", Some(&["+15550001111", "+15559990000"]))),
            ("readers unknown", facts(ChannelKind::Dm, "any;-;+15550001111", None)),
            ("nobody", facts(ChannelKind::Dm, "any;-;+15550001111", Some(&[]))),
            ("keyed by another", facts(ChannelKind::Dm, "any;-;+15559990000", Some(&["+15550001111"]))),
            ("not a chat guid", facts(ChannelKind::Dm, "+15550001111", Some(&["+15550001111"]))),
        ];
        for (why, f) in refused {
            assert!(refusal(&f, &own).is_some(), "{why}");
        }
        assert!(refusal(&me, &[]).is_some(), "no own address known yet");
        let gone = PhoneChannelFacts { gone: true, ..me.clone() };
        assert!(refusal(&gone, &own).is_some());
        // On Discord: the bot's DM with the person's own account, and no other.
        let owner = vec!["4242".to_owned()];
        let dm = |readers: Option<&[&str]>| PhoneChannelFacts {
            source: Source::Discord,
            platform_id: "900".into(),
            ..facts(ChannelKind::Dm, "900", readers)
        };
        assert_eq!(refusal(&dm(Some(&["4242"])), &owner), None);
        assert!(refusal(&dm(Some(&["4343"])), &owner).is_some(), "a DM with someone else");
        assert!(refusal(&dm(None), &owner).is_some(), "a DM whose other side is unknown");
        assert!(refusal(&dm(Some(&["4242"])), &[]).is_some(), "no discord_user_id");
        let server = PhoneChannelFacts { kind: ChannelKind::Group, ..dm(Some(&["4242"])) };
        assert!(refusal(&server, &owner).is_some(), "a server channel");
    }

    #[test]
    fn a_button_says_its_answer_and_code_and_nothing_else_passes_for_one() {
        assert_eq!(pressed(&button_id(true, "K7QF")), Some((true, "K7QF".into())));
        assert_eq!(pressed(&button_id(false, "K7QF")), Some((false, "K7QF".into())));
        for not in ["amc-phone:maybe:K7QF", "amc-phone:yes:K7Q0", "other:yes:K7QF", "amc-phone:yes", ""] {
            assert_eq!(pressed(not), None, "{not:?}");
        }
    }

    #[test]
    fn an_answer_is_yes_or_no_and_a_code_and_nothing_else() {
        assert_eq!(answer("yes K7QF"), Some((true, "K7QF".into())));
        assert_eq!(answer("  No k7qf. "), Some((false, "K7QF".into())));
        assert_eq!(answer("YES  K7QF!"), Some((true, "K7QF".into())));
        for not in ["yes", "yes K7QF please", "yes K7Q0", "sure K7QF", "yes, K7QF", "K7QF", "yes K7QF K7QF", ""] {
            assert_eq!(answer(not), None, "{not:?}");
        }
    }

    #[test]
    fn a_question_never_reads_as_an_answer_and_shows_others_text_escaped_with_codes_hidden() {
        let item = OutboxItem {
            id: "msg_1".into(),
            agent_id: "claude".into(),
            channel_id: "ch_1".into(),
            channel_name: "Mom\u{202E}".into(),
            source: Source::Imessage,
            text: "yes K7QF".into(),
            reply_to: None,
            attachments: Vec::new(),
            status: OutboxStatus::Held,
            created_at: 0,
            sent_at: None,
            error_code: None,
            error_message: None,
            retry_after_at: None,
            held_reason: None,
            read_from: Vec::new(),
            decided_via: None,
        };
        let q = send_question(&item, &["+15559990000".into()], "ABCD", Source::Imessage);
        assert_eq!(answer(&q), None, "{q}");
        assert!(q.contains("Mom⟨U+202E⟩") && q.contains("“yes K7QF”") && q.contains("yes ABCD"), "{q}");
        let coded = OutboxItem { text: "Your verification code is 482913".into(), ..item };
        let q = send_question(&coded, &[], "ABCD", Source::Discord);
        assert!(!q.contains("482913") && q.contains("one\\-time code hidden by AMC"), "{q}");
        assert!(q.contains("Press Approve or Reject"), "{q}");
        // On Discord a masked link shows as written, never as the link it hides.
        let masked = OutboxItem { text: "[see you at 6](https://evil.example)".into(), ..coded };
        let q = send_question(&masked, &[], "ABCD", Source::Discord);
        assert!(q.contains("\\[see you at 6\\]\\(https\\://evil.example\\)"), "{q}");
    }
}
