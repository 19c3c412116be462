//! `amc doctor --deep`: what only the person's own Mac can tell, checked without touching
//! their conversations. chat.db is opened read-only; file events are tried on a scratch
//! file beside it; the AppleScript AMC sends with runs only when the person asks for a test
//! message to one of their own addresses; the Keychain item is looked up, never shown; the
//! bundle's signature and launch at login are read. Checks that need macOS say so where
//! they cannot run (on Linux in CI, they are skipped and the rest run).

use std::path::{Path, PathBuf};
use std::time::Duration;

use amc_discord::settings::DiscordToken;

use crate::Settings;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It works.
    Passed,
    /// It does not; the check says how to fix it.
    Failed,
    /// It cannot be told here (not a Mac, not asked for, not set up).
    Skipped,
}

impl Outcome {
    /// The word the table shows.
    pub fn word(self) -> &'static str {
        match self {
            Self::Passed => "ok",
            Self::Failed => "FAILED",
            Self::Skipped => "skipped",
        }
    }
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked.
    pub name: &'static str,
    /// How it came out.
    pub outcome: Outcome,
    /// What was seen, or why it was skipped.
    pub detail: String,
    /// What to do about a failure.
    pub fix: Option<String>,
}

impl Check {
    fn passed(name: &'static str, detail: impl Into<String>) -> Self {
        Self { name, outcome: Outcome::Passed, detail: detail.into(), fix: None }
    }

    fn skipped(name: &'static str, why: impl Into<String>) -> Self {
        Self { name, outcome: Outcome::Skipped, detail: why.into(), fix: None }
    }

    fn failed(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { name, outcome: Outcome::Failed, detail: detail.into(), fix: Some(fix.into()) }
    }
}

impl Check {
    /// The check as the window shows it: `{name, outcome, detail, fix}`.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({ "name": self.name, "outcome": self.outcome.word(), "detail": self.detail, "fix": self.fix })
    }
}

/// How long a file event may take to arrive.
const EVENT_WAIT: Duration = Duration::from_secs(3);

const NOT_A_MAC: &str = "needs macOS";

/// Runs every check. `send_test` is one of the person's own addresses to send one test
/// message to through Messages (only on a Mac, only to an address chat.db records as the
/// person's own).
pub async fn checks(settings: &Settings, send_test: Option<String>) -> Vec<Check> {
    let chat_db = settings.imessage.chat_db.clone();
    let osascript = settings.imessage.osascript.clone();
    let on_mac = cfg!(target_os = "macos");
    let db = chat_db.clone();
    let blocking = tokio::task::spawn_blocking(move || {
        vec![
            messages_database(db.as_deref()),
            file_events(db.as_deref()),
            bundle_signature(on_mac),
            launch_at_login(on_mac),
        ]
    });
    let mut out = blocking.await.unwrap_or_else(|e| {
        vec![Check::failed("the checks of this Mac", format!("they stopped: {e}"), "run amc doctor --deep again")]
    });
    out.insert(2, applescript(chat_db, osascript, send_test, on_mac).await);
    out.push(keychain(settings, on_mac).await);
    out
}

/// chat.db opened read-only: how many messages, and which chat forms this Mac's Messages
/// writes (`any;-;…` from macOS 26, `iMessage;-;…` and `SMS;-;…` before).
fn messages_database(chat_db: Option<&Path>) -> Check {
    const NAME: &str = "chat.db, read-only";
    let Some(path) = chat_db else {
        return Check::skipped(NAME, "no chat.db configured (imessage_chat_db or --chat-db)");
    };
    let opened = amc_imessage::chatdb::ChatDb::open(path).and_then(|db| {
        let forms = db.chat_forms()?;
        Ok((db.max_rowid()?, forms))
    });
    match opened {
        Ok((rows, forms)) => {
            let forms = forms.iter().map(|(form, n)| format!("{form} {n}")).collect::<Vec<_>>().join(", ");
            let any = forms.split(", ").any(|f| f.starts_with("any "));
            let era = match (forms.is_empty(), any) {
                (true, _) => "no chats yet",
                (false, true) => "macOS 26's any;… forms among them",
                (false, false) => "no any;… forms: macOS 14–15, or none written yet",
            };
            Check::passed(NAME, format!("{rows} messages; chats by form: {forms} ({era})"))
        }
        Err(e) => Check::failed(NAME, e.to_string(), amc_imessage::watch::full_disk_access_advice(path, &e)),
    }
}

/// File events for a scratch file in chat.db's folder: kqueue on a Mac.
fn file_events(chat_db: Option<&Path>) -> Check {
    const NAME: &str = "file events beside chat.db";
    let Some(dir) = chat_db.and_then(Path::parent) else {
        return Check::skipped(NAME, "no chat.db configured");
    };
    match amc_imessage::watch::events_arrive(dir, EVENT_WAIT) {
        Ok(took) => Check::passed(NAME, format!("an event came {} ms after a write", took.as_millis())),
        Err(why) => Check::failed(
            NAME,
            why,
            "AMC still notices new messages at its fallback check (imessage_poll_seconds); give it Full Disk Access \
             if the folder cannot be written",
        ),
    }
}

/// How long the test send may take: macOS's Automation prompt waits for the person.
const SEND_WAIT: Duration = Duration::from_secs(120);

