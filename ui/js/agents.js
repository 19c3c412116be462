// Agents: who may use AMC; adding one shows its token once, with the configuration for
// each MCP host (the shapes of docs/mcp.md); revoking cuts it off at once.

import { download, post } from "./api.js";
import { busy, confirmAction, copyable, dialog, doneButton, empty, h, load, nextId, replace, time, toast, viewHeader } from "./dom.js";

const ID_PATTERN = "[a-z0-9][a-z0-9_\\-]{0,63}";
// What the browser says for an id that does not fit, instead of "Please match the requested format".
const ID_RULE = "Use 1 to 64 lowercase letters, digits, - and _, starting with a letter or digit (for example claude-code).";

let list;
let refreshAll;

function mount(el, app) {
  refreshAll = app.refresh;
  const inputId = nextId("agent");
  const input = h("input", {
    id: inputId, type: "text", required: true, pattern: ID_PATTERN, placeholder: "claude-code",
    autocomplete: "off", spellcheck: "false", "aria-describedby": "agent-id-hint",
    // Checked as it is typed, so the browser's own check (before submitting) says the rule.
    oninput: (e) => {
      const field = e.currentTarget;
      field.setCustomValidity("");
      if (field.validity.patternMismatch) field.setCustomValidity(ID_RULE);
    },
  });
  const form = h("form", {
    class: "add-agent",
    onsubmit: (e) => {
      e.preventDefault();
      if (!input.checkValidity()) { input.reportValidity(); return; }
      add(input.value.trim(), e.submitter, input);
    },
  },
  h("div", { class: "field" }, h("label", { for: inputId, text: "New agent's id" }), input),
  h("button", { type: "submit", class: "btn primary" }, "Add agent"));
  const hint = h("p", { id: "agent-id-hint", class: "muted small",
    text: "Lowercase letters, digits, - and _. The agent sends it as AMC_AGENT_ID; its token is shown once." });
  list = h("div", { class: "list-area" });
  replace(el, viewHeader("agents", "Agents", "Each agent has its own token and read state. Revoking a token takes effect on its next request."),
    h("section", { class: "panel", "aria-label": "Add an agent" }, form, hint), list);
}

async function refresh() {
  const data = await load(list, "/admin/agents", "agents");
  if (!data) return;
  const allowed = await load(list, "/admin/channels?state=allowed", "channels");
  if (!allowed) return;
  if (data.agents.length === 0) {
    replace(list, empty("No agents yet", "Add one above, then paste its configuration into Claude Code, Codex CLI or Claude Desktop."));
    return;
  }
  replace(list, h("table", { class: "table agents" },
    h("caption", { class: "visually-hidden", text: "Agents" }),
    h("thead", {}, h("tr", {}, ["Agent", "Channels", "Added", "Last seen", "State", ""].map((t) => h("th", { scope: "col", text: t })))),
    h("tbody", {}, data.agents.map((a) => h("tr", { dataset: { agent: a.id } },
      h("th", { scope: "row", class: "mono", text: a.id }),
      h("td", { class: "text-cell agent-channels" }, channelsOf(a.id, allowed.channels)),
      h("td", {}, time(a.created_at)),
      h("td", {}, time(a.last_seen_at)),
      h("td", {}, a.revoked_at
        ? h("span", { class: "badge status-rejected" }, "Revoked ", time(a.revoked_at))
        : [h("span", { class: "badge status-sent", text: "Active" }), a.pushing
          ? h("span", { class: "badge status-live", title: "A Claude Code session of it is told new messages as they arrive", text: "Live" })
          : null]),
      h("td", { class: "actions-cell" }, a.revoked_at ? null : h("button", {
        type: "button", class: "btn danger-outline", "aria-label": `Revoke ${a.id}`, dataset: { key: `revoke-${a.id}` },
        onclick: (e) => revoke(a.id, e.currentTarget),
      }, "Revoke")))))));
}

