//! The tray's logic against a real AMC on a temporary data directory, with no desktop.

mod follow;
mod scheme;
mod start;

use amc_runtime::RawConfig;

/// A running AMC with the test sender, and the folder it lives in.
pub struct Fixture {
    pub running: amc_runtime::Running,
    pub _dir: tempfile::TempDir,
}

pub async fn start() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let raw = RawConfig { data_dir: Some(dir.path().to_owned()), test_sender: true, ..Default::default() };
    let running = amc_runtime::start(raw).await.expect("start");
    Fixture { running, _dir: dir }
}

/// A request as the webview hands it over.
pub fn webview_request(method: &str, uri: &str, body: &str) -> http::Request<Vec<u8>> {
    http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(body.as_bytes().to_vec())
        .expect("request")
}

/// Stores a message in a new chat through the stand-in source, as the window could.
pub async fn ingest(fx: &Fixture, chat: &str) {
    let body = serde_json::json!({
        "source": "imessage", "chat_id": chat, "chat_name": chat,
        "messages": [{ "id": format!("{chat}-1"), "sender": "+15550001", "text": "hello" }],
    });
    let scheme = amc_tray_model::scheme::Scheme::new(fx.running.in_process());
    let res = scheme.dispatch(webview_request("POST", "amc://localhost/admin/test/ingest", &body.to_string())).await;
    assert!(res.status().is_success(), "{:?}", String::from_utf8_lossy(res.body()));
}
