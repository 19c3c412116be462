//! The relay's tables: threads, members, capability tokens, messages and their search
//! index. Rules about who may do what live in `service.rs`; this module keeps the data
//! consistent (gapless sequence numbers, single-use invitations) in transactions. It is
//! the only code of the relay that writes SQL, through the core's [`Database`].

use rusqlite::{OptionalExtension, Row, Transaction, params};
use serde::Serialize;

use amc_core::error::{Error, ErrorCode, Result};
use amc_core::time::{Millis, serde_ms};
use amc_store::db::{Database, Migration};

/// The relay's migrations, in order, versioned as the `relay` part of the database.
const MIGRATIONS: &[Migration] = &[
    ("0001_relay", include_str!("migrations/0001_relay.sql")),
    ("0002_bounds", include_str!("migrations/0002_bounds.sql")),
    ("0003_keys", include_str!("migrations/0003_keys.sql")),
];

/// What one agent may keep in the relay; the person is not bounded. Past a bound, the
/// agent's next thread, token or post is `QUOTA_EXCEEDED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayBounds {
    /// Threads it owns.
    pub threads: u32,
    /// Read capabilities and write invitations it minted.
    pub tokens: u32,
    /// Messages it posted.
    pub posts: i64,
    /// Bytes of the messages it posted.
    pub post_bytes: i64,
}

/// The relay's bounds per agent (docs/api.md, "Storage bounds").
pub const BOUNDS: RelayBounds = RelayBounds { threads: 1_000, tokens: 1_000, posts: 100_000, post_bytes: 128 << 20 };

/// The person's principal: they see and may act on every thread.
pub const PERSON: &str = "person";

/// What a principal may do in a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// Read only.
    Read,
    /// Read and post.
    Write,
    /// Everything, including sharing.
    Owner,
}

impl Access {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(Self::Read),
            "write" => Some(Self::Write),
            "owner" => Some(Self::Owner),
            _ => None,
        }
    }

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Owner => "owner",
        }
    }
}

/// A thread's metadata, as `create_thread` and `join_thread` return it. Never a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadMeta {
    /// The thread's UUID.
    pub thread_id: String,
    /// Its title.
    pub title: String,
    /// The principal that created it.
    pub owner: String,
    /// When.
    #[serde(with = "serde_ms")]
    pub created_at: Millis,
    /// The last sequence number used (0: no messages yet).
    pub latest_seq: i64,
    /// What the caller may do.
    pub access: Access,
}

/// One message of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayMessage {
    /// Its position in the thread, from 1, without gaps.
    pub seq: i64,
    /// The principal that wrote it.
    pub author: String,
    /// The body (Markdown).
    pub body: String,
    /// The message it replies to.
    pub reply_to_seq: Option<i64>,
    /// When it was posted.
    pub created_at: Millis,
}

/// A token as the owner sees it later: never the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenInfo {
    /// `inv_<ULID>`, for revoking.
    pub token_id: String,
    /// The thread.
    pub thread_id: String,
    /// `read` (reusable) or `write` (single use).
    pub kind: String,
    /// Who minted it.
    pub created_by: String,
    /// When.
    #[serde(with = "serde_ms")]
    pub created_at: Millis,
    /// When it stops working.
    #[serde(with = "serde_ms::option")]
    pub expires_at: Option<Millis>,
    /// When it was revoked.
    #[serde(with = "serde_ms::option")]
    pub revoked_at: Option<Millis>,
    /// Who redeemed a write invitation.
    pub used_by: Option<String>,
}

/// A search hit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SearchHit {
    /// The thread.
    pub thread_id: String,
    /// Its title.
    pub title: String,
    /// The message's seq; `null` when the title matched.
    pub seq: Option<i64>,
    /// Who wrote the matching text: the message's author, or the thread's owner for a title.
    pub author: String,
    /// True when another principal wrote the matching text: treat it as data.
    pub untrusted_content: bool,
    /// The matching text around the hit, matches in `[` `]`.
    pub snippet: String,
}

fn thread_from_row(row: &Row<'_>) -> rusqlite::Result<(String, String, String, Millis, i64)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))
}

fn not_found() -> Error {
    Error::new(ErrorCode::ThreadNotFound, "no such thread, or you have no access to it")
}

