//! Checks on the files an agent asks to send. An agent that could name any local
//! file could mail away the person's keys, so a `path` must resolve (symlinks and `..`
//! followed) to a regular file inside a folder the person allowed; a `url` is fetched
//! only from public addresses ([`url`]). Accepted files are copied into a staging
//! folder at once, so what the person reviews is what is sent.

pub mod url;

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorCode, Result};
use crate::model::StagedAttachment;

/// The folders agents may send files from, resolved once at start-up.
#[derive(Debug, Clone)]
pub struct AttachmentPolicy {
    allowed: Vec<PathBuf>,
    staging: PathBuf,
    /// AMC's own files (the database, the admin token) are never sendable, even when an
    /// allowed folder contains the data directory; only its `outbox` is.
    private: Option<(PathBuf, PathBuf)>,
}

/// The longest file name AMC stages, in bytes (file systems allow 255).
const MAX_NAME_BYTES: usize = 120;

/// An attachment that passed its checks, before staging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accepted {
    /// A local file inside an allowed folder.
    File(CheckedFile),
    /// A downloaded file.
    Download(url::Download),
}

/// A file that passed the checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedFile {
    /// The resolved path.
    pub path: PathBuf,
    /// What the agent asked for.
    pub requested: String,
    /// The size when checked.
    pub size: u64,
    /// The file's identity when checked, so staging copies that very file.
    pub dev_ino: (u64, u64),
}

impl AttachmentPolicy {
    /// Resolves the allowed folders (creating the first, the outbox, if missing) and the
    /// staging folder. Folders that do not exist are skipped with a warning. Nothing in
    /// `data_dir` but the outbox can be sent.
    pub fn new(dirs: &[PathBuf], staging: &Path, data_dir: &Path) -> Result<Self> {
        if let Some(outbox) = dirs.first() {
            std::fs::create_dir_all(outbox)?;
        }
        std::fs::create_dir_all(staging)?;
        let private = match (data_dir.canonicalize(), dirs.first().map(|o| o.canonicalize())) {
            (Ok(d), Some(Ok(o))) => Some((d, o)),
            _ => None,
        };
        let mut allowed = Vec::new();
        for d in dirs {
            match d.canonicalize() {
                Ok(c) if c.is_dir() => allowed.push(c),
                _ => {
                    tracing::warn!(dir = %d.display(), "attachment folder is missing; agents cannot send from it")
                }
            }
        }
        Ok(Self { allowed, staging: staging.canonicalize()?, private })
    }

    /// The folders agents may send files from.
    pub fn allowed_dirs(&self) -> &[PathBuf] {
        &self.allowed
    }

    fn refusal(&self) -> Error {
        let dirs: Vec<String> = self.allowed.iter().map(|d| d.display().to_string()).collect();
        Error::validation(format!(
            "attachment path must be an absolute path to a regular file inside an allowed folder: {}",
            dirs.join(", ")
        ))
    }

    /// Checks a path an agent gave. Unknown, unreadable and disallowed files get the same
    /// answer, so an agent cannot probe what exists outside the allowed folders.
    pub fn check_path(&self, requested: &str, max_bytes: u64) -> Result<CheckedFile> {
        let raw = Path::new(requested);
        if !raw.is_absolute() || requested.contains('\0') {
            return Err(self.refusal());
        }
        let path = raw.canonicalize().map_err(|_| self.refusal())?;
        if !self.allowed.iter().any(|d| path.starts_with(d)) || path.starts_with(&self.staging) {
            return Err(self.refusal());
        }
        if let Some((data, outbox)) = &self.private
            && path.starts_with(data)
            && !path.starts_with(outbox)
        {
            return Err(self.refusal());
        }
        let meta = std::fs::metadata(&path).map_err(|_| self.refusal())?;
        // A hard link would let a file from anywhere appear inside an allowed folder.
        if !meta.is_file() || meta.nlink() > 1 {
            return Err(self.refusal());
        }
        if meta.len() > max_bytes {
            return Err(too_large(meta.len(), max_bytes));
        }
        Ok(CheckedFile { path, requested: requested.to_owned(), size: meta.len(), dev_ino: (meta.dev(), meta.ino()) })
    }

