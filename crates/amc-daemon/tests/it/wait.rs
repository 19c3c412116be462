//! `wait_for_unread_messages` and its REST twin, `GET /messages/unread/wait`: an agent
//! without push waits for its next message instead of polling.

use serde_json::{Value, json};

use amc_core::model::Source;
use amc_core::time::now_ms;

use super::harness::{Daemon, code, ids, msg};

/// Resolves once `n` more listeners follow the change feed than `before`: the waits have
/// started and listen.
async fn listening(d: &Daemon, before: usize, n: usize) {
    let events = d.amc.events().clone();
    amc_testkit::eventually("the waits to listen", || async { (events.listeners() >= before + n).then_some(()) }).await;
}

/// Starts `GET /messages/unread/wait{query}` as the agent, answering with its JSON.
fn start_wait(d: &Daemon, token: &str, query: &str) -> tokio::task::JoinHandle<amc_client::Response> {
    d.spawn_get(token, "claude", &format!("/messages/unread/wait{query}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_returns_when_a_message_arrives_and_only_for_its_channel() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("claude").await;
    let (a, _) = d.channel_with("a", 0).await;
    let (b, _) = d.channel_with("b", 0).await;
    for ch in [&a, &b] {
        d.approve(ch, json!({ "history": "all" })).await;
    }
    let before = d.amc.events().listeners();
    let waits = [start_wait(&d, &token, &format!("?channel_id={a}")), start_wait(&d, &token, "")];
    listening(&d, before, 2).await;
    // A message in b wakes the wait on everything, not the wait on a.
    let (_, in_b) = d.ingest(Source::Imessage, "b", vec![msg("b-1", "to b", now_ms())]).await;
    let (_, in_a) = d.ingest(Source::Imessage, "a", vec![msg("a-1", "to a", now_ms())]).await;
    let [on_a, on_all] = waits;
    let (on_a, on_all): (Value, Value) = (on_a.await.expect("join").json(), on_all.await.expect("join").json());
    assert_eq!(ids(&on_a), in_a, "{on_a}");
    assert!(
        !ids(&on_all).is_empty() && ids(&on_all).iter().all(|id| in_b.contains(id) || in_a.contains(id)),
        "{on_all}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_already_unread_comes_at_once_and_a_quiet_wait_ends_empty() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (ch, sent) = d.channel_with("a", 2).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let v = agent.get("/messages/unread/wait?timeout_seconds=25").await.expect("wait").json();
    assert_eq!(ids(&v), sent);
    agent.post("/messages/mark_read", &json!({ "message_ids": sent })).await.expect("read");
    let quiet = agent.get("/messages/unread/wait?timeout_seconds=1").await.expect("wait");
    assert_eq!(quiet.status, 200);
    assert_eq!(quiet.json()["messages"], json!([]), "an empty page at the end of the wait");
    for bad in ["0", "26", "x"] {
        let r = agent.get(&format!("/messages/unread/wait?timeout_seconds={bad}")).await.expect("wait");
        assert_eq!(code(&r), "VALIDATION_FAILED", "timeout_seconds={bad}");
    }
    assert_eq!(code(&d.anon().await.get("/messages/unread/wait").await.expect("wait")), "UNAUTHORIZED");
}

/// Messages of a pending channel are not for agents: storing one looks, finds nothing and
/// waits on; the approval that releases it ends the wait with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_channel_ends_a_wait_that_its_pending_messages_did_not() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("claude").await;
    let before = d.amc.events().listeners();
    let wait = start_wait(&d, &token, "");
    listening(&d, before, 1).await;
    let (pending, quarantined) = d.ingest(Source::Imessage, "p", vec![msg("p-1", "secret", now_ms())]).await;
    d.approve(&pending, json!({ "history": "all" })).await;
    let v = wait.await.expect("join").json();
    assert_eq!(ids(&v), quarantined, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_the_agent_ends_its_wait() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("claude").await;
    let before = d.amc.events().listeners();
    let wait = start_wait(&d, &token, "");
    listening(&d, before, 1).await;
    let r = d.admin().await.post("/admin/agents/claude/revoke", &json!({})).await.expect("revoke");
    assert_eq!(r.status, 200);
    assert_eq!(code(&wait.await.expect("join")), "UNAUTHORIZED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_holds_a_bounded_number_of_waits_and_the_next_is_refused() {
    // Each wait keeps a connection open: past the bound, one agent would use up the files
    // AMC may open (256 on a Mac by default) and its memory.
    use amc_core::service::MAX_WAITS_PER_AGENT;
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let (_, other) = d.agent("other").await;
    let before = d.amc.events().listeners();
    let mut waits: Vec<_> = (0..MAX_WAITS_PER_AGENT).map(|_| start_wait(&d, &token, "?timeout_seconds=25")).collect();
    listening(&d, before, MAX_WAITS_PER_AGENT).await;
    for path in ["/messages/unread/wait?timeout_seconds=1", "/messages/push?timeout_seconds=1"] {
        let r = agent.get(path).await.expect("get");
        assert_eq!((r.status.as_u16(), code(&r)), (429, "RATE_LIMITED".to_owned()), "{path}");
        assert_eq!(r.header("retry-after"), Some("1"), "{path}");
    }
    // Another agent's waits are its own, and a wait that ends makes room.
    let mut theirs = d.connect_agent(&other, "other").await;
    assert_eq!(theirs.get("/messages/unread/wait?timeout_seconds=1").await.expect("get").status, 200);
    waits.pop().expect("a wait").abort();
    amc_testkit::eventually("a wait to end", || async {
        let r = d.connect_agent(&token, "claude").await.get("/messages/unread/wait?timeout_seconds=1").await;
        (r.expect("get").status == 200).then_some(())
    })
    .await;
    waits.iter().for_each(tokio::task::JoinHandle::abort);
}
