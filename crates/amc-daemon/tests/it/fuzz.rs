//! A fuzzing harness that stays: seeded random hostile requests against the real daemon,
//! for a bounded time. It covers the REST extractors (paths, queries, bodies, headers),
//! both MCP toolsets' arguments (read from their own `tools/list`), relay cursors and
//! tokens, and attachment references. Every answer must be the error envelope or a
//! success; a 5xx must be `INTERNAL_ERROR`, and none may be (a handler panic becomes one).
//!
//! `AMC_FUZZ_SECONDS` (default 20) bounds the run, `AMC_FUZZ_SEED` replays one; the seed
//! and the counts are printed, so a failure can be run again.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use amc_client::Connection;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::harness::{Daemon, attachment, msg};
use amc_core::model::Source;
use amc_core::time::now_ms;

/// Ids, cursors, paths and texts that reach past the obvious: real ones of this
/// daemon, near misses, and the classic hostile strings.
struct Pool {
    strings: Vec<String>,
}

impl Pool {
    fn new(real: &[String], outbox: &str) -> Self {
        let mut strings: Vec<String> = real.to_vec();
        strings.extend(
            [
                "",
                " ",
                "msg_",
                "msg_00000000000000000000000000",
                "msg_0000000000000000000000000I",
                "ch_01HZ0000000000000000000000",
                "ch_../../admin",
                "00000000-0000-4000-8000-000000000000",
                "v1.AAAA.BBBB",
                "v1..",
                "amc_relay_read_0000",
                "MTc3NzAwMDAwMDAwMDptc2dfMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDA",
                "../../../../etc/passwd",
                "/etc/passwd",
                "/dev/zero",
                "/proc/self/environ",
                "file:///etc/passwd",
                "http://127.0.0.1:1/x",
                "http://[::1]/",
                "http://169.254.169.254/latest/meta-data/",
                "https://example.invalid/a.png",
                "javascript:alert(1)",
                "2026-04-25T15:32:11.123Z",
                "2026-13-45T99:99:99Z",
                "-1",
                "1e309",
                "NaN",
                "imessage",
                "discord",
                "slack",
                "\u{0}",
                "\u{FFFF}\u{FFFE}",
                "\u{202E}gnp.exe",
                "'; DROP TABLE messages; --",
                "\" OR 1=1 --",
                "NEAR(a b) OR *",
                "%00",
                "%",
                "&&&===",
            ]
            .map(str::to_owned),
        );
        strings.push(format!("{outbox}/missing.txt"));
        strings.push(format!("{outbox}/../admin-token"));
        strings.push(format!("{outbox}/note.txt"));
        strings.push("x".repeat(70_000));
        strings.push("é".repeat(3000));
        Self { strings }
    }

    fn string(&self, rng: &mut StdRng) -> String {
        if rng.random_bool(0.15) {
            let len = rng.random_range(0..40);
            return (0..len).map(|_| char::from_u32(rng.random_range(0..0x11_0000)).unwrap_or('?')).collect();
        }
        self.strings.choose(rng).cloned().unwrap_or_default()
    }

    fn value(&self, rng: &mut StdRng, depth: u32) -> Value {
        match rng.random_range(0..if depth > 2 { 6 } else { 9 }) {
            0 => Value::Null,
            1 => json!(rng.random_bool(0.5)),
            2 => json!([0_i64, -1, 1, 20, 25, 26, 50, 100, 101, i64::MAX, i64::MIN].choose(rng).copied()),
            3 => json!([0.5_f64, -0.0, 1e308, 3.9].choose(rng).copied()),
            4 | 5 => json!(self.string(rng)),
            6 => Value::Array((0..rng.random_range(0..4)).map(|_| self.value(rng, depth + 1)).collect()),
            7 => {
                json!([{ "path": self.string(rng) }, { "url": self.string(rng) }, { "path": self.string(rng), "url": self.string(rng) }])
            }
            _ => {
                let keys = ["path", "url", "text", "id", "channel_id", "message_ids", "attachments", "zzz"];
                let mut o = serde_json::Map::new();
                for _ in 0..rng.random_range(0..4) {
                    o.insert((*keys.choose(rng).unwrap_or(&"k")).to_owned(), self.value(rng, depth + 1));
                }
                Value::Object(o)
            }
        }
    }

    /// An object with some of `keys` (and now and then an unknown one), random values.
    fn object(&self, rng: &mut StdRng, keys: &[String]) -> Value {
        let mut o = serde_json::Map::new();
        for k in keys {
            if rng.random_bool(0.6) {
                o.insert(k.clone(), self.value(rng, 0));
            }
        }
        if rng.random_bool(0.1) {
            o.insert("unexpected".into(), self.value(rng, 0));
        }
        Value::Object(o)
    }
}

/// What went wrong, by kind, with one example each.
#[derive(Default)]
struct Findings {
    cases: usize,
    by_status: BTreeMap<u16, usize>,
    failures: Vec<String>,
}

