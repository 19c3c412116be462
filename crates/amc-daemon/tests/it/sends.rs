//! Agents' sends: policies, review, idempotency, limits, attachments, platform
//! failures, unknown outcomes, and never sending twice.

use amc_testkit::Stored;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::harness::{Daemon, code, ids, msg};
use amc_core::model::{OutboxStatus, Source};
use amc_core::sender::{BoxFuture, Delivery, OutgoingSend, SendError, Sender};
use amc_core::time::now_ms;
use amc_store::{NewSend, SendLookup};

async fn allowed(d: &Daemon, chat: &str, policy: &str) -> (String, Vec<String>) {
    let (ch, sent) = d.channel_with(chat, 2).await;
    let r = d.approve(&ch, json!({ "history": "all", "send_policy": policy })).await;
    assert_eq!(r.status, 200);
    (ch, sent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auto_send_is_delivered_and_joins_the_conversation() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, sent) = allowed(&d, "a", "auto").await;
    let r = agent
        .post("/messages/send", &json!({ "channel_id": ch, "text": "On my way", "reply_to": sent[1] }))
        .await
        .expect("post");
    assert_eq!(r.status, 200, "{:?}", r.json());
    let v = r.json();
    assert_eq!(v["status"], "sent");
    let id = v["message_id"].as_str().expect("id").to_owned();
    assert!(amc_core::ids::is_message_id(&id));
    assert_eq!(v["sent_at"].as_str().map(str::len), Some(24));

    let delivered = d.sender.sent();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].text, "On my way");
    assert_eq!(delivered[0].channel_platform_id, "a");
    assert_eq!(delivered[0].reply_to_platform_id.as_deref(), Some("a-1"));

    let m = agent.get(&format!("/messages/{id}")).await.expect("get").json();
    assert_eq!(m["direction"], "outbound");
    assert_eq!(m["agent_id"], "claude");
    assert_eq!(m["reply_to"], sent[1].as_str());
    assert_eq!(m["sender"]["is_self"], true);
    let v = agent.get(&format!("/messages/context?channel_id={ch}&around_message_id={id}")).await.expect("get");
    assert_eq!(ids(&v.json()).last(), Some(&id));
    // An agent's own send is not unread for anyone.
    assert_eq!(ids(&agent.get("/messages/unread").await.expect("get").json()), sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_send_waits_for_the_person_then_goes_once() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "review").await;
    let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": "Draft reply" })).await.expect("post");
    assert_eq!(r.status, 202);
    let v = r.json();
    assert_eq!(v["status"], "pending_review");
    assert!(v["sent_at"].is_null());
    let id = v["message_id"].as_str().expect("id").to_owned();
    assert!(d.sender.sent().is_empty());

    let mut admin = d.admin().await;
    let q = admin.get("/admin/sends?status=held").await.expect("get").json();
    let held = &q["sends"][0];
    assert_eq!(held["id"], id.as_str());
    assert_eq!(held["agent_id"], "claude");
    assert_eq!(held["text"], "Draft reply");
    assert_eq!(held["channel_name"], "Chat a");
    assert_eq!(held["conversation"].as_array().map(Vec::len), Some(2), "the conversation around it");

    let r = admin.post(&format!("/admin/sends/{id}/approve"), &json!({})).await.expect("post");
    assert_eq!(r.json()["status"], "sent");
    assert_eq!(d.sender.sent().len(), 1);
    let r = admin.post(&format!("/admin/sends/{id}/approve"), &json!({})).await.expect("post");
    assert_eq!(code(&r), "CONFLICT");
    assert_eq!(d.sender.sent().len(), 1, "approving twice never sends twice");
    assert_eq!(agent.get(&format!("/messages/{id}")).await.expect("get").json()["direction"], "outbound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_send_never_goes_and_its_replay_says_so() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "review").await;
    let body = json!({ "channel_id": ch, "text": "Should not go" });
    let key = [("idempotency-key", "k-reject")];
    let r =
        agent.request(hyper::Method::POST, "/messages/send", &key, Some(body.to_string().into())).await.expect("post");
    let id = r.json()["message_id"].as_str().expect("id").to_owned();
    let mut admin = d.admin().await;
    let r = admin.post(&format!("/admin/sends/{id}/reject"), &json!({ "reason": "wrong tone" })).await.expect("post");
    assert_eq!(r.json()["status"], "rejected");
    assert_eq!(r.json()["error_message"], "wrong tone");
    let r = admin.post(&format!("/admin/sends/{id}/approve"), &json!({})).await.expect("post");
    assert_eq!(code(&r), "CONFLICT");
    assert!(d.sender.sent().is_empty());
    let r =
        agent.request(hyper::Method::POST, "/messages/send", &key, Some(body.to_string().into())).await.expect("post");
    assert_eq!(r.json()["status"], "rejected");
    assert_eq!(r.header("idempotency-replayed"), Some("true"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_channels_refuse_sends_and_reply_to_must_be_in_the_channel() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ro, _) = allowed(&d, "ro", "read_only").await;
    let (auto, _) = allowed(&d, "auto", "auto").await;
    let (_, other_msgs) = allowed(&d, "other", "auto").await;
    let r = agent.post("/messages/send", &json!({ "channel_id": ro, "text": "hi" })).await.expect("post");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (403, "CHANNEL_READ_ONLY"));
    let r = agent
        .post("/messages/send", &json!({ "channel_id": auto, "text": "hi", "reply_to": other_msgs[0] }))
        .await
        .expect("post");
    assert_eq!(code(&r), "MESSAGE_NOT_FOUND");
    let unknown = format!("ch_{}", ulid::Ulid::generate());
    let r = agent.post("/messages/send", &json!({ "channel_id": unknown, "text": "hi" })).await.expect("post");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (404, "CHANNEL_NOT_FOUND"));
    let r = agent.post("/messages/send", &json!({ "channel_id": "general", "text": "hi" })).await.expect("post");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (422, "VALIDATION_FAILED"));
    assert!(d.sender.sent().is_empty());
}

