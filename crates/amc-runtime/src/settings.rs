//! AMC's settings as the person gives them: flags, the environment and `config.toml` in the
//! data directory ([`RawConfig`]), read and checked once into the core's
//! [`Config`] and each source's settings ([`Settings`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use amc_core::config::{CONFIG_FILE, Config, default_data_dir, expand_home};
use amc_core::ratelimit::RateLimit;
use amc_discord::settings::{DiscordSettings, DiscordToken, Secret};
use amc_imessage::settings::ImessageSettings;
use serde::Deserialize;

/// Settings as given, not yet checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawConfig {
    /// `--data-dir` / `AMC_DATA_DIR`.
    pub data_dir: Option<PathBuf>,
    /// `--listen`: a loopback TCP address to serve on besides the socket.
    pub listen: Option<String>,
    /// `--test-sender`: deliver sends to a recording sender instead of the platforms.
    pub test_sender: bool,
    /// `--chat-db`: the iMessage database to follow.
    pub chat_db: Option<PathBuf>,
    /// `--osascript`: the program that sends through Messages.
    pub osascript: Option<PathBuf>,
    /// `AMC_DISCORD_TOKEN`: the Discord bot's token.
    pub discord_token: Option<Secret>,
}

/// The Discord bot's token from `AMC_DISCORD_TOKEN`, if set. (The environment only: a
/// flag would show the token in `ps`.)
pub fn discord_token_from_env() -> Option<Secret> {
    std::env::var("AMC_DISCORD_TOKEN").ok().filter(|t| !t.trim().is_empty()).map(Secret::new)
}

/// The config file, `config.toml` in the data directory. Every key is optional.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Folders (besides the data directory's `outbox`) that agents may send files from.
    #[serde(default)]
    pub attachment_dirs: Vec<String>,
    /// Sends a channel takes in a burst.
    pub rate_limit_burst: Option<u32>,
    /// Sends per minute a channel takes after the burst.
    pub rate_limit_per_minute: Option<u32>,
    /// Seconds a platform gets to confirm a send before its outcome is `unknown` (1 to
    /// 600, default 200: osascript may take 130 s while Messages launches, then Messages
    /// has `imessage_confirm_seconds` to settle the send).
    pub send_timeout_seconds: Option<u64>,
    /// Minutes the readers rule looks back at what an agent read (1 to 1,440, default
    /// 60): a send under `auto` to people who could not read all of it waits for review.
    pub readers_window_minutes: Option<u64>,
    /// A loopback address to serve on, as `--listen`.
    pub listen: Option<String>,
    /// The iMessage database to follow, as `--chat-db` (on macOS it defaults to
    /// `~/Library/Messages/chat.db`); `""` turns the iMessage source off.
    pub imessage_chat_db: Option<String>,
    /// Seconds between fallback checks of chat.db (1 to 300, default 30): file events
    /// do the work, the check only catches one that was lost.
    pub imessage_poll_seconds: Option<u64>,
    /// Hours between sweeps of the whole of chat.db when nothing suggests one is needed (1
    /// to 168, default 6): new rows and changes to the newest ones come as they happen,
    /// and signs of anything else (a rebuilt or replaced file, a change far back, the Mac
    /// waking) bring a sweep sooner.
    pub imessage_sweep_hours: Option<u64>,
    /// The program that sends through Messages (default on macOS: `/usr/bin/osascript`).
    pub imessage_osascript: Option<String>,
    /// Contacts databases to name senders from (default on macOS: the person's Contacts).
    pub imessage_contacts: Option<Vec<String>>,
    /// Messages that reach chat.db more than this many days after they were sent (old
    /// messages synced from iCloud) are stored but not surfaced as unread (default 7; 0
    /// surfaces everything).
    pub imessage_late_horizon_days: Option<u32>,
    /// Seconds Messages has to record a send in chat.db before its outcome is unknown
    /// (1 to 300, default 30).
    pub imessage_confirm_seconds: Option<u64>,
    /// Where attachments are copied for Messages to send them (default on macOS:
    /// `~/Library/Messages/Attachments/AMC`, which Messages' sandbox can always read).
    pub imessage_attachments_dir: Option<String>,
    /// The Discord bot's token (or set `AMC_DISCORD_TOKEN`, or use the Keychain).
    pub discord_token: Option<Secret>,
    /// Read the bot's token from the macOS Keychain (service `AMC`, account `discord`).
    pub discord_token_keychain: Option<bool>,
    /// Discord's base URL (default `https://discord.com`); a local stand-in for tests.
    pub discord_api_url: Option<String>,
    /// An HTTP proxy for Discord's REST API and files.
    pub discord_proxy: Option<String>,
    /// Certificates (PEM) to trust besides the usual roots, for a proxy that inspects TLS.
    pub discord_ca_file: Option<String>,
    /// The largest file Discord takes from the bot, in MB (default 10; more on boosted servers).
    pub discord_upload_limit_mb: Option<u64>,
    /// The most messages fetched per channel after a reconnect or an approval (default 1,000).
    pub discord_history_limit: Option<u32>,
    /// How often each followed channel's newest message is checked on Discord, in
    /// seconds (default 120).
    pub discord_check_seconds: Option<u64>,
    /// The person's own Discord user id, so their messages count as theirs.
    pub discord_user_id: Option<String>,
    /// The largest attachment AMC fetches from a platform when an agent asks (MB, default 25).
    pub attachment_fetch_limit_mb: Option<u64>,
}

