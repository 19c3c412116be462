//! The check that nothing was missed: every `discord_check_seconds`, each followed
//! channel's `last_message_id` is compared with what AMC read, and the difference read,
//! without any reconnection.

use serde_json::json;

use crate::harness::{Amc, start};

const SERVER_CHANNELS: &str = "GET /guilds/{id}/channels";
const MESSAGES: &str = "GET /channels/{id}/messages";

/// Messages the gateway never delivered, in a server channel, one of its threads and a
/// DM, while the connection stays up: the check stores each, once, and the channel
/// nobody approved is not read.
#[tokio::test]
async fn messages_the_gateway_never_delivered_are_stored_by_the_check_without_a_reconnection() {
    let amc = start(&["general", "random"], "discord_check_seconds = 1").await;
    let [general, random] = amc.fake.channel_ids()[..] else { panic!("two channels") };
    let g = amc.approve(general, json!({ "history": "from_now" })).await;
    let agent = amc.agent("claude").await;
    let alice = amc.fake.user("alice");
    let thread = amc.fake.create_thread(general, "plans");
    amc.fake.post(general, &alice, "g live");
    amc.fake.post(thread, &alice, "t live");
    let dm = amc.fake.dm(&alice, "d live");
    let d = amc.approve(dm, json!({ "history": "all" })).await;
    amc.texts(&agent, &g, 2, "the live messages in #general and its thread").await;
    amc.texts(&agent, &d, 1, "the live DM").await;

    amc.fake.post_unseen(general, &alice, "g unseen");
    amc.fake.post_unseen(thread, &alice, "t unseen");
    amc.fake.post_unseen(dm, &alice, "d unseen");
    amc.fake.post_unseen(random, &alice, "not approved");
    let mut texts = amc.texts(&agent, &g, 4, "#general's and its thread's unseen messages").await;
    texts.sort();
    assert_eq!(texts, ["g live", "g unseen", "t live", "t unseen"]);
    assert_eq!(amc.texts(&agent, &d, 2, "the unseen DM").await, ["d live", "d unseen"]);

    // A gap behind a message the gateway did deliver: dropped, then a later one stored,
    // then a read of the channel that starts past the gap (approving it again reads it on
    // from its newest stored message). The check reads from where it had read.
    amc.fake.post_unseen(general, &alice, "g dropped");
    amc.fake.post(general, &alice, "g after the gap");
    amc.texts(&agent, &g, 5, "the message after the gap").await;
    amc.approve(general, json!({ "history": "all" })).await;
    // A thread started after the catch-up whose first message the gateway dropped.
    let late = amc.fake.create_thread(general, "late");
    amc.fake.post_unseen(late, &alice, "late first");
    amc.fake.post(late, &alice, "late second");
    let mut texts = amc.texts(&agent, &g, 8, "the gap's message and the late thread's first").await;
    texts.sort();
    assert_eq!(
        texts,
        ["g after the gap", "g dropped", "g live", "g unseen", "late first", "late second", "t live", "t unseen"]
    );

    let (identifies, resumes, _, _) = amc.fake.counts();
    assert_eq!((identifies, resumes), (1, 0), "no reconnection brought them");
    let random_reads = amc.fake.requests_for(MESSAGES, random);
    assert_eq!(random_reads, 0, "a channel nobody approved is not read");
    // Later checks find nothing new: still each once.
    let now = amc.fake.requests().iter().filter(|r| *r == SERVER_CHANNELS).count();
    amc.eventually("two more checks", || async {
        (amc.fake.requests().iter().filter(|r| *r == SERVER_CHANNELS).count() >= now + 2).then_some(())
    })
    .await;
    assert_eq!(agent.unread(&g).await.len(), 8);
    amc.stop().await;
}

/// What one check asks of Discord, from one server-channels request to the next: on a
/// quiet day two requests for the server (its channels, its active threads) and one per
/// DM; a page only for a channel whose newest message is past what was read, and a
/// deleted newest message costs that page once.
#[tokio::test]
async fn a_quiet_check_costs_two_requests_per_server_and_one_per_dm() {
    let amc = start(&["general", "random", "news"], "discord_check_seconds = 1").await;
    let ids = amc.fake.channel_ids();
    let alice = amc.fake.user("alice");
    let agent = amc.agent("claude").await;
    for id in &ids {
        let channel = amc.approve(*id, json!({ "history": "from_now" })).await;
        amc.fake.post(*id, &alice, "first");
        amc.texts(&agent, &channel, 1, "the first message").await;
    }
    let dm = amc.fake.dm(&alice, "hello");
    amc.approve(dm, json!({ "history": "from_now" })).await;

    let quiet = vec![SERVER_CHANNELS.to_owned(), "GET /guilds/{id}/threads/active".into(), "GET /channels/{id}".into()];
    let from = checks(&amc);
    assert_eq!(check(&amc, from + 1).await, quiet);

    // A live message: a check reads its channel's page once, then all is quiet again.
    // (Counted from the check that may be under way.)
    let from = checks(&amc).saturating_sub(1);
    amc.fake.post(ids[0], &alice, "live");
    assert_eq!(pages_until_quiet(&amc, from, &quiet).await, 1);

    // Its newest message deleted (last_message_id still points to it): one page, once.
    let from = checks(&amc).saturating_sub(1);
    let oops = amc.fake.post(ids[1], &alice, "oops");
    amc.fake.delete(ids[1], oops);
    assert_eq!(pages_until_quiet(&amc, from, &quiet).await, 1);
    amc.stop().await;
}

/// How many checks began so far.
fn checks(amc: &Amc) -> usize {
    amc.fake.requests().iter().filter(|r| *r == SERVER_CHANNELS).count()
}

/// The requests from the `k`th check's server-channels request (counting from 0) to the
/// next one's, once that has come.
async fn check(amc: &Amc, k: usize) -> Vec<String> {
    amc.eventually(&format!("check {k} to end"), || async {
        let log = amc.fake.requests();
        let starts: Vec<usize> =
            log.iter().enumerate().filter(|(_, r)| *r == SERVER_CHANNELS).map(|(i, _)| i).collect();
        Some(log[*starts.get(k)?..*starts.get(k + 1)?].to_vec())
    })
    .await
}

/// The pages of messages the checks after the `from`th read, until one is `quiet`
/// after a page was read (at most six checks).
async fn pages_until_quiet(amc: &Amc, from: usize, quiet: &[String]) -> usize {
    let mut pages = 0;
    for k in from..from + 6 {
        let requests = check(amc, k).await;
        if pages > 0 && requests == quiet {
            return pages;
        }
        pages += requests.iter().filter(|r| *r == MESSAGES).count();
    }
    panic!("the checks never went quiet again after {pages} pages");
}
