//! The admin commands: they talk to the running daemon's admin API over its socket,
//! with the admin token from the data directory. Every string the daemon answers with
//! is printed through `shown` (a test holds it).
#![allow(clippy::print_stdout)]

use anyhow::bail;
use clap::{Subcommand, ValueEnum};
use serde_json::{Value, json};

use amc_client::Connection;
use amc_runtime::RawConfig;

use crate::hosts::{Host, NewAgent};
use crate::shown::{self, Shown, entries, field as s, lines, text, verbatim};

#[derive(Subcommand)]
pub enum AgentCmd {
    /// Add an agent and print its token (shown this once)
    Add {
        /// The agent's id (a-z, 0-9, '-', '_'), sent by the agent as X-Agent-ID
        id: String,
        /// Also write the agent as an MCP Bundle for Claude Desktop to this file (open it to
        /// install), e.g. amc-claude-desktop.mcpb
        #[arg(long, value_name = "FILE")]
        mcpb: Option<std::path::PathBuf>,
        /// Print only this host's configuration [default: the host the id names (with --mcpb:
        /// claude-desktop), else Claude Code's, and the agent to add for each other host]
        #[arg(long, value_enum)]
        host: Option<Host>,
    },
    /// List agents
    List,
    /// Revoke an agent's token at once
    Revoke {
        /// The agent's id
        id: String,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum History {
    /// Only messages from now on
    FromNow,
    /// All stored history
    All,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Policy {
    ReadOnly,
    Review,
    Auto,
}

impl Policy {
    fn api_name(self) -> &'static str {
        match self {
            Self::ReadOnly => "read_only",
            Self::Review => "review",
            Self::Auto => "auto",
        }
    }
}

#[derive(Subcommand)]
pub enum ChannelCmd {
    /// List channels with their state
    List {
        /// Only channels in this state
        #[arg(long, value_parser = ["pending", "allowed", "blocked"])]
        state: Option<String>,
        /// Only channels whose name contains this
        #[arg(long)]
        search: Option<String>,
    },
    /// Let agents see a channel
    Approve {
        /// The channel's id (ch_…)
        id: String,
        /// How much history agents may see
        #[arg(long, value_enum, default_value = "from-now", conflicts_with = "days")]
        history: History,
        /// Release only the last N days of history
        #[arg(long)]
        days: Option<u32>,
        /// What an agent's send does here [default on first approval: review]
        #[arg(long, value_enum)]
        policy: Option<Policy>,
        /// Open it to this agent only (repeat for more) [default: every agent]
        #[arg(long = "agent", value_name = "NAME")]
        agents: Vec<String>,
        /// Confirm approving a conversation with a short-code sender (banks, sign-ins),
        /// which is otherwise asked for a second time
        #[arg(long)]
        sensitive: bool,
    },
    /// Which agents are given the channel's one-time codes and sign-in links: with no flag,
    /// who is now; with one, set it
    Codes {
        /// The channel's id
        id: String,
        /// Hide them from every agent (the default)
        #[arg(long, conflicts_with_all = ["show", "show_to"])]
        hide: bool,
        /// Give them to every agent the channel is open to
        #[arg(long, conflicts_with = "show_to")]
        show: bool,
        /// Give them to these agents only, comma-separated
        #[arg(long, value_name = "NAME,NAME", value_delimiter = ',')]
        show_to: Option<Vec<String>>,
    },
    /// Set which agents see a channel
    Agents {
        /// The channel's id
        id: String,
        /// Only these agents, comma-separated (an empty list: none)
        #[arg(long, value_name = "NAME,NAME", value_delimiter = ',', num_args = 0.., conflicts_with = "all",
              required_unless_present = "all")]
        set: Option<Vec<String>>,
        /// Every agent, present and future
        #[arg(long)]
        all: bool,
    },
    /// Hide a channel from agents at once
    Block {
        /// The channel's id
        id: String,
    },
    /// Let a channel receive what agents read anywhere (`--anything --confirm`), or hold
    /// again, under `auto`, a send that could carry text from conversations whose people
    /// are not all in this one (the default)
    Readers {
        /// The channel's id
        id: String,
        /// The channel may receive anything: the readers rule is off for it
        #[arg(long)]
        anything: bool,
        /// Confirm `--anything` (the daemon asks for it)
        #[arg(long)]
        confirm: bool,
    },
    /// Set what an agent's send to a channel does
    Policy {
        /// The channel's id
        id: String,
        /// read-only, review or auto
        #[arg(value_enum)]
        policy: Policy,
    },
}

#[derive(Subcommand)]
pub enum ReviewCmd {
    /// List sends waiting for your approval, oldest first, under their conversation
    List,
    /// Approve a held send: it is delivered now
    Approve {
        /// The send's id (msg_…)
        id: String,
    },
    /// Reject a held send
    Reject {
        /// The send's id
        id: String,
        /// Why (kept in the log)
        #[arg(long)]
        reason: Option<String>,
    },
    /// Every agent send, newest first, with its status
    Log {
        /// At most this many (1 to 500)
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=500))]
        limit: u32,
    },
}

/// `id` as it goes into a path of the admin API: an id is letters, digits, `_` and `-`;
/// anything else is said to be no id (`what` names what was expected), rather than left to
/// the HTTP client's "invalid uri character".
fn path_id<'a>(what: &str, id: &'a str) -> anyhow::Result<&'a str> {
    if !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return Ok(id);
    }
    bail!("{} is not {what}", Shown(&format!("{id:?}")))
}

