//! Sending through Messages against the strict osascript stand-in
//! (`tests/fixtures/imessage/osascript-standin.py`): chats addressed by the guids chat.db
//! holds, groups and SMS, failed and unsettled sends, sends Messages fails after marking
//! them sent, text Messages normalised, Messages slow to start.

use amc_testkit::Stored;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use amc_core::config::Config;
use amc_core::error::ErrorCode;
use amc_core::events::Event;
use amc_core::model::SendTarget;
use amc_core::model::{ChannelKind, HistoryRelease, OutboxStatus, SendPolicy, Source, StagedAttachment};
use amc_core::sender::{Delivery, OutgoingSend, SendError, Sender, Senders};
use amc_core::service::{AgentCtx, Amc, SendRequest};
use amc_imessage::fixture::ChatDbWriter;
use amc_imessage::send::{MessagesConfig, MessagesSender};
use amc_imessage::watch::{DirEvents, WatchConfig};

const STANDIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/imessage/osascript-standin.py");

/// A chat.db with one chat (`guid`, its service, its style), and a sender whose stand-in
/// runs in `mode` with `env`.
struct Mac {
    dir: tempfile::TempDir,
    chat_db: PathBuf,
}

impl Mac {
    /// A chat.db with one conversation with Ada: the chat `guid` on `service` (style 45
    /// one-to-one, 43 group), holding a message she sent.
    fn with_chat(guid: &str, service: &str, style: i32) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let chat_db = dir.path().join("chat.db");
        ChatDbWriter::create(&chat_db).expect("chat.db").add_handle("+15551234567").expect("handle");
        let mac = Self { dir, chat_db };
        mac.add_chat(guid, service, style, Some(800_000_000_000_000_000));
        mac
    }

    /// Another chat row of the conversation, as Messages keeps one per service: holding a
    /// message of Ada's sent at `message_date` (Apple nanoseconds), or none.
    fn add_chat(&self, guid: &str, service: &str, style: i32, message_date: Option<i64>) {
        let c = rusqlite::Connection::open(&self.chat_db).expect("open");
        let identifier = guid.rsplit(';').next().expect("identifier");
        c.execute(
            "INSERT INTO chat (guid, style, state, chat_identifier, service_name, display_name) VALUES (?1, ?2, 3, ?3, ?4, '')",
            (guid, style, identifier, service),
        )
        .expect("chat");
        let chat = c.last_insert_rowid();
        c.execute("INSERT INTO chat_handle_join (chat_id, handle_id) VALUES (?1, 1)", [chat]).expect("member");
        if let Some(date) = message_date {
            c.execute(
                "INSERT INTO message (guid, text, handle_id, service, is_from_me, date) VALUES (?1, 'hi', 1, ?2, 0, ?3)",
                (format!("from-ada-{chat}"), service, date),
            )
            .expect("message");
            c.execute(
                "INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (?1, ?2, ?3)",
                (chat, c.last_insert_rowid(), date),
            )
            .expect("join");
        }
    }

    /// A file of the agent's, outside Messages' folders.
    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    }

    fn readable(&self) -> PathBuf {
        self.dir.path().join("Library/Messages/Attachments")
    }

    /// A sender whose osascript is the stand-in, with these settings in its environment.
    fn sender(&self, env: &[(&str, &str)]) -> MessagesSender {
        let script = self.dir.path().join("osascript");
        let mut exports: Vec<String> = vec![
            format!("AMC_STANDIN_LOG={:?}", self.dir.path().join("calls.jsonl")),
            format!("AMC_STANDIN_CHATDB={:?}", self.chat_db),
            format!("AMC_STANDIN_READABLE={:?}", self.readable()),
        ];
        exports.extend(env.iter().map(|(k, v)| format!("{k}={v:?}")));
        let wrapper = format!("#!/bin/sh\nexport {}\nexec python3 {STANDIN:?} \"$@\"\n", exports.join(" "));
        std::fs::write(&script, wrapper).expect("write");
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
        MessagesSender::new(MessagesConfig {
            osascript: script,
            chat_db: self.chat_db.clone(),
            attachments_dir: self.readable().join("AMC"),
            confirm_timeout: Duration::from_secs(2),
        })
    }

    fn calls(&self) -> Vec<serde_json::Value> {
        std::fs::read_to_string(self.dir.path().join("calls.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect()
    }

    /// The chat ids the send with index `call` tried, and the account its participant
    /// fallback tried first.
    fn tried(&self, call: usize) -> (Vec<String>, String) {
        let argv = self.calls()[call]["argv"].as_array().expect("argv").clone();
        let count: usize = argv[3].as_str().and_then(|n| n.parse().ok()).expect("count");
        let ids = argv[4..4 + count].iter().map(|v| v.as_str().expect("id").to_owned()).collect();
        (ids, argv[2].as_str().expect("service").to_owned())
    }

    fn rows(&self) -> Vec<(String, i64, i64)> {
        let c = rusqlite::Connection::open(&self.chat_db).expect("open");
        let mut s =
            c.prepare("SELECT coalesce(text, ''), is_sent, error FROM message ORDER BY ROWID").expect("prepare");
        s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).expect("query").map(|r| r.expect("row")).collect()
    }
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn outgoing(guid: &str, text: &str, files: &[&Path]) -> OutgoingSend {
    OutgoingSend {
        send_id: format!("msg_{:026}", NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)),
        channel: SendTarget {
            id: "ch_01HZ0000000000000000000000".into(),
            source: Source::Imessage,
            platform_id: guid.into(),
            name: "Ada".into(),
            kind: ChannelKind::Dm,
            send_policy: SendPolicy::Auto,
            gone: None,
        },
        channel_platform_id: guid.into(),
        text: text.into(),
        reply_to_platform_id: None,
        attachments: files
            .iter()
            .map(|f| StagedAttachment {
                path: f.display().to_string(),
                filename: f.file_name().expect("name").to_string_lossy().into_owned(),
                size_bytes: std::fs::metadata(f).expect("meta").len(),
                origin: f.display().to_string(),
            })
            .collect(),
        answers: None,
    }
}

