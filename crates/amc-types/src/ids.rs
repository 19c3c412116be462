//! Identifiers: `msg_<ULID>`, `att_<ULID>`, `ch_<ULID>`, and agent names.

use ulid::Ulid;

/// A new message id, `msg_` and a ULID (time-ordered).
pub fn new_message_id() -> String {
    format!("msg_{}", Ulid::generate())
}

/// A new attachment id, `att_` and a ULID.
pub fn new_attachment_id() -> String {
    format!("att_{}", Ulid::generate())
}

/// A new channel id, `ch_` and a ULID.
pub fn new_channel_id() -> String {
    format!("ch_{}", Ulid::generate())
}

/// A new id of a question asked on the person's phone, `ask_` and a ULID.
pub fn new_ask_id() -> String {
    format!("ask_{}", Ulid::generate())
}

/// The letters a phone code is made of: capitals and digits no one mistakes for another
/// on a phone's screen or keyboard (no 0/O, 1/I/L, 2/Z, 5/S, 8/B, U/V).
const PHONE_CODE_LETTERS: &[u8; 22] = b"ACDEFGHJKMNPQRTWXY3479";

/// A new short code for a question on the person's phone: four of
/// [`PHONE_CODE_LETTERS`], from a ULID's random part (the store keeps codes unique).
pub fn new_phone_code() -> String {
    let mut bits = Ulid::generate().random();
    (0..4)
        .map(|_| {
            let c = PHONE_CODE_LETTERS[(bits % 22) as usize];
            bits /= 22;
            char::from(c)
        })
        .collect()
}

/// Whether `s` could be a phone code: four of [`PHONE_CODE_LETTERS`], in any case.
pub fn is_phone_code(s: &str) -> bool {
    s.len() == 4 && s.bytes().all(|b| PHONE_CODE_LETTERS.contains(&b.to_ascii_uppercase()))
}

fn is_crockford_ulid(s: &str) -> bool {
    s.len() == 26
        && s.bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'H' | b'J' | b'K' | b'M' | b'N' | b'P'..=b'T' | b'V'..=b'Z'))
}

/// Whether `s` matches `^msg_[0-9A-HJKMNP-TV-Z]{26}$`, the contract's message id pattern.
pub fn is_message_id(s: &str) -> bool {
    s.strip_prefix("msg_").is_some_and(is_crockford_ulid)
}

/// Whether `s` is an attachment id.
pub fn is_attachment_id(s: &str) -> bool {
    s.strip_prefix("att_").is_some_and(is_crockford_ulid)
}

/// Whether `s` is a channel id.
pub fn is_channel_id(s: &str) -> bool {
    s.strip_prefix("ch_").is_some_and(is_crockford_ulid)
}

/// Whether `s` is a valid agent id: 1 to 64 of `a-z`, `0-9`, `-`, `_`, starting with a letter
/// or digit. Agent ids appear in headers and logs, so they are kept plain.
pub fn is_agent_id(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_'))
        && s.as_bytes()[0].is_ascii_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_match_their_patterns() {
        assert!(is_message_id(&new_message_id()));
        assert!(is_attachment_id(&new_attachment_id()));
        assert!(is_channel_id(&new_channel_id()));
        let codes: std::collections::HashSet<String> = (0..200).map(|_| new_phone_code()).collect();
        assert!(codes.iter().all(|c| is_phone_code(c) && is_phone_code(&c.to_lowercase())), "{codes:?}");
        assert!(codes.len() > 150, "codes vary: {}", codes.len());
        assert!(!is_phone_code("K7Q0") && !is_phone_code("K7Q") && !is_phone_code("K7QFF"));
    }

    #[test]
    fn message_id_pattern_is_the_contracts() {
        assert!(is_message_id("msg_01HXYZABCDEFGHJKMNPQRSTVWX"));
        assert!(!is_message_id("msg_01HXYZABCDEFGHJKMNPQRSTVW")); // 25 chars
        assert!(!is_message_id("msg_01HXYZABCDEFGHJKMNPQRSTVWI")); // I is not Crockford
        assert!(!is_message_id("msg_01hxyzabcdefghjkmnpqrstvwx")); // lower case
        assert!(!is_message_id("att_01HXYZABCDEFGHJKMNPQRSTVWX"));
    }

    #[test]
    fn agent_ids_are_plain() {
        assert!(is_agent_id("claude-code"));
        assert!(is_agent_id("codex_2"));
        assert!(!is_agent_id(""));
        assert!(!is_agent_id("-x"));
        assert!(!is_agent_id("Claude"));
        assert!(!is_agent_id("a b"));
        assert!(!is_agent_id(&"a".repeat(65)));
    }
}
