//! The tray menu's state and the words it shows.

use amc_core::model::Waiting;
use amc_core::service::Amc;
use amc_core::service::UpdateProgress;

/// What the tray shows: what waits for the person, and whether agents are paused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TrayView {
    /// Channels and sends waiting.
    pub waiting: Waiting,
    /// Whether every send is held.
    pub paused: bool,
}

impl TrayView {
    /// Reads the current state from the core.
    pub async fn read(amc: &Amc) -> amc_core::Result<Self> {
        Ok(Self { waiting: amc.waiting().await?, paused: amc.paused() })
    }

    /// The menu item for channels, e.g. "2 channels waiting".
    pub fn channels_label(&self) -> String {
        count(self.waiting.channels, "channel", "channels", "waiting")
    }

    /// The menu item for sends, e.g. "1 send to review".
    pub fn sends_label(&self) -> String {
        count(self.waiting.sends, "send", "sends", "to review")
    }

    /// The menu item for tool requests, e.g. "1 tool request to answer".
    pub fn tools_label(&self) -> String {
        count(self.waiting.tools, "tool request", "tool requests", "to answer")
    }

    /// The tray icon's tooltip.
    pub fn tooltip(&self) -> String {
        let mut parts = Vec::new();
        if self.waiting.channels > 0 {
            parts.push(self.channels_label());
        }
        if self.waiting.sends > 0 {
            parts.push(self.sends_label());
        }
        if self.waiting.tools > 0 {
            parts.push(self.tools_label());
        }
        if self.paused {
            parts.push("agents paused".to_owned());
        }
        if parts.is_empty() { "AMC".to_owned() } else { format!("AMC: {}", parts.join(", ")) }
    }
}

/// One entry of the tray's menu, as the shell builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// An item that does [`Action`] when chosen.
    Item(Action, String),
    /// An item with a check mark.
    Check(Action, String, bool),
    /// A line that says something and does nothing (id [`NOTE`]).
    Note(String),
    /// A line between groups.
    Separator,
}

/// The id of the menu's [`Entry::Note`].
pub const NOTE: &str = "note";

/// The menu while AMC starts: how far it is (`label`, see [`starting_label`]), and Quit,
/// which is safe while the store updates (its transaction is rolled back, and the update
/// starts over at the next launch).
pub fn starting_menu(label: &str) -> Vec<Entry> {
    vec![Entry::Note(label.to_owned()), Entry::Separator, Entry::Item(Action::Quit, "Quit AMC".to_owned())]
}

/// What a menu item does; its id in the menu is [`Action::id`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Opens the window.
    Open,
    /// Says how many channels wait; opens the window.
    Channels,
    /// Says how many sends wait; opens the window.
    Sends,
    /// Says how many tool requests wait; opens the window.
    Tools,
    /// Holds every agent's send (checked while paused).
    Pause,
    /// Starts the app at login (checked while it does).
    Login,
    /// Links `amc` into a folder on `PATH`.
    Install,
    /// Quits the app.
    Quit,
}

const ACTIONS: [(Action, &str); 8] = [
    (Action::Open, "open"),
    (Action::Channels, "channels"),
    (Action::Sends, "sends"),
    (Action::Tools, "tools"),
    (Action::Pause, "pause"),
    (Action::Login, "login"),
    (Action::Install, "install"),
    (Action::Quit, "quit"),
];

impl Action {
    /// The item's id in the menu.
    pub fn id(self) -> &'static str {
        ACTIONS.iter().find(|(a, _)| *a == self).map_or("", |(_, id)| id)
    }

    /// The action of the item with `id`, if it is one of these.
    pub fn of(id: &str) -> Option<Self> {
        ACTIONS.iter().find(|(_, i)| *i == id).map(|(a, _)| *a)
    }
}

impl TrayView {
    /// The menu once AMC runs, `at_login` saying whether the app starts at login.
    pub fn menu(&self, at_login: bool) -> Vec<Entry> {
        let item = |a, label: &str| Entry::Item(a, label.to_owned());
        vec![
            item(Action::Open, "Open AMC"),
            Entry::Separator,
            Entry::Item(Action::Channels, self.channels_label()),
            Entry::Item(Action::Sends, self.sends_label()),
            Entry::Item(Action::Tools, self.tools_label()),
            Entry::Separator,
            Entry::Check(Action::Pause, "Pause all agents".to_owned(), self.paused),
            Entry::Check(Action::Login, "Launch at login".to_owned(), at_login),
            item(Action::Install, "Install Command-Line Tool…"),
            Entry::Separator,
            item(Action::Quit, "Quit AMC"),
        ]
    }

    /// The items whose words follow AMC, with their words now.
    pub fn live(&self) -> [(Action, String); 3] {
        [
            (Action::Channels, self.channels_label()),
            (Action::Sends, self.sends_label()),
            (Action::Tools, self.tools_label()),
        ]
    }
}

