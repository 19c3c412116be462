//! What the desktop session offers the tray app, asked before Tauri is started (GTK and
//! the single-instance plugin panic without them on Linux).

use std::path::PathBuf;

/// Whether there is a display to show a window on. Always on macOS; on Linux, an X11 or
/// Wayland session.
pub fn has_display() -> bool {
    !cfg!(target_os = "linux") || ["DISPLAY", "WAYLAND_DISPLAY"].iter().any(|v| std::env::var_os(v).is_some())
}

/// Whether a second launch can hand over to the first. On Linux the single-instance
/// plugin needs a D-Bus session bus; without one, a second launch is still refused by the
/// data directory's lock.
pub fn single_instance_possible() -> bool {
    if !cfg!(target_os = "linux") {
        return true;
    }
    let address = std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some_and(|a| !a.is_empty());
    let runtime_bus = std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| PathBuf::from(d).join("bus").exists());
    if !(address || runtime_bus) {
        tracing::info!("no D-Bus session: a second launch is refused rather than handed over");
    }
    address || runtime_bus
}
