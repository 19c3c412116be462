//! What lets a `wait_for_messages` call park and wake without reading the store: one
//! watch channel per thread with waiters, holding the thread's newest messages, and the
//! readers each thread is known to admit.
//!
//! A post wakes a thousand waiters without a thousand reads, and a thousand waiters
//! starting together on a thread whose newest message they already have park after one
//! read between them, not one each.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::store::RelayMessage;

/// How many of a thread's newest messages the notifier keeps for its waiters.
const RECENT: usize = 64;

/// The newest messages of a thread, as the notifier hands them to waiters.
#[derive(Debug, Default)]
pub(crate) struct Recent {
    /// The newest seq announced, or learned from the store (see [`Notifier::learned`]).
    pub(crate) latest_seq: i64,
    /// Whether `latest_seq` is the thread's newest committed seq. It is once a waiter
    /// that subscribed before reading the store tells what it read: from then on every
    /// commit is announced here.
    pub(crate) known: bool,
    /// Ascending by seq (posts may be announced out of order; they are put in place).
    messages: VecDeque<Arc<RelayMessage>>,
}

impl Recent {
    /// The messages right after `after_seq`, if this buffer holds them without a gap.
    pub(crate) fn after(&self, after_seq: i64, limit: usize) -> Option<Vec<RelayMessage>> {
        let out: Vec<RelayMessage> =
            self.messages.iter().filter(|m| m.seq > after_seq).take(limit).map(|m| (**m).clone()).collect();
        let contiguous = !out.is_empty() && out.iter().zip(after_seq + 1..).all(|(m, want)| m.seq == want);
        contiguous.then_some(out)
    }

    /// Whether nothing was committed after `after_seq`, as far as this entry knows.
    pub(crate) fn nothing_after(&self, after_seq: i64) -> bool {
        self.known && self.latest_seq <= after_seq
    }
}

/// Wakes `wait_for_messages` callers when a thread gets a message: one watch channel
/// per thread with waiters, so a waiter is a parked future, never a thread.
#[derive(Default)]
pub(crate) struct Notifier {
    threads: Mutex<HashMap<String, watch::Sender<Arc<Recent>>>>,
}

impl Notifier {
    /// A receiver on the thread's entry, made if no one waits on the thread. An entry
    /// lives as long as a receiver does.
    pub(crate) fn subscribe(&self, thread_id: &str) -> watch::Receiver<Arc<Recent>> {
        let mut map = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, tx| tx.receiver_count() > 0);
        map.entry(thread_id.to_owned()).or_insert_with(|| watch::channel(Arc::new(Recent::default())).0).subscribe()
    }

    pub(crate) fn waiters(&self) -> usize {
        let map = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        map.values().map(watch::Sender::receiver_count).sum()
    }

    pub(crate) fn waiting_on(&self, thread_id: &str) -> usize {
        let map = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        map.get(thread_id).map_or(0, watch::Sender::receiver_count)
    }

    fn sender(&self, thread_id: &str) -> Option<watch::Sender<Arc<Recent>>> {
        let map = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        map.get(thread_id).cloned()
    }

    /// Announces a committed message to the thread's waiters, if it has any.
    pub(crate) fn notify(&self, thread_id: &str, message: RelayMessage) {
        let Some(sender) = self.sender(thread_id) else { return };
        let message = Arc::new(message);
        sender.send_modify(|recent| {
            let mut messages = recent.messages.clone();
            let at = messages.partition_point(|m| m.seq < message.seq);
            if messages.get(at).is_none_or(|m| m.seq != message.seq) {
                messages.insert(at, message.clone());
            }
            while messages.len() > RECENT {
                messages.pop_front();
            }
            *recent =
                Arc::new(Recent { latest_seq: recent.latest_seq.max(message.seq), known: recent.known, messages });
        });
    }

    /// Tells the thread's entry the newest seq a store read saw. Only a caller holding a
    /// receiver it took *before* that read may call this: its entry then existed when
    /// every later commit was announced, so the entry's newest seq is exact from here on.
    /// (A read by anyone else could be older than a commit announced to nobody.)
    pub(crate) fn learned(&self, thread_id: &str, _held: &watch::Receiver<Arc<Recent>>, latest_seq: i64) {
        let Some(sender) = self.sender(thread_id) else { return };
        sender.send_if_modified(|recent| {
            if recent.known && recent.latest_seq >= latest_seq {
                return false;
            }
            *recent = Arc::new(Recent {
                latest_seq: recent.latest_seq.max(latest_seq),
                known: true,
                messages: recent.messages.clone(),
            });
            true
        });
    }
}

/// The (thread, principal) pairs a store read has admitted. Access to a thread only
/// grows (joining adds or raises it; nothing in the relay takes it away, and a revoked
/// agent is stopped before and during its calls), so a pair once admitted stays so.
#[derive(Default)]
pub(crate) struct Admitted {
    /// Thread id to the principals admitted to it.
    threads: Mutex<HashMap<String, HashSet<String>>>,
}

impl Admitted {
    pub(crate) fn admit(&self, thread_id: &str, principal: &str) {
        let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        match threads.get_mut(thread_id) {
            Some(set) if set.contains(principal) => {}
            Some(set) => {
                set.insert(principal.to_owned());
            }
            None => {
                threads.insert(thread_id.to_owned(), HashSet::from([principal.to_owned()]));
            }
        }
    }

    pub(crate) fn admits(&self, thread_id: &str, principal: &str) -> bool {
        let threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        threads.get(thread_id).is_some_and(|set| set.contains(principal))
    }
}
