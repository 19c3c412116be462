// Setup: each source and the agents, from nothing to connected, without a terminal. Every
// step shows what AMC sees now, and its fix. The window opens here while nothing is set up.

import { get, post } from "./api.js";
import { busy, copyable, h, load, nextId, replace, toast, viewHeader } from "./dom.js";

// macOS's own address for Privacy & Security → Full Disk Access.
const FULL_DISK_ACCESS = "x-apple.systempreferences:com.apple.preference.security?Privacy_AllFiles";

let body;
let refreshAll;

function mount(el, app) {
  refreshAll = app.refresh;
  body = h("div", { class: "setup-body" });
  replace(el, viewHeader("setup", "Setup", "Connect your conversations and your agents. Each step is checked as you go."), body);
}

async function refresh() {
  const health = await load(body, "/healthz", "AMC's health");
  if (!health) return;
  const [discord, phone, agents, settings, login] = await Promise.all([
    get("/admin/discord").catch(() => null),
    get("/admin/phone").catch(() => null),
    get("/admin/agents").catch(() => null),
    get("/admin/settings").catch(() => null),
    // Answered by the menu bar app alone (its window is on amc:): a browser has no login item.
    location.protocol === "amc:" ? get("/tray/login").catch(() => null) : null,
  ]);
  replace(body,
    imessage(health.sources.imessage ?? { state: "disabled" }, phone),
    discordPanel(health.sources.discord ?? { state: "disabled" }, discord),
    agentsPanel(agents),
    settings ? settingsPanel(settings, login) : null);
  // What is still to do is looked at again while Setup is on screen: a source reads, a
  // permission is granted, with no event to say so.
  clearTimeout(again);
  if (body.querySelector('[data-step="chat-db"][data-ok="false"], [data-step="bot"][data-ok="false"]')) again = setTimeout(lookAgain, 2000);
}

/** Reloads Setup if it is on screen and the person is not typing in it. */
function lookAgain() {
  if (body.closest(".view").hidden) return;
  const typing = body.contains(document.activeElement) && ["INPUT", "SELECT"].includes(document.activeElement.tagName);
  if (typing) again = setTimeout(lookAgain, 2000);
  else refresh();
}

let again = null;

/** The chat.db iMessage follows: changed, AMC stops following the old one and reads on in
 *  the new one; emptied, iMessage is off. */
function chatDbForm(st, save) {
  const id = nextId("chatdb");
  const input = h("input", { id, type: "text", value: st.imessage_chat_db ?? "", placeholder: "~/Library/Messages/chat.db",
    spellcheck: "false", autocomplete: "off", "aria-describedby": `${id}-hint` });
  return h("form", {
    class: "add-agent",
    onsubmit: (e) => {
      e.preventDefault();
      const path = input.value.trim();
      save(e.submitter, { imessage_chat_db: path }, path ? `iMessage follows ${path}` : "iMessage is off");
    },
  }, h("div", { class: "field" }, h("label", { for: id, text: "Messages database (chat.db)" }), input),
  h("button", { type: "submit", class: "btn", dataset: { key: "chatdb-save" } }, "Save chat.db"),
  h("p", { id: `${id}-hint`, class: "muted small", text: "Empty turns iMessage off. AMC reads on from where it stopped: no message is lost or given twice." }));
}

