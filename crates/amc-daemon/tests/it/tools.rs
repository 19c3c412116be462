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
    // Told, not yet recorded: not told again after it; the later batch's ack records it.
    let path = format!("/messages/push?timeout_seconds=1&session=s1&after={}", told["ack"].as_str().expect("ack"));
    let later = agent.get(&path).await.expect("push").json();
    assert_eq!(later["items"], json!([]));
    let ack = agent.post("/messages/push/ack", &json!({ "ack": later["ack"] })).await.expect("ack");
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

/// The rows an agent's tool requests keep, and the bytes of their text; and the pages the
/// whole database uses.
fn tool_request_storage(d: &Daemon, agent: &str) -> (i64, i64, i64) {
    d.amc
        .database()
        .read(|tx| {
            let (rows, bytes) = tx.query_row(
                "SELECT count(*), coalesce(sum(length(CAST(tool_name AS BLOB)) + length(CAST(description AS BLOB)) \
                 + length(CAST(input_preview AS BLOB))), 0) FROM tool_requests WHERE agent_id = ?1",
                [agent],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let pages: i64 = tx.query_row(
                "SELECT (SELECT page_count FROM pragma_page_count()) \
                 - (SELECT freelist_count FROM pragma_freelist_count())",
                [],
                |r| r.get(0),
            )?;
            Ok((rows, bytes, pages))
        })
        .expect("read")
}

/// Ending the session and asking again used to store 50 more requests each time: 250
/// requests of 80 KB added 41 MB in a second. Now one token asking without end keeps at
/// most 500 requests and 8 MiB of their text, and the database stops growing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_agent_asking_without_end_keeps_a_bounded_store() {
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    // 20,000 characters of four bytes each: the largest input a request may carry.
    let heavy = |session: &str, i: usize| {
        json!({ "session": session, "request_id": format!("r{i}"), "tool_name": "Bash",
                "description": "d".repeat(2_000), "input_preview": "😀".repeat(20_000) })
    };
    let mut pages_at = Vec::new();
    for round in 0..24 {
        let session = format!("s{round}");
        for i in 0..50 {
            let r = agent.post("/tool-requests", &heavy(&session, i)).await.expect("ask");
            assert_eq!(r.status, 201, "{:?}", r.json());
        }
        let r = agent.post("/tool-requests/end", &json!({ "session": session })).await.expect("end");
        assert!(r.status.is_success());
        if round == 11 || round == 23 {
            pages_at.push(tool_request_storage(&d, "claude").2);
        }
    }
    let (rows, bytes, _) = tool_request_storage(&d, "claude");
    eprintln!("tool requests: 1,200 asked; {rows} kept, {bytes} bytes; database pages {pages_at:?}");
    assert!(rows <= 500 && bytes <= 8 * 1024 * 1024, "{rows} requests, {bytes} bytes kept");
    // 1,200 requests of 82 KB asked (98 MB); the second 600 reuse the first 600's pages.
    let growth = pages_at[1] - pages_at[0];
    assert!(growth * 4096 < 1024 * 1024, "the database grew by {growth} pages ({pages_at:?})");
    // Still answered: the newest are kept, the oldest answered ones went.
    let kept = d.admin().await.get("/admin/tool-requests?limit=500").await.expect("log").json();
    let log = kept["tool_requests"].as_array().expect("log");
    assert_eq!(log[0]["request_id"], "r49");
    assert!(log.iter().all(|r| r["status"] == "gone"), "all ended with their sessions");
}
