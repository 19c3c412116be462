//! Full-text search of messages: `messages_fts` (unicode61, every message) and
//! `messages_cjk` (trigram, the messages in scripts written without spaces), kept by the
//! triggers of migration 0010, and the backlog of messages stored before the index.

use rusqlite::types::Value;
use rusqlite::{params, params_from_iter};

use super::Store;
use super::channels::{VISIBLE, visible_to};
use super::messages::{ENVELOPE_COLS, ENVELOPE_WIDTH, envelope_from_row, load_attachments};
use crate::backlog::{Backlog, IndexProgress};
use crate::error::Result;
use crate::model::{Envelope, Source};
use crate::time::Millis;

/// Up to how many matches a search ranks; beyond, the newest come first.
pub const RANK_UP_TO: u32 = 5_000;

/// The scripts written without spaces between words (Thai, Lao, Myanmar, Khmer, kana,
/// Bopomofo and Hangul, CJK ideographs), as inclusive ranges. unicode61 makes one token of a
/// whole run of them, so the messages holding any are also indexed by trigram. Migration
/// 0010 spells the same ranges as a GLOB ([`spaceless_glob`]; a test holds them equal).
const SPACELESS: [(char, char); 11] = [
    ('\u{0E00}', '\u{0EFF}'),
    ('\u{1000}', '\u{109F}'),
    ('\u{1780}', '\u{17FF}'),
    ('\u{3040}', '\u{30FF}'),
    ('\u{3100}', '\u{318F}'),
    ('\u{3400}', '\u{4DBF}'),
    ('\u{4E00}', '\u{9FFF}'),
    ('\u{AC00}', '\u{D7AF}'),
    ('\u{F900}', '\u{FAFF}'),
    ('\u{FF66}', '\u{FF9F}'),
    ('\u{20000}', '\u{2FFFF}'),
];

/// Whether `c` belongs to a script written without spaces.
pub fn spaceless(c: char) -> bool {
    SPACELESS.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// The GLOB that finds a text holding a character of [`SPACELESS`].
fn spaceless_glob() -> String {
    let ranges: String = SPACELESS.iter().map(|(lo, hi)| format!("{lo}-{hi}")).collect();
    format!("*[{ranges}]*")
}

/// The backlog's top while a first import defers its indexing: the largest rowid.
const DEFERRED: i64 = i64::MAX;

/// The insert trigger, as migration 0016 last wrote it. A deferral drops it: while the
/// backlog reaches the largest rowid it would index nothing, and its mere presence (a
/// trigger program and a statement journal per insert, and a look at the backlog per
/// row) costs a first import a third of its time. The write that lowers the backlog's
/// top from [`DEFERRED`] puts it back, in the same transaction: the end of the deferral,
/// or the indexer's first batch after a crash that never ended it.
fn insert_trigger() -> &'static str {
    let sql = include_str!("migrations/0016_channel_keys.sql");
    sql.find("CREATE TRIGGER messages_fts_insert").map_or(sql, |at| sql[at..].trim_end())
}

/// Puts the insert trigger back in `tx`, if it is not there.
fn put_back_insert_trigger(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    Ok(tx.execute_batch(&insert_trigger().replacen("CREATE TRIGGER", "CREATE TRIGGER IF NOT EXISTS", 1))?)
}

/// Terms this short are looked for by scanning `messages_cjk`: a trigram needs three.
const TRIGRAM: usize = 3;

/// A search, built from the agent's words (never the agent's text as FTS syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// The FTS5 `MATCH` expression for the words in scripts written with spaces, if any.
    pub words: Option<String>,
    /// Terms holding a script written without spaces, each found as a substring.
    pub substrings: Vec<String>,
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
    /// For an agent's search: every word of the query and every substring term whole,
    /// folded ([`amc_secrets::fold`]), each of which must be in the text as the agent is
    /// given it, so that nothing is found through a hidden code or link.
    pub unhidden: Vec<String>,
}

