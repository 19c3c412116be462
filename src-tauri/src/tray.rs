//! The tray icon and its menu: open AMC, what waits (channels, sends to review), the pause
//! switch, launch at login, quit. `amc_tray_model::follow` keeps the counts and the pause check
//! current and raises the notices. The icon is there from the app's first moment: while
//! AMC starts (and a new release updates the store, which can take a while) its menu says
//! so, with Quit.

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Wry};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_notification::NotificationExt as _;
use tokio_util::sync::CancellationToken;

use amc_core::service::Amc;
use amc_tray_model::follow::{NoticePolicy, Update, follow};
use amc_tray_model::view::TrayView;

/// The menu items whose text or check follows AMC.
#[derive(Clone)]
struct Live {
    channels: MenuItem<Wry>,
    sends: MenuItem<Wry>,
    tools: MenuItem<Wry>,
    pause: CheckMenuItem<Wry>,
    tray: TrayIcon<Wry>,
}

/// How far an update of the store is, as the start tells it.
pub type Updates = tokio::sync::watch::Receiver<Option<amc_core::service::UpdateProgress>>;

/// The tray icon while AMC starts, and the menu item that says how far.
pub struct Starting {
    pub icon: TrayIcon<Wry>,
    status: MenuItem<Wry>,
}

impl Starting {
    /// Says that AMC could not start (a dialog says why).
    pub fn failed(&self) {
        let said = "AMC could not start";
        let _ = self.status.set_text(said).and_then(|()| self.icon.set_tooltip(Some(said)));
    }
}

/// The tray icon, with a menu that says AMC is starting (how far a store update is, as
/// `updates` tells it) and Quit, kept current until `started` is cancelled or the start
/// lets go of the update's reporter. [`create`] then gives it its menu.
pub fn starting(app: &AppHandle, started: CancellationToken, mut updates: Updates) -> tauri::Result<Starting> {
    let label = amc_tray_model::view::starting_label(updates.borrow_and_update().as_ref());
    let status = MenuItem::with_id(app, "starting", &label, false, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit-starting", "Quit AMC", true, None::<&str>)?;
    let menu = Menu::with_items(app, &[&status, &PredefinedMenuItem::separator(app)?, &quit])?;
    let icon = TrayIconBuilder::with_id("amc")
        .icon(icon()?)
        .icon_as_template(cfg!(target_os = "macos"))
        .tooltip(&label)
        .menu(&menu)
        .show_menu_on_left_click(true)
        .build(app)?;
    app.on_menu_event(|app, event| {
        if event.id().as_ref() == "quit-starting" {
            // Safe while the store updates: its transaction is rolled back, and the
            // update starts over at the next launch.
            app.exit(0);
        }
    });
    let (app, shown, item) = (app.clone(), icon.clone(), status.clone());
    tauri::async_runtime::spawn(async move {
        let mut said = label;
        loop {
            tokio::select! {
                () = started.cancelled() => break,
                changed = updates.changed() => if changed.is_err() { break },
            }
            let label = amc_tray_model::view::starting_label(updates.borrow_and_update().as_ref());
            if label != said {
                said.clone_from(&label);
                let (shown, item, started) = (shown.clone(), item.clone(), started.clone());
                // Run on the main thread, not waited for: a setter called here would wait
                // for it, and after the app's event loop ended (Quit during an update)
                // nothing answers on macOS. The real menu, once there, is never overwritten.
                let _ = app.run_on_main_thread(move || {
                    if !started.is_cancelled() {
                        let _ = item.set_text(&label).and_then(|()| shown.set_tooltip(Some(&label)));
                    }
                });
            }
        }
    });
    Ok(Starting { icon, status })
}

/// The icon: a template image on macOS (the menu bar tints it), the app icon elsewhere.
fn icon() -> tauri::Result<Image<'static>> {
    if cfg!(target_os = "macos") {
        Image::from_bytes(include_bytes!("../../icons/tray-template@2x.png"))
    } else {
        Image::from_bytes(include_bytes!("../../icons/32x32.png"))
    }
}

