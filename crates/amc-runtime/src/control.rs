//! The sources while AMC runs, and every change the window makes to `config.toml`.
//!
//! iMessage follows the chat.db the settings name, and is turned off, on or to another
//! chat.db from the window (`/admin/settings`) by stopping its watcher and starting
//! another: the watcher's place in chat.db is kept in the store, so the new one reads on
//! from where the old one stopped (nothing lost), and ingest is idempotent by platform id
//! (nothing twice). Discord is started with the token the configuration names, and
//! connected, replaced or stopped from the window (`/admin/discord`) without a restart.
//!
//! One task owns the running source; the window's requests reach it as messages, one at a
//! time, so a connect and a disconnect never interleave. Connecting checks the token with
//! Discord first (a refused token changes nothing), keeps it in the system's secret store
//! (never in a file), records `discord_token_keychain = true` in `config.toml` so the
//! next start finds it, then stops the running bot, if any, and starts the new one. Its
//! sender is switched in place: sends made meanwhile go through the bot running when they
//! start.

use std::sync::Arc;

use amc_core::model::Source;
use amc_core::sender::SwitchedSenderHandle;
use amc_core::service::{Amc, SourceState, SourceStatus};
use amc_core::{Error, ErrorCode};
use amc_discord::bot::{Bot, CheckError};
use amc_discord::settings::{DiscordSettings, DiscordToken, Secret};
use amc_imessage::send::{MessagesConfig, MessagesSender};
use amc_imessage::settings::ImessageSettings;
use amc_imessage::watch::WatchConfig;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::settings::RawConfig;

/// Why iMessage is off when no chat.db is followed.
const IMESSAGE_OFF: &str = "off: no chat.db is followed (imessage_chat_db in AMC's settings)";

/// Why Discord is off when no token was ever given.
pub(crate) const NOT_SET_UP: &str = "not set up: paste your bot's token in AMC's Setup (or amc discord connect)";

/// What the window is told of Discord's setup.
#[derive(Debug, Clone, Serialize)]
pub struct DiscordSetupState {
    /// Where the token comes from: `none`, `keychain` (the system's secret store),
    /// `config` (`discord_token` in config.toml) or `environment` (`AMC_DISCORD_TOKEN`).
    pub token: &'static str,
    /// The bot, as Discord described it when its token was last checked.
    pub bot: Option<Bot>,
    /// Whether AMC can change the token from the window (not while the environment sets it).
    pub changeable: bool,
    /// Whether AMC runs with the test sender: Discord is followed, nothing is sent.
    pub test_mode: bool,
}

/// The settings the window shows and changes: config.toml's, as they are in force.
#[derive(Debug, Clone, Serialize)]
pub struct SettingsState {
    /// The config file they are kept in.
    pub file: String,
    /// AMC's own outbox, which agents may always send files from.
    pub outbox: String,
    /// The other folders agents may send files from, as config.toml names them.
    pub attachment_dirs: Vec<String>,
    /// The chat.db iMessage follows, or `None` when iMessage is off.
    pub imessage_chat_db: Option<String>,
    /// Sends a channel takes at once.
    pub rate_limit_burst: u32,
    /// Sends a minute after the burst.
    pub rate_limit_per_minute: u32,
    /// How long a platform has to confirm a send.
    pub send_timeout_seconds: u64,
}

/// A change of settings from the window: each field left out stays.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsChange {
    attachment_dirs: Option<Vec<String>>,
    imessage_chat_db: Option<String>,
    rate_limit_burst: Option<u64>,
    rate_limit_per_minute: Option<u64>,
    send_timeout_seconds: Option<u64>,
}

enum Command {
    Settings(Option<SettingsChange>, oneshot::Sender<Result<SettingsState, Error>>),
    Connect(String, oneshot::Sender<Result<DiscordSetupState, Error>>),
    Disconnect(oneshot::Sender<Result<DiscordSetupState, Error>>),
    Show(oneshot::Sender<DiscordSetupState>),
}

