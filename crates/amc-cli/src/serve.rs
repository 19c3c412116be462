//! `amc serve`: the daemon, headless.

use clap::Args;

use amc_runtime::RawConfig;

#[derive(Args)]
pub struct ServeArgs {
    #[command(flatten)]
    start: amc_runtime::StartFlags,
}

pub async fn run(raw: RawConfig, args: ServeArgs) -> anyhow::Result<()> {
    amc_runtime::start(args.start.apply(raw)).await?.run_until(amc_runtime::shutdown_signal()).await
}
