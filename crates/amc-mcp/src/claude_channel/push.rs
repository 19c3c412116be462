//! The bridge's push: asks the daemon what is new for this agent (`GET /messages/push`),
//! writes each item to the host as a Claude Code channel notification, and then
//! acknowledges the batch, so the daemon's position moves only past what went out.
//!
//! - The host going away stops it; a batch not written is not acknowledged, so the next
//!   session is told it.
//! - Only a session that has shown it works in what it is told ([`Working`]) acknowledges.
//!   Until then the push goes on after what it told (`after`) without recording it: a host's
//!   health check, told the backlog, leaves it to the next session.
//! - A daemon that stops or restarts is waited for and picked up again; an acknowledgement
//!   that could not reach it is given again before anything else.
//! - A refused agent (revoked, or without `AMC_AGENT_ID`) is said once on stderr, and asked
//!   again now and then: the tools' answers tell the agent the rest.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{CustomNotification, ServerNotification};
use rmcp::service::Peer;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::working::Working;
use crate::reach::{BridgeConfig, agent_connection, check};

/// How long one push request may wait at the daemon.
const WAIT_SECONDS: u64 = 25;
/// Beyond the wait: how long a push request may take before the bridge gives up on it.
const SLACK: Duration = Duration::from_secs(10);
/// The first pause after a failure; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(200);
const MAX_PAUSE: Duration = Duration::from_secs(5);
/// The pause after the daemon refused this agent.
const REFUSED_PAUSE: Duration = Duration::from_secs(30);

/// Why a round of the push ended.
enum Stop {
    /// The host is gone: stop for good.
    HostGone,
    /// The daemon could not be reached, or failed: try again soon, then less and less often.
    Failed,
    /// The daemon refused this agent: try again now and then.
    Refused,
    /// The session showed it works while the push waited: acknowledge what it was told now.
    Shown,
}

/// What carries over from one round to the next.
#[derive(Default)]
struct State {
    /// The acknowledgement of the last batch that went out, not yet taken by the daemon:
    /// given once the session has shown it works, and meanwhile the place to go on from.
    told: Option<String>,
    /// The problem last said on stderr.
    said: Option<String>,
    /// Whether the last round got an answer from the daemon.
    answered: bool,
}

