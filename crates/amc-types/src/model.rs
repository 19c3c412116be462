//! The domain types that cross AMC's edges: the message envelope, channels, sends.

use serde::{Deserialize, Serialize};

use crate::time::{Millis, serde_ms};

macro_rules! str_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name { $($(#[$vm])* #[serde(rename = $s)] $variant),+ }

        impl $name {
            /// The name as stored and sent on the wire.
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $s),+ }
            }

            /// Parses the wire name.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($s => Some(Self::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

str_enum! {
    /// Where a channel lives.
    Source {
        /// iMessage and SMS, through macOS Messages.
        Imessage = "imessage",
        /// Discord, through a bot.
        Discord = "discord",
    }
}

impl Source {
    /// The platform's name, for messages to people.
    pub fn display_name(self) -> &'static str {
        match self {
            Self::Imessage => "iMessage",
            Self::Discord => "Discord",
        }
    }

    /// Whether a person has at most one reaction on a message (an iMessage tapback
    /// replaces the earlier one); on Discord a person may add several emoji.
    pub fn one_reaction_per_person(self) -> bool {
        matches!(self, Self::Imessage)
    }

    /// Whether every message the source hands over is the platform's record as it is
    /// now, read in order (iMessage reads chat.db's rows): the newest read wins, whatever
    /// its edit time says. Discord's events and history can arrive out of order, so there
    /// an older version never replaces a newer one.
    pub fn reads_current_rows(self) -> bool {
        matches!(self, Self::Imessage)
    }
}

str_enum! {
    /// A one-to-one conversation or a group.
    ChannelKind {
        /// A one-to-one conversation.
        Dm = "dm",
        /// A group chat or a server channel.
        Group = "group",
    }
}

str_enum! {
    /// The person's decision about a channel. Only `allowed` channels reach agents.
    ChannelState {
        /// Seen, not yet decided: its messages are quarantined.
        Pending = "pending",
        /// Approved: agents see its released history and new messages.
        Allowed = "allowed",
        /// Blocked: hidden from agents.
        Blocked = "blocked",
    }
}

str_enum! {
    /// Which agents are given a channel's one-time codes and sign-in links.
    CodesShown {
        /// No agent: they are hidden behind markers (the default).
        Hidden = "hidden",
        /// Every agent the channel is open to.
        Shown = "shown",
        /// Only the agents in the channel's `codes_agents`.
        Some = "some",
    }
}

str_enum! {
    /// What an agent's send to a channel does.
    SendPolicy {
        /// Agents may read but not send.
        ReadOnly = "read_only",
        /// A send waits until the person approves it.
        Review = "review",
        /// A send goes out at once.
        Auto = "auto",
    }
}

str_enum! {
    /// Where the person decided a held send or a tool request.
    DecidedVia {
        /// On the Mac: AMC's window or the `amc` command.
        Mac = "mac",
        /// On their phone, in their own iMessage conversation (a tapback or a reply).
        PhoneImessage = "phone_imessage",
        /// On their phone, in their DM with the Discord bot (a button or a reply).
        PhoneDiscord = "phone_discord",
    }
}

str_enum! {
    /// What AMC asks about on the person's phone.
    PhoneAskKind {
        /// An agent's send held for review.
        Send = "send",
        /// A host's request to use a tool.
        Tool = "tool",
    }
}

str_enum! {
    /// Where a question on the phone stands.
    PhoneAskState {
        /// Being sent to the phone.
        Asking = "asking",
        /// On the phone, waiting for an answer.
        Asked = "asked",
        /// Over the limit a minute: counted on the phone, answered in AMC.
        Skipped = "skipped",
        /// Decided, wherever it was.
        Settled = "settled",
        /// Not answered in time; the request still waits in AMC.
        Expired = "expired",
        /// AMC withdrew it (paused, the agent revoked).
        Withdrawn = "withdrawn",
        /// The phone could not be told.
        Failed = "failed",
    }
}

