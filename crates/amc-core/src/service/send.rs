//! The agents' sends: checked, recorded in the outbox before any platform call, held for
//! review or delivered, and never sent twice.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::inbox::{check_channel_id, check_message_id};
use super::{AgentCtx, Amc};
use crate::error::{Error, ErrorCode, Result};
use crate::events::Event;
use crate::model::SendTarget;
use crate::model::{OutboxItem, OutboxStatus, SendPolicy};
use crate::sender::{OutgoingSend, SendError};
use crate::time::{Millis, now_ms, serde_ms};
use amc_attach::Accepted;
use amc_store::{HELD_BOUNDS, NewSend, SendLookup, SendOutcome};

/// The longest text AMC passes to a platform, in bytes.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
/// The most attachments one send takes.
pub const MAX_ATTACHMENTS: usize = 10;
/// The attachment limit when a source has not said its own.
const FALLBACK_MAX_ATTACHMENT_BYTES: u64 = 100 * 1024 * 1024;

/// `send_message` / `POST /messages/send`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SendRequest {
    /// The channel.
    pub channel_id: String,
    /// The text; may be empty.
    pub text: String,
    /// A message of the same channel to reply to.
    #[serde(default)]
    pub reply_to: Option<String>,
    /// Files, each given by exactly one of `url` or `path`.
    #[serde(default)]
    pub attachments: Option<Vec<AttachmentRef>>,
}

/// One attachment of a send.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AttachmentRef {
    /// An `http(s)` URL on a public address.
    #[serde(default)]
    pub url: Option<String>,
    /// A local file inside an allowed folder.
    #[serde(default)]
    pub path: Option<String>,
}

/// The answer to a send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SendReceipt {
    /// `msg_<ULID>`: the message's id once delivered.
    pub message_id: String,
    /// When it was delivered; `null` unless `status` is `sent`.
    #[serde(with = "serde_ms::option")]
    pub sent_at: Option<Millis>,
    /// `sent`, `pending_review`, `unknown`, and on replays also `sending` or `rejected`.
    pub status: &'static str,
    /// Why a `pending_review` send waits beyond its channel's send policy:
    /// `crosses_conversations` (the readers rule). Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_reason: Option<String>,
    /// Whether this answers an earlier request with the same `Idempotency-Key`.
    #[serde(skip)]
    pub replayed: bool,
}

impl SendReceipt {
    fn from_item(item: &OutboxItem, replayed: bool) -> Result<Self> {
        let status = match item.status {
            OutboxStatus::Held => "pending_review",
            OutboxStatus::Sending => "sending",
            OutboxStatus::Sent => "sent",
            OutboxStatus::Unknown => "unknown",
            OutboxStatus::Rejected => "rejected",
            OutboxStatus::Failed => {
                let code =
                    item.error_code.as_deref().and_then(ErrorCode::parse).unwrap_or(ErrorCode::PlatformSendFailed);
                let mut e = Error::new(code, item.error_message.clone().unwrap_or_else(|| "the send failed".into()));
                if let Some(at) = item.retry_after_at {
                    e.retry_after = Some(((at - now_ms()).max(0) as u64).div_ceil(1000).max(1));
                }
                return Err(e);
            }
        };
        let held_reason = item.held_reason.clone().filter(|_| item.status == OutboxStatus::Held);
        Ok(Self { message_id: item.id.clone(), sent_at: item.sent_at, status, held_reason, replayed })
    }
}

fn request_hash(req: &SendRequest) -> Result<[u8; 32]> {
    let canonical = serde_json::to_vec(req).map_err(Error::internal)?;
    Ok(Sha256::digest(&canonical).into())
}

/// Checks an `Idempotency-Key`: 1 to 255 visible ASCII characters.
fn check_key(key: &str) -> Result<()> {
    if (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(Error::validation("Idempotency-Key must be 1 to 255 visible ASCII characters"))
    }
}

/// Checks what can be checked without the store: shapes, sizes, patterns.
fn check_shape(req: &SendRequest) -> Result<()> {
    check_channel_id(&req.channel_id)?;
    if req.text.len() > MAX_TEXT_BYTES {
        return Err(Error::validation(format!("text is over {MAX_TEXT_BYTES} bytes")));
    }
    if req.text.contains('\0') {
        return Err(Error::validation("text must not contain NUL characters"));
    }
    if let Some(r) = &req.reply_to {
        check_message_id("reply_to", r)?;
    }
    let refs = req.attachments.as_deref().unwrap_or_default();
    if refs.len() > MAX_ATTACHMENTS {
        return Err(Error::validation(format!("at most {MAX_ATTACHMENTS} attachments per message")));
    }
    if let Some(i) = refs.iter().position(|a| a.url.is_some() == a.path.is_some()) {
        return Err(Error::validation(format!("attachments[{i}] must have exactly one of url or path")));
    }
    if req.text.is_empty() && refs.is_empty() {
        return Err(Error::validation("a message needs text or an attachment"));
    }
    Ok(())
}