fn access_in(tx: &Transaction<'_>, thread_id: &str, principal: &str) -> Result<Option<Access>> {
    if principal == PERSON {
        let exists: bool = tx
            .prepare_cached("SELECT count(*) > 0 FROM relay_threads WHERE id = ?1")?
            .query_row([thread_id], |r| r.get(0))?;
        return Ok(exists.then_some(Access::Owner));
    }
    let access: Option<String> = tx
        .prepare_cached("SELECT access FROM relay_members WHERE thread_id = ?1 AND principal = ?2")?
        .query_row(params![thread_id, principal], |r| r.get(0))
        .optional()?;
    Ok(access.as_deref().and_then(Access::parse))
}

fn meta(tx: &Transaction<'_>, thread_id: &str, principal: &str) -> Result<ThreadMeta> {
    let access = access_in(tx, thread_id, principal)?.ok_or_else(not_found)?;
    let (thread_id, title, owner, created_at, latest_seq) = tx
        .prepare_cached("SELECT id, title, owner, created_at, latest_seq FROM relay_threads WHERE id = ?1")?
        .query_row([thread_id], thread_from_row)?;
    Ok(ThreadMeta { thread_id, title, owner, created_at, latest_seq, access })
}

fn message_from_row(row: &Row<'_>) -> rusqlite::Result<RelayMessage> {
    Ok(RelayMessage {
        seq: row.get(0)?,
        author: row.get(1)?,
        body: row.get(2)?,
        reply_to_seq: row.get(3)?,
        created_at: row.get(4)?,
    })
}

fn token_from_row(row: &Row<'_>) -> rusqlite::Result<TokenInfo> {
    Ok(TokenInfo {
        token_id: row.get(0)?,
        thread_id: row.get(1)?,
        kind: row.get(2)?,
        created_by: row.get(3)?,
        created_at: row.get(4)?,
        expires_at: row.get(5)?,
        revoked_at: row.get(6)?,
        used_by: row.get(7)?,
    })
}

const TOKEN_COLS: &str = "id, thread_id, kind, created_by, created_at, expires_at, revoked_at, used_by";

/// The relay's typed access to AMC's database.
#[derive(Clone)]
pub struct RelayStore {
    db: Database,
}

impl RelayStore {
    /// The relay's tables in `db`, migrated to this build.
    pub fn open(db: Database) -> Result<Self> {
        db.migrate_part("relay", MIGRATIONS)?;
        Ok(Self { db })
    }

