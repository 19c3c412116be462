//! When AMC cannot start, most often because `amc serve` (or another copy of the app)
//! already runs on the same data directory: the person is told why in a dialog, and the
//! app exits with a failure.

use tauri::AppHandle;
use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};

/// Shows `message` and exits with status 1 once the person dismisses it.
pub fn show(app: &AppHandle, message: String) {
    let handle = app.clone();
    app.dialog()
        .message(format!("AMC could not start.\n\n{message}"))
        .title("AMC")
        .kind(MessageDialogKind::Error)
        .buttons(MessageDialogButtons::Ok)
        .show(move |_| handle.exit(1));
}
