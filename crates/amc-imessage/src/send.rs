//! Sending through Messages with `osascript`, confirmed in chat.db.
//!
//! The AppleScript is fixed; the text, the chat ids and the file paths reach it only as
//! `argv` (`on run argv`), so an agent's text is never AppleScript source.
//!
//! **Addressing.** A channel names its conversation without a service (`any;-;<handle>`,
//! `any;+;chat<id>`: `convert::conversation_id`), so the script tries, in order, the
//! guid of each chat chat.db holds for that conversation, the chat with the newest
//! message first ([`addressing`]), then, for a one-to-one chat, the person as a
//! `participant` of the account of the service the conversation last used, then of the
//! other one (iMessage, SMS). A chat id is never made up: `chat id` with a guid chat.db
//! does not hold is refused (-1728) on macOS 26. docs/macos.md gives the public source of
//! each form.
//!
//! **Confirmation.** Messages writes a row per part it sends (the text, each file) with
//! `is_sent = 0`, then sets `is_sent` (and `is_delivered`) or `error` (25: "Not Delivered").
//! A send is `sent` once every part is, `failed` (with the reason) if Messages reports an
//! error on any, and otherwise `unknown` when the window closes; AMC never retries. The
//! window starts when osascript returns, so launching Messages does not eat into it. Text is
//! compared after folding what Messages may change (curly quotes, zero-width joiners,
//! variation selectors, whitespace).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use amc_core::sender::{BoxFuture, Delivery, OutgoingSend, SendError, Sender};

use crate::chatdb::{ChatDb, SentRow};

/// The script `osascript` runs. Nothing of a message is ever part of it. argv: the text,
/// the handle of a one-to-one chat (empty for a group), the service whose account the
/// participant fallback tries first (`SMS`, or anything else for iMessage), how many chat
/// ids follow, the chat ids to try in order, then the files.
pub const SEND_SCRIPT: &[&str] = &[
    "on run argv",
    "set msgText to item 1 of argv",
    "set handleId to item 2 of argv",
    "set firstService to item 3 of argv",
    "set idCount to (item 4 of argv) as integer",
    "set targetChat to missing value",
    "tell application \"Messages\"",
    "repeat with i from 5 to (4 + idCount)",
    "if targetChat is missing value then",
    "try",
    "set candidate to chat id (item i of argv)",
    "get id of candidate",
    "set targetChat to candidate",
    "end try",
    "end if",
    "end repeat",
    "if targetChat is missing value and handleId is not \"\" and firstService is \"SMS\" then",
    "try",
    "set targetChat to participant handleId of (1st account whose service type = SMS)",
    "end try",
    "end if",
    "if targetChat is missing value and handleId is not \"\" then",
    "try",
    "set targetChat to participant handleId of (1st account whose service type = iMessage)",
    "end try",
    "end if",
    "if targetChat is missing value and handleId is not \"\" and firstService is not \"SMS\" then",
    "try",
    "set targetChat to participant handleId of (1st account whose service type = SMS)",
    "end try",
    "end if",
    "if targetChat is missing value then",
    "error \"Messages has no chat for this conversation\" number -1728",
    "end if",
    "if msgText is not \"\" then",
    "send msgText to targetChat",
    "end if",
    "repeat with i from (5 + idCount) to (count of argv)",
    "send (POSIX file (item i of argv)) to targetChat",
    "end repeat",
    "end tell",
    "end run",
];

/// How long osascript may take: Messages may have to launch first, and an Apple Event
/// times out after two minutes.
const OSASCRIPT_TIMEOUT: Duration = Duration::from_secs(130);

/// The account a one-to-one chat's `participant` fallback tries first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Account {
    /// `1st account whose service type = iMessage`, then SMS.
    IMessage,
    /// `1st account whose service type = SMS`, then iMessage: the conversation went on
    /// by SMS, and a person who left iMessage is not sent an iMessage that never arrives.
    Sms,
}

