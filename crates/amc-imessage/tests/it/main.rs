//! The iMessage source against chat.db files written the way Messages writes them, with
//! real `attributedBody` and `message_summary_info` blobs from macOS.

mod send;
mod sweep;

use amc_testkit::Stored;
use std::path::{Path, PathBuf};

use amc_core::config::Config;
use amc_core::model::HistoryRelease;
use amc_core::sender::Senders;
use amc_core::service::Amc;
use amc_imessage::SourceError;
use amc_imessage::chatdb::ChatDb;
use amc_imessage::fixture::{ChatDbWriter, FixtureMessage};
use amc_imessage::sync::sync_once;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/imessage")
}

fn blob(kind: &str, name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(kind).join(name)).expect("fixture blob")
}

fn amc(dir: &Path) -> Amc {
    let config = Config::new(dir.join("amc"));
    Amc::start(config, Senders::default()).expect("start")
}

const T0: i64 = 1_777_000_000_000;

/// A chat.db at `dir/chat.db` (current macOS) with one chat with Ada, `guid`: its path, the
/// writer, Ada's handle and the chat.
fn dm_chat(dir: &Path, guid: &str) -> (PathBuf, ChatDbWriter, i64, i64) {
    let path = dir.join("chat.db");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let chat = w.add_chat(guid, 45, None, &[ada]).expect("chat");
    (path, w, ada, chat)
}

/// chat.db opened as the watcher shares it.
fn shared(path: &Path) -> amc_imessage::sync::SharedChatDb {
    std::sync::Arc::new(std::sync::Mutex::new(ChatDb::open(path).expect("open")))
}

fn text_msg(guid: &str, text: &str, handle: i64, at: i64) -> FixtureMessage {
    FixtureMessage {
        guid: guid.into(),
        text: Some(text.into()),
        handle_id: handle,
        sent_at_ms: at,
        ..Default::default()
    }
}

/// A tapback of `kind` (2000 love, 2003 laugh, 3000 removes a love) on the first
/// part of the message with guid `A1B2C3D4-…-000000000001`.
fn tapback(guid: &str, kind: i32, text: &str, handle: i64, at: i64) -> FixtureMessage {
    FixtureMessage {
        associated: Some(("p:0/A1B2C3D4-0000-4000-8000-000000000001".into(), kind)),
        ..text_msg(guid, text, handle, at)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attributed_bodies_decode_to_the_text_macos_shows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "iMessage;-;+15551234567");
    let expected: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("attributed-body.expected.json")).expect("read"))
            .expect("json");
    let names: Vec<&String> = expected.keys().collect();
    for (i, name) in names.iter().enumerate() {
        let m = FixtureMessage {
            guid: format!("guid-{name}"),
            text: None, // macOS 13 and later: the text lives only in attributedBody
            attributed_body: Some(blob("attributed-body", name)),
            handle_id: ada,
            sent_at_ms: T0 + i as i64 * 1000,
            ..Default::default()
        };
        w.add_message(chat, &m).expect("message");
    }
    let db = shared(&path);
    let amc = amc(dir.path());
    let report = sync_once(&amc, &db).await.expect("sync");
    // A body that decodes to nothing, with no files, is not a message.
    let names: Vec<&String> = names.into_iter().filter(|n| *n != "Blank").collect();
    assert_eq!(report.inserted, names.len());
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    assert_eq!((channel.name.as_str(), channel.state.as_str()), ("+15551234567", "pending"));
    amc.store().approve_channel(&channel.id, HistoryRelease::All, None, false).expect("approve");
    let stored = amc.store().channel_tail(&channel.id, 100).expect("messages");
    for (i, name) in names.iter().enumerate() {
        let want = expected[name.as_str()].as_str().expect("text").replace('\u{FFFC}', "");
        assert_eq!(stored[i].text, want, "{name}");
        assert_eq!(stored[i].sender.id, "+15551234567");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_self_messages_replies_edits_and_unsends_arrive_as_macos_shows_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let bob = w.add_handle("bob@example.com").expect("handle");
    let named = w.add_chat("iMessage;+;chat100", 43, Some("Book club"), &[ada, bob]).expect("chat");
    let unnamed = w.add_chat("any;+;chat200", 43, None, &[ada, bob]).expect("chat");
    w.add_message(named, &text_msg("A1B2C3D4-0000-4000-8000-000000000001", "Who brings snacks?", ada, T0)).expect("m");
    w.add_message(named, &FixtureMessage { is_from_me: true, handle_id: 0, ..text_msg("g2", "Me!", 0, T0 + 1000) })
        .expect("m");
    w.add_message(
        named,
        &FixtureMessage {
            reply_to: Some("A1B2C3D4-0000-4000-8000-000000000001".into()),
            ..text_msg("g3", "Thanks", bob, T0 + 2000)
        },
    )
    .expect("m");
    w.add_message(
        named,
        &FixtureMessage {
            attributed_body: Some(blob("attributed-body", "EditedWithFormatting")),
            text: None,
            edited_at_ms: Some(T0 + 60_000),
            message_summary_info: Some(blob("message-summary-info", "Edited.plist")),
            ..text_msg("g4", "", ada, T0 + 3000)
        },
    )
    .expect("m");
    w.add_message(
        named,
        &FixtureMessage {
            text: None,
            edited_at_ms: Some(T0 + 70_000),
            message_summary_info: Some(blob("message-summary-info", "Deleted.plist")),
            ..text_msg("g5", "", bob, T0 + 4000)
        },
    )
    .expect("m");
    // A tapback is a reaction, not a message.
    w.add_message(named, &tapback("g6", 2000, "Loved “Who brings snacks?”", bob, T0 + 5000)).expect("m");
    w.add_message(unnamed, &text_msg("u1", "hi", bob, T0)).expect("m");

    let amc = amc(dir.path());
    let db = shared(&path);
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.rows, report.inserted), (7, 6));
    let channels = amc.store().admin_channels(None, None).expect("channels");
    let names: Vec<(&str, &str)> = channels.iter().map(|c| (c.name.as_str(), c.kind.as_str())).collect();
    assert!(names.contains(&("Book club", "group")), "{names:?}");
    assert!(names.contains(&("+15551234567, bob@example.com", "group")), "{names:?}");
    let club = channels.iter().find(|c| c.name == "Book club").expect("club");
    assert_eq!(club.platform_id, "any;+;chat100", "a channel is its conversation, whatever the service");
    let msgs = amc.store().channel_tail(&club.id, 10).expect("tail");
    assert_eq!(msgs.len(), 5);
    assert!(msgs[1].sender.is_self && !msgs[0].sender.is_self);
    assert_eq!(msgs[2].reply_to.as_deref(), Some(msgs[0].id.as_str()));
    assert!(msgs[3].edited_at.is_some() && !msgs[3].text.is_empty(), "{:?}", msgs[3]);
    assert!(msgs[4].unsent && msgs[4].text.is_empty(), "{:?}", msgs[4]);
    let loved: Vec<(&str, &str)> = msgs[0].reactions.iter().map(|r| (r.emoji.as_str(), r.sender.id.as_str())).collect();
    assert_eq!(loved, vec![("❤️", "bob@example.com")]);

    // Bob takes it back and laughs instead; Ada adds a custom emoji.
    w.add_message(named, &tapback("g7", 3000, "Removed a heart", bob, T0 + 6000)).expect("m");
    w.add_message(named, &tapback("g8", 2003, "Laughed at", bob, T0 + 7000)).expect("m");
    sync_once(&amc, &db).await.expect("sync");
    let msgs = amc.store().channel_tail(&club.id, 10).expect("tail");
    let now: Vec<(&str, &str)> = msgs[0].reactions.iter().map(|r| (r.emoji.as_str(), r.sender.id.as_str())).collect();
    assert_eq!(now, vec![("😂", "bob@example.com")]);
}

