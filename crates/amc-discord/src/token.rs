//! The bot's token: from AMC's configuration, or from the system's secret store through
//! the `keyring` crate: on a Mac the login Keychain (a generic password, service `AMC`,
//! account `discord`: the item `security add-generic-password -s AMC -a discord` makes
//! too), elsewhere the Secret Service (attributes `service` = `AMC`, `username` =
//! `discord`). The token is never logged and never written to a file.
//!
//! The store's calls block (a Keychain prompt waits for the person), so each runs on the
//! blocking pool, given [`STORE_WAIT`] before AMC stops waiting.

use std::time::Duration;

use crate::settings::{DiscordToken, Secret};

/// The secret store item's service name.
pub const KEYCHAIN_SERVICE: &str = "AMC";
/// The secret store item's account name.
pub const KEYCHAIN_ACCOUNT: &str = "discord";
/// How long AMC waits for the secret store: a Keychain prompt nobody answers ends there.
pub const STORE_WAIT: Duration = Duration::from_secs(30);

/// Why the token could not be had or kept. Each says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The secret store could not be reached, or refused.
    #[error("could not reach {STORE} ({0}); {STORE_IT}")]
    Unreadable(String),
    /// The secret store did not answer: usually a Keychain prompt nobody answered.
    #[error("{STORE} did not answer within 30 s (was access denied?)")]
    NoAnswer,
    /// The item does not exist (or is empty).
    #[error("{STORE} has no Discord token for AMC; {STORE_IT}")]
    Missing,
}

/// The secret store's name, as the person knows it.
#[cfg(target_os = "macos")]
const STORE: &str = "the Keychain";
#[cfg(not(target_os = "macos"))]
const STORE: &str = "the Secret Service";

/// How to put the token in the secret store.
#[cfg(target_os = "macos")]
const STORE_IT: &str = "paste the bot's token in AMC's Setup (or amc discord connect), or store it with: \
                        security add-generic-password -s AMC -a discord -w <token>";
#[cfg(not(target_os = "macos"))]
const STORE_IT: &str = "paste the bot's token in AMC's Setup (or amc discord connect)";

/// The token itself, reading the secret store if the configuration says so.
pub async fn resolve(token: &DiscordToken) -> Result<Secret, TokenError> {
    match token {
        DiscordToken::Value(t) | DiscordToken::Environment(t) => Ok(t.clone()),
        DiscordToken::Keychain => stored().await?.ok_or(TokenError::Missing),
    }
}

/// The token in the secret store, if there is one.
pub async fn stored() -> Result<Option<Secret>, TokenError> {
    blocking(|entry| match entry.get_password() {
        Ok(token) if !token.trim().is_empty() => Ok(Some(Secret::new(token.trim()))),
        Ok(_) | Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(TokenError::Unreadable(e.to_string())),
    })
    .await
}

/// Keeps `token` in the secret store, replacing what was there.
pub async fn store(token: &Secret) -> Result<(), TokenError> {
    let token = token.clone();
    blocking(move |entry| entry.set_password(token.expose()).map_err(|e| TokenError::Unreadable(e.to_string()))).await
}

/// Removes the token from the secret store; nothing there is no error.
pub async fn forget() -> Result<(), TokenError> {
    blocking(|entry| match entry.delete_credential() {
        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
        Err(e) => Err(TokenError::Unreadable(e.to_string())),
    })
    .await
}

/// Runs `f` on AMC's item, on the blocking pool, for at most [`STORE_WAIT`].
async fn blocking<T: Send + 'static>(
    f: impl FnOnce(&keyring::Entry) -> Result<T, TokenError> + Send + 'static,
) -> Result<T, TokenError> {
    let call = tokio::task::spawn_blocking(move || {
        let entry = keyring::Entry::new(KEYCHAIN_SERVICE, KEYCHAIN_ACCOUNT)
            .map_err(|e| TokenError::Unreadable(e.to_string()))?;
        f(&entry)
    });
    match tokio::time::timeout(STORE_WAIT, call).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(e)) => Err(TokenError::Unreadable(e.to_string())),
        Err(_) => Err(TokenError::NoAnswer),
    }
}
