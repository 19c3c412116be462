//! The person's routes, under `/admin`, behind the admin credential.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::{Stream, StreamExt};
use serde::Deserialize;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::extract::{Admin, ApiJson, ApiPath, ApiQuery};
use amc_core::ErrorCode;
use amc_core::events::Since;
use amc_core::model::{ChannelState, CodesShown, DecidedVia, HistoryRelease, OutboxStatus, SendPolicy};

/// The query of `GET /admin/channels`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelsQuery {
    state: Option<String>,
    q: Option<String>,
}

fn parse<T>(name: &str, value: &str, parse: fn(&str) -> Option<T>, allowed: &str) -> Result<T, ApiError> {
    parse(value).ok_or_else(|| ApiError::new(ErrorCode::ValidationFailed, format!("{name} must be one of {allowed}")))
}

/// `GET /admin/channels?state=&q=`.
pub async fn channels(
    State(st): State<AppState>,
    _: Admin,
    ApiQuery(q): ApiQuery<ChannelsQuery>,
) -> ApiResult<impl IntoResponse> {
    let state =
        q.state.as_deref().map(|s| parse("state", s, ChannelState::parse, "pending, allowed, blocked")).transpose()?;
    Ok(Json(serde_json::json!({ "channels": st.amc.admin_channels(state, q.q).await? })))
}

/// `GET /admin/channels/{id}`.
pub async fn channel(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.admin_channel(id).await?))
}

/// The body of `POST /admin/channels/{id}/approve`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ApproveBody {
    /// `from_now` (default), `all`, or `days` with `days`.
    history: Option<String>,
    days: Option<u32>,
    send_policy: Option<String>,
    /// Only these agents see it (default: every agent).
    agents: Option<Vec<String>>,
    /// The person confirmed approving a conversation with a short-code sender.
    sensitive: Option<bool>,
}

/// `POST /admin/channels/{id}/approve`.
pub async fn approve_channel(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ApproveBody>,
) -> ApiResult<impl IntoResponse> {
    let release = match (body.history.as_deref().unwrap_or("from_now"), body.days) {
        ("from_now", None) => HistoryRelease::FromNow,
        ("all", None) => HistoryRelease::All,
        ("days", Some(d)) if (1..=36_500).contains(&d) => HistoryRelease::LastDays(d),
        _ => {
            return Err(ApiError::new(
                ErrorCode::ValidationFailed,
                "history must be \"from_now\", \"all\", or \"days\" with days from 1 to 36500",
            ));
        }
    };
    let policy = body
        .send_policy
        .as_deref()
        .map(|p| parse("send_policy", p, SendPolicy::parse, "read_only, review, auto"))
        .transpose()?;
    let sensitive = body.sensitive.unwrap_or(false);
    // The agents first, while the channel is still hidden: no other agent ever sees it. A
    // refused approval changes nothing, its agents included.
    if let Some(agents) = body.agents {
        if !sensitive && st.amc.admin_channel(id.clone()).await?.sensitive {
            return Err(amc_core::error::Error::sensitive_unconfirmed().into());
        }
        st.amc.set_channel_agents(id.clone(), Some(agents)).await?;
    }
    Ok(Json(st.amc.approve_channel(id, release, policy, sensitive).await?))
}

/// The body of `POST /admin/channels/{id}/agents`: `{"agents": [...]}` or `{"all": true}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelAgentsBody {
    agents: Option<Vec<String>>,
    all: Option<bool>,
}

/// `POST /admin/channels/{id}/agents`: which agents see the channel.
pub async fn channel_agents(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ChannelAgentsBody>,
) -> ApiResult<impl IntoResponse> {
    let agents = match (body.agents, body.all) {
        (Some(list), None) => Some(list),
        (None, Some(true)) => None,
        _ => {
            return Err(ApiError::new(
                ErrorCode::ValidationFailed,
                "give either \"agents\": [agent ids] or \"all\": true",
            ));
        }
    };
    Ok(Json(st.amc.set_channel_agents(id, agents).await?))
}

/// The body of `POST /admin/channels/{id}/agents/{agent}/policy`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentPolicyBody {
    send_policy: Option<String>,
}

