//! Approving from the phone on Discord: AMC asks in the bot's DM with the person's own
//! account (`discord_user_id`) with Approve and Reject buttons; only the person's press
//! decides, and AMC answers each press within Discord's three seconds (deferred, then the
//! verdict, seen by the presser alone).

use serde_json::{Value, json};

use super::harness::{self, Amc};

/// The questions asked so far.
async fn asks(amc: &Amc) -> Vec<Value> {
    amc.admin().await.get("/admin/phone/asks").await.expect("asks").json()["asks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

async fn send_status(amc: &Amc, id: &str) -> Value {
    amc.admin().await.get(&format!("/admin/sends/{id}")).await.expect("send").json()
}

/// The verdict AMC gave the press `interaction`, once it did.
async fn verdict(amc: &Amc, interaction: u64) -> String {
    let pressed = amc
        .eventually("AMC to answer the press", || async {
            let (_, pressed) = amc.fake.interactions().into_iter().find(|(id, _)| *id == interaction)?;
            pressed.answer.is_some().then_some(pressed)
        })
        .await;
    // Deferred first (type 5, ephemeral: the presser's alone), then the verdict.
    let first = pressed.callbacks.first().map(|c| (c["type"].clone(), c["data"]["flags"].clone()));
    assert_eq!(first, Some((json!(5), json!(64))));
    pressed.answer.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_persons_own_press_in_their_dm_with_the_bot_decides() {
    let fake = amc_discord::fake::FakeDiscord::start(harness::TOKEN, &["general"]).await.expect("fake");
    let (ada, mallory) = (fake.user("ada"), fake.user("mallory"));
    let amc = harness::start_with(fake, &format!("discord_user_id = \"{}\"", ada.id)).await;
    let general = amc.fake.channel_ids()[0];
    let general_id = amc.approve(general, json!({ "history": "all", "send_policy": "review" })).await;
    let agent = amc.agent("claude").await;

    // The person's DM with the bot is offered; Mallory's and a server channel are refused.
    let dm = amc.fake.dm(&ada, "hi bot");
    let other = amc.fake.dm(&mallory, "hello?");
    let dm_id = amc.channel(dm).await["id"].as_str().expect("id").to_owned();
    let other_id = amc.channel(other).await["id"].as_str().expect("id").to_owned();
    let settings = amc.admin().await.get("/admin/phone").await.expect("phone").json();
    let offered: Vec<&str> = settings["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .filter_map(|c| c["channel_id"].as_str())
        .collect();
    assert_eq!(offered, [dm_id.as_str()], "{settings}");
    for (why, id) in [("Mallory's DM", &other_id), ("a server channel", &general_id)] {
        let r = amc.admin().await.post("/admin/phone", &json!({ "discord": id })).await.expect("set");
        assert_eq!(r.status, 422, "{why}: {:?}", r.json());
    }
    let r = amc.admin().await.post("/admin/phone", &json!({ "imessage": dm_id })).await.expect("set");
    assert_eq!(r.status, 422, "a Discord DM is not an iMessage conversation: {:?}", r.json());
    let r = amc.admin().await.post("/admin/phone", &json!({ "discord": dm_id })).await.expect("set");
    assert_eq!(r.status, 200, "{:?}", r.json());
    assert_eq!(amc.channel(dm).await["state"], "blocked");

    // A held send is asked about in the DM, with the two buttons.
    let sent = agent.send(json!({ "channel_id": general_id, "text": "ship it <@everyone>" })).await;
    assert_eq!(sent.status, 202, "{:?}", sent.json());
    let held = sent.json()["message_id"].as_str().expect("id").to_owned();
    let ask = amc
        .eventually("the question on Discord", || async {
            asks(&amc).await.into_iter().find(|a| a["subject"] == held.as_str() && a["state"] == "asked")
        })
        .await;
    let (code, prompt) = (ask["code"].as_str().expect("code"), ask["prompt_platform_id"].as_str().expect("prompt"));
    let post = amc.fake.posts().into_iter().find(|p| p.channel_id == dm.to_string()).expect("the question's post");
    let buttons = &post.payload["components"][0]["components"];
    assert_eq!(buttons[0]["custom_id"], format!("amc-phone:yes:{code}"));
    assert_eq!((buttons[0]["label"].as_str(), buttons[1]["label"].as_str()), (Some("Approve"), Some("Reject")));
    assert_eq!(post.payload["allowed_mentions"], json!({ "parse": [] }), "a question mentions nobody");
    let prompt: u64 = prompt.parse().expect("a message id");

    // Mallory presses Approve (as if the message had reached her): refused, nothing sent.
    let pressed = amc.fake.press(dm, prompt, &mallory, &format!("amc-phone:yes:{code}"));
    assert!(verdict(&amc, pressed).await.contains("Only the person"));
    assert_eq!(send_status(&amc, &held).await["status"], "held");
    // A forged button naming another code on the question changes nothing either.
    let forged = amc.fake.press(dm, prompt, &ada, "amc-phone:yes:AAAA");
    assert!(verdict(&amc, forged).await.contains("does not know"));

    // Ada presses Approve: the send goes out, decided on Discord.
    let pressed = amc.fake.press(dm, prompt, &ada, &format!("amc-phone:yes:{code}"));
    assert!(verdict(&amc, pressed).await.contains("approved"));
    let status = amc
        .eventually("the send to go out", || async {
            let v = send_status(&amc, &held).await;
            (v["status"] == "sent").then_some(v)
        })
        .await;
    assert_eq!(status["decided_via"], "phone_discord");
    assert!(
        amc.fake
            .posts()
            .iter()
            .any(|p| p.channel_id == general.to_string() && p.payload["content"] == "ship it <@everyone>")
    );
    // Pressed again: settled, in silence or saying so; never sent twice.
    let again = amc.fake.press(dm, prompt, &ada, &format!("amc-phone:no:{code}"));
    verdict(&amc, again).await;
    let to_general = amc.fake.posts().iter().filter(|p| p.channel_id == general.to_string()).count();
    assert_eq!(to_general, 1);
    assert_eq!(send_status(&amc, &held).await["status"], "sent");

    // A reply in the DM decides too, and only Ada's: Mallory's `yes CODE` in her own DM
    // with the bot, and the code of another question, change nothing.
    let sent = agent.send(json!({ "channel_id": general_id, "text": "second thoughts" })).await;
    let second = sent.json()["message_id"].as_str().expect("id").to_owned();
    let ask = amc
        .eventually("the second question", || async {
            asks(&amc).await.into_iter().find(|a| a["subject"] == second.as_str() && a["state"] == "asked")
        })
        .await;
    let code = ask["code"].as_str().expect("code").to_owned();
    amc.fake.dm(&mallory, &format!("yes {code}"));
    amc.fake.dm(&ada, "yes AAAA");
    amc.fake.dm(&ada, &format!("no {code}"));
    let rejected = amc
        .eventually("Ada's reply to reject it", || async {
            let v = send_status(&amc, &second).await;
            (v["status"] != "held").then_some(v)
        })
        .await;
    assert_eq!(
        (rejected["status"].as_str(), rejected["decided_via"].as_str()),
        (Some("rejected"), Some("phone_discord"))
    );
    assert!(!amc.fake.posts().iter().any(|p| p.payload["content"] == "second thoughts"));
    amc.stop().await;
}
