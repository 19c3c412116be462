//! The gateway as Discord runs it, failures included
//! (<https://discord.com/developers/docs/events/gateway>,
//! <https://discord.com/developers/docs/topics/opcodes-and-status-codes>): heartbeats the
//! gateway asks for, a connection gone silent (a zombie), sessions invalidated
//! resumable or not, and each close code. Whatever happens, every message reaches the
//! agent once.

use std::time::Duration;

use amc_discord::fake::FakeDiscord;
use serde_json::json;

use crate::harness::{General, TOKEN, general};

/// Like `general`, with heartbeats every `ms` milliseconds instead of Discord's 41.25 s.
async fn beating_every(ms: u64) -> General {
    let fake = FakeDiscord::start(TOKEN, &["general"]).await.expect("fake");
    fake.set_heartbeat_interval(ms);
    let channel = fake.channel_ids()[0];
    let amc = crate::harness::start_with(fake, "").await;
    let id = amc.approve(channel, json!({ "history": "from_now" })).await;
    let agent = amc.agent("claude").await;
    General { amc, channel, id, agent }
}

#[tokio::test]
async fn a_heartbeat_the_gateway_asks_for_is_sent_at_once() {
    let General { amc, .. } = general("", json!({ "history": "from_now" })).await;
    let (_, _, before, _) = amc.fake.counts();
    amc.fake.request_heartbeat();
    // The interval is 41 s: only an answer to the request comes this soon.
    amc.eventually("the requested heartbeat", || async { (amc.fake.counts().2 > before).then_some(()) }).await;
    amc.stop().await;
}

#[tokio::test]
async fn a_connection_gone_silent_is_replaced_and_nothing_said_meanwhile_is_lost() {
    let General { amc, channel: general_channel, id, agent } = beating_every(300).await;
    let alice = amc.fake.user("alice");
    amc.fake.post(general_channel, &alice, "before");
    amc.texts(&agent, &id, 1, "the first message").await;
    amc.eventually("a heartbeat to be acknowledged", || async { amc.fake.heartbeat_acknowledged().then_some(()) })
        .await;

    let back = amc.fake.connected(Duration::from_secs(30));
    let last_ack = amc.fake.play_dead();
    assert!(last_ack.is_some(), "heartbeats were acknowledged before");
    for text in ["while", "it", "was silent"] {
        amc.fake.post(general_channel, &alice, text);
    }
    assert!(back.await, "serenity noticed the missing ACK and connected again");
    let texts = amc.texts(&agent, &id, 4, "the messages said while the connection was silent").await;
    assert_eq!(texts, ["before", "while", "it", "was silent"]);
    let (identifies, _, _, _) = amc.fake.counts();
    assert_eq!(identifies, 2, "a zombie is replaced by a new session");
    amc.stop().await;
}

#[tokio::test]
async fn a_resumable_invalid_session_resumes_and_replays() {
    let General { amc, channel, id, agent } = general("", json!({ "history": "from_now" })).await;
    let alice = amc.fake.user("alice");
    let back = amc.fake.connected(Duration::from_secs(30));
    amc.fake.invalidate_session(true);
    amc.fake.post(channel, &alice, "during");
    assert!(back.await, "the client came back");
    amc.fake.post(channel, &alice, "after");
    assert_eq!(amc.texts(&agent, &id, 2, "both messages").await, ["during", "after"]);
    let (identifies, resumes, _, _) = amc.fake.counts();
    assert_eq!((identifies, resumes), (1, 1), "op 9 with d: true is answered with RESUME");
    amc.stop().await;
}

#[tokio::test]
async fn each_close_code_is_resumed_or_started_over_and_loses_nothing() {
    // serenity 0.12.5 does not act on a close with 4003 (not authenticated): it notices the
    // dead connection at its next heartbeat. A short interval keeps this test short; with
    // Discord's 41.25 s, recovery takes about 46 s (docs/discord.md).
    let General { amc, channel, id, agent } = beating_every(1_000).await;
    let alice = amc.fake.user("alice");
    let mut said = Vec::new();
    // 4000 to 4005 and 4008 keep the session; 4007 and 4009 end it on Discord's side. serenity
    // gives up on a connection closed with 4003 (not authenticated), and AMC starts a new one.
    for code in [4000u16, 4001, 4002, 4003, 4005, 4008, 4007, 4009] {
        let (identifies, resumes, _, _) = amc.fake.counts();
        let back = amc.fake.connected(Duration::from_secs(60));
        amc.fake.close_with(code);
        let text = format!("after close {code}");
        amc.fake.post(channel, &alice, &text);
        said.push(text);
        assert!(back.await, "the client came back after {code}");
        let texts = amc.texts(&agent, &id, said.len(), &format!("the message said across {code}")).await;
        assert_eq!(texts, said, "after {code}");
        let (identifies_now, resumes_now, _, _) = amc.fake.counts();
        if matches!(code, 4003 | 4007 | 4009) {
            assert_eq!(identifies_now, identifies + 1, "{code}: a new session");
        } else {
            assert_eq!((identifies_now, resumes_now), (identifies, resumes + 1), "{code}: resumed");
        }
    }
    let again = agent.unread(&id).await;
    assert_eq!(again.len(), said.len(), "nothing doubled");
    amc.stop().await;
}

/// serenity 0.12.5 resumes on the gateway's first address, not on READY's
/// `resume_gateway_url` (docs/discord.md). Where Discord refuses such a RESUME (op 9,
/// `d: false`), the events it would have replayed are gone with the session: the new
/// session's catch-up reads them back, each once.
#[tokio::test]
async fn a_resume_refused_on_the_first_address_starts_over_and_loses_nothing() {
    let General { amc, channel, id, agent } = general("", json!({ "history": "from_now" })).await;
    amc.fake.refuse_misplaced_resumes();
    let alice = amc.fake.user("alice");
    amc.fake.post(channel, &alice, "before");
    amc.texts(&agent, &id, 1, "the first message").await;

    let back = amc.fake.connected(Duration::from_secs(60));
    amc.fake.drop_connection();
    for text in ["while", "the connection", "was down"] {
        amc.fake.post(channel, &alice, text);
    }
    assert!(back.await, "the client came back");
    amc.fake.post(channel, &alice, "after");
    let texts = amc.texts(&agent, &id, 5, "every message, across the refused resume").await;
    assert_eq!(texts, ["before", "while", "the connection", "was down", "after"]);
    let (identifies, resumes, _, _) = amc.fake.counts();
    assert!(amc.fake.misplaced_resumes() >= 1, "serenity resumed on the first address and was refused");
    assert_eq!((identifies, resumes), (2, 0), "a new session replaced the refused one");
    assert_eq!(agent.unread(&id).await.len(), 5, "nothing doubled");
    amc.stop().await;
}
