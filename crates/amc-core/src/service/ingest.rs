//! The sources' front door: what the iMessage and Discord sources read comes in here,
//! never straight into the store. Messages, edits, reactions and unsends are stored and
//! announced on the change feed; checkpoints record how far a source has read, in the
//! same transaction as what it read.

use super::Amc;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::model::{AllowedChannel, ChannelSpec, IngestReport, ReactionChange, ThreadSpec};
use crate::model::{IncomingMessage, Reaction, Source};
use crate::time::Millis;

impl Amc {
    /// Stores what a source read and tells the UI.
    pub async fn ingest(
        &self,
        source: Source,
        channel: ChannelSpec,
        messages: Vec<IncomingMessage>,
        checkpoint: Option<(String, String)>,
    ) -> Result<IngestReport> {
        let mut reports = self.ingest_many(source, vec![(channel, messages)], checkpoint).await?;
        reports.pop().ok_or_else(|| Error::internal("ingest reported nothing"))
    }

    /// Stores what a source read from several channels in one transaction, with its
    /// checkpoint, and tells the UI.
    pub async fn ingest_many(
        &self,
        source: Source,
        batches: Vec<(ChannelSpec, Vec<IncomingMessage>)>,
        checkpoint: Option<(String, String)>,
    ) -> Result<Vec<IngestReport>> {
        // The conversation AMC asks the person in: its new rows may answer a question.
        let phone: Vec<(String, Vec<IncomingMessage>)> = batches
            .iter()
            .filter(|(spec, _)| self.phone_target_is(source, &spec.platform_id).is_some())
            .map(|(spec, messages)| (spec.platform_id.clone(), messages.clone()))
            .collect();
        let reports = self
            .blocking(move |s| {
                s.ingest_many(source, &batches, checkpoint.as_ref().map(|(k, v)| (k.as_str(), v.as_str())))
            })
            .await?;
        self.announce(&reports);
        // Deciding may take as long as the send it approves: apart from the source's reading.
        for (channel, messages) in phone {
            let new: Vec<IncomingMessage> = messages
                .into_iter()
                .filter(|m| reports.iter().any(|r| r.inserted_platform_ids.contains(&m.platform_id)))
                .collect();
            if !new.is_empty() {
                let amc = self.clone();
                tokio::spawn(async move { amc.phone_messages(source, &channel, new).await });
            }
        }
        Ok(reports)
    }

    /// Stores messages of a thread inside `channel` (a Discord thread or forum post), and
    /// tells the UI. They belong to the channel, and so to its approval.
    pub async fn ingest_thread(
        &self,
        source: Source,
        channel: ChannelSpec,
        thread: ThreadSpec,
        messages: Vec<IncomingMessage>,
    ) -> Result<IngestReport> {
        let report = self.blocking(move |s| s.ingest_thread(source, &channel, &thread, &messages)).await?;
        self.announce(std::slice::from_ref(&report));
        Ok(report)
    }

    fn announce(&self, reports: &[IngestReport]) {
        for report in reports {
            if report.channel_created {
                self.publish(Event::ChannelCreated { channel_id: report.channel_id.clone() });
            }
            if report.channel_changed {
                self.publish(Event::ChannelChanged { channel_id: report.channel_id.clone() });
            }
            if !report.inserted.is_empty() || !report.updated.is_empty() {
                self.publish(Event::MessagesChanged {
                    channel_id: report.channel_id.clone(),
                    inserted: report.inserted.len(),
                    updated: report.updated.len(),
                });
            }
        }
    }

    /// Applies reaction changes a source read, and tells the UI.
    pub async fn apply_reactions(&self, source: Source, changes: Vec<ReactionChange>) -> Result<usize> {
        let read = changes.clone();
        let changed = self.blocking(move |s| s.apply_reactions(source, &changes)).await?;
        for (_, channel_id) in &changed {
            self.publish(Event::MessagesChanged { channel_id: channel_id.clone(), inserted: 0, updated: 1 });
        }
        // A tapback on one of AMC's questions answers it, once: only what changed is read.
        if !changed.is_empty() {
            let amc = self.clone();
            tokio::spawn(async move { amc.phone_reactions(source, &read).await });
        }
        Ok(changed.len())
    }

    /// Sets each target's reactions to what its changes, applied in order to none, give
    /// (a source's whole record of them), and tells the UI. Returns how many changed.
    pub async fn reset_reactions(&self, source: Source, targets: Vec<(String, Vec<ReactionChange>)>) -> Result<usize> {
        // The whole record of each target: a tapback on one of AMC's questions that only a
        // sweep read (the live reading missed it) answers it too.
        let read: Vec<ReactionChange> = targets.iter().flat_map(|(_, changes)| changes.iter().cloned()).collect();
        let changed = self.blocking(move |s| s.reset_reactions(source, &targets)).await?;
        for (_, channel_id) in &changed {
            self.publish(Event::MessagesChanged { channel_id: channel_id.clone(), inserted: 0, updated: 1 });
        }
        if !changed.is_empty() {
            let amc = self.clone();
            tokio::spawn(async move { amc.phone_reactions(source, &read).await });
        }
        Ok(changed.len())
    }

