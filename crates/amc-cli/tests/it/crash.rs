//! `kill -9` in the middle of a flood of relay posts: every post AMC answered is still
//! there after a restart, and posting again with the same keys doubles nothing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use amc_client::Connection;
use serde_json::json;

use super::Serve;

/// Posters at once, each on its own connection.
const POSTERS: usize = 8;
/// Answers to wait for before the kill.
const ANSWERED_BEFORE_KILL: usize = 600;

fn body_of(key: &str) -> String {
    format!("post {key}: the relay keeps what it acknowledged")
}

#[test]
fn relay_posts_answered_before_a_kill_survive_it_and_none_is_doubled() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let mut serve = Serve::start(dir);
    let socket = dir.join("run/amc.sock");
    let token = std::fs::read_to_string(dir.join("admin-token")).expect("token").trim().to_owned();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");

    // Keys tried, and the seq of each one answered.
    let tried: Arc<Mutex<Vec<String>>> = Arc::default();
    let answered: Arc<Mutex<BTreeMap<String, i64>>> = Arc::default();
    let thread = rt.block_on(async {
        let mut admin = Connection::connect(&socket).await.expect("connect").with_bearer(&token);
        let r = admin.post("/admin/relay/threads", &json!({ "title": "crash", "idempotency_key": "t" })).await;
        let thread = r.expect("thread").json()["thread_id"].as_str().expect("id").to_owned();
        let (count, mut counted) = tokio::sync::watch::channel(0usize);
        let count = Arc::new(count);
        for p in 0..POSTERS {
            let (socket, token, thread) = (socket.clone(), token.clone(), thread.clone());
            let (tried, answered, count) = (tried.clone(), answered.clone(), count.clone());
            tokio::spawn(async move {
                let Ok(c) = Connection::connect(&socket).await else { return };
                let mut c = c.with_bearer(&token);
                for i in 0.. {
                    let key = format!("p{p}-{i}");
                    tried.lock().expect("lock").push(key.clone());
                    let post = json!({ "body": body_of(&key), "idempotency_key": key });
                    let Ok(r) = c.post(&format!("/admin/relay/threads/{thread}/messages"), &post).await else { return };
                    assert_eq!(r.status, 200, "{}", r.json());
                    let seq = r.json()["seq"].as_i64().expect("seq");
                    let n = {
                        let mut answered = answered.lock().expect("lock");
                        answered.insert(key, seq);
                        answered.len()
                    };
                    count.send_replace(n);
                }
            });
        }
        counted.wait_for(|n| *n >= ANSWERED_BEFORE_KILL).await.expect("posts answered");
        thread
    });
    // SIGKILL while the posters keep posting.
    serve.child.kill().expect("kill -9");
    serve.child.wait().expect("reap");
    let answered = answered.lock().expect("lock").clone();
    let tried = tried.lock().expect("lock").clone();
    drop(rt);

    // The socket file of the killed daemon is still there: wait for the new one to answer.
    let _serve = Serve::start(dir);
    amc_testkit::poll_until("the restarted daemon to answer", || std::os::unix::net::UnixStream::connect(&socket).ok());
    rt_block(async {
        let mut admin = Connection::connect(&socket).await.expect("connect").with_bearer(&token);
        let before = read_all(&mut admin, &thread).await;
        for (key, seq) in &answered {
            assert_eq!(before.get(seq), Some(&body_of(key)), "answered post {key} (seq {seq}) survives the kill");
        }
        let seqs: Vec<i64> = before.keys().copied().collect();
        assert_eq!(seqs, (1..=seqs.len() as i64).collect::<Vec<_>>(), "seqs without gaps");
        assert!(before.len() >= answered.len());

        // Every key again: the stored ones answer with their seq, the rest are posted once.
        for key in &tried {
            let post = json!({ "body": body_of(key), "idempotency_key": key });
            let r = admin.post(&format!("/admin/relay/threads/{thread}/messages"), &post).await.expect("post");
            assert_eq!(r.status, 200, "{}", r.json());
            if let Some(seq) = answered.get(key) {
                assert_eq!(r.json()["seq"].as_i64(), Some(*seq), "{key} answers as before");
            }
        }
        let after = read_all(&mut admin, &thread).await;
        assert_eq!(after.len(), tried.len(), "each key stored once");
        let mut bodies: Vec<&String> = after.values().collect();
        bodies.sort();
        bodies.dedup();
        assert_eq!(bodies.len(), tried.len(), "no post doubled");
    });
}

fn rt_block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(f)
}

/// Every message of the thread, seq to body.
async fn read_all(admin: &mut Connection, thread: &str) -> BTreeMap<i64, String> {
    let mut out = BTreeMap::new();
    let mut after = String::new();
    loop {
        let q = amc_client::encode_query_value(&after);
        let r = admin.get(&format!("/admin/relay/threads/{thread}/messages?limit=100&after={q}")).await.expect("read");
        assert_eq!(r.status, 200, "{}", r.json());
        let page = r.json();
        let messages = page["messages"].as_array().expect("messages").clone();
        if messages.is_empty() {
            return out;
        }
        for m in messages {
            out.insert(m["seq"].as_i64().expect("seq"), m["body"].as_str().expect("body").to_owned());
        }
        after = page["next_cursor"].as_str().expect("cursor").to_owned();
    }
}
