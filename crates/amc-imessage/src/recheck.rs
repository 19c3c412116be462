//! Sends Messages fails after marking them sent.
//!
//! A send is `sent` once Messages marks each of its rows sent, but Messages can set
//! `error` on such a row a while later: an address it cannot route (22), a person who left
//! iMessage, a relay that is down (carterlasalle/mac_messages_mcp#58: these fail "a second
//! or two after `send` returns"), Not Delivered (25); imsg leaves a row marked sent but not
//! delivered unconfirmed too (openclaw/imsg#239). So each time the watcher reads chat.db
//! after a change, the sends reported sent in the last day (the newest [`MOST`]) have
//! their rows looked up by guid, and a row with `error` turns its send `failed` with the
//! reason (`Amc::fail_after_sent`). Nothing is read when no send is that recent;
//! otherwise one indexed lookup per part.

use std::time::Duration;

use amc_core::model::{SentSend, Source};
use amc_core::service::Amc;

use crate::SourceError;
use crate::chatdb::ChatDb;
use crate::send::{error_name, went_out};
use crate::sync::SharedChatDb;

/// How long after it was sent a send is looked at again.
pub const WINDOW: Duration = Duration::from_secs(24 * 3600);

/// The most sends looked at again, the newest first.
pub const MOST: u32 = 100;

/// Looks at the recent sends' rows again, and records those Messages failed since.
pub async fn recheck_sent(amc: &Amc, db: &SharedChatDb) {
    if let Err(e) = fail_what_messages_failed(amc, db).await {
        tracing::warn!(error = %e, "looking again at recent sends in chat.db failed");
    }
}

async fn fail_what_messages_failed(amc: &Amc, db: &SharedChatDb) -> Result<(), SourceError> {
    let since = amc_core::time::now_ms() - WINDOW.as_millis() as i64;
    let sends = amc.sent_since(Source::Imessage, since, MOST).await?;
    if sends.is_empty() {
        return Ok(());
    }
    let db = db.clone();
    let failed = tokio::task::spawn_blocking(move || {
        let db = db.lock().unwrap_or_else(|p| p.into_inner());
        let mut failed = Vec::new();
        for send in sends {
            if let Some(why) = failure(&db, &send)? {
                failed.push((send.id, why));
            }
        }
        Ok::<_, SourceError>(failed)
    })
    .await
    .map_err(|e| SourceError::Read(e.to_string()))??;
    for (send_id, why) in failed {
        amc.fail_after_sent(send_id, why).await?;
    }
    Ok(())
}

/// Why Messages failed the send after marking it sent, if it did: its first row with an
/// error, and the rows that went out.
fn failure(db: &ChatDb, send: &SentSend) -> Result<Option<String>, SourceError> {
    let mut failed = None;
    let mut sent = Vec::new();
    for guid in &send.parts {
        let Some(state) = db.sent_state(guid)? else { continue };
        let what = state.file.unwrap_or_else(|| "the text".to_owned());
        match state.error {
            0 => sent.push(what),
            n if failed.is_none() => failed = Some((what, n)),
            _ => {}
        }
    }
    Ok(failed.map(|(what, error)| {
        let sent: Vec<&str> = sent.iter().map(String::as_str).collect();
        format!("Messages could not deliver {what} ({}) after marking it sent{}", error_name(error), went_out(&sent))
    }))
}
