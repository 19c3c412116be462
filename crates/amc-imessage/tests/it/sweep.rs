//! Whatever Messages does to chat.db (rebuilding it in place, joining a row to its chat
//! late, syncing an edit stamped long ago), nothing stays wrong in AMC longer than one
//! sweep; and edits, unsends and renames of the newest rows come on the same read as new
//! messages.
use amc_core::service::Amc;
use amc_imessage::fixture::{ChatDbWriter, apple_ns};
use amc_imessage::sweep::sweep;
use amc_imessage::sync::sync_once;
use amc_testkit::Stored;

use super::{NEVER, SOON, T0, Watcher, amc, blob, dm_chat, move_rowids, shared, text_msg, wait_until};

/// Edits the row with this guid as Messages records an edit made at `at` (its text is now
/// "Test").
fn edit_row(w: &ChatDbWriter, guid: &str, at: i64) {
    w.connection()
        .execute(
            "UPDATE message SET date_edited = ?1, message_summary_info = ?2, attributedBody = ?3, text = NULL \
             WHERE guid = ?4",
            rusqlite::params![
                apple_ns(at),
                blob("message-summary-info", "Edited.plist"),
                blob("attributed-body", "EditedWithFormatting"),
                guid
            ],
        )
        .expect("edit");
}

fn count(amc: &Amc) -> i64 {
    amc.store().admin_channels(None, None).expect("channels").iter().map(|c| c.message_count).sum()
}

/// The stored message sent at `sent_at` (each test's messages have their own times).
fn stored(amc: &Amc, sent_at: i64) -> Option<amc_core::model::Envelope> {
    let channel = amc.store().admin_channels(None, None).expect("channels").into_iter().next()?;
    amc.store().channel_tail(&channel.id, 100_000).expect("messages").into_iter().find(|m| m.sent_at == sent_at)
}

/// `n` messages from Ada in one transaction, `prefix-0` onwards, a second apart.
fn fill(w: &ChatDbWriter, chat: i64, ada: i64, prefix: &str, n: i64, from: i64) {
    w.connection().execute_batch("BEGIN").expect("begin");
    for i in 0..n {
        w.add_message(chat, &text_msg(&format!("{prefix}-{i}"), &format!("{prefix} {i}"), ada, from + i * 1000))
            .expect("m");
    }
    w.connection().execute_batch("COMMIT").expect("commit");
}

/// Rewrites chat.db in place as a rebuild may: every row's ROWID reversed, and ten rows
/// AMC never saw written at ROWIDs 1 to 10, in one transaction.
fn rebuild_reversed(w: &ChatDbWriter, chat: i64, ada: i64, tag: &str) {
    let max: i64 = w.connection().query_row("SELECT max(ROWID) FROM message", [], |r| r.get(0)).expect("max");
    w.connection().execute_batch("PRAGMA foreign_keys = OFF; BEGIN").expect("begin");
    move_rowids(w, &format!("{} - x", max + 11), "x > 0");
    for i in 0..10 {
        w.add_message(chat, &text_msg(&format!("{tag}-{i}"), &format!("{tag} {i}"), ada, T0 + i)).expect("m");
    }
    move_rowids(w, &format!("x - {}", max + 10), &format!("x > {}", max + 10));
    w.connection().execute_batch("COMMIT; PRAGMA foreign_keys = ON").expect("commit");
    let (low, high): (i64, i64) = w
        .connection()
        .query_row("SELECT min(ROWID), max(ROWID) FROM message", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("range");
    assert_eq!((low, high), (1, max + 10), "the rebuilt file fills ROWIDs 1 to {}", max + 10);
}

/// chat.db rewritten in place (same inode) with its 3,000 rows' ROWIDs reversed and ten
/// new rows at ROWIDs 1 to 10: the read past the old checkpoint finds old rows, and the
/// checkpoint then matches the rebuilt file, so only a comparison of the whole file finds
/// the ten. By the running watcher, and by one started after a second rebuild.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_db_rebuilt_in_place_with_its_rowids_reversed_loses_no_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    fill(&w, chat, ada, "kept", 3_000, T0);
    let amc = amc(dir.path());
    assert_eq!(sync_once(&amc, &shared(&path)).await.expect("sync").inserted, 3_000);

    let watcher = Watcher::start(&amc, &path, SOON, SOON);
    rebuild_reversed(&w, chat, ada, "restored");
    wait_until(&amc, "the ten rows written at ROWIDs 1 to 10 are stored", |amc| count(amc) >= 3_010).await;
    watcher.stop().await;
    assert_eq!(count(&amc), 3_010, "nothing doubled");

    // Rebuilt again while AMC is not watching: found once it watches again.
    rebuild_reversed(&w, chat, ada, "again");
    let watcher = Watcher::start(&amc, &path, NEVER, NEVER);
    wait_until(&amc, "the rows of the second rebuild are stored", |amc| count(amc) >= 3_020).await;
    watcher.stop().await;
    assert_eq!(count(&amc), 3_020, "nothing doubled");
}

