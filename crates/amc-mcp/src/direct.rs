//! A relay `tools/call` answered without rmcp's per-request service.
//!
//! rmcp's stateless streamable HTTP server builds a service for every request: a
//! one-shot transport, three channels of 32 message slots each, a spawned task and
//! cancellation tokens, about 105 KB and half of the daemon's CPU per answer while a
//! thousand agents wait on a thread. The relay's calls are plain request and answer, so a
//! request that rmcp would take as it is goes straight to the same handler
//! ([`RelayServer`]'s dispatch, through the same `call_with`) and its answer is the
//! JSON-RPC message rmcp would write, serialised from rmcp's own types.
//!
//! "As it is" is narrow on purpose: a POST to this machine's name (one `Host`:
//! localhost, 127.0.0.1 or ::1, rmcp's default guard against DNS rebinding) with no
//! `Origin`, whose `Accept` is a plain list (no parameters, no quotes) naming both JSON
//! and SSE, that sends JSON, names a protocol version before 2026-07-28 (or none, which
//! rmcp takes as 2025-03-26) and no session, whose body is a `tools/call` request with an
//! integer or string id, each member once, and only `name` and `arguments` (no `_meta`:
//! no progress token, no per-request version, no task). Under those, rmcp's checks
//! (`handle`, `handle_post` in rmcp's `streamable_http_server/tower.rs`:
//! `validate_dns_rebinding_headers`, the media types, `validate_protocol_version_header`,
//! `validate_standard_headers`, which starts at 2026-07-28, and the request `_meta`
//! rules) all pass, and its JSON answer is one `Response` message with status 200.
//! The result is then shaped as rmcp's `handle_request` shapes it for such a peer. Anything
//! else, an initialize, `tools/list`, an unknown tool, goes to rmcp. The daemon's tests
//! `relay_calls_answered_directly_are_what_rmcp_answers` (each kind of call) and
//! `headers_answered_directly_are_those_rmcp_takes` (every form of each header above and
//! its near misses, alone and mixed) send each request both ways and compare the
//! answers, so an rmcp release that answers or refuses otherwise is caught.
//!
//! Measured (`cargo bench -p amc-cli --bench relay_socket`, 1,000 waiting clients, with
//! this path and without it, alternating): 13–16 µs of the daemon's CPU per answer
//! against 35–39, p50 7.3–7.8 ms against 16.3–17.6, and 55–59 MiB while they wait
//! against 125.

use http::HeaderMap;
use rmcp::model::{CallToolRequestParams, JsonObject, NumberOrString, ProtocolVersion, ServerJsonRpcMessage};
use serde::Deserialize;
use serde_json::Value;

use amc_relay::Page;

use crate::relay::{Direct, RelayServer};
use crate::server::McpCaller;
use crate::written::{LastPage, result_of};

/// A relay `tools/call` that can be answered directly.
#[derive(Debug)]
pub struct DirectCall {
    id: NumberOrString,
    params: CallToolRequestParams,
}

/// Whether `Accept` lists `want`. Only a plain list is read: one with parameters (a
/// `q=0` refuses a type to rmcp) or quotes is left to rmcp.
fn lists_media_type(headers: &HeaderMap, want: &str) -> bool {
    let values = || headers.get_all(http::header::ACCEPT).iter().map(|v| v.to_str().ok());
    values().all(|v| v.is_some_and(|v| !v.contains([';', '"'])))
        && values().flatten().flat_map(|v| v.split(',')).any(|item| item.trim().eq_ignore_ascii_case(want))
}

/// A request's body as a relay call may have it: exactly these members, each once (a
/// repeated member is an error to rmcp's types and to these).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    jsonrpc: String,
    id: Value,
    method: String,
    params: Params,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
}

