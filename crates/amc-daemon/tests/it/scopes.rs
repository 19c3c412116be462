//! Per-agent channels: a channel open to every agent, to some, or to none, seen by each
//! agent only as the person set it, on every route an agent can reach. The matrix asks,
//! as another agent, for every hidden message by id, by context, by attachment, as a reply
//! target, in the unread list, the wait and the push, and counts what leaks.

use amc_testkit::Stored;
use serde_json::{Value, json};

use amc_core::model::Source;
use amc_core::time::now_ms;

use super::harness::{Daemon, attachment, code, ids, msg};

/// A channel with two messages, the second with a file; returns its id, its message ids
/// and the attachment's id (read as the admin).
async fn channel(d: &Daemon, chat: &str) -> (String, Vec<String>, String) {
    let file = d.dir.path().join(format!("{chat}.jpeg"));
    std::fs::write(&file, b"\xff\xd8\xff jpeg").expect("write");
    let mut with_file = msg(&format!("{chat}-2"), &format!("{chat} with a file"), now_ms());
    with_file.attachments = vec![attachment(file.to_str().expect("utf8"), "image/jpeg")];
    let (ch, sent) = d
        .ingest(Source::Imessage, chat, vec![msg(&format!("{chat}-1"), &format!("{chat} hello"), now_ms()), with_file])
        .await;
    let att = d
        .amc
        .store()
        .database()
        .read(|tx| Ok(tx.query_row("SELECT id FROM attachments WHERE message_id = ?1", [&sent[1]], |r| r.get(0))?))
        .expect("attachment");
    (ch, sent, att)
}

