//! Sending through Messages with `osascript`, confirmed in chat.db.
//!
//! The AppleScript is fixed; the chat id, the text and the file paths reach it only as
//! `argv` (`on run argv`), so an agent's text is never AppleScript source. A send is
//! confirmed by the `is_from_me` row Messages writes to chat.db (same chat, same text,
//! after the call began); its guid becomes the message's platform id. No row in time:
//! the outcome is unknown, and AMC does not retry.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use amc_core::sender::{BoxFuture, Delivery, OutgoingSend, SendError, Sender};

use crate::chatdb::ChatDb;

/// The script `osascript` runs. Nothing of a message is ever part of it.
pub const SEND_SCRIPT: &[&str] = &[
    "on run argv",
    "set chatId to item 1 of argv",
    "set msgText to item 2 of argv",
    "tell application \"Messages\"",
    "set targetChat to chat id chatId",
    "if msgText is not \"\" then send msgText to targetChat",
    "repeat with i from 3 to (count of argv)",
    "send (POSIX file (item i of argv)) to targetChat",
    "end repeat",
    "end tell",
    "end run",
];

/// Messages' own limit on an attachment (iMessage takes about 100 MB).
pub const MAX_ATTACHMENT_BYTES: u64 = 100 * 1024 * 1024;

/// How the Messages sender is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessagesConfig {
    /// The `osascript` program (a stand-in in tests).
    pub osascript: PathBuf,
    /// chat.db, where sends are confirmed.
    pub chat_db: PathBuf,
    /// A folder Messages may read, where attachments are copied before sending.
    pub attachments_dir: PathBuf,
    /// How long Messages has to record the send.
    pub confirm_timeout: Duration,
}

/// Delivers agents' sends to iMessage chats.
pub struct MessagesSender {
    cfg: MessagesConfig,
    /// One send at a time per chat, so two sends of the same text cannot both take the
    /// row Messages writes for one of them.
    chats: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<tokio::sync::Mutex<()>>>>,
}

impl MessagesSender {
    /// A sender with `cfg`.
    pub fn new(cfg: MessagesConfig) -> Self {
        Self { cfg, chats: std::sync::Mutex::new(std::collections::HashMap::new()) }
    }

