//! What hiding one-time codes costs each message an agent is given: `find` over the
//! corpus of `tests/fixtures/secrets/` (codes, links and ordinary messages with numbers),
//! over ordinary chat text without any, and over a message made to cost the most; each
//! beside the rules alone (`find_with` an empty model), in the same run.
//!
//!     cargo bench -p amc-secrets --bench secrets

use std::time::Instant;

use amc_secrets::learned::Model;
use amc_secrets::{find, find_with};

/// The rules alone: the finder with a model that takes nothing.
fn rules_alone(text: &str, short_code: bool) -> Vec<amc_secrets::Found> {
    static EMPTY: std::sync::LazyLock<Model> = std::sync::LazyLock::new(Model::empty);
    find_with(text, short_code, &EMPTY)
}

fn per_message(texts: &[String], find: fn(&str, bool) -> Vec<amc_secrets::Found>) -> f64 {
    let rounds = 2_000;
    let started = Instant::now();
    let mut found = 0;
    for _ in 0..rounds {
        for t in texts {
            found += std::hint::black_box(find(std::hint::black_box(t), false)).len();
        }
    }
    std::hint::black_box(found);
    started.elapsed().as_secs_f64() * 1e9 / (rounds * texts.len()) as f64
}

fn main() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/secrets/corpus.tsv");
    let corpus = std::fs::read_to_string(path).expect("the corpus");
    let texts: Vec<String> = corpus
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.splitn(4, '\t').nth(3))
        .map(|t| t.replace("\\n", "\n"))
        .collect();
    let chat: Vec<String> = (0..200)
        .map(|i| {
            format!(
                "Are we still on for dinner tonight? I was thinking about the place by the park, table for {}",
                i % 9
            )
        })
        .collect();
    eprintln!(
        "secrets::find per message: corpus ({} messages) {:.0} ns, ordinary chat {:.0} ns; \
         the rules alone {:.0} ns and {:.0} ns",
        texts.len(),
        per_message(&texts, find),
        per_message(&chat, find),
        per_message(&texts, rules_alone),
        per_message(&chat, rules_alone),
    );
    // Messages made to cost the most (the median of five): 40 KB of "code 1234" (4,000
    // codes), of candidates that are none ("a1b2", 8,000 of them; "Ab3dE9"), and of links
    // with a token (1,300).
    for (what, unit) in [
        ("codes", "code 1234 "),
        ("near-codes", "a1b2 "),
        ("capitals", "Ab3dE9 "),
        ("links", "https://x.example/q/Ab3kD9xQ2 "),
    ] {
        let crafted = unit.repeat(40_000 / unit.len());
        let ms = |find: fn(&str, bool) -> Vec<amc_secrets::Found>| {
            let started = Instant::now();
            std::hint::black_box(find(std::hint::black_box(&crafted), false));
            started.elapsed().as_secs_f64() * 1e3
        };
        // Five of each, taking turns; the median of each.
        let (mut with, mut without): (Vec<f64>, Vec<f64>) = (0..5).map(|_| (ms(find), ms(rules_alone))).unzip();
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (with, without) = (median(&mut with), median(&mut without));
        eprintln!("secrets::find on 40 KB of {what}: {with:.1} ms; the rules alone {without:.1} ms");
    }
}