/// A row whose chat join Messages writes after 2,100 later rows (past the newest rows the
/// read holds back or looks at again) is stored once it is in its chat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_joined_to_its_chat_after_2100_later_rows_is_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    let orphan = w.add_message(chat, &text_msg("orphan", "the gate code changed", ada, T0)).expect("m");
    w.connection().execute("DELETE FROM chat_message_join WHERE message_id = ?1", [orphan]).expect("unjoin");
    fill(&w, chat, ada, "later", 2_100, T0 + 1000);
    let amc = amc(dir.path());
    assert_eq!(sync_once(&amc, &shared(&path)).await.expect("sync").inserted, 2_100);

    let watcher = Watcher::start(&amc, &path, SOON, SOON);
    w.connection()
        .execute(
            "INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (?1, ?2, ?3)",
            [chat, orphan, apple_ns(T0)],
        )
        .expect("join");
    wait_until(&amc, "the row joined late is stored", |amc| stored(amc, T0).is_some()).await;
    watcher.stop().await;
    assert_eq!(stored(&amc, T0).expect("stored").text, "the gate code changed");
    assert_eq!(count(&amc), 2_101);
}

/// An edit stamped an hour before the last edit AMC applied (synced late from another
/// device), of a row far from the newest, is applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_stamped_an_hour_before_the_last_one_applied_is_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    w.add_message(chat, &text_msg("first", "see you at 8", ada, T0)).expect("m");
    w.add_message(chat, &text_msg("second", "bring the keys", ada, T0 + 1)).expect("m");
    fill(&w, chat, ada, "later", 2_100, T0 + 1000);
    let amc = amc(dir.path());
    sync_once(&amc, &shared(&path)).await.expect("sync");
    let watcher = Watcher::start(&amc, &path, SOON, SOON);
    let edit = |guid: &str, at: i64| edit_row(&w, guid, at);
    let two_hours = T0 + 2 * 3_600_000;
    edit("first", two_hours);
    wait_until(&amc, "the first edit is applied", |amc| stored(amc, T0).is_some_and(|m| m.edited_at.is_some())).await;
    edit("second", two_hours - 3_600_000);
    wait_until(&amc, "the edit stamped an hour earlier is applied", |amc| {
        stored(amc, T0 + 1).is_some_and(|m| m.edited_at.is_some())
    })
    .await;
    watcher.stop().await;
    let second = stored(&amc, T0 + 1).expect("stored");
    assert_eq!((second.text.as_str(), second.edited_at), ("Test", Some(two_hours - 3_600_000)));
}

