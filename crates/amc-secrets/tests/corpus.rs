//! The secret finder against the sets of messages in `tests/fixtures/secrets/` it is tuned
//! on (`corpus.tsv`, `tuning.tsv` to `tuning-6.tsv`): secrets hidden whole, next to no ordinary message
//! touched. The held-out set is measured by hand, never asserted on (see below).

mod measure;

fn figures(name: &str) -> measure::Figures {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/secrets").join(name);
    measure::measure(&std::fs::read_to_string(&path).expect("the set"))
}

/// Recall of at least 0.98 and at most 2 % of ordinary messages altered, the goals.
fn holds_the_goals(name: &str, at_least: (u32, u32)) {
    holds(name, at_least, 0.98);
}

/// At most 2 % of ordinary messages altered, and a recall of at least `recall`.
fn holds(name: &str, at_least: (u32, u32), recall: f64) {
    holds_within(name, at_least, recall, 0.02);
}

/// At most `altered` of ordinary messages altered, and a recall of at least `recall`.
fn holds_within(name: &str, at_least: (u32, u32), recall: f64, altered_share: f64) {
    let f = figures(name);
    let ((hidden, secrets), (altered, ordinary)) = (f.hidden(), f.altered());
    eprintln!(
        "{name}: secrets hidden {hidden} of {secrets}, ordinary messages altered {altered} of {ordinary}; \
         rules that altered them: {:?}; lines missed: {:?}",
        f.wrong_rules, f.misses
    );
    assert!(secrets >= at_least.0 && ordinary >= at_least.1, "{name} was read: {secrets} secrets, {ordinary} ordinary");
    assert!(f64::from(hidden) >= recall * f64::from(secrets), "{name}: lines missed {:?}", f.misses);
    assert!(f64::from(altered) <= altered_share * f64::from(ordinary), "{name}: lines missed {:?}", f.misses);
}

#[test]
fn codes_and_links_are_hidden_and_ordinary_messages_are_left_alone() {
    holds_the_goals("corpus.tsv", (150, 150));
    let links = figures("corpus.tsv").secrets.remove("link -").expect("links");
    assert_eq!(links.right, links.total, "every link of the first set");
}

#[test]
fn passwords_grouped_codes_and_references_are_told_apart() {
    holds_the_goals("tuning.tsv", (170, 250));
}

#[test]
fn codes_asked_for_without_the_word_and_references_like_them_are_told_apart() {
    holds_the_goals("tuning-2.tsv", (170, 250));
}

/// Below the goal of 0.98 still (0.968: pairing codes the words name from afar, a
/// reference's word beside a code): held where it stands so no change loses ground.
#[test]
fn wifi_passwords_shortened_links_and_pairing_codes_are_found() {
    holds("tuning-3.tsv", (180, 240), 0.965);
}

/// Door and gate codes, activation codes on a line of their own after "enter:", reset
/// links whose key is short, passwords in many languages, promo codes: 0.970, below the
/// goal (a number-matching prompt's two digits, a code in two groups of letters and
/// digits, a lockbox's digits one by one).
#[test]
fn door_codes_activation_codes_and_passwords_in_many_languages_are_found() {
    holds("tuning-4.tsv", (190, 250), 0.965);
}

/// Number matching's two digits, keys a digit at a time or behind a keypad's star,
/// passwords on the line after a network's name, in Czech, Thai and Hebrew too: at the
/// goal since rules 20.
#[test]
fn number_matching_keypads_and_keys_on_their_own_line_are_found() {
    holds_the_goals("tuning-5.tsv", (200, 270));
}

/// Pickup and door codes in compounds of many languages ("Abholcode", "Noutokoodi",
/// "kapukód"), keypads, Wi-Fi given line by line, links after words in more languages:
/// 0.977 since rules 22, below the goal (its G- prefixes, labelled inconsistently).
#[test]
fn compounds_pickup_codes_and_keypads_in_many_languages_are_found() {
    holds("tuning-6.tsv", (210, 275), 0.975);
}

