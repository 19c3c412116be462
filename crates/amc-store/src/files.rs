//! Files and folders AMC writes: messages, attachments, tokens and bundles are private, so
//! each is readable by this account only from the moment it exists. The mode is given to
//! `open(2)` and `mkdir(2)` themselves, never set by a `chmod` afterwards, which would leave
//! a moment (and, after a crash, a file) open to every account of the Mac. The process
//! umask can only take permissions away, so 0600 and 0700 hold under any umask.
//!
//! Every file and folder AMC creates goes through here (a tidy test holds it).

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// The mode of every file AMC creates.
pub const FILE_MODE: u32 = 0o600;
/// The mode of every folder AMC creates.
pub const DIR_MODE: u32 = 0o700;

/// Creates `path` and the folders above it that are missing, each 0700. Folders that
/// exist keep their mode.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(path)
}

/// Opens `path` for writing, created 0600 if it is new and emptied if it is not.
pub fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create(true).truncate(true).mode(FILE_MODE).open(path)
}

/// Creates `path` 0600 for writing, only if nothing (a file, a link) is there yet.
pub fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).mode(FILE_MODE).open(path)
}

/// Opens `path` for appending, created 0600 if it is new.
pub fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().append(true).create(true).mode(FILE_MODE).open(path)
}

/// Creates `path` empty and 0600 if it does not exist; a file that exists is left as it is.
pub fn touch(path: &Path) -> io::Result<()> {
    OpenOptions::new().write(true).create(true).truncate(false).mode(FILE_MODE).open(path).map(drop)
}

/// Writes `bytes` to `path` whole or not at all: into a new 0600 file beside it, then
/// renamed over it. A file that was there before is replaced, not rewritten, so it never
/// keeps an older, wider mode.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir_all(dir)?;
    }
    // A name of its own, so two writers of the same file never share one; `create_new`
    // so a name planted beforehand (a link to elsewhere) is refused, not followed.
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.part", ulid::Ulid::generate()));
    let written = (|| {
        let mut out = OpenOptions::new().write(true).create_new(true).mode(FILE_MODE).open(&tmp)?;
        out.write_all(bytes)?;
        out.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn a_file_written_over_a_wider_one_is_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("bundle.mcpb");
        std::fs::write(&file, b"old").expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        write_atomic(&file, b"new").expect("write");
        assert_eq!((std::fs::read(&file).expect("read"), mode(&file)), (b"new".to_vec(), FILE_MODE));
        let names: Vec<_> = std::fs::read_dir(dir.path()).expect("ls").flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, ["bundle.mcpb"], "no temporary file is left");
    }

    #[test]
    fn folders_and_files_are_created_private() {
        let dir = tempfile::tempdir().expect("tempdir");
        let deep = dir.path().join("a/b/c");
        create_dir_all(&deep).expect("mkdir");
        for d in [dir.path().join("a"), dir.path().join("a/b"), deep.clone()] {
            assert_eq!(mode(&d), DIR_MODE, "{}", d.display());
        }
        for (name, open) in [("created", create as fn(&Path) -> io::Result<File>), ("appended", append)] {
            let f = deep.join(name);
            open(&f).expect("open");
            assert_eq!(mode(&f), FILE_MODE, "{name}");
        }
        touch(&deep.join("touched")).expect("touch");
        assert_eq!(mode(&deep.join("touched")), FILE_MODE);
    }
}