/** The allowed channels an agent sees: those open to every agent, and those listing it. */
function channelsOf(id, channels) {
  const everyone = channels.filter((c) => !c.agents).length;
  const mine = channels.filter((c) => c.agents?.some((a) => a.id === id)).map((c) => {
    const own = c.agents.find((a) => a.id === id).send_policy;
    return own ? `${c.name} (${own.replace("_", "-")})` : c.name;
  });
  const parts = [`${everyone} open to every agent`];
  if (mine.length) parts.push(`only to some: ${mine.join(", ")}`);
  return h("span", { class: "clip", title: parts.join("; "), text: parts.join("; ") });
}

async function add(id, button, input) {
  const created = await busy(button, () => post("/admin/agents", { id }));
  if (!created) return;
  input.value = "";
  refreshAll();
  await dialog(`Agent “${id}” added`, (close) => tokenPanel(id, created.token, created.mcp_command, close, created.mcp_env), { wide: true });
}

/**
 * The configuration snippets of docs/mcp.md, with this agent's id and token, naming `amc`
 * by the path AMC reported for this install (hosts started from the Dock do not see the
 * shell's PATH), and any other variable `amc mcp` needs here (`AMC_DATA_DIR` when AMC does
 * not use the default data folder).
 */
export function configs(id, token, command = "amc", extra = {}) {
  const env = { AMC_AGENT_ID: id, AMC_BEARER_TOKEN: token, ...extra };
  const shell = (v) => `'${String(v).replaceAll("'", "'\\''")}'`;
  // Each agent is a server of its own, named after it: two agents fit one host.
  const server = `amc-${id}`;
  return {
    "Claude Code": `claude mcp add -s user ${server}${Object.entries(env).map(([k, v]) => ` --env ${k}=${shell(v)}`).join("")} -- ${shell(command)} mcp`,
    "Codex CLI (~/.codex/config.toml)": `[mcp_servers.${server}]
command = ${JSON.stringify(command)}
args = ["mcp", "--no-push"]
env = { ${Object.entries(env).map(([k, v]) => `${k} = ${JSON.stringify(v)}`).join(", ")} }`,
    "Claude Desktop (claude_desktop_config.json)": JSON.stringify({
      mcpServers: { [server]: { command, args: ["mcp", "--no-push"], env } },
    }, null, 2),
  };
}

function tokenPanel(id, token, command, close, extra = {}) {
  return h("div", { class: "token-panel" },
    h("p", { class: "warn-text", text: "This token is shown only now. AMC keeps only a hash of it." }),
    copyable("Token", token),
    h("h3", { text: "Connect your MCP host" }),
    h("p", { class: "muted", text: `These name the amc of this install: ${command || "amc"}.` }),
    h("div", { class: "bundle-row" },
      h("button", {
        type: "button", class: "btn primary", dataset: { key: `bundle-${id}` },
        onclick: (e) => busy(e.currentTarget, () => download(`/admin/agents/${encodeURIComponent(id)}/bundle`, `amc-${id}.mcpb`, { token })),
      }, "Download for Claude Desktop"),
      h("span", { class: "muted", text: " Open the downloaded file to install AMC in Claude Desktop." })),
    Object.entries(configs(id, token, command || "amc", extra)).map(([host, text]) => copyable(host, text, { multiline: true })),
    h("p", { class: "muted", text: "To have Claude Code told of new messages as they arrive, start it with the AMC channel:" }),
    copyable("Claude Code with new messages pushed", `claude --dangerously-load-development-channels server:amc-${id}`),
    doneButton(close));
}

async function revoke(id, button) {
  const ok = await confirmAction(`Revoke ${id}?`, `${id} loses access at once; its token stops working. This cannot be undone.`, "Revoke");
  if (!ok) return;
  await busy(button, async () => {
    await post(`/admin/agents/${encodeURIComponent(id)}/revoke`);
    toast(`Revoked ${id}`);
    refreshAll();
  });
}

export default { id: "agents", title: "Agents", mount, refresh };
