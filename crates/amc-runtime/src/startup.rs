//! What the two ways of starting AMC share: `amc serve` and the tray app take the same
//! flags, log the same way and stop on the same signals.

use std::path::PathBuf;

use amc_core::config::RawConfig;

/// The flags that start AMC.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct StartFlags {
    /// Also serve on this loopback address, e.g. 127.0.0.1:7878 (Host and Origin are checked)
    #[arg(long)]
    pub listen: Option<String>,
    /// Follow this iMessage database (chat.db) [default on macOS: ~/Library/Messages/chat.db]
    #[arg(long, env = "AMC_CHAT_DB")]
    pub chat_db: Option<PathBuf>,
    /// Send iMessages with this program instead of /usr/bin/osascript (a stand-in in tests)
    #[arg(long, env = "AMC_OSASCRIPT")]
    pub osascript: Option<PathBuf>,
    /// Deliver sends to a recording test sender (logged to test-sender.jsonl in the data
    /// directory) instead of iMessage and Discord (iMessage still sends through an
    /// --osascript named explicitly)
    #[arg(long, env = "AMC_TEST_SENDER")]
    pub test_sender: bool,
}

impl StartFlags {
    /// `raw` with these flags, and the Discord token from `AMC_DISCORD_TOKEN` if set.
    pub fn apply(self, raw: RawConfig) -> RawConfig {
        RawConfig {
            listen: self.listen,
            test_sender: self.test_sender,
            chat_db: self.chat_db,
            osascript: self.osascript,
            discord_token: amc_core::config::discord_token_from_env(),
            ..raw
        }
    }
}

/// Logs to stderr (stdout may be an MCP channel), in colour on a terminal, filtered by
/// [`crate::log_filter`] with `default` when `AMC_LOG` is unset.
pub fn init_logging(default: &str) {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(crate::log_filter(default))
        .init();
}

/// Resolves on SIGTERM or SIGINT (Ctrl-C). If the signals cannot be watched, never.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        tracing::warn!("cannot listen for SIGTERM and SIGINT");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    tracing::info!("stopping");
}
