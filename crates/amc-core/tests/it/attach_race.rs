//! An agent racing AMC's attachment checks: the file it names must be the file staged.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use amc_core::attach::{Accepted, AttachmentPolicy};

/// An agent that can write inside the outbox swaps a parent directory of the file it
/// names for a symlink to a folder outside, as fast as it can, while AMC checks and
/// stages that file. Whatever the timing, nothing from outside may be staged.
#[cfg(target_os = "linux")]
#[test]
fn a_parent_directory_swapped_for_a_symlink_never_stages_a_file_from_outside() {
    const SENDS: usize = 5_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let outbox = dir.path().join("outbox");
    let policy =
        AttachmentPolicy::new(std::slice::from_ref(&outbox), &dir.path().join("staged"), dir.path()).expect("policy");
    std::fs::create_dir_all(dir.path().join("outside/d")).expect("mkdir");
    std::fs::write(dir.path().join("outside/d/report.txt"), b"SECRET").expect("write");
    std::fs::create_dir(outbox.join("d")).expect("mkdir");
    std::fs::write(outbox.join("d/report.txt"), b"fine").expect("write");
    std::os::unix::fs::symlink(dir.path().join("outside/d"), outbox.join("alt")).expect("symlink");

    let stop = AtomicBool::new(false);
    let swaps = AtomicU64::new(0);
    let (mut staged_inside, mut refused, mut escapes) = (0, 0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let (a, b) = (outbox.join("d"), outbox.join("alt"));
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(rustix::fs::CWD, &a, rustix::fs::CWD, &b, rustix::fs::RenameFlags::EXCHANGE)
                    .expect("RENAME_EXCHANGE");
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        });
        let requested = outbox.join("d/report.txt").display().to_string();
        for i in 0..SENDS {
            let checked = match policy.check_path(&requested, 1 << 20) {
                Ok(c) => c,
                Err(_) => {
                    refused += 1;
                    continue;
                }
            };
            match policy.stage(&format!("race-{i}"), &[Accepted::File(checked)], 1 << 20) {
                Ok(staged) => match std::fs::read(&staged[0].path).expect("read staged").as_slice() {
                    b"fine" => staged_inside += 1,
                    _ => escapes += 1,
                },
                Err(_) => refused += 1,
            }
            policy.discard(&format!("race-{i}"));
        }
        stop.store(true, Ordering::Relaxed);
    });
    eprintln!(
        "{SENDS} sends, {} swaps: {staged_inside} staged from inside, {refused} refused, {escapes} escapes",
        swaps.load(Ordering::Relaxed)
    );
    assert_eq!(escapes, 0, "a file from outside the allowed folders was staged");
    // The race really ran: some sends landed on each side of a swap.
    assert!(staged_inside > 0 && refused > 0, "{staged_inside} staged, {refused} refused");
}

/// An agent links a file from outside into the outbox and takes the link away again, as
/// fast as it can: a file with a second name is refused, whenever the link count is read.
#[test]
fn a_hard_link_made_and_removed_around_the_check_never_stages_a_file_from_outside() {
    const SENDS: usize = 3_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let outbox = dir.path().join("outbox");
    let policy =
        AttachmentPolicy::new(std::slice::from_ref(&outbox), &dir.path().join("staged"), dir.path()).expect("policy");
    std::fs::write(dir.path().join("secret"), b"SECRET").expect("write");
    let stop = AtomicBool::new(false);
    let (mut staged_inside, mut refused, mut escapes) = (0, 0, 0);
    std::thread::scope(|s| {
        s.spawn(|| {
            let (secret, name, tmp) = (dir.path().join("secret"), outbox.join("x"), outbox.join("x.tmp"));
            while !stop.load(Ordering::Relaxed) {
                // The secret under the name, then a file of the agent's own, each whole.
                let _ = std::fs::hard_link(&secret, &name);
                let _ = std::fs::remove_file(&name);
                let _ = std::fs::write(&tmp, b"fine");
                let _ = std::fs::rename(&tmp, &name);
                let _ = std::fs::remove_file(&name);
            }
        });
        let requested = outbox.join("x").display().to_string();
        for i in 0..SENDS {
            let Ok(checked) = policy.check_path(&requested, 1 << 20) else {
                refused += 1;
                continue;
            };
            match policy.stage(&format!("link-{i}"), &[Accepted::File(checked)], 1 << 20) {
                Ok(staged) => match std::fs::read(&staged[0].path).expect("read staged").as_slice() {
                    b"SECRET" => escapes += 1,
                    _ => staged_inside += 1,
                },
                Err(_) => refused += 1,
            }
            policy.discard(&format!("link-{i}"));
        }
        stop.store(true, Ordering::Relaxed);
    });
    eprintln!("{SENDS} sends: {staged_inside} staged from inside, {refused} refused, {escapes} escapes");
    assert_eq!(escapes, 0, "a file from outside the allowed folders was staged through a hard link");
}
