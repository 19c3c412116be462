//! What the harness sends: ids, cursors, paths and texts that reach past the obvious,
//! and acknowledgements of pushes, altered and forged.

use base64::Engine;
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use serde_json::{Value, json};

/// Search text that full-text syntax, SQL or a tokenizer could trip on.
pub(super) const SEARCH: &[&str] = &[
    "hello",
    "message 1",
    "\"with a file\"",
    "\"",
    "\"unbalanced",
    "\"\"",
    "a AND",
    "AND",
    "OR OR",
    "NOT",
    "a NOT b",
    "NEAR(hello file, 2)",
    "NEAR(",
    "NEAR/3",
    "text:hello",
    "{text sender}: a",
    "-hello",
    "+hello",
    "^hello",
    "hel*",
    "*",
    "(hello OR",
    "hello) OR (file",
    "hello\u{0}world",
    "\u{0}",
    "日本語",
    "東京で会いましょう",
    "東",
    "こんにちは",
    "한국어 메시지",
    "中文\"引号",
    "🙂🙂",
    "\u{200B}\u{200D}",
    "ａｂｃ",
    "'",
    "\\",
    "%_%",
    "a:b:c",
    "rowid",
    "messages_fts MATCH 'x'",
];

/// Ids, cursors, paths and texts that reach past the obvious: real ones of this
/// daemon, near misses, and the classic hostile strings.
pub(super) struct Pool {
    strings: Vec<String>,
}

impl Pool {
    pub(super) fn new(real: &[String], outbox: &str) -> Self {
        let mut strings: Vec<String> = real.to_vec();
        strings.extend(
            [
                "",
                " ",
                "msg_",
                "msg_00000000000000000000000000",
                "msg_0000000000000000000000000I",
                "ch_01HZ0000000000000000000000",
                "ch_../../admin",
                "00000000-0000-4000-8000-000000000000",
                "v1.AAAA.BBBB",
                "v1..",
                "amc_relay_read_0000",
                "MTc3NzAwMDAwMDAwMDptc2dfMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDA",
                "../../../../etc/passwd",
                "/etc/passwd",
                "/dev/zero",
                "/proc/self/environ",
                "file:///etc/passwd",
                "http://127.0.0.1:1/x",
                "http://[::1]/",
                "http://169.254.169.254/latest/meta-data/",
                "https://example.invalid/a.png",
                "javascript:alert(1)",
                "2026-04-25T15:32:11.123Z",
                "2026-13-45T99:99:99Z",
                "-1",
                "1e309",
                "NaN",
                "imessage",
                "discord",
                "slack",
                "\u{0}",
                "\u{FFFF}\u{FFFE}",
                "\u{202E}gnp.exe",
                "'; DROP TABLE messages; --",
                "\" OR 1=1 --",
                "NEAR(a b) OR *",
                "%00",
                "%",
                "&&&===",
            ]
            .map(str::to_owned),
        );
        strings.extend(SEARCH.iter().map(|s| (*s).to_owned()));
        strings.push(format!("{outbox}/missing.txt"));
        strings.push(format!("{outbox}/../admin-token"));
        strings.push(format!("{outbox}/note.txt"));
        strings.push("x".repeat(70_000));
        strings.push("é".repeat(3000));
        Self { strings }
    }

    pub(super) fn string(&self, rng: &mut StdRng) -> String {
        if rng.random_bool(0.15) {
            let len = rng.random_range(0..40);
            return (0..len).map(|_| char::from_u32(rng.random_range(0..0x11_0000)).unwrap_or('?')).collect();
        }
        self.strings.choose(rng).cloned().unwrap_or_default()
    }

    pub(super) fn value(&self, rng: &mut StdRng, depth: u32) -> Value {
        match rng.random_range(0..if depth > 2 { 6 } else { 9 }) {
            0 => Value::Null,
            1 => json!(rng.random_bool(0.5)),
            2 => json!([0_i64, -1, 1, 20, 25, 26, 50, 100, 101, i64::MAX, i64::MIN].choose(rng).copied()),
            3 => json!([0.5_f64, -0.0, 1e308, 3.9].choose(rng).copied()),
            4 | 5 => json!(self.string(rng)),
            6 => Value::Array((0..rng.random_range(0..4)).map(|_| self.value(rng, depth + 1)).collect()),
            7 => {
                json!([{ "path": self.string(rng) }, { "url": self.string(rng) }, { "path": self.string(rng), "url": self.string(rng) }])
            }
            _ => {
                let keys = ["path", "url", "text", "id", "channel_id", "message_ids", "attachments", "zzz"];
                let mut o = serde_json::Map::new();
                for _ in 0..rng.random_range(0..4) {
                    o.insert((*keys.choose(rng).unwrap_or(&"k")).to_owned(), self.value(rng, depth + 1));
                }
                Value::Object(o)
            }
        }
    }

