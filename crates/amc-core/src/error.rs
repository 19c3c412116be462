//! The one error type of the core, and the stable codes of the contract.
//!
//! Every failure an agent or the person can see maps to an [`ErrorCode`] here, in one
//! place; the edges (HTTP, MCP, the tray) only serialise `code`, `message` and `status`.

use std::fmt;

/// The stable error codes of the inbox contract, plus the few AMC adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Missing, unknown or revoked credential, or an `X-Agent-ID` that is not the token's.
    Unauthorized,
    /// A route that reads per-agent state was called without `X-Agent-ID`.
    AgentIdRequired,
    /// The request is malformed or out of range.
    ValidationFailed,
    /// The channel does not exist or is not visible to agents.
    ChannelNotFound,
    /// The message does not exist, is quarantined, or is in another channel.
    MessageNotFound,
    /// An attachment exceeds what the platform accepts.
    AttachmentTooLargeForPlatform,
    /// An `Idempotency-Key` was reused with another payload.
    IdempotencyKeyReuse,
    /// Too many sends to one channel; retry after `Retry-After` seconds.
    RateLimited,
    /// The platform refused AMC's credentials or automation permission.
    PlatformAuth,
    /// The platform call failed.
    PlatformSendFailed,
    /// The channel's send policy is `read_only`.
    ChannelReadOnly,
    /// The caller may not do this (admin routes, Host/Origin checks).
    Forbidden,
    /// No such route or admin object.
    NotFound,
    /// The route exists but not with this method.
    MethodNotAllowed,
    /// The request body is over the size limit.
    PayloadTooLarge,
    /// The request headers are over the size limit.
    HeadersTooLarge,
    /// The action conflicts with the object's current state.
    Conflict,
    /// Something failed inside AMC; details are in AMC's log, never in the response.
    InternalError,
    /// Relay: no such thread, or the caller cannot see it.
    ThreadNotFound,
    /// Relay: a single-use write invitation was already redeemed by someone else.
    InvitationUsed,
    /// Relay: a cursor that is malformed, altered, from another thread or another version.
    CursorInvalid,
}

impl ErrorCode {
    /// The code as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unauthorized => "UNAUTHORIZED",
            Self::AgentIdRequired => "AGENT_ID_REQUIRED",
            Self::ValidationFailed => "VALIDATION_FAILED",
            Self::ChannelNotFound => "CHANNEL_NOT_FOUND",
            Self::MessageNotFound => "MESSAGE_NOT_FOUND",
            Self::AttachmentTooLargeForPlatform => "ATTACHMENT_TOO_LARGE_FOR_PLATFORM",
            Self::IdempotencyKeyReuse => "IDEMPOTENCY_KEY_REUSE",
            Self::RateLimited => "RATE_LIMITED",
            Self::PlatformAuth => "PLATFORM_AUTH",
            Self::PlatformSendFailed => "PLATFORM_SEND_FAILED",
            Self::ChannelReadOnly => "CHANNEL_READ_ONLY",
            Self::Forbidden => "FORBIDDEN",
            Self::NotFound => "NOT_FOUND",
            Self::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Self::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Self::HeadersTooLarge => "HEADERS_TOO_LARGE",
            Self::Conflict => "CONFLICT",
            Self::InternalError => "INTERNAL_ERROR",
            Self::ThreadNotFound => "THREAD_NOT_FOUND",
            Self::InvitationUsed => "INVITATION_USED",
            Self::CursorInvalid => "CURSOR_INVALID",
        }
    }

    /// The HTTP status that goes with the code.
    pub fn status(self) -> u16 {
        match self {
            Self::Unauthorized => 401,
            Self::AgentIdRequired => 400,
            Self::ValidationFailed => 422,
            Self::ChannelNotFound | Self::MessageNotFound | Self::NotFound => 404,
            Self::AttachmentTooLargeForPlatform | Self::PayloadTooLarge => 413,
            Self::IdempotencyKeyReuse | Self::Conflict => 409,
            Self::RateLimited => 429,
            Self::PlatformAuth | Self::PlatformSendFailed => 502,
            Self::ChannelReadOnly | Self::Forbidden => 403,
            Self::MethodNotAllowed => 405,
            Self::HeadersTooLarge => 431,
            Self::InternalError => 500,
            Self::ThreadNotFound => 404,
            Self::InvitationUsed => 409,
            Self::CursorInvalid => 400,
        }
    }

    /// Parses a stored code back (outbox rows keep the code of a failed send).
    pub fn parse(s: &str) -> Option<Self> {
        ALL_CODES.iter().copied().find(|c| c.as_str() == s)
    }
}

const ALL_CODES: [ErrorCode; 21] = [
    ErrorCode::ThreadNotFound,
    ErrorCode::InvitationUsed,
    ErrorCode::CursorInvalid,
    ErrorCode::Unauthorized,
    ErrorCode::AgentIdRequired,
    ErrorCode::ValidationFailed,
    ErrorCode::ChannelNotFound,
    ErrorCode::MessageNotFound,
    ErrorCode::AttachmentTooLargeForPlatform,
    ErrorCode::IdempotencyKeyReuse,
    ErrorCode::RateLimited,
    ErrorCode::PlatformAuth,
    ErrorCode::PlatformSendFailed,
    ErrorCode::ChannelReadOnly,
    ErrorCode::Forbidden,
    ErrorCode::NotFound,
    ErrorCode::MethodNotAllowed,
    ErrorCode::PayloadTooLarge,
    ErrorCode::HeadersTooLarge,
    ErrorCode::Conflict,
    ErrorCode::InternalError,
];

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

    /// `INTERNAL_ERROR`: the detail is logged here and never reaches the caller.
    pub fn internal(detail: impl fmt::Display) -> Self {
        tracing::error!(%detail, "internal error");
        Self::new(ErrorCode::InternalError, "internal error; see AMC's log")
    }
}

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
        for code in ALL_CODES {
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
            assert!((400..600).contains(&code.status()), "{code}");
        }
    }
}