/// How a chat is addressed: the chat ids to try in order, and the person's handle for a
/// one-to-one chat (the `participant` fallback).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addressing {
    /// `chat id` forms, in order: guids chat.db holds, never made up.
    pub chat_ids: Vec<String>,
    /// The person, for a one-to-one chat.
    pub handle: Option<String>,
    /// Which account the participant fallback tries first.
    pub first_account: Account,
    /// `chat.chat_identifier` of the conversation: what its rows are matched by.
    pub identifier: String,
}

impl Addressing {
    /// What was tried, for the person: each chat id, then the participant.
    fn tried(&self) -> String {
        let mut tried: Vec<String> = self.chat_ids.iter().map(|id| format!("chat id {id}")).collect();
        if let Some(handle) = &self.handle {
            tried.push(format!("{handle} as a participant"));
        }
        if tried.is_empty() {
            return "nothing: chat.db holds no chat for this conversation".to_owned();
        }
        tried.join(", ")
    }
}

/// `chat.chat_identifier` of the conversation a channel's guid names (`…;-;<handle>`,
/// `…;+;chat<id>`).
pub fn identifier_of(guid: &str) -> &str {
    crate::convert::guid_parts(guid).map_or(guid, |(_, _, identifier)| identifier)
}

/// The addressing of the conversation a channel's guid names (`any;-;<handle>`,
/// `any;+;chat<id>`), given the guids chat.db holds for it (`ChatDb::chat_guids`, the
/// chat with the newest message first) and the service of its newest message.
pub fn addressing(guid: &str, chats: &[String], last_service: Option<&str>) -> Addressing {
    let first_account =
        if last_service.is_some_and(|s| s.eq_ignore_ascii_case("SMS")) { Account::Sms } else { Account::IMessage };
    let Some((_, kind, identifier)) = crate::convert::guid_parts(guid) else {
        return Addressing {
            chat_ids: vec![guid.to_owned()],
            handle: None,
            first_account,
            identifier: guid.to_owned(),
        };
    };
    // `…;-;chat…` is a group addressed as one person: Messages may start an empty chat with
    // a handle named `chat…` (openclaw/imsg#90). Never tried, and no participant either.
    let ghost = |kind: &str, identifier: &str| kind == "-" && identifier.starts_with("chat");
    let handle = (kind == "-" && !ghost(kind, identifier)).then(|| identifier.to_owned());
    let chat_ids = chats
        .iter()
        .filter(|c| {
            crate::convert::guid_parts(c).is_some_and(|(_, k, id)| k == kind && id == identifier && !ghost(k, id))
        })
        .cloned()
        .collect();
    Addressing { chat_ids, handle, first_account, identifier: identifier.to_owned() }
}

