//! Group commit of posts. Every post joins a queue; one flush at a time, on the
//! blocking pool, takes what has queued and commits it in one transaction, then
//! announces each new message and answers each caller. A lone post is its own
//! transaction, as before; posts that arrive together share one, so the rate of posts
//! is no longer bounded by the rate of commits.
//!
//! A caller is answered only after the transaction holding its post committed: a
//! receipt is never given for a post that a crash could still lose. (The database runs
//! with `synchronous = NORMAL` in WAL mode: a commit survives the process being killed;
//! see <https://www.sqlite.org/pragma.html#pragma_synchronous>.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use amc_core::error::{Error, Result};

use crate::notify::Notifier;
use crate::store::{NewPost, RelayMessage, RelayStore};

/// The most posts one transaction takes, so the first in a flood is not held long.
const MOST_PER_COMMIT: usize = 512;

type Reply = oneshot::Sender<Result<RelayMessage>>;

/// The queue of posts and its one flush.
pub(crate) struct Committer {
    store: RelayStore,
    notifier: Arc<Notifier>,
    queue: Mutex<Queue>,
    /// Transactions committed (or tried) for posts.
    commits: AtomicU64,
}

#[derive(Default)]
struct Queue {
    waiting: Vec<(NewPost, Reply)>,
    /// Whether a flush is running: it takes whatever queues until the queue is empty.
    flushing: bool,
}

impl Committer {
    pub(crate) fn new(store: RelayStore, notifier: Arc<Notifier>) -> Self {
        Self { store, notifier, queue: Mutex::new(Queue::default()), commits: AtomicU64::new(0) }
    }

    /// How many transactions posts took so far.
    #[cfg(feature = "test-support")]
    pub(crate) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Posts and waits for the commit. The post and its announcement run to the end
    /// even if the caller goes away: a waiter never misses a committed message.
    pub(crate) async fn post(self: &Arc<Self>, post: NewPost) -> Result<RelayMessage> {
        let (reply, answer) = oneshot::channel();
        let start = {
            let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.waiting.push((post, reply));
            !std::mem::replace(&mut queue.flushing, true)
        };
        if start {
            let this = self.clone();
            tokio::task::spawn_blocking(move || this.flush());
        }
        answer.await.map_err(|_| Error::internal("a post's commit ended without an answer"))?
    }

    /// Commits what has queued, group by group, until nothing is left.
    fn flush(&self) {
        let _unstick = Unstick(self);
        loop {
            let (posts, replies): (Vec<NewPost>, Vec<Reply>) = {
                let mut queue = self.queue.lock().unwrap_or_else(|p| p.into_inner());
                if queue.waiting.is_empty() {
                    queue.flushing = false;
                    return;
                }
                let n = queue.waiting.len().min(MOST_PER_COMMIT);
                queue.waiting.drain(..n).unzip()
            };
            self.commits.fetch_add(1, Ordering::Relaxed);
            match self.store.post_many(&posts) {
                Ok(results) => {
                    for ((post, reply), result) in posts.iter().zip(replies).zip(results) {
                        if let Ok((message, false)) = &result {
                            self.notifier.notify(&post.thread_id, message.clone());
                        }
                        let _ = reply.send(result.map(|(message, _)| message));
                    }
                }
                Err(e) => {
                    for reply in replies {
                        let _ = reply.send(Err(Error { code: e.code, message: e.message.clone(), retry_after: None }));
                    }
                }
            }
        }
    }
}

/// If a flush panics, the posts still queued are answered (with an internal error, as
/// their senders drop) and the next post starts a new flush.
struct Unstick<'a>(&'a Committer);

impl Drop for Unstick<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut queue = self.0.queue.lock().unwrap_or_else(|p| p.into_inner());
            queue.waiting.clear();
            queue.flushing = false;
        }
    }
}
