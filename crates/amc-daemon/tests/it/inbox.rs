//! The agents' endpoints on approved channels.

use serde_json::json;

use super::harness::{Daemon, attachment, code, ids, msg};
use amc_core::model::Source;
use amc_core::time::now_ms;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_lists_oldest_first_with_the_envelope_and_mark_read_removes() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, sent) = d.channel_with("a", 3).await;
    d.approve(&ch, json!({ "history": "all" })).await;

    let r = agent.get("/messages/unread").await.expect("get");
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(ids(&v), sent);
    let first = &v["messages"][0];
    assert_eq!(first["source"], "imessage");
    assert_eq!(first["channel_id"], ch.as_str());
    assert_eq!(first["channel"], json!({ "name": "Chat a", "kind": "dm" }));
    assert_eq!(first["sender"], json!({ "id": "+15551234567", "display_name": "Ada", "is_self": false }));
    assert_eq!(first["text"], "message 0");
    assert_eq!(first["direction"], "inbound");
    assert_eq!(first["unsent"], false);
    assert!(first["edited_at"].is_null() && first["reply_to"].is_null() && first["agent_id"].is_null());
    let sent_at = first["sent_at"].as_str().expect("sent_at");
    assert_eq!(sent_at.len(), 24, "fixed-width RFC 3339 with milliseconds: {sent_at}");
    assert!(sent_at.ends_with('Z'));
    assert_eq!(v["next_since"], v["messages"][2]["sent_at"]);

    let r =
        agent.post("/messages/mark_read", &json!({ "message_ids": [sent[0], sent[1], sent[0]] })).await.expect("post");
    assert_eq!(r.json(), json!({ "marked_count": 2 }));
    let v = agent.get("/messages/unread").await.expect("get").json();
    assert_eq!(ids(&v), vec![sent[2].clone()]);

    // Marking again is idempotent; unknown ids are skipped but counted.
    let unknown = format!("msg_{}", ulid::Ulid::generate());
    let r = agent.post("/messages/mark_read", &json!({ "message_ids": [sent[0], unknown] })).await.expect("post");
    assert_eq!(r.json(), json!({ "marked_count": 2 }));
    let r = agent.post("/messages/mark_read", &json!({ "message_ids": [] })).await.expect("post");
    assert_eq!(r.json(), json!({ "marked_count": 0 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_filters_by_limit_since_source_and_channel() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (a, a_ids) = d.channel_with("a", 5).await;
    let now = now_ms();
    let (b, b_ids) = d.ingest(Source::Discord, "b", vec![msg("b-0", "from discord", now - 2500)]).await;
    d.approve(&a, json!({ "history": "all" })).await;
    d.approve(&b, json!({ "history": "all" })).await;

    let v = agent.get("/messages/unread?limit=2").await.expect("get").json();
    assert_eq!(ids(&v), a_ids[..2].to_vec());
    assert_eq!(v["next_since"], v["messages"][1]["sent_at"]);

    let v = agent.get("/messages/unread?source=discord").await.expect("get").json();
    assert_eq!(ids(&v), b_ids);
    let v = agent.get(&format!("/messages/unread?channel_id={a}&limit=100")).await.expect("get").json();
    assert_eq!(ids(&v), a_ids);

    // since is inclusive: the page continues from the last message seen.
    let since = v["messages"][3]["sent_at"].as_str().expect("ts").to_owned();
    let v = agent.get(&format!("/messages/unread?since={since}")).await.expect("get").json();
    assert_eq!(ids(&v), a_ids[3..].to_vec());

    // Nothing returned: next_since echoes since, or is null without since.
    let future = "2999-01-01T00:00:00.000Z";
    let v = agent.get(&format!("/messages/unread?since={future}")).await.expect("get").json();
    assert_eq!(v, json!({ "messages": [], "next_since": future, "next_cursor": null }));
    let all: Vec<String> = a_ids.iter().chain(&b_ids).cloned().collect();
    agent.post("/messages/mark_read", &json!({ "message_ids": all })).await.expect("post");
    let v = agent.get("/messages/unread").await.expect("get").json();
    assert_eq!(v, json!({ "messages": [], "next_since": null, "next_cursor": null }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_keep_independent_read_state() {
    let d = Daemon::start().await;
    let (mut one, _) = d.agent("one").await;
    let (mut two, _) = d.agent("two").await;
    let (ch, sent) = d.channel_with("a", 4).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    one.post("/messages/mark_read", &json!({ "message_ids": sent[..3] })).await.expect("post");
    assert_eq!(ids(&one.get("/messages/unread").await.expect("get").json()), sent[3..].to_vec());
    assert_eq!(ids(&two.get("/messages/unread").await.expect("get").json()), sent);
    two.post("/messages/mark_read", &json!({ "message_ids": [sent[1]] })).await.expect("post");

    // The person's inbox view shows who read what, in the order they read it.
    let v = d.admin().await.get("/admin/inbox").await.expect("get").json();
    let read_by = |id: &str| -> Vec<String> {
        let m = v["messages"].as_array().expect("list").iter().find(|m| m["id"] == id).expect("listed");
        serde_json::from_value(m["read_by"].clone()).expect("read_by")
    };
    assert_eq!(read_by(&sent[0]), vec!["one"]);
    assert_eq!(read_by(&sent[1]), vec!["one", "two"]);
    assert!(read_by(&sent[3]).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_sees_messages_that_arrive_late_with_older_timestamps() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, sent) = d.channel_with("a", 3).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    agent.post("/messages/mark_read", &json!({ "message_ids": sent })).await.expect("post");
    // Reading an empty page lets AMC skip everything already read next time…
    assert!(ids(&agent.get("/messages/unread").await.expect("get").json()).is_empty());
    // …but a message that arrives now with an old timestamp (a backfill) is still unread.
    let (_, late) =
        d.ingest(Source::Imessage, "a", vec![msg("late", "sent during the gap", now_ms() - 3_600_000)]).await;
    assert_eq!(ids(&agent.get("/messages/unread").await.expect("get").json()), late);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_returns_neighbours_in_order_and_get_returns_one() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, sent) = d.channel_with("a", 20).await;
    let (other, _) = d.channel_with("b", 2).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    d.approve(&other, json!({ "history": "all" })).await;

    let v = agent.get(&format!("/messages/context?channel_id={ch}&around_message_id={}", sent[10])).await.expect("get");
    assert_eq!(ids(&v.json()), sent[5..=15].to_vec());
    let v = agent
        .get(&format!("/messages/context?channel_id={ch}&around_message_id={}&before=50&after=0", sent[3]))
        .await
        .expect("get");
    assert_eq!(ids(&v.json()), sent[..=3].to_vec());
    let v = agent
        .get(&format!("/messages/context?channel_id={ch}&around_message_id={}&before=0&after=0", sent[3]))
        .await
        .expect("get");
    assert_eq!(ids(&v.json()), vec![sent[3].clone()]);

    // A target in another channel is not found.
    let r =
        agent.get(&format!("/messages/context?channel_id={other}&around_message_id={}", sent[3])).await.expect("get");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (404, "MESSAGE_NOT_FOUND"));

    let r = agent.get(&format!("/messages/{}", sent[7])).await.expect("get");
    assert_eq!(r.json()["text"], "message 7");
    let r = agent.get(&format!("/messages/msg_{}", ulid::Ulid::generate())).await.expect("get");
    assert_eq!(code(&r), "MESSAGE_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_lists_allowed_channels_with_policy() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (a, _) = d.channel_with("a", 1).await;
    let (_pending, _) = d.channel_with("b", 1).await;
    let (c, _) = d.channel_with("c", 1).await;
    d.approve(&a, json!({ "history": "all", "send_policy": "auto" })).await;
    let v = agent.get("/channels").await.expect("get").json();
    let list = v["channels"].as_array().expect("channels");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], a.as_str());
    // A channel approved from now on does not reveal when its quarantined history was active.
    d.approve(&c, json!({})).await;
    let v2 = agent.get("/channels").await.expect("get").json();
    let c_info = v2["channels"].as_array().expect("list").iter().find(|x| x["id"] == c.as_str()).cloned().expect("c");
    assert!(c_info["last_activity_at"].is_null(), "{c_info}");
    assert_eq!(list[0]["send_policy"], "auto");
    assert_eq!(list[0]["source"], "imessage");
    assert_eq!(list[0]["kind"], "dm");
    assert!(list[0]["last_activity_at"].is_string());
    let v = agent.get("/channels?source=discord").await.expect("get").json();
    assert_eq!(v["channels"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_are_described_and_downloadable() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let file = d.dir.path().join("IMG_0001.jpeg");
    std::fs::write(&file, b"\xff\xd8\xff jpeg bytes").expect("write");
    let gone = d.dir.path().join("offloaded.mov");
    let mut m = msg("with-att", "", now_ms());
    m.attachments = vec![
        attachment(file.to_str().expect("utf8"), "image/jpeg"),
        attachment(gone.to_str().expect("utf8"), "video/quicktime"),
    ];
    let (ch, sent) = d.ingest(Source::Imessage, "a", vec![m]).await;
    d.approve(&ch, json!({ "history": "all" })).await;

    let v = agent.get(&format!("/messages/{}", sent[0])).await.expect("get").json();
    let atts = v["attachments"].as_array().expect("attachments");
    assert_eq!(atts.len(), 2);
    assert_eq!(atts[0]["filename"], "IMG_0001.jpeg");
    assert_eq!(atts[0]["mime_type"], "image/jpeg");
    assert_eq!(atts[0]["size_bytes"], 14);
    assert_eq!(atts[0]["available"], true);
    assert_eq!(atts[1]["available"], false);
    let att_id = atts[0]["id"].as_str().expect("id");
    assert!(att_id.starts_with("att_"));

    let r = agent.get(atts[0]["download_path"].as_str().expect("path")).await.expect("get");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("image/jpeg"));
    assert_eq!(&r.body[..], b"\xff\xd8\xff jpeg bytes");
    let r = agent.get(atts[1]["download_path"].as_str().expect("path")).await.expect("get");
    assert_eq!(code(&r), "NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_reports_sources_and_needs_a_token() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let v = agent.get("/healthz").await.expect("get").json();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["sources"]["imessage"]["state"], "connected");
    assert!(v["uptime_seconds"].is_u64());
    assert_eq!(d.admin().await.get("/healthz").await.expect("get").status, 200);
    let r = d.anon().await.get("/healthz").await.expect("get");
    assert_eq!(code(&r), "UNAUTHORIZED");
}

/// More messages than `limit` in one millisecond: paging by `cursor` reaches every one of
/// them exactly once (`since` alone, being inclusive, would return the same page again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_by_cursor_never_sticks_on_messages_of_one_millisecond() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let at = now_ms() - 5_000;
    let burst: Vec<_> = (0..160).map(|i| msg(&format!("b-{i}"), &format!("burst {i}"), at)).collect();
    let (ch, sent) = d.ingest(Source::Imessage, "a", burst).await;
    d.approve(&ch, json!({ "history": "all" })).await;

    let (mut seen, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let path = match &cursor {
            Some(c) => format!("/messages/unread?limit=100&cursor={c}"),
            None => "/messages/unread?limit=100".to_owned(),
        };
        let v = agent.get(&path).await.expect("get").json();
        pages += 1;
        assert!(pages <= 3, "paging does not end: {v}");
        let page = ids(&v);
        if page.is_empty() {
            assert_eq!(v["next_cursor"].as_str(), cursor.as_deref(), "an empty page keeps the cursor");
            break;
        }
        seen.extend(page);
        cursor = Some(v["next_cursor"].as_str().expect("next_cursor").to_owned());
    }
    assert_eq!(seen, sent, "every message once, in order");

    // A cursor is a position, never access; one AMC did not hand to this agent is refused:
    // forged, damaged, moved, or another agent's.
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    let real = cursor.expect("a cursor");
    let (_, tag) = real.rsplit_once('.').expect("position.tag");
    let (mut other, _) = d.agent("codex").await;
    let others = other.get("/messages/unread?limit=1").await.expect("get").json()["next_cursor"].clone();
    let forged = [
        "x".to_owned(),
        "bm90IGEgY3Vyc29y".to_owned(),
        "%00".to_owned(),
        b64(&format!("0:{}", sent[0])),
        format!("{}.{tag}", b64(&format!("0:{}", sent[0]))),
        format!("v2.{}.{tag}", b64(&format!("0:{}", sent[0]))),
        format!("v2.{}.", b64(&format!("0:{}", sent[0]))),
        format!("{}.{}", real.rsplit_once('.').expect("dot").0, &tag[..4]),
        real.trim_start_matches("v2.").to_owned(),
        others.as_str().expect("codex's cursor").to_owned(),
    ];
    for bad in forged {
        let r = agent.get(&format!("/messages/unread?cursor={bad}")).await.expect("get");
        assert_eq!((r.status.as_u16(), code(&r).as_str()), (422, "VALIDATION_FAILED"), "{bad}");
    }
    let again = agent.get(&format!("/messages/unread?cursor={real}")).await.expect("get");
    assert_eq!(again.status, 200, "the cursor handed out still holds");
}

/// The person's own messages (written on their phone) are part of the conversation but
/// never unread: an agent has nothing to answer in them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_persons_own_messages_are_context_not_unread() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let now = now_ms();
    let mut own = msg("own", "on my way", now - 1_000);
    own.sender = amc_core::model::SenderInfo { id: "me".into(), display_name: None, is_self: true };
    let (ch, sent) =
        d.ingest(Source::Imessage, "a", vec![msg("q", "where are you?", now - 2_000), own, msg("r", "ok!", now)]).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let unread = agent.get("/messages/unread").await.expect("get").json();
    assert_eq!(ids(&unread), vec![sent[0].clone(), sent[2].clone()]);
    let ctx = agent.get(&format!("/messages/context?channel_id={ch}&around_message_id={}", sent[0])).await;
    let ctx = ctx.expect("get").json();
    assert_eq!(ids(&ctx), sent, "the conversation keeps the person's own message");
    assert_eq!(ctx["messages"][1]["sender"]["is_self"], true);
}