/// The osascript arguments after `-e` lines: see [`SEND_SCRIPT`].
pub fn script_args(text: &str, addressing: &Addressing, files: &[PathBuf]) -> Vec<std::ffi::OsString> {
    let first = match addressing.first_account {
        Account::IMessage => "iMessage",
        Account::Sms => "SMS",
    };
    let mut args: Vec<std::ffi::OsString> = vec![
        text.into(),
        addressing.handle.clone().unwrap_or_default().into(),
        first.into(),
        addressing.chat_ids.len().to_string().into(),
    ];
    args.extend(addressing.chat_ids.iter().map(Into::into));
    args.extend(files.iter().map(|f| f.as_os_str().to_owned()));
    args
}

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

    /// How it is set up.
    pub fn config(&self) -> &MessagesConfig {
        &self.cfg
    }

    async fn deliver(&self, msg: OutgoingSend) -> Result<Delivery, SendError> {
        let lock = {
            let mut chats = self.chats.lock().unwrap_or_else(|p| p.into_inner());
            // By conversation, not by channel: two channels of one person (an older guid and
            // a macOS 26 `any;` one) share the rows a confirmation matches.
            chats.entry(identifier_of(&msg.channel_platform_id).to_owned()).or_default().clone()
        };
        let _one_at_a_time = lock.lock().await;
        let started_ms = amc_core::time::now_ms();
        // One connection for the whole send: where chat.db ends now, the chats it holds for
        // the conversation and the service it last used, and every look while Messages
        // settles the send.
        let (chat_db, guid) = (self.cfg.chat_db.clone(), msg.channel_platform_id.clone());
        let (db, before, addressing) = tokio::task::spawn_blocking(move || {
            let db = ChatDb::open(&chat_db)?;
            let identifier = identifier_of(&guid);
            let (before, chats) = (db.max_rowid()?, db.chat_guids(identifier)?);
            let addressed = addressing(&guid, &chats, db.last_service(identifier).ok().flatten().as_deref());
            Ok::<_, crate::SourceError>((Arc::new(Mutex::new(db)), before, addressed))
        })
        .await
        .map_err(|e| SendError::Failed(e.to_string()))?
        .map_err(|e| SendError::Failed(format!("cannot read chat.db to confirm sends: {e}")))?;
        let files = {
            let (this_cfg, m) = (self.cfg.clone(), msg.clone());
            tokio::task::spawn_blocking(move || copy_attachments(&this_cfg, &m))
                .await
                .map_err(|e| SendError::Failed(e.to_string()))??
        };
        let sent = Sent { db, before, started_ms, addressing };
        let outcome = self.run_and_confirm(&msg, &sent, &files).await;
        // The copies Messages read are removed once the send is settled; an unknown one
        // stays, as Messages may still be reading it.
        if !matches!(outcome, Err(SendError::Unknown(_)))
            && let Some(dir) = files.first().and_then(|f| f.parent()).map(std::path::Path::to_path_buf)
        {
            // A folder of copies, perhaps large: off the async threads.
            let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(dir)).await;
        }
        outcome
    }

    async fn run_and_confirm(&self, msg: &OutgoingSend, sent: &Sent, files: &[PathBuf]) -> Result<Delivery, SendError> {
        let addressing = &sent.addressing;
        let mut cmd = tokio::process::Command::new(&self.cfg.osascript);
        for line in SEND_SCRIPT {
            cmd.arg("-e").arg(line);
        }
        cmd.args(script_args(&msg.text, addressing, files));
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).kill_on_drop(true);
        let out = tokio::time::timeout(OSASCRIPT_TIMEOUT, cmd.output())
            .await
            .map_err(|_| SendError::Unknown("osascript did not finish in time".into()))?
            .map_err(|e| SendError::Failed(format!("cannot run {}: {e}", self.cfg.osascript.display())))?;
        let expect = Expected {
            identifier: &addressing.identifier,
            text: &msg.text,
            files,
            before: sent.before,
            started_ms: sent.started_ms,
        };
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let number = error_number(&stderr);
            if number == Some(-1743) {
                return Err(SendError::Auth(
                    "macOS did not let AMC control Messages (-1743): open System Settings → Privacy & Security → \
                     Automation, and turn on Messages for AMC (or the terminal running amc serve)"
                        .into(),
                ));
            }
            if number == Some(-1728) {
                return Err(SendError::Failed(format!(
                    "Messages has no such chat (tried {}): {}",
                    addressing.tried(),
                    stderr.trim()
                )));
            }
            // Any other failure may come after Messages took some of it (a file that failed,
            // an Apple Event timeout): what chat.db says decides, and never "not sent" blindly.
            return match self.confirm(&sent.db, &expect).await {
                Ok(d) => Ok(d),
                Err(SendError::Failed(why)) => Err(SendError::Failed(why)),
                Err(_) => Err(SendError::Unknown(format!(
                    "osascript failed ({}) and Messages did not record the send; check the conversation",
                    stderr.trim()
                ))),
            };
        }
        self.confirm(&sent.db, &expect).await
    }

    /// Waits, from now (osascript has returned), for Messages to settle every row of the send.
    async fn confirm(&self, db: &Arc<Mutex<ChatDb>>, expect: &Expected<'_>) -> Result<Delivery, SendError> {
        let deadline = Instant::now() + self.cfg.confirm_timeout;
        loop {
            let (db, before) = (db.clone(), expect.before);
            let rows = tokio::task::spawn_blocking(move || {
                db.lock().unwrap_or_else(|p| p.into_inner()).sent_rows_after(before)
            })
            .await
            .map_err(|e| SendError::Unknown(e.to_string()))?
            .unwrap_or_default();
            match settle(expect, &rows) {
                Settled::Sent(d) => return Ok(d),
                Settled::Failed(why) => return Err(SendError::Failed(why)),
                Settled::Waiting(what) if Instant::now() > deadline => {
                    return Err(SendError::Unknown(format!(
                        "{what} within {} s; check the conversation in Messages",
                        self.cfg.confirm_timeout.as_secs()
                    )));
                }
                Settled::Waiting(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

/// The AppleScript error number osascript ends its message with (`… (-1728)`): only
/// there, never anywhere in the text (a file's name may hold `-1728`).
fn error_number(stderr: &str) -> Option<i64> {
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty())?.trim_end();
    let inner = last.strip_suffix(')')?;
    let open = inner.rfind('(')?;
    inner[open + 1..].parse().ok()
}

/// A send under way: its chat.db connection and what was read before osascript ran.
struct Sent {
    db: Arc<Mutex<ChatDb>>,
    /// chat.db's last ROWID before: the send's rows come after it.
    before: i64,
    started_ms: i64,
    /// How the conversation is addressed, from what chat.db held before.
    addressing: Addressing,
}

/// What a send should leave in chat.db.
struct Expected<'a> {
    identifier: &'a str,
    text: &'a str,
    files: &'a [PathBuf],
    before: i64,
    started_ms: i64,
}

/// Where a send stands in chat.db.
enum Settled {
    Sent(Delivery),
    Failed(String),
    Waiting(&'static str),
}

/// Finds the rows of this send (the text, each file) and reads their state.
fn settle(expect: &Expected<'_>, rows: &[SentRow]) -> Settled {
    let ours = |r: &&SentRow| {
        r.chat_identifier == expect.identifier
            && crate::convert::unix_ms(r.date).is_none_or(|t| t >= expect.started_ms - 1000)
    };
    let mut parts: Vec<(&SentRow, String)> = Vec::new();
    if !expect.text.is_empty() {
        let want = fold(expect.text);
        match rows.iter().filter(ours).find(|r| r.transfer_names.is_empty() && fold(&r.text) == want) {
            Some(r) => parts.push((r, "the text".to_owned())),
            None => return Settled::Waiting("Messages did not record the text"),
        }
    }
    for file in expect.files {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match rows.iter().filter(ours).find(|r| r.transfer_names.contains(&name)) {
            Some(r) => parts.push((r, name)),
            None => return Settled::Waiting("Messages did not record every file"),
        }
    }
    if let Some((r, what)) = parts.iter().find(|(r, _)| r.error != 0) {
        let sent: Vec<&str> = parts.iter().filter(|(p, _)| p.error == 0).map(|(_, w)| w.as_str()).collect();
        return Settled::Failed(format!(
            "Messages could not deliver {what} ({}){}",
            error_name(r.error),
            went_out(&sent)
        ));
    }
    if parts.iter().all(|(r, _)| r.is_sent || r.is_delivered)
        && let Some((first, _)) = parts.first()
    {
        return Settled::Sent(Delivery {
            platform_id: first.guid.clone(),
            sent_at: crate::convert::unix_ms(first.date).unwrap_or_else(amc_core::time::now_ms),
            other_parts: parts.iter().skip(1).map(|(r, _)| r.guid.clone()).collect(),
        });
    }
    Settled::Waiting("Messages recorded the send but did not finish sending it")
}

/// Messages' `error` of a row, as the person reads it.
pub(crate) fn error_name(error: i64) -> String {
    match error {
        25 => "error 25: Not Delivered".to_owned(),
        n => format!("error {n}"),
    }
}

/// "; the text, menu.pdf went out", or nothing when no part did.
pub(crate) fn went_out(parts: &[&str]) -> String {
    if parts.is_empty() { String::new() } else { format!("; {} went out", parts.join(", ")) }
}

/// A text as compared with what Messages stored: Messages may curl quotes, drop
/// zero-width joiners, variation selectors and the object replacement character, and
/// change whitespace.
pub fn fold(text: &str) -> String {
    let mapped: String = text
        .chars()
        .filter_map(|c| match c {
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{FF02}' => Some('"'),
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{FF07}' => Some('\''),
            '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' | '\u{FFFC}' => None,
            '\u{FE00}'..='\u{FE0F}' => None,
            c => Some(c),
        })
        .collect();
    mapped.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Puts the send's staged attachments in the folder Messages may read: linked, so the
/// file is written once (the staged copy is private, and so is the link); copied only
/// where the two folders are on different volumes.
fn copy_attachments(cfg: &MessagesConfig, msg: &OutgoingSend) -> Result<Vec<PathBuf>, SendError> {
    if msg.attachments.is_empty() {
        return Ok(Vec::new());
    }
    let dir = cfg.attachments_dir.join(&msg.send_id);
    amc_core::files::create_dir_all(&dir).map_err(|e| SendError::Failed(format!("attachments folder: {e}")))?;
    msg.attachments
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if a.size_bytes > MAX_ATTACHMENT_BYTES {
                return Err(SendError::TooLarge(format!("{} is over Messages' limit", a.filename)));
            }
            // The staged copy's own name: already shortened to what file systems take.
            let name = std::path::Path::new(&a.path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| format!("{i}-file"));
            let dest = dir.join(name);
            if std::fs::hard_link(&a.path, &dest).is_ok() {
                return Ok(dest);
            }
            // Created private, not with the staged copy's mode carried over by a copy.
            let copied = std::fs::File::open(&a.path)
                .and_then(|mut from| std::io::copy(&mut from, &mut amc_core::files::create(&dest)?));
            copied.map_err(|e| SendError::Failed(format!("copying {}: {e}", a.filename)))?;
            Ok(dest)
        })
        .collect()
}

impl Sender for MessagesSender {
    fn max_attachment_bytes(&self) -> u64 {
        MAX_ATTACHMENT_BYTES
    }

    fn send(&self, msg: OutgoingSend) -> BoxFuture<'_, Result<Delivery, SendError>> {
        Box::pin(self.deliver(msg))
    }
}

