//! What the daemon hands an agent to give back later (push acknowledgements, unread
//! cursors), signed with a key kept in the database: the agent can give back only what it
//! was handed, never a forged or another agent's position, and a restart keeps them good.
//! What must also stay unread by the agent (a push position counts messages of channels it
//! cannot see) is sealed: encrypted as well as signed.

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The random bytes sealed with each payload ([`Seal::seal`]).
const NONCE: usize = 16;

/// Signs and checks payloads for one agent.
pub(in crate::service) struct Seal {
    key: Vec<u8>,
}

impl Seal {
    pub(in crate::service) fn new(key: Vec<u8>) -> Self {
        Self { key }
    }

    /// The tag of `payload` for `agent_id` (the agent is signed in, so one agent's is no
    /// good to another), of `len` bytes (at most 32).
    pub(in crate::service) fn tag(&self, agent_id: &str, payload: &[u8], len: usize) -> Vec<u8> {
        use hmac::Mac;
        let mut tag = self.mac(agent_id, payload).finalize().into_bytes().to_vec();
        tag.truncate(len);
        tag
    }

    /// Whether `tag` is the `len`-byte tag of `payload` for `agent_id` (compared in
    /// constant time; a shorter tag, easier to guess, is none).
    pub(in crate::service) fn verify(&self, agent_id: &str, payload: &[u8], tag: &[u8], len: usize) -> bool {
        use hmac::Mac;
        tag.len() == len && self.mac(agent_id, payload).verify_truncated_left(tag).is_ok()
    }

    /// `payload` encrypted and signed for `agent_id`: the `len`-byte tag of a random nonce
    /// and the payload, then both under a keystream drawn from that tag (authenticated
    /// encryption in the manner of SIV). Each sealing differs, the same payload's too, so
    /// two show neither what they hold nor whether it changed.
    pub(in crate::service) fn seal(&self, agent_id: &str, payload: &[u8], len: usize) -> Vec<u8> {
        use rand::RngCore;
        let mut plain = vec![0u8; NONCE];
        rand::rng().fill_bytes(&mut plain);
        plain.extend_from_slice(payload);
        let mut sealed = self.tag(agent_id, &plain, len);
        let stream = self.keystream(agent_id, &sealed.clone(), plain.len());
        sealed.extend(plain.iter().zip(stream).map(|(p, k)| p ^ k));
        sealed
    }

    /// The payload of what [`Seal::seal`] made for `agent_id`; `None` for anything else.
    pub(in crate::service) fn open(&self, agent_id: &str, sealed: &[u8], len: usize) -> Option<Vec<u8>> {
        let (tag, hidden) = sealed.split_at_checked(len)?;
        let stream = self.keystream(agent_id, tag, hidden.len());
        let plain: Vec<u8> = hidden.iter().zip(stream).map(|(c, k)| c ^ k).collect();
        if plain.len() < NONCE || !self.verify(agent_id, &plain, tag, len) {
            return None;
        }
        Some(plain[NONCE..].to_vec())
    }

    /// `len` bytes of HMAC in counter mode, under a key of its own drawn from the seal's, so
    /// that no keystream block is ever a tag.
    fn keystream(&self, agent_id: &str, iv: &[u8], len: usize) -> Vec<u8> {
        use hmac::Mac;
        let key = self.mac("", b"\0keystream").finalize().into_bytes();
        let mut out = Vec::with_capacity(len + 32);
        for block in 0u64.. {
            if out.len() >= len {
                break;
            }
            let mut mac = HmacSha256::new_from_slice(&key).unwrap_or_else(|_| unreachable!("HMAC takes any key"));
            for part in [agent_id.as_bytes(), b"\0", iv, &block.to_be_bytes()] {
                mac.update(part);
            }
            out.extend(mac.finalize().into_bytes());
        }
        out.truncate(len);
        out
    }

    fn mac(&self, agent_id: &str, payload: &[u8]) -> HmacSha256 {
        use hmac::Mac;
        // HMAC takes a key of any length.
        let mut mac = HmacSha256::new_from_slice(&self.key).unwrap_or_else(|_| unreachable!("HMAC takes any key"));
        mac.update(agent_id.as_bytes());
        mac.update(b"\0");
        mac.update(payload);
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::Seal;

    #[test]
    fn a_sealed_payload_opens_only_for_its_agent_and_shows_nothing_of_itself() {
        let seal = Seal::new(b"key".to_vec());
        let payload = br#"{"f":1234567,"c":[]}"#;
        let sealed = seal.seal("claude", payload, 32);
        assert_eq!(seal.open("claude", &sealed, 32).as_deref(), Some(payload.as_slice()));
        assert!(!sealed.windows(7).any(|w| w == b"1234567") && sealed.len() == 32 + 16 + payload.len());
        assert_ne!(seal.seal("claude", payload, 32), sealed, "sealed again, it differs");
        assert!(seal.open("other", &sealed, 32).is_none());
        assert!(Seal::new(b"another".to_vec()).open("claude", &sealed, 32).is_none());
        let mut flipped = sealed.clone();
        *flipped.last_mut().expect("a byte") ^= 1;
        assert!(seal.open("claude", &flipped, 32).is_none());
        assert!(seal.open("claude", &sealed[..31], 32).is_none());
        // Two positions a message apart differ all through, not in one digit.
        let next = seal.seal("claude", br#"{"f":1234568,"c":[]}"#, 32);
        let same = sealed[32..].iter().zip(&next[32..]).filter(|(a, b)| a == b).count();
        assert!(same < 10, "{same} bytes alike");
    }
}
