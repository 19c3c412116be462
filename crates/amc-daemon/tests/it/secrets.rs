//! One-time codes and sign-in links never reach an agent, by any route: each route and
//! tool that gives messages is asked, over REST and MCP, and none answers with a secret.
//! The person sees the whole text.

use serde_json::{Value, json};

use super::harness::{Daemon, msg};
use super::mcp::{call, connect};
use amc_core::model::{SenderInfo, Source};
use amc_core::time::now_ms;

/// The secrets of the conversation below, and no other text of it.
const SECRETS: [&str; 4] = ["482913", "7f3a9c2e1b4d", "accounts.example.com/reset", "73109"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_or_tool_gives_an_agent_a_one_time_code_or_a_sign_in_link() {
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let now = now_ms();
    let mut from_bank = msg("b-3", "73109", now - 1000);
    from_bank.sender = SenderInfo { id: "72975".into(), display_name: None, is_self: false };
    let (ch, ids) = d
        .ingest(
            Source::Imessage,
            "bank",
            vec![
                msg("b-0", "Your verification code is 482913. Don't share it.", now - 4000),
                msg("b-1", "Reset your password: https://accounts.example.com/reset?token=7f3a9c2e1b4d", now - 3000),
                msg("b-2", "See you at the bank at 5", now - 2000),
                from_bank,
            ],
        )
        .await;
    d.approve(&ch, json!({ "history": "all" })).await;

    let mut answers: Vec<(String, String)> = Vec::new();
    let context = format!("/messages/context?channel_id={ch}&around_message_id={}&after=5", ids[0]);
    for route in [
        "/messages/unread".to_owned(),
        "/messages/unread/wait?timeout_seconds=1".to_owned(),
        context,
        format!("/messages/{}", ids[0]),
        format!("/messages/{}", ids[1]),
        format!("/messages/{}", ids[3]),
        "/messages/search?query=verification".to_owned(),
        "/messages/search?query=482913".to_owned(),
        "/messages/search?query=reset".to_owned(),
        "/messages/search?query=7f3a9c2e1b4d".to_owned(),
        "/messages/push?timeout_seconds=1".to_owned(),
    ] {
        let r = agent.get(&route).await.expect("get");
        assert_eq!(r.status, 200, "{route}: {:?}", r.json());
        answers.push((route, String::from_utf8_lossy(&r.body).into_owned()));
    }
    let mcp = connect(&d, &token, Some("claude")).await;
    for (tool, args) in [
        ("list_unread_messages", json!({})),
        ("wait_for_unread_messages", json!({ "timeout_seconds": 1 })),
        ("get_message_context", json!({ "channel_id": ch, "around_message_id": ids[1], "before": 5, "after": 5 })),
        ("search_messages", json!({ "query": "verification" })),
        ("search_messages", json!({ "query": "482913" })),
    ] {
        let r = call(&mcp, tool, args).await;
        answers.push((format!("MCP {tool}"), serde_json::to_string(&r).expect("json")));
    }
    for (route, body) in &answers {
        for secret in SECRETS {
            assert!(!body.contains(secret), "{route} gives an agent {secret}: {body}");
        }
    }

    // What was hidden is said, and the rest of the text stays.
    let unread: Value = serde_json::from_str(&answers[0].1).expect("json");
    let said = |i: usize| (unread["messages"][i]["text"].clone(), unread["messages"][i]["redacted"].clone());
    assert_eq!(
        said(0),
        (json!("Your verification code is [one-time code hidden by AMC]. Don't share it."), json!(["one_time_code"]))
    );
    assert_eq!(said(1), (json!("Reset your password: [sign-in link hidden by AMC]"), json!(["sign_in_link"])));
    assert_eq!(said(2), (json!("See you at the bank at 5"), Value::Null));
    assert_eq!(said(3).1, json!(["one_time_code"]), "a short code's number is a code");
    // Found by its other words, never by the code.
    let found = |i: usize| -> Vec<Value> {
        let v: Value = serde_json::from_str(&answers[i].1).expect("json");
        v["results"].as_array().cloned().unwrap_or_default()
    };
    assert_eq!(found(6).len(), 1, "by its words: {:?}", found(6));
    assert!(found(7).is_empty() && found(9).is_empty(), "by the code or the token: nothing");

    // A code beside text in a script without spaces is never found by a part of it, nor
    // does the cursor say a hidden match was skipped.
    let (cjk, _) = d.ingest(Source::Imessage, "cn", vec![msg("c-0", "验证码482913，请勿泄露", now - 500)]).await;
    d.approve(&cjk, json!({ "history": "all" })).await;
    for probe in ["码4", "码48", "4829", "482-913", "验证码482913"] {
        let r = agent.get(&format!("/messages/search?limit=1&query={}", encode(probe))).await.expect("search");
        let v = r.json();
        assert_eq!((v["results"].as_array().map(Vec::len), &v["next_cursor"]), (Some(0), &Value::Null), "{probe}: {v}");
    }
    let v = agent.get(&format!("/messages/search?query={}", encode("验证码"))).await.expect("search").json();
    assert_eq!(v["results"].as_array().map(Vec::len), Some(1), "by its other words: {v}");

    // The person sees the whole text.
    let inbox = d.admin().await.get("/admin/inbox").await.expect("inbox");
    let whole = String::from_utf8_lossy(&inbox.body);
    assert!(whole.contains("482913") && whole.contains("7f3a9c2e1b4d"), "{whole}");
}

/// `s` as a query string's value.
fn encode(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}
