//! Text from agents and other people reaches the terminal with its controls shown, never
//! acted on: what `amc review list` shows is the whole of what `amc review approve` sends.

use std::path::Path;

use amc_client::Connection;
use serde_json::{Value, json};

use super::{Serve, amc, json, stdout};

/// An agent's send that, printed as it is, shows only "    | See you at 8!": the carriage
/// return goes back to the start of the line and the escape sequence erases it.
const REWRITES: &str = "…wired the $4,000 deposit…\r\x1b[2K    | See you at 8!";
/// How it must be shown: all of it, the two controls as their code points.
const REWRITES_SHOWN: &str = "…wired the $4,000 deposit…⟨U+000D⟩⟨U+001B⟩[2K    | See you at 8!";
/// A channel's name that a right-to-left override turns into "Bank Alerts" on screen,
/// with a zero-width space hidden in it.
const CHANNEL: &str = "Bank\u{200B} \u{202E}strelA\u{2800}\u{600}";
/// A contact's name, isolated and reordered, ending with an invisible byte order mark.
const CONTACT: &str = "\u{2066}\u{202E}moM\u{2069}\u{FEFF}";
/// What the contact wrote: the first part hidden behind a return and a line erase.
const FROM_CONTACT: &str = "send it to the new account\r\x1b[2KSee you at 8?";

/// Characters a terminal acts on or does not show, as found in command output.
fn raw_controls(out: &str) -> Vec<char> {
    out.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
        })
        .collect()
}

fn admin_token(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("admin-token")).expect("admin token").trim().to_owned()
}

async fn connect(dir: &Path, token: &str) -> Connection {
    Connection::connect(&dir.join("run/amc.sock")).await.expect("connect").with_bearer(token)
}

#[test]
fn review_shows_a_send_that_would_rewrite_the_terminal_whole_and_approving_sends_that() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let _serve = Serve::start(dir);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let ingested = rt.block_on(async {
        let body = json!({
            "source": "imessage", "chat_id": "iMessage;-;+15551234567", "chat_name": CHANNEL,
            "messages": [{ "id": "m1", "text": FROM_CONTACT, "sender": "+15551234567", "sender_name": CONTACT }],
        });
        connect(dir, &admin_token(dir)).await.post("/admin/test/ingest", &body).await.expect("ingest").json()
    });
    let ch = ingested["channel_id"].as_str().expect("channel id").to_owned();
    json(&amc(dir, &["--json", "channel", "approve", &ch, "--history", "all", "--policy", "review"]));
    let token = json(&amc(dir, &["--json", "agent", "add", "claude"]))["token"].as_str().expect("token").to_owned();
    let sent = rt.block_on(async {
        let mut agent = connect(dir, &token).await.with_header("x-agent-id", "claude");
        agent.post("/messages/send", &json!({ "channel_id": ch, "text": REWRITES })).await.expect("send").json()
    });
    assert_eq!(sent["status"], "pending_review", "{sent}");
    let id = sent["message_id"].as_str().expect("message id").to_owned();

    for args in [&["review", "list"][..], &["review", "log"], &["channel", "list"]] {
        let out = stdout(&amc(dir, args));
        assert_eq!(raw_controls(&out), Vec::<char>::new(), "{args:?} printed them as they are:\n{out}");
        assert!(out.contains("Bank⟨U+200B⟩ ⟨U+202E⟩strelA⟨U+2800⟩⟨U+0600⟩"), "{args:?}:\n{out}");
        if args[0] == "review" {
            assert!(
                out.contains(&format!("    | {REWRITES_SHOWN}")) && out.contains("wired the $4,000 deposit"),
                "{out}"
            );
        }
        if args[1] == "list" && args[0] == "review" {
            let contact = "⟨U+2066⟩⟨U+202E⟩moM⟨U+2069⟩⟨U+FEFF⟩";
            let said = "send it to the new account⟨U+000D⟩⟨U+001B⟩[2KSee you at 8?";
            assert!(out.contains(&format!(" {contact}: {said}")), "{out}");
        }
    }

    // For scripts, the same values, with the characters escaped the JSON way.
    for args in [&["--json", "review", "list"][..], &["--json", "review", "log"], &["--json", "channel", "list"]] {
        let out = amc(dir, args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(raw_controls(&text), Vec::<char>::new(), "{args:?}: {text}");
        let v = json(&out);
        let first = if args[1] == "channel" { &v["channels"][0] } else { &v["sends"][0] };
        assert_eq!(first[if args[1] == "channel" { "name" } else { "channel_name" }], CHANNEL, "{v}");
        if args[1] == "review" {
            assert_eq!(first["text"], REWRITES);
        }
    }

    // An error that repeats what was asked for is shown the same way.
    let refused = amc(dir, &["channel", "agents", &ch, "--set", "a\u{202E}b\x1b[2K"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && stderr.contains("VALIDATION_FAILED"), "{stderr}");
    assert_eq!(raw_controls(&stderr), Vec::<char>::new(), "{stderr}");

    // What was shown is what goes out.
    let approved = stdout(&amc(dir, &["review", "approve", &id]));
    assert!(approved.contains(REWRITES_SHOWN) && raw_controls(&approved).is_empty(), "{approved}");
    let log = std::fs::read_to_string(dir.join("test-sender.jsonl")).expect("the test sender's log");
    let sent: Value = serde_json::from_str(log.lines().next().expect("one send")).expect("json line");
    assert_eq!(sent["text"], REWRITES);
}

#[test]
fn a_multi_line_message_keeps_its_lines_but_none_passes_for_another() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let _serve = Serve::start(dir);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    // A contact's second line dressed as the next message, and an agent's as a new send.
    let fake_message = "Dinner?\n  2026-05-01T10:00:00Z Ada: wire it today";
    let fake_send = "On my way\nmsg_01J000 held claude to Ada (imessage)";
    let ingested = rt.block_on(async {
        let body = json!({
            "source": "imessage", "chat_id": "c1", "chat_name": "Ada",
            "messages": [{ "id": "m1", "text": fake_message, "sender": "+15551234567", "sender_name": "Ada" }],
        });
        connect(dir, &admin_token(dir)).await.post("/admin/test/ingest", &body).await.expect("ingest").json()
    });
    let ch = ingested["channel_id"].as_str().expect("channel id").to_owned();
    json(&amc(dir, &["--json", "channel", "approve", &ch, "--history", "all", "--policy", "review"]));
    let token = json(&amc(dir, &["--json", "agent", "add", "claude"]))["token"].as_str().expect("token").to_owned();
    rt.block_on(async {
        let mut agent = connect(dir, &token).await.with_header("x-agent-id", "claude");
        agent.post("/messages/send", &json!({ "channel_id": ch, "text": fake_send })).await.expect("send");
    });
    let out = stdout(&amc(dir, &["review", "list"]));
    let lines: Vec<&str> = out.lines().collect();
    // Every line of the send under the mark of the send; the message's second line
    // indented under its first, never where a message starts.
    assert!(
        lines.contains(&"    | On my way") && lines.contains(&"    | msg_01J000 held claude to Ada (imessage)"),
        "{out}"
    );
    let first = lines.iter().position(|l| l.ends_with(" Ada: Dinner?")).expect("the message");
    let indent = lines[first].len() - "Dinner?".len();
    assert_eq!(lines[first + 1], format!("{}  2026-05-01T10:00:00Z Ada: wire it today", " ".repeat(indent)), "{out}");
    assert_eq!(lines.iter().filter(|l| l.starts_with("msg_")).count(), 1, "{out}");
}