/// Pushes to `peer` until `stop` is cancelled (the host went away) or the host's side of
/// the transport closes.
pub(crate) async fn run(
    cfg: BridgeConfig,
    session: String,
    peer: Peer<RoleServer>,
    working: Arc<Working>,
    stop: CancellationToken,
) {
    // What the bridge said at its start (the same check) is not said again.
    let mut state = State { said: check(&cfg).await.err().map(|p| p.to_string()), ..State::default() };
    let mut pause = FIRST_PAUSE;
    loop {
        state.answered = false;
        let ended = round(&cfg, &session, &peer, &working, &mut state, &stop).await;
        let wait = match ended {
            Stop::HostGone => return,
            Stop::Shown => continue,
            Stop::Refused => REFUSED_PAUSE,
            Stop::Failed => {
                if state.answered {
                    pause = FIRST_PAUSE;
                }
                let wait = pause;
                pause = (pause * 2).min(MAX_PAUSE);
                wait
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = stop.cancelled() => return,
        }
    }
}

/// Says a problem on stderr once, until it changes.
fn say(said: &mut Option<String>, what: String) {
    if said.as_deref() != Some(what.as_str()) {
        tracing::warn!("amc mcp: {what}");
        *said = Some(what);
    }
}

/// Says why the daemon cannot be reached as this agent, in the words of the bridge's own
/// check.
async fn report(cfg: &BridgeConfig, state: &mut State) {
    if let Err(problem) = check(cfg).await {
        say(&mut state.said, problem.to_string());
    }
}

/// Asks and pushes until something fails. Only the wait for news ends when `stop` is
/// cancelled: a batch written out to a working session is always acknowledged first.
async fn round(
    cfg: &BridgeConfig,
    session: &str,
    peer: &Peer<RoleServer>,
    working: &Working,
    state: &mut State,
    stop: &CancellationToken,
) -> Stop {
    let Some(mut conn) = connect(cfg).await else {
        report(cfg, state).await;
        return Stop::Failed;
    };
    loop {
        if working.is_shown() && !acknowledge(&mut conn, state).await {
            return Stop::Failed;
        }
        if stop.is_cancelled() || peer.is_transport_closed() {
            return Stop::HostGone;
        }
        let mut path = format!("/messages/push?timeout_seconds={WAIT_SECONDS}&session={session}");
        if let Some(told) = &state.told {
            path.push_str(&format!("&after={told}"));
        }
        // What was told is acknowledged as soon as the session shows it works, not after
        // the wait: the request is given up, and the next round acknowledges first.
        let shown = async {
            if state.told.is_some() && !working.is_shown() {
                working.shown().await
            } else {
                std::future::pending().await
            }
        };
        let asked = tokio::select! {
            asked = tokio::time::timeout(Duration::from_secs(WAIT_SECONDS) + SLACK, conn.get(&path)) => asked,
            () = shown => return Stop::Shown,
            () = stop.cancelled() => return Stop::HostGone,
        };
        let resp = match asked {
            Ok(Ok(r)) => r,
            Ok(Err(_)) | Err(_) => {
                report(cfg, state).await;
                return Stop::Failed;
            }
        };
        if !resp.status.is_success() {
            if resp.status.as_u16() == 422 && state.told.take().is_some() {
                // A place the daemon no longer takes: go on from the recorded one, which
                // tells this session again what it was told.
                return Stop::Failed;
            }
            if resp.status.as_u16() == 401 {
                report(cfg, state).await;
                return Stop::Refused;
            }
            let why = format!("push stopped: AMC answered {}: {}", resp.status.as_u16(), message(&resp));
            say(&mut state.said, why);
            return if resp.status.is_client_error() { Stop::Refused } else { Stop::Failed };
        }
        state.answered = true;
        state.said = None;
        let batch = resp.json();
        for item in batch["items"].as_array().into_iter().flatten() {
            let Some((method, params)) = super::notification(item) else { continue };
            let note = ServerNotification::CustomNotification(CustomNotification::new(method, Some(params)));
            if peer.send_notification(note).await.is_err() {
                // Not written: the next session is told it.
                return Stop::HostGone;
            }
        }
        state.told = batch["ack"].as_str().map(str::to_owned);
    }
}

/// A connection to the daemon as this agent.
async fn connect(cfg: &BridgeConfig) -> Option<amc_client::Connection> {
    agent_connection(cfg).await.ok()
}

/// Relays Claude Code's request to use a tool (`params` of its permission_request) to the
/// daemon, for the person to answer. Nothing is lost if it fails: Claude Code still shows
/// its own prompt.
pub(crate) async fn relay_tool_request(cfg: &BridgeConfig, session: &str, params: Option<Value>) {
    let p = params.unwrap_or_default();
    let field = |k: &str| p[k].as_str().unwrap_or_default().to_owned();
    let body = json!({
        "session": session,
        "request_id": field("request_id"),
        "tool_name": field("tool_name"),
        "description": field("description"),
        "input_preview": field("input_preview"),
    });
    let sent = match connect(cfg).await {
        Some(mut conn) => conn.post("/tool-requests", &body).await.ok(),
        None => None,
    };
    match sent {
        Some(r) if r.status.is_success() => {}
        Some(r) => tracing::warn!("amc mcp: AMC did not take a tool request: {}", message(&r)),
        None => tracing::warn!("amc mcp: AMC could not be reached to show a tool request"),
    }
}

/// Tells the daemon this session ended: its tool requests still waiting leave the tray.
pub(crate) async fn end_session(cfg: &BridgeConfig, session: &str) {
    if let Some(mut conn) = connect(cfg).await {
        let _ = conn.post("/tool-requests/end", &json!({ "session": session })).await;
    }
}

/// Gives the daemon the acknowledgement of the batch that went out, if any. False when the
/// daemon could not be reached (it is given again on the next round).
async fn acknowledge(conn: &mut amc_client::Connection, state: &mut State) -> bool {
    let Some(ack) = state.told.as_deref() else { return true };
    match conn.post("/messages/push/ack", &json!({ "ack": ack })).await {
        Ok(r) if r.status.is_success() => state.told = None,
        Ok(r) => {
            // An acknowledgement the daemon refuses will never be taken: drop it.
            say(&mut state.said, format!("push acknowledgement refused: {}", message(&r)));
            state.told = None;
        }
        Err(_) => return false,
    }
    true
}

fn message(r: &amc_client::Response) -> String {
    let v: Value = r.json();
    v["error"]["message"].as_str().unwrap_or("no reason given").to_owned()
}
