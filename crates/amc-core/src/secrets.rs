//! One-time codes and sign-in links in messages: found as messages arrive, so what agents
//! are given can hide them. A code that reaches an agent, or that another message tricks
//! an agent into repeating, can take over an account.
//!
//! The rules are tables below. A code is a run of 4 to 8 digits (or 4 to 10 letters and
//! digits, where the wording is unmistakable) near words that say it signs someone in or
//! confirms something, in the languages the search index covers; Apple's origin-bound
//! form (`@example.com #123456`); any such run from a short-code sender. A sign-in link
//! is a URL whose address speaks of resetting, signing in or verifying and carries a
//! token. Numbers that are prices, dates, times, phone numbers or parts of larger numbers
//! are never codes. The corpus in `tests/fixtures/secrets/` holds real-shaped examples
//! and non-examples; its test gives the rules' recall and how many ordinary messages they
//! flag.

use std::ops::Range;

/// What hides a one-time code in the text agents are given.
pub const CODE_MARKER: &str = "[one-time code hidden by AMC]";
/// What hides a sign-in or password-reset link in the text agents are given.
pub const LINK_MARKER: &str = "[sign-in link hidden by AMC]";

/// A kind of secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecretKind {
    /// A one-time, verification or login code.
    Code,
    /// A password-reset or sign-in link.
    Link,
}

impl SecretKind {
    /// The name on the wire (`redacted` of a message).
    pub fn as_str(self) -> &'static str {
        match self {
            SecretKind::Code => "one_time_code",
            SecretKind::Link => "sign_in_link",
        }
    }

    fn marker(self) -> &'static str {
        match self {
            SecretKind::Code => CODE_MARKER,
            SecretKind::Link => LINK_MARKER,
        }
    }
}

/// A secret found in a text: what it is and where (byte offsets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// What it is.
    pub kind: SecretKind,
    /// Where it is in the text.
    pub at: Range<usize>,
}

/// Words that say a code near them signs someone in or confirms something (lowercase).
#[rustfmt::skip]
const STRONG: &[&str] = &[
    // English
    "verification", "verify", "otp", "passcode", "pass code", "one-time", "one time", "onetime",
    "security code", "login code", "log-in code", "log in code", "sign-in code", "sign in code",
    "signin code", "authentication", "auth code", "2fa", "two-factor", "two factor",
    "confirmation code", "access code", "pin code", "do not share", "don't share", "dont share",
    "never share", "not share", "doesn't ask", "never ask", "will never call", "reset code",
    "recovery code", "backup code", "steam guard", "<#>",
    // Spanish, Portuguese
    "verificación", "verificacion", "código de seguridad", "codigo de seguridad",
    "código de acceso", "no compartas", "no lo compartas", "no la compartas", "verificação",
    "verificacao", "código de segurança", "não compartilhe", "nao compartilhe", "não partilhe",
    // French
    "vérification", "verification", "code de sécurité", "code de confirmation", "ne partagez",
    "ne le partagez", "ne communiquez", "code à usage unique",
    // German
    "bestätigungscode", "sicherheitscode", "verifizierungscode", "einmalcode", "einmalpasswort",
    "bestätigung", "nicht weiter", "geben sie diesen code", "anmeldecode",
    // Italian
    "codice di verifica", "codice di sicurezza", "non condividere", "codice di accesso",
    "codice monouso",
    // Dutch
    "verificatiecode", "beveiligingscode", "deel deze code", "inlogcode", "eenmalige",
    // Chinese
    "验证码", "驗證碼", "校验码", "校驗碼", "动态码", "動態碼", "认证码", "認證碼", "安全码", "请勿泄露", "請勿洩露", "切勿", "登录码",
    "登入碼",
    // Japanese
    "認証コード", "確認コード", "認証番号", "確認番号", "ワンタイム", "セキュリティコード", "パスコード", "ログインコード",
    // Korean
    "인증번호", "인증 번호", "인증코드", "인증 코드", "보안코드", "보안 코드", "확인 코드", "확인코드", "타인에게",
    // Thai
    "รหัสยืนยัน", "รหัส otp", "ห้ามบอก", "รหัสผ่านครั้งเดียว", "รหัสotp",
];

/// Words for "code" or "PIN" alone: a number near one is a code, unless the words around
/// say another kind of code ([`NOT_SECRET`]).
const CODE_WORDS: &[&str] = &["code", "código", "codigo", "codice", "kod", "pin", "コード", "코드", "รหัส", "码", "碼"];

