//! Push: new messages told to an agent as they arrive (`amc mcp` turns them into Claude
//! Code channel notifications). What is pushed is exactly what would become unread for the
//! agent: inbound, not the person's own, in a visible channel, not read yet. Pushing is
//! not reading: read state still changes only with `mark_read`.
//!
//! - **Bursts.** Each channel gets at most [`PUSH_BURST`] messages per [`PUSH_WINDOW`].
//!   What arrives beyond that is held until the window ends and then told as one "more
//!   unread" item with its count. Nothing leaves the unread list.
//! - **Exactly once.** The agent's position is kept in the store and moves only when the
//!   caller acknowledges a batch (after writing it out), so a restart of the daemon or a
//!   reconnect of the bridge goes on from where the push stopped. Positions only move
//!   forward: a repeated acknowledgement changes nothing.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::error::{Error, Result};
use crate::events::Event;
use crate::ids::is_channel_id;
use crate::model::{ChannelRef, Envelope, Source};
use crate::service::{AgentCtx, Amc};
use amc_store::{PushPosition, PushScan};

/// The most messages pushed one by one per channel per [`PUSH_WINDOW`].
pub const PUSH_BURST: usize = 3;
/// The window of [`PUSH_BURST`].
pub const PUSH_WINDOW: Duration = Duration::from_secs(1);
/// The longest wait of one push request, in seconds.
pub const MAX_PUSH_WAIT_SECONDS: i64 = 25;
/// The most messages looked at per push request.
const SCAN_LIMIT: u32 = 500;

/// One thing to tell the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PushItem {
    /// A new message, in the envelope agents know from `list_unread_messages`.
    Message {
        /// The message.
        message: Box<Envelope>,
    },
    /// The person answered a tool request of this session.
    Permission {
        /// The host's id for the request.
        request_id: String,
        /// `allow` or `deny`.
        behavior: String,
    },
    /// More messages arrived in a channel than are pushed one by one: how many.
    More {
        /// The channel's source.
        source: Source,
        /// The channel.
        channel_id: String,
        /// Its name and kind.
        channel: ChannelRef,
        /// How many unread messages this item stands for.
        count: usize,
    },
}

/// What to push now, and the acknowledgement that records it once it is out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PushBatch {
    /// In the order to tell them; empty when the wait ended with nothing new.
    pub items: Vec<PushItem>,
    /// Give it back to [`Amc::ack_push`] once the items are written out.
    pub ack: String,
}

/// `GET /messages/push`: how long to wait.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PushParams {
    /// 1..=25 seconds, default 25.
    pub timeout_seconds: Option<i64>,
    /// The `amc mcp` session asking: it is also told the person's answers to its tool
    /// requests, and counts as alive while it asks.
    pub session: Option<String>,
    /// The `ack` of the last batch this session was told and has not acknowledged: the push
    /// goes on after it without recording it. A session not yet known to show what it is
    /// told (a host's health check) is told what is new without using it up.
    pub after: Option<String>,
}

/// How long after its last push request an agent still counts as pushed to: the bridge
/// asks again at once, or after a pause of a few seconds when the daemon failed it.
const PUSHING_GRACE: Duration = Duration::from_secs(30);

/// Push requests by agent and session (`""` for a caller that names none): how many are
/// in progress, and when the last one started or ended. Whether an agent is pushed to and
/// whether a bridge session is still alive (for its tool requests) both read it.
pub(in crate::service) type Sessions = HashMap<(String, String), (usize, Instant)>;

/// Counts a push request in progress while it lives.
struct InProgress<'a> {
    amc: &'a Amc,
    key: (String, String),
}

impl<'a> InProgress<'a> {
    fn new(amc: &'a Amc, agent_id: &str, session: Option<&str>) -> Self {
        let key = (agent_id.to_owned(), session.unwrap_or_default().to_owned());
        amc.count_push(&key, 1);
        Self { amc, key }
    }
}

impl Drop for InProgress<'_> {
    fn drop(&mut self) {
        self.amc.count_push(&self.key, -1);
    }
}

/// One channel's recent pushes for one agent.
#[derive(Debug, Default)]
pub(in crate::service) struct Window {
    /// When each of the last pushes went out, within [`PUSH_WINDOW`].
    sent: VecDeque<Instant>,
    /// Since when messages beyond the burst are held back.
    held_since: Option<Instant>,
}

