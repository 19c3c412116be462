//! What the tray app shows and how its window reaches the daemon, with no Tauri: the
//! shell in `src-tauri/` only hands these to Tauri, so all of it runs and is tested
//! headless.
//!
//! # Layout
//! - [`scheme`]: the window's `amc://localhost/…` requests, answered by the daemon in
//!   this process (no port is open).
//! - [`view`]: the tray menu's state (what waits for the person, the pause switch) and its
//!   labels.
//! - [`install`]: "Install command-line tool", linking this install's `amc` into a
//!   folder on `PATH`.
//! - [`desktop`]: what the desktop session offers (a display, a session bus).
//! - [`start`]: starts AMC beside the tray on a thread of its own, says how far the start
//!   is, and stops AMC when the app ends.
//! - [`follow`]: follows the core's events to keep the view current and to raise one
//!   notice for what newly waits, never a flood.
#![deny(missing_docs)]

pub mod desktop;
pub mod follow;
pub mod install;
pub mod scheme;
pub mod start;
pub mod view;
