//! The daemon's integration tests: the real daemon on a temporary socket with a
//! temporary database, spoken to over HTTP on the socket.

mod approval;
mod bridge;
mod events;
mod fuzz;
mod harness;
mod hostile;
mod inbox;
mod listener;
mod mcp;
mod phone;
mod push;
mod raw;
mod readers;
mod refusals;
mod relay;
mod scopes;
mod search;
mod secrets;
mod sends;
mod tools;
mod ui;
mod wait;