pub(crate) async fn connect(raw: RawConfig) -> anyhow::Result<Connection> {
    let config = raw.validate()?.core;
    let token_path = config.admin_token_path();
    let socket = config.socket_path();
    let not_running = || {
        anyhow::anyhow!(
            "AMC is not running (no daemon at {}); start it with `amc serve` or open the AMC app",
            socket.display()
        )
    };
    let Ok(token) = std::fs::read_to_string(&token_path) else {
        return Err(not_running());
    };
    match Connection::connect(&socket).await {
        Ok(c) => Ok(c.with_bearer(token.trim())),
        Err(amc_client::ClientError::NotRunning(_)) => Err(not_running()),
        Err(e) => Err(e.into()),
    }
}

/// Checks the status and returns the JSON body, or fails with the envelope's message
/// (`main` shows the error as it shows all text from the daemon).
fn ok(resp: amc_client::Response) -> anyhow::Result<Value> {
    let body = resp.json();
    if !resp.status.is_success() {
        let error = &body["error"];
        let code = Some(verbatim(error, "code")).filter(|c| !c.is_empty()).unwrap_or("ERROR");
        let message = Some(verbatim(error, "message")).filter(|m| !m.is_empty()).unwrap_or("request failed");
        bail!("{code}: {message}");
    }
    Ok(body)
}

fn print_json(v: &Value) -> anyhow::Result<()> {
    say!("{}", shown::json(v)?);
    Ok(())
}

pub async fn agent(raw: RawConfig, json_out: bool, cmd: AgentCmd) -> anyhow::Result<()> {
    let data_dir = raw.data_dir.clone().filter(|d| {
        let default = amc_core::config::default_data_dir();
        default.is_none_or(|default| std::path::absolute(d).ok() != Some(default))
    });
    let mut c = connect(raw).await?;
    match cmd {
        AgentCmd::Add { id, mcpb, host } => {
            let host = match (host, &mcpb) {
                (Some(h), Some(_)) if h != Host::ClaudeDesktop => {
                    bail!("a bundle (--mcpb) is for Claude Desktop: give --host claude-desktop, or no --host")
                }
                (Some(h), _) => Some(h),
                (None, Some(_)) => Some(Host::ClaudeDesktop),
                (None, None) => Host::named(&id),
            };
            let v = ok(c.post("/admin/agents", &json!({ "id": id })).await?)?;
            if let Some(file) = &mcpb {
                let path = format!("/admin/agents/{id}/bundle");
                let resp = c.post(&path, &json!({ "token": verbatim(&v, "token") })).await?;
                if !resp.status.is_success() {
                    ok(resp)?;
                } else {
                    amc_core::files::write_atomic(file, &resp.body)
                        .map_err(|e| anyhow::anyhow!("cannot write the bundle to {}: {e}", file.display()))?;
                    if !json_out {
                        say!(
                            "Wrote {}: open it to install AMC in Claude Desktop as {id}.\n",
                            Shown(&file.display().to_string())
                        );
                    }
                }
            }
            if json_out {
                print_json(&v)?;
            } else {
                say!("Added agent {id}. Its token, shown this once:\n\n{}\n", s(&v, "token"));
                let agent = NewAgent {
                    id: &id,
                    token: verbatim(&v, "token"),
                    command: verbatim(&v, "mcp_command"),
                    data_dir: data_dir.as_deref(),
                };
                say!("{}", host.map_or_else(|| agent.one_per_host(), |h| agent.config(h)));
            }
        }
        AgentCmd::List => {
            let v = ok(c.get("/admin/agents").await?)?;
            if json_out {
                return print_json(&v);
            }
            for a in v["agents"].as_array().into_iter().flatten() {
                let state = if a["revoked_at"].is_null() { "active" } else { "revoked" };
                say!(
                    "{:<24} {:<8} added {}  last seen {}",
                    s(a, "id"),
                    state,
                    s(a, "created_at"),
                    s(a, "last_seen_at")
                );
            }
        }
        AgentCmd::Revoke { id } => {
            let v = ok(c.post(&format!("/admin/agents/{id}/revoke"), &json!({})).await?)?;
            if json_out { print_json(&v)? } else { say!("Revoked {id}.") }
        }
    }
    Ok(())
}

/// What kind of business sender a sensitive conversation `ch` is with, as the window
/// says it: a number ("short code") or a name ("Sender ID").
fn sender_kind(ch: &Value) -> &'static str {
    let handle = verbatim(ch, "platform_id").rsplit(';').next().unwrap_or_default();
    if !handle.is_empty() && handle.bytes().all(|b| b.is_ascii_digit()) { "short code" } else { "Sender ID" }
}

/// Asks the person, a second time, to approve the conversation `ch` (as the daemon gives
/// it) with a short code or a Sender ID; without a terminal to ask at, says how to confirm.
fn confirm_sensitive(ch: &Value) -> anyhow::Result<()> {
    use std::io::{BufRead, IsTerminal, Write};
    let kind = sender_kind(ch);
    let warning = |name: &dyn std::fmt::Display, id: &dyn std::fmt::Display| {
        format!(
            "{name} ({id}) is a conversation with a {kind}, a business's number or name: banks and sign-in \
             services send one-time codes from these. Agents are not given the codes unless you show them \
             with `amc channel codes`."
        )
    };
    if !std::io::stdin().is_terminal() {
        // An error is printed shown (main): its text goes as it is.
        let said = warning(&verbatim(ch, "name"), &verbatim(ch, "id"));
        bail!("{said} To approve it, run the command again with --sensitive.");
    }
    eprint!("{}\nApprove it anyway? Type \"approve\": ", warning(&s(ch, "name"), &s(ch, "id")));
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if answer.trim() != "approve" {
        bail!("not approved");
    }
    Ok(())
}