/// Codes that are not secrets: where these stand, "code" says nothing.
#[rustfmt::skip]
const NOT_SECRET: &[&str] = &[
    "zip code", "postal code", "post code", "postcode", "area code", "country code", "promo code",
    "promotional code", "discount code", "coupon code", "referral code", "dress code",
    "source code", "qr code", "bar code", "barcode", "error code", "status code", "gift code",
    "voucher code", "code promo", "code postal", "código postal", "codigo postal",
    "código promocional", "codice sconto", "codice postale", "gutscheincode", "rabattcode",
    "postleitzahl", "code review", "morse code", "tax code", "booking code", "tracking code",
];

/// Words that, just before a number, say what else it is (an order, a room, a flight).
#[rustfmt::skip]
const LABELS: &[&str] = &[
    "order", "flight", "room", "suite", "gate", "seat", "bus", "train", "apt", "apartment", "unit",
    "ref", "reference", "invoice", "ticket", "booking", "case", "account", "acct", "tracking",
    "page", "model", "version", "street", "ending", "no", "number", "pedido", "commande",
    "bestellung", "ordine",
];

/// Words that, just after a number, say it is an address.
#[rustfmt::skip]
const STREETS: &[&str] = &[
    "st", "street", "ave", "avenue", "rd", "road", "blvd", "boulevard", "dr", "drive", "ln", "lane",
    "way", "pl", "place", "ct", "court", "hwy", "highway", "pkwy", "sq", "square", "calle", "rue",
    "strasse", "straße", "via",
];

/// Words that make "code" a shop's: with one of these and none of [`STRONG`], a number
/// near "code" is an offer, not a sign-in.
#[rustfmt::skip]
const OFFERS: &[&str] = &[
    "checkout", "% off", "discount", "coupon", "promo", "sale", "offer", "voucher", "descuento",
    "rabatt", "réduction",
];

/// How far (in characters) a code may stand from the words that make it one.
const NEAR: usize = 60;

/// Whether `sender` (a handle id) is a short code or an alphanumeric sender id: the
/// numbers and names businesses text from, which send codes and never chat.
pub fn is_short_code_sender(sender: &str) -> bool {
    let s = sender.trim();
    if s.contains('@') || s.starts_with('+') {
        return false;
    }
    let digits = s.chars().all(|c| c.is_ascii_digit());
    if digits {
        return (3..=6).contains(&s.len());
    }
    // Alphanumeric sender ids: up to 11 letters and digits (the SMS limit), a letter among them.
    let ok = |c: char| c.is_ascii_alphanumeric() || c == ' ' || c == '-' || c == '.' || c == '_';
    (2..=11).contains(&s.chars().count()) && s.chars().all(ok) && s.chars().any(|c| c.is_ascii_alphabetic())
}

/// The secrets in `text`, in order, none overlapping. `short_code`: the sender is a short
/// code ([`is_short_code_sender`]), whose numbers are codes whatever the words.
pub fn find(text: &str, short_code: bool) -> Vec<Found> {
    // Most messages hold neither a run that could be a code nor a link: one pass tells.
    let runs = candidates(text);
    if runs.is_empty() && !text.contains("://") {
        return Vec::new();
    }
    let lower = text.to_lowercase();
    // Lowercasing may change lengths; positions are compared in characters of the same
    // text, so it is only used when it keeps them.
    let lower = if lower.len() == text.len() { lower } else { ascii_lower(text) };
    let mut found = links(text, &lower);
    let strong = places(&lower, STRONG);
    let offer = strong.is_empty() && OFFERS.iter().any(|o| lower.contains(o));
    let weak: Vec<usize> = places(&lower, CODE_WORDS)
        .into_iter()
        .filter(|&at| !offer && !NOT_SECRET.iter().any(|n| near_phrase(&lower, at, n)))
        .collect();
    let apple = apple_codes(text);
    for c in runs {
        if found.iter().any(|f| overlaps(&f.at, &c.at)) || labelled(&lower, &c.at) {
            continue;
        }
        let close = |places: &[usize]| places.iter().any(|&p| distance(text, p, &c.at) <= NEAR);
        let is_code = apple.iter().any(|a| a == &c.at)
            || (c.numeric && (short_code || close(&strong) || close(&weak)))
            || (!c.numeric && close(&strong));
        if is_code {
            found.push(Found { kind: SecretKind::Code, at: c.at });
        }
    }
    found.sort_by_key(|f| f.at.start);
    found
}

/// `text` with each of `found` replaced by its marker.
pub fn hide(text: &str, found: &[Found]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for f in found {
        if f.at.start < from || f.at.end > text.len() {
            continue;
        }
        out.push_str(&text[from..f.at.start]);
        out.push_str(f.kind.marker());
        from = f.at.end;
    }
    out.push_str(&text[from..]);
    out
}

