//! Invariants of the CLI's source, held as tests whose failure names the fix.

/// The admin commands print what the daemon answers (messages, names, reasons, errors:
/// text from agents and other people) only through `shown`, which makes the characters a
/// terminal acts on or hides visible.
#[test]
fn the_admin_commands_take_strings_out_of_the_daemons_json_only_through_shown() {
    let banned = [
        ("as_str", "takes a string out of the daemon's JSON as it is: print it with shown::field or shown::text"),
        ("as_object", "takes member names out of the daemon's JSON as they are: use shown::entries"),
        ("to_string_pretty", "prints JSON with bidi overrides and zero-width characters as they are: use shown::json"),
        ("println!", "prints around `say!`"),
    ];
    let mut found = Vec::new();
    for (n, line) in include_str!("../../src/admin.rs").lines().enumerate() {
        for (bad, fix) in banned {
            if line.contains(bad) {
                found.push(format!("src/admin.rs:{}: `{bad}` {fix}\n    {}", n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