fn count(n: u64, one: &str, many: &str, tail: &str) -> String {
    match n {
        0 => format!("No {many} {tail}"),
        1 => format!("1 {one} {tail}"),
        n => format!("{n} {many} {tail}"),
    }
}

/// What the tray says while AMC starts, before its menu is ready: that it starts, or,
/// while a new release updates the store (as its `amc_core::service::UpdateReporter` tells), how
/// far that is.
pub fn starting_label(update: Option<&UpdateProgress>) -> String {
    match update {
        None => "Starting AMC…".to_owned(),
        Some(UpdateProgress { percent: Some(percent), .. }) => format!("Updating your stored messages… {percent}%"),
        // Every message rewritten and past the estimate of the rest: nothing more precise to say.
        Some(UpdateProgress { rewritten, total: Some(total), .. }) if *rewritten >= *total && *total > 0 => {
            "Updating your stored messages… almost done".to_owned()
        }
        Some(_) => "Updating your stored messages…".to_owned(),
    }
}

/// Pauses all agents if they run, resumes them if paused (the menu's switch). The switch
/// shows AMC's state once it changed, through the `pause_changed` event.
pub async fn toggle_pause(amc: Amc) {
    if let Err(e) = amc.set_paused(!amc.paused()).await {
        tracing::warn!(error = %e, "pausing agents failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_of_the_menu_is_found_by_its_id_and_says_what_waits() {
        let menu = view(2, 1, true).menu(false);
        let actions: Vec<Action> = menu
            .iter()
            .filter_map(|e| match e {
                Entry::Item(a, _) | Entry::Check(a, _, _) => Some(*a),
                Entry::Note(_) | Entry::Separator => None,
            })
            .collect();
        assert_eq!(actions.len(), ACTIONS.len(), "each action once: {menu:?}");
        assert!(actions.iter().all(|a| Action::of(a.id()) == Some(*a)));
        assert!(menu.contains(&Entry::Item(Action::Channels, "2 channels waiting".into())), "{menu:?}");
        assert!(menu.contains(&Entry::Check(Action::Pause, "Pause all agents".into(), true)), "{menu:?}");
        assert_eq!(view(0, 3, false).live()[1], (Action::Sends, "3 sends to review".into()));
        assert_eq!(Action::of(NOTE), None);
        assert!(starting_menu("Starting AMC…").contains(&Entry::Item(Action::Quit, "Quit AMC".into())));
    }

    fn view(channels: u64, sends: u64, paused: bool) -> TrayView {
        TrayView { waiting: Waiting { channels, sends, tools: 0 }, paused }
    }

    #[test]
    fn starting_says_how_far_an_update_is() {
        let update =
            |rewritten, total, percent| UpdateProgress { migration: "0016_channel_keys", rewritten, total, percent };
        assert_eq!(starting_label(None), "Starting AMC…");
        assert_eq!(starting_label(Some(&update(0, Some(250_000), None))), "Updating your stored messages…");
        assert_eq!(starting_label(Some(&update(5, None, None))), "Updating your stored messages…");
        assert_eq!(
            starting_label(Some(&update(100_000, Some(250_000), Some(16)))),
            "Updating your stored messages… 16%"
        );
        assert_eq!(
            starting_label(Some(&update(250_000, Some(250_000), Some(99)))),
            "Updating your stored messages… 99%"
        );
        let done = "Updating your stored messages… almost done";
        assert_eq!(starting_label(Some(&update(250_000, Some(250_000), None))), done);
        assert_eq!(starting_label(Some(&update(300_000, Some(250_000), None))), done);
        assert_eq!(starting_label(Some(&update(1, Some(0), None))), "Updating your stored messages…");
    }

    #[test]
    fn labels_count_what_waits() {
        let cases = [
            (view(0, 0, false), "No channels waiting", "No sends to review", "AMC"),
            (view(1, 1, false), "1 channel waiting", "1 send to review", "AMC: 1 channel waiting, 1 send to review"),
            (view(3, 0, true), "3 channels waiting", "No sends to review", "AMC: 3 channels waiting, agents paused"),
            (view(0, 12, false), "No channels waiting", "12 sends to review", "AMC: 12 sends to review"),
        ];
        for (v, channels, sends, tooltip) in cases {
            assert_eq!(
                (v.channels_label().as_str(), v.sends_label().as_str(), v.tooltip().as_str()),
                (channels, sends, tooltip)
            );
        }
        let asking = TrayView { waiting: Waiting { channels: 0, sends: 0, tools: 2 }, paused: false };
        assert_eq!(asking.tools_label(), "2 tool requests to answer");
        assert_eq!(asking.tooltip(), "AMC: 2 tool requests to answer");
        assert_eq!(view(0, 0, false).tools_label(), "No tool requests to answer");
    }
}