/// The window's way to the Discord source.
#[derive(Clone)]
pub struct Control(mpsc::Sender<Command>);

impl Control {
    async fn ask<T>(&self, command: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, Error> {
        let (reply, answer) = oneshot::channel();
        self.0.send(command(reply)).await.map_err(|_| Error::conflict("AMC is stopping"))?;
        answer.await.map_err(|_| Error::conflict("AMC is stopping"))
    }

    /// What is set up.
    pub async fn show(&self) -> Result<DiscordSetupState, Error> {
        self.ask(Command::Show).await
    }

    /// Checks `token` with Discord, keeps it and connects the bot with it.
    pub async fn connect(&self, token: String) -> Result<DiscordSetupState, Error> {
        self.ask(|reply| Command::Connect(token, reply)).await?
    }

    /// Disconnects the bot and forgets its token.
    pub async fn disconnect(&self) -> Result<DiscordSetupState, Error> {
        self.ask(Command::Disconnect).await?
    }

    /// The settings as they are in force, or after `change` is written and put in force.
    pub async fn settings(&self, change: Option<SettingsChange>) -> Result<SettingsState, Error> {
        self.ask(|reply| Command::Settings(change, reply)).await?
    }
}

/// The running source and what it was started with.
struct Supervisor {
    amc: Amc,
    raw: RawConfig,
    settings: DiscordSettings,
    /// Where the Discord sender agents' sends go through is switched; `None` in test mode,
    /// where sends are recorded whatever runs.
    switch: Option<SwitchedSenderHandle>,
    stop: CancellationToken,
    running: Option<(CancellationToken, JoinHandle<()>)>,
    bot: Option<Bot>,
    /// The running bot's token, to describe the bot once when first asked.
    token: Option<Secret>,
    /// Whether the running bot was described (or tried): a failure is not tried again on
    /// every look at Setup.
    described: bool,
    imessage: Imessage,
}

/// How long describing a bot to the window may take: the control task waits for it.
const DESCRIBE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The iMessage source as the control task runs it.
pub(crate) struct Imessage {
    /// Its settings, as config.toml gives them now.
    pub settings: ImessageSettings,
    /// Where iMessage sends go; `None` where AMC sends through no Messages (test mode).
    pub switch: Option<SwitchedSenderHandle>,
    running: Option<(CancellationToken, JoinHandle<()>)>,
}

impl Imessage {
    /// The source with `settings`, not started.
    pub(crate) fn new(settings: ImessageSettings, switch: Option<SwitchedSenderHandle>) -> Self {
        Self { settings, switch, running: None }
    }
}

/// Starts the source with the configured token, if any, and the task the window's requests
/// go to; both end at `stop`.
pub(crate) async fn start(
    amc: Amc,
    raw: RawConfig,
    settings: DiscordSettings,
    switch: Option<SwitchedSenderHandle>,
    imessage: Imessage,
    stop: CancellationToken,
) -> Control {
    let mut supervisor = Supervisor {
        amc,
        raw,
        settings,
        switch,
        stop,
        running: None,
        bot: None,
        token: None,
        described: false,
        imessage,
    };
    supervisor.follow_imessage();
    match supervisor.settings.token.clone() {
        Some(token) => match amc_discord::token::resolve(&token).await {
            Ok(token) => {
                let _ = supervisor.run(token);
            }
            Err(why) => supervisor.off(SourceState::Degraded, why.to_string()),
        },
        // In test mode every source stands in for its platform, set up or not.
        None if supervisor.switch.is_some() => supervisor.off(SourceState::Disabled, NOT_SET_UP.into()),
        None => {}
    }
    let (commands, mut received) = mpsc::channel(8);
    tokio::spawn(async move {
        loop {
            let command = tokio::select! {
                c = received.recv() => c,
                () = supervisor.stop.cancelled() => None,
            };
            match command {
                Some(Command::Connect(token, reply)) => {
                    let _ = reply.send(supervisor.connect(&token).await);
                }
                Some(Command::Disconnect(reply)) => {
                    let _ = reply.send(supervisor.disconnect().await);
                }
                Some(Command::Settings(change, reply)) => {
                    let _ = reply.send(supervisor.settings(change).await);
                }
                Some(Command::Show(reply)) => {
                    let _ = reply.send(supervisor.state().await);
                }
                None => break,
            }
        }
        supervisor.halt().await;
        supervisor.unfollow_imessage().await;
    });
    Control(commands)
}

impl Supervisor {
    fn token_source(&self) -> &'static str {
        match &self.settings.token {
            None => "none",
            Some(DiscordToken::Keychain) => "keychain",
            Some(DiscordToken::Value(_)) => "config",
            Some(DiscordToken::Environment(_)) => "environment",
        }
    }