/// An edit, an unsend and a group's rename with no message after it arrive on the read a
/// commit causes, with the fallback check and the sweep an hour away.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_unsends_and_renames_come_on_the_event_path() {
    use amc_imessage::fixture::GroupEvent;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let chat = w.add_chat("any;+;chat493827161", 43, Some("Trip"), &[ada]).expect("chat");
    fill(&w, chat, ada, "m", 50, T0);
    let amc = amc(dir.path());
    let watcher = Watcher::start(&amc, &path, NEVER, NEVER);
    wait_until(&amc, "the first import", |amc| count(amc) == 50).await;

    edit_row(&w, "m-48", T0 + 60_000);
    wait_until(&amc, "the edit", |amc| stored(amc, T0 + 48_000).is_some_and(|m| m.text == "Test")).await;
    w.connection()
        .execute(
            "UPDATE message SET date_edited = ?1, date_retracted = ?1, message_summary_info = ?2, text = NULL \
             WHERE guid = 'm-49'",
            rusqlite::params![apple_ns(T0 + 70_000), blob("message-summary-info", "Deleted.plist")],
        )
        .expect("unsend");
    wait_until(&amc, "the unsend", |amc| stored(amc, T0 + 49_000).is_some_and(|m| m.unsent)).await;
    let rename = GroupEvent {
        guid: "rename".into(),
        handle_id: ada,
        item_type: 2,
        group_title: Some("Lisbon trip".into()),
        at_ms: T0 + 80_000,
        ..Default::default()
    };
    w.add_group_event(chat, &rename).expect("rename");
    wait_until(&amc, "the rename", |amc| {
        amc.store().admin_channels(None, None).expect("channels")[0].name == "Lisbon trip"
    })
    .await;
    watcher.stop().await;
    assert_eq!(count(&amc), 50, "a rename is not a message");
}

/// A row with no text, no attributed body and no files is not a message: not by the
/// read, not by the sweep.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_with_no_text_and_no_files_is_not_a_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    w.add_message(chat, &text_msg("said", "hello", ada, T0)).expect("m");
    w.add_message(chat, &amc_imessage::fixture::FixtureMessage { text: None, ..text_msg("empty", "", ada, T0 + 1) })
        .expect("m");
    w.add_message(chat, &text_msg("blank", "", ada, T0 + 2)).expect("m");
    let amc = amc(dir.path());
    let db = shared(&path);
    assert_eq!(sync_once(&amc, &db).await.expect("sync").inserted, 1);
    assert_eq!(sweep(&amc, &db).await.expect("sweep").inserted, 0);
    assert_eq!(count(&amc), 1);
}

/// A sweep of a file AMC holds as it is decodes no row, and the next compares no range
/// with the store again; one edit far back has its range of rows read again, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_reads_again_only_the_rows_that_differ() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    fill(&w, chat, ada, "m", 12_000, T0);
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    let mut sweeper = amc_imessage::sweep::Sweeper::default();
    let first = sweeper.all(&amc, &db).await.expect("sweep");
    assert_eq!((first.rows, first.unchanged, first.decoded, first.inserted, first.updated), (12_000, 0, 0, 0, 0));
    let quiet = sweeper.all(&amc, &db).await.expect("sweep");
    assert_eq!((quiet.rows, quiet.unchanged, quiet.decoded), (12_000, 12_000, 0));
    w.connection()
        .execute("UPDATE message SET date_edited = ?1 WHERE guid = 'm-7'", [apple_ns(T0 + 60_000)])
        .expect("edit");
    let one = sweeper.all(&amc, &db).await.expect("sweep");
    let chunk = amc_imessage::sweep::SWEEP_CHUNK as usize;
    assert_eq!((one.unchanged, one.decoded, one.updated), (12_000 - chunk, chunk, 1), "only its range is read again");
    assert_eq!(sweep(&amc, &db).await.expect("sweep").decoded, 0, "a new sweeper remembers, and finds it as held");
}

/// A message edited between the read that stored it and the look at the newest rows that
/// follows (the look never saw it unedited) still has its edit applied by that look.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_edited_between_its_read_and_the_next_look_keeps_its_edit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    fill(&w, chat, ada, "m", 10, T0);
    let amc = amc(dir.path());
    let db = shared(&path);
    let mut recent = amc_imessage::sweep::Recent::default();
    sync_once(&amc, &db).await.expect("sync");
    recent.look(&amc, &db).await.expect("look");
    w.add_message(chat, &text_msg("new", "see you at 8", ada, T0 + 60_000)).expect("m");
    sync_once(&amc, &db).await.expect("sync");
    edit_row(&w, "new", T0 + 61_000);
    recent.look(&amc, &db).await.expect("look");
    assert_eq!(stored(&amc, T0 + 60_000).expect("stored").text, "Test", "the edit made before the look");
}

