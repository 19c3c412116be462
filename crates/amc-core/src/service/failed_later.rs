//! Sends the platform fails after reporting them sent. Messages marks a row sent and may
//! set `error` on it a while later (an address it cannot route, a person who left
//! iMessage); the iMessage source looks at its recent sends again and reports such a send
//! here. The send becomes `failed` with the reason: a replay of its request answers with
//! that error, its message carries `delivery_failed`, and the person sees it in Review.

use super::Amc;
use crate::error::Result;
use crate::events::Event;
use crate::model::{OutboxStatus, SentSend, Source};
use crate::time::Millis;

impl Amc {
    /// The source's sends reported sent at `since` or later, newest first, at most
    /// `limit`: the ones the platform may still fail.
    pub async fn sent_since(&self, source: Source, since: Millis, limit: u32) -> Result<Vec<SentSend>> {
        self.blocking(move |s| s.sent_since(source, since, limit)).await
    }

    /// Records that the platform failed a send after reporting it sent, with `reason`,
    /// and tells the UI. `false` if the send is no longer `sent` (already recorded).
    pub async fn fail_after_sent(&self, send_id: String, reason: String) -> Result<bool> {
        let id = send_id.clone();
        let Some(item) = self.blocking(move |s| s.fail_after_sent(&id, &reason)).await? else {
            return Ok(false);
        };
        tracing::warn!(send = %send_id, "the platform failed a send after reporting it sent");
        self.publish(Event::SendChanged { send_id, status: OutboxStatus::Failed });
        self.publish(Event::MessagesChanged { channel_id: item.channel_id, inserted: 0, updated: 1 });
        Ok(true)
    }
}
