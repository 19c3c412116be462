//! Ranking a search's matches by what the caller may see, and nothing else.
//!
//! SQLite's `bm25()` weighs each term by statistics of the whole index (how many rows hold
//! it, how long rows are on average), so the order of one agent's results would depend on
//! messages of channels and threads it may not see: a word common in a hidden channel
//! would weigh less in the agent's own results. Here the matches the caller may see are the
//! whole collection. Every match holds every term (a search requires them all), so each
//! term weighs the same, and a match ranks by how often it holds the terms against how long
//! it is, next to the caller's other matches (BM25's term part, k1 = 1.2, b = 0.75).
//!
//! Words are found as FTS5's `unicode61 remove_diacritics 2` finds them: runs of letters
//! and digits, lowercase, accents taken away; scripts written without spaces as substrings.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// What a search looks for: phrases of words, and substrings (scripts without spaces).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Terms {
    phrases: Vec<Vec<String>>,
    substrings: Vec<String>,
}

impl Terms {
    /// `phrases`: each a word or a phrase as the caller wrote it; `substrings`: the terms
    /// in scripts written without spaces.
    pub fn new<'p, 's>(
        phrases: impl IntoIterator<Item = &'p str>,
        substrings: impl IntoIterator<Item = &'s str>,
    ) -> Self {
        Self {
            phrases: phrases.into_iter().map(words).filter(|w| !w.is_empty()).collect(),
            substrings: substrings.into_iter().map(str::to_lowercase).filter(|s| !s.is_empty()).collect(),
        }
    }

    /// The phrases of an FTS5 expression made only of quoted strings (`"a b" "c"`), as the
    /// searches build them.
    pub fn from_quoted<'a>(expression: &str, substrings: impl IntoIterator<Item = &'a str>) -> Self {
        let mut phrases = Vec::new();
        let mut chars = expression.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '"' {
                continue;
            }
            let mut phrase = String::new();
            while let Some(c) = chars.next() {
                match c {
                    // A quote inside a phrase is doubled.
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        phrase.push('"');
                    }
                    '"' => break,
                    c => phrase.push(c),
                }
            }
            phrases.push(phrase);
        }
        Self::new(phrases.iter().map(String::as_str), substrings)
    }
}

/// The words of `text` as the index holds them.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.nfd().filter(|c| !is_combining_mark(*c)) {
        if c.is_alphanumeric() || ('\u{E000}'..='\u{F8FF}').contains(&c) {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// How often `phrase` occurs in `doc`, word after word.
fn occurrences(doc: &[String], phrase: &[String]) -> usize {
    if phrase.is_empty() || phrase.len() > doc.len() {
        return 0;
    }
    doc.windows(phrase.len()).filter(|w| *w == phrase).count()
}

/// A score for each of `texts`, higher first, computed over `texts` alone.
pub fn scores(terms: &Terms, texts: &[&str]) -> Vec<f64> {
    // Each text's length and how often it holds each term: in words when the search has
    // words, else in characters (substrings only).
    let by_words = !terms.phrases.is_empty();
    let measured: Vec<(f64, Vec<f64>)> = texts
        .iter()
        .map(|text| {
            let lower = text.to_lowercase();
            let doc = words(text);
            let mut tf: Vec<f64> = terms.phrases.iter().map(|p| occurrences(&doc, p) as f64).collect();
            tf.extend(terms.substrings.iter().map(|s| lower.matches(s.as_str()).count() as f64));
            let len = if by_words { doc.len() } else { lower.chars().count() };
            (len.max(1) as f64, tf)
        })
        .collect();
    let average = measured.iter().map(|(len, _)| len).sum::<f64>() / measured.len().max(1) as f64;
    measured
        .into_iter()
        .map(|(len, tf)| {
            let norm = K1 * (1.0 - B + B * len / average);
            tf.into_iter().map(|f| f * (K1 + 1.0) / (f + norm)).sum()
        })
        .collect()
}

/// The indices of `texts`, best first by [`scores`]; equals keep the order they came in, so
/// the caller gives the texts in its order for ties.
pub fn best_first(terms: &Terms, texts: &[&str]) -> Vec<usize> {
    let scores = scores(terms, texts);
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_folded_as_the_index_folds_them() {
        assert_eq!(words("Café at NOON? 🎉 naïve-ish x2"), ["cafe", "at", "noon", "naive", "ish", "x2"]);
        assert_eq!(words(""), Vec::<String>::new());
    }

    #[test]
    fn quoted_expressions_give_back_their_phrases() {
        let t = Terms::from_quoted(r#""see you at" "noon" "say ""hi""""#, ["東京"]);
        assert_eq!(t.phrases, [vec!["see", "you", "at"], vec!["noon"], vec!["say", "hi"]]);
        assert_eq!(t.substrings, ["東京"]);
        assert_eq!(Terms::from_quoted("", []), Terms::default());
    }

    #[test]
    fn more_of_the_terms_in_fewer_words_ranks_first() {
        let t = Terms::new(["parcel"], []);
        let s = scores(&t, &["parcel parcel parcel", "a parcel came for you today at the door", "the parcel"]);
        assert!(s[0] > s[2] && s[2] > s[1], "{s:?}");
        let phrase = Terms::new(["see you"], []);
        let s = scores(&phrase, &["see you, see you", "you see"]);
        assert!(s[0] > 0.0 && s[1] == 0.0, "{s:?}");
        let cjk = Terms::new([], ["東京"]);
        let s = scores(&cjk, &["東京東京", "明日東京に行きます"]);
        assert!(s[0] > s[1], "{s:?}");
    }
}
