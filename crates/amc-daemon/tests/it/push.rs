//! `GET /messages/push` and `POST /messages/push/ack`, behind `amc mcp`'s Claude Code
//! channel notifications: what is pushed, bursts, and where a push goes on after a restart.

use serde_json::{Value, json};

use amc_core::model::Source;
use amc_core::time::now_ms;

use super::harness::{Daemon, code, ids, msg};

/// One push batch for the agent, after `wait` seconds at most.
async fn next(agent: &mut amc_client::Connection, wait: u32) -> Value {
    let r = agent.get(&format!("/messages/push?timeout_seconds={wait}")).await.expect("push");
    assert_eq!(r.status, 200, "{:?}", r.json());
    r.json()
}

async fn ack(agent: &mut amc_client::Connection, batch: &Value) {
    let r = agent.post("/messages/push/ack", &json!({ "ack": batch["ack"] })).await.expect("ack");
    assert_eq!(r.status, 200, "{:?}", r.json());
}

/// Starts a push request as the agent on its own connection.
fn start_next(d: &Daemon, token: &str) -> tokio::task::JoinHandle<Value> {
    let connect = d.connect_agent(token, "claude");
    tokio::spawn(async move { next(&mut connect.await, 25).await })
}

/// The pushed messages' texts, and "more" items as `+N`.
fn told(batch: &Value) -> Vec<String> {
    batch["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| match i["kind"].as_str() {
            Some("message") => i["message"]["text"].as_str().expect("text").to_owned(),
            Some("more") => format!("+{}", i["count"]),
            other => panic!("unknown item kind {other:?}: {i}"),
        })
        .collect()
}

/// Resolves once more listeners follow the change feed than `before`.
async fn listening(d: &Daemon, before: usize) {
    let events = d.amc.events().clone();
    amc_testkit::eventually("the push to listen", || async { (events.listeners() > before).then_some(()) }).await;
}

