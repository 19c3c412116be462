//! The readers rule: a send carries only what its recipients could already read.
//!
//! AMC records which conversations each agent was given messages of, and when
//! (`inbox::note_given` for unread, context, get, search and push; attachments; the relay
//! for its threads). A send under `auto` goes out at once only when everyone the target
//! channel reaches could already read every other conversation the agent was given in the
//! last `readers_window_minutes`. Otherwise it is held for the person, with `held_reason:
//! "crosses_conversations"` and the conversations it may carry words from. Approving a held
//! send forgets those conversations, unless read again since. The conversation sent to
//! never counts against its own send; the person may turn the rule off per channel ("may
//! receive anything").
//!
//! Who reads a conversation comes from what AMC stores: an iMessage chat's participants,
//! the other side of a Discord DM. What AMC cannot tell (a Discord server channel, a relay
//! thread, whose readers are agents, another source) counts as crossing.

use super::{AgentCtx, Amc};
use crate::error::Result;
use crate::model::{READ_FROM_SHOWN, ReadFrom, SendTarget, Source};
use crate::time::now_ms;

/// The reason a send held by this rule carries.
pub const CROSSES_CONVERSATIONS: &str = "crosses_conversations";

impl Amc {
    /// The conversations a send of `agent` to `target` would carry text across, newest
    /// first (at most [`READ_FROM_SHOWN`]); empty when nothing crosses.
    pub(super) async fn crossings(&self, agent: &AgentCtx, target: &SendTarget) -> Result<Vec<ReadFrom>> {
        let since = now_ms() - self.config().readers_window.as_millis() as i64;
        let (agent_id, channel_id) = (agent.agent_id.clone(), target.id.clone());
        self.blocking(move |s| Ok(s.crossings(&agent_id, &channel_id, since, READ_FROM_SHOWN)?.crossed)).await
    }

    /// Records `agent_id`'s read of `conversation` now in memory alone when its read was
    /// written within the last second: then true, and [`Amc::note_threads_read`] need not be
    /// called.
    pub fn touch_read(&self, agent_id: &str, conversation: &str) -> bool {
        self.inner.store.touch_read(agent_id, conversation, now_ms())
    }

    /// Sets who reads the source's stored channels (platform id, handles), as the source
    /// reads its conversations now (at start, for channels stored before it told).
    pub async fn set_channel_readers(&self, source: Source, readers: Vec<(String, Vec<String>)>) -> Result<usize> {
        self.blocking(move |s| s.set_readers(source, &readers)).await
    }

    /// Records that `agent_id` read these relay threads (id, title) now: their readers are
    /// the threads' members, so whatever else the agent sends crosses them.
    pub async fn note_threads_read(&self, agent_id: &str, threads: Vec<(String, String)>) -> Result<()> {
        let agent_id = agent_id.to_owned();
        self.blocking(move |s| s.record_reads(&agent_id, &threads, now_ms())).await
    }
}
