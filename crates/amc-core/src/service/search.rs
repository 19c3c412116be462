//! `search_messages`: words and quoted phrases over the messages an agent may see. The
//! agent's text never reaches FTS5 as syntax: each word and each phrase becomes a quoted
//! FTS5 string, so `"`, `*`, `NEAR(`, `OR`, `-` and `:` are only characters to look for.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::inbox::{check_channel_id, parse_source, ranged};
use super::{AgentCtx, Amc};
use crate::error::{Error, Result};
use crate::model::Envelope;
use crate::time::parse_rfc3339;
use amc_store::{SearchQuery, spaceless};

/// The longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 500;
/// The most words and phrases in one query.
const MAX_TERMS: usize = 20;
/// How deep paging goes.
const MAX_OFFSET: u32 = 10_000;

/// `search_messages` / `GET /messages/search`, as given.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// Words and "quoted phrases"; every one must match.
    pub query: Option<String>,
    /// `imessage` or `discord`.
    pub source: Option<String>,
    /// Only this channel.
    pub channel_id: Option<String>,
    /// Only messages from this sender (their id or name).
    pub sender: Option<String>,
    /// RFC 3339; only messages sent before it.
    pub before: Option<String>,
    /// RFC 3339; only messages sent at or after it.
    pub after: Option<String>,
    /// 1..=50, default 20.
    pub limit: Option<i64>,
    /// A `next_cursor` from the same search.
    pub cursor: Option<String>,
}

/// One match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchResult {
    /// The message, in the usual envelope (with its channel).
    pub message: Envelope,
    /// A short excerpt around the match, the matched words in `[` and `]`.
    pub excerpt: String,
}

/// A page of matches, best first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchPage {
    /// The matches.
    pub results: Vec<SearchResult>,
    /// Pass back as `cursor` for the next page; `null` at the end.
    pub next_cursor: Option<String>,
}

/// The agent's words and quoted phrases, every one required: those in scripts written
/// with spaces as one FTS5 expression, the others (Chinese, Japanese, Thai, …) as
/// substrings.
pub(super) struct Terms {
    pub words: Option<String>,
    pub substrings: Vec<String>,
}

pub(super) fn terms(query: &str) -> Result<Terms> {
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::validation(format!("query takes at most {MAX_QUERY_CHARS} characters")));
    }
    if query.contains('\0') {
        return Err(Error::validation("query must not contain NUL"));
    }
    let (mut words, mut substrings) = (Vec::new(), Vec::new());
    let mut rest = query;
    while !rest.trim_start().is_empty() {
        rest = rest.trim_start();
        let (term, after) = match rest.strip_prefix('"') {
            Some(quoted) => match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            },
            None => match rest.find(char::is_whitespace) {
                Some(end) => (&rest[..end], &rest[end..]),
                None => (rest, ""),
            },
        };
        // A term with no letter or digit matches nothing the index holds: skip it.
        if term.chars().any(spaceless) {
            substrings.push(term.trim().to_owned());
        } else if term.chars().any(char::is_alphanumeric) {
            words.push(format!("\"{}\"", term.replace('"', "\"\"")));
        }
        rest = after;
    }
    if words.is_empty() && substrings.is_empty() {
        return Err(Error::validation("query must have at least one word with a letter or a digit"));
    }
    if words.len() + substrings.len() > MAX_TERMS {
        return Err(Error::validation(format!("query takes at most {MAX_TERMS} words and phrases")));
    }
    Ok(Terms { words: (!words.is_empty()).then(|| words.join(" ")), substrings })
}

/// A cursor: the offset, tied to the search it came from.
fn encode_cursor(offset: u32, key: u64) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("s:{offset}:{key:x}"))
}

fn decode_cursor(cursor: &str, key: u64) -> Result<u32> {
    use base64::Engine;
    let invalid = || Error::validation("cursor must be a next_cursor returned by this same search");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = String::from_utf8(raw).map_err(|_| invalid())?;
    let mut parts = text.splitn(3, ':');
    let (Some("s"), Some(offset), Some(k)) = (parts.next(), parts.next(), parts.next()) else { return Err(invalid()) };
    let offset: u32 = offset.parse().map_err(|_| invalid())?;
    if u64::from_str_radix(k, 16).map_err(|_| invalid())? != key || offset > MAX_OFFSET {
        return Err(invalid());
    }
    Ok(offset)
}

/// What identifies a search across its pages.
fn search_key(q: &SearchQuery) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&q.words, &q.substrings, q.source.map(|s| s.as_str()), &q.channel_id, &q.sender, q.before, q.after, q.limit)
        .hash(&mut h);
    h.finish()
}

impl Amc {
    /// Messages of the channels visible to the agent that hold every word and phrase of
    /// the query, best first.
    pub async fn search_messages(&self, agent: &AgentCtx, p: SearchParams) -> Result<SearchPage> {
        // The store finds a message only by words it holds outside its hidden codes and
        // links (`amc_unhidden`), before paging, so neither the hits nor the cursor say
        // whether a message holds a code.
        self.search(Some(agent.agent_id.clone()), p).await
    }

