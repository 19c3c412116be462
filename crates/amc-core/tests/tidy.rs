//! Checks that hold the architecture invariants of ARCHITECTURE.md over the whole tree.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name == "target" || name == "node_modules" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if p.is_dir() {
            files(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) || p.file_name().is_some_and(|n| n == ext) {
            out.push(p);
        }
    }
}

fn rel(p: &Path) -> String {
    p.strip_prefix(workspace()).unwrap_or(p).display().to_string()
}

#[test]
fn no_core_crate_depends_on_tauri() {
    let mut manifests = Vec::new();
    files(&workspace().join("crates"), "Cargo.toml", &mut manifests);
    assert!(!manifests.is_empty());
    for m in manifests {
        let text = std::fs::read_to_string(&m).expect("read");
        let deps = text.lines().filter(|l| !l.trim_start().starts_with('#'));
        for line in deps {
            let key = line.split(['=', '.']).next().unwrap_or("").trim();
            assert!(!key.starts_with("tauri"), "{} depends on {key}: only src-tauri may", rel(&m));
        }
    }
}

/// Production code (each crate's `src/`), not tests or benches.
fn sources() -> Vec<PathBuf> {
    let mut all = Vec::new();
    files(&workspace().join("crates"), "rs", &mut all);
    all.into_iter().filter(|p| p.components().any(|c| c.as_os_str() == "src")).collect()
}

#[test]
fn only_the_store_talks_sql_to_amcs_database() {
    let store = workspace().join("crates/amc-core/src/store");
    // The iMessage source talks SQL to chat.db (read-only) and writes chat.db fixtures;
    // it reaches AMC's database only through the store's methods.
    let imessage = workspace().join("crates/amc-imessage/src");
    for p in sources() {
        if p.starts_with(&imessage) {
            let text = std::fs::read_to_string(&p).expect("read");
            assert!(!text.contains("amc.db") && !text.contains("Store::open"), "{} opens AMC's database", rel(&p));
            continue;
        }
        if p.starts_with(&store) {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("read");
        assert!(!text.contains("rusqlite::Connection"), "{} opens a database itself", rel(&p));
        for needle in ["prepare_cached(", ".execute(", "query_row(", "INSERT INTO", "UPDATE messages", "DELETE FROM"] {
            assert!(!text.contains(needle), "{} has SQL ({needle}); only the store may", rel(&p));
        }
    }
}

#[test]
fn library_crates_never_print_to_stdout() {
    for p in sources() {
        if p.to_string_lossy().contains("amc-cli") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("read");
        for needle in ["println!", "print!(", "std::io::stdout"] {
            assert!(!text.contains(needle), "{} writes to stdout ({needle}); stdout is the MCP stdio channel", rel(&p));
        }
    }
}
