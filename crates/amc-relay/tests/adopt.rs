//! A database from before the relay had its own crate: the core's old migration 0002 made
//! the relay's tables and kept the cursor key in `settings`. Opening the relay adopts them:
//! every thread and message is still there. Cursors handed out before are signed under a
//! retired key: they are refused with `CURSOR_INVALID`, and reading from the start recovers.

use amc_core::config::Config;
use amc_core::error::ErrorCode;
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
async fn threads_and_messages_of_an_older_database_are_kept_and_its_cursors_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (thread, db_path) = {
        let (amc, relay) = start(dir.path());
        let thread = relay.create_thread(&Principal::Person, "plans".into(), "k1".into()).await.expect("thread");
        relay.send(&Principal::Person, thread.thread_id.clone(), "first".into(), None, "p1".into()).await.expect("p1");
        (thread.thread_id, amc.database().path().to_owned())
    };
    // Put the database back as the older build left it: its cursor key in `settings`, and
    // a cursor signed with it (HMAC-SHA256 of the payload, the scheme of then).
    let old_key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let old_cursor = {
        use base64::Engine;
        use hmac::Mac;
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let key: Vec<u8> =
            (0..64).step_by(2).map(|i| u8::from_str_radix(&old_key[i..i + 2], 16).expect("hex")).collect();
        let payload = format!("r:{thread}:1");
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).expect("key");
        mac.update(payload.as_bytes());
        format!("v1.{}.{}", b64(payload.as_bytes()), b64(&mac.finalize().into_bytes()))
    };
    let conn = rusqlite::Connection::open(&db_path).expect("open");
    conn.execute_batch(&format!(
        "INSERT INTO settings (key, value) VALUES ('relay_cursor_key', '{old_key}');
         DROP TABLE schema_parts;"
    ))
    .expect("an older layout");
    drop(conn);

    let (_amc, relay) = start(dir.path());
    let who = Principal::Person;
    relay.send(&who, thread.clone(), "second".into(), None, "p2".into()).await.expect("p2");
    let refused = relay.read(&who, thread.clone(), Some(old_cursor), None).await.expect_err("a retired cursor");
    assert_eq!(refused.code, ErrorCode::CursorInvalid);
    let all = relay.read(&who, thread.clone(), None, None).await.expect("read from the start");
    let bodies: Vec<&str> = all.messages.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(bodies, ["first", "second"], "nothing lost");
    let next = relay.read(&who, thread, Some(all.next_cursor), None).await.expect("a new cursor holds");
    assert!(next.messages.is_empty());
    let conn = rusqlite::Connection::open(&db_path).expect("open");
    let left: i64 = conn
        .query_row(
            "SELECT (SELECT count(*) FROM settings WHERE key = 'relay_cursor_key') \
             + (SELECT count(*) FROM sqlite_schema WHERE name = 'relay_keys')",
            [],
            |r| r.get(0),
        )
        .expect("settings");
    assert_eq!(left, 0, "the retired key is gone");
}
