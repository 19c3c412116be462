//! The agents' reads. Every range and pattern of the inbox contract is checked here.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{AgentCtx, Amc};
use crate::error::{Error, Result};
use crate::events::Event;
use crate::ids::{is_channel_id, is_message_id};
use crate::model::AttachmentFile;
use crate::model::{ChannelInfo, Envelope, Source};
use crate::time::{format_ms, parse_rfc3339};
use amc_store::UnreadQuery;

/// The most ids one `mark_read` takes.
pub const MARK_READ_MAX_IDS: usize = 1000;

/// `list_unread_messages` / `GET /messages/unread`, as given.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UnreadParams {
    /// RFC 3339; only messages sent at or after it.
    pub since: Option<String>,
    /// `imessage` or `discord`.
    pub source: Option<String>,
    /// Only this channel.
    pub channel_id: Option<String>,
    /// 1..=100, default 20.
    pub limit: Option<i64>,
    /// A `next_cursor` from an earlier page: only messages after that one.
    pub cursor: Option<String>,
}

/// `wait_for_unread_messages` / `GET /messages/unread/wait`: the filters of
/// [`UnreadParams`] and how long to wait.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WaitUnreadParams {
    /// RFC 3339; only messages sent at or after it.
    pub since: Option<String>,
    /// `imessage` or `discord`.
    pub source: Option<String>,
    /// Only this channel.
    pub channel_id: Option<String>,
    /// 1..=100, default 20.
    pub limit: Option<i64>,
    /// A `next_cursor` from an earlier page: only messages after that one.
    pub cursor: Option<String>,
    /// 1..=25 seconds, default 25.
    pub timeout_seconds: Option<i64>,
}

/// The longest `wait_for_unread_messages` wait, in seconds.
pub const MAX_UNREAD_WAIT_SECONDS: i64 = 25;

/// The unread page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnreadPage {
    /// Oldest first.
    pub messages: Vec<Envelope>,
    /// The newest returned message's time; the `since` given when none; else `null`.
    pub next_since: Option<String>,
    /// The position after the newest returned message; the `cursor` given when none;
    /// else `null`. Unlike `next_since` it is exclusive and total (time and id), so
    /// paging by it never returns a message twice or sticks.
    pub next_cursor: Option<String>,
}

/// The length of an unread cursor's tag: 128 bits, past guessing.
const CURSOR_TAG: usize = 16;

/// What an unread cursor starts with: the version of its format. Cursors of the release
/// before had none, and are refused.
const CURSOR_VERSION: &str = "v2.";

/// What a refused cursor is told, with the way on.
const CURSOR_REFUSED: &str = "cursor must be a next_cursor returned by list_unread_messages to this agent; \
                              list again without cursor to start over";

/// A position in the unread order, (time, message id), as an opaque string signed for the
/// agent it is handed to: `v2.<position>.<tag>`, each in base64.
fn encode_cursor(signer: &crate::crypto::Signer, agent_id: &str, at: crate::time::Millis, id: &str) -> String {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let position = format!("{at}:{id}");
    let tag = signer.tag(&[agent_id.as_bytes(), position.as_bytes()], CURSOR_TAG);
    format!("{CURSOR_VERSION}{}.{}", URL_SAFE_NO_PAD.encode(&position), URL_SAFE_NO_PAD.encode(tag))
}

/// The position of a cursor AMC handed to `agent_id`; any other is refused.
fn decode_cursor(
    signer: &crate::crypto::Signer,
    agent_id: &str,
    cursor: &str,
) -> Result<(crate::time::Millis, String)> {
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let invalid = || Error::validation(CURSOR_REFUSED);
    let signed = cursor.strip_prefix(CURSOR_VERSION).ok_or_else(invalid)?;
    let (position, tag) = signed.split_once('.').ok_or_else(invalid)?;
    let position = URL_SAFE_NO_PAD.decode(position).map_err(|_| invalid())?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| invalid())?;
    if !signer.verify(&[agent_id.as_bytes(), &position], &tag, CURSOR_TAG) {
        return Err(invalid());
    }
    // Signed by this daemon, so well formed; checked all the same, should the key leak.
    let text = String::from_utf8(position).map_err(|_| invalid())?;
    let (at, id) = text.split_once(':').ok_or_else(invalid)?;
    let at: crate::time::Millis = at.parse().map_err(|_| invalid())?;
    if !is_message_id(id) {
        return Err(invalid());
    }
    Ok((at, id.to_owned()))
}

