//! Routes that exist only with `amc serve --test-sender`, for end-to-end tests of hosts
//! and of the UI: a stand-in source that delivers messages, and a way to make the
//! stand-in platform fail. They are behind the admin token like every admin route.

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use serde::Deserialize;

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Admin, ApiJson};
use amc_core::model::ChannelSpec;
use amc_core::model::{ChannelKind, IncomingAttachment, IncomingMessage, Reaction, SenderInfo, Source};
use amc_core::sender::SendError;
use amc_core::time::{now_ms, parse_rfc3339};
use amc_core::{Error, ErrorCode};

/// A message the stand-in source delivers.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestMessage {
    id: String,
    #[serde(default)]
    sender: Option<String>,
    #[serde(default)]
    sender_name: Option<String>,
    #[serde(default)]
    is_self: bool,
    text: String,
    #[serde(default)]
    sent_at: Option<String>,
    #[serde(default)]
    reply_to: Option<String>,
    #[serde(default)]
    edited_at: Option<String>,
    #[serde(default)]
    unsent: bool,
    #[serde(default)]
    reactions: Vec<TestReaction>,
    #[serde(default)]
    attachments: Vec<TestAttachment>,
}

/// A reaction the stand-in source reports.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestReaction {
    emoji: String,
    sender: String,
    #[serde(default)]
    is_self: bool,
}

/// An attachment the stand-in source reports: a local file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestAttachment {
    path: String,
    #[serde(default)]
    mime_type: Option<String>,
}

/// The body of `POST /admin/test/ingest`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngestBody {
    source: String,
    chat_id: String,
    chat_name: String,
    #[serde(default)]
    group: bool,
    messages: Vec<TestMessage>,
    /// Who besides the person reads the chat, as the iMessage source says it.
    #[serde(default)]
    readers: Option<Vec<String>>,
    /// The person's own addresses, as the iMessage source reads them from chat.db.
    #[serde(default)]
    own_addresses: Option<Vec<String>>,
}

/// `POST /admin/test/ingest`: stores messages as a source would.
pub async fn ingest(
    State(st): State<AppState>,
    _: Admin,
    ApiJson(b): ApiJson<IngestBody>,
) -> ApiResult<impl IntoResponse> {
    let source = Source::parse(&b.source)
        .ok_or_else(|| ApiError::new(ErrorCode::ValidationFailed, "source must be imessage or discord"))?;
    let mut messages = Vec::with_capacity(b.messages.len());
    let now = now_ms();
    for (i, m) in b.messages.into_iter().enumerate() {
        // Messages without a time are a millisecond apart, in the order given.
        let sent_at = match m.sent_at.as_deref() {
            Some(t) => parse_rfc3339(t).ok_or_else(|| Error::validation("sent_at must be RFC 3339"))?,
            None => now + i as i64,
        };
        messages.push(IncomingMessage {
            platform_id: m.id,
            sender: SenderInfo {
                id: m.sender.unwrap_or_else(|| "+15550000000".into()),
                display_name: m.sender_name,
                is_self: m.is_self,
            },
            text: m.text,
            sent_at,
            reply_to_platform_id: m.reply_to,
            attachments: m
                .attachments
                .into_iter()
                .map(|a| {
                    let meta = std::fs::metadata(&a.path).ok();
                    IncomingAttachment {
                        platform_id: None,
                        filename: std::path::Path::new(&a.path).file_name().map(|n| n.to_string_lossy().into_owned()),
                        mime_type: a.mime_type,
                        size_bytes: meta.as_ref().map(|m| m.len() as i64),
                        available: meta.is_some(),
                        local_path: Some(a.path),
                        remote_url: None,
                    }
                })
                .collect(),
            edited_at: match m.edited_at.as_deref() {
                Some(t) => Some(parse_rfc3339(t).ok_or_else(|| Error::validation("edited_at must be RFC 3339"))?),
                None => None,
            },
            unsent: m.unsent,
            reactions: m
                .reactions
                .into_iter()
                .map(|r| Reaction {
                    emoji: r.emoji,
                    sender: SenderInfo { id: r.sender, display_name: None, is_self: r.is_self },
                })
                .collect(),
        });
    }
    let kind = if b.group { ChannelKind::Group } else { ChannelKind::Dm };
    if let Some(own) = b.own_addresses {
        st.amc.set_own_addresses(source, own).await?;
    }
    let spec = ChannelSpec { platform_id: b.chat_id, name: b.chat_name, kind, readers: b.readers };
    let report = st.amc.ingest(source, spec, messages, None).await?;
    Ok(Json(serde_json::json!({
        "channel_id": report.channel_id,
        "channel_created": report.channel_created,
        "inserted": report.inserted,
        "updated": report.updated,
    })))
}

/// The body of `POST /admin/test/fail-next`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailBody {
    /// `auth`, `rate_limited`, `too_large`, `failed` or `unknown`.
    error: String,
    #[serde(default)]
    retry_after: Option<u64>,
    /// What the platform says, instead of the stand-in's own words.
    #[serde(default)]
    message: Option<String>,
}

/// `POST /admin/test/fail-next`: the stand-in platform fails its next send so.
pub async fn fail_next(
    State(st): State<AppState>,
    _: Admin,
    ApiJson(b): ApiJson<FailBody>,
) -> ApiResult<impl IntoResponse> {
    let say = |default: &str| b.message.clone().unwrap_or_else(|| default.to_owned());
    let err = match b.error.as_str() {
        "auth" => SendError::Auth(say("the platform refused AMC's credentials (test)")),
        "rate_limited" => SendError::RateLimited { retry_after: b.retry_after.unwrap_or(5) },
        "too_large" => SendError::TooLarge(say("the platform refused the attachment's size (test)")),
        "failed" => SendError::Failed(say("the platform failed the send (test)")),
        "unknown" => SendError::Unknown(say("the platform did not confirm (test)")),
        _ => {
            return Err(ApiError::new(
                ErrorCode::ValidationFailed,
                "error must be auth, rate_limited, too_large, failed or unknown",
            ));
        }
    };
    let sender = st.amc.test_sender().ok_or_else(|| ApiError::new(ErrorCode::NotFound, "no test sender"))?;
    sender.fail_next(err);
    Ok(Json(serde_json::json!({ "queued": b.error })))
}
