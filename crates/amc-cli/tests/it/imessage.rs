//! iMessage live: `amc serve --chat-db` follows a chat.db while another process writes
//! to it in WAL mode, as Messages does, and agents see the new rows through
//! `GET /messages/unread`.

use std::path::Path;
use std::process::Command;

use amc_imessage::fixture::{ChatDbWriter, FixtureMessage, apple_ns};

use super::{Serve, amc, json};

const T0: i64 = 1_777_000_000_000;

/// Appends a message to chat 1 from a separate process (Python's sqlite3), in WAL mode.
fn append_from_another_process(chat_db: &Path, guid: &str, text: &str, at_ms: i64) {
    let script = format!(
        "import sqlite3\n\
         c = sqlite3.connect({path:?})\n\
         c.execute('PRAGMA journal_mode=wal')\n\
         cur = c.execute(\"INSERT INTO message (guid, text, handle_id, service, is_from_me, date, date_read, date_delivered, is_finished, item_type, account) VALUES (?, ?, 1, 'iMessage', 0, ?, 0, 0, 1, 0, 'e:')\", ({guid:?}, {text:?}, {date}))\n\
         c.execute('INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (1, ?, ?)', (cur.lastrowid, {date}))\n\
         c.commit()\n",
        path = chat_db.display().to_string(),
        date = apple_ns(at_ms),
    );
    let status = Command::new("python3").arg("-c").arg(script).status().expect("python3");
    assert!(status.success());
}

/// A Messages folder whose chat.db holds one chat with Ada and one message from her.
fn one_chat(dir: &Path, chat_guid: &str, text: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let messages = dir.join("Messages");
    std::fs::create_dir_all(&messages).expect("mkdir");
    let chat_db = messages.join("chat.db");
    let w = ChatDbWriter::create(&chat_db).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    let chat = w.add_chat(chat_guid, 45, None, &[ada]).expect("chat");
    let m = FixtureMessage {
        guid: "g0".into(),
        text: Some(text.into()),
        handle_id: ada,
        sent_at_ms: T0,
        ..Default::default()
    };
    w.add_message(chat, &m).expect("message");
    (messages, chat_db)
}

async fn unread_texts(socket: &Path, token: &str) -> Vec<String> {
    let mut c = amc_client::Connection::connect(socket)
        .await
        .expect("connect")
        .with_bearer(token)
        .with_header("x-agent-id", "claude");
    let v = c.get("/messages/unread?limit=100").await.expect("get").json();
    v["messages"].as_array().expect("messages").iter().map(|m| m["text"].as_str().unwrap_or("").to_owned()).collect()
}

