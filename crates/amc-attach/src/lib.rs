//! Checks on the files an agent asks to send. An agent that could name any local
//! file could mail away the person's keys, so a `path` must name a regular file inside a
//! folder the person allowed; a `url` is fetched only from public addresses ([`url`]).
//! Accepted files are copied into a staging folder at once, so what the person reviews
//! is what is sent.
//!
//! The check is made on the opened file, never on a path looked up twice: the file is
//! opened by walking from an allowed folder's descriptor, one directory at a time,
//! following no symlink ([`beneath`]), and that descriptor is what gets copied. AMC's
//! own files (the database, the tokens, the socket, config.toml) live in its data
//! directory, which no walk may enter: they cannot be sent whatever folders are allowed.
//!
//! A crate of its own because it is a security boundary: the only code that opens an
//! agent's files or fetches its URLs (with reqwest and rustix), used by the core alone.

#![deny(missing_docs)]

mod beneath;
pub mod url;

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use beneath::FileId;

use amc_types::error::{Error, ErrorCode, Result};
use amc_types::model::StagedAttachment;

/// The folders agents may send files from, resolved once at start-up.
#[derive(Debug, Clone)]
pub struct AttachmentPolicy {
    /// Canonical, so each can be opened with no symlink on the way.
    allowed: Vec<PathBuf>,
    staging: PathBuf,
    /// Directories a walk never enters: AMC's data directory and its staging folder.
    /// The outbox lies inside the data directory, but a walk that starts at the outbox
    /// never passes through its parent.
    private: Vec<FileId>,
}

/// The longest file name AMC stages, in bytes (file systems allow 255).
const MAX_NAME_BYTES: usize = 120;

/// An attachment that passed its checks, before staging.
#[derive(Debug, Clone)]
pub enum Accepted {
    /// A local file inside an allowed folder, open.
    File(CheckedFile),
    /// A downloaded file.
    Download(url::Download),
}

/// A file that passed the checks, held open: staging copies from this descriptor, so
/// nothing renamed or swapped after the check can change which file is sent.
#[derive(Debug, Clone)]
pub struct CheckedFile {
    /// What the agent asked for.
    pub requested: String,
    /// The file's own name, the last component of the request.
    pub filename: String,
    /// The size when checked.
    pub size: u64,
    file: Arc<File>,
    /// The file's identity and last status change when checked: staging reads it again.
    seen: Seen,
    /// The folder it was opened in, and its name there: staging looks the name up again.
    dir: Arc<File>,
    name: std::ffi::OsString,
}

/// What is re-read of a checked file once its bytes are copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    dev: u64,
    ino: u64,
    links: u64,
    ctime: (i64, i64),
}

impl Seen {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self { dev: meta.dev(), ino: meta.ino(), links: meta.nlink(), ctime: (meta.ctime(), meta.ctime_nsec()) }
    }
}

