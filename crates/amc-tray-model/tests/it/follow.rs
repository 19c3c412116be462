//! The tray's counts follow the core, and what newly waits raises one notice.

use std::time::Duration;

use amc_core::service::{AgentCtx, SendRequest};
use amc_tray_model::follow::{NoticePolicy, Update, follow};
use amc_tray_model::view::TrayView;
use tokio::sync::mpsc;

use crate::{Fixture, ingest, start};

const QUICK: NoticePolicy = NoticePolicy {
    settle: Duration::from_millis(300),
    min_gap: Duration::from_millis(1500),
    refresh: Duration::from_millis(20),
};

fn spawn_follow(fx: &Fixture) -> (mpsc::UnboundedReceiver<Update>, tokio_util::sync::CancellationToken) {
    let (tx, rx) = mpsc::unbounded_channel();
    let stop = tokio_util::sync::CancellationToken::new();
    let amc = fx.running.amc().clone();
    let token = stop.clone();
    tokio::spawn(async move {
        follow(amc, QUICK, token.cancelled_owned(), move |u| {
            let _ = tx.send(u);
        })
        .await
    });
    (rx, stop)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Update>) -> Update {
    tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.expect("an update in time").expect("update")
}

async fn next_view(rx: &mut mpsc::UnboundedReceiver<Update>) -> TrayView {
    loop {
        if let Update::View(v) = next(rx).await {
            return v;
        }
    }
}

/// Approves `chat`'s channel for review and has an agent send in it.
async fn held_send(fx: &Fixture, channel_id: &str) {
    let amc = fx.running.amc();
    let release = amc_core::model::HistoryRelease::All;
    amc.approve_channel(channel_id.to_owned(), release, Some(amc_core::model::SendPolicy::Review), false)
        .await
        .expect("approve");
    let agent = AgentCtx { agent_id: "bot".to_owned() };
    let req = SendRequest { channel_id: channel_id.to_owned(), text: "hi".into(), reply_to: None, attachments: None };
    amc.send(&agent, req, None).await.expect("send");
}

async fn pending_ids(fx: &Fixture) -> Vec<String> {
    let chans =
        fx.running.amc().admin_channels(Some(amc_core::model::ChannelState::Pending), None).await.expect("list");
    chans.into_iter().map(|c| c.id).collect()
}

#[tokio::test]
async fn counts_follow_channels_sends_and_the_pause_switch() {
    let fx = start().await;
    fx.running.amc().create_agent("bot".into()).await.expect("agent");
    let (mut rx, stop) = spawn_follow(&fx);
    assert_eq!(next_view(&mut rx).await, TrayView::default(), "the first update is the current state");

    ingest(&fx, "alice").await;
    ingest(&fx, "bob").await;
    let mut v = next_view(&mut rx).await;
    while v.waiting.channels < 2 {
        v = next_view(&mut rx).await;
    }
    assert_eq!(v.channels_label(), "2 channels waiting");

    let alice = pending_ids(&fx).await.pop().expect("a pending channel");
    held_send(&fx, &alice).await;
    let mut v = next_view(&mut rx).await;
    while v.waiting.sends < 1 {
        v = next_view(&mut rx).await;
    }
    assert_eq!((v.channels_label().as_str(), v.sends_label().as_str()), ("1 channel waiting", "1 send to review"));

    fx.running.amc().set_paused(true).await.expect("pause");
    let v = next_view(&mut rx).await;
    assert!(v.paused);
    stop.cancel();
    fx.running.run_until(async {}).await.expect("stops");
}

#[tokio::test]
async fn a_burst_raises_one_notice_and_the_next_waits_its_gap() {
    let fx = start().await;
    fx.running.amc().create_agent("bot".into()).await.expect("agent");
    let (mut rx, stop) = spawn_follow(&fx);
    // The first update (the current view) comes once the follower listens.
    next_view(&mut rx).await;
    let started = tokio::time::Instant::now();
    // Three conversations at once (one read of the source), however slow the machine.
    let batches = ["a", "b", "c"]
        .map(|c| {
            let spec = amc_core::model::ChannelSpec {
                platform_id: c.into(),
                name: c.into(),
                kind: amc_core::model::ChannelKind::Dm,
                readers: None,
            };
            (spec, Vec::new())
        })
        .to_vec();
    fx.running.amc().ingest_many(amc_core::model::Source::Imessage, batches, None).await.expect("ingest");
    let first = loop {
        if let Update::Notice(n) = next(&mut rx).await {
            break n;
        }
    };
    assert_eq!(first.body, "3 new conversations wait for your approval.");
    let first_at = tokio::time::Instant::now();
    assert!(first_at - started >= QUICK.settle, "the burst settled first");

    let chat = pending_ids(&fx).await.pop().expect("pending");
    held_send(&fx, &chat).await;
    let second = loop {
        if let Update::Notice(n) = next(&mut rx).await {
            break n;
        }
    };
    assert_eq!(second.body, "An agent's message waits for your review.");
    // Measured here, after each notice reached this test: allow for that delivery.
    let gap = tokio::time::Instant::now() - first_at;
    assert!(gap >= QUICK.min_gap - Duration::from_millis(100), "notices are at least min_gap apart: {gap:?}");
    stop.cancel();
    fx.running.run_until(async {}).await.expect("stops");
}

#[tokio::test]
async fn nothing_is_raised_for_what_the_person_already_handled() {
    let fx = start().await;
    fx.running.amc().create_agent("bot".into()).await.expect("agent");
    // A conversation approved before the follower starts, for the marker below.
    ingest(&fx, "c").await;
    let approved = pending_ids(&fx).await.pop().expect("pending");
    let release = amc_core::model::HistoryRelease::All;
    fx.running.amc().approve_channel(approved.clone(), release, None, false).await.expect("approve");
    let (mut rx, stop) = spawn_follow(&fx);
    next_view(&mut rx).await;
    ingest(&fx, "a").await;
    let id = pending_ids(&fx).await.pop().expect("pending");
    fx.running.amc().block_channel(id).await.expect("block");
    // Then something that does wait: the next notice is about it alone.
    held_send(&fx, &approved).await;
    let notice = loop {
        if let Update::Notice(n) = next(&mut rx).await {
            break n;
        }
    };
    assert_eq!(notice.body, "An agent's message waits for your review.", "nothing about the blocked conversation");
    stop.cancel();
    fx.running.run_until(async {}).await.expect("stops");
}
