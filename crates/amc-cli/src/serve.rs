//! `amc serve`: the daemon, headless.

use clap::Args;

use amc_core::config::RawConfig;

#[derive(Args)]
pub struct ServeArgs {
    /// Also serve on this loopback address, e.g. 127.0.0.1:7878 (Host and Origin are checked)
    #[arg(long)]
    listen: Option<String>,
    /// Follow this iMessage database (chat.db) [default on macOS: ~/Library/Messages/chat.db]
    #[arg(long, env = "AMC_CHAT_DB")]
    chat_db: Option<std::path::PathBuf>,
    /// Send iMessages with this program instead of /usr/bin/osascript (a stand-in in tests)
    #[arg(long, env = "AMC_OSASCRIPT")]
    osascript: Option<std::path::PathBuf>,
    /// Deliver sends to a recording test sender (logged to test-sender.jsonl in the data
    /// directory) instead of iMessage and Discord (iMessage still sends through an
    /// --osascript named explicitly)
    #[arg(long, env = "AMC_TEST_SENDER")]
    test_sender: bool,
}

pub async fn run(raw: RawConfig, args: ServeArgs) -> anyhow::Result<()> {
    let raw = RawConfig {
        listen: args.listen,
        test_sender: args.test_sender,
        chat_db: args.chat_db,
        osascript: args.osascript,
        discord_token: amc_core::config::discord_token_from_env(),
        ..raw
    };
    amc_runtime::start(raw).await?.run_until(shutdown_signal()).await
}

async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
    tracing::info!("stopping");
}
