//! How many waits each agent holds open at once (`wait_for_unread_messages` and its REST
//! twin, the Claude Code push, the relay's `wait_for_messages`): each keeps a connection and its memory until it ends, so
//! past a bound one agent's many would starve AMC of file descriptors and memory.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::{Error, ErrorCode, Result};

/// The most waits one agent may hold open at once: many sessions' worth (each holds a push
/// and perhaps a wait), far fewer than the files a process may open.
pub const MAX_WAITS_PER_AGENT: usize = 64;

/// The waits open now, by agent.
#[derive(Default)]
pub(in crate::service) struct Waits(Mutex<HashMap<String, usize>>);

/// One open wait; it counts until dropped.
pub struct WaitSlot<'a> {
    waits: &'a Waits,
    agent_id: String,
}

impl Waits {
    /// A slot for a wait of `agent_id`, or `RATE_LIMITED` while it holds
    /// [`MAX_WAITS_PER_AGENT`].
    pub(in crate::service) fn enter(&self, agent_id: &str) -> Result<WaitSlot<'_>> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(agent_id.to_owned()).or_default();
        if *n >= MAX_WAITS_PER_AGENT {
            let message = format!(
                "this agent already has {MAX_WAITS_PER_AGENT} waits open; end one (or let it time out) before starting another"
            );
            return Err(Error { retry_after: Some(1), ..Error::new(ErrorCode::RateLimited, message) });
        }
        *n += 1;
        Ok(WaitSlot { waits: self, agent_id: agent_id.to_owned() })
    }
}

impl Drop for WaitSlot<'_> {
    fn drop(&mut self) {
        let mut open = self.waits.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.agent_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.agent_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_holds_at_most_its_bound_and_each_end_frees_one() {
        let waits = Waits::default();
        let mut held: Vec<WaitSlot<'_>> = (0..MAX_WAITS_PER_AGENT).map(|_| waits.enter("a").expect("room")).collect();
        let refused = waits.enter("a").err().expect("full");
        assert_eq!((refused.code, refused.retry_after), (ErrorCode::RateLimited, Some(1)));
        assert!(waits.enter("b").is_ok(), "another agent's are its own");
        held.pop();
        held.push(waits.enter("a").expect("one ended, one more"));
        assert!(waits.enter("a").is_err());
    }
}
