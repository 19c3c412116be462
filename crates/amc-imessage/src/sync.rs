//! One pass over chat.db: every row after the checkpoint, stored with the checkpoint.
//!
//! Each batch of rows is stored, every chat of it, in one transaction with the checkpoint
//! (the highest ROWID read). A crash before it re-reads the same rows next time, and
//! ingest is idempotent on the message guid: nothing is lost, nothing doubled.

use std::collections::BTreeMap;
use std::ops::Not;
use std::sync::{Arc, Mutex};

use amc_core::model::{ChannelSpec, ReactionChange};
use amc_core::model::{IncomingMessage, Source};
use amc_core::service::Amc;

use crate::SourceError;
use crate::chatdb::ChatDb;
use crate::convert::{GROUP_STYLE, UNKNOWN_SENDER, attachment_of, channel_of, is_reaction, message_of, reaction_of};

/// The checkpoint's key in AMC's source state.
pub const CHECKPOINT_KEY: &str = "chatdb_rowid";

/// Where reading chat.db stands, stored as `ROWID:guid:rows`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// The last ROWID read.
    pub rowid: i64,
    /// That row's guid, when known: a rebuilt chat.db whose ROWIDs now mean other rows
    /// no longer has it there.
    pub guid: Option<String>,
    /// How many rows chat.db had at or below `rowid` when they were read, when known: a
    /// chat.db rebuilt in place can write rows below the checkpoint while the
    /// checkpoint's own row stays where it was, and only the count tells.
    pub rows: Option<i64>,
}

/// The guid a resync's checkpoint carries: read everything again, as a rebuild, not as a
/// first import (messages past the late horizon stay read).
const RESYNC: &str = "~resync";

impl Checkpoint {
    /// The checkpoint that reads chat.db again from its first row after a rebuild.
    pub fn resync() -> Self {
        Self { rowid: 0, guid: Some(RESYNC.to_owned()), rows: None }
    }

    /// Whether this is not the first import: messages past the late horizon are news
    /// to no one.
    pub(crate) fn imported_before(&self) -> bool {
        self.rowid > 0 || self.guid.as_deref() == Some(RESYNC)
    }

    /// As stored in AMC's source state.
    pub fn encode(&self) -> String {
        let guid = self.guid.as_deref().unwrap_or("");
        match self.rows {
            Some(rows) => format!("{}:{guid}:{rows}", self.rowid),
            None => format!("{}:{guid}", self.rowid),
        }
    }

    /// Reads a checkpoint as [`Checkpoint::encode`] writes it, or in an older format.
    pub fn decode(value: &str) -> Self {
        let (rowid, rest) = value.split_once(':').unwrap_or((value, ""));
        // Older checkpoints are `ROWID:guid`; message guids hold no colon.
        let (guid, rows) = match rest.rsplit_once(':') {
            Some((g, n)) if n.parse::<i64>().is_ok() => (g, n.parse().ok()),
            _ => (rest, None),
        };
        Self {
            rowid: rowid.parse().unwrap_or(0),
            guid: Some(guid.to_owned()).filter(|g| !g.is_empty()),
            rows: rows.filter(|_| rowid.parse::<i64>().is_ok()),
        }
    }
}

/// The stored checkpoint.
pub async fn read_checkpoint(amc: &Amc) -> Result<Checkpoint, SourceError> {
    Ok(Checkpoint::decode(&amc.checkpoint(Source::Imessage, CHECKPOINT_KEY).await?.unwrap_or_default()))
}

/// Rows read per batch.
const BATCH: u32 = 20_000;

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Rows read.
    pub rows: usize,
    /// Messages stored for the first time.
    pub inserted: usize,
    /// Stored messages that changed.
    pub updated: usize,
    /// The checkpoint after the pass.
    pub checkpoint: i64,
    /// New messages that arrived late, stored but not surfaced as unread.
    pub late: usize,
}

/// A chat.db shared between the async code and the blocking reads.
pub type SharedChatDb = Arc<Mutex<ChatDb>>;

