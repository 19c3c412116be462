//! What the bot sees reaches agents: channels, messages, edits, deletions, reactions,
//! replies, attachments, and the history around disconnects and approvals.

use std::time::Duration;

use serde_json::json;

use crate::harness::{General, general, start};

#[tokio::test]
async fn guild_channels_start_pending_and_an_approved_channels_messages_reach_agents() {
    let amc = start(&["general", "random"], "").await;
    let [general, random] = amc.fake.channel_ids()[..] else { panic!("two channels") };
    // Channels the bot sees are there before anyone writes, pending, named after the guild.
    let ch = amc.channel(random).await;
    assert_eq!(ch["name"], "Fake Guild / #random");
    assert_eq!(ch["state"], "pending");
    assert_eq!(amc.health().await["state"], "connected");

    let alice = amc.fake.user("alice");
    let first = amc.fake.post(general, &alice, "before approval");
    // Stored before the approval, as the test means it: the gateway delivers it on its own time.
    amc.eventually("the first message to be stored", || async {
        (amc.channel(general).await["message_count"] == 1).then_some(())
    })
    .await;
    let id = amc.approve(general, json!({ "history": "from_now" })).await;
    let agent = amc.agent("claude").await;
    amc.fake.post(general, &alice, "hello agents");
    let msgs = amc
        .eventually("the message to be unread", || async {
            let m = agent.unread(&id).await;
            (!m.is_empty()).then_some(m)
        })
        .await;
    assert_eq!(msgs.len(), 1, "only what came after approving from now: {msgs:?}");
    assert_eq!(msgs[0]["text"], "hello agents");
    assert_eq!(msgs[0]["source"], "discord");
    assert_eq!(msgs[0]["sender"]["display_name"], "alice");
    assert_eq!(msgs[0]["sender"]["id"], alice.id.to_string());
    assert_eq!(msgs[0]["sender"]["is_self"], false);
    assert_eq!(msgs[0]["channel"]["name"], "Fake Guild / #general");
    // The message from before approval is stored, quarantined.
    let ch = amc.channel(general).await;
    assert_eq!(ch["message_count"], 2, "{ch}");
    assert_eq!(ch["visible_count"], 1, "{ch}");
    assert!(first > 0);
    amc.stop().await;
}

