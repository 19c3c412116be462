//! `amc-tray`: AMC in the menu bar. It shows its tray icon, starts AMC (the core, its
//! sources and the daemon, with the same data directory and socket as `amc serve`) inside
//! its own process, gives the tray its menu (`tray.rs`), and opens the person's window on
//! `amc://localhost/ui/`, whose requests the daemon answers in-process (`window.rs`). Glue
//! only: the logic is in `amc-runtime` and `amc-tray-model`.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod tray;
mod window;

use std::process::ExitCode;

use amc_core::service::UpdateReporter;
use amc_runtime::RawConfig;
use amc_tray_model::start::{self, Phase};
use clap::Parser;
use tauri::RunEvent;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

fn main() -> ExitCode {
    let flags = start::Flags::parse();
    let runtime = match start::prepare() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("amc-tray: {e}");
            return ExitCode::FAILURE;
        }
    };
    tauri::async_runtime::set(runtime.handle().clone());
    let raw = flags.start.apply(RawConfig { data_dir: flags.data_dir, ..Default::default() });
    let stop = CancellationToken::new();
    let (scheme, scheme_rx) = watch::channel(None);
    let (phase_tx, phase) = watch::channel(Phase::Starting);
    let builder = tauri::Builder::default();
    // First, so that a second launch hands over to the first (its window shown) and exits.
    let builder = if amc_tray_model::desktop::single_instance_possible() {
        builder.plugin(tauri_plugin_single_instance::init(|app, _, _| window::show(app)))
    } else {
        builder
    };
    let builder = builder.plugin(tauri_plugin_dialog::init()).plugin(tauri_plugin_notification::init()).plugin(
        tauri_plugin_autostart::init(tauri_plugin_autostart::MacosLauncher::LaunchAgent, Some(vec![start::AT_LOGIN])),
    );
    // The start is made once the app runs (its setup), and handed back here, where AMC
    // is stopped.
    let (start_tx, start_rx) = std::sync::mpsc::sync_channel(1);
    let (handle, stopping, hidden) = (runtime.handle().clone(), stop.clone(), flags.hidden);
    let builder = window::register(builder, scheme_rx).setup(move |app| {
        #[cfg(target_os = "macos")]
        app.set_activation_policy(tauri::ActivationPolicy::Accessory);
        let updates = UpdateReporter::default();
        let tray = tray::starting(app.handle(), phase_tx.subscribe(), updates.subscribe())?;
        // Launch at login, set from the menu or the window: the menu's check follows both.
        let (login_tx, login_rx) = tokio::sync::watch::channel(());
        let login = std::sync::Arc::new(tray::AtLogin::new(app.handle(), login_tx));
        let then = tray::when_started(app.handle(), tray, stopping, hidden, login_rx);
        let _ = start_tx.try_send(start::spawn(handle, raw, updates, phase_tx, scheme, Some(login), then)?);
        Ok(())
    });
    let app = match builder.build(tauri::generate_context!()) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("amc-tray: cannot open its window: {e}");
            return ExitCode::FAILURE;
        }
    };
    let quitting = app.handle().clone();
    runtime.spawn(start::exit_on_signal(phase.clone(), move |code| quitting.exit(code)));
    #[cfg(target_os = "macos")]
    let reopened = phase.clone();
    let code = app.run_return(move |_app, event| match event {
        RunEvent::ExitRequested { code: None, api, .. } => {
            // The last window went away: a tray app keeps running until Quit.
            api.prevent_exit();
        }
        // Opened again while running (a double-click in Finder, `open -a AMC`): show the window.
        #[cfg(target_os = "macos")]
        RunEvent::Reopen { .. } if *reopened.borrow() != Phase::Failed => window::show(_app),
        _ => {}
    });
    stop.cancel();
    let running = start_rx.try_recv().ok().and_then(start::Start::finish);
    let code = start::stop(&runtime, running, phase.borrow().exit_code(code));
    // Nothing left running may hold the process: a task waiting on the app's main thread
    // after its event loop ended would never be answered.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    code
}
