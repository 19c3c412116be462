//! AMC started beside the tray as the app starts it: on a thread of its own, telling how
//! far it is, and stopped when the app ends.

use std::process::ExitCode;
use std::sync::mpsc;

use amc_core::service::UpdateReporter;
use amc_runtime::RawConfig;
use amc_tray_model::scheme::Scheme;
use amc_tray_model::start::{self, Phase};
use tokio::sync::watch;

fn raw(dir: &std::path::Path) -> RawConfig {
    RawConfig { data_dir: Some(dir.to_owned()), test_sender: true, ..Default::default() }
}

struct Started {
    start: start::Start,
    phase: watch::Receiver<Phase>,
    scheme: watch::Receiver<Option<Scheme>>,
    told: mpsc::Receiver<Result<String, String>>,
}

/// Starts AMC as the app does; what the shell is told comes back on `told`.
fn spawn(dir: &std::path::Path) -> Started {
    let (phase_tx, phase) = watch::channel(Phase::Starting);
    let (scheme_tx, scheme) = watch::channel(None);
    let (told_tx, told) = mpsc::channel();
    let then: start::Then = Box::new(move |started| {
        let _ = told_tx.send(started.map(|amc| amc.config().data_dir.display().to_string()));
    });
    let runtime = tokio::runtime::Handle::current();
    let start =
        start::spawn(runtime, raw(dir), UpdateReporter::default(), phase_tx, scheme_tx, None, then).expect("spawn");
    Started { start, phase, scheme, told }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_tells_its_phase_hands_the_window_its_way_and_stops_at_the_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = spawn(dir.path());
    s.phase.wait_for(|p| *p != Phase::Starting).await.expect("the start ends");
    assert_eq!(*s.phase.borrow(), Phase::Running);
    assert!(s.scheme.borrow().is_some(), "the window can reach the daemon once AMC runs");
    let told = tokio::task::spawn_blocking(move || s.told.recv().expect("told")).await.expect("join");
    assert_eq!(told, Ok(dir.path().display().to_string()));

    // A second app on the same data directory: its start fails, saying why.
    let mut second = spawn(dir.path());
    second.phase.wait_for(|p| *p != Phase::Starting).await.expect("the start ends");
    assert_eq!(*second.phase.borrow(), Phase::Failed);
    let told = tokio::task::spawn_blocking(move || second.told.recv().expect("told")).await.expect("join");
    assert!(matches!(&told, Err(why) if why.contains("another AMC is already running")), "{told:?}");
    assert_eq!(Phase::Failed.exit_code(0), ExitCode::FAILURE);
    assert!(second.start.finish().is_none());

    // The first is stopped when its app ends: the data directory is free again.
    let running = s.start.finish().expect("AMC, to stop");
    running.run_until(async {}).await.expect("stops cleanly");
    let mut again = spawn(dir.path());
    again.phase.wait_for(|p| *p != Phase::Starting).await.expect("the start ends");
    assert_eq!(*again.phase.borrow(), Phase::Running);
    again.start.finish().expect("AMC").run_until(async {}).await.expect("stops cleanly");
}

#[tokio::test]
async fn the_window_waits_for_amc_and_is_told_when_it_could_not_start() {
    let (scheme_tx, scheme) = watch::channel(None);
    let asked = tokio::spawn(amc_tray_model::scheme::answer(
        scheme,
        crate::webview_request("GET", "amc://localhost/ui/", ""),
        Some("default-src 'self'".into()),
    ));
    // The start failed: nothing will ever answer through the daemon.
    drop(scheme_tx);
    let res = asked.await.expect("join");
    assert_eq!(res.status(), http::StatusCode::SERVICE_UNAVAILABLE);

    // Once AMC runs: a page without a policy of its own gets the app's, and a page with
    // one keeps it.
    let fx = crate::start().await;
    let (_scheme_tx, scheme) = watch::channel(Some(Scheme::new(fx.running.in_process())));
    let ask = |uri: &str| {
        let req = crate::webview_request("GET", uri, "");
        amc_tray_model::scheme::answer(scheme.clone(), req, Some("default-src 'none'".into()))
    };
    let res = ask("amc://localhost/admin/channels").await;
    assert_eq!(res.status(), http::StatusCode::OK);
    assert_eq!(res.headers()[http::header::CONTENT_SECURITY_POLICY], "default-src 'none'");
    let res = ask("amc://localhost/ui/").await;
    let own = res.headers()[http::header::CONTENT_SECURITY_POLICY].to_str().expect("text");
    assert!(own.starts_with("default-src 'self'"), "{own}");
}

#[test]
fn the_login_item_starts_the_app_hidden_with_serves_flags() {
    use clap::Parser;
    let flags = start::Flags::try_parse_from(["amc-tray", start::AT_LOGIN, "--test-sender"]).expect("flags");
    assert!(flags.hidden && flags.data_dir.is_none());
    let raw = flags.start.apply(RawConfig::default());
    assert!(raw.test_sender, "amc serve's flags are taken");
    assert!(!start::Flags::try_parse_from(["amc-tray"]).expect("flags").hidden);
}
