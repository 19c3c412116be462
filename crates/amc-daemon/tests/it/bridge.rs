//! `amc mcp`'s bridge run in this process over an in-memory stdio, against the real daemon:
//! a host's health check is told the push backlog but leaves it for the next session, in
//! whichever order the two come.

use std::time::Duration;

use amc_core::model::Source;
use amc_core::time::now_ms;
use amc_mcp::bridge::Bridge;
use amc_mcp::reach::BridgeConfig;
use rmcp::model::{CallToolRequestParams, CustomNotification};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::harness::{Daemon, msg};

/// How long a session stays before it counts, here: long enough to be seen, short enough
/// not to slow the tests.
const SETTLE: Duration = Duration::from_millis(200);

/// The host's side: each channel event's content, as it arrives.
struct Host(mpsc::UnboundedSender<String>);

impl ClientHandler for Host {
    async fn on_custom_notification(&self, n: CustomNotification, _: NotificationContext<RoleClient>) {
        if n.method == amc_mcp::claude_channel::CHANNEL_METHOD {
            let content = n.params.as_ref().and_then(|p| p["content"].as_str()).unwrap_or_default();
            let _ = self.0.send(unfenced(content));
        }
    }
}

/// A pushed message's content with the fence around another person's text taken off
/// (`amc_mcp::fence`), checked to close with the nonce it opened with.
fn unfenced(content: &str) -> String {
    let Some(rest) = content.strip_prefix("⟦untrusted ") else { return content.to_owned() };
    let (nonce, rest) = rest.split_once('⟧').expect("the fence's nonce");
    let close = format!("⟦/untrusted {nonce}⟧");
    let (text, after) = rest.split_once(&close).expect("closed with its nonce");
    format!("{text}{after}")
}