/// Messages may commit a message's row before the row that puts it in its chat: the
/// newest rows without a chat wait for the next read (the checkpoint, guid and all,
/// stays before them), and come with it once joined. A row without a chat before a
/// joined one holds nothing back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_rows_wait_for_their_chat() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    let first = w.add_message(chat, &text_msg("j1", "joined", ada, T0)).expect("m");
    let unjoin = |rowid: i64| {
        w.connection().execute("DELETE FROM chat_message_join WHERE message_id = ?1", [rowid]).expect("unjoin")
    };
    let late = w.add_message(chat, &text_msg("j2", "joined late", ada, T0 + 1)).expect("m");
    unjoin(late);
    let after = w.add_message(chat, &text_msg("j3", "after it", ada, T0 + 2)).expect("m");
    unjoin(after);
    let amc = amc(dir.path());
    let db = shared(&path);
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.rows, report.inserted, report.checkpoint), (1, 1, first));
    let held = amc_imessage::sync::read_checkpoint(&amc).await.expect("checkpoint");
    assert_eq!((held.rowid, held.guid.as_deref(), held.rows), (first, Some("j1"), Some(1)));
    for (rowid, at) in [(late, T0 + 1), (after, T0 + 2)] {
        let join = "INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (?1, ?2, ?3)";
        w.connection()
            .execute(join, rusqlite::params![chat, rowid, amc_imessage::fixture::apple_ns(at)])
            .expect("join");
    }
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.rows, report.inserted, report.checkpoint), (2, 2, after));
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    let texts: Vec<String> =
        amc.store().channel_tail(&channel.id, 10).expect("tail").into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["joined", "joined late", "after it"]);
    let stray = w.add_message(chat, &text_msg("j4", "never joined", ada, T0 + 3)).expect("m");
    unjoin(stray);
    let last = w.add_message(chat, &text_msg("j5", "joined at once", ada, T0 + 4)).expect("m");
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.rows, report.inserted, report.checkpoint), (2, 1, last));
}

/// A row that stays without a chat for a minute does not hold back the rows after it for
/// good: it is read as it is (stored nowhere, having no chat), and what comes next is read
/// at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_without_a_chat_for_a_minute_stops_holding_the_rest_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    let first = w.add_message(chat, &text_msg("k1", "joined", ada, T0)).expect("m");
    let stray = w.add_message(chat, &text_msg("k2", "never joined", ada, T0 + 1)).expect("m");
    w.connection().execute("DELETE FROM chat_message_join WHERE message_id = ?1", [stray]).expect("unjoin");
    let amc = amc(dir.path());
    let db = shared(&path);
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.rows, report.checkpoint), (1, first));
    db.lock().expect("chat.db").backdate_hold(std::time::Duration::from_secs(59));
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.rows, report.checkpoint), (0, first), "held for less than a minute");
    db.lock().expect("chat.db").backdate_hold(std::time::Duration::from_secs(1));
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.rows, report.inserted, report.checkpoint), (1, 0, stray));
    let next = w.add_message(chat, &text_msg("k3", "next", ada, T0 + 2)).expect("m");
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.rows, report.inserted, report.checkpoint), (1, 1, next));
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    let texts: Vec<String> =
        amc.store().channel_tail(&channel.id, 10).expect("tail").into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["joined", "next"]);
}