/** config.toml's settings, changed in place: checked as at start-up, in force at once. */
function settingsPanel(st, login) {
  const save = (button, change, said) => busy(button, async () => {
    await post("/admin/settings", change);
    toast(said);
    refreshAll();
  });
  const number = (key, label, value, min, max) => {
    const id = nextId(key);
    return h("div", { class: "field" }, h("label", { for: id, text: label }),
      h("input", { id, type: "number", min, max, required: true, value: String(value), dataset: { setting: key } }));
  };
  const folderId = nextId("folder");
  const folder = h("input", { id: folderId, type: "text", placeholder: "~/Documents/For agents", spellcheck: "false", autocomplete: "off" });
  const limits = h("form", {
    class: "add-agent settings-numbers",
    onsubmit: (e) => {
      e.preventDefault();
      const change = {};
      for (const input of e.currentTarget.querySelectorAll("input[data-setting]")) change[input.dataset.setting] = Number(input.value);
      save(e.submitter, change, "Settings saved: in force now");
    },
  },
  number("rate_limit_burst", "Sends at once, per conversation", st.rate_limit_burst, 1, 10000),
  number("rate_limit_per_minute", "Then sends a minute", st.rate_limit_per_minute, 1, 10000),
  number("send_timeout_seconds", "Seconds a platform has to confirm a send", st.send_timeout_seconds, 1, 600),
  h("button", { type: "submit", class: "btn primary", dataset: { key: "settings-save" } }, "Save sends"));
  return h("section", { class: "panel", "aria-labelledby": "h-setup-settings", dataset: { source: "settings" } },
    h("h2", { id: "h-setup-settings", class: "section-title", text: "Settings" }),
    h("h3", { class: "subtitle", text: "Folders agents may send files from" }),
    h("ul", { class: "rows folders" },
      h("li", { class: "row", dataset: { folder: st.outbox } }, h("div", { class: "row-main" },
        h("span", { class: "mono", text: st.outbox }), h("p", { class: "muted", text: "AMC's outbox: always." }))),
      st.attachment_dirs.map((d) => h("li", { class: "row", dataset: { folder: d } },
        h("div", { class: "row-main" }, h("span", { class: "mono", text: d })),
        h("button", { type: "button", class: "btn", "aria-label": `Remove ${d}`,
          onclick: (e) => save(e.currentTarget, { attachment_dirs: st.attachment_dirs.filter((x) => x !== d) }, `Agents can no longer send files from ${d}`) }, "Remove")))),
    h("form", {
      class: "add-agent",
      onsubmit: (e) => {
        e.preventDefault();
        const dir = folder.value.trim();
        if (!dir) return;
        save(e.submitter, { attachment_dirs: [...st.attachment_dirs, dir] }, `Agents can send files from ${dir}`);
      },
    }, h("div", { class: "field" }, h("label", { for: folderId, text: "Add a folder" }), folder),
    h("button", { type: "submit", class: "btn", dataset: { key: "folder-add" } }, "Add folder")),
    h("h3", { class: "subtitle", text: "iMessage" }),
    chatDbForm(st, save),
    h("h3", { class: "subtitle", text: "Sends" }),
    limits,
    login ? h("label", { class: "check", dataset: { key: "login" } },
      h("input", { type: "checkbox", checked: login.on, onchange: (e) => busy(e.currentTarget, async () => {
        try {
          const now = await post("/tray/login", { on: e.currentTarget.checked });
          toast(now.on ? "AMC starts when you log in" : "AMC no longer starts when you log in");
        } finally {
          refreshAll();
        }
      }) }), " Launch AMC at login") : null,
    h("p", { class: "muted small", text: `Kept in ${st.file}, which you may also edit by hand; AMC puts a change made here in force at once.` }));
}

/** A step's line: a dot, what it is, and what AMC sees. */
function step(key, ok, title, detail, ...actions) {
  return h("li", { class: "row", dataset: { step: key, ok: String(Boolean(ok)) } },
    h("span", { class: `dot ${ok ? "connected" : "degraded"}`, "aria-hidden": "true" }),
    h("div", { class: "row-main" },
      h("div", { class: "row-title" }, h("span", { class: "name", text: title }),
        h("span", { class: `badge permission-${ok ? "granted" : "needed"}`, text: ok ? "Done" : "To do" })),
      detail ? h("p", { class: "muted", text: detail }) : null,
      actions.length ? h("div", { class: "actions" }, actions) : null));
}

