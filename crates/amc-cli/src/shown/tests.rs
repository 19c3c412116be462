use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;

use super::*;
use amc_core::text::OPEN;

/// What a person reading the terminal takes the shown text for: escapes read back.
fn read_back(shown: &str) -> Result<String, String> {
    let mut text = String::new();
    let mut rest = shown;
    while let Some(at) = rest.find(OPEN) {
        text.push_str(&rest[..at]);
        let after = &rest[at + OPEN.len_utf8()..];
        let (hex, tail) = after
            .strip_prefix("U+")
            .and_then(|a| a.split_once('⟩'))
            .ok_or_else(|| format!("a bare {OPEN} in {shown:?}"))?;
        let c =
            u32::from_str_radix(hex, 16).ok().and_then(char::from_u32).ok_or_else(|| format!("bad escape {hex}"))?;
        text.push(c);
        rest = tail;
    }
    text.push_str(rest);
    Ok(text)
}

/// The characters that must never reach the terminal as they are, written down apart
/// from [`is_hidden`] so that the tests check it: C0, DEL and C1 controls, the line and
/// paragraph separators, the interlinear annotation marks, Unicode's
/// Default_Ignorable_Code_Point (DerivedCoreProperties.txt), the other characters of
/// general category Cf (UnicodeData.txt) and the blank Braille pattern.
const DANGEROUS: &[(u32, u32)] = &[
    (0x00, 0x1F),
    (0x7F, 0x9F),
    (0xAD, 0xAD),
    (0x34F, 0x34F),
    (0x600, 0x605),
    (0x61C, 0x61C),
    (0x6DD, 0x6DD),
    (0x70F, 0x70F),
    (0x890, 0x891),
    (0x8E2, 0x8E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x206F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
];

fn dangerous(c: char) -> bool {
    DANGEROUS.iter().any(|&(lo, hi)| (lo..=hi).contains(&u32::from(c)))
}

/// What the joiner may stand between, kept: emoji and the symbols of emoji sequences.
fn pictograph(c: char) -> bool {
    matches!(u32::from(c), 0x2300..=0x23FF | 0x2600..=0x27BF | 0x2B00..=0x2BFF | 0x1F000..=0x1FAFF)
}

/// The dangerous characters found as they are in what is shown, other than those
/// [`Shown`] keeps where they only change how the character before looks.
fn hidden_left(shown: &str) -> Vec<char> {
    let chars: Vec<char> = shown.chars().collect();
    let mut found = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        if !dangerous(c) {
            continue;
        }
        // The character this one changes: the one before, past presentation selectors.
        let base = chars[..i].iter().rev().find(|&&b| !matches!(b, '\u{FE0E}' | '\u{FE0F}'));
        let fine = match c {
            // One selector, straight after a shown character.
            '\u{FE0E}' | '\u{FE0F}' => i > 0 && !dangerous(chars[i - 1]) && !chars[i - 1].is_whitespace(),
            '\u{200D}' => base.is_some_and(|&b| pictograph(b)) && chars.get(i + 1).is_some_and(|&n| pictograph(n)),
            _ => false,
        };
        if !fine {
            found.push(c);
        }
    }
    found
}

