//! What `amc agent add` prints for the MCP hosts: each host's configuration that starts
//! `amc mcp` as the agent, filled in for this install.
//!
//! One agent per host: AMC keeps what each agent has marked read, so two hosts sharing an
//! agent would each miss what the other read. An agent added for no host in particular is
//! set up for Claude Code, and each other host is told the agent to add for it.

use std::path::Path;

use clap::ValueEnum;

/// An MCP host, as `amc agent add --host` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Host {
    /// Claude Code, for every project (it can be told of new messages as they arrive)
    ClaudeCode,
    /// Codex CLI (~/.codex/config.toml)
    Codex,
    /// Claude Desktop (claude_desktop_config.json, or a bundle with --mcpb)
    ClaudeDesktop,
}

impl Host {
    /// The host an agent is named after (`amc agent add codex`), if any.
    pub fn named(agent_id: &str) -> Option<Self> {
        Self::from_str(agent_id, false).ok()
    }

    /// The name `--host` takes.
    fn flag(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::ClaudeDesktop => "claude-desktop",
        }
    }
}

/// An agent just added, as its hosts are to start it.
pub struct NewAgent<'a> {
    pub id: &'a str,
    pub token: &'a str,
    /// This install's `amc`, by the path hosts started from the Dock can find.
    pub command: &'a str,
    /// The data folder, when AMC does not use the default one.
    pub data_dir: Option<&'a Path>,
}

fn quote(v: &str) -> String {
    format!("'{}'", v.replace('\'', r"'\''"))
}

fn json_str(v: &str) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl NewAgent<'_> {
    /// The name of the agent's MCP server in a host's settings, `amc-NAME`: two agents on
    /// one host are two servers (a second `claude mcp add … amc` fails with "already
    /// exists", a second `[mcp_servers.amc]` makes Codex's config.toml unloadable).
    pub fn server(&self) -> String {
        format!("amc-{}", self.id)
    }

    /// The host's configuration for this agent: Claude Code's command (for every project:
    /// `-s user`), Codex's TOML, Claude Desktop's JSON.
    pub fn config(&self, host: Host) -> String {
        let data_dir = self.data_dir.map(|d| d.display().to_string());
        let mut env = vec![("AMC_AGENT_ID", self.id.to_owned()), ("AMC_BEARER_TOKEN", self.token.to_owned())];
        if let Some(d) = data_dir {
            env.push(("AMC_DATA_DIR", d));
        }
        let command = self.command;
        match host {
            Host::ClaudeCode => {
                let env: String = env.iter().map(|(k, v)| format!(" --env {k}={}", quote(v))).collect();
                format!(
                    "Claude Code (every project), as {}:\n  claude mcp add -s user {server}{env} -- {} mcp\n  \
                     and, to be told of new messages as they arrive: \
                     claude --dangerously-load-development-channels server:{server}",
                    self.id,
                    quote(command),
                    server = self.server()
                )
            }
            Host::Codex => {
                let env: Vec<String> = env.iter().map(|(k, v)| format!("{k} = {}", json_str(v))).collect();
                format!(
                    "Codex CLI, as {}, in ~/.codex/config.toml:\n  [mcp_servers.{}]\n  command = {}\n  \
                     args = [\"mcp\", \"--no-push\"]\n  env = {{ {} }}",
                    self.id,
                    self.server(),
                    json_str(command),
                    env.join(", ")
                )
            }
            Host::ClaudeDesktop => {
                let env: Vec<String> = env.iter().map(|(k, v)| format!("{}: {}", json_str(k), json_str(v))).collect();
                format!(
                    "Claude Desktop, as {}, in ~/Library/Application Support/Claude/claude_desktop_config.json:\n  \
                     {{ \"mcpServers\": {{ {}: {{ \"command\": {}, \"args\": [\"mcp\", \"--no-push\"], \
                     \"env\": {{ {} }} }} }} }}",
                    self.id,
                    json_str(&self.server()),
                    json_str(command),
                    env.join(", ")
                )
            }
        }
    }

    /// For an agent added for no host in particular: why each host needs its own agent,
    /// this one's configuration for Claude Code, and for each other host the command that
    /// adds an agent of its own, with a suggested name (`NAME-codex`).
    pub fn one_per_host(&self) -> String {
        let data_dir = self.data_dir.map(|d| format!(" --data-dir {}", quote(&d.display().to_string())));
        let add = |host: Host| {
            let name = format!("{}-{}", self.id, host.flag());
            let how = match host {
                Host::ClaudeDesktop => format!("--mcpb amc-{name}.mcpb"),
                _ => format!("--host {}", host.flag()),
            };
            format!("{}{} agent add {name} {how}", quote(self.command), data_dir.as_deref().unwrap_or(""))
        };
        format!(
            "Give each MCP host an agent of its own: AMC keeps what each agent has read, so two hosts \
             sharing one would each miss what the other read. {id} is set up for Claude Code below; \
             each other host gets its own agent, with a suggested name. (`--host` prints one host's \
             configuration only.)\n\n{}\n\n\
             Codex CLI, as its own agent {id}-codex:\n  {}\n\n\
             Claude Desktop, as its own agent {id}-claude-desktop (open the file it writes to install it):\n  {}",
            self.config(Host::ClaudeCode),
            add(Host::Codex),
            add(Host::ClaudeDesktop),
            id = self.id,
        )
    }
}
