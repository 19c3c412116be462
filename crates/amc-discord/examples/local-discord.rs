//! The local Discord as a program, for tests written in other languages (the UI's browser
//! tests): `local-discord TOKEN CHANNEL…` starts it, prints one JSON line (`api_url`, the
//! `bot`, the `channels` by name and id), then takes commands, one a line, on standard
//! input, answering each with one JSON line:
//!
//! - `post CHANNEL_ID AUTHOR TEXT…`: a member's message, as Discord delivers it: `{"id": …}`
//! - `posts`: what the bot sent: `[{"channel_id", "content"}, …]`
//! - `content-intent on|off`: whether the application's Message Content intent is on
//!
//! It stops when standard input closes.

use std::io::{BufRead, Write};

use amc_discord::fake::FakeDiscord;
use serde_json::json;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((token, channels)) = args.split_first() else {
        eprintln!("usage: local-discord TOKEN CHANNEL…");
        std::process::exit(2);
    };
    let rt = tokio::runtime::Runtime::new()?;
    let names: Vec<&str> = channels.iter().map(String::as_str).collect();
    let fake = rt.block_on(FakeDiscord::start(token, &names))?;
    let bot = fake.bot();
    let ids = fake.channel_ids();
    let said = |v: serde_json::Value| -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{v}")?;
        out.flush()
    };
    said(json!({
        "api_url": fake.api_url(),
        "bot": { "id": bot.id.to_string(), "name": bot.name },
        "channels": names.iter().zip(&ids).map(|(n, id)| json!({ "name": n, "id": id.to_string() })).collect::<Vec<_>>(),
    }))?;
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let mut words = line.splitn(4, ' ');
        let answer = match (words.next(), words.next(), words.next(), words.next()) {
            (Some("post"), Some(channel), Some(author), Some(text)) => match channel.parse() {
                Ok(channel) => {
                    let _guard = rt.enter();
                    json!({ "id": fake.post(channel, &fake.user(author), text).to_string() })
                }
                Err(_) => json!({ "error": "not a channel id" }),
            },
            (Some("posts"), None, None, None) => json!(
                fake.posts()
                    .iter()
                    .map(|p| json!({ "channel_id": p.channel_id, "content": p.payload["content"] }))
                    .collect::<Vec<_>>()
            ),
            (Some("content-intent"), Some(on @ ("on" | "off")), None, None) => {
                fake.set_content_intent(on == "on");
                json!({ "content_intent": on == "on" })
            }
            _ => json!({ "error": format!("unknown command: {line}") }),
        };
        said(answer)?;
    }
    Ok(())
}
