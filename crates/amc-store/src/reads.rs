//! What each agent was given to read, for the readers rule of the core's send path: which
//! conversations (channels and relay threads), and when last.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rusqlite::{OptionalExtension, params};

use super::Store;
use crate::error::{Error, Result};
use crate::model::ReadFrom as Given;
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

/// What the readers rule looked at for one send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crossings {
    /// The person said this channel may receive anything (nothing was looked at then).
    pub open_to_anything: bool,
    /// The other conversations given in the window that not everyone the channel reaches
    /// is known to read, newest first, at most the number asked for.
    pub crossed: Vec<Given>,
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
                "INSERT INTO agent_reads (agent_id, conversation, name, read_at, readers) \
                 SELECT ?1, ?2, ?3, ?4, CASE WHEN c.readers IS NOT NULL THEN \
                   (SELECT json_group_array(c.source || ':' || h.value) FROM json_each(c.readers) h) END \
                 FROM (SELECT 1) LEFT JOIN channels c ON c.id = ?2 \
                 ON CONFLICT (agent_id, conversation) DO UPDATE SET name = excluded.name, \
                 read_at = max(read_at, excluded.read_at), readers = excluded.readers",
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

    /// The readers rule's look for a send of `agent_id` to `channel_id`: the other
    /// conversations given since `since` that someone the channel reaches may not read,
    /// newest first, at most `limit`. A conversation is read by whom its source said when
    /// it was given (`agent_reads.readers`, each handle behind its source); one of another
    /// source, a relay thread, or one whose readers (or the channel's) are unknown, always
    /// counts.
    pub fn crossings(&self, agent_id: &str, channel_id: &str, since: Millis, limit: usize) -> Result<Crossings> {
        self.db.read(|tx| {
            let (source, readers, open_to_anything): (String, Option<String>, bool) = tx
                .prepare_cached("SELECT source, readers, open_to_anything FROM channels WHERE id = ?1")?
                .query_row([channel_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()?
                .ok_or_else(Error::channel_not_found)?;
            if open_to_anything {
                return Ok(Crossings { open_to_anything, crossed: Vec::new() });
            }
            // Each of the channel's readers as it stands in a stored array, behind its
            // source and quoted, so that one handle never matches inside another nor one
            // of another source. One `instr` each, the conversation itself set aside last
            // (a JSON reading per row costs five times the whole scan).
            let needles: Vec<String> = readers
                .and_then(|r| serde_json::from_str::<Vec<String>>(&r).ok())
                .unwrap_or_default()
                .iter()
                .map(|h| serde_json::to_string(&format!("{source}:{h}")).unwrap_or_default())
                .collect();
            let missing = match needles.len() {
                0 => "1".to_owned(),
                n => (0..n).map(|i| format!("instr(readers, ?{}) = 0", i + 5)).collect::<Vec<_>>().join(" OR "),
            };
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT conversation, name, read_at FROM agent_reads \
                 WHERE agent_id = ?1 AND read_at >= ?2 AND (readers IS NULL OR {missing}) AND conversation != ?3 \
                 ORDER BY read_at DESC, conversation LIMIT ?4"
            ))?;
            let fixed: [&dyn rusqlite::ToSql; 4] =
                [&agent_id, &(since - READS_NOTED_EVERY), &channel_id, &(limit as i64)];
            let bound = fixed.into_iter().chain(needles.iter().map(|n| n as &dyn rusqlite::ToSql));
            let crossed = stmt
                .query_map(rusqlite::params_from_iter(bound), |r| {
                    Ok(Given { conversation: r.get(0)?, name: r.get(1)?, read_at: r.get(2)? })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Crossings { open_to_anything, crossed })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ChannelKind, ChannelSpec, Source};

    fn channel(store: &Store, source: Source, id: &str, readers: Option<&[&str]>) -> String {
        let spec = ChannelSpec {
            readers: readers.map(|r| r.iter().map(|h| (*h).to_owned()).collect()),
            ..ChannelSpec::new(id, id, ChannelKind::Group)
        };
        store.ingest(source, &spec, &[], None).expect("channel").channel_id
    }

    #[test]
    fn a_send_crosses_unless_each_of_its_readers_read_each_conversation_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("amc.db")).expect("open");
        let im = Source::Imessage;
        let ada = channel(&store, im, "ada", Some(&["+15550000001"]));
        // A handle that is the start of Ada's, and one that contains it.
        let near = channel(&store, im, "near", Some(&["+1555000000", "x+15550000001x"]));
        let group = channel(&store, im, "group", Some(&["+15550000001", "bo@example.com", "+15550000003"]));
        let bo = channel(&store, im, "bo", Some(&["bo@example.com"]));
        let unknown = channel(&store, im, "unknown", None);
        let discord = channel(&store, Source::Discord, "900", Some(&["+15550000001"]));
        let crossed = |agent: &str, to: &str| -> Vec<String> {
            let c = store.crossings(agent, to, 0, 50).expect("crossings");
            c.crossed.into_iter().map(|g| g.name).collect()
        };
        let read = |agent: &str, conversations: &[&String], at: Millis| {
            let given: Vec<(String, String)> = conversations
                .iter()
                .map(|c| ((*c).clone(), store.admin_channel(c).map(|a| a.name).unwrap_or_else(|_| (*c).clone())))
                .collect();
            store.record_reads(agent, &given, at).expect("record");
        };
        read("a", &[&group], 1_000);
        assert!(crossed("a", &ada).is_empty(), "a DM to a member of a group read");
        assert!(crossed("a", &bo).is_empty());
        assert_eq!(crossed("a", &group), Vec::<String>::new(), "the conversation itself");
        read("b", &[&near], 1_000);
        assert_eq!(crossed("b", &ada), ["near"], "no handle matches inside another");
        read("c", &[&bo, &unknown, &discord, &group], 1_000);
        read("c", &[&"4f1c2e3a-thread".to_owned()], 2_000);
        // Newest first (the thread), then, read at one time, in any order.
        let sorted = |mut names: Vec<String>| {
            names[1..].sort();
            names
        };
        assert_eq!(sorted(crossed("c", &ada)), ["4f1c2e3a-thread", "900", "bo", "unknown"], "the group passes");
        assert_eq!(sorted(crossed("c", &unknown)), ["4f1c2e3a-thread", "900", "bo", "group"], "readers unknown");
        // Reads before the window do not count; an approval forgets what came before it.
        assert!(store.crossings("c", &ada, 5_000, 50).expect("crossings").crossed.is_empty());
        assert_eq!(store.forget_reads("c", 1_500).expect("forget"), 4);
        assert_eq!(crossed("c", &ada), ["4f1c2e3a-thread"]);
    }
}