/// The chats and messages of one read, ready to store.
struct Batch {
    last: Option<i64>,
    rows: usize,
    by_channel: Vec<(ChannelSpec, Vec<(i64, IncomingMessage)>)>,
    /// Tapbacks, in ROWID order.
    reactions: Vec<ReactionChange>,
    /// The guid of the last row read.
    last_guid: String,
}

impl Batch {
    /// The rows at or below `rowid` (a rescan leaves newer rows to the regular read).
    fn up_to(self, rowid: i64) -> Vec<(ChannelSpec, Vec<IncomingMessage>)> {
        self.by_channel
            .into_iter()
            .map(|(c, msgs)| (c, msgs.into_iter().filter(|(r, _)| *r <= rowid).map(|(_, m)| m).collect::<Vec<_>>()))
            .filter(|(_, msgs)| !msgs.is_empty())
            .collect()
    }
}

/// Whether a row can be read now, without waiting for the row that puts it in its chat:
/// it is in one, or it is a tapback (which names its message, not a chat).
fn waits_for_nothing(m: &imessage_database::tables::messages::Message) -> bool {
    m.chat_id.is_some() || is_reaction(m)
}

/// Reads rows after `checkpoint` (on a blocking thread: chat.db may be busy for a while),
/// each turned into AMC's as it is read: a batch's decoded rows are never all held at once.
async fn read_batch(db: &SharedChatDb, checkpoint: i64) -> Result<Batch, SourceError> {
    let db = db.clone();
    tokio::task::spawn_blocking(move || {
        let mut db = db.lock().unwrap_or_else(|p| p.into_inner());
        let mut batch = Converter::default();
        // The rows up to the last one that waits for nothing, and the first row after it.
        let (mut ready, mut tail) = (None, None);
        db.each_message_after(checkpoint, BATCH, |m| {
            batch.add(&db, &m)?;
            if waits_for_nothing(&m) {
                ready.clone_from(&batch.read);
                tail = None;
            } else if tail.is_none() {
                tail = Some(m.rowid);
            }
            Ok(())
        })?;
        let upto = if db.holds_tail_from(tail) { ready } else { batch.read.clone() };
        batch.finish(&db, upto)
    })
    .await
    .map_err(|e| SourceError::Read(e.to_string()))?
}

/// Turns rows of chat.db into AMC's messages and reactions, grouped by chat.
fn convert(db: &ChatDb, rows: &[imessage_database::tables::messages::Message]) -> Result<Batch, SourceError> {
    let mut batch = Converter::default();
    for m in rows {
        batch.add(db, m)?;
    }
    let upto = batch.read.clone();
    batch.finish(db, upto)
}

/// How far a read got: rows read, and the last one's ROWID and guid.
struct Read {
    rows: usize,
    last: i64,
    guid: String,
}

/// Copied at every row: `clone_from` keeps the guid's buffer rather than allocate one.
impl Clone for Read {
    fn clone(&self) -> Self {
        Self { rows: self.rows, last: self.last, guid: self.guid.clone() }
    }

    fn clone_from(&mut self, source: &Self) {
        (self.rows, self.last) = (source.rows, source.last);
        self.guid.clone_from(&source.guid);
    }
}

/// Whether a row holds nothing at all: no text, no attributed body (nothing decoded from
/// one), no app payload and no files. Such a row is not a message (an unsend empties one
/// that was, and is still applied).
fn is_empty_row(m: &imessage_database::tables::messages::Message) -> bool {
    m.text.as_deref().is_none_or(str::is_empty)
        && m.components.is_empty()
        && m.balloon_bundle_id.is_none()
        && m.num_attachments == 0
}

/// Rows of chat.db turned into AMC's messages and reactions, one at a time.
#[derive(Default)]
struct Converter {
    /// chat.db's handles, read at the first row, while the rows' statement is open: in
    /// the rows' own snapshot, so every handle a row names is there (and a read that
    /// finds no row reads none).
    handles: Option<std::collections::HashMap<i32, String>>,
    by_chat: BTreeMap<i32, Vec<(i64, IncomingMessage)>>,
    /// Tapbacks, in ROWID order.
    reactions: Vec<ReactionChange>,
    read: Option<Read>,
}

