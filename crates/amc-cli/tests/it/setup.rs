//! Discord set up while AMC runs, as the window's Setup does it (`amc discord connect` posts
//! the same request): a pasted token is checked with the local Discord, which refuses
//! tokens it does not know as Discord does; kept in the Secret Service of the test's own
//! D-Bus, never in the data directory or the log; connected without a restart, found
//! again at the next start, and disconnected and forgotten on request.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use amc_client::Connection;
use amc_discord::fake::FakeDiscord;
use amc_testkit::SecretService;
use serde_json::json;

const TOKEN: &str = "MTA5ODc2NTQzMjEw.setup-secret.never-in-a-file";
const ITEM: [(&str, &str); 2] = [("service", "AMC"), ("username", "discord")];

async fn admin(dir: &Path) -> Connection {
    let token = std::fs::read_to_string(dir.join("admin-token")).expect("admin token");
    Connection::connect(&dir.join("run/amc.sock")).await.expect("connect").with_bearer(token.trim())
}

/// `amc serve`, delivering for real (no test sender), on the test's Secret Service.
fn serve(dir: &Path, secrets: &SecretService) -> Child {
    let log = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("serve.log")).expect("log file");
    let _ = std::fs::remove_file(dir.join("run/amc.sock"));
    let child = Command::new(super::AMC)
        .arg("serve")
        .envs(secrets.env())
        .env("AMC_DATA_DIR", dir)
        .env("AMC_LOG", "debug")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn amc serve");
    amc_testkit::poll_until("amc serve to start", || {
        (dir.join("run/amc.sock").exists() && dir.join("admin-token").exists()).then_some(())
    });
    child
}

fn stop(mut child: Child) {
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
    child.wait().expect("wait");
}

/// `amc discord ARGS` with `stdin` on its standard input.
fn discord(dir: &Path, secrets: &SecretService, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(super::AMC)
        .arg("discord")
        .args(args)
        .envs(secrets.env())
        .env("AMC_DATA_DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("amc discord");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write the token");
    child.wait_with_output().expect("amc discord")
}