/// A tapback names its message, not a chat: as the newest row without a chat it waits for
/// nothing, and its reaction shows at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tapback_as_the_newest_row_without_a_chat_is_read_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    let loved = FixtureMessage {
        guid: "A1B2C3D4-0000-4000-8000-000000000001".into(),
        ..text_msg("", "see you at eight", ada, T0)
    };
    w.add_message(chat, &loved).expect("m");
    let heart = w.add_message(chat, &tapback("t1", 2000, "Loved “see you at eight”", ada, T0 + 1)).expect("m");
    w.connection().execute("DELETE FROM chat_message_join WHERE message_id = ?1", [heart]).expect("unjoin");
    let amc = amc(dir.path());
    let db = shared(&path);
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.rows, report.checkpoint), (2, heart));
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    let msgs = amc.store().channel_tail(&channel.id, 10).expect("tail");
    let reactions: Vec<&str> = msgs.iter().flat_map(|m| m.reactions.iter().map(|r| r.emoji.as_str())).collect();
    assert_eq!((msgs.len(), reactions), (1, vec!["❤️"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_again_never_duplicates_and_new_rows_arrive_after_the_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let w = ChatDbWriter::create_legacy(&path).expect("an older macOS chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let chat = w.add_chat("iMessage;-;+15551234567", 45, None, &[ada]).expect("chat");
    for i in 0..3 {
        w.add_message(chat, &text_msg(&format!("a{i}"), &format!("m{i}"), ada, T0 + i)).expect("m");
    }
    let amc = amc(dir.path());
    let db = shared(&path);
    let first = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((first.inserted, first.checkpoint), (3, 3));
    let again = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((again.rows, again.inserted), (0, 0));
    // A lost checkpoint (a crash before it was written) re-reads without duplicating.
    amc.store().set_source_state(amc_core::model::Source::Imessage, "chatdb_rowid", "0").expect("reset");
    let reread = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((reread.rows, reread.inserted), (3, 0));
    w.add_message(chat, &text_msg("a3", "m3", ada, T0 + 10)).expect("m");
    let next = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((next.rows, next.inserted, next.checkpoint), (1, 1, 4));
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    assert_eq!(channel.message_count, 4);
}

#[test]
fn a_missing_file_or_another_database_is_reported_clearly() {
    use amc_imessage::watch::full_disk_access_advice;
    let dir = tempfile::tempdir().expect("tempdir");
    // A file that is not there is missing: no permission would help.
    let missing = dir.path().join("nope.db");
    let e = ChatDb::open(&missing).err().expect("no file");
    assert!(matches!(e, SourceError::Missing(_)), "{e:?}");
    let advice = full_disk_access_advice(&missing, &e);
    assert!(advice.contains("missing") && advice.contains("nope.db"), "{advice}");
    assert!(!advice.contains("Full Disk Access"), "{advice}");
    // One that is there but cannot be opened (here a folder) may want Full Disk Access.
    let folder = dir.path().join("chat.db");
    std::fs::create_dir(&folder).expect("mkdir");
    let e = ChatDb::open(&folder).err().expect("a folder");
    assert!(matches!(e, SourceError::CannotOpen { .. }), "{e:?}");
    assert!(full_disk_access_advice(&folder, &e).contains("Full Disk Access"));
    let other = dir.path().join("other.db");
    rusqlite::Connection::open(&other).expect("db").execute_batch("CREATE TABLE t (x);").expect("table");
    match ChatDb::open(&other) {
        Err(SourceError::NotMessages(_)) => {}
        r => panic!("{:?}", r.err()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_and_unsends_made_later_are_found_by_the_rescan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "iMessage;-;+15551234567");
    w.add_message(chat, &text_msg("e1", "see you at 8", ada, T0)).expect("m");
    w.add_message(chat, &text_msg("e2", "oops wrong chat", ada, T0 + 1)).expect("m");
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");

    // Later, Messages records an edit and an unsend in the same rows.
    w.connection()
        .execute(
            "UPDATE message SET date_edited = ?1, message_summary_info = ?2, attributedBody = ?3, text = NULL WHERE guid = 'e1'",
            rusqlite::params![
                amc_imessage::fixture::apple_ns(T0 + 60_000),
                blob("message-summary-info", "Edited.plist"),
                blob("attributed-body", "EditedWithFormatting")
            ],
        )
        .expect("edit");
    w.connection()
        .execute(
            "UPDATE message SET date_edited = ?1, message_summary_info = ?2 WHERE guid = 'e2'",
            rusqlite::params![
                amc_imessage::fixture::apple_ns(T0 + 70_000),
                blob("message-summary-info", "Deleted.plist")
            ],
        )
        .expect("unsend");
    let plain = sync_once(&amc, &db).await.expect("sync");
    assert_eq!(plain.rows, 0, "no new rows: the regular read cannot see the change");
    let rescan = amc_imessage::sync::rescan_recent(&amc, &db).await.expect("rescan");
    assert_eq!((rescan.rows, rescan.updated, rescan.inserted), (2, 2, 0));
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    let msgs = amc.store().channel_tail(&channel.id, 10).expect("tail");
    assert!(msgs[0].edited_at.is_some() && msgs[0].text == "Test", "{:?}", msgs[0]);
    // An unsent message keeps the text AMC saw, and is not an edit.
    assert!(msgs[1].unsent && msgs[1].text == "oops wrong chat" && msgs[1].edited_at.is_none(), "{:?}", msgs[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_carry_their_file_type_and_size_and_offloaded_ones_are_unavailable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let photo = dir.path().join("IMG_4410.HEIC");
    std::fs::write(&photo, b"heic bytes").expect("photo");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let chat = w.add_chat("iMessage;-;+15551234567", 45, None, &[ada]).expect("chat");
    let m = FixtureMessage {
        text: None,
        attributed_body: Some(blob("attributed-body", "Attachment")),
        ..text_msg("att", "", ada, T0)
    };
    let row = w.add_message(chat, &m).expect("m");
    w.add_attachment(row, "at-1", photo.to_str().expect("utf8"), "image/heic", 10).expect("attachment");
    w.add_attachment(row, "at-2", "~/Library/Messages/Attachments/ab/12/offloaded.mov", "video/quicktime", 4_000_000)
        .expect("attachment");
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    amc.store().approve_channel(&channel.id, HistoryRelease::All, None, false).expect("approve");
    let msg = amc.store().channel_tail(&channel.id, 1).expect("tail").remove(0);
    assert!(msg.text.starts_with("This is how the notes look"), "placeholders removed: {:?}", msg.text);
    type Described<'a> = (Option<&'a str>, Option<&'a str>, Option<i64>, bool);
    let atts: Vec<Described<'_>> = msg
        .attachments
        .iter()
        .map(|a| (a.filename.as_deref(), a.mime_type.as_deref(), a.size_bytes, a.available))
        .collect();
    assert_eq!(
        atts,
        vec![
            (Some("IMG_4410.HEIC"), Some("image/heic"), Some(10), true),
            (Some("offloaded.mov"), Some("video/quicktime"), Some(4_000_000), false)
        ]
    );
    let file = amc.store().visible_attachment("any-agent", &msg.attachments[0].id).expect("file");
    assert_eq!(file.local_path.as_deref(), photo.to_str());
    let offloaded = amc.store().visible_attachment("any-agent", &msg.attachments[1].id).expect("row");
    let home = std::env::var("HOME").unwrap_or_default();
    assert!(offloaded.local_path.as_deref().is_some_and(|p| p.starts_with(&home) && !p.contains('~')), "{offloaded:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_messages_that_arrive_late_are_stored_but_not_surfaced_as_unread() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "iMessage;-;+15551234567");
    let now = amc_core::time::now_ms();
    w.add_message(chat, &text_msg("first", "hello", ada, now - 60_000)).expect("m");
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("initial import");
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    amc.store().approve_channel(&channel.id, HistoryRelease::All, None, false).expect("approve");
    amc.store().create_agent("claude").expect("agent");

    // iCloud delivers a month-old message now, beside a new one.
    w.add_message(chat, &text_msg("old", "from last month", ada, now - 30 * 86_400_000)).expect("m");
    w.add_message(chat, &text_msg("new", "just now", ada, now)).expect("m");
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.inserted, report.late), (2, 1));
    let q = amc_store::UnreadQuery { limit: 100, ..Default::default() };
    let (unread, _) = amc.store().unread("claude", &q).expect("unread");
    let texts: Vec<&str> = unread.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, vec!["hello", "just now"], "the late message is kept out of unread");
    assert_eq!(amc.store().channel_tail(&channel.id, 10).expect("tail").len(), 3, "but it is stored");
}

/// A Contacts database laid out as macOS keeps it (the tables and columns AMC reads).
fn contacts_db(path: &Path) {
    let c = rusqlite::Connection::open(path).expect("contacts");
    c.execute_batch(
        "CREATE TABLE ZABCDRECORD (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, ZFIRSTNAME VARCHAR, ZLASTNAME VARCHAR, ZORGANIZATION VARCHAR, ZNICKNAME VARCHAR);
         CREATE TABLE ZABCDPHONENUMBER (Z_PK INTEGER PRIMARY KEY, ZOWNER INTEGER, ZFULLNUMBER VARCHAR, ZLABEL VARCHAR);
         CREATE TABLE ZABCDEMAILADDRESS (Z_PK INTEGER PRIMARY KEY, ZOWNER INTEGER, ZADDRESS VARCHAR, ZADDRESSNORMALIZED VARCHAR);
         INSERT INTO ZABCDRECORD VALUES (1, 22, 'Ada', 'Lovelace', NULL, NULL), (2, 22, NULL, NULL, 'Acme Corp', NULL);
         INSERT INTO ZABCDPHONENUMBER VALUES (1, 1, '+1 (555) 123-4567', '_$!<Mobile>!$_');
         INSERT INTO ZABCDEMAILADDRESS VALUES (1, 2, 'Support@Acme.example', 'support@acme.example');",
    )
    .expect("schema");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn senders_and_chats_are_named_from_contacts_when_it_is_readable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let book = dir.path().join("AddressBook-v22.abcddb");
    contacts_db(&book);
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let acme = w.add_handle("support@acme.example").expect("handle");
    let stranger = w.add_handle("+15559999999").expect("handle");
    let dm = w.add_chat("iMessage;-;+15551234567", 45, None, &[ada]).expect("chat");
    let group = w.add_chat("iMessage;+;chat300", 43, None, &[ada, acme, stranger]).expect("chat");
    w.add_message(dm, &text_msg("c1", "hi", ada, T0)).expect("m");
    w.add_message(group, &text_msg("c2", "ticket 42", acme, T0 + 1)).expect("m");
    w.add_message(group, &text_msg("c3", "who's this?", stranger, T0 + 2)).expect("m");
    let amc = amc(dir.path());
    let contacts = amc_imessage::contacts::Contacts::load(&[book, dir.path().join("missing.abcddb")]);
    assert_eq!(contacts.len(), 2);
    let db = ChatDb::open(&path).expect("open").with_contacts(contacts);
    let db = std::sync::Arc::new(std::sync::Mutex::new(db));
    sync_once(&amc, &db).await.expect("sync");
    let channels = amc.store().admin_channels(None, None).expect("channels");
    let mut names: Vec<&str> = channels.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, vec!["Ada Lovelace", "Ada Lovelace, Acme Corp, +15559999999"]);
    let grp = channels.iter().find(|c| c.kind.as_str() == "group").expect("group");
    let msgs = amc.store().channel_tail(&grp.id, 10).expect("tail");
    let senders: Vec<(&str, Option<&str>)> =
        msgs.iter().map(|m| (m.sender.id.as_str(), m.sender.display_name.as_deref())).collect();
    assert_eq!(senders, vec![("support@acme.example", Some("Acme Corp")), ("+15559999999", None)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuilt_chat_db_whose_rowids_now_mean_other_messages_is_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    {
        let w = ChatDbWriter::create(&path).expect("chat.db");
        let ada = w.add_handle("+15551234567").expect("handle");
        let chat = w.add_chat("iMessage;-;+15551234567", 45, None, &[ada]).expect("chat");
        for i in 0..3 {
            w.add_message(chat, &text_msg(&format!("old-{i}"), &format!("old {i}"), ada, T0 + i)).expect("m");
        }
    }
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    drop(db);
    // Rebuilt (a restore, a migration): more rows than before, other messages at the same ROWIDs.
    std::fs::remove_file(&path).expect("rm");
    let _ = std::fs::remove_file(dir.path().join("chat.db-wal"));
    {
        let w = ChatDbWriter::create(&path).expect("chat.db");
        let ada = w.add_handle("+15551234567").expect("handle");
        let chat = w.add_chat("iMessage;-;+15551234567", 45, None, &[ada]).expect("chat");
        for i in 0..5 {
            w.add_message(chat, &text_msg(&format!("new-{i}"), &format!("new {i}"), ada, T0 + 10 + i)).expect("m");
        }
    }
    let db = std::sync::Arc::new(std::sync::Mutex::new(ChatDb::open(&path).expect("open")));
    amc_imessage::watch::resync_if_rebuilt(&amc, &db).await;
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!(report.inserted, 5, "every message of the rebuilt file is read, none skipped");
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    assert_eq!(channel.message_count, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attachment_that_finishes_downloading_becomes_available() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let photo = dir.path().join("later.jpg");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let chat = w.add_chat("iMessage;-;+15551234567", 45, None, &[ada]).expect("chat");
    let row = w.add_message(chat, &text_msg("dl", "photo", ada, T0)).expect("m");
    w.add_attachment(row, "dl-1", photo.to_str().expect("utf8"), "image/jpeg", 0).expect("attachment");
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    let before = amc.store().channel_tail(&channel.id, 1).expect("tail").remove(0);
    assert!(!before.attachments[0].available, "still downloading");

    std::fs::write(&photo, b"jpeg").expect("downloaded");
    w.connection().execute("UPDATE attachment SET total_bytes = 4 WHERE guid = 'dl-1'", []).expect("update");
    amc_imessage::sync::rescan_recent(&amc, &db).await.expect("rescan");
    let after = amc.store().channel_tail(&channel.id, 1).expect("tail").remove(0);
    assert!(after.attachments[0].available);
    assert_eq!(after.attachments[0].size_bytes, Some(4));
    assert_eq!(after.attachments[0].id, before.attachments[0].id, "the same attachment, updated");
}

/// chat.db's `date` and `is_from_me` have no NOT NULL constraint (the schema pages), and
/// an odd or damaged file can hold NULL, text or a blob there. Such a row must not stop
/// every row after it from being read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_with_null_or_mistyped_dates_and_senders_never_stop_ingest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "iMessage;-;+15551234567");
    for i in 0..34 {
        w.add_message(chat, &text_msg(&format!("r{i}"), &format!("row {i}"), ada, T0 + i * 1000)).expect("m");
    }
    let bad = [
        "UPDATE message SET date = NULL WHERE guid = 'r3'",
        "UPDATE message SET is_from_me = NULL WHERE guid = 'r4'",
        "UPDATE message SET date = NULL, is_from_me = NULL WHERE guid = 'r5'",
        "UPDATE message SET date = 'yesterday' WHERE guid = 'r6'",
        "UPDATE message SET is_from_me = x'00' WHERE guid = 'r7'",
        "UPDATE message SET date = CAST(date AS REAL) WHERE guid = 'r8'",
    ];
    for sql in bad {
        w.connection().execute(sql, []).expect(sql);
    }
    let amc = amc(dir.path());
    let db = shared(&path);
    let report = sync_once(&amc, &db).await.expect("ingest goes on past bad rows");
    assert_eq!((report.rows, report.inserted, report.checkpoint), (34, 34, 34));
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    let msgs = amc.store().channel_tail(&channel.id, 50).expect("tail");
    let texts: Vec<&str> = msgs.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, (0..34).map(|i| format!("row {i}")).collect::<Vec<_>>(), "every row, in order");
    // A missing date takes the previous row's, so the message keeps its place and is
    // not taken for one that arrived late.
    assert_eq!(msgs[3].sent_at, msgs[2].sent_at);
    assert_eq!(msgs[6].sent_at, msgs[5].sent_at);
    // A missing sender flag reads as someone else's message: shown to agents rather than hidden.
    assert!(msgs[4..8].iter().all(|m| !m.sender.is_self), "{:?}", &msgs[4..8]);
}

/// Moves the rows of `message` matching `which` (and their joins) to the ROWIDs `to`
/// gives; both are SQL in `x`, the current ROWID.
fn move_rowids(w: &ChatDbWriter, to: &str, which: &str) {
    let (to_j, which_j) = (to.replace('x', "message_id"), which.replace('x', "message_id"));
    let (to_m, which_m) = (to.replace('x', "ROWID"), which.replace('x', "ROWID"));
    w.connection()
        .execute_batch(&format!(
            "PRAGMA foreign_keys = OFF;
             UPDATE chat_message_join SET message_id = -({to_j}) WHERE {which_j};
             UPDATE message SET ROWID = -({to_m}) WHERE {which_m};
             UPDATE chat_message_join SET message_id = -message_id WHERE message_id < 0;
             UPDATE message SET ROWID = -ROWID WHERE ROWID < 0;
             PRAGMA foreign_keys = ON;"
        ))
        .expect("move rowids");
}

/// chat.db rebuilt in place (same file, same inode): earlier messages are written into
/// ROWIDs below AMC's checkpoint while the checkpoint's ROWID still holds the same
/// message. Every new row must be read, by the running watcher and after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_written_below_the_checkpoint_of_a_chat_db_rebuilt_in_place_are_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "iMessage;-;+15551234567");
    for i in 0..20 {
        w.add_message(chat, &text_msg(&format!("kept-{i}"), &format!("kept {i}"), ada, T0 + i * 10)).expect("m");
    }
    // The first file had gaps: ROWIDs 3, 6, …, 60.
    move_rowids(&w, "x * 3", "x <= 20");
    let amc = amc(dir.path());
    let db = shared(&path);
    assert_eq!(sync_once(&amc, &db).await.expect("sync").checkpoint, 60);

    let count = |amc: &Amc| amc.store().admin_channels(None, None).expect("channels")[0].message_count;
    let mut events = amc.events().subscribe();
    let watcher = Watcher::start(&amc, &path, SOON, Sweeps::Default);
    // The rebuild fills the gaps with ten messages restored from elsewhere, in one
    // transaction, as a rebuild writes: the watcher never sees a row at its first ROWID,
    // nor a row moved while its chat's join is not.
    w.connection().execute_batch("PRAGMA foreign_keys = OFF; BEGIN").expect("begin");
    for i in 0..10 {
        w.add_message(chat, &text_msg(&format!("restored-{i}"), &format!("restored {i}"), ada, T0 + i * 10 + 5))
            .expect("m");
    }
    move_rowids(&w, "(x - 61) * 3 + 1", "x > 60");
    w.connection().execute_batch("COMMIT; PRAGMA foreign_keys = ON").expect("commit");
    assert_eq!(
        w.connection().query_row("SELECT max(ROWID) FROM message", [], |r| r.get::<_, i64>(0)).expect("max"),
        60
    );
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while count(&amc) < 30 {
            let _ = events.recv().await;
        }
    })
    .await
    .expect("the watcher reads the rows written below its checkpoint");
    watcher.stop().await;
    assert_eq!(count(&amc), 30);

    // After a restart too: more rows below the checkpoint, found on opening.
    for i in 0..5 {
        w.add_message(chat, &text_msg(&format!("late-{i}"), &format!("late {i}"), ada, T0 + i * 10 + 7)).expect("m");
    }
    move_rowids(&w, "(x - 61) * 3 + 2", "x > 60");
    let db = std::sync::Arc::new(std::sync::Mutex::new(ChatDb::open(&path).expect("open")));
    amc_imessage::watch::resync_if_rebuilt(&amc, &db).await;
    sync_once(&amc, &db).await.expect("sync");
    assert_eq!(count(&amc), 35);
}

/// A running watcher of a chat.db.
struct Watcher {
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Watcher {
    /// Watches `path` with a fallback check every `poll` and sweeps as `sweeps` says,
    /// given only the folder events a Mac's FSEvents delivers.
    fn start(amc: &Amc, path: &Path, poll: std::time::Duration, sweeps: impl Into<Sweeps>) -> Self {
        let sweeps = match sweeps.into() {
            Sweeps::Default => amc_imessage::watch::SweepPeriods::default(),
            Sweeps::Every(period) => amc_imessage::watch::SweepPeriods::all(period),
            Sweeps::Periods(periods) => periods,
        };
        use amc_imessage::watch::{DirEvents, WatchConfig};
        let cfg = WatchConfig {
            chat_db: path.to_owned(),
            poll,
            sweeps,
            contacts: Vec::new(),
            late_horizon: Some(amc_imessage::settings::LATE_HORIZON),
            dir_events: DirEvents::Namespace,
        };
        let stop = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(amc_imessage::watch::run(amc.clone(), cfg, stop.clone()));
        Self { stop, task }
    }

    async fn stop(self) {
        self.stop.cancel();
        self.task.await.expect("watcher");
    }
}

/// When a test's watcher sweeps.
enum Sweeps {
    /// As AMC does.
    Default,
    /// Every so often, whatever the reason.
    Every(std::time::Duration),
    /// As given.
    Periods(amc_imessage::watch::SweepPeriods),
}

impl From<std::time::Duration> for Sweeps {
    fn from(period: std::time::Duration) -> Self {
        Self::Every(period)
    }
}

/// A short period, so the tests need not wait for the real ones.
const SOON: std::time::Duration = std::time::Duration::from_millis(200);
/// Never, within a test: only the event path can deliver.
const NEVER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Waits, event by event, until `done` holds for the store (at most 20 s).
async fn wait_until(amc: &Amc, what: &str, done: impl Fn(&Amc) -> bool) {
    let mut events = amc.events().subscribe();
    let waited = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        while !done(amc) {
            let _ = events.recv().await;
        }
    })
    .await;
    assert!(waited.is_ok(), "timed out waiting until {what}");
}