    async fn state(&mut self) -> DiscordSetupState {
        // A bot started from the configuration is described once, when first asked, with
        // a deadline: the window's other requests wait behind it.
        if !self.described
            && self.running.is_some()
            && let Some(token) = self.token.clone()
        {
            self.described = true;
            let check = amc_discord::bot::check(&self.settings, &token);
            self.bot = tokio::time::timeout(DESCRIBE_WAIT, check).await.ok().and_then(Result::ok);
        }
        DiscordSetupState {
            token: self.token_source(),
            bot: self.bot.clone(),
            changeable: !matches!(self.settings.token, Some(DiscordToken::Environment(_))),
            test_mode: self.switch.is_none(),
        }
    }

    fn changeable(&self) -> Result<(), Error> {
        if matches!(self.settings.token, Some(DiscordToken::Environment(_))) {
            return Err(Error::conflict(
                "AMC_DISCORD_TOKEN is set in AMC's environment: remove it there to set the token here",
            ));
        }
        Ok(())
    }

    /// Writes `change` to config.toml, checked as at start-up, and puts it in force; then (or
    /// with no change) the settings as they are. File work runs on the blocking pool.
    async fn settings(&mut self, change: Option<SettingsChange>) -> Result<SettingsState, Error> {
        let data_dir = self.raw.data_dir().map_err(|e| Error::validation(e.to_string()))?;
        if let Some(change) = change {
            let dirs = match change.attachment_dirs.clone() {
                Some(dirs) => {
                    let (data, known) = (data_dir.clone(), self.amc.live_settings().attachment_dirs);
                    Some(blocking(move || folders(&dirs, &data, &known)).await?)
                }
                None => None,
            };
            let chat_db = change.imessage_chat_db.as_deref().map(str::trim).map(str::to_owned);
            if let (Some(_), Some(flag)) = (&chat_db, &self.raw.chat_db) {
                return Err(Error::conflict(format!(
                    "AMC was started with --chat-db {}, which wins over its settings: start it without the flag to \
                     choose the chat.db here",
                    flag.display()
                )));
            }
            if let Some(path) = chat_db.clone().filter(|p| !p.is_empty()) {
                let full = amc_core::config::expand_home(&path);
                if !full.is_absolute() {
                    return Err(Error::validation(format!(
                        "{path} is not a full path to a chat.db: start it with / or ~/ (empty turns iMessage off)"
                    )));
                }
                // A typo would stop iMessage and look like a missing permission.
                if !blocking(move || Ok(full.is_file())).await? {
                    return Err(Error::validation(format!("there is no chat.db at {path}")));
                }
            }
            let settings = edit(&self.raw, move |doc| {
                if let Some(dirs) = &dirs {
                    doc["attachment_dirs"] = toml_edit::value(dirs.iter().collect::<toml_edit::Array>());
                }
                if let Some(path) = &chat_db {
                    doc["imessage_chat_db"] = toml_edit::value(path.as_str());
                }
                for (key, value) in [
                    ("rate_limit_burst", change.rate_limit_burst),
                    ("rate_limit_per_minute", change.rate_limit_per_minute),
                    ("send_timeout_seconds", change.send_timeout_seconds),
                ] {
                    if let Some(v) = value {
                        doc[key] = toml_edit::value(i64::try_from(v).unwrap_or(i64::MAX));
                    }
                }
            })
            .await
            .map_err(Error::validation)?;
            let live = amc_core::service::LiveSettings {
                attachment_dirs: settings.core.attachment_dirs.clone(),
                rate_limit: settings.core.rate_limit,
                send_timeout: settings.core.send_timeout,
            };
            let amc = self.amc.clone();
            blocking(move || amc.apply_settings(&live)).await?;
            if settings.imessage.chat_db != self.imessage.settings.chat_db {
                self.unfollow_imessage().await;
                // Another file: read from its first row, each stored once (the place kept
                // is the old file's, and means nothing in this one).
                if self.imessage.settings.chat_db.is_some() && settings.imessage.chat_db.is_some() {
                    let resync = amc_imessage::sync::Checkpoint::resync().encode();
                    self.amc.set_checkpoint(Source::Imessage, amc_imessage::sync::CHECKPOINT_KEY, &resync).await?;
                }
                self.imessage.settings = settings.imessage;
                self.follow_imessage();
            } else {
                self.imessage.settings = settings.imessage;
            }
        }
        let live = self.amc.live_settings();
        let file = data_dir.join(amc_core::config::CONFIG_FILE);
        let read = file.clone();
        let named: Vec<String> = blocking(move || {
            Ok(std::fs::read_to_string(&read)
                .ok()
                .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
                .and_then(|d| {
                    d.get("attachment_dirs")?
                        .as_array()
                        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                })
                .unwrap_or_default())
        })
        .await?;
        Ok(SettingsState {
            file: file.display().to_string(),
            outbox: self.amc.config().attachment_dirs.first().map(|d| d.display().to_string()).unwrap_or_default(),
            attachment_dirs: named,
            imessage_chat_db: self.imessage.settings.chat_db.as_ref().map(|p| p.display().to_string()),
            rate_limit_burst: live.rate_limit.burst,
            rate_limit_per_minute: live.rate_limit.per_minute,
            send_timeout_seconds: live.send_timeout.as_secs(),
        })
    }