/// Every agent's windows, by agent and channel.
pub(in crate::service) type Windows = HashMap<String, HashMap<String, Window>>;

/// What one look at the store gives.
#[derive(Debug)]
struct Composed {
    items: Vec<PushItem>,
    position: PushPosition,
    /// When a held burst is due.
    wake_at: Option<Instant>,
}

/// Decides, for one agent, what of `scan` goes out now, what is held, and the position
/// that records it.
fn compose(scan: PushScan, windows: &mut HashMap<String, Window>, now: Instant) -> Composed {
    let mut groups: Vec<(String, Vec<(i64, Envelope)>)> = Vec::new();
    for (seq, env) in scan.messages {
        match groups.iter_mut().find(|(c, _)| *c == env.channel_id) {
            Some((_, msgs)) => msgs.push((seq, env)),
            None => groups.push((env.channel_id.clone(), vec![(seq, env)])),
        }
    }
    // A held burst the agent has read meanwhile is no longer held.
    for (channel, w) in windows.iter_mut() {
        if !groups.iter().any(|(c, _)| c == channel) {
            w.held_since = None;
        }
        w.sent.retain(|t| now.duration_since(*t) < PUSH_WINDOW);
    }
    windows.retain(|_, w| !w.sent.is_empty() || w.held_since.is_some());
    let mut items = Vec::new();
    let mut channels = Vec::new();
    let mut floor = scan.scanned_through;
    let mut wake_at: Option<Instant> = None;
    for (channel_id, msgs) in groups {
        let w = windows.entry(channel_id.clone()).or_default();
        let mut through = None;
        let mut rest = msgs.as_slice();
        if w.held_since.is_none() {
            let n = PUSH_BURST.saturating_sub(w.sent.len()).min(rest.len());
            for (seq, env) in &rest[..n] {
                items.push(PushItem::Message { message: Box::new(env.clone()) });
                w.sent.push_back(now);
                through = Some(*seq);
            }
            rest = &rest[n..];
            if !rest.is_empty() {
                w.held_since = Some(now);
            }
        }
        if let (Some((first, env)), Some(since)) = (rest.first(), w.held_since) {
            let due = since + PUSH_WINDOW;
            if now >= due {
                items.push(PushItem::More {
                    source: env.source,
                    channel_id: channel_id.clone(),
                    channel: env.channel.clone(),
                    count: rest.len(),
                });
                w.sent.push_back(now);
                w.held_since = None;
                through = rest.last().map(|(seq, _)| *seq);
            } else {
                wake_at = Some(wake_at.map_or(due, |w| w.min(due)));
                floor = floor.min(first - 1);
            }
        }
        if let Some(t) = through {
            channels.push((channel_id, t));
        }
    }
    let floor = floor.max(scan.floor);
    channels.retain(|(_, t)| *t > floor);
    Composed { items, position: PushPosition { floor, channels }, wake_at }
}

/// The acknowledgement's content: the position, and the tool decisions told.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Ack {
    f: i64,
    c: Vec<(String, i64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    t: Vec<String>,
    /// Whether the batch told anything.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    n: bool,
}

/// The most tool decisions one acknowledgement records.
const DECISIONS_LIMIT: usize = 100;

/// What an acknowledgement records: where the push stands, the tool decisions told, and
/// whether anything was told at all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Told {
    position: PushPosition,
    decisions: Vec<String>,
    any: bool,
}

/// Signs the acknowledgements handed out and checks those given back: an agent can only
/// give back one the daemon handed to it, so a forged position (far ahead, or naming
/// channels it cannot see) never moves its push.
pub(in crate::service) struct AckSigner {
    sealer: crate::crypto::Sealer,
}

/// What an acknowledgement starts with: the version of its format. `v2` was sealed by a
/// scheme of AMC's own, retired: one given back is refused, and the batch told again.
const ACK_VERSION: &str = "v3.";

impl AckSigner {
    pub(in crate::service) fn new(sealer: crate::crypto::Sealer) -> Self {
        Self { sealer }
    }

