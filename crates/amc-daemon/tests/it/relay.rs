//! The relay toolset on `/mcp/relay`: the contract's `tools/list`, gapless sequence
//! numbers under concurrency, cursors, and waits released by disconnects.

use std::time::Duration;

use amc_client::Connection;
use serde_json::{Value, json};

use super::harness::Daemon;

const CONTRACT: &str = include_str!("../../../../tests/fixtures/spec/relay-mcp-tools.json");

async fn relay_conn(d: &Daemon, token: &str) -> Connection {
    d.anon().await.with_bearer(token)
}

/// A JSON-RPC request to `/mcp/relay`; returns the `result`.
async fn rpc(c: &mut Connection, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string().into_bytes();
    let headers = [("accept", "application/json, text/event-stream"), ("mcp-protocol-version", "2025-11-25")];
    let r = c.request(hyper::Method::POST, "/mcp/relay", &headers, Some(body)).await.expect("post");
    assert_eq!(r.status, 200, "{:?}", r.json());
    r.json()["result"].clone()
}

async fn tool(c: &mut Connection, name: &str, args: Value) -> Value {
    let result = rpc(c, "tools/call", json!({ "name": name, "arguments": args })).await;
    assert_eq!(result["isError"], false, "{name}: {result}");
    result["structuredContent"].clone()
}

async fn tool_err(c: &mut Connection, name: &str, args: Value) -> String {
    let result = rpc(c, "tools/call", json!({ "name": name, "arguments": args })).await;
    assert_eq!(result["isError"], true, "{name}: {result}");
    result["structuredContent"]["error"]["code"].as_str().expect("code").to_owned()
}