    /// The same search over every approved channel, as the person sees them (the Inbox).
    pub async fn search_all(&self, p: SearchParams) -> Result<SearchPage> {
        self.search(None, p).await
    }

    async fn search(&self, agent: Option<String>, p: SearchParams) -> Result<SearchPage> {
        let query = p.query.ok_or_else(|| Error::validation("query is required"))?;
        let time = |field: &str, v: Option<String>| -> Result<Option<i64>> {
            v.map(|s| {
                parse_rfc3339(&s).ok_or_else(|| Error::validation(format!("{field} must be an RFC 3339 timestamp")))
            })
            .transpose()
        };
        if let Some(c) = &p.channel_id {
            check_channel_id(c)?;
        }
        if p.sender.as_deref().is_some_and(|s| s.chars().count() > 200) {
            return Err(Error::validation("sender takes at most 200 characters"));
        }
        if p.sender.as_deref().is_some_and(|s| s.contains('\0')) {
            return Err(Error::validation("sender must not contain NUL"));
        }
        let Terms { words, substrings } = terms(&query)?;
        // The query's words, for what an agent is given of a message (see `unhidden`), and
        // each substring whole: its letters could each stand elsewhere in the text, while
        // the run of them holds a code's first or last digit ("ド：4").
        let plain: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_owned)
            .chain(substrings.iter().cloned())
            .collect();
        let mut q = SearchQuery {
            words,
            substrings,
            source: p.source.as_deref().map(parse_source).transpose()?,
            channel_id: p.channel_id,
            sender: p.sender.filter(|s| !s.is_empty()),
            before: time("before", p.before)?,
            after: time("after", p.after)?,
            limit: ranged("limit", p.limit, 1, 50, 20)?,
            offset: 0,
            // An agent's search finds a message only by what the agent is given of it.
            unhidden: plain.iter().map(|w| crate::secrets::fold(w)).collect(),
        };
        let key = search_key(&q);
        if let Some(c) = &p.cursor {
            q.offset = decode_cursor(c, key)?;
        }
        let (limit, offset) = (q.limit, q.offset);
        let hits = self
            .blocking(move |s| {
                let mut hits = s.search(agent.as_deref(), &q)?;
                let Some(agent_id) = &agent else {
                    for hit in &mut hits {
                        super::inbox::seen_by_person(std::slice::from_mut(&mut hit.message));
                    }
                    return Ok(hits);
                };
                // The channels whose codes the agent is given, as the search read them.
                let shown: HashSet<String> =
                    hits.iter().filter(|h| h.codes_shown).map(|h| h.message.channel_id.clone()).collect();
                super::inbox::note_given(s, agent_id, hits.iter().map(|h| &h.message))?;
                for hit in &mut hits {
                    super::inbox::seen_by(agent_id, &shown, std::slice::from_mut(&mut hit.message));
                    if !hit.message.redacted.is_empty() {
                        // The excerpt is taken again, from the text as the agent is given it.
                        hit.excerpt = amc_store::excerpt_around(&hit.message.text, &plain);
                    }
                }
                Ok(hits)
            })
            .await?;
        let next_cursor =
            (hits.len() as u32 == limit && offset + limit <= MAX_OFFSET).then(|| encode_cursor(offset + limit, key));
        Ok(SearchPage {
            results: hits.into_iter().map(|h| SearchResult { message: h.message, excerpt: h.excerpt }).collect(),
            next_cursor,
        })
    }
}

/// How many messages of the backlog one transaction indexes: small enough that a new
/// message waits little for it.
const INDEX_BATCH: u32 = 2_000;

/// Progress is shown once indexing has taken this long.
const SHOW_INDEXING_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

impl Amc {
    /// Indexes the messages stored before the search index, newest first, a batch per
    /// transaction, until none is left. Progress shows in [`Amc::health`] once it takes
    /// more than a second.
    pub async fn index_search_backlog(&self) {
        self.work_backlog(Pass::Index).await
    }

