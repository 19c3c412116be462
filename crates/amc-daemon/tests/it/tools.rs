//! Tool approvals: a Claude Code session's request to use a tool (relayed by `amc mcp` to
//! `POST /tool-requests`), answered only by the person, told back through the session's
//! push, and kept in the log of tool decisions.

use serde_json::{Value, json};

use super::harness::{Daemon, code};

fn ask(session: &str, request_id: &str) -> Value {
    json!({ "session": session, "request_id": request_id, "tool_name": "Bash",
            "description": "Run a shell command", "input_preview": "rm -rf build" })
}

async fn pending(d: &Daemon) -> Vec<Value> {
    let r = d.admin().await.get("/admin/tool-requests?status=pending").await.expect("list");
    r.json()["tool_requests"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_person_answers_and_only_the_asking_session_is_told_once() {
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let asked = agent.post("/tool-requests", &ask("s1", "tbxkq")).await.expect("ask");
    assert_eq!(asked.status, 201, "{:?}", asked.json());
    let id = asked.json()["id"].as_str().expect("id").to_owned();
    // Asking again is the same request.
    let again = agent.post("/tool-requests", &ask("s1", "tbxkq")).await.expect("ask");
    assert_eq!(again.json()["id"].as_str(), Some(id.as_str()));
    assert_eq!(pending(&d).await.len(), 1);
    assert_eq!(d.amc.waiting().await.expect("waiting").tools, 1);

    // The agent's own token cannot answer, whatever route it tries.
    for verb in ["allow", "deny"] {
        let r = agent.post(&format!("/admin/tool-requests/{id}/{verb}"), &json!({})).await.expect("post");
        assert_eq!((r.status.as_u16(), code(&r)), (401, "UNAUTHORIZED".to_owned()));
    }
    let mut admin = d.admin().await;
    let allowed = admin.post(&format!("/admin/tool-requests/{id}/allow"), &json!({})).await.expect("allow");
    assert_eq!(allowed.json()["status"], "allowed", "{:?}", allowed.json());
    let twice = admin.post(&format!("/admin/tool-requests/{id}/deny"), &json!({})).await.expect("deny");
    assert_eq!((twice.status.as_u16(), code(&twice)), (409, "CONFLICT".to_owned()));
    let unknown = admin.post("/admin/tool-requests/tr_nope/allow", &json!({})).await.expect("allow");
    assert_eq!(code(&unknown), "NOT_FOUND");

    // Another session of the same agent is not told; the asking one is, once.
    let other = agent.get("/messages/push?timeout_seconds=1&session=s2").await.expect("push").json();
    assert_eq!(other["items"], json!([]));
    let told = agent.get("/messages/push?timeout_seconds=1&session=s1").await.expect("push").json();
    assert_eq!(told["items"], json!([{ "kind": "permission", "request_id": "tbxkq", "behavior": "allow" }]));
    let ack = agent.post("/messages/push/ack", &json!({ "ack": told["ack"] })).await.expect("ack");
    assert_eq!(ack.status, 200);
    let after = agent.get("/messages/push?timeout_seconds=1&session=s1").await.expect("push").json();
    assert_eq!(after["items"], json!([]));
    drop(token);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_wakes_the_sessions_waiting_push_and_an_ended_session_s_requests_go() {
    let d = Daemon::start().await;
    let (mut agent, token) = d.agent("claude").await;
    let id = agent.post("/tool-requests", &ask("s1", "tbxkq")).await.expect("ask").json()["id"]
        .as_str()
        .expect("id")
        .to_owned();
    agent.post("/tool-requests", &ask("s1", "mzzpq")).await.expect("ask");
    let before = d.amc.events().listeners();
    let waiting = d.spawn_get(&token, "claude", "/messages/push?timeout_seconds=25&session=s1");
    let events = d.amc.events().clone();
    amc_testkit::eventually("the push to listen", || async { (events.listeners() > before).then_some(()) }).await;
    d.admin().await.post(&format!("/admin/tool-requests/{id}/deny"), &json!({})).await.expect("deny");
    let told = waiting.await.expect("join").json();
    assert_eq!(told["items"], json!([{ "kind": "permission", "request_id": "tbxkq", "behavior": "deny" }]));

    // The session ends: what it still asked leaves the tray, and stays in the log.
    let ended = agent.post("/tool-requests/end", &json!({ "session": "s1" })).await.expect("end");
    assert_eq!(ended.status, 200);
    assert_eq!(pending(&d).await, Vec::<Value>::new());
    let log = d.admin().await.get("/admin/tool-requests").await.expect("log").json();
    let statuses: Vec<(&str, &str)> = log["tool_requests"]
        .as_array()
        .expect("log")
        .iter()
        .map(|t| (t["request_id"].as_str().unwrap_or(""), t["status"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(statuses, [("mzzpq", "gone"), ("tbxkq", "denied")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_the_envelope_and_a_flood_is_capped() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let long = "x".repeat(20_001);
    let bad = [
        json!({ "session": "a b", "request_id": "tbxkq", "tool_name": "Bash", "description": "", "input_preview": "" }),
        json!({ "session": "s", "request_id": "", "tool_name": "Bash", "description": "", "input_preview": "" }),
        json!({ "session": "s", "request_id": "x", "tool_name": " ", "description": "", "input_preview": "" }),
        json!({ "session": "s", "request_id": "x", "tool_name": "Bash", "description": "a\u{0}b", "input_preview": "" }),
        json!({ "session": "s", "request_id": "x", "tool_name": "Bash", "description": "", "input_preview": long }),
        json!({ "session": "s", "request_id": "x", "tool_name": "Bash", "description": "", "input_preview": "", "behavior": "allow" }),
        json!({ "session": "s", "request_id": "x" }),
    ];
    for body in bad {
        let r = agent.post("/tool-requests", &body).await.expect("ask");
        assert_eq!((r.status.as_u16(), code(&r)), (422, "VALIDATION_FAILED".to_owned()), "{body}");
    }
    for q in ["session=a%20b", "session="] {
        let r = agent.get(&format!("/messages/push?timeout_seconds=1&{q}")).await.expect("push");
        assert_eq!(code(&r), "VALIDATION_FAILED", "{q}");
    }
    let r = d.admin().await.get("/admin/tool-requests?status=maybe").await.expect("list");
    assert_eq!(code(&r), "VALIDATION_FAILED");
    // One agent cannot bury the person under requests.
    for i in 0..50 {
        let r = agent.post("/tool-requests", &ask("s1", &format!("r{i}"))).await.expect("ask");
        assert_eq!(r.status, 201);
    }
    let r = agent.post("/tool-requests", &ask("s1", "one-more")).await.expect("ask");
    assert_eq!((r.status.as_u16(), code(&r)), (429, "RATE_LIMITED".to_owned()));
}