/// `get_message_context` / `GET /messages/context`, as given.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ContextParams {
    /// The channel.
    pub channel_id: Option<String>,
    /// The target message.
    pub around_message_id: Option<String>,
    /// 0..=50, default 5.
    pub before: Option<i64>,
    /// 0..=50, default 5.
    pub after: Option<i64>,
}

/// The context page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextPage {
    /// Chronological, the target included.
    pub messages: Vec<Envelope>,
}

/// The answer of `mark_read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MarkReadResult {
    /// The number of unique ids submitted.
    pub marked_count: usize,
}

pub(super) fn ranged(name: &str, value: Option<i64>, min: i64, max: i64, default: i64) -> Result<u32> {
    let v = value.unwrap_or(default);
    if !(min..=max).contains(&v) {
        return Err(Error::validation(format!("{name} must be an integer from {min} to {max}")));
    }
    Ok(v as u32)
}

pub(super) fn check_channel_id(id: &str) -> Result<()> {
    if is_channel_id(id) { Ok(()) } else { Err(Error::validation("channel_id must look like ch_<ULID>")) }
}

pub(super) fn check_message_id(field: &str, id: &str) -> Result<()> {
    if is_message_id(id) {
        Ok(())
    } else {
        Err(Error::validation(format!("{field} must match ^msg_[0-9A-HJKMNP-TV-Z]{{26}}$")))
    }
}

/// Records that the agent `agent_id` is given these messages, now: the conversations they
/// are of, each once, with its name as the person knows it (before any code in it is
/// hidden). The readers rule of the send path ([`super::readers`]) reads it back.
/// Called on the blocking pool, before [`seen_by`].
pub(in crate::service) fn note_given<'a>(
    s: &amc_store::Store,
    agent_id: &str,
    messages: impl IntoIterator<Item = &'a Envelope>,
) -> Result<()> {
    let mut given: Vec<(String, String)> = Vec::new();
    for m in messages {
        if !given.iter().any(|(c, _)| *c == m.channel_id) {
            given.push((m.channel_id.clone(), m.channel.name.clone()));
        }
    }
    s.record_reads(agent_id, &given, crate::time::now_ms())
}

/// Makes messages what the agent `agent_id` may be given: what it sent itself is marked
/// its own, the text of every other message third-party (`untrusted_content`), and
/// one-time codes and sign-in links are hidden from every text ([`redact`]) but in the
/// channels whose codes the person shows it (`shown`, from [`amc_store::Store::codes_shown_to`]
/// read after the messages, so none read after the person hid them is given whole).
/// Called on the blocking pool, with the store's read: reading a long message for codes
/// is work.
pub(in crate::service) fn seen_by(agent_id: &str, shown: &HashSet<String>, messages: &mut [Envelope]) {
    // A page's messages mostly share their channel's and their senders' names: each name
    // is read for secrets once.
    let mut names = Names::new();
    for m in messages {
        m.untrusted_content = m.agent_id.as_deref() != Some(agent_id);
        // The person said its text holds no code: given whole, its names hidden still.
        let text_too = !std::mem::take(&mut m.not_a_code);
        if !shown.contains(&m.channel_id) {
            redact(m, &mut names, text_too);
        }
    }
}

/// Names already read for secrets: each as an agent is given it, and the kinds hidden.
type Names = std::collections::HashMap<String, (String, Vec<&'static str>)>;

/// Marks, for the person's views, which kinds of secret each message holds (`secrets`):
/// the person sees the whole text, and what agents are not given of it.
pub(in crate::service) fn seen_by_person(messages: &mut [Envelope]) {
    for m in messages {
        let found = secrets_in(m);
        m.secrets = kinds(&found);
        m.secret_spans = found
            .iter()
            .map(|f| {
                let chars = |to: usize| m.text.get(..to).map_or(0, |s| s.chars().count());
                crate::model::SecretSpan {
                    kind: f.kind.as_str(),
                    start: chars(f.at.start),
                    end: chars(f.at.end),
                    rule: f.rule.as_str(),
                    why: f.rule.why(),
                }
            })
            .collect();
    }
}

/// The one-time codes and sign-in links of `m`'s text. Numbers from a short-code sender
/// count as codes.
fn secrets_in(m: &Envelope) -> Vec<crate::secrets::Found> {
    crate::secrets::in_message(
        crate::secrets::Author { source: m.source.as_str(), sender: &m.sender.id, is_self: m.sender.is_self },
        &m.text,
    )
}

/// The kinds among `found`, each once, in order.
fn kinds(found: &[crate::secrets::Found]) -> Vec<&'static str> {
    let mut kinds = Vec::new();
    for f in found {
        if !kinds.contains(&f.kind.as_str()) {
            kinds.push(f.kind.as_str());
        }
    }
    kinds
}

