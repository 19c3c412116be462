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
use amc_tray_model::start::{Phase, Then, follow_starting};
use amc_tray_model::view::{Action, Entry, NOTE, TrayView};
use tokio::sync::watch;

/// How far an update of the store is, as the start tells it.
type Updates = watch::Receiver<Option<amc_core::service::UpdateProgress>>;

/// The tray icon while AMC starts, and its menu.
pub struct Starting {
    icon: TrayIcon<Wry>,
    menu: Menu<Wry>,
}

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

/// The tray icon, with a menu that says AMC is starting (how far a store update is, as
/// `updates` tells it) and Quit, kept current while `phase` says the start is under way.
/// [`when_started`] then gives it its menu. Quit quits from now on, whatever the menu.
pub fn starting(app: &AppHandle, phase: watch::Receiver<Phase>, updates: Updates) -> tauri::Result<Starting> {
    let label = amc_tray_model::view::starting_label(updates.borrow().as_ref());
    let menu = build(app, amc_tray_model::view::starting_menu(&label))?;
    let icon = TrayIconBuilder::with_id("amc")
        .icon(icon()?)
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
    Ok(Starting { icon, menu })
}

/// What the tray does once the start has ended: give the tray its menu and open the window
/// (unless started hidden, as at login), or say AMC could not start and why.
pub fn when_started(app: &AppHandle, tray: Starting, stop: CancellationToken, hidden: bool) -> Then {
    let app = app.clone();
    Box::new(move |started| {
        let handle = app.clone();
        let on_main = match started {
            Ok(amc) => app.run_on_main_thread(move || {
                if let Err(e) = create(&handle, &tray.icon, amc, stop) {
                    tracing::error!(error = %e, "the tray menu could not be built");
                }
                // A window a second launch opened meanwhile is brought forward.
                if !hidden {
                    crate::window::show(&handle);
                }
            }),
            Err(message) => {
                // The person may have started the app from a terminal: say it there too.
                eprintln!("amc-tray: {message}");
                app.run_on_main_thread(move || {
                    let said = "AMC could not start";
                    let _ = set_text(&tray.menu, NOTE, said).and_then(|()| tray.icon.set_tooltip(Some(said)));
                    refused(&handle, message);
                })
            }
        };
        if let Err(e) = on_main {
            tracing::error!(error = %e, "the app stopped before AMC started");
        }
    })
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
fn create(app: &AppHandle, tray: &TrayIcon<Wry>, amc: Amc, stop: CancellationToken) -> tauri::Result<()> {
    let view = tauri::async_runtime::block_on(TrayView::read(&amc)).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "reading the counts failed");
        TrayView { paused: amc.paused(), ..TrayView::default() }
    });
    let menu = build(app, view.menu(app.autolaunch().is_enabled().unwrap_or(false)))?;
    tray.set_menu(Some(menu.clone()))?;
    tray.set_tooltip(Some(view.tooltip()))?;
    let (shown, items) = (amc.clone(), menu.clone());
    app.on_menu_event(move |app, event| on_menu(app, &event, &shown, &items));
    let (handle, tray) = (app.clone(), tray.clone());
    tauri::async_runtime::spawn(follow(amc, NoticePolicy::default(), stop.cancelled_owned(), move |update| {
        // On the main thread, not waited for (see `starting`).
        let (app, menu, tray) = (handle.clone(), menu.clone(), tray.clone());
        let _ = handle.run_on_main_thread(move || apply(&app, &menu, &tray, update));
    }));
    Ok(())
}

/// The check item of `action` in `menu`.
fn check(menu: &Menu<Wry>, action: Action) -> Option<CheckMenuItem<Wry>> {
    menu.get(action.id())?.as_check_menuitem().cloned()
}

fn on_menu(app: &AppHandle, event: &MenuEvent, amc: &Amc, menu: &Menu<Wry>) {
    match Action::of(event.id().as_ref()) {
        Some(Action::Open | Action::Channels | Action::Sends | Action::Tools) => crate::window::show(app),
        Some(Action::Pause) => {
            // The check is set from AMC's state once it changed, not from the click.
            if let Some(item) = check(menu, Action::Pause) {
                let _ = item.set_checked(amc.paused());
            }
            tauri::async_runtime::spawn(amc_tray_model::view::toggle_pause(amc.clone()));
        }
        Some(Action::Login) => {
            let autolaunch = app.autolaunch();
            let now = autolaunch.is_enabled().unwrap_or(false);
            let changed = if now { autolaunch.disable() } else { autolaunch.enable() };
            if let Err(e) = changed {
                tracing::warn!(error = %e, "changing launch at login failed");
            }
            if let Some(item) = check(menu, Action::Login) {
                let _ = item.set_checked(autolaunch.is_enabled().unwrap_or(now));
            }
        }
        Some(Action::Install) => {
            use tauri_plugin_dialog::{DialogExt, MessageDialogKind};
            let installed = amc_tray_model::install::install_for_this_user();
            let kind = if installed.failed() { MessageDialogKind::Error } else { MessageDialogKind::Info };
            app.dialog().message(installed.message()).title("AMC").kind(kind).show(|_| {});
        }
        // Quit is answered by the handler `starting` set, which stays.
        Some(Action::Quit) | None => {}
    }
}

fn apply(app: &AppHandle, menu: &Menu<Wry>, tray: &TrayIcon<Wry>, update: Update) {
    match update {
        Update::View(view) => {
            let mut shown = tray.set_tooltip(Some(view.tooltip()));
            for (action, label) in view.live() {
                shown = shown.and_then(|()| set_text(menu, action.id(), &label));
            }
            if let Some(item) = check(menu, Action::Pause) {
                shown = shown.and_then(|()| item.set_checked(view.paused));
            }
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

/// Says AMC could not start (most often because `amc serve`, or another copy of the app,
/// runs on the same data directory), and exits with status 1 once the person has read it.
fn refused(app: &AppHandle, message: String) {
    use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
    let handle = app.clone();
    app.dialog()
        .message(format!("AMC could not start.\n\n{message}"))
        .title("AMC")
        .kind(MessageDialogKind::Error)
        .buttons(MessageDialogButtons::Ok)
        .show(move |_| handle.exit(1));
}
