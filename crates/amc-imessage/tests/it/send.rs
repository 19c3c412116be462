//! Sending through Messages against the strict osascript stand-in
//! (`tests/fixtures/imessage/osascript-standin.py`): macOS 26 chat ids, groups and SMS,
//! failed and unsettled sends, text Messages normalised, Messages slow to start.

use std::path::{Path, PathBuf};
use std::time::Duration;

use amc_core::model::{ChannelKind, SendPolicy, Source, StagedAttachment};
use amc_core::sender::{Delivery, OutgoingSend, SendError, Sender};
use amc_core::store::SendTarget;
use amc_imessage::fixture::ChatDbWriter;
use amc_imessage::send::{MessagesConfig, MessagesSender};

const STANDIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/imessage/osascript-standin.py");

/// A chat.db with one chat (`guid`, its service, its style), and a sender whose stand-in
/// runs in `mode` with `env`.
struct Mac {
    dir: tempfile::TempDir,
    chat_db: PathBuf,
}

impl Mac {
    fn with_chat(guid: &str, service: &str, style: i32) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let chat_db = dir.path().join("chat.db");
        let w = ChatDbWriter::create(&chat_db).expect("chat.db");
        let ada = w.add_handle("+15551234567").expect("handle");
        let chat = w.add_chat(guid, style, None, &[ada]).expect("chat");
        w.connection().execute("UPDATE chat SET service_name = ?1 WHERE ROWID = ?2", (service, chat)).expect("service");
        Self { dir, chat_db }
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
    }
}

async fn send(sender: &MessagesSender, guid: &str, text: &str, files: &[&Path]) -> Result<Delivery, SendError> {
    sender.send(outgoing(guid, text, files)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn macos_26_chat_ids_are_addressed_by_service_for_dms_groups_and_sms() {
    for (guid, service, style, first_working) in [
        ("any;-;+15551234567", "iMessage", 45, "iMessage;-;+15551234567"),
        ("any;-;+15551234567", "SMS", 45, "SMS;-;+15551234567"),
        ("any;+;chat493827161", "iMessage", 43, "iMessage;+;chat493827161"),
        ("any;-;ada@example.com", "iMessage", 45, "iMessage;-;ada@example.com"),
    ] {
        let mac = Mac::with_chat(guid, service, style);
        let d = send(&mac.sender(&[]), guid, "hello", &[]).await.unwrap_or_else(|e| panic!("{guid} {service}: {e}"));
        assert!(!d.platform_id.is_empty());
        let argv = mac.calls()[0]["argv"].clone();
        let ids: Vec<&str> = argv.as_array().expect("argv")[3..].iter().filter_map(|v| v.as_str()).collect();
        assert!(ids.contains(&first_working), "{guid} {service}: {ids:?}");
        assert!(!ids.iter().any(|id| id.starts_with("any;-;")), "never `chat id \"any;-;…\"`: {ids:?}");
        assert_eq!(mac.rows().last().map(|r| (r.0.as_str(), r.1)), Some(("hello", 1)), "{guid} {service}");
    }
    // Before macOS 26 guids carry their service and are used as they are.
    let mac = Mac::with_chat("iMessage;+;chat1", "iMessage", 43);
    send(&mac.sender(&[("AMC_STANDIN_MACOS", "15")]), "iMessage;+;chat1", "hi all", &[]).await.expect("sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dm_that_no_chat_id_reaches_goes_to_the_person_as_a_participant() {
    // The chat row Messages has for Ada is not one any chat id form resolves (an unknown
    // service): the participant fallback reaches her.
    let mac = Mac::with_chat("any;-;+15551234567", "RCS-beta", 45);
    send(&mac.sender(&[]), "any;-;+15551234567", "hello", &[]).await.expect("sent through the participant");
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
    let guid = "any;-;+15551234567";
    let mac = Mac::with_chat(guid, "SMS", 45);
    let c = rusqlite::Connection::open(&mac.chat_db).expect("open");
    c.execute(
        "INSERT INTO message (guid, text, handle_id, service, is_from_me, date) VALUES ('s1', 'hi', 1, 'SMS', 0, 800000000000000000)",
        [],
    )
    .expect("message");
    c.execute(
        "INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (1, 1, 800000000000000000)",
        [],
    )
    .expect("join");
    send(&mac.sender(&[]), guid, "hello", &[]).await.expect("sent");
    assert_eq!(mac.calls()[0]["argv"][3], "SMS;-;+15551234567", "{}", mac.calls()[0]);
}
