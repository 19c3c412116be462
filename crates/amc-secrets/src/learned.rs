//! A second opinion on the numbers and links the rules leave: a logistic model of the text
//! around them, learned from the sets of messages in `tests/fixtures/secrets/` by
//! `examples/learn.rs` and kept in `learned.bin`. It reads what the rules' tables cannot
//! list: how services in any language put the words that ask for a code or a click around
//! one.
//!
//! A candidate's features are hashed into [`SIZE`] weights: the characters just before
//! and after it (pieces of two to four, the nearest apart), the message's own pieces of
//! three characters, and a number's shape ("000000", "a0a-0a0") and whether a short code
//! sent it, or a link's (its host's labels, its path's parts, what its last part is made
//! of, its query's keys). A link's features are tagged apart from a number's, so the two
//! share only the message's. Digits are all one character to it, so no number is learned,
//! only where numbers stand.

use std::ops::Range;

/// How many weights the features are hashed into: 2^17.
const BITS: u32 = 17;
pub const SIZE: usize = 1 << BITS;
const MASK: u32 = (1 << BITS) - 1;

/// How far the context reaches, in characters, before and after a candidate; and the
/// nearest part, whose pieces count apart.
const BEFORE: usize = 40;
const AFTER: usize = 30;
const NEAR_BEFORE: usize = 12;
const NEAR_AFTER: usize = 8;

/// A model: a weight per hashed feature, a bias, and the score above which a candidate is
/// taken as a code.
pub struct Model {
    /// The weights, `SIZE` of them.
    pub weights: Vec<f32>,
    /// The bias.
    pub bias: f32,
    /// The score a candidate must pass.
    pub threshold: f32,
}

impl Model {
    /// The model kept in `learned.bin`: a little-endian `f32` scale, bias and threshold,
    /// then `SIZE` weights of one signed byte each (times the scale).
    pub fn built_in() -> &'static Model {
        // The bytes are built in and checked by the crate's tests
        // (`the_built_in_model_is_what_the_sets_teach`): they always hold a model.
        static MODEL: std::sync::LazyLock<Model> =
            std::sync::LazyLock::new(|| Model::read(include_bytes!("learned.bin")).expect("learned.bin holds a model"));
        &MODEL
    }

    /// A model that takes nothing.
    pub fn empty() -> Model {
        Model { weights: vec![0.0; SIZE], bias: 0.0, threshold: f32::INFINITY }
    }

    /// The model written in `bytes` ([`Model::write`]), if they hold one and nothing more.
    pub fn read(bytes: &[u8]) -> Option<Model> {
        if bytes.len() != 12 + SIZE {
            return None;
        }
        let f = |at: usize| Some(f32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
        let (scale, bias, threshold) = (f(0)?, f(4)?, f(8)?);
        let weights = bytes.get(12..12 + SIZE)?;
        let weights = weights.iter().map(|&b| f32::from(i8::from_le_bytes([b])) * scale).collect();
        Some(Model { weights, bias, threshold })
    }

    /// The model in bytes, each weight rounded to one of 255 steps of the largest.
    pub fn write(&self) -> Vec<u8> {
        let largest = self.weights.iter().fold(0f32, |m, w| m.max(w.abs()));
        let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
        let mut out = Vec::with_capacity(12 + SIZE);
        for v in [scale, self.bias, self.threshold] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        // Rounded and bounded to a byte's range first: the cast cannot wrap.
        #[allow(clippy::cast_possible_truncation)]
        out.extend(self.weights.iter().map(|w| ((w / scale).round().clamp(-127.0, 127.0) as i8).to_le_bytes()[0]));
        out
    }

    /// The sum of the weights of `features`: a candidate's score is the bias, its own
    /// features' sum and its message's ([`message_features`]), the last read once a message.
    pub fn sum(&self, features: &[u32]) -> f32 {
        features.iter().map(|&f| self.weights[f as usize]).sum()
    }

    /// Whether the model judges anything: the empty one does not, and is never asked.
    pub fn judges(&self) -> bool {
        self.threshold.is_finite()
    }

    /// Whether a candidate with these features, in a message whose features sum to
    /// `message`, is a code.
    pub fn takes(&self, features: &[u32], message: f32) -> bool {
        self.bias + self.sum(features) + message > self.threshold
    }
}