    /// Copies accepted files into `staging/<stage_id>/`, re-checking each local one as it
    /// is read, so a file swapped after the check is caught.
    pub fn stage(&self, stage_id: &str, files: &[Accepted], max_bytes: u64) -> Result<Vec<StagedAttachment>> {
        if files.is_empty() {
            return Ok(Vec::new());
        }
        let dir = self.staging.join(stage_id);
        std::fs::create_dir_all(&dir)?;
        let staged: Result<Vec<_>> =
            files.iter().enumerate().map(|(i, f)| self.stage_one(&dir, i, f, max_bytes)).collect();
        if staged.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        staged
    }

    fn stage_one(&self, dir: &Path, index: usize, a: &Accepted, max_bytes: u64) -> Result<StagedAttachment> {
        let f = match a {
            Accepted::File(f) => f,
            Accepted::Download(d) => {
                let dest = dir.join(format!("{index}-{}", short_name(&d.filename)));
                let mut out = File::create(&dest)?;
                out.write_all(&d.bytes)?;
                out.sync_all()?;
                return Ok(StagedAttachment {
                    path: dest.display().to_string(),
                    filename: d.filename.clone(),
                    size_bytes: d.bytes.len() as u64,
                    origin: d.url.clone(),
                });
            }
        };
        // Open without following a last symlink and without blocking on a FIFO, then make
        // sure the open file is the very file that was checked: a swap in between is
        // refused, whatever it swapped in.
        let mut src = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&f.path)
            .map_err(|_| self.refusal())?;
        let meta = src.metadata().map_err(|_| self.refusal())?;
        if !meta.is_file() || (meta.dev(), meta.ino()) != f.dev_ino || meta.nlink() > 1 {
            return Err(self.refusal());
        }
        let filename = f.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "file".into());
        let dest = dir.join(format!("{index}-{}", short_name(&filename)));
        let mut out = File::create(&dest)?;
        let mut buf = Vec::new();
        Read::by_ref(&mut src).take(max_bytes + 1).read_to_end(&mut buf)?;
        if buf.len() as u64 > max_bytes {
            return Err(too_large(buf.len() as u64, max_bytes));
        }
        out.write_all(&buf)?;
        out.sync_all()?;
        Ok(StagedAttachment {
            path: dest.display().to_string(),
            filename,
            size_bytes: buf.len() as u64,
            origin: f.requested.clone(),
        })
    }

    /// Removes a staging folder that will not be used.
    pub fn discard(&self, stage_id: &str) {
        let _ = std::fs::remove_dir_all(self.staging.join(stage_id));
    }

    /// Removes a staging folder given by path, if it is one.
    pub fn discard_dir(&self, dir: &Path) {
        if dir.parent() == Some(self.staging.as_path()) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Writes a file AMC keeps (a fetched attachment) whole or not at all: into a
/// temporary name beside it, then renamed.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // A name of its own, so that two writers of the same file never share one.
    let tmp = path.with_extension(format!("{}.part", ulid::Ulid::generate()));
    let mut out = File::create(&tmp)?;
    out.write_all(bytes)?;
    out.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// Shortens a file name to [`MAX_NAME_BYTES`], keeping its extension.
fn short_name(name: &str) -> String {
    if name.len() <= MAX_NAME_BYTES {
        return name.to_owned();
    }
    let ext = Path::new(name).extension().map(|e| e.to_string_lossy().into_owned()).filter(|e| e.len() <= 16);
    let keep = MAX_NAME_BYTES - ext.as_ref().map_or(0, |e| e.len() + 1);
    let mut stem: String = String::new();
    for c in name.chars() {
        if stem.len() + c.len_utf8() > keep {
            break;
        }
        stem.push(c);
    }
    match ext {
        Some(e) => format!("{stem}.{e}"),
        None => stem,
    }
}

fn too_large(size: u64, max: u64) -> Error {
    Error::new(
        ErrorCode::AttachmentTooLargeForPlatform,
        format!("attachment is {size} bytes; this platform accepts at most {max}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, AttachmentPolicy) {
        let dir = tempfile::tempdir().expect("tempdir");
        let outbox = dir.path().join("outbox");
        let policy =
            AttachmentPolicy::new(&[outbox, dir.path().join("missing")], &dir.path().join("staged"), dir.path())
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
        let policy = AttachmentPolicy::new(&[outbox.clone(), dir.path().to_owned()], &data.join("staged"), &data)
            .expect("policy");
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
        let err = policy.stage("s", &[Accepted::File(checked.clone())], 1 << 20).expect_err("swapped");
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
}