/// An edit or an unsend of an old message (far beyond the newest rows the rescan reads
/// again) is applied, and an unsent message keeps the text AMC saw, with no edit time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_and_unsends_of_old_messages_are_applied_wherever_the_row_lies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "iMessage;-;+15551234567");
    w.connection().execute_batch("BEGIN").expect("begin");
    w.add_message(chat, &text_msg("old-edit", "see you at 8", ada, T0)).expect("m");
    w.add_message(chat, &text_msg("old-unsend", "my door code is 4711", ada, T0 + 1)).expect("m");
    let total = amc_imessage::sync::RESCAN_ROWS + 500;
    for i in 2..total {
        w.add_message(chat, &text_msg(&format!("n{i}"), &format!("n {i}"), ada, T0 + i)).expect("m");
    }
    w.connection().execute_batch("COMMIT").expect("commit");
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    drop(db);
    let watcher = Watcher::start(&amc, &path, SOON, SOON);
    w.connection()
        .execute(
            "UPDATE message SET date_edited = ?1, message_summary_info = ?2, attributedBody = ?3, text = NULL \
             WHERE guid = 'old-edit'",
            rusqlite::params![
                amc_imessage::fixture::apple_ns(T0 + 60_000),
                blob("message-summary-info", "Edited.plist"),
                blob("attributed-body", "EditedWithFormatting")
            ],
        )
        .expect("edit");
    w.connection()
        .execute(
            "UPDATE message SET date_edited = ?1, date_retracted = ?1, message_summary_info = ?2, text = NULL \
             WHERE guid = 'old-unsend'",
            rusqlite::params![
                amc_imessage::fixture::apple_ns(T0 + 70_000),
                blob("message-summary-info", "Deleted.plist")
            ],
        )
        .expect("unsend");
    let first_two = |amc: &Amc| {
        let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
        let mut all = amc.store().channel_tail(&channel.id, 10_000).expect("messages");
        all.truncate(2);
        all
    };
    wait_until(&amc, "the old edit and unsend are applied", |amc| {
        let msgs = first_two(amc);
        msgs[0].edited_at.is_some() && msgs[1].unsent
    })
    .await;
    watcher.stop().await;
    let msgs = first_two(&amc);
    assert_eq!(msgs[0].text, "Test", "the edited text");
    assert_eq!(msgs[1].text, "my door code is 4711", "an unsent message keeps what AMC last saw");
    assert_eq!(msgs[1].edited_at, None, "an unsend is not an edit");
}

