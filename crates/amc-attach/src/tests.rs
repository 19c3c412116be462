//! The checks on agents' files, including the race that swaps a parent directory.
use super::*;

fn setup() -> (tempfile::TempDir, AttachmentPolicy) {
    let dir = tempfile::tempdir().expect("tempdir");
    let outbox = dir.path().join("outbox");
    let policy = AttachmentPolicy::new(&[outbox, dir.path().join("missing")], &dir.path().join("staged"), dir.path())
        .expect("policy");
    (dir, policy)
}

#[test]
fn accepts_a_file_inside_the_outbox_and_stages_a_copy() {
    let (dir, policy) = setup();
    let file = dir.path().join("outbox/report.pdf");
    std::fs::write(&file, b"%PDF-1.7").expect("write");
    let checked = policy.check_path(file.to_str().expect("utf8"), 100).expect("allowed");
    let staged = policy.stage("s1", &[Accepted::File(checked)], 100).expect("staged");
    assert_eq!(staged[0].filename, "report.pdf");
    assert_eq!(std::fs::read(&staged[0].path).expect("read"), b"%PDF-1.7");
    // The original can change afterwards; the staged copy is what gets sent.
    std::fs::write(&file, b"changed").expect("write");
    assert_eq!(std::fs::read(&staged[0].path).expect("read"), b"%PDF-1.7");
}

#[test]
fn refuses_escapes_by_dotdot_symlink_relative_path_directory_and_staging() {
    let (dir, policy) = setup();
    let secret = dir.path().join("id_ed25519");
    std::fs::write(&secret, b"key").expect("write");
    let outbox = dir.path().join("outbox");
    std::os::unix::fs::symlink(&secret, outbox.join("innocent.txt")).expect("symlink");
    std::fs::create_dir(outbox.join("sub")).expect("mkdir");
    let cases = [
        secret.display().to_string(),
        format!("{}/../id_ed25519", outbox.display()),
        outbox.join("innocent.txt").display().to_string(),
        "outbox/innocent.txt".to_owned(),
        outbox.join("sub").display().to_string(),
        outbox.join("nope.txt").display().to_string(),
        "/etc/passwd".to_owned(),
        format!("{}/staged/x", dir.path().display()),
    ];
    for case in cases {
        let err = policy.check_path(&case, 1 << 20).expect_err(&case);
        assert_eq!(err.code, ErrorCode::ValidationFailed, "{case}");
        assert!(err.message.contains("outbox"), "the message names the allowed folders: {}", err.message);
    }
}

#[test]
fn refuses_hard_links_amcs_own_files_and_swaps_after_the_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let outbox = data.join("outbox");
    // The person allowed a folder that contains AMC's data directory.
    let policy =
        AttachmentPolicy::new(&[outbox.clone(), dir.path().to_owned()], &data.join("staged"), &data).expect("policy");
    std::fs::write(data.join("amc.db"), b"every message").expect("write");
    let err = policy.check_path(data.join("amc.db").to_str().expect("utf8"), 1 << 20).expect_err("private");
    assert_eq!(err.code, ErrorCode::ValidationFailed);
    std::fs::write(dir.path().join("secret"), b"key").expect("write");
    std::fs::hard_link(dir.path().join("secret"), outbox.join("linked")).expect("link");
    assert!(policy.check_path(outbox.join("linked").to_str().expect("utf8"), 1 << 20).is_err());

    let file = outbox.join("note.txt");
    std::fs::write(&file, b"fine").expect("write");
    let checked = policy.check_path(file.to_str().expect("utf8"), 1 << 20).expect("ok");
    std::fs::remove_file(&file).expect("rm");
    std::os::unix::fs::symlink(dir.path().join("secret"), &file).expect("swap in a symlink");
    // What is sent is the open file, never whatever the name means now; and a file whose
    // name no longer leads to it alone once copied is not sent at all.
    let err = policy.stage("s", &[Accepted::File(checked)], 1 << 20).expect_err("the name changed");
    assert_eq!(err.code, ErrorCode::ValidationFailed);
    assert!(!data.join("staged/s").exists(), "nothing is left staged");

    let kept = outbox.join("kept.txt");
    std::fs::write(&kept, b"unchanged").expect("write");
    let checked = policy.check_path(kept.to_str().expect("utf8"), 1 << 20).expect("ok");
    let staged = policy.stage("t", &[Accepted::File(checked)], 1 << 20).expect("staged");
    assert_eq!(std::fs::read(&staged[0].path).expect("read"), b"unchanged");
}

