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
    /// Given in `config.toml`.
    Value(Secret),
    /// Given in the environment (`AMC_DISCORD_TOKEN`): AMC cannot change it.
    Environment(Secret),
    /// Kept in the system's secret store (the Keychain on a Mac: a generic password,
    /// service `AMC`, account `discord`; the Secret Service elsewhere).
    Keychain,
}

/// Checks `discord_api_url`: Discord itself over https (`discord.com`, or its canary and
/// ptb hosts), or a stand-in on this machine over http(s). Whether it is a stand-in, or why
/// it is refused.
pub fn check_api_url(api_url: &str) -> Result<bool, String> {
    let parsed = url::Url::parse(api_url).map_err(|_| format!("discord_api_url must be a URL, not {api_url:?}"))?;
    // The bot's token goes with every request: in the clear only to this machine.
    let loopback = match parsed.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    // serenity's rate limiter sends every request to discord.com itself: any other real
    // host could only be reached with the limiter off, so only stand-ins on this machine are.
    let discord =
        matches!(parsed.host(), Some(url::Host::Domain("discord.com" | "canary.discord.com" | "ptb.discord.com")));
    if !((parsed.scheme() == "https" && discord) || (matches!(parsed.scheme(), "http" | "https") && loopback)) {
        return Err(format!(
            "discord_api_url must be https://discord.com (or canary.discord.com, ptb.discord.com), or a stand-in \
             on this machine (http://127.0.0.1:…), not {api_url:?}; to reach Discord through a proxy, set discord_proxy"
        ));
    }
    Ok(loopback)
}

/// The Discord source's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscordSettings {
    /// The bot's token, once one is given.
    pub token: Option<DiscordToken>,
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
    /// How often AMC checks each followed channel's newest message on Discord and reads
    /// what the gateway did not deliver.
    pub check_period: std::time::Duration,
}

#[cfg(test)]
mod tests {
    use super::check_api_url;

    #[test]
    fn the_token_goes_only_to_discord_over_https_or_to_a_stand_in_on_this_machine() {
        for (url, stand_in) in [
            ("https://discord.com", false),
            ("https://canary.discord.com/", false),
            ("http://127.0.0.1:8080", true),
            ("https://localhost:9", true),
            ("http://[::1]:8080", true),
        ] {
            assert_eq!(check_api_url(url), Ok(stand_in), "{url}");
        }
        for url in [
            "http://discord.com",
            "https://discord.com.example.net",
            "https://example.com",
            "http://192.168.1.10:8080",
            "ftp://127.0.0.1",
            "discord.com",
            "",
        ] {
            assert!(check_api_url(url).is_err(), "{url}");
        }
    }
}
