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

/// The names of a guild's channels and roles, for the mentions in messages' text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MentionNames {
    /// Channel id to its name (without `#`).
    pub channels: std::collections::HashMap<u64, String>,
    /// Role id to its name (without `@`).
    pub roles: std::collections::HashMap<u64, String>,
}

/// A message's text as people read it in Discord: `<@id>` (and `<@!id>`) as `@name`,
/// `<@&id>` as `@role` and `<#id>` as `#channel`, where the message or the guild names
/// them (Discord's message formats:
/// <https://discord.com/developers/docs/reference#message-formatting>). A mention AMC has
/// no name for stays as written.
pub fn readable(content: &str, mentioned: &[User], names: &MentionNames) -> String {
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let (prefix, after) = if let Some(a) = tail.strip_prefix("<@&") {
            ("@&", a)
        } else if let Some(a) = tail.strip_prefix("<@!") {
            ("@", a)
        } else if let Some(a) = tail.strip_prefix("<@") {
            ("@", a)
        } else if let Some(a) = tail.strip_prefix("<#") {
            ("#", a)
        } else {
            ("", "")
        };
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let id = (!prefix.is_empty() && after[digits..].starts_with('>'))
            .then(|| after[..digits].parse::<u64>().ok())
            .flatten();
        let name = id.and_then(|id| match prefix {
            "@" => mentioned
                .iter()
                .find(|u| u.id.get() == id)
                .map(|u| format!("@{}", user_name(u, u.member.as_ref().and_then(|m| m.nick.as_deref())))),
            "@&" => names.roles.get(&id).map(|r| format!("@{r}")),
            _ => names.channels.get(&id).map(|c| format!("#{c}")),
        });
        match name {
            Some(name) => {
                out.push_str(&name);
                rest = &after[digits + 1..];
            }
            None => {
                out.push('<');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// A message as the store takes it, its mentions named. Reactions come as their own
/// events and are left to [`amc_core::service::Amc::apply_reactions`].
pub fn message(m: &Message, selves: Selves, names: &MentionNames) -> IncomingMessage {
    let nick = m.member.as_ref().and_then(|p| p.nick.as_deref());
    IncomingMessage {
        platform_id: m.id.to_string(),
        sender: sender(&m.author, nick, selves),
        text: readable(&m.content, &m.mentions, names),
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

/// Discord's permission to see a channel.
pub const VIEW_CHANNEL: u64 = 1 << 10;
/// Discord's permission to read a channel's earlier messages.
pub const READ_MESSAGE_HISTORY: u64 = 1 << 16;
const ADMINISTRATOR: u64 = 1 << 3;

/// What a guild grants the bot before a channel's overwrites.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GuildAccess {
    /// The guild's id, which is also its @everyone role's.
    pub guild_id: u64,
    /// The bot's own user id.
    pub bot: u64,
    /// Whether the bot owns the guild.
    pub owner: bool,
    /// Each role's permissions.
    pub roles: std::collections::HashMap<u64, u64>,
    /// The bot's roles.
    pub bot_roles: Vec<u64>,
}

/// The bot's permissions in a channel, computed as Discord documents it
/// (<https://discord.com/developers/docs/topics/permissions#permission-overwrites>): the
/// owner and administrators have every permission; otherwise @everyone's and the bot's
/// roles' permissions, then the @everyone overwrite, then the bot's roles' overwrites
/// together, then the bot's own overwrite, each denying before allowing.
pub fn permissions_in(access: &GuildAccess, overwrites: &[serenity::model::channel::PermissionOverwrite]) -> u64 {
    use serenity::model::channel::PermissionOverwriteType as Kind;
    let role = |id: u64| access.roles.get(&id).copied().unwrap_or(0);
    let base = access.bot_roles.iter().fold(role(access.guild_id), |p, r| p | role(*r));
    if access.owner || base & ADMINISTRATOR != 0 {
        return u64::MAX;
    }
    let mut p = base;
    let apply = |p: &mut u64, allow: u64, deny: u64| *p = (*p & !deny) | allow;
    if let Some(o) = overwrites.iter().find(|o| matches!(o.kind, Kind::Role(r) if r.get() == access.guild_id)) {
        apply(&mut p, o.allow.bits(), o.deny.bits());
    }
    let (allow, deny) = overwrites
        .iter()
        .filter(|o| matches!(o.kind, Kind::Role(r) if access.bot_roles.contains(&r.get())))
        .fold((0, 0), |(a, d), o| (a | o.allow.bits(), d | o.deny.bits()));
    apply(&mut p, allow, deny);
    if let Some(o) = overwrites.iter().find(|o| matches!(o.kind, Kind::Member(u) if u.get() == access.bot)) {
        apply(&mut p, o.allow.bits(), o.deny.bits());
    }
    p
}

/// Whether these permissions let AMC read a channel: see it and read its history.
pub fn can_read(permissions: u64) -> bool {
    permissions & VIEW_CHANNEL != 0 && permissions & READ_MESSAGE_HISTORY != 0
}

/// Whether a guild channel holds conversations AMC can follow: text and announcement
/// channels, and forums (whose posts are threads). Voice, stage and category channels do
/// not.
pub fn is_text_channel(kind: ChannelType) -> bool {
    matches!(kind, ChannelType::Text | ChannelType::News | ChannelType::Forum)
}

/// A guild channel, named "guild / #channel".
pub fn guild_channel(guild_name: &str, c: &GuildChannel) -> ChannelSpec {
    ChannelSpec {
        platform_id: c.id.to_string(),
        name: format!("{guild_name} / #{}", c.name),
        kind: ChannelKind::Group,
        readers: None,
    }
}

/// A direct message channel, named after the other person.
pub fn dm_channel(channel_id: &str, other: &User) -> ChannelSpec {
    ChannelSpec {
        platform_id: channel_id.to_owned(),
        name: user_name(other, None),
        kind: ChannelKind::Dm,
        readers: Some(vec![other.id.to_string()]),
    }
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
    fn a_dm_is_read_by_the_other_side_and_a_server_channel_by_nobody_amc_knows() {
        let alice: User = serde_json::from_value(serde_json::json!({
            "id": "80351110224678912", "username": "alice", "discriminator": "0", "global_name": "Alice", "avatar": null
        }))
        .expect("user");
        assert_eq!(dm_channel("900", &alice).readers, Some(vec!["80351110224678912".to_owned()]));
        let general: GuildChannel = serde_json::from_value(serde_json::json!({
            "id": "41771983423143937", "guild_id": "41771983423143936", "name": "general", "type": 0, "position": 0
        }))
        .expect("channel");
        assert_eq!(guild_channel("Club", &general).readers, None);
    }

    #[test]
    fn mentions_read_as_names_and_unknown_ones_stay() {
        let mut alice: User = serde_json::from_value(serde_json::json!({
            "id": "80351110224678912", "username": "alice", "discriminator": "0", "global_name": "Alice", "avatar": null
        }))
        .expect("user");
        let names = MentionNames {
            channels: [(41771983423143937, "general".to_owned())].into(),
            roles: [(165511591545143296, "mods".to_owned())].into(),
        };
        let text =
            "<@80351110224678912> and <@!80351110224678912>, see <#41771983423143937>, cc <@&165511591545143296>";
        assert_eq!(readable(text, std::slice::from_ref(&alice), &names), "@Alice and @Alice, see #general, cc @mods");
        assert_eq!(
            readable("<@1> <#2> <@&3> <a> <@ x> 2 < 3 <@99", &[], &names),
            "<@1> <#2> <@&3> <a> <@ x> 2 < 3 <@99"
        );
        alice.member = Some(Box::new(
            serde_json::from_value(
                serde_json::json!({ "nick": "Al", "roles": [], "joined_at": null, "deaf": false, "mute": false }),
            )
            .expect("member"),
        ));
        assert_eq!(readable("hi <@80351110224678912>!", &[alice], &names), "hi @Al!");
        assert_eq!(readable("東京 <#41771983423143937>", &[], &names), "東京 #general", "non-ASCII around it");
    }

    #[test]
    fn permissions_follow_discords_overwrite_order() {
        use serenity::model::channel::{PermissionOverwrite, PermissionOverwriteType as Kind};
        use serenity::model::id::{RoleId, UserId};
        use serenity::model::permissions::Permissions;
        let read = VIEW_CHANNEL | READ_MESSAGE_HISTORY;
        let access =
            GuildAccess { guild_id: 1, bot: 9, owner: false, roles: [(1, read), (5, 0)].into(), bot_roles: vec![5] };
        let ow = |kind, allow: u64, deny: u64| PermissionOverwrite {
            allow: Permissions::from_bits_truncate(allow),
            deny: Permissions::from_bits_truncate(deny),
            kind,
        };
        assert!(can_read(permissions_in(&access, &[])));
        let hidden = [ow(Kind::Role(RoleId::new(1)), 0, VIEW_CHANNEL)];
        assert!(!can_read(permissions_in(&access, &hidden)), "@everyone cannot see it");
        let role_allows = [hidden[0].clone(), ow(Kind::Role(RoleId::new(5)), VIEW_CHANNEL, 0)];
        assert!(can_read(permissions_in(&access, &role_allows)), "the bot's role may");
        let member_denies = [role_allows[0].clone(), role_allows[1].clone(), ow(Kind::Member(UserId::new(9)), 0, read)];
        assert!(!can_read(permissions_in(&access, &member_denies)), "but not the bot itself");
        let admin = GuildAccess { roles: [(1, 0), (5, ADMINISTRATOR)].into(), ..access.clone() };
        assert!(can_read(permissions_in(&admin, &member_denies)), "an administrator sees everything");
        assert!(can_read(permissions_in(&GuildAccess { owner: true, ..access }, &hidden)));
    }

    #[test]
    fn snowflakes_carry_their_time() {
        // Discord's documented example: 175928847299117063 was made 2016-04-30T11:18:25.796Z.
        assert_eq!(snowflake_ms(175_928_847_299_117_063), 1_462_015_105_796);
        assert_eq!(snowflake_ms(snowflake_at(1_462_015_105_796)), 1_462_015_105_796);
        assert_eq!(snowflake_at(0), 0);
    }
}
