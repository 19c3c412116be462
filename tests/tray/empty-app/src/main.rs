//! An empty Tauri 2 app: the window its template shows, and nothing else.
fn main() {
    tauri::Builder::default().run(tauri::generate_context!()).expect("the app runs");
}
