//! Approvals from the person's phone: AMC asks about each held send and tool request in the
//! person's own iMessage conversation (their self-chat), and the person's 👍 or 👎 tapback
//! on the question, or a reply `yes CODE` / `no CODE`, decides it as the window would.
//!
//! What keeps it the person's alone:
//! - **Where.** Only a conversation whose one participant is one of the person's own
//!   addresses, as Messages records them ([`refusal`]): checked when the person sets it,
//!   and again before every message AMC sends there. Setting it blocks the channel: no agent
//!   reads, searches, is pushed or sends to it, and it cannot be approved while it is set.
//! - **Who answers.** A row of that conversation written by the person's own devices (or
//!   the echo Messages writes of it, from one of their own addresses), never a question
//!   AMC sent itself (its platform id is the question's), and only in the answer's exact
//!   form: a question never reads as an answer, whatever an agent wrote in it.
//! - **When.** The first answer wins, wherever given; a question expires (a setting, 30
//!   minutes by default) and a late answer is refused; pausing AMC or revoking the agent
//!   withdraws it. Held sends and requests from before the person turned this on are
//!   answered in AMC.
//! - **How much.** At most a few questions a minute ([`PHONE_ASKS_A_MINUTE`] unless set);
//!   past that one line says how many more wait in AMC.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Deserializer, Serialize};

use super::Amc;
use crate::error::{Error, ErrorCode, Result};
use crate::events::Event;
use crate::model::{
    ChannelKind, DecidedVia, IncomingMessage, OutboxItem, OutboxStatus, PhoneAsk, PhoneAskKind, PhoneAskState,
    ReactionChange, Source, ToolRequest, ToolRequestStatus,
};
use crate::sender::OutgoingSend;
use crate::time::{Millis, now_ms};
use amc_store::{NewPhoneAsk, PHONE_CHANNEL_SETTING, PHONE_SINCE_SETTING, PhoneChannelFacts, Store};

/// At most this many questions reach the phone a minute, unless set (`asks_a_minute`).
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
/// The person's own addresses, as the iMessage source last read them (a JSON array).
const OWN_ADDRESSES_KEY: &str = "own_addresses";

/// The emoji of the tapbacks that answer.
const YES: &str = "👍";
const NO: &str = "👎";

/// Where AMC asks and what, as the person set it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhoneSettings {
    /// The iMessage conversation AMC asks in, or `null`: off.
    pub imessage: Option<PhoneConversation>,
    /// Whether held sends are asked about.
    pub sends: bool,
    /// Whether tool requests are asked about.
    pub tools: bool,
    /// How long the phone may answer a question, in minutes.
    pub expire_minutes: u32,
    /// At most this many questions a minute.
    pub asks_a_minute: u32,
    /// The person's own addresses, as Messages records them: a conversation with one of
    /// them alone is one AMC may ask in.
    pub own_addresses: Vec<String>,
    /// The conversations AMC could ask in: the person's own, one-to-one.
    pub candidates: Vec<PhoneConversation>,
}

/// A conversation AMC asks (or could ask) in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhoneConversation {
    /// Its channel.
    pub channel_id: String,
    /// Its name.
    pub name: String,
    /// The person's address it is with.
    pub address: String,
}

/// `POST /admin/phone`: what to change; what is left out stays.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PhoneChange {
    /// A channel's id to ask in, or `null` to stop asking on the phone.
    #[serde(default, deserialize_with = "given")]
    pub imessage: Option<Option<String>>,
    /// Whether held sends are asked about.
    pub sends: Option<bool>,
    /// Whether tool requests are asked about.
    pub tools: Option<bool>,
    /// How long the phone may answer, 1 to 1,440 minutes.
    pub expire_minutes: Option<u32>,
    /// At most this many questions a minute, 1 to 30.
    pub asks_a_minute: Option<u32>,
}

/// A field that is there, `null` included: `Some(None)`.
fn given<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// The conversation AMC asks in, as the running core holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::service) struct PhoneTarget {
    channel_id: String,
    platform_id: String,
}