function imessage(s, phone) {
  const reading = s.state === "connected" && (!s.test_mode || Boolean(s.caught_up_at));
  const selfChat = phone?.candidates?.find((c) => c.source === "imessage") ?? phone?.imessage;
  return h("section", { class: "panel", "aria-labelledby": "h-setup-imessage", dataset: { source: "imessage" } },
    h("h2", { id: "h-setup-imessage", class: "section-title", text: "iMessage" }),
    h("ul", { class: "rows" },
      step("chat-db", reading, "AMC can read your messages",
        reading ? "AMC reads chat.db, the history Messages keeps, as it changes."
          : s.state === "disabled" ? "iMessage is off: choose the chat.db AMC follows in Settings below."
          : s.test_mode ? "Test mode (amc serve --test-sender): AMC reads no chat.db here."
            : (s.reason ? `${s.reason}. ` : "") + "Give AMC Full Disk Access in System Settings, then check again.",
        reading || s.test_mode || s.state === "disabled" ? null : h("a", { class: "btn", href: FULL_DISK_ACCESS, dataset: { key: "open-fda" } }, "Open Full Disk Access settings"),
        h("button", { type: "button", class: "btn", dataset: { key: "imessage-check" },
          onclick: (e) => busy(e.currentTarget, async () => { await refreshAll(); }) }, "Check again")),
      step("self-chat", Boolean(selfChat), "Your own conversation",
        selfChat ? `Found: your conversation with yourself (${selfChat.address}). AMC can ask you there to approve agents' sends (Status → Approve from your phone).`
          : "Send yourself a message in Messages: AMC finds your own conversation, where it can ask you to approve agents' sends from your phone.",
        selfChat ? h("button", { type: "button", class: "btn", dataset: { key: "imessage-test" },
          onclick: (e) => busy(e.currentTarget, async () => {
            await post("/admin/imessage/test");
            toast("Sent: look in your own conversation in Messages");
          }) }, "Send a test message to myself") : null),
      h("li", { class: "row muted small", dataset: { step: "automation" } }, h("div", { class: "row-main" },
        h("p", { text: "The first message AMC sends makes macOS ask whether AMC may control Messages: choose OK. If it was refused, turn AMC on in System Settings → Privacy & Security → Automation." })))));
}

function discordPanel(s, setup) {
  const section = (...children) => h("section", { class: "panel", "aria-labelledby": "h-setup-discord", dataset: { source: "discord" } },
    h("h2", { id: "h-setup-discord", class: "section-title", text: "Discord" }), ...children);
  if (!setup) return section(h("p", { class: "muted", text: "This AMC cannot set Discord up from the window." }));
  if (setup.token === "none") return section(tokenForm(), guide());
  const bot = setup.bot;
  const connected = s.state === "connected";
  const rows = [
    step("bot", connected, bot ? `Bot ${bot.name}` : "The bot",
      connected ? "Connected: every channel the bot can see, and each DM sent to it, appears in Channels to approve."
        : (s.reason ?? "Connecting to Discord…")),
  ];
  if (bot) {
    rows.push(step("intent", bot.message_content, "Message Content intent",
      bot.message_content ? "On: Discord gives the bot messages' text."
        : "Off: Discord sends the bot messages without their text. Turn it on in the Discord Developer Portal (your application → Bot → Privileged Gateway Intents), then connect again."));
    rows.push(h("li", { class: "row invite", dataset: { step: "invite" } },
      h("div", { class: "row-main" },
        h("div", { class: "row-title" }, h("span", { class: "name", text: "Invite the bot to your servers" })),
        h("p", { class: "muted", text: "The link asks for what AMC uses: View Channels, Send Messages (in threads too), Read Message History, Attach Files and Add Reactions." }),
        h("div", { class: "actions" },
          h("a", { class: "btn primary", href: bot.invite_url, target: "_blank", rel: "noopener noreferrer", dataset: { key: "invite" } }, "Invite the bot"),
          copyable("the invite link", bot.invite_url)))));
  }
  const where = { keychain: "Its token is in the Keychain.", config: "Its token is in config.toml (discord_token).", environment: "Its token is set in AMC's environment (AMC_DISCORD_TOKEN): change it there." }[setup.token];
  return section(h("ul", { class: "rows" }, rows),
    h("p", { class: "muted", text: where }),
    setup.changeable ? h("div", { class: "actions" },
      h("button", { type: "button", class: "btn danger", dataset: { key: "discord-disconnect" },
        onclick: (e) => busy(e.currentTarget, async () => {
          await post("/admin/discord/disconnect");
          toast("Discord disconnected; its token is removed");
          refreshAll();
        }) }, "Disconnect")) : null,
    setup.changeable ? h("details", { class: "replace-token" }, h("summary", { text: "Use another token" }), tokenForm()) : null);
}