async fn send(sender: &MessagesSender, guid: &str, text: &str, files: &[&Path]) -> Result<Delivery, SendError> {
    sender.send(outgoing(guid, text, files)).await
}

/// A chat is addressed by the guids chat.db holds for it, never by one made up from another
/// (`iMessage;-;X` for `any;-;X`): Messages refuses those on macOS 26.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chats_are_addressed_by_the_guids_chat_db_holds_then_the_person_as_a_participant() {
    for (guid, service, style, resolves) in [
        // `chat id "any;-;…"` is refused: the person as a participant of iMessage.
        ("any;-;+15551234567", "iMessage", 45, "no"),
        ("any;-;ada@example.com", "iMessage", 45, "no"),
        // A group has no participant to fall back on: its own guid, where Messages takes it.
        ("any;+;chat493827161", "iMessage", 43, "resolve"),
    ] {
        let mac = Mac::with_chat(guid, service, style);
        let sender = mac.sender(&[("AMC_STANDIN_ANY_CHAT_IDS", resolves)]);
        let d = send(&sender, guid, "hello", &[]).await.unwrap_or_else(|e| panic!("{guid} {service}: {e}"));
        assert!(!d.platform_id.is_empty());
        assert_eq!(mac.tried(0).0, [guid], "only the guid chat.db holds");
        assert_eq!(mac.rows().last().map(|r| (r.0.as_str(), r.1)), Some(("hello", 1)), "{guid} {service}");
    }
    // Where Messages refuses the group's `any;+;` guid, nothing made up is tried instead.
    let mac = Mac::with_chat("any;+;chat493827161", "iMessage", 43);
    let err = send(&mac.sender(&[]), "any;+;chat493827161", "hello", &[]).await.expect_err("no chat");
    assert!(matches!(&err, SendError::Failed(why) if why.contains("no such chat")), "{err:?}");
    assert_eq!(mac.tried(0).0, ["any;+;chat493827161"]);
    // The group's older `iMessage;+;` row, kept by an upgrade, is tried after the newer.
    mac.add_chat("iMessage;+;chat493827161", "iMessage", 43, Some(700_000_000_000_000_000));
    send(&mac.sender(&[]), "any;+;chat493827161", "hello", &[]).await.expect("sent through the older chat");
    assert_eq!(mac.tried(1).0, ["any;+;chat493827161", "iMessage;+;chat493827161"]);
    // Before macOS 26 guids carry their service and are used as they are.
    let mac = Mac::with_chat("iMessage;+;chat1", "iMessage", 43);
    send(&mac.sender(&[("AMC_STANDIN_MACOS", "15")]), "any;+;chat1", "hi all", &[]).await.expect("sent");
    assert_eq!(mac.tried(0).0, ["iMessage;+;chat1"]);
}

