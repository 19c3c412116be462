//! Starting AMC inside the tray app, and stopping it when the app ends. The tray icon is
//! there from the app's first moment; AMC starts beside it on a thread of its own, since
//! opening the store may update it for a while (a new release). What the start reached is
//! a [`Phase`] anyone may watch: the tray's "starting" menu, the window's `amc:` requests,
//! a signal's exit status.

use std::path::PathBuf;
use std::process::ExitCode;
use std::thread::JoinHandle;

use amc_core::service::{Amc, UpdateReporter};
use amc_runtime::RawConfig;
use amc_runtime::Running;
use tokio::sync::watch;

use crate::scheme::Scheme;

/// AMC's tray app. With no flags it uses the same data directory as `amc serve`.
#[derive(clap::Parser)]
#[command(name = "amc-tray", version, about)]
pub struct Flags {
    /// Where AMC keeps its database and socket [default: the per-user data directory]
    #[arg(long, env = "AMC_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// What `amc serve` takes too.
    #[command(flatten)]
    pub start: amc_runtime::StartFlags,
    /// Start in the menu bar without opening the window (as at login)
    #[arg(long)]
    pub hidden: bool,
}

/// The flag the login item starts the app with.
pub const AT_LOGIN: &str = "--hidden";

/// What the app runs on before Tauri starts: the log, and one async runtime that Tauri's
/// tasks (notifications, dialogs) and AMC's share. Refused, with the reason to print, where
/// the app cannot show anything (GTK cannot start without a display, and Tauri would panic).
pub fn prepare() -> Result<tokio::runtime::Runtime, String> {
    if !crate::desktop::has_display() {
        return Err("no desktop session (DISPLAY or WAYLAND_DISPLAY); run `amc serve` to run AMC headless".into());
    }
    amc_runtime::init_logging("info");
    tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| format!("cannot start: {e}"))
}

/// Waits for SIGTERM or SIGINT, then quits as the Quit item does: `exit` with status 1 if
/// AMC could not start, 0 otherwise.
pub async fn exit_on_signal(phase: watch::Receiver<Phase>, exit: impl FnOnce(i32)) {
    amc_runtime::shutdown_signal().await;
    exit(i32::from(*phase.borrow() == Phase::Failed));
}

/// How far the start is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Under way (the store may be updating).
    Starting,
    /// AMC runs.
    Running,
    /// AMC could not start; the app ends with a failure once the person was told.
    Failed,
}

impl Phase {
    /// The exit status an app ending now gives: a failure if AMC could not start.
    pub fn exit_code(self, asked: i32) -> ExitCode {
        match self {
            Phase::Failed => ExitCode::FAILURE,
            _ => ExitCode::from(u8::try_from(asked).unwrap_or(1)),
        }
    }
}

/// What the shell does once the start has ended, on the start's thread: show the menu and
/// the window, or say why AMC could not start.
pub type Then = Box<dyn FnOnce(Result<Amc, String>) + Send>;

/// A start, under way or ended.
pub struct Start {
    phase: watch::Receiver<Phase>,
    thread: JoinHandle<Option<Running>>,
}

/// Starts AMC with `raw` on a thread named `amc-start`, its async work on `runtime`.
/// `updates` tells how far a store update is; `phase` is told when the start ends, and
/// `scheme` gets the window's way to the daemon once AMC runs (and `login`, the app's
/// launch at login, which the window sets too). `then` runs last, on the
/// same thread. A panic in the start is a failed start, not a lost thread.
pub fn spawn(
    runtime: tokio::runtime::Handle,
    raw: RawConfig,
    updates: UpdateReporter,
    phase: watch::Sender<Phase>,
    scheme: watch::Sender<Option<Scheme>>,
    login: Option<std::sync::Arc<dyn crate::scheme::LaunchAtLogin>>,
    then: Then,
) -> std::io::Result<Start> {
    let watching = phase.subscribe();
    let thread = std::thread::Builder::new().name("amc-start".into()).spawn(move || {
        let start = || runtime.block_on(amc_runtime::start_reporting(raw, &updates));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(start))
            .unwrap_or_else(|_| Err(anyhow::anyhow!("AMC stopped while starting (see the log)")));
        // The reporter goes with the start: whoever follows the update stops then.
        drop(updates);
        match result {
            Ok(running) => {
                scheme.send_replace(Some(Scheme::new(running.in_process()).with_login(login)));
                phase.send_replace(Phase::Running);
                then(Ok(running.amc().clone()));
                Some(running)
            }
            Err(e) => {
                phase.send_replace(Phase::Failed);
                then(Err(format!("{e:#}")));
                None
            }
        }
    })?;
    Ok(Start { phase: watching, thread })
}

impl Start {
    /// AMC, to be stopped, once the start has ended. A start still under way (a long store
    /// update) is left behind: the update's transaction goes with the process and runs
    /// again at the next launch.
    pub fn finish(self) -> Option<Running> {
        if *self.phase.borrow() == Phase::Starting {
            return None;
        }
        self.thread.join().ok().flatten()
    }
}

/// Stops AMC (its socket is removed) and passes `code` on, or a failure if it could not
/// stop cleanly.
pub fn stop(runtime: &tokio::runtime::Runtime, running: Option<Running>, code: ExitCode) -> ExitCode {
    if let Some(running) = running
        && let Err(e) = runtime.block_on(running.run_until(async {}))
    {
        tracing::error!(error = %format!("{e:#}"), "stopping AMC");
        return ExitCode::FAILURE;
    }
    code
}

/// What the tray's "starting" item says, each time it changes, while the start is under
/// way: `show` is called with the label of the update `updates` tells (the first at once),
/// and no more once `phase` leaves [`Phase::Starting`] or the start lets go of the updates.
pub async fn follow_starting(
    mut phase: watch::Receiver<Phase>,
    mut updates: watch::Receiver<Option<amc_core::service::UpdateProgress>>,
    show: impl Fn(String),
) {
    let mut said = crate::view::starting_label(updates.borrow_and_update().as_ref());
    show(said.clone());
    loop {
        tokio::select! {
            _ = phase.wait_for(|p| *p != Phase::Starting) => break,
            changed = updates.changed() => if changed.is_err() { break },
        }
        let label = crate::view::starting_label(updates.borrow_and_update().as_ref());
        if label != said && *phase.borrow() == Phase::Starting {
            said.clone_from(&label);
            show(label);
        }
    }
}
