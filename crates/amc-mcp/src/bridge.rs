//! `amc mcp`: the stdio bridge MCP hosts launch. Hosts (Claude Code, Codex CLI, Claude
//! Desktop) cannot dial a Unix socket; they start a command and speak MCP on its stdin
//! and stdout. The bridge is an MCP server on stdio whose tools are the daemon's: it
//! relays `tools/list` and `tools/call` to the daemon's socket with the agent's token.
//!
//! It never hangs and never guesses: if the daemon is down or refuses the token, every
//! call gets an error that says so, and it keeps trying on each new request, so a daemon
//! started later is picked up. `tools/list` is answered all the same (`toolset`), and the
//! host is told to list again once the daemon answers.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomNotification, Implementation, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ResultType, ServerCapabilities, ServerConfig, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use tokio_util::sync::CancellationToken;

use crate::claude_channel::working::Working;
use crate::link::{Failure, Link};
use crate::reach::{BridgeConfig, CONNECT_TIMEOUT, Problem};
use crate::server::failure;
use crate::toolset::Toolset;

/// The stdio side: an MCP server whose tools are the daemon's.
pub struct Bridge {
    link: Arc<Link>,
    /// What the host was given of the tools, and where it listens for changes.
    toolset: Arc<Toolset>,
    /// Cancelled when the host goes away: ends the push and the watch on the daemon.
    host_gone: CancellationToken,
    /// The push, started once the host is initialized (once per session), and waited for
    /// when the host goes away.
    push: tokio_util::task::TaskTracker,
    /// Whether the push started: it starts once.
    push_started: Arc<std::sync::atomic::AtomicBool>,
    /// This session's id at the daemon: its tool requests, and the answers to them.
    session: String,
    /// Whether the host works in this session, rather than checking that the server starts.
    working: Arc<Working>,
}

impl Bridge {
    /// A bridge for `cfg`; it looks for the daemon once it serves.
    pub fn new(cfg: BridgeConfig) -> Self {
        Self::with(cfg, None)
    }

    /// A bridge that answers every request with `problem`.
    pub fn broken(cfg: BridgeConfig, problem: Problem) -> Self {
        Self::with(cfg, Some(problem))
    }

    fn with(cfg: BridgeConfig, fixed_problem: Option<Problem>) -> Self {
        let builtin =
            if cfg.endpoint.ends_with("/relay") { crate::relay::relay_tools() } else { crate::tools::inbox_tools() };
        Self {
            working: Arc::new(Working::new(cfg.push_settle)),
            link: Arc::new(Link::new(cfg, fixed_problem)),
            toolset: Arc::new(Toolset::new(builtin)),
            host_gone: CancellationToken::new(),
            push: Default::default(),
            push_started: Default::default(),
            session: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    fn cfg(&self) -> &BridgeConfig {
        self.link.cfg()
    }

    /// Serves MCP on the host's stdin and stdout (`io`, which the binary opens) until the
    /// host closes them.
    pub async fn serve_stdio<R, W>(self, io: (R, W)) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let (link, host_gone, push, session) =
            (self.link.clone(), self.host_gone.clone(), self.push.clone(), self.session.clone());
        let push_started = self.push_started.clone();
        // From the start, so that a host started before AMC hears of its tools once AMC is up.
        let follow = tokio::spawn(crate::toolset::follow(link.clone(), self.toolset.clone(), host_gone.clone()));
        let running = match self.serve(crate::stdio::HostStdio::new(io.0, io.1)).await {
            Ok(running) => running,
            Err(e) => {
                // The session never began: nothing to push, and no watch on AMC to keep.
                host_gone.cancel();
                let _ = follow.await;
                return Err(std::io::Error::other(e));
            }
        };
        let ended = running.waiting().await;
        // The push acknowledges what it wrote, if the session worked, before it ends.
        host_gone.cancel();
        let _ = follow.await;
        push.close();
        if push_started.load(std::sync::atomic::Ordering::Acquire) {
            let _ = tokio::time::timeout(CONNECT_TIMEOUT, push.wait()).await;
            // Tool requests still waiting for the person leave the tray now.
            let _ =
                tokio::time::timeout(CONNECT_TIMEOUT, crate::claude_channel::push::end_session(link.cfg(), &session))
                    .await;
        }
        ended.map_err(std::io::Error::other)?;
        // The host closed stdin: close the daemon side cleanly too.
        link.close().await;
        Ok(())
    }
}

impl Bridge {
    fn relays_threads(&self) -> bool {
        self.cfg().endpoint.ends_with("/relay")
    }

