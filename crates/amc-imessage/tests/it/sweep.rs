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

/// A sweep of a file AMC holds as it is decodes no row, and the next compares no chunk
/// with the store again; one edit far back is the one row read again, once, and only its
/// chunk is compared.
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
    assert_eq!((one.unchanged, one.decoded, one.updated), (12_000 - chunk, 1, 1));
    assert_eq!(sweep(&amc, &db).await.expect("sweep").decoded, 0, "a new sweeper compares all, and finds it as held");
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
