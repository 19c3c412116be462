//! A chat.db as Messages writes it, for tests written in other languages (the UI's browser
//! tests): `chat-db PATH` makes it with a conversation with Ada (two messages from her) and
//! the person's own conversation with themselves (a note they sent, from the address
//! Messages records), and prints one JSON line: the person's `own` address and Ada's.

use amc_imessage::fixture::{ChatDbWriter, FixtureMessage};

const ME: &str = "+15550001111";
const ADA: &str = "+15551234567";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: chat-db PATH");
        std::process::exit(2);
    };
    let w = ChatDbWriter::create(std::path::Path::new(&path))?;
    let me = w.add_handle(ME)?;
    let ada = w.add_handle(ADA)?;
    let self_chat = w.add_chat(&format!("any;-;{ME}"), 45, None, &[me])?;
    let ada_chat = w.add_chat(&format!("any;-;{ADA}"), 45, None, &[ada])?;
    let now = amc_core::time::now_ms();
    let note = FixtureMessage {
        guid: "note".into(),
        text: Some("note to self".into()),
        is_from_me: true,
        sent_at_ms: now - 120_000,
        ..Default::default()
    };
    w.add_message(self_chat, &note)?;
    for (i, text) in ["Dinner at 8?", "Bring the wine"].into_iter().enumerate() {
        let m = FixtureMessage {
            guid: format!("ada-{i}"),
            text: Some(text.into()),
            handle_id: ada,
            sent_at_ms: now - 60_000 + i as i64,
            ..Default::default()
        };
        w.add_message(ada_chat, &m)?;
    }
    // Messages records the address the person's note went out from.
    w.connection().execute("UPDATE message SET destination_caller_id = ?1 WHERE guid = 'note'", [ME])?;
    let said = serde_json::json!({ "own": ME, "ada": ADA });
    std::io::Write::write_all(&mut std::io::stdout(), format!("{said}\n").as_bytes())?;
    Ok(())
}
