//! AMC's core: everything that runs headless, with no HTTP and no Tauri.
//!
//! # Layout
//! - [`db`]: AMC's one SQLite database: the connections and the migrations.
//! - `store`: the core's typed SQL on it, crate-private (the only code of the core
//!   that writes SQL).
//! - [`service`]: what agents and the person can do, with the rules (approval,
//!   send policy, idempotency, rate limits) applied in one place.
//! - [`sender`]: the interface sources implement to deliver an agent's send.
//! - [`attach`]: checks on the files and URLs an agent asks to send.
//! - [`rank`]: search results ranked over what the caller may see.
//! - [`events`]: the change feed the UI follows.
//! - [`every`]: periodic work kept by threads of its own, so an idle AMC rarely wakes.
//! - [`config`]: validated configuration.
//! - [`token`]: the secrets AMC hands out, and their hashes.
//! - [`text`]: the characters shown as code points on terminals and screens.
//! - [`files`]: the files and folders AMC writes, private from the moment they exist.
//! - [`model`], [`ids`], [`time`], [`error`]: shared types.
#![deny(missing_docs)]

pub mod attach;
pub mod config;
pub mod db;
pub mod error;
pub mod events;
pub mod every;
pub mod files;
pub mod ids;
pub mod model;
pub mod rank;
pub mod ratelimit;
pub mod sender;
pub mod service;
#[cfg(feature = "test-support")]
pub mod store;
#[cfg(not(feature = "test-support"))]
pub(crate) mod store;
pub mod text;
pub mod time;
pub mod token;

pub use error::{Error, ErrorCode, Result};