fn ascii_lower(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii() { c.to_ascii_lowercase() } else { c }).collect()
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// Where each of `words` starts in `lower`.
fn places(lower: &str, words: &[&str]) -> Vec<usize> {
    let mut out = Vec::new();
    for w in words {
        for (at, _) in lower.match_indices(w) {
            let ascii_word = w.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
            // A Latin word counts only as a word, not inside another ("decode", "pinch").
            let starts = !ascii_word || !lower[..at].chars().next_back().is_some_and(char::is_alphanumeric);
            let last_alnum = w.chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric());
            let ends = !last_alnum || !lower[at + w.len()..].chars().next().is_some_and(char::is_alphanumeric);
            if starts && ends {
                out.push(at);
            }
        }
    }
    out
}

/// Whether `phrase` stands where the word at `at` is (the word is inside it).
fn near_phrase(lower: &str, at: usize, phrase: &str) -> bool {
    lower.match_indices(phrase).any(|(p, _)| p <= at && at < p + phrase.len())
}

/// Whether the word just before `at` says what else the number is (an order, a room), or
/// the words after it make it an address ("1200 Oak Ave").
fn labelled(lower: &str, at: &Range<usize>) -> bool {
    let before: Vec<&str> = lower[..at.start].split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let label = before.last().is_some_and(|w| LABELS.contains(w));
    let after: Vec<&str> =
        lower[at.end..].split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).take(2).collect();
    let street = after.iter().any(|w| STREETS.contains(w));
    label || street
}

/// Characters between the word at `at` and the span `c`.
fn distance(text: &str, at: usize, c: &Range<usize>) -> usize {
    let (a, b) = if at < c.start { (at, c.start) } else { (c.end, at) };
    text.get(a..b).map_or(usize::MAX, |s| s.chars().count())
}

/// A run that may be a code.
struct Candidate {
    at: Range<usize>,
    numeric: bool,
}

/// Runs of 4 to 8 digits (one space or hyphen may split them in two groups of 3 or 4:
/// "123 456", "123-456"), and runs of 4 to 10 capital letters and digits with both, that
/// are not parts of prices, dates, times, phone numbers, amounts or longer numbers.
fn candidates(text: &str) -> Vec<Candidate> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if !c.is_ascii_alphanumeric() {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && chars[j].1.is_ascii_alphanumeric() {
            j += 1;
        }
        let word: String = chars[i..j].iter().map(|(_, c)| c).collect();
        let end = chars.get(j).map_or(text.len(), |(b, _)| *b);
        let before = i.checked_sub(1).map(|k| chars[k].1);
        let after = chars.get(j).map(|(_, c)| *c);
        let digit_at = |k: usize| chars.get(k).is_some_and(|(_, c)| c.is_ascii_digit());
        if word.chars().all(|c| c.is_ascii_digit()) {
            // A second group after one space or hyphen: "123 456".
            let second = if matches!(after, Some(' ' | '-')) && digit_at(j + 1) {
                let mut k = j + 1;
                while k < chars.len() && chars[k].1.is_ascii_digit() {
                    k += 1;
                }
                Some(k)
            } else {
                None
            };
            let grouped = second.filter(|&k| {
                let (a, b) = (j - i, k - j - 1);
                (3..=4).contains(&a)
                    && (3..=4).contains(&b)
                    && !chars.get(k).is_some_and(|(_, c)| matches!(c, ' ' | '-') && digit_at(k + 1))
            });
            let (last, digits) = match grouped {
                Some(k) => (k, (j - i) + (k - j - 1)),
                None => (j, j - i),
            };
            let end = chars.get(last).map_or(text.len(), |(b, _)| *b);
            let next = chars.get(last).map(|(_, c)| *c);
            let joined = |c: Option<char>, k: Option<usize>| {
                matches!(c, Some('.' | ',' | ':' | '/' | '-' | '\u{2013}')) && k.is_some_and(&digit_at)
            };
            let part_of_more = joined(before, i.checked_sub(2))
                || joined(next, Some(last + 1))
                || (grouped.is_none() && second.is_some());
            let currency = |c: char| matches!(c, '$' | '€' | '£' | '¥' | '₹' | '₩');
            let money = before.is_some_and(currency)
                || next.is_some_and(|c| c == '%' || currency(c))
                || (before == Some(' ') && i.checked_sub(2).is_some_and(|k| currency(chars[k].1)));
            let phone = matches!(before, Some('+' | '(' | ')'));
            if (4..=8).contains(&digits) && !part_of_more && !money && !phone {
                out.push(Candidate { at: start..end, numeric: true });
            }
            i = last;
            continue;
        }
        let letters = word.chars().filter(|c| c.is_ascii_alphabetic()).count();
        let digits = word.len() - letters;
        let capitals = word.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
        if (4..=10).contains(&word.len()) && letters > 0 && digits > 0 && capitals {
            out.push(Candidate { at: start..end, numeric: false });
        } else if let Some(p) = word.find(|c: char| c.is_ascii_digit()).filter(|_| letters <= 2 && digits >= 4) {
            // "G-123456" is split at the hyphen; "G123456" keeps its letter: the digits are the code.
            let digits_at = start + p;
            if word[p..].chars().all(|c| c.is_ascii_digit()) && (4..=8).contains(&(word.len() - p)) {
                out.push(Candidate { at: digits_at..end, numeric: true });
            }
        }
        i = j;
    }
    out
}