    /// The platform ids of stored messages in a channel from this sender at this time.
    pub async fn stored_at(
        &self,
        source: Source,
        channel_platform_id: String,
        sent_at: Millis,
        sender: crate::model::SenderInfo,
    ) -> Result<Vec<String>> {
        self.blocking(move |s| s.stored_at(source, &channel_platform_id, sent_at, &sender)).await
    }

    /// Gives a stored message the id the platform now knows it by; whether it did.
    pub async fn rekey(&self, source: Source, old: String, new: String) -> Result<bool> {
        let moved = self.blocking(move |s| s.rekey(source, &old, &new)).await?;
        if let Some((id, channel_id)) = &moved {
            tracing::info!(message = %id, "the platform renamed a stored message; kept it under its new id");
            self.publish(Event::MessagesChanged { channel_id: channel_id.clone(), inserted: 0, updated: 1 });
        }
        Ok(moved.is_some())
    }

    /// Records that the platform no longer has these channels for AMC (deleted, or AMC
    /// removed), and tells the UI. Their history stays; sends to them are refused.
    pub async fn mark_channels_gone(&self, source: Source, platform_ids: Vec<String>, reason: String) -> Result<usize> {
        let gone = self.blocking(move |s| s.mark_channels_gone(source, &platform_ids, &reason)).await?;
        for channel_id in &gone {
            tracing::info!(channel = %channel_id, "the platform no longer has this channel for AMC");
            self.publish(Event::ChannelChanged { channel_id: channel_id.clone() });
        }
        Ok(gone.len())
    }

    /// Marks messages the platform deleted as unsent, and tells the UI.
    pub async fn mark_unsent(&self, source: Source, platform_ids: Vec<String>) -> Result<usize> {
        let changed = self.blocking(move |s| s.mark_unsent(source, &platform_ids)).await?;
        for (_, channel_id) in &changed {
            self.publish(Event::MessagesChanged { channel_id: channel_id.clone(), inserted: 0, updated: 1 });
        }
        Ok(changed.len())
    }

    /// Takes away a message's reactions (all, or those with one emoji), and tells the UI.
    pub async fn clear_reactions(&self, source: Source, platform_id: String, emoji: Option<String>) -> Result<bool> {
        let changed = self.blocking(move |s| s.clear_reactions(source, &platform_id, emoji.as_deref())).await?;
        if let Some((_, channel_id)) = &changed {
            self.publish(Event::MessagesChanged { channel_id: channel_id.clone(), inserted: 0, updated: 1 });
        }
        Ok(changed.is_some())
    }

    /// A source's allowed channels (for reading their history back).
    pub async fn allowed_channels(&self, source: Source) -> Result<Vec<AllowedChannel>> {
        self.blocking(move |s| s.allowed_channels(source)).await
    }

    /// A channel's stored messages sent at or after `since` (not unsent), by platform id,
    /// with their reactions.
    pub async fn stored_since(&self, channel_id: String, since: Millis) -> Result<Vec<(String, Vec<Reaction>)>> {
        self.blocking(move |s| s.stored_since(&channel_id, since)).await
    }

    /// A channel's stored threads, each with its newest stored message's platform id.
    pub async fn thread_anchors(&self, channel_id: String) -> Result<Vec<(ThreadSpec, Option<String>)>> {
        self.blocking(move |s| s.thread_anchors(&channel_id)).await
    }

    /// The platform ids of a channel's newest and oldest stored messages.
    pub async fn message_bounds(&self, channel_id: String) -> Result<Option<(String, String)>> {
        self.blocking(move |s| s.message_bounds(&channel_id)).await
    }

    /// A source's checkpoint (or other state) under `key`.
    pub async fn checkpoint(&self, source: Source, key: &str) -> Result<Option<String>> {
        let key = key.to_owned();
        self.blocking(move |s| s.source_state(source, &key)).await
    }

    /// Records a source's checkpoint on its own (a recount, a resync). A checkpoint that
    /// goes with messages is given to [`Amc::ingest_many`] instead, so both commit together.
    pub async fn set_checkpoint(&self, source: Source, key: &str, value: &str) -> Result<()> {
        let (key, value) = (key.to_owned(), value.to_owned());
        self.blocking(move |s| s.set_source_state(source, &key, &value)).await
    }

    /// How each of these platform ids is held, for those that are: what a source's sweep
    /// compares with the platform.
    pub async fn held(
        &self,
        source: Source,
        platform_ids: Vec<String>,
    ) -> Result<std::collections::HashMap<String, crate::model::Held>> {
        self.blocking(move |s| s.held(source, &platform_ids)).await
    }

    /// Whether a message with this platform id (or alias) is stored.
    pub async fn is_stored(&self, source: Source, platform_id: &str) -> Result<bool> {
        let platform_id = platform_id.to_owned();
        self.blocking(move |s| s.has_platform_message(source, &platform_id)).await
    }

    /// Marks messages read for every agent: messages that arrived late (synced from
    /// iCloud long after they were sent) are stored, but are not news.
    pub async fn mark_late(&self, message_ids: Vec<String>) -> Result<()> {
        if message_ids.is_empty() {
            return Ok(());
        }
        self.blocking(move |s| s.mark_read_for_all_agents(&message_ids)).await?;
        Ok(())
    }
}
