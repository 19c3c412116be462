//! The finder's figures on a corpus of messages, as a person's iMessages reach it: how many
//! secrets it hides whole and how many ordinary messages it alters, by kind and category.
//!
//!     cargo run -p amc-secrets --example measure -- tests/fixtures/secrets/heldout.tsv
//!     cargo run -p amc-secrets --example measure -- tests/fixtures/secrets/tuning.tsv --show
//!
//! A corpus has five tab-separated columns (kind, category, sender, secret, text; see
//! `tests/fixtures/secrets/heldout.tsv`) or the four of `corpus.tsv` (no category). A
//! secret counts as hidden when every letter and digit of each place it stands in the text
//! lies in a span found of its kind (`password` is hidden as a code); an ordinary message
//! (`none`) counts as altered when anything in it is found. `--show` lists the misses by
//! line: never use it on the sealed held-out set, which is measured, not read.

#![allow(clippy::print_stdout, reason = "a measuring tool prints its figures")]

use std::collections::BTreeMap;

use amc_secrets::{Author, SecretKind, in_message};

#[derive(Default)]
struct Tally {
    total: u32,
    right: u32,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.iter().find(|a| !a.starts_with("--")).expect("a corpus to measure");
    let show = args.iter().any(|a| a == "--show");
    let text = std::fs::read_to_string(path).expect("the corpus");
    let (mut secrets, mut ordinary) = (BTreeMap::<String, Tally>::new(), BTreeMap::<String, Tally>::new());
    let mut misses = Vec::new();
    // The rules that altered ordinary messages: what to look at first.
    let mut wrong_rules = BTreeMap::<&str, u32>::new();
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
        let found = in_message(Author { source: "imessage", sender, is_self: false }, &message);
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
                (secrets.entry(format!("{kind} {category}")).or_default(), whole)
            }
            None => {
                for f in &found {
                    *wrong_rules.entry(f.rule.as_str()).or_default() += 1;
                }
                (ordinary.entry(category.to_string()).or_default(), found.is_empty())
            }
        };
        tally.total += 1;
        tally.right += u32::from(right);
        if !right {
            misses.push(n + 1);
        }
    }
    let sum = |m: &BTreeMap<String, Tally>| m.values().fold((0, 0), |(t, r), x| (t + x.total, r + x.right));
    println!("{path}");
    println!("secrets hidden whole, by kind and category:");
    for (name, t) in &secrets {
        println!("  {name:<32} {:>4} of {:>4}", t.right, t.total);
    }
    println!("ordinary messages altered, by category:");
    for (name, t) in &ordinary {
        println!("  {name:<32} {:>4} of {:>4}", t.total - t.right, t.total);
    }
    let ((st, sr), (ot, or)) = (sum(&secrets), sum(&ordinary));
    let share = |a: u32, b: u32| if b == 0 { 0.0 } else { f64::from(a) / f64::from(b) };
    println!("secrets hidden: {sr} of {st} (recall {:.3})", share(sr, st));
    println!("ordinary altered: {} of {ot} ({:.1} %)", ot - or, 100.0 * share(ot - or, ot));
    println!("rules that altered ordinary messages (spans): {wrong_rules:?}");
    if show {
        println!("misses (lines): {misses:?}");
    }
}