/// Waits until the count of relay waits in the daemon satisfies `done` (at most 5 s). The
/// count changes with no event of its own, so it is read again each millisecond.
async fn waiters_until(d: &Daemon, what: &str, done: impl Fn(usize) -> bool) {
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !done(d.relay.waiters()) {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting until {what}");
        tick.tick().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_is_the_contract_plus_additive_tools() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("a").await;
    let mut c = relay_conn(&d, &token).await;
    let listed = rpc(&mut c, "tools/list", json!({})).await;
    let contract: Value = serde_json::from_str(CONTRACT).expect("contract");
    let tools = listed["tools"].as_array().expect("tools");
    for expected in contract["tools"].as_array().expect("tools") {
        let got =
            tools.iter().find(|t| t["name"] == expected["name"]).unwrap_or_else(|| panic!("{}", expected["name"]));
        assert_eq!(got["inputSchema"], expected["inputSchema"], "{}", expected["name"]);
        assert_eq!(got["annotations"], expected["annotations"], "{}", expected["name"]);
        let description = got["description"].as_str().expect("description");
        assert!(description.starts_with(expected["description"].as_str().expect("d")), "descriptions only grow");
        assert!(got["outputSchema"].is_object(), "{} declares an output schema", expected["name"]);
    }
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names.len(), 9, "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_posts_get_gapless_sequence_numbers() {
    let d = Daemon::start().await;
    let (_, owner) = d.agent("owner").await;
    let (_, writer) = d.agent("writer").await;
    let mut o = relay_conn(&d, &owner).await;
    let t = tool(&mut o, "create_thread", json!({ "title": "load", "idempotency_key": "t1" })).await;
    let thread = t["thread_id"].as_str().expect("id").to_owned();
    let inv = tool(&mut o, "create_thread_invite", json!({ "thread_id": thread, "kind": "write" })).await;
    let mut w = relay_conn(&d, &writer).await;
    tool(&mut w, "join_thread", json!({ "thread_id": thread, "access_token": inv["access_token"] })).await;

    let mut tasks = Vec::new();
    for i in 0..40 {
        let (socket, token, thread) =
            (d.socket(), if i % 2 == 0 { owner.clone() } else { writer.clone() }, thread.clone());
        tasks.push(tokio::spawn(async move {
            let mut c = Connection::connect(&socket).await.expect("connect").with_bearer(&token);
            let r = tool(
                &mut c,
                "send_message",
                json!({ "thread_id": thread, "body": format!("m{i}"), "idempotency_key": format!("k{i}") }),
            )
            .await;
            r["seq"].as_i64().expect("seq")
        }));
    }
    let mut seqs = Vec::new();
    for t in tasks {
        seqs.push(t.await.expect("join"));
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=40).collect::<Vec<i64>>());
    let page = tool(&mut o, "read_messages", json!({ "thread_id": thread, "limit": 100 })).await;
    assert_eq!(page["messages"].as_array().map(Vec::len), Some(40));
    assert_eq!(page["latest_seq"], 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_title_is_one_line_without_control_characters() {
    // A title is printed by whoever lists threads: an escape or a carriage return in it
    // could only rewrite what they see. Post bodies are refused the same way.
    let d = Daemon::start().await;
    let (_, token) = d.agent("a").await;
    let mut c = relay_conn(&d, &token).await;
    for (i, title) in ["plans\x1b[2Kfine", "a\rb", "ring\x07", "c1\u{9b}31m", "two\nlines"].into_iter().enumerate() {
        let args = json!({ "title": title, "idempotency_key": format!("k{i}") });
        assert_eq!(tool_err(&mut c, "create_thread", args).await, "VALIDATION_FAILED", "{title:?}");
    }
    let t = tool(&mut c, "create_thread", json!({ "title": "Plans \u{202e}ok", "idempotency_key": "fine" })).await;
    assert_eq!(t["title"], "Plans \u{202e}ok", "a bidi control is shown escaped where printed, not refused");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_disconnects_releases_its_wait() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("a").await;
    let mut c = relay_conn(&d, &token).await;
    let t = tool(&mut c, "create_thread", json!({ "title": "quiet", "idempotency_key": "q" })).await;
    let thread = t["thread_id"].as_str().expect("id").to_owned();
    let page = tool(&mut c, "read_messages", json!({ "thread_id": thread })).await;
    let cursor = page["next_cursor"].as_str().expect("cursor").to_owned();

    let socket = d.socket();
    let waiting = tokio::spawn(async move {
        let mut w = Connection::connect(&socket).await.expect("connect").with_bearer(&token);
        tool(&mut w, "wait_for_messages", json!({ "thread_id": thread, "after": cursor, "timeout_seconds": 25 })).await
    });
    waiters_until(&d, "the wait started", |n| n == 1).await;
    waiting.abort(); // the client goes away
    waiters_until(&d, "the wait ended with its client", |n| n == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_never_grant_access_and_forgeries_are_refused() {
    let d = Daemon::start().await;
    let (_, alice) = d.agent("alice").await;
    let (_, mallory) = d.agent("mallory").await;
    let mut a = relay_conn(&d, &alice).await;
    let mut m = relay_conn(&d, &mallory).await;
    let t1 = tool(&mut a, "create_thread", json!({ "title": "secret plans", "idempotency_key": "1" })).await;
    let t2 = tool(&mut a, "create_thread", json!({ "title": "other", "idempotency_key": "2" })).await;
    let (t1, t2) = (t1["thread_id"].as_str().expect("id").to_owned(), t2["thread_id"].as_str().expect("id").to_owned());
    tool(&mut a, "send_message", json!({ "thread_id": t1, "body": "the launch code is 1234", "idempotency_key": "m" }))
        .await;
    let page = tool(&mut a, "read_messages", json!({ "thread_id": t1 })).await;
    let cursor = page["next_cursor"].as_str().expect("cursor").to_owned();

    // Mallory holds a valid cursor, but no access.
    assert_eq!(
        tool_err(&mut m, "read_messages", json!({ "thread_id": t1, "after": cursor })).await,
        "THREAD_NOT_FOUND"
    );
    assert_eq!(
        tool_err(&mut m, "wait_for_messages", json!({ "thread_id": t1, "after": cursor, "timeout_seconds": 0 })).await,
        "THREAD_NOT_FOUND"
    );
    // A cursor of one thread is refused on another; altered ones too.
    assert_eq!(tool_err(&mut a, "read_messages", json!({ "thread_id": t2, "after": cursor })).await, "CURSOR_INVALID");
    let mut altered = cursor.clone().into_bytes();
    let i = altered.len() / 2;
    altered[i] = if altered[i] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).expect("utf8");
    assert_eq!(tool_err(&mut a, "read_messages", json!({ "thread_id": t1, "after": altered })).await, "CURSOR_INVALID");
    assert_eq!(
        tool_err(&mut a, "read_messages", json!({ "thread_id": t1, "after": "v0.x.y" })).await,
        "CURSOR_INVALID"
    );
    // Search never shows Mallory a thread she cannot see.
    let hits = tool(&mut m, "search_threads", json!({ "query": "launch code secret" })).await;
    assert_eq!(hits["hits"], json!([]));
    let hits = tool(&mut a, "search_threads", json!({ "query": "launch" })).await;
    assert_eq!(hits["hits"][0]["thread_id"], t1.as_str());
    assert_eq!(hits["hits"][0]["seq"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_sees_every_message_once_in_order_while_two_writers_race() {
    let d = Daemon::start().await;
    let (_, owner) = d.agent("owner").await;
    let (_, writer) = d.agent("writer").await;
    let mut o = relay_conn(&d, &owner).await;
    let thread = tool(&mut o, "create_thread", json!({ "title": "race", "idempotency_key": "r" })).await["thread_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let inv = tool(&mut o, "create_thread_invite", json!({ "thread_id": thread, "kind": "write" })).await;
    let mut w = relay_conn(&d, &writer).await;
    tool(&mut w, "join_thread", json!({ "thread_id": thread, "access_token": inv["access_token"] })).await;
    let start = tool(&mut o, "read_messages", json!({ "thread_id": thread })).await["next_cursor"].clone();

    let total = 120;
    let follower = {
        let (socket, token, thread) = (d.socket(), owner.clone(), thread.clone());
        tokio::spawn(async move {
            let mut c = Connection::connect(&socket).await.expect("connect").with_bearer(&token);
            let (mut cursor, mut seen) = (start, Vec::new());
            while seen.len() < total {
                let page = tool(
                    &mut c,
                    "wait_for_messages",
                    json!({ "thread_id": thread, "after": cursor, "timeout_seconds": 5, "limit": 7 }),
                )
                .await;
                seen.extend(
                    page["messages"].as_array().expect("messages").iter().map(|m| m["seq"].as_i64().expect("seq")),
                );
                cursor = page["next_cursor"].clone();
            }
            seen
        })
    };
    let mut writers = Vec::new();
    for (who, token) in [("o", owner.clone()), ("w", writer.clone())] {
        let (socket, thread) = (d.socket(), thread.clone());
        writers.push(tokio::spawn(async move {
            let mut c = Connection::connect(&socket).await.expect("connect").with_bearer(&token);
            for i in 0..total / 2 {
                tool(
                    &mut c,
                    "send_message",
                    json!({ "thread_id": thread, "body": format!("{who}{i}"), "idempotency_key": format!("{who}{i}") }),
                )
                .await;
            }
        }));
    }
    for wtask in writers {
        wtask.await.expect("writer");
    }
    let seen = tokio::time::timeout(Duration::from_secs(30), follower).await.expect("follower done").expect("join");
    assert_eq!(seen, (1..=total as i64).collect::<Vec<_>>(), "every message once, in order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_stay_under_32_kib_however_the_bodies_are_shaped() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("a").await;
    let mut c = relay_conn(&d, &token).await;
    let thread = tool(&mut c, "create_thread", json!({ "title": "budget", "idempotency_key": "b" })).await["thread_id"]
        .as_str()
        .expect("id")
        .to_owned();
    for i in 0..100 {
        let body = format!("{i:03}{}", "\"quoted\" and \\ slashes ".repeat(5));
        tool(&mut c, "send_message", json!({ "thread_id": thread, "body": body, "idempotency_key": format!("k{i}") }))
            .await;
    }
    let page = tool(&mut c, "read_messages", json!({ "thread_id": thread, "limit": 100 })).await;
    let size = serde_json::to_string_pretty(&page).expect("json").len();
    let n = page["messages"].as_array().map(Vec::len).unwrap_or(0);
    assert!(size <= 32 * 1024, "{size} bytes");
    assert!(n > 1 && n < 100, "{n} messages");
    // The next page starts right after.
    let next =
        tool(&mut c, "read_messages", json!({ "thread_id": thread, "after": page["next_cursor"], "limit": 100 })).await;
    assert_eq!(next["messages"][0]["seq"], n as i64 + 1);
}

/// Revoking an agent ends its waits at once with UNAUTHORIZED: a message posted after the
/// revocation never reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_an_agent_ends_its_waits_at_once() {
    let d = Daemon::start().await;
    let (_, owner) = d.agent("owner").await;
    let (_, doomed) = d.agent("doomed").await;
    let (_, bystander) = d.agent("bystander").await;
    let mut o = relay_conn(&d, &owner).await;
    let t = tool(&mut o, "create_thread", json!({ "title": "plans", "idempotency_key": "p" })).await;
    let thread = t["thread_id"].as_str().expect("id").to_owned();
    let mut cursors = Vec::new();
    for token in [&doomed, &bystander] {
        let inv = tool(&mut o, "create_thread_invite", json!({ "thread_id": thread, "kind": "read" })).await;
        let mut c = relay_conn(&d, token).await;
        tool(&mut c, "join_thread", json!({ "thread_id": thread, "access_token": inv["access_token"] })).await;
        let page = tool(&mut c, "read_messages", json!({ "thread_id": thread })).await;
        cursors.push(page["next_cursor"].as_str().expect("cursor").to_owned());
    }
    let wait = |token: String, cursor: String| {
        let (socket, thread) = (d.socket(), thread.clone());
        tokio::spawn(async move {
            let mut c = Connection::connect(&socket).await.expect("connect").with_bearer(&token);
            let args = json!({ "thread_id": thread, "after": cursor, "timeout_seconds": 25 });
            rpc(&mut c, "tools/call", json!({ "name": "wait_for_messages", "arguments": args })).await
        })
    };
    let doomed_wait = wait(doomed.clone(), cursors[0].clone());
    let bystander_wait = wait(bystander.clone(), cursors[1].clone());
    waiters_until(&d, "both waits started", |n| n == 2).await;
    let started = tokio::time::Instant::now();
    let r = d.admin().await.post("/admin/agents/doomed/revoke", &json!({})).await.expect("revoke");
    assert_eq!(r.status, 200, "{:?}", r.json());
    tool(
        &mut o,
        "send_message",
        json!({ "thread_id": thread, "body": "after the revocation", "idempotency_key": "a" }),
    )
    .await;
    let result = doomed_wait.await.expect("join");
    assert!(started.elapsed() < Duration::from_secs(20), "the wait ran to its timeout");
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["error"]["code"], "UNAUTHORIZED", "{result}");
    assert!(!result.to_string().contains("after the revocation"), "{result}");
    // Another agent's wait goes on and gets the message.
    let other = bystander_wait.await.expect("join");
    assert_eq!(other["structuredContent"]["messages"][0]["body"], "after the revocation", "{other}");
}

/// Stopping AMC while a wait is in flight answers that wait in JSON-RPC, not in text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_in_flight_at_shutdown_gets_a_json_rpc_answer() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("a").await;
    let mut c = relay_conn(&d, &token).await;
    let t = tool(&mut c, "create_thread", json!({ "title": "quiet", "idempotency_key": "q" })).await;
    let thread = t["thread_id"].as_str().expect("id").to_owned();
    let page = tool(&mut c, "read_messages", json!({ "thread_id": thread })).await;
    let cursor = page["next_cursor"].as_str().expect("cursor").to_owned();
    let socket = d.socket();
    let waiting = tokio::spawn(async move {
        let mut w = Connection::connect(&socket).await.expect("connect").with_bearer(&token);
        let args = json!({ "thread_id": thread, "after": cursor, "timeout_seconds": 25 });
        let body = json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call",
                           "params": { "name": "wait_for_messages", "arguments": args } });
        let headers = [("accept", "application/json, text/event-stream"), ("mcp-protocol-version", "2025-11-25")];
        w.request(hyper::Method::POST, "/mcp/relay", &headers, Some(body.to_string().into_bytes())).await
    });
    waiters_until(&d, "the wait started", |n| n == 1).await;
    d.stop().await;
    let r = waiting.await.expect("join").expect("an answer before the connection closed");
    let v = r.json();
    assert_eq!(v["jsonrpc"], "2.0", "{} {:?}", r.status, r.body);
    assert_eq!(v["id"], 9, "{v}");
    assert!(v["result"].is_object() || v["error"]["data"]["error"]["code"].is_string(), "{v}");
}

/// The whole answer to a JSON-RPC request to `/mcp/relay`: status, content type, body;
/// and whether the daemon answers such a request itself (`amc_mcp::direct`), judged on
/// the headers and body `amc_client` sends.
async fn answer(c: &mut Connection, id: Value, params: Value) -> ((u16, Option<String>, Value), bool) {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }).to_string();
    let headers = [("accept", "application/json, text/event-stream"), ("mcp-protocol-version", "2025-11-25")];
    let mut sent = http::HeaderMap::new();
    for (k, v) in [("host", "localhost"), ("authorization", "Bearer t"), ("content-type", "application/json")]
        .iter()
        .chain(&headers)
    {
        sent.append(*k, http::HeaderValue::from_static(v));
    }
    let direct = amc_mcp::direct::DirectCall::of(&sent, body.as_bytes()).is_some();
    let r = c.request(hyper::Method::POST, "/mcp/relay", &headers, Some(body.into_bytes())).await.expect("post");
    let content_type = r.headers.get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
    ((r.status.as_u16(), content_type, r.json()), direct)
}

/// A relay call the daemon answers itself (see `amc_mcp::direct`) is answered exactly as
/// rmcp answers it: the same request with an empty `_meta` goes through rmcp's
/// per-request service, and the two answers agree in status, media type and every byte
/// of meaning, for results, tool errors and refused arguments alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_calls_answered_directly_are_what_rmcp_answers() {
    let d = Daemon::start().await;
    let (_, owner) = d.agent("owner").await;
    let (_, stranger) = d.agent("stranger").await;
    let mut o = relay_conn(&d, &owner).await;
    let t = tool(&mut o, "create_thread", json!({ "title": "same answers", "idempotency_key": "s" })).await;
    let thread = t["thread_id"].as_str().expect("id").to_owned();
    for (i, body) in ["the first", "the second <b>with</b> \"quotes\" and é"].iter().enumerate() {
        tool(&mut o, "send_message", json!({ "thread_id": thread, "body": body, "idempotency_key": format!("m{i}") }))
            .await;
    }
    let mut s = relay_conn(&d, &stranger).await;
    let calls = [
        (false, json!("read-all"), json!({ "name": "read_messages", "arguments": { "thread_id": thread } })),
        (false, json!(1), json!({ "name": "read_messages", "arguments": { "thread_id": thread, "limit": 1 } })),
        (false, json!(2), json!({ "name": "wait_for_messages", "arguments": { "thread_id": thread, "after": "" } })),
        (false, json!(3), json!({ "name": "list_threads" })),
        (false, json!(33), json!({ "name": "list_threads", "arguments": null })),
        (false, json!(4), json!({ "name": "search_threads", "arguments": { "query": "quotes" } })),
        (false, json!(5), json!({ "name": "read_messages", "arguments": { "thread_id": thread, "after": "forged" } })),
        (false, json!(6), json!({ "name": "read_messages", "arguments": { "thread_id": thread, "limit": 0 } })),
        (false, json!(7), json!({ "name": "read_messages", "arguments": { "thread": thread } })),
        (false, json!(8), json!({ "name": "read_messages", "arguments": {} })),
        (true, json!(9), json!({ "name": "read_messages", "arguments": { "thread_id": thread } })),
        (
            true,
            json!(10),
            json!({ "name": "send_message",
            "arguments": { "thread_id": thread, "body": "x", "idempotency_key": "k" } }),
        ),
    ];
    let mut errors = 0;
    for (as_stranger, id, params) in calls {
        let c = if as_stranger { &mut s } else { &mut o };
        let (direct, answered_directly) = answer(c, id.clone(), params.clone()).await;
        let mut through_rmcp = params.clone();
        through_rmcp["_meta"] = json!({});
        let (rmcp, not_by_rmcp) = answer(c, id, through_rmcp).await;
        assert!(answered_directly && !not_by_rmcp, "one each way: {params}");
        assert_eq!(direct, rmcp, "{params}");
        assert_eq!(direct.0, 200, "{params}");
        errors += usize::from(direct.2["result"]["isError"] == true);
    }
    assert!(errors >= 5, "the errors are compared too: {errors}");
}

