//! Approving from the phone, end to end: `amc serve` follows a chat.db in which the person
//! has a conversation with themselves, asks there through the osascript stand-in (which
//! writes the question's row as Messages does), and the tapback rows another process writes
//! into chat.db, as Messages writes them for the person's iPhone, decide.

use std::path::Path;
use std::process::Command;

use amc_imessage::fixture::{ChatDbWriter, FixtureMessage, apple_ns};

use super::{Serve, amc, json};

const STANDIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/imessage/osascript-standin.py");
const ME: &str = "+15550001111";
const ADA: &str = "+15559990000";

/// Appends a row to chat `chat` of chat.db from another process, in WAL mode, as Messages
/// writes one: from the person's devices (`handle` 0, `is_from_me` 1) or from `handle`; a
/// tapback when `tapback` names its target's guid and its type.
fn append(chat_db: &Path, chat: i64, handle: i64, guid: &str, text: &str, tapback: Option<(&str, i32)>) {
    let (target, kind) = tapback.map_or((String::new(), 0), |(g, k)| (format!("p:0/{g}"), k));
    let script = format!(
        "import sqlite3\n\
         c = sqlite3.connect({path:?})\n\
         c.execute('PRAGMA journal_mode=wal')\n\
         cur = c.execute(\"INSERT INTO message (guid, text, handle_id, service, is_from_me, date, date_read, date_delivered, is_finished, is_sent, is_delivered, item_type, account, associated_message_guid, associated_message_type) VALUES (?, ?, ?, 'iMessage', ?, ?, 0, 0, 1, 1, 1, 0, 'E:me@icloud.com', nullif(?, ''), ?)\", ({guid:?}, {text:?}, {handle}, {from_me}, {date}, {target:?}, {kind}))\n\
         c.execute('INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (?, ?, ?)', ({chat}, cur.lastrowid, {date}))\n\
         c.commit()\n",
        path = chat_db.display().to_string(),
        from_me = i32::from(handle == 0),
        date = apple_ns(amc_core::time::now_ms()),
    );
    let status = Command::new("python3").arg("-c").arg(script).status().expect("python3");
    assert!(status.success());
}

fn send_of<'a>(log: &'a serde_json::Value, text: &str) -> Option<&'a serde_json::Value> {
    log["sends"].as_array()?.iter().find(|s| s["text"] == text)
}

/// The question about the send whose text is `text`, once the phone has it: its code and
/// its row's guid.
fn asked(data: &Path, text: &str) -> (String, String) {
    let id = send_of(&json(&amc(data, &["--json", "review", "log"])), text).expect("the send")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    amc_testkit::poll_until(&format!("the phone asked about {text:?}"), || {
        let v = json(&amc(data, &["--json", "phone", "asks"]));
        let a = v["asks"].as_array()?.iter().find(|a| a["subject"] == id.as_str() && a["state"] == "asked")?.clone();
        Some((a["code"].as_str()?.to_owned(), a["prompt_platform_id"].as_str()?.to_owned()))
    })
}

fn status_of(data: &Path, text: &str) -> (String, String) {
    let log = json(&amc(data, &["--json", "review", "log"]));
    let s = send_of(&log, text).expect("the send");
    (s["status"].as_str().unwrap_or_default().to_owned(), s["decided_via"].as_str().unwrap_or_default().to_owned())
}

/// macOS 26's chat guids (`any;-;…`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thumbs_up_from_the_persons_iphone_sends_and_nothing_else_there_does() {
    the_person_answers_from_their_iphone("any", "26").await;
}

/// macOS 14 and 15's, which carry their service (`iMessage;-;…`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_chat_forms_of_macos_15_too() {
    the_person_answers_from_their_iphone("iMessage", "15").await;
}