    /// Looks for one-time codes and sign-in links in the messages stored before AMC looked
    /// for them as they arrive (or under other rules), the same way as
    /// [`Amc::index_search_backlog`]: what the person's screens count and mark. Agents'
    /// copies are hidden as they are read, whether or not this has reached them.
    pub async fn classify_backlog(&self) {
        match self.blocking(|s| s.reclassify_if_rules_changed()).await {
            Ok(true) => tracing::info!("the rules for one-time codes changed; looking at every message again"),
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "could not check the rules the messages were classified by"),
        }
        self.work_backlog(Pass::Classify).await
    }

    async fn work_backlog(&self, pass: Pass) {
        let started = std::time::Instant::now();
        let slot = match pass {
            Pass::Index => &self.inner.indexing,
            Pass::Classify => &self.inner.classifying,
        };
        loop {
            // A first import under way indexes in bulk once it is done.
            if pass == Pass::Index && self.inner.deferring.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let step = match pass {
                Pass::Index => self.blocking(|s| s.index_more(INDEX_BATCH)).await,
                Pass::Classify => self.blocking(|s| s.classify_more(INDEX_BATCH)).await,
            };
            match step {
                Ok(Some(progress)) => *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some((started, progress)),
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, what = pass.what(), "could not work through older messages; trying again at the next start");
                    break;
                }
            }
        }
        if slot.lock().unwrap_or_else(|p| p.into_inner()).take().is_some() {
            tracing::info!(seconds = started.elapsed().as_secs_f64(), what = pass.what(), "older messages done");
        }
    }

    /// A first import begins: what it stores is indexed afterwards, in bulk, rather than
    /// message by message. End it with [`Amc::resume_search_index`], on every path.
    pub async fn defer_search_index(&self) -> Result<()> {
        self.inner.deferring.store(true, std::sync::atomic::Ordering::SeqCst);
        let deferred = self.blocking(|s| s.defer_indexing()).await;
        if deferred.is_err() {
            self.inner.deferring.store(false, std::sync::atomic::Ordering::SeqCst);
        }
        deferred
    }

    /// The first import is over: its messages are indexed in the background, newest
    /// first. (A crash before this leaves the backlog stretched; the next start indexes
    /// it the same way.)
    pub async fn resume_search_index(&self) -> Result<()> {
        let ended = self.blocking(|s| s.end_deferral()).await;
        self.inner.deferring.store(false, std::sync::atomic::Ordering::SeqCst);
        let amc = self.clone();
        tokio::spawn(async move { amc.index_search_backlog().await });
        ended
    }

    /// The backlog's progress, once indexing has taken more than a second.
    pub(super) fn search_indexing(&self) -> Option<amc_store::IndexProgress> {
        shown(*self.inner.indexing.lock().unwrap_or_else(|p| p.into_inner()), std::time::Instant::now())
    }

    /// The classification backlog's progress, once it has taken more than a second.
    pub(super) fn secrets_classifying(&self) -> Option<amc_store::IndexProgress> {
        shown(*self.inner.classifying.lock().unwrap_or_else(|p| p.into_inner()), std::time::Instant::now())
    }
}

/// A background pass over the messages stored before some work on every message existed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// The search index ([`Amc::index_search_backlog`]).
    Index,
    /// The classification of secrets ([`Amc::classify_backlog`]).
    Classify,
}

impl Pass {
    fn what(self) -> &'static str {
        match self {
            Pass::Index => "search index",
            Pass::Classify => "one-time codes",
        }
    }
}

/// The progress to show at `now`: none in the first second, so a short indexing never
/// flashes by.
fn shown(
    state: Option<(std::time::Instant, amc_store::IndexProgress)>,
    now: std::time::Instant,
) -> Option<amc_store::IndexProgress> {
    state.filter(|(started, _)| now.duration_since(*started) > SHOW_INDEXING_AFTER).map(|(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fts_expression(query: &str) -> Result<String> {
        terms(query).map(|t| t.words.unwrap_or_default())
    }

    #[test]
    fn the_agents_text_is_only_ever_quoted_strings() {
        assert_eq!(fts_expression("flight Alex").expect("ok"), r#""flight" "Alex""#);
        assert_eq!(fts_expression(r#"  "see you at" noon "#).expect("ok"), r#""see you at" "noon""#);
        assert_eq!(
            fts_expression(r#"NEAR(a b) OR x* -y col:z"#).expect("ok"),
            r#""NEAR(a" "b)" "OR" "x*" "-y" "col:z""#
        );
        assert_eq!(fts_expression(r#"say "un"closed"#).expect("ok"), r#""say" "un" "closed""#);
        assert_eq!(fts_expression(r#""open phrase"#).expect("ok"), r#""open phrase""#);
        for nothing in ["", "   ", "\"\"", "* - :", "\u{0}"] {
            assert!(terms(nothing).is_err(), "{nothing:?}");
        }
        assert!(terms(&"a ".repeat(21)).is_err());
    }

    #[test]
    fn spaceless_scripts_are_substrings() {
        let t = terms(r#"東京 flight "タワー 333" 서울에"#).expect("ok");
        assert_eq!(t.words.as_deref(), Some(r#""flight""#));
        assert_eq!(t.substrings, ["東京", "タワー 333", "서울에"]);
        assert_eq!(terms("東京").expect("ok").words, None);
    }

    #[test]
    fn indexing_shows_only_once_it_takes_more_than_a_second() {
        let started = std::time::Instant::now();
        let p = amc_store::IndexProgress { done: 2_000, total: 10_000 };
        assert_eq!(shown(Some((started, p)), started + std::time::Duration::from_millis(900)), None);
        assert_eq!(shown(Some((started, p)), started + std::time::Duration::from_millis(1_100)), Some(p));
        assert_eq!(shown(None, started + std::time::Duration::from_secs(5)), None);
    }

    #[test]
    fn a_cursor_belongs_to_its_search() {
        let c = encode_cursor(20, 7);
        assert_eq!(decode_cursor(&c, 7).expect("same search"), 20);
        assert!(decode_cursor(&c, 8).is_err());
        assert!(decode_cursor("garbage", 7).is_err());
        assert!(decode_cursor(&encode_cursor(MAX_OFFSET + 1, 7), 7).is_err());
    }
}
