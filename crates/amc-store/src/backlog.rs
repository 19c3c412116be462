//! Work on every message that did not exist when older messages were stored (the search
//! index, the classification of secrets): a range of their rowids, worked down from the
//! newest in batches, with its progress.

use rusqlite::{OptionalExtension, Transaction, params};

use crate::error::Result;

/// How far the backlog's indexing has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct IndexProgress {
    /// Messages indexed so far.
    pub done: u64,
    /// Messages to index in all.
    pub total: u64,
}

impl IndexProgress {
    fn from_rows(done: i64, total: i64) -> Self {
        Self { done: done.max(0).unsigned_abs(), total: total.max(0).unsigned_abs() }
    }
}

/// A range of messages (by rowid, `lo..=hi`) stored before some work on every message
/// existed, worked down from the newest in batches: the search index's (`search_backlog`)
/// and the classification of secrets' (`secrets_backlog`). Rows written later have larger
/// rowids and are worked as they are written.
#[derive(Clone, Copy)]
pub(crate) enum Backlog {
    Search,
    Secrets,
}

/// The rows of one batch of a [`Backlog`]: `from..=hi`.
pub(crate) struct Batch {
    pub from: i64,
    pub hi: i64,
    lo: i64,
    total: i64,
    done: i64,
}

impl Backlog {
    fn table(self) -> &'static str {
        match self {
            Backlog::Search => "search_backlog",
            Backlog::Secrets => "secrets_backlog",
        }
    }

    /// The next batch of up to `batch` rows, the newest first; `None` when none is left.
    pub(crate) fn next(self, tx: &Transaction<'_>, batch: u32) -> Result<Option<Batch>> {
        let table = self.table();
        let Some((lo, hi, total, done)) = tx
            .prepare_cached(&format!("SELECT lo, hi, total, done FROM {table}"))?
            .query_row([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?, r.get::<_, i64>(3)?)))
            .optional()?
        else {
            return Ok(None);
        };
        // The lowest rowid of this batch: `batch` rows down from `hi`.
        let from: i64 = tx
            .query_row(
                "SELECT rowid FROM messages WHERE rowid BETWEEN ?1 AND ?2 ORDER BY rowid DESC LIMIT 1 OFFSET ?3",
                params![lo, hi, batch.saturating_sub(1)],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(lo);
        Ok(Some(Batch { from, hi, lo, total, done }))
    }

    /// Records `batch` worked: the progress, or `None` when the backlog is done.
    pub(crate) fn done(self, tx: &Transaction<'_>, batch: &Batch) -> Result<Option<IndexProgress>> {
        let table = self.table();
        if batch.from <= batch.lo {
            tx.execute(&format!("DELETE FROM {table}"), [])?;
            return Ok(None);
        }
        let rows: i64 = tx.query_row(
            "SELECT count(*) FROM messages WHERE rowid BETWEEN ?1 AND ?2",
            params![batch.from, batch.hi],
            |r| r.get(0),
        )?;
        let done = (batch.done + rows).min(batch.total);
        tx.execute(&format!("UPDATE {table} SET hi = ?1, done = ?2"), params![batch.from - 1, done])?;
        Ok(Some(IndexProgress::from_rows(done, batch.total)))
    }
}
