//! AMC started with its Discord source pointed at the fake, and ways to wait for what
//! a person or an agent would see.

use std::time::Duration;

use amc_client::{Connection, Response};
use amc_discord::fake::FakeDiscord;
use serde_json::{Value, json};

pub const TOKEN: &str = "fake-bot-token.abc.def";

pub struct Amc {
    pub dir: tempfile::TempDir,
    pub fake: FakeDiscord,
    running: Option<amc_runtime::Running>,
    admin_token: String,
}

/// Starts a fake Discord with `channels` and AMC following it; `extra` is added to
/// config.toml. Waits until the bot has identified.
pub async fn start(channels: &[&str], extra: &str) -> Amc {
    let fake = FakeDiscord::start(TOKEN, channels).await.expect("fake discord");
    start_with(fake, extra).await
}

/// One channel, "general", approved with `approval`, and an agent: what most tests need.
pub struct General {
    pub amc: Amc,
    /// Discord's id of the channel.
    pub channel: u64,
    /// AMC's id of the channel.
    pub id: String,
    pub agent: Agent,
}

pub async fn general(extra: &str, approval: Value) -> General {
    let amc = start(&["general"], extra).await;
    let channel = amc.fake.channel_ids()[0];
    let id = amc.approve(channel, approval).await;
    let agent = amc.agent("claude").await;
    General { amc, channel, id, agent }
}

pub async fn start_with(fake: FakeDiscord, extra: &str) -> Amc {
    let dir = tempfile::tempdir().expect("tempdir");
    let connected = fake.connected(Duration::from_secs(20));
    let running = run_against(&fake, dir.path(), TOKEN, extra).await;
    let admin_token = std::fs::read_to_string(dir.path().join("admin-token")).expect("admin token");
    let amc = Amc { dir, fake: fake.clone(), running: Some(running), admin_token };
    assert!(connected.await, "the bot never identified with the fake gateway");
    amc.eventually("the source to be connected", || async {
        (amc.health().await["state"] == "connected").then_some(())
    })
    .await;
    amc
}

/// AMC in `dir` following `fake` with the bot token `token` (`extra` added to
/// config.toml), without waiting for the bot.
pub async fn run_against(fake: &FakeDiscord, dir: &std::path::Path, token: &str, extra: &str) -> amc_runtime::Running {
    let config = format!(
        "discord_token = \"{token}\"\n{}imessage_chat_db = \"\"\n{extra}\n",
        fake.config(dir).expect("the fake's CA")
    );
    std::fs::write(dir.join("config.toml"), config).expect("config");
    let raw = amc_runtime::RawConfig { data_dir: Some(dir.to_owned()), ..Default::default() };
    amc_runtime::start(raw).await.expect("AMC starts")
}

/// Waits until the Discord source's reason contains `needle`.
pub async fn discord_reason(running: &amc_runtime::Running, needle: &str) -> amc_core::service::Health {
    // Health changes are published as `source_changed`: look again at each event.
    let mut events = running.amc().events().subscribe();
    let waited = tokio::time::timeout(amc_testkit::DEADLINE, async {
        loop {
            let h = running.amc().health().await;
            let d = &h.sources[&amc_core::model::Source::Discord];
            if d.reason.as_deref().is_some_and(|r| r.contains(needle)) {
                return h;
            }
            let _ = events.recv().await;
        }
    })
    .await;
    match waited {
        Ok(h) => h,
        Err(_) => panic!("never reported {needle:?}: {:?}", running.amc().health().await),
    }
}

impl Amc {
    pub async fn conn(&self) -> Connection {
        Connection::connect(&self.dir.path().join("run/amc.sock")).await.expect("connect")
    }

    pub async fn admin(&self) -> Connection {
        self.conn().await.with_bearer(self.admin_token.trim())
    }

    /// Adds an agent.
    pub async fn agent(&self, id: &str) -> Agent {
        let resp = self.admin().await.post("/admin/agents", &json!({ "id": id })).await.expect("post");
        assert_eq!(resp.status, 201, "{:?}", resp.json());
        let token = resp.json()["token"].as_str().expect("token").to_owned();
        Agent { id: id.to_owned(), token, socket: self.dir.path().join("run/amc.sock") }
    }