/// U+FFFC stands for an attachment only where there is one: in a plain text it is what
/// the sender typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_replacement_character_without_an_attachment_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "iMessage;-;+15551234567");
    w.add_message(chat, &text_msg("fffc", "look \u{FFFC} here", ada, T0)).expect("m");
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    assert_eq!(amc.store().channel_tail(&channel.id, 1).expect("tail")[0].text, "look \u{FFFC} here");
}

/// Renames and member changes are rows of their own in chat.db (`item_type` ≠ 0) with no
/// text: they never become empty messages, and a rename renames the channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_events_are_not_messages_and_a_rename_renames_the_channel() {
    use amc_imessage::fixture::GroupEvent;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let bo = w.add_handle("bo@example.com").expect("handle");
    let chat = w.add_chat("any;+;chat493827161", 43, Some("Trip"), &[ada, bo]).expect("chat");
    w.add_message(chat, &text_msg("g1", "who's in?", ada, T0)).expect("m");
    let events = [
        GroupEvent {
            guid: "e1".into(),
            handle_id: ada,
            item_type: 1,
            other_handle: bo,
            at_ms: T0 + 1,
            ..Default::default()
        },
        GroupEvent {
            guid: "e2".into(),
            handle_id: ada,
            item_type: 2,
            group_title: Some("Lisbon trip".into()),
            at_ms: T0 + 2,
            ..Default::default()
        },
        GroupEvent {
            guid: "e3".into(),
            handle_id: ada,
            item_type: 1,
            group_action_type: 1,
            other_handle: bo,
            at_ms: T0 + 3,
            ..Default::default()
        },
        GroupEvent { guid: "e4".into(), handle_id: bo, item_type: 3, at_ms: T0 + 4, ..Default::default() },
    ];
    for e in &events {
        w.add_group_event(chat, e).expect("event");
    }
    w.add_message(chat, &text_msg("g2", "me!", bo, T0 + 5)).expect("m");
    let amc = amc(dir.path());
    let db = shared(&path);
    let report = sync_once(&amc, &db).await.expect("sync");
    assert_eq!((report.rows, report.inserted), (6, 2), "only the two texts are messages");
    let channel = amc.store().admin_channels(None, None).expect("channels").remove(0);
    assert_eq!(channel.name, "Lisbon trip");
    let texts: Vec<String> =
        amc.store().channel_tail(&channel.id, 10).expect("tail").into_iter().map(|m| m.text).collect();
    assert_eq!(texts, ["who's in?", "me!"]);
}

