//! Hosts' requests to use a tool and the person's decisions on them.

use rusqlite::{OptionalExtension, Row, params};

use crate::Store;
use crate::channels::parse_col;
use crate::error::{Error, Result};
use crate::model::{DecidedVia, ToolRequest, ToolRequestStatus};
use crate::time::{Millis, now_ms};

/// A request as the bridge relays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToolRequest {
    /// The `amc mcp` session that asked.
    pub session: String,
    /// The host's id for it.
    pub request_id: String,
    /// The tool.
    pub tool_name: String,
    /// What the call does.
    pub description: String,
    /// The start of its input.
    pub input_preview: String,
}

const COLS: &str =
    "id, agent_id, request_id, tool_name, description, input_preview, status, created_at, decided_at, decided_via";

fn from_row(r: &Row<'_>) -> rusqlite::Result<ToolRequest> {
    Ok(ToolRequest {
        id: r.get(0)?,
        agent_id: r.get(1)?,
        request_id: r.get(2)?,
        tool_name: r.get(3)?,
        description: r.get(4)?,
        input_preview: r.get(5)?,
        status: parse_col(r, 6, ToolRequestStatus::parse)?,
        created_at: r.get(7)?,
        decided_at: r.get(8)?,
        decided_via: r.get::<_, Option<String>>(9)?.as_deref().and_then(DecidedVia::parse),
    })
}

/// What one agent's requests may take in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolRequestBounds {
    /// Requests waiting for the person at once; more are refused.
    pub pending: u32,
    /// Requests kept in all, waiting or not; past it the oldest answered or gone go.
    pub kept: u32,
    /// Bytes of text (tool name, description, input) kept in all, likewise.
    pub kept_bytes: i64,
}

impl Store {
    /// Records a request; the same request asked again is the same record. Past the
    /// agent's `bounds`, more waiting requests are refused, and the oldest answered or
    /// gone ones make room for the new one, in the same transaction.
    pub fn ask_tool(
        &self,
        agent_id: &str,
        req: &NewToolRequest,
        bounds: ToolRequestBounds,
    ) -> Result<(ToolRequest, bool)> {
        self.db.write(|tx| {
            let existing = tx
                .prepare_cached(&format!(
                    "SELECT {COLS} FROM tool_requests WHERE agent_id = ?1 AND session = ?2 AND request_id = ?3"
                ))?
                .query_row(params![agent_id, req.session, req.request_id], from_row)
                .optional()?;
            if let Some(found) = existing {
                return Ok((found, false));
            }
            let pending: u32 = tx
                .prepare_cached("SELECT count(*) FROM tool_requests WHERE agent_id = ?1 AND status = 'pending'")?
                .query_row([agent_id], |r| r.get(0))?;
            if pending >= bounds.pending {
                let wait = format!(
                    "{} of this agent's tool requests already wait for the person; ask again once they answer",
                    bounds.pending
                );
                return Err(Error { retry_after: Some(60), ..Error::new(crate::error::ErrorCode::RateLimited, wait) });
            }
            let id = format!("tr_{}", ulid::Ulid::generate());
            tx.prepare_cached(
                "INSERT INTO tool_requests (id, agent_id, session, request_id, tool_name, description, input_preview, \
                 status, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', ?8)",
            )?
            .execute(params![
                id,
                agent_id,
                req.session,
                req.request_id,
                req.tool_name,
                req.description,
                req.input_preview,
                now_ms()
            ])?;
            // Newest first, the rows past the count or the bytes the agent may keep; the
            // waiting ones stay (they are few and small next to the bounds).
            tx.prepare_cached(
                "DELETE FROM tool_requests WHERE id IN (SELECT id FROM ( \
                   SELECT id, status, row_number() OVER w AS n, \
                     sum(length(CAST(tool_name AS BLOB)) + length(CAST(description AS BLOB)) \
                       + length(CAST(input_preview AS BLOB))) OVER w AS bytes \
                   FROM tool_requests WHERE agent_id = ?1 WINDOW w AS (ORDER BY created_at DESC, rowid DESC)) \
                 WHERE status <> 'pending' AND (n > ?2 OR bytes > ?3))",
            )?
            .execute(params![agent_id, bounds.kept, bounds.kept_bytes])?;
            let made = tx
                .prepare_cached(&format!("SELECT {COLS} FROM tool_requests WHERE id = ?1"))?
                .query_row([&id], from_row)?;
            Ok((made, true))
        })
    }