#[test]
fn hidden_and_acting_characters_are_shown_as_their_code_points() {
    let cases = [
        ("See you at 8!", "See you at 8!"),
        (
            "…wired the $4,000 deposit…\r\x1b[2K    | See you at 8!",
            "…wired the $4,000 deposit…⟨U+000D⟩⟨U+001B⟩[2K    | See you at 8!",
        ),
        ("two\nlines\tand a tab", "two⟨U+000A⟩lines⟨U+0009⟩and a tab"),
        ("bell\x07 del\x7f c1\u{9b}31m", "bell⟨U+0007⟩ del⟨U+007F⟩ c1⟨U+009B⟩31m"),
        ("invoice\u{202E}fdp.exe", "invoice⟨U+202E⟩fdp.exe"),
        ("\u{2066}a\u{2069} \u{200E}\u{200F}\u{061C}", "⟨U+2066⟩a⟨U+2069⟩ ⟨U+200E⟩⟨U+200F⟩⟨U+061C⟩"),
        ("pay\u{200B}pal\u{200C}\u{200D}x\u{2060}\u{FEFF}", "pay⟨U+200B⟩pal⟨U+200C⟩⟨U+200D⟩x⟨U+2060⟩⟨U+FEFF⟩"),
        (
            "soft\u{AD}hyphen \u{180E} \u{3164}\u{115F}\u{1160}\u{FFA0}",
            "soft⟨U+00AD⟩hyphen ⟨U+180E⟩ ⟨U+3164⟩⟨U+115F⟩⟨U+1160⟩⟨U+FFA0⟩",
        ),
        ("a\u{2028}b\u{2029}c", "a⟨U+2028⟩b⟨U+2029⟩c"),
        ("tag\u{E0041}\u{E007F}", "tag⟨U+E0041⟩⟨U+E007F⟩"),
        // A backslash is ordinary; the bracket that opens an escape is not.
        (r"C:\Users ¯\_(ツ)_/¯", r"C:\Users ¯\_(ツ)_/¯"),
        ("⟨U+202E⟩", "⟨U+27E8⟩U+202E⟩"),
        // Presentation selectors after a shown character, and joiners between pictographs,
        // only change how it looks: kept. Anywhere else they hide something: shown.
        ("I ❤️ it ☺︎", "I ❤️ it ☺︎"),
        ("👩‍💻 👨‍👩‍👧 ❤️‍🔥 🏳️‍⚧️", "👩‍💻 👨‍👩‍👧 ❤️‍🔥 🏳️‍⚧️"),
        ("\u{FE0F}a\u{FE0F}\u{FE0F}\u{FE0E}", "⟨U+FE0F⟩a\u{FE0F}⟨U+FE0F⟩⟨U+FE0E⟩"),
        ("a \u{FE0F}b", "a ⟨U+FE0F⟩b"),
        ("\u{200B}\u{FE0F} a\u{200D}b 👩\u{200D}", "⟨U+200B⟩⟨U+FE0F⟩ a⟨U+200D⟩b 👩⟨U+200D⟩"),
        ("a\u{FE00}\u{E0100}", "a⟨U+FE00⟩⟨U+E0100⟩"),
        ("😀\u{200D}⟨", "😀⟨U+200D⟩⟨U+27E8⟩"),
        // Letters of every script and combining marks are shown as they are.
        ("שלום مرحبا 你好 é", "שלום مرحبا 你好 é"),
    ];
    for (text, want) in cases {
        assert_eq!(Shown(text).to_string(), want, "{text:?}");
        assert_eq!(read_back(want).as_deref(), Ok(text), "{want}");
    }
}

#[test]
fn every_code_point_is_hidden_exactly_when_it_is_dangerous() {
    let differ: Vec<String> = (0..=0x10_FFFF)
        .filter_map(char::from_u32)
        .filter(|&c| is_hidden(c) != dangerous(c))
        .map(|c| format!("U+{:04X}", u32::from(c)))
        .take(10)
        .collect();
    assert!(differ.is_empty(), "{differ:?}");
}

#[test]
fn width_applies_to_what_is_shown() {
    assert_eq!(format!("[{:<6}]", Shown("a\rb")), "[a⟨U+000D⟩b]");
    assert_eq!(format!("[{:<6}]", Shown("ab")), "[ab    ]");
}

#[test]
fn a_text_is_printed_line_by_line_with_every_other_control_shown() {
    let got: Vec<String> = lines("one\r\ntwo\x1b[2K\n\nend\n").map(|l| l.to_string()).collect();
    assert_eq!(got, ["one⟨U+000D⟩", "two⟨U+001B⟩[2K", "", "end", ""]);
    assert_eq!(lines("").count(), 0);
}

#[test]
fn json_output_escapes_hidden_characters_and_reads_back_the_same() {
    let v = json!({ "text": "…deposit…\r\x1b[2K | \u{202E}x\u{200B}\u{9B}\u{2028}\u{E0041}\\\"❤️" });
    let out = json(&v).expect("json");
    let want = r#"{
  "text": "…deposit…\r\u001b[2K | \u202ex\u200b\u009b\u2028\udb40\udc41\\\"❤\ufe0f"
}"#;
    assert_eq!(out, want);
    assert_eq!(serde_json::from_str::<Value>(&out).expect("valid JSON"), v);
}