    /// Creates a thread owned by `principal`, or returns the one an earlier call with the
    /// same key created (`true`). The same key with another title is `IDEMPOTENCY_KEY_REUSE`.
    pub fn create_thread(
        &self,
        id: &str,
        principal: &str,
        title: &str,
        key: &str,
        now: Millis,
    ) -> Result<(ThreadMeta, bool)> {
        self.db.write(|tx| {
            let earlier: Option<(String, String)> = tx
                .prepare_cached("SELECT id, title FROM relay_threads WHERE owner = ?1 AND create_key = ?2")?
                .query_row(params![principal, key], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            if let Some((id, earlier_title)) = earlier {
                if earlier_title != title {
                    return Err(Error::new(
                        ErrorCode::IdempotencyKeyReuse,
                        "this idempotency_key created a thread with another title",
                    ));
                }
                return Ok((meta(tx, &id, principal)?, true));
            }
            if principal != PERSON {
                let owned: u32 = tx
                    .prepare_cached("SELECT count(*) FROM relay_threads WHERE owner = ?1")?
                    .query_row([principal], |r| r.get(0))?;
                if owned >= BOUNDS.threads {
                    return Err(Error::quota(format!(
                        "this agent owns {owned} threads, as many as AMC keeps for one agent; post in one of them"
                    )));
                }
            }
            tx.prepare_cached(
                "INSERT INTO relay_threads (id, title, owner, created_at, create_key) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![id, title, principal, now, key])?;
            tx.prepare_cached(
                "INSERT INTO relay_members (thread_id, principal, access, joined_at) VALUES (?1, ?2, 'owner', ?3)",
            )?
            .execute(params![id, principal, now])?;
            tx.prepare_cached("INSERT INTO relay_fts (thread_id, seq, text) VALUES (?1, 0, ?2)")?
                .execute(params![id, title])?;
            Ok((meta(tx, id, principal)?, false))
        })
    }

    /// A thread's metadata for `principal`, or `THREAD_NOT_FOUND` if they have no access.
    pub fn thread(&self, thread_id: &str, principal: &str) -> Result<ThreadMeta> {
        self.db.read(|tx| meta(tx, thread_id, principal))
    }

    /// The threads `principal` can see (every thread for the person), newest first.
    pub fn threads(&self, principal: &str) -> Result<Vec<ThreadMeta>> {
        self.db.read(|tx| {
            let ids: Vec<String> = tx
                .prepare_cached(
                    "SELECT t.id FROM relay_threads t WHERE ?1 = 'person' OR EXISTS \
                     (SELECT 1 FROM relay_members m WHERE m.thread_id = t.id AND m.principal = ?1) \
                     ORDER BY t.created_at DESC, t.id",
                )?
                .query_map([principal], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            ids.iter().map(|id| meta(tx, id, principal)).collect()
        })
    }

    /// Stores a new token's hash. The caller checked the minter may share the thread.
    pub fn mint_token(
        &self,
        thread_id: &str,
        kind: Access,
        hash: &[u8; 32],
        created_by: &str,
        expires_at: Option<Millis>,
        now: Millis,
    ) -> Result<TokenInfo> {
        let id = format!("inv_{}", ulid::Ulid::generate());
        self.db.write(|tx| {
            if created_by != PERSON {
                let minted: u32 = tx
                    .prepare_cached("SELECT count(*) FROM relay_tokens WHERE created_by = ?1")?
                    .query_row([created_by], |r| r.get(0))?;
                if minted >= BOUNDS.tokens {
                    return Err(Error::quota(format!(
                        "this agent minted {minted} tokens, as many as AMC keeps for one agent; share a read \
                         capability with several agents instead"
                    )));
                }
            }
            tx.prepare_cached(
                "INSERT INTO relay_tokens (id, thread_id, kind, token_hash, created_by, created_at, expires_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                id,
                thread_id,
                kind.as_str(),
                hash.as_slice(),
                created_by,
                now,
                expires_at
            ])?;
            let sql = format!("SELECT {TOKEN_COLS} FROM relay_tokens WHERE id = ?1");
            Ok(tx.prepare_cached(&sql)?.query_row([&id], token_from_row)?)
        })
    }

    /// The tokens of a thread (never their secrets), newest first.
    pub fn tokens(&self, thread_id: &str) -> Result<Vec<TokenInfo>> {
        self.db.read(|tx| {
            let sql =
                format!("SELECT {TOKEN_COLS} FROM relay_tokens WHERE thread_id = ?1 ORDER BY created_at DESC, id");
            let mut stmt = tx.prepare_cached(&sql)?;
            let rows = stmt.query_map([thread_id], token_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Revokes a token of a thread; members who joined with it keep their access.
    pub fn revoke_token(&self, thread_id: &str, token_id: &str, now: Millis) -> Result<TokenInfo> {
        self.db.write(|tx| {
            let changed = tx
                .prepare_cached(
                    "UPDATE relay_tokens SET revoked_at = coalesce(revoked_at, ?3) WHERE id = ?1 AND thread_id = ?2",
                )?
                .execute(params![token_id, thread_id, now])?;
            if changed == 0 {
                return Err(Error::not_found("invitation"));
            }
            let sql = format!("SELECT {TOKEN_COLS} FROM relay_tokens WHERE id = ?1");
            Ok(tx.prepare_cached(&sql)?.query_row([token_id], token_from_row)?)
        })
    }

    /// Redeems a token for `principal`, atomically. A write invitation works once; the
    /// same principal redeeming it again is a no-op. Unknown, revoked or expired tokens,
    /// and tokens of other threads, are `THREAD_NOT_FOUND`: nothing is revealed.
    pub fn join(&self, thread_id: &str, hash: &[u8; 32], principal: &str, now: Millis) -> Result<ThreadMeta> {
        self.db.write(|tx| {
            let found: Option<(String, String, Option<String>, bool)> = tx
                .prepare_cached(
                    "SELECT id, kind, used_by, revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?3) \
                     FROM relay_tokens WHERE token_hash = ?1 AND thread_id = ?2",
                )?
                .query_row(params![hash.as_slice(), thread_id, now], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .optional()?;
            let Some((token_id, kind, used_by, live)) = found else { return Err(not_found()) };
            let access = Access::parse(&kind).ok_or_else(|| Error::internal("stored token kind"))?;
            // Whoever redeemed an invitation may redeem it again, even after it was revoked.
            if access == Access::Write && used_by.as_deref() == Some(principal) {
                return meta(tx, thread_id, principal);
            }
            if !live {
                return Err(not_found());
            }
            let current = access_in(tx, thread_id, principal)?;
            // A token that would grant nothing new is not spent: an invitation meant for
            // someone else stays usable when its owner (or the person) tries it.
            if current.is_some_and(|c| c >= access) {
                return meta(tx, thread_id, principal);
            }
            if access == Access::Write {
                if used_by.is_some() {
                    return Err(Error::new(
                        ErrorCode::InvitationUsed,
                        "this invitation was already used by someone else",
                    ));
                }
                tx.prepare_cached(
                    "UPDATE relay_tokens SET used_by = ?2, used_at = ?3 WHERE id = ?1 AND used_by IS NULL",
                )?
                .execute(params![token_id, principal, now])?;
            }
            tx.prepare_cached(
                "INSERT INTO relay_members (thread_id, principal, access, joined_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (thread_id, principal) DO UPDATE SET access = excluded.access \
                 WHERE relay_members.access = 'read'",
            )?
            .execute(params![thread_id, principal, access.as_str(), now])?;
            meta(tx, thread_id, principal)
        })
    }

    /// Appends a message for `author`, or returns the one an earlier call with the same
    /// key posted (`true`). Sequence numbers are assigned in the transaction, so they have
    /// no gaps whatever runs at the same time. (The service posts through
    /// [`RelayStore::post_many`]; this is for other crates' tests and benches.)
    #[cfg(feature = "test-support")]
    #[allow(clippy::too_many_arguments)]
    pub fn post(
        &self,
        thread_id: &str,
        author: &str,
        body: &str,
        reply_to_seq: Option<i64>,
        key: &str,
        hash: &[u8; 32],
        now: Millis,
    ) -> Result<(RelayMessage, bool)> {
        let post = NewPost {
            thread_id: thread_id.to_owned(),
            author: author.to_owned(),
            body: body.to_owned(),
            reply_to_seq,
            key: key.to_owned(),
            hash: *hash,
            now,
        };
        self.db.write(|tx| post_in(tx, &post)?)
    }

    /// Posts each of `posts` in one transaction (group commit). A refused post (no
    /// access, read-only access, a reused key, a reply to no message) is refused before
    /// anything of it is written, so the others are stored as if posted alone, with no
    /// savepoint between them: each would make the search index write a segment of its
    /// own (FTS5 flushes at every savepoint), where a group shares its flushes (one, or
    /// one per megabyte of pending terms). The outer error is the database's, while
    /// checking or writing: it fails the transaction, and none of the posts was stored.
    pub fn post_many(&self, posts: &[NewPost]) -> Result<Vec<Result<(RelayMessage, bool)>>> {
        self.db.write(|tx| {
            let mut out = Vec::with_capacity(posts.len());
            for post in posts {
                // A database error fails the transaction whole (SQLite may have rolled it
                // back already): only a post's own refusal is its own outcome.
                out.push(post_in(tx, post)?);
            }
            Ok(out)
        })
    }

    /// Messages after `after_seq`, ascending, at most `limit`, and the thread's latest
    /// seq, if `principal` may read the thread (checked in the same snapshot).
    pub fn read_messages(
        &self,
        thread_id: &str,
        principal: &str,
        after_seq: i64,
        limit: u32,
    ) -> Result<(Vec<RelayMessage>, i64)> {
        self.db.read(|tx| {
            access_in(tx, thread_id, principal)?.ok_or_else(not_found)?;
            let latest: i64 = tx
                .prepare_cached("SELECT latest_seq FROM relay_threads WHERE id = ?1")?
                .query_row([thread_id], |r| r.get(0))
                .optional()?
                .ok_or_else(not_found)?;
            let mut stmt = tx.prepare_cached(
                "SELECT seq, author, body, reply_to_seq, created_at FROM relay_messages \
                 WHERE thread_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![thread_id, after_seq, limit], message_from_row)?;
            Ok((rows.collect::<rusqlite::Result<Vec<_>>>()?, latest))
        })
    }

    /// Full-text search, restricted in the query itself to threads `principal` can see,
    /// and ranked among the matches there alone ([`amc_core::rank`]): bm25 over the whole
    /// index would weigh the words by threads the caller cannot see. `fts_query` must
    /// already be quoted tokens. When more than [`RANK_UP_TO`] entries match (words in
    /// nearly every message), ranking them all costs much and says little: the newest come
    /// first instead, read straight off the index.
    pub fn search(&self, principal: &str, fts_query: &str, offset: u32, limit: u32) -> Result<Vec<SearchHit>> {
        const VISIBLE: &str = "relay_fts MATCH ?2 AND (?1 = 'person' OR f.thread_id IN \
            (SELECT thread_id FROM relay_members WHERE principal = ?1))";
        self.db.read(|tx| {
            // Read in the caller's threads only, and ranked among them alone: how a search
            // orders its hits must say nothing of threads the caller cannot see.
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT f.rowid, f.text, f.thread_id, f.seq FROM relay_fts f WHERE {VISIBLE} LIMIT ?3"
            ))?;
            let mut rows = stmt
                .query_map(params![principal, fts_query, RANK_UP_TO + 1], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let page: Vec<i64> = if rows.len() > RANK_UP_TO as usize {
                tx.prepare_cached(&format!(
                    "SELECT f.rowid FROM relay_fts f WHERE {VISIBLE} ORDER BY f.rowid DESC LIMIT ?4 OFFSET ?3"
                ))?
                .query_map(params![principal, fts_query, offset, limit], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?
            } else {
                // Thread, then position, for the equals.
                rows.sort_by(|a, b| (&a.2, a.3).cmp(&(&b.2, b.3)));
                let terms = amc_core::rank::Terms::from_quoted(fts_query, []);
                let texts: Vec<&str> = rows.iter().map(|(_, text, _, _)| text.as_str()).collect();
                let order = amc_core::rank::best_first(&terms, &texts);
                order.into_iter().skip(offset as usize).take(limit as usize).map(|i| rows[i].0).collect()
            };
            let ids = serde_json::to_string(&page).map_err(Error::internal)?;
            let mut stmt = tx.prepare_cached(
                "SELECT f.rowid, f.thread_id, t.title, f.seq, snippet(relay_fts, 2, '[', ']', '…', 16), \
                 coalesce((SELECT m.author FROM relay_messages m WHERE m.thread_id = f.thread_id AND m.seq = f.seq), t.owner) \
                 FROM relay_fts f JOIN relay_threads t ON t.id = f.thread_id \
                 WHERE relay_fts MATCH ?2 AND f.rowid IN (SELECT value FROM json_each(?3))",
            )?;
            let mut rows = stmt
                .query_map(params![principal, fts_query, ids], |r| {
                    let seq: i64 = r.get(3)?;
                    let author: String = r.get(5)?;
                    Ok((
                        r.get::<_, i64>(0)?,
                        SearchHit {
                            thread_id: r.get(1)?,
                            title: r.get(2)?,
                            seq: (seq > 0).then_some(seq),
                            untrusted_content: author != principal,
                            author,
                            snippet: r.get(4)?,
                        },
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.sort_by_key(|(rowid, _)| page.iter().position(|p| p == rowid));
            Ok(rows.into_iter().map(|(_, hit)| hit).collect())
        })
    }
}

/// Up to how many matching entries a search ranks; beyond, the newest come first.
pub const RANK_UP_TO: u32 = 5_000;

/// One post, as [`RelayStore::post_many`] takes it.
#[derive(Debug, Clone)]
pub struct NewPost {
    /// The thread.
    pub thread_id: String,
    /// The principal posting.
    pub author: String,
    /// The body, already checked.
    pub body: String,
    /// The message it replies to.
    pub reply_to_seq: Option<i64>,
    /// The idempotency key.
    pub key: String,
    /// The hash of what the key stands for (body and reply).
    pub hash: [u8; 32],
    /// When it is posted.
    pub now: Millis,
}

/// Appends `post` in `tx`, or returns the message an earlier post with its key stored
/// (`true`). The inner error is the post's refusal, with nothing of it written; the
/// outer, the database's.
fn post_in(tx: &Transaction<'_>, post: &NewPost) -> Result<Result<(RelayMessage, bool)>> {
    Ok(match admit(tx, post)? {
        Ok(Admitted::Again(message)) => Ok((message, true)),
        Ok(Admitted::New { seq }) => Ok((write_post(tx, post, seq)?, false)),
        Err(refused) => Err(refused),
    })
}

/// What a post comes to once checked.
enum Admitted {
    /// An earlier post with its key stored this message.
    Again(RelayMessage),
    /// It is new, and takes this sequence number.
    New { seq: i64 },
}

/// Checks `post` in `tx` without writing anything: whether its author may post to the
/// thread, whether its key was used before (for this message or another), and whether
/// the message it replies to exists. The inner error is the post's refusal; the outer,
/// the database's.
fn admit(tx: &Transaction<'_>, post: &NewPost) -> Result<Result<Admitted>> {
    let NewPost { thread_id, author, reply_to_seq, key, hash, .. } = post;
    let (thread_id, author, reply_to_seq, key) = (thread_id.as_str(), author.as_str(), *reply_to_seq, key.as_str());
    let Some(access) = access_in(tx, thread_id, author)? else { return Ok(Err(not_found())) };
    let earlier: Option<(i64, Vec<u8>)> = tx
        .prepare_cached(
            "SELECT seq, request_hash FROM relay_messages WHERE author = ?1 AND thread_id = ?2 AND idem_key = ?3",
        )?
        .query_row(params![author, thread_id, key], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    if let Some((seq, earlier_hash)) = earlier {
        if earlier_hash != hash {
            return Ok(Err(Error::new(
                ErrorCode::IdempotencyKeyReuse,
                "this idempotency_key posted a different message to this thread",
            )));
        }
        let m = tx
            .prepare_cached(
                "SELECT seq, author, body, reply_to_seq, created_at FROM relay_messages WHERE thread_id = ?1 AND seq = ?2",
            )?
            .query_row(params![thread_id, seq], message_from_row)?;
        return Ok(Ok(Admitted::Again(m)));
    }
    if access < Access::Write {
        return Ok(Err(Error::new(ErrorCode::Forbidden, "you have read-only access to this thread")));
    }
    if author != PERSON {
        let (posts, bytes): (i64, i64) = tx
            .prepare_cached("SELECT posts, bytes FROM relay_usage WHERE principal = ?1")?
            .query_row([author], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?
            .unwrap_or_default();
        if posts >= BOUNDS.posts || bytes.saturating_add(post.body.len() as i64) > BOUNDS.post_bytes {
            return Ok(Err(Error::quota(format!(
                "this agent posted {posts} messages of {bytes} bytes in all; AMC keeps at most {} messages and {} \
                 bytes for one agent",
                BOUNDS.posts, BOUNDS.post_bytes
            ))));
        }
    }
    let latest: i64 = tx
        .prepare_cached("SELECT latest_seq FROM relay_threads WHERE id = ?1")?
        .query_row([thread_id], |r| r.get(0))?;
    if let Some(r) = reply_to_seq
        && (r < 1 || r > latest)
    {
        return Ok(Err(Error::validation(format!("reply_to_seq {r} is not a message of this thread"))));
    }
    Ok(Ok(Admitted::New { seq: latest + 1 }))
}

/// Writes `post`, admitted as number `seq`, in `tx`.
fn write_post(tx: &Transaction<'_>, post: &NewPost, seq: i64) -> Result<RelayMessage> {
    let NewPost { thread_id, author, body, reply_to_seq, key, hash, now } = post;
    tx.prepare_cached("UPDATE relay_threads SET latest_seq = ?2 WHERE id = ?1")?.execute(params![thread_id, seq])?;
    tx.prepare_cached(
        "INSERT INTO relay_messages (thread_id, seq, author, body, reply_to_seq, created_at, idem_key, request_hash) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![thread_id, seq, author, body, reply_to_seq, now, key, hash.as_slice()])?;
    tx.prepare_cached("INSERT INTO relay_fts (thread_id, seq, text) VALUES (?1, ?2, ?3)")?
        .execute(params![thread_id, seq, body])?;
    tx.prepare_cached(
        "INSERT INTO relay_usage (principal, posts, bytes) VALUES (?1, 1, ?2) \
         ON CONFLICT (principal) DO UPDATE SET posts = posts + 1, bytes = bytes + excluded.bytes",
    )?
    .execute(params![author, body.len() as i64])?;
    Ok(RelayMessage { seq, author: author.clone(), body: body.clone(), reply_to_seq: *reply_to_seq, created_at: *now })
}