impl Findings {
    fn fail(&mut self, what: String) {
        if self.failures.len() < 20 {
            self.failures.push(what);
        }
    }

    /// A REST answer: 2xx, or the envelope with its status; a 5xx only as INTERNAL_ERROR,
    /// and no INTERNAL_ERROR at all.
    fn rest(&mut self, what: &str, r: &amc_client::Response) {
        self.cases += 1;
        let status = r.status.as_u16();
        *self.by_status.entry(status).or_default() += 1;
        if status < 400 {
            return;
        }
        let v = r.json();
        let env = &v["error"];
        let ok = env["code"].is_string()
            && env["message"].as_str().is_some_and(|m| !m.is_empty())
            && env["status"].as_u64() == Some(u64::from(status));
        if !ok {
            self.fail(format!("{what}: {status} without the envelope: {:?}", String::from_utf8_lossy(&r.body)));
        } else if status >= 500 || env["code"] == "INTERNAL_ERROR" {
            self.fail(format!("{what}: {status} {v}"));
        }
    }

    /// An MCP answer: a JSON-RPC result (a tool failure carries the envelope) or a
    /// JSON-RPC error; never INTERNAL_ERROR.
    fn mcp(&mut self, what: &str, r: &amc_client::Response) {
        self.cases += 1;
        *self.by_status.entry(r.status.as_u16()).or_default() += 1;
        let v = r.json();
        if r.status.as_u16() == 401 && v["error"]["code"].is_string() {
            return;
        }
        if v["jsonrpc"] != "2.0" {
            self.fail(format!("{what}: {} not JSON-RPC: {:?}", r.status, String::from_utf8_lossy(&r.body)));
            return;
        }
        let result = &v["result"];
        if result["isError"] == true {
            let env = &result["structuredContent"]["error"];
            if !env["code"].is_string() || env["code"] == "INTERNAL_ERROR" {
                self.fail(format!("{what}: {v}"));
            }
        } else if !v["error"].is_null() {
            let code = &v["error"]["data"]["error"]["code"];
            if v["error"]["code"].as_i64() == Some(-32603) || code == "INTERNAL_ERROR" {
                self.fail(format!("{what}: {v}"));
            }
        } else if !result.is_object() {
            self.fail(format!("{what}: neither result nor error: {v}"));
        }
    }
}

async fn mcp_tools(c: &mut Connection, path: &str) -> Vec<(String, Vec<String>)> {
    let r = rpc(c, path, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {} })).await;
    r.json()["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            let keys =
                t["inputSchema"]["properties"].as_object().map(|p| p.keys().cloned().collect()).unwrap_or_default();
            (t["name"].as_str().unwrap_or_default().to_owned(), keys)
        })
        .collect()
}

async fn rpc(c: &mut Connection, path: &str, body: Value) -> amc_client::Response {
    let headers = [("accept", "application/json, text/event-stream"), ("mcp-protocol-version", "2025-11-25")];
    c.request(hyper::Method::POST, path, &headers, Some(body.to_string().into_bytes())).await.expect("post")
}

