//! Delivering agents' sends to Discord, and fetching Discord's files on demand.
//!
//! Sends are one `POST /channels/{id}/messages` each, made here rather than through
//! serenity so that each is tried exactly once and its answer (status, `Retry-After`)
//! is read as Discord gave it.

use std::time::Duration;

use crate::settings::Secret;
use amc_core::model::RemoteFile;
use amc_core::sender::{BoxFuture, Delivery, FetchError, OutgoingSend, SendError, Sender};
use amc_core::time::now_ms;
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, RETRY_AFTER};
use serde::Deserialize;
use serde_json::json;

/// Discord's limit on a message's text, in characters.
pub const MAX_TEXT_CHARS: usize = 2000;

/// Hosts Discord serves attachments from.
const CDN_HOSTS: &[&str] = &["cdn.discordapp.com", "media.discordapp.net"];

/// The longest a send waits for Discord's rate limit to reset before it is made; past
/// that the agent is told `RATE_LIMITED` at once, and Discord is not asked.
const MAX_LIMIT_WAIT: Duration = Duration::from_secs(6);

/// Discord's REST API as the bot uses it for sends and files.
#[derive(Clone)]
pub struct DiscordSender {
    client: reqwest::Client,
    api_url: String,
    auth: HeaderValue,
    upload_limit: u64,
    limits: std::sync::Arc<std::sync::Mutex<Limits>>,
}

/// What Discord's answers said of its rate limits: until when each channel's send bucket
/// is spent, and the whole bot (a global 429).
#[derive(Default)]
struct Limits {
    channels: std::collections::HashMap<String, std::time::Instant>,
    global: Option<std::time::Instant>,
}

impl Limits {
    /// How long a send to `channel` must wait, if at all.
    fn wait(&mut self, channel: &str, now: std::time::Instant) -> Duration {
        self.channels.retain(|_, until| *until > now);
        let until = [self.channels.get(channel).copied(), self.global].into_iter().flatten().max();
        until.map_or(Duration::ZERO, |u| u.saturating_duration_since(now))
    }

    /// Reads an answer's headers (documented at
    /// <https://discord.com/developers/docs/topics/rate-limits>): a spent bucket
    /// (`X-RateLimit-Remaining: 0`) holds the channel for `X-RateLimit-Reset-After`; a 429
    /// holds it, or every channel when global, for `retry_after`.
    fn note(&mut self, channel: &str, status: StatusCode, headers: &HeaderMap, retry_after: Option<f64>) {
        let now = std::time::Instant::now();
        let secs = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<f64>().ok());
        let later = |s: f64| now + Duration::from_secs_f64(if s.is_finite() { s.clamp(0.0, 3600.0) } else { 1.0 });
        if status == StatusCode::TOO_MANY_REQUESTS {
            let global = headers.get("x-ratelimit-global").is_some()
                || headers.get("x-ratelimit-scope").is_some_and(|v| v == "global");
            let until = later(retry_after.or_else(|| secs("retry-after")).unwrap_or(1.0));
            if global {
                self.global = Some(until);
            } else {
                self.channels.insert(channel.to_owned(), until);
            }
        } else if secs("x-ratelimit-remaining") == Some(0.0)
            && let Some(reset) = secs("x-ratelimit-reset-after")
        {
            self.channels.insert(channel.to_owned(), later(reset));
        }
    }
}

#[derive(Deserialize)]
struct Created {
    id: String,
    timestamp: Option<String>,
}

#[derive(Deserialize)]
struct ApiError {
    message: Option<String>,
    code: Option<i64>,
    retry_after: Option<f64>,
}

#[derive(Deserialize)]
struct FetchedMessage {
    attachments: Vec<FetchedAttachment>,
}

#[derive(Deserialize)]
struct FetchedAttachment {
    id: String,
    url: String,
}

