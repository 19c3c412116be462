//! Follows the core's change feed for the tray: the menu's counts are read again after
//! each change that can move them, and what newly waits for the person (a channel seen
//! for the first time, a send held for review) is gathered into one notice.
//!
//! Notices are coalesced: the first change opens a short settling window so a burst
//! (an import of many chats, an agent sending several messages) becomes one notice, and
//! two notices are at least [`NoticePolicy::min_gap`] apart. A notice only names what
//! still waits when it is raised. A tool request is the exception: a Claude Code session
//! waits on the answer, so its notice goes out after [`NoticePolicy::refresh`], whatever
//! the last notice.

use std::future::Future;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use amc_core::events::Event;
use amc_core::model::{OutboxStatus, ToolRequestStatus};
use amc_core::service::Amc;

use crate::view::TrayView;

/// When notices are raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoticePolicy {
    /// How long to gather changes after the first before raising the notice.
    pub settle: Duration,
    /// The least time between two notices.
    pub min_gap: Duration,
    /// How long to gather changes before reading the counts again.
    pub refresh: Duration,
}

impl Default for NoticePolicy {
    fn default() -> Self {
        Self { settle: Duration::from_secs(2), min_gap: Duration::from_secs(60), refresh: Duration::from_millis(100) }
    }
}

/// A native notification to raise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The title.
    pub title: String,
    /// The text.
    pub body: String,
}

/// What the shell should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Show these counts and this pause state.
    View(TrayView),
    /// Raise this notification.
    Notice(Notice),
}

/// New arrivals since the last notice.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Fresh {
    channels: u64,
    sends: u64,
    tools: u64,
}

impl Fresh {
    fn is_empty(&self) -> bool {
        self.channels == 0 && self.sends == 0 && self.tools == 0
    }
}

/// Builds the notice for what arrived, capped by what still waits; `None` if nothing
/// that arrived still waits.
fn notice(fresh: Fresh, view: &TrayView) -> Option<Notice> {
    let channels = fresh.channels.min(view.waiting.channels);
    let sends = fresh.sends.min(view.waiting.sends);
    let tools = fresh.tools.min(view.waiting.tools);
    let mut lines = Vec::new();
    match tools {
        0 => {}
        1 => lines.push("A Claude Code session asks to use a tool: answer it in Review.".to_owned()),
        n => lines.push(format!("{n} tool requests wait for your answer in Review.")),
    }
    match channels {
        0 => {}
        1 => lines.push("A new conversation waits for your approval.".to_owned()),
        n => lines.push(format!("{n} new conversations wait for your approval.")),
    }
    match sends {
        0 => {}
        1 => lines.push("An agent's message waits for your review.".to_owned()),
        n => lines.push(format!("{n} agents' messages wait for your review.")),
    }
    if lines.is_empty() {
        return None;
    }
    Some(Notice { title: "AMC".to_owned(), body: lines.join(" ") })
}

/// Follows `amc`'s events until `stop` resolves, telling `on` what to show. The first
/// update is the current view.
pub async fn follow(amc: Amc, policy: NoticePolicy, stop: impl Future<Output = ()>, mut on: impl FnMut(Update)) {
    let mut events = amc.events().subscribe();
    let mut shown = None;
    let mut refresh_at: Option<Instant> = Some(Instant::now());
    let mut notice_at: Option<Instant> = None;
    let mut last_notice: Option<Instant> = None;
    let mut fresh = Fresh::default();
    tokio::pin!(stop);
    loop {
        let next = [refresh_at, notice_at].into_iter().flatten().min();
        let timer = async {
            match next {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = &mut stop => return,
            received = events.recv() => {
                let moves_counts = match received {
                    Ok(Event::ChannelCreated { .. }) => {
                        fresh.channels += 1;
                        true
                    }
                    Ok(Event::SendChanged { status, .. }) => {
                        if status == OutboxStatus::Held {
                            fresh.sends += 1;
                        }
                        true
                    }
                    Ok(Event::ToolRequestChanged { status, .. }) => {
                        if status == ToolRequestStatus::Pending {
                            fresh.tools += 1;
                            // A session waits on the answer: tell the person now.
                            notice_at = Some(Instant::now() + policy.refresh);
                        }
                        true
                    }
                    Ok(Event::ChannelChanged { .. } | Event::PauseChanged { .. }) | Err(RecvError::Lagged(_)) => true,
                    Ok(_) => false,
                    Err(RecvError::Closed) => return,
                };
                if moves_counts && refresh_at.is_none() {
                    refresh_at = Some(Instant::now() + policy.refresh);
                }
                if !fresh.is_empty() && notice_at.is_none() {
                    let earliest = last_notice.map_or(Instant::now(), |t| t + policy.min_gap);
                    notice_at = Some(earliest.max(Instant::now() + policy.settle));
                }
            }
            () = timer => {
                let now = Instant::now();
                let view = match TrayView::read(&amc).await {
                    Ok(v) => v,
                    Err(e) => {
                        tracing::warn!(error = %e, "tray: reading the counts failed");
                        refresh_at = Some(now + Duration::from_secs(5));
                        continue;
                    }
                };
                if refresh_at.is_some_and(|t| t <= now) {
                    refresh_at = None;
                    if shown != Some(view) {
                        shown = Some(view);
                        on(Update::View(view));
                    }
                }
                if notice_at.is_some_and(|t| t <= now) {
                    notice_at = None;
                    if let Some(n) = notice(std::mem::take(&mut fresh), &view) {
                        // From when it is shown, not from before the counts were read.
                        last_notice = Some(Instant::now());
                        on(Update::Notice(n));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use amc_core::model::Waiting;

    fn view(channels: u64, sends: u64) -> TrayView {
        TrayView { waiting: Waiting { channels, sends, tools: 0 }, paused: false }
    }

    #[test]
    fn a_notice_names_only_what_still_waits() {
        let both = notice(Fresh { channels: 2, sends: 1, tools: 0 }, &view(5, 1)).expect("notice");
        assert_eq!(both.body, "2 new conversations wait for your approval. An agent's message waits for your review.");
        let approved_meanwhile = notice(Fresh { channels: 3, sends: 0, tools: 0 }, &view(1, 0)).expect("notice");
        assert_eq!(approved_meanwhile.body, "A new conversation waits for your approval.");
        assert_eq!(notice(Fresh { channels: 1, sends: 2, tools: 0 }, &view(0, 0)), None);
        let asking = TrayView { waiting: Waiting { channels: 0, sends: 0, tools: 1 }, paused: false };
        let tool = notice(Fresh { tools: 1, ..Fresh::default() }, &asking).expect("notice");
        assert_eq!(tool.body, "A Claude Code session asks to use a tool: answer it in Review.");
        assert_eq!(notice(Fresh { tools: 1, ..Fresh::default() }, &view(0, 0)), None, "answered meanwhile");
    }
}