fn listed(v: &Value, key: &str) -> Vec<String> {
    v[key].as_array().into_iter().flatten().filter_map(|x| x["id"].as_str().map(str::to_owned)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_shows_an_agent_a_channel_the_person_did_not_open_to_it() {
    let d = Daemon::start().await;
    let (mut a, _) = d.agent("assistant").await;
    let (mut b, b_token) = d.agent("coder").await;
    let (open, open_msgs, _) = channel(&d, "open").await;
    let (only_a, only_a_msgs, only_a_att) = channel(&d, "only-a").await;
    let (none, none_msgs, none_att) = channel(&d, "none").await;
    let (_pending, pending_msgs, pending_att) = channel(&d, "pending").await;
    let (blocked, blocked_msgs, blocked_att) = channel(&d, "blocked").await;
    d.approve(&open, json!({ "history": "all", "send_policy": "auto" })).await;
    let r = d.approve(&only_a, json!({ "history": "all", "agents": ["assistant"], "send_policy": "auto" })).await;
    assert_eq!(r.json()["agents"], json!([{ "id": "assistant", "send_policy": null }]), "{:?}", r.json());
    d.approve(&none, json!({ "history": "all", "agents": [] })).await;
    d.admin().await.post(&format!("/admin/channels/{blocked}/block"), &json!({})).await.expect("block");

    let hidden: Vec<(&str, &String)> = [&only_a_msgs, &none_msgs, &pending_msgs, &blocked_msgs]
        .into_iter()
        .flatten()
        .map(|id| ("message", id))
        .chain([&only_a_att, &none_att, &pending_att, &blocked_att].into_iter().map(|id| ("attachment", id)))
        .collect();
    let hidden_channels = [&only_a, &none, &_pending, &blocked];
    let mut leaks = Vec::new();
    for (kind, id) in &hidden {
        let (path, want) = match *kind {
            "message" => (format!("/messages/{id}"), "MESSAGE_NOT_FOUND"),
            _ => (format!("/attachments/{id}"), "NOT_FOUND"),
        };
        let r = b.get(&path).await.expect("get");
        if r.status.is_success() || code(&r) != want {
            leaks.push(format!("{path}: {}", r.status));
        }
        if *kind == "message" {
            for ch in hidden_channels.iter().chain([&&open]) {
                let r = b.get(&format!("/messages/context?channel_id={ch}&around_message_id={id}")).await.expect("get");
                if r.status.is_success() {
                    leaks.push(format!("context {ch} around {id}"));
                }
            }
            let reply = json!({ "channel_id": open, "text": "re", "reply_to": id });
            let r = b.post("/messages/send", &reply).await.expect("send");
            if r.status.is_success() || code(&r) != "MESSAGE_NOT_FOUND" {
                leaks.push(format!("reply_to {id}: {}", r.status));
            }
        }
    }
    for ch in hidden_channels {
        let r = b.post("/messages/send", &json!({ "channel_id": ch, "text": "hi" })).await.expect("send");
        if r.status.is_success() || code(&r) != "CHANNEL_NOT_FOUND" {
            leaks.push(format!("send to {ch}: {}", r.status));
        }
        let r = b.get(&format!("/messages/unread?channel_id={ch}")).await.expect("unread");
        if !ids(&r.json()).is_empty() {
            leaks.push(format!("unread in {ch}"));
        }
    }
    // Search finds only the open channel's messages, and a hidden channel as a filter finds
    // what an unknown one finds.
    let found = b.get("/messages/search?query=hello&limit=50").await.expect("search").json();
    let found: Vec<String> = found["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| h["message"]["id"].as_str())
        .map(Into::into)
        .collect();
    if found != [open_msgs[0].clone()] {
        leaks.push(format!("search: {found:?}"));
    }
    for ch in hidden_channels {
        let r = b.get(&format!("/messages/search?query=hello&channel_id={ch}")).await.expect("search");
        if r.json()["results"] != json!([]) {
            leaks.push(format!("search in {ch}: {:?}", r.json()));
        }
    }
    let channels = listed(&b.get("/channels").await.expect("channels").json(), "channels");
    if channels != [open.clone()] {
        leaks.push(format!("channels: {channels:?}"));
    }
    let mut unread = ids(&b.get("/messages/unread?limit=100").await.expect("unread").json());
    unread.sort();
    let mut expected = open_msgs.clone();
    expected.sort();
    if unread != expected {
        leaks.push(format!("unread: {unread:?}"));
    }
    // Marking a hidden message read answers like any other id, and marks nothing.
    let all_hidden: Vec<&String> = hidden.iter().filter(|(k, _)| *k == "message").map(|(_, id)| *id).collect();
    let r = b.post("/messages/mark_read", &json!({ "message_ids": all_hidden })).await.expect("mark");
    assert_eq!(r.json()["marked_count"], json!(all_hidden.len()));
    // The push and the wait tell nothing of a hidden channel.
    let first = b.get("/messages/push?timeout_seconds=1").await.expect("push").json();
    b.post("/messages/push/ack", &json!({ "ack": first["ack"] })).await.expect("ack");
    let waiting = d.spawn_get(&b_token, "coder", "/messages/push?timeout_seconds=25");
    d.ingest(Source::Imessage, "only-a", vec![msg("only-a-3", "for the assistant only", now_ms())]).await;
    d.ingest(Source::Imessage, "open", vec![msg("open-3", "for everyone", now_ms())]).await;
    let pushed = waiting.await.expect("join").json();
    let texts: Vec<&str> =
        pushed["items"].as_array().into_iter().flatten().filter_map(|i| i["message"]["text"].as_str()).collect();
    if texts != ["for everyone"] {
        leaks.push(format!("push: {texts:?}"));
    }
    assert_eq!(leaks, Vec::<String>::new(), "{} leaks", leaks.len());

    // The agent the channel is open to sees it, and its own policy lets it send.
    let mine = listed(&a.get("/channels").await.expect("channels").json(), "channels");
    assert!(mine.contains(&only_a) && !mine.contains(&none), "{mine:?}");
    let got = a.get(&format!("/messages/{}", only_a_msgs[0])).await.expect("get");
    assert_eq!(got.status, 200);
    // Opening the channel to the other agent instead takes effect on the next request; what
    // the other agent "marked read" while it was hidden is unread for it now.
    let r = d.admin().await.post(&format!("/admin/channels/{only_a}/agents"), &json!({ "agents": ["coder"] })).await;
    assert_eq!(r.expect("set").status, 200);
    assert_eq!(code(&a.get(&format!("/messages/{}", only_a_msgs[0])).await.expect("get")), "MESSAGE_NOT_FOUND");
    let unread = ids(&b.get(&format!("/messages/unread?channel_id={only_a}")).await.expect("unread").json());
    assert_eq!(unread.len(), 3, "{unread:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_s_own_send_policy_overrides_the_channel_s() {
    let d = Daemon::start().await;
    let (mut assistant, _) = d.agent("assistant").await;
    let (mut coder, _) = d.agent("coder").await;
    let (ch, _, _) = channel(&d, "family").await;
    d.approve(&ch, json!({ "history": "all", "send_policy": "review", "agents": ["assistant", "coder"] })).await;
    let mut admin = d.admin().await;
    let r =
        admin.post(&format!("/admin/channels/{ch}/agents/assistant/policy"), &json!({ "send_policy": "auto" })).await;
    let v = r.expect("policy").json();
    assert_eq!(
        v["agents"],
        json!([{ "id": "assistant", "send_policy": "auto" }, { "id": "coder", "send_policy": null }])
    );
    let sent = assistant.post("/messages/send", &json!({ "channel_id": ch, "text": "on my way" })).await.expect("send");
    assert_eq!(sent.json()["status"], "sent", "{:?}", sent.json());
    let held = coder.post("/messages/send", &json!({ "channel_id": ch, "text": "build passed" })).await.expect("send");
    assert_eq!(held.json()["status"], "pending_review", "{:?}", held.json());
    let seen = assistant.get("/channels").await.expect("channels").json();
    assert_eq!(seen["channels"][0]["send_policy"], "auto");
    // An agent the channel is not listed for has no policy of its own there.
    let r = admin.post(&format!("/admin/channels/{ch}/agents/nobody/policy"), &json!({ "send_policy": "auto" })).await;
    assert_eq!(code(&r.expect("policy")), "NOT_FOUND");
    let r = admin.post(&format!("/admin/channels/{ch}/agents"), &json!({ "agents": ["ghost"] })).await;
    assert_eq!(code(&r.expect("agents")), "NOT_FOUND");
    let r = admin.post(&format!("/admin/channels/{ch}/agents"), &json!({ "agents": [], "all": true })).await;
    assert_eq!(code(&r.expect("agents")), "VALIDATION_FAILED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taking_a_channel_from_an_agent_ends_its_wait_on_it() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("assistant").await;
    d.agent("coder").await;
    let (ch, _, _) = channel(&d, "family").await;
    d.approve(&ch, json!({ "history": "from_now", "agents": ["assistant"] })).await;
    let before = d.amc.events().listeners();
    let waiting =
        d.spawn_get(&token, "assistant", &format!("/messages/unread/wait?channel_id={ch}&timeout_seconds=25"));
    let events = d.amc.events().clone();
    amc_testkit::eventually("the wait to listen", || async { (events.listeners() > before).then_some(()) }).await;
    let started = std::time::Instant::now();
    let r = d.admin().await.post(&format!("/admin/channels/{ch}/agents"), &json!({ "agents": ["coder"] })).await;
    assert_eq!(r.expect("set").status, 200);
    let ended = waiting.await.expect("join");
    assert_eq!(ended.status, 200);
    assert_eq!(ids(&ended.json()), Vec::<String>::new());
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "ended by the change, not the timeout");
}