/// On a Mac, FSEvents reports no write to a file that stays open (Messages keeps
/// chat.db-wal open): the Messages folder's watch sees only files made, removed or renamed
/// (`DirEvents::Namespace`). Every commit must still be read at once, without the fallback
/// check (an hour here), even by a writer at `synchronous=FULL` that never closes the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_to_an_open_wal_are_read_without_directory_write_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let messages = dir.path().join("Messages");
    std::fs::create_dir_all(&messages).expect("mkdir");
    let path = messages.join("chat.db");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    w.connection().pragma_update(None, "synchronous", "FULL").expect("pragma");
    let ada = w.add_handle("+15551234567").expect("handle");
    let chat = w.add_chat("any;-;+15551234567", 45, None, &[ada]).expect("chat");
    w.add_message(chat, &text_msg("w0", "first", ada, T0)).expect("m");
    let amc = amc(dir.path());
    let watcher = Watcher::start(&amc, &path, NEVER, Sweeps::Default);
    let count =
        |amc: &Amc| amc.store().admin_channels(None, None).expect("channels").first().map_or(0, |c| c.message_count);
    wait_until(&amc, "the first message is read", |amc| count(amc) == 1).await;
    for i in 1..=200 {
        w.add_message(chat, &text_msg(&format!("w{i}"), &format!("message {i}"), ada, T0 + i)).expect("m");
        wait_until(&amc, &format!("commit {i} is read without the fallback check"), |amc| count(amc) == i + 1).await;
    }
    watcher.stop().await;
}

