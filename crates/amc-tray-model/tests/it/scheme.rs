//! The window's `amc://localhost/…` requests reach the daemon as the person.

use std::time::Duration;

use amc_tray_model::scheme::Scheme;

use crate::{ingest, start, webview_request};

fn json(res: &http::Response<Vec<u8>>) -> serde_json::Value {
    serde_json::from_slice(res.body()).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(res.body())))
}

#[tokio::test]
async fn the_window_reads_the_admin_api_without_a_token() {
    let fx = start().await;
    let health =
        Scheme::new(fx.running.in_process()).dispatch(webview_request("GET", "amc://localhost/healthz", "")).await;
    assert_eq!(health.status(), 200);
    ingest(&fx, "alice").await;
    let res = Scheme::new(fx.running.in_process())
        .dispatch(webview_request("GET", "amc://localhost/admin/channels?state=pending", ""))
        .await;
    assert_eq!(res.status(), 200);
    let channels = json(&res)["channels"].as_array().cloned().expect("channels");
    assert_eq!(channels.len(), 1);
    assert_eq!(channels[0]["name"], "alice");
    fx.running.run_until(async {}).await.expect("stops");
}

#[tokio::test]
async fn the_window_acts_as_the_person() {
    let fx = start().await;
    let res = Scheme::new(fx.running.in_process())
        .dispatch(webview_request("POST", "amc://localhost/admin/pause", r#"{"paused":true}"#))
        .await;
    assert!(res.status().is_success(), "{}", String::from_utf8_lossy(res.body()));
    assert!(fx.running.amc().paused());
    fx.running.run_until(async {}).await.expect("stops");
}

#[tokio::test]
async fn other_hosts_are_refused_with_the_envelope() {
    let fx = start().await;
    for uri in ["amc://example.com/admin/channels", "amc://localhost.evil/healthz", "https://example.org/healthz"] {
        let res = Scheme::new(fx.running.in_process()).dispatch(webview_request("GET", uri, "")).await;
        assert_eq!(res.status(), 403, "{uri}");
        assert_eq!(json(&res)["error"]["code"], "FORBIDDEN", "{uri}");
    }
    fx.running.run_until(async {}).await.expect("stops");
}

#[tokio::test]
async fn unknown_routes_get_the_envelope() {
    let fx = start().await;
    let res = Scheme::new(fx.running.in_process()).dispatch(webview_request("GET", "amc://localhost/nope", "")).await;
    assert_eq!(res.status(), 404);
    assert_eq!(json(&res)["error"]["code"], "NOT_FOUND");
    fx.running.run_until(async {}).await.expect("stops");
}

fn events_request() -> http::Request<Vec<u8>> {
    webview_request("GET", "amc://localhost/admin/events", "")
}

#[tokio::test]
async fn the_event_stream_answers_with_the_next_event_then_ends() {
    let fx = start().await;
    let scheme = Scheme::new(fx.running.in_process()).event_poll(Duration::from_secs(10));
    let listening = fx.running.amc().events().listeners();
    let poll = tokio::spawn({
        let scheme = scheme.clone();
        async move { scheme.dispatch(events_request()).await }
    });
    // The request subscribes to the feed before the change.
    let events = fx.running.amc().events().clone();
    amc_testkit::eventually("the event stream to subscribe", || async {
        (events.listeners() > listening).then_some(())
    })
    .await;
    fx.running.amc().set_paused(true).await.expect("pause");
    let res = tokio::time::timeout(Duration::from_secs(5), poll).await.expect("ends after the event").expect("task");
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    let text = String::from_utf8_lossy(res.body()).into_owned();
    assert!(text.starts_with("retry: "), "{text}");
    assert!(text.contains(r#""type":"pause_changed""#) && text.contains(r#""paused":true"#), "{text}");
    fx.running.run_until(async {}).await.expect("stops");
}

#[tokio::test]
async fn events_between_two_polls_wait_for_the_next_poll() {
    let fx = start().await;
    let scheme = Scheme::new(fx.running.in_process()).event_poll(Duration::from_millis(300));
    // The first poll subscribes, and ends empty.
    let first = scheme.dispatch(events_request()).await;
    assert!(!String::from_utf8_lossy(first.body()).contains("data:"));
    // Changes while no request is open, as while EventSource reconnects.
    fx.running.amc().set_paused(true).await.expect("pause");
    fx.running.amc().set_paused(false).await.expect("resume");
    let second = String::from_utf8_lossy(scheme.dispatch(events_request()).await.body()).into_owned();
    assert!(second.contains(r#""paused":true"#), "{second}");
    let third = String::from_utf8_lossy(scheme.dispatch(events_request()).await.body()).into_owned();
    assert!(third.contains(r#""paused":false"#), "{third}");
    fx.running.run_until(async {}).await.expect("stops");
}

#[tokio::test]
async fn a_quiet_event_stream_ends_empty_after_its_wait() {
    let fx = start().await;
    let scheme = Scheme::new(fx.running.in_process()).event_poll(Duration::from_millis(300));
    let started = tokio::time::Instant::now();
    let res = scheme.dispatch(events_request()).await;
    assert_eq!(res.status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(300));
    let text = String::from_utf8_lossy(res.body()).into_owned();
    assert!(!text.contains("data:"), "{text}");
    fx.running.run_until(async {}).await.expect("stops");
}

/// A login item that keeps its state, or refuses as macOS may.
struct LoginItem(std::sync::Mutex<bool>, bool);

impl amc_tray_model::scheme::LaunchAtLogin for LoginItem {
    fn is_on(&self) -> Result<bool, String> {
        Ok(*self.0.lock().expect("lock"))
    }

    fn set(&self, on: bool) -> Result<(), String> {
        if self.1 {
            return Err("Operation not permitted".into());
        }
        *self.0.lock().expect("lock") = on;
        Ok(())
    }
}

#[tokio::test]
async fn the_window_reads_and_sets_launch_at_login_through_the_app() {
    let fx = start().await;
    let item = std::sync::Arc::new(LoginItem(std::sync::Mutex::new(false), false));
    let scheme = Scheme::new(fx.running.in_process()).with_login(Some(item.clone()));
    let login = "amc://localhost/tray/login";
    let res = scheme.dispatch(webview_request("GET", login, "")).await;
    assert_eq!((res.status().as_u16(), json(&res)), (200, serde_json::json!({ "on": false })));
    let res = scheme.dispatch(webview_request("POST", login, r#"{"on":true}"#)).await;
    assert_eq!((res.status().as_u16(), json(&res)), (200, serde_json::json!({ "on": true })));
    assert!(*item.0.lock().expect("lock"), "the login item is on");
    for bad in [r#"{"on":"yes"}"#, r#"{"on":true,"also":1}"#, "not json"] {
        let res = scheme.dispatch(webview_request("POST", login, bad)).await;
        assert_eq!(res.status(), 422, "{bad}");
        assert_eq!(json(&res)["error"]["code"], "VALIDATION_FAILED", "{bad}");
    }
    // macOS refusing is said, and the state read again.
    let refusing = std::sync::Arc::new(LoginItem(std::sync::Mutex::new(false), true));
    let scheme = Scheme::new(fx.running.in_process()).with_login(Some(refusing));
    let res = scheme.dispatch(webview_request("POST", login, r#"{"on":true}"#)).await;
    assert_eq!(res.status(), 409);
    assert!(json(&res)["error"]["message"].as_str().is_some_and(|m| m.contains("Operation not permitted")));
    // Without the app (amc serve in a browser), the route is the daemon's: none.
    let res = Scheme::new(fx.running.in_process()).dispatch(webview_request("GET", login, "")).await;
    assert_eq!(res.status(), 404);
    fx.running.run_until(async {}).await.expect("stops");
}