/// A group that moved to another service leaves an empty chat row behind, which Messages
/// cannot resolve: the row holding the messages is tried first (nixfred/blip#8).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_holding_the_conversation_is_tried_before_an_empty_one() {
    let mac = Mac::with_chat("iMessage;+;chat7", "iMessage", 43);
    mac.add_chat("SMS;+;chat7", "SMS", 43, None);
    send(&mac.sender(&[("AMC_STANDIN_MACOS", "15")]), "any;+;chat7", "hello", &[]).await.expect("sent");
    assert_eq!(mac.tried(0).0, ["iMessage;+;chat7", "SMS;+;chat7"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dm_that_no_chat_id_reaches_goes_to_the_person_as_a_participant() {
    // Before macOS 26: Ada's chat row holds no message (it was emptied), so Messages does
    // not resolve its guid; the participant fallback reaches her.
    let mac = Mac::with_chat("iMessage;-;+15551234567", "iMessage", 45);
    rusqlite::Connection::open(&mac.chat_db)
        .expect("open")
        .execute("DELETE FROM chat_message_join", [])
        .expect("empty");
    send(&mac.sender(&[("AMC_STANDIN_MACOS", "15")]), "any;-;+15551234567", "hello", &[])
        .await
        .expect("sent through the participant");
    assert_eq!(mac.tried(0), (vec!["iMessage;-;+15551234567".to_owned()], "iMessage".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_are_sent_failed_or_unknown_as_messages_settles_them() {
    let guid = "any;-;+15551234567";
    let mac = Mac::with_chat(guid, "iMessage", 45);
    let err = send(&mac.sender(&[("AMC_STANDIN_MODE", "not-delivered")]), guid, "hello", &[]).await.expect_err("25");
    assert!(matches!(&err, SendError::Failed(why) if why.contains("Not Delivered")), "{err:?}");
    let err = send(&mac.sender(&[("AMC_STANDIN_MODE", "never-sent")]), guid, "hello", &[]).await.expect_err("pending");
    assert!(matches!(err, SendError::Unknown(_)), "{err:?}");
    let err = send(&mac.sender(&[("AMC_STANDIN_MODE", "silent")]), guid, "hello", &[]).await.expect_err("nothing");
    assert!(matches!(err, SendError::Unknown(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_file_of_a_send_is_confirmed_and_its_copy_removed() {
    let guid = "any;-;+15551234567";
    let mac = Mac::with_chat(guid, "iMessage", 45);
    let menu = mac.file("menu.pdf", b"%PDF menu");
    let d = send(&mac.sender(&[]), guid, "the menu", &[&menu]).await.expect("sent");
    assert_eq!(d.other_parts.len(), 1, "the file's own row is part of this send: {d:?}");
    let copies = mac.readable().join("AMC");
    assert_eq!(std::fs::read_dir(&copies).map(|d| d.count()).unwrap_or(0), 0, "the copy is removed once sent");
    // The text goes out, the file does not: failed, saying what went.
    let err = send(&mac.sender(&[("AMC_STANDIN_MODE", "files-not-delivered")]), guid, "again", &[&menu])
        .await
        .expect_err("file not delivered");
    let SendError::Failed(why) = &err else { panic!("{err:?}") };
    assert!(why.contains("menu.pdf") && why.contains("the text went out"), "{why}");
}

/// The staged file is handed to Messages as it is: linked into the folder Messages reads,
/// not written a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_file_is_linked_where_messages_reads_it_not_copied_again() {
    use std::os::unix::fs::MetadataExt;
    let guid = "any;-;+15551234567";
    let mac = Mac::with_chat(guid, "iMessage", 45);
    let menu = mac.file("menu.pdf", b"%PDF menu");
    // Unknown: the file Messages was given stays where it is.
    let err = send(&mac.sender(&[("AMC_STANDIN_MODE", "never-sent")]), guid, "the menu", &[&menu]).await;
    assert!(matches!(err, Err(SendError::Unknown(_))), "{err:?}");
    let folders: Vec<_> = std::fs::read_dir(mac.readable().join("AMC")).expect("copies").flatten().collect();
    let given: Vec<_> = folders.iter().flat_map(|f| std::fs::read_dir(f.path()).expect("send's folder")).collect();
    assert_eq!(given.len(), 1, "one file given to Messages");
    let given = given[0].as_ref().expect("entry").metadata().expect("meta");
    let staged = std::fs::metadata(&menu).expect("meta");
    assert_eq!((given.dev(), given.ino()), (staged.dev(), staged.ino()), "the staged file itself, linked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_staged_where_messages_cannot_read_it_is_not_delivered() {
    let guid = "any;-;+15551234567";
    let mac = Mac::with_chat(guid, "iMessage", 45);
    let menu = mac.file("menu.pdf", b"%PDF menu");
    let mut sender = mac.sender(&[]);
    // As ~/Pictures would be: outside the folder Messages' sandbox reads.
    sender = MessagesSender::new(MessagesConfig {
        attachments_dir: mac.dir.path().join("Pictures/AMC"),
        ..sender.config().clone()
    });
    let err = send(&sender, guid, "", &[&menu]).await.expect_err("sandbox");
    assert!(matches!(&err, SendError::Failed(why) if why.contains("Not Delivered")), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_that_messages_normalised_and_a_slow_start_still_confirm() {
    let guid = "any;-;+15551234567";
    let mac = Mac::with_chat(guid, "iMessage", 45);
    let text = "She said \"it's fine\"  👍\u{FE0F} \n";
    let d = send(&mac.sender(&[("AMC_STANDIN_NORMALISE", "1")]), guid, text, &[]).await;
    assert!(d.is_ok(), "{d:?}");
    assert_ne!(mac.rows().last().map(|r| r.0.clone()), Some(text.to_owned()), "the stand-in did normalise");
    // Messages takes longer to start than the confirmation window: the window starts when
    // osascript returns.
    let d = send(&mac.sender(&[("AMC_STANDIN_DELAY", "3")]), guid, "after a slow start", &[]).await;
    assert!(d.is_ok(), "{d:?}");
}

/// A conversation that went on by SMS is tried by SMS first: a person who left iMessage
/// is not sent an iMessage that never arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_the_conversation_last_used_is_tried_first() {
    // macOS 26: one `any;-;` chat, its newest message by SMS; the participant of the SMS
    // account comes first.
    let guid = "any;-;+15551234567";
    let mac = Mac::with_chat(guid, "SMS", 45);
    send(&mac.sender(&[]), guid, "hello", &[]).await.expect("sent");
    assert_eq!(mac.tried(0), (vec![guid.to_owned()], "SMS".to_owned()), "{}", mac.calls()[0]);
    // Before: a chat per service; the one with the newest message (SMS) comes first.
    let mac = Mac::with_chat("iMessage;-;+15551234567", "iMessage", 45);
    mac.add_chat("SMS;-;+15551234567", "SMS", 45, Some(900_000_000_000_000_000));
    send(&mac.sender(&[("AMC_STANDIN_MACOS", "15")]), guid, "hello", &[]).await.expect("sent");
    assert_eq!(mac.tried(0).0, ["SMS;-;+15551234567", "iMessage;-;+15551234567"]);
    let service: String = rusqlite::Connection::open(&mac.chat_db)
        .expect("open")
        .query_row("SELECT service FROM message ORDER BY ROWID DESC LIMIT 1", [], |r| r.get(0))
        .expect("row");
    assert_eq!(service, "SMS", "sent in the chat the conversation last used");
}

/// Messages can mark a row it had marked sent not delivered a while later (an address it
/// cannot route, a person who left iMessage): the send answered `sent` becomes `failed`
/// with the reason, in the person's log of sends and for the agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_messages_fails_after_marking_it_sent_becomes_failed() {
    let guid = "any;-;+15551234567";
    let mac = Mac::with_chat(guid, "iMessage", 45);
    let fail_now = mac.dir.path().join("messages-fails-it-now");
    let fail_when = fail_now.display().to_string();
    let sender = mac.sender(&[("AMC_STANDIN_MODE", "sent-then-not-delivered"), ("AMC_STANDIN_FAIL_WHEN", &fail_when)]);
    let config = Config::new(mac.dir.path().join("amc"));
    let amc = Amc::start(config, Senders::default().with(Source::Imessage, Arc::new(sender))).expect("start");
    // chat.db followed as AMC follows it, the conversation open to an agent.
    let stop = tokio_util::sync::CancellationToken::new();
    let watch = WatchConfig {
        chat_db: mac.chat_db.clone(),
        poll: Duration::from_millis(200),
        sweeps: amc_imessage::watch::SweepPeriods::default(),
        contacts: Vec::new(),
        late_horizon: Some(amc_imessage::settings::LATE_HORIZON),
        dir_events: DirEvents::All,
    };
    let watcher = tokio::spawn(amc_imessage::watch::run(amc.clone(), watch, stop.clone()));
    let channels = |amc: &Amc| amc.store().admin_channels(None, None).expect("channels");
    super::wait_until(&amc, "the conversation is read", |amc| !channels(amc).is_empty()).await;
    let channel = channels(&amc)[0].id.clone();
    amc.approve_channel(channel.clone(), HistoryRelease::All, Some(SendPolicy::Auto), false).await.expect("approve");
    amc.create_agent("assistant".into()).await.expect("agent");
    let agent = AgentCtx { agent_id: "assistant".into() };
    let req = SendRequest { channel_id: channel, text: "see you at 8".into(), reply_to: None, attachments: None };

    let receipt = amc.send(&agent, req.clone(), Some("key-1".into())).await.expect("send");
    assert_eq!(receipt.status, "sent");
    let mut events = amc.events().subscribe();
    std::fs::write(&fail_now, b"").expect("Messages fails the row now");
    let status = |amc: &Amc| amc.store().outbox_item(&receipt.message_id).expect("send").status;
    super::wait_until(&amc, "the send is failed", |amc| status(amc) == OutboxStatus::Failed).await;

    // The person: the log of sends (Review) has it failed, with the reason, and was told.
    let failed = amc.store().outbox(Some(OutboxStatus::Failed), 10).expect("log");
    assert_eq!(failed.len(), 1);
    let why = failed[0].error_message.clone().expect("the reason");
    assert!(why.contains("the text") && why.contains("error 25: Not Delivered"), "{why}");
    let told = std::iter::from_fn(|| events.try_recv().ok())
        .any(|e| e == Event::SendChanged { send_id: receipt.message_id.clone(), status: OutboxStatus::Failed });
    assert!(told, "a send_changed event");
    // The agent: its message says why, and its request again answers with the error.
    let message = amc.get_message(&agent, receipt.message_id.clone()).await.expect("message");
    assert_eq!(message.delivery_failed.as_deref(), Some(why.as_str()));
    let again = amc.send(&agent, req, Some("key-1".into())).await.expect_err("replayed");
    assert_eq!((again.code, again.message.as_str()), (ErrorCode::PlatformSendFailed, why.as_str()));
    stop.cancel();
    watcher.await.expect("watcher");
}