fn print_channel(ch: &Value) {
    let open_to = match ch["agents"].as_array() {
        None => "all agents".to_owned(),
        Some(list) if list.is_empty() => "no agent".to_owned(),
        Some(list) => list.iter().filter_map(|a| text(&a["id"]).map(|id| id.to_string())).collect::<Vec<_>>().join(","),
    };
    // The agents a channel is open to see it only while it is allowed.
    let seen_by = if ch["state"] == "allowed" {
        format!("seen by {open_to}")
    } else {
        format!("seen by no agent now; by {open_to} once approved")
    };
    let codes = if ch["codes"] == "shown" {
        "; codes shown to them".to_owned()
    } else if ch["codes"] == "some" {
        let names = ch["codes_agents"].as_array().into_iter().flatten().filter_map(|a| text(a).map(|t| t.to_string()));
        format!("; codes shown to {}", names.collect::<Vec<_>>().join(","))
    } else {
        match ch["secret_count"].as_i64() {
            Some(n) if n > 0 => format!("; {n} with codes, hidden"),
            _ => String::new(),
        }
    };
    let mut sensitive = if ch["sensitive"] == true { format!("; {}", sender_kind(ch)) } else { String::new() };
    if ch["receives_anything"] == true {
        sensitive.push_str("; receives anything");
    }
    say!(
        "{:<30} {:<8} {:<5} {:<8} {:<9} {:>6} msgs  {}  ({seen_by}{codes}{sensitive})",
        s(ch, "id"),
        s(ch, "source"),
        s(ch, "kind"),
        s(ch, "state"),
        s(ch, "send_policy"),
        ch["message_count"].as_i64().unwrap_or(0),
        s(ch, "name")
    );
}

pub async fn channel(raw: RawConfig, json_out: bool, cmd: ChannelCmd) -> anyhow::Result<()> {
    match &cmd {
        ChannelCmd::List { .. } => {}
        ChannelCmd::Approve { id, .. }
        | ChannelCmd::Codes { id, .. }
        | ChannelCmd::Agents { id, .. }
        | ChannelCmd::Block { id }
        | ChannelCmd::Readers { id, .. }
        | ChannelCmd::Policy { id, .. } => {
            path_id("a channel's id (ch_…; amc channel list prints them)", id)?;
        }
    }
    let mut c = connect(raw).await?;
    let v = match cmd {
        ChannelCmd::List { state, search } => {
            let mut q = Vec::new();
            if let Some(st) = state {
                q.push(format!("state={st}"));
            }
            if let Some(term) = search {
                q.push(format!("q={}", amc_client::encode_query_value(&term)));
            }
            let v = ok(c.get(&format!("/admin/channels?{}", q.join("&"))).await?)?;
            if json_out {
                return print_json(&v);
            }
            for ch in v["channels"].as_array().into_iter().flatten() {
                print_channel(ch);
            }
            return Ok(());
        }
        ChannelCmd::Approve { id, history, days, policy, agents, sensitive } => {
            let mut body = match (days, history) {
                (Some(d), _) => json!({ "history": "days", "days": d }),
                (None, History::All) => json!({ "history": "all" }),
                (None, History::FromNow) => json!({ "history": "from_now" }),
            };
            if let Some(p) = policy {
                body["send_policy"] = json!(p.api_name());
            }
            if !agents.is_empty() {
                body["agents"] = json!(agents);
            }
            if sensitive {
                body["sensitive"] = json!(true);
            }
            let path = format!("/admin/channels/{id}/approve");
            let resp = c.post(&path, &body).await?;
            if resp.status.as_u16() == 409 && resp.json()["error"]["code"] == "CONFIRMATION_REQUIRED" {
                confirm_sensitive(&ok(c.get(&format!("/admin/channels/{id}")).await?)?)?;
                body["sensitive"] = json!(true);
                ok(c.post(&path, &body).await?)?
            } else {
                ok(resp)?
            }
        }
        ChannelCmd::Codes { id, hide, show, show_to } => {
            let body = match (hide, show, show_to) {
                (_, _, Some(list)) => json!({ "codes": "some", "agents": list }),
                (_, true, None) => json!({ "codes": "shown" }),
                (true, false, None) => json!({ "codes": "hidden" }),
                // No flag: who is given them now, and how to change it.
                (false, false, None) => {
                    let v = ok(c.get(&format!("/admin/channels/{id}")).await?)?;
                    if json_out {
                        return print_json(&v);
                    }
                    let who = match verbatim(&v, "codes") {
                        "shown" => "given to every agent that reads it".to_owned(),
                        "some" => {
                            let names: Vec<Shown<'_>> =
                                v["codes_agents"].as_array().into_iter().flatten().filter_map(text).collect();
                            let names = names.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
                            format!("given to {names} only")
                        }
                        _ => "hidden from every agent".to_owned(),
                    };
                    say!("One-time codes and sign-in links in {}: {who}.", s(&v, "name"));
                    say!("Change it with --show (every agent), --show-to NAME,NAME or --hide.");
                    return Ok(());
                }
            };
            ok(c.post(&format!("/admin/channels/{id}/codes"), &body).await?)?
        }
        ChannelCmd::Agents { id, set, all } => {
            let body = match set {
                Some(list) if !all => {
                    json!({ "agents": list.into_iter().filter(|a| !a.is_empty()).collect::<Vec<_>>() })
                }
                _ => json!({ "all": true }),
            };
            ok(c.post(&format!("/admin/channels/{id}/agents"), &body).await?)?
        }
        ChannelCmd::Block { id } => ok(c.post(&format!("/admin/channels/{id}/block"), &json!({})).await?)?,
        ChannelCmd::Readers { id, anything, confirm } => {
            let body = json!({ "receives_anything": anything, "confirmed": confirm });
            ok(c.post(&format!("/admin/channels/{id}/readers"), &body).await?)?
        }
        ChannelCmd::Policy { id, policy } => {
            ok(c.post(&format!("/admin/channels/{id}/policy"), &json!({ "send_policy": policy.api_name() })).await?)?
        }
    };
    if json_out {
        print_json(&v)?
    } else {
        print_channel(&v)
    }
    Ok(())
}

