//! The socket and the TCP listener: permissions, one daemon at a time, stale sockets,
//! and the Host/Origin checks of loopback TCP.

use std::os::unix::fs::PermissionsExt;

use hyper::Method;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::harness::Daemon;
use amc_daemon::ListenError;

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_and_data_are_private_to_the_user() {
    let d = Daemon::start().await;
    assert_eq!(mode(&d.socket()), 0o600);
    assert_eq!(mode(&d.config.run_dir()), 0o700);
    assert_eq!(mode(&d.config.data_dir), 0o700);
    assert_eq!(mode(&d.config.db_path()), 0o600);
    assert_eq!(mode(&d.config.admin_token_path()), 0o600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_daemon_is_refused_and_shutdown_removes_the_socket() {
    let d = Daemon::start().await;
    let err = amc_daemon::bind_socket(&d.config.run_dir(), &d.socket()).expect_err("second daemon");
    assert!(matches!(err, ListenError::AlreadyRunning(_)), "{err}");
    assert!(err.to_string().contains("already running"));
    assert_eq!(d.anon().await.get("/nope").await.expect("first still serves").status, 404);
    let socket = d.socket();
    let _dir = d.stop().await;
    assert!(!socket.exists(), "socket removed on shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_socket_is_replaced_but_a_foreign_file_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).expect("mkdir");
    let sock = run.join("amc.sock");
    drop(std::os::unix::net::UnixListener::bind(&sock).expect("bind")); // a daemon that died
    assert!(sock.exists());
    let bound = amc_daemon::bind_socket(&run, &sock).expect("stale socket replaced");
    drop(bound);

    std::fs::write(&sock, b"not a socket").expect("write");
    let err = amc_daemon::bind_socket(&run, &sock).expect_err("foreign file");
    assert!(matches!(err, ListenError::NotOurs(_)), "{err}");
    assert_eq!(std::fs::read(&sock).expect("left alone"), b"not a socket");
}

async fn raw_tcp(addr: std::net::SocketAddr, host: &str, origin: Option<&str>, token: &str) -> String {
    raw_tcp_to(addr, "GET /healthz", host, origin, token).await
}

/// `line` (a method and a path) over loopback TCP with these Host and Origin headers.
async fn raw_tcp_to(addr: std::net::SocketAddr, line: &str, host: &str, origin: Option<&str>, token: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
    let req = format!(
        "{line} HTTP/1.1\r\nHost: {host}\r\n{origin}Authorization: Bearer {token}\r\nContent-Length: 0\r\n\
         Connection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("read");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_tcp_checks_host_and_origin_against_dns_rebinding() {
    let d = Daemon::start_with(|c| c.listen = Some("127.0.0.1:0".parse().expect("addr"))).await;
    let addr = d.tcp_addr.expect("tcp");
    let port = addr.port();
    let t = &d.admin_token;
    assert!(raw_tcp(addr, &format!("127.0.0.1:{port}"), None, t).await.starts_with("HTTP/1.1 200"));
    assert!(
        raw_tcp(addr, &format!("localhost:{port}"), Some(&format!("http://localhost:{port}")), t)
            .await
            .starts_with("HTTP/1.1 200")
    );
    for (host, origin) in [
        ("evil.example:80".to_owned(), None),
        (format!("attacker.example:{port}"), None),
        (format!("127.0.0.1:{port}"), Some("http://evil.example".to_owned())),
        (format!("127.0.0.1:{port}"), Some("null".to_owned())),
        // Two Host headers, the allowed one first; two Origins likewise.
        (format!("127.0.0.1:{port}\r\nHost: evil.example"), None),
        (format!("127.0.0.1:{port}"), Some(format!("http://127.0.0.1:{port}\r\nOrigin: http://evil.example"))),
    ] {
        let out = raw_tcp(addr, &host, origin.as_deref(), t).await;
        assert!(out.starts_with("HTTP/1.1 403"), "{host} {origin:?}: {out}");
        assert!(out.contains("\"FORBIDDEN\""));
    }
    // A target in absolute form names its host: it is checked as the Host header is.
    let here = format!("127.0.0.1:{port}");
    let absolute = raw_tcp_to(addr, "GET http://evil.example/healthz", &here, None, t).await;
    assert!(absolute.starts_with("HTTP/1.1 403"), "{absolute}");
    let own = raw_tcp_to(addr, &format!("GET http://{here}/healthz"), &here, None, t).await;
    assert!(own.starts_with("HTTP/1.1 200"), "{own}");
    // Before any route is looked for: an unknown path, a wrong method and the page alike.
    for line in ["GET /no/such/route", "DELETE /healthz", "GET /ui/", "GET /"] {
        let ok = raw_tcp_to(addr, line, &format!("127.0.0.1:{port}"), None, t).await;
        assert!(!ok.starts_with("HTTP/1.1 403"), "{line} from the loopback: {ok}");
        let out = raw_tcp_to(addr, line, "evil.example:80", None, t).await;
        assert!(out.starts_with("HTTP/1.1 403") && out.contains("\"FORBIDDEN\""), "{line}: {out}");
    }
    // MCP is served on the TCP listener too, behind the same checks.
    let (_, token) = d.agent("tcp").await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let mcp = |host: String| {
        let token = token.clone();
        async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
            let req = format!(
                "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            s.write_all(req.as_bytes()).await.expect("write");
            let mut out = String::new();
            s.read_to_string(&mut out).await.expect("read");
            out
        }
    };
    let ok = mcp(format!("127.0.0.1:{port}")).await;
    assert!(ok.starts_with("HTTP/1.1 200") && ok.contains("\"serverInfo\""), "{ok}");
    assert!(mcp("evil.example".into()).await.starts_with("HTTP/1.1 403"));
    // The socket has no such check: local clients there are the user's own.
    let r = d
        .admin()
        .await
        .request(Method::GET, "/healthz", &[("origin", "http://evil.example")], None)
        .await
        .expect("get");
    assert_eq!(r.status, 200);
}

/// A credential sent twice is ambiguous (which one was checked?): refused, whichever comes
/// first, on REST and on MCP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_sent_twice_is_refused() {
    let d = Daemon::start_with(|c| c.listen = Some("127.0.0.1:0".parse().expect("addr"))).await;
    let addr = d.tcp_addr.expect("tcp");
    let host = format!("127.0.0.1:{}", addr.port());
    let (_, alice) = d.agent("alice").await;
    let (_, bob) = d.agent("bob").await;
    let one = raw_tcp_to(addr, "GET /messages/unread", &host, None, &format!("{alice}\r\nX-Agent-ID: alice")).await;
    assert!(one.starts_with("HTTP/1.1 200"), "{one}");
    for (line, refused) in [("GET /messages/unread", "HTTP/1.1 401"), ("POST /mcp", "HTTP/1.1 403")] {
        for token in [
            format!("{alice}\r\nAuthorization: Bearer {bob}\r\nX-Agent-ID: alice"),
            format!("{alice}\r\nX-Agent-ID: alice\r\nX-Agent-ID: bob"),
            format!("{alice}\r\nX-Agent-ID: alice\r\nX-Agent-ID: alice"),
        ] {
            let out = raw_tcp_to(addr, line, &host, None, &token).await;
            assert!(out.starts_with(refused) && out.contains("send one"), "{line} {token:?}: {out}");
        }
    }
}
