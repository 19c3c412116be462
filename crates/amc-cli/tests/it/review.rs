//! `amc review list` as the person reads it: each conversation once, with the sends that
//! wait for it.

use amc_client::Connection;
use serde_json::json;

use super::{Serve, amc, json, stdout};

/// Three sends held for two channels, those of one channel apart in the queue: each
/// channel's conversation is printed once, followed by every send of that channel.
#[test]
fn review_list_shows_each_conversation_once_with_all_its_sends() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (_serve, token, channels) = rt.block_on(two_chats(dir, [("ada", "Dinner at 8?"), ("bob", BOB)], "review"));
    let connect = |token: String| connect(dir, token);
    for (ch, text) in [(&channels[0], "Yes, at 8"), (&channels[1], "Sure"), (&channels[0], "I'll bring wine")] {
        let sent = rt.block_on(async {
            let mut agent = connect(token.clone()).await.with_header("x-agent-id", "claude");
            agent.post("/messages/send", &json!({ "channel_id": ch, "text": text })).await.expect("send").json()
        });
        assert_eq!(sent["status"], "pending_review", "{sent}");
    }

    let out = stdout(&amc(dir, &["review", "list"]));
    for (chat, said) in [("ada", "Dinner at 8?"), ("bob", BOB)] {
        assert_eq!(out.matches(&format!("-- conversation in Chat {chat} --")).count(), 1, "{out}");
        assert_eq!(out.matches(said).count(), 1, "{out}");
    }
    // Under each conversation, every send waiting for it, oldest first.
    let sections: Vec<&str> = out.split("-- conversation in ").skip(1).collect();
    let under = |chat: &str| -> Vec<&str> {
        let section = sections.iter().find(|s| s.starts_with(&format!("Chat {chat} --"))).expect("section");
        section.lines().filter_map(|l| l.strip_prefix("    | ")).collect()
    };
    assert_eq!(under("ada"), ["Yes, at 8", "I'll bring wine"], "{out}");
    assert_eq!(under("bob"), ["Sure"], "{out}");
    // The person sees the code whole, and marked as hidden from agents, with its rule.
    let mark =
        "^ one-time code hidden from agents: 551902 (the words next to it call it the code; rule called_the_code)";
    assert_eq!(out.matches(mark).count(), 1, "{out}");
    // Told how to say it is none; said, the report has it and the mark says so.
    let id = out.split("amc codes not-a-code ").nth(1).and_then(|rest| rest.split(')').next()).expect("the id");
    let said = stdout(&amc(dir, &["codes", "not-a-code", id]));
    assert!(said.contains("not a code, as you said"), "{said}");
    let report = stdout(&amc(dir, &["codes", "report"]));
    assert!(
        report.starts_with("1 message you said holds no code.") && report.contains("rule called_the_code: 1"),
        "{report}"
    );
    let undone = stdout(&amc(dir, &["codes", "not-a-code", id, "--undo"]));
    assert!(undone.contains("hides what it finds in it again"), "{undone}");
}

/// AMC serving in `dir`, with the agent `claude` (its token) and two conversations of one
/// message each (chat and text), approved with their history under `policy`: their ids.
async fn two_chats(dir: &std::path::Path, said: [(&str, &str); 2], policy: &str) -> (Serve, String, Vec<String>) {
    let serve = Serve::start(dir);
    let token = json(&amc(dir, &["--json", "agent", "add", "claude"]))["token"].as_str().expect("token").to_owned();
    let admin = std::fs::read_to_string(dir.join("admin-token")).expect("admin token").trim().to_owned();
    let mut channels = Vec::new();
    for (chat, text) in said {
        let body = json!({ "source": "imessage", "chat_id": chat, "chat_name": format!("Chat {chat}"),
                           "messages": [{ "id": format!("{chat}-1"), "text": text, "sender": "+15551234567" }] });
        let v = connect(dir, admin.clone()).await.post("/admin/test/ingest", &body).await.expect("ingest").json();
        let ch = v["channel_id"].as_str().expect("channel id").to_owned();
        json(&amc(dir, &["--json", "channel", "approve", &ch, "--history", "all", "--policy", policy]));
        channels.push(ch);
    }
    (serve, token, channels)
}

/// A connection to the AMC serving in `dir` with `token`.
async fn connect(dir: &std::path::Path, token: String) -> Connection {
    Connection::connect(&dir.join("run/amc.sock")).await.expect("connect").with_bearer(&token)
}

/// Bob's message, which holds a one-time code.
const BOB: &str = "Lunch tomorrow? My login code is 551902 btw";

/// A send the readers rule held says so under it, with where the agent read; the person
/// lets the channel receive anything only when they confirm.
#[test]
fn review_list_says_where_a_send_that_crosses_conversations_was_read() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let (_serve, token, channels) =
        rt.block_on(two_chats(dir, [("ada", "Dinner at 8?"), ("bob", "The cabin key is under the mat")], "auto"));
    let connect = |token: String| connect(dir, token);
    let send = |text: &'static str| {
        rt.block_on(async {
            let mut agent = connect(token.clone()).await.with_header("x-agent-id", "claude");
            agent.get(&format!("/messages/unread?channel_id={}", channels[1])).await.expect("read");
            agent
                .post("/messages/send", &json!({ "channel_id": channels[0], "text": text }))
                .await
                .expect("send")
                .json()
        })
    };
    assert_eq!(send("The key is under the mat")["held_reason"], "crosses_conversations");
    let out = stdout(&amc(dir, &["review", "list"]));
    assert!(out.contains("! held: the agent read other conversations not everyone here can read; read from:"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("      Chat bob (")), "{out}");

    let asked = amc(dir, &["channel", "readers", &channels[0], "--anything"]);
    assert!(!asked.status.success());
    assert!(String::from_utf8_lossy(&asked.stderr).contains("CONFIRMATION_REQUIRED"));
    let on = json(&amc(dir, &["--json", "channel", "readers", &channels[0], "--anything", "--confirm"]));
    assert_eq!(on["receives_anything"], true);
    assert!(stdout(&amc(dir, &["channel", "list", "--state", "allowed"])).contains("; receives anything)"));
    assert_eq!(send("Sent as it is")["status"], "sent");
    let off = json(&amc(dir, &["--json", "channel", "readers", &channels[0]]));
    assert_eq!(off["receives_anything"], false);
}