fn print_send(snd: &Value) {
    say!(
        "{}  {:<14} {:<12} to {} ({})",
        s(snd, "id"),
        s(snd, "status"),
        s(snd, "agent_id"),
        s(snd, "channel_name"),
        s(snd, "source")
    );
    // Each line of the text on its own printed line, after a mark no line of the text can
    // remove (a carriage return or an escape sequence is shown, not acted on).
    for line in lines(verbatim(snd, "text")) {
        say!("    | {line}");
    }
    for a in snd["attachments"].as_array().into_iter().flatten() {
        say!("    + {} ({} bytes, from {})", s(a, "filename"), a["size_bytes"].as_u64().unwrap_or(0), s(a, "origin"));
    }
    if let Some(e) = text(&snd["error_message"]) {
        say!("    ! {e}");
    }
    match verbatim(snd, "decided_via") {
        "phone_imessage" => say!("    decided from your phone, in Messages"),
        "phone_discord" => say!("    decided from your phone, on Discord"),
        _ => {}
    }
    let read_from = snd["read_from"].as_array().filter(|r| !r.is_empty());
    if let Some(read_from) = read_from {
        if snd["held_reason"] == "crosses_conversations" {
            say!("    ! held: the agent read other conversations not everyone here can read; read from:");
        } else {
            say!("    ! the agent also read other conversations not everyone here can read; read from:");
        }
        for r in read_from {
            let thread = if verbatim(r, "conversation").starts_with("ch_") { "" } else { "relay thread " };
            say!("      {thread}{} ({})", s(r, "name"), s(r, "read_at"));
        }
    }
}

/// A message of a conversation: `head` (who and when), then its text; each further line
/// of the text indented under the first, so that no line of it passes for a message.
fn print_message(head: &str, text: &str) {
    let mut text_lines = lines(text);
    say!("{head}{}", text_lines.next().unwrap_or(Shown("")));
    let indent = " ".repeat(head.chars().count());
    for line in text_lines {
        say!("{indent}{line}");
    }
}

/// Under a message of a conversation, a line for each secret its text holds: what is
/// hidden from agents (the person sees it), and which rule found it.
fn print_secrets(m: &Value) {
    if m["not_a_code"] == true {
        say!(
            "      (you said it holds no code: agents are given it whole; undo: amc codes not-a-code {} --undo)",
            s(m, "id")
        );
        return;
    }
    let text = verbatim(m, "text");
    for span in m["secret_spans"].as_array().into_iter().flatten() {
        let at = |key: &str| span[key].as_u64().and_then(|n| usize::try_from(n).ok()).unwrap_or(0);
        let part: String = text.chars().skip(at("start")).take(at("end").saturating_sub(at("start"))).collect();
        let kind = if span["kind"] == "sign_in_link" { "sign-in link" } else { "one-time code" };
        say!("      ^ {kind} hidden from agents: {} ({}; rule {})", Shown(&part), s(span, "why"), s(span, "rule"));
    }
    if m["secret_spans"].as_array().is_some_and(|spans| !spans.is_empty()) {
        say!("      (not one? amc codes not-a-code {})", s(m, "id"));
    }
}

pub async fn review(raw: RawConfig, json_out: bool, cmd: ReviewCmd) -> anyhow::Result<()> {
    let mut c = connect(raw).await?;
    let v = match cmd {
        ReviewCmd::List | ReviewCmd::Log { .. } => {
            let path = match cmd {
                ReviewCmd::Log { limit } => format!("/admin/sends?limit={limit}"),
                _ => "/admin/sends?status=held".to_owned(),
            };
            let v = ok(c.get(&path).await?)?;
            if json_out {
                return print_json(&v);
            }
            let sends = v["sends"].as_array().cloned().unwrap_or_default();
            if sends.is_empty() {
                say!("Nothing here.");
            }
            match cmd {
                ReviewCmd::List => print_held(&sends),
                _ => sends.iter().for_each(print_send),
            }
            return Ok(());
        }
        ReviewCmd::Approve { id } => {
            let id = path_id("a send's id (msg_…; amc review list prints them)", &id)?;
            ok(c.post(&format!("/admin/sends/{id}/approve"), &json!({})).await?)?
        }
        ReviewCmd::Reject { id, reason } => {
            let id = path_id("a send's id (msg_…; amc review list prints them)", &id)?;
            ok(c.post(&format!("/admin/sends/{id}/reject"), &json!({ "reason": reason })).await?)?
        }
    };
    if json_out {
        print_json(&v)?
    } else {
        print_send(&v)
    }
    Ok(())
}

