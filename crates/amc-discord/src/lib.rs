//! AMC's Discord source: a bot (serenity) on Discord's gateway. Every guild channel and
//! DM it sees becomes a pending channel; messages, edits, deletions and reactions go to
//! the core's ingest front door; each (re)connection and each approval "with history" fetches what the
//! gateway did not deliver; agents' sends go out as the bot. The only crate that knows
//! Discord.
//!
//! # Layout
//! - [`convert`]: Discord's objects in AMC's terms.
//! - [`gateway`]: the event handler, health, approvals followed.
//! - `shared`: what the handler and the history fetches share.
//! - `history`: history fetched through REST, bounded and paginated.
//! - `check`: the periodic check that nothing was missed (`last_message_id`).
//! - [`send`]: sends, Discord's errors, attachments fetched on demand.
//! - [`settings`]: the source's settings (`DiscordSettings`), as the runtime reads them.
//! - [`token`]: the bot's token from the configuration or the system's secret store.
//! - [`bot`]: a token checked with Discord before it is kept; the bot's invite link.
//! - `fake` (feature `fake`): a local stand-in for Discord (REST and gateway), for tests
//!   and benchmarks; never in AMC's binaries.
#![deny(missing_docs)]

pub mod bot;
mod check;
pub mod convert;
#[cfg(feature = "fake")]
pub mod fake;
pub mod gateway;
mod history;
pub mod send;
pub mod settings;
mod shared;
pub mod token;

use std::sync::Arc;

use amc_core::model::Source;
use amc_core::service::{Amc, SourceState, SourceStatus};
use serenity::all::{ClientBuilder, UserId};
use serenity::gateway::GatewayError;
use serenity::http::HttpBuilder;
use settings::{DiscordSettings, Secret};
use tokio_util::sync::CancellationToken;

pub use send::DiscordSender;

/// The Discord source, ready to run: its sender goes into AMC's senders before AMC
/// starts, then [`Discord::run`] connects the bot.
pub struct Discord {
    settings: DiscordSettings,
    token: Secret,
    sender: Arc<DiscordSender>,
    /// serenity's HTTPS client, made once (its proxy and roots).
    client: reqwest::Client,
}

impl Discord {
    /// Prepares the source with a resolved token; fails when `discord_ca_file` cannot be
    /// read.
    pub fn new(settings: DiscordSettings, token: Secret) -> Result<Self, String> {
        let sender =
            Arc::new(DiscordSender::new(&settings.api_url, &token, settings.upload_limit, web_client(&settings)?)?);
        let client = web_client(&settings)?.build().map_err(|e| format!("could not set up HTTPS for Discord: {e}"))?;
        Ok(Self { settings, token, sender, client })
    }

    /// The sender agents' messages go through.
    pub fn sender(&self) -> Arc<DiscordSender> {
        self.sender.clone()
    }