/// One request to `/mcp/relay` written by hand, each header as given (none added), on a
/// connection of its own: status, media type and body as JSON.
async fn answer_raw(d: &Daemon, token: &str, headers: &[(&str, &str)], body: &str) -> (u16, Option<String>, Value) {
    let mut head = format!("POST /mcp/relay HTTP/1.1\r\nauthorization: Bearer {token}\r\nconnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    let within = Duration::from_secs(10);
    let (a, _) = super::raw::exchange(super::raw::open(d, false).await, head.into_bytes(), within).await;
    let a = a.unwrap_or_else(|e| panic!("{e}: {headers:?}"));
    let v = serde_json::from_slice(&a.body).unwrap_or_else(|_| json!(String::from_utf8_lossy(&a.body)));
    (a.status, a.header("content-type").map(str::to_owned), v)
}

/// The daemon answers a relay call itself only where rmcp would take the request as it
/// is (see `amc_mcp::direct`), which it judges from the headers by rmcp's rules. Those
/// rules are checked here against rmcp itself, on the headers clients send and near
/// misses of each: every form of Host, Accept, Content-Type, protocol version, Origin and
/// session, one at a time and in 300 mixes, is sent once as it is and once with an empty
/// `_meta` (which only rmcp answers), and the two answers must agree in status, media
/// type and body, refusals included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_answered_directly_are_those_rmcp_takes() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("owner").await;
    let mut o = relay_conn(&d, &token).await;
    let t = tool(&mut o, "create_thread", json!({ "title": "headers", "idempotency_key": "h" })).await;
    let thread = t["thread_id"].as_str().expect("id").to_owned();
    tool(&mut o, "send_message", json!({ "thread_id": thread, "body": "one", "idempotency_key": "m" })).await;
    // Each dimension's forms; the first is what `amc_client` and the SDKs send, and an
    // empty value leaves the header out.
    let dimensions: [(&str, &[&str]); 6] = [
        ("host", &["localhost", "localhost:8080", "127.0.0.1", "[::1]:9", "LocalHost", "evil.example", ""]),
        (
            "accept",
            &[
                "application/json, text/event-stream",
                "text/event-stream, application/json",
                "application/json,text/event-stream",
                "Application/JSON, Text/Event-Stream",
                "application/json",
                "text/event-stream",
                "*/*",
                "application/json, text/event-stream;q=0",
                "application/*, text/*",
                "",
            ],
        ),
        (
            "content-type",
            &[
                "application/json",
                "application/json; charset=utf-8",
                "APPLICATION/JSON",
                "application/json-patch+json",
                "text/plain",
                "",
            ],
        ),
        (
            "mcp-protocol-version",
            &["2025-11-25", "2024-11-05", "2025-03-26", "2025-06-18", "2026-07-28", "2099-01-01", "latest", ""],
        ),
        ("origin", &["", "http://localhost:6274", "http://evil.example"]),
        ("mcp-session-id", &["", "s-1"]),
    ];
    let mut mixes: Vec<Vec<usize>> = Vec::new();
    for (at, (_, forms)) in dimensions.iter().enumerate() {
        for form in 0..forms.len() {
            let mut mix = vec![0; dimensions.len()];
            mix[at] = form;
            mixes.push(mix);
        }
    }
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..300 {
        mixes.push(
            dimensions
                .iter()
                .map(|(_, forms)| {
                    seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    (seed >> 33) as usize % forms.len()
                })
                .collect(),
        );
    }
    let call = json!({ "name": "read_messages", "arguments": { "thread_id": thread } });
    let (mut direct, mut refused) = (0, 0);
    for mix in mixes {
        let headers: Vec<(&str, &str)> = dimensions
            .iter()
            .zip(&mix)
            .map(|((name, forms), &form)| (*name, forms[form]))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        let body = |params: &Value| json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params });
        let mut through_rmcp = call.clone();
        through_rmcp["_meta"] = json!({});
        let as_is = answer_raw(&d, &token, &headers, &body(&call).to_string()).await;
        let by_rmcp = answer_raw(&d, &token, &headers, &body(&through_rmcp).to_string()).await;
        assert_eq!(as_is, by_rmcp, "{headers:?}");
        let mut sent = http::HeaderMap::new();
        for (k, v) in &headers {
            sent.append(*k, http::HeaderValue::from_str(v).expect("value"));
        }
        direct += usize::from(amc_mcp::direct::DirectCall::of(&sent, body(&call).to_string().as_bytes()).is_some());
        refused += usize::from(as_is.0 != 200);
    }
    assert!(direct >= 20, "the daemon's own path is taken often enough to be judged: {direct}");
    assert!(refused >= 20, "refusals are compared too: {refused}");
}