/// The held sends (the daemon lists them newest first), oldest first as agents asked, as
/// the Review screen shows them: each channel's conversation once, then every send that
/// waits to go into it.
fn print_held(sends: &[Value]) {
    let oldest_first: Vec<&Value> = sends.iter().rev().collect();
    let mut channels: Vec<&str> = Vec::new();
    for snd in &oldest_first {
        let channel = verbatim(snd, "channel_id");
        if !channels.contains(&channel) {
            channels.push(channel);
        }
    }
    for channel in channels {
        let waiting: Vec<&Value> =
            oldest_first.iter().copied().filter(|s| verbatim(s, "channel_id") == channel).collect();
        if let Some(conv) = waiting.last().and_then(|snd| snd["conversation"].as_array()).filter(|c| !c.is_empty()) {
            say!("-- conversation in {} --", s(waiting[0], "channel_name"));
            for m in conv {
                let sender = &m["sender"];
                let who = text(&sender["display_name"]).or(text(&sender["id"])).unwrap_or(Shown("?"));
                print_message(&format!("  {} {who}: ", s(m, "sent_at")), verbatim(m, "text"));
                print_secrets(m);
            }
        }
        waiting.into_iter().for_each(print_send);
    }
}

#[derive(Subcommand)]
pub enum CodesCmd {
    /// Say that a message holds no one-time code or sign-in link: agents are given it whole
    NotACode {
        /// The message's id (msg_…; `amc review list` prints it under each code it found)
        id: String,
        /// Take it back: AMC hides what it finds in the message again
        #[arg(long)]
        undo: bool,
    },
    /// The messages you said hold no code, and the rules that had found something in them
    Report,
}

pub async fn codes(raw: RawConfig, json_out: bool, cmd: CodesCmd) -> anyhow::Result<()> {
    let mut c = connect(raw).await?;
    let v = match &cmd {
        CodesCmd::NotACode { id, undo } => {
            let id = path_id("a message's id (msg_…)", id)?;
            ok(c.post(&format!("/admin/messages/{id}/not-a-code"), &json!({ "not_a_code": !undo })).await?)?
        }
        CodesCmd::Report => ok(c.get("/admin/codes/report").await?)?,
    };
    if json_out {
        return print_json(&v);
    }
    match cmd {
        CodesCmd::NotACode { .. } if v["not_a_code"] == true => {
            say!("{}: not a code, as you said. Agents are given it whole.", s(&v, "id"));
        }
        CodesCmd::NotACode { .. } => say!("{}: AMC hides what it finds in it again.", s(&v, "id")),
        CodesCmd::Report => {
            let marked = v["marked"].as_u64().unwrap_or(0);
            say!(
                "{marked} {} you said {} no code.",
                if marked == 1 { "message" } else { "messages" },
                if marked == 1 { "holds" } else { "hold" }
            );
            for r in v["by_rule"].as_array().into_iter().flatten() {
                say!("  rule {}: {} of them ({})", s(r, "rule"), r["messages"].as_u64().unwrap_or(0), s(r, "why"));
            }
            for m in v["messages"].as_array().into_iter().flatten() {
                let rules: Vec<Shown<'_>> = m["rules"].as_array().into_iter().flatten().filter_map(text).collect();
                let rules = rules.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
                let channel = text(&m["channel_name"]).unwrap_or(Shown("(no longer stored)"));
                say!(
                    "  {} in {channel}, {} (rules: {rules})",
                    s(m, "message_id"),
                    m["marked_at"].as_i64().unwrap_or(0)
                );
            }
        }
    }
    Ok(())
}

#[derive(Subcommand)]
pub enum DiscordCmd {
    /// Whether a bot is set up, which, and the link that invites it to a server
    Show,
    /// Connect the bot: paste its token on standard input (never on the command line). AMC
    /// checks it with Discord, keeps it in the Keychain and connects without a restart
    Connect,
    /// Disconnect the bot and remove its token from the Keychain
    Disconnect,
}

pub async fn discord(raw: RawConfig, json_out: bool, cmd: DiscordCmd) -> anyhow::Result<()> {
    let token = match cmd {
        DiscordCmd::Connect => Some(read_token()?),
        DiscordCmd::Show | DiscordCmd::Disconnect => None,
    };
    let mut c = connect(raw).await?;
    let v = match token {
        Some(token) => ok(c.post("/admin/discord/token", &json!({ "token": token })).await?)?,
        None if matches!(cmd, DiscordCmd::Disconnect) => ok(c.post("/admin/discord/disconnect", &json!({})).await?)?,
        None => ok(c.get("/admin/discord").await?)?,
    };
    if json_out {
        return print_json(&v);
    }
    let from = match verbatim(&v, "token") {
        "keychain" => "its token is in the Keychain",
        "config" => "its token is discord_token in config.toml",
        "environment" => "its token is AMC_DISCORD_TOKEN in AMC's environment",
        _ => {
            say!("No Discord bot is set up. To set one up: amc discord connect (then paste the bot's token).");
            return Ok(());
        }
    };
    if v["bot"].is_null() {
        say!("A Discord bot is set up ({from}); Discord did not say which (amc status shows the connection).");
        return Ok(());
    }
    let bot = &v["bot"];
    say!("Discord bot {} ({from}).", s(bot, "name"));
    if bot["message_content"] != true {
        say!(
            "Its Message Content intent is off: Discord sends it messages without their text. Turn it on in the \
             Discord Developer Portal (your application → Bot → Privileged Gateway Intents)."
        );
    }
    say!("Invite it to a server: {}", s(bot, "invite_url"));
    Ok(())
}

