//! The bot's token: from AMC's configuration, or from the macOS Keychain through
//! `security find-generic-password` (a generic password, service `AMC`, account
//! `discord`). The token is never logged.

use std::path::Path;
use std::time::Duration;

use amc_core::config::{DiscordToken, Secret};

/// The Keychain item's service name.
pub const KEYCHAIN_SERVICE: &str = "AMC";
/// The Keychain item's account name.
pub const KEYCHAIN_ACCOUNT: &str = "discord";
/// macOS's Keychain tool.
pub const SECURITY: &str = "/usr/bin/security";

/// The token itself, reading the Keychain with `security` if the configuration says so.
pub async fn resolve(token: &DiscordToken, security: &Path) -> Result<Secret, String> {
    match token {
        DiscordToken::Value(t) => Ok(t.clone()),
        DiscordToken::Keychain => from_keychain(security).await,
    }
}

async fn from_keychain(security: &Path) -> Result<Secret, String> {
    let run = tokio::process::Command::new(security)
        .args(["find-generic-password", "-s", KEYCHAIN_SERVICE, "-a", KEYCHAIN_ACCOUNT, "-w"])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let how =
        format!("store it with: security add-generic-password -s {KEYCHAIN_SERVICE} -a {KEYCHAIN_ACCOUNT} -w <token>");
    let out = match tokio::time::timeout(Duration::from_secs(30), run).await {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => return Err(format!("could not read the Discord token from the Keychain ({e}); {how}")),
        Err(_) => return Err("the Keychain did not answer within 30 s (was access denied?)".into()),
    };
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || token.is_empty() {
        // `security` exits with 44 when the item does not exist.
        return Err(format!("the Keychain has no Discord token for AMC; {how}"));
    }
    Ok(Secret::new(token))
}