/// What the core keeps in memory about the phone.
#[derive(Debug, Default)]
pub(in crate::service) struct PhoneState {
    target: Mutex<Option<PhoneTarget>>,
    /// Questions over the limit not counted on the phone yet: when the last was skipped,
    /// and when the last line counting them was sent.
    skips: Mutex<Skips>,
    /// Wakes the phone's loop.
    wake: tokio::sync::Notify,
}

impl PhoneState {
    /// The state for a store whose phone setting is `channel` (`None`: off).
    pub(in crate::service) fn load(store: &Store) -> Result<Self> {
        let state = Self::default();
        if let Some(id) = store.setting(PHONE_CHANNEL_SETTING)?
            && let Ok(facts) = store.phone_channel_facts(&id)
        {
            *lock(&state.target) = Some(PhoneTarget { channel_id: facts.id, platform_id: facts.platform_id });
        }
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

    /// How soon the loop should look again for the line.
    fn next_look(&self) -> Duration {
        match (self.last_skip, self.last_line) {
            (Some(_), _) if !self.due() => Duration::from_millis(500),
            (Some(_), _) => Duration::ZERO,
            _ => PHONE_LOOK_EVERY,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Why channel `facts` cannot be where AMC asks the person, or `None` when it can: an
/// iMessage conversation, one-to-one, still there, whose one participant (as chat.db's
/// `chat_handle_join` gives it) is one of the person's own addresses (`own`), and whose
/// chat is keyed by that address.
pub fn refusal(facts: &PhoneChannelFacts, own: &[String]) -> Option<&'static str> {
    let norm = |a: &str| crate::model::reader_handle(a);
    if facts.source != Source::Imessage {
        return Some("AMC asks on your phone only in iMessage for now");
    }
    if facts.kind != ChannelKind::Dm {
        return Some("a group is read by others: AMC asks only in your conversation with yourself");
    }
    if facts.gone {
        return Some("this conversation is gone from Messages");
    }
    if own.is_empty() {
        return Some("AMC does not know your own addresses yet: it reads them from chat.db once it has one");
    }
    let [reader] = facts.readers.as_deref().unwrap_or_default() else {
        return Some("AMC cannot tell that you alone are in this conversation");
    };
    let yours = own.iter().any(|a| norm(a) == norm(reader));
    // A one-to-one chat's guid names its participant: `iMessage;-;+15551234567`.
    let keyed = facts.platform_id.split_once(";-;").is_some_and(|(_, id)| norm(id) == norm(reader));
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

/// How to answer, on every question.
fn how_to_answer(code: &str) -> String {
    format!("Reply \"yes {code}\" or \"no {code}\", or tap 👍 or 👎 on this message.")
}

/// Text of others, as the phone shows it: escaped as in the terminal, one-time codes and
/// sign-in links hidden, at most `chars` characters.
fn quoted(text: &str, chars: usize) -> String {
    let hidden = amc_secrets::hide(text, &amc_secrets::find(text, false));
    let mut shown = crate::text::shown(&hidden);
    if shown.chars().count() > chars {
        shown = shown.chars().take(chars).collect::<String>() + "…";
    }
    shown
}

/// The question about a held send.
fn send_question(item: &OutboxItem, readers: &[String], code: &str) -> String {
    let mut q = format!(
        "AMC: {} wants to send to {} ({}):\n“{}”",
        quoted(&item.agent_id, 64),
        quoted(&item.channel_name, 80),
        item.source.display_name(),
        quoted(&item.text, 600)
    );
    if !item.attachments.is_empty() {
        let names: Vec<String> = item.attachments.iter().map(|a| quoted(&a.filename, 80)).collect();
        q.push_str(&format!("\nFiles: {}", names.join(", ")));
    }
    if !readers.is_empty() {
        let shown: Vec<String> = readers.iter().take(8).map(|r| quoted(r, 64)).collect();
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
    q.push_str(&how_to_answer(code));
    q
}

/// The question about a tool request.
fn tool_question(r: &ToolRequest, code: &str) -> String {
    let mut q = format!("AMC: {} asks to use {}", quoted(&r.agent_id, 64), quoted(&r.tool_name, 80));
    if !r.description.trim().is_empty() {
        q.push_str(&format!(": {}", quoted(&r.description, 300)));
    }
    if !r.input_preview.trim().is_empty() {
        q.push_str(&format!("\n“{}”", quoted(&r.input_preview, 400)));
    }
    q.push('\n');
    q.push_str(&how_to_answer(code));
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

/// What the phone's loop reads in one look: the setting, what waits, the questions open.
struct Look {
    target: PhoneTarget,
    expire_minutes: u32,
    asks_a_minute: u32,
    waiting: Vec<Waiting>,
    open: Vec<PhoneAsk>,
    revoked: Vec<String>,
    asked_this_minute: u32,
    own: Vec<String>,
    facts: PhoneChannelFacts,
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

fn own_addresses(store: &Store) -> Result<Vec<String>> {
    Ok(store
        .source_state(Source::Imessage, OWN_ADDRESSES_KEY)?
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default())
}

impl Amc {
    /// Where AMC asks on the phone and what, with the conversations it could ask in.
    pub async fn phone_settings(&self) -> Result<PhoneSettings> {
        self.blocking(|s| {
            let own = own_addresses(s)?;
            let (sends, tools) = kinds(s)?;
            let conversation = |facts: PhoneChannelFacts| {
                let address = facts.readers.as_deref().and_then(<[String]>::first).cloned().unwrap_or_default();
                PhoneConversation { channel_id: facts.id, name: facts.name, address }
            };
            let imessage = match s.setting(PHONE_CHANNEL_SETTING)? {
                Some(id) => s.phone_channel_facts(&id).ok().map(conversation),
                None => None,
            };
            let mut candidates = Vec::new();
            for ch in s.admin_channels(None, None)? {
                if ch.source != Source::Imessage || ch.kind != ChannelKind::Dm {
                    continue;
                }
                let facts = s.phone_channel_facts(&ch.id)?;
                if refusal(&facts, &own).is_none() {
                    candidates.push(conversation(facts));
                }
            }
            Ok(PhoneSettings {
                imessage,
                sends,
                tools,
                expire_minutes: expire_minutes(s)?,
                asks_a_minute: asks_a_minute(s)?,
                own_addresses: own,
                candidates,
            })
        })
        .await
    }

    /// Changes where AMC asks on the phone and what. A conversation that is not the
    /// person's own is refused (`VALIDATION_FAILED`, saying why); one that is becomes
    /// blocked to agents.
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
        let target = self
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
                match change.imessage {
                    None => Ok(None),
                    Some(None) => {
                        s.set_phone_channel(None, now_ms())?;
                        s.end_open_phone_asks(PhoneAskState::Withdrawn, None)?;
                        Ok(Some(None))
                    }
                    Some(Some(id)) => {
                        let facts = s.phone_channel_facts(&id)?;
                        if let Some(why) = refusal(&facts, &own_addresses(s)?) {
                            return Err(Error::validation(why));
                        }
                        // Asked again for the same conversation: what was held since stays asked.
                        let since = match s.setting(PHONE_CHANNEL_SETTING)? {
                            Some(current) if current == id => {
                                s.setting(PHONE_SINCE_SETTING)?.and_then(|v| v.parse().ok()).unwrap_or_else(now_ms)
                            }
                            _ => now_ms(),
                        };
                        s.set_phone_channel(Some(&id), since)?;
                        Ok(Some(Some(PhoneTarget { channel_id: facts.id, platform_id: facts.platform_id })))
                    }
                }
            })
            .await?;
        if let Some(target) = target {
            let changed = target.as_ref().map(|t| t.channel_id.clone());
            *lock(&self.inner.phone.target) = target;
            if let Some(channel_id) = changed {
                self.publish(Event::ChannelChanged { channel_id });
            }
        }
        self.inner.phone.wake.notify_one();
        self.phone_settings().await
    }

    /// Sends a test message to the conversation AMC asks in: the platform id of the
    /// message sent. `CONFLICT` when none is set.
    pub async fn phone_test(&self) -> Result<String> {
        let target = lock(&self.inner.phone.target).clone().ok_or_else(|| {
            Error::conflict("AMC asks on no phone: choose your own conversation first (amc phone set CHANNEL_ID)")
        })?;
        let text = "AMC: this is where AMC will ask you to approve what agents want to send, and the tools they \
                    want to use. Nothing to answer now."
            .to_owned();
        self.tell_phone(&target, text).await
    }

    /// Records the person's own addresses as the iMessage source reads them from chat.db.
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
            tokio::select! {
                () = &mut stop => return,
                () = self.inner.phone.wake.notified() => {}
                () = tokio::time::sleep(lock(&self.inner.phone.skips).next_look()) => {}
                e = events.recv() => match e {
                    Ok(Event::SendChanged { .. } | Event::ToolRequestChanged { .. } | Event::PauseChanged { .. }
                        | Event::AgentsChanged) => {}
                    Ok(_) => continue,
                    // Missed events: the next look reads the store whole anyway.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    }

    /// One look: questions whose time is up expire; those about what was decided elsewhere,
    /// or whose agent was revoked, end; what waits and was not asked about is asked (or
    /// counted, past the limit a minute).
    async fn phone_round(&self) -> Result<()> {
        let Some(target) = lock(&self.inner.phone.target).clone() else { return Ok(()) };
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
                let asked_this_minute = s
                    .phone_asks_since(now - 60_000)?
                    .into_iter()
                    .filter(|(state, _)| *state != PhoneAskState::Skipped)
                    .map(|(_, n)| n)
                    .sum();
                Ok(Look {
                    facts: s.phone_channel_facts(&target.channel_id)?,
                    own: own_addresses(s)?,
                    target,
                    expire_minutes: expire_minutes(s)?,
                    asks_a_minute: asks_a_minute(s)?,
                    waiting,
                    open,
                    revoked,
                    asked_this_minute,
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
        let mut asked = look.asked_this_minute;
        let mut skipped = 0u32;
        for w in look.waiting.iter().filter(|w| !look.revoked.iter().any(|r| r == w.agent())) {
            let state = if asked < look.asks_a_minute { PhoneAskState::Asking } else { PhoneAskState::Skipped };
            let new = NewPhoneAsk {
                kind: w.kind(),
                subject: w.subject().to_owned(),
                channel_id: look.target.channel_id.clone(),
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
            // Asked again, right before the message goes: the conversation is still the
            // person's alone.
            if let Some(why) = refusal(&look.facts, &look.own) {
                tracing::warn!(reason = why, "the phone's conversation is no longer the person's own; not asking");
                self.blocking(move |s| s.phone_asked(&ask.id, None)).await?;
                continue;
            }
            let question = match w {
                Waiting::Send(item) => {
                    let channel = item.channel_id.clone();
                    let readers = self
                        .blocking(move |s| Ok(s.phone_channel_facts(&channel)?.readers.unwrap_or_default()))
                        .await
                        .unwrap_or_default();
                    send_question(item, &readers, &ask.code)
                }
                Waiting::Tool(r) => tool_question(r, &ask.code),
            };
            let sent = self.tell_phone(&look.target, question).await;
            if let Err(e) = &sent {
                tracing::warn!(error = %e, "could not ask on the phone");
            }
            let prompt = sent.ok();
            self.blocking(move |s| s.phone_asked(&ask.id, prompt.as_deref())).await?;
        }
        if skipped > 0 {
            lock(&self.inner.phone.skips).last_skip = Some(Instant::now());
        }
        let due = lock(&self.inner.phone.skips).due();
        if due {
            // What waits in AMC that the phone was not asked about.
            let count = self
                .blocking(move |s| {
                    let skipped = s.phone_asks(1_000)?.into_iter().filter(|a| a.state == PhoneAskState::Skipped);
                    let mut n = 0;
                    for a in skipped {
                        // One forgotten since (the log keeps so many) waits no more.
                        let waits = match a.kind {
                            PhoneAskKind::Send => {
                                s.outbox_item(&a.subject).is_ok_and(|i| i.status == OutboxStatus::Held)
                            }
                            PhoneAskKind::Tool => {
                                s.tool_request(&a.subject).is_ok_and(|r| r.status == ToolRequestStatus::Pending)
                            }
                        };
                        n += usize::from(waits);
                    }
                    Ok(n)
                })
                .await?;
            *lock(&self.inner.phone.skips) = Skips { last_skip: None, last_line: Some(Instant::now()) };
            if count > 0 {
                let line = format!(
                    "AMC: {count} more waiting for you on your Mac; AMC asks at most {} a minute here.",
                    look.asks_a_minute
                );
                if let Err(e) = self.tell_phone(&look.target, line).await {
                    tracing::warn!(error = %e, "could not tell the phone how many wait");
                }
            }
        }
        Ok(())
    }

    /// Sends `text` to the conversation AMC asks in, after checking once more that it is the
    /// person's own: the platform id of the message.
    async fn tell_phone(&self, target: &PhoneTarget, text: String) -> Result<String> {
        let id = target.channel_id.clone();
        let (facts, own, send_target) = self
            .blocking(move |s| {
                let target = s.channel_target(&id)?.ok_or_else(Error::channel_not_found)?;
                Ok((s.phone_channel_facts(&id)?, own_addresses(s)?, target))
            })
            .await?;
        if let Some(why) = refusal(&facts, &own) {
            return Err(Error::validation(why));
        }
        let sender = self
            .inner
            .senders
            .get(send_target.source)
            .ok_or_else(|| Error::new(ErrorCode::PlatformSendFailed, "the iMessage source is not running"))?;
        let msg = OutgoingSend {
            send_id: crate::ids::new_ask_id(),
            channel_platform_id: target.platform_id.clone(),
            channel: send_target,
            text,
            reply_to_platform_id: None,
            attachments: Vec::new(),
        };
        match tokio::time::timeout(self.inner.config.send_timeout, sender.send(msg)).await {
            Ok(Ok(d)) => Ok(d.platform_id),
            Ok(Err(e)) => Err(Error::new(ErrorCode::PlatformSendFailed, e.to_string())),
            Err(_) => Err(Error::new(ErrorCode::PlatformSendFailed, "Messages did not confirm in time")),
        }
    }

    /// The conversation AMC asks in, if it is `channel_platform_id` of `source`.
    pub(in crate::service) fn phone_target_is(&self, source: Source, channel_platform_id: &str) -> Option<PhoneTarget> {
        let target = lock(&self.inner.phone.target).clone()?;
        (source == Source::Imessage && target.platform_id == channel_platform_id).then_some(target)
    }

    /// Reads answers among new messages of the conversation AMC asks in.
    pub(in crate::service) async fn phone_messages(&self, source: Source, channel: &str, new: Vec<IncomingMessage>) {
        if self.phone_target_is(source, channel).is_none() {
            return;
        }
        for m in new {
            let Some((yes, code)) = answer(&m.text) else { continue };
            if !self.is_the_person(&m.sender).await {
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
                Ok(Some(ask)) => self.phone_answer(ask, yes).await,
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "could not read an answer from the phone"),
            }
        }
    }

    /// Reads answers among tapbacks: a 👍 or 👎 added on one of AMC's questions.
    pub(in crate::service) async fn phone_reactions(&self, source: Source, changes: &[ReactionChange]) {
        if source != Source::Imessage || lock(&self.inner.phone.target).is_none() {
            return;
        }
        for c in changes.iter().filter(|c| c.added && [YES, NO].contains(&c.reaction.emoji.as_str())) {
            if !self.is_the_person(&c.reaction.sender).await {
                continue;
            }
            let target = c.target_platform_id.clone();
            match self.blocking(move |s| s.phone_ask_by_prompt(&target)).await {
                Ok(Some(ask)) => self.phone_answer(ask, c.reaction.emoji == YES).await,
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "could not read a tapback from the phone"),
            }
        }
    }

    /// Whether `sender` is the person: their own devices (`is_self`), or one of their own
    /// addresses (Messages may write a self-chat's row as received from it).
    async fn is_the_person(&self, sender: &crate::model::SenderInfo) -> bool {
        if sender.is_self {
            return true;
        }
        let id = crate::model::reader_handle(&sender.id);
        match self.blocking(own_addresses).await {
            Ok(own) => own.iter().any(|a| crate::model::reader_handle(a) == id),
            Err(_) => false,
        }
    }

    /// The person answered `ask` from the phone: the first answer wins; a late one, or one
    /// after a decision elsewhere, is refused and the phone told so.
    async fn phone_answer(&self, ask: PhoneAsk, yes: bool) {
        let Some(target) = lock(&self.inner.phone.target).clone() else { return };
        if ask.channel_id != target.channel_id {
            return;
        }
        let reply = match ask.state {
            PhoneAskState::Asking | PhoneAskState::Asked if ask.expires_at > now_ms() => {
                match self.phone_decide(&ask, yes).await {
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
                format!("AMC: {} expired; your answer changed nothing. It waits for you in AMC.", ask.code)
            }
            PhoneAskState::Settled if self.decided_from_phone(&ask).await => return,
            PhoneAskState::Settled => format!("AMC: {} was settled already; your answer changed nothing.", ask.code),
            PhoneAskState::Withdrawn => format!("AMC: {} was withdrawn; your answer changed nothing.", ask.code),
            PhoneAskState::Skipped | PhoneAskState::Failed => return,
        };
        if ask.expires_at <= now_ms() {
            let (kind, subject) = (ask.kind, ask.subject.clone());
            let _ = self.blocking(move |s| s.end_phone_ask(kind, &subject, PhoneAskState::Expired, now_ms())).await;
        }
        if let Err(e) = self.tell_phone(&target, reply).await {
            tracing::warn!(error = %e, "could not answer the phone");
        }
    }

    /// Approves or rejects what `ask` is about, as from the phone: what to tell the phone.
    async fn phone_decide(&self, ask: &PhoneAsk, yes: bool) -> Result<String> {
        let via = DecidedVia::PhoneImessage;
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

    /// Whether what `ask` is about was decided from the phone (the same answer read twice
    /// is passed over in silence).
    async fn decided_from_phone(&self, ask: &PhoneAsk) -> bool {
        let (kind, subject) = (ask.kind, ask.subject.clone());
        let via = self
            .blocking(move |s| {
                Ok(match kind {
                    PhoneAskKind::Send => s.outbox_item(&subject)?.decided_via,
                    PhoneAskKind::Tool => s.tool_request(&subject)?.decided_via,
                })
            })
            .await;
        matches!(via, Ok(Some(DecidedVia::PhoneImessage)))
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
        let discord = PhoneChannelFacts { source: Source::Discord, ..me };
        assert!(refusal(&discord, &own).is_some());
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
        let q = send_question(&item, &["+15559990000".into()], "ABCD");
        assert_eq!(answer(&q), None, "{q}");
        assert!(q.contains("Mom⟨U+202E⟩") && q.contains("“yes K7QF”") && q.contains("yes ABCD"), "{q}");
        let coded = OutboxItem { text: "Your verification code is 482913".into(), ..item };
        let q = send_question(&coded, &[], "ABCD");
        assert!(!q.contains("482913") && q.contains(amc_secrets::CODE_MARKER), "{q}");
    }
}
