//! AMC's housekeeping, run every minute while AMC runs: sends stuck in flight become
//! `unknown` for the person to review, idempotency records older than a day and tool
//! requests answered or gone more than 30 days ago are forgotten, and once AMC has been idle for 30 s, the write-ahead log is folded into the
//! database and truncated and the database's caches are let go. At the start it also
//! indexes for search the messages stored before the index.

use std::future::Future;
use std::time::Duration;

use super::Amc;
use crate::error::Result;
use crate::events::Event;
use crate::every::Every;
use crate::model::OutboxStatus;
use amc_store::Store;

/// How often the housekeeping runs.
const EVERY: Duration = Duration::from_secs(60);

/// How long without a write before the write-ahead log is folded into the database and
/// truncated.
const IDLE: Duration = Duration::from_secs(30);

impl Amc {
    /// Folds the write-ahead log into the database and truncates it, once nothing was
    /// written for [`IDLE`] and the log holds something; true when it did. Also called
    /// at a clean stop (`force`), whatever the time since the last write.
    pub async fn fold_wal(&self, force: bool) -> Result<bool> {
        self.blocking(move |s| fold_wal(s, force)).await
    }

    /// Runs the housekeeping every minute until `stop` completes, and meanwhile indexes
    /// for search what was stored before the index.
    ///
    /// The minute is kept by a thread of its own (`amc-upkeep`), which also does the
    /// housekeeping: an idle AMC wakes for it once a minute, on that thread alone, instead
    /// of waking the runtime's threads and handing its store calls to the blocking pool.
    pub async fn upkeep(&self, stop: impl Future<Output = ()>) {
        let amc = self.clone();
        let mut released = false;
        let every = Every::spawn("amc-upkeep", EVERY, move || {
            released = amc.housekeep(released);
            true
        });
        let (every, mut fallback) = match every {
            Ok(every) => (Some(every), None),
            Err(e) => {
                tracing::warn!(error = %e, "no thread for the housekeeping; running it on the runtime");
                (None, Some(tokio::time::interval(EVERY)))
            }
        };
        // The search index first: an agent's search waits for it; the classification
        // only counts for the person.
        let index = async {
            self.index_search_backlog().await;
            self.classify_backlog().await;
        };
        tokio::pin!(stop, index);
        let (mut indexing, mut released) = (true, false);
        loop {
            tokio::select! {
                () = &mut stop => {
                    // A round under way ends before the upkeep does: the caller's last
                    // fold of the log comes after that round's writes.
                    if let Some(every) = every {
                        let _ = tokio::task::spawn_blocking(move || every.stop()).await;
                    }
                    return;
                }
                () = &mut index, if indexing => indexing = false,
                () = tick(&mut fallback) => {
                    let amc = self.clone();
                    released = tokio::task::spawn_blocking(move || amc.housekeep(released)).await.unwrap_or(false);
                }
            }
        }
    }