async fn the_person_answers_from_their_iphone(form: &str, macos: &str) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let messages = tmp.path().join("Messages");
    std::fs::create_dir_all(&messages).expect("mkdir");
    let chat_db = messages.join("chat.db");
    let (self_chat, ada_chat) = {
        let w = ChatDbWriter::create(&chat_db).expect("chat.db");
        let me = w.add_handle(ME).expect("handle");
        let ada = w.add_handle(ADA).expect("handle");
        let self_chat = w.add_chat(&format!("{form};-;{ME}"), 45, None, &[me]).expect("chat");
        let ada_chat = w.add_chat(&format!("{form};-;{ADA}"), 45, None, &[ada]).expect("chat");
        let note = FixtureMessage {
            guid: "note".into(),
            text: Some("note to self".into()),
            is_from_me: true,
            sent_at_ms: amc_core::time::now_ms() - 60_000,
            ..Default::default()
        };
        w.add_message(self_chat, &note).expect("note");
        let hi = FixtureMessage {
            guid: "hi".into(),
            text: Some("are you coming?".into()),
            handle_id: ada,
            sent_at_ms: amc_core::time::now_ms() - 50_000,
            ..Default::default()
        };
        w.add_message(ada_chat, &hi).expect("hi");
        (self_chat, ada_chat)
    };
    // Messages records the address the person's note went out from.
    rusqlite::Connection::open(&chat_db)
        .expect("chat.db")
        .execute("UPDATE message SET destination_caller_id = ?1 WHERE guid = 'note'", [ME])
        .expect("destination_caller_id");
    let data = tmp.path().join("amc");
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::write(data.join("config.toml"), "imessage_confirm_seconds = 2\nrate_limit_burst = 20\n").expect("config");
    let log = tmp.path().join("osascript.jsonl");
    let (log_s, db_s) = (log.to_str().expect("utf8"), chat_db.to_str().expect("utf8"));
    let env = [
        ("AMC_STANDIN_LOG", log_s),
        ("AMC_STANDIN_CHATDB", db_s),
        ("AMC_STANDIN_ANY_CHAT_IDS", "resolve"),
        ("AMC_STANDIN_MACOS", macos),
    ];
    let serve = Serve::start_env(&data, &["--chat-db", db_s, "--osascript", STANDIN], &env);

    // The person's own conversation is offered, and only it.
    let shown = amc_testkit::poll_until("AMC to know the person's own conversation", || {
        let v = json(&amc(&data, &["--json", "phone", "show"]));
        (v["candidates"].as_array().map(Vec::len) == Some(1)).then_some(v)
    });
    assert_eq!(shown["own_addresses"], serde_json::json!([ME]), "{shown}");
    let self_id = shown["candidates"][0]["channel_id"].as_str().expect("id").to_owned();
    let channels = json(&amc(&data, &["--json", "channel", "list"]));
    let ada_id = channels["channels"]
        .as_array()
        .expect("channels")
        .iter()
        .find(|c| c["name"] == ADA)
        .and_then(|c| c["id"].as_str())
        .expect("Ada's channel")
        .to_owned();
    let refused = amc(&data, &["phone", "set", &ada_id]);
    assert!(!refused.status.success(), "a contact's conversation is never where AMC asks");
    let set = amc(&data, &["phone", "set", &self_id, "--per-minute", "10"]);
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    assert!(String::from_utf8_lossy(&set.stdout).contains("agents never see that conversation"));
    json(&amc(&data, &["--json", "channel", "approve", &ada_id, "--history", "all", "--policy", "review"]));
    let token = json(&amc(&data, &["--json", "agent", "add", "claude"]))["token"].as_str().expect("token").to_owned();
    let socket = data.join("run/amc.sock");
    let mut agent = amc_client::Connection::connect(&socket).await.expect("connect").with_bearer(&token);
    for text in ["on my way", "never mind", "third", "fourth"] {
        let r = agent.post("/messages/send", &serde_json::json!({ "channel_id": ada_id, "text": text })).await;
        assert_eq!(r.expect("send").json()["status"], "pending_review");
    }

    // The questions reach the self-chat through Messages, and nowhere else.
    let (_, first) = asked(&data, "on my way");
    let (_, second) = asked(&data, "never mind");
    let (third_code, third) = asked(&data, "third");
    let (fourth_code, _) = asked(&data, "fourth");
    let calls: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert!(calls.iter().all(|c| c["argv"][4] == format!("{form};-;{ME}")), "{calls:?}");
    assert!(calls.iter().any(|c| c["argv"][0].as_str().is_some_and(|t| t.contains("“on my way”"))), "{calls:?}");

    // AMC restarts while the questions wait: the answers still count.
    let _ = serve.stop();
    let _serve = Serve::start_env(&data, &["--chat-db", db_s, "--osascript", STANDIN], &env);

    // Ada's 👍 on the second question (a row of her own chat naming it) decides nothing: the
    // person's 👎 after it does.
    append(&chat_db, ada_chat, 2, "ada-like", "Liked “never mind”", Some((&second, 2001)));
    // The person's 👍 from their iPhone on the first, 👎 on the second.
    append(&chat_db, self_chat, 0, "like-1", "Liked “on my way”", Some((&first, 2001)));
    append(&chat_db, self_chat, 0, "dislike-2", "Disliked “never mind”", Some((&second, 2002)));
    // A 👍 taken back (3001) answers nothing; Ada's reply `yes CODE` in her own chat decides
    // nothing; the person's reply from their iPhone does.
    append(&chat_db, self_chat, 0, "unlike-3", "Removed a like from “third”", Some((&third, 3001)));
    append(&chat_db, ada_chat, 2, "ada-yes", &format!("yes {third_code}"), None);
    append(&chat_db, self_chat, 0, "reply-4", &format!("Yes {fourth_code}"), None);
    amc_testkit::poll_until("the 👍 and the reply to send and the 👎 to reject", || {
        let (a, b, d) = (status_of(&data, "on my way"), status_of(&data, "never mind"), status_of(&data, "fourth"));
        (a.0 == "sent" && b.0 == "rejected" && d.0 == "sent").then_some(())
    });
    assert_eq!(status_of(&data, "on my way").1, "phone_imessage");
    assert_eq!(status_of(&data, "fourth").1, "phone_imessage");
    assert_eq!(status_of(&data, "third").0, "held", "a tapback taken back, or Ada's yes, answers nothing");
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(calls.contains(&format!("\"{form};-;{ADA}\"")), "the approved send went to Ada");
    assert!(!calls.lines().any(|l| l.contains("\"never mind\"")), "the rejected one never reached Messages");
}
