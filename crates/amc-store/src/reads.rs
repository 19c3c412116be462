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

/// Writes reads memory alone held: (agent, conversation, newest).
fn write_newest(tx: &rusqlite::Transaction<'_>, newest: &[(String, String, Millis)]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "UPDATE agent_reads SET read_at = max(read_at, ?3) WHERE agent_id = ?1 AND conversation = ?2",
    )?;
    for (agent, conversation, at) in newest {
        stmt.execute(params![agent, conversation, at])?;
    }
    Ok(())
}

impl Store {
    /// Records that the agent was given messages of these conversations (id and name)
    /// at `at`; a later time replaces an earlier one.
    pub fn record_reads(&self, agent_id: &str, given: &[(String, String)], at: Millis) -> Result<()> {
        let key = |conversation: &String| (agent_id.to_owned(), conversation.clone());
        // Held through the write: a forgetting in between must not leave a read noted as
        // written whose row it deleted.
        let mut noted = self.noted.lock();
        let mut due = Vec::new();
        for g in given {
            match noted.get_mut(&key(&g.0)) {
                Some((written, newest)) if at - *written < READS_NOTED_EVERY => *newest = (*newest).max(at),
                _ => due.push(g),
            }
        }
        if due.is_empty() {
            return Ok(());
        }
        // Past the bound, everything is forgotten, once what only memory held is written.
        let full = noted.len() + due.len() > NOTED_KEPT;
        let pending: Vec<(String, String, Millis)> = if full {
            noted.iter().filter(|(_, (w, n))| n > w).map(|((a, c), (_, n))| (a.clone(), c.clone(), *n)).collect()
        } else {
            Vec::new()
        };
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
            write_newest(tx, &pending)
        })?;
        if full {
            noted.clear();
        }
        for (conversation, _) in due {
            let entry = noted.entry(key(conversation)).or_insert((at, at));
            *entry = (at, entry.1.max(at));
        }
        Ok(())
    }

    /// Records a read of `conversation` at `at` in memory alone when its read was written
    /// within [`READS_NOTED_EVERY`]: then true, and [`Store::record_reads`] need not be
    /// called (the relay reads a thread's title only when it must).
    pub fn touch_read(&self, agent_id: &str, conversation: &str, at: Millis) -> bool {
        let mut noted = self.noted.lock();
        match noted.get_mut(&(agent_id.to_owned(), conversation.to_owned())) {
            Some((written, newest)) if at - *written < READS_NOTED_EVERY => {
                *newest = (*newest).max(at);
                true
            }
            _ => false,
        }
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
            let mut crossed = stmt
                .query_map(rusqlite::params_from_iter(bound), |r| {
                    Ok(Given { conversation: r.get(0)?, name: r.get(1)?, read_at: r.get(2)? })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            // When each was read last, memory's newer reads included: what the person sees,
            // and what approving the send forgets.
            let noted = self.noted.lock();
            for g in &mut crossed {
                if let Some((_, newest)) = noted.get(&(agent_id.to_owned(), g.conversation.clone())) {
                    g.read_at = g.read_at.max(*newest);
                }
            }
            Ok(Crossings { open_to_anything, crossed })
        })
    }

    /// Forgets the agent's reads the person saw when approving a send of it: each listed
    /// conversation, unless read again after the time listed (then it stays, with its
    /// newest read). Returns how many were forgotten.
    pub fn forget_reads(&self, agent_id: &str, seen: &[Given]) -> Result<usize> {
        let mut noted = self.noted.lock();
        let mut later = Vec::new();
        for g in seen {
            let key = (agent_id.to_owned(), g.conversation.clone());
            match noted.get(&key) {
                Some(&(_, newest)) if newest > g.read_at => {
                    later.push((agent_id.to_owned(), g.conversation.clone(), newest));
                }
                _ => {
                    noted.remove(&key);
                }
            }
        }
        // Under the lock: a read noted meanwhile must not be dropped by this deletion.
        self.db.write(|tx| {
            write_newest(tx, &later)?;
            let mut forget = tx.prepare_cached(
                "DELETE FROM agent_reads WHERE agent_id = ?1 AND conversation = ?2 AND read_at <= ?3",
            )?;
            let mut n = 0;
            for g in seen {
                n += forget.execute(params![agent_id, g.conversation, g.read_at])?;
            }
            Ok(n)
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
        // A handle with a quote could hold another's, quoted: its chat's readers are unknown.
        let forged = channel(&store, im, "forged", Some(&["eve\"imessage:+15550000001"]));
        read("f", &[&forged], 1_000);
        assert_eq!(crossed("f", &ada), ["forged"]);
        read("c", &[&bo, &unknown, &discord, &group], 1_000);
        read("c", &[&"4f1c2e3a-thread".to_owned()], 2_000);
        // Newest first (the thread), then, read at one time, in any order.
        let sorted = |mut names: Vec<String>| {
            names[1..].sort();
            names
        };
        assert_eq!(sorted(crossed("c", &ada)), ["4f1c2e3a-thread", "900", "bo", "unknown"], "the group passes");
        assert_eq!(sorted(crossed("c", &unknown)), ["4f1c2e3a-thread", "900", "bo", "group"], "readers unknown");
        // Reads before the window do not count.
        assert!(store.crossings("c", &ada, 5_000, 50).expect("crossings").crossed.is_empty());
        // Read again within the second: memory holds it, and the person is shown it.
        read("c", &[&bo], 1_500);
        let seen = store.crossings("c", &ada, 0, 50).expect("crossings").crossed;
        assert_eq!(seen.iter().find(|g| g.name == "bo").map(|g| g.read_at), Some(1_500));
        // An approval forgets what the person saw, but not what was read again since.
        read("c", &[&bo], 1_800);
        assert_eq!(store.forget_reads("c", &seen).expect("forget"), 3);
        let left = store.crossings("c", &ada, 0, 50).expect("crossings").crossed;
        assert_eq!(left.iter().map(|g| (g.name.as_str(), g.read_at)).collect::<Vec<_>>(), [("bo", 1_800)]);
    }
}
