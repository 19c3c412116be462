//! The person's window: it loads `amc://localhost/ui/`, and the `amc:` scheme hands each
//! of its requests to the daemon in this process. The window exists only while shown:
//! closing it destroys it, and WebKit's web process with it (a quarter of a gigabyte on
//! Linux), so AMC at rest in the menu bar is the daemon alone; showing it creates it again.

use amc_tray_model::scheme::Scheme;
use tauri::{AppHandle, Manager, WebviewWindowBuilder};

/// The window's label in `tauri.conf.json`.
pub const MAIN: &str = "main";

/// Registers the `amc:` scheme, answered by the daemon in this process once `scheme`
/// holds it (AMC has started). The app stays alive when its window is closed (see
/// `main`'s run loop).
pub fn register(
    builder: tauri::Builder<tauri::Wry>,
    scheme: tokio::sync::watch::Receiver<Option<Scheme>>,
) -> tauri::Builder<tauri::Wry> {
    builder.register_asynchronous_uri_scheme_protocol(amc_tray_model::scheme::SCHEME, move |ctx, request, responder| {
        let csp = ctx.app_handle().config().app.security.csp.as_ref().map(|c| c.to_string());
        let scheme = scheme.clone();
        tauri::async_runtime::spawn(async move {
            responder.respond(amc_tray_model::scheme::answer(scheme, request, csp).await);
        });
    })
}

/// Shows and focuses the window, creating it from its configuration if it is closed.
pub fn show(app: &AppHandle) {
    let shown = match app.get_webview_window(MAIN) {
        Some(window) => window.unminimize().and_then(|()| window.show()).and_then(|()| window.set_focus()),
        None => app.config().app.windows.iter().find(|w| w.label == MAIN).cloned().map_or(
            Err(tauri::Error::WindowNotFound),
            |config| {
                WebviewWindowBuilder::from_config(app, &config)?
                    // The window shows AMC's own pages only; links elsewhere do not open in it:
                    // Discord's pages and System Settings' panes open outside, by the system.
                    .on_navigation(|url| {
                        let own = url.scheme() == amc_tray_model::scheme::SCHEME
                            && url.host_str() == Some(amc_tray_model::scheme::HOST);
                        if !own && amc_tray_model::scheme::opened_outside(url.as_str()) {
                            open_outside(url.as_str());
                        }
                        own
                    })
                    .build()
                    .and_then(|window| window.show().and_then(|()| window.set_focus()))
            },
        ),
    };
    if let Err(e) = shown {
        tracing::warn!(error = %e, "showing the window failed");
    }
}

/// Opens `url` with the system: System Settings or the person's browser.
fn open_outside(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    match std::process::Command::new(opener).arg(url).spawn() {
        // Waited for on a thread of its own, so it leaves no zombie.
        Ok(mut child) => drop(std::thread::spawn(move || child.wait())),
        Err(e) => tracing::warn!(error = %e, "could not open a link outside the window"),
    }
}
