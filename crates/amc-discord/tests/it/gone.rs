//! Channels Discord takes away: deleted (CHANNEL_DELETE, or 404 Unknown Channel when AMC
//! reads or sends), or the bot removed from its server (GUILD_DELETE without
//! `unavailable`), live or while AMC was away. Their history stays readable; sends are
//! refused with `CHANNEL_GONE`, and nothing reaches Discord. An outage (GUILD_DELETE with
//! `unavailable`) takes nothing away.

use serde_json::{Value, json};

use crate::harness::{Agent, Amc, General, general};

/// Waits until the channel is recorded as gone; returns its reason.
async fn gone(amc: &Amc, platform_id: u64) -> String {
    let id = platform_id.to_string();
    amc.eventually("the channel to be gone", || async {
        let all = amc.admin().await.get("/admin/channels").await.ok()?.json();
        let ch = all["channels"].as_array()?.iter().find(|c| c["platform_id"] == id.as_str())?.clone();
        ch["gone"].as_str().map(str::to_owned)
    })
    .await
}

/// A send to the channel is refused as gone, and Discord is not asked.
async fn refused(amc: &Amc, agent: &Agent, channel_id: &str) -> Value {
    let posts = amc.fake.posts().len();
    let resp = agent.send(json!({ "channel_id": channel_id, "text": "still there?" })).await;
    assert_eq!(resp.status, 410, "{:?}", resp.json());
    assert_eq!(resp.json()["error"]["code"], "CHANNEL_GONE");
    assert_eq!(amc.fake.posts().len(), posts, "nothing reached Discord");
    resp.json()
}

#[tokio::test]
async fn a_deleted_channel_keeps_its_history_and_refuses_sends() {
    let General { amc, channel, id, agent } =
        general("", json!({ "history": "from_now", "send_policy": "auto" })).await;
    let alice = amc.fake.user("alice");
    amc.fake.post(channel, &alice, "last words");
    amc.texts(&agent, &id, 1, "the message").await;
    amc.fake.delete_channel(channel);
    assert_eq!(gone(&amc, channel).await, "Discord deleted this channel");
    let err = refused(&amc, &agent, &id).await;
    assert!(err["error"]["message"].as_str().is_some_and(|m| m.contains("deleted")), "{err}");
    let listed = agent.conn().await.get("/channels").await.expect("channels").json();
    assert_eq!(listed["channels"][0]["gone"], "Discord deleted this channel", "{listed}");
    assert_eq!(agent.unread(&id).await.len(), 1, "its history stays readable");
    amc.stop().await;
}

#[tokio::test]
async fn a_channel_deleted_while_amc_was_away_is_found_gone_by_the_catch_up() {
    let General { amc, channel, .. } = general("", json!({ "history": "from_now" })).await;
    // The session is lost: Discord will not tell of the deletion.
    amc.away(|fake| fake.delete_channel(channel)).await;
    assert_eq!(gone(&amc, channel).await, "Discord deleted this channel");
    amc.stop().await;
}

#[tokio::test]
async fn a_send_to_a_channel_deleted_unseen_is_refused_and_marks_it_gone() {
    let General { amc, channel, id, agent } =
        general("", json!({ "history": "from_now", "send_policy": "auto" })).await;
    // The gateway has gone silent: the deletion is not delivered.
    amc.fake.play_dead();
    amc.fake.delete_channel(channel);
    let resp = agent.send(json!({ "channel_id": id, "text": "anyone?" })).await;
    assert_eq!(resp.status, 410, "{:?}", resp.json());
    assert_eq!(resp.json()["error"]["code"], "CHANNEL_GONE");
    assert_eq!(gone(&amc, channel).await, "Discord deleted this channel");
    refused(&amc, &agent, &id).await;
    amc.stop().await;
}

#[tokio::test]
async fn removing_the_bot_from_its_server_takes_every_channel_and_an_outage_none() {
    let amc = crate::harness::start(&["general", "random"], "").await;
    let [general, random] = amc.fake.channel_ids()[..] else { panic!("two channels") };
    let id = amc.approve(general, json!({ "history": "from_now", "send_policy": "auto" })).await;
    amc.approve(random, json!({ "history": "from_now" })).await;
    let agent = amc.agent("claude").await;
    amc.fake.guild_outage();
    // An outage is no removal: the channel still takes sends.
    let resp = agent.send(json!({ "channel_id": id, "text": "hello" })).await;
    assert_eq!(resp.json()["status"], "sent", "{:?}", resp.json());
    amc.fake.remove_bot_from_guild();
    for ch in [general, random] {
        let why = gone(&amc, ch).await;
        assert!(why.contains("Fake Guild") && why.contains("no longer"), "{why}");
    }
    refused(&amc, &agent, &id).await;
    amc.stop().await;
}

#[tokio::test]
async fn a_channel_the_bot_cannot_read_is_not_offered_and_one_closed_later_is_marked_until_reopened() {
    let fake =
        amc_discord::fake::FakeDiscord::start(crate::harness::TOKEN, &["general", "secret"]).await.expect("fake");
    let [general, secret] = fake.channel_ids()[..] else { panic!("two channels") };
    fake.set_overwrites(secret, vec![fake.hidden_from_everyone()]);
    let amc = crate::harness::start_with(fake, "").await;
    let id = amc.approve(general, json!({ "history": "from_now" })).await;
    let all = amc.admin().await.get("/admin/channels").await.expect("channels").json();
    let offered: Vec<&str> =
        all["channels"].as_array().into_iter().flatten().filter_map(|c| c["platform_id"].as_str()).collect();
    assert_eq!(offered, [general.to_string()], "the channel the bot cannot see is not offered");

    // The person closes #general to the bot: it is marked, and the source says so.
    let hidden = amc.fake.hidden_from_everyone();
    amc.fake.set_overwrites(general, vec![hidden.clone()]);
    let why = gone(&amc, general).await;
    assert!(why.starts_with("AMC cannot read this channel"), "{why}");
    let health = amc
        .eventually("the source to say so", || async {
            let h = amc.health().await;
            (h["state"] == "degraded").then_some(h)
        })
        .await;
    let reason = health["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("1 approved channel is unavailable: Fake Guild / #general"), "{reason}");
    let agent = amc.agent("claude").await;
    let resp = agent.send(json!({ "channel_id": id, "text": "hello?" })).await;
    assert_eq!(resp.json()["error"]["code"], "CHANNEL_GONE", "{:?}", resp.json());

    // Opened to the bot again: ordinary again, and the hidden channel too once opened.
    let shown = amc.fake.shown_to_bot();
    amc.fake.set_overwrites(general, vec![hidden.clone(), shown.clone()]);
    amc.eventually("the source to be connected again", || async {
        (amc.health().await["state"] == "connected").then_some(())
    })
    .await;
    assert_eq!(amc.channel(general).await["gone"], Value::Null);
    amc.fake.set_overwrites(secret, vec![hidden, shown]);
    assert_eq!(amc.channel(secret).await["state"], "pending", "offered once the bot can read it");
    amc.stop().await;
}