/// A question AMC asked (or counted) on the person's phone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PhoneAsk {
    /// `ask_<ULID>`.
    pub id: String,
    /// The short code the person answers with (`yes K7QF`).
    pub code: String,
    /// What it asks about.
    pub kind: PhoneAskKind,
    /// The held send's id (`msg_…`) or the tool request's (`tr_…`).
    pub subject: String,
    /// The conversation it was asked in.
    pub channel_id: String,
    /// Where it stands.
    pub state: PhoneAskState,
    /// The asking message's id on the platform, once sent.
    pub prompt_platform_id: Option<String>,
    /// When it was asked.
    #[serde(with = "serde_ms")]
    pub asked_at: Millis,
    /// When an answer from the phone stops counting.
    #[serde(with = "serde_ms")]
    pub expires_at: Millis,
}

str_enum! {
    /// Whether a message came from the platform or was sent by an agent through AMC.
    Direction {
        /// From the platform (the person's own messages from their devices included).
        Inbound = "inbound",
        /// Sent by an agent through AMC.
        Outbound = "outbound",
    }
}

str_enum! {
    /// Where an agent's send is.
    OutboxStatus {
        /// Waiting for the person's approval.
        Held = "held",
        /// Handed to the platform; the outcome is not recorded yet.
        Sending = "sending",
        /// Delivered.
        Sent = "sent",
        /// The platform refused it.
        Failed = "failed",
        /// The person rejected it.
        Rejected = "rejected",
        /// The platform call may or may not have happened; never retried by itself.
        Unknown = "unknown",
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderInfo {
    /// The platform's id for the sender (a handle, a Discord user id, or `agent:<id>`).
    pub id: String,
    /// A name to show, when known.
    pub display_name: Option<String>,
    /// Whether the person wrote it (from any of their devices, or through AMC).
    pub is_self: bool,
}

/// One reaction on a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reaction {
    /// The emoji (tapbacks are mapped to their emoji).
    pub emoji: String,
    /// Who reacted.
    pub sender: SenderInfo,
}

/// An attachment as agents see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttachmentInfo {
    /// `att_<ULID>`.
    pub id: String,
    /// The file name, when known.
    pub filename: Option<String>,
    /// The MIME type, when known.
    pub mime_type: Option<String>,
    /// The size in bytes, when known.
    pub size_bytes: Option<i64>,
    /// Whether the file can be fetched now (an iMessage file offloaded to iCloud cannot).
    pub available: bool,
    /// How an agent gets the file: `GET` this path on the daemon with its token.
    pub download_path: String,
}

/// The channel summary carried in every envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChannelRef {
    /// The channel's name.
    pub name: String,
    /// `dm` or `group`.
    pub kind: ChannelKind,
}

/// A message as agents see it: the same shape for every source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Envelope {
    /// `msg_<ULID>`.
    pub id: String,
    /// `imessage` or `discord`.
    pub source: Source,
    /// The channel's id.
    pub channel_id: String,
    /// The channel's name and kind.
    pub channel: ChannelRef,
    /// Who wrote it.
    pub sender: SenderInfo,
    /// The text (empty for an attachment-only or unsent message).
    pub text: String,
    /// When it was sent, per the platform.
    #[serde(with = "serde_ms")]
    pub sent_at: Millis,
    /// When it was last edited, if it was.
    #[serde(with = "serde_ms::option")]
    pub edited_at: Option<Millis>,
    /// Whether the sender unsent (deleted) it.
    pub unsent: bool,
    /// The message it replies to, when that message is known to AMC.
    pub reply_to: Option<String>,
    /// Reactions, in the order they were added.
    pub reactions: Vec<Reaction>,
    /// Attachments.
    pub attachments: Vec<AttachmentInfo>,
    /// `inbound` (from the platform) or `outbound` (sent by an agent through AMC).
    pub direction: Direction,
    /// The agent that sent it, for outbound messages.
    pub agent_id: Option<String>,
    /// The thread of the channel it is in (a Discord thread or forum post), if any. A
    /// reply to it goes into the same thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<ThreadRef>,
    /// Present on an outbound message the platform failed after it had reported it sent
    /// (Messages marking it not delivered): why. The send's answer said `sent`; this is
    /// what an agent finds out later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_failed: Option<String>,
    /// Whether someone other than the agent reading it wrote the text: third-party text,
    /// to be read as data, never as instructions. True but for the agent's own sends (and
    /// true wherever no agent reads it).
    pub untrusted_content: bool,
    /// What was hidden from the text agents are given, and why: `one_time_code`,
    /// `sign_in_link` (the person sees the whole text). Absent when nothing was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<&'static str>,
    /// In the person's views only: the kinds of secret the text holds (`one_time_code`,
    /// `sign_in_link`), which agents are not given unless the person shows them. Absent
    /// when it holds none, and always absent for agents.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<&'static str>,
    /// In the person's views only: each secret of the text, where it stands and which rule
    /// found it, so the person sees what agents are not given and why. Absent when the text
    /// holds none, and always absent for agents.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secret_spans: Vec<SecretSpan>,
    /// In the person's views only: the person said the text holds no one-time code or
    /// sign-in link, so agents are given it whole. Absent when not, and always absent for
    /// agents.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub not_a_code: bool,
}

