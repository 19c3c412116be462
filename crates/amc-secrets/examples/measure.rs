//! Prints the finder's figures on a corpus of messages (see `tests/measure/mod.rs`): how
//! many secrets it hides whole and how many ordinary messages it alters, by kind and
//! category.
//!
//!     cargo run -p amc-secrets --example measure -- tests/fixtures/secrets/heldout.tsv
//!     cargo run -p amc-secrets --example measure -- tests/fixtures/secrets/tuning.tsv --show
//!
//! `--show` lists the misses by line: never use it on the sealed held-out set, which is
//! measured, not read.
#![allow(clippy::print_stdout, reason = "a measuring tool prints its figures")]

#[path = "../tests/measure/mod.rs"]
#[allow(dead_code, reason = "what the learner shares with it is not used here")]
mod measure;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.iter().find(|a| !a.starts_with("--")).expect("a corpus to measure");
    let figures = measure::measure(&std::fs::read_to_string(path).expect("the corpus"));
    println!("{path}");
    println!("secrets hidden whole, by kind and category:");
    for (name, t) in &figures.secrets {
        println!("  {name:<32} {:>4} of {:>4}", t.right, t.total);
    }
    println!("ordinary messages altered, by category:");
    for (name, t) in &figures.ordinary {
        println!("  {name:<32} {:>4} of {:>4}", t.total - t.right, t.total);
    }
    let share = |a: u32, b: u32| if b == 0 { 0.0 } else { f64::from(a) / f64::from(b) };
    let ((hidden, secrets), (altered, ordinary)) = (figures.hidden(), figures.altered());
    println!("secrets hidden: {hidden} of {secrets} (recall {:.3})", share(hidden, secrets));
    println!("ordinary altered: {altered} of {ordinary} ({:.1} %)", 100.0 * share(altered, ordinary));
    println!("rules that altered ordinary messages (spans): {:?}", figures.wrong_rules);
    if args.iter().any(|a| a == "--show") {
        println!("misses (lines): {:?}", figures.misses);
    }
}