    /// The channel AMC made for a Discord channel id, once it exists.
    pub async fn channel(&self, platform_id: u64) -> Value {
        let id = platform_id.to_string();
        self.eventually(&format!("channel {id} to appear"), || async {
            let all = self.admin().await.get("/admin/channels").await.expect("channels").json();
            all["channels"].as_array()?.iter().find(|c| c["platform_id"] == id.as_str()).cloned()
        })
        .await
    }

    pub async fn approve(&self, platform_id: u64, body: Value) -> String {
        let ch = self.channel(platform_id).await;
        let id = ch["id"].as_str().expect("id").to_owned();
        let resp = self.admin().await.post(&format!("/admin/channels/{id}/approve"), &body).await.expect("approve");
        assert_eq!(resp.status, 200, "{:?}", resp.json());
        id
    }

    pub async fn health(&self) -> Value {
        self.admin().await.get("/healthz").await.expect("healthz").json()["sources"]["discord"].clone()
    }

    /// AMC is away: its session is lost (so Discord replays nothing), `meanwhile` runs,
    /// then the bot may connect again. Returns once it has, with the time it did (Unix ms).
    pub async fn away(&self, meanwhile: impl FnOnce(&FakeDiscord)) -> i64 {
        self.fake.set_accepting(false);
        self.fake.invalidate_session(false);
        self.fake.drop_connection();
        meanwhile(&self.fake);
        let back = self.fake.connected(Duration::from_secs(60));
        self.fake.set_accepting(true);
        assert!(back.await, "the bot came back");
        amc_core::time::now_ms()
    }

    /// When the source finished its newest catch-up, once that is at or after `since`
    /// (Unix ms) and differs from `not`: a catch-up that started after `since` is done.
    pub async fn caught_up(&self, since: i64, not: Option<&str>) -> String {
        self.eventually("a catch-up to finish", || async {
            let at = self.health().await["caught_up_at"].as_str()?.to_owned();
            let ms = amc_core::time::parse_rfc3339(&at)?;
            (ms >= since && Some(at.as_str()) != not).then_some(at)
        })
        .await
    }

    /// Polls `check` until it returns something (see [`amc_testkit::eventually`]).
    pub async fn eventually<T, F, Fut>(&self, what: &str, check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        amc_testkit::eventually(what, check).await
    }

    /// The texts of a channel's unread messages once there are at least `n`.
    pub async fn texts(&self, agent: &Agent, channel_id: &str, n: usize, what: &str) -> Vec<String> {
        let msgs = self
            .eventually(what, || async {
                let m = agent.unread(channel_id).await;
                (m.len() >= n).then_some(m)
            })
            .await;
        msgs.iter().map(|m| m["text"].as_str().unwrap_or_default().to_owned()).collect()
    }

    pub async fn stop(mut self) {
        if let Some(r) = self.running.take() {
            r.run_until(async {}).await.expect("stops cleanly");
        }
    }
}

/// An agent with its token.
pub struct Agent {
    pub id: String,
    pub token: String,
    socket: std::path::PathBuf,
}

impl Agent {
    /// A connection speaking as the agent.
    pub async fn conn(&self) -> Connection {
        Connection::connect(&self.socket)
            .await
            .expect("connect")
            .with_bearer(&self.token)
            .with_header("x-agent-id", &self.id)
    }

    /// Every unread message of a channel, oldest first (at most 100).
    pub async fn unread(&self, channel_id: &str) -> Vec<Value> {
        let resp: Response = self
            .conn()
            .await
            .get(&format!("/messages/unread?channel_id={channel_id}&limit=100"))
            .await
            .expect("unread");
        assert_eq!(resp.status, 200, "{:?}", resp.json());
        resp.json()["messages"].as_array().cloned().unwrap_or_default()
    }

    /// Sends through `POST /messages/send`.
    pub async fn send(&self, body: Value) -> Response {
        self.conn().await.post("/messages/send", &body).await.expect("send")
    }
}
