//! Posts arriving together share a commit yet each keeps its own outcome, and waiters
//! at every position get exactly what follows them while posts flood in.

use std::collections::BTreeMap;

use amc_core::config::Config;
use amc_core::error::ErrorCode;
use amc_core::sender::Senders;
use amc_core::service::Amc;
use amc_relay::{Principal, Relay};

fn relay(dir: &std::path::Path) -> Relay {
    amc_and_relay(dir).1
}

fn amc_and_relay(dir: &std::path::Path) -> (Amc, Relay) {
    let config = Config::new(dir.to_owned());
    let amc = Amc::start(config, Senders::default()).expect("start");
    let relay = Relay::open(&amc).expect("relay");
    (amc, relay)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_sent_together_share_commits_and_keep_their_own_outcome() {
    let dir = tempfile::tempdir().expect("tempdir");
    let relay = relay(dir.path());
    let person = Principal::Person;
    let thread = relay.create_thread(&person, "flood".into(), "t".into()).await.expect("thread").thread_id;
    let read = relay.mint(&person, thread.clone(), "read".into(), None).await.expect("mint").access_token;
    let reader = Principal::Agent("reader".into());
    relay.join(&reader, thread.clone(), read).await.expect("join");
    relay.send(&person, thread.clone(), "first".into(), None, "taken".into()).await.expect("first");
    let commits_before = relay.post_commits();

    // 300 new posts, 40 repeats of one key with its body, 20 of it with another body,
    // and 40 from a member who may only read: all at once.
    let mut calls = Vec::new();
    for i in 0..400 {
        let (relay, thread) = (relay.clone(), thread.clone());
        let (who, body, key) = match i % 10 {
            0 => (Principal::Person, "first".to_owned(), "taken".to_owned()),
            1 if i % 20 == 1 => (Principal::Person, format!("other {i}"), "taken".to_owned()),
            2 => (Principal::Agent("reader".into()), format!("not mine {i}"), format!("r{i}")),
            _ => (Principal::Person, format!("post {i}"), format!("k{i}")),
        };
        calls.push(tokio::spawn(async move { (i, body.clone(), relay.send(&who, thread, body, None, key).await) }));
    }
    let mut stored = BTreeMap::new();
    let (mut replays, mut reused, mut forbidden) = (0, 0, 0);
    for call in calls {
        let (i, body, result) = call.await.expect("call");
        match (i % 10, result) {
            (0, Ok(r)) => {
                assert_eq!(r.seq, 1, "a repeated key answers with the first post");
                replays += 1;
            }
            (1, Err(e)) if i % 20 == 1 => {
                assert_eq!(e.code, ErrorCode::IdempotencyKeyReuse);
                reused += 1;
            }
            (2, Err(e)) => {
                assert_eq!(e.code, ErrorCode::Forbidden);
                forbidden += 1;
            }
            (_, Ok(r)) => assert!(stored.insert(r.seq, body).is_none(), "seq {} given twice", r.seq),
            (_, Err(e)) => panic!("post {i} failed: {e}"),
        }
    }
    assert_eq!((replays, reused, forbidden), (40, 20, 40));
    assert_eq!(stored.len(), 300);
    assert_eq!(stored.keys().copied().collect::<Vec<_>>(), (2..=301).collect::<Vec<_>>(), "seqs without gaps");
    let commits = relay.post_commits() - commits_before;
    assert!(commits < 400, "posts sent together share transactions: {commits} for 400");

    // What was stored is what was answered, and nothing else.
    let mut read = Vec::new();
    let mut after = None;
    loop {
        let page = relay.read(&person, thread.clone(), after.clone(), Some(100)).await.expect("read");
        if page.messages.is_empty() {
            break;
        }
        after = Some(page.next_cursor.clone());
        read.extend(page.messages.into_iter().map(|m| (m.seq, m.body)));
    }
    let mut want = vec![(1, "first".to_owned())];
    want.extend(stored.clone());
    assert_eq!(read, want);

    // Search finds every stored post of the group commits, and nothing of a refused one.
    let mut found = std::collections::BTreeSet::new();
    let mut cursor = None;
    loop {
        let page = relay.search(&person, "post".into(), cursor, Some(100)).await.expect("search");
        found.extend(page.hits.iter().filter_map(|h| h.seq));
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(found, stored.keys().copied().collect(), "each stored post found, once");
    let refused = relay.search(&person, "mine".into(), None, Some(100)).await.expect("search");
    assert!(refused.hits.is_empty(), "a refused post is not in the search index: {:?}", refused.hits);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_at_every_position_get_exactly_what_follows_them_during_a_flood() {
    let dir = tempfile::tempdir().expect("tempdir");
    let relay = relay(dir.path());
    let person = Principal::Person;
    let thread = relay.create_thread(&person, "flood".into(), "t".into()).await.expect("thread").thread_id;
    let total = 300;
    let mut cursors = vec![relay.read(&person, thread.clone(), None, Some(1)).await.expect("read").next_cursor];
    for i in 1..=5 {
        relay.send(&person, thread.clone(), format!("m{i}"), None, format!("k{i}")).await.expect("post");
        cursors.push(relay.read(&person, thread.clone(), None, Some(i)).await.expect("read").next_cursor);
    }
    let mut waiters = Vec::new();
    for w in 0..60 {
        let (relay, thread) = (relay.clone(), thread.clone());
        let start = w % cursors.len();
        let mut cursor = cursors[start].clone();
        waiters.push(tokio::spawn(async move {
            let mut seen = Vec::new();
            while seen.last().copied().unwrap_or(start as i64) < total {
                let limit = Some(1 + (w % 7) as i64);
                let page = relay
                    .wait(&Principal::Person, thread.clone(), cursor.clone(), Some(10), limit, std::future::pending())
                    .await
                    .expect("wait");
                assert!(!page.messages.is_empty(), "waiter {w} timed out after {seen:?}");
                seen.extend(page.messages.iter().map(|m| m.seq));
                cursor = page.next_cursor;
            }
            (start as i64, seen)
        }));
    }
    let posters: Vec<_> = (0..3)
        .map(|p| {
            let (relay, thread) = (relay.clone(), thread.clone());
            tokio::spawn(async move {
                for i in 0..(total - 5) / 3 + 1 {
                    let key = format!("f{p}-{i}");
                    relay.send(&Principal::Person, thread.clone(), key.clone(), None, key).await.expect("post");
                }
            })
        })
        .collect();
    for p in posters {
        p.await.expect("poster");
    }
    for w in waiters {
        let (start, seen) = w.await.expect("waiter");
        let want: Vec<i64> = (start + 1..=seen.last().copied().unwrap_or(start)).collect();
        assert_eq!(seen, want, "a waiter from {start} saw every message after it once, in order");
    }
}

/// A database error while checking one post of a group fails the group whole: none of
/// its posts is stored. (SQLite may have rolled the transaction back by then; the posts
/// after it must not be written outside it, each committed on its own.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_error_checking_one_post_of_a_group_stores_none_of_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (amc, relay) = amc_and_relay(dir.path());
    let person = Principal::Person;
    let thread = relay.create_thread(&person, "group".into(), "t".into()).await.expect("thread").thread_id;
    // An agent's access is read from `relay_members`: with the table gone, checking the
    // agent's post fails in the database, not as a refusal.
    amc.database().write(|tx| Ok(tx.execute_batch("DROP TABLE relay_members")?)).expect("drop");
    let post = |author: &str, key: &str| amc_relay::store::NewPost {
        thread_id: thread.clone(),
        author: author.to_owned(),
        body: format!("body {key}"),
        reply_to_seq: None,
        key: key.to_owned(),
        hash: [0; 32],
        now: 0,
    };
    let group = [post(amc_relay::PERSON, "a"), post("agent-x", "b"), post(amc_relay::PERSON, "c")];
    let outcome = relay.store().post_many(&group);
    assert!(outcome.is_err(), "the group fails whole: {outcome:?}");
    let page = relay.read(&person, thread, None, Some(10)).await.expect("read");
    assert!(page.messages.is_empty(), "no post of the group stored: {:?}", page.messages);
}

/// Pages of AMC's database in use, and what the agent's posts take by its own count.
fn used_pages(amc: &Amc) -> i64 {
    amc.database()
        .read(|tx| {
            Ok(tx.query_row(
                "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM pragma_freelist_count())",
                [],
                |r| r.get(0),
            )?)
        })
        .expect("pages")
}

/// Checks that `r` is the agent's bound refusing `what`.
fn quota<T>(r: Result<T, amc_core::Error>, what: &str) {
    match r {
        Err(e) => assert_eq!(e.code, ErrorCode::QuotaExceeded, "{what}: {e:?}"),
        Ok(_) => panic!("{what} past the bound was taken"),
    }
}

/// One agent's token creating threads, minting tokens and posting without end: each stops
/// at its bound with `QUOTA_EXCEEDED`, the database stops growing, and the person and other
/// agents go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_agent_flooding_the_relay_stops_at_its_bounds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (amc, relay) = amc_and_relay(dir.path());
    let bounds = amc_relay::BOUNDS;
    let agent = Principal::Agent("flood".into());

    let mut first = None;
    for i in 0..bounds.threads {
        let t = relay.create_thread(&agent, format!("t{i}"), format!("k{i}")).await.expect("thread");
        first.get_or_insert(t.thread_id);
    }
    let thread = first.expect("a thread");
    quota(relay.create_thread(&agent, "one more".into(), "more".into()).await, "a thread");
    let again = relay.create_thread(&agent, "t0".into(), "k0".into()).await.expect("the same key again");
    assert_eq!(again.thread_id, thread, "an earlier thread is still found by its key");

    for _ in 0..bounds.tokens {
        relay.mint(&agent, thread.clone(), "read".into(), None).await.expect("mint");
    }
    quota(relay.mint(&agent, thread.clone(), "write".into(), None).await, "a token");

    // Posts of 16 KiB, many at a time, until the bytes bound refuses them.
    let body = "p".repeat(amc_relay::MAX_POST_BYTES);
    let fits = bounds.post_bytes / amc_relay::MAX_POST_BYTES as i64;
    let mut sent = 0;
    while sent < fits + 64 {
        let calls: Vec<_> = (sent..sent + 64)
            .map(|i| {
                let (relay, agent, thread, body) = (relay.clone(), agent.clone(), thread.clone(), body.clone());
                tokio::spawn(async move { relay.send(&agent, thread, body, None, format!("p{i}")).await })
            })
            .collect();
        for (i, call) in (sent..).zip(calls) {
            match call.await.expect("post") {
                Ok(_) => assert!(i < fits, "post {i} past the bound was taken"),
                Err(e) => assert_eq!((i >= fits, e.code), (true, ErrorCode::QuotaExceeded), "post {i}: {e:?}"),
            }
        }
        sent += 64;
    }
    let pages = used_pages(&amc);
    for i in 0..256 {
        quota(relay.send(&agent, thread.clone(), body.clone(), None, format!("more{i}")).await, "a post");
    }
    assert_eq!(used_pages(&amc), pages, "refused posts take no room");
    eprintln!(
        "relay: {} threads, {} tokens, {fits} posts of 16 KiB kept; database {} MB",
        bounds.threads,
        bounds.tokens,
        pages * 4096 / 1_000_000
    );

    // The count bound, with the agent's count just under it.
    amc.database()
        .write(|tx| {
            tx.execute(
                "UPDATE relay_usage SET posts = ?1, bytes = 0 WHERE principal = 'agent:flood'",
                [bounds.posts - 1],
            )?;
            Ok(())
        })
        .expect("usage");
    relay.send(&agent, thread.clone(), "the last one".into(), None, "last".into()).await.expect("the last post");
    quota(relay.send(&agent, thread.clone(), "past it".into(), None, "past".into()).await, "a post past the count");
    // The same key again answers with the post it made.
    relay.send(&agent, thread.clone(), "the last one".into(), None, "last".into()).await.expect("a repeat");

    // Others go on: the person, and another agent in the flooded thread.
    let person = Principal::Person;
    relay.create_thread(&person, "mine".into(), "mine".into()).await.expect("the person's thread");
    let invite = relay.mint(&agent, thread.clone(), "write".into(), None).await;
    quota(invite, "another token");
    let other = Principal::Agent("other".into());
    let own = relay.create_thread(&other, "other's".into(), "o".into()).await.expect("another agent's thread");
    relay.send(&other, own.thread_id, "fine".into(), None, "o1".into()).await.expect("another agent's post");
}

/// Each wait holds a connection and its memory: one agent's relay waits count against the
/// one bound on all of its waits, the inbox's included, and each that ends frees its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_holds_at_most_its_bound_of_waits_the_inbox_ones_included() {
    use amc_core::service::MAX_WAITS_PER_AGENT;
    let dir = tempfile::tempdir().expect("tempdir");
    let (amc, relay) = amc_and_relay(dir.path());
    let person = Principal::Person;
    let thread = relay.create_thread(&person, "waits".into(), "t".into()).await.expect("thread").thread_id;
    let read = relay.mint(&person, thread.clone(), "read".into(), None).await.expect("mint").access_token;
    amc.create_agent("waiter".into()).await.expect("agent");
    let agent = Principal::Agent("waiter".into());
    relay.join(&agent, thread.clone(), read).await.expect("join");
    // One wait of the inbox's, then relay waits up to the bound.
    let inbox_wait = amc.enter_wait("waiter").expect("an inbox wait");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let wait = |relay: Relay, thread: String, mut stopped: tokio::sync::watch::Receiver<bool>| {
        let agent = Principal::Agent("waiter".into());
        tokio::spawn(async move {
            let until_stopped = async move {
                let _ = stopped.wait_for(|s| *s).await;
            };
            relay.wait(&agent, thread, String::new(), Some(25), None, until_stopped).await
        })
    };
    let held: Vec<_> = (1..MAX_WAITS_PER_AGENT).map(|_| wait(relay.clone(), thread.clone(), stopped.clone())).collect();
    amc_testkit::eventually("every relay wait to be waiting", || {
        let (relay, thread) = (relay.clone(), thread.clone());
        async move {
            let n = relay.waiting_on(&Principal::Person, thread).await.ok()?;
            (n == MAX_WAITS_PER_AGENT - 1).then_some(())
        }
    })
    .await;
    let refused = relay.wait(&agent, thread.clone(), String::new(), Some(25), None, async {}).await;
    let refused = refused.expect_err("one past the bound");
    assert_eq!((refused.code, refused.retry_after), (ErrorCode::RateLimited, Some(1)));
    assert!(amc.enter_wait("waiter").is_err(), "nor an inbox wait");
    assert!(amc.enter_wait("another").is_ok(), "another agent's are its own");
    let person_waits = relay.wait(&person, thread.clone(), String::new(), Some(0), None, async {}).await;
    assert!(person_waits.is_ok(), "the person is not bounded");
    // The inbox's wait ends: one relay wait more.
    drop(inbox_wait);
    let one_more = wait(relay.clone(), thread.clone(), stopped.clone());
    amc_testkit::eventually("the freed place to be taken", || {
        let (relay, thread) = (relay.clone(), thread.clone());
        async move { (relay.waiting_on(&Principal::Person, thread).await.ok()? == MAX_WAITS_PER_AGENT).then_some(()) }
    })
    .await;
    stop.send(true).expect("stop");
    for w in held.into_iter().chain([one_more]) {
        let page = w.await.expect("join").expect("a wait ends with its page");
        assert!(page.messages.is_empty());
    }
    assert!(amc.enter_wait("waiter").is_ok(), "every place is free again");
}