/// The bot's token from standard input, asked for when it is a terminal, where it is
/// typed without echo (it stays out of the terminal's scrollback).
fn read_token() -> anyhow::Result<String> {
    use std::io::{BufRead, IsTerminal, Write};
    let stdin = std::io::stdin();
    let mut token = String::new();
    if stdin.is_terminal() {
        // Echo off before the prompt shows, so nothing typed after it is echoed.
        let shown = rustix::termios::tcgetattr(&stdin)?;
        let mut hidden = shown.clone();
        hidden.local_modes.remove(rustix::termios::LocalModes::ECHO);
        rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &hidden)?;
        eprint!("Paste the bot's token (Discord Developer Portal → your application → Bot → Reset Token): ");
        std::io::stderr().flush()?;
        let read = stdin.lock().read_line(&mut token);
        // Echo comes back whatever the read did.
        rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &shown)?;
        std::io::stderr().write_all(b"\n")?;
        read?;
    } else {
        stdin.lock().read_line(&mut token)?;
    }
    if token.trim().is_empty() {
        bail!("no token given: paste the bot's token on standard input");
    }
    Ok(token)
}

#[derive(Subcommand)]
pub enum PhoneCmd {
    /// Where AMC asks and what, and the conversations it could ask in
    Show,
    /// Ask in this conversation (your own: `amc phone show` lists them), and choose what
    Set {
        /// The channel's id (ch_…); leave it out to change only what is asked
        channel: Option<String>,
        /// Ask about held sends (on, off)
        #[arg(long, value_parser = ["on", "off"])]
        sends: Option<String>,
        /// Ask about tool requests (on, off)
        #[arg(long, value_parser = ["on", "off"])]
        tools: Option<String>,
        /// How long an answer from the phone counts, in minutes (1 to 1440; 30 at first)
        #[arg(long, value_name = "MINUTES")]
        expire: Option<u32>,
        /// At most this many questions a minute (1 to 30; 3 at first)
        #[arg(long, value_name = "N")]
        per_minute: Option<u32>,
    },
    /// Stop asking on the phone
    Off,
    /// Send a test message to the conversation AMC asks in
    Test,
    /// The questions asked on the phone, newest first
    Asks,
}

pub async fn phone(raw: RawConfig, json_out: bool, cmd: PhoneCmd) -> anyhow::Result<()> {
    let mut c = connect(raw).await?;
    let on = |v: &Option<String>| v.as_deref().map(|v| v == "on");
    let v = match &cmd {
        PhoneCmd::Show => ok(c.get("/admin/phone").await?)?,
        PhoneCmd::Set { channel, sends, tools, expire, per_minute } => {
            let mut body = serde_json::Map::new();
            if let Some(ch) = channel {
                // Each source has its own conversation: the channel says which.
                let ch = path_id("a channel's id (ch_…; amc phone show lists yours)", ch)?;
                let found = ok(c.get(&format!("/admin/channels/{ch}")).await?)?;
                let source = if found["source"] == "discord" { "discord" } else { "imessage" };
                body.insert(source.into(), json!(ch));
            }
            for (key, value) in [("sends", on(sends)), ("tools", on(tools))] {
                if let Some(value) = value {
                    body.insert(key.into(), json!(value));
                }
            }
            for (key, value) in [("expire_minutes", expire), ("asks_a_minute", per_minute)] {
                if let Some(value) = value {
                    body.insert(key.into(), json!(value));
                }
            }
            ok(c.post("/admin/phone", &serde_json::Value::Object(body)).await?)?
        }
        PhoneCmd::Off => ok(c.post("/admin/phone", &json!({ "imessage": null, "discord": null })).await?)?,
        PhoneCmd::Test => ok(c.post("/admin/phone/test", &json!({})).await?)?,
        PhoneCmd::Asks => ok(c.get("/admin/phone/asks").await?)?,
    };
    if json_out {
        return print_json(&v);
    }
    match cmd {
        PhoneCmd::Test => say!("Sent. Look for it in your own conversation in Messages, or your DM with the bot."),
        PhoneCmd::Asks => {
            let asks = v["asks"].as_array().cloned().unwrap_or_default();
            if asks.is_empty() {
                say!("AMC asked nothing on your phone yet.");
            }
            for a in &asks {
                say!("{}  {} {}  {}", s(a, "code"), s(a, "kind"), s(a, "subject"), s(a, "state"));
            }
        }
        PhoneCmd::Show | PhoneCmd::Set { .. } | PhoneCmd::Off => {
            let off = v["imessage"].is_null() && v["discord"].is_null();
            if off {
                say!("AMC asks on no phone: held sends and tool requests wait for you on this Mac.");
            }
            for (key, place) in [("imessage", "Messages"), ("discord", "Discord")] {
                if !v[key].is_null() {
                    say!(
                        "AMC asks you in {place}, in {} ({}), {}: agents never see that conversation.",
                        s(&v[key], "name"),
                        s(&v[key], "address"),
                        s(&v[key], "channel_id")
                    );
                }
            }
            let kinds: Vec<&str> = [("held sends", v["sends"] == true), ("tool requests", v["tools"] == true)]
                .into_iter()
                .filter_map(|(name, on)| on.then_some(name))
                .collect();
            say!(
                "It asks about: {}; an answer counts for {} minutes; at most {} questions a minute.",
                if kinds.is_empty() { "nothing".to_owned() } else { kinds.join(" and ") },
                v["expire_minutes"].as_u64().unwrap_or(0),
                v["asks_a_minute"].as_u64().unwrap_or(0)
            );
            let candidates = v["candidates"].as_array().cloned().unwrap_or_default();
            if off {
                if candidates.is_empty() {
                    say!(
                        "No conversation of yours with yourself is known yet. Send yourself a message in \
                         Messages (or your bot a DM on Discord, with discord_user_id set), then run \
                         `amc phone show` again."
                    );
                }
                for cand in &candidates {
                    say!(
                        "  {}  {} ({})  ->  amc phone set {}",
                        s(cand, "channel_id"),
                        s(cand, "name"),
                        s(cand, "address"),
                        s(cand, "channel_id")
                    );
                }
            }
        }
    }
    Ok(())
}

