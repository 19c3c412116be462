//! Agents and their tokens. A token is shown once; only its SHA-256 is stored.

use rusqlite::{OptionalExtension, params};
use subtle::ConstantTimeEq;

use super::Store;
use crate::error::{Error, Result};
use crate::model::AgentInfo;
use crate::time::now_ms;
use crate::token::{AGENT_TOKEN_PREFIX, hash_token, new_token};

/// How often `last_seen_at` is written at most, per agent.
const SEEN_RESOLUTION_MS: i64 = 60_000;

struct TokenRow {
    id: String,
    hash: Vec<u8>,
    revoked_at: Option<i64>,
    last_seen_at: Option<i64>,
}

impl Store {
    /// Adds an agent and returns its token, which is not stored and cannot be shown again.
    pub fn create_agent(&self, id: &str) -> Result<(AgentInfo, String)> {
        if !crate::ids::is_agent_id(id) {
            return Err(Error::validation(
                "agent id must be 1 to 64 characters of a-z, 0-9, '-' and '_', starting with a letter or digit",
            ));
        }
        let token = new_token(AGENT_TOKEN_PREFIX);
        let now = now_ms();
        self.db.write(|tx| {
            let revoked: Option<bool> = tx
                .prepare_cached("SELECT revoked_at IS NOT NULL FROM agents WHERE id = ?1")?
                .query_row([id], |r| r.get(0))
                .optional()?;
            match revoked {
                Some(true) => {
                    return Err(Error::conflict(format!(
                        "the agent {id} was revoked, and keeps its name so its sends and decisions stay \
                         theirs in the log: add the new one under another name, such as {id}-2"
                    )));
                }
                Some(false) => {
                    return Err(Error::conflict(format!(
                        "an agent named {id} exists already: add this one under another name, such as {id}-2"
                    )));
                }
                None => {}
            }
            tx.prepare_cached("INSERT INTO agents (id, token_hash, created_at) VALUES (?1, ?2, ?3)")?
                .execute(params![id, hash_token(&token).as_slice(), now])?;
            Ok(())
        })?;
        Ok((
            AgentInfo {
                id: id.to_owned(),
                created_at: now,
                last_seen_at: None,
                revoked_at: None,
                pushing: false,
                last_pushed_at: None,
            },
            token,
        ))
    }

    /// The agent a token belongs to, if the token is valid and not revoked.
    pub fn authenticate_agent(&self, token: &str) -> Result<Option<String>> {
        let hash = hash_token(token);
        let found = self.db.read(|tx| {
            Ok(tx
                .prepare_cached("SELECT id, token_hash, revoked_at, last_seen_at FROM agents WHERE token_hash = ?1")?
                .query_row([hash.as_slice()], |r| {
                    Ok(TokenRow { id: r.get(0)?, hash: r.get(1)?, revoked_at: r.get(2)?, last_seen_at: r.get(3)? })
                })
                .optional()?)
        })?;
        let Some(TokenRow { id, hash: stored, revoked_at: revoked, last_seen_at: last_seen }) = found else {
            return Ok(None);
        };
        if !bool::from(stored.as_slice().ct_eq(hash.as_slice())) || revoked.is_some() {
            return Ok(None);
        }
        let now = now_ms();
        if last_seen.is_none_or(|t| now - t > SEEN_RESOLUTION_MS) {
            self.db.write(|tx| {
                tx.prepare_cached("UPDATE agents SET last_seen_at = ?2 WHERE id = ?1")?.execute(params![id, now])?;
                Ok(())
            })?;
        }
        Ok(Some(id))
    }

    /// Every agent, revoked ones included.
    pub fn agents(&self) -> Result<Vec<AgentInfo>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT a.id, a.created_at, a.last_seen_at, a.revoked_at, p.pushed_at FROM agents a \
                 LEFT JOIN push_floors p ON p.agent_id = a.id ORDER BY a.created_at, a.id",
            )?;
            let rows = stmt.query_map([], agent_from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Whether the agent is revoked (an unknown agent counts as revoked).
    pub fn is_agent_revoked(&self, id: &str) -> Result<bool> {
        self.db.read(|tx| {
            let revoked: Option<Option<i64>> = tx
                .prepare_cached("SELECT revoked_at FROM agents WHERE id = ?1")?
                .query_row([id], |r| r.get(0))
                .optional()?;
            Ok(revoked.is_none_or(|at| at.is_some()))
        })
    }

    /// Revokes an agent's token at once; its read state is kept.
    pub fn revoke_agent(&self, id: &str) -> Result<AgentInfo> {
        self.db.write(|tx| {
            let changed = tx
                .prepare_cached("UPDATE agents SET revoked_at = coalesce(revoked_at, ?2) WHERE id = ?1")?
                .execute(params![id, now_ms()])?;
            if changed == 0 {
                return Err(Error::not_found("agent"));
            }
            Ok(tx
                .prepare_cached(
                    "SELECT a.id, a.created_at, a.last_seen_at, a.revoked_at, p.pushed_at FROM agents a \
                     LEFT JOIN push_floors p ON p.agent_id = a.id WHERE a.id = ?1",
                )?
                .query_row([id], agent_from_row)?)
        })
    }
}

/// An agent from `SELECT id, created_at, last_seen_at, revoked_at, pushed_at`. Whether it
/// is pushed to now is the service layer's to say.
fn agent_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AgentInfo> {
    Ok(AgentInfo {
        id: r.get(0)?,
        created_at: r.get(1)?,
        last_seen_at: r.get(2)?,
        revoked_at: r.get(3)?,
        pushing: false,
        last_pushed_at: r.get(4)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_prefixed() {
        let a = new_token(AGENT_TOKEN_PREFIX);
        let b = new_token(AGENT_TOKEN_PREFIX);
        assert_ne!(a, b);
        assert!(a.starts_with(AGENT_TOKEN_PREFIX));
        assert_eq!(a.len(), AGENT_TOKEN_PREFIX.len() + 64);
    }

    #[test]
    fn only_the_hash_is_stored_and_revocation_is_immediate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("amc.db")).expect("open");
        let (_, token) = store.create_agent("claude").expect("create");
        assert_eq!(store.authenticate_agent(&token).expect("auth").as_deref(), Some("claude"));
        assert_eq!(store.authenticate_agent("amc_agent_wrong").expect("auth"), None);
        let mut raw = std::fs::read(store.database().path()).expect("read db");
        raw.extend(std::fs::read(store.database().path().with_extension("db-wal")).unwrap_or_default());
        assert!(!raw.windows(token.len()).any(|w| w == token.as_bytes()), "token stored in clear");
        assert_eq!(store.create_agent("claude").err().map(|e| e.code), Some(crate::error::ErrorCode::Conflict));
        store.revoke_agent("claude").expect("revoke");
        assert_eq!(store.authenticate_agent(&token).expect("auth"), None);
    }
}
