//! The one place AMC uses cryptography of its own (agent tokens are random and kept as their
//! SHA-256, in [`crate::token`]): what the daemon hands an agent to give back later.
//!
//! - One root secret of 256 random bits, made by the operating system's generator on first
//!   start and kept in AMC's database, so what was handed out before a restart still holds.
//! - A sub-key per purpose ([`Purpose`]), derived from the root with HKDF-SHA256, so a value
//!   made for one purpose is never good for another, whatever its bytes.
//! - What only needs to be unforgeable is signed: HMAC-SHA256 ([`Signer`]) over the value and
//!   what it is bound to, each field length-prefixed so no two field lists sign alike.
//! - What must also stay unread is sealed: XChaCha20-Poly1305 ([`Sealer`]) with a random
//!   192-bit nonce per value (random nonces of that size never collide in practice) and the
//!   agent's id as associated data, so one agent's sealed value opens for no other.
//!
//! All of it is RustCrypto's (`hkdf`, `hmac`, `sha2`, `chacha20poly1305`); nothing here
//! builds a primitive of its own.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::Mac;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The root secret's length, in bytes.
pub const ROOT_KEY_LEN: usize = 32;

/// A nonce's length, in bytes: XChaCha20's 192 bits.
const NONCE_LEN: usize = 24;

/// Poly1305's tag, in bytes.
const AEAD_TAG_LEN: usize = 16;

/// What a sub-key is for. Each has its own key; the label is HKDF's `info`, and changing one
/// invalidates everything made for that purpose (that is how a format is retired).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// `list_unread_messages`' `next_cursor`: signed for its agent.
    UnreadCursor,
    /// The push's acknowledgements: sealed for their agent (they count hidden channels).
    PushAck,
    /// The relay's read and search cursors: signed.
    RelayCursor,
}

impl Purpose {
    fn label(self) -> &'static [u8] {
        match self {
            Self::UnreadCursor => b"amc/1/unread-cursor",
            Self::PushAck => b"amc/1/push-ack",
            Self::RelayCursor => b"amc/1/relay-cursor",
        }
    }
}

/// A fresh root secret from the operating system's generator.
pub fn new_root_key() -> std::io::Result<[u8; ROOT_KEY_LEN]> {
    use rand::TryRngCore;
    let mut key = [0u8; ROOT_KEY_LEN];
    rand::rngs::OsRng.try_fill_bytes(&mut key).map_err(std::io::Error::other)?;
    Ok(key)
}

/// The sub-keys of every purpose, derived once at start.
#[derive(Clone)]
pub struct Keys {
    unread_cursors: Signer,
    push_acks: Sealer,
    relay_cursors: Signer,
}

impl Keys {
    /// Derives every purpose's key from `root`.
    pub fn derive(root: &[u8; ROOT_KEY_LEN]) -> Self {
        Self {
            unread_cursors: Signer::new(&sub_key(root, Purpose::UnreadCursor)),
            push_acks: Sealer::new(&sub_key(root, Purpose::PushAck)),
            relay_cursors: Signer::new(&sub_key(root, Purpose::RelayCursor)),
        }
    }

    /// Signs and checks unread cursors.
    pub fn unread_cursors(&self) -> &Signer {
        &self.unread_cursors
    }

    /// Seals and opens push acknowledgements.
    pub fn push_acks(&self) -> &Sealer {
        &self.push_acks
    }

    /// Signs and checks the relay's cursors.
    pub fn relay_cursors(&self) -> &Signer {
        &self.relay_cursors
    }
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(..)")
    }
}

/// HKDF-SHA256 of the root (uniformly random, so no salt is needed: RFC 5869 §3.1) with the
/// purpose's label as `info`.
fn sub_key(root: &[u8; ROOT_KEY_LEN], purpose: Purpose) -> [u8; 32] {
    let mut key = [0u8; 32];
    hkdf::Hkdf::<sha2::Sha256>::new(None, root)
        .expand(purpose.label(), &mut key)
        .unwrap_or_else(|_| unreachable!("32 bytes is far under HKDF-SHA256's 8,160"));
    key
}

/// HMAC-SHA256 under one purpose's key.
#[derive(Clone)]
pub struct Signer {
    /// Keyed once; each tag starts from a copy.
    keyed: HmacSha256,
}

impl Signer {
    fn new(key: &[u8; 32]) -> Self {
        Self { keyed: HmacSha256::new_from_slice(key).unwrap_or_else(|_| unreachable!("HMAC takes any key")) }
    }

    /// The first `len` bytes (16 to 32) of the tag of `fields`.
    pub fn tag(&self, fields: &[&[u8]], len: usize) -> Vec<u8> {
        assert!((16..=32).contains(&len), "a tag of {len} bytes");
        let mut tag = self.mac(fields).finalize().into_bytes().to_vec();
        tag.truncate(len);
        tag
    }

    /// Whether `tag` is the `len`-byte tag of `fields`, compared in constant time. A tag of
    /// another length, easier to guess, is none.
    pub fn verify(&self, fields: &[&[u8]], tag: &[u8], len: usize) -> bool {
        tag.len() == len && (16..=32).contains(&len) && self.mac(fields).verify_truncated_left(tag).is_ok()
    }