/// A candidate's features, and whether it is (part of) its message's secret.
pub struct Example {
    /// Its features ([`features`]) and then its message's ([`message_features`]).
    pub features: Vec<u32>,
    /// Whether it is (part of) a secret.
    pub secret: bool,
}

/// How many times the learning goes over the examples, how fast it moves, and how
/// strongly it keeps the weights small.
const ROUNDS: usize = 12;
const RATE: f32 = 0.2;
const SHRINK: f32 = 1e-5;

/// A model learned from `examples`, taking what scores above `threshold`: logistic
/// regression by AdaGrad, going over the examples in an order fixed by a seed, so the same
/// examples give the same model.
pub fn learn(examples: &[&Example], threshold: f32) -> Model {
    let mut weights = vec![0f32; SIZE];
    let mut squares = vec![1e-6f32; SIZE];
    let (mut bias, mut bias_square) = (0f32, 1e-6f32);
    let mut order: Vec<usize> = (0..examples.len()).collect();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..ROUNDS {
        for i in (1..order.len()).rev() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let j = usize::try_from(seed % (i as u64 + 1)).unwrap_or(0);
            order.swap(i, j);
        }
        for &k in &order {
            let e = examples[k];
            let score = bias + e.features.iter().map(|&f| weights[f as usize]).sum::<f32>();
            let p = sigmoid(score);
            let gradient = p - f32::from(u8::from(e.secret));
            for &f in &e.features {
                let f = f as usize;
                let g = gradient + SHRINK * weights[f];
                squares[f] += g * g;
                weights[f] -= RATE * g / squares[f].sqrt();
            }
            bias_square += gradient * gradient;
            bias -= RATE * gradient / bias_square.sqrt();
        }
    }
    Model { weights, bias, threshold }
}

/// How many numbers, and how many links, of one message the model judges at most: what the
/// rules leave of a service's message is a few, and a message of thousands costs no more.
pub const JUDGED: usize = 32;

/// How much of a message its own features are read from, in characters.
const MESSAGE_CHARS: usize = 2_000;

/// 1 / (1 + e^-x), in additions, products and quotients alone, which IEEE 754 rounds the
/// same on every machine (a platform's `exp` may differ in its last bit, and learning
/// would then differ between a Mac and Linux): e^-x as 2^k · e^r, r within ±ln2/2, its
/// series to 14 terms.
// k is within ±58, so its exponent's bits fit; the result is within 0 and 1.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn sigmoid(x: f32) -> f32 {
    let y = -f64::from(x.clamp(-40.0, 40.0)) * std::f64::consts::LOG2_E;
    let k = y.round();
    let r = (y - k) * std::f64::consts::LN_2;
    let (mut term, mut sum) = (1.0f64, 1.0f64);
    for n in 1..=14 {
        term *= r / f64::from(n);
        sum += term;
    }
    let two_k = f64::from_bits(((k as i64 + 1023) as u64) << 52);
    (1.0 / (1.0 + sum * two_k)) as f32
}