/// The AppleScript AMC sends with, run for one test message to one of the person's own
/// addresses, addressed as a send to someone with no chat yet is (by the handle).
async fn applescript(chat_db: Option<PathBuf>, osascript: Option<PathBuf>, to: Option<String>, on_mac: bool) -> Check {
    const NAME: &str = "sending through Messages";
    if !on_mac {
        return Check::skipped(NAME, NOT_A_MAC);
    }
    let Some(to) = to else {
        return Check::skipped(NAME, "pass --send-test YOUR-ADDRESS to send one message to yourself");
    };
    let (Some(osascript), Some(chat_db)) = (osascript, chat_db) else {
        return Check::skipped(NAME, "sending is off (no osascript or no chat.db)");
    };
    // Only to an address Messages records as the person's own: a test never reaches anyone else.
    let path = chat_db.clone();
    let own = tokio::task::spawn_blocking(move || amc_imessage::chatdb::ChatDb::open(&path)?.own_addresses()).await;
    let own = match own {
        Ok(Ok(own)) => own,
        Ok(Err(e)) => {
            return Check::failed(NAME, e.to_string(), amc_imessage::watch::full_disk_access_advice(&chat_db, &e));
        }
        Err(e) => return Check::failed(NAME, format!("reading chat.db stopped: {e}"), "run it again"),
    };
    let wanted = amc_core::model::reader_handle(&to);
    let Some(address) = own.iter().find(|a| amc_core::model::reader_handle(a) == wanted) else {
        return Check::failed(
            NAME,
            format!("{to} is not one of the addresses Messages sends from on this Mac ({})", own.join(", ")),
            "pass one of those addresses (your own phone number or Apple Account email)",
        );
    };
    let addressing = amc_imessage::send::addressing(&format!("any;-;{address}"), &[], None);
    let text = "AMC's self-test: Messages can send for AMC.";
    let out = tokio::process::Command::new(&osascript)
        .args(amc_imessage::send::SEND_SCRIPT.iter().flat_map(|line| ["-e", line]))
        .args(amc_imessage::send::script_args(text, &addressing, &[]))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(SEND_WAIT, out).await {
        Ok(Ok(o)) if o.status.success() => Check::passed(NAME, format!("a test message went to {address}")),
        Ok(Ok(o)) => Check::failed(
            NAME,
            String::from_utf8_lossy(&o.stderr).trim().to_owned(),
            "allow AMC to control Messages: System Settings → Privacy & Security → Automation → AMC → Messages",
        ),
        Ok(Err(e)) => {
            Check::failed(NAME, format!("cannot run {}: {e}", osascript.display()), "check imessage_osascript")
        }
        Err(_) => Check::failed(
            NAME,
            format!("Messages did not answer within {} s", SEND_WAIT.as_secs()),
            "answer macOS's prompt to let AMC control Messages, then run it again",
        ),
    }
}

/// The Keychain item holding the Discord token, when AMC is set to read it from there: found
/// or not, never shown.
async fn keychain(settings: &Settings, on_mac: bool) -> Check {
    const NAME: &str = "Discord token in the Keychain";
    if !on_mac {
        return Check::skipped(NAME, NOT_A_MAC);
    }
    match &settings.discord.token {
        Some(token @ DiscordToken::Keychain) => match amc_discord::token::resolve(token).await {
            Ok(_) => Check::passed(NAME, "the item is there and AMC may read it"),
            Err(e) => {
                Check::failed(NAME, e.to_string(), "paste the bot's token in AMC's Setup (or amc discord connect)")
            }
        },
        _ => Check::skipped(NAME, "AMC is not set to read the token from the Keychain (discord_token_keychain)"),
    }
}

/// The AMC.app this `amc` runs from, if it does.
fn running_app() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    exe.ancestors().find(|p| p.extension().is_some_and(|e| e == "app")).map(Path::to_path_buf)
}

/// The bundle's code signature, verified as Gatekeeper would.
fn bundle_signature(on_mac: bool) -> Check {
    const NAME: &str = "AMC.app's signature";
    if !on_mac {
        return Check::skipped(NAME, NOT_A_MAC);
    }
    let Some(app) = running_app() else {
        return Check::skipped(NAME, "this amc does not run from AMC.app");
    };
    let out =
        std::process::Command::new("/usr/bin/codesign").args(["--verify", "--deep", "--strict"]).arg(&app).output();
    match out {
        Ok(o) if o.status.success() => Check::passed(NAME, format!("{} verifies", app.display())),
        Ok(o) => Check::failed(
            NAME,
            String::from_utf8_lossy(&o.stderr).trim().to_owned(),
            "install AMC again from its .dmg (or `brew reinstall --cask amc`)",
        ),
        Err(e) => Check::failed(NAME, format!("cannot run codesign: {e}"), "install the Xcode command line tools"),
    }
}

/// Whether AMC starts at login: the launch agent the app writes when the person turns it on.
fn launch_at_login(on_mac: bool) -> Check {
    const NAME: &str = "launch at login";
    if !on_mac {
        return Check::skipped(NAME, NOT_A_MAC);
    }
    let Some(home) = std::env::var_os("HOME") else {
        return Check::skipped(NAME, "no home folder");
    };
    let agent = PathBuf::from(home).join("Library/LaunchAgents/AMC.plist");
    if agent.is_file() {
        Check::passed(NAME, format!("on ({})", agent.display()))
    } else {
        Check::passed(NAME, "off (turn it on from the menu bar: Launch at Login)")
    }
}
