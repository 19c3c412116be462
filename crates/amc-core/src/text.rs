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