impl AttachmentPolicy {
    /// Resolves the allowed folders (creating the first, the outbox, if missing) and the
    /// staging folder. Folders that do not exist are skipped with a warning, and so are
    /// folders inside `data_dir` other than the outbox: nothing of AMC's own is sendable.
    pub fn new(dirs: &[PathBuf], staging: &Path, data_dir: &Path) -> Result<Self> {
        if let Some(outbox) = dirs.first() {
            amc_store::files::create_dir_all(outbox)?;
        }
        amc_store::files::create_dir_all(staging)?;
        let staging = staging.canonicalize()?;
        let data = data_dir.canonicalize()?;
        let outbox = dirs.first().and_then(|o| o.canonicalize().ok());
        let mut allowed = Vec::new();
        for d in dirs {
            match d.canonicalize() {
                Ok(c) if c.starts_with(&data) && !outbox.as_ref().is_some_and(|o| c.starts_with(o)) => {
                    tracing::warn!(dir = %d.display(), "attachment folder is inside AMC's data directory; agents cannot send from it")
                }
                Ok(c) if c.is_dir() => allowed.push(c),
                _ => {
                    tracing::warn!(dir = %d.display(), "attachment folder is missing; agents cannot send from it")
                }
            }
        }
        let private = [&data, &staging]
            .into_iter()
            .map(|d| std::fs::metadata(d).map(|m| (m.dev(), m.ino())))
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Self { allowed, staging, private })
    }

    /// The folders agents may send files from.
    pub fn allowed_dirs(&self) -> &[PathBuf] {
        &self.allowed
    }

    fn refusal(&self) -> Error {
        let dirs: Vec<String> = self.allowed.iter().map(|d| d.display().to_string()).collect();
        Error::validation(format!(
            "attachment path must be an absolute path to a regular file inside an allowed folder, \
             with no symlink or `..` below that folder: {}",
            dirs.join(", ")
        ))
    }

    /// Checks a path an agent gave and opens the file it names. Unknown, unreadable and
    /// disallowed files get the same answer, so an agent cannot probe what exists outside
    /// the allowed folders.
    pub fn check_path(&self, requested: &str, max_bytes: u64) -> Result<CheckedFile> {
        let raw = Path::new(requested);
        if !raw.is_absolute() || requested.contains('\0') {
            return Err(self.refusal());
        }
        let mut names: Vec<&OsStr> = Vec::new();
        for part in raw.components() {
            match part {
                Component::RootDir | Component::CurDir => {}
                Component::Normal(name) => names.push(name),
                Component::ParentDir | Component::Prefix(_) => return Err(self.refusal()),
            }
        }
        let Some((file_name, dirs)) = names.split_last() else { return Err(self.refusal()) };
        let (mut dir, below) = self.allowed_ancestor(dirs).ok_or_else(|| self.refusal())?;
        for name in below {
            dir = beneath::open_dir_in(&dir, name).map_err(|_| self.refusal())?;
            if self.private.contains(&beneath::id_of(&dir).map_err(|_| self.refusal())?) {
                return Err(self.refusal());
            }
        }
        // A hard link would let a file from anywhere appear inside an allowed folder. The
        // link count is read before the open, on the name, and the open must find that
        // very file: a link made, or one taken away, in between cannot pass.
        let (single, before) = beneath::lstat_in(&dir, file_name).map_err(|_| self.refusal())?;
        if !single {
            return Err(self.refusal());
        }
        let file = beneath::open_file_in(&dir, file_name).map_err(|_| self.refusal())?;
        let meta = file.metadata().map_err(|_| self.refusal())?;
        if !meta.is_file() || meta.nlink() > 1 || (meta.dev(), meta.ino()) != before {
            return Err(self.refusal());
        }
        if meta.len() > max_bytes {
            return Err(too_large(meta.len(), max_bytes));
        }
        Ok(CheckedFile {
            requested: requested.to_owned(),
            filename: file_name.to_string_lossy().into_owned(),
            size: meta.len(),
            seen: Seen::of(&meta),
            file: Arc::new(file),
            dir: Arc::new(dir),
            name: file_name.to_os_string(),
        })
    }

    /// The longest leading part of `dirs` that opens as one of the allowed folders, and
    /// the names below it. The leading part may pass through symlinks (`/tmp` on macOS,
    /// a folder the person linked): what counts is the identity of the directory opened,
    /// compared with the allowed folder opened with no symlink on its way.
    fn allowed_ancestor<'a>(&self, dirs: &'a [&'a OsStr]) -> Option<(File, &'a [&'a OsStr])> {
        let roots: Vec<FileId> = self
            .allowed
            .iter()
            .filter_map(|d| beneath::open_dir_no_symlinks(d).and_then(|f| beneath::id_of(&f)).ok())
            .filter(|id| !self.private.contains(id))
            .collect();
        (0..=dirs.len()).rev().find_map(|k| {
            let prefix: PathBuf = std::iter::once(OsStr::new("/")).chain(dirs[..k].iter().copied()).collect();
            let dir = beneath::open_dir_following(&prefix).ok()?;
            roots.contains(&beneath::id_of(&dir).ok()?).then_some((dir, &dirs[k..]))
        })
    }

    /// Copies accepted files into `staging/<stage_id>/`, each local one from the
    /// descriptor that was checked.
    pub fn stage(&self, stage_id: &str, files: &[Accepted], max_bytes: u64) -> Result<Vec<StagedAttachment>> {
        if files.is_empty() {
            return Ok(Vec::new());
        }
        let dir = self.staging.join(stage_id);
        amc_store::files::create_dir_all(&dir)?;
        let staged: Result<Vec<_>> =
            files.iter().enumerate().map(|(i, f)| self.stage_one(&dir, i, f, max_bytes)).collect();
        if staged.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
        }
        staged
    }

    fn stage_one(&self, dir: &Path, index: usize, a: &Accepted, max_bytes: u64) -> Result<StagedAttachment> {
        let (filename, origin, bytes) = match a {
            Accepted::Download(d) => (d.filename.clone(), d.url.clone(), std::borrow::Cow::Borrowed(&d.bytes[..])),
            Accepted::File(f) => {
                let mut buf = Vec::new();
                // Read from the start whoever read before; the file may have grown since.
                let mut src = &*f.file;
                std::io::Seek::rewind(&mut src).map_err(|_| self.refusal())?;
                src.take(max_bytes + 1).read_to_end(&mut buf).map_err(|_| self.refusal())?;
                if buf.len() as u64 > max_bytes {
                    return Err(too_large(buf.len() as u64, max_bytes));
                }
                // Read again once copied: a link made or taken away since the check (a file
                // from elsewhere passing through the folder under a second name) changes
                // the file's status, and its link count read then may show it. The kernel
                // may report a link count a moment late, so one reading is not enough.
                let now = f.file.metadata().map_err(|_| self.refusal())?;
                // And the name must still lead to this very file, alone: a file from
                // elsewhere linked in for the open and out again before the link count
                // was read is caught here, where the name no longer leads to it.
                let (single, id) = beneath::lstat_in(&f.dir, &f.name).map_err(|_| self.refusal())?;
                if Seen::of(&now) != f.seen || now.nlink() != 1 || !single || id != (f.seen.dev, f.seen.ino) {
                    return Err(Error::validation(
                        "the attachment changed while AMC was reading it; send it again once it is written",
                    ));
                }
                (f.filename.clone(), f.requested.clone(), std::borrow::Cow::Owned(buf))
            }
        };
        let dest = dir.join(format!("{index}-{}", short_name(&filename)));
        let mut out = amc_store::files::create(&dest)?;
        out.write_all(&bytes)?;
        out.sync_all()?;
        Ok(StagedAttachment { path: dest.display().to_string(), filename, size_bytes: bytes.len() as u64, origin })
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

/// Writes a file AMC keeps (a fetched attachment) whole or not at all, private.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    amc_store::files::write_atomic(path, bytes)
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
mod tests;
