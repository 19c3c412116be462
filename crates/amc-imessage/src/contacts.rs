//! Names for handles from the macOS Contacts database (read-only, best effort): a sender
//! shows as "Ada Lovelace" rather than "+15551234567" when Contacts knows them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

/// Names by normalised handle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contacts {
    by_key: HashMap<String, String>,
}

/// A handle's lookup key: an address in lower case, or a phone number's last ten digits
/// (so `+1 (555) 123-4567` and `5551234567` meet).
fn key(handle: &str) -> Option<String> {
    if handle.contains('@') {
        return Some(handle.trim().to_lowercase());
    }
    let digits: String = handle.chars().filter(char::is_ascii_digit).collect();
    (digits.len() >= 7).then(|| digits[digits.len().saturating_sub(10)..].to_owned())
}

impl Contacts {
    /// The Contacts databases of this Mac: `~/Library/Application Support/AddressBook`
    /// and each account's copy under `Sources/`.
    pub fn default_paths() -> Vec<PathBuf> {
        let base = amc_core::config::expand_home("~/Library/Application Support/AddressBook");
        let mut paths = vec![base.join("AddressBook-v22.abcddb")];
        if let Ok(sources) = std::fs::read_dir(base.join("Sources")) {
            paths.extend(sources.flatten().map(|e| e.path().join("AddressBook-v22.abcddb")));
        }
        paths.into_iter().filter(|p| p.is_file()).collect()
    }

    /// Loads every readable database of `paths`; unreadable ones are skipped (Contacts is
    /// a nicety: without it, handles are shown as they are).
    pub fn load(paths: &[PathBuf]) -> Self {
        let mut contacts = Self::default();
        for p in paths {
            if let Err(e) = contacts.load_one(p) {
                tracing::debug!(path = %p.display(), error = %e, "Contacts database not read");
            }
        }
        contacts
    }

    fn load_one(&mut self, path: &Path) -> rusqlite::Result<()> {
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
        let name_sql = "trim(coalesce(r.ZFIRSTNAME, '') || ' ' || coalesce(r.ZLASTNAME, ''))";
        for sql in [
            format!(
                "SELECT p.ZFULLNUMBER, {name_sql}, r.ZORGANIZATION FROM ZABCDPHONENUMBER p JOIN ZABCDRECORD r ON r.Z_PK = p.ZOWNER"
            ),
            format!(
                "SELECT e.ZADDRESS, {name_sql}, r.ZORGANIZATION FROM ZABCDEMAILADDRESS e JOIN ZABCDRECORD r ON r.Z_PK = e.ZOWNER"
            ),
        ] {
            let mut stmt = conn.prepare(&sql)?;
            let rows = stmt.query_map([], |r| {
                Ok((r.get::<_, Option<String>>(0)?, r.get::<_, String>(1)?, r.get::<_, Option<String>>(2)?))
            })?;
            for row in rows {
                let (handle, name, org) = row?;
                let name = if name.is_empty() { org.unwrap_or_default() } else { name };
                if let (Some(k), false) = (handle.as_deref().and_then(key), name.is_empty()) {
                    self.by_key.entry(k).or_insert(name);
                }
            }
        }
        Ok(())
    }

    /// The name Contacts has for a handle.
    pub fn name_for(&self, handle: &str) -> Option<&str> {
        key(handle).and_then(|k| self.by_key.get(&k)).map(String::as_str)
    }

    /// How many handles have names.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether no names are known.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::key;

    #[test]
    fn phone_numbers_meet_whatever_their_format() {
        assert_eq!(key("+1 (555) 123-4567"), key("5551234567"));
        assert_eq!(key("Ada@Example.com").as_deref(), Some("ada@example.com"));
        assert_eq!(key("123"), None);
    }
}
