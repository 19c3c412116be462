//! `amc-tray`: AMC in the menu bar. It shows its tray icon, starts AMC (the core, its
//! sources and the daemon, with the same data directory and socket as `amc serve`) inside
//! its own process, then shows the tray menu, and opens the person's window on `amc://localhost/ui/`, whose requests
//! the daemon answers in-process. Glue only: the logic is in `amc-runtime` and `amc-tray-model`.
//!
//! # Layout
//! - `main.rs`: flags, the async runtime, running the app, starting AMC in it, stopping AMC.
//! - `tray.rs`: the tray icon and its menu, kept current from `amc_tray_model::follow`.
//! - `window.rs`: the `amc:` scheme and the window (created when shown, destroyed on close).
//! - `refused.rs`: what the person sees when AMC cannot start (another AMC runs).
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

mod refused;
mod tray;
mod window;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use amc_tray_model::scheme::Scheme;
use clap::Parser;
use tauri::{AppHandle, RunEvent};
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
    let stop = CancellationToken::new();
    let (scheme, scheme_rx) = tokio::sync::watch::channel(None);
    let failed = Arc::new(AtomicBool::new(false));
    let builder = tauri::Builder::default();
    // First, so that a second launch hands over to the first before anything else.
    let builder =
        if amc_tray_model::desktop::single_instance_possible() { builder.plugin(single_instance()) } else { builder };
    let builder = builder
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_autostart::init(tauri_plugin_autostart::MacosLauncher::LaunchAgent, Some(vec![AT_LOGIN])));
    let started = CancellationToken::new();
    // The start's thread is made once the app runs (its setup): handed back here, where
    // AMC is stopped, with what it started.
    let (start_thread, start_thread_rx) = std::sync::mpsc::sync_channel(1);
    let start = Start {
        raw,
        runtime: runtime.handle().clone(),
        scheme,
        failed: failed.clone(),
        started: started.clone(),
        thread: start_thread,
        stop: stop.clone(),
        hidden: flags.hidden,
    };
    let builder = window::register(builder, scheme_rx).setup(move |app| {
        #[cfg(target_os = "macos")]
        app.set_activation_policy(tauri::ActivationPolicy::Accessory);
        start.spawn(app.handle())
    });
    let app = match builder.build(tauri::generate_context!()) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("amc-tray: cannot open its window: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.spawn(quit_on_signal(app.handle().clone(), failed.clone()));
    #[cfg(target_os = "macos")]
    let reopened = failed.clone();
    let code = app.run_return(move |_app, event| match event {
        RunEvent::ExitRequested { code: None, api, .. } => {
            // The last window went away: a tray app keeps running until Quit.
            api.prevent_exit();
        }
        // Opened again while running (a double-click in Finder, `open -a AMC`): show the window.
        #[cfg(target_os = "macos")]
        RunEvent::Reopen { .. } if !reopened.load(Ordering::SeqCst) => window::show(_app),
        _ => {}
    });
    stop.cancel();
    // A start that has ended has AMC running (or failed): its thread hands it over once
    // done with it. One still under way (a long store update) is left behind: the
    // update's transaction goes with the process, and runs again at the next launch.
    let running = match start_thread_rx.try_recv() {
        Ok(thread) if started.is_cancelled() => thread.join().ok().flatten(),
        _ => None,
    };
    let code =
        if failed.load(Ordering::SeqCst) { ExitCode::FAILURE } else { ExitCode::from(u8::try_from(code).unwrap_or(1)) };
    let code = stop_amc(&runtime, running, code);
    // Nothing left running may hold the process: a task waiting on the app's main thread
    // after its event loop ended would never be answered.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    code
}

/// Starting AMC once the app runs, so that its tray icon is there at once and says how
/// far the start is (a new release may update the store first, which can take a while).
struct Start {
    raw: RawConfig,
    runtime: tokio::runtime::Handle,
    scheme: tokio::sync::watch::Sender<Option<Scheme>>,
    failed: Arc<AtomicBool>,
    /// Cancelled once the start has ended, AMC running or `failed` set.
    started: CancellationToken,
    /// Where the start's thread goes, to be joined for AMC at the end.
    thread: std::sync::mpsc::SyncSender<JoinHandle<Option<amc_runtime::Running>>>,
    stop: CancellationToken,
    hidden: bool,
}

impl Start {
    /// Shows the tray, then starts AMC on a thread of its own (opening the store may
    /// update it for seconds): once it runs, the tray gets its menu and the window opens
    /// (unless started hidden, as at login); if it cannot start, the person is told why.
    fn spawn(self, app: &AppHandle) -> Result<(), Box<dyn std::error::Error>> {
        // The reporter goes with the start: the tray stops following the update then.
        let updates = amc_core::service::UpdateReporter::default();
        let tray = tray::starting(app, self.started.clone(), updates.subscribe())?;
        let app = app.clone();
        let thread = self.thread.clone();
        let handle = std::thread::Builder::new().name("amc-start".into()).spawn(move || {
            let (runtime, raw) = (self.runtime, self.raw);
            let start = || runtime.block_on(amc_runtime::start_reporting(raw, &updates));
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(start))
                .unwrap_or_else(|_| Err(anyhow::anyhow!("AMC stopped while starting (see the log)")));
            let (running, on_main) = match result {
                Ok(running) => {
                    let amc = running.amc().clone();
                    self.scheme.send_replace(Some(Scheme::new(running.in_process())));
                    self.started.cancel();
                    let (handle, stop, hidden) = (app.clone(), self.stop, self.hidden);
                    let on_main = app.run_on_main_thread(move || {
                        if let Err(e) = tray::create(&handle, &tray.icon, amc, stop) {
                            tracing::error!(error = %e, "the tray menu could not be built");
                        }
                        // Started at login: in the menu bar only, no window (and no WebKit)
                        // yet. A window a second launch opened meanwhile is brought forward.
                        if !hidden {
                            window::show(&handle);
                        }
                    });
                    (Some(running), on_main)
                }
                Err(e) => {
                    // The person may have started the app from a terminal: say it there too.
                    eprintln!("amc-tray: {e:#}");
                    self.failed.store(true, Ordering::SeqCst);
                    self.started.cancel();
                    let (handle, message) = (app.clone(), format!("{e:#}"));
                    let on_main = app.run_on_main_thread(move || {
                        tray.failed();
                        refused::show(&handle, message);
                    });
                    (None, on_main)
                }
            };
            if let Err(e) = on_main {
                tracing::error!(error = %e, "the app stopped before AMC started");
            }
            running
        })?;
        // The one send: the channel has room for it, and setup runs once.
        let _ = thread.try_send(handle);
        Ok(())
    }
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

/// SIGTERM and SIGINT quit the app as its Quit item does (status 1 if AMC could not start).
async fn quit_on_signal(app: AppHandle, failed: Arc<AtomicBool>) {
    amc_runtime::shutdown_signal().await;
    app.exit(i32::from(failed.load(Ordering::SeqCst)));
}