/// Gives the tray its menu and follows AMC until `stop` is cancelled.
pub fn create(app: &AppHandle, tray: &TrayIcon<Wry>, amc: Amc, stop: CancellationToken) -> tauri::Result<()> {
    let view = tauri::async_runtime::block_on(TrayView::read(&amc)).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "reading the counts failed");
        TrayView { paused: amc.paused(), ..TrayView::default() }
    });
    let open = MenuItem::with_id(app, "open", "Open AMC", true, None::<&str>)?;
    let channels = MenuItem::with_id(app, "channels", view.channels_label(), true, None::<&str>)?;
    let sends = MenuItem::with_id(app, "sends", view.sends_label(), true, None::<&str>)?;
    let tools = MenuItem::with_id(app, "tools", view.tools_label(), true, None::<&str>)?;
    let pause = CheckMenuItem::with_id(app, "pause", "Pause all agents", true, view.paused, None::<&str>)?;
    let at_login = app.autolaunch().is_enabled().unwrap_or(false);
    let login = CheckMenuItem::with_id(app, "login", "Launch at login", true, at_login, None::<&str>)?;
    let install = MenuItem::with_id(app, "install", "Install Command-Line Tool…", true, None::<&str>)?;
    let quit = MenuItem::with_id(app, "quit", "Quit AMC", true, None::<&str>)?;
    let menu = Menu::with_items(
        app,
        &[
            &open,
            &PredefinedMenuItem::separator(app)?,
            &channels,
            &sends,
            &tools,
            &PredefinedMenuItem::separator(app)?,
            &pause,
            &login,
            &install,
            &PredefinedMenuItem::separator(app)?,
            &quit,
        ],
    )?;
    tray.set_menu(Some(menu))?;
    tray.set_tooltip(Some(view.tooltip()))?;
    let live = Live { channels, sends, tools, pause: pause.clone(), tray: tray.clone() };
    {
        let amc = amc.clone();
        let login = login.clone();
        app.on_menu_event(move |app, event| on_menu(app, &event, &amc, &pause, &login));
    }
    let handle = app.clone();
    tauri::async_runtime::spawn(follow(amc, NoticePolicy::default(), stop.cancelled_owned(), move |update| {
        // On the main thread, not waited for (see `starting`).
        let (app, live) = (handle.clone(), live.clone());
        let _ = handle.run_on_main_thread(move || apply(&app, &live, update));
    }));
    Ok(())
}

fn on_menu(app: &AppHandle, event: &MenuEvent, amc: &Amc, pause: &CheckMenuItem<Wry>, login: &CheckMenuItem<Wry>) {
    match event.id().as_ref() {
        "open" | "channels" | "sends" | "tools" => crate::window::show(app),
        "pause" => {
            // The check is set from AMC's state once it changed, not from the click.
            let _ = pause.set_checked(amc.paused());
            tauri::async_runtime::spawn(amc_tray_model::view::toggle_pause(amc.clone()));
        }
        "login" => {
            let autolaunch = app.autolaunch();
            let now = autolaunch.is_enabled().unwrap_or(false);
            let changed = if now { autolaunch.disable() } else { autolaunch.enable() };
            if let Err(e) = changed {
                tracing::warn!(error = %e, "changing launch at login failed");
            }
            let _ = login.set_checked(autolaunch.is_enabled().unwrap_or(now));
        }
        "install" => {
            use tauri_plugin_dialog::{DialogExt, MessageDialogKind};
            let installed = amc_tray_model::install::install_for_this_user();
            let kind = if installed.failed() { MessageDialogKind::Error } else { MessageDialogKind::Info };
            app.dialog().message(installed.message()).title("AMC").kind(kind).show(|_| {});
        }
        "quit" => app.exit(0),
        _ => {}
    }
}

fn apply(app: &AppHandle, live: &Live, update: Update) {
    match update {
        Update::View(view) => {
            let shown = live
                .channels
                .set_text(view.channels_label())
                .and_then(|()| live.sends.set_text(view.sends_label()))
                .and_then(|()| live.tools.set_text(view.tools_label()))
                .and_then(|()| live.pause.set_checked(view.paused))
                .and_then(|()| live.tray.set_tooltip(Some(view.tooltip())));
            if let Err(e) = shown {
                tracing::warn!(error = %e, "updating the tray failed");
            }
        }
        Update::Notice(notice) => {
            tracing::info!(text = %notice.body, "notifying");
            if let Err(e) = app.notification().builder().title(notice.title).body(notice.body).show() {
                tracing::warn!(error = %e, "the notification failed");
            }
        }
    }
}
