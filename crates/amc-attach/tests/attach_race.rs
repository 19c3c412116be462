//! An agent racing AMC's attachment checks: the file it names must be the file staged.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use amc_attach::{Accepted, AttachmentPolicy};

/// What became of the sends made while an agent raced them.
#[derive(Debug, Default)]
struct Outcome {
    /// Sends that staged a file from inside the outbox.
    inside: usize,
    /// Sends refused.
    refused: usize,
    /// Sends that staged the file from outside (it holds `SECRET`).
    escapes: usize,
}

/// A data directory with its outbox, and its policy.
fn outbox() -> (tempfile::TempDir, std::path::PathBuf, AttachmentPolicy) {
    let dir = tempfile::tempdir().expect("tempdir");
    let outbox = dir.path().join("outbox");
    let policy =
        AttachmentPolicy::new(std::slice::from_ref(&outbox), &dir.path().join("staged"), dir.path()).expect("policy");
    (dir, outbox, policy)
}

/// Checks and stages `requested` `sends` times while another thread runs `attack` over and
/// over, as fast as it can.
fn race(policy: &AttachmentPolicy, requested: &Path, sends: usize, attack: impl Fn() + Sync) -> Outcome {
    let stop = AtomicBool::new(false);
    let mut out = Outcome::default();
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                attack();
            }
        });
        let requested = requested.display().to_string();
        for i in 0..sends {
            let Ok(checked) = policy.check_path(&requested, 1 << 20) else {
                out.refused += 1;
                continue;
            };
            match policy.stage(&format!("race-{i}"), &[Accepted::File(checked)], 1 << 20) {
                Ok(staged) => match std::fs::read(&staged[0].path).expect("read staged").as_slice() {
                    b"SECRET" => out.escapes += 1,
                    _ => out.inside += 1,
                },
                Err(_) => out.refused += 1,
            }
            policy.discard(&format!("race-{i}"));
        }
        stop.store(true, Ordering::Relaxed);
    });
    out
}

/// An agent that can write inside the outbox swaps a parent directory of the file it
/// names for a symlink to a folder outside, as fast as it can, while AMC checks and
/// stages that file. Whatever the timing, nothing from outside may be staged.
#[cfg(target_os = "linux")]
#[test]
fn a_parent_directory_swapped_for_a_symlink_never_stages_a_file_from_outside() {
    const SENDS: usize = 5_000;
    let (dir, outbox, policy) = outbox();
    std::fs::create_dir_all(dir.path().join("outside/d")).expect("mkdir");
    std::fs::write(dir.path().join("outside/d/report.txt"), b"SECRET").expect("write");
    std::fs::create_dir(outbox.join("d")).expect("mkdir");
    std::fs::write(outbox.join("d/report.txt"), b"fine").expect("write");
    std::os::unix::fs::symlink(dir.path().join("outside/d"), outbox.join("alt")).expect("symlink");
    let swaps = std::sync::atomic::AtomicU64::new(0);
    let (a, b) = (outbox.join("d"), outbox.join("alt"));
    let out = race(&policy, &outbox.join("d/report.txt"), SENDS, || {
        rustix::fs::renameat_with(rustix::fs::CWD, &a, rustix::fs::CWD, &b, rustix::fs::RenameFlags::EXCHANGE)
            .expect("RENAME_EXCHANGE");
        swaps.fetch_add(1, Ordering::Relaxed);
    });
    eprintln!("{SENDS} sends, {} swaps: {out:?}", swaps.load(Ordering::Relaxed));
    assert_eq!(out.escapes, 0, "a file from outside the allowed folders was staged");
    // The race really ran: some sends landed on each side of a swap.
    assert!(out.inside > 0 && out.refused > 0, "{out:?}");
}

/// An agent links a file from outside into the outbox and takes the link away again, as
/// fast as it can: a file with a second name is refused, whenever the link count is read.
#[test]
fn a_hard_link_made_and_removed_around_the_check_never_stages_a_file_from_outside() {
    const SENDS: usize = 3_000;
    let (dir, outbox, policy) = outbox();
    std::fs::write(dir.path().join("secret"), b"SECRET").expect("write");
    let (secret, name, tmp) = (dir.path().join("secret"), outbox.join("x"), outbox.join("x.tmp"));
    let out = race(&policy, &name, SENDS, || {
        // The secret under the name, then a file of the agent's own, each whole.
        let _ = std::fs::hard_link(&secret, &name);
        let _ = std::fs::remove_file(&name);
        let _ = std::fs::write(&tmp, b"fine");
        let _ = std::fs::rename(&tmp, &name);
        let _ = std::fs::remove_file(&name);
    });
    eprintln!("{SENDS} sends: {out:?}");
    assert_eq!(out.escapes, 0, "a file from outside the allowed folders was staged through a hard link");
}
