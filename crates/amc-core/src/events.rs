//! The change feed: the UI follows it (as server-sent events) to update live.

use serde::Serialize;
use tokio::sync::broadcast;

use crate::model::OutboxStatus;

/// Something the person may want to see at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A channel was seen for the first time; it waits for the person's decision.
    ChannelCreated {
        /// The channel.
        channel_id: String,
    },
    /// A channel's state or send policy changed.
    ChannelChanged {
        /// The channel.
        channel_id: String,
    },
    /// Messages were stored or updated.
    MessagesChanged {
        /// The channel.
        channel_id: String,
        /// How many new messages.
        inserted: usize,
        /// How many updated ones.
        updated: usize,
    },
    /// An agent's send was recorded or changed status.
    SendChanged {
        /// The send.
        send_id: String,
        /// Its status now.
        status: OutboxStatus,
    },
    /// Messages were marked read.
    ReadChanged {
        /// The agent.
        agent_id: String,
    },
    /// An agent was added or revoked.
    AgentsChanged,
    /// The person paused or resumed all agents' sends.
    PauseChanged {
        /// Whether sends are held now.
        paused: bool,
    },
}

/// A cheap, cloneable publisher; subscribers that fall behind miss events and are told so.
#[derive(Debug, Clone)]
pub struct EventBus {
    tx: broadcast::Sender<Event>,
}

impl Default for EventBus {
    fn default() -> Self {
        Self { tx: broadcast::channel(1024).0 }
    }
}

impl EventBus {
    /// Publishes an event to whoever listens now.
    pub fn publish(&self, event: Event) {
        // No listener is not an error.
        let _ = self.tx.send(event);
    }

    /// A new listener.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }
}
