//! Text from agents and other people, made safe to print on a terminal.
//!
//! A terminal acts on what it is given: a carriage return and an escape sequence rewrite
//! the line, a bidi override reorders it, a zero-width character hides between letters. An
//! agent could then show the person one text in `amc review list` and have `amc review
//! approve` send another. Whatever the daemon gives (messages, names, reasons, errors)
//! reaches the terminal through [`Shown`], which writes each such character as its code
//! point, `⟨U+202E⟩`; `--json` goes through [`json`], which writes them as `\u202e`.
//!
//! Why `⟨U+202E⟩` and not `\u{202E}`: with a backslash form every backslash of the text
//! must be doubled to stay unambiguous, and backslashes are ordinary in messages (paths,
//! `¯\_(ツ)_/¯`). The opening bracket U+27E8 is not: it alone is written as `⟨U+27E8⟩`,
//! so a text can never pass for an escape, and the escape can be read back (the tests
//! do). `U+XXXX` is how Unicode names a character, and the UI marks the same characters
//! the same way.

use std::fmt;

use serde::Serialize as _;
use serde_json::Value;

pub use amc_core::text::is_hidden;

/// Text for a terminal, on one line: every character of [`is_hidden`] (the newline too)
/// and the bracket `⟨` are written as `⟨U+XXXX⟩` ([`amc_core::text::write_shown`]).
/// Width and alignment (`{:<24}`) apply to what is shown.
#[derive(Clone, Copy)]
pub struct Shown<'a>(pub &'a str);

impl Shown<'_> {
    fn write_to(&self, out: &mut impl fmt::Write) -> fmt::Result {
        amc_core::text::write_shown(self.0, out)
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_none() && f.precision().is_none() {
            return self.write_to(f);
        }
        let mut shown = String::with_capacity(self.0.len());
        self.write_to(&mut shown)?;
        f.pad(&shown)
    }
}

/// A text printed line by line, each line [`Shown`]: only a newline breaks it (a carriage
/// return is shown, `⟨U+000D⟩`), so each printed line is one line of the text. An empty
/// text has no lines.
pub fn lines(text: &str) -> impl Iterator<Item = Shown<'_>> {
    text.split('\n').filter(move |_| !text.is_empty()).map(Shown)
}

/// The string at `v[key]`, to print; "-" when there is none.
pub fn field<'a>(v: &'a Value, key: &str) -> Shown<'a> {
    Shown(v[key].as_str().unwrap_or("-"))
}

/// The string `v` holds, to print, if it is one.
pub fn text(v: &Value) -> Option<Shown<'_>> {
    v.as_str().map(Shown)
}

/// The members of the object `v`, their names to print.
pub fn entries(v: &Value) -> impl Iterator<Item = (Shown<'_>, &Value)> {
    v.as_object().into_iter().flatten().map(|(name, value)| (Shown(name), value))
}

/// The string at `v[key]` as the daemon gave it ("" when there is none): for [`lines`],
/// and for what goes back to the daemon or into a configuration to copy (an agent's new
/// token, the path of `amc`), where escaping would change the value.
pub fn verbatim<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

/// `v` as indented JSON, with every character of [`is_hidden`] written as a `\u` escape:
/// serde_json escapes only C0 controls, so bidi overrides, zero-width characters, C1
/// controls and U+2028/U+2029 would otherwise reach the terminal as they are. The value
/// read back is the same.
pub fn json(v: &Value) -> serde_json::Result<String> {
    let mut out = Vec::new();
    v.serialize(&mut serde_json::Serializer::with_formatter(&mut out, Escaping::default()))?;
    // The serializer writes UTF-8 only.
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// serde_json's indented output, escaping hidden characters in strings.
#[derive(Default)]
struct Escaping(serde_json::ser::PrettyFormatter<'static>);

/// The formatter's calls for layout, handed to the indenting one.
macro_rules! layout {
    ($($name:ident $(($arg:ident: $ty:ty))?),* $(,)?) => {$(
        fn $name<W: ?Sized + std::io::Write>(&mut self, w: &mut W $(, $arg: $ty)?) -> std::io::Result<()> {
            self.0.$name(w $(, $arg)?)
        }
    )*};
}

impl serde_json::ser::Formatter for Escaping {
    layout!(
        begin_array,
        end_array,
        begin_array_value(first: bool),
        end_array_value,
        begin_object,
        end_object,
        begin_object_key(first: bool),
        end_object_key,
        begin_object_value,
        end_object_value,
    );

    /// A run of a string that serde_json leaves as it is (it escapes C0 controls, `"` and
    /// `\` itself, between runs).
    fn write_string_fragment<W: ?Sized + std::io::Write>(&mut self, w: &mut W, fragment: &str) -> std::io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices().filter(|&(_, c)| is_hidden(c)) {
            w.write_all(&fragment.as_bytes()[start..i])?;
            for unit in c.encode_utf16(&mut [0; 2]) {
                write!(w, "\\u{unit:04x}")?;
            }
            start = i + c.len_utf8();
        }
        w.write_all(&fragment.as_bytes()[start..])
    }
}

#[cfg(test)]
mod tests;
