//! The root secret every key AMC signs or seals with is derived from (`amc-core`'s `crypto`
//! derives them; this only keeps it).

use rusqlite::{OptionalExtension, params};

use crate::Store;
use crate::error::Result;

/// The setting that holds the root secret every key AMC signs or seals with is derived from.
const ROOT_KEY_SETTING: &str = "root_key";

impl Store {
    /// The root secret, made by `fresh` the first time it is asked (in hex in `settings`, so
    /// what was handed out before a restart still holds after). A value that is not 32 bytes
    /// of hex is replaced by a fresh one: everything signed with it is then refused, as it
    /// must be.
    pub fn root_key(&self, fresh: impl FnOnce() -> Result<[u8; 32]>) -> Result<[u8; 32]> {
        self.db.write(|tx| {
            let kept: Option<String> = tx
                .prepare_cached("SELECT value FROM settings WHERE key = ?1")?
                .query_row([ROOT_KEY_SETTING], |r| r.get(0))
                .optional()?;
            if let Some(key) = kept.as_deref().and_then(decode_key) {
                return Ok(key);
            }
            if kept.is_some() {
                tracing::warn!("the stored root key is not 32 bytes of hex; a new one retires every cursor and ack");
            }
            let fresh = fresh()?;
            let fresh_hex: String = fresh.iter().map(|b| format!("{b:02x}")).collect();
            tx.prepare_cached(
                "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            )?
            .execute(params![ROOT_KEY_SETTING, fresh_hex])?;
            Ok(fresh)
        })
    }
}

/// 32 bytes from 64 hex digits.
fn decode_key(hex: &str) -> Option<[u8; 32]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 64 || !bytes.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        key[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use crate::Store;

    #[test]
    fn the_root_key_is_made_once_and_kept_and_an_unreadable_one_is_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("amc.db")).expect("open");
        assert_eq!(store.root_key(|| Ok([1; 32])).expect("made"), [1; 32]);
        assert_eq!(store.root_key(|| Ok([2; 32])).expect("kept"), [1; 32], "the first key stays");
        drop(store);
        let store = Store::open(&dir.path().join("amc.db")).expect("open again");
        assert_eq!(store.root_key(|| Ok([3; 32])).expect("kept"), [1; 32], "across a restart");
        for unreadable in ["+f".repeat(32), "zz".repeat(32), "01".repeat(31)] {
            store.set_setting("root_key", &unreadable).expect("set");
            assert_eq!(store.root_key(|| Ok([4; 32])).expect("replaced"), [4; 32], "{unreadable}");
        }
    }
}