/// Codes of Apple's origin-bound form, a line's `@domain #code` (WebKit's "Origin-bound
/// one-time codes delivered via SMS"): the spans of the codes.
fn apple_codes(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let words: Vec<(usize, &str)> = line
            .split(' ')
            .scan(0, |pos, w| {
                let at = *pos;
                *pos += w.len() + 1;
                Some((at, w))
            })
            .collect();
        for pair in words.windows(2) {
            let ((_, domain), (at, code)) = (pair[0], pair[1]);
            let code = code.trim_end();
            if domain.len() > 3
                && domain.starts_with('@')
                && domain.contains('.')
                && code.len() > 4
                && let Some(c) = code.strip_prefix('#').filter(|c| c.chars().all(|c| c.is_ascii_alphanumeric()))
            {
                let start = offset + at + 1;
                out.push(start..start + c.len());
            }
        }
        offset += line.len();
    }
    out
}

/// Words in a link's address that say it signs someone in or resets something.
#[rustfmt::skip]
const LINK_WORDS: &[&str] = &[
    "reset", "password", "passwd", "magic", "login", "log-in", "signin", "sign-in", "sign_in",
    "verify", "verification", "confirm", "auth", "otp", "token", "activate", "one-time", "onetime",
    "recover",
];

/// Links whose address speaks of signing in or resetting, and carries a token (a query
/// value of 8 characters or more, or a path part of 16 or more with letters and digits).
fn links(text: &str, lower: &str) -> Vec<Found> {
    let mut out = Vec::new();
    for scheme in ["https://", "http://"] {
        for (at, _) in lower.match_indices(scheme) {
            let end = text[at..].find(char::is_whitespace).map_or(text.len(), |e| at + e);
            let end = at + text[at..end].trim_end_matches(['.', ',', ')', '!', '?', '"', '\'']).len();
            let url = &lower[at..end];
            let speaks = LINK_WORDS.iter().any(|w| url.contains(w));
            let (path, query) = url.split_once('?').unwrap_or((url, ""));
            let query_token = query.split('&').any(|kv| kv.split_once('=').is_some_and(|(_, v)| v.len() >= 8));
            let path_token = path.split(['/', '#']).skip(3).any(|p| {
                p.len() >= 16 && p.chars().any(|c| c.is_ascii_digit()) && p.chars().any(|c| c.is_ascii_alphabetic())
            });
            if speaks && (query_token || path_token) {
                out.push(Found { kind: SecretKind::Link, at: at..end });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hidden(text: &str) -> String {
        hide(text, &find(text, false))
    }

    #[test]
    fn a_code_is_hidden_and_the_words_around_it_stay() {
        assert_eq!(
            hidden("Your verification code is 482913. Don't share it."),
            format!("Your verification code is {CODE_MARKER}. Don't share it.")
        );
        assert_eq!(
            hidden("G-381204 is your Google verification code."),
            format!("G-{CODE_MARKER} is your Google verification code.")
        );
        assert_eq!(hidden("Your code: 123-456"), format!("Your code: {CODE_MARKER}"));
        let apple = "Your Example code is 552266.\n\n@example.com #552266";
        assert!(!hidden(apple).contains("552266"), "{}", hidden(apple));
    }

    #[test]
    fn numbers_that_are_no_codes_stay() {
        for text in [
            "Dinner was $1234 for the whole table, code name: birthday",
            "My zip code is 94110",
            "Use promo code SAVE2024 for 20% off",
            "Call me at +1 415 555 0199",
            "The meeting moved to 12/04/2026 at 14:30",
            "Flight 4521 lands at 9",
        ] {
            assert_eq!(hidden(text), text);
        }
    }

    #[test]
    fn short_code_senders_are_numbers_and_names_businesses_text_from() {
        assert!(is_short_code_sender("72975") && is_short_code_sender("GOOGLE") && is_short_code_sender("Chase"));
        assert!(!is_short_code_sender("+14155550199") && !is_short_code_sender("ada@example.com"));
        assert!(!is_short_code_sender("14155550199"));
        assert_eq!(hide("4471", &find("4471", true)), CODE_MARKER);
    }
}
