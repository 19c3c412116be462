//! The change feed's long-poll, `GET /admin/events/poll`, for clients that cannot hold a
//! stream open.

use std::time::{Duration, Instant};

use serde_json::json;

use super::harness::{Daemon, code};
use amc_core::events::{Event, RING_CAPACITY};

async fn cursor(d: &Daemon) -> u64 {
    let resp = d.admin().await.get("/admin/events/poll").await.expect("poll");
    assert_eq!(resp.status, 200);
    let v = resp.json();
    assert_eq!(v["events"], json!([]));
    assert_eq!(v["missed"], false);
    v["next"].as_u64().expect("next")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_wakes_when_an_event_arrives() {
    let d = Daemon::start().await;
    let after = cursor(&d).await;
    let mut conn = d.admin().await;
    let started = Instant::now();
    let poll =
        tokio::spawn(async move { conn.get(&format!("/admin/events/poll?after={after}&timeout_ms=20000")).await });
    // The request reaches the daemon and waits there, unanswered.
    amc_testkit::eventually("the poll to wait in the daemon", || async {
        (d.amc.events().pollers() == 1).then_some(())
    })
    .await;
    assert!(!poll.is_finished(), "a poll with nothing new waits");
    let created = d.admin().await.post("/admin/agents", &json!({ "id": "claude-code" })).await.expect("agent");
    assert_eq!(created.status, 201);
    let resp = poll.await.expect("join").expect("poll");
    assert!(started.elapsed() < Duration::from_secs(10), "woke on the event, not the timeout");
    assert_eq!(resp.status, 200);
    let v = resp.json();
    assert_eq!(v["missed"], false);
    assert_eq!(v["events"], json!([{ "seq": after + 1, "type": "agents_changed" }]));
    assert_eq!(v["next"], after + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_already_there_are_answered_at_once_in_order() {
    let d = Daemon::start().await;
    let after = cursor(&d).await;
    let (ch, _) = d.channel_with("ada", 2).await;
    let resp = d.admin().await.get(&format!("/admin/events/poll?after={after}&timeout_ms=30000")).await.expect("poll");
    let v = resp.json();
    let types: Vec<&str> =
        v["events"].as_array().expect("events").iter().map(|e| e["type"].as_str().unwrap_or("")).collect();
    assert_eq!(types, ["channel_created", "messages_changed"]);
    assert_eq!(v["events"][0]["channel_id"], ch.as_str());
    assert_eq!(v["events"][1]["seq"], after + 2);
    assert_eq!(v["next"], after + 2);
    // From `next`, nothing more.
    let again = d.admin().await.get(&format!("/admin/events/poll?after={}", after + 2)).await.expect("poll");
    assert_eq!(again.json(), json!({ "events": [], "next": after + 2, "missed": false }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_with_nothing_new_times_out_empty() {
    let d = Daemon::start().await;
    let after = cursor(&d).await;
    let started = Instant::now();
    let resp = d.admin().await.get(&format!("/admin/events/poll?after={after}&timeout_ms=300")).await.expect("poll");
    assert!(started.elapsed() >= Duration::from_millis(300), "waited for the timeout");
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json(), json!({ "events": [], "next": after, "missed": false }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_behind_the_ring_or_from_another_run_is_told_it_missed_events() {
    let d = Daemon::start().await;
    let after = cursor(&d).await;
    for _ in 0..RING_CAPACITY + 1 {
        d.amc.publish(Event::AgentsChanged);
    }
    let latest = after + RING_CAPACITY as u64 + 1;
    let resp = d.admin().await.get(&format!("/admin/events/poll?after={after}&timeout_ms=5000")).await.expect("poll");
    assert_eq!(resp.json(), json!({ "events": [], "next": latest, "missed": true }));
    // One step later the ring still holds everything after the cursor.
    let resp = d.admin().await.get(&format!("/admin/events/poll?after={}", after + 1)).await.expect("poll");
    assert_eq!(resp.json()["events"].as_array().map(Vec::len), Some(RING_CAPACITY));
    // A cursor ahead of the feed (from before a restart) reloads too.
    let resp = d.admin().await.get(&format!("/admin/events/poll?after={}", latest + 10)).await.expect("poll");
    assert_eq!(resp.json(), json!({ "events": [], "next": latest, "missed": true }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_parameters_and_missing_credentials_get_the_envelope() {
    let d = Daemon::start().await;
    for query in ["after=abc", "after=-1", "timeout_ms=30001", "after=1&timeout_ms=99999", "timeout_ms=1.5", "since=1"]
    {
        let resp = d.admin().await.get(&format!("/admin/events/poll?{query}")).await.expect("poll");
        assert_eq!(resp.status, 422, "{query}");
        assert_eq!(code(&resp), "VALIDATION_FAILED", "{query}");
    }
    let resp = d.anon().await.get("/admin/events/poll").await.expect("poll");
    assert_eq!(code(&resp), "UNAUTHORIZED");
    let (mut agent, _) = d.agent("claude-code").await;
    assert_eq!(code(&agent.get("/admin/events/poll").await.expect("poll")), "UNAUTHORIZED");
}