/// A group's new name committed after the rename's row (in a commit of its own, with no
/// row after it) renames the channel on the read that commit causes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_committed_after_the_renames_row_renames_the_channel() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("chat.db");
    let w = ChatDbWriter::create(&path).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let chat = w.add_chat("any;+;chat493827161", 43, Some("Trip"), &[ada]).expect("chat");
    fill(&w, chat, ada, "m", 5, T0);
    let amc = amc(dir.path());
    let db = shared(&path);
    let mut recent = amc_imessage::sweep::Recent::default();
    sync_once(&amc, &db).await.expect("sync");
    recent.look(&amc, &db).await.expect("look");
    let rename = amc_imessage::fixture::GroupEvent {
        guid: "rename".into(),
        handle_id: ada,
        item_type: 2,
        group_title: Some("Lisbon trip".into()),
        at_ms: T0 + 80_000,
        ..Default::default()
    };
    w.add_group_event(chat, &rename).expect("rename");
    w.connection().execute("UPDATE chat SET display_name = 'Trip' WHERE ROWID = ?1", [chat]).expect("as before");
    sync_once(&amc, &db).await.expect("sync");
    recent.look(&amc, &db).await.expect("look");
    w.connection().execute("UPDATE chat SET display_name = 'Lisbon trip' WHERE ROWID = ?1", [chat]).expect("name");
    recent.look(&amc, &db).await.expect("look");
    assert_eq!(amc.store().admin_channels(None, None).expect("channels")[0].name, "Lisbon trip");
}

/// A chat.db of one chat with Ada, its path and writer; AMC, which imported it; and the
/// sweeper whose sweep found AMC's copy equal to it.
struct Swept {
    path: std::path::PathBuf,
    w: ChatDbWriter,
    amc: Amc,
    db: amc_imessage::sync::SharedChatDb,
    sweeper: amc_imessage::sweep::Sweeper,
}

/// `n` messages from Ada (`m-0` onwards, a second apart from T0), imported and swept once.
async fn imported_and_swept(dir: &std::path::Path, n: i64) -> Swept {
    let (path, w, ada, chat) = dm_chat(dir, "any;-;+15551234567");
    fill(&w, chat, ada, "m", n, T0);
    let amc = amc(dir);
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    let mut sweeper = amc_imessage::sweep::Sweeper::default();
    sweeper.all(&amc, &db).await.expect("the first sweep");
    Swept { path, w, amc, db, sweeper }
}

/// The message stored with this AMC id.
fn by_id(amc: &Amc, id: &str) -> amc_core::model::Envelope {
    let channel = amc.store().admin_channels(None, None).expect("channels").into_iter().next().expect("a channel");
    amc.store().channel_tail(&channel.id, 100_000).expect("messages").into_iter().find(|m| m.id == id).expect("kept")
}