    async fn connect(&mut self, given: &str) -> Result<DiscordSetupState, Error> {
        self.changeable()?;
        let token = amc_discord::bot::cleaned(given).map_err(refusal)?;
        let bot = amc_discord::bot::check(&self.settings, &token).await.map_err(refusal)?;
        amc_discord::token::store(&token).await.map_err(|e| Error::conflict(e.to_string()))?;
        let settings = edit(&self.raw, |doc| {
            doc.remove("discord_token");
            doc["discord_token_keychain"] = toml_edit::value(true);
        })
        .await
        .map_err(|e| Error::conflict(format!("the token is kept, but config.toml could not be changed: {e}")))?;
        self.settings = settings.discord;
        self.halt().await;
        self.run(token).map_err(Error::conflict)?;
        self.bot = Some(bot);
        self.described = true;
        tracing::info!("Discord connected from AMC's Setup");
        Ok(self.state().await)
    }

    async fn disconnect(&mut self) -> Result<DiscordSetupState, Error> {
        self.changeable()?;
        // config.toml first: if it cannot be changed, nothing is.
        let settings = edit(&self.raw, |doc| {
            doc.remove("discord_token");
            doc.remove("discord_token_keychain");
        })
        .await
        .map_err(|e| Error::conflict(format!("nothing was changed: config.toml cannot be written ({e})")))?;
        self.settings = settings.discord;
        self.halt().await;
        self.bot = None;
        self.token = None;
        self.off(SourceState::Disabled, NOT_SET_UP.into());
        amc_discord::token::forget()
            .await
            .map_err(|e| Error::conflict(format!("Discord is stopped, but its token could not be removed: {e}")))?;
        tracing::info!("Discord disconnected from AMC's Setup");
        Ok(self.state().await)
    }

