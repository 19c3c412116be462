//! The Discord source's settings, as the runtime reads them from the config file and the
//! environment, and the credential they carry.

use std::path::PathBuf;

use serde::Deserialize;

/// A credential: shown as `***` by `Debug`, so it never reaches a log by accident.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps a credential.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The credential itself, for the one call that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Self)
    }
}

/// Where the Discord bot's token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscordToken {
    /// Given in the configuration or the environment.
    Value(Secret),
    /// Kept in the macOS Keychain (a generic password, service `AMC`, account `discord`).
    Keychain,
}

/// The Discord source's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscordSettings {
    /// The bot's token.
    pub token: DiscordToken,
    /// Discord's base URL: `https://discord.com` (or its canary and ptb hosts, the same
    /// API), or a stand-in on this machine.
    pub api_url: String,
    /// Whether `api_url` is a stand-in for Discord on this machine (loopback) rather than
    /// Discord itself.
    pub stand_in: bool,
    /// An HTTP proxy for Discord's REST API and files (`http://host:port`), for networks
    /// that require one. The gateway's WebSocket connects directly.
    pub proxy: Option<String>,
    /// A PEM file of certificates to trust besides the usual roots, for a proxy that
    /// inspects TLS.
    pub ca_file: Option<PathBuf>,
    /// The largest file Discord takes from the bot, in bytes.
    pub upload_limit: u64,
    /// The most messages fetched per channel after a reconnect or an approval.
    pub history_limit: u32,
    /// The person's own Discord user id: their messages are `is_self`.
    pub user_id: Option<String>,
}