/// `POST /admin/channels/{id}/agents/{agent}/policy`: the agent's own send policy on the
/// channel (`null`: the channel's).
pub async fn channel_agent_policy(
    State(st): State<AppState>,
    _: Admin,
    ApiPath((id, agent)): ApiPath<(String, String)>,
    ApiJson(body): ApiJson<AgentPolicyBody>,
) -> ApiResult<impl IntoResponse> {
    let policy = body
        .send_policy
        .as_deref()
        .map(|p| parse("send_policy", p, SendPolicy::parse, "read_only, review, auto"))
        .transpose()?;
    Ok(Json(st.amc.set_agent_send_policy(id, agent, policy).await?))
}

/// `POST /admin/channels/{id}/block`.
pub async fn block_channel(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.block_channel(id).await?))
}

/// The body of `POST /admin/channels/{id}/codes`: `{"codes": "hidden" | "shown"}`, or
/// `{"codes": "some", "agents": [...]}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodesBody {
    codes: String,
    agents: Option<Vec<String>>,
}

/// `POST /admin/channels/{id}/codes`: which agents are given the channel's one-time codes
/// and sign-in links.
pub async fn channel_codes(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<CodesBody>,
) -> ApiResult<impl IntoResponse> {
    let codes = parse("codes", &body.codes, CodesShown::parse, "hidden, shown, some")?;
    Ok(Json(st.amc.set_channel_codes(id, codes, body.agents.unwrap_or_default()).await?))
}

/// The body of `POST /admin/messages/{id}/not-a-code`: `{"not_a_code": true}` (the
/// default) says the message holds no code, `false` takes it back.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotACodeBody {
    not_a_code: Option<bool>,
}

/// `POST /admin/messages/{id}/not-a-code`: the person says a message holds no one-time
/// code or sign-in link (agents are then given it whole), or takes it back.
pub async fn not_a_code(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<NotACodeBody>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.set_not_a_code(id, body.not_a_code.unwrap_or(true)).await?))
}

/// `GET /admin/codes/report`: what the person said holds no code, and the rules that had
/// found something in it.
pub async fn not_a_code_report(State(st): State<AppState>, _: Admin) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.not_a_code_report().await?))
}

/// The body of `POST /admin/channels/{id}/readers`: `{"receives_anything": true,
/// "confirmed": true}` turns the readers rule off for the channel (asked twice),
/// `{"receives_anything": false}` back on.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadersBody {
    receives_anything: bool,
    confirmed: Option<bool>,
}

/// `POST /admin/channels/{id}/readers`: whether agents' sends under `auto` to this
/// channel may carry what they read in other conversations.
pub async fn set_readers_rule(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ReadersBody>,
) -> ApiResult<impl IntoResponse> {
    if body.receives_anything && body.confirmed != Some(true) {
        return Err(ApiError::new(
            ErrorCode::ConfirmationRequired,
            "an agent could then send here, without review, what it read in any other conversation: ask again with \
             \"confirmed\": true",
        ));
    }
    Ok(Json(st.amc.set_receives_anything(id, body.receives_anything).await?))
}

/// The body of `POST /admin/channels/{id}/policy`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyBody {
    send_policy: String,
}

/// `POST /admin/channels/{id}/policy`.
pub async fn set_policy(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<PolicyBody>,
) -> ApiResult<impl IntoResponse> {
    let policy = parse("send_policy", &body.send_policy, SendPolicy::parse, "read_only, review, auto")?;
    Ok(Json(st.amc.set_send_policy(id, policy).await?))
}

/// The query of `GET /admin/sends`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendsQuery {
    status: Option<String>,
    limit: Option<u32>,
}

/// `GET /admin/sends?status=held`: the review queue, or the log of every send.
pub async fn sends(
    State(st): State<AppState>,
    _: Admin,
    ApiQuery(q): ApiQuery<SendsQuery>,
) -> ApiResult<impl IntoResponse> {
    let status = q
        .status
        .as_deref()
        .map(|s| parse("status", s, OutboxStatus::parse, "held, sending, sent, failed, rejected, unknown"))
        .transpose()?;
    Ok(Json(serde_json::json!({ "sends": st.amc.admin_sends(status, q.limit).await? })))
}

/// `GET /admin/sends/{id}`.
pub async fn send(State(st): State<AppState>, _: Admin, ApiPath(id): ApiPath<String>) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.admin_send(id).await?))
}

/// `GET /admin/sends/{id}/attachments/{index}`: the staged copy of a send's attachment,
/// exactly what will be (or was) sent, so the person can look before approving.
pub async fn send_attachment(
    State(st): State<AppState>,
    _: Admin,
    ApiPath((id, index)): ApiPath<(String, usize)>,
) -> ApiResult<axum::response::Response> {
    let send = st.amc.outbox_item(id).await?;
    let staged = send.attachments.get(index).ok_or_else(|| ApiError::new(ErrorCode::NotFound, "no such attachment"))?;
    let mime = mime_of(&staged.filename).map(str::to_owned);
    super::agent::file_response(&staged.path, Some(staged.filename.clone()), mime).await
}