fn reuse() -> Error {
    Error::new(
        ErrorCode::IdempotencyKeyReuse,
        "this Idempotency-Key was used for a different request in the last 24 hours",
    )
}

/// A staged send on its way into the outbox.
struct Record {
    agent_id: String,
    idempotency: Option<(String, [u8; 32])>,
    req: SendRequest,
    staged: Vec<crate::model::StagedAttachment>,
    status: OutboxStatus,
    stage_id: String,
    /// The channel as the checks read it: the send is delivered to it without reading it
    /// again.
    target: SendTarget,
    /// The conversations a held send may carry text from, for the person.
    read_from: Vec<crate::model::ReadFrom>,
    /// Whether the readers rule holds it.
    crosses: bool,
}

/// A send that passed every check that costs nothing: where it goes, and its local files
/// opened and checked.
struct Checked {
    target: SendTarget,
    max_bytes: u64,
    files: Vec<Option<amc_attach::CheckedFile>>,
}

impl Amc {
    /// Sends (or holds for review) an agent's message. A request whose
    /// `Idempotency-Key` was seen before answers as the first one did, without any check
    /// or platform call being made again.
    ///
    /// Three steps: [`Amc::check_send`] (free checks), [`Amc::stage_send`] (the rate
    /// limit, downloads, the staged copies) and [`Amc::record_and_deliver`].
    pub async fn send(
        &self,
        agent: &AgentCtx,
        req: SendRequest,
        idempotency_key: Option<String>,
    ) -> Result<SendReceipt> {
        check_shape(&req)?;
        if let Some(k) = &idempotency_key {
            check_key(k)?;
        }
        let hash = request_hash(&req)?;
        if let Some(key) = idempotency_key.clone() {
            let agent_id = agent.agent_id.clone();
            if let Some((earlier, item)) = self.blocking(move |s| s.find_idempotent(&agent_id, &key)).await? {
                return if earlier == hash { self.replay(item).await } else { Err(reuse()) };
            }
        }
        let Checked { target, max_bytes, files } = self.check_send(agent, &req).await?;
        // Under `auto`, the readers rule: held when it would carry what the agent read
        // elsewhere to people who could not read it. A send held anyway tells the person
        // the same, and approving it forgets what they saw.
        let read_from = self.crossings(agent, &target).await?;
        let crosses = target.send_policy == SendPolicy::Auto && !read_from.is_empty();
        let held = self.paused() || target.send_policy == SendPolicy::Review || crosses;
        let read_from = if held { read_from } else { Vec::new() };
        if held {
            // Before anything is copied: an agent whose held sends are at their bounds
            // costs no disk. Checked again where the send is recorded.
            let agent_id = agent.agent_id.clone();
            let (sends, bytes) = self.blocking(move |s| s.held_by(&agent_id)).await?;
            let local: u64 = files.iter().flatten().map(|f| f.size).sum();
            HELD_BOUNDS.check(sends, bytes, (req.text.len() as u64 + local) as i64)?;
        }
        let stage_id = ulid::Ulid::generate().to_string();
        let staged = self.stage_send(&stage_id, &req, &target, max_bytes, files).await?;
        let status = if held { OutboxStatus::Held } else { OutboxStatus::Sending };
        let record = Record {
            agent_id: agent.agent_id.clone(),
            idempotency: idempotency_key.map(|k| (k, hash)),
            req,
            staged,
            status,
            stage_id,
            target,
            read_from,
            crosses,
        };
        self.record_and_deliver(record).await
    }

