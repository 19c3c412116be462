//! The UI's files at `/ui/`: served from the binary, without credentials, with their
//! types and the page's security headers; nothing else is reachable through them.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::harness::{Daemon, code};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_files_are_served_with_their_types_and_without_credentials() {
    let d = Daemon::start().await;
    for (path, content_type, needle) in [
        ("/ui/", "text/html; charset=utf-8", "<script type=\"module\" src=\"js/main.js\">"),
        ("/ui/index.html", "text/html; charset=utf-8", "<main id=\"main\""),
        ("/ui/style.css", "text/css; charset=utf-8", "prefers-color-scheme: dark"),
        ("/ui/js/main.js", "text/javascript; charset=utf-8", "/admin/events/poll"),
        ("/ui/js/api.js", "text/javascript; charset=utf-8", "sessionStorage"),
        ("/ui/icon.svg", "image/svg+xml", "<svg"),
    ] {
        let resp = d.anon().await.get(path).await.expect("get");
        assert_eq!(resp.status, 200, "{path}");
        assert_eq!(resp.header("content-type"), Some(content_type), "{path}");
        assert_eq!(resp.header("x-content-type-options"), Some("nosniff"), "{path}");
        let csp = resp.header("content-security-policy").unwrap_or_default();
        assert!(csp.starts_with("default-src 'self'") && csp.contains("style-src 'self'"), "{path}: {csp}");
        assert!(String::from_utf8_lossy(&resp.body).contains(needle), "{path}");
    }
    // The files name nothing outside the daemon: no CDN, no absolute URL. Only links the
    // person opens themselves, in their browser, point elsewhere (the page's policy lets
    // nothing load from there).
    const LINKS: [&str; 1] = ["\"https://discord.com/developers/applications\""];
    for file in amc_daemon::UI_FILES {
        let text = LINKS.iter().fold(String::from_utf8_lossy(file.bytes).into_owned(), |t, link| t.replace(link, ""));
        assert!(!text.contains("https://") && !text.contains("//cdn"), "{} loads from elsewhere", file.path);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_and_ui_without_a_slash_redirect_to_the_page() {
    let d = Daemon::start().await;
    for path in ["/", "/ui"] {
        let resp = d.anon().await.get(path).await.expect("get");
        assert_eq!(resp.status, 308, "{path}");
        assert_eq!(resp.header("location"), Some("/ui/"), "{path}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_files_and_paths_that_climb_out_get_the_not_found_envelope() {
    let d = Daemon::start().await;
    for path in [
        "/ui/nope.js",
        "/ui/README.md",
        "/ui/js/",
        "/ui/../Cargo.toml",
        "/ui/..%2f..%2fCargo.toml",
        "/ui/%2e%2e/%2e%2e/crates/amc-daemon/src/ui.rs",
        "/ui/js/../../admin-token",
        "/ui//etc/passwd",
        "/ui/js%2fmain.js%00",
    ] {
        let resp = d.anon().await.get(path).await.expect("get");
        assert_eq!(resp.status, 404, "{path}");
        assert_eq!(code(&resp), "NOT_FOUND", "{path}");
    }
    let resp = d.anon().await.post("/ui/index.html", &serde_json::json!({})).await.expect("post");
    assert_eq!(code(&resp), "METHOD_NOT_ALLOWED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_loopback_tcp_the_page_loads_and_its_api_calls_need_the_admin_token() {
    let d = Daemon::start_with(|c| c.listen = Some("127.0.0.1:0".parse().expect("addr"))).await;
    let addr = d.tcp_addr.expect("tcp");
    let get = |path: &str, auth: Option<&str>| {
        let (path, auth) =
            (path.to_owned(), auth.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default());
        async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
            let host = format!("127.0.0.1:{}", addr.port());
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Connection: close\r\n\r\n").as_bytes())
                .await
                .expect("write");
            let mut out = String::new();
            s.read_to_string(&mut out).await.expect("read");
            out
        }
    };
    assert!(get("/ui/", None).await.starts_with("HTTP/1.1 200"));
    assert!(get("/admin/channels", None).await.starts_with("HTTP/1.1 401"));
    assert!(get("/admin/channels", Some(&d.admin_token)).await.starts_with("HTTP/1.1 200"));
}