/// What AMC runs with: the core's configuration and each source's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The core's.
    pub core: Config,
    /// The iMessage source's.
    pub imessage: ImessageSettings,
    /// The Discord source's; its token is `None` until one is given (the window's Setup).
    pub discord: DiscordSettings,
}

/// A configuration that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// No data directory was given and none can be derived (no home directory).
    #[error("no data directory: set --data-dir or AMC_DATA_DIR")]
    NoDataDir,
    /// A setting has a value that cannot work.
    #[error("{0}")]
    Invalid(String),
    /// The listen address is not a loopback `IP:PORT`; `from` names where it was given.
    #[error("{from} must be a loopback address such as 127.0.0.1:7878, not {value:?}")]
    Listen {
        /// `--listen`, or `listen in config.toml`.
        from: &'static str,
        /// The value given.
        value: String,
    },
    /// A number in config.toml is outside what AMC accepts.
    #[error("{path}: {key} must be from {min} to {max}, not {value}")]
    OutOfRange {
        /// The file.
        path: PathBuf,
        /// The setting.
        key: &'static str,
        /// The least accepted.
        min: u64,
        /// The most accepted.
        max: u64,
        /// The value given.
        value: u64,
    },
    /// The data directory cannot be one.
    #[error("AMC's data folder {path} {why}; choose another with --data-dir or AMC_DATA_DIR")]
    DataDir {
        /// The folder.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The config file does not parse.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl RawConfig {
    /// Checks the settings and reads the config file of the data directory, if any.
    pub fn validate(self) -> Result<Settings, ConfigError> {
        let data_dir = self.data_dir()?;
        // The nearest part of the path that exists must be a folder.
        if let Some(found) = data_dir.ancestors().find(|a| a.exists())
            && !found.is_dir()
        {
            let why = if found == data_dir {
                "is a file, not a folder".to_owned()
            } else {
                format!("cannot be created: {} is a file", found.display())
            };
            return Err(ConfigError::DataDir { path: data_dir, why });
        }
        let file_path = data_dir.join(CONFIG_FILE);
        let file = read_file_config(&file_path)?;
        self.validate_with(data_dir, file)
    }

    /// The data directory these settings name (checked as [`RawConfig::validate`] checks it).
    pub(crate) fn data_dir(&self) -> Result<PathBuf, ConfigError> {
        match &self.data_dir {
            Some(d) => Ok(absolute(d)),
            None => default_data_dir().ok_or(ConfigError::NoDataDir),
        }
    }

    /// Checks these settings with `text` as the config file's, as at start-up: what a change
    /// made from the window must pass before it is written.
    pub(crate) fn validate_text(self, text: &str) -> Result<Settings, ConfigError> {
        let data_dir = self.data_dir()?;
        let file = parse_file_config(&data_dir.join(CONFIG_FILE), text)?;
        self.validate_with(data_dir, file)
    }

    fn validate_with(self, data_dir: PathBuf, file: FileConfig) -> Result<Settings, ConfigError> {
        let file_path = data_dir.join(CONFIG_FILE);
        // Numbers outside what works are refused with the range, never quietly changed.
        let range = |key: &'static str, value: Option<u64>, default: u64, min: u64, max: u64| match value {
            None => Ok(default),
            Some(v) if (min..=max).contains(&v) => Ok(v),
            Some(value) => Err(ConfigError::OutOfRange { path: file_path.clone(), key, min, max, value }),
        };
        let discord = discord_settings(self.discord_token, &file, &range)?;
        let listen = match (self.listen, file.listen) {
            (Some(l), _) => Some(parse_loopback(&l, "--listen")?),
            (None, Some(l)) => Some(parse_loopback(&l, "listen in config.toml")?),
            (None, None) => None,
        };
        // The file changes the core's defaults.
        let defaults = Config::new(data_dir.clone());
        let mut attachment_dirs = defaults.attachment_dirs.clone();
        attachment_dirs.extend(file.attachment_dirs.iter().map(|d| absolute(&expand_home(d))));
        let core = Config {
            listen,
            attachment_dirs,
            rate_limit: RateLimit {
                burst: range(
                    "rate_limit_burst",
                    file.rate_limit_burst.map(u64::from),
                    defaults.rate_limit.burst.into(),
                    1,
                    10_000,
                )? as u32,
                per_minute: range(
                    "rate_limit_per_minute",
                    file.rate_limit_per_minute.map(u64::from),
                    defaults.rate_limit.per_minute.into(),
                    1,
                    10_000,
                )? as u32,
            },
            send_timeout: Duration::from_secs(range(
                "send_timeout_seconds",
                file.send_timeout_seconds,
                defaults.send_timeout.as_secs(),
                1,
                600,
            )?),
            test_sender: self.test_sender,
            attachment_fetch_limit: range(
                "attachment_fetch_limit_mb",
                file.attachment_fetch_limit_mb,
                defaults.attachment_fetch_limit >> 20,
                1,
                500,
            )? << 20,
            readers_window: Duration::from_secs(
                range(
                    "readers_window_minutes",
                    file.readers_window_minutes,
                    amc_core::config::READERS_WINDOW_MINUTES,
                    1,
                    amc_core::config::MAX_READERS_WINDOW_MINUTES,
                )? * 60,
            ),
            ..defaults
        };
        let imessage = ImessageSettings {
            chat_db: match (self.chat_db, file.imessage_chat_db.as_deref()) {
                (Some(p), _) => Some(absolute(&p)),
                (None, Some("")) => None,
                (None, Some(p)) => Some(absolute(&expand_home(p))),
                (None, None) if cfg!(target_os = "macos") => Some(expand_home("~/Library/Messages/chat.db")),
                (None, None) => None,
            },
            poll: Duration::from_secs(range("imessage_poll_seconds", file.imessage_poll_seconds, 30, 1, 300)?),
            sweep_every: Duration::from_secs(
                3600 * range("imessage_sweep_hours", file.imessage_sweep_hours, 6, 1, 168)?,
            ),
            osascript_explicit: self.osascript.is_some()
                || file.imessage_osascript.as_deref().is_some_and(|p| !p.is_empty()),
            osascript: match (self.osascript, file.imessage_osascript.as_deref()) {
                (Some(p), _) => Some(absolute(&p)),
                (None, Some("")) => None,
                (None, Some(p)) => Some(absolute(&expand_home(p))),
                (None, None) if cfg!(target_os = "macos") => Some(PathBuf::from("/usr/bin/osascript")),
                (None, None) => None,
            },
            contacts: file
                .imessage_contacts
                .as_ref()
                .map(|list| list.iter().map(|p| absolute(&expand_home(p))).collect()),
            late_horizon: match file.imessage_late_horizon_days {
                None => Some(amc_imessage::settings::LATE_HORIZON),
                Some(0) => None,
                Some(days) => Some(Duration::from_secs(u64::from(days) * 86_400)),
            },
            confirm: Duration::from_secs(range("imessage_confirm_seconds", file.imessage_confirm_seconds, 30, 1, 300)?),
            attachments_dir: match file.imessage_attachments_dir.as_deref() {
                Some(p) => absolute(&expand_home(p)),
                // Messages' sandbox can always read its own Attachments folder; peers
                // stage there too (docs/macos.md).
                None if cfg!(target_os = "macos") => expand_home("~/Library/Messages/Attachments/AMC"),
                None => data_dir.join("imessage-outgoing"),
            },
        };
        Ok(Settings { core, imessage, discord })
    }
}

