//! AMC's core: everything that runs headless, with no HTTP and no Tauri.
//!
//! # Layout
//! - [`store`]: the SQLite database, the only code that writes SQL.
//! - [`service`]: what agents and the person can do, with the rules (approval,
//!   send policy, idempotency, rate limits) applied in one place.
//! - [`sender`]: the interface sources implement to deliver an agent's send.
//! - [`attach`]: checks on the files and URLs an agent asks to send.
//! - [`events`]: the change feed the UI follows.
//! - [`config`]: validated configuration.
//! - [`model`], [`ids`], [`time`], [`error`]: shared types.
#![deny(missing_docs)]

pub mod attach;
pub mod bench;
pub mod config;
pub mod error;
pub mod events;
pub mod ids;
pub mod model;
pub mod ratelimit;
pub mod sender;
pub mod service;
pub mod store;
pub mod time;

pub use error::{Error, ErrorCode, Result};
