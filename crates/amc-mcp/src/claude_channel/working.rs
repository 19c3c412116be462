//! Whether the host's session is one someone works in, rather than a host checking that the
//! server starts. Nothing in the handshake tells them apart: Claude Code's health check
//! (`claude mcp list`, `claude mcp get`), a `--print` run and an interactive session with or
//! without channels all send the same `initialize` and `tools/list` (docs/mcp.md, "Who is
//! told"). What differs is what follows: a health check closes right after `tools/list` (or
//! once the slowest other server answers, at most Claude Code's 30 s connection timeout),
//! and never calls a tool. So a session counts as working once it has called a tool (or
//! relayed a tool request) and stayed open for [`SETTLE`]; only then does the push record
//! what it told it.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// How long a session must have stayed open before what it was told counts as seen.
pub const SETTLE: Duration = Duration::from_secs(30);

/// Whether the session has shown it is a working one.
pub(crate) struct Working {
    settled_at: Instant,
    worked: watch::Sender<bool>,
}

impl Working {
    /// A session that started now and must stay `settle`.
    pub(crate) fn new(settle: Duration) -> Self {
        Self { settled_at: Instant::now() + settle, worked: watch::Sender::new(false) }
    }

    /// The host called a tool, or relayed a tool request: it is not merely checking.
    pub(crate) fn worked(&self) {
        self.worked.send_if_modified(|w| !std::mem::replace(w, true));
    }

    /// Whether the session has worked and stayed.
    pub(crate) fn is_shown(&self) -> bool {
        *self.worked.borrow() && Instant::now() >= self.settled_at
    }

    /// Resolves once the session has worked and stayed.
    pub(crate) async fn shown(&self) {
        let mut worked = self.worked.subscribe();
        // The sender lives as long as `self`: this wait ends only by a call to `worked`.
        let _ = worked.wait_for(|w| *w).await;
        tokio::time::sleep_until(self.settled_at).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn staying_alone_or_a_tool_call_alone_is_not_enough() {
        // Stayed (there is nothing to stay), never called a tool: a health check can stay 30 s.
        let stayed = Working::new(Duration::ZERO);
        assert!(!stayed.is_shown());
        stayed.worked();
        assert!(stayed.is_shown());
        // Called a tool at once: a short `claude -p` run may.
        let early = Working::new(Duration::from_secs(3600));
        early.worked();
        assert!(!early.is_shown());
    }

    #[tokio::test]
    async fn the_wait_ends_when_the_session_works() {
        let working = Arc::new(Working::new(Duration::ZERO));
        let waiting = tokio::spawn({
            let working = working.clone();
            async move { working.shown().await }
        });
        working.worked();
        tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("shown").expect("join");
        assert!(working.is_shown());
    }
}
