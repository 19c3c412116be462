//! AMC's daemon: the agents' REST API and the person's admin API, served on a Unix
//! socket (and, when asked, on a loopback TCP port).
//!
//! # Layout
//! - [`routes`]: the router; `routes/agent.rs` and `routes/admin.rs` hold the handlers.
//! - [`extract`]: body, query and credential extractors that fail with the envelope.
//! - [`error`]: core errors as HTTP responses.
//! - `in_process.rs`: [`InProcess`], the routes for the tray window, in `http` types:
//!   the only way out of this crate for a request, so axum stays inside it.
//! - [`guard`]: header limits, panics, Host/Origin checks for TCP.
//! - `serve.rs`: the accept loop and each connection on hyper's HTTP/1.1.
//! - `refusal.rs`: the envelope in place of hyper's bare refusal of a request head.
//! - [`listener`]: the socket, its permissions and the one-daemon lock.
//! - [`ui`]: the tray UI's files, embedded and served at `/ui/`.
//! - `bundle.rs`: the MCP Bundle (`.mcpb`) that installs an agent into Claude Desktop.
#![deny(missing_docs)]

mod bundle;
pub(crate) mod error;
pub(crate) mod extract;
pub(crate) mod guard;
mod in_process;
pub mod listener;
mod refusal;
pub(crate) mod routes;
mod serve;
mod ui;

use std::future::Future;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use axum::Router;
use tokio_util::sync::CancellationToken;
use tower_http::catch_panic::CatchPanicLayer;

use amc_core::service::Amc;

pub use in_process::{BoxError, InProcess, ResponseBody};
pub use listener::{ListenError, SocketGuard, SocketListener, bind_socket};
/// The UI's files, embedded: for tests that check each one is served.
pub use ui::{FILES as UI_FILES, UiFile};