/// A message that matched, with its excerpt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// The message.
    pub message: Envelope,
    /// A short excerpt around the match, the matched words in `[` `]`.
    pub excerpt: String,
    /// For an agent's search: the person shows the agent this channel's one-time codes, so
    /// the message was found by all of its text (read with the search, in one snapshot).
    pub codes_shown: bool,
}

/// A phrase for FTS5: the text quoted, its quotes doubled.
fn quoted(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// The SQL and the values of a search: the FTS table that drives it (its `MATCH` and its
/// snippet), whether its matches can be ranked, and the other terms as conditions on its
/// rowid.
struct Plan {
    driver: &'static str,
    rankable: bool,
    excerpt: &'static str,
    conditions: Vec<String>,
    values: Vec<Value>,
}

impl Plan {
    fn bind(&mut self, v: impl Into<Value>) -> String {
        self.values.push(v.into());
        format!("?{}", self.values.len())
    }

    fn new(q: &SearchQuery) -> Self {
        let (long, short): (Vec<&String>, Vec<&String>) =
            q.substrings.iter().partition(|s| s.chars().count() >= TRIGRAM);
        let (driver, rankable, excerpt) = match (&q.words, long.is_empty()) {
            (Some(_), _) => ("messages_fts", true, "snippet(messages_fts, 0, '[', ']', '…', 12)"),
            (None, false) => ("messages_cjk", true, "snippet(messages_cjk, 0, '[', ']', '…', 16)"),
            // Only terms of one or two characters: the indexed texts are scanned, newest first.
            (None, true) => ("messages_cjk", false, "NULL"),
        };
        let mut plan = Plan { driver, rankable, excerpt, conditions: Vec::new(), values: Vec::new() };
        if let Some(w) = &q.words {
            let p = plan.bind(w.clone());
            plan.conditions.push(format!("messages_fts MATCH {p}"));
        }
        for (i, s) in long.into_iter().enumerate() {
            let p = plan.bind(quoted(s));
            plan.conditions.push(if driver == "messages_cjk" && i == 0 {
                format!("messages_cjk MATCH {p}")
            } else {
                format!("{driver}.rowid IN (SELECT rowid FROM messages_cjk WHERE messages_cjk MATCH {p})")
            });
        }
        for s in short {
            let p = plan.bind(s.to_lowercase());
            plan.conditions.push(if driver == "messages_cjk" {
                format!("instr(lower(messages_cjk.text), {p}) > 0")
            } else {
                format!("{driver}.rowid IN (SELECT rowid FROM messages_cjk WHERE instr(lower(text), {p}) > 0)")
            });
        }
        plan
    }
}

/// An excerpt of `text` around the first of `terms` found, marked like FTS5's snippets.
pub fn excerpt_around(text: &str, terms: &[String]) -> String {
    const AROUND: usize = 16;
    // Every position of the lowercase copy is the text's.
    let lower = amc_secrets::lower_in_place(text);
    let found = terms
        .iter()
        .map(|t| amc_secrets::lower_in_place(t))
        .filter(|t| !t.is_empty())
        .filter_map(|t| lower.find(&t).map(|at| (at, t.len())))
        .min();
    let Some((at, len)) = found else {
        return text.chars().take(2 * AROUND).collect();
    };
    let before: Vec<char> = text[..at].chars().collect();
    let start = before.len().saturating_sub(AROUND);
    let after: String = text[at + len..].chars().take(AROUND).collect();
    let more = text[at + len..].chars().count() > AROUND;
    format!(
        "{}{}[{}]{after}{}",
        if start > 0 { "…" } else { "" },
        before[start..].iter().collect::<String>(),
        &text[at..at + len],
        if more { "…" } else { "" }
    )
}

/// The rowids of the page `q` asks for among the matches in `from` (those the caller may
/// see), ranked over those matches alone ([`crate::rank`]) by `text`, the SQL for what the
/// caller is given of each, then the newest; `None` when more than [`RANK_UP_TO`] match,
/// read no further than that.
fn ranked_page(
    tx: &rusqlite::Transaction<'_>,
    plan: &Plan,
    from: &str,
    text: &str,
    q: &SearchQuery,
) -> Result<Option<Vec<i64>>> {
    let sql = format!("SELECT {}.rowid, {text}, m.sent_at, m.id FROM {from} LIMIT {}", plan.driver, RANK_UP_TO + 1);
    let mut stmt = tx.prepare_cached(&sql)?;
    let mut rows = stmt
        .query_map(params_from_iter(&plan.values), |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?, r.get::<_, String>(3)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if rows.len() > RANK_UP_TO as usize {
        return Ok(None);
    }
    // Newest first, for the equals.
    rows.sort_by(|a, b| (b.2, &b.3).cmp(&(a.2, &a.3)));
    let terms =
        crate::rank::Terms::from_quoted(q.words.as_deref().unwrap_or(""), q.substrings.iter().map(String::as_str));
    let texts: Vec<&str> = rows.iter().map(|(_, text, _, _)| text.as_str()).collect();
    let order = crate::rank::best_first(&terms, &texts);
    Ok(Some(order.into_iter().skip(q.offset as usize).take(q.limit as usize).map(|i| rows[i].0).collect()))
}

impl Store {
    /// Messages matching `q` that `agent` may see (`None`: the person, who sees every
    /// approved channel), best first (ranked among those messages alone), then the newest;
    /// the newest first when more than [`RANK_UP_TO`] of them match.
    pub fn search(&self, agent: Option<&str>, q: &SearchQuery) -> Result<Vec<SearchHit>> {
        let mut plan = Plan::new(q);
        self.db.read(|tx| {
            // The channels whose codes the agent is given, where a message is found by all
            // of its text: read in the search's own snapshot, so the hits and what the
            // agent is given of them follow one setting.
            let codes_shown = match agent {
                Some(a) => crate::codes::shown_in(tx, a)?,
                None => Default::default(),
            };
            // What the caller may find, and the text it is given of each match: an agent
            // finds a message by what it is given, and matches are ranked by that alone.
            // A sender's name too: a filter by name compares what the caller is given.
            let (visible, text, sender_name) = match agent {
                Some(a) => {
                    let p = plan.bind(a.to_owned());
                    let terms = plan.bind(serde_json::to_string(&q.unhidden).map_err(crate::error::Error::internal)?);
                    let ids = plan.bind(serde_json::to_string(&codes_shown).map_err(crate::error::Error::internal)?);
                    let channel_shown = format!("c.id IN (SELECT value FROM json_each({ids}))");
                    // A text the person said holds no code is found and given whole; its
                    // sender's name follows the channel's setting still.
                    let shown = format!("({channel_shown} OR m.not_a_code IS NOT NULL)");
                    (
                        format!(
                            "{} AND ({shown} OR amc_unhidden(m.text, m.source, m.sender_id, m.is_self, {terms}))",
                            visible_to(&p)
                        ),
                        format!("CASE WHEN {shown} THEN m.text ELSE amc_hidden(m.text, m.source, m.sender_id, m.is_self) END"),
                        format!("CASE WHEN {channel_shown} THEN m.sender_name ELSE amc_hidden_name(m.sender_name) END"),
                    )
                }
                None => (VISIBLE.to_owned(), "m.text".to_owned(), "m.sender_name".to_owned()),
            };
            let filters = [
                q.source.map(|s| ("m.source = ", Value::from(s.as_str().to_owned()))),
                q.channel_id.clone().map(|c| ("c.id = ", Value::from(c))),
                q.before.map(|t| ("m.sent_at < ", Value::from(t))),
                q.after.map(|t| ("m.sent_at >= ", Value::from(t))),
            ];
            // The index never holds an unsent message; this holds even if it did.
            let mut wheres = plan.conditions.clone();
            wheres.extend([visible, "NOT m.unsent".to_owned()]);
            for (column, v) in filters.into_iter().flatten() {
                let p = plan.bind(v);
                wheres.push(format!("{column}{p}"));
            }
            if let Some(s) = &q.sender {
                let p = plan.bind(s.clone());
                wheres.push(format!("(lower(m.sender_id) = lower({p}) OR lower({sender_name}) = lower({p}))"));
            }
            let from = format!(
                "{driver} JOIN messages m ON m.rowid = {driver}.rowid JOIN channels c ON c.key = m.channel \
                 WHERE {}",
                wheres.join(" AND "),
                driver = plan.driver
            );
            // Ranking needs every match scored and sorted: past a few thousand matches (a
            // word in nearly every message) that costs much and ranks nothing useful, so the
            // newest stored come first, read straight off the index. The matches are read
            // among those the caller may see, with its own filters, and ranked among them
            // alone (`rank`): how its answer is ordered says nothing of channels hidden from it.
            let driver = plan.driver;
            let page = if plan.rankable { ranked_page(tx, &plan, &from, &text, q)? } else { None };
            let sql = match &page {
                Some(page) => {
                    let ids = plan.bind(serde_json::to_string(page).map_err(crate::error::Error::internal)?);
                    format!(
                        "SELECT {ENVELOPE_COLS}, {}, {driver}.rowid FROM {from} \
                         AND {driver}.rowid IN (SELECT value FROM json_each({ids}))",
                        plan.excerpt
                    )
                }
                None => {
                    let (limit, offset) = (plan.bind(i64::from(q.limit)), plan.bind(i64::from(q.offset)));
                    format!(
                        "SELECT {ENVELOPE_COLS}, {}, {driver}.rowid FROM {from} \
                         ORDER BY {driver}.rowid DESC LIMIT {limit} OFFSET {offset}",
                        plan.excerpt
                    )
                }
            };
            let mut stmt = tx.prepare_cached(&sql)?;
            let mut rows = stmt
                .query_map(params_from_iter(&plan.values), |r| {
                    Ok((
                        r.get::<_, i64>(ENVELOPE_WIDTH + 1)?,
                        (envelope_from_row(r)?, r.get::<_, Option<String>>(ENVELOPE_WIDTH)?),
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            if let Some(page) = page {
                rows.sort_by_key(|(rowid, _)| page.iter().position(|p| p == rowid));
            }
            let rows = rows.into_iter().map(|(_, row)| row);
            let (mut messages, excerpts): (Vec<Envelope>, Vec<Option<String>>) = rows.into_iter().unzip();
            load_attachments(tx, &mut messages)?;
            Ok(messages
                .into_iter()
                .zip(excerpts)
                .map(|(message, excerpt)| {
                    let excerpt = excerpt.unwrap_or_else(|| excerpt_around(&message.text, &q.substrings));
                    let codes_shown = codes_shown.contains(&message.channel_id);
                    SearchHit { message, excerpt, codes_shown }
                })
                .collect())
        })
    }

    /// Leaves the messages stored from now on to the backlog (a first import): the
    /// backlog's range is stretched to the largest rowid there is, so the triggers leave
    /// new rows alone until [`Store::end_deferral`]. Only when every row above the range is
    /// a row to come: a backlog the indexer already worked down from the top (rows above
    /// it are indexed) is left as it is, and the triggers index row by row meanwhile.
    pub fn defer_indexing(&self) -> Result<()> {
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO search_backlog (id, lo, hi, total) \
                 SELECT 1, coalesce(max(rowid), 0) + 1, ?1, 0 FROM messages WHERE true \
                 ON CONFLICT (id) DO UPDATE SET hi = ?1 \
                 WHERE hi >= (SELECT coalesce(max(rowid), 0) FROM messages)",
                [DEFERRED],
            )?;
            let deferred: bool =
                tx.query_row("SELECT EXISTS (SELECT 1 FROM search_backlog WHERE hi = ?1)", [DEFERRED], |r| r.get(0))?;
            if deferred {
                tx.execute_batch("DROP TRIGGER IF EXISTS messages_fts_insert")?;
            }
            Ok(())
        })
    }

    /// Ends a deferral: the backlog reaches up to the newest message, and counts what it
    /// holds. A backlog the indexer lowered meanwhile is left as it is.
    pub fn end_deferral(&self) -> Result<()> {
        self.db.write(|tx| {
            tx.execute(
                "UPDATE search_backlog SET hi = (SELECT coalesce(max(rowid), 0) FROM messages), \
                 total = done + (SELECT count(*) FROM messages WHERE rowid >= search_backlog.lo) \
                 WHERE hi = ?1",
                [DEFERRED],
            )?;
            tx.execute("DELETE FROM search_backlog WHERE hi < lo", [])?;
            put_back_insert_trigger(tx)
        })
    }

    /// Indexes up to `batch` more messages of the backlog, the newest first, in one short
    /// transaction; returns the progress, or `None` when the backlog is done.
    pub fn index_more(&self, batch: u32) -> Result<Option<IndexProgress>> {
        let glob = spaceless_glob();
        self.db.write(|tx| {
            let Some(step) = Backlog::Search.next(tx, batch)? else {
                return Ok(None);
            };
            tx.execute(
                "INSERT INTO messages_fts (rowid, text) SELECT rowid, text FROM messages \
                 WHERE rowid BETWEEN ?1 AND ?2 AND NOT unsent",
                params![step.from, step.hi],
            )?;
            tx.execute(
                "INSERT INTO messages_cjk (rowid, text) SELECT rowid, text FROM messages \
                 WHERE rowid BETWEEN ?1 AND ?2 AND NOT unsent AND text GLOB ?3",
                params![step.from, step.hi, glob],
            )?;
            if step.hi == DEFERRED {
                put_back_insert_trigger(tx)?;
            }
            Backlog::Search.done(tx, &step)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_migration_spells_the_same_scripts() {
        let glob = format!("GLOB '{}'", spaceless_glob());
        for sql in [
            include_str!("migrations/0010_search_backlog.sql"),
            include_str!("migrations/0014_platform_key.sql"),
            include_str!("migrations/0016_channel_keys.sql"),
        ] {
            assert_eq!(sql.matches(&glob).count(), 2, "the insert and update triggers use {glob}");
        }
        assert!(insert_trigger().contains(&glob), "the trigger put back after a first import");
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        let in_sql = |c: char| -> bool {
            conn.query_row("SELECT ?1 GLOB ?2", params![c.to_string(), spaceless_glob()], |r| r.get(0)).expect("glob")
        };
        for &(lo, hi) in &SPACELESS {
            for c in [lo, hi] {
                assert!(spaceless(c) && in_sql(c), "{c:?}");
            }
            for c in [char::from_u32(lo as u32 - 1), char::from_u32(hi as u32 + 1)].into_iter().flatten() {
                assert_eq!(spaceless(c), in_sql(c), "{c:?}");
            }
        }
        for (text, want) in
            [("東京に行く", true), ("서울에", true), ("ภาษาไทย", true), ("café 🎉", false), ("Ａ", false)]
        {
            assert_eq!(text.chars().any(spaceless), want, "{text}");
            let matched: bool =
                conn.query_row("SELECT ?1 GLOB ?2", params![text, spaceless_glob()], |r| r.get(0)).expect("glob");
            assert_eq!(matched, want, "{text}");
        }
    }

    #[test]
    fn an_excerpt_marks_the_first_term_found() {
        assert_eq!(excerpt_around("東京に行く", &["東京".into()]), "[東京]に行く");
        let long = format!("{}東京{}", "あ".repeat(20), "い".repeat(20));
        assert_eq!(excerpt_around(&long, &["東京".into()]), format!("…{}[東京]{}…", "あ".repeat(16), "い".repeat(16)));
    }
}
