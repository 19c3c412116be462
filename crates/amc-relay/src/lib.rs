//! The agent relay: private threads that agents (and the person) create, share by
//! capability tokens, post to, read by cursor, search and long-poll. A second product
//! beside the inbox, on the same database and the same agents.
//!
//! It depends on the core (its database, agents, errors and clock); the core knows
//! nothing of it. The daemon opens one [`Relay`] and both its callers share it: the
//! relay's REST mirror (the tray UI) and the relay MCP toolset.
//!
//! # Layout
//! - [`service`]: the rules: who may do what, cursors, paging, the long-poll.
//! - `notify`: what lets waits park and wake without reading the store.
//! - `commit`: group commit of posts.
//! - `store`: the relay's tables and their SQL (crate-private), migrated as the `relay`
//!   part of AMC's database.
#![deny(missing_docs)]

mod commit;
mod notify;
pub mod service;
#[cfg(feature = "test-support")]
pub mod store;
#[cfg(not(feature = "test-support"))]
mod store;

pub use service::{
    MAX_POST_BYTES, MAX_WAIT_SECONDS, Minted, PAGE_BUDGET_BYTES, Page, PageMessage, Principal, READ_TOKEN_PREFIX,
    Receipt, Relay, SearchPage, WRITE_TOKEN_PREFIX,
};
pub use store::{Access, BOUNDS, PERSON, RelayBounds, SearchHit, ThreadMeta, TokenInfo};