/// Recovery keys in groups after a word for a key, a year as a door's code, numbers pressed
/// at an intercom, codes entered in Czech, Romanian, Greek, Turkish, Arabic, Hebrew and Thai,
/// in 25 languages: at the goal since rules 22.
#[test]
fn recovery_keys_door_years_and_entering_in_more_languages_are_found() {
    holds_the_goals("tuning-7.tsv", (160, 240));
}

/// Key boxes' combinations a digit at a time, lists of backup codes, codes on a line of
/// their own or to use for signing in, links after words in Nordic and other languages;
/// a public meeting's and a game's codes left alone: 0.979 since rules 23, just below the
/// goal (a recovery phrase of words, a codes' list after "account:", a code with no word
/// for one).
#[test]
fn key_boxes_code_lists_and_shared_codes_are_told_apart() {
    holds("tuning-8.tsv", (190, 230), 0.975);
}

/// Recovery codes in their languages' words, pairing codes, door codes of a building,
/// Wi-Fi keys, codes given after a sentence about signing in, and sign-in and
/// address-confirming links in 27 languages: at the goal since rules 25.
#[test]
fn recovery_and_pairing_codes_and_links_in_more_languages_are_found() {
    holds_the_goals("tuning-9.tsv", (190, 225));
}

/// Three sets written for the learned model, measured before it learned from them (rules
/// 27: 230/238, 239/261, 194/255): western languages' services, Asian and Middle-Eastern
/// ones, and Europe's smaller languages. Held where they stand since rules 28.
#[test]
fn the_learned_models_sets_in_forty_languages_are_found() {
    holds("tuning-10.tsv", (230, 270), 0.97);
    holds("tuning-11.tsv", (250, 280), 0.97);
    holds("tuning-12.tsv", (250, 290), 0.95);
}

/// Links and passwords against links that sign nobody in, and codes said in every way
/// against numbers that are none, in 31 languages, measured before the model learned from
/// them (rules 28: 205/238 and 1/283 altered, 215/254 and 7/295): held where they stand
/// since rules 29, the second above the goal's 2 % altered (the rules' words for code
/// beside a booking's or a customer's "code").
#[test]
fn links_passwords_and_codes_said_every_way_are_found() {
    holds("tuning-13.tsv", (230, 280), 0.93);
    holds_within("tuning-14.tsv", (250, 290), 0.95, 0.025);
}

/// The model built in (`src/learned.bin`) is the one the sets teach
/// (`cargo run --release -p amc-secrets --example learn -- --write`), byte for byte: the
/// learning uses IEEE arithmetic alone, the same on every machine, so features or sets
/// changed without learning again fail here.
#[test]
fn the_built_in_model_is_what_the_sets_teach() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/secrets");
    let all: Vec<amc_secrets::learned::Example> =
        measure::learned_sets(&dir).iter().flat_map(|(_, text)| measure::examples(text)).collect();
    let threshold = amc_secrets::learned::Model::built_in().threshold;
    let learned = amc_secrets::learned::learn(&all.iter().collect::<Vec<_>>(), threshold).write();
    let kept = include_bytes!("../src/learned.bin");
    let off = learned.iter().zip(kept).filter(|(a, b)| a != b).count();
    assert!(learned.len() == kept.len() && off == 0, "{off} bytes differ: learn again");
}

/// The held-out sets (`tests/fixtures/secrets/heldout.tsv` to `heldout-13.tsv`) were written
/// apart from the finder and are measured, never tuned on (`cargo run -p amc-secrets
/// --example measure -- tests/fixtures/secrets/heldout.tsv`): each stays as it was
/// committed, byte for byte.
#[test]
fn the_held_out_sets_are_sealed() {
    use sha2::Digest;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/secrets");
    for name in [
        "heldout",
        "heldout-2",
        "heldout-3",
        "heldout-4",
        "heldout-5",
        "heldout-6",
        "heldout-7",
        "heldout-8",
        "heldout-9",
        "heldout-10",
        "heldout-11",
        "heldout-12",
        "heldout-13",
    ] {
        let set = std::fs::read(dir.join(format!("{name}.tsv"))).expect("the held-out set");
        let sealed = std::fs::read_to_string(dir.join(format!("{name}.sha256"))).expect("its seal");
        let digest: String = sha2::Sha256::digest(&set).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(digest, sealed.trim(), "{name} changed: it is measured as written, never edited");
    }
}
