//! Request heads the HTTP parser refuses before any route sees them: a target over 64 KiB,
//! too many header lines, a head over its buffer, a malformed line, name or version. Each
//! is answered with the envelope, on the socket and on loopback TCP, and what a kept-alive
//! connection carried before is untouched.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};

use super::harness::{Daemon, attachment, msg};
use super::raw::{Answer, answer, exchange, open};
use amc_core::model::Source;
use amc_core::time::now_ms;

/// The answer to `request` on a new connection, which must close after it.
async fn refused(d: &Daemon, tcp: bool, request: Vec<u8>) -> Answer {
    let (a, mut rest) = exchange(open(d, tcp).await, request, std::time::Duration::from_secs(30)).await;
    let a = a.unwrap_or_else(|e| panic!("{e}"));
    let mut after = Vec::new();
    rest.read_to_end(&mut after).await.expect("the connection closes");
    assert!(after.is_empty(), "nothing after the refusal: {:?}", String::from_utf8_lossy(&after));
    a
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_head_the_parser_refuses_gets_the_envelope() {
    let d = Daemon::start_with(|c| c.listen = Some("127.0.0.1:0".parse().expect("addr"))).await;
    let many_lines: String = (0..101).map(|i| format!("x-line-{i}: v\r\n")).collect();
    let cases: [(&str, String, u16, &str); 7] = [
        (
            "a 70 KiB target",
            format!("GET /channels?q={} HTTP/1.1\r\nhost: x\r\n\r\n", "a".repeat(70 * 1024)),
            431,
            "HEADERS_TOO_LARGE",
        ),
        (
            "101 header lines",
            format!("GET /channels HTTP/1.1\r\nhost: x\r\n{many_lines}\r\n"),
            431,
            "HEADERS_TOO_LARGE",
        ),
        (
            "a 1 MiB header",
            format!("GET /channels HTTP/1.1\r\nhost: x\r\nx-pad: {}\r\n\r\n", "z".repeat(1 << 20)),
            431,
            "HEADERS_TOO_LARGE",
        ),
        ("a malformed request line", "G(ET /channels HTTP/1.1\r\nhost: x\r\n\r\n".to_owned(), 400, "BAD_REQUEST"),
        ("a target with a space", "GET /chan nels HTTP/1.1\r\nhost: x\r\n\r\n".to_owned(), 400, "BAD_REQUEST"),
        (
            "a bad header name",
            "GET /channels HTTP/1.1\r\nhost: x\r\nbad name: v\r\n\r\n".to_owned(),
            400,
            "BAD_REQUEST",
        ),
        ("an unknown version", "GET /channels HTTP/9.1\r\nhost: x\r\n\r\n".to_owned(), 400, "BAD_REQUEST"),
    ];
    for tcp in [false, true] {
        for (what, request, status, code) in &cases {
            let a = refused(&d, tcp, request.clone().into_bytes()).await;
            assert_eq!((a.status, a.refusal().as_str()), (*status, *code), "{what} (tcp: {tcp}): {}", a.head);
        }
    }
    // The daemon serves on.
    let r = d.admin().await.get("/healthz").await.expect("get");
    assert_eq!(r.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_connection_is_untouched_until_its_bad_request_gets_the_envelope() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("claude").await;
    // An attachment whose bytes are what the parser answers a bad request with.
    let lookalike = "HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\
                     date: Thu, 03 Dec 2026 23:06:39 GMT\r\n\r\n";
    let file = d.dir.path().join("lookalike.txt");
    std::fs::write(&file, lookalike).expect("write");
    let mut with_file = msg("a-1", "a file", now_ms() - 10);
    with_file.attachments = vec![attachment(file.to_str().expect("utf-8"), "text/plain")];
    let (ch, ids) = d.ingest(Source::Imessage, "a", vec![with_file]).await;
    d.approve(&ch, json!({ "history": "all" })).await;
    let mut agent = d.connect_agent(&token, "claude").await;
    let m = agent.get(&format!("/messages/{}", ids[0])).await.expect("get").json();
    let attachment_id = m["attachments"][0]["id"].as_str().unwrap_or_else(|| panic!("an attachment: {m}")).to_owned();
    agent.post("/messages/mark_read", &json!({ "message_ids": ids })).await.expect("read");

    let auth = format!("host: x\r\nauthorization: Bearer {token}\r\nx-agent-id: claude\r\n");
    let mut c = BufReader::new(open(&d, false).await);
    c.get_mut()
        .write_all(format!("GET /attachments/{attachment_id} HTTP/1.1\r\n{auth}\r\n").as_bytes())
        .await
        .expect("write");
    let a = answer(&mut c).await;
    assert_eq!(a.status, 200, "{}", a.head);
    assert_eq!(a.body, lookalike.as_bytes(), "the attachment's bytes as they are");
    // A long-poll on the same connection, ended by a message.
    c.get_mut().write_all(format!("GET /messages/unread/wait HTTP/1.1\r\n{auth}\r\n").as_bytes()).await.expect("write");
    let (_, new) = d.ingest(Source::Imessage, "a", vec![msg("a-2", "new", now_ms())]).await;
    let a = answer(&mut c).await;
    let v: Value = serde_json::from_slice(&a.body).expect("json");
    assert_eq!((a.status, v["messages"][0]["id"].as_str()), (200, Some(new[0].as_str())), "{v}");
    // The attachment again, and a malformed request right behind it.
    c.get_mut()
        .write_all(format!("GET /attachments/{attachment_id} HTTP/1.1\r\n{auth}\r\nGET / HTTP/9.1\r\n\r\n").as_bytes())
        .await
        .expect("write");
    assert_eq!(answer(&mut c).await.body, lookalike.as_bytes());
    let a = answer(&mut c).await;
    assert_eq!((a.status, a.refusal().as_str()), (400, "BAD_REQUEST"), "{}", a.head);
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).await.expect("closed");
    assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_on_a_route_that_takes_none_is_refused_not_dropped() {
    // A misspelt parameter is said, as on the routes that take a query.
    let d = Daemon::start().await;
    let (mut agent, _) = d.agent("claude").await;
    let (_, ids) = d.ingest(Source::Imessage, "a", vec![msg("a-1", "hi", now_ms())]).await;
    let id = &ids[0];
    for (post, path) in [
        (false, "/healthz?x=1".to_owned()),
        (false, format!("/messages/{id}?include=all")),
        (false, "/attachments/att_01HZ0000000000000000000000?x=1".to_owned()),
        (true, "/messages/mark_read?force=1".to_owned()),
        (true, "/messages/send?dry_run=1".to_owned()),
        (true, "/messages/push/ack?x=1".to_owned()),
    ] {
        let r = if post {
            agent.post(&path, &json!({ "message_ids": [id] })).await.expect("post")
        } else {
            agent.get(&path).await.expect("get")
        };
        assert_eq!((r.status.as_u16(), super::harness::code(&r)), (422, "VALIDATION_FAILED".to_owned()), "{path}");
    }
    assert_eq!(agent.get(&format!("/messages/{id}")).await.expect("get").status.as_u16(), 404, "pending: hidden");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_body_declared_over_the_limit_is_refused_as_too_large_without_waiting_for_it() {
    let d = Daemon::start().await;
    let (_, token) = d.agent("claude").await;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {token}\r\nx-agent-id: claude\r\n\
         content-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 2000000\r\n\r\n{{\"jsonrpc\""
    );
    // The client stops after a few bytes, as a stalled one would.
    let (a, _) = exchange(open(&d, false).await, head.into_bytes(), std::time::Duration::from_secs(20)).await;
    let a = a.unwrap_or_else(|e| panic!("{e}"));
    let v: Value = serde_json::from_slice(&a.body).expect("JSON");
    assert_eq!((a.status, v["error"]["data"]["error"]["code"].as_str()), (413, Some("PAYLOAD_TOO_LARGE")), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_persons_routes_refuse_limits_out_of_range_and_find_no_unreadable_id() {
    let d = Daemon::start().await;
    let mut admin = d.admin().await;
    for path in ["/admin/inbox?limit=0", "/admin/inbox?limit=501", "/admin/sends?limit=0", "/admin/sends?limit=501"] {
        let r = admin.get(path).await.expect("get");
        assert_eq!((r.status.as_u16(), super::harness::code(&r)), (422, "VALIDATION_FAILED".to_owned()), "{path}");
    }
    for path in ["/admin/inbox?limit=500", "/admin/sends?limit=1", "/admin/inbox"] {
        assert_eq!(admin.get(path).await.expect("get").status.as_u16(), 200, "{path}");
    }
    // An id that is not UTF-8 once decoded is as unknown as any other there.
    for path in ["/admin/channels/%FF", "/admin/sends/%C3%28"] {
        let r = admin.get(path).await.expect("get");
        assert_eq!((r.status.as_u16(), super::harness::code(&r)), (404, "NOT_FOUND".to_owned()), "{path}");
    }
}
