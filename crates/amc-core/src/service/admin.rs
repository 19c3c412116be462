//! The person's actions: approving channels, reviewing sends, managing agents, pausing.
//! The admin API, the CLI and the tray all come through here.

use serde::Serialize;

use super::Amc;
use super::inbox::seen_by_person;
use crate::error::{Error, Result};
use crate::events::Event;
use crate::model::{
    AgentInfo, ChannelAdmin, ChannelState, CodesShown, DecidedVia, Envelope, HistoryRelease, NotACodeReport,
    OutboxItem, OutboxStatus, SendPolicy, Waiting,
};

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

    /// Approves a channel with the chosen history. A conversation with a short-code sender
    /// is approved only with `sensitive` (the person confirmed it a second time).
    pub async fn approve_channel(
        &self,
        id: String,
        release: HistoryRelease,
        policy: Option<SendPolicy>,
        sensitive: bool,
    ) -> Result<ChannelAdmin> {
        let ch = self.blocking(move |s| s.approve_channel(&id, release, policy, sensitive)).await?;
        self.publish(Event::ChannelChanged { channel_id: ch.id.clone() });
        Ok(ch)
    }

    /// Opens a channel to every agent (`None`), or to these agents only. Agents removed
    /// lose it on their next request.
    pub async fn set_channel_agents(&self, id: String, agents: Option<Vec<String>>) -> Result<ChannelAdmin> {
        if let Some(list) = &agents {
            if list.len() > 1000 {
                return Err(Error::validation("agents takes at most 1000 agent ids"));
            }
            if let Some(bad) = list.iter().find(|a| !crate::ids::is_agent_id(a)) {
                return Err(Error::validation(format!("{bad:?} is not an agent id")));
            }
        }
        let agents = agents.map(|mut l| {
            l.sort();
            l.dedup();
            l
        });
        let ch = self.blocking(move |s| s.set_channel_agents(&id, agents.as_deref())).await?;
        self.publish(Event::ChannelChanged { channel_id: ch.id.clone() });
        Ok(ch)
    }

    /// An agent's own send policy on a channel listed as open to it (`None`: the channel's).
    pub async fn set_agent_send_policy(
        &self,
        id: String,
        agent_id: String,
        policy: Option<SendPolicy>,
    ) -> Result<ChannelAdmin> {
        let ch = self.blocking(move |s| s.set_agent_send_policy(&id, &agent_id, policy)).await?;
        self.publish(Event::ChannelChanged { channel_id: ch.id.clone() });
        Ok(ch)
    }

    /// Which agents are given the channel's one-time codes and sign-in links: none
    /// (`Hidden`, the default), every agent it is open to (`Shown`), or `agents` (`Some`).
    /// Takes effect from the agents' next request.
    pub async fn set_channel_codes(&self, id: String, codes: CodesShown, agents: Vec<String>) -> Result<ChannelAdmin> {
        if agents.len() > 1000 {
            return Err(Error::validation("agents takes at most 1000 agent ids"));
        }
        if let Some(bad) = agents.iter().find(|a| !crate::ids::is_agent_id(a)) {
            return Err(Error::validation(format!("{bad:?} is not an agent id")));
        }
        if (codes == CodesShown::Some) == agents.is_empty() {
            return Err(Error::validation("name the agents that see codes exactly when codes is \"some\""));
        }
        let ch = self.blocking(move |s| s.set_channel_codes(&id, codes, &agents)).await?;
        self.publish(Event::ChannelChanged { channel_id: ch.id.clone() });
        Ok(ch)
    }

    /// Blocks a channel.
    pub async fn block_channel(&self, id: String) -> Result<ChannelAdmin> {
        let ch = self.blocking(move |s| s.block_channel(&id)).await?;
        self.publish(Event::ChannelChanged { channel_id: ch.id.clone() });
        Ok(ch)
    }

    /// Turns the readers rule off for a channel (`anything`: it may receive whatever an
    /// agent read elsewhere) or back on.
    pub async fn set_receives_anything(&self, id: String, anything: bool) -> Result<ChannelAdmin> {
        let ch = self.blocking(move |s| s.set_receives_anything(&id, anything)).await?;
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
    /// Held sends come with their conversation. `limit` is 1 to 500 (default 100).
    pub async fn admin_sends(&self, status: Option<OutboxStatus>, limit: Option<u32>) -> Result<Vec<AdminSend>> {
        let limit = super::inbox::ranged("limit", limit.map(i64::from), 1, 500, 100)?;
        self.blocking(move |s| {
            let items = s.outbox(status, limit)?;
            items
                .into_iter()
                .map(|item| {
                    let mut conversation = if item.status == OutboxStatus::Held {
                        s.channel_tail(&item.channel_id, REVIEW_CONTEXT)?
                    } else {
                        Vec::new()
                    };
                    seen_by_person(&mut conversation);
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
            let mut conversation = s.channel_tail(&item.channel_id, REVIEW_CONTEXT)?;
            seen_by_person(&mut conversation);
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
    pub async fn approve_send(&self, id: String, via: DecidedVia) -> Result<OutboxItem> {
        let amc = self.clone();
        let task = tokio::spawn(async move {
            let item = amc
                .blocking(move |s| {
                    let item = s.claim_held(&id, via)?;
                    // The person saw where this send may carry words from: those reads no
                    // longer hold its agent's next sends (unless read again since). Kept
                    // should this fail: the send goes out all the same.
                    if let Err(e) = s.forget_reads(&item.agent_id, &item.read_from) {
                        tracing::warn!(error = %e, "could not forget what an approved send was read from");
                    }
                    Ok(item)
                })
                .await?;
            amc.publish(Event::SendChanged { send_id: item.id.clone(), status: item.status });
            amc.deliver_now(item, None).await
        });
        task.await.map_err(Error::internal)?
    }

    /// Rejects a held send.
    pub async fn reject_send(&self, id: String, reason: Option<String>, via: DecidedVia) -> Result<OutboxItem> {
        if reason.as_ref().is_some_and(|r| r.len() > 1000) {
            return Err(Error::validation("reason is over 1000 bytes"));
        }
        let item = self.blocking(move |s| s.reject_held(&id, reason.as_deref(), via)).await?;
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
        let mut agents = self.blocking(|s| s.agents()).await?;
        for a in &mut agents {
            a.pushing = self.is_pushing(&a.id);
        }
        Ok(agents)
    }

    /// Revokes an agent.
    pub async fn revoke_agent(&self, id: String) -> Result<AgentInfo> {
        let agent = self.blocking(move |s| s.revoke_agent(&id)).await?;
        self.inner.revocations.send_modify(|n| *n += 1);
        self.publish(Event::AgentsChanged);
        Ok(agent)
    }

    /// Pauses (every send is held) or resumes all agents. Kept across restarts.
    pub async fn set_paused(&self, paused: bool) -> Result<()> {
        self.blocking(move |s| {
            s.set_setting(super::PAUSED_SETTING, if paused { "true" } else { "false" })?;
            // What the phone was asked is withdrawn at once: an answer now changes nothing.
            if paused {
                s.end_open_phone_asks(crate::model::PhoneAskState::Withdrawn, None)?;
            }
            Ok(())
        })
        .await?;
        self.inner.paused.store(paused, std::sync::atomic::Ordering::SeqCst);
        self.publish(Event::PauseChanged { paused });
        Ok(())
    }

    /// Says that the message `id` holds no one-time code or sign-in link, as the person
    /// does (`not_a_code`: agents are then given it whole), or takes that back; the
    /// message as the person then sees it. Saying it of a message in which AMC found
    /// nothing is refused.
    pub async fn set_not_a_code(&self, id: String, not_a_code: bool) -> Result<Envelope> {
        // On `/admin` routes an id that cannot be a message's is as unknown as one that is not.
        super::inbox::check_message_id("message id", &id).map_err(|_| Error::not_found("message"))?;
        self.blocking(move |s| {
            let mut message = s.message_for_person(&id)?;
            seen_by_person(std::slice::from_mut(&mut message));
            let mut rules: Vec<&str> = message.secret_spans.iter().map(|span| span.rule).collect();
            rules.sort_unstable();
            rules.dedup();
            if not_a_code && rules.is_empty() && !message.not_a_code {
                return Err(Error::validation("AMC found no one-time code or sign-in link in this message"));
            }
            s.set_not_a_code(&id, not_a_code, &rules, &message.text)?;
            let mut message = s.message_for_person(&id)?;
            seen_by_person(std::slice::from_mut(&mut message));
            Ok(message)
        })
        .await
    }

    /// What the person said holds no code: how many messages, the rules that had found
    /// something in them, and the messages.
    pub async fn not_a_code_report(&self) -> Result<NotACodeReport> {
        self.blocking(|s| {
            let messages = s.not_a_code_report()?;
            let mut counts = std::collections::BTreeMap::<&str, usize>::new();
            for rule in messages.iter().flat_map(|m| m.rules.iter()) {
                *counts.entry(rule).or_default() += 1;
            }
            let by_rule = counts
                .into_iter()
                .map(|(rule, n)| crate::model::RuleCount {
                    rule: rule.to_owned(),
                    why: crate::secrets::Rule::named(rule).map_or("", crate::secrets::Rule::why),
                    messages: n,
                })
                .collect();
            Ok(NotACodeReport { marked: messages.len(), by_rule, messages })
        })
        .await
    }

    /// Recent messages of allowed channels with the agents that read them; `limit` is 1 to
    /// 500 (default 50).
    pub async fn inbox(&self, limit: Option<u32>) -> Result<Vec<InboxItem>> {
        let limit = super::inbox::ranged("limit", limit.map(i64::from), 1, 500, 50)?;
        self.blocking(move |s| {
            let mut messages = s.recent_visible(limit)?;
            seen_by_person(&mut messages);
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