    fn mac(&self, fields: &[&[u8]]) -> HmacSha256 {
        let mut mac = self.keyed.clone();
        for field in fields {
            mac.update(&(field.len() as u64).to_be_bytes());
            mac.update(field);
        }
        mac
    }
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer(..)")
    }
}

/// XChaCha20-Poly1305 under one purpose's key.
#[derive(Clone)]
pub struct Sealer {
    cipher: XChaCha20Poly1305,
}

impl Sealer {
    fn new(key: &[u8; 32]) -> Self {
        Self { cipher: XChaCha20Poly1305::new(&(*key).into()) }
    }

    /// `payload` encrypted and authenticated for `agent_id`: a random nonce, then the
    /// ciphertext and its tag. Each sealing differs, the same payload's too.
    pub fn seal(&self, agent_id: &str, payload: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut nonce);
        let sealed = self
            .cipher
            .encrypt(&XNonce::from(nonce), Payload { msg: payload, aad: agent_id.as_bytes() })
            .unwrap_or_else(|_| unreachable!("XChaCha20-Poly1305 seals up to 256 GiB"));
        [nonce.as_slice(), &sealed].concat()
    }

    /// The payload of what [`Sealer::seal`] made for `agent_id`; `None` for anything else.
    pub fn open(&self, agent_id: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN + AEAD_TAG_LEN {
            return None;
        }
        let (nonce, hidden) = sealed.split_at(NONCE_LEN);
        let nonce = XNonce::try_from(nonce).ok()?;
        self.cipher.decrypt(&nonce, Payload { msg: hidden, aad: agent_id.as_bytes() }).ok()
    }

    /// How many bytes sealing adds to a payload.
    pub const OVERHEAD: usize = NONCE_LEN + AEAD_TAG_LEN;
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(byte: u8) -> Keys {
        Keys::derive(&[byte; ROOT_KEY_LEN])
    }

    #[test]
    fn a_sealed_payload_opens_only_for_its_agent_under_its_key() {
        let sealer = keys(1).push_acks().clone();
        let payload = br#"{"f":1234567,"c":[]}"#;
        let sealed = sealer.seal("claude", payload);
        assert_eq!(sealed.len(), payload.len() + Sealer::OVERHEAD);
        assert_eq!(sealer.open("claude", &sealed).as_deref(), Some(payload.as_slice()));
        assert!(!sealed.windows(7).any(|w| w == b"1234567"), "the payload is not readable");
        assert_ne!(sealer.seal("claude", payload), sealed, "sealed again, it differs");
        assert!(sealer.open("other", &sealed).is_none(), "another agent's");
        assert!(keys(2).push_acks().open("claude", &sealed).is_none(), "another install's");
        for i in 0..sealed.len() {
            let mut flipped = sealed.clone();
            flipped[i] ^= 0x80;
            assert!(sealer.open("claude", &flipped).is_none(), "byte {i} altered");
        }
        assert!(sealer.open("claude", &sealed[..sealed.len() - 1]).is_none());
        assert!(sealer.open("claude", &sealed[..NONCE_LEN + AEAD_TAG_LEN - 1]).is_none());
        assert!(sealer.open("claude", b"").is_none());
    }

    #[test]
    fn each_purpose_has_its_own_key() {
        let k = keys(7);
        let fields: &[&[u8]] = &[b"claude", b"1764523531123:msg_01"];
        let unread = k.unread_cursors().tag(fields, 32);
        let relay = k.relay_cursors().tag(fields, 32);
        assert_ne!(unread, relay);
        assert!(k.unread_cursors().verify(fields, &unread, 32));
        assert!(!k.relay_cursors().verify(fields, &unread, 32), "an unread cursor's tag is no relay cursor's");
        assert_eq!(keys(7).unread_cursors().tag(fields, 32), unread, "the same root derives the same keys");
        assert_ne!(keys(8).unread_cursors().tag(fields, 32), unread);
    }

    #[test]
    fn fields_are_signed_apart_and_short_tags_are_refused() {
        let s = keys(3).unread_cursors().clone();
        let tag = s.tag(&[b"ab", b"c"], 16);
        assert!(s.verify(&[b"ab", b"c"], &tag, 16));
        assert!(!s.verify(&[b"a", b"bc"], &tag, 16), "the same bytes split elsewhere");
        assert!(!s.verify(&[b"abc"], &tag, 16));
        assert!(!s.verify(&[b"ab", b"c"], &tag[..15], 16), "a shorter tag");
        assert!(!s.verify(&[b"ab", b"c"], &tag[..8], 8), "a tag under 128 bits is never taken");
        assert_eq!(&s.tag(&[b"ab", b"c"], 32)[..16], tag.as_slice(), "a short tag is the long one's start");
    }

    #[test]
    fn sub_keys_match_rfc_5869_hkdf_sha256() {
        // RFC 5869, test case 3 (no salt, no info) checks the primitive we call; our labels
        // only change `info`.
        let ikm = [0x0bu8; 22];
        let mut okm = [0u8; 42];
        hkdf::Hkdf::<sha2::Sha256>::new(None, &ikm).expand(&[], &mut okm).expect("expand");
        let want = "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8";
        let got: String = okm.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn root_keys_are_random() {
        let a = new_root_key().expect("os rng");
        let b = new_root_key().expect("os rng");
        assert_ne!(a, b);
        assert_ne!(a, [0u8; ROOT_KEY_LEN]);
    }
}
