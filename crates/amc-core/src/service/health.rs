//! The sources' states, for `GET /healthz`, `amc doctor` and the tray's status screen.

use std::collections::BTreeMap;
use std::sync::RwLock;

use serde::Serialize;

use super::Amc;
use crate::model::Source;
use crate::sender::Senders;

/// How a source is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceState {
    /// Running and reachable.
    Connected,
    /// Running with a problem the person can fix (see the reason).
    Degraded,
    /// Not running.
    Disabled,
}

/// A source's state and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceStatus {
    /// The state.
    pub state: SourceState,
    /// What is wrong and how to fix it, when not connected.
    pub reason: Option<String>,
    /// When the source last finished reading what was said while it was away (Discord's
    /// catch-up after a connection). Absent until it has.
    #[serde(skip_serializing_if = "Option::is_none", with = "crate::time::serde_ms::option")]
    pub caught_up_at: Option<crate::time::Millis>,
    /// Whether this source's sends are only recorded (`amc serve --test-sender`): a
    /// `connected` source in test mode reaches no one, and the person's views say "test
    /// mode" rather than "connected". Present only when true; set by [`Amc::health`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub test_mode: bool,
    /// Channels whose catch-up has not read to its end yet (a history request failed),
    /// each tried again until it does. Absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub catching_up: Vec<CatchingUp>,
}

/// A channel whose catch-up is not done: why the last try failed, and when the next is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatchingUp {
    /// AMC's id of the channel.
    pub channel_id: String,
    /// The channel's name.
    pub channel: String,
    /// Why the last try failed.
    pub reason: String,
    /// Tries so far.
    pub attempts: u32,
    /// When the next try is (`null`: none before the next connection, the refusal stays).
    #[serde(with = "crate::time::serde_ms::option")]
    pub next_try_at: Option<crate::time::Millis>,
}

impl SourceStatus {
    /// A state and its reason.
    pub fn new(state: SourceState, reason: Option<String>) -> Self {
        Self { state, reason, caught_up_at: None, test_mode: false, catching_up: Vec::new() }
    }
}

/// `GET /healthz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Health {
    /// `ok`, or `degraded` when a running source has a problem.
    pub status: &'static str,
    /// AMC's version.
    pub version: &'static str,
    /// Seconds since start.
    pub uptime_seconds: u64,
    /// Each source's state.
    pub sources: BTreeMap<Source, SourceStatus>,
    /// Whether the person paused agents' sends.
    pub agents_paused: bool,
    /// Whether AMC runs in test mode (`--test-sender`): agents' sends are recorded in
    /// `test-sender.jsonl`, not delivered. Each such source's reason says so too.
    pub test_mode: bool,
    /// While the messages stored before the search index are being indexed, and once that
    /// has taken more than a second: how far it is. Search finds the newest first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search_index: Option<amc_store::IndexProgress>,
    /// While older messages are being looked through for one-time codes and sign-in links
    /// (the counts the person's screens show), and once that has taken more than a
    /// second: how far it is. Agents' copies are hidden all the same meanwhile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secrets_scan: Option<amc_store::IndexProgress>,
}

pub(super) struct Registry {
    states: RwLock<BTreeMap<Source, SourceStatus>>,
    /// The last send refused for credentials or permissions, per source, until a send
    /// goes through again.
    send_problems: RwLock<BTreeMap<Source, String>>,
}

impl Registry {
    pub(super) fn new(senders: &Senders) -> Self {
        let states = [Source::Imessage, Source::Discord]
            .into_iter()
            .map(|s| {
                let status = if senders.get(s).is_some() {
                    SourceStatus::new(SourceState::Connected, None)
                } else {
                    SourceStatus::new(SourceState::Disabled, Some("not configured".into()))
                };
                (s, status)
            })
            .collect();
        Self { states: RwLock::new(states), send_problems: RwLock::default() }
    }
}

impl Amc {
    /// Records a source's state (sources call this as they connect and fail).
    pub fn set_source_status(&self, source: Source, mut status: SourceStatus) {
        let changed = {
            let mut states = self.inner.health.states.write().unwrap_or_else(|p| p.into_inner());
            let before = states.get(&source);
            status.caught_up_at = status.caught_up_at.or(before.and_then(|b| b.caught_up_at));
            if status.catching_up.is_empty() {
                status.catching_up = before.map(|b| b.catching_up.clone()).unwrap_or_default();
            }
            states.insert(source, status.clone()).as_ref() != Some(&status)
        };
        if changed {
            self.publish(crate::events::Event::SourceChanged { source });
        }
    }

