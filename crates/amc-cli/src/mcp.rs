//! `amc mcp`: the stdio bridge that MCP hosts launch.

use std::path::PathBuf;

use clap::Args;

use amc_mcp::bridge::Bridge;
use amc_mcp::reach::{BridgeConfig, Problem, check};
use amc_runtime::RawConfig;

use crate::shown::Shown;

#[derive(Args)]
pub struct McpArgs {
    /// Read the agent's token from this file instead of AMC_BEARER_TOKEN
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// The agent's id
    #[arg(long, env = "AMC_AGENT_ID", hide_env_values = true)]
    agent_id: Option<String>,
    /// Serve the relay's tools (threads between agents) instead of the inbox's
    #[arg(long)]
    relay: bool,
    /// Do not push new messages to the host (Claude Code channel notifications); agents
    /// still read them with list_unread_messages or wait_for_unread_messages
    #[arg(long)]
    no_push: bool,
    /// How long, in milliseconds, a session must stay open having called a tool before what
    /// it was pushed is recorded as told (30 s); for tests
    #[arg(long, hide = true)]
    push_settle_ms: Option<u64>,
}

pub async fn run(raw: RawConfig, args: McpArgs) -> anyhow::Result<()> {
    let endpoint = if args.relay { "/mcp/relay" } else { "/mcp" }.to_owned();
    let config = raw.clone().validate();
    let socket = match &config {
        Ok(c) => c.core.socket_path(),
        Err(_) => RawConfig { data_dir: raw.data_dir.clone(), ..Default::default() }
            .data_dir
            .map(|d| d.join("run/amc.sock"))
            .unwrap_or_default(),
    };
    let token = match &args.token_file {
        Some(path) => std::fs::read_to_string(path)
            .map(|t| Some(t.trim().to_owned()))
            .map_err(|e| Problem::Config(format!("cannot read the token file {}: {e}", path.display()))),
        None => {
            Ok(std::env::var("AMC_BEARER_TOKEN").ok().filter(|t| !t.trim().is_empty()).map(|t| t.trim().to_owned()))
        }
    };
    let cfg = BridgeConfig {
        socket,
        endpoint,
        token: token.clone().ok().flatten(),
        agent_id: args.agent_id.filter(|a| !a.is_empty()),
        push: !args.no_push,
        push_settle: args
            .push_settle_ms
            .map_or(amc_mcp::claude_channel::working::SETTLE, std::time::Duration::from_millis),
    };
    // A broken setup is said at once, in one line, and every MCP request answers with it:
    // the host sees why rather than a process that died.
    let fixed = match (config, token) {
        (Err(e), _) => Some(Problem::Config(format!("AMC's configuration: {e}"))),
        (_, Err(p)) => Some(p),
        _ => None,
    };
    if let Some(problem) = fixed {
        eprintln!("amc mcp: {}", Shown(&problem.to_string()));
        Bridge::broken(cfg, problem).serve_stdio(host_stdio()).await?;
        return Ok(());
    }
    // Otherwise check now; a daemon started later is picked up by the next request.
    if let Err(problem) = check(&cfg).await {
        // A refusal carries the daemon's message; the host may show stderr in a terminal.
        eprintln!("amc mcp: {}", Shown(&problem.to_string()));
    } else if cfg.agent_id.is_none() && !args.relay {
        eprintln!(
            "amc mcp: AMC_AGENT_ID is not set: list_unread_messages, mark_read and get_message_context will answer AGENT_ID_REQUIRED"
        );
    }
    Bridge::new(cfg).serve_stdio(host_stdio()).await?;
    Ok(())
}

/// This process's stdin and stdout, as the bridge speaks MCP on them. A pipe or a socket
/// (what hosts give a server they start) is read and written by the runtime directly; a
/// terminal or a file goes through tokio's stdin and stdout, which hand every read and
/// write to a blocking thread: two thread hops per call that a host waits for.
fn host_stdio() -> (Box<dyn tokio::io::AsyncRead + Send + Unpin>, Box<dyn tokio::io::AsyncWrite + Send + Unpin>) {
    use std::os::fd::AsFd;
    let input: Box<dyn tokio::io::AsyncRead + Send + Unpin> = match direct(std::io::stdin().as_fd()) {
        Some(Direct::Pipe(fd)) => match tokio::net::unix::pipe::Receiver::from_owned_fd(fd) {
            Ok(r) => Box::new(r),
            Err(_) => Box::new(tokio::io::stdin()),
        },
        Some(Direct::Socket(s)) => Box::new(s),
        None => Box::new(tokio::io::stdin()),
    };
    let output: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = match direct(std::io::stdout().as_fd()) {
        Some(Direct::Pipe(fd)) => match tokio::net::unix::pipe::Sender::from_owned_fd(fd) {
            Ok(w) => Box::new(w),
            Err(_) => Box::new(tokio::io::stdout()),
        },
        Some(Direct::Socket(s)) => Box::new(s),
        None => Box::new(tokio::io::stdout()),
    };
    (input, output)
}

/// A standard stream the runtime can poll itself.
enum Direct {
    Pipe(std::os::fd::OwnedFd),
    Socket(tokio::net::UnixStream),
}

/// `fd` (stdin or stdout) as a pipe or a socket of its own (a duplicate), if it is one.
fn direct(fd: std::os::fd::BorrowedFd<'_>) -> Option<Direct> {
    use std::os::unix::fs::FileTypeExt;
    let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
    let kind = file.metadata().ok()?.file_type();
    let owned = std::os::fd::OwnedFd::from(file);
    if kind.is_fifo() {
        return Some(Direct::Pipe(owned));
    }
    if kind.is_socket() {
        let socket = std::os::unix::net::UnixStream::from(owned);
        socket.set_nonblocking(true).ok()?;
        return tokio::net::UnixStream::from_std(socket).ok().map(Direct::Socket);
    }
    None
}