/// Whether rmcp would take these headers as they are for a stateless `tools/call`.
fn plain_headers(headers: &HeaderMap) -> bool {
    let accepts = lists_media_type(headers, "application/json") && lists_media_type(headers, "text/event-stream");
    let content_type = headers.get_all(http::header::CONTENT_TYPE).iter().count() == 1
        && headers.get(http::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| {
            let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
            essence.trim().eq_ignore_ascii_case("application/json")
        });
    let mut versions = headers.get_all("mcp-protocol-version").iter();
    let version = match (versions.next(), versions.next()) {
        (None, _) => true,
        (Some(v), None) => v.to_str().is_ok_and(|v| {
            v < ProtocolVersion::STANDARD_HEADERS.as_str()
                && v < ProtocolVersion::V_2026_07_28.as_str()
                && ProtocolVersion::KNOWN_VERSIONS.iter().any(|known| known.as_str() == v)
        }),
        _ => false,
    };
    // The standard headers (Mcp-Method, Mcp-Name, Mcp-Param-*) and a session id are
    // rmcp's to judge.
    let other_mcp_headers = headers.keys().any(|k| {
        let k = k.as_str();
        k.starts_with("mcp-") && k != "mcp-protocol-version"
    });
    // rmcp's guard against DNS rebinding: one Host, naming this machine (its default
    // allowed hosts); an Origin (checked by the daemon already) is left to rmcp too.
    let mut hosts = headers.get_all(http::header::HOST).iter();
    let host = match (hosts.next(), hosts.next()) {
        (Some(h), None) => h.to_str().ok().and_then(|h| h.parse::<http::uri::Authority>().ok()).is_some_and(|a| {
            let host = a.host().trim_matches('[').trim_matches(']').to_ascii_lowercase();
            matches!(host.as_str(), "localhost" | "127.0.0.1" | "::1")
        }),
        _ => false,
    };
    let origin = headers.contains_key(http::header::ORIGIN);
    accepts && content_type && version && !other_mcp_headers && host && !origin
}

impl DirectCall {
    /// The call in `body`, if rmcp would take it as it is and the relay has the tool.
    pub fn of(headers: &HeaderMap, body: &[u8]) -> Option<Self> {
        if !plain_headers(headers) {
            return None;
        }
        let Body { jsonrpc, id, method, params: Params { name, arguments } } = serde_json::from_slice(body).ok()?;
        if jsonrpc != "2.0" || method != "tools/call" {
            return None;
        }
        let id = match id {
            Value::String(s) => NumberOrString::String(s.into()),
            Value::Number(n) => NumberOrString::Number(n.as_i64()?),
            _ => return None,
        };
        if !crate::relay::is_relay_tool(&name) {
            return None;
        }
        let params = CallToolRequestParams::new(name);
        Some(Self { id, params: if let Some(a) = arguments { params.with_arguments(a) } else { params } })
    }

    /// Runs the call for `caller` and gives the JSON-RPC answer's body, as rmcp writes it.
    pub async fn answer(self, server: &RelayServer, caller: &McpCaller) -> Vec<u8> {
        let response = match server.call_directly(caller, self.params).await {
            Direct::Page(page) => match answer_with_page(server.last_page(), &self.id, page) {
                Some(body) => return body,
                // Not possible for a page; answered as the tool's failure if it were.
                None => Ok(crate::server::failure(&amc_core::Error::internal("the page could not be written")).into()),
            },
            Direct::Response(response) => response,
        };
        let message = match response {
            Ok(response) => ServerJsonRpcMessage::response(result_of(response), self.id),
            Err(e) => ServerJsonRpcMessage::error(e, Some(self.id)),
        };
        // rmcp's own types, serialised as rmcp does (`serde_json::to_vec`): a failure is
        // not possible for them, but an empty body would still be answered as an error.
        serde_json::to_vec(&message).unwrap_or_default()
    }
}

