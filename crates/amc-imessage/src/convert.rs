//! chat.db rows to AMC's channels and messages.

use amc_core::model::{ChannelKind, IncomingAttachment, IncomingMessage, Reaction, SenderInfo};
use amc_core::model::{ChannelSpec, ReactionChange, reader_handle};
use imessage_database::message_types::variants::{Tapback, TapbackAction, Variant};
use imessage_database::tables::messages::Message;

use crate::chatdb::{ChatAttachment, ChatInfo};
use crate::contacts::Contacts;

/// The sender of a message from someone Messages does not name (no handle).
pub const UNKNOWN_SENDER: &str = "unknown";

/// `chat.style` of a group chat.
pub(crate) const GROUP_STYLE: i32 = 43;
/// The object replacement character Messages leaves where an attachment sits in the text.
const ATTACHMENT_PLACEHOLDER: char = '\u{FFFC}';

/// The channel a chat becomes: named from the group's name, else its participants.
pub fn channel_of(chat: &ChatInfo, contacts: &Contacts) -> ChannelSpec {
    let kind = if chat.style == GROUP_STYLE { ChannelKind::Group } else { ChannelKind::Dm };
    let named = |h: &String| contacts.name_for(h).map_or_else(|| h.clone(), str::to_owned);
    let name = match (&chat.display_name, chat.participants.is_empty()) {
        (Some(name), _) => name.clone(),
        (None, false) => chat.participants.iter().map(named).collect::<Vec<_>>().join(", "),
        (None, true) => named(&chat.identifier),
    };
    // Who reads it besides the person: its participants (a one-to-one chat's handle is its
    // identifier); none known is not "nobody", it is unknown.
    let handles = match (kind, chat.participants.is_empty()) {
        (_, false) => chat.participants.iter().map(|h| reader_handle(h)).collect(),
        (ChannelKind::Dm, true) if !chat.identifier.is_empty() => vec![reader_handle(&chat.identifier)],
        _ => Vec::new(),
    };
    let readers = (!handles.is_empty()).then_some(handles);
    ChannelSpec { platform_id: conversation_id(&chat.guid), name, kind, readers }
}

/// The channel of a chat: its guid with the service left out (`any;-;+15551234567`,
/// `any;+;chat123…`), so one person's iMessage, SMS and macOS 26 chats are one channel.
/// A send addresses the chats chat.db holds for the conversation (`send::addressing`).
pub fn conversation_id(guid: &str) -> String {
    match guid_parts(guid) {
        Some((_, kind, identifier)) => format!("any;{kind};{identifier}"),
        None => guid.to_owned(),
    }
}

/// A chat guid's service, kind (`-` one-to-one, `+` group) and identifier.
pub fn guid_parts(guid: &str) -> Option<(&str, &str, &str)> {
    let mut parts = guid.splitn(3, ';');
    Some((parts.next()?, parts.next()?, parts.next()?))
}

/// Whether a row is a reaction (a tapback added or removed) rather than a message.
pub fn is_reaction(m: &Message) -> bool {
    m.associated_message_type.is_some_and(|t| (2000..=2007).contains(&t) || (3000..=3007).contains(&t))
}

/// An attachment as AMC stores it: its path with `~` expanded, and whether the file is
/// on this Mac (Messages offloads old attachments to iCloud and keeps only the row).
pub fn attachment_of(a: &ChatAttachment) -> IncomingAttachment {
    let path = a.filename.as_deref().map(|f| amc_core::config::expand_home(f).display().to_string());
    let available = path.as_deref().is_some_and(|p| std::path::Path::new(p).is_file());
    let name = a.transfer_name.clone().or_else(|| {
        path.as_deref().and_then(|p| std::path::Path::new(p).file_name()).map(|n| n.to_string_lossy().into_owned())
    });
    IncomingAttachment {
        platform_id: Some(a.guid.clone()),
        filename: name,
        mime_type: a.mime_type.clone(),
        size_bytes: a.total_bytes.filter(|n| *n > 0),
        local_path: path,
        remote_url: None,
        available,
    }
}

/// A tapback row as a change to the reactions of the message it targets.
pub fn reaction_of(m: &Message, handle: Option<&str>) -> Option<ReactionChange> {
    let Variant::Tapback(_, action, tapback) = m.variant() else { return None };
    let emoji = match tapback {
        Tapback::Loved => "❤️".to_owned(),
        Tapback::Liked => "👍".to_owned(),
        Tapback::Disliked => "👎".to_owned(),
        Tapback::Laughed => "😂".to_owned(),
        Tapback::Emphasized => "‼️".to_owned(),
        Tapback::Questioned => "❓".to_owned(),
        Tapback::Emoji(Some(e)) => e.to_owned(),
        Tapback::Emoji(None) => return None,
        Tapback::Sticker => "🖼️".to_owned(),
    };
    let target = tapback_target(m)?;
    let sender = if m.is_from_me {
        SenderInfo { id: "me".to_owned(), display_name: None, is_self: true }
    } else {
        SenderInfo { id: handle.unwrap_or(UNKNOWN_SENDER).to_owned(), display_name: None, is_self: false }
    };
    Some(ReactionChange {
        target_platform_id: target.to_owned(),
        reaction: Reaction { emoji, sender },
        added: matches!(action, TapbackAction::Added),
    })
}