/// What every handler gets: one pointer, since every request clones it several times
/// (each middleware and the handler).
#[derive(Clone)]
pub(crate) struct AppState(std::sync::Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What the handlers share.
pub(crate) struct Shared {
    /// The core.
    pub amc: Amc,
    /// The agent relay, on the core's database.
    pub relay: amc_relay::Relay,
    /// The relay's MCP server for the calls `/mcp/relay` answers directly: one for the
    /// daemon, so its last page written is there for the next call.
    pub relay_mcp: amc_mcp::RelayServer,
    /// The admin credential.
    pub admin_token: String,
    /// Cancelled when the daemon stops, so long-lived responses end.
    pub shutdown: CancellationToken,
    /// The loopback address also served, if any (`amc ui` asks for it).
    pub listen: Option<std::net::SocketAddr>,
    /// What only this Mac can tell (`amc doctor --deep`), for the window's "Check this Mac":
    /// given by the runtime, which holds the sources' settings.
    pub mac_checks: Option<MacChecks>,
    /// The Discord source's setup from the window: given by the runtime, which runs it.
    pub discord_setup: Option<std::sync::Arc<dyn DiscordSetup>>,
    /// config.toml's settings from the window: given by the runtime, which reads them.
    pub settings: Option<std::sync::Arc<dyn SettingsSetup>>,
}

/// The window's settings (`/admin/settings`): config.toml's, changed while AMC runs.
pub trait SettingsSetup: Send + Sync {
    /// The settings in force, or after `change` (a JSON object) is checked, written and put
    /// in force.
    fn settings(
        &self,
        change: Option<serde_json::Value>,
    ) -> amc_core::sender::BoxFuture<'_, amc_core::Result<serde_json::Value>>;
}

/// The window's Discord setup (`/admin/discord`): what is set up, a token checked with
/// Discord and connected, the bot disconnected. Each answer is the setup's state as JSON.
pub trait DiscordSetup: Send + Sync {
    /// What is set up.
    fn show(&self) -> amc_core::sender::BoxFuture<'_, amc_core::Result<serde_json::Value>>;
    /// Checks `token` with Discord, keeps it and connects the bot with it.
    fn connect(&self, token: String) -> amc_core::sender::BoxFuture<'_, amc_core::Result<serde_json::Value>>;
    /// Disconnects the bot and forgets its token.
    fn disconnect(&self) -> amc_core::sender::BoxFuture<'_, amc_core::Result<serde_json::Value>>;
}

/// Runs `amc doctor --deep`'s checks: a JSON array of `{name, outcome, detail, fix}`.
pub type MacChecks = std::sync::Arc<dyn Fn() -> amc_core::sender::BoxFuture<'static, serde_json::Value> + Send + Sync>;

/// The prefix of the admin token.
pub const ADMIN_TOKEN_PREFIX: &str = "amc_admin_";

/// Reads the admin token from `path`, creating it (mode 0600) on first start.
pub fn load_or_create_admin_token(path: &Path) -> io::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(t) if t.trim().starts_with(ADMIN_TOKEN_PREFIX) => {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
            return Ok(t.trim().to_owned());
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let token = amc_core::token::new_token(ADMIN_TOKEN_PREFIX);
    amc_core::files::write_atomic(path, token.as_bytes())?;
    Ok(token)
}

/// The router with its middleware, for a listener of the given kind.
///
/// The middleware every request passes wraps the router once, as one service, rather than
/// each route (`Router::layer` boxes every route again for each layer): an answer goes
/// back through fewer futures, which a post waking a thousand waiting calls pays a
/// thousand times.
pub(crate) fn app(state: AppState, tcp: Option<std::net::SocketAddr>) -> Router {
    guarded(routes::router(state), tcp)
}

/// `routes` in the middleware every request passes, outermost first: for the loopback TCP
/// listener the Host and Origin check, then the panic guard, the header limit, the body's
/// stall limit and its size limit.
fn guarded(routes: Router, tcp: Option<std::net::SocketAddr>) -> Router {
    let guarded = tower::ServiceBuilder::new()
        .layer(CatchPanicLayer::custom(guard::panic_response))
        .layer(guard::HeaderLimitLayer)
        .map_request(serve::stall_limited)
        .layer(axum::extract::DefaultBodyLimit::max(extract::MAX_REST_BODY_BYTES))
        .service(routes);
    let mut router = Router::new().fallback_service(guarded);
    if let Some(addr) = tcp {
        router = router.layer(axum::middleware::from_fn_with_state(addr, guard::loopback_only));
    }
    router
}

/// Serves until `shutdown` resolves, then lets requests in flight finish (up to a few
/// seconds) and removes the socket.
pub async fn serve(
    amc: Amc,
    socket: SocketListener,
    tcp: Option<tokio::net::TcpListener>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let listen = tcp.as_ref().and_then(|l| l.local_addr().ok());
    // The admin token's file and the relay's migrations: off the async threads.
    let daemon = tokio::task::spawn_blocking(move || Daemon::new(amc, listen)).await.map_err(io::Error::other)??;
    daemon.serve(socket, tcp, shutdown).await
}

/// A daemon ready to serve: its listeners, and requests dispatched from inside the
/// process (the tray window) through [`Daemon::in_process`].
pub struct Daemon {
    state: AppState,
}

impl Daemon {
    /// The daemon with what answers `POST /admin/doctor` (the window's "Check this Mac"),
    /// given before it serves.
    pub fn with_mac_checks(mut self, checks: MacChecks) -> Self {
        if let Some(shared) = std::sync::Arc::get_mut(&mut self.state.0) {
            shared.mac_checks = Some(checks);
        }
        self
    }

    /// The daemon with what answers `/admin/discord` (the window's Setup), given before it
    /// serves.
    pub fn with_discord_setup(mut self, setup: std::sync::Arc<dyn DiscordSetup>) -> Self {
        if let Some(shared) = std::sync::Arc::get_mut(&mut self.state.0) {
            shared.discord_setup = Some(setup);
        }
        self
    }

    /// The daemon with what answers `/admin/settings`, given before it serves.
    pub fn with_settings(mut self, settings: std::sync::Arc<dyn SettingsSetup>) -> Self {
        if let Some(shared) = std::sync::Arc::get_mut(&mut self.state.0) {
            shared.settings = Some(settings);
        }
        self
    }

    /// Loads (or creates) the admin token, and opens the relay. `listen`: the loopback TCP
    /// address [`Daemon::serve`] will also serve on, its listener bound already.
    pub fn new(amc: Amc, listen: Option<std::net::SocketAddr>) -> io::Result<Self> {
        let admin_token = load_or_create_admin_token(&amc.config().admin_token_path())?;
        let relay = amc_relay::Relay::open(&amc).map_err(io::Error::other)?;
        Ok(Self {
            state: AppState(std::sync::Arc::new(Shared {
                amc,
                relay_mcp: amc_mcp::RelayServer::new(relay.clone()),
                relay,
                admin_token,
                shutdown: CancellationToken::new(),
                listen,
                mac_checks: None,
                discord_setup: None,
                settings: None,
            })),
        })
    }

    /// The relay this daemon serves.
    pub fn relay(&self) -> &amc_relay::Relay {
        &self.state.relay
    }

    /// The admin token (also in its file, mode 0600).
    pub fn admin_token(&self) -> &str {
        &self.state.admin_token
    }

    /// The daemon for requests made inside AMC's own process: they act as the person.
    /// Long-lived responses end when the daemon stops.
    pub fn in_process(&self) -> InProcess {
        InProcess::new(app(self.state.clone(), None), &self.state.admin_token)
    }

    /// Serves until `shutdown` resolves, then lets requests in flight finish (up to a few
    /// seconds) and removes the socket.
    pub async fn serve(
        self,
        socket: SocketListener,
        tcp: Option<tokio::net::TcpListener>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let Self { state } = self;
        debug_assert_eq!(state.listen, tcp.as_ref().and_then(|l| l.local_addr().ok()), "the address said at start");
        let token = state.shutdown.clone();
        {
            let token = token.clone();
            tokio::spawn(async move {
                shutdown.await;
                token.cancel();
            });
        }
        let SocketListener { listener, guard } = socket;
        let unix = tokio::spawn(serve::serve(listener, app(state.clone(), None), token.clone(), None));
        let tcp_task = match tcp {
            Some(l) => {
                let addr = l.local_addr()?;
                tracing::info!(%addr, "serving on loopback TCP");
                Some(tokio::spawn(serve::serve(l, app(state, Some(addr)), token.clone(), Some(serve::HEAD_TIMEOUT))))
            }
            None => None,
        };
        tracing::info!(socket = %guard.path.display(), "AMC is serving");
        token.cancelled().await;
        let drain = async {
            let _ = unix.await;
            if let Some(t) = tcp_task {
                let _ = t.await;
            }
        };
        if tokio::time::timeout(std::time::Duration::from_secs(5), drain).await.is_err() {
            tracing::warn!("some connections did not close in time; stopping anyway");
        }
        drop(guard);
        tracing::info!("AMC stopped");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    /// A handler that panics is answered with the envelope, and the next request is served.
    #[tokio::test]
    async fn a_panicking_handler_is_answered_with_the_envelope() {
        #[allow(clippy::unused_async)] // a handler is async
        async fn boom() -> &'static str {
            panic!("a handler's bug")
        }
        let routes = axum::Router::new()
            .route("/boom", axum::routing::get(boom))
            .route("/fine", axum::routing::get(|| async { "fine" }));
        let app = super::guarded(routes, None);
        let r = app.clone().oneshot(Request::get("/boom").body(Body::empty()).expect("request")).await;
        let r = r.expect("an answer");
        assert_eq!(r.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(r.into_body(), 4096).await.expect("body");
        let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(v["error"]["code"], "INTERNAL_ERROR", "{v}");
        assert!(!v.to_string().contains("a handler's bug"), "no detail leaks: {v}");
        let r = app.oneshot(Request::get("/fine").body(Body::empty()).expect("request")).await.expect("an answer");
        assert_eq!(r.status(), StatusCode::OK);
    }
}
