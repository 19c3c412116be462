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

/// Every other command takes strings out of the daemon's JSON only through `shown` too:
/// `shown::field`/`text` to print, `shown::verbatim` for a value used as it is.
#[test]
fn no_command_takes_a_string_out_of_the_daemons_json_as_it_is() {
    // Every source file but `shown`'s own (the admin commands' have the rule above too).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut sources = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        if name.ends_with(".rs") && name != "shown.rs" {
            sources.push((format!("src/{name}"), std::fs::read_to_string(&path).expect("read")));
        }
    }
    assert!(sources.len() >= 6, "only {} source files found in {}", sources.len(), dir.display());
    let mut found = Vec::new();
    for (path, source) in &sources {
        for (n, line) in source.lines().enumerate() {
            if line.contains("].as_str()") || line.contains("as_object") || line.contains("to_string_pretty") {
                found.push(format!(
                    "{path}:{}: use shown::field, shown::text or shown::verbatim\n    {}",
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