/// chat.db's `date` (nanoseconds since 2001; seconds in old databases) as Unix
/// milliseconds, or `None` when it is unset.
pub fn unix_ms(apple: i64) -> Option<i64> {
    const EPOCH_MS: i64 = 978_307_200_000;
    match apple {
        0 => None,
        a if a.abs() < 100_000_000_000 => Some(a * 1000 + EPOCH_MS),
        a => Some(a / 1_000_000 + EPOCH_MS),
    }
}

/// The guid a tapback points at: `associated_message_guid` less its `p:N/` or `bp:` prefix.
fn tapback_target(m: &Message) -> Option<&str> {
    let g = m.associated_message_guid.as_deref()?;
    let g = match g.strip_prefix("p:") {
        Some(rest) => rest.split_once('/').map_or(rest, |(_, guid)| guid),
        None => g.strip_prefix("bp:").unwrap_or(g),
    };
    (!g.is_empty()).then_some(g)
}

/// A chat.db message as AMC stores it. `handle` is the sender's address for messages
/// from others.
pub fn message_of(m: &Message, handle: Option<&str>) -> IncomingMessage {
    let sent_at = unix_ms(m.date).unwrap_or_else(amc_core::time::now_ms);
    let unsent = m.is_fully_unsent();
    // Messages stamps an unsend in `date_edited` too; an unsend is not an edit.
    let edited_at = if unsent { None } else { unix_ms(m.date_edited) };
    let text = if unsent {
        String::new()
    } else {
        // The text exactly as sent, less the placeholders where attachments sit.
        without_placeholders(m.text.as_deref().unwrap_or_default(), &attachment_ranges(m), m.num_attachments)
    };
    let sender = if m.is_from_me {
        SenderInfo { id: "me".to_owned(), display_name: None, is_self: true }
    } else {
        SenderInfo { id: handle.unwrap_or(UNKNOWN_SENDER).to_owned(), display_name: None, is_self: false }
    };
    IncomingMessage {
        platform_id: m.guid.clone(),
        sender,
        text,
        sent_at,
        reply_to_platform_id: m.thread_originator_guid.clone(),
        attachments: Vec::new(),
        edited_at,
        unsent,
        reactions: Vec::new(),
    }
}

/// The byte ranges of the text that the attributed body marks as attachments (file
/// transfers).
fn attachment_ranges(m: &Message) -> Vec<(usize, usize)> {
    use imessage_database::tables::messages::models::BubbleComponent;
    m.components
        .iter()
        .flat_map(|c| match c {
            // A file transfer's guid is Messages' own mark; without an attributed body,
            // imessage-database guesses ranges from the text, with no guid.
            BubbleComponent::Run(ranges) => ranges
                .iter()
                .filter(|r| r.attachment.as_ref().is_some_and(|a| a.guid.is_some()))
                .map(|r| (r.start, r.end))
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The text less the placeholders (U+FFFC) that stand for attachments: those the
/// attributed body marks as attachments or, for a row without such marks, one per
/// attached file. Any other U+FFFC is text someone sent and stays.
fn without_placeholders(text: &str, attachment_ranges: &[(usize, usize)], attachments: i32) -> String {
    let mut unmarked = if attachment_ranges.is_empty() { attachments.max(0) } else { 0 };
    text.char_indices()
        .filter(|(at, c)| {
            if *c != ATTACHMENT_PLACEHOLDER {
                return true;
            }
            if attachment_ranges.iter().any(|(start, end)| (*start..*end).contains(at)) {
                return false;
            }
            let placeholder = unmarked > 0;
            unmarked -= i32::from(placeholder);
            !placeholder
        })
        .map(|(_, c)| c)
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_placeholders_that_stand_for_attachments_are_dropped() {
        let p = super::ATTACHMENT_PLACEHOLDER;
        let strip = super::without_placeholders;
        assert_eq!(strip(&format!("a{p}b"), &[], 0), format!("a{p}b"), "no attachment: kept");
        assert_eq!(strip(&format!("{p}look{p}"), &[], 1), format!("look{p}"), "one per attached file");
        assert_eq!(strip(&format!("{p}{p}"), &[], 2), "");
        // Marked by the attributed body (byte ranges): only the marked one goes.
        assert_eq!(strip(&format!("{p}look{p}"), &[(7, 10)], 0), format!("{p}look"));
    }
}