    fn encode(&self, agent_id: &str, told: &Told) -> String {
        use base64::Engine;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let p = &told.position;
        let ack = Ack { f: p.floor, c: p.channels.clone(), t: told.decisions.clone(), n: told.any };
        let mut payload = serde_json::to_vec(&ack).unwrap_or_default();
        // Sealed: the position counts the messages of every channel, those the agent
        // cannot see too. Each number takes the room of the largest, so that not even the
        // length says how far the count has gone (JSON takes the spaces after it).
        let width = |n: i64| n.max(1).ilog10() as usize + 1;
        let room: usize =
            std::iter::once(p.floor).chain(p.channels.iter().map(|(_, t)| *t)).map(|n| 19 - width(n)).sum();
        payload.resize(payload.len() + room, b' ');
        format!("{ACK_VERSION}{}", URL_SAFE_NO_PAD.encode(self.sealer.seal(agent_id, &payload)))
    }

    fn decode(&self, agent_id: &str, s: &str) -> Result<Told> {
        use base64::Engine;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let invalid = || Error::validation("ack must be the ack of a batch this agent got from GET /messages/push");
        let sealed = s.strip_prefix(ACK_VERSION).ok_or_else(invalid)?;
        let sealed = URL_SAFE_NO_PAD.decode(sealed).map_err(|_| invalid())?;
        let payload = self.sealer.open(agent_id, &sealed).ok_or_else(invalid)?;
        // Signed by this daemon, so well formed; checked all the same, should the key leak.
        let ack: Ack = serde_json::from_slice(&payload).map_err(|_| invalid())?;
        if ack.f < 0 || ack.c.len() > SCAN_LIMIT as usize || ack.c.iter().any(|(c, t)| !is_channel_id(c) || *t < 0) {
            return Err(invalid());
        }
        if ack.t.len() > DECISIONS_LIMIT || ack.t.iter().any(|id| !id.starts_with("tr_") || id.len() > 64) {
            return Err(invalid());
        }
        Ok(Told { position: PushPosition { floor: ack.f, channels: ack.c }, decisions: ack.t, any: ack.n })
    }
}

/// The push's state besides the store: the acknowledgements' key, each agent's recent
/// pushes per channel, and the push requests of each bridge session.
pub(in crate::service) struct PushState {
    signer: AckSigner,
    windows: std::sync::Mutex<Windows>,
    sessions: std::sync::Mutex<Sessions>,
}

impl PushState {
    pub(in crate::service) fn new(sealer: crate::crypto::Sealer) -> Self {
        Self { signer: AckSigner::new(sealer), windows: Default::default(), sessions: Default::default() }
    }
}

