//! The one error type of the core, and the stable codes of the contract.
//!
//! Every failure an agent or the person can see maps to an [`ErrorCode`] here, in one
//! place; the edges (HTTP, MCP, the tray) only serialise `code`, `message` and `status`.

use std::fmt;

/// Declares [`ErrorCode`] from one table, so the wire names, the statuses and the list
/// of every code ([`ErrorCode::ALL`]) cannot drift apart.
macro_rules! error_codes {
    ($($(#[doc = $doc:literal])* $variant:ident => $wire:literal, $status:literal;)+) => {
        /// The stable error codes of the inbox contract, plus the few AMC adds.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[doc = $doc])* $variant,)+
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &[ErrorCode] = &[$(Self::$variant),+];

            /// The code as it appears on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire,)+
                }
            }

            /// The HTTP status that goes with the code.
            pub fn status(self) -> u16 {
                match self {
                    $(Self::$variant => $status,)+
                }
            }
        }
    };
}

error_codes! {
    /// Missing, unknown or revoked credential, or an `X-Agent-ID` that is not the token's.
    Unauthorized => "UNAUTHORIZED", 401;
    /// A route that reads per-agent state was called without `X-Agent-ID`.
    AgentIdRequired => "AGENT_ID_REQUIRED", 400;
    /// The request is malformed or out of range.
    ValidationFailed => "VALIDATION_FAILED", 422;
    /// The channel does not exist or is not visible to agents.
    ChannelNotFound => "CHANNEL_NOT_FOUND", 404;
    /// The platform deleted the channel, or no longer lets AMC in; nothing was sent.
    ChannelGone => "CHANNEL_GONE", 410;
    /// The message does not exist, is quarantined, or is in another channel.
    MessageNotFound => "MESSAGE_NOT_FOUND", 404;
    /// An attachment exceeds what the platform accepts.
    AttachmentTooLargeForPlatform => "ATTACHMENT_TOO_LARGE_FOR_PLATFORM", 413;
    /// An `Idempotency-Key` was reused with another payload.
    IdempotencyKeyReuse => "IDEMPOTENCY_KEY_REUSE", 409;
    /// Too many sends to one channel; retry after `Retry-After` seconds.
    RateLimited => "RATE_LIMITED", 429;
    /// The agent keeps as much of this as AMC stores for one agent (docs/api.md, "Storage
    /// bounds"): what waits must be answered, or what is old let go, before more is taken.
    QuotaExceeded => "QUOTA_EXCEEDED", 429;
    /// The platform refused AMC's credentials or automation permission.
    PlatformAuth => "PLATFORM_AUTH", 502;
    /// The platform call failed.
    PlatformSendFailed => "PLATFORM_SEND_FAILED", 502;
    /// The channel's send policy is `read_only`.
    ChannelReadOnly => "CHANNEL_READ_ONLY", 403;
    /// The caller may not do this (admin routes, Host/Origin checks).
    Forbidden => "FORBIDDEN", 403;
    /// No such route or admin object.
    NotFound => "NOT_FOUND", 404;
    /// The route exists but not with this method.
    MethodNotAllowed => "METHOD_NOT_ALLOWED", 405;
    /// The request body is over the size limit.
    PayloadTooLarge => "PAYLOAD_TOO_LARGE", 413;
    /// The request headers are over the size limit.
    HeadersTooLarge => "HEADERS_TOO_LARGE", 431;
    /// The action conflicts with the object's current state.
    Conflict => "CONFLICT", 409;
    /// The person must confirm this action once more (approving a conversation with a
    /// short-code sender, which sends one-time codes).
    ConfirmationRequired => "CONFIRMATION_REQUIRED", 409;
    /// Something failed inside AMC; details are in AMC's log, never in the response.
    InternalError => "INTERNAL_ERROR", 500;
    /// `amc mcp` cannot reach AMC: it is not running or not answering. Retry later.
    AmcUnavailable => "AMC_UNAVAILABLE", 503;
    /// Relay: no such thread, or the caller cannot see it.
    ThreadNotFound => "THREAD_NOT_FOUND", 404;
    /// Relay: a single-use write invitation was already redeemed by someone else.
    InvitationUsed => "INVITATION_USED", 409;
    /// Relay: a cursor that is malformed, altered, from another thread or another version.
    CursorInvalid => "CURSOR_INVALID", 400;
    /// The request is not HTTP the daemon can read: a malformed request line, header or version.
    BadRequest => "BAD_REQUEST", 400;
}

