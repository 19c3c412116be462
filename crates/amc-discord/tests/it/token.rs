//! The bot's token from the macOS Keychain, through a stand-in for `security` that
//! answers as the real one does.

use std::os::unix::fs::PermissionsExt;

use amc_discord::settings::{DiscordToken, Secret};
use amc_discord::token::{TokenError, resolve};

fn standin(dir: &std::path::Path, script: &str) -> std::path::PathBuf {
    let path = dir.join("security");
    std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

#[tokio::test]
async fn the_token_is_read_from_the_keychain_item() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Answers only the exact query AMC documents: service AMC, account discord, password only.
    let security = standin(
        dir.path(),
        r#"[ "$*" = "find-generic-password -s AMC -a discord -w" ] || exit 2; echo "token-from-keychain""#,
    );
    let token = resolve(&DiscordToken::Keychain, &security).await.expect("token");
    assert_eq!(token.expose(), "token-from-keychain");
    // A token in the configuration is used as it is, without asking the Keychain.
    let given = resolve(&DiscordToken::Value(Secret::new("configured")), &dir.path().join("absent")).await;
    assert_eq!(given.expect("token").expose(), "configured");
}

#[tokio::test]
async fn a_missing_keychain_item_says_how_to_add_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let security = standin(
        dir.path(),
        "echo 'security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain.' >&2; exit 44",
    );
    let err = resolve(&DiscordToken::Keychain, &security).await.expect_err("no item");
    assert_eq!(err, TokenError::Missing);
    assert!(err.to_string().contains("security add-generic-password -s AMC -a discord -w"), "{err}");
    let err = resolve(&DiscordToken::Keychain, &dir.path().join("no-such-program")).await.expect_err("no program");
    assert!(matches!(err, TokenError::Unreadable(_)), "{err}");
    assert!(err.to_string().contains("security add-generic-password"), "{err}");
}