impl Amc {
    /// What to push to the agent now. When nothing is new, waits up to `timeout_seconds`
    /// (or until `cancelled`) for a message, on the change feed: an idle push costs
    /// nothing. Ends with `UNAUTHORIZED` when the agent is revoked.
    pub async fn next_push(
        &self,
        agent: &AgentCtx,
        p: PushParams,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<PushBatch> {
        let timeout = p.timeout_seconds.unwrap_or(MAX_PUSH_WAIT_SECONDS);
        if !(1..=MAX_PUSH_WAIT_SECONDS).contains(&timeout) {
            return Err(Error::validation(format!(
                "timeout_seconds must be an integer from 1 to {MAX_PUSH_WAIT_SECONDS}"
            )));
        }
        if let Some(session) = &p.session
            && !super::tools::is_plain_id(session)
        {
            return Err(Error::validation("session must be 1 to 64 of A-Z, a-z, 0-9, - and _"));
        }
        let told = match &p.after {
            Some(after) => self.inner.push.signer.decode(&agent.agent_id, after)?,
            None => Told::default(),
        };
        let _slot = self.inner.waits.enter(&agent.agent_id)?;
        let deadline = Instant::now() + Duration::from_secs(timeout as u64);
        // Listen before looking, so a message stored in between still wakes the wait.
        let mut events = self.events().subscribe();
        let mut revocations = self.revocations();
        let agent_id = agent.agent_id.clone();
        self.blocking(move |s| s.push_floor(&agent_id)).await?;
        let _in_progress = InProgress::new(self, &agent.agent_id, p.session.as_deref());
        tokio::pin!(cancelled);
        loop {
            let (agent_id, session) = (agent.agent_id.clone(), p.session.clone());
            let mut decisions = match session {
                Some(session) => self.blocking(move |s| s.undelivered_decisions(&agent_id, &session)).await?,
                None => Vec::new(),
            };
            decisions.retain(|(id, _, _)| !told.decisions.contains(id));
            let (agent_id, from) = (agent.agent_id.clone(), told.position.clone());
            let scan = self
                .blocking(move |s| {
                    let mut scan = s.push_scan(&agent_id, &from, SCAN_LIMIT)?;
                    crate::service::inbox::note_given(s, &agent_id, scan.messages.iter().map(|(_, m)| m))?;
                    let shown = s.codes_shown_to(&agent_id)?;
                    for (_, message) in &mut scan.messages {
                        crate::service::inbox::seen_by(&agent_id, &shown, std::slice::from_mut(message));
                    }
                    Ok(scan)
                })
                .await?;
            let composed = {
                let mut windows = self.inner.push.windows.lock().unwrap_or_else(|p| p.into_inner());
                let mine = windows.entry(agent.agent_id.clone()).or_default();
                let composed = compose(scan, mine, Instant::now());
                if mine.is_empty() {
                    windows.remove(&agent.agent_id);
                }
                composed
            };
            // An acknowledgement stands for every batch told since the last one recorded.
            let room = DECISIONS_LIMIT.saturating_sub(told.decisions.len());
            decisions.truncate(room);
            let mut told_now = told.clone();
            told_now.decisions.extend(decisions.iter().map(|(id, _, _)| id.clone()));
            let mut items: Vec<PushItem> = decisions
                .into_iter()
                .map(|(_, request_id, allowed)| PushItem::Permission {
                    request_id,
                    behavior: if allowed { "allow" } else { "deny" }.to_owned(),
                })
                .collect();
            items.extend(composed.items);
            told_now.position = told.position.then(composed.position);
            told_now.any |= !items.is_empty();
            let ack = self.inner.push.signer.encode(&agent.agent_id, &told_now);
            let batch = PushBatch { ack, items };
            if !batch.items.is_empty() {
                return Ok(batch);
            }
            let wake = composed.wake_at.map_or(deadline, |w| w.min(deadline));
            loop {
                let look = tokio::select! {
                    () = tokio::time::sleep_until(wake) => {
                        if wake >= deadline {
                            return Ok(batch);
                        }
                        true
                    }
                    () = &mut cancelled => return Ok(batch),
                    Ok(()) = revocations.changed() => {
                        if self.is_agent_revoked(agent.agent_id.clone()).await? {
                            return Err(Error::unauthorized("this agent was revoked"));
                        }
                        false
                    }
                    event = events.recv() => match event {
                        Ok(Event::MessagesChanged { inserted, .. }) => inserted > 0,
                        Ok(Event::ChannelChanged { .. }) => true,
                        Ok(Event::ToolRequestChanged { agent_id, .. }) => agent_id == agent.agent_id,
                        Ok(_) => false,
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => true,
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(batch),
                    },
                };
                if look {
                    break;
                }
            }
        }
    }

    /// Whether a session of the agent is being pushed to: a push request in progress, or
    /// one that ended moments ago.
    pub(in crate::service) fn is_pushing(&self, agent_id: &str) -> bool {
        let sessions = self.inner.push.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.iter().any(|((agent, _), (n, last))| agent == agent_id && (*n > 0 || last.elapsed() < PUSHING_GRACE))
    }

    /// Whether the push of one bridge session asks now or did within `within`.
    pub(in crate::service) fn session_alive(&self, agent_id: &str, session: &str, within: Duration) -> bool {
        let sessions = self.inner.push.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions
            .get(&(agent_id.to_owned(), session.to_owned()))
            .is_some_and(|(n, last)| *n > 0 || last.elapsed() < within)
    }

    fn count_push(&self, key: &(String, String), delta: isize) {
        let mut sessions = self.inner.push.sessions.lock().unwrap_or_else(|p| p.into_inner());
        let entry = sessions.entry(key.clone()).or_insert((0, Instant::now()));
        entry.0 = entry.0.saturating_add_signed(delta);
        entry.1 = Instant::now();
    }

    /// Records that a batch from [`Amc::next_push`] went out.
    pub async fn ack_push(&self, agent: &AgentCtx, ack: &str) -> Result<()> {
        let told = self.inner.push.signer.decode(&agent.agent_id, ack)?;
        let agent_id = agent.agent_id.clone();
        self.blocking(move |s| {
            s.record_push(&agent_id, &told.position, told.any)?;
            if told.decisions.is_empty() { Ok(()) } else { s.mark_decisions_delivered(&agent_id, &told.decisions) }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ChannelKind, Direction, SenderInfo};

    /// An acknowledgement as the release before v3 sealed it, for an agent named `claude`.
    const LEGACY_V2_ACK: &str = "v2.hJ9gzR703RFEWODFVK0lUH5L7pmgrd1qKJHMssKZ-Wnb4pss6-8EYB-wYdGdz-w6Pq8nuWluiK0Y-0dPjcO0ctU2Ykwr87T153zyGnNPFhHg706vwByYMI61JAwK1kgN";

    fn env(id: usize, channel: &str) -> Envelope {
        Envelope {
            id: format!("msg_{id:026}"),
            source: Source::Discord,
            channel_id: channel.into(),
            channel: ChannelRef { name: channel.into(), kind: ChannelKind::Group },
            sender: SenderInfo { id: "u".into(), display_name: None, is_self: false },
            text: format!("m{id}"),
            sent_at: 0,
            edited_at: None,
            unsent: false,
            reply_to: None,
            reactions: Vec::new(),
            attachments: Vec::new(),
            direction: Direction::Inbound,
            agent_id: None,
            thread: None,
            delivery_failed: None,
            untrusted_content: true,
            redacted: Vec::new(),
            secrets: Vec::new(),
            secret_spans: Vec::new(),
            not_a_code: false,
        }
    }

    fn scan(floor: i64, msgs: &[(i64, &str)], through: i64) -> PushScan {
        PushScan {
            floor,
            messages: msgs.iter().map(|(seq, ch)| (*seq, env(*seq as usize, ch))).collect(),
            scanned_through: through,
        }
    }

    fn told(c: &Composed) -> Vec<String> {
        c.items
            .iter()
            .map(|i| match i {
                PushItem::Message { message } => message.text.clone(),
                PushItem::More { channel_id, count, .. } => format!("{count} more in {channel_id}"),
                PushItem::Permission { request_id, behavior } => format!("{behavior} {request_id}"),
            })
            .collect()
    }

    #[test]
    fn a_burst_is_told_as_three_messages_then_one_count_when_the_window_ends() {
        let t0 = Instant::now();
        let mut w = HashMap::new();
        let burst: Vec<(i64, &str)> = (1..=10).map(|i| (i, "ch_a")).collect();
        let first = compose(scan(0, &burst, 10), &mut w, t0);
        assert_eq!(told(&first), ["m1", "m2", "m3"]);
        // The floor stays below what is held; the channel is recorded as pushed through 3.
        assert_eq!(first.position, PushPosition { floor: 3, channels: vec![] });
        assert_eq!(first.wake_at, Some(t0 + PUSH_WINDOW));
        // Asked again within the window (more arrived): nothing yet.
        let held: Vec<(i64, &str)> = (4..=12).map(|i| (i, "ch_a")).collect();
        let early = compose(scan(3, &held, 12), &mut w, t0 + Duration::from_millis(500));
        assert!(early.items.is_empty());
        assert_eq!(early.position.floor, 3);
        // At the window's end: one count for everything held, and the floor passes it.
        let due = compose(scan(3, &held, 12), &mut w, t0 + PUSH_WINDOW);
        assert_eq!(told(&due), ["9 more in ch_a"]);
        assert_eq!(due.position, PushPosition { floor: 12, channels: vec![] });
    }

    #[test]
    fn a_held_channel_does_not_hold_back_the_others() {
        let t0 = Instant::now();
        let mut w = HashMap::new();
        let msgs = [(1, "ch_a"), (2, "ch_a"), (3, "ch_a"), (4, "ch_a"), (5, "ch_b"), (6, "ch_a")];
        let c = compose(scan(0, &msgs, 6), &mut w, t0);
        assert_eq!(told(&c), ["m1", "m2", "m3", "m5"]);
        // Everything up to the first held message is handled; ch_b is recorded past it.
        assert_eq!(c.position, PushPosition { floor: 3, channels: vec![("ch_b".into(), 5)] });
    }

    #[test]
    fn a_slow_channel_is_told_every_message() {
        let t0 = Instant::now();
        let mut w = HashMap::new();
        for i in 0..10 {
            let at = t0 + Duration::from_millis(400 * i as u64);
            let c = compose(scan(i, &[(i + 1, "ch_a")], i + 1), &mut w, at);
            assert_eq!(told(&c), [format!("m{}", i + 1)], "message {}", i + 1);
        }
    }

    #[test]
    fn a_held_burst_the_agent_read_meanwhile_is_not_counted() {
        let t0 = Instant::now();
        let mut w = HashMap::new();
        let burst: Vec<(i64, &str)> = (1..=5).map(|i| (i, "ch_a")).collect();
        compose(scan(0, &burst, 5), &mut w, t0);
        // The agent marked 4 and 5 read: nothing is left to count, and the floor moves on.
        let c = compose(scan(3, &[], 5), &mut w, t0 + Duration::from_millis(100));
        assert!(c.items.is_empty());
        assert_eq!(c.position.floor, 5);
        assert_eq!(c.wake_at, None);
    }

    #[test]
    fn a_position_told_after_another_keeps_the_furthest_of_each() {
        let earlier = PushPosition { floor: 3, channels: vec![("ch_b".into(), 5), ("ch_c".into(), 9)] };
        let next = PushPosition { floor: 6, channels: vec![("ch_c".into(), 7), ("ch_d".into(), 8)] };
        // ch_b is under the new floor; ch_c was told furthest in the earlier batch.
        assert_eq!(
            earlier.then(next),
            PushPosition { floor: 6, channels: vec![("ch_c".into(), 9), ("ch_d".into(), 8)] }
        );
    }

    #[test]
    fn an_ack_holds_only_as_signed_for_its_agent() {
        let keys = |byte| crate::crypto::Keys::derive(&[byte; crate::crypto::ROOT_KEY_LEN]);
        let signer = AckSigner::new(keys(1).push_acks().clone());
        let p = PushPosition { floor: 7, channels: vec![("ch_01HXYZABCDEFGHJKMNPQRSTVWX".into(), 9)] };
        let told = Told { position: p, decisions: vec!["tr_01HXYZABCDEFGHJKMNPQRSTVWX".to_owned()], any: true };
        let ack = signer.encode("claude", &told);
        assert_eq!(signer.decode("claude", &ack).expect("round trip"), told);
        assert!(!ack.contains("eyJ"), "the position is not readable: {ack}");
        // Nor its size: positions of any length seal to the same length.
        let far = Told { position: PushPosition { floor: 7_000_000_000, ..told.position.clone() }, ..told.clone() };
        assert_eq!(signer.encode("claude", &far).len(), ack.len());
        let sealed = ack.strip_prefix("v3.").expect("sealed");
        let far = {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(r#"{{"f":{},"c":[]}}"#, i64::MAX))
        };
        for forged in [
            String::new(),
            "not base64!".into(),
            "e30".into(),
            sealed.to_owned(),
            format!("v2.{far}"),
            format!("v1.{far}.{}", &sealed[..43]),
            format!("v3.{}", &sealed[1..]),
            // Its first character changed (to one it is not: the nonce is random).
            format!("v3.{}{}", if sealed.starts_with('A') { 'B' } else { 'A' }, &sealed[1..]),
            format!("v2.{sealed}"),
            format!("{ack}.x"),
            // Sealed by the scheme before v3 (for an agent named claude).
            LEGACY_V2_ACK.to_owned(),
        ] {
            let err = signer.decode("claude", &forged).expect_err(&forged);
            assert_eq!(err.code, crate::error::ErrorCode::ValidationFailed, "{forged}");
        }
        assert!(signer.decode("other", &ack).is_err(), "another agent's ack");
        assert!(AckSigner::new(keys(2).push_acks().clone()).decode("claude", &ack).is_err(), "another install's");
        assert!(
            AckSigner::new(keys(1).push_acks().clone()).decode("claude", &ack).is_ok(),
            "the same root key after a restart"
        );
    }
}
