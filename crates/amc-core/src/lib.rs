//! AMC's core: everything that runs headless, with no HTTP and no Tauri.
//!
//! # Layout
//! The database and its tables are the crate below, `amc-store`; only this crate and the
//! relay depend on it. The shared vocabulary is `amc-types`, below both. Both are reachable
//! from here ([`model`], [`ids`], [`time`], [`token`], [`error`]; [`files`], [`rank`]), as
//! is the finder of one-time codes, `amc-secrets` ([`secrets`]), so the crates above name
//! one core.
//! - [`service`]: what agents and the person can do, with the rules (approval,
//!   send policy, idempotency, rate limits) applied in one place.
//! - [`sender`]: the interface sources implement to deliver an agent's send.
//! - The checks on the files and URLs an agent asks to send are `amc-attach`, a crate of its
//!   own beside the store.
//! - [`events`]: the change feed the UI follows.
//! - [`every`]: periodic work kept by threads of its own, so an idle AMC rarely wakes.
//! - [`config`]: validated configuration.
//! - [`crypto`]: the keys, signatures and sealing of what agents are handed to give back.
//! - [`text`]: the characters shown as code points on terminals and screens.
#![deny(missing_docs)]

pub mod config;
pub mod crypto;
pub mod events;
pub mod every;
pub mod ratelimit;
pub mod sender;
pub mod service;
pub mod text;

pub use amc_secrets as secrets;
pub use amc_store::{files, rank};
pub use amc_types::{error, ids, model, time, token};

pub use error::{Error, ErrorCode, Result};
