//! "Install command-line tool": links this install's `amc` into a folder on the person's
//! `PATH`, so a terminal and MCP hosts find it by name. The app's own `PATH` is the
//! minimal one macOS gives GUI apps, so the candidate folders are the usual ones, in order:
//! `/usr/local/bin`, `/opt/homebrew/bin`, then `~/.local/bin` (made if missing), the first
//! that can be written without an administrator.

use std::path::{Path, PathBuf};

/// Where `amc` was linked, or why it could not be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    /// `link` now points at `target`.
    Linked {
        /// The new link.
        link: PathBuf,
        /// This install's `amc`.
        target: PathBuf,
        /// Whether the folder is one shells usually have on `PATH`; if not, the person is
        /// told to add it.
        on_default_path: bool,
    },
    /// No folder could be written.
    Failed(String),
}

impl Installed {
    /// What the tray app says.
    pub fn message(&self) -> String {
        match self {
            Self::Linked { link, target, on_default_path: true } => {
                format!(
                    "amc is installed: {} → {}.\n\nMCP hosts can run: {} mcp",
                    link.display(),
                    target.display(),
                    link.display()
                )
            }
            Self::Linked { link, target, on_default_path: false } => format!(
                "amc is installed: {} → {}.\n\nAdd {} to your PATH (for zsh: echo 'export PATH=\"{}:$PATH\"' >> ~/.zshrc). MCP hosts can run: {} mcp",
                link.display(),
                target.display(),
                link.parent().map(Path::display).map(|d| d.to_string()).unwrap_or_default(),
                link.parent().map(Path::display).map(|d| d.to_string()).unwrap_or_default(),
                link.display()
            ),
            Self::Failed(why) => format!("amc could not be installed: {why}"),
        }
    }
}

impl Installed {
    /// Whether it failed.
    pub fn failed(&self) -> bool {
        matches!(self, Self::Failed(_))
    }
}

/// Links this install's `amc` into the first folder of [`candidate_dirs`] for the person
/// running the app.
pub fn install_for_this_user() -> Installed {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    install(&amc_core::config::amc_command(), &candidate_dirs(&home))
}

/// The folders tried, in order, for a person whose home is `home`.
pub fn candidate_dirs(home: &Path) -> Vec<(PathBuf, bool)> {
    vec![
        (PathBuf::from("/usr/local/bin"), true),
        (PathBuf::from("/opt/homebrew/bin"), true),
        (home.join(".local/bin"), false),
    ]
}

/// Links `target` as `amc` in the first of `dirs` that takes it. An `amc` already there is
/// replaced only if it is a symlink (an earlier install), never a file of someone else's.
pub fn install(target: &Path, dirs: &[(PathBuf, bool)]) -> Installed {
    if !target.is_absolute() || !target.is_file() {
        return Installed::Failed(format!("this install has no amc to link ({})", target.display()));
    }
    let mut tried = Vec::new();
    for (dir, on_default_path) in dirs {
        let made = if *on_default_path { dir.is_dir() } else { std::fs::create_dir_all(dir).is_ok() };
        if !made {
            continue;
        }
        let link = dir.join("amc");
        match std::fs::symlink_metadata(&link) {
            Ok(meta) if !meta.file_type().is_symlink() => {
                tried.push(format!("{} holds another amc", link.display()));
                continue;
            }
            Ok(_) => {
                if let Err(e) = std::fs::remove_file(&link) {
                    tried.push(format!("{}: {e}", link.display()));
                    continue;
                }
            }
            Err(_) => {}
        }
        match std::os::unix::fs::symlink(target, &link) {
            Ok(()) => return Installed::Linked { link, target: target.to_owned(), on_default_path: *on_default_path },
            Err(e) => tried.push(format!("{}: {e}", link.display())),
        }
    }
    Installed::Failed(if tried.is_empty() { "no folder to put it in".into() } else { tried.join("; ") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_into_the_first_writable_folder_and_never_over_another_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let amc = dir.path().join("AMC.app/Contents/MacOS/amc");
        std::fs::create_dir_all(amc.parent().expect("parent")).expect("mkdir");
        std::fs::write(&amc, b"#!/bin/sh\n").expect("write");
        let (missing, taken, home_bin) =
            (dir.path().join("nope"), dir.path().join("taken"), dir.path().join("home/.local/bin"));
        std::fs::create_dir_all(&taken).expect("mkdir");
        std::fs::write(taken.join("amc"), b"someone else's").expect("write");
        let dirs = [(missing, true), (taken.clone(), true), (home_bin.clone(), false)];
        let installed = install(&amc, &dirs);
        assert_eq!(
            installed,
            Installed::Linked { link: home_bin.join("amc"), target: amc.clone(), on_default_path: false }
        );
        assert_eq!(std::fs::read_link(home_bin.join("amc")).expect("link"), amc);
        assert_eq!(std::fs::read(taken.join("amc")).expect("read"), b"someone else's", "never replaced");
        assert!(installed.message().contains("Add") && installed.message().contains(".local/bin"));
        // Installing again replaces the earlier link.
        assert!(matches!(install(&amc, &dirs), Installed::Linked { .. }));
        assert!(matches!(install(&dir.path().join("none"), &dirs), Installed::Failed(_)));
    }
}
