//! Full-text search of messages (`messages_fts`, kept by the triggers of migration 0009).

use rusqlite::params;

use super::Store;
use super::channels::{VISIBLE, visible_to};
use super::messages::{ENVELOPE_COLS, envelope_from_row, load_attachments};
use crate::error::Result;
use crate::model::{Envelope, Source};
use crate::time::Millis;

/// Up to how many matches a search is ranked by bm25; beyond, the newest come first.
pub const RANK_UP_TO: u32 = 5_000;

/// A search, its FTS5 expression already built from the agent's words (never the agent's
/// text as FTS syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// The FTS5 `MATCH` expression.
    pub matching: String,
    /// Only this source.
    pub source: Option<Source>,
    /// Only this channel.
    pub channel_id: Option<String>,
    /// Only messages whose sender's id or name is this (case-insensitive).
    pub sender: Option<String>,
    /// Only messages sent before this time.
    pub before: Option<Millis>,
    /// Only messages sent at or after this time.
    pub after: Option<Millis>,
    /// How many to return.
    pub limit: u32,
    /// How many to skip (the cursor).
    pub offset: u32,
}

/// A message that matched, with its excerpt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// The message.
    pub message: Envelope,
    /// A short excerpt around the match, the matched words in `[` `]`.
    pub excerpt: String,
}

impl Store {
    /// Messages matching `q` that `agent` may see (`None`: the person, who sees every
    /// approved channel), best first: bm25, then the newest; the newest first when more
    /// than [`RANK_UP_TO`] messages match.
    pub fn search(&self, agent: Option<&str>, q: &SearchQuery) -> Result<Vec<SearchHit>> {
        self.read(|tx| {
            // bm25 needs every match scored and sorted: past a few thousand matches (a word
            // in nearly every message) that costs hundreds of milliseconds and ranks nothing
            // useful, so the newest stored come first, read straight off the index.
            let matches: u32 = tx
                .prepare_cached(
                    "SELECT count(*) FROM (SELECT 1 FROM messages_fts WHERE messages_fts MATCH ?1 LIMIT ?2)",
                )?
                .query_row(params![q.matching, RANK_UP_TO + 1], |r| r.get(0))?;
            let order = if matches > RANK_UP_TO {
                "messages_fts.rowid DESC"
            } else {
                "bm25(messages_fts), m.sent_at DESC, m.id DESC"
            };
            let visible = match agent {
                Some(_) => visible_to("?2"),
                None => format!("{VISIBLE} AND ?2 IS NULL"),
            };
            let sql = format!(
                "SELECT {ENVELOPE_COLS}, snippet(messages_fts, 0, '[', ']', '…', 12) \
                 FROM messages_fts JOIN messages m ON m.rowid = messages_fts.rowid \
                 JOIN channels c ON c.id = m.channel_id \
                 WHERE messages_fts MATCH ?1 AND {visible} \
                 AND (?3 IS NULL OR m.source = ?3) AND (?4 IS NULL OR m.channel_id = ?4) \
                 AND (?5 IS NULL OR lower(m.sender_id) = lower(?5) OR lower(m.sender_name) = lower(?5)) \
                 AND (?6 IS NULL OR m.sent_at < ?6) AND (?7 IS NULL OR m.sent_at >= ?7) \
                 ORDER BY {order} LIMIT ?8 OFFSET ?9"
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt
                .query_map(
                    params![
                        q.matching,
                        agent,
                        q.source.map(Source::as_str),
                        q.channel_id,
                        q.sender,
                        q.before,
                        q.after,
                        q.limit,
                        q.offset
                    ],
                    |r| Ok((envelope_from_row(r)?, r.get::<_, String>(16)?)),
                )?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let (mut messages, excerpts): (Vec<Envelope>, Vec<String>) = rows.into_iter().unzip();
            load_attachments(tx, &mut messages)?;
            Ok(messages.into_iter().zip(excerpts).map(|(message, excerpt)| SearchHit { message, excerpt }).collect())
        })
    }
}