    async fn deliver(&self, msg: OutgoingSend) -> Result<Delivery, SendError> {
        let lock = {
            let mut chats = self.chats.lock().unwrap_or_else(|p| p.into_inner());
            chats.entry(msg.channel_platform_id.clone()).or_default().clone()
        };
        let _one_at_a_time = lock.lock().await;
        let started_ms = amc_core::time::now_ms();
        let chat_db = self.cfg.chat_db.clone();
        let before = tokio::task::spawn_blocking(move || ChatDb::open(&chat_db).and_then(|db| db.max_rowid()))
            .await
            .map_err(|e| SendError::Failed(e.to_string()))?
            .map_err(|e| SendError::Failed(format!("cannot read chat.db to confirm sends: {e}")))?;
        let files = {
            let (this_cfg, m) = (self.cfg.clone(), msg.clone());
            tokio::task::spawn_blocking(move || copy_attachments(&this_cfg, &m))
                .await
                .map_err(|e| SendError::Failed(e.to_string()))??
        };
        let mut cmd = tokio::process::Command::new(&self.cfg.osascript);
        for line in SEND_SCRIPT {
            cmd.arg("-e").arg(line);
        }
        cmd.arg(&msg.channel_platform_id).arg(&msg.text).args(&files);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).kill_on_drop(true);
        let out = tokio::time::timeout(self.cfg.confirm_timeout, cmd.output())
            .await
            .map_err(|_| SendError::Unknown("osascript did not finish in time".into()))?
            .map_err(|e| SendError::Failed(format!("cannot run {}: {e}", self.cfg.osascript.display())))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if stderr.contains("-1743") {
                return Err(SendError::Auth(
                    "macOS did not let AMC control Messages (-1743): open System Settings → Privacy & Security → \
                     Automation, and turn on Messages for AMC (or the terminal running amc serve)"
                        .into(),
                ));
            }
            if stderr.contains("-1728") {
                return Err(SendError::Failed(format!("Messages has no such chat: {}", stderr.trim())));
            }
            // Any other failure may come after Messages took the text (a file that failed,
            // an AppleEvent timeout): what chat.db says decides, and never "not sent" blindly.
            return match self.confirm(&msg, before, started_ms).await {
                Ok(d) => Ok(d),
                Err(_) => Err(SendError::Unknown(format!(
                    "osascript failed ({}) and Messages did not record the send; check the conversation",
                    stderr.trim()
                ))),
            };
        }
        self.confirm(&msg, before, started_ms).await
    }

    /// Waits for Messages' `is_from_me` row of this send.
    async fn confirm(&self, msg: &OutgoingSend, before: i64, started_ms: i64) -> Result<Delivery, SendError> {
        let deadline = Instant::now() + self.cfg.confirm_timeout;
        loop {
            let (chat_db, guid, text) = (self.cfg.chat_db.clone(), msg.channel_platform_id.clone(), msg.text.clone());
            let found = tokio::task::spawn_blocking(move || find_sent(&chat_db, before, started_ms, &guid, &text))
                .await
                .map_err(|e| SendError::Unknown(e.to_string()))?;
            if let Some(delivery) = found {
                return Ok(delivery);
            }
            if Instant::now() > deadline {
                return Err(SendError::Unknown(
                    "Messages took the send but did not record it in time; check the conversation".into(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Copies attachments into the folder Messages may read.
fn copy_attachments(cfg: &MessagesConfig, msg: &OutgoingSend) -> Result<Vec<PathBuf>, SendError> {
    if msg.attachments.is_empty() {
        return Ok(Vec::new());
    }
    let dir = cfg.attachments_dir.join(&msg.send_id);
    std::fs::create_dir_all(&dir).map_err(|e| SendError::Failed(format!("attachments folder: {e}")))?;
    msg.attachments
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if a.size_bytes > MAX_ATTACHMENT_BYTES {
                return Err(SendError::TooLarge(format!("{} is over Messages' limit", a.filename)));
            }
            let dest = dir.join(format!("{i}-{}", a.filename));
            std::fs::copy(&a.path, &dest).map_err(|e| SendError::Failed(format!("copying {}: {e}", a.filename)))?;
            Ok(dest)
        })
        .collect()
}

/// The first row from the person in chat `guid` after `before` with this text.
fn find_sent(chat_db: &Path, before: i64, started_ms: i64, guid: &str, text: &str) -> Option<Delivery> {
    let db = ChatDb::open(chat_db).ok()?;
    let chats = db.chats().ok()?;
    let mut after = before;
    loop {
        let rows = db.messages_after(after, 1000).ok()?;
        let last = rows.last().map(|m| i64::from(m.rowid))?;
        let hit = rows.into_iter().find_map(|m| {
            let in_chat = m.chat_id.and_then(|c| chats.get(&c)).is_some_and(|c| c.guid == guid);
            let same_text = m.text.as_deref().unwrap_or("").replace('\u{FFFC}', "") == text;
            // Written after the call began (a second of slack for clocks).
            let sent_at = crate::convert::unix_ms(m.date);
            let in_time = sent_at.is_none_or(|t| t >= started_ms - 1000);
            (m.is_from_me && in_chat && same_text && in_time).then(|| Delivery {
                platform_id: m.guid.clone(),
                sent_at: sent_at.unwrap_or_else(amc_core::time::now_ms),
            })
        });
        if hit.is_some() {
            return hit;
        }
        after = last;
    }
}

impl Sender for MessagesSender {
    fn max_attachment_bytes(&self) -> u64 {
        MAX_ATTACHMENT_BYTES
    }

    fn send(&self, msg: OutgoingSend) -> BoxFuture<'_, Result<Delivery, SendError>> {
        Box::pin(self.deliver(msg))
    }
}
