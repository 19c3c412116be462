//! The iMessage source's settings, as the runtime reads them from flags and the config
//! file.

use std::path::PathBuf;
use std::time::Duration;

/// How the iMessage source reads chat.db and sends through Messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImessageSettings {
    /// The chat.db to follow (`None`: the source is off).
    pub chat_db: Option<PathBuf>,
    /// The fallback check's period.
    pub poll: Duration,
    /// How long between sweeps of the whole of chat.db with no sign that one is needed.
    pub sweep_every: Duration,
    /// The program that sends through Messages (`None`: sends are off).
    pub osascript: Option<PathBuf>,
    /// Whether the person named `osascript` (with the test sender, iMessage then still
    /// goes through it).
    pub osascript_explicit: bool,
    /// The folder attachments are put in for Messages to read.
    pub attachments_dir: PathBuf,
    /// How long a send may take Messages to settle.
    pub confirm: Duration,
    /// Messages older than this that arrive late are counted as such (`None`: never).
    pub late_horizon: Option<Duration>,
    /// Contacts databases to name senders from (`None`: the usual places).
    pub contacts: Option<Vec<PathBuf>>,
}

/// How far back a message may be sent and still not count as late, unless set.
pub const LATE_HORIZON: Duration = Duration::from_secs(7 * 86_400);
