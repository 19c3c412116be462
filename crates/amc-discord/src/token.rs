//! The bot's token: from AMC's configuration, or from the macOS Keychain through
//! `security find-generic-password` (a generic password, service `AMC`, account
//! `discord`). The token is never logged.

use std::path::Path;
use std::time::Duration;

use crate::settings::{DiscordToken, Secret};

/// The Keychain item's service name.
pub const KEYCHAIN_SERVICE: &str = "AMC";
/// The Keychain item's account name.
pub const KEYCHAIN_ACCOUNT: &str = "discord";
/// macOS's Keychain tool.
pub const SECURITY: &str = "/usr/bin/security";

/// Why the token could not be had. Each says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// `security` could not be run.
    #[error("could not read the Discord token from the Keychain ({0}); {STORE_IT}")]
    Unreadable(String),
    /// `security` did not answer: usually a Keychain prompt nobody answered.
    #[error("the Keychain did not answer within 30 s (was access denied?)")]
    NoAnswer,
    /// The item does not exist (or is empty).
    #[error("the Keychain has no Discord token for AMC; {STORE_IT}")]
    Missing,
}

/// How to put the token in the Keychain.
const STORE_IT: &str = "store it with: security add-generic-password -s AMC -a discord -w <token>";

/// The token itself, reading the Keychain with `security` if the configuration says so.
pub async fn resolve(token: &DiscordToken, security: &Path) -> Result<Secret, TokenError> {
    match token {
        DiscordToken::Value(t) => Ok(t.clone()),
        DiscordToken::Keychain => from_keychain(security).await,
    }
}

async fn from_keychain(security: &Path) -> Result<Secret, TokenError> {
    let run = tokio::process::Command::new(security)
        .args(["find-generic-password", "-s", KEYCHAIN_SERVICE, "-a", KEYCHAIN_ACCOUNT, "-w"])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = match tokio::time::timeout(Duration::from_secs(30), run).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => return Err(TokenError::Unreadable(e.to_string())),
        Err(_) => return Err(TokenError::NoAnswer),
    };
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || token.is_empty() {
        // `security` exits with 44 when the item does not exist.
        return Err(TokenError::Missing);
    }
    Ok(Secret::new(token))
}