async fn post_keyed(c: &mut amc_client::Connection, b: serde_json::Value) -> amc_client::Response {
    let key = [("idempotency-key", "5f0c3e3a-7d1e-4a4b-9a55-0c1e0f6b2a10")];
    c.request(hyper::Method::POST, "/messages/send", &key, Some(b.to_string().into_bytes())).await.expect("post")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_replays_the_same_send_and_refuses_key_reuse() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (mut other, _) = d.agent("codex").await;
    let (ch, _) = allowed(&d, "a", "auto").await;
    let body = json!({ "channel_id": ch, "text": "once" });
    let first = post_keyed(&mut agent, body.clone()).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("idempotency-replayed"), None);
    let again = post_keyed(&mut agent, body.clone()).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.header("idempotency-replayed"), Some("true"));
    assert_eq!(again.json(), first.json());
    assert_eq!(d.sender.sent().len(), 1, "a replay does not send again");

    let reuse = post_keyed(&mut agent, json!({ "channel_id": ch, "text": "twice?" })).await;
    assert_eq!((reuse.status.as_u16(), code(&reuse).as_str()), (409, "IDEMPOTENCY_KEY_REUSE"));
    // Keys are scoped per agent.
    let theirs = post_keyed(&mut other, body).await;
    assert_eq!(theirs.status, 200);
    assert_ne!(theirs.json()["message_id"], first.json()["message_id"]);
    assert_eq!(d.sender.sent().len(), 2);

    let bad = agent
        .request(hyper::Method::POST, "/messages/send", &[("idempotency-key", "")], Some(b"{}".to_vec()))
        .await
        .expect("post");
    assert_eq!(code(&bad), "VALIDATION_FAILED");
}

