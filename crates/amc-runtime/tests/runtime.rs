//! AMC started as one unit: requests from inside the process act as the person, and a
//! second AMC on the same data directory is refused.

use amc_runtime::RawConfig;
use http::{Request, StatusCode};
use http_body_util::BodyExt;

fn raw(dir: &std::path::Path) -> RawConfig {
    RawConfig { data_dir: Some(dir.to_owned()), test_sender: true, ..Default::default() }
}

#[tokio::test]
async fn in_process_requests_act_as_the_person_without_a_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let running = amc_runtime::start(raw(dir.path())).await.expect("start");
    let req = Request::get("/admin/channels").body(Default::default()).expect("request");
    let res = running.in_process().call(req).await;
    assert_eq!(res.status(), StatusCode::OK);
    let body = res.into_body().collect().await.expect("body").to_bytes();
    let json: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert!(json["channels"].is_array(), "{json}");
    running.run_until(async {}).await.expect("stops cleanly");
}

#[tokio::test]
async fn a_second_amc_on_the_same_data_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = amc_runtime::start(raw(dir.path())).await.expect("start");
    let err = amc_runtime::start(raw(dir.path())).await.err().expect("refused");
    assert!(err.to_string().contains("another AMC is already running"), "{err}");
    first.run_until(async {}).await.expect("stops cleanly");
    // Once the first has stopped, the data directory is free again.
    let again = amc_runtime::start(raw(dir.path())).await.expect("starts after the first stopped");
    again.run_until(async {}).await.expect("stops cleanly");
}