    /// Requests, newest first: the pending ones, or the whole log.
    pub fn tool_requests(&self, status: Option<ToolRequestStatus>, limit: u32) -> Result<Vec<ToolRequest>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {COLS} FROM tool_requests WHERE ?1 IS NULL OR status = ?1 \
                 ORDER BY created_at DESC, rowid DESC LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![status.map(ToolRequestStatus::as_str), limit], from_row)?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// The person's answer, taken only while the request is pending. `CONFLICT` when it
    /// was answered already or its session ended.
    pub fn decide_tool(&self, id: &str, allow: bool, via: DecidedVia) -> Result<ToolRequest> {
        self.db.write(|tx| {
            let status = if allow { ToolRequestStatus::Allowed } else { ToolRequestStatus::Denied };
            let changed = tx
                .prepare_cached(
                    "UPDATE tool_requests SET status = ?2, decided_at = ?3, decided_via = ?4 \
                     WHERE id = ?1 AND status = 'pending'",
                )?
                .execute(params![id, status.as_str(), now_ms(), via.as_str()])?;
            let found = tx
                .prepare_cached(&format!("SELECT {COLS} FROM tool_requests WHERE id = ?1"))?
                .query_row([id], from_row)
                .optional()?
                .ok_or_else(|| Error::not_found("tool request"))?;
            if changed == 0 {
                return Err(Error::conflict(format!("this request is {} already", found.status.as_str())));
            }
            Ok(found)
        })
    }

    /// The request `id`.
    pub fn tool_request(&self, id: &str) -> Result<ToolRequest> {
        self.db.read(|tx| {
            tx.prepare_cached(&format!("SELECT {COLS} FROM tool_requests WHERE id = ?1"))?
                .query_row([id], from_row)
                .optional()?
                .ok_or_else(|| Error::not_found("tool request"))
        })
    }

    /// Forgets the requests answered or gone before `before`; returns how many.
    pub fn prune_tool_requests(&self, before: Millis) -> Result<usize> {
        self.db.write(|tx| {
            Ok(tx
                .prepare_cached(
                    "DELETE FROM tool_requests WHERE status <> 'pending' AND coalesce(decided_at, created_at) < ?1",
                )?
                .execute([before])?)
        })
    }

    /// Marks a session's pending requests gone (the session ended); returns them.
    pub fn end_tool_session(&self, agent_id: &str, session: &str) -> Result<Vec<ToolRequest>> {
        self.db.write(|tx| {
            let gone = tx
                .prepare_cached(&format!(
                    "UPDATE tool_requests SET status = 'gone', decided_at = ?3 \
                     WHERE agent_id = ?1 AND session = ?2 AND status = 'pending' RETURNING {COLS}"
                ))?
                .query_map(params![agent_id, session, now_ms()], from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(gone)
        })
    }

    /// The sessions with pending requests, each with its newest request's time.
    pub fn tool_sessions_waiting(&self) -> Result<Vec<(String, String, Millis)>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT agent_id, session, max(created_at) FROM tool_requests WHERE status = 'pending' \
                 GROUP BY agent_id, session",
            )?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// The person's decisions a session has not been told yet: (id, request id, allowed).
    pub fn undelivered_decisions(&self, agent_id: &str, session: &str) -> Result<Vec<(String, String, bool)>> {
        self.db.read(|tx| {
            let mut stmt = tx.prepare_cached(
                "SELECT id, request_id, status = 'allowed' FROM tool_requests \
                 WHERE agent_id = ?1 AND session = ?2 AND status IN ('allowed', 'denied') AND delivered_at IS NULL \
                 ORDER BY decided_at, rowid",
            )?;
            let rows = stmt.query_map(params![agent_id, session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Records that the agent's session was told these decisions.
    pub fn mark_decisions_delivered(&self, agent_id: &str, ids: &[String]) -> Result<()> {
        self.db.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE tool_requests SET delivered_at = ?3 WHERE id = ?2 AND agent_id = ?1 AND delivered_at IS NULL",
            )?;
            let now = now_ms();
            for id in ids {
                stmt.execute(params![agent_id, id, now])?;
            }
            Ok(())
        })
    }
}
