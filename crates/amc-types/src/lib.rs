//! AMC's shared vocabulary, below every other crate: what a message, a channel, an id, a
//! moment and a token are, and the one error table with its stable codes. It holds no
//! state and does no I/O; the database (`amc-store`) stores these types, the core's rules
//! (`amc-core`) act on them, and the edges send them.
//!
//! # Layout
//! - [`model`]: the types stored and sent (messages, channels, sends, the envelope).
//! - [`ids`]: the prefixed ULIDs of messages, channels and attachments.
//! - [`time`]: milliseconds since the epoch, shown as RFC 3339.
//! - [`token`]: the secrets AMC hands out, random, and their SHA-256.
//! - [`error`]: `ErrorCode` with its wire name and HTTP status in one table; `Error`.
#![deny(missing_docs)]

pub mod error;
pub mod ids;
pub mod model;
pub mod time;
pub mod token;

pub use error::{Error, ErrorCode, Result};
