//! AMC's housekeeping, run every minute while AMC runs: sends stuck in flight become
//! `unknown` for the person to review, idempotency records older than a day are
//! forgotten, and once AMC has been idle for 30 s, the write-ahead log is folded into the
//! database and truncated and the database's caches are let go. At the start it also
//! indexes for search the messages stored before the index.

use std::future::Future;
use std::time::Duration;

use super::Amc;
use crate::error::Result;
use crate::events::Event;
use crate::model::OutboxStatus;

/// How often the housekeeping runs.
const EVERY: Duration = Duration::from_secs(60);

/// How long without a write before the write-ahead log is folded into the database and
/// truncated.
const IDLE: Duration = Duration::from_secs(30);

impl Amc {
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

    /// Folds the write-ahead log into the database and truncates it, once nothing was
    /// written for [`IDLE`] and the log holds something; true when it did. Also called
    /// at a clean stop (`force`), whatever the time since the last write.
    pub async fn fold_wal(&self, force: bool) -> Result<bool> {
        let store = self.inner.store.clone();
        let wal = store.path().with_extension("db-wal");
        let pending = std::fs::metadata(&wal).map(|m| m.len() > 0).unwrap_or(false);
        if !pending || !(force || store.idle_for().is_some_and(|d| d >= IDLE)) {
            return Ok(false);
        }
        self.blocking(|s| s.checkpoint()).await
    }

    /// Lets go of the database's caches once nothing was written for [`IDLE`], once per
    /// quiet spell; true when it did.
    pub async fn release_memory(&self) -> Result<bool> {
        if self.inner.store.idle_for().is_some_and(|d| d < IDLE) {
            return Ok(false);
        }
        // No hand-off to the blocking pool when there is nothing to let go: at rest, each
        // hand-off is a few context switches.
        let released = self.inner.store.release_due() && self.blocking(|s| s.release_memory()).await?;
        if released {
            tracing::debug!("released the database's caches");
        }
        Ok(released)
    }

    /// Forgets idempotency records older than 24 hours; returns how many.
    pub async fn purge_idempotency(&self) -> Result<usize> {
        self.blocking(|s| s.purge_idempotency()).await
    }

    /// Runs the housekeeping every minute until `stop` completes, and meanwhile indexes
    /// for search what was stored before the index.
    pub async fn upkeep(&self, stop: impl Future<Output = ()>) {
        let mut tick = tokio::time::interval(EVERY);
        tokio::pin!(stop);
        let index = self.index_search_backlog();
        tokio::pin!(index);
        let mut indexing = true;
        loop {
            tokio::select! {
                () = &mut stop => return,
                () = &mut index, if indexing => indexing = false,
                _ = tick.tick() => {
                    if let Err(e) = self.expire_stale_sends().await {
                        tracing::warn!(error = %e, "could not check for stuck sends");
                    }
                    if let Err(e) = self.expire_tool_sessions().await {
                        tracing::warn!(error = %e, "could not check for ended sessions");
                    }
                    match self.purge_idempotency().await {
                        Ok(n) if n > 0 => tracing::debug!(purged = n, "idempotency records expired"),
                        Ok(_) => {}
                        Err(e) => tracing::warn!(error = %e, "could not purge idempotency records"),
                    }
                    if let Err(e) = self.fold_wal(false).await {
                        tracing::warn!(error = %e, "could not checkpoint the database");
                    }
                    if let Err(e) = self.release_memory().await {
                        tracing::warn!(error = %e, "could not release the database's caches");
                    }
                }
            }
        }
    }
}