/// A host's session with the bridge: its MCP client, the channel events it is told, and
/// the bridge, which ends when the session closes.
struct Session {
    client: RunningService<RoleClient, Host>,
    told: mpsc::UnboundedReceiver<String>,
    bridge: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Session {
    /// Starts the bridge for agent `claude` and goes through the handshake and `tools/list`:
    /// all a health check (`claude mcp list`, `claude mcp get`) does.
    async fn start(d: &Daemon, token: &str) -> Self {
        let (host_io, bridge_io) = tokio::io::duplex(1 << 16);
        let cfg = BridgeConfig {
            socket: d.socket(),
            endpoint: "/mcp".into(),
            token: Some(token.to_owned()),
            agent_id: Some("claude".into()),
            push: true,
            push_settle: SETTLE,
        };
        let bridge = tokio::spawn(Bridge::new(cfg).serve_stdio(tokio::io::split(bridge_io)));
        let (tx, told) = mpsc::unbounded_channel();
        let client = Host(tx).serve(host_io).await.expect("handshake");
        let tools = client.list_all_tools().await.expect("tools/list");
        assert!(tools.iter().any(|t| t.name == "list_unread_messages"), "{tools:?}");
        Self { client, told, bridge }
    }

    /// The next channel event's content.
    async fn next(&mut self) -> String {
        let next = tokio::time::timeout(Duration::from_secs(30), self.told.recv()).await;
        next.expect("a channel event within 30 s").expect("the session is open")
    }

    /// What a session someone works in does: it calls a tool.
    async fn work(&self) {
        let call = CallToolRequestParams::new("list_channels").with_arguments(serde_json::Map::new());
        let result = self.client.call_tool(call).await.expect("tools/call");
        assert_ne!(result.is_error, Some(true), "{result:?}");
    }

    /// The host goes away; resolves once the bridge has ended.
    async fn close(self) {
        drop(self.told);
        let _ = self.client.cancel().await;
        let ended = tokio::time::timeout(Duration::from_secs(30), self.bridge).await;
        ended.expect("the bridge ends with its host").expect("join").expect("the bridge ends cleanly");
    }
}

/// The rowid up to which the agent's push is recorded.
fn recorded(d: &Daemon) -> i64 {
    let floor = d.amc.database().read(|tx| {
        Ok(tx
            .query_row("SELECT coalesce(max(floor), 0) FROM push_floors WHERE agent_id = 'claude'", [], |r| r.get(0))?)
    });
    floor.expect("floor")
}

/// Waits until the agent's push is recorded past `before`.
async fn recorded_past(d: &Daemon, before: i64) {
    amc_testkit::eventually("the push to be recorded", || async { (recorded(d) > before).then_some(()) }).await;
}

/// Approved channels, and the agent's push placed after what they hold, as after a
/// session of the past: what arrives from now on is its backlog. Each step of a test
/// writes in a channel of its own, so that no channel is told more than its three messages
/// a second.
async fn agent_with_channels(d: &Daemon) -> String {
    let (mut agent, token) = d.agent("claude").await;
    for chat in ["a", "b", "c"] {
        let (ch, _) = d.channel_with(chat, 0).await;
        d.approve(&ch, json!({ "history": "all" })).await;
    }
    let first: Value = agent.get("/messages/push?timeout_seconds=1").await.expect("push").json();
    let acked = agent.post("/messages/push/ack", &json!({ "ack": first["ack"] })).await.expect("ack");
    assert_eq!(acked.status, 200);
    token
}

async fn arrives(d: &Daemon, chat: &str, text: &str) {
    d.ingest(Source::Imessage, chat, vec![msg(&format!("{chat}-{text}"), text, now_ms())]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_health_check_leaves_the_backlog_to_the_session_after_it() {
    let d = Daemon::start().await;
    let token = agent_with_channels(&d).await;
    arrives(&d, "a", "while nobody listened").await;
    let before = recorded(&d);

    // The health check is told the backlog, and goes away without calling anything.
    let mut check = Session::start(&d, &token).await;
    assert_eq!(check.next().await, "while nobody listened");
    check.close().await;
    assert_eq!(recorded(&d), before, "a health check recorded the backlog as told");

    // The next session is told it, and records it once it has worked and stayed.
    let mut session = Session::start(&d, &token).await;
    assert_eq!(session.next().await, "while nobody listened");
    session.work().await;
    recorded_past(&d, before).await;
    let before = recorded(&d);
    arrives(&d, "b", "then this").await;
    assert_eq!(session.next().await, "then this");
    // Recorded before the session ends: one that ends while an event is being written to it
    // is told it again next time (Claude Code confirms nothing).
    recorded_past(&d, before).await;
    session.close().await;

    // Nothing is told twice.
    let mut after = Session::start(&d, &token).await;
    arrives(&d, "c", "and this").await;
    assert_eq!(after.next().await, "and this");
    after.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_health_check_beside_or_after_a_working_session_uses_nothing_up() {
    let d = Daemon::start().await;
    let token = agent_with_channels(&d).await;

    let mut session = Session::start(&d, &token).await;
    session.work().await;
    let before = recorded(&d);
    arrives(&d, "a", "one").await;
    assert_eq!(session.next().await, "one");
    recorded_past(&d, before).await;
    let before = recorded(&d);
    // A health check while the session is open: the session is still told, and records.
    let check = Session::start(&d, &token).await;
    arrives(&d, "b", "two").await;
    assert_eq!(session.next().await, "two");
    recorded_past(&d, before).await;
    check.close().await;
    session.close().await;

    // What arrives after the session ended waits through another health check.
    arrives(&d, "c", "three").await;
    let before = recorded(&d);
    let mut check = Session::start(&d, &token).await;
    assert_eq!(check.next().await, "three");
    check.close().await;
    assert_eq!(recorded(&d), before, "a health check recorded the backlog as told");
    let mut next = Session::start(&d, &token).await;
    assert_eq!(next.next().await, "three", "told from where the working session stopped");
    next.close().await;
}
