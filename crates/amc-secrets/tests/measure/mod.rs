//! The finder's figures on a corpus of messages, as a person's iMessages reach it: how
//! many secrets it hides whole and how many ordinary messages it alters, by kind and
//! category. Shared by the corpus tests and `examples/measure.rs`.
//!
//! A corpus has five tab-separated columns (kind, category, sender, secret, text; see
//! `tests/fixtures/secrets/heldout.tsv`) or the four of `corpus.tsv` (no category). A
//! secret counts as hidden when every letter and digit of each place it stands in the text
//! lies in a span found of its kind (`password` is hidden as a code); an ordinary message
//! (`none`) counts as altered when anything in it is found.

use std::collections::BTreeMap;

use amc_secrets::{Author, Found, SecretKind, in_message};

/// How many of a kind there are, and how many the finder got right.
#[derive(Default)]
pub struct Tally {
    pub total: u32,
    pub right: u32,
}

/// A corpus's figures.
#[derive(Default)]
pub struct Figures {
    /// Secrets hidden whole, by "kind category".
    pub secrets: BTreeMap<String, Tally>,
    /// Ordinary messages left alone, by category.
    pub ordinary: BTreeMap<String, Tally>,
    /// The rules that altered ordinary messages, with how many spans each.
    pub wrong_rules: BTreeMap<&'static str, u32>,
    /// The lines the finder got wrong.
    pub misses: Vec<usize>,
}

impl Figures {
    /// Secrets: hidden whole, of all.
    pub fn hidden(&self) -> (u32, u32) {
        self.secrets.values().fold((0, 0), |(r, t), x| (r + x.right, t + x.total))
    }

    /// Ordinary messages: altered, of all.
    pub fn altered(&self) -> (u32, u32) {
        self.ordinary.values().fold((0, 0), |(a, t), x| (a + x.total - x.right, t + x.total))
    }
}

/// A message of a corpus: its line, kind, category, sender, secret and text.
pub struct Line<'a> {
    pub n: usize,
    pub kind: &'a str,
    pub category: &'a str,
    pub sender: &'a str,
    pub secret: String,
    pub message: String,
}

/// The messages of the corpus `text`.
pub fn lines(text: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let (kind, category, sender, secret, message) = match cols[..] {
            [kind, category, sender, secret, message] => (kind, category, sender, secret, message),
            [kind, sender, secret, message] => (kind, "-", sender, secret, message),
            _ => panic!("line {}: four or five columns", n + 1),
        };
        let (secret, message) = (secret.replace("\\n", "\n"), message.replace("\\n", "\n"));
        out.push(Line { n: n + 1, kind, category, sender, secret, message });
    }
    out
}

/// Held-out sets sealed and not yet measured after a change: measured, never learned from.
pub const NOT_LEARNED: &[&str] = &["heldout-13.tsv"];

/// The sets the learned model learns from, by name, in the order of their names: every
/// `.tsv` in `dir` but [`NOT_LEARNED`].
pub fn learned_sets(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut sets: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("the sets")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let learned = name.ends_with(".tsv") && !NOT_LEARNED.contains(&name.as_str());
            learned.then(|| std::fs::read_to_string(dir.join(&name)).map(|text| (name, text)).ok()).flatten()
        })
        .collect();
    sets.sort();
    sets
}

/// What the learned model learns from the corpus `text`: each candidate of each message,
/// a secret when it lies in the message's code or password, and each address, a secret
/// when it is the message's link. A number inside a link is the link's, and is left out.
pub fn examples(text: &str) -> Vec<amc_secrets::learned::Example> {
    let mut out = Vec::new();
    for line in lines(text) {
        let author = Author { source: "imessage", sender: line.sender, is_self: false };
        let places: Vec<std::ops::Range<usize>> = if line.kind == "none" {
            Vec::new()
        } else {
            line.message.match_indices(line.secret.as_str()).map(|(at, s)| at..at + s.len()).collect()
        };
        for (at, kind, features) in amc_secrets::candidate_features(&line.message, author.is_short_code()) {
            let inside = places.iter().any(|p| p.start < at.end && at.start < p.end);
            let secret = match kind {
                SecretKind::Code if inside && line.kind == "link" => continue,
                SecretKind::Code => inside,
                SecretKind::Link => inside && line.kind == "link",
            };
            out.push(amc_secrets::learned::Example { features, secret });
        }
    }
    out
}

/// The figures of the corpus `text`.
pub fn measure(text: &str) -> Figures {
    measure_with(text, in_message)
}

/// The figures of the corpus `text` as `find` finds its secrets.
pub fn measure_with(text: &str, find: impl Fn(Author<'_>, &str) -> Vec<Found>) -> Figures {
    let mut figures = Figures::default();
    for Line { n, kind, category, sender, secret, message } in lines(text) {
        let n = n - 1;
        let found = find(Author { source: "imessage", sender, is_self: false }, &message);
        let want = match kind {
            "code" | "password" => Some(SecretKind::Code),
            "link" => Some(SecretKind::Link),
            "none" => None,
            other => panic!("line {}: unknown kind {other}", n + 1),
        };
        let (tally, right) = match want {
            Some(want) => {
                let covered = |at: usize| found.iter().any(|f| f.kind == want && f.at.contains(&at));
                let places: Vec<usize> = message.match_indices(secret.as_str()).map(|(at, _)| at).collect();
                assert!(!places.is_empty(), "line {}: the secret is not in the text", n + 1);
                let whole = places.iter().all(|&start| {
                    secret.char_indices().filter(|(_, c)| c.is_alphanumeric()).all(|(i, _)| covered(start + i))
                });
                (figures.secrets.entry(format!("{kind} {category}")).or_default(), whole)
            }
            None => {
                for f in &found {
                    *figures.wrong_rules.entry(f.rule.as_str()).or_default() += 1;
                }
                (figures.ordinary.entry(category.to_string()).or_default(), found.is_empty())
            }
        };
        tally.total += 1;
        tally.right += u32::from(right);
        if !right {
            figures.misses.push(n + 1);
        }
    }
    figures
}
