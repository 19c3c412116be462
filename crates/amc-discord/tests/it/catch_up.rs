//! The catch-up after a reconnection reads every channel to its end, whatever one of its
//! history requests met: a channel whose request failed is tried again on its own, with
//! backoff, without waiting for another reconnection.

use amc_discord::fake::HistoryFailure;
use serde_json::{Value, json};

use crate::harness::start;

/// While AMC was away ten messages were said in each of two channels. During the
/// catch-up, #general's history requests fail twice with a 500: #random's messages are
/// stored at once, #general is listed in the health as catching up with the failure, and
/// then tried again until all its messages are stored, each once, and the catch-up counts
/// as done. A 429 with Discord's documented body on the next catch-up is waited out.
#[tokio::test]
async fn a_channel_whose_history_request_fails_is_read_again_until_its_gap_is_filled() {
    let amc = start(&["general", "random"], "").await;
    let [general, random] = amc.fake.channel_ids()[..] else { panic!("two channels") };
    let (g, r) = (
        amc.approve(general, json!({ "history": "from_now" })).await,
        amc.approve(random, json!({ "history": "from_now" })).await,
    );
    let agent = amc.agent("claude").await;
    let alice = amc.fake.user("alice");
    amc.fake.post(general, &alice, "g0");
    amc.fake.post(random, &alice, "r0");
    amc.texts(&agent, &g, 1, "the first message in #general").await;
    amc.texts(&agent, &r, 1, "the first message in #random").await;

    amc.fake.fail_history(general, 2, HistoryFailure::ServerError);
    let back = amc
        .away(|fake| {
            for i in 1..=10 {
                fake.post_unseen(general, &alice, &format!("g{i}"));
                fake.post_unseen(random, &alice, &format!("r{i}"));
            }
        })
        .await;
    let random_texts = amc.texts(&agent, &r, 11, "#random's gap").await;
    assert_eq!(random_texts, (0..=10).map(|i| format!("r{i}")).collect::<Vec<_>>());
    let waiting: Value = amc
        .eventually("#general listed as catching up", || async {
            let health = amc.health().await;
            health["catching_up"].as_array()?.iter().find(|c| c["channel_id"] == g.as_str()).cloned()
        })
        .await;
    assert!(waiting["reason"].as_str().is_some_and(|why| why.contains("500")), "{waiting}");
    assert!(waiting["next_try_at"].is_string(), "{waiting}");

    let general_texts = amc.texts(&agent, &g, 11, "#general's gap, after the retries").await;
    assert_eq!(general_texts, (0..=10).map(|i| format!("g{i}")).collect::<Vec<_>>());
    let first = amc.caught_up(back, None).await;
    assert!(amc.health().await.get("catching_up").is_none(), "nothing is left catching up");

    // A 429 with the documented body (no `code`) on the next catch-up: waited out.
    amc.fake.fail_history(general, 1, HistoryFailure::RateLimited { retry_after: 1.5 });
    let back = amc
        .away(|fake| {
            fake.post_unseen(general, &alice, "g11");
        })
        .await;
    amc.caught_up(back, Some(&first)).await;
    let all = agent.unread(&g).await;
    let texts: Vec<&str> = all.iter().filter_map(|m| m["text"].as_str()).collect();
    assert_eq!(texts, (0..=11).map(|i| format!("g{i}")).collect::<Vec<_>>(), "each once");
    amc.stop().await;
}
