//! Tool approvals: Claude Code asks its channel (`amc mcp`) whether a tool may run; AMC
//! shows the request to the person, and the person's Allow or Deny goes back to the
//! session that asked, through its push. Only the person answers (admin routes and the UI);
//! an agent can ask, never decide. Every request and answer stays in the log of tool
//! decisions.
//!
//! A request belongs to one `amc mcp` session. A session is alive while its push asks the
//! daemon; one unseen for [`SESSION_GONE_AFTER`] has ended, and its unanswered requests
//! leave the tray as `gone`. A bridge that ends cleanly says so at once.

use std::time::Duration;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::events::Event;
use crate::model::{DecidedVia, ToolRequest, ToolRequestStatus};
use crate::service::{AgentCtx, Amc};
use amc_store::{NewToolRequest, Store, ToolRequestBounds};

/// How long a session may go without asking for its push before it counts as ended: the
/// longest push wait and the bridge's slowest retry, with room to spare.
pub const SESSION_GONE_AFTER: Duration = Duration::from_secs(45);
/// What one agent's requests may take in the store: 50 waiting at once; 500 kept in all
/// and 8 MiB of their text (a request holds at most about 90 KB), the oldest answered or
/// gone ones making room for new ones.
pub const TOOL_REQUEST_BOUNDS: ToolRequestBounds =
    ToolRequestBounds { pending: 50, kept: 500, kept_bytes: 8 * 1024 * 1024 };
/// How long answered and gone requests are kept (the housekeeping forgets older ones).
pub const TOOL_REQUESTS_KEPT_FOR: Duration = Duration::from_secs(30 * 86_400);

/// `POST /tool-requests`: a host's request, relayed by `amc mcp`.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ToolAsk {
    /// The bridge session that asks (and is told the answer).
    pub session: String,
    /// The host's id for the request.
    pub request_id: String,
    /// The tool.
    pub tool_name: String,
    /// What the call does.
    pub description: String,
    /// The start of its input.
    pub input_preview: String,
}

/// Whether `s` is a plain id: 1 to 64 of `A-Z a-z 0-9 - _`.
pub(in crate::service) fn is_plain_id(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn check_text(field: &str, value: &str, max_chars: usize) -> Result<()> {
    if value.contains('\0') {
        return Err(Error::validation(format!("{field} must not contain NUL")));
    }
    if value.chars().count() > max_chars {
        return Err(Error::validation(format!("{field} takes at most {max_chars} characters")));
    }
    Ok(())
}

impl Amc {
    /// Records a host's request to use a tool and tells the person. Asking again for the
    /// same request changes nothing.
    pub async fn ask_tool(&self, agent: &AgentCtx, ask: ToolAsk) -> Result<ToolRequest> {
        if !is_plain_id(&ask.session) {
            return Err(Error::validation("session must be 1 to 64 of A-Z, a-z, 0-9, - and _"));
        }
        if !is_plain_id(&ask.request_id) {
            return Err(Error::validation("request_id must be 1 to 64 of A-Z, a-z, 0-9, - and _"));
        }
        if ask.tool_name.trim().is_empty() {
            return Err(Error::validation("tool_name is required"));
        }
        check_text("tool_name", &ask.tool_name, 200)?;
        check_text("description", &ask.description, 2_000)?;
        check_text("input_preview", &ask.input_preview, 20_000)?;
        let agent_id = agent.agent_id.clone();
        let new = NewToolRequest {
            session: ask.session,
            request_id: ask.request_id,
            tool_name: ask.tool_name,
            description: ask.description,
            input_preview: ask.input_preview,
        };
        let (request, made) = self.blocking(move |s| s.ask_tool(&agent_id, &new, TOOL_REQUEST_BOUNDS)).await?;
        if made {
            self.publish(Event::ToolRequestChanged {
                request: request.id.clone(),
                agent_id: request.agent_id.clone(),
                status: request.status,
            });
        }
        Ok(request)
    }

    /// The requests waiting for the person (`Some(Pending)`), or the log, newest first.
    /// Requests of sessions that ended leave the pending list first.
    pub async fn tool_requests(&self, status: Option<String>, limit: Option<i64>) -> Result<Vec<ToolRequest>> {
        let status = match status.as_deref().filter(|s| !s.is_empty()) {
            Some(s) => Some(
                ToolRequestStatus::parse(s)
                    .ok_or_else(|| Error::validation("status must be pending, allowed, denied or gone"))?,
            ),
            None => None,
        };
        let limit = limit.unwrap_or(100);
        if !(1..=500).contains(&limit) {
            return Err(Error::validation("limit must be an integer from 1 to 500"));
        }
        self.expire_tool_sessions().await?;
        self.blocking(move |s| s.tool_requests(status, limit as u32)).await
    }

    /// The person allows or denies a request. `CONFLICT` once it was answered or its
    /// session ended; `NOT_FOUND` for an unknown id.
    pub async fn decide_tool(&self, id: String, allow: bool, via: DecidedVia) -> Result<ToolRequest> {
        let decided = self.blocking(move |s| s.decide_tool(&id, allow, via)).await?;
        self.publish(Event::ToolRequestChanged {
            request: decided.id.clone(),
            agent_id: decided.agent_id.clone(),
            status: decided.status,
        });
        Ok(decided)
    }

    /// A bridge session ended: its unanswered requests leave the tray.
    pub async fn end_tool_session(&self, agent: &AgentCtx, session: String) -> Result<()> {
        if !is_plain_id(&session) {
            return Err(Error::validation("session must be 1 to 64 of A-Z, a-z, 0-9, - and _"));
        }
        let agent_id = agent.agent_id.clone();
        let gone = self.blocking(move |s| s.end_tool_session(&agent_id, &session)).await?;
        self.announce_gone(gone);
        Ok(())
    }

    fn announce_gone(&self, gone: Vec<ToolRequest>) {
        for r in gone {
            self.publish(Event::ToolRequestChanged { request: r.id, agent_id: r.agent_id, status: r.status });
        }
    }

    /// Ends the sessions that stopped asking for their push: their pending requests go.
    pub(in crate::service) async fn expire_tool_sessions(&self) -> Result<()> {
        if self.just_started() {
            return Ok(());
        }
        let amc = self.clone();
        self.blocking(move |s| amc.end_silent_sessions(s)).await
    }

    /// The same, on the calling thread (it makes store calls).
    pub(in crate::service) fn end_silent_sessions(&self, store: &Store) -> Result<()> {
        if self.just_started() {
            return Ok(());
        }
        let waiting = store.tool_sessions_waiting()?;
        let now = crate::time::now_ms();
        // A session that asked lately counts as alive even before its push first asks.
        let ended = waiting.into_iter().filter(|(agent, session, newest)| {
            let asked_lately = now.saturating_sub(*newest) < SESSION_GONE_AFTER.as_millis() as i64;
            !asked_lately && !self.session_alive(agent, session, SESSION_GONE_AFTER)
        });
        for (agent_id, session, _) in ended {
            self.announce_gone(store.end_tool_session(&agent_id, &session)?);
        }
        Ok(())
    }

    /// Bridges are still reconnecting to a daemon that just started: no session counts
    /// as ended yet.
    fn just_started(&self) -> bool {
        self.inner.started.elapsed() < SESSION_GONE_AFTER
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ids_are_plain() {
        assert!(is_plain_id("tbxkq") && is_plain_id("0b6f-A_9"));
        assert!(!is_plain_id("") && !is_plain_id("a b") && !is_plain_id(&"a".repeat(65)) && !is_plain_id("é"));
    }
}