/// Pieces of the hostile text a fuzz case is made of: every class of [`DANGEROUS`], the
/// characters kept in context, escapes that are already written out, and ordinary text
/// of many scripts.
fn piece(rng: &mut StdRng) -> String {
    const ORDINARY: &[&str] = &[
        "a",
        "Z",
        " ",
        "8",
        "$4,000",
        "\\",
        "|",
        "[2K",
        "⟨",
        "⟩",
        "U+",
        "⟨U+202E⟩",
        "⟨U+",
        "é",
        "e\u{301}",
        "\u{301}",
        "你好",
        "שלום",
        "مرحبا",
        "😀",
        "👩",
        "💻",
        "❤",
        "☺",
        "🏳",
        "⚧",
        "👍🏽",
        "🇫🇷",
        "\u{2800}",
        "\u{A0}",
        "\u{3000}",
        "\u{FFFC}",
        "\u{FFFD}",
        "\u{FFFF}",
        "\u{E000}",
        "\u{10FFFF}",
        "ﷺ",
    ];
    match rng.random_range(0..10) {
        0..=3 => (*ORDINARY.choose(rng).unwrap_or(&"a")).to_owned(),
        4..=6 => {
            let &(lo, hi) = DANGEROUS.choose(rng).unwrap_or(&(0, 0));
            char::from_u32(rng.random_range(lo..=hi)).map(String::from).unwrap_or_default()
        }
        7 => ["\u{FE0F}", "\u{FE0E}", "\u{200D}"].choose(rng).copied().unwrap_or_default().to_owned(),
        8 => "\r\x1b[2K".to_owned(),
        _ => char::from_u32(rng.random_range(0..0x11_0000)).map(String::from).unwrap_or_default(),
    }
}

/// Seeded random hostile texts, for a bounded time: what is shown holds no hidden
/// character (but those kept where they are seen), no newline on one line, and reads back
/// to the text, so two texts are never shown alike; the JSON output reads back the same.
/// `AMC_FUZZ_SECONDS` (default 2) bounds the run, `AMC_FUZZ_SEED` replays one.
#[test]
fn fuzz_hostile_text_is_never_acted_on_and_always_reads_back() {
    let seconds: u64 = std::env::var("AMC_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2);
    let seed: u64 = std::env::var("AMC_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    let mut rng = StdRng::seed_from_u64(seed);
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut cases = 0_usize;
    let mut failures = Vec::new();
    while Instant::now() < until && failures.len() < 10 {
        for _ in 0..100 {
            cases += 1;
            let text: String = (0..rng.random_range(0..24)).map(|_| piece(&mut rng)).collect();
            let shown = Shown(&text).to_string();
            let left = hidden_left(&shown);
            if !left.is_empty() {
                failures.push(format!("{text:?} shown as {shown:?} keeps {left:?}"));
            }
            if read_back(&shown).as_deref() != Ok(text.as_str()) {
                failures.push(format!("{text:?} shown as {shown:?} reads back as {:?}", read_back(&shown)));
            }
            let by_line: Vec<String> = lines(&text).map(|l| l.to_string()).collect();
            let rejoined: Result<Vec<String>, String> = by_line.iter().map(|l| read_back(l)).collect();
            if by_line.iter().any(|l| !hidden_left(l).is_empty()) || rejoined.map(|r| r.join("\n")) != Ok(text.clone())
            {
                failures.push(format!("{text:?} line by line: {by_line:?}"));
            }
            let v = json!({ "text": text });
            match json(&v) {
                Ok(out)
                    if serde_json::from_str::<Value>(&out).ok() == Some(v)
                        && !out.contains(|c| dangerous(c) && c != '\n') => {}
                other => failures.push(format!("{text:?} as JSON: {other:?}")),
            }
        }
    }
    eprintln!("fuzz (shown text): seed {seed}, {cases} cases in {seconds} s");
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}
