//! Learns the finder's model ([`amc_secrets::learned`]) from the sets of messages in
//! `tests/fixtures/secrets/`, and says what it is worth on sets it did not learn from.
//!
//!     cargo run --release -p amc-secrets --example learn -- --leave-out
//!     cargo run --release -p amc-secrets --example learn -- --write
//!
//! `--leave-out` learns once per set from all the others and measures the set it left out,
//! with the rules alone and with the model: what the model adds on messages it never saw.
//! `--write` learns from every set (but the held-out sets not yet measured after a change,
//! `NOT_LEARNED` in `tests/measure/mod.rs`) and writes
//! `src/learned.bin`. The learning is deterministic: the same sets give the same bytes.
//! `AMC_LEARN_THRESHOLD` tries another threshold than [`THRESHOLD`].
#![allow(clippy::print_stdout, reason = "a learning tool prints its figures")]

use amc_secrets::learned::{Example, Model};

#[path = "../tests/measure/mod.rs"]
#[allow(dead_code, reason = "the learner measures with models of its own, not the built-in one")]
mod measure;

/// The score a candidate must pass to be taken: a probability above 0.999, which on sets
/// left out added about ten secrets found for each ordinary message altered.
const THRESHOLD: f32 = 7.0;

fn learn(examples: &[&Example]) -> Model {
    let threshold = std::env::var("AMC_LEARN_THRESHOLD").ok().and_then(|v| v.parse().ok()).unwrap_or(THRESHOLD);
    amc_secrets::learned::learn(examples, threshold)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = crate_dir.join("../../tests/fixtures/secrets");
    let sets = measure::learned_sets(&dir);
    let all: Vec<(String, Vec<Example>)> =
        sets.iter().map(|(name, text)| (name.clone(), measure::examples(text))).collect();
    if args.iter().any(|a| a == "--leave-out") {
        let (mut before, mut after) = ([0u32; 4], [0u32; 4]);
        for (i, (name, text)) in sets.iter().enumerate() {
            let learned: Vec<&Example> =
                all.iter().enumerate().filter(|(j, _)| *j != i).flat_map(|(_, s)| &s.1).collect();
            // Measured as it would be kept: each weight rounded to its byte.
            let model = Model::read(&learn(&learned).write()).expect("a model");
            let rules =
                measure::measure_with(text, |a, t| amc_secrets::find_with(t, a.is_short_code(), &Model::empty()));
            let both = measure::measure_with(text, |a, t| amc_secrets::find_with(t, a.is_short_code(), &model));
            let figures = |f: &measure::Figures| {
                let ((h, s), (a, o)) = (f.hidden(), f.altered());
                [h, s, a, o]
            };
            let (r, b) = (figures(&rules), figures(&both));
            println!(
                "{name:<16} rules {}/{} altered {}/{}   with the model {}/{} altered {}/{}",
                r[0], r[1], r[2], r[3], b[0], b[1], b[2], b[3]
            );
            for k in 0..4 {
                before[k] += r[k];
                after[k] += b[k];
            }
        }
        let said = |f: [u32; 4]| {
            let share = |a: u32, b: u32| f64::from(a) / f64::from(b);
            format!(
                "{}/{} ({:.3}) altered {}/{} ({:.2} %)",
                f[0],
                f[1],
                share(f[0], f[1]),
                f[2],
                f[3],
                100.0 * share(f[2], f[3])
            )
        };
        println!("all, each left out: rules {}; with the model {}", said(before), said(after));
    }
    if args.iter().any(|a| a == "--write") {
        let learned: Vec<&Example> = all.iter().flat_map(|s| &s.1).collect();
        let model = learn(&learned);
        std::fs::write(crate_dir.join("src/learned.bin"), model.write()).expect("write the model");
        println!("learned from {} candidates of {} sets", learned.len(), sets.len());
    }
}
