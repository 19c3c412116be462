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

/// The workspace as cargo reads its manifests (its members only).
fn metadata() -> cargo_metadata::Metadata {
    cargo_metadata::MetadataCommand::new()
        .manifest_path(workspace().join("Cargo.toml"))
        .no_deps()
        .exec()
        .expect("cargo metadata")
}

/// Each member crate (its folder, from the workspace's root) and its normal dependencies (not
/// dev or build; for every target), by package name, as cargo reads the manifests.
fn crates() -> Vec<(String, Vec<String>)> {
    let metadata = metadata();
    let mut out: Vec<(String, Vec<String>)> = metadata
        .workspace_packages()
        .into_iter()
        .map(|p| {
            let dir = rel(p.manifest_path.parent().expect("a folder").as_std_path());
            let mut deps: Vec<String> = p
                .dependencies
                .iter()
                .filter(|d| d.kind == cargo_metadata::DependencyKind::Normal)
                .map(|d| d.name.clone())
                .collect();
            deps.sort();
            deps.dedup();
            (dir, deps)
        })
        .collect();
    out.sort();
    assert!(out.len() > 10, "the members were read: {out:?}");
    out
}

/// Dependencies named in no code of their crate, kept on purpose: (crate folder, dependency,
/// why).
const UNNAMED_ON_PURPOSE: &[(&str, &str, &str)] = &[];

/// Every dependency is used: a normal one is named in the crate's `src/` (or `build.rs`), a
/// dev-dependency in its tests, benches or unit tests. (What cargo-machete checks, from
/// cargo's own reading of the manifests.)
#[test]
fn every_dependency_is_named_in_its_crates_code() {
    let metadata = metadata();
    let mut unused = Vec::new();
    for p in metadata.workspace_packages() {
        let dir = p.manifest_path.parent().expect("a folder").as_std_path().to_owned();
        let krate = rel(&dir);
        let mut code = Vec::new();
        files(&dir, "rs", &mut code);
        let text: String = code.iter().map(|f| std::fs::read_to_string(f).expect("read")).collect();
        let production: String = code
            .iter()
            .filter(|f| f.strip_prefix(&dir).is_ok_and(|r| r.starts_with("src") || r.starts_with("build.rs")))
            .map(|f| std::fs::read_to_string(f).expect("read"))
            .collect();
        for d in &p.dependencies {
            if d.kind == cargo_metadata::DependencyKind::Build {
                continue;
            }
            let name = d.rename.as_deref().unwrap_or(&d.name).replace('-', "_");
            if name == p.name.replace('-', "_") {
                continue;
            }
            let within = if d.kind == cargo_metadata::DependencyKind::Normal { &production } else { &text };
            // Named as a path, a `use`, a rename or a macro; never as part of a longer name.
            let ident = |c: char| c.is_alphanumeric() || c == '_';
            let named = [format!("{name}::"), format!("use {name}"), format!("{name} as "), format!("{name}!")]
                .iter()
                .any(|n| {
                    within.match_indices(n.as_str()).any(|(at, _)| {
                        // Not `std::time::` for the crate `time`, nor `use serde_json` for `serde`.
                        let after = &within[at + n.len()..];
                        let inside_a_path = within[..at].ends_with(|c| ident(c) || c == ':');
                        let a_longer_name = n.starts_with("use ") && after.starts_with(ident);
                        !(inside_a_path || a_longer_name)
                    })
                });
            let kept = UNNAMED_ON_PURPOSE.iter().any(|(c, dep, _)| *c == krate && *dep == d.name);
            if !named && !kept {
                unused.push(format!("{krate}: {} ({:?})", d.name, d.kind));
            }
        }
    }
    assert!(unused.is_empty(), "dependencies no code of their crate names: {unused:#?}");
}

/// Each framework has one owner: the crate that wraps it for the rest.
const OWNERS: &[(&str, &[&str])] = &[
    ("tauri", &["src-tauri"]),
    ("serenity", &["crates/amc-discord"]),
    ("rmcp", &["crates/amc-mcp"]),
    // amc-discord's local Discord (the `fake` feature, a test double) serves HTTP with it.
    ("axum", &["crates/amc-daemon", "crates/amc-discord"]),
    ("imessage-database", &["crates/amc-imessage"]),
    // amc-types only turns SQLite's errors into its own, behind the store's feature.
    ("rusqlite", &["crates/amc-store", "crates/amc-relay", "crates/amc-imessage", "crates/amc-types"]),
    // The store sits below the core: sources and edges go through the core's service
    // layer; the relay keeps tables of its own on the same database; the attachment
    // checks, beside the store, take its error table and private files. The test kit, a
    // dev-dependency only (checked below), opens it beside a running core for tests.
    ("amc-store", &["crates/amc-core", "crates/amc-relay", "crates/amc-attach", "crates/amc-testkit"]),
    // An agent's files are opened and its URLs fetched in one crate, which the core uses.
    ("amc-attach", &["crates/amc-core"]),
];

