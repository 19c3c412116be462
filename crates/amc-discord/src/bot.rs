//! What AMC learns of a bot from its token before it keeps it: whether Discord takes the
//! token, the bot's name, whether Discord gives it messages' text (the Message Content
//! intent), and the link that invites it to a server with the permissions AMC needs.
//!
//! Two requests, as the Developer Portal's own pages read them: `GET /users/@me` (the
//! bot; 401 for a token Discord does not know) and `GET /oauth2/applications/@me` (its
//! application: the id an invite names, and the flags that say whether the intent is on,
//! <https://discord.com/developers/docs/resources/application#application-object-application-flags>).

use serde::Serialize;
use serenity::all::ApplicationFlags;

use crate::settings::{DiscordSettings, Secret};

/// The permissions AMC asks for in the invite, with Discord's names for them
/// (<https://discord.com/developers/docs/topics/permissions#permissions-bitwise-permission-flags>):
/// to see channels and read them back after an outage, to answer (in threads too), with
/// files, and to add the reactions agents send.
pub const PERMISSIONS: &[(&str, u64)] = &[
    ("Add Reactions", 1 << 6),
    ("View Channels", 1 << 10),
    ("Send Messages", 1 << 11),
    ("Attach Files", 1 << 15),
    ("Read Message History", 1 << 16),
    ("Send Messages in Threads", 1 << 38),
];

/// A bot, as Discord describes it to its own token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bot {
    /// The bot's user id.
    pub id: String,
    /// The bot's name, as Discord shows it.
    pub name: String,
    /// Its application's id, which invites name.
    pub application_id: String,
    /// Whether the application may receive messages' text: the Message Content intent is
    /// on in the Developer Portal (or, for a verified bot, granted).
    pub message_content: bool,
    /// The link that adds the bot to a server the person manages, asking for [`PERMISSIONS`].
    pub invite_url: String,
}

/// Why a token was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    /// Not a token at all: nothing was sent to Discord.
    #[error("that is not a bot token: {0}")]
    Malformed(&'static str),
    /// Discord does not know it (401).
    #[error(
        "Discord refused this token: copy it again from the Discord Developer Portal (your application → Bot → \
         Reset Token)"
    )]
    Refused,
    /// Discord could not be asked, or answered otherwise.
    #[error("could not check the token with Discord: {0}")]
    Unreachable(String),
}

/// The invite link for the bot of `application_id`.
pub fn invite_url(application_id: &str) -> String {
    let permissions: u64 = PERMISSIONS.iter().map(|(_, bit)| bit).sum();
    format!("https://discord.com/oauth2/authorize?client_id={application_id}&scope=bot&permissions={permissions}")
}

/// Trims what a paste brings along and refuses what cannot be a token before anything is
/// sent: a token is one line of printable ASCII without spaces.
pub fn cleaned(given: &str) -> Result<Secret, CheckError> {
    let token = given.trim();
    let token = token.strip_prefix("Bot ").unwrap_or(token).trim();
    if token.is_empty() {
        return Err(CheckError::Malformed("it is empty"));
    }
    if token.len() > 200 {
        return Err(CheckError::Malformed("it is longer than any Discord token"));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(CheckError::Malformed("it holds spaces or characters no token has"));
    }
    Ok(Secret::new(token))
}

/// Asks Discord who `token` is (with `settings`' address, proxy and certificates).
pub async fn check(settings: &DiscordSettings, token: &Secret) -> Result<Bot, CheckError> {
    let client = crate::web_client(settings).map_err(CheckError::Unreachable)?;
    let client = client.build().map_err(|e| CheckError::Unreachable(e.to_string()))?;
    let http = crate::http(settings, client, token);
    let user = http.get_current_user().await.map_err(refused_or)?;
    let app = http.get_current_application_info().await.map_err(refused_or)?;
    let flags = app.flags.unwrap_or_else(ApplicationFlags::empty);
    let message_content =
        flags.intersects(ApplicationFlags::GATEWAY_MESSAGE_CONTENT | ApplicationFlags::GATEWAY_MESSAGE_CONTENT_LIMITED);
    let application_id = app.id.to_string();
    Ok(Bot {
        id: user.id.to_string(),
        name: user.global_name.clone().unwrap_or_else(|| user.name.clone()),
        invite_url: invite_url(&application_id),
        application_id,
        message_content,
    })
}

fn refused_or(e: serenity::Error) -> CheckError {
    match &e {
        serenity::Error::Http(serenity::http::HttpError::UnsuccessfulRequest(r)) if r.status_code.as_u16() == 401 => {
            CheckError::Refused
        }
        _ => CheckError::Unreachable(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_invite_asks_for_exactly_the_permissions_amc_uses() {
        // View Channels, Send Messages, Send Messages in Threads, Read Message History,
        // Attach Files, Add Reactions: the sum Discord's permission calculator gives.
        assert_eq!(
            invite_url("1234"),
            "https://discord.com/oauth2/authorize?client_id=1234&scope=bot&permissions=274878008384"
        );
    }

    #[test]
    fn a_paste_is_trimmed_and_what_is_no_token_never_leaves() {
        assert_eq!(cleaned("  abc.def-GHI_jk \n").map(|s| s.expose().to_owned()), Ok("abc.def-GHI_jk".into()));
        assert_eq!(cleaned("Bot abc").map(|s| s.expose().to_owned()), Ok("abc".into()));
        for bad in ["", "   ", "two words", "tab\there", "é", &"x".repeat(201)] {
            assert!(matches!(cleaned(bad), Err(CheckError::Malformed(_))), "{bad:?}");
        }
    }
}