/// A send answered `sent` that the platform fails afterwards (Messages can mark a message
/// it sent not delivered): from then on its replay answers with the error, its message says
/// why, and the person's log of sends has it failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sent_send_the_platform_fails_later_answers_failed_from_then_on() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, sent) = allowed(&d, "a", "auto").await;
    let body = json!({ "channel_id": ch, "text": "See you at 8" });
    let first = post_keyed(&mut agent, body.clone()).await.json();
    assert_eq!(first["status"], "sent");
    let id = first["message_id"].as_str().expect("id").to_owned();

    let why = "Messages could not deliver the text (error 25: Not Delivered) after marking it sent";
    assert!(d.amc.fail_after_sent(id.clone(), why.into()).await.expect("fail"));
    assert!(!d.amc.fail_after_sent(id.clone(), why.into()).await.expect("again"), "once");

    let again = post_keyed(&mut agent, body).await;
    assert_eq!((again.status.as_u16(), code(&again).as_str()), (502, "PLATFORM_SEND_FAILED"));
    assert_eq!(again.json()["error"]["message"], why);
    let m = agent.get(&format!("/messages/{id}")).await.expect("get").json();
    assert_eq!((m["direction"].as_str(), m["delivery_failed"].as_str()), (Some("outbound"), Some(why)));
    let other = agent.get(&format!("/messages/{}", sent[0])).await.expect("get").json();
    assert_eq!(other.get("delivery_failed"), None, "only where it applies");
    let log = d.admin().await.get("/admin/sends?status=failed").await.expect("get").json();
    assert_eq!(
        (log["sends"][0]["id"].as_str(), log["sends"][0]["error_message"].as_str()),
        (Some(id.as_str()), Some(why))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sends_with_one_key_deliver_once_and_distinct_keys_all_deliver() {
    let d = Daemon::start_with(|c| c.rate_limit = amc_core::ratelimit::RateLimit { burst: 100, per_minute: 100 }).await;
    let (mut agent, token) = d.agent("claude").await;
    let (ch, sent) = allowed(&d, "a", "auto").await;
    let socket = d.socket();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (socket, token, ch) = (socket.clone(), token.clone(), ch.clone());
        tasks.push(tokio::spawn(async move {
            let mut c = amc_client::Connection::connect(&socket).await.expect("connect").with_bearer(&token);
            let key = if i < 8 { "same-key".to_owned() } else { format!("key-{i}") };
            let text = if i < 8 { "same".to_owned() } else { format!("text {i}") };
            let body = json!({ "channel_id": ch, "text": text }).to_string().into_bytes();
            c.request(hyper::Method::POST, "/messages/send", &[("idempotency-key", &key)], Some(body))
                .await
                .expect("post")
        }));
    }
    // Concurrent mark_read from the same agent at the same time.
    for _ in 0..4 {
        let r = agent.post("/messages/mark_read", &json!({ "message_ids": sent })).await.expect("post");
        assert_eq!(r.json()["marked_count"], 2);
    }
    let mut same_ids = std::collections::HashSet::new();
    for (i, t) in tasks.into_iter().enumerate() {
        let r = t.await.expect("join");
        assert_eq!(r.status, 200, "{:?}", r.json());
        if i < 8 {
            same_ids.insert(r.json()["message_id"].as_str().expect("id").to_owned());
        }
    }
    assert_eq!(same_ids.len(), 1, "one key, one send");
    let delivered = d.sender.sent();
    assert_eq!(delivered.iter().filter(|s| s.text == "same").count(), 1);
    assert_eq!(delivered.len(), 9);
    assert!(ids(&agent.get("/messages/unread").await.expect("get").json()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_takes_a_burst_then_answers_rate_limited_with_retry_after() {
    let d = Daemon::start_with(|c| c.rate_limit = amc_core::ratelimit::RateLimit { burst: 2, per_minute: 2 }).await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "auto").await;
    let (other, _) = allowed(&d, "b", "auto").await;
    for i in 0..2 {
        let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": format!("{i}") })).await.expect("post");
        assert_eq!(r.status, 200);
    }
    let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": "3" })).await.expect("post");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (429, "RATE_LIMITED"));
    let retry: u64 = r.header("retry-after").expect("Retry-After").parse().expect("seconds");
    assert!((1..=30).contains(&retry), "{retry}");
    let r = agent.post("/messages/send", &json!({ "channel_id": other, "text": "elsewhere" })).await.expect("post");
    assert_eq!(r.status, 200, "other channels have their own bucket");
    assert_eq!(d.sender.sent().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_come_only_from_allowed_folders_and_are_staged() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "review").await;
    let outbox = d.config.data_dir.join("outbox");
    std::fs::write(outbox.join("invoice.pdf"), b"%PDF-1.7 invoice").expect("write");
    let secret = d.dir.path().join("amc.db");
    let ok = agent
        .post(
            "/messages/send",
            &json!({ "channel_id": ch, "text": "", "attachments": [{ "path": outbox.join("invoice.pdf") }] }),
        )
        .await
        .expect("post");
    assert_eq!(ok.status, 202, "{:?}", ok.json());
    let id = ok.json()["message_id"].as_str().expect("id").to_owned();
    // The person sees the staged file before it goes; changing the original changes nothing.
    std::fs::write(outbox.join("invoice.pdf"), b"swapped").expect("write");
    let held = d.admin().await.get(&format!("/admin/sends/{id}")).await.expect("get").json();
    let staged = &held["attachments"][0];
    assert_eq!(staged["filename"], "invoice.pdf");
    assert_eq!(staged["size_bytes"], 16);
    let preview = d.admin().await.get(&format!("/admin/sends/{id}/attachments/0")).await.expect("get");
    assert_eq!((preview.status.as_u16(), preview.header("content-type")), (200, Some("application/pdf")));
    assert_eq!(&preview.body[..], b"%PDF-1.7 invoice", "the person previews what will be sent");
    let missing = d.admin().await.get(&format!("/admin/sends/{id}/attachments/1")).await.expect("get");
    assert_eq!(code(&missing), "NOT_FOUND");
    d.admin().await.post(&format!("/admin/sends/{id}/approve"), &json!({})).await.expect("approve");
    let delivered = d.sender.sent();
    assert_eq!(std::fs::read(&delivered[0].attachments[0].path).expect("staged"), b"%PDF-1.7 invoice");

    for (bad, expect) in [
        (json!([{ "path": secret }]), "VALIDATION_FAILED"),
        (json!([{ "path": format!("{}/../amc.db", outbox.display()) }]), "VALIDATION_FAILED"),
        (json!([{ "path": "/etc/passwd" }]), "VALIDATION_FAILED"),
        (json!([{ "path": "invoice.pdf" }]), "VALIDATION_FAILED"),
        (json!([{}]), "VALIDATION_FAILED"),
        (json!([{ "path": outbox.join("invoice.pdf"), "url": "https://example.com/a.png" }]), "VALIDATION_FAILED"),
        (json!([{ "path": outbox.join("invoice.pdf"), "sha": "x" }]), "VALIDATION_FAILED"),
        (json!([{ "url": "http://127.0.0.1:9/internal.png" }]), "VALIDATION_FAILED"),
        (json!([{ "url": "http://169.254.169.254/latest/meta-data/" }]), "VALIDATION_FAILED"),
        (json!([{ "url": "http://localhost:9/a.png" }]), "VALIDATION_FAILED"),
        (json!([{ "url": "file:///etc/passwd" }]), "VALIDATION_FAILED"),
    ] {
        let r = agent
            .post("/messages/send", &json!({ "channel_id": ch, "text": "x", "attachments": bad }))
            .await
            .expect("post");
        assert_eq!(code(&r), expect, "{bad}");
    }
    let r = agent
        .post("/messages/send", &json!({ "channel_id": ch, "text": "x", "attachments": [{ "path": secret }] }))
        .await
        .expect("post");
    assert!(code(&r) == "VALIDATION_FAILED" && r.json()["error"]["message"].as_str().unwrap_or("").contains("outbox"));

    let big = outbox.join("big.bin");
    std::fs::write(&big, vec![0u8; amc_core::sender::RECORDING_MAX_ATTACHMENT_BYTES as usize + 1]).expect("write");
    let r = agent
        .post("/messages/send", &json!({ "channel_id": ch, "text": "", "attachments": [{ "path": big }] }))
        .await
        .expect("post");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (413, "ATTACHMENT_TOO_LARGE_FOR_PLATFORM"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn platform_failures_map_to_their_codes() {
    let d = Daemon::start_with(|c| c.rate_limit = amc_core::ratelimit::RateLimit { burst: 100, per_minute: 100 }).await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "auto").await;
    let cases = [
        (SendError::Auth("Messages refused automation (-1743)".into()), 502, "PLATFORM_AUTH"),
        (SendError::Failed("boom".into()), 502, "PLATFORM_SEND_FAILED"),
        (SendError::RateLimited { retry_after: 7 }, 429, "RATE_LIMITED"),
        (SendError::TooLarge("over 25 MB".into()), 413, "ATTACHMENT_TOO_LARGE_FOR_PLATFORM"),
    ];
    for (i, (err, status, expect)) in cases.into_iter().enumerate() {
        d.sender.fail_next(err);
        let key = format!("fail-{i}");
        let body = json!({ "channel_id": ch, "text": format!("try {i}") }).to_string().into_bytes();
        let r = agent
            .request(hyper::Method::POST, "/messages/send", &[("idempotency-key", &key)], Some(body.clone()))
            .await
            .expect("post");
        assert_eq!((r.status.as_u16(), code(&r).as_str()), (status, expect));
        if expect == "RATE_LIMITED" {
            assert_eq!(r.header("retry-after"), Some("7"));
        }
        // The failure is recorded: a replay answers the same, and nothing is sent.
        let again = agent
            .request(hyper::Method::POST, "/messages/send", &[("idempotency-key", &key)], Some(body))
            .await
            .expect("post");
        assert_eq!(code(&again), expect);
    }
    assert!(d.sender.sent().is_empty());
    let log = d.admin().await.get("/admin/sends?status=failed").await.expect("get").json();
    assert_eq!(log["sends"].as_array().map(Vec::len), Some(4));
}

/// A platform that never answers.
struct Hanging;

impl Sender for Hanging {
    fn max_attachment_bytes(&self) -> u64 {
        1 << 20
    }
    fn send(&self, _: OutgoingSend) -> BoxFuture<'_, Result<Delivery, SendError>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_without_confirmation_is_unknown_and_never_retried() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start_in(dir, |c| c.send_timeout = Duration::from_millis(300), Some(Arc::new(Hanging))).await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "auto").await;
    let key = [("idempotency-key", "k-unknown")];
    let body = json!({ "channel_id": ch, "text": "did it go?" }).to_string().into_bytes();
    let r = agent.request(hyper::Method::POST, "/messages/send", &key, Some(body.clone())).await.expect("post");
    assert_eq!(r.status, 202);
    assert_eq!(r.json()["status"], "unknown");
    assert!(r.json()["sent_at"].is_null());
    let r = agent.request(hyper::Method::POST, "/messages/send", &key, Some(body)).await.expect("post");
    assert_eq!(r.json()["status"], "unknown", "a retry with the same key does not send again");
    let log = d.admin().await.get("/admin/sends?status=unknown").await.expect("get").json();
    assert_eq!(log["sends"].as_array().map(Vec::len), Some(1));
    assert!(log["sends"][0]["error_message"].as_str().is_some_and(|m| m.contains("confirm")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_in_flight_at_a_crash_becomes_unknown_on_restart() {
    let d = Daemon::start().await;
    let (_, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "auto").await;
    // What the outbox holds when AMC dies between recording a send and its outcome.
    let lookup = d
        .amc
        .store()
        .record_send(&NewSend {
            agent_id: "claude",
            idempotency: None,
            channel_id: &ch,
            text: "in flight",
            reply_to: None,
            attachments: &[],
            status: OutboxStatus::Sending,
            held_bounds: amc_core::service::HELD_BOUNDS,
            held_reason: None,
            read_from: &[],
        })
        .expect("record");
    let SendLookup::New(item) = lookup else { panic!("new") };
    let sender = d.sender.clone();
    let dir = d.stop().await;
    let d = Daemon::start_in(dir, |_| {}, Some(Arc::new(sender.clone()))).await;
    let v = d.admin().await.get(&format!("/admin/sends/{}", item.id)).await.expect("get").json();
    assert_eq!(v["status"], "unknown");
    assert!(sender.sent().is_empty(), "never retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_holds_every_send_until_resumed_and_survives_restart() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "auto").await;
    let r = d.admin().await.post("/admin/pause", &json!({ "paused": true })).await.expect("post");
    assert_eq!(r.json(), json!({ "paused": true }));
    let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": "held" })).await.expect("post");
    assert_eq!(r.json()["status"], "pending_review");
    assert!(d.sender.sent().is_empty());
    assert_eq!(agent.get("/healthz").await.expect("get").json()["agents_paused"], true);

    let dir = d.stop().await;
    let d = Daemon::start_in(dir, |_| {}, None).await;
    let (mut agent, _) = d.agent("codex").await;
    let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": "still held" })).await.expect("post");
    assert_eq!(r.json()["status"], "pending_review");
    d.admin().await.post("/admin/pause", &json!({ "paused": false })).await.expect("post");
    let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": "goes" })).await.expect("post");
    assert_eq!(r.json()["status"], "sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_tells_the_ui_about_changes() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "review").await;
    let mut stream = tokio::net::UnixStream::connect(d.socket()).await.expect("connect");
    let req =
        format!("GET /admin/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\r\n", d.admin_token);
    stream.write_all(req.as_bytes()).await.expect("write");
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    // Wait for the response head, so the subscription exists before the change.
    while !seen.contains("text/event-stream") {
        let n = stream.read(&mut buf).await.expect("read");
        assert!(n > 0, "closed: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    agent.post("/messages/send", &json!({ "channel_id": ch, "text": "hello" })).await.expect("post");
    d.ingest(Source::Imessage, "new-chat", vec![msg("n-1", "hi", now_ms())]).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !(seen.contains("\"send_changed\"") && seen.contains("\"channel_created\"")) {
        let n = tokio::time::timeout_at(deadline, stream.read(&mut buf)).await.expect("in time").expect("read");
        assert!(n > 0, "closed: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("\"status\":\"held\""), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_answers_as_the_first_request_did_even_after_the_channel_changed() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "auto").await;
    let body = json!({ "channel_id": ch, "text": "once" }).to_string().into_bytes();
    let key = [("idempotency-key", "k-first")];
    let first = agent.request(hyper::Method::POST, "/messages/send", &key, Some(body.clone())).await.expect("post");
    assert_eq!(first.json()["status"], "sent");
    d.admin().await.post(&format!("/admin/channels/{ch}/block"), &json!({})).await.expect("block");
    let again = agent.request(hyper::Method::POST, "/messages/send", &key, Some(body)).await.expect("post");
    assert_eq!(again.json(), first.json());
    assert_eq!(again.header("idempotency-replayed"), Some("true"));
    assert_eq!(d.sender.sent().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amcs_own_files_are_never_attachments_even_inside_an_allowed_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let parent = dir.path().to_owned();
    let data = parent.join("amc-data");
    std::fs::create_dir_all(&data).expect("mkdir");
    // The person allowed their whole home-like folder, which holds AMC's data directory.
    let d = Daemon::start_in(
        dir,
        |c| {
            c.data_dir = data.clone();
            c.attachment_dirs = vec![data.join("outbox"), parent.clone()];
        },
        None,
    )
    .await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = allowed(&d, "a", "review").await;
    for private in [data.join("amc.db"), data.join("admin-token"), data.join("amc.db-wal")] {
        let r = agent
            .post("/messages/send", &json!({ "channel_id": ch, "text": "x", "attachments": [{ "path": private }] }))
            .await
            .expect("post");
        assert_eq!(code(&r), "VALIDATION_FAILED", "{}", private.display());
    }
    std::fs::write(parent.join("shared.txt"), b"fine to send").expect("write");
    let r = agent
        .post(
            "/messages/send",
            &json!({ "channel_id": ch, "text": "x", "attachments": [{ "path": parent.join("shared.txt") }] }),
        )
        .await
        .expect("post");
    assert_eq!(r.status, 202, "{:?}", r.json());
}

/// A platform whose echo of a send reaches AMC's ingest before the send's own answer.
struct Echoing {
    amc: std::sync::OnceLock<amc_core::service::Amc>,
}

impl Sender for Echoing {
    fn max_attachment_bytes(&self) -> u64 {
        1 << 20
    }
    fn send(&self, msg: OutgoingSend) -> BoxFuture<'_, Result<Delivery, SendError>> {
        Box::pin(async move {
            let amc = self.amc.get().expect("wired");
            let spec = amc_core::model::ChannelSpec {
                platform_id: msg.channel_platform_id.clone(),
                name: msg.channel.name.clone(),
                kind: msg.channel.kind,
                readers: None,
            };
            let mut echo = msg_of("echo-1", &msg.text);
            echo.sender.is_self = true;
            amc.ingest(msg.channel.source, spec, vec![echo], None).await.expect("echo ingested");
            Ok(Delivery { platform_id: "echo-1".into(), sent_at: now_ms(), other_parts: Vec::new() })
        })
    }
}

fn msg_of(id: &str, text: &str) -> amc_core::model::IncomingMessage {
    msg(id, text, now_ms())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_echo_that_arrives_first_becomes_the_sent_message_not_a_second_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let echoing = Arc::new(Echoing { amc: std::sync::OnceLock::new() });
    let d = Daemon::start_in(dir, |_| {}, Some(echoing.clone())).await;
    let _ = echoing.amc.set(d.amc.clone());
    let (mut agent, _) = d.agent("claude").await;
    let (mut other, _) = d.agent("codex").await;
    let (ch, sent) = allowed(&d, "a", "auto").await;
    let newest = || {
        d.amc
            .store()
            .database()
            .read(|tx| Ok(tx.query_row("SELECT max(rowid) FROM messages", [], |r| r.get::<_, i64>(0))?))
    };
    let before = newest().expect("rowid");
    let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": "hello" })).await.expect("post");
    assert_eq!(r.json()["status"], "sent", "{:?}", r.json());
    let id = r.json()["message_id"].as_str().expect("id").to_owned();
    let m = agent.get(&format!("/messages/{id}")).await.expect("get").json();
    assert_eq!((m["direction"].as_str(), m["agent_id"].as_str()), (Some("outbound"), Some("claude")));
    let ctx =
        agent.get(&format!("/messages/context?channel_id={ch}&around_message_id={id}")).await.expect("get").json();
    assert_eq!(ids(&ctx).iter().filter(|m| !sent.contains(m)).count(), 1, "one message, not two: {ctx}");
    // The echo (stored first) went, but never the newest row: no rowid is given twice, which
    // the push's positions rely on.
    assert_eq!(newest().expect("rowid"), before + 2, "the echo's row and the send's row were both made");
    let (_, next) = d.ingest(Source::Imessage, "a", vec![msg_of("after", "after the echo")]).await;
    let next_rowid =
        d.amc.store().database().read(|tx| {
            Ok(tx.query_row("SELECT rowid FROM messages WHERE id = ?1", [&next[0]], |r| r.get::<_, i64>(0))?)
        });
    assert_eq!(next_rowid.expect("rowid"), before + 3);
    let unread = ids(&other.get("/messages/unread").await.expect("get").json());
    assert_eq!(unread, [sent, next].concat(), "the echo is not unread");
}

/// The recording sender, held like a slow platform: each send counts itself as started and
/// waits until the test opens the gate.
struct Gated {
    recording: amc_core::sender::RecordingSender,
    started: tokio::sync::watch::Sender<usize>,
    open: tokio::sync::watch::Receiver<bool>,
}

impl Sender for Gated {
    fn max_attachment_bytes(&self) -> u64 {
        1 << 20
    }
    fn send(&self, msg: OutgoingSend) -> BoxFuture<'_, Result<Delivery, SendError>> {
        Box::pin(async move {
            self.started.send_modify(|n| *n += 1);
            let _ = self.open.clone().wait_for(|open| *open).await;
            self.recording.send(msg).await
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_survive_their_callers_going_away() {
    let recording = amc_core::sender::RecordingSender::default();
    let (gate, open) = tokio::sync::watch::channel(false);
    let started = tokio::sync::watch::Sender::new(0);
    let gated = Gated { recording: recording.clone(), started: started.clone(), open };
    let dir = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start_in(dir, |_| {}, Some(Arc::new(gated))).await;
    let (mut agent, token) = d.agent("claude").await;
    let (review, _) = allowed(&d, "a", "review").await;
    let (auto, _) = allowed(&d, "b", "auto").await;
    let mut in_flight = started.subscribe();

    // The person approves, and their request goes away while the platform is working.
    let r = agent.post("/messages/send", &json!({ "channel_id": review, "text": "approved" })).await.expect("post");
    let id = r.json()["message_id"].as_str().expect("id").to_owned();
    let amc = d.amc.clone();
    let approving = tokio::spawn(async move { amc.approve_send(id, amc_core::model::DecidedVia::Mac).await });
    in_flight.wait_for(|n| *n == 1).await.expect("the approved send reached the platform");
    approving.abort();

    // An agent's connection closes while its auto send is in flight.
    let socket = d.socket();
    let body = json!({ "channel_id": auto, "text": "auto" }).to_string().into_bytes();
    let sending = tokio::spawn(async move {
        let mut c = amc_client::Connection::connect(&socket).await.expect("connect").with_bearer(&token);
        c.request(hyper::Method::POST, "/messages/send", &[], Some(body)).await
    });
    in_flight.wait_for(|n| *n == 2).await.expect("the auto send reached the platform");
    sending.abort();

    // The platform answers once both callers are gone.
    gate.send_replace(true);
    let admin = d.admin_token.clone();
    let socket = d.socket();
    let log = amc_testkit::eventually("both sends to be recorded as sent", || {
        let (admin, socket) = (admin.clone(), socket.clone());
        async move {
            let mut c = amc_client::Connection::connect(&socket).await.ok()?.with_bearer(&admin);
            let log = c.get("/admin/sends").await.ok()?.json();
            let done = log["sends"].as_array()?.iter().all(|s| s["status"] != "sending");
            done.then_some(log)
        }
    })
    .await;
    assert_eq!(recording.sent().len(), 2, "each delivered once");
    let statuses: Vec<&str> =
        log["sends"].as_array().expect("list").iter().filter_map(|s| s["status"].as_str()).collect();
    assert_eq!(statuses, ["sent", "sent"], "{log}");
}

/// The bytes of every file under `dir`.
fn bytes_under(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => bytes_under(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Sends waiting for review held 64 KiB of text and up to a gigabyte of staged files each,
/// without end. Now one agent's held sends stop at 100 and at 256 MiB, with
/// `QUOTA_EXCEEDED`, before anything more is copied; another agent is not held back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_agents_sends_waiting_for_review_are_bounded() {
    let d = Daemon::start_with(|c| c.rate_limit = amc_core::ratelimit::RateLimit { burst: 10_000, per_minute: 10_000 })
        .await;
    let (mut agent, _) = d.agent("claude").await;
    let (mut heavy, _) = d.agent("heavy").await;
    let (mut other, _) = d.agent("other").await;
    let (ch, _) = d.channel_with("a", 1).await;
    d.approve(&ch, json!({ "history": "all", "send_policy": "review" })).await;
    let text = "t".repeat(64 * 1024);
    for i in 0..100 {
        let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": text })).await.expect("send");
        assert_eq!(r.status, 202, "send {i}: {:?}", r.json());
    }
    let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": "one more" })).await.expect("send");
    assert_eq!((r.status.as_u16(), code(&r)), (429, "QUOTA_EXCEEDED".to_owned()), "{:?}", r.json());

    // Ten files of 9 MB a send: the third would take the held files past 256 MiB.
    let outbox = d.config.data_dir.join("outbox");
    std::fs::write(outbox.join("big.bin"), vec![7u8; 9_000_000]).expect("write");
    let files: Vec<_> = (0..10).map(|_| json!({ "path": outbox.join("big.bin") })).collect();
    let body = json!({ "channel_id": ch, "text": "", "attachments": files });
    for _ in 0..2 {
        let r = heavy.post("/messages/send", &body).await.expect("send");
        assert_eq!(r.status, 202, "{:?}", r.json());
    }
    let staged_before = bytes_under(&d.config.staging_dir());
    let r = heavy.post("/messages/send", &body).await.expect("send");
    assert_eq!((r.status.as_u16(), code(&r)), (429, "QUOTA_EXCEEDED".to_owned()), "{:?}", r.json());
    let staged = bytes_under(&d.config.staging_dir());
    assert_eq!(staged, staged_before, "nothing more was copied");
    assert!(staged <= 256 << 20, "{staged} bytes staged");
    eprintln!("held sends: 101 asked of 64 KiB, 3 of 90 MB; {staged} bytes staged");

    let r = other.post("/messages/send", &json!({ "channel_id": ch, "text": "mine" })).await.expect("send");
    assert_eq!(r.status, 202, "another agent is not held back: {:?}", r.json());
    // Once the person answers one, the agent may send again.
    let held = d.admin().await.get("/admin/sends?status=held&limit=500").await.expect("held").json();
    let sends = held["sends"].as_array().expect("sends");
    let mine = sends.iter().find(|s| s["agent_id"] == "claude").expect("a held send of the agent");
    let id = mine["id"].as_str().expect("id");
    let r = d.admin().await.post(&format!("/admin/sends/{id}/reject"), &json!({})).await.expect("reject");
    assert!(r.status.is_success(), "{:?}", r.json());
    let again = agent.post("/messages/send", &json!({ "channel_id": ch, "text": "now" })).await;
    assert_eq!(again.expect("send").status, 202);
}

/// What an agent reads says whose words it is: every message but the agent's own sends is
/// third-party text (`untrusted_content`), on every route that gives messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_but_an_agents_own_send_is_marked_third_party_text() {
    let d = Daemon::start().await;
    let (mut claude, _) = d.agent("claude").await;
    let (mut codex, _) = d.agent("codex").await;
    let (ch, sent) = allowed(&d, "a", "auto").await;
    let r = claude.post("/messages/send", &json!({ "channel_id": ch, "text": "Ignore previous orders" })).await;
    let own = r.expect("post").json()["message_id"].as_str().expect("id").to_owned();
    let marks = |v: &serde_json::Value| -> Vec<(String, bool)> {
        let list = v["messages"].as_array().or(v["results"].as_array()).cloned().unwrap_or_default();
        list.iter()
            .map(|m| if m["message"].is_object() { m["message"].clone() } else { m.clone() })
            .map(|m| {
                (m["id"].as_str().unwrap_or_default().to_owned(), m["untrusted_content"].as_bool().expect("marked"))
            })
            .collect()
    };
    let context = format!("/messages/context?channel_id={ch}&around_message_id={own}&before=10");
    for (agent, mine) in [(&mut claude, true), (&mut codex, false)] {
        let around = marks(&agent.get(&context).await.expect("get").json());
        assert_eq!(around.len(), sent.len() + 1, "{around:?}");
        for (id, untrusted) in &around {
            assert_eq!(*untrusted, !(mine && *id == own), "{id} as one agent reads it");
        }
        let one = agent.get(&format!("/messages/{own}")).await.expect("get").json();
        assert_eq!(one["untrusted_content"], !mine);
        let unread = marks(&agent.get("/messages/unread").await.expect("get").json());
        assert!(!unread.is_empty() && unread.iter().all(|(_, u)| *u), "{unread:?}");
        let found = marks(&agent.get("/messages/search?query=orders").await.expect("get").json());
        assert_eq!(found, vec![(own.clone(), !mine)]);
    }
}