    /// The checks that cost nothing: the channel and its policy, the text's length, the
    /// reply's target, and each local file, opened and checked.
    async fn check_send(&self, agent: &AgentCtx, req: &SendRequest) -> Result<Checked> {
        let (agent_id, channel_id) = (agent.agent_id.clone(), req.channel_id.clone());
        let target = self
            .blocking(move |s| s.send_target(&agent_id, &channel_id))
            .await?
            .ok_or_else(Error::channel_not_found)?;
        if let Some(why) = &target.gone {
            return Err(Error::channel_gone(why));
        }
        if target.send_policy == SendPolicy::ReadOnly {
            return Err(Error::new(
                ErrorCode::ChannelReadOnly,
                "this channel is read-only for agents; the person can change its send policy in AMC",
            ));
        }
        let sender = self.inner.senders.get(target.source);
        if let Some(max) = sender.and_then(|s| s.max_text_chars()) {
            let chars = req.text.chars().count();
            if chars > max {
                return Err(Error::validation(format!(
                    "{} takes at most {max} characters in one message and this text has {chars}; send it in parts",
                    target.source.display_name()
                )));
            }
        }
        if let Some(reply_to) = req.reply_to.clone() {
            let agent_id = agent.agent_id.clone();
            let parent = self.blocking(move |s| s.visible_message(&agent_id, &reply_to)).await;
            if parent.map(|p| p.channel_id != target.id).unwrap_or(true) {
                return Err(Error::new(ErrorCode::MessageNotFound, "reply_to must be a message of the same channel"));
            }
        }
        let max_bytes = sender.map(|s| s.max_attachment_bytes()).unwrap_or(FALLBACK_MAX_ATTACHMENT_BYTES);
        // Local files are checked before anything is spent; URLs are fetched only once
        // the send is within its channel's rate limit.
        let paths: Vec<Option<String>> = req.attachments.iter().flatten().map(|a| a.path.clone()).collect();
        let policy = self.attachments();
        let files = self
            .run_blocking(move || {
                paths
                    .into_iter()
                    .map(|p| p.map(|p| policy.check_path(&p, max_bytes)).transpose())
                    .collect::<Result<Vec<_>>>()
            })
            .await?;
        Ok(Checked { target, max_bytes, files })
    }

    /// Takes the send's place in its channel's rate limit, downloads its URLs and copies
    /// every file into the staging folder `stage_id`. On failure the place is given back
    /// and nothing stays staged.
    async fn stage_send(
        &self,
        stage_id: &str,
        req: &SendRequest,
        target: &SendTarget,
        max_bytes: u64,
        files: Vec<Option<amc_attach::CheckedFile>>,
    ) -> Result<Vec<crate::model::StagedAttachment>> {
        self.inner
            .limiter
            .take(&target.id)
            .map_err(|wait| Error::rate_limited(wait.as_secs_f64().ceil().max(1.0) as u64))?;
        let refs = req.attachments.clone().unwrap_or_default();
        let staged = match self.fetch_and_stage(stage_id, files, &refs, max_bytes).await {
            Ok(s) => s,
            Err(e) => {
                self.inner.limiter.refund(&target.id);
                return Err(e);
            }
        };
        let max_total = self.inner.senders.get(target.source).and_then(|s| s.max_total_attachment_bytes());
        let total: u64 = staged.iter().map(|a| a.size_bytes).sum();
        if let Some(max) = max_total.filter(|max| total > *max) {
            self.discard_stage(stage_id, &target.id).await;
            return Err(Error::new(
                ErrorCode::AttachmentTooLargeForPlatform,
                format!(
                    "the attachments add up to {total} bytes; {} takes at most {max} per message",
                    target.source.display_name()
                ),
            ));
        }
        Ok(staged)
    }

    /// Records the send in the outbox and, unless it is held, delivers it. This runs on
    /// its own task: a caller that goes away (a closed connection, a cancelled tool call)
    /// cannot leave a send recorded but never tried.
    async fn record_and_deliver(&self, r: Record) -> Result<SendReceipt> {
        let amc = self.clone();
        let task = tokio::spawn(async move {
            let Record { agent_id, idempotency, req, staged, status, stage_id, target, read_from, crosses } = r;
            let lookup = amc
                .blocking(move |s| {
                    s.record_send(&NewSend {
                        agent_id: &agent_id,
                        idempotency: idempotency.as_ref().map(|(k, h)| (k.as_str(), *h)),
                        channel_id: &req.channel_id,
                        text: &req.text,
                        reply_to: req.reply_to.as_deref(),
                        attachments: &staged,
                        status,
                        held_bounds: HELD_BOUNDS,
                        held_reason: crosses.then_some(super::CROSSES_CONVERSATIONS),
                        read_from: &read_from,
                    })
                })
                .await;
            match lookup {
                Ok(SendLookup::New(item)) => {
                    amc.publish(Event::SendChanged { send_id: item.id.clone(), status: item.status });
                    let item = if item.status == OutboxStatus::Sending {
                        amc.deliver_now(item, Some(target)).await?
                    } else {
                        item
                    };
                    SendReceipt::from_item(&item, false)
                }
                // A concurrent request with the same key got there first.
                Ok(SendLookup::Replay(item)) => {
                    amc.discard_stage(&stage_id, &target.id).await;
                    amc.replay(item).await
                }
                Err(e) => {
                    amc.discard_stage(&stage_id, &target.id).await;
                    Err(e)
                }
            }
        });
        task.await.map_err(Error::internal)?
    }