fn said(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes())) {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

async fn discord_state(dir: &Path) -> serde_json::Value {
    admin(dir).await.get("/healthz").await.expect("healthz").json()["sources"]["discord"].clone()
}

#[test]
fn a_pasted_token_is_checked_kept_in_the_secret_store_and_connected_without_a_restart() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let fake = rt.block_on(FakeDiscord::start(TOKEN, &["general"])).expect("fake");
    let work = tempfile::tempdir().expect("tempdir");
    let secrets = SecretService::start(work.path());
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let mine = format!("# my AMC\ndiscord_api_url = \"{}\"\nimessage_chat_db = \"\"\n", fake.api_url());
    std::fs::write(data.join("config.toml"), &mine).expect("config");
    let amc = serve(&data, &secrets);
    let general = fake.channel_ids()[0].to_string();

    rt.block_on(async {
        let off = discord_state(&data).await;
        assert_eq!(off["state"], "disabled", "{off}");
        assert!(off["reason"].as_str().is_some_and(|r| r.contains("Setup")), "says where to set it up: {off}");
    });
    let shown = discord(&data, &secrets, &["show"], "");
    assert!(said(&shown).contains("No Discord bot is set up"), "{}", said(&shown));

    // A token Discord does not know changes nothing.
    let refused = discord(&data, &secrets, &["connect"], "MTA5ODc2NTQzMjEw.not-the-token.x\n");
    assert!(!refused.status.success());
    assert!(said(&refused).contains("Discord refused this token"), "{}", said(&refused));
    assert_eq!(secrets.lookup(&ITEM), None, "nothing kept");
    assert_eq!(std::fs::read_to_string(data.join("config.toml")).expect("config"), mine);
    let malformed = discord(&data, &secrets, &["connect"], "two words\n");
    assert!(said(&malformed).contains("not a bot token"), "{}", said(&malformed));

    // The real one, pasted with the spaces a copy brings.
    let connected = discord(&data, &secrets, &["connect"], &format!("  {TOKEN} \n"));
    assert!(connected.status.success(), "{}", said(&connected));
    let bot = fake.bot();
    assert!(said(&connected).contains(&format!("Discord bot {}", bot.name)), "{}", said(&connected));
    let invite = format!("client_id={}&scope=bot&permissions=274878008384", bot.id);
    assert!(said(&connected).contains(&invite), "{}", said(&connected));
    assert_eq!(secrets.lookup(&ITEM).as_deref(), Some(TOKEN), "the token is in the Secret Service");
    let config = std::fs::read_to_string(data.join("config.toml")).expect("config");
    assert!(config.starts_with(&mine) && config.contains("discord_token_keychain = true"), "{config}");

    // Connected without a restart: the channel appears, a message reaches an agent, and its
    // answer reaches Discord.
    let (id, agent_token) = rt.block_on(async {
        let ch = amc_testkit::eventually("the channel", || async {
            let all = admin(&data).await.get("/admin/channels").await.ok()?.json();
            all["channels"].as_array()?.iter().find(|c| c["platform_id"] == general.as_str()).cloned()
        })
        .await;
        let id = ch["id"].as_str().expect("id").to_owned();
        let approved = admin(&data)
            .await
            .post(&format!("/admin/channels/{id}/approve"), &json!({ "send_policy": "auto" }))
            .await
            .expect("approve");
        assert_eq!(approved.status, 200);
        let created = admin(&data).await.post("/admin/agents", &json!({ "id": "claude" })).await.expect("agent");
        let agent_token = created.json()["token"].as_str().expect("token").to_owned();
        let agent = || async {
            Connection::connect(&data.join("run/amc.sock"))
                .await
                .expect("connect")
                .with_bearer(&agent_token)
                .with_header("x-agent-id", "claude")
        };
        fake.post(fake.channel_ids()[0], &fake.user("alice"), "hello from setup");
        amc_testkit::eventually("the message", || async {
            let r = agent().await.get("/messages/unread").await.ok()?.json();
            r["messages"].as_array()?.iter().any(|m| m["text"] == "hello from setup").then_some(())
        })
        .await;
        let sent = agent().await.post("/messages/send", &json!({ "channel_id": id, "text": "pong" })).await;
        assert_eq!(sent.expect("send").status, 200);
        assert!(fake.posts().iter().any(|p| p.payload["content"] == "pong"), "the answer reached Discord");
        let state = discord_state(&data).await;
        assert_eq!(state["state"], "connected", "{state}");
        (id, agent_token)
    });
    let shown = discord(&data, &secrets, &["show"], "");
    assert!(said(&shown).contains("its token is in the Keychain"), "{}", said(&shown));

    // The next start finds the token where it was kept.
    stop(amc);
    let amc = serve(&data, &secrets);
    rt.block_on(async {
        amc_testkit::eventually("Discord connected again", || async {
            (discord_state(&data).await["state"] == "connected").then_some(())
        })
        .await;
    });

    // Disconnecting stops the bot and forgets the token.
    let gone = discord(&data, &secrets, &["disconnect"], "");
    assert!(gone.status.success(), "{}", said(&gone));
    assert!(said(&gone).contains("No Discord bot is set up"), "{}", said(&gone));
    assert_eq!(secrets.lookup(&ITEM), None, "the token left the Secret Service");
    let config = std::fs::read_to_string(data.join("config.toml")).expect("config");
    assert!(!config.contains("discord_token"), "{config}");
    rt.block_on(async {
        let state = discord_state(&data).await;
        assert_eq!(state["state"], "disabled", "{state}");
        // An agent's send now goes nowhere, and says why.
        let posts = fake.posts().len();
        let sent = Connection::connect(&data.join("run/amc.sock"))
            .await
            .expect("connect")
            .with_bearer(&agent_token)
            .with_header("x-agent-id", "claude")
            .post("/messages/send", &json!({ "channel_id": id, "text": "after" }))
            .await
            .expect("send")
            .json();
        assert!(sent.to_string().contains("the discord source is off"), "{sent}");
        assert_eq!(fake.posts().len(), posts, "nothing reached Discord");
    });
    stop(amc);
    assert_eq!(files_holding(&data, TOKEN), Vec::<String>::new(), "the token is in no file of AMC's, its log included");
    assert!(files_holding(&data, "setup-secret").is_empty());
}