/// A row whose guid Messages changes (the row keeps its ROWID), 2,950 rows below the
/// newest, stays one message: AMC's copy is re-keyed, not stored again, by a sweep that
/// saw the row before and by one after a restart; an edit of the row under its new guid
/// then reaches the same message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guid_changed_far_back_rekeys_the_message_instead_of_adding_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Swept { path, w, amc, db, mut sweeper } = imported_and_swept(dir.path(), 3_000).await;
    let id = stored(&amc, T0 + 50_000).expect("stored").id;

    w.connection().execute("UPDATE message SET guid = 'renamed-50' WHERE guid = 'm-50'", []).expect("new guid");
    let report = sweeper.all(&amc, &db).await.expect("sweep");
    assert_eq!((report.inserted, count(&amc)), (0, 3_000), "re-keyed, not stored again");
    w.connection().execute("UPDATE message SET guid = 'renamed-51' WHERE guid = 'm-51'", []).expect("new guid");
    let after_restart = amc_imessage::sweep::Sweeper::default().all(&amc, &db).await.expect("sweep");
    assert_eq!((after_restart.inserted, count(&amc)), (0, 3_000), "also by a sweep after a restart");

    edit_row(&w, "renamed-50", T0 + 4_000_000);
    sweeper.all(&amc, &db).await.expect("sweep");
    let kept = by_id(&amc, &id);
    assert_eq!((kept.text.as_str(), kept.edited_at), ("Test", Some(T0 + 4_000_000)), "the edit reaches it");
    assert_eq!(count(&amc), 3_000);

    // Among the newest rows, changed while AMC was not watching: the watcher's first read
    // of them on opening chat.db re-keys it too, and a later edit reaches the same message.
    let newest = stored(&amc, T0 + 2_990_000).expect("stored").id;
    w.connection().execute("UPDATE message SET guid = 'renamed-2990' WHERE guid = 'm-2990'", []).expect("new guid");
    let watcher = Watcher::start(&amc, &path, NEVER, NEVER);
    edit_row(&w, "renamed-2990", T0 + 4_000_000);
    wait_until(&amc, "the edit reaches the re-keyed message", |amc| by_id(amc, &newest).text == "Test").await;
    watcher.stop().await;
    assert_eq!(count(&amc), 3_000, "nothing doubled");
}

/// Tapbacks read while their message was not yet in a chat (the message 2,100 rows back,
/// joined late, found only by the sweep) are on the message once the sweep stores it:
/// Ada's love, and not the laugh the person took back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tapback_on_a_row_only_the_sweep_finds_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    let target = "A1B2C3D4-0000-4000-8000-000000000001";
    let orphan = w.add_message(chat, &text_msg(target, "the gate code changed", ada, T0)).expect("m");
    w.connection().execute("DELETE FROM chat_message_join WHERE message_id = ?1", [orphan]).expect("unjoin");
    fill(&w, chat, ada, "later", 2_100, T0 + 1000);
    w.add_message(chat, &super::tapback("love", 2000, "Loved “the gate code changed”", ada, T0 + 3_000_000))
        .expect("tapback");
    let mine = |guid: &str, kind: i32, text: &str, at: i64| amc_imessage::fixture::FixtureMessage {
        is_from_me: true,
        ..super::tapback(guid, kind, text, 0, at)
    };
    w.add_message(chat, &mine("laugh", 2003, "Laughed at “the gate code changed”", T0 + 3_000_001)).expect("tapback");
    w.add_message(chat, &mine("unlaugh", 3003, "Removed a laugh from “the gate code changed”", T0 + 3_000_002))
        .expect("tapback");
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    assert!(stored(&amc, T0).is_none(), "not in a chat yet");
    let mut sweeper = amc_imessage::sweep::Sweeper::default();
    sweeper.all(&amc, &db).await.expect("sweep");

    w.connection()
        .execute(
            "INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (?1, ?2, ?3)",
            [chat, orphan, apple_ns(T0)],
        )
        .expect("join");
    sweeper.all(&amc, &db).await.expect("sweep");
    let found = stored(&amc, T0).expect("stored by the sweep");
    let reactions: Vec<(&str, &str)> =
        found.reactions.iter().map(|r| (r.emoji.as_str(), r.sender.id.as_str())).collect();
    assert_eq!(reactions, [("❤️", "+15551234567")]);
}