impl ErrorCode {
    /// Parses a stored code back (outbox rows keep the code of a failed send).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure of the core: a stable code, a message fit to show the caller, and for
/// internal faults a detail that goes to the log only.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    /// The stable code.
    pub code: ErrorCode,
    /// What the caller is told.
    pub message: String,
    /// Seconds to wait before retrying (`RATE_LIMITED`).
    pub retry_after: Option<u64>,
}

impl Error {
    /// Approving a conversation with a short-code sender, which sends one-time codes,
    /// without the person's second yes.
    pub fn sensitive_unconfirmed() -> Self {
        Self::new(
            ErrorCode::ConfirmationRequired,
            "this conversation is with a short-code sender, which sends one-time codes: approve it again, \
             confirming it is sensitive",
        )
    }

    /// An error with a code and a message for the caller.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), retry_after: None }
    }

    /// `VALIDATION_FAILED` with a message saying which input is wrong.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ValidationFailed, message)
    }

    /// `UNAUTHORIZED`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthorized, message)
    }

    /// `MESSAGE_NOT_FOUND`, worded the same whether the message is unknown or hidden.
    pub fn message_not_found() -> Self {
        Self::new(ErrorCode::MessageNotFound, "no such message")
    }

    /// `CHANNEL_GONE`: the platform said why.
    pub fn channel_gone(why: &str) -> Self {
        Self::new(ErrorCode::ChannelGone, format!("{why}; nothing was sent"))
    }

    /// `CHANNEL_NOT_FOUND`, worded the same whether the channel is unknown or hidden.
    pub fn channel_not_found() -> Self {
        Self::new(ErrorCode::ChannelNotFound, "no such channel")
    }

    /// `NOT_FOUND` for an admin object.
    pub fn not_found(what: &str) -> Self {
        Self::new(ErrorCode::NotFound, format!("no such {what}"))
    }

    /// `CONFLICT`.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Conflict, message)
    }

    /// `RATE_LIMITED` with the seconds to wait.
    pub fn rate_limited(retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after),
            ..Self::new(ErrorCode::RateLimited, format!("too many sends to this channel; retry in {retry_after} s"))
        }
    }

    /// `QUOTA_EXCEEDED`, saying which bound the agent reached.
    pub fn quota(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::QuotaExceeded, message)
    }

    /// `INTERNAL_ERROR`: the detail is logged here and never reaches the caller.
    pub fn internal(detail: impl fmt::Display) -> Self {
        tracing::error!(%detail, "internal error");
        Self::new(ErrorCode::InternalError, "internal error; see AMC's log")
    }
}

/// The error envelope, `{"error": {"code", "message", "status"}}`: what REST answers
/// and what an MCP tool returns as its result, built here and nowhere else.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Envelope<'a> {
    /// The error.
    pub error: EnvelopeBody<'a>,
}

/// The inside of an [`Envelope`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EnvelopeBody<'a> {
    /// The stable code.
    pub code: &'static str,
    /// What the caller is told.
    pub message: &'a str,
    /// The HTTP status that goes with the code.
    pub status: u16,
}

impl Error {
    /// The envelope for this error.
    pub fn envelope(&self) -> Envelope<'_> {
        Envelope {
            error: EnvelopeBody { code: self.code.as_str(), message: &self.message, status: self.code.status() },
        }
    }

    /// The envelope as a JSON value.
    pub fn envelope_json(&self) -> serde_json::Value {
        serde_json::to_value(self.envelope()).unwrap_or_default()
    }
}

#[cfg(feature = "rusqlite")]
impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Self::internal(format_args!("store: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::internal(format_args!("io: {e}"))
    }
}

/// The core's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_its_wire_name() {
        let mut seen = std::collections::HashSet::new();
        for &code in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
            assert!((400..600).contains(&code.status()), "{code}");
            assert!(seen.insert(code.as_str()), "{code} is declared twice");
        }
    }

    #[test]
    fn the_envelope_has_code_message_and_status() {
        let e = Error::rate_limited(3);
        assert_eq!(
            e.envelope_json(),
            serde_json::json!({"error": {"code": "RATE_LIMITED", "message": e.message, "status": 429}})
        );
    }
}