/// What the person said holds no code (`GET /admin/codes/report`): how many messages, how
/// many of them each rule had found something in, and the messages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotACodeReport {
    /// How many messages the person said hold no code.
    pub marked: usize,
    /// For each rule, in how many of them it had found something, by rule name.
    pub by_rule: Vec<RuleCount>,
    /// The messages, newest first.
    pub messages: Vec<NotACode>,
}

/// A rule of the code finder, in words, and in how many messages the person said hold no
/// code it had found something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleCount {
    /// The rule's name (`called_the_code`, `short_code`, …).
    pub rule: String,
    /// Why that rule takes what it finds, in words.
    pub why: &'static str,
    /// In how many of the messages.
    pub messages: usize,
}

/// A message the person said holds no code, as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotACode {
    /// `msg_<ULID>`.
    pub message_id: String,
    /// Its channel's name, while the message is stored.
    pub channel_name: Option<String>,
    /// The rules that had found something in it, when the person said so.
    pub rules: Vec<String>,
    /// When the person said so.
    pub marked_at: i64,
}

/// A secret in a message's text, as the person's views mark it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecretSpan {
    /// `one_time_code` or `sign_in_link`.
    pub kind: &'static str,
    /// Where it starts, in characters (Unicode scalar values) from the text's start.
    pub start: usize,
    /// Where it ends, in characters, past its last.
    pub end: usize,
    /// The rule that found it (`called_the_code`, `sign_in_words`, `short_code`, …).
    pub rule: &'static str,
    /// Why that rule took it, in words.
    pub why: &'static str,
}

/// A thread inside a channel, as agents see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadRef {
    /// The thread's name.
    pub name: String,
}

/// A channel as agents see it (`GET /channels`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChannelInfo {
    /// `ch_<ULID>`.
    pub id: String,
    /// `imessage` or `discord`.
    pub source: Source,
    /// The channel's name.
    pub name: String,
    /// `dm` or `group`.
    pub kind: ChannelKind,
    /// What a send does here.
    pub send_policy: SendPolicy,
    /// The newest message's time.
    #[serde(with = "serde_ms::option")]
    pub last_activity_at: Option<Millis>,
    /// Present when the platform deleted the channel or no longer lets AMC in: why. Its
    /// history stays readable; sends are refused with `CHANNEL_GONE`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gone: Option<String>,
}

