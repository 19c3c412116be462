//! Anti-entropy: what AMC holds is made to match chat.db, whatever Messages did to it.
//!
//! Reading after a checkpoint finds new rows; Messages also changes rows where they lie
//! (an edit, an unsend, a chat join or a chat written late, a guid changed), rebuilds the
//! file in place with other ROWIDs, or syncs old rows in below the checkpoint. One rule:
//! AMC's copy of a message is chat.db's row as it is now. Two looks compare chat.db's rows
//! ([`RowState`]: guid, edit and unsend times, chat, a digest of the content) without
//! decoding a body:
//!
//! - [`Recent`], on every change the watcher sees: the newest [`RECENT_ROWS`] rows against
//!   how they were at the last look. Edits (allowed for 15 minutes), unsends (2 minutes)
//!   and late joins of new messages show there at once.
//! - the sweep ([`Sweeper`]), when the watcher sees a sign of a change elsewhere: the whole
//!   file, a range of [`SWEEP_CHUNK`] ROWIDs at a time, against a digest kept of each range
//!   as AMC's copy last matched it; a range that changed is read again, one never swept is
//!   compared with what AMC stored.
//!
//! Either way the rows that differ are decoded and stored through ingest, which is
//! idempotent on the guid and, for iMessage, stores the row as it is now; a message whose
//! guid changed is re-keyed first, and the messages read again have their reactions set
//! from chat.db's tapback rows.

use std::collections::{HashMap, HashSet};

use amc_core::model::{Held, Source};
use amc_core::service::Amc;

use crate::SourceError;
use crate::chatdb::RowState;
use crate::convert::unix_ms;
use crate::sync::{SharedChatDb, SyncReport, read_checkpoint, store_chats, store_rows};

/// Rows the sweep compares at a time: a range of this many ROWIDs.
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
    /// Chats stored again because their name or members changed.
    pub renamed: usize,
    /// Ranges that could not be repaired (tried again by the next sweep).
    pub failed: usize,
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

/// The key of the sweep's memory in AMC's source state.
const RANGES_KEY: &str = "chatdb_sweep";

/// The range of ROWIDs a ROWID is in: range `k` holds `k * SWEEP_CHUNK + 1` to
/// `(k + 1) * SWEEP_CHUNK`. Rows added or deleted in one range leave the others as
/// they were.
fn range_of(rowid: i64) -> i64 {
    (rowid - 1).div_euclid(i64::from(SWEEP_CHUNK))
}

/// The sweep's memory, kept in AMC's store: for each range of ROWIDs, a digest of its
/// rows ([`RowState`], their content included) as they were when AMC's copy was last
/// made equal to them. A range whose rows digest the same needs no more look; one whose
/// digest changed has every row read again and stored through ingest, which stores what
/// differs (a text changed with no edit time, an edit stamped before the last one, a
/// guid changed, a chat written late); a range never swept is compared with what AMC
/// holds. The memory outlives a restart, so a change made while AMC was not running is
/// found by the first sweep after it.
#[derive(Debug, Default)]
pub struct Sweeper {
    /// `None` until read from the store.
    known: Option<HashMap<i64, u64>>,
    /// The ranges the sweep under way has looked at: what it did not see is gone.
    seen: HashSet<i64>,
    /// Whether `known` changed since it was last kept.
    changed: bool,
}

