//! Secrets AMC hands out (agent tokens, the admin token, relay capabilities): random,
//! prefixed so secret scanners recognise them, and kept only as their SHA-256.

use rand::RngCore;
use sha2::{Digest, Sha256};

/// The prefix of agent tokens, so secret scanners recognise them.
pub const AGENT_TOKEN_PREFIX: &str = "amc_agent_";

/// A new random token: `prefix` and 256 random bits in hex.
pub fn new_token(prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let mut out = String::with_capacity(prefix.len() + 64);
    out.push_str(prefix);
    for b in bytes {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// SHA-256 of a token.
pub fn hash_token(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}