/// `--chat-db` may name a copy with another name (`messages.sqlite`): its own writes and
/// its own write-ahead log (`messages.sqlite-wal`) are followed as chat.db's are, each
/// commit read at once, with the fallback check and the sweep an hour away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_db_under_another_name_is_followed_by_its_own_events() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("messages.sqlite");
    let w = ChatDbWriter::create(&path).expect("messages.sqlite");
    let ada = w.add_handle("+15551234567").expect("handle");
    let chat = w.add_chat("any;-;+15551234567", 45, None, &[ada]).expect("chat");
    w.add_message(chat, &text_msg("n0", "first", ada, T0)).expect("m");
    assert!(dir.path().join("messages.sqlite-wal").exists(), "SQLite names the log after the file");
    let amc = amc(dir.path());
    let watcher = Watcher::start(&amc, &path, NEVER, NEVER);
    let count =
        |amc: &Amc| amc.store().admin_channels(None, None).expect("channels").first().map_or(0, |c| c.message_count);
    wait_until(&amc, "the first message is read", |amc| count(amc) == 1).await;
    for i in 1..=5 {
        w.add_message(chat, &text_msg(&format!("n{i}"), &format!("message {i}"), ada, T0 + i)).expect("m");
        wait_until(&amc, &format!("commit {i} is read without the fallback check"), |amc| count(amc) == i + 1).await;
    }
    watcher.stop().await;
}