/// A channel as the person sees it (admin API).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChannelAdmin {
    /// `ch_<ULID>`.
    pub id: String,
    /// `imessage` or `discord`.
    pub source: Source,
    /// The platform's id (chat guid, Discord channel id).
    pub platform_id: String,
    /// The channel's name.
    pub name: String,
    /// `dm` or `group`.
    pub kind: ChannelKind,
    /// `pending`, `allowed` or `blocked`.
    pub state: ChannelState,
    /// What a send does here.
    pub send_policy: SendPolicy,
    /// While allowed, messages sent at or after this time are visible (`null`: all history).
    #[serde(with = "serde_ms::option")]
    pub visible_from: Option<Millis>,
    /// All messages stored for the channel.
    pub message_count: i64,
    /// How many of them agents can see now.
    pub visible_count: i64,
    /// When AMC first saw the channel.
    #[serde(with = "serde_ms")]
    pub created_at: Millis,
    /// The newest message's time.
    #[serde(with = "serde_ms::option")]
    pub last_message_at: Option<Millis>,
    /// `null` when every agent sees it (the default); else the agents that do, each with
    /// its own send policy (`null`: the channel's).
    pub agents: Option<Vec<ChannelAgent>>,
    /// Why the platform no longer has the channel for AMC (deleted, or the bot removed),
    /// or `null`.
    pub gone: Option<String>,
    /// Which agents are given its one-time codes and sign-in links: `hidden` (none, the
    /// default), `shown` (every agent it is open to), `some` (those in `codes_agents`).
    pub codes: CodesShown,
    /// The agents given its codes when `codes` is `some`, else empty.
    pub codes_agents: Vec<String>,
    /// A conversation with a short code or an alphanumeric sender id (banks, sign-ins):
    /// approving it takes `"sensitive": true` (the person is asked twice).
    pub sensitive: bool,
    /// How many of its messages are known to hold a one-time code or sign-in link.
    pub secret_count: i64,
    /// The person turned the readers rule off here: an agent's send under `auto` goes out
    /// whatever else the agent read (the rule holds a send that carries one
    /// conversation's text to people who could not read it).
    pub receives_anything: bool,
}

/// An agent a channel is open to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChannelAgent {
    /// The agent.
    pub id: String,
    /// Its own send policy here, when it has one.
    pub send_policy: Option<SendPolicy>,
}

/// How much history approving a channel releases to agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryRelease {
    /// Only messages sent from the approval on.
    FromNow,
    /// Everything stored.
    All,
    /// Messages of the last N days.
    LastDays(u32),
}

/// An attachment an agent asked to send, after AMC has staged it as a local file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedAttachment {
    /// Where AMC keeps the staged copy.
    pub path: String,
    /// The file name to send it under.
    pub filename: String,
    /// The size in bytes.
    pub size_bytes: u64,
    /// Where it came from: the agent's path or URL.
    pub origin: String,
}

/// A conversation an agent was given messages of: what a send held by the readers rule
/// may carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadFrom {
    /// A channel's id (`ch_…`) or a relay thread's (a UUID).
    pub conversation: String,
    /// Its name then, for the person.
    pub name: String,
    /// When the agent was last given its messages.
    #[serde(with = "serde_ms")]
    pub read_at: Millis,
}

/// An agent's send, as the outbox keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutboxItem {
    /// `msg_<ULID>`; the message's id once sent.
    pub id: String,
    /// The agent that sent it.
    pub agent_id: String,
    /// The channel.
    pub channel_id: String,
    /// The channel's name.
    pub channel_name: String,
    /// The channel's source.
    pub source: Source,
    /// The text.
    pub text: String,
    /// The message it replies to.
    pub reply_to: Option<String>,
    /// The staged attachments.
    pub attachments: Vec<StagedAttachment>,
    /// Where it is.
    pub status: OutboxStatus,
    /// When the agent asked.
    #[serde(with = "serde_ms")]
    pub created_at: Millis,
    /// When it was delivered.
    #[serde(with = "serde_ms::option")]
    pub sent_at: Option<Millis>,
    /// The error code of a failed send.
    pub error_code: Option<String>,
    /// The error message of a failed send, or the person's reason for a rejection.
    pub error_message: Option<String>,
    /// For a send the platform rate-limited: when it may be tried again.
    #[serde(with = "serde_ms::option")]
    pub retry_after_at: Option<Millis>,
    /// Why it was held beyond its channel's policy: `crosses_conversations`, or `null`.
    pub held_reason: Option<String>,
    /// For a send held by the readers rule: the other conversations the agent had read,
    /// newest first (at most [`READ_FROM_SHOWN`]).
    pub read_from: Vec<ReadFrom>,
    /// Where the person approved or rejected it, once they did.
    pub decided_via: Option<DecidedVia>,
}

/// The most conversations a held send names as read from.
pub const READ_FROM_SHOWN: usize = 50;

/// A send the platform reported sent, as its source looks at it again: the platform may
/// still fail it (Messages can mark a row it sent not delivered afterwards).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentSend {
    /// `msg_<ULID>`: the send, and its message.
    pub id: String,
    /// The platform ids of its parts: its message's first, then the others (a file
    /// Messages wrote as a row of its own).
    pub parts: Vec<String>,
}

