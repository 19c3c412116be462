//! Changes to `config.toml` made from the window. The file stays the person's own: its
//! comments, its order and every other key are kept (`toml_edit`); each change is checked
//! as at start-up before anything is written, and the file is replaced whole, mode 0600,
//! never left half written.

use amc_core::config::CONFIG_FILE;
use toml_edit::DocumentMut;

use crate::settings::{ConfigError, RawConfig, Settings};

/// Applies `change` to the config file of `raw`'s data directory, checks the result with
/// `raw`'s flags and environment as start-up would, and writes it. Returns the settings
/// the new file gives; on any error the file is as it was.
pub(crate) fn edit(raw: &RawConfig, change: impl FnOnce(&mut DocumentMut)) -> Result<Settings, ConfigError> {
    let path = raw.data_dir()?.join(CONFIG_FILE);
    let file_error = |message: String| ConfigError::File { path: path.clone(), message };
    let before = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(file_error(e.to_string())),
    };
    let mut doc: DocumentMut = before.parse().map_err(|e: toml_edit::TomlError| file_error(e.to_string()))?;
    change(&mut doc);
    let after = doc.to_string();
    let settings = raw.clone().validate_text(&after)?;
    if after != before {
        amc_core::files::write_atomic(&path, after.as_bytes()).map_err(|e| file_error(e.to_string()))?;
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_keeps_the_persons_comments_and_keys_and_a_bad_one_writes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(CONFIG_FILE);
        let mine = "# my settings\nrate_limit_burst = 7 # a few\n\n[ignored_table_free]\n";
        let raw = RawConfig { data_dir: Some(dir.path().to_owned()), ..Default::default() };
        // An unknown table is refused at start-up, so here too, and the file stays.
        std::fs::write(&path, mine).expect("write");
        assert!(edit(&raw, |doc| doc["discord_token_keychain"] = toml_edit::value(true)).is_err());
        assert_eq!(std::fs::read_to_string(&path).expect("read"), mine);
        let mine = "# my settings\nrate_limit_burst = 7 # a few\n";
        std::fs::write(&path, mine).expect("write");
        let settings = edit(&raw, |doc| doc["discord_token_keychain"] = toml_edit::value(true)).expect("edit");
        assert_eq!(settings.core.rate_limit.burst, 7);
        assert!(settings.discord.token.is_some());
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with(mine), "{text}");
        assert!(text.contains("discord_token_keychain = true"), "{text}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777, 0o600);
        // A value out of range is refused with start-up's words, and nothing is written.
        let err = edit(&raw, |doc| doc["rate_limit_burst"] = toml_edit::value(0)).expect_err("out of range");
        assert!(err.to_string().contains("rate_limit_burst must be from 1 to 10000, not 0"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
        // A missing file is made.
        let fresh = tempfile::tempdir().expect("tempdir");
        let raw = RawConfig { data_dir: Some(fresh.path().to_owned()), ..Default::default() };
        edit(&raw, |doc| doc["send_timeout_seconds"] = toml_edit::value(42)).expect("edit");
        assert_eq!(
            std::fs::read_to_string(fresh.path().join(CONFIG_FILE)).expect("read"),
            "send_timeout_seconds = 42\n"
        );
    }
}