    /// Follows the chat.db the settings name, and sends through Messages with it; with none,
    /// iMessage is off.
    fn follow_imessage(&mut self) {
        let settings = &self.imessage.settings;
        let Some(chat_db) = settings.chat_db.clone() else {
            if self.imessage.switch.is_some() {
                self.amc.set_source_status(
                    Source::Imessage,
                    SourceStatus::new(SourceState::Disabled, Some(IMESSAGE_OFF.into())),
                );
            }
            return;
        };
        if let (Some(switch), Some(osascript)) = (&self.imessage.switch, settings.osascript.clone()) {
            switch.set(Some(Arc::new(MessagesSender::new(MessagesConfig {
                osascript,
                chat_db: chat_db.clone(),
                attachments_dir: settings.attachments_dir.clone(),
                confirm_timeout: settings.confirm,
            }))));
        }
        let cfg = WatchConfig {
            chat_db,
            poll: settings.poll,
            sweeps: amc_imessage::watch::SweepPeriods { every: settings.sweep_every, ..Default::default() },
            contacts: settings.contacts.clone().unwrap_or_else(amc_imessage::contacts::Contacts::default_paths),
            late_horizon: settings.late_horizon,
            dir_events: amc_imessage::watch::DirEvents::All,
        };
        tracing::info!(chat_db = %cfg.chat_db.display(), "following iMessage");
        let stop = self.stop.child_token();
        let run = tokio::spawn(amc_imessage::watch::run(self.amc.clone(), cfg, stop.clone()));
        self.imessage.running = Some((stop, run));
    }

    /// Stops following chat.db, and waits until the watcher has.
    async fn unfollow_imessage(&mut self) {
        if let Some(switch) = &self.imessage.switch {
            switch.set(None);
        }
        if let Some((stop, run)) = self.imessage.running.take() {
            stop.cancel();
            let _ = run.await;
            self.amc.set_source_status(
                Source::Imessage,
                SourceStatus::new(SourceState::Disabled, Some(IMESSAGE_OFF.into())),
            );
        }
    }

    /// Starts the bot with `token`; why not, when it cannot be set up (its certificates).
    fn run(&mut self, token: Secret) -> Result<(), String> {
        let discord = match amc_discord::Discord::new(self.settings.clone(), token.clone()) {
            Ok(d) => d,
            Err(why) => {
                self.off(SourceState::Degraded, why.clone());
                return Err(why);
            }
        };
        self.token = Some(token);
        self.described = false;
        if let Some(switch) = &self.switch {
            switch.set(Some(discord.sender()));
        }
        let stop = self.stop.child_token();
        tracing::info!("starting the Discord bot");
        let run = tokio::spawn(discord.run(self.amc.clone(), stop.clone()));
        self.running = Some((stop, run));
        Ok(())
    }

    /// Stops the running bot, if any, and waits until it has.
    async fn halt(&mut self) {
        if let Some(switch) = &self.switch {
            switch.set(None);
        }
        if let Some((stop, run)) = self.running.take() {
            stop.cancel();
            let _ = run.await;
        }
    }

    fn off(&self, state: SourceState, why: String) {
        self.amc.set_source_status(Source::Discord, SourceStatus::new(state, Some(why)));
    }
}