/// The answer to `id` with `page` as its tool result: `{"jsonrpc":"2.0","id":…,"result":…}`,
/// rmcp's `JsonRpcResponse` in its field order.
fn answer_with_page(last: &LastPage, id: &NumberOrString, page: Page) -> Option<Vec<u8>> {
    let result = last.result(page)?;
    let id = serde_json::to_vec(id).ok()?;
    let mut body = Vec::with_capacity(result.len() + id.len() + 32);
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    body.extend_from_slice(&id);
    body.extend_from_slice(br#","result":"#);
    body.extend_from_slice(&result);
    body.push(b'}');
    Some(body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, http::HeaderValue::from_static(v));
        }
        h
    }

    /// What `amc_client` and the MCP SDKs send.
    const PLAIN: [(&str, &str); 4] = [
        ("host", "localhost"),
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2025-11-25"),
    ];

    fn bytes(v: &Value) -> Vec<u8> {
        serde_json::to_vec(v).expect("JSON")
    }

    fn call(params: Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params })
    }

    fn read() -> Value {
        call(json!({ "name": "read_messages", "arguments": { "thread_id": "x" } }))
    }

    /// A page answered again is the same bytes around another id; a page that differs in
    /// anything, a flag of one message included, is written for itself.
    #[test]
    fn only_an_equal_page_gets_the_last_pages_bytes() {
        let message = amc_relay::PageMessage {
            seq: 1,
            author: "agent:a".into(),
            author_is_you: true,
            untrusted_content: false,
            body: "hi \"there\"".into(),
            reply_to_seq: None,
            created_at: 1_700_000_000_000,
        };
        let page = Page {
            thread_id: "7a1c1f6e-3c1b-4c8e-9d47-0d7c8b2f5a10".into(),
            messages: vec![message.clone()],
            next_cursor: "v1.x.y".into(),
            latest_seq: 1,
        };
        // Byte for byte what rmcp writes for the same result, from the cache or not.
        let rmcp_writes = |id: NumberOrString, page: &Page| {
            let value = serde_json::to_value(page).expect("value");
            let result = result_of(crate::server::success(value).into());
            serde_json::to_vec(&ServerJsonRpcMessage::response(result, id)).expect("rmcp's")
        };
        let last = LastPage::default();
        for id in [NumberOrString::Number(-3), NumberOrString::String("a \"quoted\" id".into())] {
            for _ in 0..2 {
                let ours = answer_with_page(&last, &id, page.clone()).expect("written");
                assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&rmcp_writes(id.clone(), &page)));
            }
        }
        let parse = |b: Option<Vec<u8>>| serde_json::from_slice::<Value>(&b.expect("written")).expect("JSON");
        let first = parse(answer_with_page(&last, &NumberOrString::Number(1), page.clone()));
        let again = parse(answer_with_page(&last, &NumberOrString::String("b".into()), page.clone()));
        assert_eq!((first["id"].clone(), again["id"].clone()), (json!(1), json!("b")));
        assert_eq!(first["result"], again["result"]);
        assert_eq!(first["result"]["structuredContent"]["messages"][0]["author_is_you"], true);
        let mut theirs = page;
        theirs.messages[0].author_is_you = false;
        theirs.messages[0].untrusted_content = true;
        let other = parse(answer_with_page(&last, &NumberOrString::Number(2), theirs));
        assert_eq!(other["result"]["structuredContent"]["messages"][0]["author_is_you"], false);
        assert_eq!(other["result"]["structuredContent"]["messages"][0]["untrusted_content"], true);
        let text: Value =
            serde_json::from_str(other["result"]["content"][0]["text"].as_str().expect("text")).expect("JSON");
        // The same page, another agent's body fenced ([`crate::fence`]).
        let body = text["messages"][0]["body"].as_str().expect("body");
        let nonce = body.strip_prefix("⟦untrusted ").and_then(|b| b.split_once('⟧')).map(|(n, _)| n).expect("fenced");
        assert_eq!(body, format!("⟦untrusted {nonce}⟧hi \"there\"⟦/untrusted {nonce}⟧"));
        let mut unfenced = text.clone();
        unfenced["messages"][0]["body"] = json!("hi \"there\"");
        assert_eq!(unfenced, other["result"]["structuredContent"], "the text is the same page");
        assert_eq!(other["result"]["_meta"]["amc/labels"]["integrity"], "untrusted");
        assert!(other["result"].get("resultType").is_none(), "as rmcp writes it for a peer before 2026-07-28");
    }

    #[test]
    fn a_plain_relay_call_is_answered_directly() {
        assert!(DirectCall::of(&headers(&PLAIN), &bytes(&read())).is_some());
        let mut named = PLAIN;
        named[0] = ("host", "127.0.0.1:8080");
        assert!(DirectCall::of(&headers(&named), &bytes(&read())).is_some());
        let mut old = PLAIN.to_vec();
        old.pop();
        assert!(DirectCall::of(&headers(&old), &bytes(&read())).is_some(), "no version is 2025-03-26 to rmcp");
        let no_arguments = call(json!({ "name": "list_threads" }));
        assert!(DirectCall::of(&headers(&PLAIN), &bytes(&no_arguments)).is_some());
        let string_id =
            json!({ "jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": { "name": "list_threads" } });
        assert!(DirectCall::of(&headers(&PLAIN), &bytes(&string_id)).is_some());
    }

    #[test]
    fn anything_rmcp_would_judge_goes_to_rmcp() {
        let with = |extra: (&'static str, &'static str)| {
            let mut h = PLAIN.to_vec();
            h.push(extra);
            headers(&h)
        };
        let replace = |at: usize, pair: (&'static str, &'static str)| {
            let mut h = PLAIN;
            h[at] = pair;
            headers(&h)
        };
        let refused = [
            ("a foreign Host", replace(0, ("host", "evil.example"))),
            ("two Hosts", with(("host", "localhost"))),
            ("an Origin", with(("origin", "http://localhost"))),
            ("JSON only", replace(1, ("accept", "application/json"))),
            ("SSE refused by q=0", replace(1, ("accept", "application/json, text/event-stream;q=0"))),
            ("a quoted Accept", replace(1, ("accept", "application/json, text/event-stream, x/y;a=\"b,c\""))),
            ("not JSON", replace(2, ("content-type", "text/plain"))),
            ("a later version", replace(3, ("mcp-protocol-version", "2026-07-28"))),
            ("an unknown version", replace(3, ("mcp-protocol-version", "1999-01-01"))),
            ("a session", with(("mcp-session-id", "s"))),
            ("a standard header", with(("mcp-method", "tools/call"))),
        ];
        for (why, h) in refused {
            assert!(DirectCall::of(&h, &bytes(&read())).is_none(), "{why}");
        }
        let plain = headers(&PLAIN);
        let bodies = [
            ("a _meta", call(json!({ "name": "list_threads", "_meta": { "progressToken": 1 } }))),
            ("an unknown tool", call(json!({ "name": "list_unread_messages" }))),
            ("arguments not an object", call(json!({ "name": "list_threads", "arguments": [] }))),
            ("tools/list", json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })),
            (
                "a null id",
                json!({ "jsonrpc": "2.0", "id": null, "method": "tools/call", "params": { "name": "list_threads" } }),
            ),
            (
                "a notification",
                json!({ "jsonrpc": "2.0", "method": "tools/call", "params": { "name": "list_threads" } }),
            ),
            (
                "an extra member",
                json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": { "name": "list_threads" }, "x": 1 }),
            ),
        ];
        for (why, body) in bodies {
            assert!(DirectCall::of(&plain, &bytes(&body)).is_none(), "{why}");
        }
        let repeated = [
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"list_threads"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_threads","name":"read_messages"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"list_threads"}}"#,
        ];
        for body in repeated {
            assert!(DirectCall::of(&plain, body.as_bytes()).is_none(), "{body}");
        }
    }
}
