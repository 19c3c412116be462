//! Approvals from the person's phone: AMC asks in the person's own iMessage conversation
//! only, and only the person's own tapbacks and replies there decide, once, in time.

use serde_json::{Value, json};

use super::harness::{Daemon, code};
use amc_client::Connection;
use amc_core::model::{ChannelKind, ChannelSpec, IncomingMessage, Reaction, ReactionChange, SenderInfo, Source};
use amc_core::time::now_ms;

/// The person's own address, and a contact's.
const ME: &str = "+15550001111";
const ADA: &str = "+15559990000";
/// The person's self-chat, as Messages keys it.
const SELF_CHAT: &str = "any;-;+15550001111";

async fn chat(d: &Daemon, platform_id: &str, kind: ChannelKind, readers: Option<&[&str]>) -> String {
    let spec = ChannelSpec {
        platform_id: platform_id.to_owned(),
        name: format!("Chat {platform_id}"),
        kind,
        readers: readers.map(|r| r.iter().map(|h| (*h).to_owned()).collect()),
    };
    let m = amc_testkit::incoming(&format!("{platform_id}-0"), "hello").at(now_ms() - 1000).from(ADA, None);
    d.amc.ingest(Source::Imessage, spec, vec![m.build()], None).await.expect("ingest").channel_id
}

/// A row of the self-chat as chat.db gives it: written by the person's devices.
fn mine(platform_id: &str, text: &str) -> IncomingMessage {
    let mut m = amc_testkit::incoming(platform_id, text).at(now_ms()).build();
    m.sender = SenderInfo { id: "me".into(), display_name: None, is_self: true };
    m
}

async fn in_self_chat(d: &Daemon, messages: Vec<IncomingMessage>) {
    let spec = ChannelSpec {
        platform_id: SELF_CHAT.into(),
        name: ME.into(),
        kind: ChannelKind::Dm,
        readers: Some(vec![ME.into()]),
    };
    d.amc.ingest(Source::Imessage, spec, messages, None).await.expect("ingest");
}

async fn tapback(d: &Daemon, target: &str, emoji: &str, sender: SenderInfo) {
    let change = ReactionChange {
        target_platform_id: target.into(),
        reaction: Reaction { emoji: emoji.into(), sender },
        added: true,
    };
    d.amc.apply_reactions(Source::Imessage, vec![change]).await.expect("react");
}

fn me() -> SenderInfo {
    SenderInfo { id: "me".into(), display_name: None, is_self: true }
}

/// What AMC sent to the self-chat so far.
fn told(d: &Daemon) -> Vec<(String, String)> {
    d.sender
        .sent()
        .into_iter()
        .filter(|s| s.channel_platform_id == SELF_CHAT)
        .map(|s| (format!("test-{}", s.send_id), s.text))
        .collect()
}

async fn held_send(agent: &mut Connection, channel: &str, text: &str) -> String {
    let r = agent.post("/messages/send", &json!({ "channel_id": channel, "text": text })).await.expect("send");
    assert_eq!(r.status, 202, "{:?}", r.json());
    r.json()["message_id"].as_str().expect("id").to_owned()
}

async fn send_status(d: &Daemon, id: &str) -> Value {
    d.admin().await.get(&format!("/admin/sends/{id}")).await.expect("send").json()
}

/// The question about `subject` once the phone has it: its code and its message's id.
async fn asked(d: &Daemon, subject: &str) -> (String, String) {
    amc_testkit::eventually(&format!("the phone asked about {subject}"), || async {
        let v = d.admin().await.get("/admin/phone/asks").await.expect("asks").json();
        v["asks"].as_array()?.iter().find(|a| a["subject"] == subject && a["state"] == "asked").map(|a| {
            (
                a["code"].as_str().unwrap_or_default().to_owned(),
                a["prompt_platform_id"].as_str().unwrap_or_default().to_owned(),
            )
        })
    })
    .await
}

struct Phone {
    d: Daemon,
    contact: String,
    agent: Connection,
    stop: tokio_util::sync::CancellationToken,
}