/// Hides the one-time codes and sign-in links of `m`'s text (unless not `text_too`: the
/// person said it holds none) and of its names behind markers, and says
/// which kinds it hid (`redacted`): no agent is given them, by any route, unless the
/// person shows a channel's codes to it (the person sees the whole text).
fn redact(m: &mut Envelope, names: &mut Names, text_too: bool) {
    let found = if text_too { secrets_in(m) } else { Vec::new() };
    let mut redacted = kinds(&found);
    if !found.is_empty() {
        m.text = crate::secrets::hide(&m.text, &found);
    }
    // Names are text too, and some come from messages: Discord names a thread after the
    // message that started it, a person names a group. They are hidden the same way.
    let thread = m.thread.as_mut().map(|t| &mut t.name);
    for name in [Some(&mut m.channel.name), thread, m.sender.display_name.as_mut()].into_iter().flatten() {
        let (shown, kinds) = names.entry(std::mem::take(name)).or_insert_with_key(|name| {
            let mut shown = name.clone();
            let kinds = hide_in_name(&mut shown);
            (shown, kinds)
        });
        name.clone_from(shown);
        for kind in kinds.iter() {
            if !redacted.contains(kind) {
                redacted.push(kind);
            }
        }
    }
    m.redacted = redacted;
}

/// Hides the secrets of a name in place; the kinds it hid.
fn hide_in_name(name: &mut String) -> Vec<&'static str> {
    let found = crate::secrets::in_name(name);
    if !found.is_empty() {
        *name = crate::secrets::hide(name, &found);
    }
    kinds(&found)
}

pub(super) fn parse_source(s: &str) -> Result<Source> {
    Source::parse(s).ok_or_else(|| Error::validation("source must be \"imessage\" or \"discord\""))
}

impl Amc {
    /// The agent's unread messages of allowed channels, oldest first.
    pub async fn list_unread(&self, agent: &AgentCtx, p: UnreadParams) -> Result<UnreadPage> {
        let since = match p.since.as_deref() {
            Some(s) => Some(parse_rfc3339(s).ok_or_else(|| Error::validation("since must be an RFC 3339 timestamp"))?),
            None => None,
        };
        let source = p.source.as_deref().map(parse_source).transpose()?;
        if let Some(c) = &p.channel_id {
            check_channel_id(c)?;
        }
        let signer = self.inner.keys.unread_cursors();
        let after = p.cursor.as_deref().map(|c| decode_cursor(signer, &agent.agent_id, c)).transpose()?;
        let q = UnreadQuery {
            since,
            after,
            source,
            channel_id: p.channel_id,
            limit: ranged("limit", p.limit, 1, 100, 20)?,
        };
        let agent_id = agent.agent_id.clone();
        let (messages, next_since) = self
            .blocking(move |s| {
                let (mut messages, next_since) = s.unread(&agent_id, &q)?;
                note_given(s, &agent_id, &messages)?;
                let shown = s.codes_shown_to(&agent_id)?;
                seen_by(&agent_id, &shown, &mut messages);
                Ok((messages, next_since))
            })
            .await?;
        let next_cursor = match messages.last() {
            Some(m) => Some(encode_cursor(signer, &agent.agent_id, m.sent_at, &m.id)),
            None => p.cursor,
        };
        Ok(UnreadPage { messages, next_since: next_since.map(format_ms), next_cursor })
    }