    /// An object with some of `keys` (and now and then an unknown one), random values.
    pub(super) fn object(&self, rng: &mut StdRng, keys: &[String]) -> Value {
        let mut o = serde_json::Map::new();
        for k in keys {
            if rng.random_bool(0.6) {
                o.insert(k.clone(), self.value(rng, 0));
            }
        }
        if rng.random_bool(0.1) {
            o.insert("unexpected".into(), self.value(rng, 0));
        }
        Value::Object(o)
    }
}

/// Session ids that a tool request and a push can share, so that answers flow.
pub(super) const SESSIONS: &[&str] = &["s1", "s2", "fuzz-session"];

/// An acknowledgement to send back: one handed out, one altered, one forged, or junk,
/// with which it is.
pub(super) fn ack(rng: &mut StdRng, pool: &Pool, handed_out: &[String], channels: &[String]) -> (&'static str, Value) {
    let real = handed_out.choose(rng).cloned();
    match (rng.random_range(0..6), real) {
        (0 | 1, Some(real)) => ("handed out", json!(real)),
        (2, Some(real)) => ("altered", json!(altered(rng, &real))),
        (3, Some(real)) => ("altered", json!(format!("{real}{real}"))),
        (5, _) => ("junk", pool.value(rng, 0)),
        _ => ("forged", json!(forged(rng, channels))),
    }
}

/// `ack` with one change of the kinds a careless or hostile caller makes.
fn altered(rng: &mut StdRng, ack: &str) -> String {
    let mut chars: Vec<char> = ack.chars().collect();
    let at = rng.random_range(0..chars.len().max(1));
    match rng.random_range(0..6) {
        0 if !chars.is_empty() => {
            let alphabet: Vec<char> = "ABCxyz019-_".chars().collect();
            chars[at] = *alphabet.choose(rng).unwrap_or(&'A');
        }
        1 => chars.truncate(at),
        2 => chars.insert(at, 'A'),
        3 => return format!("{ack}=="),
        4 => return ack.replace('-', "+").replace('_', "/"),
        _ => return ack.to_ascii_lowercase(),
    }
    chars.into_iter().collect()
}

/// An acknowledgement made up in the shape the daemon's take: positions at the extremes,
/// too many channels or decisions, wrong types, other encodings.
fn forged(rng: &mut StdRng, channels: &[String]) -> String {
    let floors = [json!(0), json!(-1), json!(1), json!(i64::MAX), json!(i64::MIN), json!(1.5), json!("0")];
    let floor = floors.choose(rng).cloned().unwrap_or_default();
    let n = *[0_usize, 1, 2, 501].choose(rng).unwrap_or(&0);
    let c: Vec<Value> = (0..n)
        .map(|_| {
            let ch = channels.choose(rng).cloned().unwrap_or_default();
            let ch = if rng.random_bool(0.8) { ch } else { "ch_forged".to_owned() };
            let through = [0_i64, -1, 7, i64::MAX].choose(rng).copied();
            json!([ch, through])
        })
        .collect();
    let t: Vec<String> = match rng.random_range(0..4) {
        0 => Vec::new(),
        1 => vec!["tr_00000000000000000000000000".to_owned()],
        2 => (0..2000).map(|i| format!("tr_{i}")).collect(),
        _ => vec!["not-a-decision".to_owned(), format!("tr_{}", "x".repeat(100))],
    };
    let mut ack = json!({ "f": floor, "c": c, "t": t, "n": rng.random_bool(0.5) });
    if rng.random_bool(0.2) {
        let keys = ["f", "c", "t", "n"];
        let key = keys.choose(rng).copied().unwrap_or("f");
        ack.as_object_mut().map(|o| o.remove(key));
    }
    if rng.random_bool(0.1) {
        ack["extra"] = json!(true);
    }
    let raw = if rng.random_bool(0.1) { b"not json at all".to_vec() } else { ack.to_string().into_bytes() };
    if rng.random_bool(0.15) {
        base64::engine::general_purpose::STANDARD.encode(raw)
    } else {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
    }
}