/// Settings changed from the window hold at once in the running AMC, are written to the
/// person's config.toml with its comments kept, are refused with start-up's words when
/// they cannot work (nothing written), and hold again after a restart.
#[test]
fn settings_changed_in_the_window_hold_at_once_and_after_a_restart() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let mine = "# my AMC\nimessage_chat_db = \"\" # no Messages here\n";
    std::fs::write(data.join("config.toml"), mine).expect("config");
    let shared = work.path().join("shared");
    std::fs::create_dir_all(&shared).expect("shared");
    let file = shared.join("plan.txt");
    std::fs::write(&file, "the plan").expect("file");
    let serve = super::Serve::start(&data);
    let token = super::json(&super::amc(&data, &["--json", "agent", "add", "claude"]))["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let agent = || async {
        Connection::connect(&data.join("run/amc.sock"))
            .await
            .expect("connect")
            .with_bearer(&token)
            .with_header("x-agent-id", "claude")
    };
    rt.block_on(async {
        let body = json!({ "source": "imessage", "chat_id": "ada", "chat_name": "Ada",
                           "messages": [{ "id": "ada-1", "text": "hi", "sender": "+15551234567" }] });
        let ch = admin(&data).await.post("/admin/test/ingest", &body).await.expect("ingest").json()["channel_id"]
            .as_str()
            .expect("channel")
            .to_owned();
        let approved = admin(&data)
            .await
            .post(&format!("/admin/channels/{ch}/approve"), &json!({ "history": "all", "send_policy": "auto" }))
            .await
            .expect("approve");
        assert_eq!(approved.status, 200);
        let send = |text: &'static str, with_file: bool| {
            let (ch, file) = (ch.clone(), file.clone());
            async move {
                let mut body = json!({ "channel_id": ch, "text": text });
                if with_file {
                    body["attachments"] = json!([{ "path": file }]);
                }
                agent().await.post("/messages/send", &body).await.expect("send")
            }
        };
        // Before: the folder is not one agents may send from.
        let refused = send("the plan", true).await;
        assert_eq!(refused.status, 422, "{:?}", refused.json());

        // A folder that is not one, a number out of range: refused, nothing written.
        for (change, said) in [
            (json!({ "attachment_dirs": ["/no/such/folder"] }), "/no/such/folder is not a folder"),
            (json!({ "attachment_dirs": ["relative/path"] }), "is not a full path"),
            (json!({ "attachment_dirs": ["/"] }), "holds what agents must never send"),
            (json!({ "attachment_dirs": [data.parent().expect("parent").display().to_string()] }), "never send"),
            (json!({ "imessage_chat_db": "/no/such/chat.db" }), "there is no chat.db at /no/such/chat.db"),
            (json!({ "rate_limit_burst": 0 }), "rate_limit_burst must be from 1 to 10000, not 0"),
            (json!({ "send_timeout_seconds": 601 }), "send_timeout_seconds must be from 1 to 600, not 601"),
            (json!({ "listen": "0.0.0.0:1" }), "unknown field"),
        ] {
            let r = admin(&data).await.post("/admin/settings", &change).await.expect("settings");
            assert_eq!(r.status, 422, "{change}: {:?}", r.json());
            assert!(r.json().to_string().contains(said), "{change}: {}", r.json());
            assert_eq!(std::fs::read_to_string(data.join("config.toml")).expect("config"), mine);
        }

        // The folder, a burst of one a minute and a longer timeout: in force at once.
        let change = json!({ "attachment_dirs": [shared.display().to_string()], "rate_limit_burst": 1,
                             "rate_limit_per_minute": 1, "send_timeout_seconds": 90 });
        let r = admin(&data).await.post("/admin/settings", &change).await.expect("settings");
        assert_eq!(r.status, 200, "{:?}", r.json());
        let shown = r.json();
        assert_eq!(shown["attachment_dirs"], json!([shared.display().to_string()]));
        assert_eq!((shown["rate_limit_burst"].as_u64(), shown["send_timeout_seconds"].as_u64()), (Some(1), Some(90)));
        let sent = send("the plan", true).await;
        assert_eq!(sent.status, 200, "{:?}", sent.json());
        let limited = send("again", false).await;
        assert_eq!(limited.status, 429, "the new burst holds: {:?}", limited.json());
    });
    let config = std::fs::read_to_string(data.join("config.toml")).expect("config");
    assert!(config.starts_with(mine), "the person's lines and comments stay: {config}");
    assert!(config.contains("rate_limit_burst = 1") && config.contains("send_timeout_seconds = 90"), "{config}");

    // After a restart, the file gives the same.
    drop(serve.stop());
    let serve = super::Serve::start(&data);
    rt.block_on(async {
        let shown = admin(&data).await.get("/admin/settings").await.expect("settings").json();
        assert_eq!(shown["rate_limit_burst"], 1, "{shown}");
        assert_eq!(shown["attachment_dirs"], json!([shared.display().to_string()]), "{shown}");
    });
    drop(serve.stop());
}

