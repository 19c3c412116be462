//! Opening a file beneath a directory the way the kernel would, one component at a time,
//! so that what is checked is the file that was opened. A path string looked up twice
//! (once to check, once to open) lets anyone who can rename a directory in between point
//! the second look-up elsewhere; `O_NOFOLLOW` alone covers only the last component.
//!
//! Every directory below the starting one is opened with `openat(O_NOFOLLOW |
//! O_DIRECTORY)` relative to its parent's descriptor, so no symlink is followed and no
//! rename of a parent can redirect the walk: the walk holds each directory it passed
//! through. This is portable (Linux and macOS); Linux's `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` and macOS's `O_NOFOLLOW_ANY` give the same guarantee in one call.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

/// A file's identity: its device and inode.
pub type FileId = (u64, u64);

/// The identity of an open file.
pub fn id_of(file: &File) -> std::io::Result<FileId> {
    let meta = file.metadata()?;
    Ok((meta.dev(), meta.ino()))
}

fn flags(extra: OFlags) -> OFlags {
    // Non-blocking, so a FIFO planted in an allowed folder cannot hang the open.
    OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK | extra
}

/// Opens a directory by its full path, following symlinks: for the part of a path that
/// lies above any folder AMC guards (`/tmp` is a symlink on macOS). Callers decide from
/// the identity of what was opened, never from the string.
pub fn open_dir_following(path: &Path) -> std::io::Result<File> {
    Ok(File::from(rustix::fs::openat(rustix::fs::CWD, path, flags(OFlags::DIRECTORY), Mode::empty())?))
}

/// Opens an absolute path that must contain no symlink at all (a folder resolved once
/// at start-up): walked from `/`, component by component.
pub fn open_dir_no_symlinks(path: &Path) -> std::io::Result<File> {
    let mut dir = open_dir_following(Path::new("/"))?;
    for part in path.components() {
        match part {
            std::path::Component::RootDir => {}
            std::path::Component::Normal(name) => dir = open_dir_in(&dir, name)?,
            _ => return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput)),
        }
    }
    Ok(dir)
}

/// Opens the directory `name` inside `dir`, refusing a symlink.
pub fn open_dir_in(dir: &File, name: &OsStr) -> std::io::Result<File> {
    Ok(File::from(rustix::fs::openat(dir, name, flags(OFlags::DIRECTORY | OFlags::NOFOLLOW), Mode::empty())?))
}

/// What `name` inside `dir` is, without following a symlink: whether it is a regular file
/// with one link, and its identity.
pub fn lstat_in(dir: &File, name: &OsStr) -> std::io::Result<(bool, FileId)> {
    let st = rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
    let regular =
        rustix::fs::FileType::from_raw_mode(st.st_mode as rustix::fs::RawMode) == rustix::fs::FileType::RegularFile;
    #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
    let (links, dev, ino) = (st.st_nlink as u64, st.st_dev as u64, st.st_ino as u64);
    Ok((regular && links == 1, (dev, ino)))
}

/// Opens the file `name` inside `dir` for reading, refusing a symlink. The caller checks
/// what kind of file it is on the descriptor.
pub fn open_file_in(dir: &File, name: &OsStr) -> std::io::Result<File> {
    Ok(File::from(rustix::fs::openat(dir, name, flags(OFlags::NOFOLLOW), Mode::empty())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_symlink_anywhere_on_the_way() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().canonicalize().expect("canonical").join("real");
        std::fs::create_dir_all(real.join("inner")).expect("mkdir");
        std::os::unix::fs::symlink(&real, real.parent().expect("parent").join("link")).expect("symlink");
        let opened = open_dir_no_symlinks(&real.join("inner")).expect("a real path opens");
        assert_eq!(id_of(&opened).expect("id"), id_of(&File::open(real.join("inner")).expect("open")).expect("id"));
        let via_link = real.parent().expect("parent").join("link/inner");
        assert!(open_dir_no_symlinks(&via_link).is_err(), "a symlink on the way is refused");
        assert!(open_dir_following(&via_link).is_ok(), "unless symlinks may be followed");
        std::fs::write(real.join("f"), b"x").expect("write");
        let d = open_dir_no_symlinks(&real).expect("open");
        assert!(open_file_in(&d, OsStr::new("f")).is_ok());
        assert!(open_dir_in(&d, OsStr::new("f")).is_err(), "a file is not a directory");
    }
}