impl DiscordSender {
    /// A sender for the bot with `token`, talking to `api_url` (`https://discord.com`)
    /// with a client made from `client` (its proxy and roots).
    pub fn new(
        api_url: &str,
        token: &Secret,
        upload_limit: u64,
        client: reqwest::ClientBuilder,
    ) -> Result<Self, String> {
        let mut auth = HeaderValue::from_str(&format!("Bot {}", token.expose()))
            .unwrap_or_else(|_| HeaderValue::from_static("Bot invalid"));
        auth.set_sensitive(true);
        let client = client
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .user_agent(concat!("DiscordBot (https://example.invalid/amc, ", env!("CARGO_PKG_VERSION"), ")"))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("could not set up HTTPS for Discord: {e}"))?;
        Ok(Self {
            client,
            api_url: api_url.trim_end_matches('/').to_owned(),
            auth,
            upload_limit,
            limits: Default::default(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}/api/v10{path}", self.api_url)
    }

    fn limits(&self) -> std::sync::MutexGuard<'_, Limits> {
        self.limits.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn post(&self, msg: &OutgoingSend) -> Result<Delivery, SendError> {
        // A spent bucket: wait for its reset if it is near (the send is not made yet, so
        // this is no retry), or tell the agent at once without asking Discord.
        let wait = self.limits().wait(&msg.channel_platform_id, std::time::Instant::now());
        if wait > MAX_LIMIT_WAIT {
            return Err(SendError::RateLimited { retry_after: wait.as_secs_f64().ceil() as u64 });
        }
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let mut payload = json!({
            "content": msg.text,
            // Agents may mention people, never @everyone, @here or roles.
            "allowed_mentions": { "parse": ["users"], "replied_user": true },
        });
        if let Some(parent) = &msg.reply_to_platform_id {
            payload["message_reference"] =
                json!({ "message_id": parent, "channel_id": msg.channel_platform_id, "fail_if_not_exists": false });
        }
        // A question AMC asks the person: Approve and Reject buttons (a success and a danger
        // button in one action row), and no mention of anyone, whatever it quotes.
        if let Some(code) = &msg.answers {
            payload["allowed_mentions"] = json!({ "parse": [] });
            payload["components"] = json!([{ "type": 1, "components": [
                { "type": 2, "style": 3, "label": "Approve", "custom_id": amc_core::service::button_id(true, code) },
                { "type": 2, "style": 4, "label": "Reject", "custom_id": amc_core::service::button_id(false, code) },
            ] }]);
        }
        let url = self.url(&format!("/channels/{}/messages", msg.channel_platform_id));
        let req = self.client.post(url).header(AUTHORIZATION, self.auth.clone());
        let req = if msg.attachments.is_empty() {
            req.json(&payload)
        } else {
            payload["attachments"] =
                msg.attachments.iter().enumerate().map(|(i, a)| json!({ "id": i, "filename": a.filename })).collect();
            let mut form = reqwest::multipart::Form::new().part(
                "payload_json",
                reqwest::multipart::Part::text(payload.to_string())
                    .mime_str("application/json")
                    .map_err(|e| SendError::Failed(e.to_string()))?,
            );
            for (i, a) in msg.attachments.iter().enumerate() {
                let bytes = tokio::fs::read(&a.path)
                    .await
                    .map_err(|e| SendError::Failed(format!("the staged copy of {} is gone: {e}", a.filename)))?;
                let part = reqwest::multipart::Part::bytes(bytes).file_name(a.filename.clone());
                form = form.part(format!("files[{i}]"), part);
            }
            req.multipart(form)
        };
        let res = req.send().await.map_err(|e| {
            if e.is_connect() || e.is_builder() {
                SendError::Failed(format!("could not reach Discord: {e}"))
            } else {
                // The request may have reached Discord: the outcome is unknown, never retried.
                SendError::Unknown(format!("Discord did not answer: {e}"))
            }
        })?;
        let status = res.status();
        let headers = res.headers().clone();
        let body = res.bytes().await.unwrap_or_default();
        let retry_after = serde_json::from_slice::<ApiError>(&body).ok().and_then(|e| e.retry_after);
        self.limits().note(&msg.channel_platform_id, status, &headers, retry_after);
        if status.is_success() {
            let created: Created = serde_json::from_slice(&body).map_err(|_| {
                SendError::Unknown("Discord accepted the message but its answer could not be read".into())
            })?;
            let sent_at = created.timestamp.as_deref().and_then(amc_core::time::parse_rfc3339).unwrap_or_else(now_ms);
            return Ok(Delivery { platform_id: created.id, sent_at, other_parts: Vec::new() });
        }
        Err(self.refusal(status, &headers, &body))
    }

    fn refusal(&self, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> SendError {
        let err: Option<ApiError> = serde_json::from_slice(body).ok();
        let detail = err
            .as_ref()
            .and_then(|e| e.message.clone().map(|m| format!("{m} (code {})", e.code.unwrap_or(0))))
            .unwrap_or_else(|| status.to_string());
        match status {
            StatusCode::UNAUTHORIZED => {
                let why = "Discord refused the bot's token (401): check the token in AMC's settings \
                           (Discord Developer Portal → your application → Bot → Reset Token)"
                    .to_owned();
                SendError::Auth(why)
            }
            StatusCode::NOT_FOUND if err.as_ref().and_then(|e| e.code) == Some(10003) => {
                SendError::Gone("Discord deleted this channel".into())
            }
            StatusCode::FORBIDDEN => {
                let why = format!(
                    "Discord refused the bot here (403: {detail}): give it the View Channel, Send Messages, \
                     Read Message History and Attach Files permissions in this channel"
                );
                SendError::Auth(why)
            }
            StatusCode::TOO_MANY_REQUESTS => {
                let header = headers.get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<f64>().ok());
                let secs = header.or(err.and_then(|e| e.retry_after)).unwrap_or(1.0);
                SendError::RateLimited { retry_after: secs.ceil().max(1.0) as u64 }
            }
            StatusCode::PAYLOAD_TOO_LARGE => {
                SendError::TooLarge(format!("Discord refused the files as too large: {detail}"))
            }
            // A server error can come after Discord created the message: never "not sent".
            s if s.is_server_error() => SendError::Unknown(format!(
                "Discord answered {} ({detail}); the message may have gone out: check the channel before sending it again",
                s.as_u16()
            )),
            _ => SendError::Failed(format!("Discord refused the message ({}): {detail}", status.as_u16())),
        }
    }

    /// Whether AMC fetches from this URL: only Discord's CDN, over https.
    fn may_fetch(&self, url: &str) -> bool {
        url::Url::parse(url).is_ok_and(|u| {
            u.scheme() == "https" && u.host_str().is_some_and(|h| CDN_HOSTS.contains(&h)) && u.port().is_none()
        })
    }

    async fn download(&self, url: &str, max_bytes: u64) -> Result<Result<Vec<u8>, StatusCode>, FetchError> {
        if !self.may_fetch(url) {
            return Err(FetchError::Unavailable("the file is not on Discord's CDN".into()));
        }
        let mut res = self
            .client
            .get(url)
            .send()
            .await
            .map_err(|e| FetchError::Unavailable(format!("could not reach Discord's CDN: {e}")))?;
        if !res.status().is_success() {
            return Ok(Err(res.status()));
        }
        if res.content_length().is_some_and(|n| n > max_bytes) {
            return Err(FetchError::TooLarge { limit: max_bytes });
        }
        let mut out = Vec::new();
        while let Some(chunk) =
            res.chunk().await.map_err(|e| FetchError::Unavailable(format!("the download broke off: {e}")))?
        {
            if (out.len() + chunk.len()) as u64 > max_bytes {
                return Err(FetchError::TooLarge { limit: max_bytes });
            }
            out.extend_from_slice(&chunk);
        }
        Ok(Ok(out))
    }

    /// The attachment's current URL: Discord's URLs are signed and expire, so an old
    /// one is renewed by reading the message again.
    async fn fresh_url(&self, file: &RemoteFile) -> Result<String, FetchError> {
        let url = self.url(&format!("/channels/{}/messages/{}", file.channel_platform_id, file.message_platform_id));
        let res = self
            .client
            .get(url)
            .header(AUTHORIZATION, self.auth.clone())
            .send()
            .await
            .map_err(|e| FetchError::Unavailable(format!("could not reach Discord: {e}")))?;
        if !res.status().is_success() {
            return Err(FetchError::Unavailable(format!("Discord answered {} for the message", res.status().as_u16())));
        }
        let m: FetchedMessage =
            res.json().await.map_err(|_| FetchError::Unavailable("Discord's answer could not be read".into()))?;
        m.attachments
            .into_iter()
            .find(|a| Some(&a.id) == file.attachment_platform_id.as_ref())
            .map(|a| a.url)
            .ok_or_else(|| FetchError::Unavailable("the message no longer has this file".into()))
    }
}

impl Sender for DiscordSender {
    fn max_attachment_bytes(&self) -> u64 {
        self.upload_limit
    }

    fn max_total_attachment_bytes(&self) -> Option<u64> {
        Some(self.upload_limit)
    }

    fn max_text_chars(&self) -> Option<usize> {
        Some(MAX_TEXT_CHARS)
    }

    fn send(&self, msg: OutgoingSend) -> BoxFuture<'_, Result<Delivery, SendError>> {
        Box::pin(async move { self.post(&msg).await })
    }

    fn fetch(&self, file: RemoteFile, max_bytes: u64) -> BoxFuture<'_, Result<Vec<u8>, FetchError>> {
        Box::pin(async move {
            match self.download(&file.url, max_bytes).await? {
                Ok(bytes) => Ok(bytes),
                Err(StatusCode::FORBIDDEN | StatusCode::NOT_FOUND) => {
                    let url = self.fresh_url(&file).await?;
                    match self.download(&url, max_bytes).await? {
                        Ok(bytes) => Ok(bytes),
                        Err(status) => Err(FetchError::Unavailable(format!("Discord's CDN answered {status}"))),
                    }
                }
                Err(status) => Err(FetchError::Unavailable(format!("Discord's CDN answered {status}"))),
            }
        })
    }
}
