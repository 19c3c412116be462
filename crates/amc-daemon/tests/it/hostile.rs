//! Hostile and malformed input: every one gets the envelope with a stable code, and the
//! daemon keeps serving.

use hyper::Method;
use serde_json::json;

use super::harness::{Daemon, code};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_required_and_checked() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("claude").await;
    let mut anon = d.anon().await;
    for path in ["/messages/unread", "/channels", "/messages/msg_01HXYZABCDEFGHJKMNPQRSTVWX", "/admin/channels"] {
        let r = anon.get(path).await.expect("get");
        assert_eq!((r.status.as_u16(), code(&r).as_str()), (401, "UNAUTHORIZED"), "{path}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    }
    let r = anon
        .request(Method::GET, "/channels", &[("authorization", &format!("Basic {token}"))], None)
        .await
        .expect("get");
    assert_eq!(code(&r), "UNAUTHORIZED");
    let last = if token.ends_with('0') { '1' } else { '0' };
    let forged = format!("{}{last}", &token[..token.len() - 1]);
    let r = anon
        .request(Method::GET, "/channels", &[("authorization", &format!("Bearer {forged}"))], None)
        .await
        .expect("get");
    assert_eq!(code(&r), "UNAUTHORIZED");

    let mut no_id = d.anon().await.with_bearer(&token);
    for (method, path, body) in [
        (Method::GET, "/messages/unread", None),
        (Method::GET, "/messages/context?channel_id=ch_x&around_message_id=msg_x", None),
        (Method::POST, "/messages/mark_read", Some(b"{\"message_ids\":[]}".to_vec())),
    ] {
        let r = no_id.request(method, path, &[], body).await.expect("req");
        assert_eq!((r.status.as_u16(), code(&r).as_str()), (400, "AGENT_ID_REQUIRED"), "{path}");
    }
    // Sends and channel lists identify the agent by its token alone.
    assert_eq!(no_id.get("/channels").await.expect("get").status, 200);
    let r = no_id.request(Method::GET, "/channels", &[("x-agent-id", "someone-else")], None).await.expect("get");
    assert_eq!(code(&r), "UNAUTHORIZED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_routes_and_methods_get_the_envelope() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let r = agent.get("/nope").await.expect("get");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (404, "NOT_FOUND"));
    let r = d.anon().await.get("/../../etc/passwd").await.expect("get");
    assert_eq!(r.status.as_u16(), 404);
    let r = agent.request(Method::DELETE, "/messages/unread", &[], None).await.expect("req");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (405, "METHOD_NOT_ALLOWED"));
    let r = agent.get("/messages/send").await.expect("get");
    assert_eq!(code(&r), "METHOD_NOT_ALLOWED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_wrong_types_and_unknown_fields_fail_validation() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let bodies: [&[u8]; 12] = [
        b"{",
        b"not json",
        b"",
        b"[]",
        b"{\"channel_id\": 5, \"text\": \"x\"}",
        b"{\"channel_id\": \"ch_x\"}",
        b"{\"channel_id\": \"ch_x\", \"text\": \"x\", \"extra\": true}",
        b"{\"channel_id\": \"ch_x\", \"text\": \"x\"} trailing",
        b"{\"channel_id\": \"ch_x\", \"text\": \"x\", \"attachments\": {}}",
        b"{\"channel_id\": \"ch_x\", \"text\": \"x\", \"attachments\": [{\"path\": 1}]}",
        b"{\"channel_id\": \"ch_x\", \"text\": \"\\ud800\"}",
        b"\xff\xfe{}",
    ];
    for body in bodies {
        let r = agent.request(Method::POST, "/messages/send", &[], Some(body.to_vec())).await.expect("post");
        assert_eq!(
            (r.status.as_u16(), code(&r).as_str()),
            (422, "VALIDATION_FAILED"),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    for body in [
        json!({}),
        json!({ "message_ids": "msg_x" }),
        json!({ "message_ids": [1] }),
        json!({ "message_ids": [], "x": 1 }),
    ] {
        let r = agent.post("/messages/mark_read", &body).await.expect("post");
        assert_eq!(code(&r), "VALIDATION_FAILED", "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_range_numbers_and_invalid_ids_fail_validation() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, sent) = d.channel_with("a", 1).await;
    let ok_ctx = format!("channel_id={ch}&around_message_id={}", sent[0]);
    for q in [
        "/messages/unread?limit=0".to_owned(),
        "/messages/unread?limit=101".to_owned(),
        "/messages/unread?limit=-1".to_owned(),
        "/messages/unread?limit=abc".to_owned(),
        "/messages/unread?limit=99999999999999999999".to_owned(),
        "/messages/unread?since=yesterday".to_owned(),
        "/messages/unread?source=telegram".to_owned(),
        "/messages/unread?channel_id=general".to_owned(),
        "/messages/unread?bogus=1".to_owned(),
        format!("/messages/context?{ok_ctx}&before=51"),
        format!("/messages/context?{ok_ctx}&after=-1"),
        format!("/messages/context?{ok_ctx}&before=1.5"),
        format!("/messages/context?channel_id={ch}&around_message_id=msg_1"),
        format!("/messages/context?channel_id={ch}&around_message_id=msg_01hxyzabcdefghjkmnpqrstvwx"),
        format!("/messages/context?channel_id={ch}"),
        format!("/messages/context?around_message_id={}", sent[0]),
        "/channels?source=irc".to_owned(),
    ] {
        let r = agent.get(&q).await.expect("get");
        assert_eq!((r.status.as_u16(), code(&r).as_str()), (422, "VALIDATION_FAILED"), "{q}");
    }
    let too_many: Vec<String> = (0..1001).map(|_| format!("msg_{}", ulid::Ulid::generate())).collect();
    let r = agent.post("/messages/mark_read", &json!({ "message_ids": too_many })).await.expect("post");
    assert_eq!(code(&r), "VALIDATION_FAILED");
    let r = agent.post("/messages/mark_read", &json!({ "message_ids": ["msg_nope"] })).await.expect("post");
    assert_eq!(code(&r), "VALIDATION_FAILED");
    let r = agent
        .post("/messages/send", &json!({ "channel_id": ch, "text": "x", "reply_to": "msg_bad" }))
        .await
        .expect("post");
    assert_eq!(code(&r), "VALIDATION_FAILED");
    // Boundaries are accepted.
    for q in
        ["/messages/unread?limit=1", "/messages/unread?limit=100", "/messages/unread?since=2026-01-01T00:00:00%2B02:00"]
    {
        assert_eq!(agent.get(q).await.expect("get").status, 200, "{q}");
    }
    let r = agent.get(&format!("/messages/context?{ok_ctx}&before=50&after=0")).await.expect("get");
    assert_eq!(r.status.as_u16(), 404, "in range, but the channel is pending");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_bytes_huge_bodies_and_long_headers_are_refused_and_the_daemon_lives_on() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = d.channel_with("a", 1).await;
    d.approve(&ch, json!({ "send_policy": "auto" })).await;
    let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": "a\u{0}b" })).await.expect("post");
    assert_eq!(code(&r), "VALIDATION_FAILED");
    let r = agent
        .post("/messages/send", &json!({ "channel_id": ch, "text": "x".repeat(64 * 1024 + 1) }))
        .await
        .expect("post");
    assert_eq!(code(&r), "VALIDATION_FAILED");
    let r = agent.post("/messages/send", &json!({ "channel_id": ch, "text": "" })).await.expect("post");
    assert_eq!(code(&r), "VALIDATION_FAILED", "nothing to send");

    let huge = format!("{{\"channel_id\":\"{ch}\",\"text\":\"{}\"}}", "y".repeat(1024 * 1024 + 10));
    let r = agent.request(Method::POST, "/messages/send", &[], Some(huge.into_bytes())).await.expect("post");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (413, "PAYLOAD_TOO_LARGE"));

    let long = "z".repeat(40 * 1024);
    let mut fresh = d.anon().await;
    let r = fresh.request(Method::GET, "/channels", &[("x-padding", &long)], None).await.expect("get");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (431, "HEADERS_TOO_LARGE"));
    // Headers past what the HTTP parser buffers are refused by it, with the envelope too.
    let giant = "z".repeat(1024 * 1024);
    let mut fresh = d.anon().await;
    let r = fresh.request(Method::GET, "/channels", &[("x-padding", &giant)], None).await.expect("an answer");
    assert_eq!((r.status.as_u16(), code(&r).as_str()), (431, "HEADERS_TOO_LARGE"));
    let r = agent.get("/channels").await.expect("still serving");
    assert_eq!(r.status, 200);
}