    /// One round of the housekeeping, on the calling thread (it makes store calls): each
    /// step's failure is logged and the others still run. `released`: the round before
    /// let the caches go, whose pages the allocator may now return. True when this one
    /// let them go.
    fn housekeep(&self, released: bool) -> bool {
        if released {
            let_the_allocator_purge();
        }
        // Its own reads and writes are no use that a release should follow.
        let store = &self.inner.store.uncounted();
        if let Err(e) = self.expire_stale_sends(store) {
            tracing::warn!(error = %e, "could not check for stuck sends");
        }
        if let Err(e) = self.end_silent_sessions(store) {
            tracing::warn!(error = %e, "could not check for ended sessions");
        }
        let before = crate::time::now_ms() - super::TOOL_REQUESTS_KEPT_FOR.as_millis() as i64;
        match store.prune_tool_requests(before) {
            Ok(n) if n > 0 => tracing::debug!(pruned = n, "old tool requests forgotten"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not prune old tool requests"),
        }
        // What no window of the readers rule reaches any more.
        match store.prune_reads(crate::time::now_ms() - self.config().readers_window.as_millis() as i64) {
            Ok(n) if n > 0 => tracing::debug!(pruned = n, "old reads forgotten"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not forget old reads"),
        }
        let (kept, kept_bytes) = amc_store::SEND_LOG_KEPT;
        match store.prune_send_log(kept, kept_bytes) {
            Ok(n) if n > 0 => tracing::debug!(pruned = n, "old sends left the log"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not prune the log of sends"),
        }
        match store.purge_idempotency() {
            Ok(n) if n > 0 => tracing::debug!(purged = n, "idempotency records expired"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not purge idempotency records"),
        }
        if let Err(e) = fold_wal(store, false) {
            tracing::warn!(error = %e, "could not checkpoint the database");
        }
        // Due once anything read or wrote since the last release: a spell of reads fills
        // the readers' caches, and a look at chat.db that finds nothing new still maps
        // the pages its lookups touched.
        let db = store.database();
        if db.idle_for().is_none_or(|d| d >= IDLE) && db.release_due() {
            // On a thread that ends with the release: what the caches held is returned to
            // the system when a thread's allocator heap goes with it, and not while this
            // one sleeps a minute between ticks (measured: 78 MiB at rest against 29).
            let released = std::thread::scope(|s| {
                match std::thread::Builder::new().name("amc-release".into()).spawn_scoped(s, || db.release_memory()) {
                    Ok(release) => release.join().unwrap_or(Ok(false)),
                    Err(_) => db.release_memory(),
                }
            });
            match released {
                Ok(true) => {
                    tracing::debug!("released the database's caches");
                    return true;
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, "could not release the database's caches"),
            }
        }
        false
    }

    /// Sends stuck in `sending` for longer than a platform may take become `unknown`.
    fn expire_stale_sends(&self, store: &Store) -> Result<()> {
        let older_than = crate::time::now_ms() - self.send_timeout_ceiling().as_millis() as i64 - 60_000;
        for id in store.expire_stale_sends(older_than)? {
            tracing::warn!(send = %id, "a send never got its outcome; marked unknown for review");
            self.publish(Event::SendChanged { send_id: id, status: OutboxStatus::Unknown });
        }
        Ok(())
    }
}

/// Lets the allocator return the pages freed a while ago to the system.
///
/// mimalloc (the `amc` binary's allocator) gives freed pages back only once they stayed
/// free for its purge delay (1 s), and only when some thread next frees a page to its
/// arenas: freeing a page "allows purging" (mimalloc v3, `src/page.c`, which calls
/// `_mi_arenas_collect`; `src/arena.c`, `mi_arenas_try_purge` purges what expired). An
/// idle AMC frees no page, so what a spell of reads freed stayed resident (101 MiB at
/// rest after an agent read 200,000 messages, 35 MiB with this). A block this large is a
/// page of its own, taken from and freed to an arena at once; reserved, never touched.
fn let_the_allocator_purge() {
    const HUGE: usize = 8 << 20;
    drop(std::hint::black_box(Vec::<u8>::with_capacity(HUGE)));
}

/// Folds the write-ahead log into the database and truncates it when it holds something
/// and either nothing was written for [`IDLE`] or `force`; true when it did.
fn fold_wal(store: &Store, force: bool) -> Result<bool> {
    let db = store.database();
    let wal = db.path().with_extension("db-wal");
    let pending = std::fs::metadata(&wal).map(|m| m.len() > 0).unwrap_or(false);
    if !pending || !(force || db.idle_for().is_some_and(|d| d >= IDLE)) {
        return Ok(false);
    }
    db.checkpoint()
}

/// The fallback timer's next tick; never, without one.
async fn tick(timer: &mut Option<tokio::time::Interval>) {
    match timer {
        Some(timer) => {
            timer.tick().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::model::ChannelSpec;
    use crate::model::{ChannelKind, HistoryRelease, Source};
    use crate::sender::Senders;
    use amc_store::{NewSend, SendLookup};

    /// The housekeeping's first round runs as it starts, on its own thread: a send the
    /// platform never confirmed becomes `unknown`, and the feed says so.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_send_stuck_in_flight_is_settled_as_the_housekeeping_starts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = Config::new(dir.path().to_owned());
        let amc = Amc::start(config, Senders::default()).expect("start");
        let store = amc.store();
        let spec = ChannelSpec { platform_id: "a".into(), name: "a".into(), kind: ChannelKind::Dm, readers: None };
        let (channel, _) = store.ensure_channel(Source::Imessage, &spec).expect("channel");
        store.approve_channel(&channel, HistoryRelease::All, None, false).expect("approve");
        store.create_agent("bot").expect("agent");
        let send = NewSend {
            agent_id: "bot",
            idempotency: None,
            channel_id: &channel,
            text: "did it go?",
            reply_to: None,
            attachments: &[],
            status: OutboxStatus::Sending,
            held_bounds: crate::service::HELD_BOUNDS,
            held_reason: None,
            read_from: &[],
        };
        let SendLookup::New(stuck) = store.record_send(&send).expect("record") else { panic!("a new send") };
        // In flight since long before the send timeout.
        store.backdate_send(&stuck.id, 0).expect("age the send");
        let mut feed = amc.events().subscribe();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let upkeep = tokio::spawn({
            let amc = amc.clone();
            async move {
                amc.upkeep(async move {
                    let _ = stopped.await;
                })
                .await
            }
        });
        let settled = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let Ok(Event::SendChanged { send_id, status }) = feed.recv().await
                    && send_id == stuck.id
                {
                    return status;
                }
            }
        })
        .await
        .expect("the send settled");
        assert_eq!(settled, OutboxStatus::Unknown);
        assert_eq!(store.outbox_item(&stuck.id).expect("read").status, OutboxStatus::Unknown);
        let _ = stop.send(());
        upkeep.await.expect("the housekeeping stops");
    }
}