#[cfg(test)]
mod tests {
    use super::{Account, addressing};

    #[test]
    fn only_the_conversations_own_guids_are_chat_ids() {
        let chats = |guids: &[&str]| guids.iter().map(|g| (*g).to_owned()).collect::<Vec<_>>();
        for (channel, held, ids, handle) in [
            ("any;-;+15551234567", &["any;-;+15551234567"][..], &["any;-;+15551234567"][..], Some("+15551234567")),
            (
                "any;-;+15551234567",
                &["SMS;-;+15551234567", "iMessage;-;+15551234567"],
                &["SMS;-;+15551234567", "iMessage;-;+15551234567"],
                Some("+15551234567"),
            ),
            ("any;+;chat42", &["any;+;chat42", "iMessage;+;chat42"], &["any;+;chat42", "iMessage;+;chat42"], None),
            // A ghost `any;-;chat…` row (a group addressed as a person) is never tried, and
            // a channel named so has no participant.
            ("any;+;chat42", &["any;-;chat42", "any;+;chat42"], &["any;+;chat42"], None),
            ("any;-;chat42", &["any;-;chat42"], &[], None),
            // Nothing held: nothing made up.
            ("any;+;chat42", &[], &[], None),
        ] {
            let a = addressing(channel, &chats(held), None);
            assert_eq!(a.chat_ids, ids, "{channel} {held:?}");
            assert_eq!(a.handle.as_deref(), handle, "{channel}");
            assert_eq!(a.first_account, Account::IMessage);
        }
        assert_eq!(addressing("any;-;+15551234567", &[], Some("SMS")).first_account, Account::Sms);
    }

    #[test]
    fn the_error_number_is_read_from_the_end_only() {
        assert_eq!(
            super::error_number("execution error: Not authorized to send Apple events to Messages. (-1743)\n"),
            Some(-1743)
        );
        assert_eq!(super::error_number("execution error: File /x/0-a-1728.jpg wasn't found. (-43)"), Some(-43));
        assert_eq!(super::error_number("something odd"), None);
    }
}
