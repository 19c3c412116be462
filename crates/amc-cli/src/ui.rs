//! `amc ui`: the address of the tray UI for a browser, with the admin token in its
//! fragment (a fragment never reaches a server or a log), for a daemon serving on a
//! loopback port (`amc serve --listen`).

use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;

use amc_runtime::RawConfig;

#[derive(Args)]
pub struct UiArgs {
    /// The loopback address AMC serves on [default: where the running AMC listens]
    #[arg(long)]
    listen: Option<String>,
    /// Also open it in the default browser
    #[arg(long)]
    open: bool,
}

pub async fn run(raw: RawConfig, args: UiArgs) -> anyhow::Result<()> {
    let config = RawConfig { listen: args.listen, ..raw.clone() }.validate()?.core;
    // The running AMC knows where it listens, whichever way it was told.
    let running = match crate::admin::connect(raw).await {
        Ok(mut c) => c.get("/admin/listen").await.ok().map(|r| r.json()),
        Err(_) => None,
    };
    let served = running.as_ref().and_then(|v| crate::shown::verbatim(v, "listen").parse().ok());
    let Some(addr) = config.listen.or(served) else {
        bail!(
            "{}: start it with `amc serve --listen 127.0.0.1:7878` (or put listen = \"127.0.0.1:7878\" in \
             config.toml), then run `amc ui` again",
            if running.is_some() { "AMC is not serving the UI on a loopback port" } else { "AMC is not running" }
        );
    };
    let token_path = config.admin_token_path();
    let token = std::fs::read_to_string(&token_path)
        .with_context(|| format!("AMC is not running here: start it with `amc serve --listen {addr}` first"))?
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