impl Sweeper {
    /// Compares the rows of the next range of ROWIDs after `after` (a range's end, or 0)
    /// and stores what differs. Returns the range's last ROWID, or `None` at the end of
    /// chat.db, where the sweep's memory is kept.
    pub async fn chunk(
        &mut self,
        amc: &Amc,
        db: &SharedChatDb,
        after: i64,
        report: &mut SweepReport,
    ) -> Result<Option<i64>, SourceError> {
        if self.known.is_none() {
            self.known = Some(load(amc).await?);
        }
        if after == 0 {
            self.seen.clear();
        }
        let d = db.clone();
        let read = tokio::task::spawn_blocking(move || {
            let db = d.lock().unwrap_or_else(|p| p.into_inner());
            let Some(first) = db.first_rowid_after(after)? else { return Ok(None) };
            let range = range_of(first);
            let end = (range + 1) * i64::from(SWEEP_CHUNK);
            Ok::<_, SourceError>(Some((range, end, db.row_states_in(after, end, SWEEP_CHUNK)?)))
        })
        .await
        .map_err(|e| SourceError::Read(e.to_string()))??;
        let Some((range, end, rows)) = read else {
            self.keep(amc).await?;
            return Ok(None);
        };
        report.rows += rows.len();
        self.seen.insert(range);
        let digest = digest(&rows);
        let known = self.known.get_or_insert_default();
        let repair: Vec<i64> = match known.get(&range) {
            Some(was) if *was == digest => {
                report.unchanged += rows.len();
                return Ok(Some(end));
            }
            // Changed since AMC's copy was made equal to it: every row that may be a
            // message or is a tapback is read again.
            Some(_) => rows.iter().filter(|r| r.joined && (r.may_be_message || r.tapback)).map(|r| r.rowid).collect(),
            None => {
                let asked: Vec<String> =
                    rows.iter().filter(|r| r.joined && r.may_be_message).map(|r| r.guid.clone()).collect();
                let held = amc.held(Source::Imessage, asked).await?;
                rows.iter().filter(|r| differs(r, held.get(&r.guid))).map(|r| r.rowid).collect()
            }
        };
        report.decoded += repair.len();
        match store_rows(amc, db, repair).await {
            Ok(stored) => {
                report.add(&stored);
                self.known.get_or_insert_default().insert(range, digest);
                self.changed = true;
            }
            // One range that cannot be stored now stops no other: it stays unremembered,
            // so the next sweep reads it again.
            Err(e) => {
                tracing::warn!(range, error = %e, "a range of chat.db could not be repaired; the next sweep tries it again");
                report.failed += 1;
            }
        }
        Ok(Some(end))
    }

    /// Keeps the memory in AMC's store, less the ranges this sweep did not see (chat.db no
    /// longer has them).
    async fn keep(&mut self, amc: &Amc) -> Result<(), SourceError> {
        let known = self.known.get_or_insert_default();
        let before = known.len();
        known.retain(|range, _| self.seen.contains(range));
        if !self.changed && known.len() == before {
            return Ok(());
        }
        let mut ranges: Vec<(&i64, &u64)> = known.iter().collect();
        ranges.sort_unstable();
        let value: Vec<String> = ranges.iter().map(|(range, digest)| format!("{range}:{digest:016x}")).collect();
        amc.set_checkpoint(Source::Imessage, RANGES_KEY, &value.join(",")).await?;
        self.changed = false;
        Ok(())
    }

    /// Sweeps the whole of chat.db at once (tests and benchmarks; the watcher sweeps a
    /// range at a time between its other work). Nothing is swept before the first import
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

/// The sweep's memory as the last sweep kept it (a value that does not read is no memory:
/// every range is compared with AMC's store again).
async fn load(amc: &Amc) -> Result<HashMap<i64, u64>, SourceError> {
    let value = amc.checkpoint(Source::Imessage, RANGES_KEY).await?.unwrap_or_default();
    Ok(value
        .split(',')
        .filter_map(|entry| {
            let (range, digest) = entry.split_once(':')?;
            Some((range.parse().ok()?, u64::from_str_radix(digest, 16).ok()?))
        })
        .collect())
}

/// A digest of rows' states (in ROWID order), their content included.
fn digest(rows: &[RowState]) -> u64 {
    use std::hash::Hasher;
    let mut h = siphasher::sip::SipHasher13::new_with_keys(0x616d_632d_7377_6565, 0x7020_7261_6e67_6573);
    for r in rows {
        h.write_i64(r.rowid);
        h.write_u64(r.content);
        h.write_u8(u8::from(r.joined) | u8::from(r.may_be_message) << 1 | u8::from(r.tapback) << 2);
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
        let mut report =
            SweepReport { rows: rows.len(), decoded: changed.len(), renamed: renamed.len(), ..SweepReport::default() };
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