/// All the messages an agent can read, each once: page by page, each page marked read.
async fn read_everything(data: &Path, token: &str) -> Vec<String> {
    let mut texts = Vec::new();
    loop {
        let mut agent = Connection::connect(&data.join("run/amc.sock"))
            .await
            .expect("connect")
            .with_bearer(token)
            .with_header("x-agent-id", "claude");
        let page = agent.get("/messages/unread?limit=100").await.expect("unread").json();
        let messages = page["messages"].as_array().cloned().unwrap_or_default();
        if messages.is_empty() {
            return texts;
        }
        let ids: Vec<&str> = messages.iter().filter_map(|m| m["id"].as_str()).collect();
        texts.extend(messages.iter().filter_map(|m| m["text"].as_str().map(str::to_owned)));
        let marked = agent.post("/messages/mark_read", &json!({ "message_ids": ids })).await.expect("mark read");
        assert_eq!(marked.status, 200, "{:?}", marked.json());
    }
}

/// iMessage turned off and on again from the window while Messages keeps writing: the
/// watcher stops and starts inside the running AMC, and every message reaches the agent
/// exactly once.
#[test]
fn imessage_turned_off_and_on_while_messages_arrive_loses_none_and_doubles_none() {
    use amc_imessage::fixture::{ChatDbWriter, FixtureMessage};
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let work = tempfile::tempdir().expect("tempdir");
    let chat_db = work.path().join("Messages/chat.db");
    std::fs::create_dir_all(chat_db.parent().expect("folder")).expect("mkdir");
    let (ada, chat) = {
        let w = ChatDbWriter::create(&chat_db).expect("chat.db");
        let ada = w.add_handle("+15551234567").expect("handle");
        let chat = w.add_chat("any;-;+15551234567", 45, None, &[ada]).expect("chat");
        (ada, chat)
    };
    let now = amc_core::time::now_ms();
    let write = move |from: usize, to: usize| {
        let w = ChatDbWriter::open(&chat_db).expect("chat.db");
        for i in from..to {
            let m = FixtureMessage {
                guid: format!("g{i}"),
                text: Some(format!("message {i}")),
                handle_id: ada,
                sent_at_ms: now + i as i64,
                ..Default::default()
            };
            w.add_message(chat, &m).expect("message");
        }
    };
    write(0, 1);
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let path = work.path().join("Messages/chat.db").display().to_string();
    std::fs::write(data.join("config.toml"), format!("imessage_chat_db = {path:?}\n")).expect("config");
    let serve = super::Serve::start(&data);
    let token = super::json(&super::amc(&data, &["--json", "agent", "add", "claude"]))["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let imessage_state = || async {
        admin(&data).await.get("/healthz").await.expect("healthz").json()["sources"]["imessage"]["state"].clone()
    };
    rt.block_on(async {
        let ch = amc_testkit::eventually("the chat", || async {
            let all = admin(&data).await.get("/admin/channels").await.ok()?.json();
            all["channels"].as_array()?.first()?["id"].as_str().map(str::to_owned)
        })
        .await;
        let approved = admin(&data)
            .await
            .post(&format!("/admin/channels/{ch}/approve"), &json!({ "history": "all" }))
            .await
            .expect("approve");
        assert_eq!(approved.status, 200);
        let data = data.as_path();
        let set = |chat_db: String| async move {
            let r = admin(data).await.post("/admin/settings", &json!({ "imessage_chat_db": chat_db })).await;
            let r = r.expect("settings");
            assert_eq!(r.status, 200, "{:?}", r.json());
            r.json()
        };
        // Off while Messages writes, on again while it still writes, twice.
        for round in 0..2 {
            let base = 1 + round * 300;
            let writer = std::thread::spawn({
                let write = write.clone();
                move || write(base, base + 100)
            });
            let off = set(String::new()).await;
            assert_eq!(off["imessage_chat_db"], serde_json::Value::Null, "{off}");
            assert_eq!(imessage_state().await, "disabled");
            write(base + 100, base + 200);
            let on = set(path.clone()).await;
            assert_eq!(on["imessage_chat_db"], path.as_str(), "{on}");
            write(base + 200, base + 300);
            writer.join().expect("writer");
        }
        let want: Vec<String> = std::iter::once(0)
            .chain((0..2).flat_map(|r| 1 + r * 300..1 + r * 300 + 300))
            .map(|i| format!("message {i}"))
            .collect();
        let read = std::sync::Mutex::new(Vec::new());
        amc_testkit::eventually("every message", || async {
            let more = read_everything(data, &token).await;
            let mut read = read.lock().expect("read");
            read.extend(more);
            (read.len() >= want.len()).then_some(())
        })
        .await;
        let got = read.into_inner().expect("read");
        let mut sorted = got.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), got.len(), "a message reached the agent twice");
        let mut want_sorted = want.clone();
        want_sorted.sort();
        assert_eq!(sorted, want_sorted, "every message, once");
        assert_eq!(imessage_state().await, "connected");
    });
    let config = std::fs::read_to_string(data.join("config.toml")).expect("config");
    assert_eq!(config, format!("imessage_chat_db = {path:?}\n"));
    drop(serve.stop());
}