/// The folders the person gave, as config.toml will name them (`~` kept as given): each a
/// folder outside AMC's data folder, never one that holds it, the whole disk, the home
/// folder, `~/Library` or a hidden folder of home (AMC reads with Full Disk Access: these
/// hold keys, mail and Messages). A new one must exist; one in force already (`known`) may
/// be missing for now (a drive unplugged), as at start-up.
fn folders(given: &[String], data_dir: &std::path::Path, known: &[std::path::PathBuf]) -> Result<Vec<String>, Error> {
    let data = data_dir.canonicalize().unwrap_or_else(|_| data_dir.to_owned());
    let home = amc_core::config::expand_home("~").canonicalize().ok();
    let mut out: Vec<String> = Vec::new();
    for dir in given.iter().map(|d| d.trim()).filter(|d| !d.is_empty()) {
        let path = amc_core::config::expand_home(dir);
        if !path.is_absolute() {
            return Err(Error::validation(format!("{dir} is not a full path: start it with / or ~/")));
        }
        let Some(found) = path.canonicalize().ok().filter(|p| p.is_dir()) else {
            if known.iter().any(|k| k == &path) {
                out.push(dir.to_owned());
                continue;
            }
            return Err(Error::validation(format!("{dir} is not a folder on this Mac")));
        };
        if found.starts_with(&data) {
            return Err(Error::validation(format!(
                "{dir} is inside AMC's data folder: agents never send files from it"
            )));
        }
        let hidden_in_home = |h: &std::path::PathBuf| {
            found
                .strip_prefix(h)
                .ok()
                .and_then(|r| r.components().next())
                .is_some_and(|c| c.as_os_str().to_string_lossy().starts_with('.'))
        };
        let private = found.parent().is_none()
            || data.starts_with(&found)
            || home.as_ref().is_some_and(|h| found == *h || found.starts_with(h.join("Library")) || hidden_in_home(h));
        if private {
            return Err(Error::validation(format!(
                "{dir} holds what agents must never send (the whole disk, your home or Library folder, a hidden \
                 folder, or AMC's own): choose a folder made for them, such as ~/Documents/For agents"
            )));
        }
        if !out.iter().any(|d| d == dir) {
            out.push(dir.to_owned());
        }
    }
    Ok(out)
}

/// Runs `f` on the blocking pool: file system work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(f).await.map_err(Error::internal)?
}

/// [`crate::config_file::edit`] on the blocking pool; its error told in one line (a parse
/// error's next lines quote the file, which may hold a token).
async fn edit(
    raw: &RawConfig,
    change: impl FnOnce(&mut toml_edit::DocumentMut) + Send + 'static,
) -> Result<crate::settings::Settings, String> {
    let raw = raw.clone();
    match tokio::task::spawn_blocking(move || crate::config_file::edit(&raw, change)).await {
        Ok(Ok(settings)) => Ok(settings),
        Ok(Err(e)) => Err(e.to_string().lines().next().unwrap_or_default().to_owned()),
        Err(e) => Err(e.to_string()),
    }
}

fn refusal(e: CheckError) -> Error {
    match e {
        CheckError::Malformed(_) => Error::validation(e.to_string()),
        CheckError::Refused => Error::new(ErrorCode::PlatformAuth, e.to_string()),
        CheckError::Unreachable(_) => Error::new(ErrorCode::PlatformSendFailed, e.to_string()),
    }
}

impl amc_daemon::DiscordSetup for Control {
    fn show(&self) -> amc_core::sender::BoxFuture<'_, Result<serde_json::Value, Error>> {
        Box::pin(async move { self.show().await.map(json) })
    }

    fn connect(&self, token: String) -> amc_core::sender::BoxFuture<'_, Result<serde_json::Value, Error>> {
        Box::pin(async move { self.connect(token).await.map(json) })
    }

    fn disconnect(&self) -> amc_core::sender::BoxFuture<'_, Result<serde_json::Value, Error>> {
        Box::pin(async move { self.disconnect().await.map(json) })
    }
}

fn json(state: DiscordSetupState) -> serde_json::Value {
    serde_json::to_value(state).unwrap_or_default()
}

impl amc_daemon::SettingsSetup for Control {
    fn settings(
        &self,
        change: Option<serde_json::Value>,
    ) -> amc_core::sender::BoxFuture<'_, Result<serde_json::Value, Error>> {
        Box::pin(async move {
            let change = match change {
                Some(v) => Some(
                    serde_json::from_value::<SettingsChange>(v)
                        .map_err(|e| Error::validation(format!("settings: {e}")))?,
                ),
                None => None,
            };
            self.settings(change).await.map(|s| serde_json::to_value(s).unwrap_or_default())
        })
    }
}