/// Checks a number of config.toml: its key, value, default, least and most.
type Range<'a> = dyn Fn(&'static str, Option<u64>, u64, u64, u64) -> Result<u64, ConfigError> + 'a;

fn discord_settings(
    env_token: Option<Secret>,
    file: &FileConfig,
    range: &Range<'_>,
) -> Result<DiscordSettings, ConfigError> {
    let given = |t: &Option<Secret>| t.as_ref().map(|t| t.expose().trim().to_owned()).filter(|t| !t.is_empty());
    let token = match (given(&env_token), given(&file.discord_token), file.discord_token_keychain) {
        (Some(t), _, _) => Some(DiscordToken::Environment(Secret::new(t))),
        (None, Some(t), _) => Some(DiscordToken::Value(Secret::new(t))),
        (None, None, Some(true)) => Some(DiscordToken::Keychain),
        _ => None,
    };
    let api_url = file.discord_api_url.clone().unwrap_or_else(|| "https://discord.com".into());
    let stand_in = amc_discord::settings::check_api_url(&api_url).map_err(ConfigError::Invalid)?;
    if let Some(proxy) = &file.discord_proxy {
        let ok = url::Url::parse(proxy).is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some());
        if !ok {
            return Err(ConfigError::Invalid(format!("discord_proxy must be an http(s) URL, not {proxy:?}")));
        }
    }
    let ca_file = file.discord_ca_file.as_deref().map(expand_home).map(|p| absolute(&p));
    if let Some(ca) = &ca_file
        && !ca.is_file()
    {
        return Err(ConfigError::Invalid(format!("discord_ca_file {} is not a file", ca.display())));
    }
    if let Some(id) = &file.discord_user_id
        && !id.parse::<u64>().is_ok_and(|n| n > 0)
    {
        return Err(ConfigError::Invalid(format!("discord_user_id must be a Discord user id (digits), not {id:?}")));
    }
    Ok(DiscordSettings {
        token,
        api_url: api_url.trim_end_matches('/').to_owned(),
        stand_in,
        proxy: file.discord_proxy.clone(),
        ca_file,
        upload_limit: range("discord_upload_limit_mb", file.discord_upload_limit_mb, 10, 1, 500)? * 1024 * 1024,
        history_limit: range("discord_history_limit", file.discord_history_limit.map(u64::from), 1000, 1, 100_000)?
            as u32,
        user_id: file.discord_user_id.clone(),
        check_period: std::time::Duration::from_secs(range(
            "discord_check_seconds",
            file.discord_check_seconds,
            120,
            1,
            3600,
        )?),
    })
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_owned())
}

