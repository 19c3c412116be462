//! Anti-entropy: what AMC holds is made to match chat.db, whatever Messages did to it.
//!
//! Reading after a checkpoint finds new rows; Messages also changes rows where they lie
//! (an edit, an unsend, a chat join written late), rebuilds the file in place with other
//! ROWIDs, or syncs old rows in below the checkpoint. Two looks compare chat.db's rows
//! ([`RowState`]: guid, edit and unsend times, chat join) without decoding a body:
//!
//! - [`Recent`], on every change the watcher sees: the newest [`RECENT_ROWS`] rows against
//!   how they were at the last look. Edits (allowed for 15 minutes), unsends (2 minutes)
//!   and late joins of new messages show there at once.
//! - the sweep ([`Sweeper`]), in the background after chat.db changed: the whole file,
//!   [`SWEEP_CHUNK`] rows at a time, against what AMC stored. A row missing from AMC, or
//!   stored with another edit time or not yet unsent, is read again and stored. A chunk
//!   whose rows are as the last sweep left them is not compared again.
//!
//! Either way the rows that differ are decoded and stored through ingest, which is
//! idempotent on the guid and never lets an older version replace a newer one.

use std::collections::HashMap;

use amc_core::model::{Held, Source};
use amc_core::service::Amc;

use crate::SourceError;
use crate::chatdb::RowState;
use crate::convert::unix_ms;
use crate::sync::{SharedChatDb, SyncReport, read_checkpoint, store_chats, store_rows};

/// Rows the sweep compares at a time.
pub const SWEEP_CHUNK: u32 = 1_000;

/// How many of the newest rows each change is compared against the last look.
pub const RECENT_ROWS: i64 = 2_000;

/// What a sweep (or a part of one) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Rows of chat.db compared.
    pub rows: usize,
    /// Rows in chunks as they were at the last sweep, not compared with AMC's store again.
    pub unchanged: usize,
    /// Rows read again (decoded) because they differed.
    pub decoded: usize,
    /// Messages stored that AMC lacked.
    pub inserted: usize,
    /// Stored messages changed (an edit or an unsend applied).
    pub updated: usize,
    /// Of those inserted, how many were older than the late horizon (not news).
    pub late: usize,
}

impl SweepReport {
    fn add(&mut self, stored: &SyncReport) {
        self.inserted += stored.inserted;
        self.updated += stored.updated;
        self.late += stored.late;
    }
}

/// Whether a row is one AMC should hold as it is now and does not: a message in a chat
/// that AMC lacks, or holds with another edit time, or holds not unsent when chat.db
/// records an unsend. A part of an agent's send, and a message unsent for good, are as
/// they should be.
fn differs(row: &RowState, held: Option<&Held>) -> bool {
    if !row.joined || !row.may_be_message {
        return false;
    }
    match held {
        None => true,
        Some(Held::Part | Held::Message { unsent: true, .. }) => false,
        Some(Held::Message { edited_at, .. }) => row.date_retracted != 0 || unix_ms(row.date_edited) != *edited_at,
    }
}

/// The sweep's memory of chunks found as AMC holds them: by the ROWID a chunk starts
/// after, its last ROWID and a digest of its rows' states. A chunk whose rows are as they
/// were then needs no look at AMC's store (AMC only adds to what it holds), so a sweep
/// of a file that changed in a few places costs one read of chat.db's rows.
#[derive(Debug, Default)]
pub struct Sweeper {
    known: HashMap<i64, (i64, u64)>,
}

impl Sweeper {
    /// Compares the rows after `after` (up to [`SWEEP_CHUNK`]) with what AMC holds and
    /// stores what differs. Returns the last ROWID compared, or `None` at the end of chat.db.
    pub async fn chunk(
        &mut self,
        amc: &Amc,
        db: &SharedChatDb,
        after: i64,
        report: &mut SweepReport,
    ) -> Result<Option<i64>, SourceError> {
        let d = db.clone();
        let rows = tokio::task::spawn_blocking(move || {
            d.lock().unwrap_or_else(|p| p.into_inner()).row_states_after(after, SWEEP_CHUNK)
        })
        .await
        .map_err(|e| SourceError::Read(e.to_string()))??;
        let Some(last) = rows.last().map(|r| r.rowid) else { return Ok(None) };
        report.rows += rows.len();
        let digest = digest(&rows);
        if self.known.get(&after) == Some(&(last, digest)) {
            report.unchanged += rows.len();
            return Ok(Some(last));
        }
        let asked: Vec<String> = rows.iter().filter(|r| r.joined && r.may_be_message).map(|r| r.guid.clone()).collect();
        let held = amc.held(Source::Imessage, asked).await?;
        let repair: Vec<i64> = rows.iter().filter(|r| differs(r, held.get(&r.guid))).map(|r| r.rowid).collect();
        report.decoded += repair.len();
        let stored = store_rows(amc, db, repair).await?;
        report.add(&stored);
        self.known.insert(after, (last, digest));
        Ok(Some(last))
    }