    /// Like [`Amc::list_unread`], but when nothing is unread, waits up to `timeout_seconds`
    /// (or until `cancelled`, a caller that went away or a daemon that stops) for a message
    /// to become unread, and answers as soon as one is. An empty page at the end of the
    /// wait. Waiting costs nothing: the wait sleeps on the change feed, and looks at the
    /// store again only when messages arrive or a channel changes.
    pub async fn wait_for_unread(
        &self,
        agent: &AgentCtx,
        p: WaitUnreadParams,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<UnreadPage> {
        let timeout =
            ranged("timeout_seconds", p.timeout_seconds, 1, MAX_UNREAD_WAIT_SECONDS, MAX_UNREAD_WAIT_SECONDS)?;
        let params = UnreadParams {
            since: p.since,
            source: p.source,
            channel_id: p.channel_id,
            limit: p.limit,
            cursor: p.cursor,
        };
        // Listen before looking, so a message stored in between still wakes the wait.
        let mut events = self.events().subscribe();
        let mut revocations = self.revocations();
        // A revocation wins over messages read at the same time: between the request's
        // authentication and the subscription, or since it.
        let revoked = async |revocations: &mut tokio::sync::watch::Receiver<u64>, since: bool| -> Result<()> {
            let changed = revocations.has_changed().unwrap_or(false);
            if (!since || changed) && self.is_agent_revoked(agent.agent_id.clone()).await? {
                return Err(Error::unauthorized("this agent was revoked"));
            }
            Ok(())
        };
        revoked(&mut revocations, false).await?;
        let _slot = self.inner.waits.enter(&agent.agent_id)?;
        let page = self.list_unread(agent, params.clone()).await?;
        if !page.messages.is_empty() {
            revoked(&mut revocations, true).await?;
            return Ok(page);
        }
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(u64::from(timeout));
        let ours = |channel_id: &str| params.channel_id.as_deref().is_none_or(|c| c == channel_id);
        // A wait on one channel ends when the person takes that channel from the agent.
        let open = async |channel_id: Option<String>| -> Result<bool> {
            let Some(channel_id) = channel_id else { return Ok(true) };
            let agent_id = agent.agent_id.clone();
            Ok(self.blocking(move |s| s.send_target(&agent_id, &channel_id)).await?.is_some())
        };
        let was_open = open(params.channel_id.clone()).await?;
        tokio::pin!(cancelled);
        loop {
            let look = tokio::select! {
                () = tokio::time::sleep_until(deadline) => return Ok(page),
                () = &mut cancelled => return Ok(page),
                Ok(()) = revocations.changed() => {
                    if self.is_agent_revoked(agent.agent_id.clone()).await? {
                        return Err(Error::unauthorized("this agent was revoked"));
                    }
                    false
                }
                event = events.recv() => match event {
                    Ok(Event::MessagesChanged { channel_id, inserted, .. }) => inserted > 0 && ours(&channel_id),
                    Ok(Event::ChannelChanged { channel_id }) => {
                        if was_open && params.channel_id.as_deref() == Some(channel_id.as_str())
                            && !open(Some(channel_id.clone())).await?
                        {
                            return Ok(page);
                        }
                        ours(&channel_id)
                    }
                    Ok(_) => false,
                    // Events were missed: look, in case one of them mattered.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(page),
                },
            };
            if look {
                let fresh = self.list_unread(agent, params.clone()).await?;
                if !fresh.messages.is_empty() {
                    revoked(&mut revocations, true).await?;
                    return Ok(fresh);
                }
            }
        }
    }

    /// A message and its neighbours in its channel.
    pub async fn message_context(&self, agent: &AgentCtx, p: ContextParams) -> Result<ContextPage> {
        let channel_id = p.channel_id.ok_or_else(|| Error::validation("channel_id is required"))?;
        let around = p.around_message_id.ok_or_else(|| Error::validation("around_message_id is required"))?;
        check_channel_id(&channel_id)?;
        check_message_id("around_message_id", &around)?;
        let before = ranged("before", p.before, 0, 50, 5)?;
        let after = ranged("after", p.after, 0, 50, 5)?;
        let agent_id = agent.agent_id.clone();
        let messages = self
            .blocking(move |s| {
                let mut messages = s.context(&agent_id, &channel_id, &around, before, after)?;
                note_given(s, &agent_id, &messages)?;
                let shown = s.codes_shown_to(&agent_id)?;
                seen_by(&agent_id, &shown, &mut messages);
                Ok(messages)
            })
            .await?;
        Ok(ContextPage { messages })
    }

    /// Marks messages read for this agent.
    pub async fn mark_read(&self, agent: &AgentCtx, ids: Vec<String>) -> Result<MarkReadResult> {
        if ids.len() > MARK_READ_MAX_IDS {
            return Err(Error::validation(format!("message_ids takes at most {MARK_READ_MAX_IDS} ids")));
        }
        for id in &ids {
            check_message_id("message_ids[]", id)?;
        }
        let agent_id = agent.agent_id.clone();
        let marked_count = self.blocking(move |s| s.mark_read(&agent_id, &ids)).await?;
        self.publish(Event::ReadChanged { agent_id: agent.agent_id.clone() });
        Ok(MarkReadResult { marked_count })
    }

    /// One visible message.
    pub async fn get_message(&self, agent: &AgentCtx, id: String) -> Result<Envelope> {
        check_message_id("message id", &id)?;
        let agent_id = agent.agent_id.clone();
        self.blocking(move |s| {
            let mut message = s.visible_message(&agent_id, &id)?;
            note_given(s, &agent_id, [&message])?;
            let shown = s.codes_shown_to(&agent_id)?;
            seen_by(&agent_id, &shown, std::slice::from_mut(&mut message));
            Ok(message)
        })
        .await
    }

    /// The channels agents may use.
    pub async fn list_channels(&self, agent: &AgentCtx, source: Option<String>) -> Result<Vec<ChannelInfo>> {
        let source = source.as_deref().map(parse_source).transpose()?;
        let agent_id = agent.agent_id.clone();
        self.blocking(move |s| {
            let mut channels = s.visible_channels(&agent_id, source)?;
            let shown = s.codes_shown_to(&agent_id)?;
            // A name holds no code for an agent its channel's codes are not shown to.
            for c in channels.iter_mut().filter(|c| !shown.contains(&c.id)) {
                hide_in_name(&mut c.name);
            }
            Ok(channels)
        })
        .await
    }

    /// The local file behind a visible attachment: on this Mac already (iMessage), or
    /// fetched from the platform on first use and kept in AMC's cache (Discord).
    pub async fn attachment_file(&self, agent: &AgentCtx, id: String) -> Result<AttachmentFile> {
        if !crate::ids::is_attachment_id(&id) {
            return Err(Error::validation("attachment id must look like att_<ULID>"));
        }
        let lookup = id.clone();
        let agent_id = agent.agent_id.clone();
        let mut file = self
            .blocking(move |s| {
                let file = s.visible_attachment(&agent_id, &lookup)?;
                // A file is a message's content: the readers rule counts it read.
                s.record_reads(&agent_id, std::slice::from_ref(&file.channel), crate::time::now_ms())?;
                Ok(file)
            })
            .await?;
        if file.local_path.is_some() && file.available {
            return Ok(file);
        }
        let unavailable = || {
            Error::new(
                crate::error::ErrorCode::NotFound,
                "this attachment is not available on this Mac (for example, offloaded to iCloud)",
            )
        };
        let (Some(remote), Some(sender)) = (file.remote.clone(), self.inner.senders.get(file.source).cloned()) else {
            return Err(unavailable());
        };
        let cached = self.config().attachment_cache_dir().join(&id);
        if tokio::fs::metadata(&cached).await.is_ok() {
            file.local_path = Some(cached.to_string_lossy().into_owned());
            return Ok(file);
        }
        let limit = self.config().attachment_fetch_limit;
        let too_large = || {
            Error::new(
                crate::error::ErrorCode::NotFound,
                format!(
                    "this attachment is larger than AMC fetches ({} MB; `attachment_fetch_limit_mb` in config.toml)",
                    limit / (1024 * 1024)
                ),
            )
        };
        if file.size_bytes.is_some_and(|n| n as u64 > limit) {
            return Err(too_large());
        }
        let bytes = sender.fetch(remote, limit).await.map_err(|e| match e {
            crate::sender::FetchError::TooLarge { .. } => too_large(),
            crate::sender::FetchError::Unavailable(why) => {
                tracing::info!(attachment = %id, %why, "could not fetch an attachment");
                Error::new(
                    crate::error::ErrorCode::NotFound,
                    format!("{} does not have this file now: {why}", file.source.display_name()),
                )
            }
        })?;
        let path = cached.clone();
        self.run_blocking(move || amc_attach::write_private(&path, &bytes).map_err(Error::internal)).await?;
        file.local_path = Some(cached.to_string_lossy().into_owned());
        Ok(file)
    }
}