/// What waits for the person: the counts the tray shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Waiting {
    /// Channels seen but neither approved nor blocked.
    pub channels: u64,
    /// Agents' sends held for review.
    pub sends: u64,
    /// Hosts' requests to use a tool, waiting for the person's answer.
    pub tools: u64,
}

/// Where a host's request to use a tool stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolRequestStatus {
    /// Waiting for the person.
    Pending,
    /// The person allowed it.
    Allowed,
    /// The person denied it.
    Denied,
    /// The session that asked ended before the person answered.
    Gone,
}

impl ToolRequestStatus {
    /// The status as stored and sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Allowed => "allowed",
            Self::Denied => "denied",
            Self::Gone => "gone",
        }
    }

    /// Parses a stored or given status.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "allowed" => Self::Allowed,
            "denied" => Self::Denied,
            "gone" => Self::Gone,
            _ => return None,
        })
    }
}

/// A host's request to use a tool (Claude Code's permission prompt), as the person sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolRequest {
    /// `tr_<ULID>`.
    pub id: String,
    /// The agent whose session asked.
    pub agent_id: String,
    /// The host's id for the request (Claude Code's five letters).
    pub request_id: String,
    /// The tool, e.g. `Bash`.
    pub tool_name: String,
    /// What the tool call does, in the host's words.
    pub description: String,
    /// The start of the tool's input, as the host gave it.
    pub input_preview: String,
    /// Where it stands.
    pub status: ToolRequestStatus,
    /// When it was asked.
    #[serde(with = "serde_ms")]
    pub created_at: Millis,
    /// When the person answered (or the session ended).
    #[serde(with = "serde_ms::option")]
    pub decided_at: Option<Millis>,
    /// Where the person answered, once they did.
    pub decided_via: Option<DecidedVia>,
}

/// An agent as the person sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentInfo {
    /// The agent's id, as sent in `X-Agent-ID`.
    pub id: String,
    /// When it was added.
    #[serde(with = "serde_ms")]
    pub created_at: Millis,
    /// When its token was last used.
    #[serde(with = "serde_ms::option")]
    pub last_seen_at: Option<Millis>,
    /// When it was revoked.
    #[serde(with = "serde_ms::option")]
    pub revoked_at: Option<Millis>,
    /// Whether a session of it (`amc mcp`) is being told new messages as they arrive.
    pub pushing: bool,
    /// When its push last told it something.
    #[serde(with = "serde_ms::option")]
    pub last_pushed_at: Option<Millis>,
}

/// A message a source hands to the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingMessage {
    /// The platform's id, unique per source (iMessage guid, Discord snowflake).
    pub platform_id: String,
    /// Who wrote it.
    pub sender: SenderInfo,
    /// The text.
    pub text: String,
    /// When it was sent, per the platform.
    pub sent_at: Millis,
    /// The platform id of the message it replies to.
    pub reply_to_platform_id: Option<String>,
    /// Attachments.
    pub attachments: Vec<IncomingAttachment>,
    /// When it was last edited.
    pub edited_at: Option<Millis>,
    /// Whether it was unsent.
    pub unsent: bool,
    /// Reactions.
    pub reactions: Vec<Reaction>,
}

/// How AMC holds a source's message, for the source's sweep to compare with the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// A message of its own, as last stored.
    Message {
        /// When it was last edited.
        edited_at: Option<Millis>,
        /// Whether it was unsent (for good: nothing brings it back).
        unsent: bool,
    },
    /// A part of a message stored under another platform id (an agent's send the platform
    /// split into several rows).
    Part,
}

/// An attachment a source hands to the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingAttachment {
    /// The platform's id for the attachment, if any.
    pub platform_id: Option<String>,
    /// The file name.
    pub filename: Option<String>,
    /// The MIME type.
    pub mime_type: Option<String>,
    /// The size in bytes.
    pub size_bytes: Option<i64>,
    /// A local file (iMessage).
    pub local_path: Option<String>,
    /// A remote URL fetched on demand (Discord).
    pub remote_url: Option<String>,
    /// Whether the file can be fetched now.
    pub available: bool,
}