    /// Whether this bridge pushes new messages to the host.
    fn pushes(&self) -> bool {
        let cfg = self.cfg();
        cfg.push && !self.relays_threads() && self.link.fixed_problem().is_none() && cfg.agent_id.is_some()
    }
}

impl ServerHandler for Bridge {
    /// A bridge that pushes speaks only the `initialize` handshake: Claude Code takes
    /// channel notifications only from a server it did not reach on 2026-07-28 ("connection
    /// negotiated a modern protocol revision with no unsolicited notification path", its
    /// debug log says), and it falls back to `initialize` when `server/discover` offers no
    /// 2026-07-28.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.pushes() {
            Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::LATEST_WITH_INITIALIZE))
        } else {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        }
    }

    fn get_info(&self) -> ServerConfig {
        let relay = self.relays_threads();
        let mut capabilities = ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build();
        let instructions = if relay {
            crate::relay::RELAY_INSTRUCTIONS.to_owned()
        } else if self.pushes() {
            capabilities.experimental = Some(
                [crate::claude_channel::CHANNEL_CAPABILITY, crate::claude_channel::PERMISSION_CAPABILITY]
                    .into_iter()
                    .map(|c| (c.to_owned(), Default::default()))
                    .collect(),
            );
            format!("{} {}", crate::server::INBOX_INSTRUCTIONS, crate::claude_channel::PUSH_INSTRUCTIONS)
        } else {
            crate::server::INBOX_INSTRUCTIONS.to_owned()
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(if relay { "amc-relay" } else { "amc" }, env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.toolset.listen_on_session(context.peer.clone());
        // The push starts once: whoever first sets the flag starts it.
        if self.pushes() && !self.push_started.swap(true, std::sync::atomic::Ordering::AcqRel) {
            let run = crate::claude_channel::push::run(
                self.cfg().clone(),
                self.session.clone(),
                context.peer,
                self.working.clone(),
                self.host_gone.clone(),
            );
            self.push.spawn(run);
        }
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        Some(if requested.tools_list_changed == Some(true) {
            SubscriptionFilter::builder().tools_list_changed().build()
        } else {
            SubscriptionFilter::new()
        })
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        if context.accepted().tools_list_changed == Some(true) {
            self.toolset.listen_on(context.sink().clone());
        }
        tokio::select! {
            () = context.cancelled() => {}
            () = self.host_gone.cancelled() => {}
        }
        self.toolset.stop_listening_on(context.sink().id());
        Ok(())
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleServer>,
    ) {
        if notification.method != crate::claude_channel::PERMISSION_REQUEST_METHOD || !self.pushes() {
            return;
        }
        // Only a session that took the channel relays its prompts.
        self.working.worked();
        // Claude Code waits on its own prompt meanwhile: relaying must not hold up the
        // session's other messages.
        let (cfg, session) = (self.cfg().clone(), self.session.clone());
        tokio::spawn(async move {
            crate::claude_channel::push::relay_tool_request(&cfg, &session, notification.params).await
        });
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let whole = request.as_ref().is_none_or(|r| r.cursor.is_none());
        let mut listed = match self.link.relay(async |up| up.list_tools(request).await).await {
            Ok(listed) => {
                if whole && listed.next_cursor.is_none() {
                    self.toolset.answered_by_daemon(&listed.tools);
                }
                listed
            }
            Err(Failure::Protocol(e)) => return Err(e),
            // The host still gets the tools: each call says what is wrong, and the host is
            // told to list them again once AMC answers.
            Err(Failure::Unreachable { .. }) => ListToolsResult::with_all_items(self.toolset.answer_alone()),
        };
        // The daemon's answer came in the bridge's own (older) protocol, without
        // `resultType`; a host on 2026-07-28 requires it (rmcp strips it for older hosts).
        listed.result_type.get_or_insert(ResultType::COMPLETE);
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.working.worked();
        // A tool call is relayed once, never retried, so nothing can go out twice.
        let name = request.name.clone();
        // A host that cancels the call cancels it upstream too (dropping the request tells
        // the daemon), so a cancelled wait_for_messages does not linger there.
        let relayed = tokio::select! {
            r = self.link.relay(async |up| up.call_tool(request).await) => r,
            () = context.ct.cancelled() => return Err(McpError::internal_error("cancelled by the client", None)),
        };
        match relayed {
            Ok(mut result) => {
                result.result_type.get_or_insert(ResultType::COMPLETE);
                Ok(result.into())
            }
            Err(Failure::Protocol(e)) => Err(e),
            // The agent reads tool results, not protocol errors: say what is wrong there.
            Err(Failure::Unreachable { problem, handed_over }) => {
                let mut err = problem.envelope();
                if handed_over && name == "send_message" {
                    err.message = format!(
                        "{} The send may still be delivered: do not send it again; check the conversation with \
                         get_message_context, or ask the person.",
                        err.message
                    );
                }
                Ok(failure(&err).into())
            }
        }
    }
}