impl Converter {
    fn add(&mut self, db: &ChatDb, m: &imessage_database::tables::messages::Message) -> Result<(), SourceError> {
        let rowid = i64::from(m.rowid);
        match &mut self.read {
            Some(read) => {
                (read.rows, read.last) = (read.rows + 1, rowid);
                read.guid.clone_from(&m.guid);
            }
            none => *none = Some(Read { rows: 1, last: rowid, guid: m.guid.clone() }),
        }
        let handles = match &mut self.handles {
            Some(known) => known,
            none => none.insert(db.handles()?),
        };
        let handle = m.handle_id.and_then(|h| handles.get(&h)).map(String::as_str);
        if is_reaction(m) {
            self.reactions.extend(reaction_of(m, handle));
            return Ok(());
        }
        // Renames, member changes and other group events are not messages, but their chat
        // is stored again: its name follows from chat.db itself, read after the rows.
        if m.item_type != 0 {
            if let Some(chat_id) = m.chat_id {
                self.by_chat.entry(chat_id).or_default();
            }
            return Ok(());
        }
        let Some(chat_id) = m.chat_id else { return Ok(()) };
        let mut message = message_of(m, handle);
        if let Some(h) = handle {
            message.sender.display_name = db.contacts().name_for(h).map(str::to_owned);
        }
        if m.num_attachments > 0 {
            message.attachments = db.attachments_of(m.rowid)?.iter().map(attachment_of).collect();
        }
        if is_empty_row(m) && !message.unsent {
            return Ok(());
        }
        self.by_chat.entry(chat_id).or_default().push((rowid, message));
        Ok(())
    }

    /// The batch of the rows up to `upto` (none when `None`). Rows held back after it
    /// gave nothing to it: none of them is in a chat or a tapback. The chats are read
    /// after the rows, so that every chat a row is joined to is among them.
    fn finish(self, db: &ChatDb, upto: Option<Read>) -> Result<Batch, SourceError> {
        let Some(upto) = upto else {
            return Ok(Batch {
                last: None,
                rows: 0,
                by_channel: Vec::new(),
                reactions: Vec::new(),
                last_guid: String::new(),
            });
        };
        let chats = db.chats()?;
        let Self { by_chat, reactions, .. } = self;
        let by_channel = by_chat
            .into_iter()
            .filter_map(|(id, mut msgs)| {
                let chat = chats.get(&id)?;
                // In a one-to-one chat, whatever Messages left unnamed came from the other
                // side: its handle is the chat's (a short code's numbers are codes).
                if chat.style != GROUP_STYLE && !chat.identifier.is_empty() {
                    for (_, m) in msgs.iter_mut().filter(|(_, m)| !m.sender.is_self && m.sender.id == UNKNOWN_SENDER) {
                        m.sender.id.clone_from(&chat.identifier);
                        m.sender.display_name = db.contacts().name_for(&chat.identifier).map(str::to_owned);
                    }
                }
                Some((channel_of(chat, db.contacts()), msgs))
            })
            .collect();
        Ok(Batch { last: Some(upto.last), rows: upto.rows, by_channel, reactions, last_guid: upto.guid })
    }
}