    /// Records that a source finished reading what was said while it was away.
    pub fn note_caught_up(&self, source: Source) {
        {
            let mut states = self.inner.health.states.write().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = states.get_mut(&source) {
                s.caught_up_at = Some(crate::time::now_ms());
            }
        }
        self.publish(crate::events::Event::SourceChanged { source });
    }

    /// Records where a channel's catch-up stands: `Some` while it is not done (why, and
    /// when the next try is), `None` once it is; `channel_id` `None` forgets every channel
    /// (a new connection's catch-up starts over).
    pub fn note_catching_up(&self, source: Source, channel_id: Option<&str>, entry: Option<CatchingUp>) {
        let changed = {
            let mut states = self.inner.health.states.write().unwrap_or_else(|p| p.into_inner());
            let Some(s) = states.get_mut(&source) else { return };
            let before = s.catching_up.clone();
            s.catching_up.retain(|c| channel_id.is_some_and(|id| c.channel_id != id));
            s.catching_up.extend(entry);
            s.catching_up.sort_by(|a, b| a.channel_id.cmp(&b.channel_id));
            s.catching_up != before
        };
        if changed {
            self.publish(crate::events::Event::SourceChanged { source });
        }
    }

    /// Records how the last send of a source went: a refusal for credentials or
    /// permissions (the macOS Automation permission, a Discord token) shows in the
    /// source's health until a send goes through again.
    pub(super) fn note_send_problem(&self, source: Source, problem: Option<String>) {
        let changed = {
            let mut problems = self.inner.health.send_problems.write().unwrap_or_else(|p| p.into_inner());
            match problem {
                Some(p) => problems.insert(source, p.clone()).as_ref() != Some(&p),
                None => problems.remove(&source).is_some(),
            }
        };
        if changed {
            self.publish(crate::events::Event::SourceChanged { source });
        }
    }

    /// The daemon's health.
    pub async fn health(&self) -> Health {
        // Approved channels the platform took away: the source works, but not for them.
        let gone = self.blocking(|s| s.gone_allowed()).await.unwrap_or_default();
        let mut sources = self.inner.health.states.read().unwrap_or_else(|p| p.into_inner()).clone();
        let problems = self.inner.health.send_problems.read().unwrap_or_else(|p| p.into_inner()).clone();
        for (source, problem) in problems {
            if let Some(s) = sources.get_mut(&source).filter(|s| s.state != SourceState::Disabled) {
                s.state = SourceState::Degraded;
                s.reason = Some(match s.reason.take() {
                    Some(r) => format!("{r}; {problem}"),
                    None => problem,
                });
            }
        }
        for (source, status) in sources.iter_mut().filter(|(_, s)| s.state != SourceState::Disabled) {
            let names: Vec<&str> = gone.iter().filter(|(s, _)| s == source).map(|(_, n)| n.as_str()).collect();
            if names.is_empty() {
                continue;
            }
            let shown = names.iter().take(3).copied().collect::<Vec<_>>().join(", ");
            let more = if names.len() > 3 { format!(" and {} more", names.len() - 3) } else { String::new() };
            let note = format!(
                "{} approved {} unavailable: {shown}{more} (the Channels screen says why)",
                names.len(),
                if names.len() == 1 { "channel is" } else { "channels are" }
            );
            status.state = SourceState::Degraded;
            status.reason = Some(match status.reason.take() {
                Some(r) => format!("{r}; {note}"),
                None => note,
            });
        }
        for (source, status) in sources.iter_mut() {
            if self.inner.senders.is_recorded(*source) {
                let note = format!(
                    "test mode: agents' sends are only recorded (test-sender.jsonl); nothing reaches {}",
                    source.display_name()
                );
                status.test_mode = true;
                status.reason = Some(match status.reason.take() {
                    Some(r) => format!("{note}; {r}"),
                    None => note,
                });
            }
        }
        let degraded = sources.values().any(|s| s.state == SourceState::Degraded);
        Health {
            status: if degraded { "degraded" } else { "ok" },
            version: env!("CARGO_PKG_VERSION"),
            uptime_seconds: self.inner.started.elapsed().as_secs(),
            sources,
            agents_paused: self.paused(),
            test_mode: self.inner.senders.recording_sender().is_some(),
            search_index: self.search_indexing(),
            secrets_scan: self.secrets_classifying(),
        }
    }
}