/// Setup's "Send a test message to myself": refused until AMC knows the person's own
/// conversation, then sent there through Messages (the osascript stand-in writes the row as
/// Messages does); with Automation refused, Messages' reason comes back.
#[test]
fn a_test_message_goes_to_the_persons_own_conversation_or_says_why_not() {
    use amc_imessage::fixture::{ChatDbWriter, FixtureMessage};
    const STANDIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/imessage/osascript-standin.py");
    const ME: &str = "+15550001111";
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for (mode, said) in [("ok", None), ("refuse", Some("-1743"))] {
        let work = tempfile::tempdir().expect("tempdir");
        let chat_db = work.path().join("Messages/chat.db");
        std::fs::create_dir_all(chat_db.parent().expect("folder")).expect("mkdir");
        let w = ChatDbWriter::create(&chat_db).expect("chat.db");
        let me = w.add_handle(ME).expect("handle");
        let self_chat = w.add_chat(&format!("any;-;{ME}"), 45, None, &[me]).expect("chat");
        let data = work.path().join("data");
        std::fs::create_dir_all(&data).expect("data");
        std::fs::write(data.join("config.toml"), "imessage_confirm_seconds = 2\n").expect("config");
        let log = work.path().join("osascript.jsonl");
        let (log_s, db_s) = (log.to_str().expect("utf8"), chat_db.to_str().expect("utf8"));
        let env = [
            ("AMC_STANDIN_LOG", log_s),
            ("AMC_STANDIN_CHATDB", db_s),
            ("AMC_STANDIN_ANY_CHAT_IDS", "resolve"),
            ("AMC_STANDIN_MODE", mode),
        ];
        let serve = super::Serve::start_env(&data, &["--chat-db", db_s, "--osascript", STANDIN], &env);
        rt.block_on(async {
            // No note to self yet: AMC cannot know the person's own conversation.
            let early = admin(&data).await.post("/admin/imessage/test", &json!({})).await.expect("test");
            assert_eq!(early.status, 409, "{:?}", early.json());
            assert!(early.json().to_string().contains("send yourself a message in Messages"), "{:?}", early.json());
        });
        let note = FixtureMessage {
            guid: "note".into(),
            text: Some("note to self".into()),
            is_from_me: true,
            sent_at_ms: amc_core::time::now_ms(),
            ..Default::default()
        };
        // Messages writes the row with the address it went out from, in one transaction.
        w.connection().execute_batch("BEGIN").expect("begin");
        w.add_message(self_chat, &note).expect("note");
        w.connection()
            .execute("UPDATE message SET destination_caller_id = ?1 WHERE guid = 'note'", [ME])
            .expect("destination_caller_id");
        w.connection().execute_batch("COMMIT").expect("commit");
        rt.block_on(async {
            amc_testkit::eventually("AMC to know the person's own conversation", || async {
                let v = admin(&data).await.get("/admin/phone").await.ok()?.json();
                (v["candidates"].as_array().map(Vec::len) == Some(1)).then_some(())
            })
            .await;
            let sent = admin(&data).await.post("/admin/imessage/test", &json!({})).await.expect("test");
            match said {
                None => {
                    assert_eq!(sent.status, 200, "{:?}", sent.json());
                    let log = std::fs::read_to_string(&log).expect("the stand-in's log");
                    assert!(log.contains("a test message from AMC's Setup"), "{log}");
                    assert!(log.contains(&format!("any;-;{ME}")), "sent to the person's own conversation: {log}");
                }
                Some(reason) => {
                    assert_eq!(sent.status, 502, "{:?}", sent.json());
                    assert!(sent.json().to_string().contains(reason), "{:?}", sent.json());
                }
            }
        });
        drop(serve.stop());
    }
}

/// At a terminal, `amc discord connect` asks for the token and takes it without echo: the
/// pasted token is not in what the terminal shows (a pseudo-terminal, as a person's).
#[test]
fn a_token_typed_at_a_terminal_is_not_shown() {
    let work = tempfile::tempdir().expect("tempdir");
    let script = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], [sys.argv[1], "discord", "connect"])
seen = b""
sent = False
while True:
    try:
        chunk = os.read(fd, 1024)
    except OSError:
        break
    if not chunk:
        break
    seen += chunk
    if not sent and b"Paste the bot's token" in seen:
        os.write(fd, sys.argv[2].encode() + b"\n")
        sent = True
os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace"))
"#;
    let out = Command::new("python3")
        .args(["-c", script, super::AMC, TOKEN])
        .env("AMC_DATA_DIR", work.path())
        .output()
        .expect("python3");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("Paste the bot's token"), "{shown}");
    assert!(!shown.contains("setup-secret"), "the token was echoed: {shown}");
    // With no AMC running, it says so once the token is read.
    assert!(shown.contains("AMC"), "{shown}");
}
