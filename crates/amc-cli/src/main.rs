//! `amc`: runs AMC's daemon headless and administers it from the command line.
//!
//! Logs go to stderr; stdout carries only command output. Text from the daemon, which
//! agents and other people wrote, reaches either only through `shown`.

/// `println!` for command output: when stdout is closed early (`amc … | head`), the
/// command stops quietly instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout(), $($arg)*) {
            $crate::output_failed(e);
        }
    }};
}

mod admin;
mod hosts;
mod mcp;
mod serve;
mod shown;
mod ui;

use std::path::PathBuf;

/// mimalloc: with many threads allocating small objects it is several times faster than
/// the system's allocator here, and it hands memory back once a burst is over. On Linux it
/// serves SQLite's allocations too (`override`, in Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};

/// AMC: lets your local AI agents read and answer the conversations you approve.
#[derive(Parser)]
#[command(name = "amc", version, about)]
struct Cli {
    /// Where AMC keeps its database and socket [default: the per-user data directory]
    #[arg(long, global = true, env = "AMC_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Print JSON instead of text (admin commands)
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon (REST and admin API on the local socket) until stopped
    Serve(serve::ServeArgs),
    /// Speak MCP on stdin/stdout for an MCP host, relaying to the running daemon
    Mcp(mcp::McpArgs),
    /// Add, list or revoke agents
    #[command(subcommand)]
    Agent(admin::AgentCmd),
    /// List, approve or block channels, and set their send policy
    #[command(subcommand)]
    Channel(admin::ChannelCmd),
    /// Review agents' sends: list, approve, reject, and the log of all sends
    #[command(subcommand)]
    Review(admin::ReviewCmd),
    /// One-time codes: say a message holds none, and see what you said
    #[command(subcommand)]
    Codes(admin::CodesCmd),
    /// Discord: connect the bot with its token (checked with Discord, kept in the Keychain), or
    /// disconnect it, while AMC runs
    #[command(subcommand)]
    Discord(admin::DiscordCmd),
    /// Approve from your phone: where AMC asks (your own iMessage conversation) and what
    #[command(subcommand)]
    Phone(admin::PhoneCmd),
    /// Hold every agent send until `amc resume`
    Pause,
    /// Let agents' sends follow each channel's send policy again
    Resume,
    /// Show the daemon's health and each source's state
    Status,
    /// Print the address of the UI for a browser (AMC serving with --listen), with the admin token
    Ui(ui::UiArgs),
    /// Check the setup (data folder, chat.db and Full Disk Access, Messages automation) and say how to fix it
    Doctor {
        /// The chat.db to check [default: as `amc serve` would use]
        #[arg(long)]
        chat_db: Option<PathBuf>,
        /// Also check what only this Mac can tell (chat.db's forms, file events, the
        /// Keychain item, AMC.app's signature, launch at login), in one table
        #[arg(long)]
        deep: bool,
        /// With --deep: send one test message through Messages to this address of yours
        #[arg(long, value_name = "YOUR-ADDRESS", requires = "deep")]
        send_test: Option<String>,
    },
}

/// Stdout failed: a reader that went away (`| head`) ends the command quietly and
/// successfully; anything else is said on stderr.
fn output_failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("amc: writing the output: {e}");
    std::process::exit(1);
}

/// A command that ran but reports a state the caller should see in its exit status
/// (`amc status` when a source is degraded), with nothing more to say on stderr.
#[derive(Debug)]
pub struct ExitStatus(pub u8);

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit status {}", self.0)
    }
}

impl std::error::Error for ExitStatus {}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // MCP hosts show the bridge's stderr to the person: keep it to what matters (the
    // bridge reports its own problems in one line; rmcp would repeat each one).
    let default_level = if matches!(cli.command, Command::Mcp(_)) { "warn,rmcp=error" } else { "info" };
    amc_runtime::init_logging(default_level);
    // The daemon runs on every core; a client (the MCP bridge above all, between one host
    // and the daemon) on one thread: each call then crosses no thread to be answered.
    let runtime = match cli.command {
        Command::Serve(_) | Command::Ui(_) => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
        _ => tokio::runtime::Builder::new_current_thread().enable_all().build(),
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("amc: cannot start: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let raw = amc_runtime::RawConfig { data_dir: cli.data_dir.clone(), ..Default::default() };
        match cli.command {
            Command::Serve(args) => serve::run(raw, args).await,
            Command::Mcp(args) => mcp::run(raw, args).await,
            Command::Agent(cmd) => admin::agent(raw, cli.json, cmd).await,
            Command::Channel(cmd) => admin::channel(raw, cli.json, cmd).await,
            Command::Review(cmd) => admin::review(raw, cli.json, cmd).await,
            Command::Codes(cmd) => admin::codes(raw, cli.json, cmd).await,
            Command::Phone(cmd) => admin::phone(raw, cli.json, cmd).await,
            Command::Discord(cmd) => admin::discord(raw, cli.json, cmd).await,
            Command::Pause => admin::pause(raw, cli.json, true).await,
            Command::Resume => admin::pause(raw, cli.json, false).await,
            Command::Status => admin::status(raw, cli.json).await,
            Command::Ui(args) => ui::run(raw, args).await,
            Command::Doctor { chat_db, deep: false, .. } => admin::doctor(raw, chat_db).await,
            Command::Doctor { chat_db, deep: true, send_test } => admin::doctor_deep(raw, chat_db, send_test).await,
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<ExitStatus>() {
            Some(ExitStatus(code)) => std::process::ExitCode::from(*code),
            None => {
                // The daemon's error messages can repeat what an agent or a person wrote.
                eprintln!("amc: {}", shown::Shown(&format!("{e:#}")));
                std::process::ExitCode::FAILURE
            }
        },
    }
}
