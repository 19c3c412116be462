//! The `amc` binary end to end: `amc serve` in a temporary data directory, driven by
//! the admin commands as a person at a terminal would.

mod crash;
mod discord;
mod imessage;
mod phone;
mod private_files;
mod review;
mod setup;
mod shown;
mod stdio;
mod tidy;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use amc_core::model::ChannelSpec;
use amc_core::model::{ChannelKind, Source};
use amc_store::Store;

const AMC: &str = env!("CARGO_BIN_EXE_amc");

struct Serve {
    child: Child,
}

impl Serve {
    fn start(dir: &Path) -> Self {
        Self::start_with(dir, &[])
    }

    fn start_with(dir: &Path, extra: &[&str]) -> Self {
        Self::start_env(dir, extra, &[])
    }

    fn start_env(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let child = Command::new(AMC)
            .args(["serve", "--test-sender"])
            .args(extra)
            .envs(env.iter().copied())
            .env("AMC_DATA_DIR", dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn amc serve");
        let socket = dir.join("run/amc.sock");
        amc_testkit::poll_until("amc serve to start", || {
            (socket.exists() && dir.join("admin-token").exists()).then_some(())
        });
        Self { child }
    }

    fn stop(mut self) -> Output {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
        let child = std::mem::replace(&mut self.child, Command::new("true").spawn().expect("true"));
        child.wait_with_output().expect("wait")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn amc(dir: &Path, args: &[&str]) -> Output {
    Command::new(AMC).args(args).env("AMC_DATA_DIR", dir).output().expect("run amc")
}

/// A conversation with `sender` holding one message, stored straight into the database as
/// the iMessage source would store it; its channel id.
pub fn conversation(dir: &Path, sender: &str, name: Option<&str>, text: &str) -> String {
    let store = Store::open(&dir.join("amc.db")).expect("open store");
    let spec = ChannelSpec {
        platform_id: format!("any;-;{sender}"),
        name: name.unwrap_or(sender).into(),
        kind: ChannelKind::Dm,
        readers: None,
    };
    let msg = amc_testkit::incoming("guid-1", text).from(sender, name).build();
    store.ingest(Source::Imessage, &spec, &[msg], None).expect("ingest").channel_id
}

fn stdout(o: &Output) -> String {
    assert!(o.status.success(), "amc failed: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).expect("json output")
}

#[test]
fn a_headless_install_is_administered_from_the_command_line() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let serve = Serve::start(dir);

    let out = stdout(&amc(dir, &["agent", "add", "claude-code"]));
    assert!(out.contains("amc_agent_"), "{out}");
    // An agent named after its host gets that host's configuration only.
    check_claude_code(&out, dir, "claude-code");
    assert!(!out.contains("mcp_servers") && !out.contains("mcpServers"), "{out}");
    let listed = json(&amc(dir, &["--json", "agent", "list"]));
    assert_eq!(listed["agents"][0]["id"], "claude-code");
    let dup = amc(dir, &["agent", "add", "claude-code"]);
    assert!(!dup.status.success());
    assert!(String::from_utf8_lossy(&dup.stderr).contains("CONFLICT"));

    // A source stores a conversation (here straight into the database, as the iMessage source would).
    let ch = conversation(dir, "+15551234567", Some("Ada"), "Dinner at 8?");

    let pending = stdout(&amc(dir, &["channel", "list", "--state", "pending"]));
    assert!(pending.contains(&ch) && pending.contains("Ada") && pending.contains("pending"), "{pending}");
    // No agent sees a pending channel: the list says so, and who will once it is approved.
    assert!(pending.contains("(seen by no agent now; by all agents once approved)"), "{pending}");
    let approved = json(&amc(dir, &["--json", "channel", "approve", &ch, "--history", "all", "--policy", "auto"]));
    assert_eq!((approved["state"].as_str(), approved["send_policy"].as_str()), (Some("allowed"), Some("auto")));
    let policy = json(&amc(dir, &["--json", "channel", "policy", &ch, "review"]));
    assert_eq!(policy["send_policy"], "review");

    assert!(stdout(&amc(dir, &["review", "list"])).contains("Nothing here"));
    let status = stdout(&amc(dir, &["status"]));
    assert!(status.contains("ok") && status.contains("imessage"), "{status}");
    assert!(stdout(&amc(dir, &["pause"])).contains("paused"));
    assert_eq!(json(&amc(dir, &["--json", "status"]))["agents_paused"], true);
    stdout(&amc(dir, &["resume"]));
    let blocked = json(&amc(dir, &["--json", "channel", "block", &ch]));
    assert_eq!(blocked["state"], "blocked");
    stdout(&amc(dir, &["channel", "agents", &ch, "--set", "claude-code"]));
    let blocked = stdout(&amc(dir, &["channel", "list", "--state", "blocked"]));
    assert!(blocked.contains("(seen by no agent now; by claude-code once approved)"), "{blocked}");
    let bad = amc(dir, &["channel", "approve", "ch_nope"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("NOT_FOUND"));
    assert!(stdout(&amc(dir, &["agent", "revoke", "claude-code"])).contains("Revoked"));

    // A second daemon is refused with a clear message.
    let second = amc(dir, &["serve"]);
    assert!(!second.status.success());
    assert!(String::from_utf8_lossy(&second.stderr).contains("already running"));

    // SIGTERM stops it cleanly and removes the socket.
    let out = serve.stop();
    assert!(out.status.success(), "exit: {:?} {}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(!dir.join("run/amc.sock").exists());
    let logs = String::from_utf8_lossy(&out.stderr);
    assert!(logs.contains("AMC stopped"), "{logs}");
    assert!(!logs.contains("amc_agent_"), "tokens never reach the log");

    let down = amc(dir, &["status"]);
    assert!(!down.status.success());
    assert!(String::from_utf8_lossy(&down.stderr).contains("AMC is not running"));
}

#[test]
fn a_short_code_is_approved_only_when_confirmed_and_its_codes_shown_by_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let _serve = Serve::start(dir);
    stdout(&amc(dir, &["agent", "add", "claude-code"]));
    let ch = conversation(dir, "72975", Some("Example\u{200B}Bank"), "Your Example code is 918273");

    let pending = stdout(&amc(dir, &["channel", "list", "--state", "pending"]));
    // Named as the window names it: a short code (a number) or a Sender ID (a name).
    assert!(pending.contains("; short code)"), "{pending}");
    // Without a terminal to ask at, it says how to confirm, and approves nothing.
    let asked = amc(dir, &["channel", "approve", &ch, "--history", "all"]);
    assert!(!asked.status.success());
    let said = String::from_utf8_lossy(&asked.stderr);
    // The conversation is named, as any name is printed: its hidden characters shown.
    assert!(said.contains(&format!("Example⟨U+200B⟩Bank ({ch}) is a conversation with a short code")), "{said}");
    assert!(said.contains("run the command again with --sensitive"), "{said}");
    assert!(stdout(&amc(dir, &["channel", "list", "--state", "pending"])).contains(&ch));
    let approved = json(&amc(dir, &["--json", "channel", "approve", &ch, "--history", "all", "--sensitive"]));
    assert_eq!(approved["state"], "allowed");

    let allowed = stdout(&amc(dir, &["channel", "list", "--state", "allowed"]));
    assert!(allowed.contains("; 1 with codes, hidden;"), "{allowed}");
    let shown = stdout(&amc(dir, &["channel", "codes", &ch, "--show-to", "claude-code"]));
    assert!(shown.contains("; codes shown to claude-code;"), "{shown}");
    let hidden = json(&amc(dir, &["--json", "channel", "codes", &ch, "--hide"]));
    assert_eq!((&hidden["codes"], &hidden["codes_agents"]), (&serde_json::json!("hidden"), &serde_json::json!([])));
    // No flag: who is given them now, and how to change it; nothing changes.
    let neither = amc(dir, &["channel", "codes", &ch]);
    let said = stdout(&neither);
    assert!(neither.status.success() && said.contains("hidden from every agent") && said.contains("--show"), "{said}");
    // Something that is no id is said to be none, not "invalid uri character".
    for (args, what) in [
        (&["review", "approve", "msg 1"][..], "is not a send's id"),
        (&["channel", "block", "ch 1"][..], "is not a channel's id"),
        (&["codes", "not-a-code", "msg/1"][..], "is not a message's id"),
    ] {
        let out = amc(dir, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(what) && !stderr.contains("uri"), "{args:?}: {stderr}");
    }
}

#[test]
fn bad_configuration_is_reported_in_one_line() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = amc(tmp.path(), &["serve", "--listen", "0.0.0.0:7878"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("loopback"), "{err}");
    std::fs::write(tmp.path().join("config.toml"), "rate_limit_burst = \"many\"\n").expect("write");
    let out = amc(tmp.path(), &["serve"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("config.toml"));
}

#[test]
fn amc_ui_prints_the_address_of_the_page_with_the_token_or_says_how_to_serve_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let out = amc(dir, &["ui"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("amc serve --listen"));

    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let listen = format!("127.0.0.1:{port}");
    let out = amc(dir, &["ui", "--listen", &listen]);
    assert!(!out.status.success(), "nothing serves yet");
    assert!(String::from_utf8_lossy(&out.stderr).contains("amc serve --listen"));

    let serve = Serve::start_with(dir, &["--listen", &listen]);
    let token = std::fs::read_to_string(dir.join("admin-token")).expect("token");
    let url = stdout(&amc(dir, &["ui", "--listen", &listen]));
    assert_eq!(url.trim(), format!("http://{listen}/ui/#token={}", token.trim()));
    // As the README shows it: `amc serve --listen …` then `amc ui`, which asks the running AMC.
    assert_eq!(stdout(&amc(dir, &["ui"])), url);
    // The listen address may come from config.toml too.
    std::fs::write(dir.join("config.toml"), format!("listen = \"{listen}\"\n")).expect("write");
    assert_eq!(stdout(&amc(dir, &["ui"])), url);
    serve.stop();
}

/// `amc … | head` closes stdout early: the command stops quietly, with no panic.
#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // The reader is gone before the command starts: its first write fails.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(AMC)
        .args(["doctor"])
        .env("AMC_DATA_DIR", tmp.path())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// On a fresh install, the commands that need AMC say it is not running and how to start
/// it, not that an admin token is missing.
#[test]
fn commands_say_when_amc_is_not_running() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = amc(tmp.path(), &["status"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("AMC is not running") && stderr.contains("amc serve"), "{stderr}");
    assert!(!stderr.contains("admin token"), "{stderr}");
}

/// `amc mcp --help` names AMC_AGENT_ID once.
#[test]
fn mcp_help_names_each_variable_once() {
    let out = Command::new(AMC).args(["mcp", "--help"]).output().expect("help");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("AMC_AGENT_ID").count(), 1, "{text}");
}

/// A data folder that is a file, or that cannot be made, is said plainly, once.
#[test]
fn a_data_folder_that_cannot_be_one_is_said_plainly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").expect("write");
    for args in [&["serve", "--test-sender"][..], &["status"][..]] {
        let out = amc(&file, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains("is a file, not a folder"), "{args:?}: {stderr}");
    }
    let out = amc(&file.join("amc"), &["serve", "--test-sender"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot be created") && stderr.contains("--data-dir"), "{stderr}");
    assert!(stderr.matches("os error").count() <= 1, "never the same error twice: {stderr}");
}

/// With --test-sender nothing is delivered, and `amc status` and `amc doctor` say so for
/// each source: in test mode, never simply connected.
#[test]
fn test_mode_says_that_sends_are_only_recorded() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // No chat.db, on a Mac too: `amc doctor` then has the daemon's word alone.
    std::fs::write(tmp.path().join("config.toml"), "imessage_chat_db = \"\"\n").expect("config");
    let serve = Serve::start(tmp.path());
    let health = json(&amc(tmp.path(), &["--json", "status"]));
    assert_eq!(health["test_mode"], true, "{health}");
    for source in ["imessage", "discord"] {
        let reason = health["sources"][source]["reason"].as_str().unwrap_or_default();
        assert!(reason.starts_with("test mode: agents' sends are only recorded"), "{source}: {health}");
        assert_eq!(health["sources"][source]["test_mode"], true, "{source}: {health}");
    }
    let text = stdout(&amc(tmp.path(), &["status"]));
    assert!(text.contains("nothing reaches Discord"), "{text}");
    let doctor = stdout(&amc(tmp.path(), &["doctor"]));
    for out in [&text, &doctor] {
        for source in ["imessage", "discord"] {
            let line = out.lines().find(|l| l.trim_start().starts_with(source)).unwrap_or_else(|| panic!("{out}"));
            let state = line.trim_start()[source.len()..].trim_start();
            assert!(state.starts_with("test mode: agents' sends"), "{line}");
        }
        assert!(!out.contains("connected"), "{out}");
    }
    serve.stop();
}

/// One agent per MCP host: `--host` prints that host's configuration only; with no host,
/// the agent is set up for Claude Code and each other host is given the command that adds
/// an agent of its own, which works as given.
#[test]
fn agent_add_gives_each_host_an_agent_of_its_own() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = &tmp.path().join("amc");
    let _serve = Serve::start(dir);
    let others = |out: &str, host: &str| {
        let printed = [("claude-code", "claude mcp add"), ("codex", "[mcp_servers."), ("claude-desktop", "mcpServers")];
        printed.iter().filter(|(h, _)| *h != host).all(|(_, text)| !out.contains(text))
    };

    let codex = stdout(&amc(dir, &["agent", "add", "cx", "--host", "codex"]));
    check_codex(&codex, dir, "cx");
    assert!(others(&codex, "codex"), "{codex}");
    let desktop = stdout(&amc(dir, &["agent", "add", "desk", "--host", "claude-desktop"]));
    check_claude_desktop(&desktop, dir, "desk");
    assert!(others(&desktop, "claude-desktop"), "{desktop}");

    let out = stdout(&amc(dir, &["agent", "add", "helper"]));
    check_claude_code(&out, dir, "helper");
    assert_eq!(out.matches("AMC_AGENT_ID").count(), 1, "one host's configuration: {out}");
    assert!(out.contains("an agent of its own") && out.contains("--host"), "{out}");
    // Each suggested command, run as printed (from another folder, with no AMC_DATA_DIR),
    // adds that host's own agent.
    let run = |name: &str| {
        let line = out.lines().map(str::trim).find(|l| l.contains(&format!(" agent add {name} "))).expect(name);
        let ran = Command::new("sh").arg("-c").arg(line).current_dir(tmp.path()).env_remove("AMC_DATA_DIR").output();
        stdout(&ran.expect("sh"))
    };
    check_codex(&run("helper-codex"), dir, "helper-codex");
    check_claude_desktop(&run("helper-claude-desktop"), dir, "helper-claude-desktop");
    assert!(tmp.path().join("amc-helper-claude-desktop.mcpb").is_file());

    // A bundle is Claude Desktop's: asked for another host, nothing is added.
    let both = amc(dir, &["agent", "add", "mixed", "--host", "codex", "--mcpb", "mixed.mcpb"]);
    assert!(!both.status.success() && String::from_utf8_lossy(&both.stderr).contains("Claude Desktop"));
    assert!(!stdout(&amc(dir, &["agent", "list"])).contains("mixed"));
}

/// The line of `out` that starts with `prefix`, trimmed.
fn line_of(out: &str, prefix: &str) -> String {
    out.lines().map(str::trim).find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {out}")).to_owned()
}

fn token_of(out: &str) -> String {
    out.split_whitespace().find(|w| w.starts_with("amc_agent_")).expect("token").to_owned()
}

/// Claude Code's command, as the shell reads it (with `claude` printing its arguments):
/// the agent, its token, this install's amc and (not the default here) the data folder.
fn check_claude_code(out: &str, dir: &Path, agent: &str) {
    let claude = line_of(out, "claude mcp add");
    let shell = Command::new("sh")
        .arg("-c")
        .arg(format!("claude() {{ printf '%s\\n' \"$@\"; }}; {claude}"))
        .output()
        .expect("sh");
    let args: Vec<String> = String::from_utf8_lossy(&shell.stdout).lines().map(str::to_owned).collect();
    let data = format!("AMC_DATA_DIR={}", dir.display());
    let id = format!("AMC_AGENT_ID={agent}");
    let server = format!("amc-{agent}");
    let want = ["mcp", "add", "-s", "user", &server, "--env", &id, "--env"];
    assert_eq!(args[..want.len()], want, "{claude}");
    assert!(args.contains(&format!("AMC_BEARER_TOKEN={}", token_of(out))) && args.contains(&data), "{args:?}");
    assert!(args.ends_with(&[AMC.to_owned(), "mcp".to_owned()]) || args.last().is_some_and(|a| a == "mcp"), "{args:?}");
}

/// Claude Desktop's JSON.
fn check_claude_desktop(out: &str, dir: &Path, agent: &str) {
    let desktop: serde_json::Value =
        serde_json::from_str(&line_of(out, "{ \"mcpServers\"")).expect("Claude Desktop's JSON");
    let server = &desktop["mcpServers"][format!("amc-{agent}")];
    assert_eq!(server["args"], serde_json::json!(["mcp", "--no-push"]));
    assert_eq!(server["env"]["AMC_AGENT_ID"], agent);
    assert_eq!(server["env"]["AMC_BEARER_TOKEN"], token_of(out).as_str());
    assert_eq!(server["env"]["AMC_DATA_DIR"], dir.display().to_string());
    assert!(Path::new(server["command"].as_str().expect("command")).is_absolute(), "{server}");
}

/// Codex's TOML lines.
fn check_codex(out: &str, dir: &Path, agent: &str) {
    assert!(out.contains(&format!("[mcp_servers.amc-{agent}]")), "{out}");
    let env = line_of(out, "env = {");
    let token = token_of(out);
    for pair in [format!("AMC_AGENT_ID = \"{agent}\""), format!("AMC_BEARER_TOKEN = \"{token}\"")] {
        assert!(env.contains(&pair), "{pair}: {out}");
    }
    assert!(env.contains(&format!("AMC_DATA_DIR = \"{}\"", dir.display())), "{out}");
    assert!(line_of(out, "args = ").contains("\"--no-push\""), "{out}");
}

#[cfg(target_os = "linux")]
#[test]
fn amc_serve_raises_a_low_limit_of_open_files() {
    // A Mac starts apps with a soft limit of 256 open files; each agent's wait holds one.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let mut child = Command::new("sh")
        .args(["-c", r#"ulimit -Sn 256 && exec "$0" serve --test-sender"#, AMC])
        .env("AMC_DATA_DIR", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let socket = dir.join("run/amc.sock");
    amc_testkit::poll_until("amc serve to start", || socket.exists().then_some(()));
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).expect("limits");
    let _ = child.kill();
    let _ = child.wait();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).expect("the open files line");
    let numbers: Vec<u64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    let [soft, hard] = numbers[..] else { panic!("{line}") };
    assert_eq!(soft, hard.min(65_536), "{line}");
}

/// `amc doctor --deep` on this machine: chat.db read-only with its chat forms, file events
/// beside it, and what needs a Mac reported as skipped, in one table; a chat.db that cannot
/// be read fails with the fix.
#[test]
fn a_deep_doctor_checks_what_it_can_here_and_skips_what_needs_a_mac() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let messages = dir.join("Messages");
    std::fs::create_dir(&messages).expect("folder");
    let chat_db = messages.join("chat.db");
    let w = amc_imessage::fixture::ChatDbWriter::create(&chat_db).expect("chat.db");
    let ada = w.add_handle("+15551234567").expect("handle");
    w.add_chat("any;-;+15551234567", 45, None, &[ada]).expect("chat");
    w.add_chat("iMessage;+;chat100", 43, Some("Book club"), &[ada]).expect("chat");
    drop(w);
    let before = std::fs::read(&chat_db).expect("chat.db");
    let out = stdout(&amc(dir, &["doctor", "--deep", "--chat-db", chat_db.to_str().expect("utf8")]));
    let line =
        |name: &str| out.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name}: {out}")).to_owned();
    assert!(
        line("chat.db, read-only").contains("ok") && line("chat.db, read-only").contains("any 1, iMessage 1"),
        "{out}"
    );
    assert!(line("file events beside chat.db").contains(" ok "), "{out}");
    for mac in ["sending through Messages", "AMC.app's signature", "launch at login", "Discord token in the Keychain"] {
        assert!(line(mac).contains("skipped") && line(mac).contains("needs macOS"), "{out}");
    }
    assert_eq!(std::fs::read(&chat_db).expect("chat.db"), before, "chat.db is only read");
    let left: Vec<_> = std::fs::read_dir(&messages).expect("folder").map(|e| e.expect("entry").file_name()).collect();
    assert!(left.iter().all(|n| !n.to_string_lossy().starts_with(".amc-doctor")), "the scratch file is gone: {left:?}");

    let broken = messages.join("broken.db");
    std::fs::write(&broken, b"not a database").expect("write");
    let failed = amc(dir, &["doctor", "--deep", "--chat-db", broken.to_str().expect("utf8")]);
    assert!(!failed.status.success());
    let said = String::from_utf8_lossy(&failed.stdout);
    assert!(said.contains("FAILED") && said.contains("fix:"), "{said}");
    assert!(String::from_utf8_lossy(&failed.stderr).contains("1 check(s) failed"));
}

/// With no source set up, `amc doctor` says so and how to set each up, not "All good."
#[test]
fn doctor_with_no_source_says_how_to_set_each_up() {
    let tmp = tempfile::tempdir().expect("tempdir");
    std::fs::write(tmp.path().join("config.toml"), "imessage_chat_db = \"\"\n").expect("config");
    let child = Command::new(AMC)
        .arg("serve")
        .env("AMC_DATA_DIR", tmp.path())
        .env_remove("AMC_DISCORD_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn amc serve");
    let _serve = Serve { child };
    amc_testkit::poll_until("amc serve to start", || {
        (tmp.path().join("run/amc.sock").exists() && tmp.path().join("admin-token").exists()).then_some(())
    });
    let out = amc(tmp.path(), &["doctor"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("All good"), "{text}");
    assert!(text.contains("No source is set up yet"), "{text}");
    assert!(text.contains("Full Disk Access") && text.contains("Message Content intent"), "{text}");
}
