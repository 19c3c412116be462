//! Discord's objects in AMC's terms: messages, channels, reactions.

use amc_core::model::ChannelSpec;
use amc_core::model::{ChannelKind, IncomingAttachment, IncomingMessage, Reaction, SenderInfo};
use amc_core::time::Millis;
use serenity::model::channel::{
    Attachment, ChannelType, GuildChannel, Message, MessageReferenceKind, MessageType, ReactionType,
};
use serenity::model::id::UserId;
use serenity::model::user::User;

/// Discord's epoch (2015-01-01T00:00:00Z) in Unix milliseconds.
pub const DISCORD_EPOCH_MS: i64 = 1_420_070_400_000;

/// Who AMC speaks for: the bot itself, and the person's own account if configured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Selves {
    /// The bot's user id, once READY told it.
    pub bot: Option<UserId>,
    /// The person's own Discord account.
    pub person: Option<UserId>,
}

impl Selves {
    fn contains(&self, id: UserId) -> bool {
        self.bot == Some(id) || self.person == Some(id)
    }
}

/// The time a snowflake was made, in Unix milliseconds.
pub fn snowflake_ms(id: u64) -> Millis {
    (id >> 22) as i64 + DISCORD_EPOCH_MS
}

/// The smallest snowflake made at or after `ms`, for fetching history from a time.
pub fn snowflake_at(ms: Millis) -> u64 {
    (ms.saturating_sub(DISCORD_EPOCH_MS).max(0) as u64) << 22
}

fn millis(ts: &serenity::model::Timestamp) -> Millis {
    (ts.unix_timestamp_nanos() / 1_000_000) as Millis
}

/// The name people know a user by: their nickname in the guild, their display name, or
/// their user name.
pub fn user_name(user: &User, nick: Option<&str>) -> String {
    nick.map(str::to_owned).or_else(|| user.global_name.clone()).unwrap_or_else(|| user.name.clone())
}

/// A sender as AMC stores it.
pub fn sender(user: &User, nick: Option<&str>, selves: Selves) -> SenderInfo {
    SenderInfo { id: user.id.to_string(), display_name: Some(user_name(user, nick)), is_self: selves.contains(user.id) }
}

/// Whether a message type carries something a person wrote (not a join notice or a pin).
pub fn is_conversation(kind: MessageType) -> bool {
    matches!(kind, MessageType::Regular | MessageType::InlineReply)
}

/// An attachment's metadata; the file stays with Discord until an agent asks for it.
pub fn attachment(a: &Attachment) -> IncomingAttachment {
    IncomingAttachment {
        platform_id: Some(a.id.to_string()),
        filename: Some(a.filename.clone()),
        mime_type: a.content_type.clone(),
        size_bytes: Some(i64::from(a.size)),
        local_path: None,
        remote_url: Some(a.url.clone()),
        available: true,
    }
}

/// A message as the store takes it. Reactions come as their own events and are left
/// to [`amc_core::service::Amc::apply_reactions`].
pub fn message(m: &Message, selves: Selves) -> IncomingMessage {
    let nick = m.member.as_ref().and_then(|p| p.nick.as_deref());
    IncomingMessage {
        platform_id: m.id.to_string(),
        sender: sender(&m.author, nick, selves),
        text: m.content.clone(),
        sent_at: millis(&m.timestamp),
        // A forward also carries a reference: only a reply is a reply.
        reply_to_platform_id: m
            .message_reference
            .as_ref()
            .filter(|r| r.kind == MessageReferenceKind::Default)
            .and_then(|r| r.message_id)
            .map(|id| id.to_string()),
        attachments: m.attachments.iter().map(attachment).collect(),
        edited_at: m.edited_timestamp.as_ref().map(millis),
        unsent: false,
        reactions: Vec::new(),
    }
}

/// Whether a guild channel holds messages AMC can follow (text and announcement
/// channels; voice, stage, forum and category channels do not).
pub fn is_text_channel(kind: ChannelType) -> bool {
    matches!(kind, ChannelType::Text | ChannelType::News)
}

/// A guild channel, named "guild / #channel".
pub fn guild_channel(guild_name: &str, c: &GuildChannel) -> ChannelSpec {
    ChannelSpec { platform_id: c.id.to_string(), name: format!("{guild_name} / #{}", c.name), kind: ChannelKind::Group }
}

/// A direct message channel, named after the other person.
pub fn dm_channel(channel_id: &str, other: &User) -> ChannelSpec {
    ChannelSpec { platform_id: channel_id.to_owned(), name: user_name(other, None), kind: ChannelKind::Dm }
}

/// The emoji as text: the character itself, or `:name:` for a guild's own emoji.
pub fn emoji(r: &ReactionType) -> String {
    match r {
        ReactionType::Unicode(s) => s.clone(),
        ReactionType::Custom { name: Some(name), .. } => format!(":{name}:"),
        ReactionType::Custom { id, .. } => format!(":{id}:"),
        _ => "?".to_owned(),
    }
}

/// A reaction as AMC stores it.
pub fn reaction(r: &serenity::model::channel::Reaction, selves: Selves) -> Option<Reaction> {
    let user_id = r.user_id?;
    let name = r.member.as_ref().map(|m| user_name(&m.user, m.nick.as_deref()));
    Some(Reaction {
        emoji: emoji(&r.emoji),
        sender: SenderInfo { id: user_id.to_string(), display_name: name, is_self: selves.contains(user_id) },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snowflakes_carry_their_time() {
        // Discord's documented example: 175928847299117063 was made 2016-04-30T11:18:25.796Z.
        assert_eq!(snowflake_ms(175_928_847_299_117_063), 1_462_015_105_796);
        assert_eq!(snowflake_ms(snowflake_at(1_462_015_105_796)), 1_462_015_105_796);
        assert_eq!(snowflake_at(0), 0);
    }
}
