//! Every file AMC writes is private from the moment it exists, whatever the umask: the
//! database and its log, the admin token, staged attachments, the test sender's record of
//! sends, and a bundle written anywhere the person asks.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use super::{AMC, json, stdout};

/// `amc` run by a shell whose umask is 022, the usual one: files made without a mode of
/// their own come out 0644, readable by every account of the Mac.
fn under_umask_022(dir: &Path) -> Command {
    let mut c = Command::new("sh");
    c.args(["-c", "umask 022 && exec \"$0\" \"$@\"", AMC]).env("AMC_DATA_DIR", dir);
    c
}

/// Every file and folder under `dir`, with its mode, links not followed.
fn modes(dir: &Path) -> Vec<(PathBuf, std::fs::FileType, u32)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("ls").flatten() {
            let meta = std::fs::symlink_metadata(e.path()).expect("lstat");
            if meta.is_dir() {
                todo.push(e.path());
            }
            out.push((e.path(), meta.file_type(), meta.permissions().mode() & 0o777));
        }
    }
    out
}

#[test]
fn every_file_amc_writes_is_private_under_a_wide_umask() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let mut serve = under_umask_022(&dir)
        .args(["serve", "--test-sender"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn amc serve");
    let socket = dir.join("run/amc.sock");
    amc_testkit::poll_until("amc serve to start", || {
        (socket.exists() && dir.join("admin-token").exists()).then_some(())
    });

    // A bundle, written where the person asked, over a file that was readable by all.
    let bundle = tmp.path().join("claude.mcpb");
    std::fs::write(&bundle, b"an older download").expect("write");
    std::fs::set_permissions(&bundle, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let added = under_umask_022(&dir)
        .args(["--json", "agent", "add", "claude", "--mcpb"])
        .arg(&bundle)
        .output()
        .expect("agent add");
    let token = json(&added)["token"].as_str().expect("token").to_owned();

    // A send with a file, so a staged copy and the test sender's record exist.
    let ch = super::conversation(&dir, "+15550001111", Some("Ada"), "Send me the plan?");
    stdout(&super::amc(&dir, &["channel", "approve", &ch, "--history", "all", "--policy", "review"]));
    // The person's own file (not AMC's to make private), private all the same here so
    // the walk below holds every file to 0600.
    std::fs::write(dir.join("outbox/plan.txt"), b"the plan").expect("write");
    std::fs::set_permissions(dir.join("outbox/plan.txt"), std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let sent = rt.block_on(async {
        let mut agent = amc_client::Connection::connect(&socket)
            .await
            .expect("connect")
            .with_bearer(&token)
            .with_header("X-Agent-ID", "claude");
        let body =
            json!({ "channel_id": ch, "text": "here", "attachments": [{ "path": dir.join("outbox/plan.txt") }] });
        agent.post("/messages/send", &body).await.expect("send")
    });
    assert_eq!(sent.status, 202, "{}", sent.json());
    let mut seen = private_files(tmp.path(), &dir, &bundle);
    let held = json(&super::amc(&dir, &["--json", "review", "list"]));
    let send_id = held["sends"][0]["id"].as_str().expect("a held send").to_owned();
    stdout(&super::amc(&dir, &["review", "approve", &send_id]));
    amc_testkit::poll_until("the send to be recorded", || dir.join("test-sender.jsonl").exists().then_some(()));
    seen.extend(private_files(tmp.path(), &dir, &bundle));
    for expected in ["data/amc.db", "data/amc.db-wal", "data/admin-token", "data/test-sender.jsonl", "claude.mcpb"] {
        assert!(seen.iter().any(|s| s == expected), "{expected} not among {seen:?}");
    }
    assert!(seen.iter().any(|s| s.starts_with("data/staged/") && s.ends_with("plan.txt")), "{seen:?}");
    let _ = serve.kill();
    let _ = serve.wait();
}

/// Checks that every file under `dir`, and the bundle, is 0600 and every folder 0700 (the
/// socket: no access for others); returns their paths under `root`.
fn private_files(root: &Path, dir: &Path, bundle: &Path) -> Vec<String> {
    let mut seen = Vec::new();
    for (path, kind, mode) in modes(dir).into_iter().chain([(bundle.to_owned(), file_type(bundle), mode(bundle))]) {
        let want = if kind.is_dir() { 0o700 } else { 0o600 };
        assert!(mode == want || (kind.is_socket() && mode & 0o077 == 0), "{} is {mode:o}", path.display());
        seen.push(path.strip_prefix(root).expect("inside").display().to_string());
    }
    seen
}

fn file_type(p: &Path) -> std::fs::FileType {
    std::fs::symlink_metadata(p).expect("lstat").file_type()
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).expect("lstat").permissions().mode() & 0o777
}