/// Reads the rows at these ROWIDs again and stores what differs: a row the sweep or the
/// look at the newest rows found missing, edited, unsent or newly in its chat. A new
/// message sent longer ago than the late horizon is stored as not news. Only after the
/// first import (the callers look first): a row found then is a late one, not history.
pub(crate) async fn store_rows(amc: &Amc, db: &SharedChatDb, rowids: Vec<i64>) -> Result<SyncReport, SourceError> {
    let mut report = SyncReport::default();
    if rowids.is_empty() {
        return Ok(report);
    }
    let d = db.clone();
    let (mut batch, horizon) = tokio::task::spawn_blocking(move || {
        let db = d.lock().unwrap_or_else(|p| p.into_inner());
        Ok::<_, SourceError>((convert(&db, &db.messages_at(&rowids)?)?, db.late_horizon()))
    })
    .await
    .map_err(|e| SourceError::Read(e.to_string()))??;
    let read = Placed::all(batch.by_channel.iter().flat_map(|(c, m)| m.iter().map(move |(_, m)| (c, m))));
    rekey_renamed(amc, db, read).await?;
    // The reactions of every message read, and of every message a tapback read names, are
    // made what chat.db's tapback rows say now: a tapback read before its message was
    // stored (one only a sweep found) had nothing to apply to then.
    let mut targets: Vec<String> =
        batch.by_channel.iter().flat_map(|(_, m)| m.iter().map(|(_, m)| m.platform_id.clone())).collect();
    targets.extend(std::mem::take(&mut batch.reactions).into_iter().map(|r| r.target_platform_id));
    targets.sort_unstable();
    targets.dedup();
    store_batch(amc, &mut batch, None, horizon, &mut report).await?;
    report.updated += reset_reactions(amc, db, targets).await?;
    Ok(report)
}

/// A message read, where it was and who sent it when: what finds a message stored under
/// another guid.
struct Placed {
    channel: String,
    platform_id: String,
    sent_at: amc_core::time::Millis,
    sender: amc_core::model::SenderInfo,
}

impl Placed {
    fn all<'a>(read: impl Iterator<Item = (&'a ChannelSpec, &'a IncomingMessage)>) -> Vec<Self> {
        read.map(|(c, m)| Self {
            channel: c.platform_id.clone(),
            platform_id: m.platform_id.clone(),
            sent_at: m.sent_at,
            sender: m.sender.clone(),
        })
        .collect()
    }
}

/// Messages whose row Messages gave another guid: AMC's copy is re-keyed to the new guid
/// rather than stored a second time. A message read here that AMC does not hold is that
/// message when AMC holds one in its chat, from its sender, sent at the same time, under
/// a guid chat.db no longer has.
async fn rekey_renamed(amc: &Amc, db: &SharedChatDb, read: Vec<Placed>) -> Result<(), SourceError> {
    let held = amc.held(Source::Imessage, read.iter().map(|m| m.platform_id.clone()).collect()).await?;
    for m in read.into_iter().filter(|m| !held.contains_key(&m.platform_id)) {
        let there = amc.stored_at(Source::Imessage, m.channel, m.sent_at, m.sender).await?;
        for old in there.into_iter().filter(|old| *old != m.platform_id) {
            let (d, asked) = (db.clone(), old.clone());
            let gone =
                tokio::task::spawn_blocking(move || d.lock().unwrap_or_else(|p| p.into_inner()).has_guid(&asked))
                    .await
                    .map_err(|e| SourceError::Read(e.to_string()))??
                    .not();
            if gone && amc.rekey(Source::Imessage, old, m.platform_id.clone()).await? {
                break;
            }
        }
    }
    Ok(())
}

/// Makes the reactions of these messages what chat.db's tapback rows naming them say, in
/// ROWID order from none. Returns how many messages' reactions changed.
async fn reset_reactions(amc: &Amc, db: &SharedChatDb, targets: Vec<String>) -> Result<usize, SourceError> {
    if targets.is_empty() {
        return Ok(0);
    }
    let d = db.clone();
    let changes = tokio::task::spawn_blocking(move || {
        let db = d.lock().unwrap_or_else(|p| p.into_inner());
        // A message of more parts than the tapbacks asked for keeps its reactions as read.
        let mut fits = Vec::with_capacity(targets.len());
        for target in targets {
            if db.parts_of(&target)? <= crate::chatdb::TAPBACK_PARTS as i64 {
                fits.push(target);
            }
        }
        let targets = fits;
        let rows = db.messages_at(&db.tapbacks_on(&targets)?)?;
        let handles = if rows.is_empty() { Default::default() } else { db.handles()? };
        let mut by_target: BTreeMap<String, Vec<ReactionChange>> =
            targets.into_iter().map(|t| (t, Vec::new())).collect();
        for m in &rows {
            let handle = m.handle_id.and_then(|h| handles.get(&h)).map(String::as_str);
            if let Some(change) = reaction_of(m, handle)
                && let Some(changes) = by_target.get_mut(&change.target_platform_id)
            {
                changes.push(change);
            }
        }
        Ok::<_, SourceError>(by_target.into_iter().collect::<Vec<_>>())
    })
    .await
    .map_err(|e| SourceError::Read(e.to_string()))??;
    Ok(amc.reset_reactions(Source::Imessage, changes).await?)
}

