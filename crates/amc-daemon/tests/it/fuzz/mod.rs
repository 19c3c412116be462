//! A fuzzing harness that stays: seeded random hostile requests against the real daemon,
//! for a bounded time. It covers the REST extractors (paths, queries, bodies, headers),
//! both MCP toolsets' arguments (read from their own `tools/list`), relay cursors and
//! tokens, attachment references, push and its acknowledgements (handed out, altered and
//! forged, given back as `ack` or as the `after` of a push), tool requests and the person's answers, the agent bundle, search (FTS syntax,
//! NUL, CJK, huge queries, altered cursors), which agents a channel is open to, and HTTP
//! written by hand where a client library would refuse (targets over 64 KiB, too many or
//! malformed headers, malformed request lines), on the socket and on loopback TCP. Every
//! answer must be the error envelope or a success; a 5xx must be `INTERNAL_ERROR`, and
//! none may be (a handler panic becomes one).
//!
//! `AMC_FUZZ_SECONDS` (default 20) bounds the run, `AMC_FUZZ_SEED` replays one; the seed
//! and the counts by route are printed, so a failure can be run again. Pushes wait up to a
//! second alongside the other cases, so a replay follows the same cases but not always the
//! same acknowledgements.

mod heads;
mod pool;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use amc_client::{Connection, Response};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::harness::{Daemon, attachment, msg};
use super::raw;
use amc_core::model::Source;
use amc_core::time::now_ms;
use pool::{Pool, SEARCH, SESSIONS};

/// What the harness saw: answers by route and status (0 for none), and what went wrong,
/// one example each.
#[derive(Default)]
struct Findings {
    cases: usize,
    by_route: BTreeMap<String, BTreeMap<u16, usize>>,
    by_status: BTreeMap<u16, usize>,
    failures: Vec<String>,
}

impl Findings {
    fn count(&mut self, route: &str, status: u16) {
        self.cases += 1;
        *self.by_route.entry(route.to_owned()).or_default().entry(status).or_default() += 1;
        *self.by_status.entry(status).or_default() += 1;
    }

    fn fail(&mut self, what: String) {
        if self.failures.len() < 20 {
            self.failures.push(what);
        }
    }

