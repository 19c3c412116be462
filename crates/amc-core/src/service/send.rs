//! The agents' sends: checked, recorded in the outbox before any platform call, held for
//! review or delivered, and never sent twice.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::inbox::{check_channel_id, check_message_id};
use super::{AgentCtx, Amc};
use crate::attach::Accepted;
use crate::error::{Error, ErrorCode, Result};
use crate::events::Event;
use crate::model::{OutboxItem, OutboxStatus, SendPolicy};
use crate::sender::{OutgoingSend, SendError};
use crate::store::{NewSend, SendLookup, SendOutcome};
use crate::time::{Millis, serde_ms};

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
                return Err(Error::new(code, item.error_message.clone().unwrap_or_else(|| "the send failed".into())));
            }
        };
        Ok(Self { message_id: item.id.clone(), sent_at: item.sent_at, status, replayed })
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

impl Amc {
    /// Sends (or holds for review) an agent's message.
    pub async fn send(
        &self,
        agent: &AgentCtx,
        req: SendRequest,
        idempotency_key: Option<String>,
    ) -> Result<SendReceipt> {
        check_channel_id(&req.channel_id).map_err(|_| Error::channel_not_found())?;
        if req.text.len() > MAX_TEXT_BYTES {
            return Err(Error::validation(format!("text is over {MAX_TEXT_BYTES} bytes")));
        }
        if req.text.contains('\0') {
            return Err(Error::validation("text must not contain NUL characters"));
        }
        if let Some(r) = &req.reply_to {
            check_message_id("reply_to", r)?;
        }
        let refs = req.attachments.clone().unwrap_or_default();
        if refs.len() > MAX_ATTACHMENTS {
            return Err(Error::validation(format!("at most {MAX_ATTACHMENTS} attachments per message")));
        }
        if let Some(i) = refs.iter().position(|a| a.url.is_some() == a.path.is_some()) {
            return Err(Error::validation(format!("attachments[{i}] must have exactly one of url or path")));
        }
        if req.text.is_empty() && refs.is_empty() {
            return Err(Error::validation("a message needs text or an attachment"));
        }
        if let Some(k) = &idempotency_key {
            check_key(k)?;
        }
        let hash = request_hash(&req)?;

        let channel_id = req.channel_id.clone();
        let target = self.blocking(move |s| s.send_target(&channel_id)).await?.ok_or_else(Error::channel_not_found)?;
        if target.send_policy == SendPolicy::ReadOnly {
            return Err(Error::new(
                ErrorCode::ChannelReadOnly,
                "this channel is read-only for agents; the person can change its send policy in AMC",
            ));
        }
        if let Some(reply_to) = req.reply_to.clone() {
            let parent = self.blocking(move |s| s.visible_message(&reply_to)).await;
            if parent.map(|p| p.channel_id != target.id).unwrap_or(true) {
                return Err(Error::new(ErrorCode::MessageNotFound, "reply_to must be a message of the same channel"));
            }
        }
        let max_bytes = self
            .inner
            .senders
            .get(target.source)
            .map(|s| s.max_attachment_bytes())
            .unwrap_or(FALLBACK_MAX_ATTACHMENT_BYTES);
        // Local files are checked first; URLs are fetched only once the send is within
        // its channel's rate limit.
        let mut accepted: Vec<Option<Accepted>> = Vec::with_capacity(refs.len());
        for (i, a) in refs.iter().enumerate() {
            match (&a.url, &a.path) {
                (Some(_), None) => accepted.push(None),
                (None, Some(path)) => {
                    accepted.push(Some(Accepted::File(self.inner.attachments.check_path(path, max_bytes)?)))
                }
                _ => return Err(Error::internal(format_args!("attachments[{i}] passed the shape check"))),
            }
        }

        self.inner
            .limiter
            .take(&target.id)
            .map_err(|wait| Error::rate_limited(wait.as_secs_f64().ceil().max(1.0) as u64))?;
        let mut files = Vec::with_capacity(refs.len());
        for (a, r) in accepted.into_iter().zip(&refs) {
            let fetched = match (a, &r.url) {
                (Some(f), _) => Ok(f),
                (None, Some(url)) => {
                    crate::attach::url::fetch(url, max_bytes, self.inner.url_filter).await.map(Accepted::Download)
                }
                (None, None) => Err(Error::internal("attachment without url or path")),
            };
            match fetched {
                Ok(f) => files.push(f),
                Err(e) => {
                    self.inner.limiter.refund(&target.id);
                    return Err(e);
                }
            }
        }
        let stage_id = ulid::Ulid::generate().to_string();
        let staged = match self.inner.attachments.stage(&stage_id, &files, max_bytes) {
            Ok(s) => s,
            Err(e) => {
                self.inner.limiter.refund(&target.id);
                return Err(e);
            }
        };
        let status = if self.paused() || target.send_policy == SendPolicy::Review {
            OutboxStatus::Held
        } else {
            OutboxStatus::Sending
        };
        let (store_agent, store_key, store_req, store_staged) =
            (agent.agent_id.clone(), idempotency_key.clone(), req.clone(), staged.clone());
        let lookup = self
            .blocking(move |s| {
                s.record_send(&NewSend {
                    agent_id: &store_agent,
                    idempotency: store_key.as_deref().map(|k| (k, hash)),
                    channel_id: &store_req.channel_id,
                    text: &store_req.text,
                    reply_to: store_req.reply_to.as_deref(),
                    attachments: &store_staged,
                    status,
                })
            })
            .await;
        let item = match lookup {
            Ok(SendLookup::New(item)) => item,
            Ok(SendLookup::Replay(item)) => {
                self.inner.limiter.refund(&target.id);
                self.inner.attachments.discard(&stage_id);
                let item = if item.status == OutboxStatus::Sending { self.await_outcome(item).await? } else { item };
                return SendReceipt::from_item(&item, true);
            }
            Err(e) => {
                self.inner.limiter.refund(&target.id);
                self.inner.attachments.discard(&stage_id);
                return Err(e);
            }
        };
        self.publish(Event::SendChanged { send_id: item.id.clone(), status: item.status });
        let item = if item.status == OutboxStatus::Sending { self.deliver(item).await? } else { item };
        SendReceipt::from_item(&item, false)
    }

