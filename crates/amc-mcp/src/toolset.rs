//! What the host knows of the bridge's tools. A host started before AMC still gets them:
//! `tools/list` answers from the daemon when it can, else with the daemon's last answer (or
//! this build's own toolset), and the host is told `notifications/tools/list_changed` once
//! the daemon is reached after that, or lists other tools than the host was given.
//!
//! The bridge declares `tools.listChanged`. A host on the `initialize` handshake is told
//! on its session once it is initialized; a host on 2026-07-28 is told on each
//! `subscriptions/listen` it keeps open (Claude Code opens one right after `server/discover`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::Tool;
use rmcp::service::{Peer, SubscriptionSink};
use tokio_util::sync::CancellationToken;

use crate::link::{Failure, Link};
use crate::reach::Problem;

/// The first pause after the daemon could not be reached; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// How often, at most, a daemon that is down is looked for again: how late a host started
/// before AMC hears of its tools, beyond AMC's own start.
const MAX_PAUSE: Duration = Duration::from_secs(1);
/// How often a daemon that refuses this agent is asked again.
const REFUSED_PAUSE: Duration = Duration::from_secs(30);

/// The tools the host was given, and where to tell it they changed.
pub(crate) struct Toolset {
    /// What `tools/list` answers while the daemon cannot.
    known: std::sync::Mutex<Vec<Tool>>,
    /// Whether the host was answered without the daemon since it was last told of a change.
    answered_alone: AtomicBool,
    listeners: std::sync::Mutex<Listeners>,
}

/// Where the host listens for changes.
#[derive(Default)]
struct Listeners {
    /// A session on the `initialize` handshake, once initialized.
    session: Option<Peer<RoleServer>>,
    /// Each open `subscriptions/listen` (2026-07-28).
    subscriptions: Vec<SubscriptionSink>,
}

impl Toolset {
    /// A toolset that answers `builtin` until the daemon gives its own.
    pub(crate) fn new(builtin: Vec<Tool>) -> Self {
        Self {
            known: std::sync::Mutex::new(builtin),
            answered_alone: AtomicBool::new(false),
            listeners: Default::default(),
        }
    }

    /// The answer to `tools/list` while the daemon cannot give one.
    pub(crate) fn answer_alone(&self) -> Vec<Tool> {
        self.answered_alone.store(true, Ordering::SeqCst);
        self.known.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The daemon answered `tools/list` with `tools`: the host has them.
    pub(crate) fn answered_by_daemon(&self, tools: &[Tool]) {
        *self.known.lock().unwrap_or_else(|p| p.into_inner()) = tools.to_vec();
    }

    /// Takes the daemon's list; true when the host should list its tools again.
    fn learn(&self, tools: Vec<Tool>) -> bool {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        let changed = *known != tools;
        *known = tools;
        let alone = self.answered_alone.swap(false, Ordering::SeqCst);
        changed || alone
    }

    /// The host's session on the `initialize` handshake is initialized.
    pub(crate) fn listen_on_session(&self, peer: Peer<RoleServer>) {
        self.listeners.lock().unwrap_or_else(|p| p.into_inner()).session = Some(peer);
    }

    /// The host opened a `subscriptions/listen` for tool changes.
    pub(crate) fn listen_on(&self, sink: SubscriptionSink) {
        self.listeners.lock().unwrap_or_else(|p| p.into_inner()).subscriptions.push(sink);
    }

    /// The host closed a `subscriptions/listen`.
    pub(crate) fn stop_listening_on(&self, id: &rmcp::model::RequestId) {
        self.listeners.lock().unwrap_or_else(|p| p.into_inner()).subscriptions.retain(|s| s.id() != id);
    }

    /// Tells the host its tools changed, wherever it listens.
    async fn tell(&self) {
        let (session, subscriptions) = {
            let listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
            (listeners.session.clone(), listeners.subscriptions.clone())
        };
        if let Some(peer) = session
            && let Err(e) = peer.notify_tool_list_changed().await
        {
            tracing::debug!(error = %e, "amc mcp could not tell the host its tools changed");
        }
        for sink in subscriptions {
            if let Err(e) = sink.notify_tool_list_changed().await {
                tracing::debug!(error = %e, "amc mcp could not tell a subscription its tools changed");
                self.stop_listening_on(sink.id());
            }
        }
    }
}

/// Follows the daemon until `host_gone`: lists its tools each time it is reached, tells the
/// host when they are not what the host was given, and waits for the daemon to go away.
pub(crate) async fn follow(link: Arc<Link>, toolset: Arc<Toolset>, host_gone: CancellationToken) {
    let mut pause = FIRST_PAUSE;
    loop {
        let listed = tokio::select! {
            listed = link.relay(async |up| up.list_all_tools().await) => listed,
            () = host_gone.cancelled() => return,
        };
        let wait = match listed {
            Ok(tools) => {
                pause = FIRST_PAUSE;
                if toolset.learn(tools) {
                    toolset.tell().await;
                }
                tokio::select! {
                    () = link.gone() => {}
                    () = host_gone.cancelled() => return,
                }
                continue;
            }
            Err(Failure::Unreachable { problem: Problem::Config(_), .. }) => return,
            Err(Failure::Unreachable {
                problem: Problem::NotRunning(_) | Problem::NotResponding(_) | Problem::Other(_),
                ..
            }) => {
                let wait = pause;
                pause = (pause * 2).min(MAX_PAUSE);
                wait
            }
            Err(Failure::Unreachable { problem: Problem::Refused(_) | Problem::MissingCredentials, .. })
            | Err(Failure::Protocol(_)) => REFUSED_PAUSE,
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = host_gone.cancelled() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_told_when_it_was_answered_alone_or_the_daemon_lists_other_tools() {
        let builtin = crate::tools::inbox_tools();
        let toolset = Toolset::new(builtin.clone());
        // The daemon lists what this build has, and the host was never answered alone.
        assert!(!toolset.learn(builtin.clone()));
        // The daemon was down when the host asked; it is back with the same tools.
        assert_eq!(toolset.answer_alone(), builtin);
        assert!(toolset.learn(builtin.clone()));
        assert!(!toolset.learn(builtin.clone()), "told once");
        // A newer daemon lists another toolset.
        let fewer = builtin[..3].to_vec();
        assert!(toolset.learn(fewer.clone()));
        // While it is down, the host is answered with what it last listed.
        assert_eq!(toolset.answer_alone(), fewer);
    }
}
