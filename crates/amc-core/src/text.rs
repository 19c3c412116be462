//! Characters that act on a terminal or cannot be seen on a screen: what the CLI, the
//! logs show as their code points rather than pass on (the UI marks the same set, in
//! `ui/js/dom.js`).

/// Whether `c` acts on a terminal or cannot be seen there: control characters (C0, DEL,
/// C1), the line and paragraph separators, the interlinear annotation marks, every
/// Default_Ignorable_Code_Point of Unicode (bidi controls, zero-width characters, the
/// soft hyphen, Hangul fillers, variation selectors, tag characters, and the code points
/// reserved to be ignored), the other format characters (Arabic, Syriac and Kaithi number
/// marks that join what follows, Egyptian hieroglyph format controls) and the blank
/// Braille pattern. Those are the characters a renderer draws as nothing, or as part of
/// another.
pub fn is_hidden(c: char) -> bool {
    matches!(
        c,
        '\0'..='\x1F'               // C0 controls
            | '\x7F'..='\u{9F}'     // DEL, C1 controls
            | '\u{AD}'              // soft hyphen
            | '\u{34F}'             // combining grapheme joiner
            | '\u{600}'..='\u{605}' | '\u{6DD}' | '\u{70F}' | '\u{890}'..='\u{891}' | '\u{8E2}' // number marks
            | '\u{61C}'             // Arabic letter mark
            | '\u{115F}'..='\u{1160}' | '\u{3164}' | '\u{FFA0}' // Hangul fillers
            | '\u{17B4}'..='\u{17B5}' // Khmer inherent vowels
            | '\u{180B}'..='\u{180F}' // Mongolian variation selectors and vowel separator
            | '\u{200B}'..='\u{200F}' // zero-width space, non-joiner, joiner; LRM, RLM
            | '\u{2028}'..='\u{2029}' // line and paragraph separators
            | '\u{202A}'..='\u{202E}' // bidi embeddings and overrides
            | '\u{2060}'..='\u{206F}' // word joiner, invisible operators, bidi isolates
            | '\u{2800}'            // Braille pattern blank
            | '\u{FE00}'..='\u{FE0F}' // variation selectors
            | '\u{FEFF}'            // zero-width no-break space (byte order mark)
            | '\u{FFF0}'..='\u{FFFB}' // reserved to be ignored; interlinear annotation
            | '\u{110BD}' | '\u{110CD}' // Kaithi number signs
            | '\u{13430}'..='\u{1343F}' // Egyptian hieroglyph format controls
            | '\u{1BCA0}'..='\u{1BCA3}' // shorthand format controls
            | '\u{1D173}'..='\u{1D17A}' // musical format controls
            | '\u{E0000}'..='\u{E0FFF}' // tags, variation selectors supplement, reserved
    )
}

/// The opening of an escape; in text, written escaped itself.
pub const OPEN: char = '⟨';

/// Emoji and the symbols emoji sequences are made of. A zero-width joiner between two of
/// them is seen (it joins them into one picture, 👩‍💻), so it is left as it is; between
/// letters it is not seen, and is shown.
fn is_pictograph(c: char) -> bool {
    matches!(c, '\u{2300}'..='\u{23FF}' | '\u{2600}'..='\u{27BF}' | '\u{2B00}'..='\u{2BFF}' | '\u{1F000}'..='\u{1FAFF}')
}

/// Writes `text` as the person is shown other people's and agents' text outside AMC's
/// window (a terminal, their phone): every character of [`is_hidden`] (the newline too)
/// and the bracket `⟨` as `⟨U+XXXX⟩`, so nothing acts on the screen and a text can never
/// pass for an escape. Two are kept as they are, where they only change how a character
/// that is shown looks: the text and emoji presentation selectors (U+FE0E, U+FE0F) right
/// after such a character (❤️), and a zero-width joiner between two pictographs.
pub fn write_shown(text: &str, out: &mut impl std::fmt::Write) -> std::fmt::Result {
    // The last character written as it is (not a presentation selector), if the last
    // thing written was not an escape; and whether a presentation selector may follow:
    // one, straight after such a character (a run of them is a place to hide bits).
    let mut shown_before: Option<char> = None;
    let mut selector_fits = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let selector = matches!(c, '\u{FE0E}' | '\u{FE0F}');
        let kept = match c {
            _ if selector => selector_fits,
            '\u{200D}' => shown_before.is_some_and(is_pictograph) && chars.peek().is_some_and(|&n| is_pictograph(n)),
            OPEN => false,
            c => !is_hidden(c),
        };
        if kept {
            out.write_char(c)?;
            if !selector {
                shown_before = Some(c);
            }
        } else {
            write!(out, "{OPEN}U+{:04X}⟩", u32::from(c))?;
            shown_before = None;
        }
        // A selector after a space changes nothing seen: it would only carry bits.
        selector_fits = kept && !selector && !c.is_whitespace();
    }
    Ok(())
}

/// [`write_shown`] into a new string.
pub fn shown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Writing to a string cannot fail.
    let _ = write_shown(text, &mut out);
    out
}