/// A channel as a source describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSpec {
    /// The platform's id (chat guid, Discord channel id).
    pub platform_id: String,
    /// The name to show; empty when the source does not know it (a stored name stays).
    pub name: String,
    /// `dm` or `group`.
    pub kind: ChannelKind,
    /// Who besides the person reads it, by the platform's handles (a chat's participants,
    /// the other side of a DM), when the source can tell; `None` leaves the stored ones.
    pub readers: Option<Vec<String>>,
}

impl ChannelSpec {
    /// A channel whose readers the source does not say.
    pub fn new(platform_id: impl Into<String>, name: impl Into<String>, kind: ChannelKind) -> Self {
        Self { platform_id: platform_id.into(), name: name.into(), kind, readers: None }
    }
}

/// A reader's handle as AMC compares them: trimmed, lower case (addresses differ only in
/// case in chat.db).
pub fn reader_handle(handle: &str) -> String {
    handle.trim().to_lowercase()
}

/// The parts of a channel the send path needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendTarget {
    /// `ch_<ULID>`.
    pub id: String,
    /// The source.
    pub source: Source,
    /// The platform's id.
    pub platform_id: String,
    /// The name.
    pub name: String,
    /// The kind.
    pub kind: ChannelKind,
    /// The send policy.
    pub send_policy: SendPolicy,
    /// Why the platform no longer has the channel for AMC, if it does not.
    pub gone: Option<String>,
}

/// A thread inside a channel (a Discord thread or forum post): its platform id and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadSpec {
    /// The platform's id of the thread.
    pub platform_id: String,
    /// Its name.
    pub name: String,
}

/// An allowed channel, as a source reading its history back needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedChannel {
    /// `ch_<ULID>`.
    pub id: String,
    /// The platform's id.
    pub platform_id: String,
    /// The kind.
    pub kind: ChannelKind,
    /// Messages sent at or after this time are visible (`None`: all history).
    pub visible_from: Option<Millis>,
}

impl From<&ChannelAdmin> for AllowedChannel {
    fn from(c: &ChannelAdmin) -> Self {
        Self { id: c.id.clone(), platform_id: c.platform_id.clone(), kind: c.kind, visible_from: c.visible_from }
    }
}

/// What an ingest did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngestReport {
    /// The channel's id.
    pub channel_id: String,
    /// Whether the channel was seen for the first time (it is `pending`).
    pub channel_created: bool,
    /// Whether the channel, already stored, changed its name or kind, or came back.
    pub channel_changed: bool,
    /// Ids of messages stored for the first time.
    pub inserted: Vec<String>,
    /// Their platform ids, in the same order.
    pub inserted_platform_ids: Vec<String>,
    /// Ids of stored messages whose text, edit, unsend or reactions changed.
    pub updated: Vec<String>,
}

/// Where an attachment's file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentFile {
    /// The local file, when AMC has one.
    pub local_path: Option<String>,
    /// The file name.
    pub filename: Option<String>,
    /// The MIME type.
    pub mime_type: Option<String>,
    /// Whether the file can be read now.
    pub available: bool,
    /// The size the platform reported.
    pub size_bytes: Option<i64>,
    /// Where the platform keeps the file, when it is fetched on demand (Discord).
    pub remote: Option<RemoteFile>,
    /// The source of the message.
    pub source: Source,
    /// The channel of the message, and its name: what the agent reads by fetching it.
    pub channel: (String, String),
}

/// A change to a message's reactions, as a source reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReactionChange {
    /// The platform id of the message reacted to.
    pub target_platform_id: String,
    /// The reaction.
    pub reaction: Reaction,
    /// Added (`true`) or taken back (`false`).
    pub added: bool,
}

/// A file a platform keeps, which AMC fetches when an agent asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    /// Where the platform said the file was.
    pub url: String,
    /// The platform's id for the attachment.
    pub attachment_platform_id: Option<String>,
    /// The platform id of the message it belongs to.
    pub message_platform_id: String,
    /// The platform id of the message's channel.
    pub channel_platform_id: String,
}

/// Sources in the order of their names (how lists of them are shown).
impl PartialOrd for Source {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Source {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}