#[test]
fn each_framework_is_a_dependency_of_its_owner_only() {
    for (krate, deps) in crates() {
        for dep in deps {
            for (framework, owners) in OWNERS {
                if dep.starts_with(framework) {
                    assert!(owners.contains(&krate.as_str()), "{krate} depends on {dep}: only {owners:?} may");
                }
            }
        }
    }
}

#[test]
fn each_framework_is_named_in_its_owners_code_only() {
    let mut all = sources();
    files(&workspace().join("src-tauri/src"), "rs", &mut all);
    for p in all {
        let path = rel(&p);
        let text = production(&p);
        for (framework, owners) in OWNERS {
            let name = framework.replace('-', "_");
            let named = text.contains(&format!("{name}::")) || text.contains(&format!("use {name}"));
            if named {
                assert!(owners.iter().any(|o| path.starts_with(o)), "{path} names {name}: only {owners:?} may");
            }
        }
        // Of amc-discord, only the local Discord (a test double) serves HTTP.
        let serves = ["axum::", "hyper::server", "tokio_rustls::"].iter().any(|n| text.contains(n));
        if serves && path.starts_with("crates/amc-discord/") {
            assert!(path.starts_with("crates/amc-discord/src/fake/"), "{path} serves HTTP or TLS");
        }
    }
}

#[test]
fn only_the_imessage_source_opens_chat_db() {
    for p in sources() {
        let path = rel(&p);
        let text = production(&p);
        if text.contains("Connection::open") || text.contains("rusqlite::Connection") {
            assert!(
                path == "crates/amc-store/src/db.rs" || path.starts_with("crates/amc-imessage/src/"),
                "{path} opens a SQLite database: only amc-store's db.rs (AMC's) and amc-imessage (chat.db) may"
            );
        }
    }
}

/// Cryptography is in one module on RustCrypto's primitives, keys derived per purpose: no
/// crate signs, seals or derives keys on its own (agent tokens are hashed with SHA-256 where
/// they are made, which is no key).
#[test]
fn cryptography_is_in_one_module() {
    const PRIMITIVES: &[&str] = &["hmac", "hkdf", "chacha20poly1305", "aead", "aes", "ring", "openssl"];
    for (krate, deps) in crates() {
        for dep in deps {
            if PRIMITIVES.contains(&dep.as_str()) {
                assert_eq!(krate, "crates/amc-core", "{krate} depends on {dep}: cryptography is amc-core's crypto");
            }
        }
    }
    let mut all = sources();
    files(&workspace().join("src-tauri/src"), "rs", &mut all);
    for p in all {
        let path = rel(&p);
        let text = production(&p);
        for name in PRIMITIVES {
            let path_of = format!("{name}::");
            let named = text
                .match_indices(&path_of)
                .any(|(at, _)| !text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':'));
            if named {
                assert_eq!(path, "crates/amc-core/src/crypto.rs", "{path} names {name}: use amc_core::crypto");
            }
        }
    }
}

/// The test kit opens the store beside a running core: a dev-dependency only, so no
/// release build reaches the store through it.
#[test]
fn the_test_kit_is_never_a_dependency_of_production_code() {
    for (krate, deps) in crates() {
        if krate == "crates/amc-testkit" {
            continue;
        }
        assert!(!deps.iter().any(|d| d == "amc-testkit"), "{krate} depends on amc-testkit outside its tests");
    }
}