/// A row joined to a chat whose own row Messages writes after a sweep passed the message
/// (2,100 rows back) is stored by the next sweep, in that chat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_whose_chat_is_written_after_a_sweep_passed_it_is_stored() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15551234567");
    let early = w.add_message(chat, &text_msg("early", "meet at the north gate", ada, T0)).expect("m");
    // Joined to the chat Messages has not written yet (the next chat ROWID).
    w.connection()
        .execute_batch(&format!(
            "PRAGMA foreign_keys = OFF; UPDATE chat_message_join SET chat_id = {} WHERE message_id = {early}",
            chat + 1
        ))
        .expect("join to a chat to come");
    fill(&w, chat, ada, "later", 2_100, T0 + 1000);
    let amc = amc(dir.path());
    let db = shared(&path);
    sync_once(&amc, &db).await.expect("sync");
    let mut sweeper = amc_imessage::sweep::Sweeper::default();
    assert_eq!(sweeper.all(&amc, &db).await.expect("sweep").inserted, 0, "its chat is not there yet");

    let group = w.add_chat("any;+;chat612", 43, Some("Gate crew"), &[ada]).expect("the chat, late");
    assert_eq!(group, chat + 1);
    assert_eq!(sweeper.all(&amc, &db).await.expect("sweep").inserted, 1);
    let channels = amc.store().admin_channels(None, None).expect("channels");
    let crew = channels.iter().find(|c| c.name == "Gate crew").expect("the late chat's channel");
    let messages = amc.store().channel_tail(&crew.id, 10).expect("messages");
    assert_eq!(messages.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(), ["meet at the north gate"]);
}

/// Changes Messages makes to a row in another order than their times say: a second edit
/// stamped before the first, and a text changed with no edit time at all 2,100 rows
/// back. AMC's copy ends as chat.db's row is now: on the event path for the newest rows,
/// by a sweep for rows far back, and by the first sweep after a restart for a change
/// made while AMC was not running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amcs_copy_ends_as_the_row_is_now_whatever_order_the_changes_came_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Swept { w, amc, db, mut sweeper, .. } = imported_and_swept(dir.path(), 2_200).await;
    // A second edit whose time is before the first's (synced from a device whose clock
    // was behind): the row now says "see you at 9", edited at +1 h.
    let second_edit = |guid: &str| {
        w.connection()
            .execute(
                "UPDATE message SET text = 'see you at 9', attributedBody = NULL, message_summary_info = NULL, \
                 date_edited = ?1 WHERE guid = ?2",
                rusqlite::params![apple_ns(T0 + 3_600_000), guid],
            )
            .expect("second edit")
    };

    // The newest rows, on the event path.
    let mut recent = amc_imessage::sweep::Recent::default();
    recent.look(&amc, &db).await.expect("look");
    edit_row(&w, "m-2150", T0 + 7_200_000);
    recent.look(&amc, &db).await.expect("look");
    assert_eq!(stored(&amc, T0 + 2_150_000).expect("stored").text, "Test");
    second_edit("m-2150");
    recent.look(&amc, &db).await.expect("look");
    let newest = stored(&amc, T0 + 2_150_000).expect("stored");
    assert_eq!((newest.text.as_str(), newest.edited_at), ("see you at 9", Some(T0 + 3_600_000)));

    // Far back, by the sweep.
    edit_row(&w, "m-10", T0 + 7_200_000);
    sweeper.all(&amc, &db).await.expect("sweep");
    second_edit("m-10");
    w.connection()
        .execute("UPDATE message SET text = 'the plan changed: north gate' WHERE guid = 'm-20'", [])
        .expect("silent");
    let report = sweeper.all(&amc, &db).await.expect("sweep");
    assert_eq!(report.updated, 2, "{report:?}");
    let far = stored(&amc, T0 + 10_000).expect("stored");
    assert_eq!((far.text.as_str(), far.edited_at), ("see you at 9", Some(T0 + 3_600_000)));
    let silent = stored(&amc, T0 + 20_000).expect("stored");
    assert_eq!((silent.text.as_str(), silent.edited_at), ("the plan changed: north gate", None));

    // While AMC is not running: found by the first sweep of the next start.
    w.connection().execute("UPDATE message SET text = 'gate 4 after all' WHERE guid = 'm-30'", []).expect("silent");
    let restarted = amc_imessage::sweep::Sweeper::default().all(&amc, &db).await.expect("sweep");
    assert_eq!((restarted.updated, restarted.decoded), (1, amc_imessage::sweep::SWEEP_CHUNK as usize));
    assert_eq!(stored(&amc, T0 + 30_000).expect("stored").text, "gate 4 after all");
}