/// The features of the candidate at `at` in `lower` (a message's lowercase, as the rules
/// read it), once each; its message's are apart ([`message_features`]).
pub fn features(lower: &str, at: &Range<usize>, short_code: bool) -> Vec<u32> {
    let mut out = Vec::with_capacity(320);
    around(lower, at, *b"LRlr", &mut out);
    let shape: String = lower[at.clone()]
        .chars()
        .map(|c| match c {
            c if c.is_numeric() => '0',
            c if c.is_alphabetic() => 'a',
            c => c,
        })
        .collect();
    out.push(hash(b'S', shape.as_bytes()));
    out.push(hash(b'N', &[u8::try_from(shape.chars().count()).unwrap_or(u8::MAX)]));
    if short_code {
        out.push(hash(b'K', b""));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The features of the address at `at` in `lower` that the rules did not take as a
/// sign-in link, once each: the words around it (apart from a number's), and its shape:
/// how many labels its host has, how many parts its path, what its last part is made of
/// and the names of its query's keys. Its message's are apart ([`message_features`]).
pub fn link_features(lower: &str, at: &Range<usize>) -> Vec<u32> {
    let mut out = Vec::with_capacity(320);
    around(lower, at, *b"PQpq", &mut out);
    let url = &lower[at.clone()];
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let host = parts.first().copied().unwrap_or_default();
    let count = |n: usize| [u8::try_from(n.min(9)).unwrap_or(9)];
    out.push(hash(b'T', b"link"));
    out.push(hash(b'H', &count(host.split('.').count())));
    out.push(hash(b'G', &count(parts.len().saturating_sub(1))));
    out.push(hash(b'h', &count(host.len() / 4)));
    if let Some(last) = parts.get(1..).and_then(<[&str]>::last) {
        // Letters, digits and the rest, runs of one kind as one: "r/pe6wnk3j" is "a0a0a0".
        let mut shape = String::new();
        for c in last.chars().map(|c| {
            if c.is_numeric() {
                '0'
            } else if c.is_alphabetic() {
                'a'
            } else {
                c
            }
        }) {
            if !shape.ends_with(c) {
                shape.push(c);
            }
        }
        out.push(hash(b'Z', shape.as_bytes()));
        out.push(hash(b'z', &count(last.len() / 4)));
    }
    for key in query.split('&').filter_map(|kv| kv.split_once('=').map(|(k, _)| k)) {
        out.push(hash(b'Y', key.as_bytes()));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The pieces of the characters around `at` in `lower`, under `tags`: before, after, and the
/// nearest before and after.
fn around(lower: &str, at: &Range<usize>, tags: [u8; 4], out: &mut Vec<u32>) {
    let before: Vec<char> = lower[..at.start].chars().rev().take(BEFORE).map(fold).collect();
    let before: Vec<char> = before.into_iter().rev().chain(['\u{1}']).collect();
    let after: Vec<char> = ['\u{1}'].into_iter().chain(lower[at.end..].chars().take(AFTER).map(fold)).collect();
    pieces(tags[0], &before, 2..=4, out);
    pieces(tags[1], &after, 2..=4, out);
    let near = before.len().saturating_sub(NEAR_BEFORE + 1);
    pieces(tags[2], &before[near..], 1..=4, out);
    pieces(tags[3], &after[..after.len().min(NEAR_AFTER + 1)], 1..=4, out);
}

/// The features of a whole message: its pieces of three characters (of its first
/// [`MESSAGE_CHARS`]), once each.
pub fn message_features(lower: &str) -> Vec<u32> {
    let chars: Vec<char> = [' '].into_iter().chain(lower.chars().take(MESSAGE_CHARS).map(fold)).chain([' ']).collect();
    let mut out = Vec::new();
    pieces(b'M', &chars, 3..=3, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

/// Digits of any script as one, every space as one, the rest as it is.
fn fold(c: char) -> char {
    if c.is_numeric() {
        '0'
    } else if c.is_whitespace() {
        ' '
    } else {
        c
    }
}

/// The hashes of each run of `sizes` characters in `chars`, under `tag`.
fn pieces(tag: u8, chars: &[char], sizes: std::ops::RangeInclusive<usize>, out: &mut Vec<u32>) {
    let mut buf = [0u8; 16];
    for n in sizes {
        for w in chars.windows(n) {
            let mut len = 0;
            for c in w {
                len += c.encode_utf8(&mut buf[len..]).len();
            }
            out.push(hash(tag, &buf[..len]));
        }
    }
}

/// FNV-1a of `tag` and `bytes`, into [`SIZE`].
fn hash(tag: u8, bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in std::iter::once(&tag).chain(bytes) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h & MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    fn features_of(text: &str, needle: &str) -> Vec<u32> {
        let lower = crate::lower_in_place(text);
        let at = text.find(needle).expect("in the text");
        [features(&lower, &(at..at + needle.len()), false), message_features(&lower)].concat()
    }

    #[test]
    fn a_model_is_read_as_written_to_a_step() {
        let mut model = Model::empty();
        model.bias = -1.5;
        model.threshold = 7.0;
        model.weights[3] = 2.54;
        model.weights[SIZE - 1] = -1.27;
        let again = Model::read(&model.write()).expect("a model");
        assert_eq!((again.bias, again.threshold), (-1.5, 7.0));
        assert!((again.weights[3] - 2.54).abs() < 0.01 && (again.weights[SIZE - 1] + 1.27).abs() < 0.02);
        assert!(Model::read(&model.write()[..100]).is_none(), "a cut file is no model");
        assert!(Model::read(&[model.write(), vec![0]].concat()).is_none(), "nor one with more");
        assert!(!Model::empty().takes(&[1, 2, 3], 0.0), "the empty model takes nothing");
    }

    #[test]
    fn the_sigmoid_is_the_logistic_function() {
        for x in [-40.0f32, -7.0, -1.0, -0.25, 0.0, 0.25, 1.0, 7.0, 40.0, 1e9, -1e9] {
            let want = 1.0 / (1.0 + (-f64::from(x.clamp(-40.0, 40.0))).exp());
            assert!((f64::from(sigmoid(x)) - want).abs() < 1e-7, "{x}: {} against {want}", sigmoid(x));
        }
    }

    #[test]
    fn numbers_are_where_they_stand_not_what_they_are() {
        // Two codes of the same shape in the same words are one to the model.
        assert_eq!(
            features_of("Your code is 482913, valid 5 min", "482913"),
            features_of("Your code is 771204, valid 9 min", "771204")
        );
        // Another word around it, another shape, or a short code's message is not.
        let code = features_of("Your code is 482913", "482913");
        assert_ne!(code, features_of("Your order is 482913", "482913"));
        assert_ne!(code, features_of("Your code is 4829", "4829"));
        let lower = crate::lower_in_place("Your code is 482913");
        assert_ne!(code, [features(&lower, &(13..19), true), message_features(&lower)].concat());
        assert!(code.iter().all(|&f| (f as usize) < SIZE));
    }

    /// The built-in model takes codes and links the rules leave and names itself for them;
    /// it is asked only about what the rules leave, and never about an offer's numbers.
    #[test]
    fn the_built_in_model_takes_what_the_rules_leave_and_says_so() {
        let text = "Ihr Zugang: 583 201, gültig 5 Minuten";
        assert!(crate::find_with(text, false, &Model::empty()).is_empty(), "the rules leave it");
        let found = crate::find(text, false);
        assert_eq!(found.len(), 1);
        assert_eq!((&text[found[0].at.clone()], found[0].rule), ("583 201", crate::Rule::Learned));
        // A link whose words the rules' tables do not hold, and a video's, which carries no token.
        let text = "Hej! Klicka här för att komma in: https://app.example.se/q/Ab3kD9xQ2 (gäller 10 min)";
        assert!(crate::find_with(text, false, &Model::empty()).is_empty(), "the rules leave it");
        let found = crate::find(text, false);
        assert_eq!((found.len(), found[0].kind, found[0].rule), (1, crate::SecretKind::Link, crate::Rule::Learned));
        assert_eq!(&text[found[0].at.clone()], "https://app.example.se/q/Ab3kD9xQ2");
        assert!(crate::find("Watch this https://youtu.be/dQw4w9WgXcQ lol", false).is_empty());
        assert!(crate::find("Your order 482913 ships today", false).is_empty());
        // Nine or ten digits are a phone's or an account's: the model never judges them.
        assert!(crate::find("Código para llamar a soporte: 612 345 678", false).is_empty());
        assert!(crate::find("Use 583 201 at checkout for 20% off", false).is_empty());
    }
}