#[tokio::test]
async fn edits_deletions_reactions_and_replies_reach_stored_messages() {
    let General { amc, channel: general, id, agent } = general("", json!({ "history": "from_now" })).await;
    let (alice, bob) = (amc.fake.user("alice"), amc.fake.user("bob"));
    let parent = amc.fake.post(general, &alice, "lunch?");
    let reply = amc.fake.post_with(general, &bob, "yes, noon", Some(parent), &[]);
    let doomed = amc.fake.post(general, &alice, "oops wrong channel");
    amc.fake.edit(general, parent, "lunch at noon?");
    amc.fake.react(general, parent, &bob, "👍", true);
    amc.fake.react(general, parent, &bob, "🎉", true);
    amc.fake.react(general, parent, &alice, "👍", true);
    amc.fake.react(general, parent, &bob, "👍", false);
    amc.fake.delete(general, doomed);

    let msgs = amc
        .eventually("edits, reactions and the deletion", || async {
            let m = agent.unread(&id).await;
            let done = m.len() == 3
                && m[0]["text"] == "lunch at noon?"
                && m[0]["reactions"].as_array().is_some_and(|r| r.len() == 2)
                && m[2]["unsent"] == true;
            done.then_some(m)
        })
        .await;
    assert!(msgs[0]["edited_at"].is_string(), "{:?}", msgs[0]);
    assert!(msgs[2]["edited_at"].is_null(), "a deletion is not an edit: {:?}", msgs[2]);
    assert_eq!(msgs[2]["text"], "oops wrong channel", "a deleted message keeps the text AMC saw");
    let reactions: Vec<(String, String)> = msgs[0]["reactions"]
        .as_array()
        .expect("reactions")
        .iter()
        .map(|r| {
            (
                r["emoji"].as_str().unwrap_or_default().to_owned(),
                r["sender"]["id"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    // A person may leave several emoji on Discord; taking one back leaves the others.
    assert_eq!(reactions, vec![("🎉".to_owned(), bob.id.to_string()), ("👍".to_owned(), alice.id.to_string())]);
    assert_eq!(msgs[1]["reply_to"], msgs[0]["id"], "the reply points at its parent");
    assert!(reply > 0);

    // A moderator clears them all.
    amc.fake.clear_reactions(general, parent, None);
    amc.eventually("the reactions to be cleared", || async {
        (agent.unread(&id).await[0]["reactions"] == json!([])).then_some(())
    })
    .await;
    amc.stop().await;
}

#[tokio::test]
async fn attachments_are_described_at_once_and_fetched_when_an_agent_asks() {
    let General { amc, channel: general, id, agent } =
        general("attachment_fetch_limit_mb = 1", json!({ "history": "from_now" })).await;
    let alice = amc.fake.user("alice");
    let big = vec![7u8; 1024 * 1024 + 1];
    amc.fake.post_with(general, &alice, "photos", None, &[("cat.png", b"\x89PNG fake cat"), ("huge.bin", &big)]);
    let msgs = amc
        .eventually("the message", || async {
            let m = agent.unread(&id).await;
            (!m.is_empty()).then_some(m)
        })
        .await;
    let atts = msgs[0]["attachments"].as_array().expect("attachments").clone();
    assert_eq!(atts[0]["filename"], "cat.png");
    assert_eq!(atts[0]["mime_type"], "image/png");
    assert_eq!(atts[0]["size_bytes"], 13);
    assert_eq!(atts[0]["available"], true);
    let path = atts[0]["download_path"].as_str().expect("path").to_owned();
    for _ in 0..2 {
        let file = agent.conn().await.get(&path).await.expect("download");
        assert_eq!(file.status, 200);
        assert_eq!(&file.body[..], b"\x89PNG fake cat");
        assert_eq!(file.header("content-type"), Some("image/png"));
    }
    assert!(amc.fake.tunnels().contains(&"cdn.discordapp.com:443".to_owned()), "fetched from Discord's CDN");
    // A deleted message takes its files with it.
    let gone = amc.fake.post_with(general, &alice, "oops", None, &[("private.txt", b"secret")]);
    let path = amc
        .eventually("the second message", || async {
            let m = agent.unread(&id).await;
            m.get(1).and_then(|m| m["attachments"][0]["download_path"].as_str().map(str::to_owned))
        })
        .await;
    amc.fake.delete(general, gone);
    amc.eventually("the file to be gone", || async {
        (agent.conn().await.get(&path).await.ok()?.status == 404).then_some(())
    })
    .await;
    // Over the fetch limit: a clear error, nothing half-kept.
    let huge = agent.conn().await.get(atts[1]["download_path"].as_str().expect("path")).await.expect("download");
    assert_eq!(huge.status, 404);
    assert_eq!(huge.json()["error"]["code"], "NOT_FOUND");
    assert!(huge.json()["error"]["message"].as_str().unwrap_or_default().contains("larger than AMC fetches"));
    amc.stop().await;
}

#[tokio::test]
async fn messages_sent_while_the_session_was_lost_are_fetched_once_back_and_none_doubled() {
    let General { amc, channel: general, id, agent } = general("", json!({ "history": "from_now" })).await;
    let alice = amc.fake.user("alice");
    amc.fake.post(general, &alice, "one");
    amc.eventually("the first message", || async { (agent.unread(&id).await.len() == 1).then_some(()) }).await;

    // The session is lost: Discord will not replay what is said meanwhile.
    amc.fake.set_accepting(false);
    amc.fake.invalidate_session(false);
    amc.fake.drop_connection();
    for text in ["two", "three", "four"] {
        amc.fake.post_unseen(general, &alice, text);
    }
    let back = amc.fake.connected(Duration::from_secs(60));
    amc.fake.set_accepting(true);
    assert!(back.await, "the bot came back");
    let reconnected = amc_core::time::now_ms();
    amc.fake.post(general, &alice, "five");

    let texts = amc.texts(&agent, &id, 5, "the gap to be filled").await;
    assert_eq!(texts, ["one", "two", "three", "four", "five"], "\"five\" came live before the catch-up ran");
    let first = amc.caught_up(reconnected, None).await;

    // A resumable drop: Discord replays the missed dispatches (before RESUMED), and the
    // catch-up then reads the same messages again through REST; each is stored once.
    amc.fake.drop_connection();
    amc.fake.post(general, &alice, "six");
    assert!(amc.fake.connected(Duration::from_secs(60)).await, "resumed");
    let resumed = amc_core::time::now_ms();
    let (_, resumes, _, _) = amc.fake.counts();
    assert!(resumes >= 1, "the client resumed its session");
    let texts = amc.texts(&agent, &id, 6, "the replayed message").await;
    assert_eq!(texts[5], "six");
    amc.caught_up(resumed, Some(&first)).await;
    let again = agent.unread(&id).await;
    assert_eq!(again.len(), 6, "nothing doubled: {again:?}");
    amc.stop().await;
}

#[tokio::test]
async fn approving_with_history_fetches_earlier_messages_in_pages() {
    let fake = amc_discord::fake::FakeDiscord::start(crate::harness::TOKEN, &["archive"]).await.expect("fake");
    let archive = fake.channel_ids()[0];
    let alice = fake.user("alice");
    for i in 0..250 {
        fake.post_unseen(archive, &alice, &format!("old {i}"));
    }
    let amc = crate::harness::start_with(fake, "discord_history_limit = 1000").await;
    let ch = amc.channel(archive).await;
    assert_eq!(ch["message_count"], 0, "nothing is fetched for a pending channel");
    // One page per half second: serenity's rate limiter, on as with Discord, paces the
    // pages by the headers, and Discord never has to refuse one.
    let slow = amc_discord::fake::limits::Limit { requests: 1, per: std::time::Duration::from_millis(500) };
    assert!(amc.fake.set_rate_limit("GET /channels/{id}/messages", slow));
    let (_, _, _, pages_before) = amc.fake.counts();
    amc.approve(archive, json!({ "history": "all" })).await;
    let ch = amc
        .eventually("the history", || async {
            let ch = amc.channel(archive).await;
            (ch["visible_count"] == 250).then_some(ch)
        })
        .await;
    assert_eq!(ch["message_count"], 250);
    let (_, _, _, pages_after) = amc.fake.counts();
    assert!(pages_after - pages_before >= 3, "fetched in pages of at most 100");
    assert_eq!(amc.fake.rate_limited(), (0, 0), "no request over the limit reached Discord");
    let tunnels = amc.fake.tunnels();
    assert!(!tunnels.is_empty() && tunnels.iter().all(|t| t == "discord.com:443"), "{tunnels:?}");
    amc.stop().await;
}

#[tokio::test]
async fn a_missing_message_content_intent_is_reported_with_its_fix() {
    let fake = amc_discord::fake::FakeDiscord::start(crate::harness::TOKEN, &["general"]).await.expect("fake");
    fake.set_content_intent(false);
    let dir = tempfile::tempdir().expect("tempdir");
    let running = crate::harness::run_against(&fake, dir.path(), crate::harness::TOKEN, "").await;
    let health = crate::harness::discord_reason(&running, "Message Content Intent").await;
    assert_eq!(health.status, "degraded");
    running.run_until(async {}).await.expect("stops");
}

#[tokio::test]
async fn a_refused_token_is_reported() {
    let fake = amc_discord::fake::FakeDiscord::start("the-real-token", &["general"]).await.expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let running = crate::harness::run_against(&fake, dir.path(), "wrong", "").await;
    crate::harness::discord_reason(&running, "refused the bot's token").await;
    running.run_until(async {}).await.expect("stops");
}

#[tokio::test]
async fn a_dm_becomes_a_pending_channel_named_after_the_person() {
    let amc = start(&["general"], "").await;
    let carol = amc.fake.user("carol");
    let dm = amc.fake.dm(&carol, "are you there?");
    let ch = amc.channel(dm).await;
    assert_eq!(ch["name"], "carol");
    assert_eq!(ch["kind"], "dm");
    assert_eq!(ch["state"], "pending");
    let id = amc.approve(dm, json!({ "history": "all", "send_policy": "auto" })).await;
    let agent = amc.agent("claude").await;
    let msgs = agent.unread(&id).await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["text"], "are you there?");
    assert_eq!(msgs[0]["channel"]["kind"], "dm");
    // The bot's answer comes back on the gateway carrying only the bot: the channel keeps
    // the person's name.
    let sent = agent.send(json!({ "channel_id": id, "text": "yes" })).await;
    assert_eq!(sent.status, 200, "{:?}", sent.json());
    assert_eq!(amc.fake.posts()[0].channel_id, dm.to_string());
    // The gateway's events are applied in order: once Carol's next message is stored, so
    // is the echo of the bot's answer before it.
    amc.fake.dm(&carol, "thanks");
    amc.texts(&agent, &id, 2, "carol's next message").await;
    assert_eq!(amc.channel(dm).await["name"], "carol");
    amc.stop().await;
}

#[tokio::test]
async fn a_reconnect_request_resumes_the_session_and_loses_nothing() {
    let General { amc, channel: general, id, agent } = general("", json!({ "history": "from_now" })).await;
    let alice = amc.fake.user("alice");
    let back = amc.fake.connected(Duration::from_secs(60));
    amc.fake.request_reconnect();
    amc.fake.post(general, &alice, "during the reconnect");
    assert!(back.await, "the client came back");
    amc.fake.post(general, &alice, "after it");
    let texts = amc.texts(&agent, &id, 2, "both messages").await;
    assert_eq!(texts, ["during the reconnect", "after it"]);
    let (identifies, resumes, _, _) = amc.fake.counts();
    assert_eq!((identifies, resumes), (1, 1), "op 7 is answered with RESUME, not a new session");
    amc.stop().await;
}

#[tokio::test]
async fn messages_arriving_without_text_reveal_a_missing_content_intent() {
    let amc = start(&["general"], "").await;
    let general = amc.fake.channel_ids()[0];
    let alice = amc.fake.user("alice");
    for _ in 0..3 {
        amc.fake.post(general, &alice, "");
    }
    let health = amc
        .eventually("the intent problem", || async {
            let h = amc.health().await;
            (h["state"] == "degraded").then_some(h)
        })
        .await;
    assert!(health["reason"].as_str().unwrap_or_default().contains("Message Content Intent"), "{health}");
    // Once text arrives again, the problem is gone.
    amc.fake.post(general, &alice, "hello");
    amc.eventually("the source to recover", || async { (amc.health().await["state"] == "connected").then_some(()) })
        .await;
    amc.stop().await;
}

#[tokio::test]
async fn bursts_of_events_are_applied_in_the_gateways_order() {
    let amc = start(&["general", "sentinel"], "").await;
    let [general, sentinel] = amc.fake.channel_ids()[..] else { panic!("two channels") };
    let id = amc.approve(general, json!({ "history": "from_now" })).await;
    let sentinel_id = amc.approve(sentinel, json!({ "history": "from_now" })).await;
    // Approving reads each channel's history once; let both reads pass (they find nothing)
    // so that everything below arrives by the gateway alone.
    amc.eventually("the approvals' history reads", || async { (amc.fake.counts().3 >= 2).then_some(()) }).await;
    let agent = amc.agent("claude").await;
    let (alice, bob) = (amc.fake.user("alice"), amc.fake.user("bob"));
    // A message, many edits, and a reaction taken back and given again many times, all
    // at once: what is stored must be the last of each.
    let m = amc.fake.post(general, &alice, "draft 0");
    for i in 1..=30 {
        amc.fake.edit(general, m, &format!("draft {i}"));
        amc.fake.react(general, m, &bob, "👀", i % 2 == 1);
    }
    // Dispatched after all of the above: once it is stored, they have been applied.
    amc.fake.post(sentinel, &alice, "done");
    amc.eventually("the last event", || async { (agent.unread(&sentinel_id).await.len() == 1).then_some(()) }).await;
    let msgs = agent.unread(&id).await;
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["text"], "draft 30");
    assert_eq!(msgs[0]["reactions"], json!([]), "the last event took the reaction back");
    amc.stop().await;
}

#[tokio::test]
async fn a_live_message_right_after_reconnecting_does_not_hide_the_gap_in_any_channel() {
    let amc = start(&["first", "second", "third"], "").await;
    let channels = amc.fake.channel_ids();
    let mut ids = Vec::new();
    for c in &channels {
        ids.push(amc.approve(*c, json!({ "history": "from_now" })).await);
    }
    amc.eventually("the approvals' history reads", || async { (amc.fake.counts().3 >= 3).then_some(()) }).await;
    let agent = amc.agent("claude").await;
    let alice = amc.fake.user("alice");
    amc.fake.set_accepting(false);
    amc.fake.invalidate_session(false);
    amc.fake.drop_connection();
    for c in &channels {
        for i in 0..3 {
            amc.fake.post_unseen(*c, &alice, &format!("missed {i}"));
        }
    }
    let back = amc.fake.connected(Duration::from_secs(60));
    amc.fake.set_accepting(true);
    assert!(back.await, "the bot came back");
    // Live messages in every channel at once, while the catch-up has barely started.
    for c in channels.iter().rev() {
        amc.fake.post(*c, &alice, "live");
    }
    for id in &ids {
        let texts = amc.texts(&agent, id, 4, "every channel's gap and its live message").await;
        assert_eq!(texts, ["missed 0", "missed 1", "missed 2", "live"]);
    }
    amc.stop().await;
}

#[tokio::test]
async fn messages_in_channels_amc_does_not_follow_are_not_stored() {
    let amc = start(&["general"], "").await;
    let alice = amc.fake.user("alice");
    // A thread (or a voice channel's text): a channel GUILD_CREATE did not list.
    let thread = amc.fake.user("thread").id;
    amc.fake.post(thread, &alice, "in a thread");
    let general = amc.fake.channel_ids()[0];
    amc.fake.post(general, &alice, "in general");
    amc.eventually("the message in general", || async {
        (amc.channel(general).await["message_count"] == 1).then_some(())
    })
    .await;
    let all = amc.admin().await.get("/admin/channels").await.expect("channels").json();
    assert_eq!(all["channels"].as_array().map(Vec::len), Some(1), "{all}");
    amc.stop().await;
}

#[tokio::test]
async fn mentions_reach_agents_as_names() {
    let General { amc, channel: general, id, agent } = general("", json!({ "history": "from_now" })).await;
    let (alice, bob) = (amc.fake.user("alice"), amc.fake.user("bob"));
    let text = format!("<@{}> see <#{general}>, and <@!{}> too; <@123> left", bob.id, alice.id);
    amc.fake.post(general, &alice, &text);
    let texts = amc.texts(&agent, &id, 1, "the message").await;
    assert_eq!(texts, ["@bob see #general, and @alice too; <@123> left"]);
    // An edit is read the same way.
    let edited = amc.fake.history(general)[0]["id"].as_str().and_then(|s| s.parse().ok()).expect("id");
    amc.fake.edit(general, edited, &format!("<@{}> never mind", bob.id));
    amc.eventually("the edit", || async {
        (agent.unread(&id).await.first()?["text"] == "@bob never mind").then_some(())
    })
    .await;
    amc.stop().await;
}

#[tokio::test]
async fn edits_deletions_and_reactions_made_while_amc_was_away_are_caught_up() {
    let General { amc, channel: general, id, agent } = general("", json!({ "history": "from_now" })).await;
    let (alice, bob) = (amc.fake.user("alice"), amc.fake.user("bob"));
    let ids: Vec<u64> = ["one", "two", "three", "four"].iter().map(|t| amc.fake.post(general, &alice, t)).collect();
    amc.fake.react(general, ids[0], &bob, "🎉", true);
    amc.eventually("the messages and the reaction", || async {
        let m = agent.unread(&id).await;
        (m.len() == 4 && m[0]["reactions"].as_array().is_some_and(|r| r.len() == 1)).then_some(())
    })
    .await;

    let reconnected = amc
        .away(|fake| {
            fake.react(general, ids[0], &bob, "🎉", false);
            fake.edit(general, ids[1], "two, corrected");
            fake.delete(general, ids[2]);
            fake.react(general, ids[3], &alice, "👍", true);
            fake.react(general, ids[3], &bob, "👍", true);
            fake.post_unseen(general, &alice, "five");
        })
        .await;
    amc.caught_up(reconnected, None).await;

    let m = agent.unread(&id).await;
    let texts: Vec<&str> = m.iter().map(|m| m["text"].as_str().unwrap_or_default()).collect();
    assert_eq!(texts, ["one", "two, corrected", "three", "four", "five"]);
    assert_eq!(m[0]["reactions"], json!([]), "the reaction taken back");
    assert!(m[1]["edited_at"].is_string(), "{}", m[1]);
    assert_eq!(m[2]["unsent"], true, "deleted while away");
    let who: Vec<&str> = m[3]["reactions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["sender"]["display_name"].as_str())
        .collect();
    assert_eq!(who, ["alice", "bob"], "{}", m[3]);
    assert!(m[3]["reactions"].as_array().is_some_and(|r| r.iter().all(|r| r["emoji"] == "👍")));
    amc.stop().await;
}

#[tokio::test]
async fn threads_and_forum_posts_belong_to_their_channel_and_replies_go_into_them() {
    let General { amc, channel: general, id, agent } =
        general("", json!({ "history": "from_now", "send_policy": "auto" })).await;
    let alice = amc.fake.user("alice");
    let thread = amc.fake.create_thread(general, "Trip planning");
    amc.fake.post(thread, &alice, "flights are booked");
    let m = amc.eventually("the thread's message", || async { agent.unread(&id).await.first().cloned() }).await;
    assert_eq!((m["text"].as_str(), m["channel_id"].as_str()), (Some("flights are booked"), Some(id.as_str())));
    assert_eq!(m["thread"], json!({ "name": "Trip planning" }));

    // A reply goes into the thread, not the channel.
    let resp = agent.send(json!({ "channel_id": id, "text": "great", "reply_to": m["id"] })).await;
    assert_eq!(resp.json()["status"], "sent", "{:?}", resp.json());
    let post = amc.fake.posts().pop().expect("a post");
    assert_eq!(post.channel_id, thread.to_string());
    assert_eq!(
        post.payload["message_reference"]["channel_id"],
        json!(thread.to_string()),
        "the replied-to message's channel"
    );

    // A thread whose creation AMC never heard of is found from its first message.
    let unseen = amc.fake.create_thread_unseen(general, "Late night");
    amc.fake.post(unseen, &alice, "anyone up?");
    let m = amc
        .eventually("the unseen thread's message", || async {
            agent.unread(&id).await.into_iter().find(|m| m["text"] == "anyone up?")
        })
        .await;
    assert_eq!(m["thread"], json!({ "name": "Late night" }), "{m}");

    // A forum is a channel; each post is a thread in it.
    let forum = amc.fake.create_forum("ideas");
    let forum_id = amc.approve(forum, json!({ "history": "from_now" })).await;
    let idea = amc.fake.create_thread(forum, "Dark mode");
    amc.fake.post(idea, &alice, "please add dark mode");
    let m = amc.eventually("the forum post", || async { agent.unread(&forum_id).await.first().cloned() }).await;
    assert_eq!((m["text"].as_str(), m["thread"]["name"].as_str()), (Some("please add dark mode"), Some("Dark mode")));

    // After a reconnection the catch-up still reads every channel to its end: a forum has
    // no messages of its own, and the thread's messages are not taken for deletions.
    let back = amc.fake.connected(Duration::from_secs(60));
    amc.fake.request_reconnect();
    assert!(back.await, "the client came back");
    let since = amc_core::time::now_ms();
    amc.caught_up(since, None).await;
    // Every message of the channel, the agent's reply in the thread among them.
    let all = amc.admin().await.get("/admin/inbox?limit=100").await.expect("inbox").json();
    let all: Vec<serde_json::Value> =
        all["messages"].as_array().into_iter().flatten().filter(|m| m["channel_id"] == id.as_str()).cloned().collect();
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(all.iter().all(|m| m["unsent"] == json!(false) && m["thread"].is_object()), "{all:?}");
    amc.stop().await;
}

#[tokio::test]
async fn what_was_said_in_threads_while_amc_was_away_is_caught_up() {
    let General { amc, channel: general, id, agent } = general("", json!({ "history": "from_now" })).await;
    let alice = amc.fake.user("alice");
    let old = amc.fake.create_thread(general, "Old thread");
    amc.fake.post(old, &alice, "before");
    amc.texts(&agent, &id, 1, "the thread's first message").await;

    let reconnected = amc
        .away(|fake| {
            fake.post_unseen(old, &alice, "while away, in the old thread");
            let new = fake.create_thread_unseen(general, "New thread");
            fake.post_unseen(new, &alice, "in a thread started while away");
        })
        .await;
    amc.caught_up(reconnected, None).await;

    let m = agent.unread(&id).await;
    let seen: Vec<(&str, &str)> = m
        .iter()
        .map(|m| (m["text"].as_str().unwrap_or_default(), m["thread"]["name"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(
        seen,
        [
            ("before", "Old thread"),
            ("while away, in the old thread", "Old thread"),
            ("in a thread started while away", "New thread")
        ]
    );
    amc.stop().await;
}

#[tokio::test]
async fn a_global_rate_limit_slows_the_history_read_and_loses_nothing() {
    let fake = amc_discord::fake::FakeDiscord::start(crate::harness::TOKEN, &["archive"]).await.expect("fake");
    let archive = fake.channel_ids()[0];
    let alice = fake.user("alice");
    for i in 0..250 {
        fake.post_unseen(archive, &alice, &format!("old {i}"));
    }
    let amc = crate::harness::start_with(fake, "").await;
    // Two requests a second in all: serenity cannot know this limit before Discord's 429
    // (global) tells it, and must then wait as told and ask again.
    let two = amc_discord::fake::limits::Limit { requests: 2, per: Duration::from_secs(1) };
    amc.fake.set_global_rate_limit(two);
    amc.approve(archive, json!({ "history": "all" })).await;
    amc.eventually("all the history", || async { (amc.channel(archive).await["visible_count"] == 250).then_some(()) })
        .await;
    let (_, global) = amc.fake.rate_limited();
    assert!(global > 0, "the global limit was met");
    amc.stop().await;
}
