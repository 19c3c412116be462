//! The tray icon and its menu: open AMC, what waits (channels, sends to review), the pause
//! switch, launch at login, quit. The icon is there from the app's first moment: while AMC
//! starts (and a new release updates the store, which can take a while) its menu says so,
//! with Quit. `amc_tray_model` decides what the menu says and when a notice is raised.

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Wry};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_dialog::{DialogExt as _, MessageDialogKind};
use tauri_plugin_notification::NotificationExt as _;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use amc_core::service::{Amc, UpdateProgress};
use amc_tray_model::follow::{NoticePolicy, Update, follow};
use amc_tray_model::start::{Phase, Then, follow_starting};
use amc_tray_model::view::{Action, Entry, NOTE, TrayView};

/// The tray icon while AMC starts, and its menu.
pub type Starting = (TrayIcon<Wry>, Menu<Wry>);

/// A menu of `entries`.
fn build(app: &AppHandle, entries: Vec<Entry>) -> tauri::Result<Menu<Wry>> {
    let menu = Menu::new(app)?;
    for entry in entries {
        match entry {
            Entry::Item(a, label) => menu.append(&MenuItem::with_id(app, a.id(), label, true, None::<&str>)?)?,
            Entry::Check(a, label, on) => {
                menu.append(&CheckMenuItem::with_id(app, a.id(), label, true, on, None::<&str>)?)?
            }
            Entry::Note(label) => menu.append(&MenuItem::with_id(app, NOTE, label, false, None::<&str>)?)?,
            Entry::Separator => menu.append(&PredefinedMenuItem::separator(app)?)?,
        }
    }
    Ok(menu)
}

/// Sets the text of `menu`'s item `id`, if it has one.
fn set_text(menu: &Menu<Wry>, id: &str, text: &str) -> tauri::Result<()> {
    menu.get(id).and_then(|i| i.as_menuitem().cloned()).map_or(Ok(()), |item| item.set_text(text))
}

/// Sets the check of `menu`'s check item for `action`.
fn set_checked(menu: &Menu<Wry>, action: Action, on: bool) -> tauri::Result<()> {
    menu.get(action.id()).and_then(|i| i.as_check_menuitem().cloned()).map_or(Ok(()), |item| item.set_checked(on))
}

/// The tray icon, with a menu that says AMC is starting (how far a store update is, as
/// `updates` tells it) and Quit, kept current while `phase` says the start is under way.
/// [`when_started`] then gives it its menu. Quit quits from now on, whatever the menu.
pub fn starting(
    app: &AppHandle,
    phase: watch::Receiver<Phase>,
    updates: watch::Receiver<Option<UpdateProgress>>,
) -> tauri::Result<Starting> {
    let label = amc_tray_model::view::starting_label(updates.borrow().as_ref());
    let menu = build(app, amc_tray_model::view::starting_menu(&label))?;
    // The menu bar tints a template image on macOS; elsewhere the app icon shows.
    let image = if cfg!(target_os = "macos") {
        Image::from_bytes(include_bytes!("../../icons/tray-template@2x.png"))?
    } else {
        Image::from_bytes(include_bytes!("../../icons/32x32.png"))?
    };
    let icon = TrayIconBuilder::with_id("amc")
        .icon(image)
        .icon_as_template(cfg!(target_os = "macos"))
        .tooltip(&label)
        .menu(&menu)
        .show_menu_on_left_click(true)
        .build(app)?;
    app.on_menu_event(|app, event| {
        if Action::of(event.id().as_ref()) == Some(Action::Quit) {
            app.exit(0);
        }
    });
    let (app, shown, items) = (app.clone(), icon.clone(), menu.clone());
    tauri::async_runtime::spawn(follow_starting(phase.clone(), updates, move |label| {
        let (shown, items, phase) = (shown.clone(), items.clone(), phase.clone());
        // Run on the main thread, not waited for: a setter called here would wait for it,
        // and after the app's event loop ended (Quit during an update) nothing answers on
        // macOS. The real menu, once there, is never overwritten.
        let _ = app.run_on_main_thread(move || {
            if *phase.borrow() == Phase::Starting {
                let _ = set_text(&items, NOTE, &label).and_then(|()| shown.set_tooltip(Some(&label)));
            }
        });
    }));
    Ok((icon, menu))
}

/// What the tray does once the start has ended: give the tray its menu and open the window
/// (unless started hidden, as at login), or say AMC could not start and why, then exit
/// with status 1.
pub fn when_started(
    app: &AppHandle,
    (icon, menu): Starting,
    stop: CancellationToken,
    hidden: bool,
    login: tokio::sync::watch::Receiver<()>,
) -> Then {
    let app = app.clone();
    Box::new(move |started| {
        if let Err(message) = &started {
            // The person may have started the app from a terminal: say it there too.
            eprintln!("amc-tray: {message}");
        }
        let handle = app.clone();
        let on_main = app.run_on_main_thread(move || match started {
            Ok(amc) => {
                if let Err(e) = create(&handle, &icon, amc, stop, login) {
                    tracing::error!(error = %e, "the tray menu could not be built");
                }
                // A window a second launch opened meanwhile is brought forward.
                if !hidden {
                    crate::window::show(&handle);
                }
            }
            Err(message) => {
                let said = "AMC could not start";
                let _ = set_text(&menu, NOTE, said).and_then(|()| icon.set_tooltip(Some(said)));
                let exit = handle.clone();
                say(&handle, format!("{said}.\n\n{message}"), MessageDialogKind::Error, move || exit.exit(1));
            }
        });
        if let Err(e) = on_main {
            tracing::error!(error = %e, "the app stopped before AMC started");
        }
    })
}