    /// Sweeps the whole of chat.db at once (tests and benchmarks; the watcher sweeps a
    /// chunk at a time between its other work). Nothing is swept before the first import
    /// is done.
    pub async fn all(&mut self, amc: &Amc, db: &SharedChatDb) -> Result<SweepReport, SourceError> {
        let mut report = SweepReport::default();
        if !read_checkpoint(amc).await?.imported_before() {
            return Ok(report);
        }
        let mut after = 0;
        while let Some(last) = self.chunk(amc, db, after, &mut report).await? {
            after = last;
        }
        Ok(report)
    }
}

/// A digest of rows' states (in ROWID order).
fn digest(rows: &[RowState]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for r in rows {
        (r.rowid, &r.guid, r.date_edited, r.date_retracted, r.joined, r.may_be_message).hash(&mut h);
    }
    h.finish()
}

/// Sweeps the whole of chat.db once, comparing every chunk with AMC's store.
pub async fn sweep(amc: &Amc, db: &SharedChatDb) -> Result<SweepReport, SourceError> {
    Sweeper::default().all(amc, db).await
}

/// The newest rows as the last look saw them.
#[derive(Debug, Default)]
pub struct Recent {
    seen: HashMap<i64, RowState>,
    /// The highest ROWID the last look saw (`None` before the first look).
    seen_up_to: Option<i64>,
    /// Each chat's name and number of members at the last look.
    chats: HashMap<i32, (String, i64)>,
}

impl Recent {
    /// Compares the newest [`RECENT_ROWS`] rows with the last look and stores the rows that
    /// changed since. A row new since the last look was stored by the read after the
    /// checkpoint, maybe before an edit or an unsend that came before this look: a new row
    /// with an edit or unsend time is read again too. (The first look only remembers: the
    /// sweep that follows opening chat.db compares every row.) A chat whose name or
    /// members changed since is stored again: Messages may write a rename's row and the
    /// chat's new name in separate commits.
    pub async fn look(&mut self, amc: &Amc, db: &SharedChatDb) -> Result<SweepReport, SourceError> {
        let d = db.clone();
        let (rows, chats) = tokio::task::spawn_blocking(move || {
            let db = d.lock().unwrap_or_else(|p| p.into_inner());
            Ok::<_, SourceError>((
                db.row_states_after(db.max_rowid()? - RECENT_ROWS, RECENT_ROWS as u32)?,
                db.chat_states()?,
            ))
        })
        .await
        .map_err(|e| SourceError::Read(e.to_string()))??;
        let renamed: Vec<i32> = chats
            .iter()
            .filter(|(id, now)| self.chats.get(id).is_some_and(|was| was != *now))
            .map(|(id, _)| *id)
            .collect();
        let changed_since = |r: &RowState| match (self.seen.get(&r.rowid), self.seen_up_to) {
            (Some(before), _) => before != r,
            (None, Some(up_to)) => r.rowid > up_to && (r.date_edited != 0 || r.date_retracted != 0),
            (None, None) => false,
        };
        let changed: Vec<i64> =
            rows.iter().filter(|r| r.joined && r.may_be_message && changed_since(r)).map(|r| r.rowid).collect();
        let mut report = SweepReport { rows: rows.len(), decoded: changed.len(), ..SweepReport::default() };
        // Remembered once stored: a look that fails finds the same changes next time.
        if (!changed.is_empty() || !renamed.is_empty()) && read_checkpoint(amc).await?.imported_before() {
            report.add(&store_rows(amc, db, changed).await?);
            store_chats(amc, db, renamed).await?;
        }
        self.chats = chats;
        self.seen_up_to = Some(rows.last().map_or(self.seen_up_to.unwrap_or(0), |r| r.rowid));
        self.seen = rows.into_iter().map(|r| (r.rowid, r)).collect();
        Ok(report)
    }
}