    /// Waits (up to the send timeout) for a send in flight elsewhere to get its outcome,
    /// so a retry of a request answers with what happened rather than "sending".
    async fn await_outcome(&self, item: OutboxItem) -> Result<OutboxItem> {
        let mut events = self.inner.events.subscribe();
        let deadline = tokio::time::Instant::now() + self.inner.config.send_timeout + std::time::Duration::from_secs(1);
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

    /// Hands a send in `sending` to its platform and records the outcome. The work runs
    /// on its own task, so a caller that goes away does not leave the send half done.
    pub(super) async fn deliver(&self, item: OutboxItem) -> Result<OutboxItem> {
        let amc = self.clone();
        tokio::spawn(async move { amc.deliver_now(item).await }).await.map_err(Error::internal)?
    }

    async fn deliver_now(&self, item: OutboxItem) -> Result<OutboxItem> {
        let (channel_id, reply_to) = (item.channel_id.clone(), item.reply_to.clone());
        let (target, reply_platform_id) = self
            .blocking(move |s| {
                let target = s.channel_target(&channel_id)?.ok_or_else(Error::channel_not_found)?;
                let reply = match reply_to {
                    Some(r) => s.message_platform_id(&r)?,
                    None => None,
                };
                Ok((target, reply))
            })
            .await?;
        let mut platform_wait = None;
        let outcome = match self.inner.senders.get(target.source) {
            None => SendOutcome::Failed {
                code: ErrorCode::PlatformSendFailed,
                message: format!("the {} source is not running", target.source),
            },
            Some(sender) => {
                let msg = OutgoingSend {
                    send_id: item.id.clone(),
                    channel_platform_id: target.platform_id.clone(),
                    channel: target,
                    text: item.text.clone(),
                    reply_to_platform_id: reply_platform_id,
                    attachments: item.attachments.clone(),
                };
                match tokio::time::timeout(self.inner.config.send_timeout, sender.send(msg)).await {
                    Err(_) => SendOutcome::Unknown { reason: "the platform did not confirm the send in time".into() },
                    Ok(Ok(d)) => SendOutcome::Sent { platform_id: d.platform_id, sent_at: d.sent_at },
                    Ok(Err(e)) => {
                        if let SendError::RateLimited { retry_after } = e {
                            platform_wait = Some(retry_after.max(1));
                        }
                        outcome_of(e)
                    }
                }
            }
        };
        let id = item.id.clone();
        let done = {
            let outcome = outcome.clone();
            self.blocking(move |s| s.finish_send(&id, &outcome)).await?
        };
        if let SendOutcome::Sent { .. } = outcome {
            self.publish(Event::MessagesChanged { channel_id: done.channel_id.clone(), inserted: 1, updated: 0 });
        }
        self.publish(Event::SendChanged { send_id: done.id.clone(), status: done.status });
        if let Some(wait) = platform_wait {
            return Err(Error::rate_limited(wait));
        }
        Ok(done)
    }
}

fn outcome_of(e: SendError) -> SendOutcome {
    let message = e.to_string();
    match e {
        SendError::Auth(_) => SendOutcome::Failed { code: ErrorCode::PlatformAuth, message },
        SendError::RateLimited { .. } => SendOutcome::Failed { code: ErrorCode::RateLimited, message },
        SendError::TooLarge(_) => SendOutcome::Failed { code: ErrorCode::AttachmentTooLargeForPlatform, message },
        SendError::Failed(_) => SendOutcome::Failed { code: ErrorCode::PlatformSendFailed, message },
        SendError::Unknown(_) => SendOutcome::Unknown { reason: message },
    }
}