/// A sweep comes for what the event path cannot see, when chat.db shows a sign of it: a
/// text changed 2,100 rows back with no new row is swept within the period for an
/// unexplained change; the same change made with the newest row deleted and the message
/// sequence set back (a rewrite) is swept within the period for a disruption, with the
/// other periods an hour away. (Rows are 1 s apart: `m-N` was sent at T0 + N s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_of_a_change_far_back_brings_a_sweep_within_its_period() {
    use amc_imessage::watch::SweepPeriods;
    let dir = tempfile::tempdir().expect("tempdir");
    let Swept { path, w, amc, .. } = imported_and_swept(dir.path(), 2_200).await;

    // Each watcher's first sweep (on opening chat.db) repairs a change made while AMC was
    // not running, and has passed the first range of rows once it has: a change there
    // after that needs another sweep.
    let first_sweep = |guid: &str, text: &'static str, at: i64| {
        w.connection().execute("UPDATE message SET text = ?1 WHERE guid = ?2", [text, guid]).expect("silent");
        move |amc: &Amc| stored(amc, at).is_some_and(|m| m.text == text)
    };
    let unexplained = SweepPeriods { unexplained: SOON, ..SweepPeriods::all(NEVER) };
    let done = first_sweep("m-4", "bring the ladder", T0 + 4_000);
    let watcher = Watcher::start(&amc, &path, NEVER, super::Sweeps::Periods(unexplained));
    wait_until(&amc, "the first sweep", done).await;
    w.connection().execute("UPDATE message SET text = 'gate 4 after all' WHERE guid = 'm-5'", []).expect("silent");
    wait_until(&amc, "the change far back is swept", |amc| {
        stored(amc, T0 + 5_000).is_some_and(|m| m.text == "gate 4 after all")
    })
    .await;
    watcher.stop().await;

    let disrupted = SweepPeriods { disrupted: SOON, ..SweepPeriods::all(NEVER) };
    let done = first_sweep("m-7", "the ladder is in the shed", T0 + 7_000);
    let watcher = Watcher::start(&amc, &path, NEVER, super::Sweeps::Periods(disrupted));
    wait_until(&amc, "the first sweep", done).await;
    w.connection()
        .execute_batch(
            "BEGIN; UPDATE message SET text = 'north gate, 7 pm' WHERE guid = 'm-6'; \
             DELETE FROM chat_message_join WHERE message_id = (SELECT max(ROWID) FROM message); \
             DELETE FROM message WHERE ROWID = (SELECT max(ROWID) FROM message); \
             UPDATE sqlite_sequence SET seq = (SELECT max(ROWID) FROM message) WHERE name = 'message'; COMMIT",
        )
        .expect("rewrite");
    wait_until(&amc, "the rewrite is swept", |amc| {
        stored(amc, T0 + 6_000).is_some_and(|m| m.text == "north gate, 7 pm")
    })
    .await;
    watcher.stop().await;
}

/// The count of rows up to the checkpoint (how a row written into a gap below it is
/// found) is the same whichever way it is taken: with fewer than 10,000 rows after the
/// checkpoint (the whole table's count less those) and with 10,000 or more (a ROWID
/// range), before and after rows are deleted here and there.
#[test]
fn rows_up_to_a_checkpoint_are_counted_the_same_either_way() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, w, ada, chat) = dm_chat(dir.path(), "any;-;+15550001111");
    fill(&w, chat, ada, "m", 12_000, T0);
    let db = amc_imessage::chatdb::ChatDb::open(&path).expect("open");
    let direct = |at: i64| -> i64 {
        w.connection().query_row("SELECT count(*) FROM message WHERE ROWID <= ?1", [at], |r| r.get(0)).expect("count")
    };
    for deleted in [false, true] {
        if deleted {
            w.connection().execute("DELETE FROM message WHERE ROWID % 7 = 0", []).expect("delete");
        }
        let max: i64 = w.connection().query_row("SELECT max(ROWID) FROM message", [], |r| r.get(0)).expect("max");
        for at in [max, max - 5, max - 9_999, max - 10_000, max - 10_001, 1_000, 0] {
            assert_eq!(db.rows_up_to(at).expect("rows"), direct(at), "up to {at}, rows deleted: {deleted}");
        }
    }
}