function tokenForm() {
  const id = nextId("token");
  const input = h("input", { id, type: "password", required: true, autocomplete: "off", spellcheck: "false",
    placeholder: "Paste the bot's token", "aria-describedby": `${id}-hint` });
  return h("form", {
    class: "add-agent discord-token",
    onsubmit: (e) => {
      e.preventDefault();
      if (!input.value.trim()) { input.reportValidity(); return; }
      busy(e.submitter, async () => {
        const state = await post("/admin/discord/token", { token: input.value });
        input.value = "";
        toast(`Connected as ${state.bot?.name ?? "your bot"}`);
        refreshAll();
      });
    },
  },
  h("div", { class: "field" }, h("label", { for: id, text: "Bot token" }), input),
  h("button", { type: "submit", class: "btn primary", dataset: { key: "discord-connect" } }, "Connect"),
  h("p", { id: `${id}-hint`, class: "muted small", text: "AMC checks it with Discord, keeps it in the Keychain (never in a file) and connects at once." }));
}

function guide() {
  return h("ol", { class: "guide" },
    h("li", {}, "In the ", h("a", { href: "https://discord.com/developers/applications", target: "_blank", rel: "noopener noreferrer", text: "Discord Developer Portal" }),
      ", choose New Application, then Bot."),
    h("li", { text: "Under Privileged Gateway Intents, turn on Message Content Intent." }),
    h("li", { text: "Choose Reset Token, copy the token and paste it here." }));
}

function agentsPanel(agents) {
  const live = (agents?.agents ?? []).filter((a) => !a.revoked_at);
  const seen = live.filter((a) => a.last_seen_at);
  return h("section", { class: "panel", "aria-labelledby": "h-setup-agents", dataset: { source: "agents" } },
    h("h2", { id: "h-setup-agents", class: "section-title", text: "Agents" }),
    h("ul", { class: "rows" },
      step("agent-added", live.length > 0, "Add an agent",
        live.length ? `${live.length === 1 ? "1 agent" : `${live.length} agents`}: ${live.map((a) => a.id).join(", ")}.`
          : "One per MCP host (Claude Code, Codex CLI, Claude Desktop): AMC shows the host's configuration to paste.",
        h("a", { class: "btn", href: "#agents", dataset: { key: "to-agents" } }, live.length ? "Agents" : "Add an agent")),
      step("agent-connected", seen.length > 0, "An agent connected",
        seen.length ? `${seen.map((a) => a.id).join(", ")} used AMC.` : "Once the host runs with the configuration, its agent appears here as connected.")));
}

/** Whether nothing is set up yet: no conversation is approved and there is no agent. */
export async function nothingSetUp() {
  try {
    const [channels, agents] = await Promise.all([get("/admin/channels?state=allowed"), get("/admin/agents")]);
    return (channels.channels ?? []).length === 0 && (agents.agents ?? []).length === 0;
  } catch {
    return false;
  }
}

export default { id: "setup", title: "Setup", mount, refresh };