/// A MIME type from a file name, for the common kinds a person previews.
fn mime_of(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "heic" => "image/heic",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" | "md" => "text/plain; charset=utf-8",
        "mp4" => "video/mp4",
        "mov" => "video/quicktime",
        _ => return None,
    })
}

/// `POST /admin/sends/{id}/approve`: delivers a held send now.
pub async fn approve_send(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.approve_send(id, DecidedVia::Mac).await?))
}

/// The body of `POST /admin/sends/{id}/reject`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    reason: Option<String>,
}

/// `POST /admin/sends/{id}/reject`.
pub async fn reject_send(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<RejectBody>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.reject_send(id, body.reason, DecidedVia::Mac).await?))
}

/// `GET /admin/agents`.
pub async fn agents(State(st): State<AppState>, _: Admin) -> ApiResult<impl IntoResponse> {
    Ok(Json(serde_json::json!({ "agents": st.amc.agents().await? })))
}

/// The body of `POST /admin/agents`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateAgentBody {
    id: String,
}

/// `POST /admin/agents`: 201 with the token, shown this once.
pub async fn create_agent(
    State(st): State<AppState>,
    _: Admin,
    ApiJson(body): ApiJson<CreateAgentBody>,
) -> ApiResult<impl IntoResponse> {
    let (agent, token) = st.amc.create_agent(body.id).await?;
    // The command MCP hosts should run, as it exists for this install.
    let command = amc_core::config::amc_command().display().to_string();
    let mcp_env = mcp_env(&st);
    Ok((
        StatusCode::CREATED,
        Json(serde_json::json!({ "agent": agent, "token": token, "mcp_command": command, "mcp_env": mcp_env })),
    ))
}

/// What `amc mcp` must be told besides the agent and its token: the data folder, when it
/// is not the one `amc` finds by default.
fn mcp_env(st: &AppState) -> std::collections::BTreeMap<String, String> {
    let data_dir = &st.amc.config().data_dir;
    let default = amc_core::config::default_data_dir();
    let mut env = std::collections::BTreeMap::new();
    if default.as_deref() != Some(data_dir.as_path()) {
        env.insert("AMC_DATA_DIR".to_owned(), data_dir.display().to_string());
    }
    env
}

/// The body of `POST /admin/agents/{id}/bundle`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleBody {
    token: String,
}

/// `POST /admin/agents/{id}/bundle`: the agent as an MCP Bundle (`.mcpb`) for Claude
/// Desktop, with the `amc` of this install inside. AMC keeps only a hash of each token, so
/// the bundle is made while the person still has it (when the agent is added); the token
/// must be the agent's.
pub async fn agent_bundle(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<BundleBody>,
) -> ApiResult<axum::response::Response> {
    st.amc.authenticate(&body.token, Some(&id)).await.map_err(|_| {
        ApiError::new(ErrorCode::ValidationFailed, "token must be this agent's token, as shown when it was added")
    })?;
    let amc = amc_core::config::amc_command();
    if !amc.is_absolute() || !amc.is_file() {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            "AMC cannot find its amc command to put in the bundle; install it (the tray menu's Install \
             Command-Line Tool) or set AMC_COMMAND",
        ));
    }
    let env = mcp_env(&st);
    let name = format!("amc-{id}.mcpb");
    let bytes = tokio::task::spawn_blocking(move || {
        let b = crate::bundle::BundleFor { agent_id: &id, token: &body.token, amc: &amc, env };
        crate::bundle::build(&b, crate::bundle::ICON)
    })
    .await
    .map_err(|e| ApiError::from(amc_core::Error::internal(e)))?
    .map_err(|e| ApiError::from(amc_core::Error::internal(e)))?;
    let headers = [
        (axum::http::header::CONTENT_TYPE, "application/zip".to_owned()),
        (axum::http::header::CONTENT_DISPOSITION, format!("attachment; filename=\"{name}\"")),
        (axum::http::header::CACHE_CONTROL, "no-store".to_owned()),
    ];
    Ok((headers, bytes).into_response())
}

/// `POST /admin/agents/{id}/revoke`.
pub async fn revoke_agent(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.revoke_agent(id).await?))
}

