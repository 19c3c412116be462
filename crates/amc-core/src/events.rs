//! The change feed: the UI follows it to update live, as server-sent events or by
//! long-polling a ring of recent, numbered events.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::{broadcast, watch};

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
    /// A channel changed: its state, send policy or name.
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
    /// A source connected, or its problem changed (see `GET /healthz`).
    SourceChanged {
        /// The source.
        source: crate::model::Source,
    },
    /// The person paused or resumed all agents' sends.
    PauseChanged {
        /// Whether sends are held now.
        paused: bool,
    },
    /// A host asked to use a tool, the person answered, or the session that asked ended.
    ToolRequestChanged {
        /// The request.
        request: String,
        /// The agent whose session asked.
        agent_id: String,
        /// Where it stands now.
        status: crate::model::ToolRequestStatus,
    },
}

/// An event with its sequence number, as the long-poll hands it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sequenced {
    /// Its place in the feed: each event's is one more than the previous one's.
    pub seq: u64,
    /// The event.
    #[serde(flatten)]
    pub event: Event,
}

/// What a poll of the feed finds after a cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Since {
    /// The events after the cursor, oldest first.
    pub events: Vec<Sequenced>,
    /// The cursor to poll from next: the last event's sequence number, or the newest one.
    pub next: u64,
    /// Some events after the cursor are gone from the ring (or the cursor is from another
    /// run of AMC): reload everything, then poll from `next`.
    pub missed: bool,
}

/// How many recent events the feed keeps for pollers.
pub const RING_CAPACITY: usize = 1024;

/// A cheap, cloneable publisher; subscribers that fall behind miss events and are told so.
///
/// Besides the broadcast, it keeps the last [`RING_CAPACITY`] events with sequence
/// numbers, for clients that cannot hold a stream open (the tray app's custom URI scheme)
/// and poll instead. Numbers start at the bus's creation time in microseconds, so a cursor
/// from an earlier run of AMC is always behind the ring and its holder reloads.
#[derive(Debug, Clone)]
pub struct EventBus {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    tx: broadcast::Sender<Event>,
    ring: Mutex<VecDeque<Sequenced>>,
    /// The newest sequence number; pollers wait for it to change.
    latest: watch::Sender<u64>,
}

impl Default for EventBus {
    fn default() -> Self {
        let start = u64::try_from(crate::time::now_ms()).unwrap_or(0).saturating_mul(1000);
        Self::starting_at(start)
    }
}

impl EventBus {
    /// A bus whose first event gets `latest + 1` (tests pick their own numbers).
    pub fn starting_at(latest: u64) -> Self {
        Self {
            shared: Arc::new(Shared {
                tx: broadcast::channel(RING_CAPACITY).0,
                ring: Mutex::new(VecDeque::with_capacity(RING_CAPACITY)),
                latest: watch::channel(latest).0,
            }),
        }
    }

    /// Publishes an event to whoever listens now, and keeps it in the ring.
    pub fn publish(&self, event: Event) {
        {
            let mut ring = self.shared.ring.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let seq = *self.shared.latest.borrow() + 1;
            if ring.len() == RING_CAPACITY {
                ring.pop_front();
            }
            ring.push_back(Sequenced { seq, event: event.clone() });
            // Under the ring's lock, so numbers and ring order agree.
            self.shared.latest.send_replace(seq);
        }
        // No listener is not an error.
        let _ = self.shared.tx.send(event);
    }

    /// A new listener.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.shared.tx.subscribe()
    }

    /// How many listeners follow the feed now (the SSE streams, the tray).
    pub fn listeners(&self) -> usize {
        self.shared.tx.receiver_count()
    }

    /// How many long-polls are waiting now.
    pub fn pollers(&self) -> usize {
        self.shared.latest.receiver_count()
    }

    /// The newest sequence number (where a new poller starts).
    pub fn latest(&self) -> u64 {
        *self.shared.latest.borrow()
    }

    /// The events after `after`, without waiting.
    pub fn since(&self, after: u64) -> Since {
        let ring = self.shared.ring.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let latest = *self.shared.latest.borrow();
        let oldest = ring.front().map_or(latest + 1, |e| e.seq);
        // A cursor ahead of the feed comes from another run; one before the ring's oldest
        // event has lost what fell off.
        if after > latest || after.saturating_add(1) < oldest {
            return Since { events: Vec::new(), next: latest, missed: true };
        }
        let events: Vec<Sequenced> = ring.iter().filter(|e| e.seq > after).cloned().collect();
        Since { next: events.last().map_or(after, |e| e.seq), events, missed: false }
    }

    /// The events after `after`; if there are none yet, waits up to `timeout` for one
    /// (or until `stop` resolves) and answers with what came, possibly nothing.
    pub async fn poll(&self, after: u64, timeout: Duration, stop: impl Future<Output = ()>) -> Since {
        let mut latest = self.shared.latest.subscribe();
        latest.borrow_and_update();
        let found = self.since(after);
        if !found.events.is_empty() || found.missed || timeout.is_zero() {
            return found;
        }
        tokio::select! {
            _ = tokio::time::sleep(timeout) => {}
            _ = stop => {}
            _ = latest.changed() => {}
        }
        self.since(after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(agent: &str) -> Event {
        Event::ReadChanged { agent_id: agent.to_owned() }
    }

    #[test]
    fn events_are_numbered_in_order_and_found_after_a_cursor() {
        let bus = EventBus::starting_at(100);
        bus.publish(read("a"));
        bus.publish(read("b"));
        let all = bus.since(100);
        assert_eq!(all.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [101, 102]);
        assert_eq!((all.next, all.missed), (102, false));
        let rest = bus.since(101);
        assert_eq!(rest.events, [Sequenced { seq: 102, event: read("b") }]);
        let none = bus.since(102);
        assert_eq!((none.events.len(), none.next, none.missed), (0, 102, false));
    }

    #[test]
    fn a_cursor_behind_the_ring_or_ahead_of_the_feed_missed_events() {
        let bus = EventBus::starting_at(0);
        for _ in 0..RING_CAPACITY + 5 {
            bus.publish(read("a"));
        }
        let latest = (RING_CAPACITY + 5) as u64;
        assert_eq!(bus.latest(), latest);
        let old = bus.since(3);
        assert!(old.missed && old.events.is_empty());
        assert_eq!(old.next, latest);
        // The oldest kept event is number 6: a cursor at 5 lost nothing.
        let edge = bus.since(5);
        assert!(!edge.missed);
        assert_eq!(edge.events.len(), RING_CAPACITY);
        assert!(bus.since(latest + 1).missed, "a cursor from another run");
    }

    #[test]
    fn a_new_bus_numbers_after_any_cursor_of_an_earlier_one() {
        let first = EventBus::default();
        first.publish(read("a"));
        let cursor = first.latest();
        // A bus starts from the clock: the next millisecond, however soon it comes.
        let then = crate::time::now_ms();
        while crate::time::now_ms() <= then {
            std::thread::yield_now();
        }
        let second = EventBus::default();
        second.publish(read("b"));
        assert!(second.latest() > cursor);
        assert!(second.since(cursor).missed);
    }
}