pub async fn pause(raw: RawConfig, json_out: bool, paused: bool) -> anyhow::Result<()> {
    let mut c = connect(raw).await?;
    let v = ok(c.post("/admin/pause", &json!({ "paused": paused })).await?)?;
    if json_out {
        print_json(&v)?;
    } else if paused {
        say!("Agents are paused: every send is held for your review.");
    } else {
        say!("Agents resumed: sends follow each channel's send policy.");
    }
    Ok(())
}

pub async fn status(raw: RawConfig, json_out: bool) -> anyhow::Result<()> {
    let mut c = connect(raw).await?;
    let v = ok(c.get("/healthz").await?)?;
    if json_out {
        print_json(&v)?;
        return degraded_status(&v);
    }
    say!("AMC {} — {} (up {} s)", s(&v, "version"), s(&v, "status"), v["uptime_seconds"].as_u64().unwrap_or(0));
    if v["agents_paused"].as_bool() == Some(true) {
        say!("Agents are paused.");
    }
    if let Some(line) = indexing(&v["search_index"]) {
        say!("{line}");
    }
    if let Some(line) = classifying(&v["secrets_scan"]) {
        say!("{line}");
    }
    for (name, st) in entries(&v["sources"]) {
        say!("  {:<9} {}", name, state(st));
        for line in catching_up(st) {
            say!("            {line}");
        }
    }
    degraded_status(&v)
}

/// The channels a source is still catching up on, one line each: which, why its last try
/// failed, and when the next is.
fn catching_up(source: &Value) -> Vec<String> {
    source["catching_up"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let next = match text(&c["next_try_at"]) {
                Some(at) => format!("trying again at {at}"),
                None => "not trying again before the next connection".to_owned(),
            };
            format!(
                "still catching up on {} (try {}: {}); {next}",
                s(c, "channel"),
                c["attempts"].as_u64().unwrap_or(0),
                s(c, "reason"),
            )
        })
        .collect()
}

/// A source's state and why, as the person reads them. A source whose sends are only
/// recorded (`amc serve --test-sender`) reaches no one: it is in test mode, not connected,
/// and its reason, which starts with "test mode" (docs/api.md), says so.
fn state(source: &Value) -> String {
    let reason = text(&source["reason"]);
    if source["test_mode"] == true && source["state"] == "connected" {
        return reason.map_or_else(|| "test mode".to_owned(), |r| r.to_string());
    }
    match reason {
        Some(r) => format!("{}: {r}", s(source, "state")),
        None => s(source, "state").to_string(),
    }
}

/// The line telling how far indexing older messages for search has come, while it runs.
fn indexing(progress: &Value) -> Option<String> {
    let (done, total) = (progress["done"].as_u64()?, progress["total"].as_u64()?.max(1));
    Some(format!(
        "Indexing older messages for search: {}% ({done} of {total}); search finds the newest first.",
        done * 100 / total
    ))
}

/// The line telling how far looking through older messages for one-time codes has come,
/// while it runs.
fn classifying(progress: &Value) -> Option<String> {
    let (done, total) = (progress["done"].as_u64()?, progress["total"].as_u64()?.max(1));
    Some(format!(
        "Looking through older messages for one-time codes: {}% ({done} of {total}); agents are not given \
         codes meanwhile either.",
        done * 100 / total
    ))
}

/// `amc status` exits with [`STATUS_DEGRADED`] when a source needs the person, so scripts
/// can tell without reading the text.
pub const STATUS_DEGRADED: u8 = 3;

fn degraded_status(health: &Value) -> anyhow::Result<()> {
    if health["status"] == "degraded" {
        return Err(crate::ExitStatus(STATUS_DEGRADED).into());
    }
    Ok(())
}

