//! The router: agents' routes at the root, the person's under `/admin`, the UI's files
//! under `/ui/`.

pub mod admin;
pub mod agent;
pub mod mcp;
pub mod relay;
pub mod test;

use axum::Router;
use axum::middleware::from_fn;
use axum::routing::{get, post};

use crate::AppState;

/// Refuses a query string on an agent's route that takes none (`VALIDATION_FAILED`), as
/// those that take one refuse a parameter they do not know: a misspelt parameter is said,
/// never silently dropped.
async fn no_query(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    if req.uri().query().is_some_and(|q| !q.is_empty()) {
        let e = amc_core::Error::validation(format!("{} takes no query parameters", req.uri().path()));
        return axum::response::IntoResponse::into_response(crate::error::ApiError(e));
    }
    next.run(req).await
}

/// Every route, with the envelope for unknown routes and wrong methods.
pub fn router(state: AppState) -> Router {
    let inbox_mcp = amc_mcp::inbox_service(state.amc.clone(), state.shutdown.child_token());
    let relay_mcp = amc_mcp::relay_service(state.relay.clone(), state.shutdown.child_token());
    let mcp = Router::new()
        .route_service("/mcp", inbox_mcp)
        .route_service("/mcp/relay", relay_mcp)
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), mcp::guard));
    let test_routes = if state.amc.test_sender().is_some() {
        Router::new()
            .route("/admin/test/ingest", post(test::ingest))
            .route("/admin/test/fail-next", post(test::fail_next))
    } else {
        Router::new()
    };
    Router::new()
        .merge(mcp)
        .merge(test_routes)
        .route("/messages/unread", get(agent::unread))
        .route("/messages/unread/wait", get(agent::wait_unread))
        .route("/messages/push", get(agent::push))
        .route("/messages/push/ack", post(agent::push_ack).route_layer(from_fn(no_query)))
        .route("/tool-requests", post(agent::ask_tool).route_layer(from_fn(no_query)))
        .route("/tool-requests/end", post(agent::end_tool_session).route_layer(from_fn(no_query)))
        .route("/messages/search", get(agent::search))
        .route("/messages/context", get(agent::context))
        .route("/messages/mark_read", post(agent::mark_read).route_layer(from_fn(no_query)))
        .route("/messages/send", post(agent::send).route_layer(from_fn(no_query)))
        .route("/messages/{id}", get(agent::get_message).route_layer(from_fn(no_query)))
        .route("/channels", get(agent::channels))
        .route("/attachments/{id}", get(agent::attachment).route_layer(from_fn(no_query)))
        .route("/healthz", get(agent::healthz).route_layer(from_fn(no_query)))
        .route("/admin/channels", get(admin::channels))
        .route("/admin/channels/{id}", get(admin::channel))
        .route("/admin/channels/{id}/approve", post(admin::approve_channel))
        .route("/admin/channels/{id}/block", post(admin::block_channel))
        .route("/admin/channels/{id}/codes", post(admin::channel_codes))
        .route("/admin/channels/{id}/policy", post(admin::set_policy))
        .route("/admin/channels/{id}/readers", post(admin::set_readers_rule))
        .route("/admin/channels/{id}/agents", post(admin::channel_agents))
        .route("/admin/channels/{id}/agents/{agent}/policy", post(admin::channel_agent_policy))
        .route("/admin/sends", get(admin::sends))
        .route("/admin/sends/{id}", get(admin::send))
        .route("/admin/sends/{id}/attachments/{index}", get(admin::send_attachment))
        .route("/admin/sends/{id}/approve", post(admin::approve_send))
        .route("/admin/sends/{id}/reject", post(admin::reject_send))
        .route("/admin/agents", get(admin::agents).post(admin::create_agent))
        .route("/admin/agents/{id}/revoke", post(admin::revoke_agent))
        .route("/admin/agents/{id}/bundle", post(admin::agent_bundle))
        .route("/admin/tool-requests", get(admin::tool_requests))
        .route("/admin/tool-requests/{id}/allow", post(admin::allow_tool))
        .route("/admin/tool-requests/{id}/deny", post(admin::deny_tool))
        .route("/admin/pause", post(admin::pause))
        .route("/admin/doctor", post(admin::doctor))
        .route("/admin/settings", get(admin::settings).post(admin::change_settings))
        .route("/admin/discord", get(admin::discord))
        .route("/admin/discord/token", post(admin::discord_connect))
        .route("/admin/discord/disconnect", post(admin::discord_disconnect))
        .route("/admin/phone", get(admin::phone).post(admin::set_phone))
        .route("/admin/phone/test", post(admin::phone_test))
        .route("/admin/imessage/test", post(admin::imessage_test))
        .route("/admin/phone/asks", get(admin::phone_asks))
        .route("/admin/listen", get(admin::listen))
        .route("/admin/inbox", get(admin::inbox))
        .route("/admin/messages/{id}/not-a-code", post(admin::not_a_code))
        .route("/admin/codes/report", get(admin::not_a_code_report))
        .route("/admin/search", get(admin::search))
        .route("/admin/events", get(admin::events))
        .route("/admin/events/poll", get(admin::poll_events))
        .route("/admin/relay/threads", get(relay::threads).post(relay::create))
        .route("/admin/relay/threads/{id}/join", post(relay::join))
        .route("/admin/relay/threads/{id}/messages", get(relay::read).post(relay::post))
        .route("/admin/relay/threads/{id}/wait", get(relay::wait))
        .route("/admin/relay/threads/{id}/waiting", get(relay::waiting))
        .route("/admin/relay/threads/{id}/invites", get(relay::invites).post(relay::mint))
        .route("/admin/relay/threads/{id}/invites/{token_id}/revoke", post(relay::revoke))
        .route("/admin/relay/search", get(relay::search))
        .route("/", get(crate::ui::redirect))
        .route("/ui", get(crate::ui::redirect))
        .route("/ui/", get(crate::ui::index))
        .route("/ui/{*path}", get(crate::ui::file))
        .fallback(agent::not_found)
        .method_not_allowed_fallback(agent::method_not_allowed)
        .with_state(state)
}
