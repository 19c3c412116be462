//! A database from before the relay had its own crate: the core's old migration 0002 made
//! the relay's tables and kept the cursor key in `settings`. Opening the relay adopts them:
//! every thread and message is still there, and cursors handed out before still work.

use amc_core::config::Config;
use amc_core::sender::Senders;
use amc_core::service::Amc;
use amc_relay::{Principal, Relay};

fn start(dir: &std::path::Path) -> (Amc, Relay) {
    let config = Config::new(dir.to_owned());
    let amc = Amc::start(config, Senders::default()).expect("start");
    let relay = Relay::open(&amc).expect("relay");
    (amc, relay)
}

#[tokio::test]
async fn threads_messages_and_cursors_of_an_older_database_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (thread, cursor, db_path) = {
        let (amc, relay) = start(dir.path());
        let thread = relay.create_thread(&Principal::Person, "plans".into(), "k1".into()).await.expect("thread");
        relay.send(&Principal::Person, thread.thread_id.clone(), "first".into(), None, "p1".into()).await.expect("p1");
        let page = relay.read(&Principal::Person, thread.thread_id.clone(), None, None).await.expect("read");
        (thread.thread_id, page.next_cursor, amc.database().path().to_owned())
    };
    // Put the database back as the older build left it.
    let conn = rusqlite::Connection::open(&db_path).expect("open");
    conn.execute_batch(
        "INSERT INTO settings (key, value) SELECT 'relay_cursor_key', value FROM relay_keys WHERE name = 'cursor';
         DROP TABLE relay_keys;
         DROP TABLE schema_parts;",
    )
    .expect("an older layout");
    drop(conn);

    let (_amc, relay) = start(dir.path());
    let who = Principal::Person;
    relay.send(&who, thread.clone(), "second".into(), None, "p2".into()).await.expect("p2");
    let page = relay.read(&who, thread.clone(), Some(cursor), None).await.expect("the old cursor still reads");
    let bodies: Vec<&str> = page.messages.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(bodies, ["second"]);
    let all = relay.read(&who, thread, None, None).await.expect("read all");
    assert_eq!(all.messages.len(), 2, "nothing lost");
    let conn = rusqlite::Connection::open(&db_path).expect("open");
    let left: i64 = conn
        .query_row("SELECT count(*) FROM settings WHERE key = 'relay_cursor_key'", [], |r| r.get(0))
        .expect("settings");
    assert_eq!(left, 0, "the key moved to the relay's own table");
}