/// A message written by the person, from one of their own devices.
fn own(platform_id: &str, text: &str) -> amc_core::model::IncomingMessage {
    amc_testkit::incoming(platform_id, text).own().build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_what_becomes_unread_for_the_agent_is_pushed_and_pushing_is_not_reading() {
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let (open, earlier) = d.channel_with("open", 2).await;
    d.channel_with("pending", 0).await;
    d.approve(&open, json!({ "history": "all", "send_policy": "auto" })).await;
    // What was stored before the agent's first push is in its unread list, not pushed.
    let first = next(&mut agent, 1).await;
    assert_eq!(told(&first), Vec::<String>::new());
    ack(&mut agent, &first).await;

    let before = d.amc.events().listeners();
    let waiting = start_next(&d, &token);
    listening(&d, before).await;
    d.ingest(Source::Imessage, "open", vec![own("open-own", "from the person's phone")]).await;
    d.ingest(Source::Imessage, "pending", vec![msg("pending-1", "not approved", now_ms())]).await;
    let sent = agent.post("/messages/send", &json!({ "channel_id": open, "text": "the agent's reply" })).await;
    assert_eq!(sent.expect("send").status, 200);
    let (_, new) = d.ingest(Source::Imessage, "open", vec![msg("open-new", "new for the agent", now_ms())]).await;
    let batch = waiting.await.expect("join");
    assert_eq!(told(&batch), ["new for the agent"], "{batch}");
    let item = &batch["items"][0]["message"];
    assert_eq!((item["id"].as_str(), item["channel_id"].as_str()), (Some(new[0].as_str()), Some(open.as_str())));
    assert_eq!(item["sender"]["display_name"], json!("Ada"));
    ack(&mut agent, &batch).await;
    // Still unread, with what came before: pushing is not reading.
    let unread = agent.get("/messages/unread").await.expect("unread").json();
    assert_eq!(ids(&unread), [earlier, new].concat(), "{unread}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_is_three_messages_then_one_count_and_the_unread_list_keeps_all() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, _) = d.channel_with("busy", 0).await;
    let (quiet, _) = d.channel_with("quiet", 0).await;
    for c in [&ch, &quiet] {
        d.approve(c, json!({ "history": "all" })).await;
    }
    let start = next(&mut agent, 1).await;
    ack(&mut agent, &start).await;
    let burst: Vec<_> = (0..20).map(|i| msg(&format!("busy-{i}"), &format!("burst {i}"), now_ms())).collect();
    d.ingest(Source::Imessage, "busy", burst).await;
    d.ingest(Source::Imessage, "quiet", vec![msg("quiet-1", "meanwhile", now_ms())]).await;
    let first = next(&mut agent, 25).await;
    assert_eq!(told(&first), ["burst 0", "burst 1", "burst 2", "meanwhile"], "{first}");
    ack(&mut agent, &first).await;
    // The rest of the burst comes as one count when the channel's second is over.
    let second = next(&mut agent, 25).await;
    assert_eq!(told(&second), ["+17"], "{second}");
    let more = &second["items"][0];
    assert_eq!((more["channel_id"].as_str(), more["channel"]["name"].as_str()), (Some(ch.as_str()), Some("Chat busy")));
    ack(&mut agent, &second).await;
    let unread = agent.get(&format!("/messages/unread?channel_id={ch}&limit=100")).await.expect("unread").json();
    assert_eq!(ids(&unread).len(), 20);
    // Nothing is told twice.
    assert_eq!(told(&next(&mut agent, 1).await), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_push_goes_on_where_it_stopped_after_a_restart_never_twice_never_skipping() {
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let (ch, _) = d.channel_with("a", 0).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let start = next(&mut agent, 1).await;
    ack(&mut agent, &start).await;
    d.ingest(Source::Imessage, "a", vec![msg("a-1", "one", now_ms())]).await;
    let told_once = next(&mut agent, 25).await;
    assert_eq!(told(&told_once), ["one"]);
    ack(&mut agent, &told_once).await;
    d.ingest(Source::Imessage, "a", vec![msg("a-2", "two", now_ms())]).await;
    // A batch that was never acknowledged (the bridge died before writing it) comes again.
    assert_eq!(told(&next(&mut agent, 25).await), ["two"]);
    drop(agent);
    let dir = d.stop().await;
    let d = Daemon::start_in(dir, |_| {}, None).await;
    d.ingest(Source::Imessage, "a", vec![msg("a-3", "three, while the bridge was away", now_ms())]).await;
    let mut agent = d.connect_agent(&token, "claude").await;
    let after = next(&mut agent, 25).await;
    assert_eq!(told(&after), ["two", "three, while the bridge was away"], "{after}");
    ack(&mut agent, &after).await;
    // A repeated or stale acknowledgement moves nothing back.
    ack(&mut agent, &told_once).await;
    assert_eq!(told(&next(&mut agent, 1).await), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_channel_pushes_what_arrived_since_and_revoking_ends_the_wait() {
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let start = next(&mut agent, 1).await;
    ack(&mut agent, &start).await;
    let (ch, _) = d.ingest(Source::Imessage, "later", vec![msg("later-1", "waiting for approval", now_ms())]).await;
    let before = d.amc.events().listeners();
    let waiting = start_next(&d, &token);
    listening(&d, before).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let released = waiting.await.expect("join");
    assert_eq!(told(&released), ["waiting for approval"]);
    ack(&mut agent, &released).await;

    let before = d.amc.events().listeners();
    let waiting = d.spawn_get(&token, "claude", "/messages/push?timeout_seconds=25");
    listening(&d, before).await;
    let revoked = d.admin().await.post("/admin/agents/claude/revoke", &json!({})).await.expect("revoke");
    assert!(revoked.status.is_success());
    let ended = waiting.await.expect("join");
    assert_eq!((ended.status.as_u16(), code(&ended)), (401, "UNAUTHORIZED".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_acks_and_out_of_range_waits_get_the_envelope() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    for q in ["timeout_seconds=0", "timeout_seconds=26", "timeout_seconds=x", "other=1"] {
        let r = agent.get(&format!("/messages/push?{q}")).await.expect("push");
        assert_eq!((r.status.as_u16(), code(&r)), (422, "VALIDATION_FAILED".to_owned()), "{q}");
    }
    for body in [json!({ "ack": "not an ack" }), json!({ "ack": "e30" }), json!({ "ack": 5 }), json!({})] {
        let r = agent.post("/messages/push/ack", &body).await.expect("ack");
        assert_eq!((r.status.as_u16(), code(&r)), (422, "VALIDATION_FAILED".to_owned()), "{body}");
    }
    // Without X-Agent-ID, like the other per-agent routes.
    let (_, token) = d.agent("other").await;
    let mut bare = d.anon().await.with_bearer(&token);
    let r = bare.get("/messages/push?timeout_seconds=1").await.expect("push");
    assert_eq!(code(&r), "AGENT_ID_REQUIRED");
}

/// An acknowledgement as a hostile agent would write one by hand: the old unsigned form.
fn handmade_ack(v: Value) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_ack_the_daemon_handed_to_this_agent_moves_its_push() {
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let (mut other, _) = d.agent("other").await;
    let (ch, _) = d.channel_with("a", 0).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let start = next(&mut agent, 1).await;
    ack(&mut agent, &start).await;
    let others = next(&mut other, 1).await;

    // Far ahead, with channels it never saw, a changed one, and another agent's.
    let far = handmade_ack(json!({ "f": i64::MAX, "c": [] }));
    let unseen = handmade_ack(json!({ "f": 0, "c": [["ch_01HZ0000000000000000000000", 1]] }));
    let mut changed = start["ack"].as_str().expect("ack").to_owned();
    let last = changed.pop().expect("a character");
    changed.push(if last == 'A' { 'B' } else { 'A' });
    for forged in [far, unseen, changed, others["ack"].as_str().expect("ack").to_owned()] {
        let r = agent.post("/messages/push/ack", &json!({ "ack": forged })).await.expect("ack");
        assert_eq!((r.status.as_u16(), code(&r)), (422, "VALIDATION_FAILED".to_owned()), "{forged}");
    }
    // Nothing of them was kept.
    let kept: i64 = d
        .amc
        .database()
        .read(|tx| Ok(tx.query_row("SELECT count(*) FROM push_channels", [], |r| r.get(0))?))
        .expect("count");
    assert_eq!(kept, 0, "a forged ack's channels were stored");
    // The push still tells what comes next, also after a restart.
    d.ingest(Source::Imessage, "a", vec![msg("a-1", "still told", now_ms())]).await;
    assert_eq!(told(&next(&mut agent, 25).await), ["still told"]);
    drop(agent);
    let d = Daemon::start_in(d.stop().await, |_| {}, None).await;
    let mut agent = d.connect_agent(&token, "claude").await;
    assert_eq!(told(&next(&mut agent, 25).await), ["still told"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_tells_the_agent_nothing_of_channels_it_cannot_see() {
    // The position an ack records counts every stored message: were it readable, an agent
    // would learn when and how much a pending or another agent's channel receives.
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    d.channel_with("pending", 3).await;
    let before = next(&mut agent, 1).await;
    d.ingest(Source::Imessage, "pending", vec![msg("pending-9", "meanwhile", now_ms())]).await;
    let after = next(&mut agent, 1).await;
    let again = next(&mut agent, 1).await;
    assert_ne!(after["ack"], again["ack"], "the same place, told twice, looks different");
    for batch in [&before, &after, &again] {
        use base64::Engine;
        let ack = batch["ack"].as_str().expect("ack");
        let sealed = ack.strip_prefix("v3.").expect("a sealed ack");
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(sealed).expect("base64");
        assert!(!bytes.windows(3).any(|w| w == br#""f""#), "readable: {ack}");
    }
    ack(&mut agent, &again).await;
}

/// One push batch for the agent after `told`, a batch it was told and has not acknowledged.
async fn next_after(agent: &mut amc_client::Connection, told: &Value, wait: u32) -> Value {
    let after = told["ack"].as_str().expect("ack");
    let r = agent.get(&format!("/messages/push?timeout_seconds={wait}&after={after}")).await.expect("push");
    assert_eq!(r.status, 200, "{:?}", r.json());
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_after_an_unrecorded_batch_goes_on_and_uses_nothing_up() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (busy, _) = d.channel_with("busy", 0).await;
    let (quiet, _) = d.channel_with("quiet", 0).await;
    for c in [&busy, &quiet] {
        d.approve(c, json!({ "history": "all" })).await;
    }
    let start = next(&mut agent, 1).await;
    ack(&mut agent, &start).await;
    // A burst held in one channel, told past it in the other.
    let burst: Vec<_> = (0..5).map(|i| msg(&format!("busy-{i}"), &format!("burst {i}"), now_ms())).collect();
    d.ingest(Source::Imessage, "busy", burst).await;
    d.ingest(Source::Imessage, "quiet", vec![msg("quiet-1", "meanwhile", now_ms())]).await;
    let first = next(&mut agent, 25).await;
    assert_eq!(told(&first), ["burst 0", "burst 1", "burst 2", "meanwhile"], "{first}");
    // Told but not recorded: the session goes on after it, and is not told any of it again.
    let second = next_after(&mut agent, &first, 25).await;
    assert_eq!(told(&second), ["+2"], "{second}");
    d.ingest(Source::Imessage, "quiet", vec![msg("quiet-2", "later", now_ms())]).await;
    let third = next_after(&mut agent, &second, 25).await;
    assert_eq!(told(&third), ["later"], "{third}");

    // Nothing was used up: a session asking from the recorded place is told it all again.
    let again = told(&next(&mut agent, 25).await);
    for text in ["burst 0", "meanwhile", "later"] {
        assert!(again.iter().any(|t| t == text), "{text} is not told again: {again:?}");
    }
    // The last batch's acknowledgement stands for every batch told before it.
    ack(&mut agent, &third).await;
    assert_eq!(told(&next(&mut agent, 1).await), Vec::<String>::new());

    // Only an acknowledgement handed to this agent is a place to go on from.
    let (mut other, _) = d.agent("other").await;
    for after in ["not-an-ack", &handmade_ack(json!({ "f": 0, "c": [] }))] {
        let r = agent.get(&format!("/messages/push?timeout_seconds=1&after={after}")).await.expect("push");
        assert_eq!((r.status.as_u16(), code(&r)), (422, "VALIDATION_FAILED".to_owned()), "{after}");
    }
    let r = other.get(&format!("/messages/push?timeout_seconds=1&after={}", third["ack"].as_str().expect("ack"))).await;
    assert_eq!(code(&r.expect("push")), "VALIDATION_FAILED");
}

/// What the release before handed an agent named `claude`, with its database's key
/// (`push_ack_key`, the one key it signed and sealed both with): an unread cursor and a
/// push acknowledgement, each genuine for that database.
const LEGACY_KEY: &str = "amc_legacy_push_ack_key_0123456789abcdef0123456789abcdef01234567";
const LEGACY_CURSOR: &str = "MTc2NDUyMzUzMTEyMzptc2dfMDFKWjhWUTFCN1hXM0Y5UzVZSDJNNEs2TkE.z10_bWDHTjzVkk6ABgAIXw";
const LEGACY_ACK: &str = "v2.hJ9gzR703RFEWODFVK0lUH5L7pmgrd1qKJHMssKZ-Wnb4pss6-8EYB-wYdGdz-w6Pq8nuWluiK0Y-0dPjcO0ctU2Ykwr87T153zyGnNPFhHg706vwByYMI61JAwK1kgN";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_release_before_handed_out_is_refused_and_the_agent_recovers() {
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let (ch, _) = d.channel_with("a", 0).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let start = next(&mut agent, 1).await;
    ack(&mut agent, &start).await;
    let (_, sent) = d.ingest(Source::Imessage, "a", vec![msg("a-1", "while AMC was updated", now_ms())]).await;
    // The database as the release before left it: its key, and no root key yet.
    d.amc
        .database()
        .write(|tx| {
            let undo_0024 = amc_store::UNDO_0024;
            tx.execute_batch(&format!(
                "DELETE FROM settings WHERE key = 'root_key';
                 INSERT INTO settings (key, value) VALUES ('push_ack_key', '{LEGACY_KEY}');
                 {undo_0024}
                 ALTER TABLE messages DROP COLUMN not_a_code; DROP TABLE not_a_code_report;
                 PRAGMA user_version = 21;"
            ))?;
            Ok(())
        })
        .expect("the layout of the release before");
    drop(agent);
    let d = Daemon::start_in(d.stop().await, |_| {}, None).await;
    let mut agent = d.connect_agent(&token, "claude").await;

    // Each is refused with the documented answer, and moves nothing.
    let r = agent.get(&format!("/messages/unread?cursor={LEGACY_CURSOR}")).await.expect("unread");
    assert_eq!((r.status.as_u16(), code(&r)), (422, "VALIDATION_FAILED".to_owned()));
    let said = r.json()["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(said.contains("without cursor"), "the refusal says how to go on: {said}");
    let r = agent.post("/messages/push/ack", &json!({ "ack": LEGACY_ACK })).await.expect("ack");
    assert_eq!((r.status.as_u16(), code(&r)), (422, "VALIDATION_FAILED".to_owned()));
    let r = agent.get(&format!("/messages/push?timeout_seconds=1&after={LEGACY_ACK}")).await.expect("push");
    assert_eq!((r.status.as_u16(), code(&r)), (422, "VALIDATION_FAILED".to_owned()));

    // The agent recovers as the refusals say: the list without a cursor, and the push
    // without `after`, which tells the batch again.
    let unread = agent.get("/messages/unread").await.expect("unread").json();
    assert_eq!(ids(&unread), sent);
    let batch = next(&mut agent, 25).await;
    assert_eq!(told(&batch), ["while AMC was updated"]);
    ack(&mut agent, &batch).await;
    let cursor = unread["next_cursor"].as_str().expect("a cursor").to_owned();
    assert!(cursor.starts_with("v2."), "{cursor}");
    let kept: i64 = d
        .amc
        .database()
        .read(|tx| Ok(tx.query_row("SELECT count(*) FROM settings WHERE key = 'push_ack_key'", [], |r| r.get(0))?))
        .expect("count");
    assert_eq!(kept, 0, "the retired key is gone");

    // What this release hands out holds across a restart: the root key is kept.
    drop(agent);
    let d = Daemon::start_in(d.stop().await, |_| {}, None).await;
    let mut agent = d.connect_agent(&token, "claude").await;
    let r = agent.get(&format!("/messages/unread?cursor={cursor}")).await.expect("unread");
    assert_eq!(r.status, 200, "{:?}", r.json());
    assert!(ids(&r.json()).is_empty());
    let r = agent.post("/messages/push/ack", &json!({ "ack": batch["ack"] })).await.expect("ack");
    assert_eq!(r.status, 200, "{:?}", r.json());
}
