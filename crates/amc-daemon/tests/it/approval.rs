//! The person's control: nothing of a pending or blocked channel reaches an agent by
//! any route, and approval releases exactly the history chosen.

use amc_testkit::Stored;
use serde_json::json;

use super::harness::{Daemon, attachment, code, ids, msg};
use amc_client::Connection;
use amc_core::model::Source;
use amc_core::time::now_ms;

const DAY: i64 = 86_400_000;

/// Every agent route, for a channel and a message of it; asserts none reveals them.
async fn assert_hidden(agent: &mut Connection, channel: &str, message: &str, attachment_path: Option<&str>) {
    let v = agent.get("/messages/unread?limit=100").await.expect("get").json();
    assert!(!ids(&v).contains(&message.to_owned()), "unread shows it: {v}");
    let v = agent.get(&format!("/messages/unread?channel_id={channel}")).await.expect("get").json();
    assert_eq!(v["messages"], json!([]));
    let r = agent.get(&format!("/messages/{message}")).await.expect("get");
    assert_eq!(code(&r), "MESSAGE_NOT_FOUND");
    let r =
        agent.get(&format!("/messages/context?channel_id={channel}&around_message_id={message}")).await.expect("get");
    assert_eq!(code(&r), "MESSAGE_NOT_FOUND");
    let v = agent.get("/channels").await.expect("get").json();
    assert!(!v.to_string().contains(channel), "channel listed: {v}");
    let r = agent.post("/messages/send", &json!({ "channel_id": channel, "text": "hi" })).await.expect("post");
    assert_eq!(code(&r), "CHANNEL_NOT_FOUND");
    let r = agent
        .post("/messages/send", &json!({ "channel_id": channel, "text": "hi", "reply_to": message }))
        .await
        .expect("post");
    assert_eq!(code(&r), "CHANNEL_NOT_FOUND");
    if let Some(p) = attachment_path {
        let r = agent.get(p).await.expect("get");
        assert_eq!(code(&r), "NOT_FOUND");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_channel_is_pending_and_invisible_by_every_route() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let file = d.dir.path().join("photo.png");
    std::fs::write(&file, b"png").expect("write");
    let mut m = msg("p-1", "secret", now_ms());
    m.attachments = vec![attachment(file.to_str().expect("utf8"), "image/png")];
    let (ch, sent) = d.ingest(Source::Imessage, "p", vec![m]).await;
    let admin_view = d.admin().await.get(&format!("/admin/channels/{ch}")).await.expect("get").json();
    assert_eq!(admin_view["state"], "pending");
    assert_eq!(admin_view["message_count"], 1);
    assert_eq!(admin_view["visible_count"], 0);
    // Agents never learn the attachment's id while pending; a guessed id must still fail.
    let att_id: String = d
        .amc
        .store()
        .database()
        .read(|tx| Ok(tx.query_row("SELECT id FROM attachments", [], |r| r.get(0))?))
        .expect("att id");
    let att_path = format!("/attachments/{att_id}");
    assert_hidden(&mut agent, &ch, &sent[0], Some(&att_path)).await;

    // mark_read on a quarantined message counts it but marks nothing.
    let r = agent.post("/messages/mark_read", &json!({ "message_ids": [sent[0]] })).await.expect("post");
    assert_eq!(r.json(), json!({ "marked_count": 1 }));
    d.approve(&ch, json!({ "history": "all" })).await;
    assert_eq!(ids(&agent.get("/messages/unread").await.expect("get").json()), sent);
    assert_eq!(agent.get(&att_path).await.expect("get").status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_from_now_keeps_history_quarantined() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, old) = d.channel_with("a", 3).await;
    let r = d.approve(&ch, json!({})).await;
    assert_eq!(r.json()["state"], "allowed");
    assert_eq!(r.json()["send_policy"], "review", "review is the default on approval");
    for id in &old {
        assert_hidden_message(&mut agent, &ch, id).await;
    }
    let (_, new) = d.ingest(Source::Imessage, "a", vec![msg("a-new", "after approval", now_ms() + 5)]).await;
    assert_eq!(ids(&agent.get("/messages/unread").await.expect("get").json()), new);
    // Context around the new message does not reach back into quarantined history.
    let v = agent.get(&format!("/messages/context?channel_id={ch}&around_message_id={}", new[0])).await.expect("get");
    assert_eq!(ids(&v.json()), new);
}

async fn assert_hidden_message(agent: &mut Connection, channel: &str, message: &str) {
    let r = agent.get(&format!("/messages/{message}")).await.expect("get");
    assert_eq!(code(&r), "MESSAGE_NOT_FOUND");
    let r =
        agent.get(&format!("/messages/context?channel_id={channel}&around_message_id={message}")).await.expect("get");
    assert_eq!(code(&r), "MESSAGE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_with_the_last_n_days_releases_only_those() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let now = now_ms();
    let msgs = vec![msg("old", "ten days ago", now - 10 * DAY), msg("recent", "two days ago", now - 2 * DAY)];
    let (ch, sent) = d.ingest(Source::Imessage, "a", msgs).await;
    let r = d.approve(&ch, json!({ "history": "days", "days": 7 })).await;
    assert_eq!(r.json()["visible_count"], 1);
    assert_eq!(ids(&agent.get("/messages/unread").await.expect("get").json()), vec![sent[1].clone()]);
    assert_hidden_message(&mut agent, &ch, &sent[0]).await;
    // Widening the release later makes the older message unread too.
    d.approve(&ch, json!({ "history": "all" })).await;
    assert_eq!(ids(&agent.get("/messages/unread").await.expect("get").json()), sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_an_approved_channel_hides_it_at_once() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, sent) = d.channel_with("a", 2).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    assert_eq!(ids(&agent.get("/messages/unread").await.expect("get").json()), sent);
    let r = d.admin().await.post(&format!("/admin/channels/{ch}/block"), &json!({})).await.expect("post");
    assert_eq!(r.json()["state"], "blocked");
    assert_hidden(&mut agent, &ch, &sent[0], None).await;
    // New messages of a blocked channel are stored but stay hidden.
    let (_, new) = d.ingest(Source::Imessage, "a", vec![msg("a-new", "while blocked", now_ms())]).await;
    assert_hidden(&mut agent, &ch, &new[0], None).await;
    let v = d.admin().await.get("/admin/channels?state=blocked").await.expect("get").json();
    assert_eq!(v["channels"][0]["message_count"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_channel_list_filters_and_searches() {
    let d = Daemon::start().await;
    let (a, _) = d.channel_with("alpha", 1).await;
    d.channel_with("beta", 1).await;
    d.approve(&a, json!({})).await;
    let mut admin = d.admin().await;
    let v = admin.get("/admin/channels?state=pending").await.expect("get").json();
    assert_eq!(v["channels"].as_array().expect("list").len(), 1);
    assert_eq!(v["channels"][0]["name"], "Chat beta");
    let v = admin.get("/admin/channels?q=ALPH").await.expect("get").json();
    assert_eq!(v["channels"][0]["id"], a.as_str());
    let v = admin.get("/admin/channels?q=%25").await.expect("get").json();
    assert_eq!(v["channels"], json!([]), "LIKE wildcards are literal");
    let r = admin.get("/admin/channels?state=maybe").await.expect("get");
    assert_eq!(code(&r), "VALIDATION_FAILED");
    let r = admin.post("/admin/channels/ch_nope/approve", &json!({})).await.expect("post");
    assert_eq!(code(&r), "NOT_FOUND");
    let r = admin.post(&format!("/admin/channels/{a}/approve"), &json!({ "history": "days" })).await.expect("post");
    assert_eq!(code(&r), "VALIDATION_FAILED");
    let r = admin.post(&format!("/admin/channels/{a}/policy"), &json!({ "send_policy": "yolo" })).await.expect("post");
    assert_eq!(code(&r), "VALIDATION_FAILED");
    let r =
        admin.post(&format!("/admin/channels/{a}/policy"), &json!({ "send_policy": "read_only" })).await.expect("post");
    assert_eq!(r.json()["send_policy"], "read_only");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_tokens_do_not_open_the_admin_api_and_revocation_is_immediate() {
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let r = agent.get("/admin/channels").await.expect("get");
    assert_eq!(code(&r), "UNAUTHORIZED");
    let r = d.anon().await.with_bearer(&d.admin_token).get("/messages/unread").await.expect("get");
    assert_eq!(code(&r), "UNAUTHORIZED", "the admin token is not an agent token");
    // The token worked a moment ago (and AMC trusts a token it just checked)...
    let r = agent.get("/messages/unread").await.expect("get");
    assert_eq!(r.status, 200, "{}", r.json());
    let r = d.admin().await.post("/admin/agents/claude/revoke", &json!({})).await.expect("post");
    assert!(r.json()["revoked_at"].is_string());
    // ...and not a moment after its revocation.
    let mut again = d.anon().await.with_bearer(&token).with_header("x-agent-id", "claude");
    let r = again.get("/messages/unread").await.expect("get");
    assert_eq!(code(&r), "UNAUTHORIZED");
    let v = d.admin().await.get("/admin/agents").await.expect("get").json();
    assert_eq!(v["agents"][0]["id"], "claude");
    assert!(!v.to_string().contains(&token), "tokens are never listed");
}

/// "From now" means from when AMC stored the message, not what the sender's clock says:
/// a message stored while the channel was pending stays quarantined even when it claims
/// a later time (a clock ahead, a date in 2100), and one that arrives after the approval
/// is shown even when the sender's clock is behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_from_now_goes_by_when_amc_stored_each_message() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let now = now_ms();
    let y2100 = 4_102_444_800_000;
    let pending = vec![msg("ahead", "clock ahead", now + 60_000), msg("far", "year 2100", y2100)];
    let (ch, early) = d.ingest(Source::Imessage, "a", pending).await;
    let r = d.approve(&ch, json!({ "history": "from_now" })).await;
    assert_eq!(r.json()["visible_count"], 0, "{}", r.json());
    for id in &early {
        assert_hidden_message(&mut agent, &ch, id).await;
    }
    let (_, late) = d.ingest(Source::Imessage, "a", vec![msg("behind", "clock behind", now - 60_000)]).await;
    assert_eq!(ids(&agent.get("/messages/unread").await.expect("get").json()), late);
}

/// A message dated far in the future must not hide every later message from a client
/// that pages by `next_since`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_future_dated_message_does_not_poison_next_since() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = d.ingest(Source::Imessage, "a", vec![msg("first", "first", now_ms() - 1_000)]).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    for (guid, at) in [("y2100", 4_102_444_800_000_i64), ("y2286", 9_999_999_999_999)] {
        d.ingest(Source::Imessage, "a", vec![msg(guid, guid, at)]).await;
    }
    let page = agent.get("/messages/unread?limit=100").await.expect("get").json();
    let since = page["next_since"].as_str().expect("next_since").to_owned();
    let (_, newer) = d.ingest(Source::Imessage, "a", vec![msg("later", "a later message", now_ms())]).await;
    let next = agent.get(&format!("/messages/unread?since={since}")).await.expect("get").json();
    assert!(ids(&next).contains(&newer[0]), "since={since} hides a message that came later: {next}");
}
