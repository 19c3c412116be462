//! Starts AMC as one unit: the core, the sources the configuration turns on, and the
//! daemon on its socket. `amc serve` runs it headless; the tray app runs it inside its
//! own process and reaches it through [`Running::in_process`].
//!
//! # Layout
//! - `lib.rs`: [`start`] and [`Running`]; the log filter that holds chatty libraries.
//! - `settings.rs`: flags, the environment and the config file, read into the core's
//!   configuration and each source's settings.
//! - `startup.rs`: the flags, logging and signals `amc serve` and the tray share.
#![deny(missing_docs)]

mod config_file;
mod control;
pub mod deep;
mod settings;
mod startup;

pub use control::{Control, DiscordSetupState};
pub use settings::{ConfigError, FileConfig, RawConfig, Settings, discord_token_from_env};
pub use startup::{StartFlags, init_logging, shutdown_signal};

use std::future::Future;
use std::sync::Arc;

use anyhow::Context;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use amc_core::model::Source;
use amc_core::sender::{RecordingSender, Senders};
use amc_core::service::Amc;
use amc_core::service::UpdateReporter;

/// Library targets that log whole messages, with the most verbose level each may log at
/// whatever `AMC_LOG` asks: rmcp logs requests and results (agents' tool arguments, relay
/// capability tokens, message bodies) at debug and, in its streamable HTTP transport,
/// whole responses at trace; the WebSocket library logs the Discord gateway's frames
/// (IDENTIFY carries the bot's token) and every message it receives; hyper and h2 log
/// connection frames at trace.
pub const HELD_TARGETS: &[(&str, &str)] = &[
    ("rmcp", "info"),
    ("tungstenite", "debug"),
    ("tokio_tungstenite", "debug"),
    ("hyper", "debug"),
    ("hyper_util", "debug"),
    ("h2", "debug"),
    ("reqwest", "debug"),
];

/// The log filter for AMC's binaries: `AMC_LOG` if set, else `default`; either way with
/// [`HELD_TARGETS`] held at their levels, even when `AMC_LOG` names them or a module of
/// theirs.
pub fn log_filter(default: &str) -> tracing_subscriber::EnvFilter {
    let spec = std::env::var("AMC_LOG").ok().filter(|s| !s.trim().is_empty()).unwrap_or_else(|| default.to_owned());
    tracing_subscriber::EnvFilter::try_new(held_spec(&spec))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(held_spec(default)))
}

/// `spec` less its directives for held targets, then each held target at its cap or at
/// the spec's own level, whichever says less: a cap never makes a library louder.
fn held_spec(spec: &str) -> String {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    let rank = |level: &str| LEVELS.iter().position(|l| l.eq_ignore_ascii_case(level.trim()));
    let is_held = |directive: &str| {
        let target = directive.split(['=', '[']).next().unwrap_or("").trim();
        HELD_TARGETS.iter().any(|(held, _)| target == *held || target.starts_with(&format!("{held}::")))
    };
    // The level for every target the spec does not name (a bare `info`, `debug`, …).
    let global = spec.split(',').filter_map(rank).next_back().unwrap_or(1);
    let kept = spec.split(',').filter(|d| !d.trim().is_empty() && !is_held(d));
    let held = HELD_TARGETS.iter().map(|(target, cap)| {
        // What the spec asks of the target itself (`rmcp=error`), else its global level.
        let asked = spec
            .split(',')
            .filter_map(|d| d.split_once('=').filter(|(t, _)| t.trim() == *target).and_then(|(_, l)| rank(l)))
            .next_back()
            .unwrap_or(global);
        format!("{target}={}", LEVELS[rank(cap).unwrap_or(1).min(asked)])
    });
    kept.map(str::to_owned).chain(held).collect::<Vec<_>>().join(",")
}

/// AMC, running.
pub struct Running {
    amc: Amc,
    in_process: amc_daemon::InProcess,
    stop: CancellationToken,
    daemon: JoinHandle<std::io::Result<()>>,
    /// The housekeeping, awaited at a stop before the last fold of the log.
    upkeep: JoinHandle<()>,
}

/// Validates the configuration, takes the data directory's lock and socket, starts the
/// sources and serves. Fails with a message for the person when another AMC (`amc serve`
/// or the tray app) already runs on the same data directory.
pub async fn start(raw: RawConfig) -> anyhow::Result<Running> {
    start_reporting(raw, &UpdateReporter::default()).await
}