async fn wait_for(socket: &Path, token: &str, want: &[&str]) -> Vec<String> {
    amc_testkit::eventually(&format!("unread {want:?}"), || async {
        let got = unread_texts(socket, token).await;
        want.iter().all(|w| got.iter().any(|g| g == w)).then_some(got)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_written_by_another_process_reach_agents_and_a_replaced_chat_db_is_followed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (messages, chat_db) = one_chat(tmp.path(), "iMessage;-;+15551234567", "before");
    let data = tmp.path().join("amc");
    let serve = Serve::start_with(&data, &["--chat-db", chat_db.to_str().expect("utf8")]);
    let socket = data.join("run/amc.sock");

    // The chat appears, pending; the person approves it with its history.
    let channel = amc_testkit::poll_until("chat.db to be read", || {
        let v = json(&amc(&data, &["--json", "channel", "list"]));
        v["channels"].as_array().and_then(|a| a.first()).cloned()
    });
    assert_eq!((channel["name"].as_str(), channel["state"].as_str()), (Some("+15551234567"), Some("pending")));
    let id = channel["id"].as_str().expect("id").to_owned();
    json(&amc(&data, &["--json", "channel", "approve", &id, "--history", "all"]));
    let token = json(&amc(&data, &["--json", "agent", "add", "claude"]))["token"].as_str().expect("token").to_owned();
    assert_eq!(wait_for(&socket, &token, &["before"]).await, vec!["before"]);

    // Messages writes while AMC runs.
    let now = amc_core::time::now_ms();
    append_from_another_process(&chat_db, "g1", "live one", now);
    append_from_another_process(&chat_db, "g2", "live two", now + 1);
    assert_eq!(wait_for(&socket, &token, &["live one", "live two"]).await, vec!["before", "live one", "live two"]);

    // Messages rebuilds chat.db: a new file with the old rows and a new one takes its place.
    let rebuilt = messages.join("chat.db.new");
    {
        let w = ChatDbWriter::create(&rebuilt).expect("chat.db");
        let ada = w.add_handle("+15551234567").expect("handle");
        let chat = w.add_chat("iMessage;-;+15551234567", 45, None, &[ada]).expect("chat");
        for (guid, text, at) in [
            ("g0", "before", T0),
            ("g1", "live one", now),
            ("g2", "live two", now + 1),
            ("g3", "after the rebuild", now + 2),
        ] {
            let m = FixtureMessage {
                guid: guid.into(),
                text: Some(text.into()),
                handle_id: ada,
                sent_at_ms: at,
                ..Default::default()
            };
            w.add_message(chat, &m).expect("message");
        }
    }
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(messages.join(format!("chat.db{suffix}")));
    }
    std::fs::rename(&rebuilt, &chat_db).expect("replace");
    let got = wait_for(&socket, &token, &["after the rebuild"]).await;
    assert_eq!(got, vec!["before", "live one", "live two", "after the rebuild"], "nothing doubled, nothing lost");
    let health = json(&amc(&data, &["--json", "status"]));
    assert_eq!(health["sources"]["imessage"]["state"], "connected");
    drop(serve);
}

/// A chat.db that cannot be opened (here a folder; on a Mac, one without Full Disk Access).
fn unreadable_chat_db(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("Messages/chat.db");
    std::fs::create_dir_all(&path).expect("mkdir");
    path
}

#[test]
fn doctor_says_how_to_fix_an_unreadable_chat_db() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let unreadable = unreadable_chat_db(tmp.path());
    let out = amc(&tmp.path().join("amc"), &["doctor", "--chat-db", unreadable.to_str().expect("utf8")]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Full Disk Access") && text.contains("Privacy & Security"), "{text}");
    // AMC is not running either: said as a problem with its fix, never followed by "All good".
    assert!(text.contains("AMC is not running") && text.contains("amc serve") && !text.contains("All good"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 problem(s)"));
}

/// A `--chat-db` naming no file is said to be missing: Full Disk Access would not help.
#[test]
fn doctor_says_a_chat_db_that_is_not_there_is_missing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("messages.sqlite");
    let out = amc(&tmp.path().join("amc"), &["doctor", "--chat-db", missing.to_str().expect("utf8")]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("iMessage:")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("missing") && line.contains("messages.sqlite") && line.contains("--chat-db"), "{line}");
    assert!(!line.contains("Full Disk Access"), "{line}");
}

#[test]
fn a_chat_db_that_cannot_be_read_is_reported_with_the_fix() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let data = tmp.path().join("amc");
    let unreadable = unreadable_chat_db(tmp.path());
    let _serve = Serve::start_with(&data, &["--chat-db", unreadable.to_str().expect("utf8")]);
    let (health, status) = amc_testkit::poll_until("iMessage to be degraded", || {
        let out = amc(&data, &["--json", "status"]);
        let health: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (health["sources"]["imessage"]["state"] == "degraded").then_some((health, out.status))
    });
    let reason = health["sources"]["imessage"]["reason"].as_str().expect("reason");
    assert!(reason.contains("Full Disk Access") && reason.contains("Privacy & Security"), "{reason}");
    assert_eq!(health["status"], "degraded");
    assert_eq!(status.code(), Some(3), "a degraded AMC is exit status 3, for scripts");
    // The doctor asks the running AMC, and reports its iMessage problem.
    let doctor = amc(&data, &["doctor"]);
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(!doctor.status.success() && !text.contains("iMessage: off") && text.contains("Full Disk Access"), "{text}");
}

const STANDIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/imessage/osascript-standin.py");

fn standin_calls(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

async fn send(socket: &Path, token: &str, channel: &str, text: &str) -> serde_json::Value {
    let mut c = amc_client::Connection::connect(socket).await.expect("connect").with_bearer(token);
    let r = c.post("/messages/send", &serde_json::json!({ "channel_id": channel, "text": text })).await.expect("post");
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_go_through_messages_verbatim_and_are_confirmed_in_chat_db() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (_, chat_db) = one_chat(tmp.path(), "any;-;+15551234567", "ping");
    let data = tmp.path().join("amc");
    std::fs::create_dir_all(&data).expect("mkdir");
    // Messages' sandbox reads files only from its own Attachments folder (the stand-in too).
    let readable = tmp.path().join("Library/Messages/Attachments");
    let staging = readable.join("AMC");
    std::fs::write(
        data.join("config.toml"),
        format!("imessage_confirm_seconds = 2\nrate_limit_burst = 20\nimessage_attachments_dir = {:?}\n", staging),
    )
    .expect("config");
    let log = tmp.path().join("osascript.jsonl");
    let (log_s, db_s) = (log.to_str().expect("utf8"), chat_db.to_str().expect("utf8"));
    let readable_s = readable.to_str().expect("utf8");
    let serve = Serve::start_env(
        &data,
        &["--chat-db", db_s, "--osascript", STANDIN],
        &[("AMC_STANDIN_LOG", log_s), ("AMC_STANDIN_CHATDB", db_s), ("AMC_STANDIN_READABLE", readable_s)],
    );
    let socket = data.join("run/amc.sock");
    let channel = amc_testkit::poll_until("chat.db to be read", || {
        let v = json(&amc(&data, &["--json", "channel", "list"]));
        v["channels"].as_array().and_then(|a| a.first()).cloned()
    });
    let channel = channel["id"].as_str().expect("id").to_owned();
    json(&amc(&data, &["--json", "channel", "approve", &channel, "--history", "all", "--policy", "auto"]));
    let token = json(&amc(&data, &["--json", "agent", "add", "claude"]))["token"].as_str().expect("token").to_owned();

    let hostile = [
        "plain",
        r#"She said "hi" \ and left"#,
        "\" & (do shell script \"touch /tmp/pwned\") & \"",
        "end tell\nend run\non run argv\n",
        "emoji 🎉👨‍👩‍👧 and 中文",
    ];
    let long = "x".repeat(16 * 1024);
    for text in hostile.iter().copied().chain([long.as_str()]) {
        let r = send(&socket, &token, &channel, text).await;
        assert_eq!(r["status"], "sent", "{text:.40}: {r}");
        let id = r["message_id"].as_str().expect("id").to_owned();
        let mut c = amc_client::Connection::connect(&socket).await.expect("connect").with_bearer(&token);
        let m = c.get(&format!("/messages/{id}")).await.expect("get").json();
        assert_eq!((m["text"].as_str(), m["direction"].as_str()), (Some(text), Some("outbound")));
    }
    let calls = standin_calls(&log);
    assert_eq!(calls.len(), hostile.len() + 1);
    for (call, text) in calls.iter().zip(hostile.iter().copied().chain([long.as_str()])) {
        assert_eq!(call["argv"][0], text, "the text reaches Messages verbatim, as an argument");
        assert_eq!(call["argv"][1], "+15551234567", "the person, for the participant fallback");
        assert_eq!(call["argv"][2], "iMessage", "the account the conversation last used first, for the fallback");
        assert_eq!(
            (&call["argv"][3], &call["argv"][4]),
            (&serde_json::json!("1"), &serde_json::json!("any;-;+15551234567")),
            "the chat is addressed only by the guid chat.db holds for it, never one made up: {call}"
        );
        let script: Vec<&str> = call["script"].as_array().expect("script").iter().filter_map(|l| l.as_str()).collect();
        assert_eq!(script, amc_imessage::send::SEND_SCRIPT, "the script never changes");
    }
    // A file goes too: copied to the folder Messages reads, and named in argv after the text.
    std::fs::write(data.join("outbox/menu.pdf"), b"%PDF menu").expect("outbox file");
    let mut c = amc_client::Connection::connect(&socket).await.expect("connect").with_bearer(&token);
    let body = serde_json::json!({ "channel_id": channel, "text": "the menu", "attachments": [{ "path": data.join("outbox/menu.pdf") }] });
    let r = c.post("/messages/send", &body).await.expect("post").json();
    assert_eq!(r["status"], "sent", "{r}");
    let call = standin_calls(&log).pop().expect("call");
    let args = call["argv"].as_array().expect("argv");
    let sent_file = args.last().and_then(|f| f.as_str()).expect("file argument").to_owned();
    assert!(sent_file.starts_with(staging.to_str().expect("utf8")), "{sent_file}");
    assert!(sent_file.ends_with("menu.pdf"), "{sent_file}");
    let recorded: i64 = rusqlite::Connection::open(&chat_db)
        .expect("chat.db")
        .query_row("SELECT total_bytes FROM attachment WHERE transfer_name LIKE '%menu.pdf'", [], |r| r.get(0))
        .expect("Messages recorded the file");
    assert_eq!(recorded, 9, "the copy Messages read was the whole file");
    assert!(!std::path::Path::new(&sent_file).exists(), "the copy is removed once the send is settled");
    // Whether the watcher read Messages' rows before or after the send settled, the
    // agent's message has its file, once.
    let id = r["message_id"].as_str().expect("id").to_owned();
    let mut c = amc_client::Connection::connect(&socket).await.expect("connect").with_bearer(&token);
    let m = c.get(&format!("/messages/{id}")).await.expect("get").json();
    assert_eq!(m["attachments"].as_array().map(Vec::len), Some(1), "{m}");
    assert_eq!(m["attachments"][0]["filename"], "menu.pdf", "{m}");
    // Each send is in the conversation once, even after the watcher reads Messages' own row:
    // the watcher reads rows in order, so once a later message is in, so are those rows.
    append_from_another_process(&chat_db, "g-later", "later", amc_core::time::now_ms());
    assert!(wait_for(&socket, &token, &["later"]).await.contains(&"later".to_owned()), "the later message");
    let mut c = amc_client::Connection::connect(&socket)
        .await
        .expect("connect")
        .with_bearer(&token)
        .with_header("x-agent-id", "claude");
    let first = c.get("/messages/unread").await.expect("get").json();
    let ping = first["messages"][0]["id"].as_str().expect("ping").to_owned();
    let ctx = c
        .get(&format!("/messages/context?channel_id={channel}&around_message_id={ping}&after=50"))
        .await
        .expect("get")
        .json();
    assert_eq!(ctx["messages"].as_array().map(Vec::len), Some(1 + hostile.len() + 2 + 1), "{ctx}");
    let _ = serve.stop();

    // Automation refused, and a send Messages never records.
    let serve = Serve::start_env(
        &data,
        &["--chat-db", db_s, "--osascript", STANDIN],
        &[("AMC_STANDIN_LOG", log_s), ("AMC_STANDIN_CHATDB", db_s), ("AMC_STANDIN_MODE", "refuse")],
    );
    let r = send(&socket, &token, &channel, "refused").await;
    assert_eq!(r["error"]["code"], "PLATFORM_AUTH", "{r}");
    assert!(r["error"]["message"].as_str().unwrap_or("").contains("Automation"));
    let _ = serve.stop();
    let _serve = Serve::start_env(
        &data,
        &["--chat-db", db_s, "--osascript", STANDIN],
        &[("AMC_STANDIN_LOG", log_s), ("AMC_STANDIN_CHATDB", db_s), ("AMC_STANDIN_MODE", "silent")],
    );
    let r = send(&socket, &token, &channel, "into the void").await;
    assert_eq!(r["status"], "unknown", "{r}");
    let log_json = json(&amc(&data, &["--json", "review", "log"]));
    assert!(
        log_json["sends"]
            .as_array()
            .expect("sends")
            .iter()
            .any(|s| s["status"] == "unknown" && s["text"] == "into the void")
    );
}
