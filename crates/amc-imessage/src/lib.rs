//! The iMessage source: reads macOS Messages' `chat.db` and hands what it finds to the
//! core's ingest front door (`Amc::ingest_many`). The only crate that knows chat.db.
//!
//! # Layout
//! - [`chatdb`]: opens chat.db read-only and reads messages after a ROWID, decoding
//!   bodies (`attributedBody`, edits, unsends) with `imessage-database`.
//! - [`contacts`]: names for handles from the macOS Contacts database.
//! - [`convert`]: chat.db rows to AMC's channels and messages.
//! - [`sync`]: one pass from the checkpoint to the newest row, written with its checkpoint.
//! - [`sweep`]: compares chat.db's rows with what AMC holds (the newest on every change,
//!   the whole file in the background) and stores what differs.
//! - [`watch`]: follows chat.db as Messages writes it (directory watch, debounce, fallback
//!   check, replaced databases).
//! - [`send`]: sends through Messages with `osascript`, confirmed in chat.db.
//! - [`settings`]: the source's settings, as the runtime reads them.
//! - [`recheck`]: sends Messages fails after marking them sent, found as chat.db changes.
//! - `fixture` (feature `fixture`): writes chat.db files the way Messages does, for tests
//!   and benchmarks; not in AMC's binaries.
#![deny(missing_docs)]

pub mod chatdb;
pub mod contacts;
pub mod convert;
#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
pub mod recheck;
pub mod send;
pub mod settings;
pub mod sweep;
pub mod sync;
pub mod watch;

/// Why the iMessage source cannot read chat.db.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// chat.db is there but cannot be opened: on macOS, usually missing Full Disk Access.
    #[error("cannot open {path}: {message}")]
    CannotOpen {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
    /// There is no file at the path (a `--chat-db` naming none, or Messages never set up).
    #[error("no file at {0}")]
    Missing(String),
    /// The file is not a Messages database.
    #[error("{0} is not a Messages database")]
    NotMessages(String),
    /// A read failed (the database is busy, or changed under us).
    #[error("reading chat.db: {0}")]
    Read(String),
    /// Storing into AMC failed.
    #[error(transparent)]
    Store(#[from] amc_core::Error),
}

impl From<rusqlite::Error> for SourceError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Read(e.to_string())
    }
}

impl From<imessage_database::error::table::TableError> for SourceError {
    fn from(e: imessage_database::error::table::TableError) -> Self {
        Self::Read(e.to_string())
    }
}