/// The body of `POST /admin/pause`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseBody {
    paused: bool,
}

/// `GET /admin/listen`: the loopback address AMC also serves on (`amc serve --listen`), or
/// `null`: where `amc ui` points the browser.
pub async fn listen(State(st): State<AppState>, _admin: Admin) -> impl IntoResponse {
    Json(serde_json::json!({ "listen": st.listen.map(|a| a.to_string()) }))
}

/// `POST /admin/pause`: hold every agent send (`true`) or resume (`false`).
pub async fn pause(
    State(st): State<AppState>,
    _: Admin,
    ApiJson(body): ApiJson<PauseBody>,
) -> ApiResult<impl IntoResponse> {
    st.amc.set_paused(body.paused).await?;
    Ok(Json(serde_json::json!({ "paused": body.paused })))
}

/// The query of `GET /admin/inbox`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InboxQuery {
    limit: Option<u32>,
}

/// `GET /admin/inbox`: recent messages of allowed channels, with who read them.
pub async fn inbox(
    State(st): State<AppState>,
    _: Admin,
    ApiQuery(q): ApiQuery<InboxQuery>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(serde_json::json!({ "messages": st.amc.inbox(q.limit).await? })))
}

/// `GET /admin/events`: the change feed as server-sent events. A listener that falls
/// behind gets a `resync` event and should reload what it shows.
pub async fn events(State(st): State<AppState>, _: Admin) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let shutdown = st.shutdown.clone();
    let stream = BroadcastStream::new(st.amc.events().subscribe())
        .map(|item| {
            let event = match item {
                Ok(e) => SseEvent::default().json_data(&e).unwrap_or_else(|_| SseEvent::default().data("{}")),
                Err(BroadcastStreamRecvError::Lagged(n)) => {
                    SseEvent::default().event("resync").data(format!("{{\"missed\":{n}}}"))
                }
            };
            Ok(event)
        })
        .take_until(async move { shutdown.cancelled().await });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// The query of `GET /admin/events/poll`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PollQuery {
    after: Option<u64>,
    timeout_ms: Option<u64>,
}

/// The longest a poll may wait.
pub const MAX_POLL_MS: u64 = 30_000;

/// `GET /admin/events/poll?after=&timeout_ms=`: the change feed for clients that cannot
/// hold a stream open. Without `after`, answers at once with the cursor to start from.
pub async fn poll_events(
    State(st): State<AppState>,
    _: Admin,
    ApiQuery(q): ApiQuery<PollQuery>,
) -> ApiResult<impl IntoResponse> {
    let timeout = q.timeout_ms.unwrap_or(0);
    if timeout > MAX_POLL_MS {
        return Err(ApiError::new(
            ErrorCode::ValidationFailed,
            format!("timeout_ms must be an integer from 0 to {MAX_POLL_MS}"),
        ));
    }
    let bus = st.amc.events();
    let Some(after) = q.after else {
        return Ok(Json(Since { events: Vec::new(), next: bus.latest(), missed: false }));
    };
    let shutdown = st.shutdown.clone();
    Ok(Json(bus.poll(after, Duration::from_millis(timeout), async move { shutdown.cancelled().await }).await))
}

/// The query of `GET /admin/tool-requests`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolRequestsQuery {
    status: Option<String>,
    limit: Option<i64>,
}

/// `GET /admin/tool-requests?status=pending`: hosts' requests to use a tool waiting for
/// the person, or the log of tool decisions.
pub async fn tool_requests(
    State(st): State<AppState>,
    _: Admin,
    ApiQuery(q): ApiQuery<ToolRequestsQuery>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(serde_json::json!({ "tool_requests": st.amc.tool_requests(q.status, q.limit).await? })))
}

/// `POST /admin/tool-requests/{id}/allow`.
pub async fn allow_tool(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.decide_tool(id, true, DecidedVia::Mac).await?))
}

/// `POST /admin/tool-requests/{id}/deny`.
pub async fn deny_tool(
    State(st): State<AppState>,
    _: Admin,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.decide_tool(id, false, DecidedVia::Mac).await?))
}

/// `GET /admin/search`: the same search over every approved channel, as the person sees
/// them (the Inbox screen's search box).
pub async fn search(
    State(st): State<AppState>,
    _: Admin,
    ApiQuery(p): ApiQuery<amc_core::service::SearchParams>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.search_all(p).await?))
}