/// Gives the tray its menu and follows AMC until `stop` is cancelled.
fn create(
    app: &AppHandle,
    tray: &TrayIcon<Wry>,
    amc: Amc,
    stop: CancellationToken,
    mut login: tokio::sync::watch::Receiver<()>,
) -> tauri::Result<()> {
    // The counts are read by `follow`, whose first update is the current view: the main
    // thread never waits on the store.
    let view = TrayView { paused: amc.paused(), ..TrayView::default() };
    let menu = build(app, view.menu(app.autolaunch().is_enabled().unwrap_or(false)))?;
    tray.set_menu(Some(menu.clone()))?;
    tray.set_tooltip(Some(view.tooltip()))?;
    let (shown, items) = (amc.clone(), menu.clone());
    app.on_menu_event(move |app, event| on_menu(app, &event, &shown, &items));
    // Launch at login changed from the window: the menu's check says so.
    let (handle, checked, ended) = (app.clone(), menu.clone(), stop.clone());
    tauri::async_runtime::spawn(async move {
        loop {
            tokio::select! {
                changed = login.changed() => if changed.is_err() { return },
                () = ended.cancelled() => return,
            }
            let (app, menu) = (handle.clone(), checked.clone());
            let _ = handle.run_on_main_thread(move || {
                let _ = set_checked(&menu, Action::Login, app.autolaunch().is_enabled().unwrap_or(false));
            });
        }
    });
    let (handle, tray) = (app.clone(), tray.clone());
    tauri::async_runtime::spawn(follow(amc, NoticePolicy::default(), stop.cancelled_owned(), move |update| {
        // On the main thread, not waited for (see `starting`).
        let (app, menu, tray) = (handle.clone(), menu.clone(), tray.clone());
        let _ = handle.run_on_main_thread(move || apply(&app, &menu, &tray, update));
    }));
    Ok(())
}

fn on_menu(app: &AppHandle, event: &MenuEvent, amc: &Amc, menu: &Menu<Wry>) {
    let shown = match Action::of(event.id().as_ref()) {
        Some(Action::Open | Action::Channels | Action::Sends | Action::Tools) => {
            crate::window::show(app);
            Ok(())
        }
        Some(Action::Pause) => {
            // The check shows AMC's state once it changed (an update), not the click.
            let kept = set_checked(menu, Action::Pause, amc.paused());
            tauri::async_runtime::spawn(amc_tray_model::view::toggle_pause(amc.clone()));
            kept
        }
        Some(Action::Login) => {
            let autolaunch = app.autolaunch();
            let now = autolaunch.is_enabled().unwrap_or(false);
            if let Err(e) = if now { autolaunch.disable() } else { autolaunch.enable() } {
                tracing::warn!(error = %e, "changing launch at login failed");
            }
            set_checked(menu, Action::Login, autolaunch.is_enabled().unwrap_or(now))
        }
        Some(Action::Install) => {
            let installed = amc_tray_model::install::install_for_this_user();
            let kind = if installed.failed() { MessageDialogKind::Error } else { MessageDialogKind::Info };
            say(app, installed.message(), kind, || {});
            Ok(())
        }
        // Quit is answered by the handler `starting` set, which stays.
        Some(Action::Quit) | None => Ok(()),
    };
    if let Err(e) = shown {
        tracing::warn!(error = %e, "updating the tray failed");
    }
}

fn apply(app: &AppHandle, menu: &Menu<Wry>, tray: &TrayIcon<Wry>, update: Update) {
    let shown = match update {
        Update::View(view) => view
            .live()
            .iter()
            .try_for_each(|(action, label)| set_text(menu, action.id(), label))
            .and_then(|()| set_checked(menu, Action::Pause, view.paused))
            .and_then(|()| tray.set_tooltip(Some(view.tooltip()))),
        Update::Notice(notice) => {
            tracing::info!(text = %notice.body, "notifying");
            if let Err(e) = app.notification().builder().title(notice.title).body(notice.body).show() {
                tracing::warn!(error = %e, "the notification failed");
            }
            Ok(())
        }
    };
    if let Err(e) = shown {
        tracing::warn!(error = %e, "updating the tray failed");
    }
}

/// A dialog saying `text`; `then` runs once the person has closed it.
fn say(app: &AppHandle, text: String, kind: MessageDialogKind, then: impl FnOnce() + Send + 'static) {
    app.dialog().message(text).title("AMC").kind(kind).show(move |_| then());
}

/// Launch at login as the window sets it (`amc_tray_model::scheme::LOGIN`): the autostart
/// plugin's login item, and a word to the menu so its check follows.
pub struct AtLogin {
    app: AppHandle,
    changed: tokio::sync::watch::Sender<()>,
}

impl AtLogin {
    /// Launch at login of `app`, telling `changed` when the window changes it.
    pub fn new(app: &AppHandle, changed: tokio::sync::watch::Sender<()>) -> Self {
        Self { app: app.clone(), changed }
    }
}

impl amc_tray_model::scheme::LaunchAtLogin for AtLogin {
    fn is_on(&self) -> Result<bool, String> {
        self.app.autolaunch().is_enabled().map_err(|e| e.to_string())
    }

    fn set(&self, on: bool) -> Result<(), String> {
        let autolaunch = self.app.autolaunch();
        if on { autolaunch.enable() } else { autolaunch.disable() }.map_err(|e| e.to_string())?;
        self.changed.send_replace(());
        Ok(())
    }
}