fn read_file_config(path: &Path) -> Result<FileConfig, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_file_config(path, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileConfig::default()),
        Err(e) => Err(ConfigError::File { path: path.to_owned(), message: e.to_string() }),
    }
}

fn parse_file_config(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::File { path: path.to_owned(), message: e.to_string() })
}

fn parse_loopback(s: &str, from: &'static str) -> Result<SocketAddr, ConfigError> {
    let bad = || ConfigError::Listen { from, value: s.to_owned() };
    let addr: SocketAddr = s.parse().map_err(|_| bad())?;
    if addr.ip().is_loopback() { Ok(addr) } else { Err(bad()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_must_be_loopback() {
        let dir = tempfile::tempdir().expect("tempdir");
        let raw = |listen: &str| RawConfig {
            data_dir: Some(dir.path().to_owned()),
            listen: Some(listen.to_owned()),
            ..Default::default()
        };
        assert!(raw("127.0.0.1:7878").validate().is_ok());
        assert!(raw("[::1]:7878").validate().is_ok());
        assert!(matches!(raw("0.0.0.0:7878").validate(), Err(ConfigError::Listen { .. })));
        assert!(matches!(raw("192.168.1.2:80").validate(), Err(ConfigError::Listen { .. })));
        assert!(matches!(raw("localhost").validate(), Err(ConfigError::Listen { .. })));
    }

    #[test]
    fn discord_needs_a_token_a_safe_api_url_and_a_real_user_id() {
        let dir = tempfile::tempdir().expect("tempdir");
        let with = |file: &str, env: Option<&str>| {
            std::fs::write(dir.path().join(CONFIG_FILE), file).expect("write");
            RawConfig {
                data_dir: Some(dir.path().to_owned()),
                discord_token: env.map(Secret::new),
                ..Default::default()
            }
            .validate()
        };
        assert_eq!(with("", None).expect("valid").discord.token, None, "no token: no Discord");
        let d = with("discord_token = \"file\"\n", Some("env")).expect("valid").discord;
        assert_eq!(d.token, Some(DiscordToken::Environment(Secret::new("env"))), "the environment wins");
        let d = with("discord_token = \" file \"\ndiscord_token_keychain = true\n", None).expect("valid").discord;
        assert_eq!(d.token, Some(DiscordToken::Value(Secret::new("file"))), "a token in the file wins");
        assert_eq!((d.api_url.as_str(), d.upload_limit, d.history_limit), ("https://discord.com", 10 << 20, 1000));
        assert_eq!(d.check_period, std::time::Duration::from_secs(120), "the check runs every 2 minutes");
        let checked = |n: u64| with(&format!("discord_token = \"t\"\ndiscord_check_seconds = {n}\n"), None);
        assert_eq!(checked(5).expect("valid").discord.check_period.as_secs(), 5);
        assert!(checked(0).is_err() && checked(3601).is_err(), "the check's period is 1 s to an hour");
        let d = with("discord_token_keychain = true\n", None).expect("valid").discord;
        assert_eq!(d.token, Some(DiscordToken::Keychain));
        assert!(with("discord_token = \"t\"\ndiscord_api_url = \"http://127.0.0.1:9/\"\n", None).is_ok());
        assert!(with("discord_token = \"t\"\ndiscord_api_url = \"https://canary.discord.com\"\n", None).is_ok());
        for bad in [
            "http://discord.example",
            "ftp://discord.com",
            "not a url",
            "https://discord.example",
            "http://discord.com",
            "https://discord.com.example",
        ] {
            let r = with(&format!("discord_token = \"t\"\ndiscord_api_url = \"{bad}\"\n"), None);
            assert!(matches!(r, Err(ConfigError::Invalid(_))), "{bad} must be refused");
        }
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n").expect("ca");
        let file =
            format!("discord_token = \"t\"\ndiscord_proxy = \"http://proxy.lan:3128\"\ndiscord_ca_file = {ca:?}\n");
        let d = with(&file, None).expect("valid").discord;
        assert_eq!((d.proxy.as_deref(), d.ca_file.as_deref()), (Some("http://proxy.lan:3128"), Some(ca.as_path())));
        for bad in ["discord_proxy = \"proxy.lan\"", "discord_ca_file = \"/nowhere/ca.pem\""] {
            let r = with(&format!("discord_token = \"t\"\n{bad}\n"), None);
            assert!(matches!(r, Err(ConfigError::Invalid(_))), "{bad} must be refused");
        }
        for bad in ["0", "-1", "12a", "99999999999999999999"] {
            let r = with(&format!("discord_token = \"t\"\ndiscord_user_id = \"{bad}\"\n"), None);
            assert!(matches!(r, Err(ConfigError::Invalid(_))), "{bad} must be refused");
        }
        assert_eq!(format!("{:?}", Secret::new("hunter2")), "***", "Debug never shows a credential");
    }

    #[test]
    fn the_config_file_adds_folders_and_limits_and_rejects_unknown_keys() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "attachment_dirs = [\"/srv/share\"]\nrate_limit_burst = 2\nrate_limit_per_minute = 6\n",
        )
        .expect("write");
        let cfg = RawConfig { data_dir: Some(dir.path().to_owned()), ..Default::default() }.validate().expect("valid");
        assert_eq!(cfg.core.attachment_dirs, vec![dir.path().join("outbox"), PathBuf::from("/srv/share")]);
        assert_eq!(cfg.core.rate_limit, RateLimit { burst: 2, per_minute: 6 });
        std::fs::write(dir.path().join(CONFIG_FILE), "atachment_dirs = []\n").expect("write");
        let err =
            RawConfig { data_dir: Some(dir.path().to_owned()), ..Default::default() }.validate().expect_err("typo");
        assert!(err.to_string().contains("atachment_dirs"), "{err}");
    }

    #[test]
    fn numbers_out_of_range_are_refused_with_the_range() {
        let dir = tempfile::tempdir().expect("tempdir");
        let raw = || RawConfig { data_dir: Some(dir.path().to_owned()), ..Default::default() };
        for (line, key) in [
            ("send_timeout_seconds = 0", "send_timeout_seconds must be from 1 to 600, not 0"),
            ("imessage_poll_seconds = 301", "imessage_poll_seconds must be from 1 to 300, not 301"),
            ("imessage_sweep_hours = 0", "imessage_sweep_hours must be from 1 to 168, not 0"),
            ("rate_limit_burst = 0", "rate_limit_burst must be from 1 to 10000, not 0"),
            ("attachment_fetch_limit_mb = 9999", "attachment_fetch_limit_mb must be from 1 to 500, not 9999"),
        ] {
            std::fs::write(dir.path().join(CONFIG_FILE), line).expect("write");
            let err = raw().validate().expect_err(line).to_string();
            assert!(err.contains("config.toml") && err.contains(key), "{line}: {err}");
        }
        std::fs::write(dir.path().join(CONFIG_FILE), "send_timeout_seconds = 600").expect("write");
        assert_eq!(raw().validate().expect("the edge is fine").core.send_timeout, Duration::from_secs(600));
    }

    #[test]
    fn a_bad_listen_names_where_it_came_from_and_a_file_is_no_data_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(CONFIG_FILE), "listen = \"0.0.0.0:80\"").expect("write");
        let err =
            RawConfig { data_dir: Some(dir.path().to_owned()), ..Default::default() }.validate().expect_err("file");
        assert!(err.to_string().starts_with("listen in config.toml must be"), "{err}");
        let flag = RawConfig {
            data_dir: Some(dir.path().to_owned()),
            listen: Some("10.0.0.1:1".into()),
            ..Default::default()
        };
        assert!(flag.validate().expect_err("flag").to_string().starts_with("--listen must be"));
        let file = dir.path().join("not-a-folder");
        std::fs::write(&file, "").expect("write");
        let err = RawConfig { data_dir: Some(file), ..Default::default() }.validate().expect_err("a file");
        assert!(err.to_string().contains("is a file, not a folder") && err.to_string().contains("--data-dir"), "{err}");
    }
}