/// `amc doctor`: every check, each with its fix; fails if any check fails. A running AMC
/// is asked first: what it follows and how each source is doing is what counts.
pub async fn doctor(raw: RawConfig, chat_db: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    let named_chat_db = chat_db.is_some();
    let config = RawConfig { chat_db, ..raw.clone() }.validate()?;
    let mut problems = 0;
    say!("Data folder: {}", Shown(&config.core.data_dir.display().to_string()));
    let health = match connect(raw).await {
        Ok(mut c) => Some(ok(c.get("/healthz").await?)?),
        Err(e) => {
            problems += 1;
            say!("  Daemon: PROBLEM: {}", Shown(&format!("{e:#}")));
            None
        }
    };
    let running_imessage =
        health.as_ref().map(|h| h["sources"]["imessage"].clone()).filter(|s| s["state"] != "disabled");
    match (config.imessage.chat_db.as_deref(), &running_imessage) {
        // The running AMC follows a chat.db: its state is the answer (below).
        (_, Some(_)) if !named_chat_db => {}
        (None, _) => say!("  iMessage: off (no chat.db configured; set imessage_chat_db or --chat-db)"),
        (Some(path), _) => match amc_imessage::chatdb::ChatDb::open(path) {
            Ok(db) => {
                say!(
                    "  iMessage: chat.db readable ({} messages) at {}",
                    db.max_rowid().unwrap_or(0),
                    Shown(&path.display().to_string())
                )
            }
            Err(e) => {
                problems += 1;
                say!("  iMessage: PROBLEM: {}", Shown(&amc_imessage::watch::full_disk_access_advice(path, &e)));
            }
        },
    }
    match config.imessage.osascript.as_deref() {
        None => say!("  Sending iMessages: off (no osascript; on macOS it is /usr/bin/osascript)"),
        Some(p) if p.exists() => say!(
            "  Sending iMessages: {}; the first send asks macOS to let AMC control Messages (System Settings → \
             Privacy & Security → Automation → Messages)",
            Shown(&p.display().to_string())
        ),
        Some(p) => {
            problems += 1;
            say!("  Sending iMessages: PROBLEM: {} does not exist", Shown(&p.display().to_string()));
        }
    }
    if let Some(v) = &health {
        say!("  Daemon: {} (AMC {})", s(v, "status"), s(v, "version"));
        for (name, st) in entries(&v["sources"]) {
            if st["state"] == "degraded" {
                problems += 1;
            }
            say!("    {:<9} {}", name, state(st));
        }
    }
    if problems > 0 {
        bail!("{problems} problem(s) found; see above");
    }
    let running = |source: &str| {
        health.as_ref().is_some_and(|h| h["sources"][source]["state"] != "disabled" && !h["sources"][source].is_null())
    };
    let imessage = config.imessage.chat_db.is_some() || running("imessage");
    let discord = config.discord.token.is_some() || running("discord");
    if !imessage && !discord {
        say!("No source is set up yet: AMC reads no conversation. To set one up:");
        for line in SET_UP_SOURCES {
            say!("  {line}");
        }
        return Ok(());
    }
    say!("All good.");
    Ok(())
}

/// How to set each source up, as `amc doctor` says it when none is.
const SET_UP_SOURCES: [&str; 2] = [
    "iMessage: give AMC (or the terminal running amc serve) Full Disk Access in System Settings → Privacy & \
     Security → Full Disk Access, then restart it: it reads ~/Library/Messages/chat.db (set imessage_chat_db or \
     --chat-db for another).",
    "Discord: create a bot in the Discord Developer Portal, turn on its Message Content intent, and paste its token \
     in AMC's Setup (or run amc discord connect): AMC checks it with Discord, keeps it in the Keychain and connects \
     without a restart (docs/discord.md).",
];

/// `amc doctor --deep`: what only this Mac can tell, as one table ([`amc_runtime::deep`]).
pub async fn doctor_deep(
    raw: RawConfig,
    chat_db: Option<std::path::PathBuf>,
    send_test: Option<String>,
) -> anyhow::Result<()> {
    let settings = RawConfig { chat_db, ..raw }.validate()?;
    let checks = amc_runtime::deep::checks(&settings, send_test).await;
    let width = checks.iter().map(|c| c.name.chars().count()).max().unwrap_or(0);
    for c in &checks {
        say!("{:<width$}  {:<7}  {}", c.name, c.outcome.word(), Shown(&c.detail));
        if let Some(fix) = &c.fix {
            say!("{:<width$}  {:<7}  fix: {}", "", "", Shown(fix));
        }
    }
    let failed = checks.iter().filter(|c| c.outcome == amc_runtime::deep::Outcome::Failed).count();
    if failed > 0 {
        bail!("{failed} check(s) failed; see above");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_business_sender_is_named_as_the_window_names_it() {
        let kind = |platform_id: &str| sender_kind(&serde_json::json!({ "platform_id": platform_id }));
        assert_eq!(kind("any;-;72975"), "short code");
        assert_eq!(kind("SMS;-;Chase"), "Sender ID");
        assert_eq!(kind("any;-;G-Alert1"), "Sender ID");
    }

    #[test]
    fn status_tells_how_far_indexing_is_only_while_it_runs() {
        let line = indexing(&serde_json::json!({ "done": 250_000, "total": 1_000_000 }));
        assert_eq!(
            line.as_deref(),
            Some("Indexing older messages for search: 25% (250000 of 1000000); search finds the newest first.")
        );
        assert_eq!(indexing(&Value::Null), None);
        let line = classifying(&serde_json::json!({ "done": 3, "total": 4 })).expect("running");
        assert!(line.contains("75% (3 of 4)"), "{line}");
        assert_eq!(classifying(&Value::Null), None);
    }

    #[test]
    fn status_names_each_channel_still_catching_up_with_its_failure_escaped() {
        let discord = serde_json::json!({ "state": "connected", "catching_up": [{
            "channel_id": "ch_1", "channel": "Guild / #gen\u{1b}[2J", "attempts": 2,
            "reason": "reading its history failed: 500", "next_try_at": "2026-12-07T10:00:04.000Z",
        }] });
        let lines = catching_up(&discord);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].starts_with("still catching up on Guild / #gen"), "{lines:?}");
        assert!(
            lines[0].contains("(try 2: reading its history failed: 500); trying again at 2026-12-07T10:00:04.000Z")
        );
        assert!(!lines[0].contains('\u{1b}'), "a channel's name cannot drive the terminal: {lines:?}");
        assert!(catching_up(&serde_json::json!({ "state": "connected" })).is_empty());
        let refused = serde_json::json!({ "catching_up": [{ "channel": "#x", "attempts": 1, "reason": "403",
            "next_try_at": null }] });
        assert!(catching_up(&refused)[0].ends_with("not trying again before the next connection"));
    }
}
