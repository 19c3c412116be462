//! `amc ui`: the address of the tray UI for a browser, with the admin token in its
//! fragment (a fragment never reaches a server or a log), for a daemon serving on a
//! loopback port (`amc serve --listen`).
#![allow(clippy::print_stdout)]

use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;

use amc_core::config::RawConfig;

#[derive(Args)]
pub struct UiArgs {
    /// The loopback address AMC serves on [default: `listen` in config.toml]
    #[arg(long)]
    listen: Option<String>,
    /// Also open it in the default browser
    #[arg(long)]
    open: bool,
}

pub async fn run(raw: RawConfig, args: UiArgs) -> anyhow::Result<()> {
    let config = RawConfig { listen: args.listen, ..raw }.validate()?;
    let Some(addr) = config.listen else {
        bail!(
            "the UI is served on a loopback port: start AMC with `amc serve --listen 127.0.0.1:7878` \
             (or put listen = \"127.0.0.1:7878\" in config.toml), then run `amc ui --listen 127.0.0.1:7878`"
        );
    };
    let token_path = config.admin_token_path();
    let token = std::fs::read_to_string(&token_path)
        .with_context(|| {
            format!("no admin token at {}: start AMC with `amc serve --listen {addr}` first", token_path.display())
        })?
        .trim()
        .to_owned();
    match tokio::time::timeout(Duration::from_secs(3), tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(_)) => {}
        _ => bail!("nothing answers on {addr}: start AMC with `amc serve --listen {addr}`"),
    }
    let url = format!("http://{addr}/ui/#token={token}");
    say!("{url}");
    if args.open {
        open(&url)?;
    }
    Ok(())
}

/// Hands the URL to the desktop's browser.
fn open(url: &str) -> anyhow::Result<()> {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let status = std::process::Command::new(opener)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("could not run {opener}; open the address above yourself"))?;
    if !status.success() {
        bail!("{opener} failed ({status}); open the address above yourself");
    }
    Ok(())
}