    /// Connects the bot and keeps it connected until `stop`: a failed connection is
    /// reported in the source's health and tried again with a growing pause.
    pub async fn run(self, amc: Amc, stop: CancellationToken) {
        let http = Arc::new(self.http());
        let person = self.settings.user_id.as_deref().and_then(|id| id.parse::<u64>().ok()).map(UserId::new);
        let shared = Arc::new(shared::Shared::new(amc.clone(), http, self.settings.history_limit, person));
        // The person's own account: their DM with the bot is where AMC may ask them.
        let own: Vec<String> = person.map(|p| p.to_string()).into_iter().collect();
        if let Err(e) = amc.set_own_addresses(Source::Discord, own).await {
            tracing::warn!(error = %e, "could not record the person's Discord account");
        }
        let (queue, events) = tokio::sync::mpsc::unbounded_channel();
        let consumer = tokio::spawn(gateway::consume(shared.clone(), events));
        tokio::spawn(gateway::follow_approvals(shared.clone(), stop.clone()));
        tokio::spawn(check::run(shared.clone(), self.settings.check_period, stop.clone()));
        // The bot runs on a thread with a single-threaded runtime of its own: serenity
        // starts a task per event, and there they start in the order they were spawned,
        // which keeps the gateway's order in the queue (see `gateway::Handler`).
        let (done, finished) = tokio::sync::oneshot::channel();
        let bot = std::thread::Builder::new().name("amc-discord".into()).spawn(move || {
            match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(rt) => rt.block_on(self.connect(shared, queue, stop)),
                Err(e) => {
                    shared.set_status(SourceState::Degraded, Some(format!("could not start the Discord bot: {e}")))
                }
            }
            let _ = done.send(());
        });
        if bot.is_ok() {
            let _ = finished.await;
        }
        let _ = consumer.await;
        amc.set_source_status(Source::Discord, SourceStatus::new(SourceState::Disabled, Some("stopped".into())));
    }

    async fn connect(
        self,
        shared: Arc<shared::Shared>,
        queue: tokio::sync::mpsc::UnboundedSender<gateway::Incoming>,
        stop: CancellationToken,
    ) {
        let mut attempt = 0;
        while !stop.is_cancelled() {
            shared.set_status(SourceState::Degraded, Some("connecting to Discord".into()));
            let client = ClientBuilder::new_with_http(self.http(), gateway::intents())
                .event_handler(gateway::Handler { queue: queue.clone() });
            let mut client = match client.await {
                Ok(c) => c,
                Err(e) => {
                    shared.set_status(SourceState::Degraded, Some(format!("could not start the Discord bot: {e}")));
                    if pause(&stop, attempt).await {
                        return;
                    }
                    attempt += 1;
                    continue;
                }
            };
            let manager = client.shard_manager.clone();
            let began = std::time::Instant::now();
            let outcome = tokio::select! {
                r = client.start() => Some(r),
                () = stop.cancelled() => None,
            };
            manager.shutdown_all().await;
            let Some(result) = outcome else { return };
            let reason = match result {
                Ok(()) => "the Discord connection ended".to_owned(),
                Err(serenity::Error::Gateway(GatewayError::InvalidAuthentication)) => {
                    "Discord refused the bot's token: check it in AMC's settings (Discord Developer Portal → \
                     your application → Bot → Reset Token)"
                        .to_owned()
                }
                Err(serenity::Error::Gateway(GatewayError::DisallowedGatewayIntents)) => {
                    shared::CONTENT_INTENT_FIX.to_owned()
                }
                Err(e) => format!("the Discord connection failed: {e}"),
            };
            shared.set_status(SourceState::Degraded, Some(reason));
            if began.elapsed() > std::time::Duration::from_secs(60) {
                // It ran for a while: this is a new failure, not the next of a series.
                attempt = 0;
            }
            if pause(&stop, attempt).await {
                return;
            }
            attempt += 1;
        }
    }

    fn http(&self) -> serenity::http::Http {
        http(&self.settings, self.client.clone(), &self.token)
    }
}

/// serenity's REST client, with its rate limiter on: it sends every request to
/// `https://discord.com` (through `discord_proxy` if set). Only a stand-in on this
/// machine is reached otherwise, with the limiter off, since serenity's limiter ignores
/// its proxy setting (config refuses any other host).
fn http(settings: &DiscordSettings, client: reqwest::Client, token: &Secret) -> serenity::http::Http {
    let builder = HttpBuilder::new(token.expose()).client(client);
    if settings.stand_in {
        builder.proxy(settings.api_url.clone()).ratelimiter_disabled(true).build()
    } else {
        builder.build()
    }
}

/// The HTTPS client for Discord's REST API and CDN: rustls, through `discord_proxy` if
/// set, trusting `discord_ca_file` besides the usual roots.
fn web_client(settings: &DiscordSettings) -> Result<reqwest::ClientBuilder, String> {
    let mut builder = reqwest::Client::builder().use_rustls_tls();
    if let Some(proxy) = &settings.proxy {
        let proxy = reqwest::Proxy::all(proxy).map_err(|e| format!("discord_proxy {proxy:?}: {e}"))?;
        builder = builder.proxy(proxy);
    }
    if let Some(path) = &settings.ca_file {
        let pem = std::fs::read(path).map_err(|e| format!("could not read discord_ca_file {}: {e}", path.display()))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem)
            .map_err(|e| format!("discord_ca_file {} holds no PEM certificate: {e}", path.display()))?;
        if certs.is_empty() {
            return Err(format!("discord_ca_file {} holds no PEM certificate", path.display()));
        }
        for cert in certs {
            builder = builder.add_root_certificate(cert);
        }
    }
    Ok(builder)
}

/// Sleeps before the next attempt; true if AMC is stopping.
async fn pause(stop: &CancellationToken, attempt: u32) -> bool {
    tokio::select! {
        () = stop.cancelled() => true,
        () = tokio::time::sleep(gateway::backoff(attempt)) => false,
    }
}