/// Stores these chats again as they are now (a name or its members changed with no row
/// that says so): the channel's name follows.
pub(crate) async fn store_chats(amc: &Amc, db: &SharedChatDb, chat_ids: Vec<i32>) -> Result<(), SourceError> {
    if chat_ids.is_empty() {
        return Ok(());
    }
    let d = db.clone();
    let specs = tokio::task::spawn_blocking(move || {
        let db = d.lock().unwrap_or_else(|p| p.into_inner());
        let chats = db.chats()?;
        Ok::<_, SourceError>(
            chat_ids
                .iter()
                .filter_map(|id| chats.get(id))
                .map(|c| (channel_of(c, db.contacts()), Vec::new()))
                .collect::<Vec<_>>(),
        )
    })
    .await
    .map_err(|e| SourceError::Read(e.to_string()))??;
    amc.ingest_many(Source::Imessage, specs, None).await?;
    Ok(())
}

/// Tells AMC who reads each conversation it already stores, as chat.db says now: done on
/// each opening of chat.db, for channels stored before their participants were kept (and
/// members who came or went with no row saying so; the sweep follows those later).
pub async fn store_readers(amc: &Amc, db: &SharedChatDb) -> Result<(), SourceError> {
    let d = db.clone();
    let (readers, own) = tokio::task::spawn_blocking(move || {
        let db = d.lock().unwrap_or_else(|p| p.into_inner());
        let readers = db
            .chats()?
            .values()
            .filter_map(|c| {
                let spec = channel_of(c, db.contacts());
                Some((spec.platform_id, spec.readers?))
            })
            .collect::<Vec<_>>();
        Ok::<_, SourceError>((readers, db.own_addresses()?))
    })
    .await
    .map_err(|e| SourceError::Read(e.to_string()))??;
    amc.set_channel_readers(Source::Imessage, readers).await?;
    // The person's own addresses: a conversation with one of them alone is where AMC may
    // ask them for approvals.
    amc.set_own_addresses(Source::Imessage, own).await?;
    Ok(())
}

/// How many of the newest rows a rescan reads again.
pub const RESCAN_ROWS: i64 = 2_000;

/// Reads the newest rows again, before the checkpoint: Messages records an edit, an
/// unsend or a late-synced change in the row it belongs to, so the ROWID does not move
/// and only a second look finds it. Stored messages that changed are updated.
pub async fn rescan_recent(amc: &Amc, db: &SharedChatDb) -> Result<SyncReport, SourceError> {
    let checkpoint = read_checkpoint(amc).await?.rowid;
    let mut report = SyncReport { checkpoint, ..SyncReport::default() };
    let mut from = (checkpoint - RESCAN_ROWS).max(0);
    while from < checkpoint {
        let mut batch = read_batch(db, from).await?;
        let Some(last) = batch.last else { break };
        report.rows += batch.rows;
        let reactions = std::mem::take(&mut batch.reactions);
        let kept = batch.up_to(checkpoint);
        // A row Messages gave another guid (while AMC was stopped, say) keeps its message.
        rekey_renamed(amc, db, Placed::all(kept.iter().flat_map(|(c, m)| m.iter().map(move |m| (c, m))))).await?;
        for stored in amc.ingest_many(Source::Imessage, kept, None).await? {
            report.inserted += stored.inserted.len();
            report.updated += stored.updated.len();
        }
        report.updated += amc.apply_reactions(Source::Imessage, reactions).await?;
        from = last;
    }
    Ok(report)
}