/// `GET /admin/phone`: where AMC asks on the person's phone, what, and where it could.
pub async fn phone(State(st): State<AppState>, _: Admin) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.phone_settings().await?))
}

fn settings_setup(st: &AppState) -> ApiResult<std::sync::Arc<dyn crate::SettingsSetup>> {
    st.settings.clone().ok_or_else(|| amc_core::Error::conflict("this AMC cannot change its settings").into())
}

/// `GET /admin/settings`: config.toml's settings, as they are in force.
pub async fn settings(State(st): State<AppState>, _: Admin) -> ApiResult<impl IntoResponse> {
    Ok(Json(settings_setup(&st)?.settings(None).await?))
}

/// `POST /admin/settings`: changes them, each field left out staying; written to config.toml
/// and in force at once.
pub async fn change_settings(
    State(st): State<AppState>,
    _: Admin,
    ApiJson(body): ApiJson<serde_json::Map<String, serde_json::Value>>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(settings_setup(&st)?.settings(Some(serde_json::Value::Object(body))).await?))
}

fn discord_setup(st: &AppState) -> ApiResult<std::sync::Arc<dyn crate::DiscordSetup>> {
    st.discord_setup.clone().ok_or_else(|| amc_core::Error::conflict("this AMC cannot set up Discord").into())
}

/// `GET /admin/discord`: where the bot's token comes from, and the bot.
pub async fn discord(State(st): State<AppState>, _: Admin) -> ApiResult<impl IntoResponse> {
    Ok(Json(discord_setup(&st)?.show().await?))
}

/// The body of `POST /admin/discord/token`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscordToken {
    token: String,
}

/// `POST /admin/discord/token`: checks the token with Discord, keeps it in the system's
/// secret store and connects the bot, without a restart.
pub async fn discord_connect(
    State(st): State<AppState>,
    _: Admin,
    ApiJson(body): ApiJson<DiscordToken>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(discord_setup(&st)?.connect(body.token).await?))
}

/// `POST /admin/discord/disconnect`: stops the bot and forgets its token.
pub async fn discord_disconnect(State(st): State<AppState>, _: Admin) -> ApiResult<impl IntoResponse> {
    Ok(Json(discord_setup(&st)?.disconnect().await?))
}

/// `POST /admin/phone`: changes where AMC asks and what.
pub async fn set_phone(
    State(st): State<AppState>,
    _: Admin,
    ApiJson(body): ApiJson<amc_core::service::PhoneChange>,
) -> ApiResult<impl IntoResponse> {
    Ok(Json(st.amc.set_phone(body).await?))
}

/// `POST /admin/phone/test`: sends a test message to each conversation AMC asks in.
pub async fn phone_test(State(st): State<AppState>, _: Admin) -> ApiResult<impl IntoResponse> {
    let platform_ids = st.amc.phone_test().await?;
    Ok(Json(serde_json::json!({ "sent": platform_ids.len(), "platform_ids": platform_ids })))
}

/// `POST /admin/imessage/test`: a test message to the person's own conversation in Messages,
/// sent as agents' sends are (on a Mac, the first one brings up the Automation prompt).
pub async fn imessage_test(State(st): State<AppState>, _: Admin) -> ApiResult<impl IntoResponse> {
    let platform_id = st.amc.test_self_message(amc_core::model::Source::Imessage).await?;
    Ok(Json(serde_json::json!({ "sent": true, "platform_id": platform_id })))
}

/// The query of `GET /admin/phone/asks`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhoneAsksQuery {
    limit: Option<u32>,
}

/// `GET /admin/phone/asks`: the questions asked on the phone, newest first.
pub async fn phone_asks(
    State(st): State<AppState>,
    _: Admin,
    ApiQuery(q): ApiQuery<PhoneAsksQuery>,
) -> ApiResult<impl IntoResponse> {
    let limit = q.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(amc_core::Error::validation("limit must be an integer from 1 to 500").into());
    }
    Ok(Json(serde_json::json!({ "asks": st.amc.phone_asks(limit).await? })))
}

/// `POST /admin/doctor`: what only this Mac can tell (`amc doctor --deep` without a test
/// message), for the window. `409 CONFLICT` where this AMC was started without them.
pub async fn doctor(State(st): State<AppState>, _: Admin) -> ApiResult<impl IntoResponse> {
    let Some(checks) = st.mac_checks.clone() else {
        return Err(amc_core::Error::conflict("this AMC cannot check the Mac; run amc doctor --deep").into());
    };
    Ok(Json(serde_json::json!({ "checks": checks().await })))
}
