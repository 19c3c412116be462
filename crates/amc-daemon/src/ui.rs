//! The tray UI's static files (`ui/` at the workspace root), embedded in the binary at
//! compile time and served at `/ui/` without credentials: they hold no data, and every
//! call they make to the admin API carries the admin token.
//!
//! The files are a fixed list ([`FILES`]), so a path is either one of them or
//! `NOT_FOUND`: nothing is read from disk, and no path can climb out of `ui/`.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};

use crate::error::ApiError;
use amc_core::ErrorCode;

/// One embedded file of the UI.
pub struct UiFile {
    /// Its path under `ui/`, as served under `/ui/`.
    pub path: &'static str,
    /// Its bytes.
    pub bytes: &'static [u8],
}

macro_rules! ui_files {
    ($($path:literal),* $(,)?) => {
        &[$(UiFile { path: $path, bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ui/", $path)) }),*]
    };
}

/// Every file served under `/ui/`. A test checks that it names every file in `ui/` but
/// the README.
pub const FILES: &[UiFile] = ui_files![
    "index.html",
    "style.css",
    "icon.svg",
    "js/main.js",
    "js/api.js",
    "js/dom.js",
    "js/channels.js",
    "js/review.js",
    "js/inbox.js",
    "js/threads.js",
    "js/agents.js",
    "js/status.js",
    "js/setup.js",
];

/// The policy the tray app's window enforces, sent with every file so a browser holds
/// the UI to the same rules (no inline scripts or styles, nothing from elsewhere).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; connect-src 'self' amc:; img-src 'self' data:; \
     style-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The `Content-Type` of a UI file, from its extension.
pub fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// `GET /` and `GET /ui`: to `/ui/`.
pub async fn redirect() -> Redirect {
    Redirect::permanent("/ui/")
}

/// `GET /ui/`: the page.
pub async fn index() -> Response {
    serve("index.html")
}

/// `GET /ui/{*path}`: one of [`FILES`], or `NOT_FOUND`.
pub async fn file(axum::extract::Path(path): axum::extract::Path<String>) -> Response {
    serve(&path)
}

fn serve(path: &str) -> Response {
    let Some(file) = FILES.iter().find(|f| f.path == path) else {
        return ApiError::new(ErrorCode::NotFound, "no such file of the UI").into_response();
    };
    let mut resp = file.bytes.into_response();
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(file.path)));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    // The files change with the binary; a browser must not keep an old UI around.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files_on_disk(dir: &std::path::Path, prefix: &str, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("read ui/") {
            let entry = entry.expect("entry");
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if entry.file_type().expect("type").is_dir() {
                files_on_disk(&entry.path(), &format!("{name}/"), out);
            } else if name != "README.md" {
                out.push(name);
            }
        }
    }

    #[test]
    fn every_file_of_ui_is_embedded_and_has_a_type() {
        let mut on_disk = Vec::new();
        files_on_disk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui"), "", &mut on_disk);
        on_disk.sort();
        let mut embedded: Vec<String> = FILES.iter().map(|f| f.path.to_owned()).collect();
        embedded.sort();
        assert_eq!(embedded, on_disk, "FILES in ui.rs must list every file of ui/");
        for f in FILES {
            assert_ne!(content_type(f.path), "application/octet-stream", "{}", f.path);
        }
    }
}