/// A source file without its unit tests (`#[cfg(test)] mod tests`, at the end by style).
fn production(p: &Path) -> String {
    let text = std::fs::read_to_string(p).expect("read");
    match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => text[..at].to_owned(),
        None => text,
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
    let stores = [workspace().join("crates/amc-store/src"), workspace().join("crates/amc-relay/src/store.rs")];
    // The iMessage source talks SQL to chat.db (read-only) and writes chat.db fixtures;
    // it reaches AMC's database only through the store's methods.
    let imessage = workspace().join("crates/amc-imessage/src");
    for p in sources() {
        if p.starts_with(&imessage) {
            let text = std::fs::read_to_string(&p).expect("read");
            assert!(!text.contains("amc.db") && !text.contains("Store::open"), "{} opens AMC's database", rel(&p));
            continue;
        }
        if stores.iter().any(|s| p.starts_with(s)) {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("read");
        assert!(!text.contains("rusqlite::Connection"), "{} opens a database itself", rel(&p));
        for needle in ["prepare_cached(", ".execute(", "query_row(", "INSERT INTO", "UPDATE messages", "DELETE FROM"] {
            assert!(!text.contains(needle), "{} has SQL ({needle}); only the store may", rel(&p));
        }
    }
}

/// Files AMC writes hold messages, attachments and secrets: each is created private, with
/// its mode given when it is made (`amc_core::files`), never by a `chmod` afterwards.
#[test]
fn files_and_folders_are_created_through_amc_core_files() {
    // A test double's own files, and the folder on the PATH the tray puts `amc` in: no secret.
    let exempt =
        ["crates/amc-store/src/files.rs", "crates/amc-discord/src/fake/", "crates/amc-tray-model/src/install.rs"];
    for p in sources() {
        let name = rel(&p);
        if exempt.iter().any(|e| name.starts_with(e)) || p.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = production(&p).replace("files::create_dir_all(", "files::");
        for needle in
            ["File::create(", "fs::write(", "create_dir_all(", "create_dir(", "OpenOptions", "fs::copy(", "DirBuilder"]
        {
            assert!(
                !text.contains(needle),
                "{name} creates a file or folder itself ({needle}); use amc_core::files, which makes it private"
            );
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

/// Tests wait on an event, a counter or a state (through `amc_testkit::eventually` and
/// `poll_until` when only asking shows it), never a fixed time: a sleep-then-check passes
/// when it should fail and flakes under load.
#[test]
fn tests_never_sleep_a_fixed_time() {
    // Every crate's tests/ and benches' helpers aside, and every unit-test module in src/.
    let mut tests = Vec::new();
    let Ok(crates) = std::fs::read_dir(workspace().join("crates")) else { panic!("no crates") };
    for c in crates.flatten() {
        files(&c.path().join("tests"), "rs", &mut tests);
    }
    assert!(tests.len() > 10);
    let mut texts: Vec<(String, String)> =
        tests.iter().map(|p| (rel(p), std::fs::read_to_string(p).expect("read"))).collect();
    let mut all = sources();
    files(&workspace().join("src-tauri/src"), "rs", &mut all);
    for p in all {
        let text = std::fs::read_to_string(&p).expect("read");
        // A whole file of tests (`#[cfg(test)] mod behaviour;` in its parent), or its unit tests.
        let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        let whole = ["lib.rs", "mod.rs", "main.rs"].iter().any(|parent| {
            std::fs::read_to_string(p.with_file_name(parent))
                .is_ok_and(|t| t.contains(&format!("#[cfg(test)]\nmod {stem};")))
        });
        if whole {
            texts.push((rel(&p), text));
        } else if let Some(at) = text.find("#[cfg(test)]\nmod tests") {
            texts.push((rel(&p), text[at..].to_owned()));
        }
    }
    for (path, text) in texts {
        // Spelt in two parts, so that this file does not match itself.
        for needle in ["time::sleep", "thread::sleep"].map(|f| format!("{f}(")) {
            assert!(!text.contains(&needle), "{path} sleeps ({needle}); wait for a state instead");
        }
    }
    // The Python tests and the tray's smoke test sleep only between looks at a state: in
    // the body of a `while` loop. (tests/tray/memory rests on purpose: it measures memory at
    // rest, and is no test.)
    let mut scripts = vec![workspace().join("tests/tray/smoke")];
    for dir in ["tests/python", "tests/browser"] {
        files(&workspace().join(dir), "py", &mut scripts);
    }
    for p in scripts {
        let text = std::fs::read_to_string(&p).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in
            lines.iter().enumerate().filter(|(_, l)| l.contains("sleep(") && !l.trim_start().starts_with('#'))
        {
            let indent = line.len() - line.trim_start().len();
            let owner = lines[..i].iter().rev().find(|l| {
                let t = l.trim_start();
                !t.is_empty() && !t.starts_with('#') && l.len() - t.len() < indent
            });
            assert!(
                owner.is_some_and(|l| l.trim_start().starts_with("while ")),
                "{}:{} sleeps outside a loop that looks at a state: {}",
                rel(&p),
                i + 1,
                line.trim()
            );
        }
    }
}

/// The store is the bottom layer, the attachment checks beside it and the core above both:
/// the store depends on no other AMC crate, the checks on the store alone, the core on the
/// two (the relay depends on the core, never the other way round).
#[test]
fn the_store_and_the_core_are_the_bottom_layers() {
    let crates = crates();
    let amc = |dir: &str| -> Vec<String> {
        let deps = &crates.iter().find(|(d, _)| d == dir).unwrap_or_else(|| panic!("no member at {dir}")).1;
        deps.iter().filter(|d| d.starts_with("amc-")).cloned().collect()
    };
    assert!(amc("crates/amc-types").is_empty(), "the vocabulary is the bottom");
    assert!(amc("crates/amc-secrets").is_empty(), "the code finder is rules alone");
    assert_eq!(amc("crates/amc-store"), ["amc-secrets", "amc-types"]);
    assert_eq!(amc("crates/amc-attach"), ["amc-store", "amc-types"]);
    assert_eq!(amc("crates/amc-core"), ["amc-attach", "amc-secrets", "amc-store", "amc-types"]);
}

/// Only the relay keeps tables of its own in AMC's database, so only it (and the core)
/// holds the raw `Database`: the one handle of the store a crate above the core is given
/// (`Amc::database()`), and the only use of it the manifests cannot refuse.
#[test]
fn only_the_relay_reaches_the_raw_database() {
    let allowed = ["amc-store", "amc-core", "amc-relay"].map(|c| workspace().join("crates").join(c).join("src"));
    for p in sources() {
        if allowed.iter().any(|a| p.starts_with(a)) {
            continue;
        }
        let text = production(&p);
        assert!(!text.contains(".database()"), "{} reaches AMC's raw database", rel(&p));
    }
}

/// The error envelope is built in one place, `amc_core::error::Envelope`.
#[test]
fn the_envelope_is_built_in_one_place() {
    let home = workspace().join("crates/amc-types/src/error.rs");
    for p in sources() {
        if p == home {
            continue;
        }
        let text = production(&p);
        assert!(!text.contains("EnvelopeBody {"), "{} builds the envelope", rel(&p));
        for line in text.lines() {
            assert!(
                !(line.contains("\"code\"") && line.contains("code.as_str()")),
                "{} builds an error's JSON by hand: {line}",
                rel(&p)
            );
        }
    }
}

/// Push positions, the search index and read marks name messages by rowid, so a rowid
/// must never be given twice or changed: no `VACUUM` (it may renumber rowids), and
/// messages are deleted only where an agent's send replaces the platform's echo of it,
/// after the send's own row is in (see ARCHITECTURE.md).
#[test]
fn message_rowids_are_never_reused() {
    let mut all = sources();
    files(&workspace().join("crates/amc-store/src/migrations"), "sql", &mut all);
    files(&workspace().join("crates/amc-relay/src/migrations"), "sql", &mut all);
    for p in all {
        let text = production(&p);
        assert!(!text.to_uppercase().contains("VACUUM"), "{} runs VACUUM, which may renumber message rowids", rel(&p));
        let deletes_messages = text.match_indices("DELETE FROM messages").any(|(at, m)| {
            // `messages` itself, not `messages_fts` or `messages_cjk`.
            !text[at + m.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
        });
        if deletes_messages {
            assert!(
                p.ends_with("crates/amc-store/src/outbox.rs"),
                "{} deletes messages; only the echo of an agent's send may go",
                rel(&p)
            );
        }
    }
}

/// Agents' queries see only channels open to them: the bare released-history condition
/// (`VISIBLE`) is for the person's views (`messages.rs`'s recent list, `search.rs` without
/// an agent), and inside `visible_to` itself.
#[test]
fn agents_queries_use_the_per_agent_condition() {
    let store = workspace().join("crates/amc-store/src");
    let word = |line: &str| {
        line.match_indices("VISIBLE").any(|(at, m)| {
            let ident = |c: char| c.is_alphanumeric() || c == '_';
            !line[..at].ends_with(ident) && !line[at + m.len()..].starts_with(ident)
        })
    };
    let mut uses = Vec::new();
    for p in sources().into_iter().filter(|p| p.starts_with(&store)) {
        let text = production(&p);
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_start();
            if word(line) && !line.starts_with("use ") && !line.contains("const VISIBLE") && !line.starts_with("//") {
                uses.push(format!("{}:{}", rel(&p), n + 1));
            }
        }
    }
    let allowed = ["channels.rs", "messages.rs", "search.rs"];
    assert_eq!(uses.len(), 3, "{{VISIBLE}} outside visible_to and the person's views: {uses:?}");
    assert!(uses.iter().all(|u| allowed.iter().any(|a| u.contains(a))), "{uses:?}");
}

/// The relay remembers which principals were admitted to which thread (`notify.rs`'s
/// `Admitted`), which holds only while access never shrinks.
#[test]
fn relay_access_only_grows() {
    let mut all = Vec::new();
    files(&workspace().join("crates/amc-relay/src"), "rs", &mut all);
    files(&workspace().join("crates/amc-relay/src/migrations"), "sql", &mut all);
    for p in all {
        let text = production(&p).to_uppercase();
        for refused in ["DELETE FROM RELAY_MEMBERS", "DELETE FROM RELAY_THREADS", "DROP TABLE RELAY_MEMBERS"] {
            assert!(!text.contains(refused), "{} runs {refused}: relay access must only grow", rel(&p));
        }
        for (at, _) in text.match_indices("UPDATE RELAY_MEMBERS") {
            let statement = &text[at..text[at..].find(';').map_or(text.len(), |end| at + end)];
            assert!(!statement.contains("ACCESS"), "{} changes a member's access in place", rel(&p));
        }
        // Joining again may raise a reader to a writer, never anything else.
        for (at, _) in text.match_indices("DO UPDATE SET ACCESS") {
            let rest = &text[at..text.len().min(at + 200)];
            assert!(
                rest.contains("WHERE RELAY_MEMBERS.ACCESS = 'READ'"),
                "{} may lower a member's access when joining again",
                rel(&p)
            );
        }
    }
}

/// A message is looked up by platform id only through `at_platform_id!` (amc-store's
/// lib.rs; db.rs registers the function), which compares the text after the key: keys of different ids may be equal.
#[test]
fn platform_ids_are_looked_up_through_one_condition() {
    let store = workspace().join("crates/amc-store/src");
    for p in sources().into_iter().filter(|p| p.starts_with(&store) && !p.ends_with("lib.rs") && !p.ends_with("db.rs"))
    {
        let text = production(&p);
        assert!(!text.contains("amc_platform_key("), "{} spells the platform key lookup itself", rel(&p));
    }
}

/// No process-wide state that code fills and others poll: a `static` lock, once-cell or
/// counter is shared by every AMC in the process (tests run many) and hides who owns it.
/// Hand a cheap `Clone` handle or a channel to whoever needs it instead (the store's update
/// progress is an `UpdateReporter` given at start, the platform keys a migration computed
/// are counted per connection; the relay's last page is its server's). A table computed
/// from constants and never written after (the secret finder's automata) is a
/// `LazyLock` of plain data, which holds none of these.
#[test]
fn no_static_holds_state_behind_a_lock() {
    let mut all = sources();
    files(&workspace().join("src-tauri/src"), "rs", &mut all);
    for p in all {
        let text = production(&p);
        // Per thread is process-wide too: state a caller cannot see being passed.
        assert!(!text.contains(&format!("{}!", "thread_local")), "{}: a thread-local; pass the state in", rel(&p));
        for line in text.lines() {
            let code = line.trim_start();
            let declared = ["static ", "pub static ", "pub(crate) static "].iter().any(|s| code.starts_with(s));
            for kind in ["Mutex", "RwLock", "OnceLock", "OnceCell", "Atomic"] {
                assert!(
                    !(declared && code.contains(kind)),
                    "{}: a static {kind} ({code}); make it state owned by a handle that is passed in",
                    rel(&p)
                );
            }
        }
    }
}

/// No crate holds a value filled in after it was shared (`Arc<Mutex<Option<…>>>`,
/// `Arc<OnceLock<…>>`): what starts later is handed over when it exists (a channel, a
/// thread's result). The tray shell holds no `Mutex<Option<…>>` at all.
#[test]
fn no_crate_shares_a_value_it_fills_in_later() {
    // What a shared `Mutex<Option<…>>` may hold because it is a cache or a resource opened on
    // demand, not a value others wait to be filled in: (file, why).
    const CACHES: &[(&str, &str)] = &[
        ("crates/amc-mcp/src/written.rs", "the last page written, a cache any call may replace"),
        (
            "crates/amc-tray-model/src/scheme.rs",
            "the event subscription, opened by the first poll and again after it ends",
        ),
    ];
    let mut all = sources();
    files(&workspace().join("src-tauri/src"), "rs", &mut all);
    for p in all {
        let path = rel(&p);
        let text = production(&p).split_whitespace().collect::<String>();
        for kind in ["OnceLock<", "OnceCell<"] {
            assert!(
                !text.contains(&format!("Arc<{kind}")) && !text.contains(&format!("Arc<std::sync::{kind}")),
                "{path} shares a {kind}…> filled in after it is shared; hand the value over once it exists"
            );
        }
        let shared_option = ["Arc<Mutex<Option<", "Arc<std::sync::Mutex<Option<", "Arc<tokio::sync::Mutex<Option<"]
            .iter()
            .any(|n| text.contains(n));
        let in_shell = path.starts_with("src-tauri/");
        assert!(
            !(shared_option || (in_shell && text.contains("Mutex<Option<"))) || CACHES.iter().any(|(f, _)| *f == path),
            "{path} shares a Mutex<Option<…>> filled in later; hand the value over once it exists"
        );
    }
}

/// The top-level modules of a crate's `src/` (a file `a.rs` or a folder `a/`) each import
/// from (`crate::b`), by name: lib.rs and main.rs, which wire the modules, are left out.
fn module_imports(src: &Path) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut found = Vec::new();
    files(src, "rs", &mut found);
    let mut imports: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for p in found {
        let inner = p.strip_prefix(src).expect("under src");
        let top = inner.components().next().expect("a file").as_os_str().to_string_lossy();
        let top = top.strip_suffix(".rs").unwrap_or(&top).to_owned();
        if top == "lib" || top == "main" {
            continue;
        }
        let text = production(&p);
        let named = imports.entry(top.clone()).or_default();
        for (at, _) in text.match_indices("crate::") {
            let rest = &text[at + "crate::".len()..];
            // `crate::a::…`, or each name of `crate::{a, b::c}`.
            let group = match rest.strip_prefix('{') {
                Some(inside) => &inside[..inside.find('}').unwrap_or(inside.len())],
                None => &rest[..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())],
            };
            for item in group.split(',') {
                let name: String = item.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() && name != top && name != "self" {
                    named.insert(name);
                }
            }
        }
    }
    imports
}

/// No two modules of a crate import from each other: each crate's modules form layers, so
/// a newcomer reads one without the other.
#[test]
fn no_two_modules_import_from_each_other() {
    let mut roots: Vec<PathBuf> = std::fs::read_dir(workspace().join("crates"))
        .expect("crates")
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    roots.push(workspace().join("src-tauri/src"));
    let mut circles = Vec::new();
    for src in roots {
        let imports = module_imports(&src);
        for (a, named) in &imports {
            for b in named.iter().filter(|b| a < *b) {
                if imports.get(b).is_some_and(|back| back.contains(a)) {
                    circles.push((rel(&src), a.clone(), b.clone()));
                }
            }
        }
    }
    assert!(circles.is_empty(), "modules that import from each other: {circles:?}");
}

/// ARCHITECTURE.md stays a short map that is true: every path it names (in backticks, with
/// a `/` or a file's extension) exists, and it fits in 250 lines (figures go to
/// docs/performance.md).
#[test]
fn architecture_md_names_only_paths_that_exist() {
    let text = std::fs::read_to_string(workspace().join("ARCHITECTURE.md")).expect("read");
    assert!(text.lines().count() <= 250, "ARCHITECTURE.md has {} lines; keep it a map", text.lines().count());
    let extensions = [".rs", ".md", ".sql", ".toml", ".json", ".py", ".js", ".plist", ".css", ".html"];
    let mut named = 0;
    for (i, span) in text.split('`').enumerate() {
        // Odd pieces are inside backticks.
        let path = span.trim_end_matches('/');
        let is_path = i % 2 == 1
            && !span.contains([' ', ':', '*', '…', '<', '{', '('])
            && (span.contains('/') || extensions.iter().any(|e| span.ends_with(e)));
        if is_path {
            named += 1;
            assert!(workspace().join(path).exists(), "ARCHITECTURE.md names `{span}`, which does not exist");
        }
    }
    assert!(named > 20, "only {named} paths found: the check reads the file wrong");
}