    /// A REST answer: 2xx, or the envelope with its status; a 5xx only as INTERNAL_ERROR,
    /// and no INTERNAL_ERROR at all.
    fn rest(&mut self, route: &str, what: &str, r: &Response) {
        let status = r.status.as_u16();
        self.count(route, status);
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
    fn mcp(&mut self, route: &str, what: &str, r: &Response) {
        self.count(route, r.status.as_u16());
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

    /// An answer to a request written by hand: as for REST (on the MCP endpoints, the
    /// JSON-RPC error with the envelope in its data, as mcp.md has it), and there must be one.
    fn raw(&mut self, route: &str, what: &str, a: Result<raw::Answer, String>) {
        match a {
            Ok(a) => {
                self.count(route, a.status);
                let v: Value = serde_json::from_slice(&a.body).unwrap_or_default();
                let json_rpc = v["jsonrpc"] == "2.0"
                    && v["error"]["data"]["error"]["code"].is_string()
                    && v["error"]["data"]["error"]["status"].as_u64() == Some(u64::from(a.status));
                if let Some(problem) = a.problem().filter(|_| !json_rpc) {
                    self.fail(format!("{what}: {problem}"));
                } else if a.status >= 500 {
                    self.fail(format!("{what}: {} {:?}", a.status, String::from_utf8_lossy(&a.body)));
                }
            }
            Err(e) => {
                self.count(route, 0);
                self.fail(format!("{what}: no answer: {e}"));
            }
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

/// The kinds of case, one entry per share of the run.
#[derive(Clone, Copy)]
enum Case {
    Query,
    PathParam,
    Body,
    Tool,
    JsonRpc,
    Push,
    Ack,
    ToolRequest,
    Bundle,
    Search,
    Scope,
    Head,
}

const CASES: &[Case] = &[
    Case::Query,
    Case::PathParam,
    Case::Body,
    Case::Tool,
    Case::Tool,
    Case::JsonRpc,
    Case::Push,
    Case::Ack,
    Case::Ack,
    Case::ToolRequest,
    Case::ToolRequest,
    Case::Bundle,
    Case::Search,
    Case::Search,
    Case::Scope,
    Case::Head,
    Case::Head,
];

/// The most pushes waiting at once: each may wait a second for something new.
const PUSHES_AT_ONCE: usize = 4;

/// The run: the daemon, what it handed out so far, and what came back.
struct Fuzz<'a> {
    d: &'a Daemon,
    rng: StdRng,
    pool: Pool,
    token: String,
    /// The approved channel and the pending one.
    channels: Vec<String>,
    inbox_tools: Vec<(String, Vec<String>)>,
    relay_tools: Vec<(String, Vec<String>)>,
    acks: Vec<String>,
    cursors: Vec<String>,
    tool_requests: Vec<String>,
    pushes: JoinSet<(String, Result<Response, amc_client::ClientError>)>,
    found: Findings,
}

impl Fuzz<'_> {
    /// A connection as the fuzzing agent, with its `X-Agent-ID` most of the time.
    async fn agent(&mut self) -> Connection {
        let c = self.d.anon().await.with_bearer(&self.token);
        if self.rng.random_bool(0.8) { c.with_header("x-agent-id", "fuzz") } else { c }
    }

    fn pick<T: Copy>(&mut self, of: &[T]) -> T {
        *of.choose(&mut self.rng).expect("something to pick")
    }

    /// `key=value&…` from some of `keys`, each value from `value`.
    fn query(&mut self, keys: &[&str], mut value: impl FnMut(&mut Self, &str) -> String) -> String {
        let n = self.rng.random_range(0..=keys.len().min(5));
        (0..n)
            .map(|_| {
                let k = self.pick(keys);
                let v = value(self, k);
                format!("{}={}", amc_client::encode_query_value(k), amc_client::encode_query_value(&v))
            })
            .collect::<Vec<_>>()
            .join("&")
    }

    async fn case(&mut self, case: Case) {
        match case {
            Case::Query => self.rest_query().await,
            Case::PathParam => self.path_param().await,
            Case::Body => self.body().await,
            Case::Tool => self.tool_call().await,
            Case::JsonRpc => self.json_rpc().await,
            Case::Push => self.push().await,
            Case::Ack => self.ack().await,
            Case::ToolRequest => self.tool_request().await,
            Case::Bundle => self.bundle().await,
            Case::Search => self.search().await,
            Case::Scope => self.scope().await,
            Case::Head => self.head().await,
        }
    }

    /// A GET with a random query. (The client library refuses a URI over 64 KiB: such a
    /// request is neither sent nor counted here; `head` sends it by hand.)
    async fn rest_query(&mut self) {
        let path = self.pick(&["/messages/unread", "/messages/context", "/channels", "/healthz"]);
        let keys = ["since", "source", "channel_id", "limit", "cursor", "around_message_id", "before", "after", "x"];
        let q = self.query(&keys, |f, _| f.pool.string(&mut f.rng));
        let url = format!("{path}?{q}");
        let mut c = self.agent().await;
        if let Ok(r) = c.get(&url).await {
            self.found.rest(&format!("GET {path}"), &format!("GET {url:.200}"), &r);
        }
    }

    /// A path parameter.
    async fn path_param(&mut self) {
        let id = amc_client::encode_query_value(&self.pool.string(&mut self.rng));
        let (route, path) =
            self.pick(&[("GET /messages/{id}", "/messages/"), ("GET /attachments/{id}", "/attachments/")]);
        let url = format!("{path}{id}");
        let mut c = self.agent().await;
        if let Ok(r) = c.get(&url).await {
            self.found.rest(route, &format!("GET {url:.200}"), &r);
        }
    }

    /// A POST body, as JSON of the right shape with wrong values, or as junk.
    async fn body(&mut self) {
        let path = self.pick(&["/messages/send", "/messages/mark_read"]);
        let keys: Vec<String> =
            ["channel_id", "text", "reply_to", "attachments", "message_ids"].map(str::to_owned).to_vec();
        let body = self.json_or_junk(&keys);
        let key = self.pool.string(&mut self.rng);
        let mut headers = vec![("content-type", "application/json")];
        if self.rng.random_bool(0.3) {
            headers.push(("idempotency-key", key.as_str()));
        }
        let headers: Vec<(&str, &str)> =
            headers.into_iter().filter(|(_, v)| hyper::header::HeaderValue::from_str(v).is_ok()).collect();
        let mut c = self.agent().await;
        let r = c.request(hyper::Method::POST, path, &headers, Some(body.clone())).await.expect("post");
        self.found.rest(&format!("POST {path}"), &format!("POST {path} {:.300}", String::from_utf8_lossy(&body)), &r);
    }

    /// Mostly an object with some of `keys`, now and then bytes that are not JSON.
    fn json_or_junk(&mut self, keys: &[String]) -> Vec<u8> {
        if self.rng.random_bool(0.9) {
            self.pool.object(&mut self.rng, keys).to_string().into_bytes()
        } else {
            (0..self.rng.random_range(0..64)).map(|_| self.rng.random::<u8>()).collect()
        }
    }

    /// POSTs `body` to `path` as the agent or (when `admin`) as the person, and checks it.
    async fn post(&mut self, route: &str, path: &str, body: Vec<u8>, admin: bool) -> Option<Response> {
        let mut c = if admin { self.d.admin().await } else { self.agent().await };
        let r = c.request(hyper::Method::POST, path, &[], Some(body.clone())).await.ok()?;
        self.found.rest(route, &format!("POST {path:.200} {:.300}", String::from_utf8_lossy(&body)), &r);
        Some(r)
    }

    /// A tool call on either toolset, with the tool's own argument names.
    async fn tool_call(&mut self) {
        let inbox = self.rng.random_bool(0.5);
        let (path, tools) = if inbox { ("/mcp", &self.inbox_tools) } else { ("/mcp/relay", &self.relay_tools) };
        let (name, keys) = tools.choose(&mut self.rng).cloned().unwrap_or_default();
        let mut args = self.pool.object(&mut self.rng, &keys);
        match name.as_str() {
            "wait_for_messages" => args["timeout_seconds"] = json!(0),
            // Out of range, or one second: a wait for nothing would hold the run up.
            "wait_for_unread_messages" => {
                args["timeout_seconds"] = self.pick(&[0, 1, 26, -1]).into();
            }
            "search_messages" if self.rng.random_bool(0.7) => {
                args["query"] = json!(self.pick(SEARCH));
            }
            _ => {}
        }
        let id = self.rng.random_range(0..1000);
        let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": { "name": name, "arguments": args } });
        let mut c = self.agent().await;
        let r = rpc(&mut c, path, call.clone()).await;
        self.found.mcp(&format!("MCP {path} {name}"), &format!("{path} {:.300}", call.to_string()), &r);
    }

    /// A JSON-RPC message of the wrong shape.
    async fn json_rpc(&mut self) {
        let path = self.pick(&["/mcp", "/mcp/relay"]);
        let body = json!({ "jsonrpc": self.pool.value(&mut self.rng, 1), "id": self.pool.value(&mut self.rng, 2),
                           "method": self.pool.value(&mut self.rng, 2), "params": self.pool.value(&mut self.rng, 0) });
        let mut c = self.agent().await;
        let r = rpc(&mut c, path, body.clone()).await;
        self.found.mcp(&format!("MCP {path} (malformed)"), &format!("{path} {:.300}", body.to_string()), &r);
    }

    /// `GET /messages/push`, waiting alongside the other cases; its ack is kept.
    async fn push(&mut self) {
        if self.pushes.len() >= PUSHES_AT_ONCE {
            return;
        }
        let q = self.query(&["timeout_seconds", "timeout_seconds", "session", "after", "x"], |f, key| match key {
            "timeout_seconds" => {
                f.pick(&["1", "1", "1", "0", "26", "-1", "x", "", "1.0", "99999999999999999999", "%00"]).to_owned()
            }
            "session" if f.rng.random_bool(0.7) => f.pick(SESSIONS).to_owned(),
            // The place a session was told through: an ack handed out, altered, forged or junk.
            "after" => match pool::ack(&mut f.rng, &f.pool, &f.acks, &f.channels).1 {
                Value::String(ack) => ack,
                other => other.to_string(),
            },
            _ => f.pool.string(&mut f.rng),
        });
        // A push with no timeout waits 25 seconds: every push here names one.
        let q = if q.contains("timeout_seconds=") { q } else { format!("timeout_seconds=1&{q}") };
        let url = format!("/messages/push?{q}");
        let mut c = self.agent().await;
        self.pushes.spawn(async move {
            let r = c.get(&url).await;
            (url, r)
        });
    }

    /// Records the pushes that have answered.
    fn reap_pushes(&mut self) {
        while let Some(done) = self.pushes.try_join_next() {
            self.push_answered(done.expect("a push task"));
        }
    }

    fn push_answered(&mut self, (url, r): (String, Result<Response, amc_client::ClientError>)) {
        let Ok(r) = r else { return };
        self.found.rest("GET /messages/push", &format!("GET {url:.200}"), &r);
        if r.status == 200 {
            self.acks.extend(r.json()["ack"].as_str().map(str::to_owned));
        }
    }

    /// `POST /messages/push/ack` with an ack handed out, altered, forged or junk.
    async fn ack(&mut self) {
        let (kind, ack) = pool::ack(&mut self.rng, &self.pool, &self.acks, &self.channels);
        let (kind, body) = match self.rng.random_range(0..10) {
            0 => ("no ack", json!({})),
            1 => (kind, json!({ "ack": ack, "x": 1 })),
            2 => ("not an object", ack),
            _ => (kind, json!({ "ack": ack })),
        };
        let route = format!("POST /messages/push/ack ({kind})");
        self.post(&route, "/messages/push/ack", body.to_string().into_bytes(), false).await;
    }

    /// A tool request, the end of a session, or the person's answer to a request.
    async fn tool_request(&mut self) {
        match self.rng.random_range(0..5) {
            0 | 1 => {
                let mut ask = json!({
                    "session": self.pick(SESSIONS),
                    "request_id": (0..5).map(|_| self.rng.random_range(b'a'..=b'z') as char).collect::<String>(),
                    "tool_name": "Bash", "description": "Run a shell command", "input_preview": "ls -la",
                });
                let keys = ["session", "request_id", "tool_name", "description", "input_preview", "extra"];
                for _ in 0..self.rng.random_range(0..3) {
                    let k = self.pick(&keys);
                    ask[k] = self.pool.value(&mut self.rng, 0);
                }
                let body =
                    if self.rng.random_bool(0.95) { ask.to_string().into_bytes() } else { b"{\"session\"".to_vec() };
                if let Some(r) = self.post("POST /tool-requests", "/tool-requests", body, false).await
                    && r.status == 201
                {
                    self.tool_requests.extend(r.json()["id"].as_str().map(str::to_owned));
                }
            }
            2 => {
                let session = if self.rng.random_bool(0.6) {
                    json!(self.pick(SESSIONS))
                } else {
                    self.pool.value(&mut self.rng, 0)
                };
                let body = json!({ "session": session }).to_string().into_bytes();
                self.post("POST /tool-requests/end", "/tool-requests/end", body, false).await;
            }
            3 => {
                let q = self.query(&["status", "limit", "x"], |f, key| match key {
                    "status" => f.pick(&["pending", "allowed", "denied", "expired", "all", ""]).to_owned(),
                    _ => f.pool.string(&mut f.rng),
                });
                let mut c = self.d.admin().await;
                if let Ok(r) = c.get(&format!("/admin/tool-requests?{q}")).await {
                    self.found.rest("GET /admin/tool-requests", &format!("GET /admin/tool-requests?{q:.200}"), &r);
                }
            }
            _ => {
                let id = match self.tool_requests.choose(&mut self.rng) {
                    Some(id) if self.rng.random_bool(0.8) => id.clone(),
                    _ => self.pool.string(&mut self.rng),
                };
                let verb = self.pick(&["allow", "deny"]);
                let path = format!("/admin/tool-requests/{}/{verb}", amc_client::encode_query_value(&id));
                let admin = self.rng.random_bool(0.9);
                self.post(&format!("POST /admin/tool-requests/{{id}}/{verb}"), &path, b"{}".to_vec(), admin).await;
            }
        }
    }

    /// `POST /admin/agents/{id}/bundle` with this agent's token, another, or junk.
    async fn bundle(&mut self) {
        let id = match self.rng.random_range(0..4) {
            0 | 1 => "fuzz".to_owned(),
            2 => "nobody".to_owned(),
            _ => self.pool.string(&mut self.rng),
        };
        let token = match self.rng.random_range(0..4) {
            0 | 1 => json!(self.token),
            2 => json!(self.d.admin_token),
            _ => self.pool.value(&mut self.rng, 0),
        };
        let body = if self.rng.random_bool(0.9) {
            json!({ "token": token }).to_string().into_bytes()
        } else {
            self.json_or_junk(&["token".to_owned(), "id".to_owned()])
        };
        let path = format!("/admin/agents/{}/bundle", amc_client::encode_query_value(&id));
        let admin = self.rng.random_bool(0.9);
        self.post("POST /admin/agents/{id}/bundle", &path, body, admin).await;
    }

    /// A search as the agent or the person: hostile text, filters, and cursors handed out
    /// or altered.
    async fn search(&mut self) {
        let admin = self.rng.random_bool(0.25);
        let keys = ["query", "query", "source", "channel_id", "sender", "before", "after", "limit", "cursor", "x"];
        let q = self.query(&keys, |f, key| match key {
            "query" if f.rng.random_bool(0.5) => f.pick(SEARCH).to_owned(),
            "query" if f.rng.random_bool(0.2) => f.pick(SEARCH).repeat(f.rng.random_range(100..3000)),
            "cursor" if !f.cursors.is_empty() && f.rng.random_bool(0.7) => {
                let cursor = f.cursors.choose(&mut f.rng).cloned().unwrap_or_default();
                if f.rng.random_bool(0.5) { cursor } else { format!("{cursor}x") }
            }
            "limit" => f.pick(&["1", "20", "50", "51", "0", "-1", "x"]).to_owned(),
            _ => f.pool.string(&mut f.rng),
        });
        let (route, path) =
            if admin { ("GET /admin/search", "/admin/search") } else { ("GET /messages/search", "/messages/search") };
        let url = format!("{path}?{q}");
        let mut c = if admin { self.d.admin().await } else { self.agent().await };
        if let Ok(r) = c.get(&url).await {
            self.found.rest(route, &format!("GET {url:.300}"), &r);
            if r.status == 200 {
                self.cursors.extend(r.json()["next_cursor"].as_str().map(str::to_owned));
            }
        }
    }

    /// Which agents a channel is open to, an agent's own send policy in it, and which
    /// agents are given its one-time codes.
    async fn scope(&mut self) {
        let channel = match self.channels.choose(&mut self.rng) {
            Some(ch) if self.rng.random_bool(0.8) => ch.clone(),
            _ => self.pool.string(&mut self.rng),
        };
        let channel = amc_client::encode_query_value(&channel);
        let admin = self.rng.random_bool(0.9);
        if self.rng.random_bool(0.25) {
            let agents: Vec<Value> = (0..self.rng.random_range(0..3))
                .map(|_| if self.rng.random_bool(0.6) { json!("fuzz") } else { self.pool.value(&mut self.rng, 1) })
                .collect();
            let codes = match self.rng.random_range(0..5) {
                0 => json!("hidden"),
                1 => json!("shown"),
                2 => json!("some"),
                3 => json!("SHOWN"),
                _ => self.pool.value(&mut self.rng, 0),
            };
            let body = match self.rng.random_range(0..4) {
                0 => json!({ "codes": codes }),
                1 => json!({ "codes": codes, "agents": agents }),
                2 => json!({ "agents": agents }),
                _ => self.pool.object(&mut self.rng, &["codes".to_owned(), "agents".to_owned()]),
            };
            let path = format!("/admin/channels/{channel}/codes");
            self.post("POST /admin/channels/{id}/codes", &path, body.to_string().into_bytes(), admin).await;
        } else if self.rng.random_bool(0.6) {
            let agents: Vec<Value> = (0..self.rng.random_range(0..4))
                .map(|_| match self.rng.random_range(0..3) {
                    0 => json!("fuzz"),
                    1 => json!("nobody"),
                    _ => self.pool.value(&mut self.rng, 1),
                })
                .collect();
            let body = match self.rng.random_range(0..6) {
                0 | 1 => json!({ "agents": agents }),
                2 => json!({ "all": true }),
                3 => json!({ "all": false }),
                4 => json!({ "agents": agents, "all": true }),
                _ => self.pool.object(&mut self.rng, &["agents".to_owned(), "all".to_owned()]),
            };
            let path = format!("/admin/channels/{channel}/agents");
            self.post("POST /admin/channels/{id}/agents", &path, body.to_string().into_bytes(), admin).await;
        } else {
            let agent = if self.rng.random_bool(0.7) { "fuzz".to_owned() } else { self.pool.string(&mut self.rng) };
            let policy = match self.rng.random_range(0..5) {
                0 => json!("read_only"),
                1 => json!("review"),
                2 => json!("auto"),
                3 => Value::Null,
                _ => self.pool.value(&mut self.rng, 0),
            };
            let path = format!("/admin/channels/{channel}/agents/{}/policy", amc_client::encode_query_value(&agent));
            let body = json!({ "send_policy": policy }).to_string().into_bytes();
            self.post("POST /admin/channels/{id}/agents/{agent}/policy", &path, body, admin).await;
        }
    }

    /// A request written by hand, on the socket or on loopback TCP.
    async fn head(&mut self) {
        let tcp = self.rng.random_bool(0.5);
        let host = match self.d.tcp_addr {
            Some(addr) if tcp => addr.to_string(),
            _ => "localhost".to_owned(),
        };
        let head = heads::head(&mut self.rng, &heads::Caller { host: &host, token: &self.token });
        let what = format!(
            "{} ({}): {:?}",
            head.kind,
            if tcp { "tcp" } else { "socket" },
            String::from_utf8_lossy(&head.bytes[..head.bytes.len().min(200)])
        );
        let (answer, _) = raw::exchange(raw::open(self.d, tcp).await, head.bytes, Duration::from_secs(10)).await;
        self.found.raw(&format!("raw: {}", head.kind), &what, answer);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_the_envelope_and_never_a_panic() {
    let seconds: u64 = std::env::var("AMC_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let seed: u64 = std::env::var("AMC_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    eprintln!("fuzz: seed {seed}");
    let d = Daemon::start_with(|c| c.listen = Some("127.0.0.1:0".parse().expect("addr"))).await;
    let (_, token) = d.agent("fuzz").await;
    let outbox = d.config.attachment_dirs[0].display().to_string();
    std::fs::write(format!("{outbox}/note.txt"), b"a note").expect("write");
    // Something real to aim at: an approved channel with messages and a file, a pending
    // one, a relay thread with an invite.
    let file = d.dir.path().join("photo.png");
    std::fs::write(&file, b"png").expect("write");
    let mut with_file = msg("f-1", "with a file", now_ms() - 10);
    with_file.attachments = vec![attachment(file.to_str().expect("utf8"), "image/png")];
    let japanese = msg("j-1", "東京で会いましょう", now_ms() - 5);
    let (allowed, mut real) =
        d.ingest(Source::Imessage, "a", vec![msg("a-1", "hello", now_ms() - 20), with_file, japanese]).await;
    d.approve(&allowed, json!({ "history": "all", "send_policy": "auto" })).await;
    let (pending, hidden) = d.ingest(Source::Discord, "p", vec![msg("p-1", "quarantined", now_ms())]).await;
    real.extend([allowed.clone(), pending.clone(), hidden[0].clone()]);
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
    let inbox_tools = mcp_tools(&mut relay, "/mcp").await;
    let relay_tools = mcp_tools(&mut relay, "/mcp/relay").await;
    let mut f = Fuzz {
        d: &d,
        rng: StdRng::seed_from_u64(seed),
        pool: Pool::new(&real, &outbox),
        token: token.clone(),
        channels: vec![allowed.clone(), pending],
        inbox_tools,
        relay_tools,
        acks: Vec::new(),
        cursors: Vec::new(),
        tool_requests: Vec::new(),
        pushes: JoinSet::new(),
        found: Findings::default(),
    };

    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(seconds) {
        f.reap_pushes();
        let case = f.pick(CASES);
        f.case(case).await;
        // Now and then something new, for pushes to tell and acks to acknowledge.
        if f.rng.random_bool(0.02) {
            let n = f.found.cases;
            d.ingest(Source::Imessage, "a", vec![msg(&format!("new-{n}"), "something new", now_ms())]).await;
        }
    }
    // The pushes still waiting name at most a second each.
    let waiting = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(done) = f.pushes.join_next().await {
            f.push_answered(done.expect("a push task"));
        }
    });
    assert!(waiting.await.is_ok(), "pushes still waiting 10 s after the run");
    let found = f.found;
    eprintln!("fuzz: seed {seed}, {} cases in {seconds} s, answers by status {:?}", found.cases, found.by_status);
    for (route, by_status) in &found.by_route {
        let n: usize = by_status.values().sum();
        eprintln!("fuzz:   {n:>6}  {route}  {by_status:?}");
    }
    assert!(found.cases > 100, "the harness barely ran: {} cases", found.cases);
    assert!(found.failures.is_empty(), "seed {seed}:\n{}", found.failures.join("\n"));
    // The daemon lives on.
    assert_eq!(d.anon().await.with_bearer(&token).get("/healthz").await.expect("get").status, 200);
}