async fn phone() -> Phone {
    let d = Daemon::start_with(|c| c.rate_limit = amc_core::ratelimit::RateLimit { burst: 100, per_minute: 100 }).await;
    d.amc.set_own_addresses(Source::Imessage, vec![ME.into(), "me@icloud.com".into()]).await.expect("own");
    in_self_chat(&d, vec![mine("self-0", "note to self")]).await;
    let contact = chat(&d, "any;-;+15559990000", ChannelKind::Dm, Some(&[ADA])).await;
    let r = d.approve(&contact, json!({ "history": "all", "send_policy": "review" })).await;
    assert_eq!(r.status, 200);
    let (agent, _) = d.agent("claude").await;
    let settings = d.admin().await.get("/admin/phone").await.expect("phone").json();
    let self_chat = settings["candidates"][0]["channel_id"].as_str().expect("the self-chat is offered").to_owned();
    assert_eq!(settings["candidates"].as_array().map(Vec::len), Some(1), "only the self-chat: {settings}");
    let r = d.admin().await.post("/admin/phone", &json!({ "imessage": self_chat, "asks_a_minute": 30 })).await;
    let r = r.expect("set");
    assert_eq!(r.status, 200, "{:?}", r.json());
    let stop = tokio_util::sync::CancellationToken::new();
    {
        let (amc, stop) = (d.amc.clone(), stop.clone());
        tokio::spawn(async move { amc.run_phone(stop.cancelled()).await });
    }
    Phone { d, contact, agent, stop }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thumbs_up_from_the_person_sends_and_a_thumbs_down_or_anyone_else_does_not() {
    let Phone { d, contact, mut agent, stop } = phone().await;

    // 👍 from the person's phone: the send goes out, decided there.
    let first = held_send(&mut agent, &contact, "see you at 6").await;
    let (code1, prompt1) = asked(&d, &first).await;
    let question = told(&d).into_iter().find(|(id, _)| *id == prompt1).expect("the question").1;
    assert!(question.contains("“see you at 6”") && question.contains(&format!("yes {code1}")), "{question}");
    in_self_chat(&d, vec![mine(&prompt1, &question)]).await;
    // A contact's 👍 on the question (as if it had reached them) counts for nothing.
    tapback(&d, &prompt1, "👍", SenderInfo { id: ADA.into(), display_name: None, is_self: false }).await;
    assert_eq!(send_status(&d, &first).await["status"], "held");
    tapback(&d, &prompt1, "👍", me()).await;
    let sent = amc_testkit::eventually("the approved send to go out", || async {
        let v = send_status(&d, &first).await;
        (v["status"] == "sent").then_some(v)
    })
    .await;
    assert_eq!(sent["decided_via"], "phone_imessage");
    assert!(d.sender.sent().iter().any(|s| s.text == "see you at 6"));

    // A 👍 only a sweep of chat.db read (the live reading missed it) answers too.
    let swept = held_send(&mut agent, &contact, "swept").await;
    let (_, prompt_s) = asked(&d, &swept).await;
    in_self_chat(&d, vec![mine(&prompt_s, "the question")]).await;
    let like = ReactionChange {
        target_platform_id: prompt_s.clone(),
        reaction: Reaction { emoji: "👍".into(), sender: me() },
        added: true,
    };
    d.amc.reset_reactions(Source::Imessage, vec![(prompt_s, vec![like])]).await.expect("sweep");
    amc_testkit::eventually("the swept 👍 to send", || async {
        (send_status(&d, &swept).await["status"] == "sent").then_some(())
    })
    .await;

    // 👎: rejected, nothing goes out.
    let second = held_send(&mut agent, &contact, "never mind").await;
    let (_, prompt2) = asked(&d, &second).await;
    in_self_chat(&d, vec![mine(&prompt2, "the question")]).await;
    tapback(&d, &prompt2, "👎", me()).await;
    amc_testkit::eventually("the rejection", || async {
        (send_status(&d, &second).await["status"] == "rejected").then_some(())
    })
    .await;
    assert!(!d.sender.sent().iter().any(|s| s.text == "never mind"), "a rejected send never goes out");

    // A reply `yes CODE` from the person's devices; the same reply read again changes nothing.
    let third = held_send(&mut agent, &contact, "third").await;
    let (code3, prompt3) = asked(&d, &third).await;
    in_self_chat(&d, vec![mine(&prompt3, "the question"), mine("reply-3", &format!("yes {}", code3.to_lowercase()))])
        .await;
    amc_testkit::eventually("the reply to approve", || async {
        (send_status(&d, &third).await["status"] == "sent").then_some(())
    })
    .await;
    in_self_chat(&d, vec![mine("reply-3-echo", &format!("yes {code3}"))]).await;
    assert_eq!(d.sender.sent().iter().filter(|s| s.text == "third").count(), 1, "sent once");

    // An answer decided in the window first: the phone's answer is refused and told so.
    let fourth = held_send(&mut agent, &contact, "fourth").await;
    let (code4, prompt4) = asked(&d, &fourth).await;
    let r = d.admin().await.post(&format!("/admin/sends/{fourth}/reject"), &json!({})).await.expect("reject");
    assert_eq!(r.status, 200);
    assert_eq!(send_status(&d, &fourth).await["decided_via"], "mac");
    in_self_chat(&d, vec![mine(&prompt4, "the question")]).await;
    tapback(&d, &prompt4, "👍", me()).await;
    amc_testkit::eventually("the phone told it was settled", || async {
        told(&d).iter().any(|(_, t)| t.contains(&code4) && t.contains("settled already")).then_some(())
    })
    .await;
    assert_eq!(send_status(&d, &fourth).await["status"], "rejected");

    // Past its time, an answer is refused and the send stays held.
    let fifth = held_send(&mut agent, &contact, "fifth").await;
    let (code5, prompt5) = asked(&d, &fifth).await;
    d.amc
        .database()
        .write(|tx| Ok(tx.execute("UPDATE phone_asks SET expires_at = 1 WHERE code = ?1", [&code5])?))
        .expect("expire");
    in_self_chat(&d, vec![mine(&prompt5, "the question")]).await;
    tapback(&d, &prompt5, "👍", me()).await;
    amc_testkit::eventually("the phone told it expired", || async {
        told(&d).iter().any(|(_, t)| t.contains(&code5) && t.contains("expired")).then_some(())
    })
    .await;
    assert_eq!(send_status(&d, &fifth).await["status"], "held");
    let _ = code1;
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_agent_reaches_the_conversation_amc_asks_in_and_no_other_can_be_it() {
    let Phone { d, contact, mut agent, stop } = phone().await;
    let settings = d.admin().await.get("/admin/phone").await.expect("phone").json();
    let self_chat = settings["imessage"]["channel_id"].as_str().expect("set").to_owned();

    // Blocked, and it cannot be approved while AMC asks in it.
    let ch = d.admin().await.get(&format!("/admin/channels/{self_chat}")).await.expect("channel").json();
    assert_eq!(ch["state"], "blocked");
    let r = d.approve(&self_chat, json!({ "history": "all", "send_policy": "auto" })).await;
    assert_eq!((r.status.as_u16(), code(&r)), (409, "CONFLICT".to_owned()));

    // An agent sends `yes CODE` where it can, and tries the self-chat: nothing is decided.
    let held = held_send(&mut agent, &contact, "held one").await;
    let (code_, _) = asked(&d, &held).await;
    let r = agent.post("/messages/send", &json!({ "channel_id": self_chat, "text": format!("yes {code_}") })).await;
    let r = r.expect("send");
    assert!(r.status.is_client_error(), "{:?}", r.json());
    let unread = agent.get("/messages/unread?limit=100").await.expect("unread").json();
    assert!(!unread.to_string().contains("note to self"), "{unread}");
    let found = agent.get("/messages/search?q=note").await.expect("search").json();
    assert!(!found.to_string().contains("note to self"), "{found}");
    assert_eq!(send_status(&d, &held).await["status"], "held");

    // Every other kind of conversation is refused as where AMC asks, and told nothing.
    let group = chat(&d, "any;+;chat5", ChannelKind::Group, Some(&[ME, ADA])).await;
    let unknown = chat(&d, "any;-;+15550002222", ChannelKind::Dm, None).await;
    let two = chat(&d, "any;-;me@icloud.com", ChannelKind::Dm, Some(&["me@icloud.com", ADA])).await;
    let discord = d
        .amc
        .ingest(
            Source::Discord,
            ChannelSpec {
                platform_id: "900".into(),
                name: "dm".into(),
                kind: ChannelKind::Dm,
                readers: Some(vec![ME.into()]),
            },
            vec![amc_testkit::incoming("d-1", "hi").from("42", None).build()],
            None,
        )
        .await
        .expect("discord")
        .channel_id;
    let before = d.sender.sent().len();
    for (why, id) in [
        ("a contact", &contact),
        ("a group", &group),
        ("readers unknown", &unknown),
        ("two readers", &two),
        ("Discord", &discord),
    ] {
        let r = d.admin().await.post("/admin/phone", &json!({ "imessage": id })).await.expect("set");
        assert_eq!((r.status.as_u16(), code(&r).as_str()), (422, "VALIDATION_FAILED"), "{why}");
    }
    let r = d.admin().await.post("/admin/phone", &json!({ "imessage": "ch_01HZ0000000000000000000000" })).await;
    assert_eq!(r.expect("set").status, 404);
    let r = d.admin().await.post("/admin/phone/test", &json!({})).await.expect("test");
    assert_eq!(r.status, 200, "{:?}", r.json());
    let after: Vec<String> = d.sender.sent()[before..].iter().map(|s| s.channel_platform_id.clone()).collect();
    assert_eq!(after, vec![SELF_CHAT.to_owned()], "only the self-chat is ever told anything");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_limit_a_minute_one_line_counts_what_waits_and_a_pause_withdraws() {
    let Phone { d, contact, mut agent, stop } = phone().await;
    let r = d.admin().await.post("/admin/phone", &json!({ "asks_a_minute": 2 })).await.expect("set");
    assert_eq!(r.json()["asks_a_minute"], 2);
    let mut held = Vec::new();
    for i in 0..5 {
        held.push(held_send(&mut agent, &contact, &format!("send {i}")).await);
    }
    let summary = amc_testkit::eventually("the line counting what waits", || async {
        told(&d).into_iter().map(|(_, t)| t).find(|t| t.contains("more waiting for you"))
    })
    .await;
    let questions = told(&d).iter().filter(|(_, t)| t.contains("wants to send")).count();
    assert_eq!(questions, 2, "two questions, then one line: {summary}");
    assert!(summary.contains("3 more"), "{summary}");

    // Pausing AMC withdraws what the phone was asked: an answer then changes nothing.
    let (code_, prompt) = asked(&d, &held[0]).await;
    let r = d.admin().await.post("/admin/pause", &json!({ "paused": true })).await.expect("pause");
    assert_eq!(r.status, 200);
    amc_testkit::eventually("the question withdrawn", || async {
        let v = d.admin().await.get("/admin/phone/asks").await.expect("asks").json();
        v["asks"].as_array()?.iter().any(|a| a["code"] == code_.as_str() && a["state"] == "withdrawn").then_some(())
    })
    .await;
    in_self_chat(&d, vec![mine(&prompt, "the question")]).await;
    tapback(&d, &prompt, "👍", me()).await;
    amc_testkit::eventually("the phone told it was withdrawn", || async {
        told(&d).iter().any(|(_, t)| t.contains(&code_) && t.contains("withdrawn")).then_some(())
    })
    .await;
    assert_eq!(send_status(&d, &held[0]).await["status"], "held");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_request_is_allowed_from_the_phone_and_only_the_kinds_chosen_are_asked() {
    let Phone { d, mut agent, stop, .. } = phone().await;
    let ask = |id: &str| {
        json!({ "session": "s1", "request_id": id, "tool_name": "Bash",
                "description": "Run a shell command", "input_preview": "rm -rf build\u{1b}[2J" })
    };
    let r = agent.post("/tool-requests", &ask("tbxkq")).await.expect("ask");
    let request = r.json()["id"].as_str().expect("id").to_owned();
    let (code_, prompt) = asked(&d, &request).await;
    let question = told(&d).into_iter().find(|(id, _)| *id == prompt).expect("the question").1;
    assert!(question.contains("asks to use Bash") && question.contains("⟨U+001B⟩[2J"), "escaped: {question}");
    in_self_chat(&d, vec![mine(&prompt, &question), mine("reply-t", &format!("no {code_}"))]).await;
    let denied = amc_testkit::eventually("the request denied", || async {
        let v = d.admin().await.get("/admin/tool-requests").await.expect("list").json();
        v["tool_requests"].as_array()?.iter().find(|t| t["id"] == request.as_str() && t["status"] == "denied").cloned()
    })
    .await;
    assert_eq!(denied["decided_via"], "phone_imessage");

    // Tool requests off: the next one waits in AMC, and the phone is not asked.
    let r = d.admin().await.post("/admin/phone", &json!({ "tools": false })).await.expect("set");
    assert_eq!(r.json()["tools"], false);
    let before = told(&d).len();
    let r = agent.post("/tool-requests", &ask("qwxyz")).await.expect("ask");
    assert_eq!(r.status, 201, "{:?}", r.json());
    let held = held_send(
        &mut agent,
        &{
            let s = d.admin().await.get("/admin/channels?state=allowed").await.expect("list").json();
            s["channels"][0]["id"].as_str().expect("contact").to_owned()
        },
        "after tools off",
    )
    .await;
    asked(&d, &held).await;
    let new: Vec<String> = told(&d)[before..].iter().map(|(_, t)| t.clone()).collect();
    assert!(new.iter().all(|t| !t.contains("asks to use")), "{new:?}");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_the_agent_withdraws_its_questions() {
    let Phone { d, contact, mut agent, stop } = phone().await;
    let held = held_send(&mut agent, &contact, "before the revocation").await;
    let (code_, prompt) = asked(&d, &held).await;
    let r = d.admin().await.post("/admin/agents/claude/revoke", &json!({})).await.expect("revoke");
    assert_eq!(r.status, 200);
    amc_testkit::eventually("the question withdrawn", || async {
        let v = d.admin().await.get("/admin/phone/asks").await.expect("asks").json();
        v["asks"].as_array()?.iter().any(|a| a["code"] == code_.as_str() && a["state"] == "withdrawn").then_some(())
    })
    .await;
    in_self_chat(&d, vec![mine(&prompt, "the question"), mine("late-yes", &format!("yes {code_}"))]).await;
    amc_testkit::eventually("the phone told it was withdrawn", || async {
        told(&d).iter().any(|(_, t)| t.contains(&code_) && t.contains("withdrawn")).then_some(())
    })
    .await;
    assert_eq!(send_status(&d, &held).await["status"], "held");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_queued_to_the_conversation_before_it_was_chosen_never_goes_there() {
    let d = Daemon::start().await;
    d.amc.set_own_addresses(Source::Imessage, vec![ME.into()]).await.expect("own");
    in_self_chat(&d, vec![mine("self-0", "note to self")]).await;
    let self_chat = d.admin().await.get("/admin/phone").await.expect("phone").json()["candidates"][0]["channel_id"]
        .as_str()
        .expect("offered")
        .to_owned();
    // The person had opened it to agents, under review; an agent queued a send to it.
    let r = d.approve(&self_chat, json!({ "history": "all", "send_policy": "review" })).await;
    assert_eq!(r.status, 200);
    let (mut agent, _) = d.agent("claude").await;
    let queued = held_send(&mut agent, &self_chat, &format!("yes {}", "ACDE")).await;
    let r = d.admin().await.post("/admin/phone", &json!({ "imessage": self_chat })).await.expect("set");
    assert_eq!(r.status, 200, "{:?}", r.json());
    let s = send_status(&d, &queued).await;
    assert_eq!(s["status"], "rejected", "{s}");
    let r = d.admin().await.post(&format!("/admin/sends/{queued}/approve"), &json!({})).await.expect("approve");
    assert_eq!(r.status, 409);
    assert!(d.sender.sent().iter().all(|s| s.channel_platform_id != SELF_CHAT), "nothing of the agent went there");
}
