//! What each agent was given to read, for the readers rule of the core's send path: which
//! conversations (channels and relay threads), and when last.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::{OptionalExtension, params};

use super::Store;
use crate::error::{Error, Result};
use crate::model::{ReadFrom as Given, Source};
use crate::time::Millis;

/// How seldom one agent's reads of one conversation are written: a read within this long
/// of the last one written is kept in memory only (a thousand relay waits woken by one
/// post cost one write per agent, not a thousand). So a stored time may be up to this much
/// older than the newest read: the window looks this much further back, and forgetting
/// (an approved send) reads the newest time from memory.
pub const READS_NOTED_EVERY: Millis = 1_000;

/// The most (agent, conversation) pairs remembered; past it, all are forgotten (and
/// written again on their next read).
const NOTED_KEPT: usize = 100_000;

/// Per agent and conversation: when its read was last written, and the newest read since.
type NotedMap = HashMap<(String, String), (Millis, Millis)>;

/// [`NotedMap`], shared by the store's clones.
#[derive(Debug, Clone, Default)]
pub(crate) struct Noted(Arc<Mutex<NotedMap>>);

impl Noted {
    fn lock(&self) -> std::sync::MutexGuard<'_, NotedMap> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Who reads a conversation besides the person, as the store knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readers {
    /// The channel's source; `None` for a relay thread (or a channel no longer stored).
    pub source: Option<Source>,
    /// Their handles, sorted; `None` when AMC cannot tell.
    pub handles: Option<Vec<String>>,
}

/// What the readers rule looks at for one send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendReads {
    /// Who reads the channel sent to.
    pub target: Readers,
    /// The person said this channel may receive anything.
    pub open_to_anything: bool,
    /// The other conversations the agent was given since the window's start, newest
    /// first, with who reads each.
    pub reads: Vec<(Given, Readers)>,
}

fn readers(source: Option<String>, handles: Option<String>) -> Readers {
    Readers {
        source: source.as_deref().and_then(Source::parse),
        handles: handles.and_then(|h| serde_json::from_str::<Vec<String>>(&h).ok()).filter(|h| !h.is_empty()),
    }
}

impl Store {
    /// Records that the agent was given messages of these conversations (id and name)
    /// at `at`; a later time replaces an earlier one.
    pub fn record_reads(&self, agent_id: &str, given: &[(String, String)], at: Millis) -> Result<()> {
        let key = |conversation: &String| (agent_id.to_owned(), conversation.clone());
        let mut noted = self.noted.lock();
        let mut due = Vec::new();
        for g in given {
            match noted.get_mut(&key(&g.0)) {
                Some((written, newest)) if at - *written < READS_NOTED_EVERY => *newest = (*newest).max(at),
                _ => due.push(g),
            }
        }
        drop(noted);
        if due.is_empty() {
            return Ok(());
        }
        self.db.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO agent_reads (agent_id, conversation, name, read_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (agent_id, conversation) DO UPDATE SET \
                 name = excluded.name, read_at = max(read_at, excluded.read_at)",
            )?;
            for (conversation, name) in &due {
                stmt.execute(params![agent_id, conversation, name, at])?;
            }
            Ok(())
        })?;
        // Only what was written: a read whose write failed is written at the next.
        let mut noted = self.noted.lock();
        if noted.len() + due.len() > NOTED_KEPT {
            noted.clear();
        }
        for (conversation, _) in due {
            let entry = noted.entry(key(conversation)).or_insert((at, at));
            *entry = (at, entry.1.max(at));
        }
        Ok(())
    }

    /// Whether the agent's read of `conversation` was written within
    /// [`READS_NOTED_EVERY`] of `at` (recording it again would write nothing).
    pub fn read_noted_lately(&self, agent_id: &str, conversation: &str, at: Millis) -> bool {
        let noted = self.noted.lock();
        noted.get(&(agent_id.to_owned(), conversation.to_owned())).is_some_and(|(t, _)| at - t < READS_NOTED_EVERY)
    }

    /// What the readers rule needs for a send of `agent_id` to `channel_id`: the
    /// channel's readers and the other conversations given since `since`.
    pub fn send_reads(&self, agent_id: &str, channel_id: &str, since: Millis) -> Result<SendReads> {
        self.db.read(|tx| {
            let (source, handles, open_to_anything): (String, Option<String>, bool) = tx
                .prepare_cached("SELECT source, readers, open_to_anything FROM channels WHERE id = ?1")?
                .query_row([channel_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?
                .ok_or_else(Error::channel_not_found)?;
            let mut stmt = tx.prepare_cached(
                "SELECT r.conversation, r.name, r.read_at, c.source, c.readers FROM agent_reads r \
                 LEFT JOIN channels c ON c.id = r.conversation \
                 WHERE r.agent_id = ?1 AND r.read_at >= ?2 AND r.conversation != ?3 \
                 ORDER BY r.read_at DESC, r.conversation",
            )?;
            let reads = stmt
                .query_map(params![agent_id, since - READS_NOTED_EVERY, channel_id], |r| {
                    let given = Given { conversation: r.get(0)?, name: r.get(1)?, read_at: r.get(2)? };
                    Ok((given, readers(r.get(3)?, r.get(4)?)))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(SendReads { target: readers(Some(source), handles), open_to_anything, reads })
        })
    }

    /// Forgets what the agent was given up to `up_to` (the person approved a send of it
    /// asked for then); returns how many conversations. A conversation read since, even
    /// within [`READS_NOTED_EVERY`] of its stored time, stays, with its newest read.
    pub fn forget_reads(&self, agent_id: &str, up_to: Millis) -> Result<usize> {
        let mut noted = self.noted.lock();
        let mut later = Vec::new();
        noted.retain(|(agent, conversation), (written, newest)| {
            if agent != agent_id {
                return true;
            }
            if *newest > up_to {
                later.push((conversation.clone(), *newest));
                *written = *newest;
            }
            *newest > up_to
        });
        // Under the lock: a read noted meanwhile must not be dropped by this deletion.
        self.db.write(|tx| {
            let mut stmt = tx.prepare_cached(
                "UPDATE agent_reads SET read_at = max(read_at, ?3) WHERE agent_id = ?1 AND conversation = ?2",
            )?;
            for (conversation, newest) in &later {
                stmt.execute(params![agent_id, conversation, newest])?;
            }
            Ok(tx
                .prepare_cached("DELETE FROM agent_reads WHERE agent_id = ?1 AND read_at <= ?2")?
                .execute(params![agent_id, up_to])?)
        })
    }

    /// Forgets reads older than `before`, which no window reaches.
    pub fn prune_reads(&self, before: Millis) -> Result<usize> {
        let before = before - READS_NOTED_EVERY;
        self.db.write(|tx| Ok(tx.prepare_cached("DELETE FROM agent_reads WHERE read_at < ?1")?.execute([before])?))
    }
}
