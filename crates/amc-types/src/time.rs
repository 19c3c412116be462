//! Timestamps: milliseconds since the Unix epoch inside AMC, RFC 3339 UTC with
//! milliseconds and one fixed width (`2026-04-25T15:32:11.123Z`) on the wire.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;

/// Milliseconds since the Unix epoch, UTC.
pub type Millis = i64;

/// Now, in milliseconds.
pub fn now_ms() -> Millis {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as Millis
}

/// Formats as `YYYY-MM-DDTHH:MM:SS.mmmZ`, always 24 characters.
pub fn format_ms(ms: Millis) -> String {
    let fmt = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&fmt).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00.000Z".to_owned())
}

/// Parses an RFC 3339 timestamp with any offset and precision, truncated to milliseconds.
pub fn parse_rfc3339(s: &str) -> Option<Millis> {
    let t = OffsetDateTime::parse(s, &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos().div_euclid(1_000_000)).ok()
}

/// Serde helpers for [`Millis`] fields that are RFC 3339 strings on the wire.
pub mod serde_ms {
    use serde::Serializer;

    /// Serialises milliseconds as the fixed-width RFC 3339 form.
    pub fn serialize<S: Serializer>(ms: &super::Millis, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_ms(*ms))
    }

    /// Reads the RFC 3339 form back.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<super::Millis, D::Error> {
        let s: std::borrow::Cow<'de, str> = serde::Deserialize::deserialize(d)?;
        super::parse_rfc3339(&s).ok_or_else(|| serde::de::Error::custom("not an RFC 3339 timestamp"))
    }

    /// The same for an optional timestamp (`null` when absent).
    pub mod option {
        use serde::Serializer;

        /// Serialises `Some(ms)` as RFC 3339 and `None` as `null`.
        pub fn serialize<S: Serializer>(ms: &Option<super::super::Millis>, s: S) -> Result<S::Ok, S::Error> {
            match ms {
                Some(ms) => s.serialize_str(&super::super::format_ms(*ms)),
                None => s.serialize_none(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_fixed_width_milliseconds() {
        assert_eq!(format_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_ms(1_777_131_131_123), "2026-04-25T15:32:11.123Z");
        assert_eq!(format_ms(1_777_131_131_000).len(), 24);
    }

    #[test]
    fn parses_offsets_and_precision_to_milliseconds() {
        assert_eq!(parse_rfc3339("2026-04-25T15:32:11.123Z"), Some(1_777_131_131_123));
        assert_eq!(parse_rfc3339("2026-04-25T17:32:11.123456+02:00"), Some(1_777_131_131_123));
        assert_eq!(parse_rfc3339("2026-04-25T15:32:11Z"), Some(1_777_131_131_000));
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2026-04-25"), None);
    }
}
