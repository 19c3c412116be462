//! Search over a thread whose word is in more posts than are worth ranking: past 5,000
//! matches the newest come first; below, bm25 ranks them. The matches counted are the
//! caller's own.

use amc_core::config::Config;
use amc_core::sender::Senders;
use amc_core::service::Amc;
use amc_relay::{Principal, Relay};

#[tokio::test]
async fn a_word_in_nearly_every_post_finds_the_newest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config::new(dir.path().to_owned());
    let amc = Amc::start(config, Senders::default()).expect("start");
    let relay = Relay::open(&amc).expect("relay");
    let who = Principal::Person;
    let thread = relay.create_thread(&who, "log".into(), "k".into()).await.expect("thread").thread_id;
    let store = relay.store().clone();
    let id = thread.clone();
    tokio::task::spawn_blocking(move || {
        let now = amc_core::time::now_ms();
        for i in 0..5_010 {
            let (body, key) = (format!("status update {i}"), format!("p{i}"));
            store.post(&id, "person", &body, None, &key, &amc_core::token::hash_token(&key), now).expect("post");
        }
    })
    .await
    .expect("posts");
    let page = relay.search(&who, "status".into(), None, Some(3)).await.expect("search");
    let seqs: Vec<Option<i64>> = page.hits.iter().map(|h| h.seq).collect();
    assert_eq!(seqs, [Some(5_010), Some(5_009), Some(5_008)], "the newest first");
    let rare = relay.search(&who, "5003".into(), None, Some(3)).await.expect("search");
    assert_eq!(rare.hits.iter().map(|h| h.seq).collect::<Vec<_>>(), [Some(5_004)], "a rare word is ranked as before");

    // An agent that sees only a small thread gets its few matches ranked: the thousands
    // in a thread it cannot see change nothing of its answer.
    let small = relay.create_thread(&who, "small".into(), "s".into()).await.expect("thread").thread_id;
    for (i, body) in ["status status status, all of it", "a status", "the status"].into_iter().enumerate() {
        relay.send(&who, small.clone(), body.into(), None, format!("s{i}")).await.expect("post");
    }
    let invite = relay.mint(&who, small.clone(), "read".into(), None).await.expect("mint").access_token;
    let agent = Principal::Agent("reader".into());
    relay.join(&agent, small.clone(), invite).await.expect("join");
    let page = relay.search(&agent, "status".into(), None, Some(3)).await.expect("search");
    let seqs: Vec<Option<i64>> = page.hits.iter().map(|h| h.seq).collect();
    assert_eq!(seqs[0], Some(1), "ranked by bm25, as for any word with few matches in the agent's threads: {seqs:?}");
}

/// Nor do they weigh its words: bm25 over the whole index would give "beta" less weight
/// once another agent's thread holds it a thousand times, and rank the post with more
/// "alpha" first. Ranked among the caller's own matches, the order stays.
#[tokio::test]
async fn threads_the_caller_cannot_see_never_weigh_its_search_terms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = Config::new(dir.path().to_owned());
    let amc = Amc::start(config, Senders::default()).expect("start");
    let relay = Relay::open(&amc).expect("relay");
    let (me, other) = (Principal::Agent("me".into()), Principal::Agent("other".into()));
    let mine = relay.create_thread(&me, "notes".into(), "m".into()).await.expect("thread").thread_id;
    for (i, body) in ["alpha beta beta beta", "alpha alpha alpha beta"].into_iter().enumerate() {
        relay.send(&me, mine.clone(), body.into(), None, format!("m{i}")).await.expect("post");
    }
    let order = |page: amc_relay::SearchPage| page.hits.iter().map(|h| h.seq).collect::<Vec<_>>();
    let before = order(relay.search(&me, "alpha beta".into(), None, Some(10)).await.expect("search"));
    assert_eq!(before, [Some(1), Some(2)], "equal weights: thread order");
    let theirs = relay.create_thread(&other, "theirs".into(), "t".into()).await.expect("thread").thread_id;
    for i in 0..1_000 {
        relay.send(&other, theirs.clone(), format!("beta {i}"), None, format!("t{i}")).await.expect("post");
    }
    let after = order(relay.search(&me, "alpha beta".into(), None, Some(10)).await.expect("search"));
    assert_eq!(after, before, "another agent's thread weighed the words");
}
