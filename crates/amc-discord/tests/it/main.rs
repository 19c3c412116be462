//! The Discord source end to end: the real daemon and the real serenity client against
//! a local Discord (`amc_discord::fake`) speaking Discord's gateway protocol and REST API.

mod catch_up;
mod check;
mod gateway;
mod gone;
mod harness;
mod ingest;
mod phone;
mod send;
