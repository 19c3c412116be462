//! `amc serve` with the Discord source, against a local Discord: the token comes from
//! the environment and never reaches the log, even at debug level.

use std::path::Path;
use std::process::{Command, Stdio};

use amc_client::Connection;
use amc_discord::fake::FakeDiscord;
use serde_json::json;

const TOKEN: &str = "MTA5ODc2NTQzMjEw.secret-part.do-not-log";

async fn admin(dir: &Path) -> Connection {
    let token = std::fs::read_to_string(dir.join("admin-token")).expect("admin token");
    Connection::connect(&dir.join("run/amc.sock")).await.expect("connect").with_bearer(token.trim())
}

#[test]
fn the_bot_token_comes_from_the_environment_and_never_reaches_the_log() {
    // Even at trace level, where HTTP and WebSocket libraries log their frames.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let fake = rt.block_on(FakeDiscord::start(TOKEN, &["general"])).expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("config.toml"),
        format!("discord_api_url = \"{}\"\nimessage_chat_db = \"\"\n", fake.api_url()),
    )
    .expect("config");
    // The log goes to a file: at trace level it outgrows a pipe nobody reads meanwhile.
    let log_path = dir.path().join("serve.log");
    let log_file = std::fs::File::create(&log_path).expect("log file");
    let child = Command::new(super::AMC)
        .arg("serve")
        .env("AMC_DATA_DIR", dir.path())
        .env("AMC_DISCORD_TOKEN", TOKEN)
        .env("AMC_LOG", "trace")
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .expect("spawn amc serve");
    let serve = super::Serve { child };
    amc_testkit::poll_until("amc serve to start", || {
        (dir.path().join("run/amc.sock").exists() && dir.path().join("admin-token").exists()).then_some(())
    });
    let general = fake.channel_ids()[0];
    rt.block_on(async {
        let alice = fake.user("alice");
        let ch = amc_testkit::eventually("the channel", || async {
            let all = admin(dir.path()).await.get("/admin/channels").await.ok()?.json();
            all["channels"].as_array()?.iter().find(|c| c["platform_id"] == general.to_string().as_str()).cloned()
        })
        .await;
        let id = ch["id"].as_str().expect("id").to_owned();
        let resp = admin(dir.path())
            .await
            .post(&format!("/admin/channels/{id}/approve"), &json!({ "send_policy": "auto" }))
            .await
            .expect("approve");
        assert_eq!(resp.status, 200);
        let created = admin(dir.path()).await.post("/admin/agents", &json!({ "id": "claude" })).await.expect("agent");
        let agent_token = created.json()["token"].as_str().expect("token").to_owned();
        let agent = || async {
            Connection::connect(&dir.path().join("run/amc.sock"))
                .await
                .expect("connect")
                .with_bearer(&agent_token)
                .with_header("x-agent-id", "claude")
        };
        fake.post(general, &alice, "a-distinctive-message-body");
        amc_testkit::eventually("the message", || async {
            let r = agent().await.get("/messages/unread").await.ok()?.json();
            (r["messages"].as_array()?.len() == 1).then_some(())
        })
        .await;
        let sent =
            agent().await.post("/messages/send", &json!({ "channel_id": id, "text": "pong" })).await.expect("send");
        assert_eq!(sent.status, 200, "{:?}", sent.json());
        let health = admin(dir.path()).await.get("/healthz").await.expect("healthz").json();
        assert_eq!(health["sources"]["discord"]["state"], "connected", "{health}");
    });
    assert_eq!(fake.posts().len(), 1);
    assert_eq!(fake.posts()[0].authorization, format!("Bot {TOKEN}"));
    serve.stop();
    let log = std::fs::read_to_string(&log_path).expect("log");
    assert!(log.contains("TRACE"), "the log ran at its most detailed level");
    assert!(log.contains("connected to Discord"), "{log}");
    assert!(!log.contains("secret-part"), "the token leaked into the log");
    // Nor in the encodings libraries use to log raw frames: hex, or decimal bytes.
    let hex: String = "secret-part".bytes().map(|b| format!("{b:02x}")).collect();
    let decimal = "secret-part".bytes().map(|b| b.to_string()).collect::<Vec<_>>().join(", ");
    assert!(!log.contains(&hex), "the token leaked into the log as hex");
    assert!(!log.contains(&decimal), "the token leaked into the log as bytes");
    assert!(!log.contains("a-distinctive-message-body"), "what people write is not logged either");
}
