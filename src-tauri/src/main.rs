//! `amc-tray`: AMC in the menu bar. It starts AMC (the core, its sources and the daemon,
//! with the same data directory and socket as `amc serve`) inside its own process, shows
//! the tray menu, and opens the person's window on `amc://localhost/ui/`, whose requests
//! the daemon answers in-process. Glue only: the logic is in `amc-runtime` and `amc-tray-model`.
//!
//! # Layout
//! - `main.rs`: flags, the async runtime, starting AMC, running the app, stopping AMC.
//! - `tray.rs`: the tray icon and its menu, kept current from `amc_tray_model::follow`.
//! - `window.rs`: the `amc:` scheme and the window (created when shown, destroyed on close).
//! - `refused.rs`: what the person sees when AMC cannot start (another AMC runs).
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod refused;
mod tray;
mod window;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tauri::RunEvent;
use tokio_util::sync::CancellationToken;

use amc_core::config::RawConfig;

/// AMC's tray app. With no flags it uses the same data directory as `amc serve`.
#[derive(Parser)]
#[command(name = "amc-tray", version, about)]
struct Flags {
    /// Where AMC keeps its database and socket [default: the per-user data directory]
    #[arg(long, env = "AMC_DATA_DIR")]
    data_dir: Option<PathBuf>,
    #[command(flatten)]
    start: amc_runtime::StartFlags,
    /// Start in the menu bar without opening the window (as at login)
    #[arg(long)]
    hidden: bool,
}

/// The flag the login item starts the app with.
const AT_LOGIN: &str = "--hidden";

fn main() -> ExitCode {
    let flags = Flags::parse();
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
    let started = runtime.block_on(amc_runtime::start(raw));
    if let Err(e) = &started {
        // The person may have started the app from a terminal: say it there too.
        eprintln!("amc-tray: {e:#}");
    }
    let stop = CancellationToken::new();
    let builder = tauri::Builder::default();
    // First, so that a second launch hands over to the first before anything else.
    let builder =
        if amc_tray_model::desktop::single_instance_possible() { builder.plugin(single_instance()) } else { builder };
    let builder = builder
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_autostart::init(tauri_plugin_autostart::MacosLauncher::LaunchAgent, Some(vec![AT_LOGIN])));
    let builder = match &started {
        Ok(running) => {
            let amc = running.amc().clone();
            let (daemon, stop, hidden) = (running.in_process(), stop.clone(), flags.hidden);
            window::register(builder, daemon).setup(move |app| {
                #[cfg(target_os = "macos")]
                app.set_activation_policy(tauri::ActivationPolicy::Accessory);
                // Started at login: in the menu bar only, no window (and no WebKit) yet.
                if !hidden {
                    window::create(app.handle())?;
                }
                tray::create(app.handle(), amc, stop)?;
                Ok(())
            })
        }
        Err(e) => {
            let message = format!("{e:#}");
            builder.setup(move |app| {
                refused::show(app.handle(), message);
                Ok(())
            })
        }
    };
    let app = match builder.build(tauri::generate_context!()) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("amc-tray: cannot open its window: {e}");
            return stop_amc(&runtime, started.ok(), ExitCode::FAILURE);
        }
    };
    let failed = started.is_err();
    runtime.spawn(quit_on_signal(app.handle().clone(), if failed { 1 } else { 0 }));
    let code = app.run_return(move |_app, event| match event {
        RunEvent::ExitRequested { code: None, api, .. } => {
            // The last window went away: a tray app keeps running until Quit.
            api.prevent_exit();
        }
        // Opened again while running (a double-click in Finder, `open -a AMC`): show the window.
        #[cfg(target_os = "macos")]
        RunEvent::Reopen { .. } if !failed => window::show(_app),
        _ => {}
    });
    stop.cancel();
    let code = if failed { ExitCode::FAILURE } else { ExitCode::from(u8::try_from(code).unwrap_or(1)) };
    stop_amc(&runtime, started.ok(), code)
}

/// Stops AMC (its socket is removed) and passes `code` on.
fn stop_amc(runtime: &tokio::runtime::Runtime, running: Option<amc_runtime::Running>, code: ExitCode) -> ExitCode {
    if let Some(running) = running
        && let Err(e) = runtime.block_on(running.run_until(async {}))
    {
        eprintln!("amc-tray: stopping AMC: {e:#}");
        return ExitCode::FAILURE;
    }
    code
}

/// A second launch of the app opens the first one's window and exits.
fn single_instance() -> tauri::plugin::TauriPlugin<tauri::Wry> {
    tauri_plugin_single_instance::init(|app, _argv, _cwd| {
        tracing::info!("opened again: showing the window");
        window::show(app);
    })
}

/// SIGTERM and SIGINT quit the app as its Quit item does.
async fn quit_on_signal(app: tauri::AppHandle, code: i32) {
    amc_runtime::shutdown_signal().await;
    app.exit(code);
}
