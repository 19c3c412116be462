//! Search over a thread whose word is in more posts than are worth ranking: past 5,000
//! matches the newest come first; below, bm25 ranks them.

use amc_core::config::RawConfig;
use amc_core::sender::Senders;
use amc_core::service::Amc;
use amc_relay::{Principal, Relay};

#[tokio::test]
async fn a_word_in_nearly_every_post_finds_the_newest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = RawConfig { data_dir: Some(dir.path().to_owned()), ..Default::default() }.validate().expect("config");
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
}
