//! What the daemon hands an agent to give back later (push acknowledgements, unread
//! cursors), signed with a key kept in the database: the agent can give back only what it
//! was handed, never a forged or another agent's position, and a restart keeps them good.

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

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