#[test]
fn amcs_own_files_are_unsendable_whatever_folder_is_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(data.join("run")).expect("mkdir");
    // The person allowed the data directory itself, a folder inside it, and `/`.
    let policy = AttachmentPolicy::new(
        &[data.join("outbox"), data.clone(), data.join("run"), PathBuf::from("/")],
        &data.join("staged"),
        &data,
    )
    .expect("policy");
    assert_eq!(policy.allowed_dirs(), [data.join("outbox").canonicalize().expect("c"), PathBuf::from("/")]);
    std::fs::write(data.join("admin-token"), b"token").expect("write");
    std::fs::write(data.join("run/amc.sock.lock"), b"").expect("write");
    std::fs::create_dir_all(data.join("staged/01")).expect("mkdir");
    std::fs::write(data.join("staged/01/0-a.txt"), b"staged").expect("write");
    for f in ["admin-token", "run/amc.sock.lock", "staged/01/0-a.txt", "outbox/../admin-token"] {
        let path = format!("{}/{f}", data.display());
        assert!(policy.check_path(&path, 1 << 20).is_err(), "{path}");
    }
    // A symlink to the data directory placed in the outbox leads nowhere either.
    std::os::unix::fs::symlink(&data, data.join("outbox/d")).expect("symlink");
    assert!(policy.check_path(&format!("{}/outbox/d/admin-token", data.display()), 1 << 20).is_err());
    // The outbox itself still works, named by any path that opens it.
    std::fs::write(data.join("outbox/ok.txt"), b"ok").expect("write");
    assert!(policy.check_path(&format!("{}/outbox/./ok.txt", data.display()), 1 << 20).is_ok());
}

#[test]
fn an_allowed_folder_may_be_named_through_a_symlink_above_it_but_not_below() {
    let (dir, policy) = setup();
    let outbox = dir.path().join("outbox");
    std::fs::create_dir_all(outbox.join("sub")).expect("mkdir");
    std::fs::write(outbox.join("sub/a.txt"), b"a").expect("write");
    // As /tmp is a symlink to /private/tmp on macOS.
    let alias = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(dir.path(), alias.path().join("alias")).expect("symlink");
    let via_alias = alias.path().join("alias/outbox/sub/a.txt");
    let checked = policy.check_path(via_alias.to_str().expect("utf8"), 100).expect("the alias leads to the outbox");
    assert_eq!((checked.filename.as_str(), checked.size), ("a.txt", 1));
    // A symlink below the allowed folder is refused even when it stays inside.
    std::os::unix::fs::symlink(outbox.join("sub"), outbox.join("link")).expect("symlink");
    assert!(policy.check_path(outbox.join("link/a.txt").to_str().expect("utf8"), 100).is_err());
}

#[test]
fn a_fifo_in_the_outbox_is_refused_without_blocking() {
    let (dir, policy) = setup();
    let fifo = dir.path().join("outbox/pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(status.success());
    let err = policy.check_path(fifo.to_str().expect("utf8"), 100).expect_err("a FIFO is not a regular file");
    assert_eq!(err.code, ErrorCode::ValidationFailed);
}

#[test]
fn long_names_are_shortened_keeping_the_extension() {
    let long = format!("{}.pdf", "é".repeat(200));
    let short = short_name(&long);
    assert!(short.len() <= MAX_NAME_BYTES && short.ends_with(".pdf"), "{short}");
    assert_eq!(short_name("a.txt"), "a.txt");
}

#[test]
fn refuses_a_file_over_the_platform_limit() {
    let (dir, policy) = setup();
    let file = dir.path().join("outbox/big.bin");
    std::fs::write(&file, vec![0u8; 101]).expect("write");
    let err = policy.check_path(file.to_str().expect("utf8"), 100).expect_err("too large");
    assert_eq!(err.code, ErrorCode::AttachmentTooLargeForPlatform);
}
