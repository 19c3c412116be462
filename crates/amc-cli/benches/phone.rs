//! Approving from the phone, end to end as the person meets it: the time from the commit of
//! their 👍 tapback in chat.db (a row as Messages writes one for their iPhone) to the approved
//! send leaving AMC (Messages' osascript started for it). `amc serve --chat-db` follows the
//! file; the questions and the sends go through the tests' osascript stand-in, behind a
//! wrapper that notes when each starts.
//!
//! `cargo bench -p amc-cli --bench phone`; `AMC_BENCH_SAMPLES` sets how many sends (25: AMC asks at most 30 a minute).
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use amc_client::Connection;
use amc_imessage::fixture::{ChatDbWriter, FixtureMessage};
use serde_json::{Value, json};

mod common;

const STANDIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/imessage/osascript-standin.py");
const ME: &str = "+15550001111";
const ADA: &str = "+15559990000";

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn unix_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or_default()
}

/// When each osascript started (Unix ns), from the wrapper's file.
fn starts(stamps: &Path) -> Vec<u128> {
    std::fs::read_to_string(stamps).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

async fn wait_for<T>(what: &str, mut f: impl AsyncFnMut() -> Result<Option<T>>) -> Result<T> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = f().await? {
            return Ok(v);
        }
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn main() -> Result<()> {
    let samples: usize = std::env::var("AMC_BENCH_SAMPLES").ok().and_then(|s| s.parse().ok()).unwrap_or(25);
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("amc");
    std::fs::create_dir_all(&data)?;
    std::fs::write(data.join("config.toml"), "imessage_confirm_seconds = 2\nrate_limit_burst = 1000\n")?;
    let chat_db = dir.path().join("chat.db");
    let w = ChatDbWriter::create(&chat_db)?;
    let me = w.add_handle(ME)?;
    let ada = w.add_handle(ADA)?;
    let self_chat = w.add_chat(&format!("any;-;{ME}"), 45, None, &[me])?;
    let ada_chat = w.add_chat(&format!("any;-;{ADA}"), 45, None, &[ada])?;
    let now = amc_core::time::now_ms();
    let note = FixtureMessage {
        guid: "note".into(),
        text: Some("note".into()),
        is_from_me: true,
        sent_at_ms: now,
        ..Default::default()
    };
    w.add_message(self_chat, &note)?;
    let hi = FixtureMessage {
        guid: "hi".into(),
        text: Some("hi".into()),
        handle_id: ada,
        sent_at_ms: now,
        ..Default::default()
    };
    w.add_message(ada_chat, &hi)?;
    rusqlite::Connection::open(&chat_db)?
        .execute("UPDATE message SET destination_caller_id = ?1 WHERE guid = 'note'", [ME])?;
    // osascript: note the time, then the stand-in.
    let stamps = dir.path().join("osascript-starts");
    let wrapper = dir.path().join("osascript");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\ndate +%s%N >> {stamps:?}\nexec python3 {STANDIN:?} \"$@\"\n", stamps = stamps.display()),
    )?;
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    let db_s = chat_db.to_str().ok_or("utf8")?;
    let log = dir.path().join("osascript.jsonl");
    let log_s = log.to_str().ok_or("utf8")?;
    let serve = common::Serve::start_env(
        &data,
        &["--chat-db".as_ref(), chat_db.as_os_str(), "--osascript".as_ref(), wrapper.as_os_str()],
        &[("AMC_STANDIN_CHATDB", db_s), ("AMC_STANDIN_ANY_CHAT_IDS", "resolve"), ("AMC_STANDIN_LOG", log_s)],
    )?;
    let (socket, admin_token) = (serve.socket.clone(), serve.admin_token.clone());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let mut latencies = Vec::with_capacity(samples);
    rt.block_on(async {
        let mut admin = Connection::connect(&socket).await?.with_bearer(&admin_token);
        let (self_id, ada_id) = wait_for("the two conversations", async || {
            let v = admin.get("/admin/phone").await?.json();
            let listed = admin.get("/admin/channels").await?.json();
            let ada = listed["channels"].as_array().and_then(|a| a.iter().find(|c| c["name"] == ADA)).cloned();
            Ok(match (v["candidates"][0]["channel_id"].as_str(), ada) {
                (Some(s), Some(a)) => Some((s.to_owned(), a["id"].as_str().unwrap_or_default().to_owned())),
                _ => None,
            })
        })
        .await?;
        let set = admin.post("/admin/phone", &json!({ "imessage": self_id, "asks_a_minute": 30 })).await?;
        assert_eq!(set.status, 200, "{:?}", set.json());
        let r = admin
            .post(&format!("/admin/channels/{ada_id}/approve"), &json!({ "history": "all", "send_policy": "review" }))
            .await?;
        assert_eq!(r.status, 200);
        let token = admin.post("/admin/agents", &json!({ "id": "claude" })).await?.json()["token"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let mut agent = Connection::connect(&socket).await?.with_bearer(&token);
        for i in 0..samples {
            let text = format!("send {i}");
            let sent = agent.post("/messages/send", &json!({ "channel_id": ada_id, "text": text })).await?.json();
            let id = sent["message_id"].as_str().ok_or("a held send")?.to_owned();
            let prompt = wait_for("the question", async || {
                let v: Value = admin.get("/admin/phone/asks?limit=5").await?.json();
                if std::env::var_os("AMC_BENCH_DEBUG").is_some() {
                    eprintln!("{v}");
                }
                Ok(v["asks"].as_array().and_then(|a| {
                    a.iter()
                        .find(|a| a["subject"] == id.as_str() && a["state"] == "asked")
                        .and_then(|a| a["prompt_platform_id"].as_str().map(str::to_owned))
                }))
            })
            .await?;
            // The question's row is in chat.db before the tapback's, as on a phone: AMC
            // reads them in that order.
            let before = starts(&stamps).len();
            let like = FixtureMessage {
                guid: format!("like-{i}"),
                text: Some(format!("Liked “{text}”")),
                is_from_me: true,
                sent_at_ms: amc_core::time::now_ms(),
                associated: Some((format!("p:0/{prompt}"), 2001)),
                ..Default::default()
            };
            w.add_message(self_chat, &like)?;
            let committed = unix_ns();
            let started =
                wait_for("the approved send to leave", async || Ok(starts(&stamps).get(before).copied())).await?;
            latencies.push(Duration::from_nanos(started.saturating_sub(committed) as u64));
            // AMC's one-line answer on the phone, before the next round.
            wait_for("the answer on the phone", async || Ok((starts(&stamps).len() > before + 1).then_some(())))
                .await?;
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    drop(serve);
    println!(
        "{}",
        amc_testkit::Latencies::of(latencies).line("👍 committed in chat.db → the approved send's osascript started")
    );
    Ok(())
}