/// Deleting messages in Messages (or its "keep messages" purge) is not a rebuild: nothing
/// is read again, and the checkpoint keeps its place with the new count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_rows_below_the_checkpoint_are_not_a_rebuild() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    for i in 0..10 {
        w.add_message(chat, &text_msg(&format!("d{i}"), &format!("m{i}"), ada, T0 + i)).expect("m");
    }
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    w.connection().execute_batch("DELETE FROM message WHERE guid IN ('d2', 'd9')").expect("delete");
    amc_imessage::watch::resync_if_rebuilt(&amc, &db).await;
    let checkpoint = amc_imessage::sync::read_checkpoint(&amc).await.expect("checkpoint");
    assert_eq!((checkpoint.rowid, checkpoint.rows), (10, Some(8)), "{checkpoint:?}");
    let again = sync_once(&amc, &db).await.expect("sync");
    assert_eq!(again.rows, 0, "nothing is read again");
}

/// chat.db can hold one person's chats under several services (`iMessage;-;X`, `SMS;-;X`,
/// macOS 26's `any;-;X`): they are one channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_persons_chats_across_services_are_one_channel() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    for (i, guid) in ["iMessage;-;+15551234567", "SMS;-;+15551234567", "any;-;+15551234567"].iter().enumerate() {
        let chat = w.add_chat(guid, 45, None, &[ada]).expect("chat");
        w.add_message(chat, &text_msg(&format!("p{i}"), &format!("on {guid}"), ada, T0 + i as i64)).expect("m");
    }
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    let channels = amc.store().admin_channels(None, None).expect("channels");
    assert_eq!(channels.len(), 1, "{channels:?}");
    assert_eq!((channels[0].platform_id.as_str(), channels[0].message_count), ("any;-;+15551234567", 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_import_is_searchable_once_indexed_and_later_messages_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "iMessage;-;+15551234567");
    for i in 0..50 {
        w.add_message(chat, &text_msg(&format!("f{i}"), &format!("imported number {i}"), ada, T0 + i)).expect("m");
    }
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("first import");
    let ch = amc.store().admin_channels(None, None).expect("channels").remove(0).id;
    amc.store().approve_channel(&ch, amc_core::model::HistoryRelease::All, None, false).expect("approve");
    let search = |q: &str| {
        let params = amc_core::service::SearchParams { query: Some(q.into()), limit: Some(50), ..Default::default() };
        let amc = amc.clone();
        async move { amc.search_all(params).await.expect("search").results.len() }
    };
    // Indexed in bulk after the import, in the background.
    amc_testkit::eventually("the import to be indexed", || async { (search("imported").await == 50).then_some(()) })
        .await;
    w.add_message(chat, &text_msg("n1", "arrived later", ada, T0 + 100)).expect("m");
    sync_once(&amc, &db).await.expect("sync");
    assert_eq!(search("later").await, 1, "indexed as it is stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_messages_leaves_unnamed_in_a_one_to_one_chat_is_from_the_other_side() {
    // A short code's chat whose row names no handle: the sender is the chat's, so its
    // numbers are codes, hidden from agents like those of a row that names it.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let short = w.add_handle("72975").expect("handle");
    let chat = w.add_chat("SMS;-;72975", 45, None, &[short]).expect("chat");
    w.add_message(chat, &text_msg("u1", "661011", 0, T0)).expect("m");
    w.add_message(chat, &text_msg("u2", "551012", short, T0 + 1)).expect("m");
    let amc = amc(dir.path());
    sync_once(&amc, &shared(&path)).await.expect("sync");
    let channel = amc.store().admin_channels(None, None).expect("channels").pop().expect("channel");
    let msgs = amc.store().channel_tail(&channel.id, 10).expect("tail");
    let senders: Vec<(&str, &str)> = msgs.iter().map(|m| (m.text.as_str(), m.sender.id.as_str())).collect();
    assert_eq!(senders, [("661011", "72975"), ("551012", "72975")]);
    // What ingest stored of each: a code (bit 1), which agents are not given.
    let db = rusqlite::Connection::open(amc.config().db_path()).expect("store");
    let kinds: Vec<i64> = db
        .prepare("SELECT secrets FROM messages ORDER BY sent_at")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("secrets");
    assert_eq!(kinds, [1, 1]);
}

/// Who reads each conversation, for the readers rule of agents' sends: a group's
/// participants as chat.db joins them, a one-to-one chat's handle; filled in on opening
/// chat.db for channels stored before AMC kept them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_channel_knows_who_reads_it_from_the_chats_participants() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let bob = w.add_handle("Bob@Example.com").expect("handle");
    let group = w.add_chat("iMessage;+;chat100", 43, Some("Book club"), &[ada, bob]).expect("chat");
    let dm = w.add_chat("SMS;-;+15551234567", 45, None, &[ada]).expect("chat");
    w.add_message(group, &text_msg("r1", "Who brings snacks?", ada, T0)).expect("m");
    w.add_message(dm, &text_msg("r2", "Hi", ada, T0 + 1000)).expect("m");
    let amc = amc(dir.path());
    let db = shared(&path);
    amc_imessage::sync::sync_once(&amc, &db).await.expect("sync");
    let readers = |amc: &Amc| {
        amc.database()
            .read(|tx| {
                let mut stmt = tx.prepare("SELECT platform_id, readers FROM channels ORDER BY platform_id")?;
                let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?)))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .expect("read")
    };
    let expected = vec![
        ("any;+;chat100".to_owned(), Some(r#"["+15551234567","bob@example.com"]"#.to_owned())),
        ("any;-;+15551234567".to_owned(), Some(r#"["+15551234567"]"#.to_owned())),
    ];
    assert_eq!(readers(&amc), expected);
    // As a store from before readers were kept: the opening of chat.db fills them in.
    amc.database().write(|tx| Ok(tx.execute("UPDATE channels SET readers = NULL", [])?)).expect("forget");
    amc_imessage::sync::store_readers(&amc, &db).await.expect("readers");
    assert_eq!(readers(&amc), expected);
}