    async fn discard_stage(&self, stage_id: &str, channel_id: &str) {
        self.inner.limiter.refund(channel_id);
        let (policy, stage_id) = (self.attachments(), stage_id.to_owned());
        let _ = tokio::task::spawn_blocking(move || policy.discard(&stage_id)).await;
    }

    /// Answers a repeated request with the first one's outcome, waiting for it if it is
    /// still in flight.
    async fn replay(&self, item: OutboxItem) -> Result<SendReceipt> {
        let item = if item.status == OutboxStatus::Sending { self.await_outcome(item).await? } else { item };
        SendReceipt::from_item(&item, true)
    }

    /// Downloads URL attachments and copies every file into the staging folder.
    async fn fetch_and_stage(
        &self,
        stage_id: &str,
        checked: Vec<Option<amc_attach::CheckedFile>>,
        refs: &[AttachmentRef],
        max_bytes: u64,
    ) -> Result<Vec<crate::model::StagedAttachment>> {
        let mut files = Vec::with_capacity(refs.len());
        for (c, r) in checked.into_iter().zip(refs) {
            match (c, &r.url) {
                (Some(f), _) => files.push(Accepted::File(f)),
                (None, Some(url)) => {
                    files.push(Accepted::Download(amc_attach::url::fetch(url, max_bytes, self.inner.url_filter).await?))
                }
                (None, None) => return Err(Error::internal("attachment without url or path")),
            }
        }
        let (policy, stage_id) = (self.attachments(), stage_id.to_owned());
        self.run_blocking(move || policy.stage(&stage_id, &files, max_bytes)).await
    }