/// Reads every row after the stored checkpoint and stores it.
pub async fn sync_once(amc: &Amc, db: &SharedChatDb) -> Result<SyncReport, SourceError> {
    let stored = read_checkpoint(amc).await?;
    let checkpoint = stored.rowid;
    // Rows at or below the checkpoint: counted once for a checkpoint that lacks it, then
    // carried forward by the rows each batch reads.
    let rows_below = match stored.rows {
        Some(n) => n,
        None => {
            let db = db.clone();
            tokio::task::spawn_blocking(move || db.lock().unwrap_or_else(|p| p.into_inner()).rows_up_to(checkpoint))
                .await
                .map_err(|e| SourceError::Read(e.to_string()))??
        }
    };
    let mut report = SyncReport { checkpoint, ..SyncReport::default() };
    // A first import leaves its search indexing to the end, in bulk.
    let first = !stored.imported_before();
    if first {
        amc.defer_search_index().await?;
    }
    let read = read_all(amc, db, &stored, rows_below, &mut report).await;
    if first {
        amc.resume_search_index().await?;
    }
    read?;
    // The person's first message from an address AMC did not know yet (a note to
    // themselves, say, sent as Setup asks) makes their own conversation known at once, not
    // at the next opening of chat.db.
    if report.rows > 0 {
        note_own_addresses(amc, db, checkpoint).await?;
    }
    Ok(report)
}

/// Adds the addresses the person sent from in the rows after `rowid` to their own
/// addresses, when one is new.
async fn note_own_addresses(amc: &Amc, db: &SharedChatDb, rowid: i64) -> Result<(), SourceError> {
    let d = db.clone();
    let found =
        tokio::task::spawn_blocking(move || d.lock().unwrap_or_else(|p| p.into_inner()).own_addresses_after(rowid))
            .await
            .map_err(|e| SourceError::Read(e.to_string()))??;
    if found.is_empty() {
        return Ok(());
    }
    let known = amc.own_addresses(Source::Imessage).await?;
    if found.iter().all(|a| known.contains(a)) {
        return Ok(());
    }
    amc.set_own_addresses(Source::Imessage, known.into_iter().chain(found).collect()).await?;
    Ok(())
}

/// Reads and stores every row after the checkpoint.
async fn read_all(
    amc: &Amc,
    db: &SharedChatDb,
    stored: &Checkpoint,
    mut rows_below: i64,
    report: &mut SyncReport,
) -> Result<(), SourceError> {
    let horizon = db.lock().unwrap_or_else(|p| p.into_inner()).late_horizon();
    // The next batch is read from chat.db while this one is written to AMC's store.
    let mut next = read_ahead(db, stored.rowid);
    loop {
        let mut batch = (&mut next).await.map_err(|e| SourceError::Read(e.to_string()))??;
        let Some(last) = batch.last else { break };
        next = read_ahead(db, last);
        let ahead = next.abort_handle();
        rows_below += batch.rows as i64;
        let mark = Checkpoint { rowid: last, guid: Some(batch.last_guid.clone()), rows: Some(rows_below) };
        let late_after = if stored.imported_before() { horizon } else { None };
        let result = store_batch(amc, &mut batch, Some(&mark), late_after, report).await;
        if result.is_err() {
            ahead.abort();
        }
        result?;
    }
    Ok(())
}

