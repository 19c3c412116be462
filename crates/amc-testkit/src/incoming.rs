//! Messages as a source hands them to the core, for tests and benches: one builder instead
//! of the same nine-field literal in every file.
//!
//! ```
//! let m = amc_testkit::incoming("g1", "see you at 8").at(1_700_000_000_000).from("+15550001111", Some("Ada")).build();
//! assert_eq!((m.sender.display_name.as_deref(), m.sent_at), (Some("Ada"), 1_700_000_000_000));
//! ```

use amc_types::model::{IncomingAttachment, IncomingMessage, Reaction, SenderInfo};
use amc_types::time::Millis;

/// The number every built message is from, unless said otherwise.
pub const SENDER: &str = "+15551234567";

/// A message with platform id `platform_id` and `text`, sent now by [`SENDER`] ("Ada"),
/// not edited, unsent or replying, with no attachments or reactions.
pub fn incoming(platform_id: &str, text: &str) -> Incoming {
    Incoming(IncomingMessage {
        platform_id: platform_id.to_owned(),
        sender: SenderInfo { id: SENDER.to_owned(), display_name: Some("Ada".to_owned()), is_self: false },
        text: text.to_owned(),
        sent_at: amc_types::time::now_ms(),
        reply_to_platform_id: None,
        attachments: Vec::new(),
        edited_at: None,
        unsent: false,
        reactions: Vec::new(),
    })
}

/// A message being built ([`incoming`]); [`Incoming::build`] or `into()` gives it.
#[derive(Debug, Clone)]
#[must_use]
pub struct Incoming(IncomingMessage);

impl Incoming {
    /// Sent at `sent_at`.
    pub fn at(mut self, sent_at: Millis) -> Self {
        self.0.sent_at = sent_at;
        self
    }

    /// From `id`, shown as `name`.
    pub fn from(mut self, id: &str, name: Option<&str>) -> Self {
        self.0.sender = SenderInfo { id: id.to_owned(), display_name: name.map(str::to_owned), is_self: false };
        self
    }

    /// Written by the person, on one of their own devices.
    pub fn own(mut self) -> Self {
        self.0.sender = SenderInfo { id: "me".to_owned(), display_name: None, is_self: true };
        self
    }

    /// Edited at `at`.
    pub fn edited(mut self, at: Millis) -> Self {
        self.0.edited_at = Some(at);
        self
    }

    /// Taken back by its sender.
    pub fn unsent(mut self) -> Self {
        self.0.unsent = true;
        self
    }

    /// A reply to the message with platform id `platform_id`.
    pub fn replying_to(mut self, platform_id: &str) -> Self {
        self.0.reply_to_platform_id = Some(platform_id.to_owned());
        self
    }

    /// With `attachment` too.
    pub fn attachment(mut self, attachment: IncomingAttachment) -> Self {
        self.0.attachments.push(attachment);
        self
    }

    /// With `reaction` too.
    pub fn reaction(mut self, reaction: Reaction) -> Self {
        self.0.reactions.push(reaction);
        self
    }

    /// The message.
    pub fn build(self) -> IncomingMessage {
        self.0
    }
}

impl From<Incoming> for IncomingMessage {
    fn from(m: Incoming) -> Self {
        m.0
    }
}
