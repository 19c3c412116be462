//! The core's configuration, checked: what the service layer and the daemon take. The
//! runtime (`amc-runtime`) reads flags, the environment and the config file into it, and
//! each source's settings into the source's own type.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::ratelimit::RateLimit;

/// The config file's name inside the data directory.
pub const CONFIG_FILE: &str = "config.toml";
/// How long a platform has to confirm a send, unless set (`send_timeout_seconds`).
const SEND_TIMEOUT_SECONDS: u64 = 200;
/// The largest attachment fetched on demand, in MiB, unless set (`attachment_fetch_limit_mb`).
const ATTACHMENT_FETCH_LIMIT_MB: u64 = 25;
/// How far back the readers rule looks, unless set (`readers_window_minutes`).
pub const READERS_WINDOW_MINUTES: u64 = 60;
/// The longest window the readers rule may be given, in minutes (a day).
pub const MAX_READERS_WINDOW_MINUTES: u64 = 24 * 60;

/// The core's configuration, checked (the runtime reads it from flags, the environment and
/// the config file, with each source's own settings).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where AMC keeps its database, socket and files.
    pub data_dir: PathBuf,
    /// A loopback TCP listener besides the socket, if asked for.
    pub listen: Option<SocketAddr>,
    /// Folders agents may send files from (absolute; the outbox folder first).
    pub attachment_dirs: Vec<PathBuf>,
    /// The per-channel send limit.
    pub rate_limit: RateLimit,
    /// How long a platform has to confirm a send.
    pub send_timeout: Duration,
    /// Whether sends go to the recording sender.
    pub test_sender: bool,
    /// The largest attachment fetched from a platform on demand.
    pub attachment_fetch_limit: u64,
    /// How far back the readers rule looks at what an agent was given (and no further
    /// than the agent's last send the person approved).
    pub readers_window: Duration,
}

/// The per-user data directory: `~/Library/Application Support/AMC` on macOS,
/// `$XDG_DATA_HOME/amc` (or `~/.local/share/amc`) elsewhere.
pub fn default_data_dir() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    if cfg!(target_os = "macos") {
        return home.map(|h| h.join("Library/Application Support/AMC"));
    }
    match std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        Some(d) => Some(PathBuf::from(d).join("amc")),
        None => home.map(|h| h.join(".local/share/amc")),
    }
}

/// The `amc` command of this install, as an absolute path where one exists, for MCP
/// hosts' settings (GUI hosts such as Claude Desktop do not see the shell's `PATH`):
/// `AMC_COMMAND` if set; else an `amc` beside the running program (AMC.app carries one
/// next to its own binary; `amc serve` is one); else the first `amc` on `PATH`; else
/// `amc` as it is.
pub fn amc_command() -> PathBuf {
    let usable = |p: &Path| p.is_file() && p.is_absolute();
    if let Some(explicit) = std::env::var_os("AMC_COMMAND").filter(|c| !c.is_empty()) {
        return PathBuf::from(explicit);
    }
    let beside = std::env::current_exe().ok().and_then(|exe| exe.parent().map(|d| d.join("amc")));
    if let Some(found) = beside.filter(|p| usable(p)) {
        return found;
    }
    std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("amc")).find(|p| usable(p)))
        .unwrap_or_else(|| PathBuf::from("amc"))
}

/// Expands a leading `~/` to the home directory.
pub fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

impl Config {
    /// AMC's defaults, with its data in `data_dir`: what the config file may change.
    pub fn new(data_dir: PathBuf) -> Self {
        Self {
            listen: None,
            attachment_dirs: vec![data_dir.join("outbox")],
            rate_limit: RateLimit::default(),
            send_timeout: Duration::from_secs(SEND_TIMEOUT_SECONDS),
            test_sender: false,
            attachment_fetch_limit: ATTACHMENT_FETCH_LIMIT_MB << 20,
            readers_window: Duration::from_secs(READERS_WINDOW_MINUTES * 60),
            data_dir,
        }
    }

    /// The database file.
    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join("amc.db")
    }

    /// The folder of the socket, kept at mode 0700.
    pub fn run_dir(&self) -> PathBuf {
        self.data_dir.join("run")
    }

    /// The daemon's Unix socket.
    pub fn socket_path(&self) -> PathBuf {
        self.run_dir().join("amc.sock")
    }

    /// The file holding the admin API's credential (mode 0600).
    pub fn admin_token_path(&self) -> PathBuf {
        self.data_dir.join("admin-token")
    }

    /// Where agents' attachments are copied before they are reviewed and sent.
    pub fn staging_dir(&self) -> PathBuf {
        self.data_dir.join("staged")
    }

    /// Where attachments fetched from a platform (Discord) are kept.
    pub fn attachment_cache_dir(&self) -> PathBuf {
        self.data_dir.join("cache").join("attachments")
    }

    /// Where the recording sender logs its sends.
    pub fn test_sender_log(&self) -> PathBuf {
        self.data_dir.join("test-sender.jsonl")
    }
}