// (The client itself refuses a few requests, such as a URI over its limit: those are
// not sent and not counted.)

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_the_envelope_and_never_a_panic() {
    let seconds: u64 = std::env::var("AMC_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let seed: u64 = std::env::var("AMC_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let mut rng = StdRng::seed_from_u64(seed);
    let d = Daemon::start().await;
    let (_, token) = d.agent("fuzz").await;
    let outbox = d.config.attachment_dirs[0].display().to_string();
    std::fs::write(format!("{outbox}/note.txt"), b"a note").expect("write");
    // Something real to aim at: an approved channel with messages and a file, a pending
    // one, a relay thread with an invite.
    let file = d.dir.path().join("photo.png");
    std::fs::write(&file, b"png").expect("write");
    let mut with_file = msg("f-1", "with a file", now_ms() - 10);
    with_file.attachments = vec![attachment(file.to_str().expect("utf8"), "image/png")];
    let (allowed, mut real) =
        d.ingest(Source::Imessage, "a", vec![msg("a-1", "hello", now_ms() - 20), with_file]).await;
    d.approve(&allowed, json!({ "history": "all", "send_policy": "auto" })).await;
    let (pending, hidden) = d.ingest(Source::Discord, "p", vec![msg("p-1", "quarantined", now_ms())]).await;
    real.extend([allowed.clone(), pending, hidden[0].clone()]);
    let mut relay = d.anon().await.with_bearer(&token);
    let args = json!({ "name": "create_thread", "arguments": { "title": "t", "idempotency_key": "k" } });
    let t = rpc(&mut relay, "/mcp/relay", json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": args }))
        .await
        .json();
    let thread = t["result"]["structuredContent"]["thread_id"].as_str().expect("thread").to_owned();
    real.push(thread.clone());
    let args = json!({ "name": "read_messages", "arguments": { "thread_id": thread } });
    let page =
        rpc(&mut relay, "/mcp/relay", json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": args }))
            .await
            .json();
    real.extend(page["result"]["structuredContent"]["next_cursor"].as_str().map(str::to_owned));
    let pool = Pool::new(&real, &outbox);
    let inbox_tools = mcp_tools(&mut relay, "/mcp").await;
    let relay_tools = mcp_tools(&mut relay, "/mcp/relay").await;

    let rest_gets = ["/messages/unread", "/messages/context", "/channels", "/healthz"];
    let rest_keys: Vec<String> =
        ["since", "source", "channel_id", "limit", "cursor", "around_message_id", "before", "after", "x"]
            .map(str::to_owned)
            .to_vec();
    let body_keys: Vec<String> =
        ["channel_id", "text", "reply_to", "attachments", "message_ids"].map(str::to_owned).to_vec();
    let mut found = Findings::default();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds) {
        let mut c = d.anon().await.with_bearer(&token);
        if rng.random_bool(0.8) {
            c = c.with_header("x-agent-id", "fuzz");
        }
        match rng.random_range(0..6) {
            0 => {
                // A GET with a random query.
                let path = rest_gets.choose(&mut rng).copied().unwrap_or("/channels");
                let q: Vec<String> = (0..rng.random_range(0..5))
                    .map(|_| {
                        let k = rest_keys.choose(&mut rng).cloned().unwrap_or_default();
                        format!(
                            "{}={}",
                            amc_client::encode_query_value(&k),
                            amc_client::encode_query_value(&pool.string(&mut rng))
                        )
                    })
                    .collect();
                let url = format!("{path}?{}", q.join("&"));
                if let Ok(r) = c.get(&url).await {
                    found.rest(&format!("GET {url:.200}"), &r);
                }
            }
            1 => {
                // A path parameter.
                let id = amc_client::encode_query_value(&pool.string(&mut rng));
                let path = [format!("/messages/{id}"), format!("/attachments/{id}")].choose(&mut rng).cloned();
                let path = path.unwrap_or_default();
                if let Ok(r) = c.get(&path).await {
                    found.rest(&format!("GET {path:.200}"), &r);
                }
            }
            2 => {
                // A POST body, as JSON of the right shape with wrong values, or as junk.
                let path = ["/messages/send", "/messages/mark_read"].choose(&mut rng).copied().unwrap_or_default();
                let body = if rng.random_bool(0.85) {
                    pool.object(&mut rng, &body_keys).to_string().into_bytes()
                } else {
                    (0..rng.random_range(0..64)).map(|_| rng.random::<u8>()).collect()
                };
                let key = pool.string(&mut rng);
                let mut headers = vec![("content-type", "application/json")];
                if rng.random_bool(0.3) {
                    headers.push(("idempotency-key", key.as_str()));
                }
                let headers: Vec<(&str, &str)> =
                    headers.into_iter().filter(|(_, v)| hyper::header::HeaderValue::from_str(v).is_ok()).collect();
                let r = c.request(hyper::Method::POST, path, &headers, Some(body.clone())).await.expect("post");
                found.rest(&format!("POST {path} {:.300}", String::from_utf8_lossy(&body)), &r);
            }
            3 | 4 => {
                // A tool call on either toolset, with the tool's own argument names.
                let (path, tools) =
                    if rng.random_bool(0.5) { ("/mcp", &inbox_tools) } else { ("/mcp/relay", &relay_tools) };
                let (name, keys) = tools.choose(&mut rng).cloned().unwrap_or_default();
                let mut args = pool.object(&mut rng, &keys);
                if name == "wait_for_messages" {
                    args["timeout_seconds"] = json!(0);
                }
                let call = json!({ "jsonrpc": "2.0", "id": rng.random_range(0..1000), "method": "tools/call",
                                   "params": { "name": name, "arguments": args } });
                let r = rpc(&mut c, path, call.clone()).await;
                found.mcp(&format!("{path} {:.300}", call.to_string()), &r);
            }
            _ => {
                // A JSON-RPC message of the wrong shape.
                let path = ["/mcp", "/mcp/relay"].choose(&mut rng).copied().unwrap_or("/mcp");
                let body = json!({ "jsonrpc": pool.value(&mut rng, 1), "id": pool.value(&mut rng, 2),
                                   "method": pool.value(&mut rng, 2), "params": pool.value(&mut rng, 0) });
                let r = rpc(&mut c, path, body.clone()).await;
                found.mcp(&format!("{path} {:.300}", body.to_string()), &r);
            }
        }
    }
    eprintln!("fuzz: seed {seed}, {} cases in {seconds} s, answers by status {:?}", found.cases, found.by_status);
    assert!(found.cases > 100, "the harness barely ran: {} cases", found.cases);
    assert!(found.failures.is_empty(), "seed {seed}:\n{}", found.failures.join("\n"));
    // The daemon lives on.
    assert_eq!(d.anon().await.with_bearer(&token).get("/healthz").await.expect("get").status, 200);
}
