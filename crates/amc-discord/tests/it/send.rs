//! Agents' sends to Discord: the request Discord receives, and Discord's refusals.

use serde_json::{Value, json};

use crate::harness::{Agent, Amc, General, general};

/// An allowed channel whose sends go out at once, an agent, and a message to reply to.
async fn ready(extra: &str) -> (Amc, Agent, String, u64, String) {
    let General { amc, channel: general, id, agent } =
        general(extra, json!({ "history": "from_now", "send_policy": "auto" })).await;
    let alice = amc.fake.user("alice");
    let parent = amc.fake.post(general, &alice, "can you send the report?");
    let parent_id = amc
        .eventually("the message to reply to", || async {
            agent.unread(&id).await.first().and_then(|m| m["id"].as_str().map(str::to_owned))
        })
        .await;
    (amc, agent, id, parent, parent_id)
}

fn error_code(resp: &amc_client::Response) -> String {
    resp.json()["error"]["code"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_reply_with_an_attachment_is_one_multipart_request_as_discord_documents() {
    let (amc, agent, channel, parent, parent_id) = ready("").await;
    let outbox = amc.dir.path().join("outbox");
    std::fs::create_dir_all(&outbox).expect("outbox");
    std::fs::write(outbox.join("report.txt"), "quarterly numbers\n").expect("file");
    let resp = agent
        .send(json!({
            "channel_id": channel,
            "text": "here it is @everyone",
            "reply_to": parent_id,
            "attachments": [{ "path": outbox.join("report.txt") }],
        }))
        .await;
    assert_eq!(resp.status, 200, "{:?}", resp.json());
    assert_eq!(resp.json()["status"], "sent");

    let posts = amc.fake.posts();
    assert_eq!(posts.len(), 1, "one request, never retried");
    let post = &posts[0];
    assert_eq!(post.authorization, format!("Bot {}", crate::harness::TOKEN));
    assert!(post.content_type.starts_with("multipart/form-data; boundary="), "{}", post.content_type);
    assert_eq!(post.payload["content"], "here it is @everyone");
    assert_eq!(post.payload["message_reference"]["message_id"], parent.to_string());
    assert_eq!(post.payload["allowed_mentions"]["parse"], json!(["users"]), "agents cannot ping everyone");
    assert_eq!(post.payload["attachments"], json!([{ "id": 0, "filename": "report.txt" }]));
    assert_eq!(post.files.len(), 1);
    assert_eq!(post.files[0].0, "files[0]");
    assert_eq!(post.files[0].1, "report.txt");
    assert_eq!(post.files[0].2, b"quarterly numbers\n");

    // The message Discord created is the sent message: its echo on the gateway is not a
    // second one, and it replies to the agent's parent.
    let msg_id = resp.json()["message_id"].as_str().expect("message id").to_owned();
    let stored = agent.conn().await.get(&format!("/messages/{msg_id}")).await.expect("get").json();
    assert_eq!(stored["direction"], "outbound");
    assert_eq!(stored["reply_to"], parent_id.as_str());
    // The gateway's events are applied in order: once a later message is stored, so is
    // the echo of the agent's reply before it.
    amc.fake.post(amc.fake.channel_ids()[0], &amc.fake.user("alice"), "later");
    amc.eventually("the later message", || async {
        agent.unread(&channel).await.iter().any(|m| m["text"] == "later").then_some(())
    })
    .await;
    let ch = amc.channel(amc.fake.channel_ids()[0]).await;
    assert_eq!(ch["message_count"], 3, "the parent, the reply once, and the later message: {ch}");

    // Text alone goes as JSON.
    let resp = agent.send(json!({ "channel_id": channel, "text": "and thanks" })).await;
    assert_eq!(resp.status, 200, "{:?}", resp.json());
    let post = &amc.fake.posts()[1];
    assert_eq!(post.content_type, "application/json");
    assert!(post.payload.get("message_reference").is_none());
    amc.stop().await;
}

#[tokio::test]
async fn text_over_discords_limit_is_refused_before_anything_is_sent() {
    let (amc, agent, channel, _, _) = ready("").await;
    let long = "é".repeat(2001);
    let resp = agent.send(json!({ "channel_id": channel, "text": long })).await;
    assert_eq!(resp.status, 422, "{:?}", resp.json());
    assert_eq!(error_code(&resp), "VALIDATION_FAILED");
    let message = resp.json()["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("2000 characters") && message.contains("2001"), "{message}");
    assert!(amc.fake.posts().is_empty(), "nothing reached Discord");
    let ok = agent.send(json!({ "channel_id": channel, "text": "é".repeat(2000) })).await;
    assert_eq!(ok.status, 200, "exactly the limit is fine: {:?}", ok.json());
    amc.stop().await;
}

#[tokio::test]
async fn attachments_over_the_upload_limit_are_refused_before_any_upload() {
    let (amc, agent, channel, _, _) = ready("discord_upload_limit_mb = 1").await;
    let outbox = amc.dir.path().join("outbox");
    std::fs::create_dir_all(&outbox).expect("outbox");
    std::fs::write(outbox.join("big.bin"), vec![0u8; 1024 * 1024 + 1]).expect("file");
    std::fs::write(outbox.join("half.bin"), vec![0u8; 600 * 1024]).expect("file");
    let resp = agent
        .send(json!({ "channel_id": channel, "text": "big", "attachments": [{ "path": outbox.join("big.bin") }] }))
        .await;
    assert_eq!(resp.status, 413, "{:?}", resp.json());
    assert_eq!(error_code(&resp), "ATTACHMENT_TOO_LARGE_FOR_PLATFORM");
    // Two files each under the limit but over it together: Discord counts the request.
    let both = json!([{ "path": outbox.join("half.bin") }, { "path": outbox.join("half.bin") }]);
    let resp = agent.send(json!({ "channel_id": channel, "text": "two", "attachments": both })).await;
    assert_eq!(resp.status, 413, "{:?}", resp.json());
    assert_eq!(error_code(&resp), "ATTACHMENT_TOO_LARGE_FOR_PLATFORM");
    assert!(amc.fake.posts().is_empty(), "no upload was attempted");
    let log = amc.admin().await.get("/admin/sends").await.expect("sends").json();
    assert_eq!(log["sends"].as_array().map(Vec::len), Some(0), "refused before it was recorded: {log}");
    amc.stop().await;
}

#[tokio::test]
async fn discords_refusals_become_the_contracts_errors() {
    let (amc, agent, channel, _, _) = ready("rate_limit_burst = 100").await;
    // More sends than Discord's usual 5 per 5 s: this test is about the refusals.
    let roomy = amc_discord::fake::limits::Limit { requests: 50, per: std::time::Duration::from_secs(5) };
    assert!(amc.fake.set_rate_limit("POST /channels/{id}/messages", roomy));
    let send = |text: &str| agent.send(json!({ "channel_id": channel, "text": text }));

    amc.fake.reply_next_post(
        429,
        &[("retry-after", "1"), ("x-ratelimit-scope", "user")],
        json!({ "message": "You are being rate limited.", "retry_after": 0.3, "global": false }),
    );
    let resp = send("one").await;
    assert_eq!(resp.status, 429, "{:?}", resp.json());
    assert_eq!(error_code(&resp), "RATE_LIMITED");
    assert_eq!(resp.header("retry-after"), Some("1"));

    amc.fake.reply_next_post(400, &[], json!({ "message": "Cannot send an empty message", "code": 50006 }));
    let resp = send("two").await;
    assert_eq!(resp.status, 502, "{:?}", resp.json());
    assert_eq!(error_code(&resp), "PLATFORM_SEND_FAILED");
    assert!(resp.json()["error"]["message"].as_str().unwrap_or_default().contains("Cannot send an empty message"));

    // A server error may come after Discord created the message: its outcome is unknown,
    // for the person to check, and it is not tried again.
    amc.fake.reply_next_post(502, &[], json!({ "message": "Bad Gateway", "code": 0 }));
    let resp = send("two and a half").await;
    assert_eq!(resp.status, 202, "{:?}", resp.json());
    assert_eq!(resp.json()["status"], "unknown");

    amc.fake.reply_next_post(403, &[], json!({ "message": "Missing Permissions", "code": 50013 }));
    let resp = send("three").await;
    assert_eq!(resp.status, 502, "{:?}", resp.json());
    assert_eq!(error_code(&resp), "PLATFORM_AUTH");
    let health = degraded(&amc).await;
    assert!(health["reason"].as_str().unwrap_or_default().contains("Missing Permissions"), "{health}");

    amc.fake.reply_next_post(401, &[], json!({ "message": "401: Unauthorized", "code": 0 }));
    let resp = send("four").await;
    assert_eq!(error_code(&resp), "PLATFORM_AUTH");
    let health = degraded(&amc).await;
    assert!(health["reason"].as_str().unwrap_or_default().contains("token"), "{health}");

    // A send that goes through again clears the problem.
    let resp = send("five").await;
    assert_eq!(resp.status, 200, "{:?}", resp.json());
    amc.eventually("the source to be connected again", || async {
        (amc.health().await["state"] == "connected").then_some(())
    })
    .await;
    assert_eq!(amc.fake.posts().len(), 6, "each send was tried exactly once");
    // The log shows the refused sends as failed, and the one to check as unknown.
    let log = amc.admin().await.get("/admin/sends?status=failed").await.expect("sends").json();
    assert_eq!(log["sends"].as_array().map(Vec::len), Some(4), "{log}");
    let log = amc.admin().await.get("/admin/sends?status=unknown").await.expect("sends").json();
    assert_eq!(log["sends"].as_array().map(Vec::len), Some(1), "{log}");
    amc.stop().await;
}

#[tokio::test]
async fn sends_keep_to_discords_buckets_and_a_long_limit_is_told_without_asking() {
    let (amc, agent, channel, _, _) = ready("rate_limit_burst = 100").await;
    // Two sends a second in this channel: a burst of five waits for the bucket's resets,
    // as Discord's headers tell them, and Discord never has to refuse one.
    let tight = amc_discord::fake::limits::Limit { requests: 2, per: std::time::Duration::from_secs(1) };
    assert!(amc.fake.set_rate_limit("POST /channels/{id}/messages", tight));
    for i in 0..5 {
        let resp = agent.send(json!({ "channel_id": channel, "text": format!("part {i}") })).await;
        assert_eq!(resp.json()["status"], "sent", "{:?}", resp.json());
    }
    assert_eq!(amc.fake.rate_limited(), (0, 0), "no request over the limit reached Discord");
    assert_eq!(amc.fake.posts().len(), 5);

    // A global limit for a minute: the agent is told at once, and Discord is not asked
    // again until it ends.
    amc.fake.reply_next_post(
        429,
        &[("retry-after", "60"), ("x-ratelimit-global", "true"), ("x-ratelimit-scope", "global")],
        json!({ "message": "You are being rate limited.", "retry_after": 60.0, "global": true }),
    );
    let resp = agent.send(json!({ "channel_id": channel, "text": "six" })).await;
    assert_eq!((resp.status.as_u16(), error_code(&resp)), (429, "RATE_LIMITED".to_owned()));
    let resp = agent.send(json!({ "channel_id": channel, "text": "seven" })).await;
    assert_eq!((resp.status.as_u16(), error_code(&resp)), (429, "RATE_LIMITED".to_owned()), "{:?}", resp.json());
    let wait: u64 = resp.header("retry-after").and_then(|v| v.parse().ok()).expect("retry-after");
    assert!((55..=60).contains(&wait), "{wait}");
    assert_eq!(amc.fake.posts().len(), 6, "the seventh never reached Discord");
    amc.stop().await;
}

async fn degraded(amc: &Amc) -> Value {
    amc.eventually("the source to be degraded", || async {
        let h = amc.health().await;
        (h["state"] == "degraded").then_some(h)
    })
    .await
}