    pub(super) async fn run_blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        tokio::task::spawn_blocking(f).await.map_err(Error::internal)?
    }

    /// Waits (up to the send timeout) for a send in flight elsewhere to get its outcome,
    /// so a retry of a request answers with what happened rather than "sending".
    async fn await_outcome(&self, item: OutboxItem) -> Result<OutboxItem> {
        let mut events = self.inner.events.subscribe();
        let deadline = tokio::time::Instant::now() + self.send_timeout_ceiling() + std::time::Duration::from_secs(1);
        loop {
            let id = item.id.clone();
            let now = self.blocking(move |s| s.outbox_item(&id)).await?;
            if now.status != OutboxStatus::Sending {
                return Ok(now);
            }
            // Wake on any change of this send (or a missed event), then look again.
            loop {
                match tokio::time::timeout_at(deadline, events.recv()).await {
                    Err(_) => return Ok(now),
                    Ok(Ok(Event::SendChanged { send_id, .. })) if send_id == item.id => break,
                    Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => break,
                    Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => return Ok(now),
                    Ok(Ok(_)) => {}
                }
            }
        }
    }

    /// Calls the platform once and records what happened. Whatever fails here, the send
    /// leaves `sending`: it is recorded `failed` (nothing went out) or `unknown`. `target`:
    /// the channel, when the send's checks read it just now (a send the person approves
    /// later reads it here).
    pub(super) async fn deliver_now(&self, item: OutboxItem, target: Option<SendTarget>) -> Result<OutboxItem> {
        let outcome = self.call_platform(&item, target).await;
        let id = item.id.clone();
        let mut recorded = None;
        for attempt in 0..3u64 {
            let (id, outcome) = (id.clone(), outcome.clone());
            match self.blocking(move |s| s.finish_send(&id, &outcome)).await {
                Ok(done) => {
                    recorded = Some(done);
                    break;
                }
                Err(e) if e.code == ErrorCode::Conflict => return Err(e),
                Err(e) => {
                    tracing::warn!(send = %item.id, attempt, error = %e, "could not record a send's outcome; retrying");
                    tokio::time::sleep(std::time::Duration::from_millis(50 * (attempt + 1))).await;
                }
            }
        }
        let Some(done) = recorded else {
            // The row stays `sending` and becomes `unknown` at the next sweep or start;
            // the agent must not retry what may have gone out.
            tracing::error!(send = %item.id, "the outcome of a send could not be recorded");
            return Ok(OutboxItem { status: OutboxStatus::Unknown, ..item });
        };
        if let SendOutcome::Sent { .. } = outcome {
            self.publish(Event::MessagesChanged { channel_id: done.channel_id.clone(), inserted: 1, updated: 0 });
        }
        if matches!(done.status, OutboxStatus::Failed | OutboxStatus::Rejected) {
            self.discard_stage_files(&done);
        }
        self.publish(Event::SendChanged { send_id: done.id.clone(), status: done.status });
        Ok(done)
    }

    /// Removes the staged copies of a send that will never go out.
    pub(super) fn discard_stage_files(&self, item: &OutboxItem) {
        let dirs: std::collections::BTreeSet<std::path::PathBuf> = item
            .attachments
            .iter()
            .filter_map(|a| std::path::Path::new(&a.path).parent().map(std::path::Path::to_path_buf))
            .collect();
        let policy = self.attachments();
        tokio::task::spawn_blocking(move || {
            for d in dirs {
                policy.discard_dir(&d);
            }
        });
    }

    async fn call_platform(&self, item: &OutboxItem, target: Option<SendTarget>) -> SendOutcome {
        let (channel_id, reply_to) = (item.channel_id.clone(), item.reply_to.clone());
        let looked_up = self
            .blocking(move |s| {
                let target = match target {
                    Some(t) => t,
                    None => s.channel_target(&channel_id)?.ok_or_else(Error::channel_not_found)?,
                };
                let reply = match reply_to {
                    Some(r) => s.reply_target(&r)?,
                    None => None,
                };
                Ok((target, reply))
            })
            .await;
        let (target, reply) = match looked_up {
            Ok(found) => found,
            Err(e) => {
                return failed(ErrorCode::PlatformSendFailed, format!("could not prepare the send: {}", e.message));
            }
        };
        if let Some(why) = &target.gone {
            return failed(ErrorCode::ChannelGone, format!("{why}; nothing was sent"));
        }
        let Some(sender) = self.inner.senders.get(target.source) else {
            return failed(ErrorCode::PlatformSendFailed, format!("the {} source is not running", target.source));
        };
        // A reply into a thread is sent to the thread.
        let (reply_platform_id, thread) = reply.map_or((None, None), |(p, t)| (Some(p), t));
        let msg = OutgoingSend {
            send_id: item.id.clone(),
            channel_platform_id: thread.unwrap_or_else(|| target.platform_id.clone()),
            channel: target,
            text: item.text.clone(),
            reply_to_platform_id: reply_platform_id,
            attachments: item.attachments.clone(),
            answers: None,
        };
        let (source, platform_channel) = (msg.channel.source, msg.channel_platform_id.clone());
        match tokio::time::timeout(self.send_timeout(), sender.send(msg)).await {
            Err(_) => SendOutcome::Unknown { reason: "the platform did not confirm the send in time".into() },
            Ok(Ok(d)) => {
                self.note_send_problem(source, None);
                SendOutcome::Sent { platform_id: d.platform_id, sent_at: d.sent_at, other_parts: d.other_parts }
            }
            Ok(Err(e)) => {
                if let SendError::Auth(why) = &e {
                    self.note_send_problem(source, Some(why.clone()));
                }
                if let SendError::Gone(why) = &e
                    && let Err(err) = self.mark_channels_gone(source, vec![platform_channel.clone()], why.clone()).await
                {
                    tracing::warn!(error = %err, "could not record a channel as gone");
                }
                outcome_of(e)
            }
        }
    }
}

fn failed(code: ErrorCode, message: String) -> SendOutcome {
    SendOutcome::Failed { code, message, retry_after: None }
}

fn outcome_of(e: SendError) -> SendOutcome {
    let message = e.to_string();
    match e {
        SendError::Auth(_) => failed(ErrorCode::PlatformAuth, message),
        SendError::RateLimited { retry_after } => {
            SendOutcome::Failed { code: ErrorCode::RateLimited, message, retry_after: Some(retry_after.max(1)) }
        }
        SendError::TooLarge(_) => failed(ErrorCode::AttachmentTooLargeForPlatform, message),
        SendError::Failed(_) => failed(ErrorCode::PlatformSendFailed, message),
        SendError::Unknown(_) => SendOutcome::Unknown { reason: message },
        SendError::Gone(_) => failed(ErrorCode::ChannelGone, message),
    }
}
