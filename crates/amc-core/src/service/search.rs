//! `search_messages`: words and quoted phrases over the messages an agent may see. The
//! agent's text never reaches FTS5 as syntax: each word and each phrase becomes a quoted
//! FTS5 string, so `"`, `*`, `NEAR(`, `OR`, `-` and `:` are only characters to look for.

use serde::{Deserialize, Serialize};

use super::inbox::{check_channel_id, parse_source, ranged};
use super::{AgentCtx, Amc};
use crate::error::{Error, Result};
use crate::model::Envelope;
use crate::store::SearchQuery;
use crate::time::parse_rfc3339;

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

/// The FTS5 expression for the agent's words and quoted phrases, every one required.
pub(super) fn fts_expression(query: &str) -> Result<String> {
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(Error::validation(format!("query takes at most {MAX_QUERY_CHARS} characters")));
    }
    if query.contains('\0') {
        return Err(Error::validation("query must not contain NUL"));
    }
    let mut terms = Vec::new();
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
        if term.chars().any(char::is_alphanumeric) {
            terms.push(format!("\"{}\"", term.replace('"', "\"\"")));
        }
        rest = after;
    }
    if terms.is_empty() {
        return Err(Error::validation("query must have at least one word with a letter or a digit"));
    }
    if terms.len() > MAX_TERMS {
        return Err(Error::validation(format!("query takes at most {MAX_TERMS} words and phrases")));
    }
    Ok(terms.join(" "))
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
    (&q.matching, q.source.map(|s| s.as_str()), &q.channel_id, &q.sender, q.before, q.after, q.limit).hash(&mut h);
    h.finish()
}

impl Amc {
    /// Messages of the channels visible to the agent that hold every word and phrase of
    /// the query, best first.
    pub async fn search_messages(&self, agent: &AgentCtx, p: SearchParams) -> Result<SearchPage> {
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
        let mut q = SearchQuery {
            matching: fts_expression(&query)?,
            source: p.source.as_deref().map(parse_source).transpose()?,
            channel_id: p.channel_id,
            sender: p.sender.filter(|s| !s.is_empty()),
            before: time("before", p.before)?,
            after: time("after", p.after)?,
            limit: ranged("limit", p.limit, 1, 50, 20)?,
            offset: 0,
        };
        let key = search_key(&q);
        if let Some(c) = &p.cursor {
            q.offset = decode_cursor(c, key)?;
        }
        let (limit, offset) = (q.limit, q.offset);
        let hits = self.blocking(move |s| s.search(agent.as_deref(), &q)).await?;
        let next_cursor =
            (hits.len() as u32 == limit && offset + limit <= MAX_OFFSET).then(|| encode_cursor(offset + limit, key));
        Ok(SearchPage {
            results: hits.into_iter().map(|h| SearchResult { message: h.message, excerpt: h.excerpt }).collect(),
            next_cursor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(fts_expression(nothing).is_err(), "{nothing:?}");
        }
        assert!(fts_expression(&"a ".repeat(21)).is_err());
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
