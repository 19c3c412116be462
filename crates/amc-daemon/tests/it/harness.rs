//! Starting a real daemon in a temporary data directory, and talking to it.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use amc_client::{Connection, Response};
use amc_core::config::Config;
use amc_core::model::ChannelSpec;
use amc_core::model::{ChannelKind, IncomingAttachment, IncomingMessage, Source};
use amc_core::sender::{RecordingSender, Senders};
use amc_core::service::Amc;
use amc_core::time::now_ms;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub amc: Amc,
    pub relay: amc_relay::Relay,
    pub sender: RecordingSender,
    pub config: Config,
    pub admin_token: String,
    pub tcp_addr: Option<std::net::SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
}

impl Daemon {
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts a daemon whose config `tweak` may change (rate limits, timeouts, …).
    pub async fn start_with(tweak: impl FnOnce(&mut Config)) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        Self::start_in(dir, tweak, None).await
    }

    pub async fn start_in(
        dir: tempfile::TempDir,
        tweak: impl FnOnce(&mut Config),
        sender: Option<Arc<dyn amc_core::sender::Sender>>,
    ) -> Self {
        let mut config = Config::new(dir.path().to_owned());
        tweak(&mut config);
        let recording = RecordingSender::default();
        let sender: Arc<dyn amc_core::sender::Sender> = sender.unwrap_or_else(|| Arc::new(recording.clone()));
        let senders = Senders::default().with(Source::Imessage, sender.clone()).with(Source::Discord, sender);
        let socket = amc_daemon::bind_socket(&config.run_dir(), &config.socket_path()).expect("bind");
        let tcp = match config.listen {
            Some(addr) => Some(tokio::net::TcpListener::bind(addr).await.expect("tcp")),
            None => None,
        };
        let tcp_addr = tcp.as_ref().map(|l| l.local_addr().expect("addr"));
        let amc = Amc::start(config.clone(), senders).expect("start");
        let daemon = amc_daemon::Daemon::new(amc.clone(), tcp_addr).expect("daemon");
        let (admin_token, relay) = (daemon.admin_token().to_owned(), daemon.relay().clone());
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(daemon.serve(socket, tcp, async move {
            let _ = stopped.await;
        }));
        Self { dir, amc, relay, sender: recording, config, admin_token, tcp_addr, stop: Some(stop), task: Some(task) }
    }

    pub fn socket(&self) -> PathBuf {
        self.config.socket_path()
    }

    /// A connection with no credentials.
    pub async fn anon(&self) -> Connection {
        Connection::connect(&self.socket()).await.expect("connect")
    }

    pub async fn admin(&self) -> Connection {
        self.anon().await.with_bearer(&self.admin_token)
    }

    /// Adds an agent through the admin API and returns a connection that sends its token
    /// and `X-Agent-ID`, and the token.
    pub async fn agent(&self, id: &str) -> (Connection, String) {
        let resp = self.admin().await.post("/admin/agents", &serde_json::json!({ "id": id })).await.expect("post");
        assert_eq!(resp.status, 201, "{:?}", resp.json());
        let token = resp.json()["token"].as_str().expect("token").to_owned();
        let conn = self.anon().await.with_bearer(&token).with_header("x-agent-id", id);
        (conn, token)
    }

    /// A connection as an agent whose token is known (its `X-Agent-ID` sent too).
    pub fn connect_agent(&self, token: &str, agent_id: &str) -> impl Future<Output = Connection> + use<> {
        let (socket, token, agent_id) = (self.socket(), token.to_owned(), agent_id.to_owned());
        async move {
            Connection::connect(&socket)
                .await
                .expect("connect")
                .with_bearer(&token)
                .with_header("x-agent-id", &agent_id)
        }
    }

    /// Starts `GET path` as the agent on a connection of its own (a long wait, typically).
    pub fn spawn_get(&self, token: &str, agent_id: &str, path: &str) -> JoinHandle<Response> {
        let (connect, path) = (self.connect_agent(token, agent_id), path.to_owned());
        tokio::spawn(async move { connect.await.get(&path).await.expect("get") })
    }

    /// Creates (or finds) a channel by storing messages in it, as a source would.
    pub async fn ingest(&self, source: Source, chat: &str, messages: Vec<IncomingMessage>) -> (String, Vec<String>) {
        let spec = ChannelSpec {
            platform_id: chat.to_owned(),
            name: format!("Chat {chat}"),
            kind: ChannelKind::Dm,
            readers: None,
        };
        let report = self.amc.ingest(source, spec, messages, None).await.expect("ingest");
        (report.channel_id, report.inserted)
    }

    /// A pending channel with `n` messages sent one second apart, ending now.
    pub async fn channel_with(&self, chat: &str, n: usize) -> (String, Vec<String>) {
        let now = now_ms();
        let msgs = (0..n).map(|i| msg(&format!("{chat}-{i}"), &format!("message {i}"), now - (n - i) as i64 * 1000));
        self.ingest(Source::Imessage, chat, msgs.collect()).await
    }

    pub async fn approve(&self, channel_id: &str, body: Value) -> Response {
        self.admin().await.post(&format!("/admin/channels/{channel_id}/approve"), &body).await.expect("approve")
    }

    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            t.await.expect("join").expect("serve");
        }
        std::mem::replace(&mut self.dir, tempfile::tempdir().expect("tempdir"))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

pub fn msg(platform_id: &str, text: &str, sent_at: i64) -> IncomingMessage {
    amc_testkit::incoming(platform_id, text).at(sent_at).build()
}

pub fn attachment(path: &str, mime: &str) -> IncomingAttachment {
    IncomingAttachment {
        platform_id: None,
        filename: std::path::Path::new(path).file_name().map(|n| n.to_string_lossy().into_owned()),
        mime_type: Some(mime.to_owned()),
        size_bytes: std::fs::metadata(path).ok().map(|m| m.len() as i64),
        local_path: Some(path.to_owned()),
        remote_url: None,
        available: std::path::Path::new(path).exists(),
    }
}

/// The error code of an envelope, checking the envelope's shape on the way.
pub fn code(resp: &Response) -> String {
    let v = resp.json();
    let err = &v["error"];
    assert_eq!(err["status"].as_u64(), Some(u64::from(resp.status.as_u16())), "envelope status: {v}");
    assert!(err["message"].as_str().is_some_and(|m| !m.is_empty()), "envelope message: {v}");
    err["code"].as_str().unwrap_or_else(|| panic!("not an envelope: {v}")).to_owned()
}

pub fn ids(v: &Value) -> Vec<String> {
    v["messages"].as_array().expect("messages").iter().map(|m| m["id"].as_str().expect("id").to_owned()).collect()
}
