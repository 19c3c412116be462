//! `amc serve`: the daemon, headless.

use anyhow::Context;
use clap::Args;

use amc_core::config::RawConfig;
use amc_core::model::Source;
use amc_core::sender::{RecordingSender, Senders};
use amc_core::service::Amc;
use amc_imessage::send::{MessagesConfig, MessagesSender};
use amc_imessage::watch::WatchConfig;
use tokio_util::sync::CancellationToken;

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
    let config = RawConfig {
        listen: args.listen,
        test_sender: args.test_sender,
        chat_db: args.chat_db,
        osascript: args.osascript,
        ..raw
    }
    .validate()?;
    let mut senders = Senders::default();
    if config.test_sender {
        senders = Senders::recording(RecordingSender::with_log(config.test_sender_log()));
        if config.osascript_explicit {
            tracing::warn!(log = %config.test_sender_log().display(), "test sender: nothing reaches Discord; iMessage goes through the named osascript");
        } else {
            tracing::warn!(log = %config.test_sender_log().display(), "test sender: nothing reaches iMessage or Discord");
        }
    }
    // iMessage sends go through Messages when it can be reached; with --test-sender only
    // if an osascript was named explicitly (a stand-in, in tests), so test mode messages no one.
    let messages = !config.test_sender || config.osascript_explicit;
    if let (true, Some(osascript), Some(chat_db)) = (messages, config.osascript.clone(), config.chat_db.clone()) {
        let sender = MessagesSender::new(MessagesConfig {
            osascript,
            chat_db,
            attachments_dir: config.imessage_attachments_dir.clone(),
            confirm_timeout: config.imessage_confirm,
        });
        senders = senders.with(Source::Imessage, std::sync::Arc::new(sender));
    }
    let socket = amc_daemon::bind_socket(&config.run_dir(), &config.socket_path())?;
    let tcp = match config.listen {
        Some(addr) => Some(tokio::net::TcpListener::bind(addr).await.with_context(|| format!("listening on {addr}"))?),
        None => None,
    };
    let contacts = config.imessage_contacts.clone().unwrap_or_else(amc_imessage::contacts::Contacts::default_paths);
    let imessage = config.chat_db.clone().map(|chat_db| WatchConfig { chat_db, poll: config.chat_db_poll, contacts });
    let amc = Amc::start(config, senders).context("starting AMC")?;
    let stop = CancellationToken::new();
    if let Some(cfg) = imessage {
        tracing::info!(chat_db = %cfg.chat_db.display(), "following iMessage");
        tokio::spawn(amc_imessage::watch::run(amc.clone(), cfg, stop.clone()));
    }
    amc_daemon::serve(amc, socket, tcp, shutdown_signal()).await?;
    stop.cancel();
    Ok(())
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
