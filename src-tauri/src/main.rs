//! `amc-tray`: AMC in the menu bar. It shows its tray icon, starts AMC (the core, its
//! sources and the daemon, with the same data directory and socket as `amc serve`) inside
//! its own process, then shows the tray menu, and opens the person's window on `amc://localhost/ui/`, whose requests
//! the daemon answers in-process. Glue only: the logic is in `amc-runtime` and `amc-tray-model`.
//!
//! # Layout
//! - `main.rs`: flags, the async runtime, running the app; AMC starts and stops through
//!   `amc_tray_model::start`.
//! - `tray.rs`: the tray icon and its menu, kept current from `amc_tray_model::follow`, and
//!   the dialog that says AMC could not start.
//! - `window.rs`: the `amc:` scheme and the window (created when shown, destroyed on close).
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod tray;
mod window;

use std::process::ExitCode;

use amc_tray_model::start::{self, Phase};
use clap::Parser;
use tauri::{AppHandle, RunEvent};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use amc_core::service::UpdateReporter;
use amc_runtime::RawConfig;

fn main() -> ExitCode {
    let flags = start::Flags::parse();
    if !amc_tray_model::desktop::has_display() {
        // GTK cannot start without a display (and Tauri would panic): say so instead.
        eprintln!("amc-tray: no desktop session (DISPLAY or WAYLAND_DISPLAY); run `amc serve` to run AMC headless");
        return ExitCode::FAILURE;
    }
    amc_runtime::init_logging("info");
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("amc-tray: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Tauri's tasks (notifications, dialogs) and AMC's share one runtime.
    tauri::async_runtime::set(runtime.handle().clone());
    let raw = flags.start.apply(RawConfig { data_dir: flags.data_dir, ..Default::default() });
    let stop = CancellationToken::new();
    let (scheme, scheme_rx) = watch::channel(None);
    let (phase_tx, phase) = watch::channel(Phase::Starting);
    let builder = tauri::Builder::default();
    // First, so that a second launch hands over to the first before anything else.
    let builder =
        if amc_tray_model::desktop::single_instance_possible() { builder.plugin(single_instance()) } else { builder };
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
        let then = tray::when_started(app.handle(), tray, stopping, hidden);
        let _ = start_tx.try_send(start::spawn(handle, raw, updates, phase_tx, scheme, then)?);
        Ok(())
    });
    let app = match builder.build(tauri::generate_context!()) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("amc-tray: cannot open its window: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.spawn(quit_on_signal(app.handle().clone(), phase.clone()));
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

/// A second launch of the app opens the first one's window and exits.
fn single_instance() -> tauri::plugin::TauriPlugin<tauri::Wry> {
    tauri_plugin_single_instance::init(|app, _argv, _cwd| {
        tracing::info!("opened again: showing the window");
        window::show(app);
    })
}

/// SIGTERM and SIGINT quit the app as its Quit item does (status 1 if AMC could not start).
async fn quit_on_signal(app: AppHandle, phase: watch::Receiver<Phase>) {
    amc_runtime::shutdown_signal().await;
    app.exit(i32::from(*phase.borrow() == Phase::Failed));
}
