//! The person's actions: approving channels, reviewing sends, managing agents, pausing.
//! The admin API, the CLI and the tray all come through here.

use serde::Serialize;

use super::Amc;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::model::{
    AgentInfo, ChannelAdmin, ChannelState, Envelope, HistoryRelease, IncomingMessage, OutboxItem, OutboxStatus,
    SendPolicy, Source, Waiting,
};
use crate::store::{ChannelSpec, IngestReport};

/// How many messages of the conversation a held send is shown with.
const REVIEW_CONTEXT: u32 = 10;

/// A send with the conversation it goes into, for review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AdminSend {
    /// The send.
    #[serde(flatten)]
    pub item: OutboxItem,
    /// The channel's latest messages, oldest first.
    pub conversation: Vec<Envelope>,
}

/// A message of the inbox view, with the agents that read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InboxItem {
    /// The message.
    #[serde(flatten)]
    pub message: Envelope,
    /// The agents that marked it read.
    pub read_by: Vec<String>,
}

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
        let reports = self
            .blocking(move |s| {
                s.ingest_many(source, &batches, checkpoint.as_ref().map(|(k, v)| (k.as_str(), v.as_str())))
            })
            .await?;
        for report in &reports {
            if report.channel_created {
                self.publish(Event::ChannelCreated { channel_id: report.channel_id.clone() });
            }
            if !report.inserted.is_empty() || !report.updated.is_empty() {
                self.publish(Event::MessagesChanged {
                    channel_id: report.channel_id.clone(),
                    inserted: report.inserted.len(),
                    updated: report.updated.len(),
                });
            }
        }
        Ok(reports)
    }

    /// Applies reaction changes a source read, and tells the UI.
    pub async fn apply_reactions(&self, source: Source, changes: Vec<crate::store::ReactionChange>) -> Result<usize> {
        let changed = self.blocking(move |s| s.apply_reactions(source, &changes)).await?;
        for (_, channel_id) in &changed {
            self.publish(Event::MessagesChanged { channel_id: channel_id.clone(), inserted: 0, updated: 1 });
        }
        Ok(changed.len())
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
    pub async fn allowed_channels(&self, source: Source) -> Result<Vec<crate::store::AllowedChannel>> {
        self.blocking(move |s| s.allowed_channels(source)).await
    }

    /// The platform ids of a channel's newest and oldest stored messages.
    pub async fn message_bounds(&self, channel_id: String) -> Result<Option<(String, String)>> {
        self.blocking(move |s| s.message_bounds(&channel_id)).await
    }

    /// How many channels and sends wait for the person (the tray's counts).
    pub async fn waiting(&self) -> Result<Waiting> {
        self.blocking(|s| s.waiting()).await
    }

    /// Every channel, for the person.
    pub async fn admin_channels(
        &self,
        state: Option<ChannelState>,
        search: Option<String>,
    ) -> Result<Vec<ChannelAdmin>> {
        self.blocking(move |s| s.admin_channels(state, search.as_deref())).await
    }

    /// One channel, for the person.
    pub async fn admin_channel(&self, id: String) -> Result<ChannelAdmin> {
        self.blocking(move |s| s.admin_channel(&id)).await
    }

    /// Approves a channel with the chosen history.
    pub async fn approve_channel(
        &self,
        id: String,
        release: HistoryRelease,
        policy: Option<SendPolicy>,
    ) -> Result<ChannelAdmin> {
        let ch = self.blocking(move |s| s.approve_channel(&id, release, policy)).await?;
        self.publish(Event::ChannelChanged { channel_id: ch.id.clone() });
        Ok(ch)
    }

    /// Blocks a channel.
    pub async fn block_channel(&self, id: String) -> Result<ChannelAdmin> {
        let ch = self.blocking(move |s| s.block_channel(&id)).await?;
        self.publish(Event::ChannelChanged { channel_id: ch.id.clone() });
        Ok(ch)
    }

    /// Sets a channel's send policy.
    pub async fn set_send_policy(&self, id: String, policy: SendPolicy) -> Result<ChannelAdmin> {
        let ch = self.blocking(move |s| s.set_send_policy(&id, policy)).await?;
        self.publish(Event::ChannelChanged { channel_id: ch.id.clone() });
        Ok(ch)
    }

    /// Sends, newest first; `status` narrows to one status (`held` is the review queue).
    /// Held sends come with their conversation.
    pub async fn admin_sends(&self, status: Option<OutboxStatus>, limit: u32) -> Result<Vec<AdminSend>> {
        self.blocking(move |s| {
            let items = s.outbox(status, limit.clamp(1, 500))?;
            items
                .into_iter()
                .map(|item| {
                    let conversation = if item.status == OutboxStatus::Held {
                        s.channel_tail(&item.channel_id, REVIEW_CONTEXT)?
                    } else {
                        Vec::new()
                    };
                    Ok(AdminSend { item, conversation })
                })
                .collect()
        })
        .await
    }

    /// One send with its conversation.
    pub async fn admin_send(&self, id: String) -> Result<AdminSend> {
        self.blocking(move |s| {
            let item = s.outbox_item(&id)?;
            let conversation = s.channel_tail(&item.channel_id, REVIEW_CONTEXT)?;
            Ok(AdminSend { item, conversation })
        })
        .await
    }

    /// One send alone, without the conversation around it.
    pub async fn outbox_item(&self, id: String) -> Result<OutboxItem> {
        self.blocking(move |s| s.outbox_item(&id)).await
    }

    /// Approves a held send: it is delivered now, whatever the pause switch says. The
    /// claim and the delivery run on one task, so a caller that goes away cannot leave
    /// the send claimed but never tried.
    pub async fn approve_send(&self, id: String) -> Result<OutboxItem> {
        let amc = self.clone();
        let task = tokio::spawn(async move {
            let item = amc.blocking(move |s| s.claim_held(&id)).await?;
            amc.publish(Event::SendChanged { send_id: item.id.clone(), status: item.status });
            amc.deliver_now(item).await
        });
        task.await.map_err(Error::internal)?
    }

    /// Rejects a held send.
    pub async fn reject_send(&self, id: String, reason: Option<String>) -> Result<OutboxItem> {
        if reason.as_ref().is_some_and(|r| r.len() > 1000) {
            return Err(Error::validation("reason is over 1000 bytes"));
        }
        let item = self.blocking(move |s| s.reject_held(&id, reason.as_deref())).await?;
        self.discard_stage_files(&item);
        self.publish(Event::SendChanged { send_id: item.id.clone(), status: item.status });
        Ok(item)
    }

    /// Adds an agent; the token is returned once.
    pub async fn create_agent(&self, id: String) -> Result<(AgentInfo, String)> {
        let created = self.blocking(move |s| s.create_agent(&id)).await?;
        self.publish(Event::AgentsChanged);
        Ok(created)
    }

    /// Every agent.
    pub async fn agents(&self) -> Result<Vec<AgentInfo>> {
        self.blocking(|s| s.agents()).await
    }

    /// Revokes an agent.
    pub async fn revoke_agent(&self, id: String) -> Result<AgentInfo> {
        let agent = self.blocking(move |s| s.revoke_agent(&id)).await?;
        self.inner.revocations.send_modify(|n| *n += 1);
        self.publish(Event::AgentsChanged);
        Ok(agent)
    }

    /// Sends stuck in `sending` for longer than a platform may take become `unknown`.
    pub async fn expire_stale_sends(&self) -> Result<()> {
        let older_than = crate::time::now_ms() - self.config().send_timeout.as_millis() as i64 - 60_000;
        let expired = self.blocking(move |s| s.expire_stale_sends(older_than)).await?;
        for id in expired {
            tracing::warn!(send = %id, "a send never got its outcome; marked unknown for review");
            self.publish(Event::SendChanged { send_id: id, status: OutboxStatus::Unknown });
        }
        Ok(())
    }

    /// Pauses (every send is held) or resumes all agents. Kept across restarts.
    pub async fn set_paused(&self, paused: bool) -> Result<()> {
        self.blocking(move |s| s.set_setting(super::PAUSED_SETTING, if paused { "true" } else { "false" })).await?;
        self.inner.paused.store(paused, std::sync::atomic::Ordering::SeqCst);
        self.publish(Event::PauseChanged { paused });
        Ok(())
    }

    /// Recent messages of allowed channels with the agents that read them.
    pub async fn inbox(&self, limit: u32) -> Result<Vec<InboxItem>> {
        self.blocking(move |s| {
            let messages = s.recent_visible(limit.clamp(1, 500))?;
            let ids: Vec<String> = messages.iter().map(|m| m.id.clone()).collect();
            let mut readers = s.readers(&ids)?;
            Ok(messages
                .into_iter()
                .map(|m| InboxItem { read_by: readers.remove(&m.id).unwrap_or_default(), message: m })
                .collect())
        })
        .await
    }
}