/// [`start`], telling `updates` how far an update of the store is while a new release's
/// migrations run (the tray shows it).
pub async fn start_reporting(raw: RawConfig, updates: &UpdateReporter) -> anyhow::Result<Running> {
    // Kept to check a change the window makes to config.toml as start-up checks it.
    let raw_again = raw.clone();
    let settings = raw.validate()?;
    // The window's "Check this Mac" runs `amc doctor --deep`'s checks with these settings.
    let mac_checks: amc_daemon::MacChecks = {
        let settings = settings.clone();
        Arc::new(move || {
            let settings = settings.clone();
            Box::pin(async move {
                let checks = deep::checks(&settings, None).await;
                serde_json::Value::Array(checks.iter().map(deep::Check::json).collect())
            })
        })
    };
    let Settings { core: config, imessage: imsg, discord: discord_settings } = settings;
    startup::raise_open_files();
    amc_core::files::create_dir_all(&config.data_dir).map_err(|e| {
        anyhow::anyhow!(
            "AMC's data folder {} cannot be created ({e}); choose another with --data-dir or AMC_DATA_DIR",
            config.data_dir.display()
        )
    })?;
    // The lock first: a second AMC is refused before it asks anything of the Keychain.
    let socket = amc_daemon::bind_socket(&config.run_dir(), &config.socket_path())?;
    let mut senders = Senders::default();
    if config.test_sender {
        senders = Senders::recording(RecordingSender::with_log(config.test_sender_log()));
        if imsg.osascript_explicit {
            tracing::warn!(log = %config.test_sender_log().display(), "test sender: nothing reaches Discord; iMessage goes through the named osascript");
        } else {
            tracing::warn!(log = %config.test_sender_log().display(), "test sender: nothing reaches iMessage or Discord");
        }
    }
    // iMessage sends go through Messages when it can be reached; with the test sender
    // only if an osascript was named explicitly (a stand-in, in tests), so test mode
    // messages no one.
    // Switched in place: the window turns iMessage on, off or to another chat.db.
    let messages = !config.test_sender || imsg.osascript_explicit;
    let imessage_switch = if messages && imsg.osascript.is_some() {
        let (sender, switch) = amc_core::sender::SwitchedSender::new(Source::Imessage);
        senders = senders.with(Source::Imessage, sender);
        Some(switch)
    } else {
        None
    };
    // Discord's sender is switched in place: the window connects and disconnects the bot.
    let discord_switch = if config.test_sender {
        None
    } else {
        let (sender, switch) = amc_core::sender::SwitchedSender::new(Source::Discord);
        senders = senders.with(Source::Discord, sender);
        Some(switch)
    };
    let tcp = match config.listen {
        Some(addr) => Some(tokio::net::TcpListener::bind(addr).await.with_context(|| format!("listening on {addr}"))?),
        None => None,
    };
    // Every table is migrated (the relay's too) before any source writes: store work, on
    // the blocking pool (a new release's migrations may take a while).
    let updates = updates.clone();
    let listen = tcp.as_ref().and_then(|l| l.local_addr().ok());
    let (amc, daemon) = tokio::task::spawn_blocking(move || -> anyhow::Result<_> {
        let amc = Amc::start_reporting(config, senders, &updates).context("starting AMC")?;
        let daemon = amc_daemon::Daemon::new(amc.clone(), listen)
            .map(|d| d.with_mac_checks(mac_checks))
            .context("starting the daemon (the admin token, the relay's tables)")?;
        Ok((amc, daemon))
    })
    .await
    .context("starting AMC")??;
    let stop = CancellationToken::new();
    let imessage = control::Imessage::new(imsg, imessage_switch);
    let control =
        control::start(amc.clone(), raw_again, discord_settings, discord_switch, imessage, stop.clone()).await;
    let daemon = daemon.with_discord_setup(Arc::new(control.clone())).with_settings(Arc::new(control));
    let upkeep = {
        let (amc, stop) = (amc.clone(), stop.clone());
        tokio::spawn(async move { amc.upkeep(stop.cancelled()).await })
    };
    // Approvals from the person's phone: ends with the rest (nothing to wait for).
    {
        let (amc, stop) = (amc.clone(), stop.clone());
        tokio::spawn(async move { amc.run_phone(stop.cancelled()).await });
    }
    let in_process = daemon.in_process();
    let served = {
        let stop = stop.clone();
        tokio::spawn(daemon.serve(socket, tcp, async move { stop.cancelled().await }))
    };
    Ok(Running { amc, in_process, stop, daemon: served, upkeep })
}

impl Running {
    /// The core, for wiring (the tray reads counts and follows events).
    pub fn amc(&self) -> &Amc {
        &self.amc
    }

    /// The daemon, for requests from inside this process, acting as the person.
    pub fn in_process(&self) -> amc_daemon::InProcess {
        self.in_process.clone()
    }

    /// Runs until `shutdown` resolves (or the daemon stops by itself), then stops
    /// everything and waits for requests in flight.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let Self { amc, stop, mut daemon, upkeep, .. } = self;
        let served = tokio::select! {
            () = shutdown => {
                stop.cancel();
                daemon.await
            }
            r = &mut daemon => {
                stop.cancel();
                r
            }
        };
        // A clean stop leaves no write-ahead log beside the database: folded once the
        // housekeeping's last round, which may write, is over.
        let _ = upkeep.await;
        if let Err(e) = amc.fold_wal(true).await {
            tracing::warn!(error = %e, "could not checkpoint the database at stop");
        }
        served.context("the daemon task failed")??;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn held_targets_stay_held_whatever_amc_log_asks() {
        let spec = super::held_spec("trace,rmcp::transport::streamable_http_server=trace,hyper=trace,amc_core=debug");
        assert!(spec.starts_with("trace,amc_core=debug,rmcp=info,"), "{spec}");
        assert!(!spec.contains("=trace"), "{spec}");
        let filter = tracing_subscriber::EnvFilter::try_new(&spec).expect("a valid filter");
        assert!(filter.to_string().contains("rmcp=info"), "{filter}");
        // A quieter spec keeps the libraries as quiet as itself.
        let quiet = super::held_spec("warn");
        assert!(quiet.contains("rmcp=warn") && quiet.contains("hyper=warn"), "{quiet}");
        assert!(super::held_spec("amc_core=debug").contains("rmcp=error"), "no bare level: errors only");
        assert!(super::held_spec("warn,rmcp=error").contains("rmcp=error"), "a quieter target stays quiet");
    }
}