/// Stores one batch with its checkpoint (if any), then its reactions. Rows sent longer ago
/// than `late_after` arrived late (after the first import), and are marked read.
async fn store_batch(
    amc: &Amc,
    batch: &mut Batch,
    mark: Option<&Checkpoint>,
    late_after: Option<std::time::Duration>,
    report: &mut SyncReport,
) -> Result<(), SourceError> {
    {
        report.rows += batch.rows;
        // All chats of the batch and the checkpoint in one transaction; then the
        // reactions, whose targets are stored by now (a crash in between is repaired by
        // the next rescan, which applies the newest rows' reactions again).
        let reactions = std::mem::take(&mut batch.reactions);
        let last = mark.map(|m| m.rowid);
        let mark = mark.map(|m| (CHECKPOINT_KEY.to_owned(), m.encode()));
        let late = late_after.map(|horizon| late_ids(batch, horizon)).unwrap_or_default();
        let channels = std::mem::take(&mut batch.by_channel);
        let all = channels.into_iter().map(|(c, msgs)| (c, msgs.into_iter().map(|(_, m)| m).collect())).collect();
        for stored in amc.ingest_many(Source::Imessage, all, mark).await? {
            report.inserted += stored.inserted.len();
            report.updated += stored.updated.len();
            report.late += late.iter().filter(|p| stored.inserted_platform_ids.contains(p)).count();
            let ids: Vec<String> = stored
                .inserted
                .iter()
                .zip(&stored.inserted_platform_ids)
                .filter(|(_, p)| late.contains(p))
                .map(|(id, _)| id.clone())
                .collect();
            amc.mark_late(ids).await?;
        }
        report.updated += amc.apply_reactions(Source::Imessage, reactions).await?;
        if let Some(last) = last {
            report.checkpoint = last;
        }
    }
    Ok(())
}

/// The platform ids of messages in `batch` sent longer than `horizon` ago: after the
/// first import, these arrived late (synced from iCloud) and are not news.
fn late_ids(batch: &Batch, horizon: std::time::Duration) -> Vec<String> {
    let cutoff = amc_core::time::now_ms() - horizon.as_millis() as i64;
    batch
        .by_channel
        .iter()
        .flat_map(|(_, msgs)| msgs.iter())
        .filter(|(_, m)| m.sent_at < cutoff && !m.sender.is_self)
        .map(|(_, m)| m.platform_id.clone())
        .collect()
}

fn read_ahead(db: &SharedChatDb, after: i64) -> tokio::task::JoinHandle<Result<Batch, SourceError>> {
    let db = db.clone();
    tokio::spawn(async move { read_batch(&db, after).await })
}

#[cfg(test)]
mod tests {
    use super::{BATCH, Checkpoint, Converter};
    use crate::chatdb::ChatDb;
    use crate::fixture::{ChatDbWriter, FixtureMessage};

    /// A row is turned into AMC's with the chat and handle it names even when Messages
    /// wrote them after the batch was set up: the chats are read after the rows, the
    /// handles with them.
    #[test]
    fn a_chat_and_handle_written_while_a_batch_is_read_are_found() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("chat.db");
        let w = ChatDbWriter::create(&path).expect("chat.db");
        let db = ChatDb::open(&path).expect("open");
        let mut batch = Converter::default();
        let ada = w.add_handle("+15551234567").expect("handle");
        let chat = w.add_chat("any;-;+15551234567", 45, None, &[ada]).expect("chat");
        let hello = FixtureMessage {
            guid: "G1".into(),
            text: Some("hello".into()),
            handle_id: ada,
            sent_at_ms: 1_777_000_000_000,
            ..Default::default()
        };
        w.add_message(chat, &hello).expect("message");
        db.each_message_after(0, BATCH, |m| batch.add(&db, &m)).expect("read");
        let upto = batch.read.clone();
        let read = batch.finish(&db, upto).expect("batch");
        let [(channel, messages)] = &read.by_channel[..] else { panic!("one channel: {:?}", read.by_channel.len()) };
        assert_eq!(channel.platform_id, "any;-;+15551234567");
        let senders: Vec<&str> = messages.iter().map(|(_, m)| m.sender.id.as_str()).collect();
        assert_eq!(senders, ["+15551234567"]);
    }

    #[test]
    fn checkpoints_of_every_format_read_back() {
        let full = Checkpoint { rowid: 40, guid: Some("A-B".into()), rows: Some(20) };
        assert_eq!(Checkpoint::decode(&full.encode()), full);
        assert_eq!(Checkpoint::decode("40:A-B"), Checkpoint { rows: None, ..full.clone() });
        assert_eq!(Checkpoint::decode("40"), Checkpoint { rowid: 40, ..Checkpoint::default() });
        assert_eq!(Checkpoint::decode(""), Checkpoint::default());
        assert_eq!(Checkpoint::decode("0"), Checkpoint::default());
    }
}
